//! `search.http_path`: the plain-HTTP search endpoint and its health follow the configured path,
//! and `false` removes them, natively.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod support;

use mcp_tool_search_core::{Entry, Event, RequestHead};
use serde_json::{json, Value};
use support::*;

const LIST: &[u8] = br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
const SEARCH: &[u8] = br#"{"query":"refund a charge","limit":3}"#;
/// What the upstream answers to anything the filter lets through: recognisable, so that a
/// reply the filter made up cannot pass for it.
const UPSTREAM: &[u8] = br#"{"from":"upstream"}"#;

fn catalog() -> Vec<u8> {
    let defs: Vec<Value> = [
        ("stripe_refund_charge", "Refund a charge to a customer"),
        ("github_get_issue", "Get an issue by number"),
        ("slack_post_message", "Post a message to a channel"),
    ]
    .iter()
    .map(|(n, d)| json!({"name": n, "description": d, "inputSchema": {"type": "object"}}))
    .collect();
    serde_json::to_vec(&json!({"jsonrpc":"2.0","id":1,"result":{"tools": defs}})).unwrap()
}

/// A worker that has learned the catalog from a list passing through `/mcp`, the list itself
/// rewritten (so the filter is otherwise at work on this configuration).
fn env_with(config: &str) -> TestEnv {
    let mut env = TestEnv::new(config);
    let body = catalog();
    let out = exchange(
        &mut env,
        post("/mcp"),
        LIST,
        ("200", "application/json", &[&body]),
    );
    let Outcome::Upstream {
        rewritten: true, ..
    } = &out
    else {
        panic!("the list was not rewritten: {out:?}")
    };
    env
}

/// The request reached the upstream as the client sent it and its answer came back unchanged.
fn assert_passes(env: &mut TestEnv, head: RequestHead, request: &[u8]) {
    let what = format!("{} {}", head.method, head.path);
    let out = exchange(env, head, request, ("200", "application/json", &[UPSTREAM]));
    assert_eq!(
        out,
        Outcome::Upstream {
            body: UPSTREAM.to_vec(),
            rewritten: false
        },
        "{what} was not left to the upstream"
    );
    assert_eq!(
        sent_upstream().as_deref(),
        Some(request),
        "{what}: the upstream did not get the request body unchanged"
    );
}

/// The endpoint answered a search itself, with the learned tool ranked first.
fn assert_searches(env: &mut TestEnv, path: &str) {
    let out = exchange(
        env,
        post(path),
        SEARCH,
        ("200", "application/json", &[UPSTREAM]),
    );
    let Outcome::Local {
        status: 200, body, ..
    } = &out
    else {
        panic!("POST {path} was not answered by the filter: {out:?}")
    };
    let v: Value = serde_json::from_slice(body).unwrap();
    assert_eq!(v["tools"][0]["name"], "stripe_refund_charge", "{v}");
    assert_eq!(v["metadata"]["strategy"], "bm25", "{v}");
    assert_eq!(sent_upstream(), None, "POST {path} reached the upstream");
}

fn assert_health(env: &mut TestEnv, path: &str) {
    let out = exchange(
        env,
        get(path),
        b"",
        ("200", "application/json", &[UPSTREAM]),
    );
    let Outcome::Local {
        status: 200, body, ..
    } = &out
    else {
        panic!("GET {path} was not answered by the filter: {out:?}")
    };
    let v: Value = serde_json::from_slice(body).unwrap();
    assert_eq!(v["search"]["status"], "ok", "{v}");
    assert_eq!(v["catalogs"]["upstream"]["tools"], 3, "{v}");
}

#[test]
fn the_default_path_serves_search_and_health() {
    // The baseline the other tests move away from: without it, a filter that never answered
    // the default path would pass them.
    let mut env = env_with("{}");
    assert_searches(&mut env, "/mcp/search");
    assert_health(&mut env, "/mcp/search/health");
}

