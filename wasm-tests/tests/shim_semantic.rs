//! Semantic search through real callouts: the `.wasm` in host-shim embeds the learned tools
//! from its tick and each query from the request path (`proxy_http_call` to the embeddings
//! cluster), and the test plays the embeddings service: it answers, times out or fails. The
//! catalog fetch is the other callout: two workers missing the catalog fetch it once.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod shim_support;

use host_shim::{HttpCall, StreamView};
use serde_json::{json, Value};
use shim_support::*;

const CONFIG: &str = r#"{"search":{"ranking":"vector","embeddings":{"cluster":"emb","model_id":"m","dimensions":2,"timeout":"2s"}}}"#;
const LIST: &[u8] = br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
const TOOLS: &[u8] = br#"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"get_weather","description":"Weather forecast"},{"name":"stripe_refund_charge","description":"Refund a charge"},{"name":"slack_post_message","description":"Post a message"}]}}"#;

/// The embeddings service of the test: a fixed vector per topic.
fn vector_for(text: &str) -> Vec<f64> {
    let t = text.to_ascii_lowercase();
    if t.contains("weather") {
        vec![1.0, 0.0]
    } else if t.contains("refund") {
        vec![0.6, 0.8]
    } else {
        vec![0.0, 1.0]
    }
}

/// The OpenAI-style answer to an embeddings call.
fn answer(call: &HttpCall) -> Vec<u8> {
    let request: Value = serde_json::from_slice(&call.body).unwrap();
    assert_eq!(request["model"], "m");
    let data: Vec<Value> = request["input"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
        .map(|(i, t)| json!({"index": i, "embedding": vector_for(t.as_str().unwrap())}))
        .collect();
    serde_json::to_vec(&json!({ "data": data })).unwrap()
}

fn ok_headers() -> Vec<(String, String)> {
    vec![
        (":status".into(), "200".into()),
        ("content-type".into(), "application/json".into()),
    ]
}

/// Lists the tools, then lets the tick embed them through one answered callout.
fn learned_and_embedded() -> ShimEnv {
    let mut env = ShimEnv::new(CONFIG);
    assert_eq!(
        u64::from(env.vm.tick_period_ms()),
        mcp_tool_search_core::CATALOG_TICK_MS,
        "the background timer"
    );
    let out = exchange(
        &mut env,
        native_post(),
        LIST,
        ("200", "application/json", &[TOOLS]),
    );
    assert!(matches!(
        out,
        shim_support::native::Outcome::Upstream {
            rewritten: true,
            ..
        }
    ));
    assert!(env.vm.tick().unwrap());
    let calls = env.vm.pending_http_calls();
    assert_eq!(calls.len(), 1, "one batch in flight");
    let call = &calls[0];
    assert_eq!(call.cluster, "emb");
    assert!(call
        .headers
        .contains(&(":path".into(), "/v1/embeddings".into())));
    assert!(call.headers.contains(&(":authority".into(), "emb".into())));
    assert_eq!(call.timeout_ms, 2000);
    assert_eq!(
        serde_json::from_slice::<Value>(&call.body).unwrap()["input"]
            .as_array()
            .unwrap()
            .len(),
        3
    );
    env.vm
        .complete_http_call(call.token, ok_headers(), &answer(call), vec![])
        .unwrap();
    // Nothing more to embed.
    env.vm.tick().unwrap();
    assert!(env.vm.pending_http_calls().is_empty());
    env
}

fn native_post() -> mcp_tool_search_core::RequestHead {
    shim_support::native::post("/mcp")
}

/// A search whose query embedding the test answers with `respond`.
fn search(
    env: &mut ShimEnv,
    query: &str,
    respond: impl FnOnce(&mut ShimEnv, &HttpCall),
) -> StreamView {
    let body = json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"tool_search","arguments":{"query":query}}});
    let req = request(&native_post(), &serde_json::to_vec(&body).unwrap());
    let id = env.vm.new_stream().unwrap();
    env.vm
        .send_request_headers(id, req.headers.clone(), false)
        .unwrap();
    env.vm
        .send_request_body(id, &req.body_bytes(), true)
        .unwrap();
    // The request waits for the query's vector.
    let waiting = env.vm.stream_view(id).unwrap();
    assert!(waiting.local_reply.is_none() && waiting.stuck.is_some());
    let calls = env.vm.pending_http_calls();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].context, id, "dispatched by the stream");
    respond(env, &calls[0]);
    let view = env.vm.stream_view(id).unwrap();
    env.vm.finish_stream(id).unwrap();
    view
}

