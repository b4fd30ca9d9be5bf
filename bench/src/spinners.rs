//! Idle-priority spinner threads that keep the vCPUs awake during the HTTP benchmarks.

/// Threads that spin at `SCHED_IDLE` (they run only when no other thread wants the CPU) while
/// the HTTP benchmarks run: on a virtual machine an idle vCPU halts, and waking it for every
/// request adds a hypervisor round trip (about 150 µs on the machine these figures were first
/// taken on) to every latency, the floor included. Kept busy, the vCPUs answer at once.
pub struct Spinners {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    handles: Vec<std::thread::JoinHandle<bool>>,
}

impl Spinners {
    pub fn start(n: usize) -> Spinners {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let handles = (0..n)
            .map(|_| {
                let stop = std::sync::Arc::clone(&stop);
                std::thread::spawn(move || {
                    let param = libc::sched_param { sched_priority: 0 };
                    // SAFETY: plain syscall on the calling thread (pid 0) with a valid param.
                    let idle =
                        unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) } == 0;
                    if !idle {
                        return false;
                    }
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        std::hint::spin_loop();
                    }
                    true
                })
            })
            .collect();
        Spinners { stop, handles }
    }

    /// Stops them; whether they ran at SCHED_IDLE.
    pub fn stop(self) -> bool {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let idle: Vec<bool> = self
            .handles
            .into_iter()
            .map(|h| h.join().unwrap_or(false))
            .collect();
        idle.into_iter().all(|b| b)
    }
}
