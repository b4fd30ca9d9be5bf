//! The authorization policy against an attacker, end to end: Envoy's real `jwt_authn` (the
//! caller is a valid `support` token, allowed `github_*` only) in front of the `.wasm`, in front
//! of the official Python SDK's FastMCP server (1.x, stateless, JSON), which records every tool
//! it runs, prompt it renders and resource it reads. Each attack calls `stripe_create_refund`,
//! gets prompt `payroll_summary` or reads resource `hr://salaries`,
//! `https://internal.example.com/payroll.csv` or `https://127.0.0.1/admin` (none of them the
//! caller's: deny rules name the last two by glob, `hr://salaries` exactly); every one the
//! server runs is first shown to run when sent to it directly, then shown to be refused through
//! the filter, with request headers held and not held. Requests are written byte for byte (raw
//! HTTP/1.1), so paths, repeated headers and bodies reach Envoy exactly as an attacker would
//! send them.
//!
//! Needs Envoy, the built filter and a Python with `mcp` (`make test` installs all three).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use mcp_tool_search_wasm_tests::harness::{
    self, raw_exchange, CatalogOptions, CatalogServer, Envoy, EnvoyOptions, FilterOptions,
    JwtAuthnOptions, JwtRequirement, TestDir,
};
use mcp_tool_search_wasm_tests::http1::{Request, Response};
use mcp_tool_search_wasm_tests::jwt::Hs256Key;
use mcp_tool_search_wasm_tests::python::{FastMcpOptions, FastMcpServer};
use serde_json::{json, Value};
use std::net::SocketAddr;

const SECRET: &[u8] = b"mcp-tool-search attack e2e HS256 secret, 32+ bytes";
const ALLOWED: &str = "github_get_issue";
const FORBIDDEN: &str = "stripe_create_refund";
const FORBIDDEN_PROMPT: &str = "payroll_summary";
const FORBIDDEN_RESOURCE: &str = "hr://salaries";
/// Denied by `https://internal.example.com/*` and `https://127.0.0.1/*`.
const INTERNAL_RESOURCE: &str = "https://internal.example.com/payroll.csv";
const LOOPBACK_RESOURCE: &str = "https://127.0.0.1/admin";

/// What the filter must answer instead of forwarding.
#[derive(Debug, Clone, Copy)]
enum Refused {
    /// 400 with `HeaderMismatch` (-32020).
    HeaderMismatch,
    /// 400 with -32600: a body the policy cannot read in exactly one way.
    Unreadable,
    /// 200 with -32602 `Unknown tool: …` (the tool is not the caller's).
    UnknownTool,
    /// 200 with -32602 `Unknown prompt: …`.
    UnknownPrompt,
    /// 200 with -32002 `Resource not found`.
    ResourceNotFound,
}

struct Attack {
    what: &'static str,
    path: &'static str,
    headers: Vec<(&'static str, String)>,
    body: Vec<u8>,
    refused: Refused,
    /// The 1.x server runs it when sent directly (it refuses protocol 2026-07-28 itself).
    runs_directly: bool,
    /// The resource it reads, when not the one `refused` implies (`resources/read URI` is
    /// what the server records).
    reads: Option<&'static str>,
}

impl Attack {
    /// What the server records when it runs the attack's target.
    fn target(&self) -> String {
        if let Some(uri) = self.reads {
            return format!("resources/read {uri}");
        }
        match self.refused {
            Refused::UnknownPrompt => format!("prompts/get {FORBIDDEN_PROMPT}"),
            Refused::ResourceNotFound => format!("resources/read {FORBIDDEN_RESOURCE}"),
            _ if self.body.windows(11).any(|w| w == b"prompts/get") => {
                format!("prompts/get {FORBIDDEN_PROMPT}")
            }
            _ if self.body.windows(14).any(|w| w == b"resources/read") => {
                format!("resources/read {FORBIDDEN_RESOURCE}")
            }
            _ => format!("tools/call {FORBIDDEN}"),
        }
    }
}

fn call(name: &str, version: Option<&str>) -> String {
    let mut params = json!({"name": name, "arguments": {}});
    if let Some(v) = version {
        params["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": v});
    }
    json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params}).to_string()
}

