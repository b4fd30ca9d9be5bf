//! Semantic ranking end to end: Envoy 1.40 with the mcp-tool-search `.wasm`, the real
//! embeddings sidecar (`mcp-tool-search-embedder`, all-MiniLM-L6-v2 on the CPU) behind the
//! filter's `embeddings` cluster, and the rmcp `catalog-server` upstream. Failures come from real
//! components: the sidecar killed (and restarted on its port), or a second Envoy in front of it
//! with `envoy.filters.http.fault` (500s, delays) and `direct_response` routes (answers that are
//! not embeddings), switched at run time through that Envoy's admin runtime layer.
//!
//! Envoy runs two workers, each with its own Wasm VM. The MCP traffic of a test goes through a
//! client that keeps one connection, so it reaches one known worker; health is asked on that
//! connection. A claim about every worker asks each worker and proves it did: Envoy's
//! per-worker listener counters (`listener.<address>.worker_<n>.downstream_cx_total`) show
//! which worker accepted the client's connection, and that no connection was accepted while
//! the request ran.
//!
//! No test has a budget of its own: each wait follows from the configured timeouts and the
//! filter's backoffs (see [`Timings`]), and every request has the client's timeout.
//!
//! Needs Envoy (`ENVOY_BIN`, else `.venv/bin/envoy`), the built filter (`make wasm`), the sidecar
//! (`EMBEDDER_BIN`, else `target/release/mcp-tool-search-embedder`: `make embedder`) and its model
//! (`MODEL_DIR`, else `.cache/models/all-MiniLM-L6-v2`: `make model`).
//!
//! The catalog is a slice of the 300-tool catalog (the payment tools a refund query competes
//! with, and a few others): the sidecar embeds it in seconds on a busy CPU, where the whole
//! catalog takes about a minute.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod support;

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, Instant};

use mcp_tool_search_wasm_tests::envoy_config::{
    Bootstrap, Cluster, HttpFilter, Listener, Route, VirtualHost,
};
use mcp_tool_search_wasm_tests::harness::{
    self, CatalogOptions, CatalogServer, Embedder, EmbeddingsFront, Envoy, FrontOptions, TestDir,
    FRONT_ABORT_PERCENT, FRONT_DELAY_PERCENT, FRONT_GARBAGE_JSON_PERCENT,
    FRONT_GARBAGE_TEXT_PERCENT,
};
use mcp_tool_search_wasm_tests::mcp::{self, RawResponse};
use serde_json::{json, Value};
use support::*;

/// A paraphrase with no word in common with any tool of the catalog: BM25 finds nothing,
/// MiniLM puts the refund tool first.
const PARAPHRASE: &str = "reimburse a buyer";
/// A query BM25 answers well.
const LEXICAL: &str = "refund a stripe charge";
const TARGET: &str = "stripe_refund_charge";

/// The slice of `catalog-300.jsonl` served upstream (plus the server's `slow_progress`).
const TOOLS: [&str; 14] = [
    "stripe_refund_charge",
    "stripe_get_charge",
    "stripe_get_customer",
    "stripe_create_customer",
    "stripe_get_invoice",
    "stripe_create_invoice",
    "square_refund_payment",
    "square_get_payment",
    "shopify_get_order",
    "quickbooks_get_customer",
    "xero_get_invoice",
    "slack_post_message",
    "github_get_issue",
    "gmail_send_email",
];

/// Envoy's `--concurrency` in the harness.
const WORKERS: usize = 2;
const PROTOCOL: [(&str, &str); 1] = [("mcp-protocol-version", "2025-11-25")];

const FALLBACK_KINDS: [&str; 6] = [
    "not_embedded",
    "unavailable",
    "timeout",
    "status",
    "malformed",
    "dimensions",
];

static NEXT_ID: AtomicI64 = AtomicI64::new(1);

fn next_id() -> i64 {
    NEXT_ID.fetch_add(1, Ordering::Relaxed)
}

/// The plugin configuration: the `embeddings` cluster with these overrides, and `ranking` if
/// given (else the default with embeddings, hybrid).
fn plugin_config(embeddings: Value, ranking: Option<&str>) -> Value {
    // Generous timeouts: tests run side by side, each with a sidecar embedding on 2 cores.
    let mut e = json!({
        "cluster": "embeddings",
        "model_id": "all-MiniLM-L6-v2",
        "dimensions": 384,
        "timeout": "20s",
        "query_timeout": "10s"
    });
    if let (Value::Object(map), Value::Object(more)) = (&mut e, embeddings) {
        map.extend(more);
    }
    let mut search = json!({ "embeddings": e });
    if let Some(r) = ranking {
        search["ranking"] = json!(r);
    }
    json!({ "mcp_paths": ["/mcp"], "search": search })
}

// ---- one test's processes ----------------------------------------------------------------------

/// The embeddings timings of a plugin configuration, from which every wait of a test follows.
#[derive(Debug, Clone, Copy)]
struct Timings {
    /// `timeout`: the longest a background batch can take before it fails.
    timeout: Duration,
    /// `query_timeout`: the longest a search waits for its query's vector.
    query_timeout: Duration,
    /// `max_batch_size`.
    batch: usize,
}

/// The default of `max_batch_size` (README, "Semantic ranking").
const DEFAULT_BATCH: usize = 64;
/// The first retry of a failed background batch (`Worker::failed` in
/// `filter/core/src/plugin/scheduler.rs`); each later one waits twice as long, up to
/// [`mcp_tool_search_core::MAX_BACKOFF_MS`].
const FIRST_RETRY: Duration = Duration::from_secs(1);
/// What the embedding lease outlives a batch's timeout by (`lease_ms` in `Plugin::on_tick`):
/// the longest another worker's lease keeps a batch waiting after that timeout.
const LEASE_SLACK: Duration = Duration::from_secs(1);

fn duration(text: &str) -> Duration {
    let ms = match text.strip_suffix("ms") {
        Some(ms) => ms.parse::<u64>().ok(),
        None => text
            .strip_suffix('s')
            .and_then(|s| s.parse::<u64>().ok())
            .map(|s| s * 1000),
    };
    Duration::from_millis(ms.unwrap_or_else(|| panic!("not a duration this test writes: {text}")))
}

