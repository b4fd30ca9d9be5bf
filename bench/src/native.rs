//! The filter's core natively, driven as Envoy drives the `.wasm`: a worker is the core's
//! `Root` on a `MemoryHost` (workers made with the same host share its data, as Envoy's
//! do), and each exchange runs through the core's own driver (`exchange`), so the clock,
//! the stats, the catalog meta and the header checks the VM runs are measured too.

use crate::inproc::{median, reps, timed, Result, RESPONSE_CHUNK};
use crate::messages::{
    list_request, list_response as upstream_list, plugin_config, rotated_lists, search_request,
};
use mcp_tool_search_core::{
    exchange, Config, Exchanged, MemoryHost, Plugin, Request, Response, Root, METADATA_KEY,
};
use std::rc::Rc;
use std::time::Duration;

/// The route metadata's namespace the bench's catalog is kept under.
const NAMESPACE: &str = "bench";

/// One worker.
pub struct NativeEnv {
    root: Root,
    host: Rc<MemoryHost>,
    /// The MCP session the exchanges are made in (`None`: sessionless).
    session: Option<String>,
}

impl NativeEnv {
    pub fn new(config: &Config, host: &Rc<MemoryHost>) -> Self {
        if host.clock_ms.get() == 0 {
            // A wall clock: 0 means "never" in catalog ages.
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
                .unwrap_or(1);
            host.clock_ms.set(now);
        }
        host.set_property(
            &[
                "xds",
                "route_metadata",
                "filter_metadata",
                METADATA_KEY,
                "namespace",
            ],
            NAMESPACE,
        );
        NativeEnv {
            root: Root::new(Plugin::new(config.clone(), "bench".to_owned())),
            host: Rc::clone(host),
            session: None,
        }
    }

    /// This worker's exchanges are made in the MCP session `id`.
    pub fn in_session(mut self, id: &str) -> Self {
        self.session = Some(id.to_owned());
        self
    }

    /// The root tick of a worker that serves streams (it builds and publishes the indexes it
    /// owes the others).
    pub fn tick(&self) {
        self.root.plugin.stream_started();
        self.host.enter(0);
        self.root.on_tick(self.host.as_ref());
    }

    /// One exchange of an MCP `POST` carrying `body`; the upstream answers `response`.
    fn exchange(&self, body: &[u8], response: &Response) -> Exchanged {
        let request = Request {
            headers: [
                (":method", "POST"),
                (":path", "/mcp"),
                (":authority", "bench"),
                ("accept", "application/json, text/event-stream"),
                ("content-type", "application/json"),
                ("mcp-protocol-version", "2025-11-25"),
            ]
            .iter()
            .map(|(k, v)| (k.to_string(), v.as_bytes().to_vec()))
            .chain([(
                "content-length".to_string(),
                body.len().to_string().into_bytes(),
            )])
            .chain(
                self.session
                    .iter()
                    .map(|id| ("mcp-session-id".to_string(), id.as_bytes().to_vec())),
            )
            .collect(),
            chunks: vec![body.to_vec()],
            trailers: false,
        };
        // Nothing is called: catalogs are learned from lists, and ranking is BM25.
        let out = exchange(&self.root, &self.host, &request, response, &mut |_, _| {
            (None, Vec::new(), Vec::new())
        });
        // The host keeps every count and log line for tests; a benchmark loop would grow them.
        self.host.increments.borrow_mut().clear();
        self.host.logs.borrow_mut().clear();
        out
    }

    /// Runs the root's ticks, answering their calls with `serve`, until a tick makes none (every
    /// tool has a vector, or the service failed); returns how many ticks made calls.
    pub fn embed_all(&self, serve: &mut mcp_tool_search_core::Serve<'_>) -> usize {
        let mut batches = 0;
        loop {
            let after = self.host.last_token();
            self.tick();
            if self.host.last_token() == after {
                return batches;
            }
            batches += 1;
            self.host.answer_calls(&self.root, None, after, serve);
        }
    }

    /// A search: the local reply's body.
    pub fn search(&self, body: &[u8]) -> Result<Vec<u8>> {
        match self.exchange(body, &Response::default()) {
            Exchanged::Local(reply) if reply.status == 200 => Ok(reply.body),
            other => Err(format!("search: {other:?}")),
        }
    }

    /// A list: the body the client gets (an error unless it was rewritten).
    pub fn list(&self, request: &[u8], response: &Response) -> Result<Vec<u8>> {
        match self.exchange(request, response) {
            Exchanged::Upstream { response: out, .. } if response.chunks.concat() != out => Ok(out),
            other => Err(format!(
                "list not rewritten: {}",
                truncate(&format!("{other:?}"))
            )),
        }
    }

    /// Forgets the list rewrite this VM remembers, so that the next list is computed afresh (as
    /// the first after a catalog change, or for another caller or page).
    pub fn forget_list(&self) -> Result<()> {
        let index = self
            .root
            .plugin
            .catalog(self.host.as_ref(), NAMESPACE)
            .map_err(|e| e.to_string())?;
        index.list_memo.replace(None);
        Ok(())
    }
}

