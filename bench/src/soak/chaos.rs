//! The fault timeline: what happens when (`schedule`), the processes the faults act on
//! (`Processes`), and the events the report reads. Each event is stamped with the moment it
//! took effect: a kill when it is sent, the sidecar's restart when it printed `listening on`,
//! a catalog change when its upstream answered the swap (see [`Swap`]).

use crate::catalogs::Catalogs;
use crate::upstream::Upstream;
use crate::{Args, Result, STOPPED, UPSTREAMS};
use mcp_tool_search_wasm_tests::harness::{Embedder, TestDir};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

#[derive(Debug, Clone)]
pub enum What {
    UpstreamDown(usize),
    UpstreamUp(usize),
    /// The sidecar was killed (stamped when the SIGKILL is sent).
    EmbedderDown,
    /// The sidecar is back: stamped when it printed `listening on` (the harness's restart
    /// returns as soon as it reads that line; loading the model comes before it).
    EmbedderUp,
    /// A catalog change: version, and per upstream the swap or why there was none.
    CatalogChanged(usize, Vec<std::result::Result<Swap, String>>),
    /// A fault action that did not work (the run goes on; the report says so).
    ActionFailed(String),
}

/// One upstream's catalog change: `POST /admin/tools?notify=1` answered.
#[derive(Clone, Copy)]
pub struct Swap {
    /// Tools served from now on (`slow_progress` included).
    pub tools: u64,
    /// Sessions `notifications/tools/list_changed` was handed to.
    pub notified: u64,
    /// When the upstream answered: it had swapped the tools and handed out the notifications.
    pub at: Instant,
}

/// For the soak's log: the counts (an `Instant` prints as the machine's clock).
impl std::fmt::Debug for Swap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} tools, {} notified", self.tools, self.notified)
    }
}

#[derive(Debug, Clone)]
pub struct Event {
    pub at: Instant,
    pub what: What,
}

/// The planned actions, by time from the start of the load.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    ChangeCatalogs,
    StopEmbedder,
    StartEmbedder,
    StopUpstream,
    StartUpstream,
}

pub fn schedule(args: &Args) -> Vec<(Duration, Action)> {
    let end = Duration::from_secs(args.seconds);
    let mut plan = Vec::new();
    let mut t = args.catalog_every;
    while t < end {
        plan.push((t, Action::ChangeCatalogs));
        t += args.catalog_every;
    }
    // The first stop of each comes half a period in, so that the two fault kinds (and the
    // catalog changes) fall at different times in a short run, and together in a long one.
    let mut periodic = |every: Duration, down: Duration, stop: Action, start: Action| {
        let mut t = every / 2;
        while t < end {
            plan.push((t, stop));
            plan.push((t + down, start));
            t += every;
        }
    };
    periodic(
        args.embedder_every,
        args.embedder_down,
        Action::StopEmbedder,
        Action::StartEmbedder,
    );
    periodic(
        args.upstream_every,
        args.upstream_down,
        Action::StopUpstream,
        Action::StartUpstream,
    );
    plan.sort_by_key(|(t, _)| *t);
    plan
}

/// The processes the chaos acts on, owned by the main thread (the harness kills a child when
/// the thread that spawned it ends, so every start happens here).
pub struct Processes {
    pub embedder: Embedder,
    pub upstreams: [Option<Upstream>; UPSTREAMS],
    pub addrs: [SocketAddr; UPSTREAMS],
    pub tools_files: [PathBuf; UPSTREAMS],
    pub catalog_server: PathBuf,
    pub version: usize,
}

impl Processes {
    /// Does `action`; the events it caused, each stamped when it took effect.
    pub fn act(&mut self, action: Action, catalogs: &Catalogs, dir: &TestDir) -> Vec<Event> {
        let began = Instant::now();
        let now = |what: What| vec![Event { at: began, what }];
        match action {
            Action::ChangeCatalogs => {
                self.version += 1;
                let mut results = Vec::new();
                for u in 0..UPSTREAMS {
                    let jsonl = catalogs.jsonl(u, self.version);
                    // A stopped upstream starts again with the version of the moment.
                    let written = self
                        .tools_files
                        .get(u)
                        .map(|f| std::fs::write(f, &jsonl).map_err(|e| e.to_string()));
                    let result = match (written, self.upstreams.get(u)) {
                        (Some(Err(e)), _) => Err(e),
                        (_, Some(Some(server))) => {
                            server.set_tools(&jsonl).map(|(tools, notified)| Swap {
                                tools,
                                notified,
                                at: Instant::now(),
                            })
                        }
                        _ => Err("stopped: served from its next start".to_owned()),
                    };
                    results.push(result);
                }
                now(What::CatalogChanged(self.version, results))
            }
            Action::StopEmbedder => {
                self.embedder.stop();
                now(What::EmbedderDown)
            }
            Action::StartEmbedder => match self.embedder.restart() {
                Ok(()) => vec![Event {
                    at: Instant::now(),
                    what: What::EmbedderUp,
                }],
                Err(e) => now(What::ActionFailed(format!("embedder restart: {e}"))),
            },
            Action::StopUpstream => {
                if let Some(slot) = self.upstreams.get_mut(STOPPED) {
                    // Drop kills the process group (SIGKILL) and reaps it.
                    *slot = None;
                }
                now(What::UpstreamDown(STOPPED))
            }
            Action::StartUpstream => match self.start_upstream(STOPPED, dir) {
                Ok(()) => now(What::UpstreamUp(STOPPED)),
                Err(e) => now(What::ActionFailed(format!("upstream restart: {e}"))),
            },
        }
    }

    /// Starts upstream `u` again on its address (Envoy's cluster points there).
    fn start_upstream(&mut self, u: usize, dir: &TestDir) -> Result<()> {
        let addr = self.addrs.get(u).copied().ok_or("no such upstream")?;
        let tools = self.tools_files.get(u).cloned().unwrap_or_default();
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            match Upstream::start(&self.catalog_server, &tools, &addr.to_string(), dir.path()) {
                Ok(server) => {
                    if let Some(slot) = self.upstreams.get_mut(u) {
                        *slot = Some(server);
                    }
                    return Ok(());
                }
                Err(e) if Instant::now() >= deadline => return Err(e.to_string()),
                // The port may still be held for a moment.
                Err(_) => std::thread::sleep(Duration::from_millis(200)),
            }
        }
    }
}
