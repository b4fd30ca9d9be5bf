//! The response side under an authorization policy, against an attacker, end to end (issue 30,
//! classes 1 and 2, and a list member named twice): real Envoy, the real `.wasm`, real MCP
//! servers. The caller is `x-user-roles: support`, allowed `github_*` and `echo` tools,
//! `triage_*` and `simple-prompt` prompts, `kb://*` and two `demo://` resources; every other
//! entry is the attacker's goal. Each attack is first shown to leak when sent to the server
//! directly, then sent through the filter, with request headers held and forwarded.
//!
//! - Unreadable ids: a list request whose `id` the filter cannot read as the server does (an
//!   integer past 2^53-1, which the Python SDK keeps exact; a lone surrogate escape, which the
//!   TypeScript SDK keeps) would be answered with a list the filter cannot pair with its
//!   request. Such a request is refused (400, -32600) and never reaches the server (shown by
//!   the server's request log, or its event store).
//! - Lists on a stream the filter did not pair: a resumed GET (`Last-Event-ID`, Streamable HTTP
//!   "Resumability and Redelivery") replays an earlier list, and the Python SDK answers on the
//!   HTTP stream registered under `str(id)`, so a list with id `1` can arrive as the answer of a
//!   concurrent `ping` with id `"1"`. Whatever stream a list arrives on, it carries no entry
//!   the caller may not use.
//! - A list member named twice (`tools`, `result`, an entry's `name`): clients keep the last
//!   one, so the response is withheld (-32603) rather than filtered on one reading.
//!
//! Requests are raw HTTP/1.1, so ids and bodies reach Envoy byte for byte; every byte the
//! client receives is searched for the forbidden entries. Each test collects every row's
//! failure before failing, so one run shows every row that leaks. Needs Envoy, the built
//! filter, the Python SDK 1.x and 2.x and server-everything (`make test` installs them all).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use mcp_tool_search_wasm_tests::envoy_config::{
    Bootstrap, Cluster, HttpFilter, Listener, Route, VirtualHost, WasmFilter,
};
use mcp_tool_search_wasm_tests::harness::{self, free_port, Envoy, TestDir};
use mcp_tool_search_wasm_tests::http1;
use mcp_tool_search_wasm_tests::node::ServerEverything;
use mcp_tool_search_wasm_tests::python::{
    AttackServer, AttackServerOptions, DuplicateMembersServer,
};
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::time::Duration;

// ---- the policy and the entries it allows ---------------------------------------------------------

const ROLES_HEADER: &str = "x-user-roles";

fn filter_config(hold: bool) -> Value {
    json!({
        "mcp_paths": ["/mcp"],
        "hold_request_headers": hold,
        // The paired rewrite keeps these in the list itself, so an allowed tool is visible.
        "eager_patterns": ["github_*", "echo"],
        "authorization": {
            "identity": {"source": "header", "header": ROLES_HEADER, "claim": "roles"},
            "rules": [{
                "claim": "roles",
                "values": ["support"],
                "tools": ["github_*", "echo"],
                "prompts": ["triage_*", "simple-prompt"],
                "resources": [
                    "kb://*",
                    "demo://resource/static/document/architecture.md",
                    "demo://resource/dynamic/text/*"
                ]
            }],
            "default": "deny"
        }
    })
}

/// The four lists: method, result member, the member of an entry the policy reads.
const LISTS: [(&str, &str, &str); 4] = [
    ("tools/list", "tools", "name"),
    ("prompts/list", "prompts", "name"),
    ("resources/list", "resources", "uri"),
    (
        "resources/templates/list",
        "resourceTemplates",
        "uriTemplate",
    ),
];