fn attacks() -> Vec<Attack> {
    let plain = call(FORBIDDEN, None);
    let h = |pairs: &[(&'static str, &str)]| -> Vec<(&'static str, String)> {
        pairs.iter().map(|(k, v)| (*k, (*v).to_string())).collect()
    };
    let mut attacks = vec![
        Attack {
            what: "headers name an allowed tool, the body calls a forbidden one (2025-11-25)",
            path: "/mcp",
            headers: h(&[
                ("mcp-protocol-version", "2025-11-25"),
                ("mcp-method", "tools/call"),
                ("mcp-name", ALLOWED),
            ]),
            body: plain.clone().into_bytes(),
            refused: Refused::HeaderMismatch,
            runs_directly: true,
            reads: None,
        },
        Attack {
            what: "2026-07-28 headers name an allowed tool, the body calls a forbidden one",
            path: "/mcp",
            headers: h(&[
                ("mcp-protocol-version", "2026-07-28"),
                ("mcp-method", "tools/call"),
                ("mcp-name", ALLOWED),
            ]),
            body: call(FORBIDDEN, Some("2026-07-28")).into_bytes(),
            runs_directly: false,
            reads: None,
            refused: Refused::HeaderMismatch,
        },
        Attack {
            what: "a notification's mcp-method over a call (2025-06-18)",
            path: "/mcp",
            headers: h(&[
                ("mcp-protocol-version", "2025-06-18"),
                ("mcp-method", "notifications/initialized"),
            ]),
            body: plain.clone().into_bytes(),
            runs_directly: true,
            reads: None,
            refused: Refused::HeaderMismatch,
        },
        Attack {
            what: "a notification's mcp-method over a call (2026-07-28)",
            path: "/mcp",
            headers: h(&[
                ("mcp-protocol-version", "2026-07-28"),
                ("mcp-method", "notifications/initialized"),
            ]),
            body: call(FORBIDDEN, Some("2026-07-28")).into_bytes(),
            runs_directly: false,
            reads: None,
            refused: Refused::HeaderMismatch,
        },
        Attack {
            what: "a percent-encoded path (/%6dcp)",
            path: "/%6dcp",
            headers: Vec::new(),
            body: plain.clone().into_bytes(),
            runs_directly: true,
            reads: None,
            refused: Refused::UnknownTool,
        },
        Attack {
            what: "a percent-encoded path with a query (/%6Dcp?x=1)",
            path: "/%6Dcp?x=1",
            headers: Vec::new(),
            body: plain.clone().into_bytes(),
            runs_directly: true,
            reads: None,
            refused: Refused::UnknownTool,
        },
        Attack {
            what: "a duplicate `name` in params (the server takes the last)",
            path: "/mcp",
            headers: Vec::new(),
            body: format!(r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{"name":"{ALLOWED}","name":"{FORBIDDEN}","arguments":{{}}}}}}"#).into_bytes(),
            runs_directly: true,
            reads: None,
            refused: Refused::Unreadable,
        },
        Attack {
            what: "a duplicate `params`",
            path: "/mcp",
            headers: Vec::new(),
            body: format!(r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{"name":"{ALLOWED}"}},"params":{{"name":"{FORBIDDEN}","arguments":{{}}}}}}"#).into_bytes(),
            runs_directly: true,
            reads: None,
            refused: Refused::Unreadable,
        },
        Attack {
            what: "a duplicate `method`",
            path: "/mcp",
            headers: Vec::new(),
            body: format!(r#"{{"jsonrpc":"2.0","id":7,"method":"tools/list","method":"tools/call","params":{{"name":"{FORBIDDEN}","arguments":{{}}}}}}"#).into_bytes(),
            runs_directly: true,
            reads: None,
            refused: Refused::Unreadable,
        },
        Attack {
            what: "prompts/get of a prompt the caller may not use",
            path: "/mcp",
            headers: Vec::new(),
            body: format!(r#"{{"jsonrpc":"2.0","id":7,"method":"prompts/get","params":{{"name":"{FORBIDDEN_PROMPT}"}}}}"#).into_bytes(),
            runs_directly: true,
            reads: None,
            refused: Refused::UnknownPrompt,
        },
        Attack {
            what: "resources/read of a resource the caller may not use, on a percent-encoded path",
            path: "/%6dcp",
            headers: Vec::new(),
            body: format!(r#"{{"jsonrpc":"2.0","id":7,"method":"resources/read","params":{{"uri":"{FORBIDDEN_RESOURCE}"}}}}"#).into_bytes(),
            runs_directly: true,
            reads: None,
            refused: Refused::ResourceNotFound,
        },
        Attack {
            what: "headers name a prompt, the body gets another (2025-11-25)",
            path: "/mcp",
            headers: h(&[
                ("mcp-protocol-version", "2025-11-25"),
                ("mcp-method", "prompts/get"),
                ("mcp-name", "triage_ticket"),
            ]),
            body: format!(r#"{{"jsonrpc":"2.0","id":7,"method":"prompts/get","params":{{"name":"{FORBIDDEN_PROMPT}"}}}}"#).into_bytes(),
            runs_directly: true,
            reads: None,
            refused: Refused::HeaderMismatch,
        },
        Attack {
            what: "a duplicate `name` in prompts/get params, the second escaped",
            path: "/mcp",
            headers: Vec::new(),
            body: format!(r#"{{"jsonrpc":"2.0","id":7,"method":"prompts/get","params":{{"name":"triage_ticket","n\u0061me":"{FORBIDDEN_PROMPT}"}}}}"#).into_bytes(),
            runs_directly: true,
            reads: None,
            refused: Refused::Unreadable,
        },
        Attack {
            what: "a resource URI in capitals past a deny rule (the server reads HR:// as hr://)",
            path: "/mcp",
            headers: Vec::new(),
            body: br#"{"jsonrpc":"2.0","id":7,"method":"resources/read","params":{"uri":"HR://salaries"}}"#.to_vec(),
            runs_directly: true,
            reads: None,
            refused: Refused::Unreadable,
        },
        Attack {
            what: "a duplicate `uri` in resources/read params",
            path: "/mcp",
            headers: Vec::new(),
            body: format!(r#"{{"jsonrpc":"2.0","id":7,"method":"resources/read","params":{{"uri":"kb://refunds","uri":"{FORBIDDEN_RESOURCE}"}}}}"#).into_bytes(),
            runs_directly: true,
            reads: None,
            refused: Refused::Unreadable,
        },
        Attack {
            what: "a UTF-8 byte-order mark",
            path: "/mcp",
            headers: Vec::new(),
            body: [&[0xef, 0xbb, 0xbf][..], plain.as_bytes()].concat(),
            runs_directly: true,
            reads: None,
            refused: Refused::Unreadable,
        },
        Attack {
            what: "UTF-16LE",
            path: "/mcp",
            headers: Vec::new(),
            body: plain.encode_utf16().flat_map(u16::to_le_bytes).collect(),
            runs_directly: true,
            reads: None,
            refused: Refused::Unreadable,
        },
        Attack {
            what: "UTF-16BE with a byte-order mark",
            path: "/mcp",
            headers: Vec::new(),
            body: std::iter::once(0xfeff_u16)
                .chain(plain.encode_utf16())
                .flat_map(u16::to_be_bytes)
                .collect(),
            runs_directly: true,
            reads: None,
            refused: Refused::Unreadable,
        },
        Attack {
            what: "UTF-32LE",
            path: "/mcp",
            headers: Vec::new(),
            body: plain.chars().flat_map(|c| (c as u32).to_le_bytes()).collect(),
            runs_directly: true,
            reads: None,
            refused: Refused::Unreadable,
        },
    ];
    attacks.extend(resource_uri_spellings());
    attacks
}

/// A `resources/read` of `uri`, which the server reads as the denied resource `reads`.
fn read_of(what: &'static str, uri: &str, reads: &'static str, runs_directly: bool) -> Attack {
    Attack {
        what,
        path: "/mcp",
        headers: Vec::new(),
        body:
            json!({"jsonrpc": "2.0", "id": 7, "method": "resources/read", "params": {"uri": uri}})
                .to_string()
                .into_bytes(),
        refused: Refused::Unreadable,
        runs_directly,
        reads: Some(reads),
    }
}

/// Other spellings of denied resources (issue 30, class 6). The Python SDK reads a resource URI
/// through pydantic's `AnyUrl` (the WHATWG URL Standard) and FastMCP looks it up by that
/// serialization, so each of these reads the denied resource on the server directly; the
/// filter, whose rules match the URI as sent, refuses any URI that is not its own
/// serialization. The last rows are spellings the SDK keeps as they are (another resource to
/// it, so they do not run directly), refused all the same: a server that decodes escapes or
/// fetches the URI could still reach the denied one.
fn resource_uri_spellings() -> Vec<Attack> {
    let (internal, loopback, hr) = (INTERNAL_RESOURCE, LOOPBACK_RESOURCE, FORBIDDEN_RESOURCE);
    let mut rows = vec![Attack {
        what: "resources/read of a resource a deny glob holds, as listed",
        refused: Refused::ResourceNotFound,
        ..read_of("", internal, internal, true)
    }];
    for (what, uri, reads) in [
        (
            "the default port (:443)",
            "https://internal.example.com:443/payroll.csv",
            internal,
        ),
        (
            "an empty port",
            "https://internal.example.com:/payroll.csv",
            internal,
        ),
        (
            "fullwidth letters in the host (IDNA maps them)",
            "https://\u{ff49}\u{ff4e}\u{ff54}ernal.example.com/payroll.csv",
            internal,
        ),
        (
            "U+3002 for the host's dots (IDNA maps it)",
            "https://internal\u{3002}example\u{3002}com/payroll.csv",
            internal,
        ),
        (
            "a soft hyphen in the host (IDNA drops it)",
            "https://inter\u{ad}nal.example.com/payroll.csv",
            internal,
        ),
        (
            "scheme and host in capitals",
            "HTTPS://INTERNAL.EXAMPLE.COM/payroll.csv",
            internal,
        ),
        (
            "an escaped letter in the host",
            "https://%69nternal.example.com/payroll.csv",
            internal,
        ),
        (
            "a dot segment",
            "https://internal.example.com/kb/../payroll.csv",
            internal,
        ),
        (
            "backslashes for slashes",
            "https:\\\\internal.example.com\\payroll.csv",
            internal,
        ),
        (
            "a tab inside the host",
            "https://internal.exam\tple.com/payroll.csv",
            internal,
        ),
        (
            "empty user information",
            "https://@internal.example.com/payroll.csv",
            internal,
        ),
        (
            "no slashes after the scheme",
            "https:internal.example.com/payroll.csv",
            internal,
        ),
        ("IPv4 as 0x7f.1", "https://0x7f.1/admin", loopback),
        (
            "IPv4 as one decimal number",
            "https://2130706433/admin",
            loopback,
        ),
        ("IPv4 as 127.1", "https://127.1/admin", loopback),
        ("IPv4 in octal", "https://0177.0.0.1/admin", loopback),
        (
            "hr://salaries with a trailing colon (an empty port)",
            "hr://salaries:",
            hr,
        ),
        ("hr://salaries with a newline inside", "hr://sala\nries", hr),
        ("hr://salaries after a space", " hr://salaries", hr),
        (
            "hr://salaries with empty user information",
            "hr://@salaries",
            hr,
        ),
    ] {
        rows.push(read_of(what, uri, reads, true));
    }
    for (what, uri, reads) in [
        (
            "an escaped letter in the path (%70: kept by the SDK)",
            "https://internal.example.com/%70ayroll.csv",
            internal,
        ),
        (
            "user information (u@: kept by the SDK)",
            "https://u@internal.example.com/payroll.csv",
            internal,
        ),
        (
            "an opaque host in capitals (hr://SALARIES: kept by the SDK)",
            "hr://SALARIES",
            hr,
        ),
    ] {
        rows.push(read_of(what, uri, reads, false));
    }
    rows
}

fn request(addr: SocketAddr, attack: &Attack, token: Option<&str>) -> Vec<u8> {
    let mut req = Request::builder("POST", attack.path)
        .header("Host", &addr.to_string())
        .header("accept", "application/json, text/event-stream")
        .header("content-length", &attack.body.len().to_string());
    if !attack.headers.iter().any(|(k, _)| *k == "content-type") {
        req = req.header("content-type", "application/json");
    }
    if let Some(t) = token {
        req = req.header("authorization", &format!("Bearer {t}"));
    }
    for (k, v) in &attack.headers {
        req = req.header(k, v);
    }
    req.raw_body(&attack.body).bytes
}

fn send(addr: SocketAddr, attack: &Attack, token: Option<&str>) -> Response {
    raw_exchange(addr, &request(addr, attack, token))
        .unwrap_or_else(|e| panic!("{}: {e}", attack.what))
}

fn json_of(reply: &Response) -> Value {
    serde_json::from_slice(&reply.body).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}\n{}",
            reply.head,
            String::from_utf8_lossy(&reply.body)
        )
    })
}

