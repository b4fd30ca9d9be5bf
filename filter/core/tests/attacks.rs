//! The authorization policy against an attacker, natively: generated requests (paths, methods,
//! mirrored headers plain and Base64, protocol versions, single, batch and notification bodies,
//! bodies a lenient server reads differently) go through `http::exchange`; whatever reaches the
//! upstream is read the way a lenient server reads it (Python's `json.loads` on bytes: encoding
//! detected from a BOM or NUL pattern, the last of duplicate keys wins, notifications executed
//! all the same). No forbidden `tools/call` may ever be among what it would run.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod support;

use mcp_tool_search_core::{Mirrored, Refusal, RequestHead};
use serde_json::{json, Value};
use support::*;

const POLICY: &str = r#"{"hold_request_headers":HOLD,
  "authorization":{"identity":{"source":"header","header":"x-user-roles","claim":"roles"},
  "rules":[{"claim":"roles","values":["support"],"tools":["github_*"]}],"default":"deny"}}"#;

const ALLOWED: &str = "github_get_issue";
const FORBIDDEN: &str = "stripe_create_refund";

/// Paths and whether some common server routes them to its `/mcp` endpoint (Starlette and
/// Express decode percent-escapes; Express ignores case and a trailing slash; servlet
/// containers drop `;params`; nginx-style fronts merge slashes and resolve dot segments).
const PATHS: [(&str, bool); 17] = [
    ("/mcp", true),
    ("/mcp/x", true),
    ("/mcp/%2e%2e", true),
    ("/x%3f/../mcp", true),
    ("/mcp/", true),
    ("/mcp?session=1", true),
    ("/%6dcp", true),
    ("/%6Dcp", true),
    ("//mcp", true),
    ("/./mcp", true),
    ("/x/../mcp", true),
    ("/x/%2e%2e/mcp", true),
    ("/MCP", true),
    ("/mcp;a=b", true),
    ("/%2fmcp", true),
    ("/mcpx", false),
    ("/health", false),
];

/// A tiny deterministic generator (xorshift64*): the same cases on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[(self.next() % items.len() as u64) as usize]
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
}

fn b64(s: &str) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let bytes = s.as_bytes();
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n =
            chunk.iter().fold(0u32, |acc, &b| acc << 8 | u32::from(b)) << (8 * (3 - chunk.len()));
        for i in 0..=chunk.len() {
            out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
        }
    }
    while !out.len().is_multiple_of(4) {
        out.push('=');
    }
    format!("=?base64?{out}?=")
}

/// One `tools/call` message as text, with the attacker's variations.
fn call_text(rng: &mut Rng) -> String {
    let id = match rng.next() % 5 {
        0 => String::new(),
        1 => "\"id\":null,".to_string(),
        2 => "\"id\":\"x\",".to_string(),
        _ => format!("\"id\":{},", rng.next() % 100),
    };
    let name = *rng.pick(&[
        ALLOWED,
        FORBIDDEN,
        "tool_search",
        "call_tool",
        "github_other",
    ]);
    let other = *rng.pick(&[ALLOWED, FORBIDDEN]);
    let args = if name == "call_tool" {
        format!("{{\"name\":\"{other}\",\"arguments\":{{}}}}")
    } else if name == "tool_search" {
        "{\"query\":\"refund\"}".to_string()
    } else {
        "{}".to_string()
    };
    let params = match rng.next() % 8 {
        0 => format!("{{\"name\":\"{name}\",\"name\":\"{other}\",\"arguments\":{args}}}"),
        1 => format!("{{\"name\":\"{name}\",\"n\\u0061me\":\"{other}\",\"arguments\":{args}}}"),
        2 => format!(
            "{{\"arguments\":{args},\"name\":\"{name}\"}},\"params\":{{\"name\":\"{other}\"}}"
        ),
        3 => format!("{{\"name\":[\"{name}\"]}}"),
        _ => format!("{{\"name\":\"{name}\",\"arguments\":{args}}}"),
    };
    let method = match rng.next() % 10 {
        0 => "\"method\":\"tools/list\",\"method\":\"tools/call\"".to_string(),
        1 => "\"me\\u0074hod\":\"tools/call\"".to_string(),
        _ => "\"method\":\"tools/call\"".to_string(),
    };
    format!("{{\"jsonrpc\":\"2.0\",{id}{method},\"params\":{params}}}")
}

