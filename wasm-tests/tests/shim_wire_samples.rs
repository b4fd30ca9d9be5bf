//! The `.wasm` in host-shim on every captured `tools/list` response (testdata/wire-samples):
//! rewritten exactly as the native core rewrites it, in every chunking Envoy could deliver
//! (every split point, byte by byte, with and without an empty final frame, with trailers), and
//! with what only Envoy shows: the captured response headers, `content-length` removed,
//! `accept-encoding` stripped on the way up, the stats.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod shim_support;

use host_shim::{HttpMessage, Outcome};
use mcp_tool_search_core::Event;
use serde_json::Value;
use shim_support::native::{self, TestEnv};
use shim_support::*;

const CONFIG: &str = r#"{"eager_patterns":["github_get_*","echo","get-sum"]}"#;

struct Sample {
    name: String,
    body: Vec<u8>,
    content_type: String,
    sse: bool,
    id: Value,
    /// The captured response headers, as Envoy would hand them to the filter.
    response: HttpMessage,
}

fn samples() -> Vec<Sample> {
    let mut names: Vec<String> = std::fs::read_dir(native::wire_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".03-tools-list.body"))
        .collect();
    names.sort();
    assert!(names.len() >= 6, "wire samples missing: {names:?}");
    names
        .into_iter()
        .map(|name| {
            let headers_file = name.replace(".body", ".headers");
            let content_type = native::wire_content_type(&headers_file);
            let sse = content_type.starts_with("text/event-stream");
            let body = native::wire(&name);
            let id = native::messages(&body, sse).last().unwrap()["id"].clone();
            let response = host_shim::wire::read_message(
                &native::wire_dir().join(&headers_file),
                Some(&native::wire_dir().join(&name)),
            )
            .unwrap();
            Sample {
                name,
                body,
                content_type,
                sse,
                id,
                response,
            }
        })
        .collect()
}

fn list_request(id: &Value) -> Vec<u8> {
    format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/list","params":{{}}}}"#).into_bytes()
}

fn shim_run(
    env: &mut ShimEnv,
    s: &Sample,
    response: HttpMessage,
) -> (native::Outcome, host_shim::Exchange) {
    let req = request(&native::post("/mcp"), &list_request(&s.id));
    exchange_full(env, &req, &response)
}

fn native_run(env: &mut TestEnv, s: &Sample, chunks: &[&[u8]]) -> native::Outcome {
    native::exchange(
        env,
        native::post("/mcp"),
        &list_request(&s.id),
        ("200", &s.content_type, chunks),
    )
}

/// The names of a sample's tools that `CONFIG` makes EAGER (kept in the rewritten list).
fn eager_names(s: &Sample) -> Vec<String> {
    let config = mcp_tool_search_core::Config::parse(CONFIG).unwrap();
    native::messages(&s.body, s.sse).pop().unwrap()["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .filter(|n| {
            config.disclosure_mode("upstream", n) == mcp_tool_search_core::DisclosureMode::Eager
        })
        .map(str::to_owned)
        .collect()
}