impl Timings {
    fn of(config: &Value) -> Self {
        let e = &config["search"]["embeddings"];
        Timings {
            timeout: duration(e["timeout"].as_str().expect("timeout")),
            query_timeout: duration(e["query_timeout"].as_str().expect("query_timeout")),
            batch: e["max_batch_size"]
                .as_u64()
                .map_or(DEFAULT_BATCH, |b| usize::try_from(b).unwrap()),
        }
    }

    fn tick() -> Duration {
        Duration::from_millis(mcp_tool_search_core::EMBED_TICK_MS)
    }

    /// The longest a healthy service can take to embed `tools` from the next tick on: batch
    /// after batch, each sent on a tick, perhaps after another worker's lease ran out, and
    /// answered within `timeout` (a slower one is a failure, which the tests count).
    fn embedding(self, tools: usize) -> Duration {
        let batches = u32::try_from(tools.div_ceil(self.batch)).unwrap();
        Self::tick() + (Self::tick() + self.timeout + LEASE_SLACK) * batches
    }

    /// The longest until a background batch has failed, the service failing from the start.
    fn first_failure(self) -> Duration {
        Self::tick() + self.timeout + LEASE_SLACK
    }

    /// The longest until every tool is embedded once the service works again, `failing` after
    /// the first failure can have happened. A batch in flight may still fail (up to `timeout`);
    /// the worker's next retry then comes at most one backoff later, and a backoff that doubles
    /// after each failure is never longer than the failures before it lasted, plus the first
    /// retry, nor than the maximum.
    fn recovery(self, failing: Duration, tools: usize) -> Duration {
        let max = Duration::from_millis(mcp_tool_search_core::MAX_BACKOFF_MS);
        let backoff = (failing + self.timeout + FIRST_RETRY).min(max);
        self.timeout + backoff + self.embedding(tools)
    }
}

/// How the filter's `embeddings` cluster reaches the sidecar.
enum Via {
    Direct,
    /// Through an Envoy that proxies to the sidecar only what carries [`GATE_AUTHORITY`] and
    /// [`GATE_HEADERS`], and refuses the rest (see [`gate_yaml`]).
    Gate,
    /// Through a fault-injecting Envoy (its `backend` is set to the sidecar's address).
    Front(FrontOptions),
}

impl Via {
    fn front(configure: impl FnOnce(&mut FrontOptions)) -> Self {
        let mut opts = FrontOptions::new(SocketAddr::from(([127, 0, 0, 1], 0)));
        configure(&mut opts);
        Via::Front(opts)
    }
}

/// One test's processes. Fields drop in order: the front, the sidecar, then the stack (Envoy,
/// upstream, and last the directory with every log).
struct World {
    front: Option<EmbeddingsFront>,
    sidecar: Embedder,
    stack: Stack,
    /// Tools in the catalog (the slice and `slow_progress`).
    tools: usize,
    timings: Timings,
    /// Just before Envoy started: no background batch can have failed earlier.
    envoy_started: Instant,
}

/// Writes the catalog slice into the test directory.
fn catalog_slice(dir: &TestDir) -> PathBuf {
    let all = std::fs::read_to_string(harness::catalog_300()).expect("catalog-300.jsonl");
    let lines: Vec<&str> = all
        .lines()
        .filter(|l| {
            let v: Value = serde_json::from_str(l).unwrap_or(Value::Null);
            TOOLS.iter().any(|t| v["name"] == *t)
        })
        .collect();
    assert_eq!(
        lines.len(),
        TOOLS.len(),
        "every tool of the slice is in the catalog"
    );
    let path = dir.join("catalog.jsonl");
    std::fs::write(&path, lines.join("\n") + "\n").expect("write the catalog slice");
    path
}

/// Starts the sidecar (and stops it again unless `sidecar_up`), the front if asked, the
/// upstream, and Envoy with the filter and an `embeddings` cluster.
fn start(name: &str, config: Value, via: Via, sidecar_up: bool) -> World {
    let timings = Timings::of(&config);
    let dir = TestDir::new(name).expect("test dir");
    let tools_path = catalog_slice(&dir);
    let mut sidecar = Embedder::start(&dir).unwrap_or_else(|e| panic!("{e}"));
    if !sidecar_up {
        sidecar.stop();
    }
    let front = match via {
        Via::Direct => None,
        Via::Gate => Some(EmbeddingsFront {
            envoy: Envoy::start_yaml(&gate_yaml(sidecar.addr), "http:debug", &dir)
                .unwrap_or_else(|e| panic!("the embeddings gate: {e}")),
        }),
        Via::Front(opts) => Some(
            EmbeddingsFront::start(
                &FrontOptions {
                    backend: sidecar.addr,
                    ..opts
                },
                &dir,
            )
            .unwrap_or_else(|e| panic!("the embeddings front: {e}")),
        ),
    };
    let target = front.as_ref().map_or(sidecar.addr, EmbeddingsFront::addr);
    let mut setup = Setup::new(config).catalog(CatalogOptions {
        tools: tools_path,
        stateless: true,
        ..CatalogOptions::default()
    });
    setup
        .extra_clusters
        .push(Cluster::new("embeddings", target));
    let upstream = CatalogServer::start(CATALOG_SERVER.as_ref(), &setup.catalog, &dir)
        .unwrap_or_else(|e| panic!("catalog-server: {e}"));
    let envoy_started = Instant::now();
    let stack = setup.start_envoy(dir, upstream);
    World {
        front,
        sidecar,
        stack,
        tools: TOOLS.len() + 1,
        timings,
        envoy_started,
    }
}