/// How many times the server ran what `line` records (`tools/call NAME`, `prompts/get NAME`,
/// `resources/read URI`).
fn ran(server: &FastMcpServer, line: &str) -> usize {
    server.recorded().iter().filter(|l| *l == line).count()
}

fn envoy(server: &FastMcpServer, hold: bool, dir: &TestDir) -> Envoy {
    envoy_for(server.addr, hold, dir)
}

fn envoy_for(upstream: SocketAddr, hold: bool, dir: &TestDir) -> Envoy {
    let key = Hs256Key::new(SECRET);
    let mut jwt = JwtAuthnOptions::new(key.jwks(), JwtRequirement::Required);
    jwt.payload_in_metadata = Some("jwt_payload".to_owned());
    let config = json!({
        "mcp_paths": ["/mcp"],
        "hold_request_headers": hold,
        "authorization": {
            "identity": {"source": "jwt_metadata"},
            "rules": [
                {"claim": "roles", "values": ["support"], "tools": ["github_*"]},
                {"claim": "roles", "values": ["support"], "effect": "deny", "resources":
                    ["https://internal.example.com/*", "https://127.0.0.1/*", FORBIDDEN_RESOURCE]},
                {"claim": "roles", "values": ["support"], "resources": ["*"]}
            ],
            "default": "deny"
        }
    });
    let filter = FilterOptions {
        wasm: harness::filter_wasm().unwrap_or_else(|e| panic!("{e}")),
        config_json: config.to_string(),
    };
    let mut opts = EnvoyOptions::new(upstream, Some(filter));
    opts.allow_on_headers_stop_iteration = hold;
    opts.catch_all_route = true;
    opts.http_filters_before.push(jwt.filter());
    Envoy::start(&opts, dir).unwrap_or_else(|e| panic!("{e}"))
}

