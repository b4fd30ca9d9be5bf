//! The machine the benchmarks ran on, as the report states it: CPU, memory, kernel, load,
//! Envoy and Rust versions, the date.

use std::path::Path;

#[derive(Debug, Clone, Default)]
pub struct Machine {
    pub cores: usize,
    pub cpu: String,
    pub kernel: String,
    pub memory: String,
    pub load_start: String,
    pub envoy: String,
    pub rustc: String,
    pub date: String,
}

/// The current time as the report states it.
pub fn utc_now() -> String {
    command_line("date", &["-u", "+%Y-%m-%d %H:%M"])
}

pub fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|t| t.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

fn command_line(cmd: &str, args: &[&str]) -> String {
    std::process::Command::new(cmd)
        .args(args)
        .output()
        .map(|o| {
            let text = String::from_utf8_lossy(&o.stdout).into_owned()
                + &String::from_utf8_lossy(&o.stderr);
            text.lines()
                .map(str::trim)
                .find(|l| !l.is_empty())
                .unwrap_or("")
                .to_owned()
        })
        .unwrap_or_default()
}

impl Machine {
    pub fn probe(envoy: Option<&Path>) -> Machine {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu = cpuinfo
            .lines()
            .find_map(|l| {
                l.strip_prefix("model name")
                    .and_then(|r| r.split_once(':'))
                    .map(|(_, v)| v.trim().to_owned())
            })
            .unwrap_or_else(|| "unknown".to_owned());
        let mhz = cpuinfo.lines().find_map(|l| {
            l.strip_prefix("cpu MHz")
                .and_then(|r| r.split_once(':'))
                .map(|(_, v)| v.trim().to_owned())
        });
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let memory = meminfo
            .lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
            .map(|kb| format!("{:.1} GiB", kb as f64 / 1024.0 / 1024.0))
            .unwrap_or_default();
        Machine {
            cores: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(0),
            cpu: match mhz {
                Some(m) => format!("{cpu} ({m} MHz)"),
                None => cpu,
            },
            kernel: std::fs::read_to_string("/proc/sys/kernel/osrelease")
                .unwrap_or_default()
                .trim()
                .to_owned(),
            memory,
            load_start: loadavg(),
            envoy: envoy
                .map(|e| command_line(&e.display().to_string(), &["--version"]))
                .unwrap_or_default(),
            rustc: command_line("rustc", &["--version"]),
            date: command_line("date", &["-u", "+%Y-%m-%d %H:%M UTC"]),
        }
    }
}
