//! Envoy's memory: resident set, and the linear memory of each of its Wasm VMs.
//!
//! `bench/src/vmmem.rs` finds wasmtime's linear memories in the bench's own mappings; Envoy runs
//! V8, whose layout differs, so this reads Envoy's `/proc/PID/maps` the same way with V8's
//! layout: each 32-bit Wasm memory is one 8 GiB reservation (the memory plus the guard regions
//! that let compiled code skip bounds checks) whose start is read-write up to the memory's
//! current size and `PROT_NONE` after it. Growing the memory makes more of it read-write, so the
//! read-write run at the start is exactly `memory.size`. (Measured on the pip Envoy 1.40: a
//! fresh VM of this filter is 1.125 MiB read-write followed by 8190.875 MiB `---p`.) Envoy has
//! no stat for a VM's memory size.

/// V8's reservation for a 32-bit Wasm memory with guard regions.
const RESERVATION: u64 = 8 << 30;
const WASM_PAGE: u64 = 64 << 10;

struct Mapping {
    start: u64,
    end: u64,
    readable_writable: bool,
    inaccessible: bool,
}

fn mappings(pid: u32) -> Vec<Mapping> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap_or_default();
    text.lines()
        .filter_map(|line| {
            let mut parts = line.split_whitespace();
            let (a, b) = parts.next()?.split_once('-')?;
            let perms = parts.next()?;
            Some(Mapping {
                start: u64::from_str_radix(a, 16).ok()?,
                end: u64::from_str_radix(b, 16).ok()?,
                readable_writable: perms.starts_with("rw"),
                inaccessible: perms.starts_with("---"),
            })
        })
        .collect()
}

/// Every Wasm linear memory of process `pid`: (start address, current size in bytes), by
/// address.
pub fn linear_memories(pid: u32) -> Vec<(u64, u64)> {
    let maps = mappings(pid);
    let mut out = Vec::new();
    for (i, guard) in maps.iter().enumerate() {
        if !guard.inaccessible || guard.end - guard.start >= RESERVATION {
            continue;
        }
        // Walk back over the read-write mappings that end where the guard starts, until they
        // and the guard make one reservation.
        let mut start = guard.start;
        let mut j = i;
        while let Some(prev) = j.checked_sub(1).and_then(|p| maps.get(p)) {
            if prev.end != start || !prev.readable_writable {
                break;
            }
            start = prev.start;
            j -= 1;
            let size = guard.start - start;
            if size + (guard.end - guard.start) == RESERVATION && size.is_multiple_of(WASM_PAGE) {
                out.push((start, size));
                break;
            }
        }
    }
    out
}

/// Resident memory of `pid` (kB).
pub fn rss_kb(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|n| n.parse().ok())
}