/// Every attack runs the forbidden tool when sent to the server directly: the attacks are real,
/// and the refusals below are the filter's doing.
#[test]
fn every_attack_runs_the_forbidden_tool_without_the_filter() {
    let dir = TestDir::new("attacks_direct").unwrap();
    let server = FastMcpServer::start(FastMcpOptions::default(), &dir).unwrap();
    for attack in attacks().into_iter().filter(|a| a.runs_directly) {
        let before = ran(&server, &attack.target());
        let reply = send(server.addr, &attack, None);
        assert_eq!(
            ran(&server, &attack.target()),
            before + 1,
            "{}: the server did not run it directly ({} {})\n{}",
            attack.what,
            reply.head,
            String::from_utf8_lossy(&reply.body),
            server.log()
        );
    }
}

fn attacks_are_refused(hold: bool) {
    let dir = TestDir::new(&format!("attacks_hold_{hold}")).unwrap();
    let server = FastMcpServer::start(FastMcpOptions::default(), &dir).unwrap();
    let envoy = envoy(&server, hold, &dir);
    let token = Hs256Key::new(SECRET).token("mallory", &["support"]);
    // Every attack is tried before failing, so that a failure names all the ones not refused.
    let mut not_refused = Vec::new();
    for attack in attacks() {
        let before = ran(&server, &attack.target());
        let reply = send(envoy.listener, &attack, Some(&token));
        let body = json_of(&reply);
        let (status, code) = match attack.refused {
            Refused::HeaderMismatch => (400, -32020),
            Refused::Unreadable => (400, -32600),
            Refused::UnknownTool | Refused::UnknownPrompt => (200, -32602),
            Refused::ResourceNotFound => (200, -32002),
        };
        if (reply.status, body["error"]["code"].as_i64()) != (status, Some(code)) {
            not_refused.push(format!("{}: {} {body}", attack.what, reply.status));
            continue;
        }
        let message = body["error"]["message"].as_str().unwrap_or_default();
        match attack.refused {
            Refused::HeaderMismatch => assert!(message.starts_with("Header mismatch: Mcp-"), "{message}"),
            Refused::Unreadable => assert!(message.starts_with("Request refused: the authorization policy needs a body it can read in exactly one way"), "{message}"),
            Refused::UnknownTool => assert_eq!(message, format!("Unknown tool: {FORBIDDEN}")),
            Refused::UnknownPrompt => assert_eq!(message, format!("Unknown prompt: {FORBIDDEN_PROMPT}")),
            Refused::ResourceNotFound => assert_eq!(message, "Resource not found"),
        }
        assert_eq!(
            ran(&server, &attack.target()),
            before,
            "{} (hold {hold}) ran upstream",
            attack.what
        );
    }
    assert!(
        not_refused.is_empty(),
        "hold {hold}: {} of {} attacks not refused as expected:\n{}",
        not_refused.len(),
        attacks().len(),
        not_refused.join("\n")
    );
    // The first attack's header mismatch names both values.
    let reply = send(envoy.listener, &attacks()[0], Some(&token));
    assert_eq!(
        json_of(&reply)["error"]["message"],
        format!("Header mismatch: Mcp-Name header value '{ALLOWED}' does not match body value '{FORBIDDEN}'")
    );

    // What the caller may use still works, with the name plain or in the Base64 sentinel form
    // (protocol 2025-11-25: the 1.x server refuses 2026-07-28 itself).
    for name_header in [
        ALLOWED.to_string(),
        "=?base64?Z2l0aHViX2dldF9pc3N1ZQ==?=".to_string(),
    ] {
        let allowed = Attack {
            what: "an allowed call",
            path: "/mcp",
            headers: vec![
                ("mcp-protocol-version", "2025-11-25".to_string()),
                ("mcp-method", "tools/call".to_string()),
                ("mcp-name", name_header.clone()),
            ],
            body: call(ALLOWED, None).into_bytes(),
            refused: Refused::UnknownTool,
            runs_directly: true,
            reads: None,
        };
        let before = ran(&server, &format!("tools/call {ALLOWED}"));
        let reply = send(envoy.listener, &allowed, Some(&token));
        let body = json_of(&reply);
        assert_eq!(reply.status, 200, "{name_header}: {body}");
        assert_eq!(
            body["result"]["content"][0]["text"],
            format!("{ALLOWED} ran"),
            "{name_header}: {body}"
        );
        assert_eq!(ran(&server, &format!("tools/call {ALLOWED}")), before + 1);
    }
    let stats = envoy.stats("mcp_tool_search.requests_refused").unwrap();
    let count = |name: &str| {
        stats
            .iter()
            .filter(|(k, _)| k.ends_with(name))
            .map(|(_, v)| *v)
            .sum::<u64>()
    };
    // Each refusal of the table, by kind; the first attack was sent twice.
    let refused = |kind: Refused| {
        attacks()
            .iter()
            .filter(|a| std::mem::discriminant(&a.refused) == std::mem::discriminant(&kind))
            .count() as u64
    };
    assert_eq!(
        count("requests_refused.header_mismatch"),
        refused(Refused::HeaderMismatch) + 1,
        "{stats:?}"
    );
    assert_eq!(
        count("requests_refused.unreadable"),
        refused(Refused::Unreadable),
        "{stats:?}"
    );
}

