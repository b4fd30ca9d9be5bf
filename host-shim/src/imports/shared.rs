//! Shared data (with compare-and-swap) and shared queues: state every VM of one `vm_id` on a
//! host sees, as every worker of one Envoy process does. A queue's readiness goes to the root
//! context that registered it.

use super::guest::{copy_out, copy_out_status, guard, note_key, ok, put_u32, read, read_str, C, R};
use crate::abi::Status;
use crate::vm_state::VmState;
use wasmtime::Linker;

pub(super) fn define(l: &mut Linker<VmState>) -> wasmtime::Result<()> {
    l.func_wrap(
        "env",
        "proxy_get_shared_data",
        |mut c: C, key_ptr: i32, key_size: i32, ptr_ptr: i32, size_ptr: i32, cas_ptr: i32| -> R {
            guard(&c, "proxy_get_shared_data")?;
            let Some(key) = read_str(&c, key_ptr, key_size) else {
                return ok(Status::InvalidMemoryAccess);
            };
            note_key(&c, key.as_bytes());
            let found = {
                let s = c.data();
                s.host.lock().get_shared(&s.opts.vm_id, &key)
            };
            let Some((value, cas)) = found else {
                return ok(Status::NotFound);
            };
            if !copy_out(&mut c, &value, ptr_ptr, size_ptr)? || !put_u32(&mut c, cas_ptr, cas) {
                return ok(Status::InvalidMemoryAccess);
            }
            ok(Status::Ok)
        },
    )?;
    l.func_wrap(
        "env",
        "proxy_set_shared_data",
        |c: C, key_ptr: i32, key_size: i32, value_ptr: i32, value_size: i32, cas: i32| -> R {
            guard(&c, "proxy_set_shared_data")?;
            let (Some(key), Some(value)) = (
                read_str(&c, key_ptr, key_size),
                read(&c, value_ptr, value_size),
            ) else {
                return ok(Status::InvalidMemoryAccess);
            };
            note_key(&c, key.as_bytes());
            let s = c.data();
            let status = s.host.lock().set_shared(
                &s.opts.vm_id,
                &key,
                &value,
                u32::from_ne_bytes(cas.to_ne_bytes()),
            );
            ok(status)
        },
    )?;
    l.func_wrap(
        "env",
        "proxy_register_shared_queue",
        |mut c: C, name_ptr: i32, name_size: i32, token_ptr: i32| -> R {
            guard(&c, "proxy_register_shared_queue")?;
            let Some(name) = read_str(&c, name_ptr, name_size) else {
                return ok(Status::InvalidMemoryAccess);
            };
            let token = {
                let s = c.data();
                // onQueueReady goes to the root context (a stream registers for its root).
                let owner = s.root_context;
                s.host
                    .lock()
                    .register_queue(&s.opts.vm_id, &name, s.index, owner)
            };
            ok(if put_u32(&mut c, token_ptr, token) {
                Status::Ok
            } else {
                Status::InvalidMemoryAccess
            })
        },
    )?;
    l.func_wrap(
        "env",
        "proxy_resolve_shared_queue",
        |mut c: C,
         vm_id_ptr: i32,
         vm_id_size: i32,
         name_ptr: i32,
         name_size: i32,
         token_ptr: i32|
         -> R {
            guard(&c, "proxy_resolve_shared_queue")?;
            let (Some(vm_id), Some(name)) = (
                read_str(&c, vm_id_ptr, vm_id_size),
                read_str(&c, name_ptr, name_size),
            ) else {
                return ok(Status::InvalidMemoryAccess);
            };
            let token = {
                let s = c.data();
                let vm_id = if vm_id.is_empty() {
                    s.opts.vm_id.clone()
                } else {
                    vm_id
                };
                s.host.lock().resolve_queue(&vm_id, &name)
            };
            let Some(token) = token else {
                return ok(Status::NotFound);
            };
            ok(if put_u32(&mut c, token_ptr, token) {
                Status::Ok
            } else {
                Status::InvalidMemoryAccess
            })
        },
    )?;
    l.func_wrap(
        "env",
        "proxy_dequeue_shared_queue",
        |mut c: C, token: i32, ptr_ptr: i32, size_ptr: i32| -> R {
            guard(&c, "proxy_dequeue_shared_queue")?;
            let got = c
                .data()
                .host
                .lock()
                .dequeue(u32::from_ne_bytes(token.to_ne_bytes()));
            match got {
                Ok(data) => copy_out_status(&mut c, &data, ptr_ptr, size_ptr),
                Err(status) => ok(status),
            }
        },
    )?;
    l.func_wrap(
        "env",
        "proxy_enqueue_shared_queue",
        |c: C, token: i32, ptr: i32, size: i32| -> R {
            guard(&c, "proxy_enqueue_shared_queue")?;
            let Some(data) = read(&c, ptr, size) else {
                return ok(Status::InvalidMemoryAccess);
            };
            let status = c
                .data()
                .host
                .lock()
                .enqueue(u32::from_ne_bytes(token.to_ne_bytes()), &data);
            ok(status)
        },
    )?;
    Ok(())
}