fn body(rng: &mut Rng) -> Vec<u8> {
    let text = match rng.next() % 6 {
        0 => format!("[{},{}]", call_text(rng), call_text(rng)),
        1 => format!(
            "[{},{{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}}]",
            call_text(rng)
        ),
        2 => "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}".to_string(),
        _ => call_text(rng),
    };
    match rng.next() % 10 {
        0 => [&[0xef, 0xbb, 0xbf][..], text.as_bytes()].concat(),
        1 => text.encode_utf16().flat_map(u16::to_le_bytes).collect(),
        2 => text.encode_utf16().flat_map(u16::to_be_bytes).collect(),
        3 => text
            .chars()
            .flat_map(|c| (c as u32).to_le_bytes())
            .collect(),
        4 => format!(" \n{text}\r\n").into_bytes(),
        5 => text
            .chars()
            .flat_map(|c| (c as u32).to_be_bytes())
            .collect(),
        _ => text.into_bytes(),
    }
}

fn mirrored(rng: &mut Rng) -> Mirrored {
    let mut h = Mirrored::default();
    if rng.chance(60) {
        let method = *rng.pick(&["tools/call", "tools/list", "notifications/initialized"]);
        h.add("mcp-method", method);
        if rng.chance(10) {
            h.add("Mcp-Method", "tools/list");
        }
    }
    if rng.chance(50) {
        let name = *rng.pick(&[ALLOWED, FORBIDDEN, "tool_search", "call_tool"]);
        let value = if rng.chance(30) {
            b64(name)
        } else {
            name.to_string()
        };
        h.add("mcp-name", &value);
    }
    if rng.chance(60) {
        let v = *rng.pick(&["2025-06-18", "2025-11-25", "2026-07-28"]);
        h.add("mcp-protocol-version", v);
    }
    h
}

/// The calls a lenient server would run for this body (Python's reading).
fn executed(body: &[u8]) -> Vec<String> {
    let text = match body {
        [0xef, 0xbb, 0xbf, rest @ ..] => String::from_utf8(rest.to_vec()).ok(),
        [0, 0, 0, _, ..] | [_, 0, 0, 0, ..] => {
            let le = body[0] != 0;
            let units: Vec<u32> = body
                .chunks(4)
                .map(|c| {
                    let a: [u8; 4] = c.try_into().unwrap_or([0; 4]);
                    if le {
                        u32::from_le_bytes(a)
                    } else {
                        u32::from_be_bytes(a)
                    }
                })
                .collect();
            units.into_iter().map(char::from_u32).collect()
        }
        [0, _, ..] | [_, 0, ..] => {
            let le = body[1] == 0;
            let units: Vec<u16> = body
                .chunks(2)
                .map(|c| {
                    let a: [u8; 2] = c.try_into().unwrap_or([0; 2]);
                    if le {
                        u16::from_le_bytes(a)
                    } else {
                        u16::from_be_bytes(a)
                    }
                })
                .collect();
            String::from_utf16(&units).ok()
        }
        _ => String::from_utf8(body.to_vec()).ok(),
    };
    let Some(value) = text.and_then(|t| serde_json::from_str::<Value>(&t).ok()) else {
        return Vec::new();
    };
    let messages = match value {
        Value::Array(items) => items,
        one => vec![one],
    };
    messages
        .iter()
        .filter(|m| m["method"] == "tools/call")
        .filter_map(|m| m["params"]["name"].as_str().map(str::to_string))
        .collect()
}

fn permitted(name: &str) -> bool {
    name.starts_with("github_")
}

