//! What a steady `tool_search` costs in crossings of the proxy-wasm ABI, counted by the
//! host-shim for the real `.wasm`: every host function it calls and every key it reads, the same
//! in Envoy. The fixed part of a search's cost (issue 33) is these calls; a change that adds one
//! to every search fails here and says which.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod shim_support;

use shim_support::*;
use std::collections::BTreeMap;

const LIST: &[u8] = br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
const TOOLS: &[u8] = br#"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"get_weather","description":"Weather forecast"},{"name":"stripe_refund_charge","description":"Refund a charge"},{"name":"slack_post_message","description":"Post a message"}]}}"#;
const SEARCH: &[u8] = br#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"tool_search","arguments":{"query":"refund a charge"}}}"#;
const POLICY: &str = r#"{"authorization":{"identity":{"source":"header","header":"x-roles"},
    "rules":[{"claim":"roles","values":["support"],"tools":["stripe_*"]}],"default":"deny"}}"#;

/// A worker that listed the tools and published the index, then searched once: the census of
/// its next search (calls by function, reads by key).
fn steady_search(config: &str) -> (BTreeMap<&'static str, u64>, BTreeMap<String, u64>) {
    steady_search_in(config, None)
}

/// [`steady_search`], its searches in MCP session `session`.
fn steady_search_in(
    config: &str,
    session: Option<&str>,
) -> (BTreeMap<&'static str, u64>, BTreeMap<String, u64>) {
    let mut env = ShimEnv::new(config);
    let post = || request(&native::post("/mcp"), LIST).header("x-roles", "support");
    let (out, _) = exchange_full(
        &mut env,
        &post(),
        &response("200", "application/json", &[TOOLS]),
    );
    assert!(
        matches!(
            out,
            native::Outcome::Upstream {
                rewritten: true,
                ..
            }
        ),
        "{out:?}"
    );
    assert!(env.vm.tick().unwrap());
    let mut search = request(&native::post("/mcp"), SEARCH).header("x-roles", "support");
    if let Some(session) = session {
        search = search.header("mcp-session-id", session);
    }
    let unused = response("500", "", &[]);
    for _ in 0..2 {
        env.vm.hostcalls();
        let (out, _) = exchange_full(&mut env, &search, &unused);
        let (_, found) = native::local_result(&out);
        assert_eq!(found[0]["name"], "stripe_refund_charge");
    }
    env.vm.hostcalls();
    exchange_full(&mut env, &search, &unused);
    let census = env.vm.hostcalls();
    let calls = census
        .functions
        .iter()
        .map(|(name, h)| (*name, h.calls))
        .collect();
    (calls, census.keys)
}

fn expected(pairs: &[(&'static str, u64)]) -> BTreeMap<&'static str, u64> {
    pairs.iter().copied().collect()
}

/// The census with search insights off.
const WITHOUT_INSIGHTS: &[(&str, u64)] = &[
    // The request's headers, once, as pairs; its body.
    ("proxy_get_header_map_pairs", 1),
    // Its `accept-encoding`, removed before the body says what the request is: the answer to a
    // list must come uncompressed to be rewritten.
    ("proxy_remove_header_map_value", 1),
    ("proxy_get_buffer_bytes", 1),
    // The route's namespace and the cluster (what a catalog is keyed by).
    ("proxy_get_property", 2),
    // One counter (`searches.bm25`). No clock: the shared catalog's age is the root tick's to
    // judge, and without insights nothing times the search.
    ("proxy_increment_metric", 1),
    // The catalog's meta and version, each read once per callback.
    ("proxy_get_shared_data", 2),
    ("proxy_send_local_response", 1),
];

#[test]
fn without_insights_a_steady_search_makes_these_hostcalls_and_no_more() {
    let (calls, _) = steady_search(r#"{"search":{"insights":{"enabled":false}}}"#);
    assert_eq!(calls, expected(WITHOUT_INSIGHTS));
}

#[test]
fn in_a_session_a_search_makes_the_same_hostcalls() {
    // What the session's search returned is kept in the worker and written on its tick, off
    // the search's path.
    let (with, keys) = steady_search_in("{}", Some("session-1"));
    let (without, _) = steady_search("{}");
    assert_eq!(with, without, "{keys:?}");
    assert!(
        !keys
            .keys()
            .any(|k| k.contains(mcp_tool_search_core::keys::LINK)),
        "{keys:?}"
    );
}

#[test]
fn a_steady_search_makes_these_hostcalls_and_no_more() {
    let (calls, keys) = steady_search("{}");
    assert_eq!(
        calls,
        expected(&[
            // The request's headers, once, as pairs; its body.
            ("proxy_get_header_map_pairs", 1),
            // Its `accept-encoding`, removed before the body says what the request is: the
            // answer to a list must come uncompressed to be rewritten.
            ("proxy_remove_header_map_value", 1),
            ("proxy_get_buffer_bytes", 1),
            // The route's namespace and the cluster (what a catalog is keyed by).
            ("proxy_get_property", 2),
            // The clock: at the search's start and at its end (search insights,
            // `search_time_us`). One
            // counter (`searches.bm25`), two histograms (the time and `search_results`).
            ("proxy_get_current_time_nanoseconds", 2),
            ("proxy_increment_metric", 1),
            ("proxy_record_metric", 2),
            // What the filter did, for the access log (filter state `wasm.mcp_tool_search`).
            ("proxy_set_property", 1),
            // The catalog's meta and version, each read once per callback.
            ("proxy_get_shared_data", 2),
            ("proxy_send_local_response", 1),
        ]),
        "{keys:?}"
    );
    let read = |key: String| format!("proxy_get_shared_data {key}");
    assert_eq!(
        keys.keys()
            .filter(|k| k.starts_with("proxy_get_shared_data"))
            .cloned()
            .collect::<Vec<_>>(),
        [
            read(mcp_tool_search_core::keys::meta("upstream")),
            read(mcp_tool_search_core::keys::version("upstream"))
        ]
    );
    // Its own local reply passes its response callbacks unread.
    assert!(
        !keys
            .keys()
            .any(|k| k.starts_with("proxy_get_header_map_value")),
        "{keys:?}"
    );
}

#[test]
fn under_a_policy_the_search_reads_the_same_and_its_answer_is_not_read_back() {
    let (calls, keys) = steady_search(POLICY);
    // The identity header is in the pairs read once; the answer, filtered when it was built,
    // is not read again as a response to guard.
    assert_eq!(calls["proxy_get_buffer_bytes"], 1, "{calls:?}");
    assert_eq!(calls["proxy_get_header_map_pairs"], 1, "{calls:?}");
    assert!(!calls.contains_key("proxy_set_buffer_bytes"), "{calls:?}");
    assert!(
        !keys
            .keys()
            .any(|k| k.starts_with("proxy_get_header_map_value")),
        "{keys:?}"
    );
}
