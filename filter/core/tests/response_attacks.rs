//! README "Authorization", answers: under a policy, no entry the caller may not use reaches it
//! on any response stream, whatever the id, whichever request the stream carried, and however
//! the body is split; what cannot be read in exactly one way is withheld. Generated streams
//! (ids of every type and range, resumed GET streams, answers interleaved with other messages,
//! members named twice, the ids an SDK conflates), natively.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod support;

use mcp_tool_search_core::{Caller, Event, PassReason, RequestHead};
use serde_json::{json, Value};
use support::*;

const CONFIG: &str = r#"{"eager_patterns":["*"],"prompts":{"disclosure_mode":"EAGER"},
    "authorization":{"identity":{"source":"header","header":"x-user-roles"},
    "rules":[{"claim":"roles","values":["support"],"tools":["github_*"],"prompts":["ok_*"],
              "resources":["pub://*"]}],
    "default":"deny"}}"#;

/// Every name and URI a forbidden entry may carry contains this.
const SECRET: &str = "secret";

fn caller(method: &str) -> RequestHead {
    RequestHead {
        method: method.into(),
        caller: Caller::from_header("roles", "support"),
        session_id: Some("s-1".into()),
        ..post("/mcp")
    }
}

/// xorshift64*: deterministic, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<'a>(&mut self, items: &'a [&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

const IDS: &[&str] = &[
    "1",
    "\"1\"",
    "1.0",
    "1e0",
    "7",
    "\"7\"",
    "null",
    "-3",
    "9007199254740993",
    "123456789012345678901234567890123456789012345678901234567890",
    "\"\\ud800\"",
    "\"x\\u0041\"",
    "0.5",
];

