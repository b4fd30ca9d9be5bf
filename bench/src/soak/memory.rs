//! Envoy's memory: resident set, and the linear memory of each of its Wasm VMs, read from
//! `/proc` and sampled over the run (`sampler`).
//!
//! `bench/src/vmmem.rs` finds wasmtime's linear memories in the bench's own mappings; Envoy runs
//! V8, whose layout differs, so this reads Envoy's `/proc/PID/maps` the same way with V8's
//! layout: each 32-bit Wasm memory is one 8 GiB reservation (the memory plus the guard regions
//! that let compiled code skip bounds checks) whose start is read-write up to the memory's
//! current size and `PROT_NONE` after it. Growing the memory makes more of it read-write, so the
//! read-write run at the start is exactly `memory.size`. (Measured on the pip Envoy 1.40: a
//! fresh VM of this filter is 1.125 MiB read-write followed by 8190.875 MiB `---p`.) Envoy has
//! no stat for a VM's memory size.

use crate::Shared;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// V8's reservation for a 32-bit Wasm memory with guard regions.
const RESERVATION: u64 = 8 << 30;
const WASM_PAGE: u64 = 64 << 10;

/// Every Wasm linear memory of process `pid`: (start address, current size in bytes), by
/// address.
pub fn linear_memories(pid: u32) -> Vec<(u64, u64)> {
    let maps = mcp_tool_search_bench::procfs::mappings(Some(pid));
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

pub use mcp_tool_search_bench::procfs::rss_kb;

#[derive(Debug, Clone)]
pub struct Sample {
    pub at: Duration,
    pub rss_kb: Option<u64>,
    /// (linear memory start address, bytes) of each VM.
    pub vms: Vec<(u64, u64)>,
}

pub fn sampler(shared: &Shared, pid: u32, every: Duration, t0: Instant) -> Vec<Sample> {
    let mut out = Vec::new();
    let mut next = Instant::now();
    while !shared.stop.load(Ordering::Relaxed) {
        out.push(Sample {
            at: t0.elapsed(),
            rss_kb: rss_kb(pid),
            vms: linear_memories(pid),
        });
        next += every;
        while Instant::now() < next && !shared.stop.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    out.push(Sample {
        at: t0.elapsed(),
        rss_kb: rss_kb(pid),
        vms: linear_memories(pid),
    });
    out
}