#[test]
fn attacks_are_refused_with_request_headers_held() {
    attacks_are_refused(true);
}

#[test]
fn attacks_are_refused_with_request_headers_forwarded() {
    attacks_are_refused(false);
}

/// rmcp's servers mount the endpoint (`nest_service("/mcp", …)`), so `/mcp/x` reaches it too:
/// a path under an MCP path is MCP traffic. Shown with the rmcp catalog server, directly and
/// through the filter in both hold modes.
#[test]
fn a_path_under_the_mcp_path_is_read_like_the_mcp_path() {
    let dir = TestDir::new("attacks_subpath").unwrap();
    let opts = CatalogOptions {
        stateless: true,
        json: true,
        ..CatalogOptions::default()
    };
    let server =
        CatalogServer::start(env!("CARGO_BIN_EXE_catalog-server").as_ref(), &opts, &dir).unwrap();
    let runs = |server: &CatalogServer| {
        server
            .recorded()
            .iter()
            .filter(|l| *l == "tools/call stripe_refund_charge")
            .count()
    };
    let attack = Attack {
        what: "a path under the MCP path (/mcp/x)",
        path: "/mcp/x",
        headers: vec![("mcp-protocol-version", "2025-11-25".to_string())],
        body: call("stripe_refund_charge", None).into_bytes(),
        refused: Refused::UnknownTool,
        runs_directly: true,
        reads: None,
    };
    let reply = send(server.addr, &attack, None);
    assert_eq!(
        runs(&server),
        1,
        "the server did not run it directly: {} {}",
        reply.head,
        String::from_utf8_lossy(&reply.body)
    );
    let token = Hs256Key::new(SECRET).token("mallory", &["support"]);
    for hold in [true, false] {
        let envoy = envoy_for(server.addr, hold, &dir);
        let reply = send(envoy.listener, &attack, Some(&token));
        let body = json_of(&reply);
        assert_eq!(body["error"]["code"], -32602, "hold {hold}: {body}");
        assert_eq!(runs(&server), 1, "hold {hold}: ran upstream");
    }
}