#[test]
fn no_generated_request_runs_a_forbidden_tool_upstream() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut forwarded = 0;
    let mut refused = 0;
    let mut envs: Vec<TestEnv> = ["true", "false"]
        .iter()
        .map(|hold| TestEnv::new(&POLICY.replace("HOLD", hold)))
        .collect();
    for case in 0..20_000 {
        let env = &mut envs[case % 2];
        let (path, routed) = *rng.pick(&PATHS);
        let method = *rng.pick(&["POST", "POST", "POST", "PUT", "GET"]);
        let caller = mcp_tool_search_core::Caller::from_header("roles", "support");
        let content_type: Vec<String> = match rng.next() % 6 {
            0 => Vec::new(),
            1 => vec!["application/json; charset=utf-7".into()],
            2 => vec!["application/json".into(), "application/json".into()],
            3 => vec!["application/json; charset=\"UTF-8\"".into()],
            _ => vec!["application/json".into()],
        };
        let content_encoding: Vec<String> = match rng.next() % 8 {
            0 => vec!["gzip".into()],
            1 => vec!["identity".into()],
            _ => Vec::new(),
        };
        let invalid_utf8: Vec<String> = match rng.next() % 20 {
            0 => vec!["x-a".into()],
            1 => vec![":path".into()],
            _ => Vec::new(),
        };
        let framed_otherwise = content_type.len() > 1
            || content_type.iter().any(|c| c.contains("utf-7"))
            || content_encoding.iter().any(|e| e == "gzip")
            || !invalid_utf8.is_empty();
        let head = RequestHead {
            method: method.into(),
            path: path.into(),
            mcp: mirrored(&mut rng),
            caller,
            content_type,
            content_encoding,
            invalid_utf8,
            ..post("/")
        };
        let request = body(&mut rng);
        let out = exchange(
            env,
            head.clone(),
            &request,
            ("200", "application/json", &[b"{}"]),
        );
        let Some(sent) = sent_upstream() else {
            refused += 1;
            continue;
        };
        forwarded += 1;
        if !routed {
            continue;
        }
        // Express reads `charset=utf-7`, servers undo encodings, a lossy header says nothing:
        // none of these may reach an MCP endpoint under a policy, whatever the body.
        assert!(
            !framed_otherwise || request.is_empty(),
            "case {case}: read otherwise upstream, yet forwarded\n{head:?}"
        );
        for name in executed(&sent) {
            assert!(
                permitted(&name),
                "case {case}: {name} reached the upstream\n{head:?}\n{}\n{out:?}",
                String::from_utf8_lossy(&request)
            );
        }
    }
    // Both outcomes are exercised: the generator is not all refusals.
    assert!(
        forwarded > 1_000 && refused > 1_000,
        "{forwarded} forwarded, {refused} refused"
    );
}

/// What the filter must make of `mirrored` on a single `tools/call` of `name` whose body names no
/// protocol version (Streamable HTTP 2026-07-28, "Server Validation"): `None` when they agree,
/// else the `HeaderMismatch` message.
fn mismatch(mirrored: &Mirrored, name: &str) -> Option<String> {
    if mirrored.method.len() > 1 {
        return Some("Header mismatch: Mcp-Method header sent more than once".into());
    }
    if let Some(method) = mirrored.method.first().filter(|m| *m != "tools/call") {
        return Some(format!(
            "Header mismatch: Mcp-Method header value '{method}' does not match body value 'tools/call'"
        ));
    }
    let header = mirrored.name.first()?;
    let named = [ALLOWED, FORBIDDEN, "tool_search", "call_tool"]
        .into_iter()
        .find(|n| n == header || b64(n) == *header)
        .unwrap_or_else(|| panic!("not a name `mirrored` sends: {header}"));
    (named != name).then(|| {
        format!(
            "Header mismatch: Mcp-Name header value '{named}' does not match body value '{name}'"
        )
    })
}