/// One allowed and one forbidden entry of each list (in [`LISTS`] order) of a server.
struct Entries {
    allowed: [&'static str; 4],
    forbidden: [&'static str; 4],
}

/// `peers/response_attack_server.py` (FastMCP 1.x and MCPServer 2.x).
const PY: Entries = Entries {
    allowed: [
        "github_get_issue",
        "triage_ticket",
        "kb://refunds",
        "kb://articles/{slug}",
    ],
    forbidden: [
        "stripe_create_refund",
        "payroll_summary",
        "hr://salaries",
        "hr://employees/{employee}",
    ],
};

/// server-everything.
const EVERYTHING: Entries = Entries {
    allowed: [
        "echo",
        "simple-prompt",
        "demo://resource/static/document/architecture.md",
        "demo://resource/dynamic/text/{resourceId}",
    ],
    forbidden: [
        "get-env",
        "args-prompt",
        "demo://resource/static/document/features.md",
        "demo://resource/dynamic/blob/{resourceId}",
    ],
};

/// Every entry no test caller may see, searched for in every byte a client receives through
/// the filter.
const NEVER_SEEN: &[&str] = &[
    "stripe_create_refund",
    "stripe_get_balance",
    "payroll_summary",
    "hr://salaries",
    "hr://employees/{employee}",
    "get-env",
    "get-sum",
    "gzip-file-as-resource",
    "args-prompt",
    "completable-prompt",
    "demo://resource/static/document/features.md",
    "demo://resource/dynamic/blob/{resourceId}",
];

const UNREADABLE_PREFIX: &str =
    "Request refused: the authorization policy needs a body it can read in exactly one way";
/// What every withheld answer says (a list answering this stream's own request names itself
/// "the tool list", any other "the response").
const WITHHELD: &str = "could not be filtered for this caller";

// ---- failures, collected ------------------------------------------------------------------------

/// Every row's failures, reported together at the end: one run shows every row that leaks.
#[derive(Default)]
struct Failures(Vec<String>);

impl Failures {
    fn check(&mut self, ok: bool, what: impl FnOnce() -> String) -> bool {
        if !ok {
            self.0.push(what());
        }
        ok
    }

    fn finish(self, test: &str) {
        assert!(
            self.0.is_empty(),
            "{test}: {} failure(s):\n- {}",
            self.0.len(),
            self.0.join("\n- ")
        );
    }
}

/// The forbidden entries found in `bytes`.
fn leaked(bytes: &[u8]) -> Vec<&'static str> {
    let text = String::from_utf8_lossy(bytes);
    NEVER_SEEN
        .iter()
        .copied()
        .filter(|n| text.contains(n))
        .collect()
}

// ---- raw HTTP -----------------------------------------------------------------------------------

/// Where a request goes: the address connected to and the `Host` it names (Envoy routes on
/// the host to one of its upstreams).
#[derive(Debug, Clone)]
struct Target {
    addr: SocketAddr,
    host: String,
    via_filter: bool,
}

impl Target {
    fn direct(addr: SocketAddr) -> Self {
        Self {
            addr,
            host: addr.to_string(),
            via_filter: false,
        }
    }

    fn via(envoy: &Envoy, host: &str) -> Self {
        Self {
            addr: envoy.listener,
            host: host.to_owned(),
            via_filter: true,
        }
    }

    fn name(&self) -> &'static str {
        if self.via_filter {
            "through the filter"
        } else {
            "directly"
        }
    }

    /// A whole HTTP/1.1 request: the caller's role header, `Connection: close`, the body
    /// byte for byte.
    fn request(&self, method: &str, headers: &[(&str, &str)], body: &[u8]) -> Vec<u8> {
        let mut req = http1::Request::builder(method, "/mcp")
            .header("Host", &self.host)
            .header("Connection", "close")
            .header(ROLES_HEADER, "support");
        if method == "POST" {
            req = req
                .header("content-type", "application/json")
                .header("accept", "application/json, text/event-stream")
                .header("content-length", &body.len().to_string());
        }
        req.headers(headers).raw_body(body).bytes
    }

    fn post(&self, headers: &[(&str, &str)], body: &[u8]) -> Reply {
        Pending::begin(self.addr, &self.request("POST", headers, body))
            .read(Duration::from_secs(15), |_| false)
    }
}

/// A response read so far: the body de-chunked (a chunk still arriving included as far as it
/// came), and every byte received in `raw`, head and chunk framing included (searched for
/// leaks).
type Reply = http1::Streamed;

/// What the checks read from a [`Reply`].
trait ReplyExt {
    fn is_sse(&self) -> bool;
    /// The SSE events: (`id`, data).
    fn events(&self) -> Vec<(Option<String>, String)>;
    /// Every JSON-RPC message of the body (the JSON body, or each SSE event's data), parsed as
    /// the clients do: a member named twice keeps its last value (Python's `json`,
    /// JavaScript's `JSON.parse` and serde_json's `Value` alike).
    fn messages(&self) -> Vec<Value>;
    /// The status and the body, cut, for failure messages.
    fn show(&self) -> String;
}

impl ReplyExt for Reply {
    fn is_sse(&self) -> bool {
        self.header("content-type")
            .is_some_and(|c| c.to_ascii_lowercase().starts_with("text/event-stream"))
    }

    fn events(&self) -> Vec<(Option<String>, String)> {
        http1::sse_events(&self.body)
            .into_iter()
            .filter(|e| e.id.is_some() || e.data.is_some())
            .map(|e| (e.id, e.data.unwrap_or_default()))
            .collect()
    }

    fn messages(&self) -> Vec<Value> {
        if self.is_sse() {
            self.events()
                .iter()
                .filter_map(|(_, d)| serde_json::from_str(d).ok())
                .collect()
        } else {
            serde_json::from_slice(&self.body)
                .ok()
                .into_iter()
                .collect()
        }
    }

    fn show(&self) -> String {
        let text = self.text();
        let cut: String = text.chars().take(700).collect();
        let more = if cut.len() < text.len() { "…" } else { "" };
        format!("{} {}{more}", self.status, cut.trim_end())
    }
}

/// A request written, its response not yet read.
struct Pending {
    conn: http1::Conn,
    error: Option<String>,
}

impl Pending {
    fn begin(addr: SocketAddr, request: &[u8]) -> Self {
        let mut conn = http1::Conn::new(addr).with_connect_timeout(Duration::from_secs(2));
        let error = conn.send(request).err().map(|e| format!("{addr}: {e}"));
        Self { conn, error }
    }

