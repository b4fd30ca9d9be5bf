//! The playground's API natively: its answers are the filter's for the same catalog,
//! configuration, caller and query, computed independently by `support::filter` the way the
//! proxy-wasm glue drives the core.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

#[path = "support/filter.rs"]
mod filter;

use filter::{response_of, Filter};
use mcp_tool_search_playground::{check_config, Error, Playground};
use serde_json::Value;
use std::path::PathBuf;

fn testdata(path: &str) -> String {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../testdata");
    std::fs::read_to_string(root.join(path)).unwrap()
}

/// A search's reply without its `search_id`: the playground and the filter are different VMs.
fn unidentified(reply: &Value) -> Value {
    let mut reply = reply.clone();
    if let Some(meta) = reply
        .pointer_mut("/result/_meta/mcp-tool-search~1search")
        .and_then(Value::as_object_mut)
    {
        meta.remove("search_id");
    }
    reply
}

/// The filter after it has seen the list once (it learns the catalog from it).
fn filter(config: &str, list: &str) -> Filter {
    let f = Filter::new(config, "upstream").unwrap();
    f.list(&[], response_of(list).as_bytes()).unwrap();
    f
}

const SMALL: &str = r#"{"tools":[
 {"name":"github_create_issue","description":"Open a new issue in a repository."},
 {"name":"github_get_issue","description":"Read an issue."},
 {"name":"github_close_issue","description":"Close an issue."},
 {"name":"slack_post_message","description":"Post a message to a channel."},
 {"name":"stripe_refund_charge","description":"Refund a charge, fully or partially."}]}"#;

#[test]
fn searches_answer_as_the_filter_does_on_metatool() {
    let list = testdata("metatool/tools.jsonl");
    let queries = testdata("metatool/queries.jsonl");
    for config in [
        "{}",
        r#"{"search":{"result_format":"summary","max_allowable_results":8}}"#,
        r#"{"search":{"weights":{"name":1,"description":2,"input_schema":1},"score_threshold":0.3}}"#,
    ] {
        let playground = Playground::new(config, &list, "", "").unwrap();
        let native = filter(config, &list);
        for line in queries.lines().step_by(997).take(20) {
            let q: Value = serde_json::from_str(line).unwrap();
            let args = serde_json::json!({"query": q["query"]}).to_string();
            let page = playground.search("", &args).unwrap();
            let want = native.call(&[], "tool_search", &args).unwrap();
            assert_eq!(
                unidentified(&page.answer),
                unidentified(&want),
                "{config} {args}"
            );
            let names = page.answer_names.clone().unwrap();
            let rows: Vec<&str> = page.rows.iter().map(|r| r.name.as_str()).collect();
            assert_eq!(rows, names, "{config} {args}");
            assert_eq!(page.strategy, Some("bm25"));
            // The explain breakdown adds up to each row's score.
            for r in &page.rows {
                let e = r.explain.as_ref().unwrap();
                let sum: f32 = e.terms.iter().map(|t| t.score).sum();
                assert!((sum - e.bm25).abs() < 1e-4, "{r:?}");
                assert!((e.bm25_normalized - r.score).abs() < 1e-6, "{r:?}");
            }
        }
    }
    let playground = Playground::new("{}", &list, "", "").unwrap();
    let top = playground
        .search("", r#"{"query":"search academic papers"}"#)
        .unwrap();
    assert_eq!(top.rows[0].name, "ResearchFinder");
}

#[test]
fn what_the_agent_sees_is_the_filters_list() {
    let list = testdata("metatool/tools.jsonl");
    for config in [
        "{}",
        r#"{"eager_patterns":["Research*","*Weather*"]}"#,
        r#"{"mode":"list"}"#,
        r#"{"mcp_paths":["/v1/MCP"],"catalog":{"path":"/other"}}"#,
    ] {
        let playground = Playground::new(config, &list, "", "").unwrap();
        let view = playground.agent_view("").unwrap();
        let native = Filter::new(config, "upstream").unwrap();
        let want: Value =
            serde_json::from_slice(&native.list(&[], response_of(&list).as_bytes()).unwrap())
                .unwrap();
        assert_eq!(view.response, want, "{config}");
        assert_eq!(view.upstream_tools, 199);
        match config {
            "{}" => {
                let names: Vec<&str> = view.tools.iter().map(|t| t.name.as_str()).collect();
                assert_eq!(names, ["tool_search"]);
                assert_eq!((view.hidden, view.outcome), (199, "rewritten"));
                assert!(view.tokens_after * 5 < view.tokens_before, "{view:?}");
                assert!(view.search_description.as_deref().unwrap().contains("199"));
            }
            r#"{"mode":"list"}"# => {
                assert_eq!((view.hidden, view.outcome), (0, "unchanged"));
                assert_eq!(view.tokens_after, view.tokens_before);
            }
            r#"{"mcp_paths":["/v1/MCP"],"catalog":{"path":"/other"}}"# => {
                assert_eq!((view.hidden, view.outcome), (199, "rewritten"));
            }
            _ => {
                assert!(view
                    .tools
                    .iter()
                    .any(|t| t.name == "ResearchHelper" && !t.injected));
                assert!(view.hidden > 0 && view.hidden < 199);
            }
        }
    }
}

