//! Every captured `tools/list` response (testdata/wire-samples, from real MCP SDK servers) is
//! rewritten correctly, in JSON and SSE, and identically for every way its bytes can be split.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod support;

use mcp_tool_search_core::{Event, SseParser};
use serde_json::Value;
use support::*;

const CONFIG: &str = r#"{"eager_patterns":["github_get_*","echo","get-sum"]}"#;

fn samples() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(wire_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".03-tools-list.body"))
        .collect();
    names.sort();
    assert!(names.len() >= 6, "wire samples missing: {names:?}");
    names
}

fn list_request(id: &Value) -> Vec<u8> {
    format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/list","params":{{}}}}"#).into_bytes()
}

fn run(name: &str, chunks: &[&[u8]]) -> (Outcome, TestEnv) {
    let content_type = wire_content_type(&name.replace(".body", ".headers"));
    let sse = content_type.starts_with("text/event-stream");
    let original = wire(name);
    let id = messages(&original, sse).last().unwrap()["id"].clone();
    let mut env = TestEnv::new(CONFIG);
    let out = exchange(
        &mut env,
        post("/mcp"),
        &list_request(&id),
        ("200", &content_type, chunks),
    );
    (out, env)
}

#[test]
fn every_sample_is_rewritten_faithfully() {
    for name in samples() {
        let original = wire(&name);
        let content_type = wire_content_type(&name.replace(".body", ".headers"));
        let sse = content_type.starts_with("text/event-stream");
        let (out, env) = run(&name, &[&original]);
        let Outcome::Upstream {
            body,
            rewritten: true,
        } = &out
        else {
            panic!("{name}: not rewritten: {out:?}");
        };
        assert_eq!(env.count(Event::ListRewritten), 1, "{name}");
        let before = messages(&original, sse).pop().unwrap();
        let after = messages(body, sse).pop().unwrap();
        let tools_before = before["result"]["tools"].as_array().unwrap();
        let tools_after = after["result"]["tools"].as_array().unwrap();
        let config = mcp_tool_search_core::Config::parse(CONFIG).unwrap();
        let eager: Vec<&Value> = tools_before
            .iter()
            .filter(|t| {
                config.disclosure_mode("upstream", t["name"].as_str().unwrap())
                    == mcp_tool_search_core::DisclosureMode::Eager
            })
            .collect();
        let progressive = tools_before.len() - eager.len();
        assert!(
            progressive > 0,
            "{name}: sample should have progressive tools"
        );
        // The search tool first, then the eager tools in upstream order, nothing else.
        assert_eq!(tools_after[0]["name"], "tool_search", "{name}");
        assert_eq!(tools_after.len(), eager.len() + 1, "{name}");
        for (kept, want) in tools_after[1..].iter().zip(&eager) {
            assert_eq!(kept, *want, "{name}");
        }
        assert_eq!(
            env.count(Event::ToolsHidden(progressive as u64)),
            1,
            "{name}"
        );
        // Every other result and envelope field is kept, in order.
        let keys = |v: &Value| {
            v["result"]
                .as_object()
                .unwrap()
                .keys()
                .cloned()
                .collect::<Vec<_>>()
        };
        assert_eq!(keys(&before), keys(&after), "{name}");
        for (k, v) in before["result"].as_object().unwrap() {
            if k != "tools" {
                assert_eq!(&after["result"][k], v, "{name}: {k}");
            }
        }
        assert_eq!(before["id"], after["id"]);
        // Byte-faithful: every kept definition is in the rewritten body exactly as the
        // upstream wrote it (spacing, key order, escapes), not merely equal as JSON.
        let eager_names: Vec<&str> = eager.iter().map(|t| t["name"].as_str().unwrap()).collect();
        assert_definitions_kept_verbatim(&name, &original, body, sse, &eager_names);
        let original_text = String::from_utf8(original.clone()).unwrap();
        let body_text = String::from_utf8(body.clone()).unwrap();
        if sse {
            // Events other than the response pass unchanged, in order.
            let mut p = SseParser::new();
            let mut q = SseParser::new();
            let a = p.push(&original);
            let b = q.push(body);
            assert_eq!(a.len(), b.len(), "{name}");
            for (x, y) in a.iter().zip(&b) {
                if x.data().is_some_and(|d| d.len() > 2) {
                    let strip = |raw: &[u8]| {
                        String::from_utf8(raw.to_vec())
                            .unwrap()
                            .lines()
                            .filter(|l| !l.starts_with("data:"))
                            .map(str::to_string)
                            .collect::<Vec<_>>()
                    };
                    assert_eq!(strip(&x.raw), strip(&y.raw), "{name}: non-data lines kept");
                } else {
                    assert_eq!(x, y, "{name}");
                }
            }
            let crlf = original_text.contains("\r\n");
            assert_eq!(
                body_text.contains("\r\n"),
                crlf,
                "{name}: line endings kept"
            );
        }
    }
}

#[test]
fn every_split_point_gives_the_same_output() {
    for name in samples() {
        let original = wire(&name);
        let (whole, _) = run(&name, &[&original]);
        for i in 0..=original.len() {
            let (split, _) = run(&name, &[&original[..i], &original[i..]]);
            assert_eq!(split, whole, "{name} split at {i}");
        }
        // One byte at a time, too.
        let bytes: Vec<&[u8]> = original.chunks(1).collect();
        let (bytewise, _) = run(&name, &bytes);
        assert_eq!(bytewise, whole, "{name} byte by byte");
    }
}

#[test]
fn learned_catalog_answers_search_with_upstream_definitions() {
    let name = "py-v1-json-paged.03-tools-list.body";
    let original = wire(name);
    let mut env = TestEnv::new(CONFIG);
    let out = exchange(
        &mut env,
        post("/mcp"),
        &list_request(&Value::from(2)),
        ("200", "application/json", &[&original]),
    );
    assert!(matches!(
        out,
        Outcome::Upstream {
            rewritten: true,
            ..
        }
    ));
    let search = br#"{"jsonrpc":"2.0","id":"q-1","method":"tools/call","params":{"name":"tool_search","arguments":{"query":"open a new issue on github","limit":2}}}"#;
    let out = exchange(
        &mut env,
        post("/mcp"),
        search,
        ("200", "application/json", &[]),
    );
    let Outcome::Local {
        status: 200,
        headers,
        body,
    } = out
    else {
        panic!("{out:?}")
    };
    assert!(headers.contains(&("content-type".into(), "application/json".into())));
    let reply: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(reply["id"], "q-1");
    let defs: Value =
        serde_json::from_str(reply["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(defs.as_array().unwrap().len(), 2);
    assert_eq!(defs[0]["name"], "github_create_issue");
    // Exactly the upstream's definition.
    let upstream: Value = serde_json::from_slice(&original).unwrap();
    let want = upstream["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "github_create_issue")
        .unwrap();
    assert_eq!(&defs[0], want);
    assert_eq!(
        reply["result"]["_meta"]["mcp-tool-search/search"]["strategy"],
        "bm25"
    );
    assert_eq!(
        env.count(Event::SearchAnswered(mcp_tool_search_core::Ranking::Bm25)),
        1
    );
}