#[test]
fn a_moved_path_takes_search_and_health_along_and_frees_the_default() {
    let mut env = env_with(r#"{"search":{"http_path":"/find"}}"#);
    assert_searches(&mut env, "/find");
    assert_health(&mut env, "/find/health");
    let out = exchange(&mut env, get("/find"), b"", ("200", "", &[UPSTREAM]));
    let Outcome::Local {
        status: 405,
        headers,
        ..
    } = &out
    else {
        panic!("GET /find: {out:?}")
    };
    assert!(
        headers.contains(&("allow".into(), "POST".into())),
        "{headers:?}"
    );
    let out = exchange(
        &mut env,
        post("/find/health"),
        b"{}",
        ("200", "", &[UPSTREAM]),
    );
    assert!(
        matches!(out, Outcome::Local { status: 405, .. }),
        "POST /find/health: {out:?}"
    );

    // The old paths are now ordinary traffic: neither answered nor refused here.
    assert_passes(&mut env, post("/mcp/search"), SEARCH);
    assert_passes(&mut env, get("/mcp/search"), b"");
    assert_passes(&mut env, get("/mcp/search/health"), b"");
}

#[test]
fn a_moved_path_outside_the_mcp_paths_is_still_the_endpoint() {
    // `/api/tools/search` is under no MCP path, so only `http_path` can make it the endpoint.
    let mut env = env_with(r#"{"search":{"http_path":"/api/tools/search"}}"#);
    assert_searches(&mut env, "/api/tools/search");
    assert_health(&mut env, "/api/tools/search/health");
    assert_passes(&mut env, post("/mcp/search"), SEARCH);
}

#[test]
fn false_removes_the_endpoint_and_its_health() {
    let mut env = env_with(r#"{"search":{"http_path":false}}"#);
    assert_passes(&mut env, post("/mcp/search"), SEARCH);
    assert_passes(&mut env, get("/mcp/search"), b"");
    assert_passes(&mut env, get("/mcp/search/health"), b"");
    // Nothing else took the endpoint's place either.
    assert_passes(&mut env, post("/search"), SEARCH);
    assert_passes(&mut env, get("/health"), b"");
}

fn search_json(env: &mut TestEnv, body: &[u8]) -> (u32, Value) {
    let out = exchange(
        env,
        post("/mcp/search"),
        body,
        ("200", "application/json", &[UPSTREAM]),
    );
    let Outcome::Local { status, body, .. } = &out else {
        panic!("POST /mcp/search was not answered by the filter: {out:?}")
    };
    (*status, serde_json::from_slice(body).unwrap())
}

/// `detail` as the search tool takes it: full definitions by default (whatever the search
/// tool's `result_format`), one-line summaries, or names; anything else a 400.
#[test]
fn detail_chooses_definitions_lines_or_names() {
    let mut env = env_with(r#"{"search":{"result_format":"summary"}}"#);
    let (status, full) = search_json(&mut env, br#"{"query":"refund a charge"}"#);
    assert_eq!(status, 200, "{full}");
    assert_eq!(
        full["tools"][0]["description"],
        "Refund a charge to a customer"
    );
    let (_, compact) = search_json(
        &mut env,
        br#"{"query":"refund a charge","detail":"compact"}"#,
    );
    assert_eq!(
        compact["tools"][0],
        json!({"name": "stripe_refund_charge",
            "summary": "stripe_refund_charge · Refund a charge to a customer · asks the user first"})
    );
    let (_, names) = search_json(&mut env, br#"{"query":"refund a charge","detail":"names"}"#);
    assert_eq!(names["tools"][0], json!({"name": "stripe_refund_charge"}));
    assert_eq!(
        names["metadata"]["returned"],
        names["tools"].as_array().unwrap().len()
    );
    let (status, bad) = search_json(&mut env, br#"{"query":"refund","detail":"everything"}"#);
    assert_eq!(status, 400, "{bad}");
    assert!(
        bad["error"].as_str().unwrap().contains("field `detail`"),
        "{bad}"
    );
}

#[test]
fn explain_true_explains_each_result_term_by_term_and_field_by_field() {
    let mut env = env_with("{}");
    let (status, v) = search_json(
        &mut env,
        br#"{"query":"refund a charge message","limit":3,"explain":true}"#,
    );
    assert_eq!(status, 200, "{v}");
    let tools = v["tools"].as_array().unwrap();
    let explained = v["explanations"].as_array().unwrap();
    assert_eq!(explained.len(), tools.len(), "{v}");
    for (tool, why) in tools.iter().zip(explained) {
        assert_eq!(tool["name"], why["name"], "{v}");
        assert_eq!(why["ranking"], "bm25", "{v}");
        // The terms' scores add up to the BM25 score, and the normalized score is the result's.
        let terms = why["bm25"]["terms"].as_array().unwrap();
        let sum: f64 = terms.iter().map(|t| t["score"].as_f64().unwrap()).sum();
        assert!(
            (sum - why["bm25"]["score"].as_f64().unwrap()).abs() < 1e-4,
            "{why}"
        );
        let best = why["bm25"]["best"].as_f64().unwrap();
        assert!(
            (why["score"].as_f64().unwrap() - sum / best).abs() < 1e-4,
            "{why}"
        );
        // Each term's field shares add up to its score.
        for t in terms {
            let fields = t["fields"].as_array().unwrap();
            let share: f64 = fields.iter().map(|f| f["score"].as_f64().unwrap()).sum();
            assert!((share - t["score"].as_f64().unwrap()).abs() < 1e-4, "{t}");
        }
    }
    // stripe_refund_charge: "refund" in name and description, "charg" likewise; in that order
    // (query order), each with the name field first; then the words its name holds as written,
    // scored over names alone.
    let first = &explained[0];
    assert_eq!(first["name"], "stripe_refund_charge", "{v}");
    let terms: Vec<&str> = first["bm25"]["terms"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["term"].as_str().unwrap())
        .collect();
    assert_eq!(terms, ["refund", "charg", "refund", "charge"], "{first}");
    let written: Vec<bool> = first["bm25"]["terms"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name_as_written"].as_f64() == Some(0.2))
        .collect();
    assert_eq!(written, [false, false, true, true], "{first}");
    assert_eq!(first["bm25"]["terms"][3]["fields"][0]["field"], "name");
    let fields: Vec<&str> = first["bm25"]["terms"][0]["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["field"].as_str().unwrap())
        .collect();
    assert_eq!(fields, ["name", "description"], "{first}");
    assert_eq!(first["score"], 1.0, "{first}");
    assert!(first.get("vector").is_none(), "{first}");
    // The second result matched only "message".
    assert_eq!(explained[1]["name"], "slack_post_message", "{v}");
    assert_eq!(explained[1]["bm25"]["terms"][0]["term"], "messag", "{v}");
    // Without a policy nothing is withheld.
    assert!(
        explained.iter().all(|e| e.get("statistics").is_none()),
        "{v}"
    );

    // Without it, no explanations; a non-boolean is refused with the field named.
    let (_, plain) = search_json(&mut env, br#"{"query":"refund","explain":false}"#);
    assert!(plain.get("explanations").is_none(), "{plain}");
    let (status, bad) = search_json(&mut env, br#"{"query":"refund","explain":"yes"}"#);
    assert_eq!(status, 400, "{bad}");
    assert!(
        bad["error"]
            .as_str()
            .unwrap()
            .contains("\"explain\" must be true or false"),
        "{bad}"
    );
}

// ---- What the endpoint may read (issue 30, class 3) and what an explanation tells (class 8) --

/// Support may use the stripe and slack tools and the triage prompts, admin everything, an
/// unidentified caller nothing.
const POLICY: &str = r#""authorization":{"identity":{"source":"header","header":"x-user-roles"},
    "rules":[{"claim":"roles","values":["support"],"tools":["stripe_*","slack_*"],"prompts":["triage_*"]},
             {"claim":"roles","values":["admin"]}],
    "default":"deny"}"#;

fn as_role(head: RequestHead, role: &str) -> RequestHead {
    RequestHead {
        caller: mcp_tool_search_core::Caller::from_header("roles", role),
        ..head
    }
}

/// Learns `body`, the answer to a `method` request, as it passes through a route of
/// `namespace` for the caller of `head`.
fn learn(env: &mut TestEnv, namespace: &str, head: RequestHead, method: &str, body: &[u8]) {
    let route = std::mem::replace(&mut env.namespace, namespace.to_string());
    let request = serde_json::to_vec(&json!({"jsonrpc":"2.0","id":1,"method":method})).unwrap();
    exchange(env, head, &request, ("200", "application/json", &[body]));
    env.namespace = route;
}

/// Another route's tools (behind that route's own access control).
fn admin_tools() -> Vec<u8> {
    list_of(
        "tools",
        &[
            (
                "admin_delete_user",
                "Delete a user account and all of its data",
            ),
            (
                "admin_export_payroll",
                "Export the payroll of every employee",
            ),
        ],
    )
}

/// A tool rule (`slack_*`) would let `slack_export_dms` through; the prompt rule does not.
fn prompts_list() -> Vec<u8> {
    list_of(
        "prompts",
        &[
            ("triage_ticket", "Classify a support ticket by urgency"),
            (
                "slack_export_dms",
                "Export every private message of a Slack workspace",
            ),
        ],
    )
}

/// `GET <path>` answered by the filter: (status, JSON body).
fn get_json(env: &mut TestEnv, head: RequestHead) -> (u32, Value) {
    let what = head.path.clone();
    let out = exchange(env, head, b"", ("200", "application/json", &[UPSTREAM]));
    let Outcome::Local { status, body, .. } = &out else {
        panic!("GET {what} was not answered by the filter: {out:?}")
    };
    (*status, serde_json::from_slice(body).unwrap())
}

/// `POST /mcp/search` as `head`'s caller: (status, JSON body).
fn search_as(env: &mut TestEnv, head: RequestHead, body: &Value) -> (u32, Value) {
    let out = exchange(
        env,
        RequestHead {
            path: "/mcp/search".into(),
            ..head
        },
        &serde_json::to_vec(body).unwrap(),
        ("200", "application/json", &[UPSTREAM]),
    );
    let Outcome::Local { status, body, .. } = &out else {
        panic!("POST /mcp/search was not answered by the filter: {out:?}")
    };
    (*status, serde_json::from_slice(body).unwrap())
}

fn health_catalogs(env: &mut TestEnv, head: RequestHead) -> serde_json::Map<String, Value> {
    let (status, v) = get_json(
        env,
        RequestHead {
            path: "/mcp/search/health".into(),
            ..head
        },
    );
    assert_eq!(status, 200, "{v}");
    v["catalogs"].as_object().unwrap().clone()
}

/// The 403 of a namespace this route does not search, naming what it does search.
fn assert_not_searchable(status: u32, v: &Value, namespace: &str, searchable: &str) {
    assert_eq!(status, 403, "{namespace}: {v}");
    let error = v["error"].as_str().unwrap();
    assert!(
        error.starts_with(&format!(
            "namespace {namespace:?} is not searchable from this route"
        )),
        "{error}"
    );
    assert!(
        error.ends_with(&format!("; searchable here: {searchable}")),
        "{error}"
    );
}

#[test]
fn an_internal_catalog_key_is_never_a_namespace() {
    let mut env = TestEnv::new(&format!("{{{POLICY}}}"));
    let admin = || as_role(post("/mcp"), "admin");
    learn(&mut env, "upstream", admin(), "tools/list", &catalog());
    learn(
        &mut env,
        "upstream",
        admin(),
        "prompts/list",
        &prompts_list(),
    );
    let support = || as_role(post("/mcp/search"), "support");
    // The attack: the prompts' catalog searched as tools is judged by the tool rules, which
    // let `slack_export_dms` through.
    let keys = [
        Entry::Prompt.catalog_key("upstream"),
        Entry::Resource.catalog_key("upstream"),
        Entry::ResourceTemplate.catalog_key("upstream"),
        mcp_tool_search_core::keys::private_key("upstream", "0123456789abcdef"),
    ];
    for key in &keys {
        for body in [
            json!({"query": "export every private message", "namespace": key}),
            json!({"query": "export every private message", "namespace": key, "type": "prompt"}),
        ] {
            let (status, v) = search_as(&mut env, support(), &body);
            assert_not_searchable(status, &v, key, "\"upstream\" (this route's namespace)");
            assert!(!v.to_string().contains("slack_export_dms"), "{v}");
        }
        let escaped = key.replace('#', "%23").replace('@', "%40");
        let (status, v) = get_json(
            &mut env,
            as_role(
                get(&format!(
                    "/mcp/search/groups?query=export+messages&namespace={escaped}"
                )),
                "support",
            ),
        );
        assert_not_searchable(status, &v, key, "\"upstream\" (this route's namespace)");
    }
    assert_eq!(env.count(Event::SearchRejected), 3 * keys.len());
    // The prompt is found where the prompt rules judge it: not at all for support.
    let (status, v) = search_as(
        &mut env,
        support(),
        &json!({"query": "export every private message", "type": "prompt"}),
    );
    assert_eq!(status, 200, "{v}");
    assert!(!v.to_string().contains("slack_export_dms"), "{v}");
    assert_eq!(sent_upstream(), None);
}

#[test]
fn another_callers_private_catalog_is_neither_listed_nor_searchable() {
    let mut env = env_with("{}");
    let carol = RequestHead {
        forwarded: vec![("authorization".into(), "Bearer carol".into())],
        ..post("/mcp")
    };
    let private = br#"{"jsonrpc":"2.0","id":1,"result":{"cacheScope":"private","tools":[{"name":"carol_refund_tool","description":"refund a charge for carol","inputSchema":{"type":"object"}}]}}"#;
    learn(&mut env, "upstream", carol.clone(), "tools/list", private);
    let key = mcp_tool_search_core::keys::private_key(
        "upstream",
        &mcp_tool_search_core::credential_of(&carol.forwarded),
    );
    // Health used to name every credential's catalog, the key to read it with included.
    let catalogs = health_catalogs(&mut env, get("/"));
    assert_eq!(
        catalogs.keys().collect::<Vec<_>>(),
        ["upstream"],
        "{catalogs:?}"
    );
    let (status, v) = search_as(
        &mut env,
        post("/"),
        &json!({"query": "refund a charge", "namespace": key}),
    );
    assert_not_searchable(status, &v, &key, "\"upstream\" (this route's namespace)");
    assert!(!v.to_string().contains("carol_refund_tool"), "{v}");
}

#[test]
fn another_routes_namespace_is_searchable_only_when_listed() {
    let query = json!({"query": "delete a user account", "namespace": "admin"});
    let groups = "/mcp/search/groups?query=delete+a+user+account&namespace=admin";

    // Unlisted: the other route's catalog (behind its own RBAC) is not this route's to search.
    let mut env = env_with("{}");
    learn(
        &mut env,
        "admin",
        post("/mcp"),
        "tools/list",
        &admin_tools(),
    );
    let only_own = "\"upstream\" (this route's namespace)";
    let (status, v) = search_as(&mut env, post("/"), &query);
    assert_not_searchable(status, &v, "admin", only_own);
    assert!(!v.to_string().contains("admin_delete_user"), "{v}");
    let (status, v) = get_json(&mut env, get(groups));
    assert_not_searchable(status, &v, "admin", only_own);
    assert_eq!(env.count(Event::SearchRejected), 2);
    // The route's own namespace, named, is searched as ever.
    let (status, v) = search_as(
        &mut env,
        post("/"),
        &json!({"query": "refund a charge", "namespace": "upstream"}),
    );
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["tools"][0]["name"], "stripe_refund_charge", "{v}");

    // Listed: searched; an unlisted one still refused, naming both; a listed one with no
    // catalog is unknown, as before.
    let mut env = env_with(r#"{"search":{"http_namespaces":["billing","admin"]}}"#);
    learn(
        &mut env,
        "admin",
        post("/mcp"),
        "tools/list",
        &admin_tools(),
    );
    let (status, v) = search_as(&mut env, post("/"), &query);
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["tools"][0]["name"], "admin_delete_user", "{v}");
    let (status, v) = get_json(&mut env, get(groups));
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["groups"][0]["group"], "admin", "{v}");
    let (status, v) = search_as(
        &mut env,
        post("/"),
        &json!({"query": "delete a user account", "namespace": "hr"}),
    );
    assert_not_searchable(
        status,
        &v,
        "hr",
        "\"upstream\" (this route's namespace) and \"admin\", \"billing\" (search.http_namespaces)",
    );
    let (status, v) = search_as(
        &mut env,
        post("/"),
        &json!({"query": "delete a user account", "namespace": "billing"}),
    );
    assert_eq!(status, 404, "{v}");
    assert_eq!(
        v["error"], "no tools are known for namespace \"billing\"",
        "{v}"
    );
    assert_eq!(env.count(Event::SearchRejected), 1);
}

#[test]
fn health_lists_the_routes_namespace_and_the_listed_ones_only() {
    for (config, want) in [
        ("{}", vec!["upstream"]),
        (
            r#"{"search":{"http_namespaces":["admin","billing"]}}"#,
            vec!["admin", "upstream"],
        ),
    ] {
        let mut env = env_with(config);
        learn(
            &mut env,
            "admin",
            post("/mcp"),
            "tools/list",
            &admin_tools(),
        );
        learn(
            &mut env,
            "secret",
            post("/mcp"),
            "tools/list",
            &admin_tools(),
        );
        let catalogs = health_catalogs(&mut env, get("/"));
        // `billing` is listed but has no catalog: nothing to report.
        assert_eq!(catalogs.keys().collect::<Vec<_>>(), want, "{config}");
        assert_eq!(catalogs["upstream"]["tools"], 3, "{config}");
    }
}

/// A worker of `config` that learned the catalog's tools and prompts from `lister`'s lists.
fn with_tools_and_prompts(config: &str, lister: impl Fn() -> RequestHead) -> TestEnv {
    let mut env = TestEnv::new(config);
    learn(&mut env, "upstream", lister(), "tools/list", &catalog());
    learn(
        &mut env,
        "upstream",
        lister(),
        "prompts/list",
        &prompts_list(),
    );
    env
}

#[test]
fn health_under_a_policy_counts_what_an_unidentified_caller_may_use() {
    let admin = || as_role(post("/mcp"), "admin");
    let mut env = with_tools_and_prompts(&format!("{{{POLICY}}}"), admin);
    let catalogs = health_catalogs(&mut env, get("/"));
    assert_eq!(
        catalogs["upstream"],
        json!({"tools": 0, "embedded": 0, "source": "learned", "age_ms": 0, "stale": false, "prompts": 0}),
        "{catalogs:?}"
    );
    // Without a policy, everything is every caller's.
    let mut env = with_tools_and_prompts("{}", || post("/mcp"));
    let catalogs = health_catalogs(&mut env, get("/"));
    assert_eq!(catalogs["upstream"]["tools"], 3, "{catalogs:?}");
    assert_eq!(catalogs["upstream"]["prompts"], 2, "{catalogs:?}");
}

#[test]
fn health_under_a_policy_counts_what_the_caller_may_use() {
    let admin = || as_role(post("/mcp"), "admin");
    let mut env = with_tools_and_prompts(&format!("{{{POLICY}}}"), admin);
    for (role, tools, prompts) in [("support", 2, 1), ("admin", 3, 2), ("billing", 0, 0)] {
        let catalogs = health_catalogs(&mut env, as_role(get("/"), role));
        assert_eq!(catalogs["upstream"]["tools"], tools, "{role}: {catalogs:?}");
        assert_eq!(
            catalogs["upstream"]["prompts"], prompts,
            "{role}: {catalogs:?}"
        );
    }
}

/// Every object key anywhere in `v`.
fn keys_of(v: &Value, into: &mut Vec<String>) {
    match v {
        Value::Object(map) => {
            for (k, v) in map {
                into.push(k.clone());
                keys_of(v, into);
            }
        }
        Value::Array(items) => items.iter().for_each(|v| keys_of(v, into)),
        _ => {}
    }
}

#[test]
fn explain_withholds_catalog_statistics_from_a_caller_the_policy_restricts() {
    // The same visible catalog, once with tools the support caller may not see, rich in the
    // query's word: idf, document counts and average lengths would differ between the two.
    let hidden = [
        ("hr_refund_expense", "Refund an employee expense report"),
        (
            "admin_refund_override",
            "Override the refund limit and refund anything",
        ),
        ("admin_refund_audit", "Audit every refund"),
    ];
    let explained = |role: &str, with_hidden: bool| -> Value {
        let mut tools = vec![
            ("stripe_refund_charge", "Refund a charge to a customer"),
            ("github_get_issue", "Get an issue by number"),
            ("slack_post_message", "Post a message to a channel"),
        ];
        if with_hidden {
            tools.extend(hidden);
        }
        let mut env = TestEnv::new(&format!("{{{POLICY}}}"));
        learn(
            &mut env,
            "upstream",
            as_role(post("/mcp"), "admin"),
            "tools/list",
            &list_of("tools", &tools),
        );
        let (status, v) = search_as(
            &mut env,
            as_role(post("/"), role),
            &json!({"query": "refund", "explain": true}),
        );
        assert_eq!(status, 200, "{v}");
        assert_eq!(
            v["explanations"].as_array().unwrap().len(),
            v["tools"].as_array().unwrap().len(),
            "{v}"
        );
        v["explanations"][0].clone()
    };
    let few = explained("support", false);
    let many = explained("support", true);
    assert_eq!(
        few, many,
        "the tools support cannot see show in its explanation"
    );
    assert_eq!(few["statistics"], "withheld", "{few}");
    let mut keys = Vec::new();
    keys_of(&few, &mut keys);
    for withheld in ["idf", "avg_length", "best", "normalized_tf", "feedback"] {
        assert!(!keys.iter().any(|k| k == withheld), "{withheld}: {few}");
    }
    // What is the result's own stays: its score, and per field the query term's frequency and
    // the field's length.
    assert_eq!(few["name"], "stripe_refund_charge", "{few}");
    assert_eq!(few["score"], 1.0, "{few}");
    assert!(few["bm25"].get("score").is_none(), "{few}");
    let term = &few["bm25"]["terms"][0];
    assert_eq!(term["term"], "refund", "{few}");
    assert!(
        term.get("score").is_none() && term.get("tf").is_none(),
        "{few}"
    );
    let name = &term["fields"][0];
    assert_eq!(name["field"], "name", "{few}");
    assert_eq!(name["tf"], 1.0, "{few}");
    assert_eq!(name["length"], 3.0, "{few}");
    assert!(name.get("score").is_none(), "{few}");

    // A caller the policy restricts in nothing gets the whole explanation.
    let full = explained("admin", true);
    assert!(full.get("statistics").is_none(), "{full}");
    assert!(
        full["bm25"]["terms"][0]["idf"].as_f64().unwrap() > 0.0,
        "{full}"
    );
    assert!(
        full["bm25"]["terms"][0]["fields"][0]["avg_length"].is_number(),
        "{full}"
    );
}
