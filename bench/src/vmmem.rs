//! The size of wasmtime linear memories in this process, read from `/proc/self/maps`.
//!
//! host-shim has no accessor for a VM's memory size, so this reads it from the address space:
//! wasmtime (64-bit defaults) reserves each 32-bit linear memory as a guard region before it
//! (32 MiB, `PROT_NONE`), the accessible bytes (read-write: the memory's current size, in one or
//! more mappings, e.g. a copy-on-write image of the data segments followed by anonymous pages)
//! and the rest of a 4 GiB reservation plus a 32 MiB guard (`PROT_NONE`). Growing the memory
//! makes more of the reservation read-write, so the read-write run is exactly `memory.size`.

const GUARD_BEFORE: u64 = 32 << 20;
const RESERVATION: u64 = 4 << 30;

/// Every linear memory found: (start address, current size in bytes).
pub fn linear_memories() -> Vec<(u64, u64)> {
    let maps = mcp_tool_search_bench::procfs::mappings(None);
    let mut out = Vec::new();
    let mut i = 0;
    while i < maps.len() {
        let Some(guard) = maps.get(i) else { break };
        if !(guard.inaccessible && guard.end - guard.start >= GUARD_BEFORE) {
            i += 1;
            continue;
        }
        // The read-write run right after the guard.
        let start = guard.end;
        let mut end = start;
        let mut j = i + 1;
        while let Some(m) = maps.get(j) {
            if m.start != end || !m.readable_writable {
                break;
            }
            end = m.end;
            j += 1;
        }
        let size = end - start;
        let rest_ok = maps.get(j).is_some_and(|m| {
            m.start == end && m.inaccessible && size + (m.end - m.start) >= RESERVATION
        });
        if size > 0 && size.is_multiple_of(65536) && size < RESERVATION && rest_ok {
            out.push((start, size));
            i = j;
        } else {
            i += 1;
        }
    }
    out
}

/// The current size of the linear memory that starts at `start`.
pub fn size_of(start: u64) -> Option<u64> {
    linear_memories()
        .into_iter()
        .find(|m| m.0 == start)
        .map(|m| m.1)
}