/// Without a policy the filter still refuses headers that disagree with the body (a component
/// after it may route on them), and answers its own tool whenever they agree: it never reaches
/// the upstream either way. A call of the upstream's tool with the same headers goes upstream,
/// as sent, whenever they agree.
#[test]
fn without_a_policy_our_tools_are_answered_unless_the_headers_disagree() {
    let mut rng = Rng(7);
    let mut env = TestEnv::new("{}");
    let tools = json!({"jsonrpc":"2.0","id":1,"result":{"tools":[
        {"name":FORBIDDEN,"description":"Refund a charge","inputSchema":{"type":"object"}},
        {"name":ALLOWED,"description":"Get an issue","inputSchema":{"type":"object"}}]}});
    let list = br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
    exchange(
        &mut env,
        post("/mcp"),
        list,
        ("200", "application/json", &[tools.to_string().as_bytes()]),
    );
    assert_eq!(sent_upstream().as_deref(), Some(&list[..]));
    let search = br#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"tool_search","arguments":{"query":"refund"}}}"#;
    let upstream_call =
        json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":ALLOWED,"arguments":{}}})
            .to_string();
    let upstream_answer = br#"{"jsonrpc":"2.0","id":1,"result":{"content":[]}}"#;
    // The answer to the search with no mirrored header but the protocol version, which shapes it
    // (`resultType` from 2026-07-28, `structuredContent` from 2025-06-18).
    let mut answers = std::collections::HashMap::new();
    let mut answer = |env: &mut TestEnv, version: Option<&String>| -> Vec<u8> {
        answers
            .entry(version.cloned())
            .or_insert_with(|| {
                let head = RequestHead {
                    mcp: Mirrored::of(None, None, version.map(String::as_str)),
                    ..post("/mcp")
                };
                let out = exchange(env, head, search, ("200", "application/json", &[]));
                assert!(sent_upstream().is_none(), "{out:?}");
                let (reply, found) = local_result(&out);
                assert_eq!(reply["id"], 5, "{reply}");
                assert_ne!(reply["result"]["isError"], true, "{reply}");
                assert_eq!(found, json!([tools["result"]["tools"][0]]), "{reply}");
                out.body().to_vec()
            })
            .clone()
    };
    let (mut answered, mut refused, mut forwarded) = (0, 0, 0);
    for _ in 0..2_000 {
        let (path, routed) = *rng.pick(&PATHS);
        if !routed {
            continue;
        }
        let head = RequestHead {
            mcp: mirrored(&mut rng),
            ..post(path)
        };
        let out = exchange(
            &mut env,
            head.clone(),
            search,
            ("200", "application/json", &[]),
        );
        assert!(sent_upstream().is_none(), "{head:?} went upstream: {out:?}");
        let Outcome::Local { status, body, .. } = &out else {
            panic!("{head:?}: not answered by the filter: {out:?}")
        };
        match mismatch(&head.mcp, "tool_search") {
            None => {
                answered += 1;
                let want = answer(&mut env, head.mcp.protocol_version.first());
                // Every answer is its own search: the same but for its id.
                assert_eq!(
                    (*status, unidentified(body)),
                    (200, unidentified(&want)),
                    "{head:?}"
                );
            }
            Some(message) => {
                refused += 1;
                let reply: Value = serde_json::from_slice(body).unwrap();
                assert_eq!(
                    (*status, reply),
                    (
                        400,
                        json!({"jsonrpc":"2.0","id":5,"error":{"code":-32020,"message":message}})
                    ),
                    "{head:?}"
                );
            }
        }

        let out = exchange(
            &mut env,
            head.clone(),
            upstream_call.as_bytes(),
            ("200", "application/json", &[upstream_answer]),
        );
        match mismatch(&head.mcp, ALLOWED) {
            None => {
                forwarded += 1;
                assert_eq!(
                    sent_upstream().as_deref(),
                    Some(upstream_call.as_bytes()),
                    "{head:?}: {out:?}"
                );
                assert_eq!(
                    out,
                    Outcome::Upstream {
                        body: upstream_answer.to_vec(),
                        rewritten: false
                    },
                    "{head:?}"
                );
            }
            Some(message) => {
                assert!(sent_upstream().is_none(), "{head:?} went upstream: {out:?}");
                let Outcome::Local {
                    status: 400, body, ..
                } = &out
                else {
                    panic!("{head:?}: {out:?}")
                };
                let reply: Value = serde_json::from_slice(body).unwrap();
                assert_eq!(reply["error"]["message"], message, "{head:?}");
            }
        }
    }
    // Every outcome is exercised: the generator is neither all agreement nor all mismatch.
    assert!(
        answered > 300 && refused > 300 && forwarded > 300,
        "{answered} answered, {refused} refused, {forwarded} forwarded"
    );
}