/// Polls `check` every 100 ms until it returns `Ok`; panics with `what` and the last `Err`
/// seen once a check that started after `timeout` failed too (so a check under way when the
/// time runs out, which saw the state from before, is never the last word). There is no
/// budget for a whole test: each wait is bounded by what the code allows, each request by the
/// client's timeout.
async fn eventually<T, F, Fut>(what: &str, timeout: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, String>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        let past = Instant::now() >= deadline;
        let last = match check().await {
            Ok(v) => return v,
            Err(last) => last,
        };
        if past {
            panic!("timed out after {timeout:?} waiting for {what}; last: {last}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

// ---- clients pinned to a worker ----------------------------------------------------------------

/// An HTTP client that keeps one connection to Envoy: every request it sends reaches the same
/// worker, so the same Wasm VM.
struct Pinned {
    http: reqwest::Client,
    worker: usize,
}

impl World {
    /// Connections each worker of the MCP listener accepted so far (Envoy's per-worker
    /// listener stats).
    fn worker_connections(&self) -> Vec<u64> {
        let stats = self
            .stack
            .envoy
            .stats("worker_")
            .unwrap_or_else(|e| panic!("stats: {e}"));
        (0..WORKERS)
            .map(|w| {
                let suffix = format!(".worker_{w}.downstream_cx_total");
                stats
                    .iter()
                    .filter(|(n, _)| n.starts_with("listener.127.0.0.1_") && n.ends_with(&suffix))
                    .map(|(_, v)| *v)
                    .sum()
            })
            .collect()
    }

    /// A client whose connection reached `worker` (any worker if `None`): new clients are tried
    /// until Envoy's per-worker stats show the wanted one accepted the connection.
    async fn pin(&self, worker: Option<usize>) -> Pinned {
        let mut seen = Vec::new();
        for _ in 0..40 {
            let before = self.worker_connections();
            let http = reqwest::Client::builder()
                .no_proxy()
                .pool_max_idle_per_host(1)
                .pool_idle_timeout(None)
                .timeout(Duration::from_secs(30))
                .build()
                .expect("HTTP client");
            let url = self.stack.envoy.url(&format!("{SEARCH_PATH}/health"));
            let resp = http.get(&url).send().await.expect("GET health");
            assert_eq!(resp.status(), 200);
            let _ = resp.bytes().await;
            let after = self.worker_connections();
            let Some(w) = (0..WORKERS).find(|&w| after[w] > before[w]) else {
                panic!("no worker accepted the connection: {before:?} -> {after:?}");
            };
            seen.push(w);
            if worker.is_none_or(|want| want == w) {
                return Pinned { http, worker: w };
            }
        }
        panic!("40 connections never reached worker {worker:?}: {seen:?}");
    }

    /// Runs `f` on the test's kept-alive connection. Health is shared by every worker, so a
    /// reconnect (Envoy may close an idle keep-alive connection) changes nothing asserted here;
    /// it is only reported.
    async fn on_kept_connections<T, Fut: Future<Output = T>>(&self, f: Fut) -> T {
        let before = self.worker_connections();
        let out = f.await;
        let after = self.worker_connections();
        if before != after {
            eprintln!("note: the client reconnected ({before:?} -> {after:?})");
        }
        out
    }

    /// Runs `f` on `client` and says whether it provably reached the client's worker: no
    /// listener accepted a connection meanwhile, so the request went over a connection already
    /// open, and only the client's own one (accepted by its worker) is open to it.
    async fn on_worker<T, Fut: Future<Output = T>>(&self, f: Fut) -> (T, bool) {
        let before = self.worker_connections();
        let out = f.await;
        (out, self.worker_connections() == before)
    }

    /// `GET /mcp/search/health` answered by `worker`, and proven to be: on a client pinned
    /// there, asked again on a freshly pinned one should the client have reconnected.
    async fn health_on(&self, worker: usize) -> Value {
        let url = self.stack.envoy.url(&format!("{SEARCH_PATH}/health"));
        for _ in 0..5 {
            let client = self.pin(Some(worker)).await;
            let (body, proven) = self
                .on_worker(async {
                    let resp = client
                        .http
                        .get(&url)
                        .send()
                        .await
                        .unwrap_or_else(|e| panic!("GET {url}: {e}"));
                    assert_eq!(resp.status(), 200);
                    resp.bytes().await.expect("health body")
                })
                .await;
            if proven {
                return parse_health(&body);
            }
        }
        panic!("5 clients pinned to worker {worker} all reconnected for their health request");
    }

    /// `tool_search` on `client`, which must provably reach its worker (a search has effects,
    /// so it is not sent again elsewhere).
    async fn search_on(&self, client: &Pinned, query: &str) -> Searched {
        let (r, proven) = self.on_worker(self.search(client, query)).await;
        assert!(
            proven,
            "the search meant for worker {} went over a new connection: {}",
            client.worker,
            r.summary()
        );
        r
    }

    async fn rpc_via(&self, client: &Pinned, body: &Value) -> RawResponse {
        self.on_kept_connections(async {
            mcp::post_with(&client.http, &self.stack.url(), &PROTOCOL, body)
                .await
                .unwrap_or_else(|e| panic!("POST /mcp {body}: {e}"))
        })
        .await
    }

    /// `tools/list` (the filter learns the catalog from it).
    async fn list(&self, client: &Pinned) {
        let id = next_id();
        let resp = self.rpc_via(client, &list_request(id, None)).await;
        assert_eq!(resp.status, 200, "{}", resp.text());
        let tools = listed(&resp, id);
        assert_eq!(names(&tools), [TOOL_SEARCH], "every tool is progressive");
    }

    /// `tool_search`, as raw JSON-RPC.
    async fn search(&self, client: &Pinned, query: &str) -> Searched {
        let id = next_id();
        let body = call_request(id, TOOL_SEARCH, json!({ "query": query }));
        let start = Instant::now();
        let resp = self.rpc_via(client, &body).await;
        let took = start.elapsed();
        assert_eq!(resp.status, 200, "tool_search {query:?}: {}", resp.text());
        let result = result_of(&resp, id);
        assert_ne!(result["isError"], true, "tool_search {query:?}: {result}");
        let text = result["content"][0]["text"].as_str().unwrap_or("");
        let found: Vec<Value> = serde_json::from_str(text)
            .unwrap_or_else(|e| panic!("search result is not a JSON array ({e}): {result}"));
        Searched {
            names: names(&found),
            meta: result["_meta"]["mcp-tool-search/search"].clone(),
            took,
        }
    }

    /// `GET /mcp/search/health` on the client's connection (its worker's view).
    async fn health_via(&self, client: &Pinned) -> Value {
        let url = self.stack.envoy.url(&format!("{SEARCH_PATH}/health"));
        let body = self
            .on_kept_connections(async {
                let resp = client
                    .http
                    .get(&url)
                    .send()
                    .await
                    .unwrap_or_else(|e| panic!("GET {url}: {e}"));
                assert_eq!(resp.status(), 200);
                resp.bytes().await.expect("health body")
            })
            .await;
        parse_health(&body)
    }

    /// `GET /mcp/search/health` on a new connection (catalog counts are the same everywhere).
    async fn health(&self) -> Value {
        let url = self.stack.envoy.url(&format!("{SEARCH_PATH}/health"));
        let (status, _, body) = mcp::get(&url)
            .await
            .unwrap_or_else(|e| panic!("GET {url}: {e}"));
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
        parse_health(&body)
    }

    /// Waits until health counts every tool as embedded.
    async fn wait_embedded(&self, timeout: Duration) {
        let want = self.tools as u64;
        eventually("every tool embedded", timeout, || async {
            let h = self.health().await;
            if counts(&h) == (want, want) {
                Ok(())
            } else {
                Err(format!("{h}\n{}", self.all_stats()))
            }
        })
        .await;
    }

    /// A counter of the filter (`wasmcustom.mcp_tool_search.<name>`).
    fn stat(&self, name: &str) -> u64 {
        self.stack.envoy.stat(name).unwrap()
    }

    /// Every filter counter, for messages.
    fn all_stats(&self) -> String {
        self.stack
            .envoy
            .stats("mcp_tool_search")
            .map(|s| {
                s.iter()
                    .map(|(n, v)| format!("{n}: {v}"))
                    .collect::<Vec<_>>()
                    .join("\n")
            })
            .unwrap_or_else(|e| e.to_string())
    }

    /// How long until the circuit lets a search probe the service, as health says (the circuit
    /// is shared, so any worker's health will do): the search that starts after that is the
    /// probe, or finds the circuit closed.
    async fn probe_due(&self) -> Duration {
        let h = self.health().await;
        let circuit = &h["search"]["circuit"];
        match circuit["state"].as_str() {
            Some("closed") => Duration::ZERO,
            Some("open" | "half_open") => Duration::from_millis(
                circuit["probe_in_ms"]
                    .as_u64()
                    .unwrap_or_else(|| panic!("a circuit that is not closed says when: {h}")),
            ),
            _ => panic!("health has no circuit: {h}"),
        }
    }

    fn front(&self) -> &EmbeddingsFront {
        self.front.as_ref().expect("this test has a front")
    }
}

fn parse_health(body: &[u8]) -> Value {
    serde_json::from_slice(body).unwrap_or_else(|e| {
        panic!(
            "health is not JSON ({e}): {}",
            String::from_utf8_lossy(body)
        )
    })
}

/// (tools, embedded) of the test namespace in a health answer.
fn counts(health: &Value) -> (u64, u64) {
    let c = &health["catalogs"][NAMESPACE];
    (
        c["tools"].as_u64().unwrap_or(0),
        c["embedded"].as_u64().unwrap_or(0),
    )
}

fn is_degraded(health: &Value, reason_has: &str) -> bool {
    health["search"]["status"] == "degraded"
        && health["search"]["reason"]
            .as_str()
            .is_some_and(|r| !r.is_empty() && r.contains(reason_has))
}

fn is_ok(health: &Value, mode: &str) -> bool {
    health["search"]["status"] == "ok"
        && health["search"].get("reason").is_none()
        && health["search"]["mode"] == mode
}

// ---- search results ----------------------------------------------------------------------------

/// What a `tool_search` answered.
#[derive(Debug)]
struct Searched {
    names: Vec<String>,
    /// `_meta["mcp-tool-search/search"]`.
    meta: Value,
    took: Duration,
}

impl Searched {
    fn strategy(&self) -> &str {
        self.meta["strategy"].as_str().unwrap_or("?")
    }

    fn fallback_kind(&self) -> &str {
        self.meta["fallback"]["kind"].as_str().unwrap_or("(none)")
    }

    fn fallback_reason(&self) -> &str {
        self.meta["fallback"]["reason"].as_str().unwrap_or("")
    }

    /// `_meta` and the names found, for messages (the definitions are long).
    fn summary(&self) -> String {
        format!("_meta {} found {:?}", self.meta, self.names)
    }

    /// Ranked by vectors (`strategy`, no fallback), the refund tool first.
    fn assert_semantic(&self, strategy: &str) {
        assert_eq!(self.strategy(), strategy, "{}", self.summary());
        assert!(
            self.meta.get("fallback").is_none(),
            "no fallback expected: {}",
            self.summary()
        );
        assert_eq!(
            self.names.first().map(String::as_str),
            Some(TARGET),
            "{}",
            self.summary()
        );
    }

    /// Ranked by BM25 because of a fallback of this kind.
    fn assert_fallback(&self, kind: &str) {
        assert_eq!(self.strategy(), "bm25", "{}", self.summary());
        assert_eq!(self.meta["fallback"]["mode"], "bm25", "{}", self.summary());
        assert_eq!(self.fallback_kind(), kind, "{}", self.summary());
        assert!(!self.fallback_reason().is_empty(), "{}", self.summary());
    }
}

// ---- what every failure test checks ------------------------------------------------------------

/// Background batches fail and are counted; nothing gets embedded; searches answer by BM25
/// with a fallback of `kind` (reason containing `reason_has`), counted; the worker that
/// answered says `degraded` with that reason.
async fn assert_falls_back(world: &World, client: &Pinned, kind: &str, reason_has: &str) {
    world.list(client).await;
    eventually(
        "embedding_failures_total >= 1 (a background batch failed)",
        world.timings.first_failure(),
        || async {
            match world.stat("embedding_failures_total") {
                0 => Err(world.all_stats()),
                _ => Ok(()),
            }
        },
    )
    .await;
    let fallbacks_before = world.stat(&format!("search_fallbacks.{kind}"));
    let bm25_before = world.stat("searches_answered.bm25");

    let lexical = world.search(client, LEXICAL).await;
    lexical.assert_fallback(kind);
    assert!(
        lexical.fallback_reason().contains(reason_has),
        "the reason should contain {reason_has:?}: {}",
        lexical.summary()
    );
    assert_eq!(
        lexical.names[0],
        TARGET,
        "BM25 still answers: {}",
        lexical.summary()
    );

    // What vectors find, BM25 does not: the paraphrase shares no word with any tool.
    let paraphrase = world.search(client, PARAPHRASE).await;
    paraphrase.assert_fallback(kind);
    assert!(
        !paraphrase.names.iter().any(|n| n == TARGET),
        "{}",
        paraphrase.summary()
    );

    assert!(
        world.stat(&format!("search_fallbacks.{kind}")) >= fallbacks_before + 2,
        "two searches fell back ({kind}):\n{}",
        world.all_stats()
    );
    assert!(
        world.stat("searches_answered.bm25") >= bm25_before + 2,
        "{}",
        world.all_stats()
    );
    for other in FALLBACK_KINDS
        .iter()
        .filter(|k| **k != kind && **k != "not_embedded")
    {
        assert_eq!(
            world.stat(&format!("search_fallbacks.{other}")),
            0,
            "no {other} fallback expected:\n{}",
            world.all_stats()
        );
    }
    assert_eq!(world.stat("searches_answered.vector"), 0);
    assert_eq!(world.stat("searches_answered.hybrid"), 0);
    let h = world.health_via(client).await;
    assert!(
        is_degraded(&h, reason_has),
        "health must say degraded, with a reason containing {reason_has:?}: {h}"
    );
    assert_eq!(
        counts(&h),
        (world.tools as u64, 0),
        "nothing embedded while the service fails: {h}"
    );
}

/// Recovery: every tool embedded by the background worker, searches ranked by vectors again
/// (`strategy`), and health `ok` in `mode`.
async fn assert_recovers(world: &World, client: &Pinned, strategy: &str, mode: &str) {
    world
        .wait_embedded(
            world
                .timings
                .recovery(world.envoy_started.elapsed(), world.tools),
        )
        .await;
    // Repeated failures may have opened the circuit: vectors are back once its probe succeeds.
    let r = eventually(
        "the circuit's probe succeeds",
        world.probe_due().await,
        || async {
            let r = world.search(client, PARAPHRASE).await;
            if r.strategy() == strategy {
                Ok(r)
            } else {
                Err(r.summary())
            }
        },
    )
    .await;
    r.assert_semantic(strategy);
    let before = world.stat(&format!("searches_answered.{strategy}"));
    world
        .search(client, LEXICAL)
        .await
        .assert_semantic(strategy);
    assert_eq!(
        world.stat(&format!("searches_answered.{strategy}")),
        before + 1
    );
    let h = world.health_via(client).await;
    assert!(is_ok(&h, mode), "health must be ok again ({mode}): {h}");
}

fn assert_no_panic(world: &World) {
    let log = world.stack.envoy.log();
    assert!(!log.contains("panicked"), "{}", world.stack.filter_log());
}

/// How long the front holds a request that is to time out: the client's measure of a search
/// that waited for the 1 s timeout tells it apart from one that waited for this, however
/// loaded the machine (a search is answered long before the client's own 30 s timeout).
const SLOW: Duration = Duration::from_secs(20);
/// Envoy's timers and the test's clock are not the same clock: a wait measured here may come
/// out a little under what Envoy waited.
const TIMER_SLACK: Duration = Duration::from_millis(50);

// ---- the sidecar up ----------------------------------------------------------------------------

/// With the sidecar up, every tool is embedded in the background; then a paraphrase that BM25
/// cannot match finds the refund tool, ranked by vectors (hybrid, the default), through the
/// search tool and the plain HTTP endpoint; nothing fails, nothing falls back.
#[tokio::test]
async fn vectors_rank_paraphrases_when_the_sidecar_is_up() {
    let world = start("emb_up", plugin_config(json!({}), None), Via::Direct, true);
    {
        let client = world.pin(None).await;
        world.list(&client).await;
        // Right after the list the tools may not have vectors yet: BM25, and it says why.
        let early = world.search(&client, LEXICAL).await;
        if early.strategy() == "bm25" {
            early.assert_fallback("not_embedded");
            assert_eq!(early.names[0], TARGET);
            assert!(world.stat("search_fallbacks.not_embedded") >= 1);
        } else {
            early.assert_semantic("hybrid");
        }

        world
            .wait_embedded(world.timings.embedding(world.tools))
            .await;
        world
            .search(&client, PARAPHRASE)
            .await
            .assert_semantic("hybrid");
        world
            .search(&client, LEXICAL)
            .await
            .assert_semantic("hybrid");

        // The plain HTTP endpoint ranks the same way.
        let (status, _, v) = http_search(
            &world.stack,
            &[],
            json!({ "query": PARAPHRASE }).to_string().as_bytes(),
        )
        .await;
        assert_eq!(status, 200, "{v}");
        assert_eq!(v["tools"][0]["name"], TARGET, "{v}");
        assert_eq!(v["metadata"]["strategy"], "hybrid", "{v}");
        assert!(v["metadata"].get("fallback").is_none(), "{v}");

        for worker in 0..WORKERS {
            let h = world.health_on(worker).await;
            assert!(is_ok(&h, "hybrid"), "worker {worker}: {h}");
        }
        assert!(
            world.stat("searches_answered.hybrid") >= 3,
            "{}",
            world.all_stats()
        );
        assert_eq!(
            world.stat("embedding_failures_total"),
            0,
            "{}",
            world.all_stats()
        );
        for kind in FALLBACK_KINDS.iter().filter(|k| **k != "not_embedded") {
            assert_eq!(
                world.stat(&format!("search_fallbacks.{kind}")),
                0,
                "{}",
                world.all_stats()
            );
        }
        assert_no_panic(&world);
    }
}

// ---- failures, and recovery --------------------------------------------------------------------

/// The sidecar is down from the start: background batches fail and are counted, searches
/// answer by BM25 (`unavailable`: nothing answers at the sidecar's address), health is
/// degraded. Restarted on the same port, the background worker embeds the catalog on its next
/// retry and searches rank by vectors again.
#[tokio::test]
async fn a_stopped_sidecar_falls_back_to_bm25_until_it_is_back() {
    let mut world = start(
        "emb_stopped",
        plugin_config(json!({}), Some("vector")),
        Via::Direct,
        false,
    );
    {
        let client = world.pin(None).await;
        assert_falls_back(&world, &client, "unavailable", "").await;
        world
            .sidecar
            .restart()
            .unwrap_or_else(|e| panic!("restarting the sidecar: {e}"));
        assert_recovers(&world, &client, "vector", "semantic").await;
    }
    assert!(world.sidecar.running());
}

/// The front answers every embeddings request with the fault filter's 500: fallback `status`.
/// The fault cleared (runtime), vectors come back.
#[tokio::test]
async fn a_sidecar_answering_500_falls_back_to_bm25_until_the_fault_clears() {
    let world = start(
        "emb_500",
        plugin_config(json!({}), None),
        Via::front(|f| f.abort_percent = 100),
        true,
    );
    {
        let client = world.pin(None).await;
        assert_falls_back(&world, &client, "status", "500").await;
        world
            .front()
            .set(FRONT_ABORT_PERCENT, 0)
            .expect("clear the abort");
        assert_recovers(&world, &client, "hybrid", "hybrid").await;
    }
}

/// The front holds every request 20 s; the filter waits 1 s (`query_timeout`): fallback
/// `timeout`, and a search answers once the timeout fired, long before the delay ended.
/// Batches of one tool, so that each fits the timeout once the delay is gone.
#[tokio::test]
async fn a_sidecar_slower_than_the_timeout_falls_back_to_bm25_until_it_is_fast() {
    let world = start(
        "emb_timeout",
        plugin_config(
            json!({"timeout": "1s", "query_timeout": "1s", "max_batch_size": 1}),
            None,
        ),
        Via::front(|f| {
            f.delay_percent = 100;
            f.delay = SLOW;
        }),
        true,
    );
    {
        let client = world.pin(None).await;
        assert_falls_back(&world, &client, "timeout", "1000 ms").await;
        let r = world.search(&client, LEXICAL).await;
        r.assert_fallback("timeout");
        let waited = world.timings.query_timeout - TIMER_SLACK;
        assert!(
            r.took >= waited && r.took < SLOW,
            "a search waits for the timeout ({:?}), not for the delay ({SLOW:?}): took {:?}",
            world.timings.query_timeout,
            r.took
        );
        world
            .front()
            .set(FRONT_DELAY_PERCENT, 0)
            .expect("clear the delay");
        assert_recovers(&world, &client, "hybrid", "hybrid").await;
    }
}

/// The sidecar answers 384 numbers per vector; the filter is configured for 512: fallback
/// `dimensions`, nothing is ever embedded.
#[tokio::test]
async fn a_sidecar_of_the_wrong_dimensions_falls_back_to_bm25() {
    let world = start(
        "emb_dimensions",
        plugin_config(json!({"dimensions": 512}), Some("vector")),
        Via::Direct,
        true,
    );
    {
        let client = world.pin(None).await;
        assert_falls_back(&world, &client, "dimensions", "384").await;
        let r = world.search(&client, LEXICAL).await;
        assert!(r.fallback_reason().contains("512"), "{}", r.summary());
        let h = world.health_via(&client).await;
        assert_eq!(h["search"]["mode"], "semantic", "{h}");
    }
}

/// The front answers 200 with JSON that is not an embeddings response, then with plain text:
/// fallback `malformed` both times. Routed to the sidecar again, vectors come back.
#[tokio::test]
async fn a_sidecar_answering_garbage_falls_back_to_bm25_until_it_answers_vectors() {
    let world = start(
        "emb_garbage",
        plugin_config(json!({}), None),
        Via::front(|f| f.garbage_json_percent = 100),
        true,
    );
    {
        let client = world.pin(None).await;
        assert_falls_back(&world, &client, "malformed", "not the OpenAI shape").await;
        let front = world.front();
        front
            .set(FRONT_GARBAGE_TEXT_PERCENT, 100)
            .expect("text garbage");
        front
            .set(FRONT_GARBAGE_JSON_PERCENT, 0)
            .expect("no JSON garbage");
        let before = world.stat("search_fallbacks.malformed");
        let r = world.search(&client, LEXICAL).await;
        r.assert_fallback("malformed");
        assert!(
            r.fallback_reason().contains("not the OpenAI shape"),
            "{}",
            r.summary()
        );
        assert_eq!(r.names[0], TARGET);
        assert_eq!(world.stat("search_fallbacks.malformed"), before + 1);
        let h = world.health_via(&client).await;
        assert!(is_degraded(&h, "not the OpenAI shape"), "{h}");
        front
            .set(FRONT_GARBAGE_TEXT_PERCENT, 0)
            .expect("no garbage");
        assert_recovers(&world, &client, "hybrid", "hybrid").await;
    }
}

// ---- health across workers ---------------------------------------------------------------------

/// Health describes the embeddings service, whichever worker answers: a search that fell back
/// on one worker makes both say `degraded`, and a search that embedded on the other makes both
/// say `ok` again. (The tools are embedded first, so no background batch runs meanwhile: the
/// searches are the only calls.)
#[tokio::test]
async fn health_is_the_same_on_every_worker() {
    let mut world = start(
        "emb_workers",
        plugin_config(json!({}), None),
        Via::Direct,
        true,
    );
    {
        let w0 = world.pin(Some(0)).await;
        let w1 = world.pin(Some(1)).await;
        world.list(&w0).await;
        world
            .wait_embedded(world.timings.embedding(world.tools))
            .await;
        world
            .search_on(&w0, PARAPHRASE)
            .await
            .assert_semantic("hybrid");
        for worker in 0..WORKERS {
            let h = world.health_on(worker).await;
            assert!(is_ok(&h, "hybrid"), "worker {worker}: {h}");
        }

        world.sidecar.stop();
        let failed = world.search_on(&w0, LEXICAL).await;
        assert_eq!(failed.strategy(), "bm25", "{}", failed.summary());
        let reason = failed.fallback_reason().to_owned();
        let views: Vec<Value> = [world.health_on(0).await, world.health_on(1).await].into();
        assert!(
                views.iter().all(|h| is_degraded(h, &reason)),
                "after a search fell back on worker 0 ({reason:?}), every worker's health must say degraded:\nworker 0: {}\nworker 1: {}",
                views[0],
                views[1]
            );

        world
            .sidecar
            .restart()
            .unwrap_or_else(|e| panic!("restarting the sidecar: {e}"));
        world
            .search_on(&w1, PARAPHRASE)
            .await
            .assert_semantic("hybrid");
        let views: Vec<Value> = [world.health_on(0).await, world.health_on(1).await].into();
        assert!(
                views.iter().all(|h| is_ok(h, "hybrid")),
                "after a search embedded on worker 1, every worker's health must say ok:\nworker 0: {}\nworker 1: {}",
                views[0],
                views[1]
            );
    }
}

// ---- the circuit breaker -----------------------------------------------------------------------

fn p50(took: &mut [Duration]) -> Duration {
    took.sort();
    took.get(took.len() / 2).copied().unwrap_or_default()
}

/// The sidecar embeds the catalog, then hangs (a front that accepts and holds every request):
/// the first searches each wait for the query timeout, then the circuit opens and searches
/// answer by BM25 at once (`circuit_open`), health says so; once the service answers again, a
/// probe closes the circuit and hybrid ranking resumes, with no restart.
#[tokio::test]
async fn a_hung_service_opens_the_circuit_and_a_probe_closes_it() {
    let world = start(
        "emb_circuit",
        plugin_config(json!({"query_timeout": "1s"}), None),
        Via::front(|f| {
            f.delay_percent = 0;
            f.delay = Duration::from_secs(30);
        }),
        true,
    );
    {
        let client = world.pin(None).await;
        world.list(&client).await;
        world
            .wait_embedded(world.timings.embedding(world.tools))
            .await;
        let mut healthy = Vec::new();
        for _ in 0..5 {
            let r = world.search(&client, PARAPHRASE).await;
            r.assert_semantic("hybrid");
            healthy.push(r.took);
        }
        world.front().set(FRONT_DELAY_PERCENT, 100).expect("hang");
        // Three searches in a row time out (1 s each), then the circuit opens.
        let mut timed_out = Vec::new();
        for _ in 0..3 {
            let r = world.search(&client, LEXICAL).await;
            r.assert_fallback("timeout");
            assert_eq!(r.names[0], TARGET, "{}", r.summary());
            assert!(
                r.took >= world.timings.query_timeout - TIMER_SLACK,
                "{:?}",
                r.took
            );
            timed_out.push(r.took);
        }
        assert_eq!(
            world.stat("embeddings_circuit.opened"),
            1,
            "{}",
            world.all_stats()
        );
        let mut open = Vec::new();
        for _ in 0..5 {
            let r = world.search(&client, LEXICAL).await;
            r.assert_fallback("circuit_open");
            assert_eq!(r.names[0], TARGET, "{}", r.summary());
            open.push(r.took);
        }
        let h = world.health_via(&client).await;
        assert_eq!(h["search"]["status"], "degraded", "{h}");
        assert_eq!(h["search"]["circuit"]["state"], "open", "{h}");
        // The service answers again: once the circuit's backoff has passed, a probe closes
        // it and hybrid ranking is back.
        world
            .front()
            .set(FRONT_DELAY_PERCENT, 0)
            .expect("answer again");
        let due = world.probe_due().await;
        let resumed = eventually("hybrid ranking resumes", due, || async {
            let r = world.search(&client, PARAPHRASE).await;
            if r.strategy() == "hybrid" {
                Ok(r)
            } else {
                Err(r.summary())
            }
        })
        .await;
        resumed.assert_semantic("hybrid");
        assert!(
            world.stat("embeddings_circuit.closed") >= 1,
            "{}",
            world.all_stats()
        );
        let h = world.health_via(&client).await;
        assert_eq!(h["search"]["circuit"]["state"], "closed", "{h}");
        assert!(is_ok(&h, "hybrid"), "{h}");
        let (healthy, timed_out, open) = (p50(&mut healthy), p50(&mut timed_out), p50(&mut open));
        eprintln!(
                "circuit phases, p50: healthy hybrid {healthy:?}, hung (timeouts) {timed_out:?}, open {open:?}"
            );
        // Under an open circuit no search waits for the service: most answer long before
        // the query timeout could have fired, however loaded the machine.
        assert!(
                open < world.timings.query_timeout,
                "an open circuit answers without waiting for the query timeout ({:?}): open {open:?}, timed out {timed_out:?}",
                world.timings.query_timeout
            );
        assert_no_panic(&world);
    }
}

/// A query no tool answers finds nothing under hybrid and vector ranking (the cosine floor),
/// as under BM25; a real query still finds its tool.
#[tokio::test]
async fn a_nonsense_query_matches_nothing_under_vectors() {
    for ranking in ["hybrid", "vector"] {
        let world = start(
            &format!("emb_nonsense_{ranking}"),
            plugin_config(json!({}), Some(ranking)),
            Via::Direct,
            true,
        );
        {
            let client = world.pin(None).await;
            world.list(&client).await;
            world
                .wait_embedded(world.timings.embedding(world.tools))
                .await;
            let nonsense = world.search(&client, "zzzz qqqq").await;
            assert_eq!(nonsense.strategy(), ranking, "{}", nonsense.summary());
            assert!(nonsense.names.is_empty(), "{}", nonsense.summary());
            assert_eq!(nonsense.meta["matches"], 0, "{}", nonsense.summary());
            world
                .search(&client, PARAPHRASE)
                .await
                .assert_semantic(ranking);
        }
    }
}

// ---- headers and authority -----------------------------------------------------------------

/// The authority and headers the gate in front of the sidecar requires.
const GATE_AUTHORITY: &str = "embed.internal:8443";
const GATE_HEADERS: [(&str, &str); 2] =
    [("authorization", "Bearer e2e-token"), ("x-tenant", "acme")];

/// A real Envoy in front of the sidecar that proxies `/v1/embeddings` only for
/// [`GATE_AUTHORITY`] (its virtual host) with every [`GATE_HEADERS`] (route matchers); other
/// requests get 403 (headers missing) or 421 (another authority), so a call that is answered
/// with vectors carried them all.
fn gate_yaml(sidecar: SocketAddr) -> String {
    let embeddings = GATE_HEADERS
        .iter()
        .fold(Route::path("/v1/embeddings"), |r, (name, value)| {
            r.header_exact(name, value)
        });
    let listener = Listener::new("embeddings_gate")
        .route_config_name("gate")
        .virtual_host(VirtualHost::new(
            "configured",
            &[GATE_AUTHORITY],
            vec![
                embeddings.to_cluster_untimed("sidecar"),
                Route::prefix("/").direct(403, Some("headers missing")),
            ],
        ))
        .virtual_host(VirtualHost::new(
            "other",
            &["*"],
            vec![Route::prefix("/").direct(421, Some("another authority"))],
        ))
        .filter(HttpFilter::router());
    Bootstrap::new()
        .listener(listener)
        .cluster(Cluster::new("sidecar", sidecar))
        .to_yaml()
}

/// README "Semantic ranking": the configured `authority` and `headers` are on the embeddings
/// calls Envoy makes for the filter, background batches and queries alike. The gate first
/// shows it refuses calls without them, so that vectors through it prove they were sent.
#[tokio::test]
async fn configured_headers_and_authority_reach_the_embeddings_service() {
    let headers: serde_json::Map<String, Value> = GATE_HEADERS
        .iter()
        .map(|(n, v)| ((*n).to_owned(), json!(v)))
        .collect();
    let world = start(
        "emb_headers",
        plugin_config(
            json!({"authority": GATE_AUTHORITY, "headers": headers}),
            None,
        ),
        Via::Gate,
        true,
    );
    let gate = world.front().addr();
    let http = reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap();
    let body = json!({"model": "all-MiniLM-L6-v2", "input": ["refund"]});
    let call = |authority: &'static str, headers: &'static [(&'static str, &'static str)]| {
        let mut req = http
            .post(format!("http://{gate}/v1/embeddings"))
            .header("host", authority)
            .json(&body);
        for (n, v) in headers {
            req = req.header(*n, *v);
        }
        async move {
            let resp = req.send().await.expect("a call to the gate");
            resp.status().as_u16()
        }
    };
    assert_eq!(
        call(GATE_AUTHORITY, &GATE_HEADERS).await,
        200,
        "the gate passes"
    );
    assert_eq!(call(GATE_AUTHORITY, &GATE_HEADERS[..1]).await, 403);
    assert_eq!(call(GATE_AUTHORITY, &GATE_HEADERS[1..]).await, 403);
    assert_eq!(call("embeddings", &GATE_HEADERS).await, 421);
    let refused = |w: &World| {
        // The connection manager's own counter (the listener keeps one by the same suffix).
        let name = "http.embeddings_gate.downstream_rq_4xx";
        w.front()
            .envoy
            .stats(name)
            .unwrap()
            .iter()
            .filter(|(n, _)| n == name)
            .map(|(_, v)| *v)
            .sum::<u64>()
    };
    assert_eq!(refused(&world), 3, "the gate counts its refusals");

    let client = world.pin(None).await;
    world.list(&client).await;
    world
        .wait_embedded(world.timings.embedding(world.tools))
        .await;
    world
        .search(&client, PARAPHRASE)
        .await
        .assert_semantic("hybrid");
    assert_eq!(
        refused(&world),
        3,
        "the gate refused a call of the filter:\n{}",
        world.all_stats()
    );
    assert_eq!(
        world.stat("embedding_failures_total"),
        0,
        "{}",
        world.all_stats()
    );
}

// ---- a catalog that lives ----------------------------------------------------------------------

/// A tool the server adds ranks at once (by its BM25 score among the vectors, the search still
/// hybrid) and is ranked by its vector within one tick and one batch of the list that taught it.
#[tokio::test]
async fn a_tool_added_ranks_at_once_and_by_its_vector_within_one_batch() {
    const ADDED: &str = "payroll_issue_payslips";
    let world = start(
        "emb_change",
        plugin_config(json!({}), None),
        Via::Direct,
        true,
    );
    {
        let client = world.pin(None).await;
        world.list(&client).await;
        world
            .wait_embedded(world.timings.embedding(world.tools))
            .await;
        let path = world.stack.dir.join("catalog.jsonl");
        let mut tools: Vec<Value> = std::fs::read_to_string(path)
            .expect("the catalog slice")
            .lines()
            .map(|l| serde_json::from_str(l).expect("a tool"))
            .collect();
        tools.push(json!({"name": ADDED,
            "description": "Run the monthly payroll and send every employee their payslip.",
            "inputSchema": {"type": "object", "properties": {"month": {"type": "string"}}}}));
        world
            .stack
            .upstream
            .set_tools(&tools, false)
            .unwrap_or_else(|e| panic!("{e}"));
        world.list(&client).await;
        let r = world.search(&client, "monthly payroll payslip").await;
        assert_eq!(r.strategy(), "hybrid", "{}", r.summary());
        assert_eq!(
            r.names.first().map(String::as_str),
            Some(ADDED),
            "{}",
            r.summary()
        );
        let r = eventually(
            "the added tool vector-ranked",
            world.timings.embedding(1),
            || async {
                let r = world
                    .search(&client, "pay the staff their monthly salaries")
                    .await;
                if r.meta["embedded"] == r.meta["candidates"] {
                    Ok(r)
                } else {
                    Err(r.summary())
                }
            },
        )
        .await;
        assert_eq!(r.strategy(), "hybrid", "{}", r.summary());
        assert_eq!(
            r.names.first().map(String::as_str),
            Some(ADDED),
            "{}",
            r.summary()
        );
    }
    assert_no_panic(&world);
}

/// The longest from a restarted sidecar printing `listening on` to a hybrid answer: the
/// circuit's longest backoff and its jitter (`MAX_CIRCUIT_BACKOFF_MS` plus a quarter), the
/// probe, and the query's own timeout; the acceptance bound is 10 s.
const RECOVERY: Duration = Duration::from_secs(10);

/// The sidecar is killed after the catalog was embedded and stays down long enough for the
/// circuit's backoff to reach its maximum while searches keep coming; restarted, the searches
/// are hybrid again within [`RECOVERY`] of it listening.
#[tokio::test]
async fn after_a_sidecar_restart_hybrid_answers_within_ten_seconds() {
    let mut world = start(
        "emb_restart",
        plugin_config(json!({}), None),
        Via::Direct,
        true,
    );
    let client = world.pin(None).await;
    world.list(&client).await;
    world
        .wait_embedded(world.timings.embedding(world.tools))
        .await;
    world
        .search(&client, PARAPHRASE)
        .await
        .assert_semantic("hybrid");
    world.sidecar.stop();
    let down = Instant::now();
    while down.elapsed() < Duration::from_secs(15) {
        let r = world.search(&client, LEXICAL).await;
        assert_eq!(r.strategy(), "bm25", "{}", r.summary());
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    assert!(
        world.stat("embeddings_circuit.opened") >= 1,
        "{}",
        world.all_stats()
    );
    world
        .sidecar
        .restart()
        .unwrap_or_else(|e| panic!("restarting the sidecar: {e}"));
    let listening = Instant::now();
    let r = eventually("hybrid after the restart", RECOVERY, || async {
        let r = world.search(&client, PARAPHRASE).await;
        if r.strategy() == "hybrid" {
            Ok(r)
        } else {
            Err(r.summary())
        }
    })
    .await;
    r.assert_semantic("hybrid");
    eprintln!(
        "hybrid again {:?} after the sidecar listened",
        listening.elapsed()
    );
    drop(client);
    assert_no_panic(&world);
}
