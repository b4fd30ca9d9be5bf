//! What every host function shares: the restriction check Envoy makes on each call, reads and
//! writes of the module's linear memory (little-endian, as wasm32 is), and copying a result
//! into memory the module allocates, as proxy-wasm-cpp-host does for every `*_ptr`/`*_size`
//! out-parameter pair.

use crate::abi::{len_i32, Status};
use crate::error::HostAbort;
use crate::vm_state::{Restriction, VmState};
use wasmtime::{Caller, Val};

/// The caller every host function receives: the module's store with the VM's state.
pub(super) type C<'a> = Caller<'a, VmState>;
/// What a proxy-wasm or WASI function returns to the module: a status or errno code.
pub(super) type R = wasmtime::Result<i32>;

/// Traps the module (as proxy-wasm-cpp-host does) when it calls a function the current phase
/// does not allow: during `_initialize`, or inside its allocator while the host copies a result.
pub(super) fn guard(c: &C, name: &'static str) -> wasmtime::Result<()> {
    c.data().census.borrow_mut().call(name);
    if let Some(r) = c.data().restriction {
        if !r.allows(name) {
            return Err(wasmtime::Error::new(HostAbort::Restricted(
                name.to_string(),
            )));
        }
    }
    Ok(())
}

/// Counts a read of `key` by the function being called (`Vm::hostcalls`).
pub(super) fn note_key(c: &C, key: &[u8]) {
    c.data().census.borrow_mut().key(key);
}

/// An `i32` pointer or size from the module, read as the unsigned wasm32 value it is.
pub(super) fn u(v: i32) -> usize {
    u32::from_ne_bytes(v.to_ne_bytes()) as usize
}

pub(super) fn ok(status: Status) -> R {
    Ok(status.code())
}

/// The bytes at `ptr..ptr+len` of the module's memory; `None` when out of bounds.
pub(super) fn read(c: &C, ptr: i32, len: i32) -> Option<Vec<u8>> {
    let mem = c.data().memory?;
    let data = mem.data(c);
    let start = u(ptr);
    let bytes = data.get(start..start.checked_add(u(len))?)?.to_vec();
    c.data().census.borrow_mut().bytes(false, bytes.len());
    Some(bytes)
}

pub(super) fn read_str(c: &C, ptr: i32, len: i32) -> Option<String> {
    read(c, ptr, len).map(|b| String::from_utf8_lossy(&b).into_owned())
}

/// Writes `bytes` at `ptr`; `false` when out of bounds.
pub(super) fn write(c: &mut C, ptr: i32, bytes: &[u8]) -> bool {
    let Some(mem) = c.data().memory else {
        return false;
    };
    let data = mem.data_mut(c);
    let start = u(ptr);
    match start
        .checked_add(bytes.len())
        .and_then(|end| data.get_mut(start..end))
    {
        Some(dst) => {
            dst.copy_from_slice(bytes);
            true
        }
        None => false,
    }
}

pub(super) fn put_u32(c: &mut C, ptr: i32, v: u32) -> bool {
    write(c, ptr, &v.to_le_bytes())
}

pub(super) fn put_u64(c: &mut C, ptr: i32, v: u64) -> bool {
    write(c, ptr, &v.to_le_bytes())
}

/// A length as the ABI's `u32` (saturating: nothing the shim holds is that big).
pub(super) fn len_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// Copies `bytes` into memory the module allocates (its `malloc`/`proxy_on_memory_allocate`,
/// with Envoy's allocation-time restrictions) and writes the pointer and size. Empty data is
/// pointer 0, size 0 (`WasmBase::copyToPointerSize`). `Ok(false)`: a memory fault.
pub(super) fn copy_out(
    c: &mut C,
    bytes: &[u8],
    ptr_ptr: i32,
    size_ptr: i32,
) -> wasmtime::Result<bool> {
    let mut ptr: i32 = 0;
    if !bytes.is_empty() {
        let Some(alloc) = c.data().alloc else {
            return Ok(false);
        };
        let before = c.data().restriction;
        c.data_mut().restriction = Some(Restriction::Allocate);
        let mut result = [Val::I32(0)];
        let called = alloc.call(&mut *c, &[Val::I32(len_i32(bytes.len()))], &mut result);
        c.data_mut().restriction = before;
        called?;
        ptr = match result.first() {
            Some(Val::I32(p)) => *p,
            _ => 0,
        };
        if ptr == 0 || !write(c, ptr, bytes) {
            return Ok(false);
        }
        c.data().census.borrow_mut().bytes(true, bytes.len());
    }
    Ok(put_u32(c, ptr_ptr, u32::from_ne_bytes(ptr.to_ne_bytes()))
        && put_u32(c, size_ptr, len_u32(bytes.len())))
}

/// [`copy_out`] as the status the ABI function returns.
pub(super) fn copy_out_status(c: &mut C, bytes: &[u8], ptr_ptr: i32, size_ptr: i32) -> R {
    if copy_out(c, bytes, ptr_ptr, size_ptr)? {
        ok(Status::Ok)
    } else {
        ok(Status::InvalidMemoryAccess)
    }
}