/// Express's body-parser honours `charset=utf-7` (and the TypeScript SDK's own reader any
/// charset): a body the filter reads as UTF-8 could be another call there. Refused before it
/// is read, with the other framings a server could undo.
#[test]
fn bodies_framed_for_another_reading_are_refused() {
    let dir = TestDir::new("attacks_framing").unwrap();
    let server = FastMcpServer::start(FastMcpOptions::default(), &dir).unwrap();
    let envoy = envoy(&server, false, &dir);
    let token = Hs256Key::new(SECRET).token("mallory", &["support"]);
    let body = call(ALLOWED, None).into_bytes();
    for (what, headers) in [
        (
            "charset=utf-7",
            vec![("content-type", "application/json; charset=utf-7")],
        ),
        ("content-encoding", vec![("content-encoding", "gzip")]),
        (
            "content-type twice",
            vec![
                ("content-type", "application/json"),
                ("content-type", "text/plain"),
            ],
        ),
    ] {
        let attack = Attack {
            what,
            path: "/mcp",
            headers: headers
                .iter()
                .map(|(k, v)| (*k, (*v).to_string()))
                .collect(),
            body: body.clone(),
            refused: Refused::Unreadable,
            runs_directly: false,
            reads: None,
        };
        let reply = send(envoy.listener, &attack, Some(&token));
        let json = json_of(&reply);
        assert_eq!(reply.status, 400, "{what}: {json}");
        assert_eq!(json["error"]["code"], -32600, "{what}: {json}");
    }
    assert_eq!(ran(&server, &format!("tools/call {ALLOWED}")), 0);
    // charset=utf-8 is what clients send: it goes through.
    let plain = Attack {
        what: "charset=utf-8",
        path: "/mcp",
        headers: vec![(
            "content-type",
            "application/json; charset=utf-8".to_string(),
        )],
        body,
        refused: Refused::Unreadable,
        runs_directly: true,
        reads: None,
    };
    let reply = send(envoy.listener, &plain, Some(&token));
    assert_eq!(
        reply.status,
        200,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    assert_eq!(ran(&server, &format!("tools/call {ALLOWED}")), 1);
}