#[test]
fn callers_see_what_the_policy_gives_them() {
    let config = r#"{"group_separator":"_","authorization":{
        "identity":{"source":"header","header":"x-user-roles"},
        "rules":[{"claim":"roles","values":["support"],"tools":["github_*","slack_*"]},
                 {"claim":"roles","values":["billing"],"tools":["stripe_*"]}],
        "default":"deny"},"eager_patterns":["github_get_*"]}"#;
    let playground = Playground::new(config, SMALL, "", "").unwrap();
    let native = filter(config, SMALL);
    let body = response_of(SMALL);
    for (caller, eager, groups) in [
        ("support", vec!["github_get_issue"], Some(2)),
        ("billing", vec![], None),
        ("", vec![], None),
    ] {
        let view = playground.agent_view(caller).unwrap();
        let headers: Vec<(&str, &str)> = if caller.is_empty() {
            Vec::new()
        } else {
            vec![("x-user-roles", caller)]
        };
        let want: Value =
            serde_json::from_slice(&native.list(&headers, body.as_bytes()).unwrap()).unwrap();
        assert_eq!(view.response, want, "{caller}");
        let listed: Vec<&str> = view
            .tools
            .iter()
            .filter(|t| !t.injected)
            .map(|t| t.name.as_str())
            .collect();
        assert_eq!(listed, eager, "{caller}");
        let group_count = view
            .groups
            .as_ref()
            .and_then(|g| g.pointer("/result/content/0/text"))
            .map(|t| t.as_str().unwrap().matches("tools").count());
        assert_eq!(
            group_count.is_some(),
            groups.is_some(),
            "{caller}: {view:?}"
        );
        for args in [
            r#"{"query":"refund a charge"}"#,
            r#"{"query":"issue","limit":1,"offset":1}"#,
            r#"{"query":"issue message","group":"slack"}"#,
            r#"{"query":""}"#,
        ] {
            let page = playground.search(caller, args).unwrap();
            let want = native.call(&headers, "tool_search", args).unwrap();
            assert_eq!(
                unidentified(&page.answer),
                unidentified(&want),
                "{caller} {args}"
            );
            if page.refused.is_none() {
                let rows: Vec<&str> = page.rows.iter().map(|r| r.name.as_str()).collect();
                let names = page.answer_names.clone().unwrap_or_default();
                assert_eq!(rows, names, "{caller} {args}");
            }
        }
    }
    let refund = playground
        .search("billing", r#"{"query":"refund a charge"}"#)
        .unwrap();
    assert_eq!(refund.rows[0].name, "stripe_refund_charge");
    let none = playground
        .search("support", r#"{"query":"refund a charge"}"#)
        .unwrap();
    assert!(none.rows.iter().all(|r| r.name != "stripe_refund_charge"));
    let paged = playground
        .search("support", r#"{"query":"issue","limit":1,"offset":1}"#)
        .unwrap();
    assert_eq!((paged.rows.len(), paged.rows[0].rank), (1, 2));
    let empty = playground.search("support", r#"{"query":""}"#).unwrap();
    assert!(empty.refused.unwrap().contains("query"));
}

#[test]
fn hybrid_parts_where_vectors_are_pasted() {
    let config = r#"{"search":{"ranking":"hybrid","embeddings":{"cluster":"e","model_id":"m","dimensions":2}}}"#;
    let vectors = r#"{"query":[0,1],"tools":{
        "github_create_issue":[1,0],"github_get_issue":[0.8,0.6],"github_close_issue":[0.6,0.8],
        "slack_post_message":[0,1],"stripe_refund_charge":[-1,0]}}"#;
    let playground = Playground::new(config, SMALL, "", vectors).unwrap();
    let page = playground.search("", r#"{"query":"post"}"#).unwrap();
    assert_eq!(page.strategy, Some("hybrid"), "{page:?}");
    assert_eq!(
        page.answer["result"]["_meta"]["mcp-tool-search/search"]["strategy"],
        "hybrid"
    );
    assert_eq!(page.rows[0].name, "slack_post_message");
    let v = page.rows[0]
        .explain
        .as_ref()
        .unwrap()
        .vector
        .as_ref()
        .unwrap();
    // slack_post_message holds the query's one word: the vector share is 0.85 - 0.5.
    assert!((v.cosine.unwrap() - 1.0).abs() < 1e-6 && (v.weight - 0.35).abs() < 1e-6);
    let rows: Vec<&str> = page.rows.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(rows, page.answer_names.clone().unwrap());
    // A paste that lacks a tool's vector: the service the playground stands in for answers no
    // batch it cannot embed whole, so no tool has a vector; the filter ranks by BM25 and says
    // why.
    let partial = r#"{"query":[0,1],"tools":{"slack_post_message":[0,1]}}"#;
    let playground = Playground::new(config, SMALL, "", partial).unwrap();
    let page = playground.search("", r#"{"query":"post"}"#).unwrap();
    assert_eq!(page.strategy, Some("bm25"));
    assert!(page.fallback.unwrap().starts_with("not_embedded"));
    // No query vector: likewise.
    let playground = Playground::new(config, SMALL, "", "").unwrap();
    let page = playground.search("", r#"{"query":"post"}"#).unwrap();
    assert_eq!(
        page.answer["result"]["_meta"]["mcp-tool-search/search"]["fallback"]["reason"],
        "could not call embeddings cluster \"e\": no query vector was pasted in the playground"
    );
}

#[test]
fn bad_configurations_get_the_parsers_message() {
    let want = "plugin configuration field `search.max_allowable_results` is 0; expected an integer from 1 to 100";
    let bad = r#"{"search":{"max_allowable_results":0}}"#;
    let err = Playground::new(bad, SMALL, "", "").err().unwrap();
    assert!(matches!(err, Error::Config(_)));
    assert_eq!(err.to_string(), want);
    assert_eq!(check_config(bad).err().unwrap().to_string(), want);
    assert!(Filter::new(bad, "upstream").err().unwrap() == want);
    let ok = check_config(r#"{"eager_patterns":["it's_*"]}"#).unwrap();
    assert_eq!(
        ok.envoy,
        "configuration:\n  \"@type\": type.googleapis.com/google.protobuf.StringValue\n  value: '{\"eager_patterns\":[\"it''s_*\"]}'\n"
    );
    assert_eq!(
        ok.istio,
        "pluginConfig:\n  {\n    \"eager_patterns\": [\n      \"it's_*\"\n    ]\n  }\n"
    );
    assert!(ok.caller_hint.is_none());
    assert!(matches!(
        Playground::new("{}", r#"{"tools":[{"description":"no name"}]}"#, "", ""),
        Err(Error::List(_))
    ));
}

#[test]
fn wire_samples_load_as_captured() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../testdata/wire-samples");
    for name in [
        "py-v1-sse.03-tools-list.body",
        "py-v1-json-paged.03-tools-list.body",
    ] {
        let text = std::fs::read_to_string(dir.join(name)).unwrap();
        let playground = Playground::new("{}", &text, "", "").unwrap();
        let view = playground.agent_view("").unwrap();
        assert!(view.upstream_tools > 0, "{name}");
        assert_eq!(view.tools[0].name, "tool_search", "{name}");
    }
}

/// An insights answer as the filter's endpoint gives it (README "Search insights").
const INSIGHTS: &str = r#"{"insights":{"upstream":{
 "searches":40,"zero_results":3,
 "calls":{"total":30,"after_search":20,"without_search":10,"after_describe":0,"rank_1":15,"rank_2_5":5,"rank_over_5":0},
 "zero_result_queries":[{"group":"aa11","count":2,"query":"rotate the api keys"},{"group":"bb22","count":1}],
 "called_after_search":[{"name":"github_create_issue","calls":12,"median_rank":1}],
 "called_without_search":[{"name":"slack_post_message","calls":10,"eager":false}],
 "never_returned":{"count":1,"tools":["stripe_refund_charge"]},
 "suggested_eager":{"share":0.8,"tools":[
   {"name":"github_create_issue","calls":12,"share":0.4,"eager":false},
   {"name":"slack_post_message","calls":10,"share":0.333,"eager":false},
   {"name":"jira_create_ticket","calls":2,"share":0.067,"eager":false}]},
 "auto_mode":{"mode":"search","search_threshold":40,"tools":5,"decides":"list"}}}}"#;

#[test]
fn pasted_insights_show_what_to_make_eager_and_the_suggestion_is_tried_at_once() {
    let config = r#"{"eager_patterns":["github_get_*"]}"#;
    let playground = Playground::new(config, SMALL, "", "").unwrap();
    let view = playground.insights(INSIGHTS).unwrap();
    assert_eq!(view.namespace, "upstream");
    let suggested: Vec<(&str, bool, bool)> = view
        .suggested
        .iter()
        .map(|t| (t.name.as_str(), t.eager, t.in_catalog))
        .collect();
    assert_eq!(
        suggested,
        [
            ("github_create_issue", false, true),
            ("slack_post_message", false, true),
            // Named by the insights of another catalog: never added to this configuration.
            ("jira_create_ticket", false, false)
        ]
    );
    assert_eq!(
        view.zero_queries[0].query.as_deref(),
        Some("rotate the api keys")
    );
    assert_eq!(view.zero_queries[1].query, None);
    assert_eq!(view.never_returned, ["stripe_refund_charge"]);

    // The suggestion, tried: both tools are listed now, the eager pattern kept.
    let eager = view.eager_config.unwrap();
    let tried = Playground::new(&eager, SMALL, "", "").unwrap();
    let listed: Vec<String> = tried
        .agent_view("")
        .unwrap()
        .tools
        .iter()
        .filter(|t| !t.injected)
        .map(|t| t.name.clone())
        .collect();
    assert_eq!(
        listed,
        [
            "github_create_issue",
            "github_get_issue",
            "slack_post_message"
        ]
    );
    let again = tried.insights(INSIGHTS).unwrap();
    assert!(again.suggested.iter().take(2).all(|t| t.eager));
    assert_eq!(again.eager_config, None, "nothing left to make eager");
}

#[test]
fn insights_that_cannot_be_read_say_why() {
    let playground = Playground::new("{}", SMALL, "", "").unwrap();
    for (text, why) in [
        ("not json", "not JSON"),
        (r#"{"tools":[]}"#, "GET <http_path>/insights"),
        (
            r#"{"insights":{"a":{},"b":{}}}"#,
            "no insights for namespace \"upstream\"",
        ),
    ] {
        let e = playground.insights(text).unwrap_err().to_string();
        assert!(e.starts_with("insights: ") && e.contains(why), "{e}");
    }
}
