use super::*;

#[test]
fn empty_means_defaults() {
    let c = Config::parse("").unwrap();
    assert_eq!(c, Config::default());
    assert_eq!(Config::parse("{}").unwrap(), Config::default());
    assert_eq!(c.mcp_paths, vec!["/mcp"]);
    assert_eq!(c.search.tool_name, "tool_search");
    assert_eq!(c.search.max_allowable_results, 5);
    assert_eq!(c.max_body_bytes, 8 * 1024 * 1024);
    assert_eq!(c.default_disclosure_mode, DisclosureMode::Progressive);
}

#[test]
fn full_config() {
    let c = Config::parse(
        r#"{"mcp_paths":["/mcp","/v2/mcp"],"default_disclosure_mode":"EAGER",
            "eager_patterns":["github_get_*"],
            "tools":[{"name":"a","disclosure_mode":"PROGRESSIVE"},
                     {"name":"a","namespace":"ns2","disclosure_mode":"EAGER"}],
            "search":{"tool_name":"find_tools","max_allowable_results":10,
                      "weights":{"name":3,"description":1,"input_schema":0.5}},
            "max_body_bytes":1048576,"hold_request_headers":true}"#,
    )
    .unwrap();
    assert!(c.is_mcp_path(&paths::candidates("/v2/mcp")));
    assert!(c.is_mcp_path(&paths::candidates("/v2/mcp/")));
    assert!(
        c.is_mcp_path(&paths::candidates("/v2/mcp/x")),
        "a prefix router serves it"
    );
    assert!(c.is_mcp_path(&paths::candidates("/v2/mcp/%2e%2e")));
    assert!(c.is_mcp_path(&paths::candidates("/x%3f/../v2/mcp")));
    assert!(!c.is_mcp_path(&paths::candidates("/v2/mcpx")));
    assert!(!c.is_mcp_path(&paths::candidates("/v2")));
    assert_eq!(c.search.tool_name, "find_tools");
    assert!(c.hold_request_headers);
    assert_eq!(c.search.weights.input_schema, 0.5);
    assert_eq!(c.disclosure_mode("ns1", "a"), DisclosureMode::Progressive);
    assert_eq!(c.disclosure_mode("ns2", "a"), DisclosureMode::Eager);
    assert_eq!(c.disclosure_mode("ns1", "b"), DisclosureMode::Eager);
}

#[test]
fn search_modes_groups_and_embeddings() {
    let c = Config::parse(
        r#"{"mode":"auto","search_threshold":10,"group_separator":"_",
            "tools":[{"name":"x_tool","group":"special","embedding":[3,4]}],
            "search":{"result_format":"summary","score_threshold":0.2,"http_path":"/find",
                      "embeddings":{"cluster":"emb","model_id":"m","dimensions":2,"timeout":"250ms",
                                    "headers":{"Authorization":"Bearer k"}}}}"#,
    )
    .unwrap();
    assert_eq!(c.mode, Mode::Auto);
    assert_eq!(c.search_threshold, 10);
    assert_eq!(c.search.result_format, ResultFormat::Summary);
    assert_eq!(
        c.search.ranking,
        Ranking::Hybrid,
        "embeddings make hybrid the default"
    );
    assert_eq!(c.search.http_path.as_deref(), Some("/find"));
    let e = c.search.embeddings.as_ref().unwrap();
    assert_eq!(
        (
            e.timeout_ms,
            e.authority.as_str(),
            e.path.as_str(),
            e.max_batch_size
        ),
        (250, "emb", "/v1/embeddings", 64)
    );
    assert_eq!(
        e.headers,
        vec![("authorization".to_string(), "Bearer k".to_string())]
    );
    let v = c.tools[0].embedding.as_ref().unwrap();
    assert!((v[0] - 0.6).abs() < 1e-6);
    assert_eq!(c.group_of("ns", "x_tool"), "special");
    assert_eq!(c.group_of("ns", "github_get_issue"), "github");
    assert_eq!(Config::default().group_of("ns", "github_get_issue"), "ns");
    assert_eq!(
        Config::parse(r#"{"search":{"http_path":false}}"#)
            .unwrap()
            .search
            .http_path,
        None
    );
}