fn refusal(env: &mut TestEnv, head: RequestHead, body: &[u8]) -> (u32, Value) {
    let out = exchange(env, head, body, ("200", "application/json", &[b"{}"]));
    assert!(sent_upstream().is_none(), "{out:?}");
    let Outcome::Local { status, body, .. } = out else {
        panic!("{out:?}")
    };
    (status, serde_json::from_slice(&body).unwrap())
}

#[test]
fn the_issue_s_bypasses_are_refused_with_a_reason() {
    let mut env = TestEnv::new(&POLICY.replace("HOLD", "true"));
    let support = || RequestHead {
        caller: mcp_tool_search_core::Caller::from_header("roles", "support"),
        ..post("/mcp")
    };
    let call = |name: &str| {
        json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":name,"arguments":{}}})
            .to_string()
    };
    // 1. Headers naming an allowed tool, a body calling a forbidden one.
    let head = RequestHead {
        mcp: Mirrored::of(Some("tools/call"), Some(ALLOWED), Some("2026-07-28")),
        ..support()
    };
    let (status, reply) = refusal(&mut env, head, call(FORBIDDEN).as_bytes());
    assert_eq!(
        (status, reply["error"]["code"].as_i64()),
        (400, Some(-32020))
    );
    // 2. A notification's header over a call.
    let head = RequestHead {
        mcp: Mirrored::of(Some("notifications/initialized"), None, None),
        ..support()
    };
    let (status, reply) = refusal(&mut env, head, call(FORBIDDEN).as_bytes());
    assert_eq!(
        (status, reply["error"]["code"].as_i64()),
        (400, Some(-32020))
    );
    // 3. A percent-encoded path: read and refused like /mcp.
    let head = RequestHead {
        path: "/%6dcp".into(),
        ..support()
    };
    let (status, reply) = refusal(&mut env, head, call(FORBIDDEN).as_bytes());
    assert_eq!(
        (status, reply["error"]["code"].as_i64()),
        (200, Some(-32602))
    );
    assert_eq!(
        reply["error"]["message"],
        format!("Unknown tool: {FORBIDDEN}")
    );
    // 4. Parser differentials.
    let text = call(FORBIDDEN);
    for (what, body) in [
        (
            "duplicate field `name`",
            format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"{ALLOWED}","name":"{FORBIDDEN}"}}}}"#).into_bytes(),
        ),
        (
            "duplicate field `params`",
            format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"{ALLOWED}"}},"params":{{"name":"{FORBIDDEN}"}}}}"#).into_bytes(),
        ),
        (
            "duplicate field `method`",
            format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list","method":"tools/call","params":{{"name":"{FORBIDDEN}"}}}}"#).into_bytes(),
        ),
        ("a UTF-8 byte-order mark", [&[0xef, 0xbb, 0xbf][..], text.as_bytes()].concat()),
        ("UTF-16 or UTF-32 text", text.encode_utf16().flat_map(u16::to_le_bytes).collect()),
        ("UTF-16 or UTF-32 text", text.chars().flat_map(|c| (c as u32).to_le_bytes()).collect()),
    ] {
        let before = env.count(mcp_tool_search_core::Event::RequestRefused(Refusal::Unreadable));
        let (status, reply) = refusal(&mut env, support(), &body);
        assert_eq!(status, 400, "{what}");
        assert_eq!(reply["error"]["code"], -32600, "{what}");
        let message = reply["error"]["message"].as_str().unwrap();
        assert!(
            message.starts_with("Request refused: the authorization policy needs a body it can read in exactly one way")
                && message.contains(what),
            "{what}: {message}"
        );
        assert_eq!(
            env.count(mcp_tool_search_core::Event::RequestRefused(Refusal::Unreadable)),
            before + 1
        );
    }
    // JSON a strict reader rejects and a lenient one takes (Python's `json` reads `NaN` and lone
    // surrogates, and nests as deep as its stack): refused, even for a tool the caller may use.
    for (what, body) in [
        (
            "NaN",
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"{ALLOWED}","arguments":{{"n":NaN}}}}}}"#
            ),
        ),
        (
            "a lone surrogate in the name",
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"{ALLOWED}\ud800"}}}}"#
            ),
        ),
    ] {
        let before = env.count(mcp_tool_search_core::Event::RequestRefused(
            Refusal::Unreadable,
        ));
        let (status, reply) = refusal(&mut env, support(), body.as_bytes());
        assert_eq!(
            (status, reply["error"]["code"].as_i64()),
            (400, Some(-32600)),
            "{what}: {reply}"
        );
        assert!(
            reply["error"]["message"].as_str().unwrap().starts_with(
                "Request refused: the authorization policy needs a body it can read in exactly one way"
            ),
            "{what}: {reply}"
        );
        assert_eq!(
            env.count(mcp_tool_search_core::Event::RequestRefused(
                Refusal::Unreadable
            )),
            before + 1,
            "{what}"
        );
    }
    // A lone surrogate, or nesting past 128 levels, inside `arguments` is in no field the
    // decision reads (README "Authorization" (3)): the allowed call goes upstream as sent.
    let deep = format!("{}1{}", "[".repeat(200), "]".repeat(200));
    for arguments in [
        r#"{"q":"\udc00"}"#.to_string(),
        format!(r#"{{"q":{deep}}}"#),
    ] {
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"{ALLOWED}","arguments":{arguments}}}}}"#
        );
        exchange(
            &mut env,
            support(),
            body.as_bytes(),
            ("200", "application/json", &[b"{}"]),
        );
        assert_eq!(sent_upstream().as_deref(), Some(body.as_bytes()));
    }
    // The sentinel form naming the right tool is accepted (the call goes upstream).
    let head = RequestHead {
        mcp: Mirrored::of(Some("tools/call"), Some(&b64(ALLOWED)), Some("2026-07-28")),
        ..support()
    };
    let out = exchange(
        &mut env,
        head,
        call(ALLOWED).as_bytes(),
        ("200", "application/json", &[b"{}"]),
    );
    assert_eq!(
        sent_upstream().as_deref(),
        Some(call(ALLOWED).as_bytes()),
        "{out:?}"
    );
}