fn truncate(s: &str) -> String {
    s.chars().take(300).collect()
}

/// The upstream's list response as it reaches the filter, in `RESPONSE_CHUNK` pieces; a JSON
/// body carries its length (the SSE stream has none).
pub fn list_response(content_type: &str, body: &str) -> Response {
    let mut headers = vec![
        (":status".to_string(), b"200".to_vec()),
        ("content-type".to_string(), content_type.as_bytes().to_vec()),
    ];
    if content_type == "application/json" {
        headers.push(("content-length".into(), body.len().to_string().into_bytes()));
    }
    Response {
        headers,
        chunks: body
            .as_bytes()
            .chunks(RESPONSE_CHUNK)
            .map(<[u8]>::to_vec)
            .collect(),
        trailers: false,
    }
}

/// One list, timed (CPU time).
pub fn timed_list(env: &NativeEnv, request: &str, response: &Response) -> Result<Duration> {
    let (out, d) = timed(|| env.list(request.as_bytes(), response));
    out.map(|_| d)
}

/// The native operations [`perf_loop`] runs.
const PERF_OPERATIONS: &[&str] = &[
    "list",
    "list-fresh",
    "list-change",
    "list-change-sse",
    "list-sse",
    "list-shuffled",
    "build",
    "load",
    "search",
    "search-session",
    "search-session-off",
];

/// Runs one native operation in a loop for `duration` (for `perf record`): `list` (a JSON
/// `tools/list` exchange over a learned catalog), `list-fresh` (the same with its memo
/// forgotten), `list-change`, `list-change-sse` (every list the first after a catalog change, JSON or
/// SSE), `list-sse` (a
/// repeated SSE list), `list-shuffled` (the same tools in another order each time, as a
/// gateway joining its servers' lists as they arrive sends them), `build` (a fresh worker's first search),
/// `load` (the same once the listing worker published its index), `search` (a search exchange)
/// or `search-session`, `search-session-off` (a search in an MCP session, search insights on or
/// off). Returns the number of iterations and the median time.
pub fn perf_loop(what: &str, jsonl: &str, duration: Duration) -> Result<(usize, Duration)> {
    let mut config = plugin_config(&["/mcp".to_owned()]);
    if what == "search-session-off" {
        config = crate::insights::without_insights(&config);
    }
    let config = Config::parse(&config).map_err(|e| e.to_string())?;
    let (list_json, list_sse) = upstream_list(jsonl);
    let (changed_json, changed_sse) = match what {
        "list-change" | "list-change-sse" => {
            upstream_list(&crate::changes::changed_catalog(jsonl)?)
        }
        _ => (String::new(), String::new()),
    };
    let request = list_request();
    let shared = Rc::new(MemoryHost::default());
    let mut env = NativeEnv::new(&config, &shared);
    if what.starts_with("search-session") {
        env = env.in_session(crate::insights::SESSION);
    }
    let (json, sse) = (
        list_response("application/json", &list_json),
        list_response("text/event-stream", &list_sse),
    );
    env.list(request.as_bytes(), &json)?;
    let body = search_request(1, "send a message to a slack channel");
    env.search(body.as_bytes())?;
    if what == "load" {
        env.tick();
    }
    // Eight orders of the same tools.
    let shuffled: Vec<Response> = match what {
        "list-shuffled" => rotated_lists(jsonl, 0..8)
            .iter()
            .map(|json| list_response("application/json", json))
            .collect(),
        _ => Vec::new(),
    };
    let changed = match what {
        "list-change-sse" => list_response("text/event-stream", &changed_sse),
        _ => list_response("application/json", &changed_json),
    };
    let mut round = 0usize;
    let times = reps(1, usize::MAX, duration, || match what {
        "list" => timed_list(&env, &request, &json),
        "list-fresh" => {
            env.forget_list()?;
            timed_list(&env, &request, &json)
        }
        "list-sse" => timed_list(&env, &request, &sse),
        "list-shuffled" => {
            round += 1;
            let response = shuffled.get(round % 8).ok_or("no shuffled lists")?;
            timed_list(&env, &request, response)
        }
        "list-change" | "list-change-sse" => {
            // The upstream serves the catalog and its changed version in turn: every list is
            // the first after a change (section 2 of BENCHMARKS.md).
            round += 1;
            let unchanged = if what == "list-change" { &json } else { &sse };
            let response = if round % 2 == 1 { &changed } else { unchanged };
            timed_list(&env, &request, response)
        }
        "build" | "load" => {
            let fresh = NativeEnv::new(&config, &shared);
            let (r, d) = timed(|| fresh.search(body.as_bytes()));
            r.map(|_| d)
        }
        "search" | "search-session" | "search-session-off" => {
            let (r, d) = timed(|| env.search(body.as_bytes()));
            r.map(|_| d)
        }
        other => Err(format!(
            "unknown --perf operation {other:?} ({})",
            PERF_OPERATIONS.join(", ")
        )),
    })?;
    Ok((times.len(), median(&times)))
}