    /// Reads until the server closes, `done` says enough, or `timeout` passes; then drops the
    /// connection.
    fn read(mut self, timeout: Duration, done: impl Fn(&Reply) -> bool) -> Reply {
        if let Some(e) = self.error {
            panic!("{e}");
        }
        self.conn.read_streaming(timeout, done)
    }
}

fn body(id: &str, method: &str, params: Option<&Value>) -> Vec<u8> {
    let params = params
        .map(|p| format!(",\"params\":{p}"))
        .unwrap_or_default();
    format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}"{params}}}"#).into_bytes()
}

// ---- Envoy in front of several upstreams ---------------------------------------------------------

/// One Envoy with the filter in front of every `(host, server)`: a virtual host per server,
/// chosen by the request's `Host`, whose route rewrites it to the server's own address (the
/// SDKs' DNS-rebinding check wants a loopback host). Each upstream is its own cluster, so its
/// own catalog namespace.
fn envoy(upstreams: &[(&str, SocketAddr)], hold: bool, dir: &TestDir) -> Envoy {
    let wasm = harness::filter_wasm().unwrap_or_else(|e| panic!("{e}"));
    let config = filter_config(hold).to_string();
    let mut listener = Listener::new("mcp_listener")
        .stat_prefix("mcp")
        .no_stream_idle_timeout()
        .route_config_name("local");
    for (name, addr) in upstreams {
        listener = listener.virtual_host(VirtualHost::new(
            name,
            &[name, &format!("{name}:*")],
            vec![Route::prefix("/")
                .to_cluster_untimed(name)
                .route_option("host_rewrite_literal", addr.to_string())],
        ));
    }
    let listener = listener
        .filter(HttpFilter::wasm(
            &WasmFilter::new(&wasm, &config).allow_on_headers_stop_iteration(hold),
        ))
        .filter(HttpFilter::router());
    let yaml = Bootstrap::new()
        .listener(listener)
        .clusters(
            upstreams
                .iter()
                .map(|(name, addr)| Cluster::new(name, *addr)),
        )
        .to_yaml();
    Envoy::start_yaml(&yaml, "wasm:debug,http:debug", dir).unwrap_or_else(|e| panic!("{e}"))
}

// ---- sessions -----------------------------------------------------------------------------------