#[test]
fn without_a_policy_unreadable_bodies_still_pass_through() {
    let mut env = TestEnv::new("{}");
    let body = [
        &[0xef, 0xbb, 0xbf][..],
        br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}"#,
    ]
    .concat();
    exchange(
        &mut env,
        post("/mcp"),
        &body,
        ("200", "application/json", &[b"{}"]),
    );
    assert_eq!(sent_upstream(), Some(body));
}

#[test]
fn a_body_that_cannot_be_had_whole_is_refused_under_a_policy() {
    // Request trailers end the stream before the body did: under a policy the body was never
    // read whole, so the request is refused; without one it goes on unread.
    let ended_by_trailers = |env: &TestEnv| mcp_tool_search_core::Request {
        headers: env.request_headers(&post("/mcp"), b"{"),
        chunks: vec![br#"{"jsonrpc":"2.0","id":1,"#.to_vec()],
        trailers: true,
    };
    let upstream = ("200", "application/json", &[&b"{}"[..]][..]);
    let mut env = TestEnv::new(&POLICY.replace("HOLD", "false"));
    let request = ended_by_trailers(&env);
    let out = exchange_request(&mut env, &request, upstream);
    assert!(matches!(out, Outcome::Local { status: 400, .. }), "{out:?}");
    let mut env = TestEnv::new("{}");
    let request = ended_by_trailers(&env);
    let out = exchange_request(&mut env, &request, upstream);
    assert!(matches!(out, Outcome::Upstream { .. }), "{out:?}");
}

/// A search's JSON-RPC reply without its `search_id`.
fn unidentified(body: &[u8]) -> Value {
    let mut reply: Value = serde_json::from_slice(body).unwrap();
    let meta = &mut reply["result"]["_meta"]["mcp-tool-search/search"];
    assert!(meta["search_id"].is_string(), "{meta}");
    meta.as_object_mut().unwrap().remove("search_id");
    reply
}
