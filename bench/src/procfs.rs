//! A process's memory as Linux shows it in `/proc`: its mappings (where the Wasm runtimes'
//! linear memories are found, `vmmem.rs` and `soak/memory.rs`) and its resident set.

/// One line of `/proc/PID/maps`.
pub struct Mapping {
    pub start: u64,
    pub end: u64,
    pub readable_writable: bool,
    pub inaccessible: bool,
}

/// The mappings of process `pid` (`None`: this process), by address.
pub fn mappings(pid: Option<u32>) -> Vec<Mapping> {
    let path = match pid {
        Some(pid) => format!("/proc/{pid}/maps"),
        None => "/proc/self/maps".to_owned(),
    };
    let text = std::fs::read_to_string(path).unwrap_or_default();
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

/// Resident memory of `pid` (kB).
pub fn rss_kb(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|n| n.parse().ok())
}