#[test]
fn every_sample_is_rewritten_as_the_native_core_rewrites_it() {
    for s in samples() {
        let mut shim = ShimEnv::new(CONFIG);
        let mut core = TestEnv::new(CONFIG);
        let (out, x) = shim_run(&mut shim, &s, s.response.clone());
        let want = native_run(&mut core, &s, &[&s.body]);
        assert_eq!(out, want, "{}", s.name);
        let native::Outcome::Upstream {
            body,
            rewritten: true,
        } = &out
        else {
            panic!("{}: not rewritten: {out:?}", s.name);
        };
        // What the native twin asserts too: the kept definitions, byte for byte.
        native::assert_definitions_kept_verbatim(&s.name, &s.body, body, s.sse, &eager_names(&s));
        // Stats: one list rewritten, the hidden tools counted as the core counts them.
        let hidden: u64 = core
            .events
            .iter()
            .filter_map(|e| match e {
                Event::ToolsHidden(n) => Some(*n),
                _ => None,
            })
            .sum();
        assert!(hidden > 0, "{}", s.name);
        assert_eq!(shim.count(Event::ListRewritten), 1, "{}", s.name);
        assert_eq!(shim.stat("tools_hidden"), hidden, "{}", s.name);
        for (name, value) in shim.stats() {
            // The histograms record every rewrite (search insights).
            let histogram = mcp_tool_search_core::HISTOGRAMS.contains(&name.as_str());
            if name != "lists_rewritten" && name != "tools_hidden" && !histogram {
                assert_eq!(value, 0, "{}: {name}", s.name);
            }
        }
        // The client gets the captured headers, less the content-length the rewrite voided.
        let mut want_headers = s.response.headers.clone();
        want_headers.retain(|(k, _)| k != "content-length");
        assert_eq!(
            x.client.headers.as_ref().unwrap(),
            &want_headers,
            "{}",
            s.name
        );
        // The request went up without accept-encoding, so the response came back readable.
        assert_eq!(x.upstream.header("accept-encoding"), None, "{}", s.name);
        assert_eq!(
            x.upstream.header("accept"),
            Some("application/json, text/event-stream")
        );
        assert!(
            shim.vm.logs().is_empty(),
            "{}: {:?}",
            s.name,
            shim.vm.logs()
        );
    }
}

/// Chunkings of a body: whole, in two at every split point, byte by byte, in 7-byte pieces.
fn chunkings(body: &[u8]) -> Vec<(String, Vec<Vec<u8>>)> {
    let mut all = vec![("whole".to_string(), vec![body.to_vec()])];
    for i in 0..=body.len() {
        all.push((
            format!("split at {i}"),
            vec![body[..i].to_vec(), body[i..].to_vec()],
        ));
    }
    all.push((
        "byte by byte".into(),
        body.chunks(1).map(<[u8]>::to_vec).collect(),
    ));
    all.push((
        "7-byte pieces".into(),
        body.chunks(7).map(<[u8]>::to_vec).collect(),
    ));
    all
}

#[test]
fn every_chunking_gives_the_native_output() {
    for s in samples() {
        // One worker and one native environment each, fed the same history.
        let mut shim = ShimEnv::new(CONFIG);
        let mut core = TestEnv::new(CONFIG);
        let mut steady: Option<native::Outcome> = None;
        for (what, chunks) in chunkings(&s.body) {
            let pieces: Vec<&[u8]> = chunks.iter().map(Vec::as_slice).collect();
            let want = native_run(&mut core, &s, &pieces);
            for empty_final in [false, true] {
                if empty_final && what.starts_with("split at") {
                    // The split points are many; the empty final frame is covered by the
                    // other chunkings.
                    continue;
                }
                let response = s
                    .response
                    .clone()
                    .chunks(pieces.iter().copied())
                    .empty_final_chunk(empty_final);
                let (out, x) = shim_run(&mut shim, &s, response);
                assert_eq!(
                    out, want,
                    "{} {what} (empty final frame: {empty_final})",
                    s.name
                );
                if !s.sse {
                    // Envoy holds the JSON body while the filter pauses: one piece goes out.
                    assert_eq!(x.client.chunks.len(), 1, "{} {what}", s.name);
                }
                match &steady {
                    None => steady = Some(out),
                    Some(first) => assert_eq!(&out, first, "{} {what}", s.name),
                }
            }
        }
        assert!(
            shim.vm.logs().is_empty(),
            "{}: {:?}",
            s.name,
            shim.vm.logs()
        );
    }
}

#[test]
fn sse_events_before_the_list_go_out_as_soon_as_they_are_complete() {
    for s in samples().into_iter().filter(|s| s.sse) {
        let events =
            native::messages(&s.body, true).len() + usize::from(s.body.starts_with(b"id:"));
        let ends: Vec<usize> = (0..s.body.len())
            .filter(|&i| s.body[..=i].ends_with(b"\n\n") || s.body[..=i].ends_with(b"\r\n\r\n"))
            .map(|i| i + 1)
            .collect();
        if ends.len() < 2 {
            continue; // a single event: nothing comes before the list
        }
        let mut shim = ShimEnv::new(CONFIG);
        // Byte by byte: the priming event is forwarded by the callback that completes it, not
        // held with the list.
        let (_, x) = shim_run(&mut shim, &s, s.response.clone().chunked(1));
        assert!(
            x.client.chunks.len() > 1,
            "{}: held until the end ({events} events)",
            s.name
        );
        assert_eq!(x.client.chunks[0].len(), ends[0], "{}", s.name);
    }
}