fn result(view: &StreamView) -> (Vec<String>, Value) {
    let reply: Value = serde_json::from_slice(&view.client.body()).unwrap();
    let found: Value =
        serde_json::from_str(reply["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    let names = found
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect();
    (
        names,
        reply["result"]["_meta"]["mcp-tool-search/search"].clone(),
    )
}

#[test]
fn tools_embedded_from_the_tick_rank_queries_embedded_on_the_request_path() {
    let mut env = learned_and_embedded();
    // "weather" in words, a slack vector from the service: vectors decide.
    let view = search(&mut env, "send a note to the team", |env, call| {
        env.vm
            .complete_http_call(call.token, ok_headers(), &answer(call), vec![])
            .unwrap();
    });
    assert_eq!(view.client.status(), Some(200));
    let (names, meta) = result(&view);
    assert_eq!(names[0], "slack_post_message");
    assert_eq!(meta["strategy"], "vector");
    assert_eq!(env.stat("searches_answered.vector"), 1);
    assert!(
        view.upstream.headers.is_some() && view.upstream.reset,
        "{view:?}"
    );

    // Another worker of the same Envoy uses the stored tool vectors without embedding them.
    let mut other = ShimEnv::sharing(CONFIG, &env);
    let view = search(&mut other, "weather tomorrow", |env, call| {
        env.vm
            .complete_http_call(call.token, ok_headers(), &answer(call), vec![])
            .unwrap();
    });
    assert_eq!(result(&view).0[0], "get_weather");
    other.vm.tick().unwrap();
    assert!(
        other.vm.pending_http_calls().is_empty(),
        "nothing left to embed"
    );
}

#[test]
fn a_task_is_embedded_with_its_steps_in_one_callout() {
    let mut env = learned_and_embedded();
    // The whole task and its first step say "weather"; its second step is slack's. Without the
    // parts slack (cosine 0, no word shared) would not match at all; with them its cosine is
    // raised half way to its part's (0.5).
    let view = search(
        &mut env,
        "check the weather and ping the team",
        |env, call| {
            let sent: Value = serde_json::from_slice(&call.body).unwrap();
            assert_eq!(
                sent["input"],
                json!([
                    "check the weather and ping the team",
                    "check the weather",
                    "ping the team"
                ])
            );
            env.vm
                .complete_http_call(call.token, ok_headers(), &answer(call), vec![])
                .unwrap();
        },
    );
    let (names, meta) = result(&view);
    assert_eq!(meta["strategy"], "vector");
    assert_eq!(
        names,
        ["get_weather", "stripe_refund_charge", "slack_post_message"]
    );
}

#[test]
fn a_timed_out_query_embedding_falls_back_to_bm25_and_says_why() {
    let mut env = learned_and_embedded();
    let view = search(&mut env, "refund", |env, call| {
        env.vm.time_out_http_call(call.token).unwrap();
    });
    let (names, meta) = result(&view);
    assert_eq!(names, ["stripe_refund_charge"]);
    assert_eq!(meta["strategy"], "bm25");
    assert_eq!(meta["fallback"]["kind"], "timeout");
    assert_eq!(env.stat("search_fallbacks.timeout"), 1);
}

#[test]
fn an_error_status_from_the_embeddings_service_falls_back_to_bm25() {
    let mut env = learned_and_embedded();
    let view = search(&mut env, "refund", |env, call| {
        env.vm
            .complete_http_call(
                call.token,
                vec![(":status".into(), "503".into())],
                b"overloaded",
                vec![],
            )
            .unwrap();
    });
    let (names, meta) = result(&view);
    assert_eq!(names, ["stripe_refund_charge"]);
    assert_eq!(meta["strategy"], "bm25");
    assert_eq!(meta["fallback"]["kind"], "status");
}

/// A callout Envoy fails (reset, no healthy upstream) has no response and no header map: the
/// filter must not ask for `:status` then (the SDK panics on the host's BadArgument).
#[test]
fn a_failed_query_embedding_falls_back_to_bm25() {
    let mut env = learned_and_embedded();
    let view = search(&mut env, "refund", |env, call| {
        env.vm.fail_http_call(call.token).unwrap();
    });
    let (names, meta) = result(&view);
    assert_eq!(names, ["stripe_refund_charge"]);
    assert_eq!(meta["fallback"]["kind"], "unavailable");
}

/// README "Semantic ranking": `headers` and `authority` go on every embeddings call, the
/// background batches and a search's query alike (a service behind a gateway needs both).
#[test]
fn configured_headers_and_authority_are_on_every_embeddings_call() {
    const WITH_HEADERS: &str = r#"{"search":{"ranking":"vector","embeddings":{"cluster":"emb","model_id":"m","dimensions":2,
        "path":"/openai/v1/embeddings","authority":"embed.internal:8443",
        "headers":{"Authorization":"Bearer sk-test","x-tenant":"acme"}}}}"#;
    fn assert_configured(call: &HttpCall, what: &str) {
        let values = |name: &str| -> Vec<&str> {
            call.headers
                .iter()
                .filter(|(n, _)| n == name)
                .map(|(_, v)| v.as_str())
                .collect()
        };
        assert_eq!(call.cluster, "emb", "{what}");
        // One of each: a second `:authority` (the cluster name) would leave the choice to the
        // host.
        assert_eq!(
            values(":authority"),
            ["embed.internal:8443"],
            "{what}: {call:?}"
        );
        assert_eq!(
            values(":path"),
            ["/openai/v1/embeddings"],
            "{what}: {call:?}"
        );
        assert_eq!(values(":method"), ["POST"], "{what}: {call:?}");
        // Header names are lowercased (HTTP/2 refuses uppercase ones), values kept.
        assert_eq!(
            values("authorization"),
            ["Bearer sk-test"],
            "{what}: {call:?}"
        );
        assert_eq!(values("x-tenant"), ["acme"], "{what}: {call:?}");
        assert_eq!(
            values("content-type"),
            ["application/json"],
            "{what}: {call:?}"
        );
    }

    let mut env = ShimEnv::new(WITH_HEADERS);
    exchange(
        &mut env,
        native_post(),
        LIST,
        ("200", "application/json", &[TOOLS]),
    );
    assert!(env.vm.tick().unwrap());
    let calls = env.vm.pending_http_calls();
    assert_eq!(calls.len(), 1, "one batch in flight");
    assert_configured(&calls[0], "the tools' batch");
    env.vm
        .complete_http_call(calls[0].token, ok_headers(), &answer(&calls[0]), vec![])
        .unwrap();

    let view = search(&mut env, "weather tomorrow", |env, call| {
        assert_configured(call, "the query");
        env.vm
            .complete_http_call(call.token, ok_headers(), &answer(call), vec![])
            .unwrap();
    });
    let (names, meta) = result(&view);
    assert_eq!(names[0], "get_weather");
    assert_eq!(meta["strategy"], "vector", "the configured calls were used");
}

/// Envoy starts its workers' VMs together: two VMs started in the same millisecond, whose root
/// contexts have the same id, must still be two lease holders. A catalog missing on both is
/// fetched once: the second worker's search waits for the first worker's fetch.
#[test]
fn workers_started_in_the_same_millisecond_fetch_a_missing_catalog_once() {
    let first = ShimEnv::new("{}");
    let mut workers = [ShimEnv::sharing("{}", &first), first];
    let search = br#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"tool_search","arguments":{"query":"refund"}}}"#;
    let mut fetching = Vec::new();
    for worker in &mut workers {
        let req = request(&native_post(), search);
        let id = worker.vm.new_stream().unwrap();
        worker
            .vm
            .send_request_headers(id, req.headers.clone(), false)
            .unwrap();
        worker
            .vm
            .send_request_body(id, &req.body_bytes(), true)
            .unwrap();
        let view = worker.vm.stream_view(id).unwrap();
        assert!(view.local_reply.is_none(), "{view:?}");
        fetching.push(worker.vm.pending_http_calls().len());
    }
    assert_eq!(fetching, [1, 0], "one worker fetches, the other waits");
}