/// `search.min_cosine`: a cosine, or `false` for no floor (README "Configuration"); the
/// default and range are checked against the README by tests/readme_configuration.rs.
#[test]
fn min_cosine_is_a_cosine_or_false() {
    let parsed = |v: &str| Config::parse(&format!(r#"{{"search":{{"min_cosine":{v}}}}}"#));
    assert_eq!(parsed("0.4").unwrap().search.min_cosine, Some(0.4));
    assert_eq!(parsed("-1").unwrap().search.min_cosine, Some(-1.0));
    assert_eq!(parsed("false").unwrap().search.min_cosine, None);
    assert_eq!(Config::default().search.min_cosine, Some(0.25));
    for bad in ["true", "\"0.3\"", "1.5"] {
        let e = parsed(bad).unwrap_err().to_string();
        assert!(
            e.contains("`search.min_cosine`") && e.contains("or false"),
            "{e}"
        );
    }
}

/// `tools[].name` is an upstream's name as it spells it, however long and whatever its
/// characters; only the injected search tool's own name is held to the conservative charset.
#[test]
fn a_tool_setting_names_any_upstream_tool() {
    let long = format!("billing__{}", "a".repeat(120));
    for name in [
        long.as_str(),
        "files/read",
        "calendar:list events",
        "ünïcode",
    ] {
        let c = Config::parse(
            &serde_json::json!({"tools": [{"name": name, "disclosure_mode": "EAGER"}]}).to_string(),
        )
        .unwrap();
        assert_eq!(
            c.disclosure_mode("ns", name),
            DisclosureMode::Eager,
            "{name}"
        );
    }
    assert!(error(r#"{"tools":[{"name":""}]}"#).contains("`tools[0].name` is \"\""));
    assert!(error(r#"{"search":{"tool_name":"files/read"}}"#).contains("`search.tool_name`"));
}

/// `disclosure_defaults`: after `tools` and `eager_patterns`, the first entry whose namespaces
/// and servers (the name's prefix before `group_separator`) match decides; else the default.
#[test]
fn disclosure_defaults_per_namespace_and_server() {
    let c = Config::parse(
        r#"{"group_separator":"__","eager_patterns":["stripe__get_*"],
            "tools":[{"name":"slack__delete_channel","disclosure_mode":"PROGRESSIVE"}],
            "disclosure_defaults":[
              {"servers":["slack","zen*"],"disclosure_mode":"EAGER"},
              {"namespaces":["internal"],"disclosure_mode":"EAGER"},
              {"namespaces":["internal"],"servers":["stripe"],"disclosure_mode":"PROGRESSIVE"}]}"#,
    )
    .unwrap();
    let mode = |ns: &str, name: &str| c.disclosure_mode(ns, name);
    assert_eq!(mode("saas", "slack__post_message"), DisclosureMode::Eager);
    assert_eq!(mode("saas", "zendesk__get_ticket"), DisclosureMode::Eager);
    assert_eq!(
        mode("saas", "slack__delete_channel"),
        DisclosureMode::Progressive,
        "tools first"
    );
    assert_eq!(
        mode("saas", "stripe__get_charge"),
        DisclosureMode::Eager,
        "globs next"
    );
    assert_eq!(
        mode("saas", "stripe__refund"),
        DisclosureMode::Progressive,
        "the default"
    );
    assert_eq!(
        mode("internal", "stripe__refund"),
        DisclosureMode::Eager,
        "the first match wins"
    );
    assert_eq!(mode("internal", "no_server"), DisclosureMode::Eager);
    assert_eq!(mode("saas", "no_server"), DisclosureMode::Progressive);

    assert!(
        error(r#"{"disclosure_defaults":[{"servers":["slack"],"disclosure_mode":"EAGER"}]}"#)
            .contains("`disclosure_defaults[0].servers`")
    );
    assert!(error(r#"{"disclosure_defaults":[{"namespaces":["a"]}]}"#)
        .contains("`disclosure_defaults[0].disclosure_mode` is missing"));
    // An empty `servers` names no server: an entry that could never apply is refused, as a
    // policy rule's is.
    assert!(error(
        r#"{"group_separator":"__","disclosure_defaults":[{"servers":[],"disclosure_mode":"EAGER"}]}"#
    )
    .contains("`disclosure_defaults[0].servers` is []; expected a non-empty list"));
    assert!(
        error(r#"{"disclosure_defaults":[{"disclosure_mode":"LAZY"}]}"#)
            .contains("`disclosure_defaults[0].disclosure_mode` is \"LAZY\"")
    );
    assert!(
        error(r#"{"disclosure_defaults":{"disclosure_mode":"EAGER"}}"#)
            .contains("`disclosure_defaults` is")
    );
}

#[test]
fn disclosure_precedence() {
    let c = Config::parse(
        r#"{"eager_patterns":["github_*"],
            "tools":[{"name":"github_delete_repo","disclosure_mode":"PROGRESSIVE"}]}"#,
    )
    .unwrap();
    assert_eq!(
        c.disclosure_mode("x", "github_get_issue"),
        DisclosureMode::Eager
    );
    assert_eq!(
        c.disclosure_mode("x", "github_delete_repo"),
        DisclosureMode::Progressive
    );
    assert_eq!(
        c.disclosure_mode("x", "slack_post"),
        DisclosureMode::Progressive
    );
}

fn error(text: &str) -> String {
    Config::parse(text).unwrap_err().to_string()
}

#[test]
fn http_namespaces_are_names_never_internal_keys() {
    assert!(Config::default().search.http_namespaces.is_empty());
    let c =
        Config::parse(r#"{"search":{"http_namespaces":["team-b","team-a","team-b"]}}"#).unwrap();
    assert_eq!(c.search.http_namespaces, ["team-a", "team-b"]);
    // The catalog keys themselves: `store::keys` tests them.
    for mark in ['#', '@'] {
        let e = error(&format!(
            r#"{{"search":{{"http_namespaces":["team-b","team-a{mark}x"]}}}}"#
        ));
        assert!(
            e.starts_with(&format!(
                "plugin configuration field `search.http_namespaces[1]` is \"team-a{mark}x\"; expected a namespace name without '#' or '@'"
            )),
            "{e}"
        );
    }
    assert!(error(r#"{"search":{"http_namespaces":"team-a"}}"#)
        .contains("`search.http_namespaces` is \"team-a\"; expected a list of strings"));
    assert!(error(r#"{"search":{"http_namespaces":[""]}}"#)
        .contains("`search.http_namespaces[0]` is \"\"; expected a non-empty string"));
}

#[test]
fn insights_turn_off_and_refuse_what_they_do_not_know() {
    assert!(Config::parse("{}").unwrap().search.insights.enabled);
    let off = Config::parse(r#"{"search":{"insights":{"enabled":false}}}"#).unwrap();
    assert!(!off.search.insights.enabled);
    assert_eq!(
        error(r#"{"search":{"insights":{"enabled":"no"}}}"#),
        "plugin configuration field `search.insights.enabled` is \"no\"; expected true or false"
    );
    assert!(error(r#"{"search":{"insights":{"record":true}}}"#)
        .contains("`search.insights.record` is not known; allowed here: enabled"));
}

#[test]
fn errors_name_field_value_and_allowed() {
    assert_eq!(
        error(r#"{"default_disclosure_mode":"LAZY"}"#),
        "plugin configuration field `default_disclosure_mode` is \"LAZY\"; expected \"PROGRESSIVE\" or \"EAGER\""
    );
    assert_eq!(
        error(r#"{"search":{"max_allowable_results":0}}"#),
        "plugin configuration field `search.max_allowable_results` is 0; expected an integer from 1 to 100"
    );
    assert_eq!(
        error(r#"{"search":{"max_results":3}}"#),
        "plugin configuration field `search.max_results` is not known; allowed here: call_timeout, embeddings, http_namespaces, http_path, hybrid_vector_weight, insights, list_query, max_allowable_results, max_description_chars, max_description_tokens, max_result_tokens, min_cosine, ranking, require_all_vectors, result_format, routing, score_threshold, strategy, tool_name, weights"
    );
    assert_eq!(
        error(r#"{"tools":[{"disclosure_mode":"EAGER"}]}"#),
        "plugin configuration field `tools[0].name` is missing; expected the tool's name"
    );
    assert!(error(r#"{"tools":[{"name":"x","embedding":[1,2]}]}"#)
        .contains("needs a `search.embeddings` block"));
    let emb = r#""search":{"embeddings":{"cluster":"e","model_id":"m","dimensions":3}}"#;
    assert!(error(&format!(
        r#"{{{emb},"tools":[{{"name":"x","embedding":[1,2]}}]}}"#
    ))
    .contains("is \"a list of 2 numbers\"; expected a list of 3 finite numbers"));
    assert!(error(&format!(
        r#"{{{emb},"tools":[{{"name":"x","embedding":[0,0,0]}}]}}"#
    ))
    .contains("non-zero"));
    assert!(
        error(r#"{"search":{"embeddings":{"cluster":"e","model_id":"m"}}}"#)
            .contains("`search.embeddings.dimensions` is missing")
    );
    assert!(error(r#"{"search":{"embeddings":{"cluster":"e","model_id":"m","dimensions":3,"timeout":"5 minutes"}}}"#).contains("`search.embeddings.timeout`"));
    assert!(
        error(r#"{"search":{"ranking":"vector"}}"#).contains("need a `search.embeddings` block")
    );
    assert!(error(r#"{"mode":"off"}"#).contains("`mode` is \"off\""));
    assert!(error(r#"{"search":{"result_format":"table"}}"#).contains("`search.result_format`"));
    assert!(error(r#"{"search":{"score_threshold":2}}"#).contains("`search.score_threshold` is 2"));
    assert!(error(r#"{"mcp_paths":["mcp"]}"#).contains("`mcp_paths[0]` is \"mcp\""));
    assert!(error(r#"{"mcp_paths":[]}"#).contains("non-empty list"));
    assert!(error(r#"{"search":{"tool_name":"has space"}}"#).contains("`search.tool_name`"));
    assert!(error(r#"{"max_body_bytes":-1}"#).contains("`max_body_bytes` is -1"));
    assert!(
        error(r#"{"search":{"weights":{"name":0,"description":0,"input_schema":0}}}"#)
            .contains("at least one weight above 0")
    );
    assert!(error(r#"{"tools":[{"name":"a","disclosure_mode":"EAGER"},{"name":"a","disclosure_mode":"EAGER"}]}"#)
        .contains("repeats"));
    assert!(error("{").starts_with("plugin configuration is not valid JSON"));
    assert!(error("[]").contains("`(root)` is []; expected a JSON object"));
    assert!(error(r#"{"bogus":1}"#).contains("`bogus` is not known"));
    assert!(error(r#"{"hold_request_headers":"yes"}"#).contains("expected true or false"));
}