/// An MCP session opened at `target` (protocol 2025-11-25, so event stores prime their streams):
/// the session id, and the event id of the `initialize` answer (a resumable server's first
/// cursor).
fn open_session(target: &Target) -> (String, Option<String>) {
    let init = target.post(
        &[],
        &body(
            "0",
            "initialize",
            Some(&json!({"protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "response-attacks-e2e", "version": "0.1.0"}})),
        ),
    );
    let sid = init
        .header("mcp-session-id")
        .map(str::to_owned)
        .unwrap_or_else(|| panic!("no session {}: {}", target.name(), init.show()));
    let cursor = init
        .events()
        .into_iter()
        .find(|(_, d)| d.contains("\"result\""))
        .and_then(|(id, _)| id);
    let ack = target.post(
        &session_headers(&sid),
        br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    );
    assert!(ack.status / 100 == 2, "initialized: {}", ack.show());
    (sid, cursor)
}

fn session_headers(sid: &str) -> Vec<(&'static str, &str)> {
    vec![
        ("mcp-session-id", sid),
        ("mcp-protocol-version", "2025-11-25"),
    ]
}

/// `GET /mcp` resuming after `cursor`, read until `done` or 5 s.
fn resume(target: &Target, sid: &str, cursor: &str, done: impl Fn(&Reply) -> bool) -> Reply {
    let mut headers = session_headers(sid);
    headers.push(("accept", "text/event-stream"));
    headers.push(("last-event-id", cursor));
    Pending::begin(target.addr, &target.request("GET", &headers, b""))
        .read(Duration::from_secs(5), done)
}

/// The entries (by the policy's key) of every list of `member` in `reply`.
fn entries(reply: &Reply, member: &str, key: &str) -> Vec<String> {
    reply
        .messages()
        .iter()
        .filter_map(|m| m["result"][member].as_array().cloned())
        .flatten()
        .filter_map(|e| e[key].as_str().map(str::to_owned))
        .collect()
}

/// The messages in `reply` whose result is a list of `member`.
fn lists<'a>(messages: &'a [Value], member: &str) -> Vec<&'a Value> {
    messages
        .iter()
        .filter(|m| m["result"].get(member).is_some())
        .collect()
}

/// Checks a list that reached the caller through the filter: no forbidden byte, the allowed
/// entry kept, `cacheScope: "private"`.
fn check_filtered(
    f: &mut Failures,
    what: &str,
    reply: &Reply,
    member: &str,
    key: &str,
    allowed: &str,
) {
    let leaks = leaked(&reply.raw);
    if !f.check(leaks.is_empty(), || {
        format!(
            "{what}: LEAK, forbidden {leaks:?} reached the client: {}",
            reply.show()
        )
    }) {
        return;
    }
    let messages = reply.messages();
    let found = lists(&messages, member);
    if !f.check(!found.is_empty(), || {
        format!(
            "{what}: no {member} list reached the client: {}",
            reply.show()
        )
    }) {
        return;
    }
    let names = entries(reply, member, key);
    f.check(names.iter().any(|n| n == allowed), || {
        format!("{what}: the allowed {allowed} was removed too: {names:?}")
    });
    for list in found {
        f.check(list["result"]["cacheScope"] == "private", || {
            format!("{what}: no \"cacheScope\":\"private\" on the filtered list: {list}")
        });
    }
}

// ---- 1. unreadable ids --------------------------------------------------------------------------

/// An integer of 310 digits: the Python SDK keeps it exact, a JSON reader into f64 cannot.
fn big_id() -> String {
    "1".repeat(310)
}

/// 2^53: the first integer an f64 reader confuses with its neighbour.
const TWO_POW_53: &str = "9007199254740992";

/// Python servers (the SDK 1.x and 2.x, JSON and SSE) and server-everything, each shown to
/// return an unfiltered list for an unreadable id, then the same requests through the filter:
/// refused and never forwarded, while readable ids still get filtered lists.
fn unreadable_ids(hold: bool) {
    let test = format!("unreadable ids, hold_request_headers {hold}");
    let dir = TestDir::new(&format!("response_attacks_ids_{hold}")).unwrap();
    let everything = ServerEverything::start_on(free_port().unwrap(), &dir).unwrap();
    let py = AttackServer::start_all(
        &[
            AttackServerOptions::default(),
            AttackServerOptions {
                sse: true,
                ..AttackServerOptions::default()
            },
            AttackServerOptions {
                sdk2: true,
                ..AttackServerOptions::default()
            },
            AttackServerOptions {
                sdk2: true,
                sse: true,
                ..AttackServerOptions::default()
            },
        ],
        &dir,
    )
    .unwrap();
    let names = ["py1-json", "py1-sse", "py2-json", "py2-sse"];
    let mut upstreams: Vec<(&str, SocketAddr)> = names
        .iter()
        .copied()
        .zip(py.iter().map(|s| s.addr))
        .collect();
    upstreams.push(("everything", everything.addr));
    let envoy = envoy(&upstreams, hold, &dir);
    let mut f = Failures::default();

    // Rows: (server, protocol 2026-07-28?, method, id).
    let big = big_id();
    let mut rows: Vec<(usize, bool, &str, &str)> = Vec::new();
    for server in 0..4 {
        for (method, _, _) in LISTS {
            rows.push((server, false, method, &big));
            if server >= 2 {
                rows.push((server, true, method, &big));
            }
        }
        rows.push((server, false, "tools/list", TWO_POW_53));
    }
    let request =
        |row: &(usize, bool, &str, &str)| -> (Vec<(&'static str, &'static str)>, Vec<u8>) {
            let (_, v2026, method, id) = *row;
            let method: &'static str = LISTS.iter().find(|l| l.0 == method).unwrap().0;
            if v2026 {
                let meta = json!({"_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientInfo": {"name": "response-attacks-e2e", "version": "0.1.0"},
                "io.modelcontextprotocol/clientCapabilities": {}}});
                (
                    vec![
                        ("mcp-protocol-version", "2026-07-28"),
                        ("mcp-method", method),
                    ],
                    body(id, method, Some(&meta)),
                )
            } else {
                (Vec::new(), body(id, method, None))
            }
        };
    let forbidden_of =
        |method: &str| PY.forbidden[LISTS.iter().position(|l| l.0 == method).unwrap()];

    // Directly: every row returns the whole list, forbidden entries included.
    for row in &rows {
        let (headers, b) = request(row);
        let reply = Target::direct(py[row.0].addr).post(&headers, &b);
        let forbidden = forbidden_of(row.2);
        assert!(
            String::from_utf8_lossy(&reply.body).contains(forbidden),
            "{} {} (2026-07-28: {}) id of {} chars, directly: the attack does not leak {forbidden}: {}",
            names[row.0],
            row.2,
            row.1,
            row.3.len(),
            reply.show()
        );
    }
    // server-everything, in a session: a string id with a lone surrogate escape.
    let direct = Target::direct(everything.addr);
    let (sid, _) = open_session(&direct);
    let reply = direct.post(
        &session_headers(&sid),
        &body(r#""\ud800""#, "tools/list", None),
    );
    assert!(
        String::from_utf8_lossy(&reply.body).contains(EVERYTHING.forbidden[0]),
        "server-everything, id \"\\ud800\", directly: no unfiltered list: {}",
        reply.show()
    );

    // Through the filter: refused, never forwarded.
    let refused_before = envoy.stat("requests_refused.unreadable").unwrap();
    let mut refused = 0;
    let mut check_refused = |f: &mut Failures, what: &str, reply: &Reply| {
        refused += 1;
        let leaks = leaked(&reply.raw);
        if !f.check(leaks.is_empty(), || {
            format!(
                "{what}: LEAK, forbidden {leaks:?} reached the client: {}",
                reply.show()
            )
        }) {
            return;
        }
        let v: Value = serde_json::from_slice(&reply.body).unwrap_or(Value::Null);
        let message = v["error"]["message"].as_str().unwrap_or_default();
        f.check(
            reply.status == 400
                && v["error"]["code"] == -32600
                && message.starts_with(UNREADABLE_PREFIX),
            || {
                format!(
                    "{what}: not refused as unreadable (400, -32600): {}",
                    reply.show()
                )
            },
        );
    };
    for row in &rows {
        let (headers, b) = request(row);
        let what = format!(
            "{} {} (2026-07-28: {}) id {}…",
            names[row.0],
            row.2,
            row.1,
            &row.3[..12]
        );
        let reply = Target::via(&envoy, names[row.0]).post(&headers, &b);
        check_refused(&mut f, &what, &reply);
    }
    // The other ids a reader cannot take in exactly one way, and batches repeating an id
    // (1, "1" and 1.0 are one key).
    let py1 = Target::via(&envoy, "py1-json");
    let others: Vec<(&str, Vec<u8>)> = vec![
        ("-2^53", body("-9007199254740992", "tools/list", None)),
        ("1.5", body("1.5", "tools/list", None)),
        ("1e400", body("1e400", "tools/list", None)),
        ("null", body("null", "tools/list", None)),
        ("true", body("true", "tools/list", None)),
        ("an object", body(r#"{"a":1}"#, "tools/list", None)),
        ("an array", body("[1]", "tools/list", None)),
        ("\"\\ud800\"", body(r#""\ud800""#, "tools/list", None)),
        ("\"x\\udc00\"", body(r#""x\udc00""#, "tools/list", None)),
        (
            "a batch of id 1 and id \"1\"",
            br#"[{"jsonrpc":"2.0","id":1,"method":"tools/list"},{"jsonrpc":"2.0","id":"1","method":"ping"}]"#.to_vec(),
        ),
        (
            "a batch of a readable and an unreadable id",
            format!(r#"[{{"jsonrpc":"2.0","id":1,"method":"tools/list"}},{{"jsonrpc":"2.0","id":{big},"method":"prompts/list"}}]"#).into_bytes(),
        ),
        (
            "a batch of id 1 and id 1.0",
            br#"[{"jsonrpc":"2.0","id":1,"method":"tools/list"},{"jsonrpc":"2.0","id":1.0,"method":"ping"}]"#.to_vec(),
        ),
    ];
    for (what, b) in &others {
        let reply = py1.post(&[], b);
        check_refused(&mut f, &format!("py1-json id {what}"), &reply);
    }
    // server-everything, in a session opened through the filter.
    let via_everything = Target::via(&envoy, "everything");
    let (sid, cursor) = open_session(&via_everything);
    let reply = via_everything.post(
        &session_headers(&sid),
        &body(r#""\ud800""#, "tools/list", None),
    );
    check_refused(&mut f, "server-everything id \"\\ud800\"", &reply);
    f.check(
        envoy.stat("requests_refused.unreadable").unwrap() == refused_before + refused,
        || {
            format!(
                "requests_refused.unreadable is {}, not {refused_before} + {refused}",
                envoy.stat("requests_refused.unreadable").unwrap()
            )
        },
    );

    // Readable ids still get their list, filtered: 2^53 - 1 and strings at the Python
    // servers, 1.0 and 1e0 at server-everything (JSON.parse reads them as 1; the Python SDK
    // refuses a fractional id itself).
    for (server, id) in [
        (0, "9007199254740991"),
        (1, "-9007199254740991"),
        (2, r#""x\u00e9""#),
        (3, r#""1""#),
    ] {
        let reply = Target::via(&envoy, names[server]).post(&[], &body(id, "tools/list", None));
        check_filtered(
            &mut f,
            &format!("{} tools/list id {id} (readable)", names[server]),
            &reply,
            "tools",
            "name",
            PY.allowed[0],
        );
    }
    for id in ["1.0", "1e0", "7"] {
        let reply = via_everything.post(&session_headers(&sid), &body(id, "tools/list", None));
        check_filtered(
            &mut f,
            &format!("server-everything tools/list id {id} (readable)"),
            &reply,
            "tools",
            "name",
            EVERYTHING.allowed[0],
        );
    }

    // The servers' side: no refused id ever reached them.
    for (i, server) in py.iter().enumerate() {
        let got: Vec<String> = server
            .requests()
            .iter()
            .filter_map(|r| r["body"].as_str().map(str::to_owned))
            .collect();
        let direct_rows = rows.iter().filter(|r| r.0 == i).count();
        let reached = got
            .iter()
            .filter(|b| b.contains(&big) || b.contains(TWO_POW_53))
            .count();
        f.check(reached == direct_rows, || {
            format!(
                "{}: {reached} requests with a refused id reached the server, {direct_rows} were sent directly",
                names[i]
            )
        });
        if i == 0 {
            let unreadable: Vec<String> = got
                .iter()
                .filter(|b| {
                    b.contains("\\ud800")
                        || b.contains("\\udc00")
                        || b.contains("1e400")
                        || b.contains("\"id\":1.5")
                        || b.contains("\"id\":null")
                        || b.contains("\"id\":true")
                        || b.contains("\"id\":[1]")
                        || b.contains("\"id\":{")
                        || b.contains("-9007199254740992")
                        || b.starts_with('[')
                })
                .map(|b| b.chars().take(120).collect())
                .collect();
            f.check(unreadable.is_empty(), || {
                format!(
                    "py1-json: {} refused requests reached the server: {unreadable:?}",
                    unreadable.len()
                )
            });
        }
    }
    // server-everything keeps every answer of the session in its event store: replayed from
    // the session's first event (directly), no answer to the refused id is among them.
    if let Some(cursor) = cursor {
        let replay = resume(&Target::direct(everything.addr), &sid, &cursor, |r| {
            r.text().contains("\"id\":7")
        });
        let text = replay.text().to_ascii_lowercase();
        f.check(text.contains("\"id\":7"), || {
            format!(
                "server-everything: the replay did not reach the last answer: {}",
                replay.show()
            )
        });
        f.check(!text.contains("\\ud800"), || {
            format!(
                "server-everything answered the refused id: {}",
                replay.show()
            )
        });
    } else {
        f.0.push("server-everything: no event id on the initialize answer".to_owned());
    }
    f.finish(&test);
}

#[test]
fn unreadable_ids_are_refused_with_request_headers_held() {
    unreadable_ids(true);
}

#[test]
fn unreadable_ids_are_refused_with_request_headers_forwarded() {
    unreadable_ids(false);
}

// ---- 2. lists on a stream the filter did not pair ------------------------------------------------

/// The cursor to resume a Python list stream from: the priming event before the list (its id
/// on the stream, or, if the stream showed none, the server's own record of it).
fn py_cursor(server: &AttackServer, reply: &Reply, request_id: u32) -> String {
    if let Some((Some(id), _)) = reply.events().into_iter().find(|(_, d)| d.is_empty()) {
        return id;
    }
    server
        .events()
        .iter()
        .rev()
        .find(|e| {
            e["stream_id"].as_str() == Some(request_id.to_string().as_str())
                && e["message"].is_null()
        })
        .and_then(|e| e["event_id"].as_str().map(str::to_owned))
        .unwrap_or_else(|| {
            panic!(
                "no priming event for request {request_id}: {}",
                reply.show()
            )
        })
}

/// A Python server (1.x, sessions, SSE, an event store) and server-everything: a list POSTed,
/// then replayed by `GET` with `Last-Event-ID`. Directly the replay carries the whole list;
/// through the filter every replayed list is filtered for the caller and counted.
fn resumed_streams(hold: bool) {
    let test = format!("resumed streams, hold_request_headers {hold}");
    let dir = TestDir::new(&format!("response_attacks_resume_{hold}")).unwrap();
    let everything = ServerEverything::start_on(free_port().unwrap(), &dir).unwrap();
    let py = AttackServer::start_all(
        &[AttackServerOptions {
            sse: true,
            stateful: true,
            event_store: true,
            ..AttackServerOptions::default()
        }],
        &dir,
    )
    .unwrap()
    .pop()
    .unwrap();
    let envoy = envoy(
        &[("py-resumable", py.addr), ("everything", everything.addr)],
        hold,
        &dir,
    );
    let mut f = Failures::default();
    let unpaired_before = envoy.stat("lists_filtered_unpaired").unwrap();

    for target in [Target::direct(py.addr), Target::via(&envoy, "py-resumable")] {
        let (sid, _) = open_session(&target);
        let base = if target.via_filter { 200 } else { 100 };
        for (i, (method, member, key)) in LISTS.iter().enumerate() {
            let id = base + i as u32;
            let posted = target.post(&session_headers(&sid), &body(&id.to_string(), method, None));
            let cursor = py_cursor(&py, &posted, id);
            let replay = resume(&target, &sid, &cursor, |r| {
                r.messages().iter().any(|m| m["id"] == id)
            });
            let what = format!("FastMCP {method} replayed {}", target.name());
            if target.via_filter {
                let posted_what = format!("FastMCP {method} POSTed through the filter");
                check_filtered(&mut f, &posted_what, &posted, member, key, PY.allowed[i]);
                check_filtered(&mut f, &what, &replay, member, key, PY.allowed[i]);
            } else {
                assert!(
                    entries(&replay, member, key)
                        .iter()
                        .any(|n| n == PY.forbidden[i]),
                    "{what}: the replay does not leak {}: {}\n{}",
                    PY.forbidden[i],
                    replay.show(),
                    py.log()
                );
            }
        }
    }

    // server-everything: its event store replays every later event of the session, whichever
    // stream it was sent on.
    for target in [
        Target::direct(everything.addr),
        Target::via(&envoy, "everything"),
    ] {
        let (sid, cursor) = open_session(&target);
        let cursor = cursor.unwrap_or_else(|| panic!("server-everything: no event id"));
        let base = if target.via_filter { 400 } else { 300 };
        for (i, (method, member, key)) in LISTS.iter().enumerate() {
            let posted = target.post(
                &session_headers(&sid),
                &body(&(base + i).to_string(), method, None),
            );
            if target.via_filter {
                let what = format!("server-everything {method} POSTed through the filter");
                check_filtered(&mut f, &what, &posted, member, key, EVERYTHING.allowed[i]);
            }
        }
        let last = base + LISTS.len() - 1;
        let replay = resume(&target, &sid, &cursor, |r| {
            r.messages().iter().any(|m| m["id"] == last)
        });
        for (i, (method, member, key)) in LISTS.iter().enumerate() {
            let what = format!("server-everything {method} replayed {}", target.name());
            if target.via_filter {
                check_filtered(&mut f, &what, &replay, member, key, EVERYTHING.allowed[i]);
            } else {
                assert!(
                    entries(&replay, member, key)
                        .iter()
                        .any(|n| n == EVERYTHING.forbidden[i]),
                    "{what}: the replay does not leak {}: {}",
                    EVERYTHING.forbidden[i],
                    replay.show()
                );
            }
        }
    }
    // Four FastMCP replays of one list each, one server-everything replay of four.
    let unpaired = envoy.stat("lists_filtered_unpaired").unwrap() - unpaired_before;
    f.check(unpaired == 8, || {
        format!("lists_filtered_unpaired moved by {unpaired}, not 8 (the replayed lists)")
    });
    f.finish(&test);
}

#[test]
fn resumed_streams_carry_only_the_callers_entries_with_request_headers_held() {
    resumed_streams(true);
}

#[test]
fn resumed_streams_carry_only_the_callers_entries_with_request_headers_forwarded() {
    resumed_streams(false);
}

/// The Python SDK routes a response to the HTTP stream registered under `str(id)`, the last
/// registration winning: a `tools/list` with id `1` and a concurrent `ping` with id `"1"` in
/// one session deliver the list as the ping's answer. The server here answers lists after 1 s
/// and pings after 3 s, so the list is answered while the ping's stream holds the key: without
/// the delays the order is a race, which the list wins about half the time.
fn ping_answered_with_a_list(hold: bool) {
    let test = format!("list answered on a ping's stream, hold_request_headers {hold}");
    let dir = TestDir::new(&format!("response_attacks_ping_{hold}")).unwrap();
    let delayed = AttackServerOptions {
        stateful: true,
        list_delay_ms: 1000,
        ping_delay_ms: 3000,
        ..AttackServerOptions::default()
    };
    let servers = AttackServer::start_all(
        &[
            delayed,
            AttackServerOptions {
                sse: true,
                ..delayed
            },
        ],
        &dir,
    )
    .unwrap();
    let names = ["py-json", "py-sse"];
    let envoy = envoy(
        &[(names[0], servers[0].addr), (names[1], servers[1].addr)],
        hold,
        &dir,
    );
    let mut f = Failures::default();
    let unpaired_before = envoy.stat("lists_filtered_unpaired").unwrap();
    for (i, server) in servers.iter().enumerate() {
        for target in [Target::direct(server.addr), Target::via(&envoy, names[i])] {
            let (sid, _) = open_session(&target);
            let headers = session_headers(&sid);
            let list = Pending::begin(
                target.addr,
                &target.request("POST", &headers, &body("1", "tools/list", None)),
            );
            std::thread::sleep(Duration::from_millis(300));
            let ping = target.post(&headers, &body(r#""1""#, "ping", None));
            // The list's own request is never answered: its stream lost the key.
            let list = list.read(Duration::from_millis(500), |_| false);
            let what = format!(
                "{}: ping \"1\" beside tools/list 1, {}",
                names[i],
                target.name()
            );
            if target.via_filter {
                check_filtered(&mut f, &what, &ping, "tools", "name", PY.allowed[0]);
                let leaks = leaked(&list.raw);
                f.check(leaks.is_empty(), || {
                    format!(
                        "{what}: LEAK on the list's own stream {leaks:?}: {}",
                        list.show()
                    )
                });
            } else {
                assert!(
                    entries(&ping, "tools", "name")
                        .iter()
                        .any(|n| n == PY.forbidden[0]),
                    "{what}: the ping's answer is not the unfiltered list: {}\nlist: {}\n{}",
                    ping.show(),
                    list.show(),
                    server.log()
                );
            }
        }
    }
    let unpaired = envoy.stat("lists_filtered_unpaired").unwrap() - unpaired_before;
    f.check(unpaired == 2, || {
        format!(
            "lists_filtered_unpaired moved by {unpaired}, not 2 (one list on each ping's stream)"
        )
    });
    f.finish(&test);
}

#[test]
fn a_list_answering_a_ping_is_filtered_with_request_headers_held() {
    ping_answered_with_a_list(true);
}

#[test]
fn a_list_answering_a_ping_is_filtered_with_request_headers_forwarded() {
    ping_answered_with_a_list(false);
}

// ---- 3. a member named twice ----------------------------------------------------------------------

/// Lists with a member named twice, from a server that writes them (a plain HTTP peer): the
/// clients' parsers keep the last one, the forbidden entry. Through the filter the answer is
/// withheld (a JSON-RPC error in its place; on SSE, that event only), and counted.
fn members_named_twice(hold: bool) {
    let test = format!("members named twice, hold_request_headers {hold}");
    let dir = TestDir::new(&format!("response_attacks_twice_{hold}")).unwrap();
    let server = DuplicateMembersServer::start(&dir).unwrap();
    let envoy = envoy(&[("twice", server.addr)], hold, &dir);
    let mut f = Failures::default();
    // (method, variant, list member, entry key, the forbidden entry)
    let rows = [
        (
            "tools/list",
            "member-twice",
            "tools",
            "name",
            "stripe_create_refund",
        ),
        (
            "tools/list",
            "result-twice",
            "tools",
            "name",
            "stripe_create_refund",
        ),
        (
            "tools/list",
            "key-twice",
            "tools",
            "name",
            "stripe_create_refund",
        ),
        (
            "prompts/list",
            "member-twice",
            "prompts",
            "name",
            "payroll_summary",
        ),
        (
            "resources/list",
            "key-twice",
            "resources",
            "uri",
            "hr://salaries",
        ),
    ];
    assert_eq!(
        serde_json::from_str::<Value>(r#"{"a":1,"a":2}"#).unwrap()["a"],
        2,
        "serde_json no longer keeps the last of a repeated member as the clients do"
    );
    let withheld_before = envoy.stat("responses_withheld").unwrap();
    let mut n = 0;
    let mut withheld_rows = 0;
    for framing in ["json", "sse"] {
        for (method, variant, member, key, forbidden) in rows {
            n += 1;
            let request_id = format!("{variant}-{n}");
            let id = format!("\"{request_id}\"");
            let headers = [("x-variant", variant), ("x-framing", framing)];
            let request = body(&id, method, None);
            let what = format!("{method} with {variant} ({framing})");

            let direct = Target::direct(server.addr).post(&headers, &request);
            assert!(
                entries(&direct, member, key).iter().any(|e| e == forbidden),
                "{what}, directly: a client does not read {forbidden}: {}",
                direct.show()
            );

            let reply = Target::via(&envoy, "twice").post(&headers, &request);
            let what = format!("{what}, through the filter");
            let leaks = leaked(&reply.raw);
            if !f.check(leaks.is_empty(), || {
                format!(
                    "{what}: LEAK, forbidden {leaks:?} reached the client: {}",
                    reply.show()
                )
            }) {
                continue;
            }
            let messages = reply.messages();
            if variant == "key-twice" {
                // An entry whose key is named twice is no entry a rule could allow: dropped from
                // the list, the rest of which the caller may have (the leak check above holds).
                f.check(
                    messages
                        .iter()
                        .any(|m| m["result"][member].as_array().is_some_and(Vec::is_empty)),
                    || {
                        format!(
                            "{what}: the entry was not dropped from the list: {}",
                            reply.show()
                        )
                    },
                );
                continue;
            }
            withheld_rows += 1;
            let errors: Vec<&Value> = messages
                .iter()
                .filter(|m| m["error"]["code"] == -32603)
                .collect();
            f.check(
                errors.len() == 1
                    && errors[0]["error"]["message"]
                        .as_str()
                        .is_some_and(|m| m.contains(WITHHELD))
                    && errors[0]["id"] == request_id.as_str(),
                || {
                    format!(
                        "{what}: not withheld as one -32603 error answering {id}: {}",
                        reply.show()
                    )
                },
            );
            f.check(messages.iter().all(|m| m.get("result").is_none()), || {
                format!(
                    "{what}: a result still reached the client: {}",
                    reply.show()
                )
            });
            if framing == "sse" {
                let text = reply.text();
                f.check(
                    text.contains("before the answer") && text.contains("after the answer"),
                    || {
                        format!(
                            "{what}: the stream's other events did not flow: {}",
                            reply.show()
                        )
                    },
                );
            }
        }
        // A well-formed list from the same server is filtered, not withheld.
        let id = format!("\"plain-{framing}\"");
        let reply = Target::via(&envoy, "twice").post(
            &[("x-variant", "plain"), ("x-framing", framing)],
            &body(&id, "tools/list", None),
        );
        check_filtered(
            &mut f,
            &format!("a plain tools/list ({framing}) through the filter"),
            &reply,
            "tools",
            "name",
            PY.allowed[0],
        );
    }
    let withheld = envoy.stat("responses_withheld").unwrap() - withheld_before;
    f.check(withheld == withheld_rows, || {
        format!("responses_withheld moved by {withheld}, not {withheld_rows}")
    });
    f.check(server.requests().len() == 2 * n as usize + 2, || {
        format!(
            "the server saw {} requests, not {}",
            server.requests().len(),
            2 * n + 2
        )
    });
    f.finish(&test);
}

#[test]
fn a_member_named_twice_is_withheld_with_request_headers_held() {
    members_named_twice(true);
}

#[test]
fn a_member_named_twice_is_withheld_with_request_headers_forwarded() {
    members_named_twice(false);
}