#[test]
fn a_list_ending_in_trailers_loses_what_the_filter_held() {
    // HTTP/2 with trailers: no body callback carries end_of_stream. The filter holds a JSON
    // list in the VM and always continues, and proxy-wasm cannot add body data in the trailers
    // callback, so the held bytes are dropped and counted as an error (stream.rs
    // `on_response_trailers`). This pins that behaviour as Envoy would show it.
    for s in samples().into_iter().filter(|s| !s.sse) {
        let mut shim = ShimEnv::new(CONFIG);
        let response = s
            .response
            .clone()
            .chunked(1000)
            .trailers(vec![("x-trailer".into(), "1".into())]);
        let (out, x) = shim_run(&mut shim, &s, response);
        assert_eq!(out.body(), b"", "{}", s.name);
        assert_eq!(
            x.client.trailers,
            Some(vec![("x-trailer".to_string(), "1".to_string())])
        );
        assert_eq!(shim.count(Event::Error), 1, "{}", s.name);
        assert!(shim
            .vm
            .log_messages(host_shim::LogLevel::Warn)
            .iter()
            .any(|m| m.contains("were dropped")));
    }
    // SSE events complete before the trailers went out as they completed.
    for s in samples().into_iter().filter(|s| s.sse) {
        let mut shim = ShimEnv::new(CONFIG);
        let mut core = TestEnv::new(CONFIG);
        let want = native_run(&mut core, &s, &[&s.body]);
        let response = s
            .response
            .clone()
            .chunked(1000)
            .trailers(vec![("x-trailer".into(), "1".into())]);
        let (out, _) = shim_run(&mut shim, &s, response);
        assert_eq!(out, want, "{}", s.name);
    }
}

#[test]
fn learned_catalog_answers_search_with_upstream_definitions() {
    let s = samples()
        .into_iter()
        .find(|s| s.name == "py-v1-json-paged.03-tools-list.body")
        .unwrap();
    let mut shim = ShimEnv::new(CONFIG);
    let mut core = TestEnv::new(CONFIG);
    let list = request(&native::post("/mcp"), &list_request(&Value::from(2)));
    let (out, _) = exchange_full(&mut shim, &list, &s.response);
    let want = native_run(&mut core, &s, &[&s.body]);
    assert_eq!(out, want);
    let search = br#"{"jsonrpc":"2.0","id":"q-1","method":"tools/call","params":{"name":"tool_search","arguments":{"query":"open a new issue on github","limit":2}}}"#;
    let (out, x) = exchange_full(
        &mut shim,
        &request(&native::post("/mcp"), search),
        &HttpMessage::response(200),
    );
    let want = native::exchange(
        &mut core,
        native::post("/mcp"),
        search,
        ("200", "application/json", &[]),
    );
    // Each VM names its searches after itself (`search_id`).
    assert_eq!(unidentified(&out), unidentified(&want));
    let native::Outcome::Local {
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
    assert_eq!(defs[0]["name"], "github_create_issue");
    // The client got Envoy's local reply: status, the filter's headers, a content-length.
    assert_eq!(x.client.status(), Some(200));
    assert_eq!(x.client.header("content-type"), Some("application/json"));
    // The request headers had gone up before the body was read (no hold): the upstream saw
    // them, then the reset, never the body.
    assert!(x.upstream.headers.is_some() && x.upstream.reset);
    assert!(x.upstream.body().is_empty());
    assert_eq!(
        shim.count(Event::SearchAnswered(mcp_tool_search_core::Ranking::Bm25)),
        1
    );
    assert!(matches!(x.outcome(), Outcome::Local { status: 200, .. }));
}