/// One list result of a random kind with allowed and forbidden entries; some forms are not
/// readable in exactly one way (a member twice, an escaped twin, a list that is not an array).
fn list_result(rng: &mut Rng) -> String {
    let (member, key, allowed) = match rng.below(4) {
        0 => ("tools", "name", "github_get_issue"),
        1 => ("prompts", "name", "ok_prompt"),
        2 => ("resources", "uri", "pub://doc"),
        _ => ("resourceTemplates", "uriTemplate", "pub://{x}"),
    };
    let forbidden = match member {
        "resources" => format!("hr://{SECRET}"),
        "resourceTemplates" => format!("hr://{SECRET}/{{x}}"),
        _ => format!("stripe_{SECRET}_refund"),
    };
    let entry = |k: &str| json!({ key: k, "description": "d" }).to_string();
    let good = format!("[{}]", entry(allowed));
    let bad = format!("[{},{}]", entry(allowed), entry(&forbidden));
    match rng.below(8) {
        0 => format!(r#"{{"{member}":{good},"{member}":{bad}}}"#),
        1 => format!(r#"{{"{member}":{good},"{}":{bad}}}"#, escape_first(member)),
        2 => format!(r#"{{"{member}":{{"0":{}}}}}"#, entry(&forbidden)),
        3 => format!(
            r#"{{"{member}":[{{"{key}":"{allowed}","{key}":"{forbidden}"}}],"nextCursor":"c"}}"#
        ),
        4 => format!(r#"{{"content":[],"{member}":{bad}}}"#),
        _ => format!(r#"{{"{member}":{bad},"_meta":{{"k":1}}}}"#),
    }
}

/// `tools` → `\u0074ools`: the same member to every JSON reader.
fn escape_first(member: &str) -> String {
    let mut chars = member.chars();
    let first = chars.next().unwrap();
    format!("\\u{:04x}{}", first as u32, chars.as_str())
}

fn message(rng: &mut Rng) -> String {
    let id = rng.pick(IDS);
    match rng.below(6) {
        0 => r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}"#
            .to_string(),
        1 => format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{}}}}"#),
        2 => format!(
            r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":"ok"}}]}}}}"#
        ),
        _ => format!(
            r#"{{"jsonrpc":"2.0","id":{id},"result":{}}}"#,
            list_result(rng)
        ),
    }
}

/// A response stream: SSE events (some of another type, keepalives, a priming event) or a JSON
/// body (a message or a batch).
fn stream(rng: &mut Rng, sse: bool) -> Vec<u8> {
    if !sse {
        let n = 1 + rng.below(3);
        let messages: Vec<String> = (0..n).map(|_| message(rng)).collect();
        return if n == 1 {
            messages.concat()
        } else {
            format!("[{}]", messages.join(","))
        }
        .into_bytes();
    }
    let eol = if rng.below(2) == 0 { "\n" } else { "\r\n" };
    let mut out = format!("id: 0{eol}data: {eol}{eol}");
    for i in 0..1 + rng.below(4) {
        match rng.below(5) {
            0 => out.push_str(&format!(": ping{eol}{eol}")),
            1 => out.push_str(&format!(
                "event: message{eol}id: {i}{eol}data: [{}]{eol}{eol}",
                message(rng)
            )),
            _ => out.push_str(&format!(
                "event: message{eol}id: {i}{eol}data: {}{eol}{eol}",
                message(rng)
            )),
        }
    }
    out.into_bytes()
}

/// Every message the client reads in what it received, each parsed as a client parses it.
fn client_reads(body: &[u8], sse: bool) -> Vec<Value> {
    // Python's and JavaScript's readers take a lone surrogate escape; serde_json does not.
    let body = String::from_utf8(body.to_vec())
        .unwrap()
        .replace("\\ud800", "\\u0041");
    let all = if sse {
        messages(body.as_bytes(), true)
    } else {
        vec![serde_json::from_str(&body).unwrap()]
    };
    all.into_iter()
        .flat_map(|v| match v {
            Value::Array(items) => items,
            other => vec![other],
        })
        .collect()
}

#[test]
fn no_forbidden_entry_reaches_a_restricted_caller_on_any_stream() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let requests: &[(&str, &[u8])] = &[
        ("POST", br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#),
        ("POST", br#"{"jsonrpc":"2.0","id":"1","method":"ping"}"#),
        ("POST", br#"{"jsonrpc":"2.0","id":7,"method":"prompts/list"}"#),
        (
            "POST",
            br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"github_get_issue"}}"#,
        ),
        ("GET", b""),
    ];
    let mut withheld = 0;
    let mut unpaired = 0;
    for round in 0..600 {
        let sse = round % 3 != 0;
        let (method, request) = requests[round % requests.len()];
        let upstream = stream(&mut rng, sse);
        let content_type = if sse {
            "text/event-stream"
        } else {
            "application/json"
        };
        // Every split point of short streams, random ones of the others.
        let at = rng.below(upstream.len() + 1);
        let (a, b) = upstream.split_at(at);
        let mut env = TestEnv::new(CONFIG);
        let out = exchange(
            &mut env,
            caller(method),
            request,
            ("200", content_type, &[a, b]),
        );
        let body = out.body().to_vec();
        let text = String::from_utf8_lossy(&body);
        assert!(
            !text.contains(SECRET),
            "round {round}: a forbidden entry reached the caller\nupstream: {}\nclient: {text}",
            String::from_utf8_lossy(&upstream)
        );
        for m in client_reads(&body, sse) {
            for member in ["tools", "prompts", "resources", "resourceTemplates"] {
                if let Some(list) = m["result"].get(member) {
                    assert!(list.is_array(), "round {round}: {m}");
                    assert_eq!(m["result"]["cacheScope"], "private", "round {round}: {m}");
                }
            }
        }
        withheld += env
            .events
            .iter()
            .filter(|e| **e == Event::ResponseWithheld)
            .count();
        unpaired += env
            .events
            .iter()
            .filter(|e| **e == Event::ListFilteredUnpaired)
            .count();
    }
    assert!(
        withheld > 50 && unpaired > 50,
        "{withheld} withheld, {unpaired} unpaired"
    );
}

#[test]
fn a_resumed_get_stream_replaying_a_list_is_filtered_event_by_event() {
    let mut env = TestEnv::new(CONFIG);
    let replay = format!(
        "id: 3\r\nevent: message\r\ndata: {}\r\n\r\n: ping\r\n\r\nid: 4\r\nevent: message\r\ndata: {}\r\n\r\n",
        json!({"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"github_get_issue"},{"name":"stripe_secret"}]}}),
        r#"{"jsonrpc":"2.0","id":5,"result":{"tools":[],"tools":[{"name":"stripe_secret"}]}}"#,
    );
    let head = RequestHead {
        method: "GET".into(),
        ..caller("GET")
    };
    let out = exchange(
        &mut env,
        head,
        b"",
        ("200", "text/event-stream", &[replay.as_bytes()]),
    );
    let got = client_reads(out.body(), true);
    assert_eq!(
        got[0]["result"]["tools"],
        json!([{"name": "github_get_issue"}])
    );
    assert_eq!(got[1]["error"]["code"], -32603);
    assert!(got[1]["error"]["message"]
        .as_str()
        .unwrap()
        .starts_with("the response could not be filtered for this caller"));
    let text = out.text();
    assert!(text.contains("id: 3\r\n") && text.contains("id: 4\r\n") && text.contains(": ping"));
    assert_eq!(
        env.events,
        [
            Event::ListFilteredUnpaired,
            Event::PassedThrough(PassReason::Unparseable),
            Event::ResponseWithheld
        ]
    );
}

#[test]
fn requests_whose_id_no_reader_holds_exactly_are_refused() {
    let big = "9".repeat(310);
    for id in [
        big.as_str(),
        "9007199254740992",
        "1.5",
        "null",
        "\"\\ud800\"",
        "true",
    ] {
        for method in [
            "tools/list",
            "prompts/list",
            "resources/list",
            "resources/templates/list",
            "ping",
        ] {
            let mut env = TestEnv::new(CONFIG);
            let body = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}"}}"#);
            let out = exchange(
                &mut env,
                caller("POST"),
                body.as_bytes(),
                ("200", "application/json", &[]),
            );
            let Outcome::Local { status, body, .. } = &out else {
                panic!("{id} {method}: reached the upstream");
            };
            assert_eq!(*status, 400, "{id} {method}");
            let reply: Value = serde_json::from_slice(body).unwrap();
            assert_eq!(reply["error"]["code"], -32600);
            assert!(reply["error"]["message"]
                .as_str()
                .unwrap()
                .contains("the request id"));
            assert!(sent_upstream().is_none());
        }
    }
    // `1` and `"1"` in one batch are one key to the Python SDK.
    let mut env = TestEnv::new(CONFIG);
    let batch = br#"[{"jsonrpc":"2.0","id":1,"method":"tools/list"},{"jsonrpc":"2.0","id":"1","method":"ping"}]"#;
    let out = exchange(
        &mut env,
        caller("POST"),
        batch,
        ("200", "application/json", &[]),
    );
    assert!(matches!(out, Outcome::Local { status: 400, .. }), "{out:?}");
    // Ids every reader holds go through.
    for id in ["1", "\"abc\"", "-9007199254740991", "2.0"] {
        let mut env = TestEnv::new(CONFIG);
        let body = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#);
        let reply = format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{}}}}"#);
        let out = exchange(
            &mut env,
            caller("POST"),
            body.as_bytes(),
            ("200", "application/json", &[reply.as_bytes()]),
        );
        assert!(
            matches!(
                out,
                Outcome::Upstream {
                    rewritten: false,
                    ..
                }
            ),
            "{id}: {out:?}"
        );
    }
}

/// A listed URI that a server reads otherwise than as written is matched by no rule as the
/// server reads it: a restricted caller never sees it listed (reading it is refused anyway).
#[test]
fn listed_uris_spelled_otherwise_than_a_server_reads_them_are_dropped() {
    let mut env = TestEnv::new(CONFIG);
    let list = json!({"jsonrpc": "2.0", "id": 3, "result": {"resources": [
        {"uri": "pub://doc", "name": "a"},
        {"uri": "PUB://doc", "name": "b"},
        {"uri": "pub://x/../doc", "name": "c"},
        {"uri": "https://pub.example:443/x", "name": "d"},
    ]}})
    .to_string();
    let out = exchange(
        &mut env,
        caller("POST"),
        br#"{"jsonrpc":"2.0","id":3,"method":"resources/list"}"#,
        ("200", "application/json", &[list.as_bytes()]),
    );
    let v: Value = serde_json::from_slice(out.body()).unwrap();
    assert_eq!(
        v["result"]["resources"],
        json!([{"uri": "pub://doc", "name": "a"}]),
        "{v}"
    );
}
