use super::*;

fn args(json: &str) -> Result<SearchArgs, String> {
    let raw: Box<RawValue> = serde_json::from_str(json).unwrap();
    parse_search(Some(&raw), &Config::default(), Asker::Tool)
}

fn tool(def: &str) -> Tool {
    let raw: Box<RawValue> = serde_json::from_str(def).unwrap();
    Tool::from_raw(&raw).unwrap()
}

#[test]
fn search_definition_names_hidden_tools_and_groups() {
    let config = Config::default();
    let names: Vec<String> = (0..300).map(|i| format!("t{i:03}")).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let defs = definitions(&config, &refs, &["only".to_string()], true, false);
    assert_eq!(defs.len(), 1, "one group: no list_tool_groups");
    let def: Value = serde_json::from_str(&defs[0]).unwrap();
    assert_eq!(def["name"], "tool_search");
    assert_eq!(def["inputSchema"]["required"], serde_json::json!(["query"]));
    assert_eq!(def["inputSchema"]["properties"]["limit"]["maximum"], 5);
    assert!(def["inputSchema"]["properties"].get("group").is_none());
    assert_eq!(def["annotations"]["readOnlyHint"], true);
    assert_eq!(def["annotations"]["openWorldHint"], false);
    assert!(def.get("outputSchema").is_none());
    let d = def["description"].as_str().unwrap();
    assert!(d.contains("t000, t001") && d.contains("t255") && !d.contains("t256"));
    assert!(d.contains("(and 44 more)"));
    assert!(d.contains("do. 300 more tools"));
    let partial: Value =
        serde_json::from_str(&definitions(&config, &refs, &[], false, false)[0]).unwrap();
    assert!(partial["description"]
        .as_str()
        .unwrap()
        .contains("do. At least 300 more tools"));
    let groups = vec!["github".to_string(), "slack".to_string()];
    let summary = Config::parse(r#"{"search":{"result_format":"summary"}}"#).unwrap();
    let defs = definitions(&summary, &refs, &groups, false, false);
    let names: Vec<String> = defs
        .iter()
        .map(|d| {
            serde_json::from_str::<Value>(d).unwrap()["name"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(names, ["tool_search", LIST_GROUPS, DESCRIBE, CALL]);
    let search: Value = serde_json::from_str(&defs[0]).unwrap();
    assert_eq!(
        search["inputSchema"]["properties"]["group"]["enum"],
        serde_json::json!(["github", "slack"])
    );
    assert!(search["description"].as_str().unwrap().contains(
        " The tools fall into 2 groups: github, slack; pass one as group to search only it. \
         Tools you can find include: t000,"
    ));
    assert!(!d.contains("groups:"), "one group is not worth naming");
    let many: Vec<String> = (0..70).map(|i| format!("server{i:02}")).collect();
    let wide: Value =
        serde_json::from_str(&definitions(&config, &refs, &many, true, false)[0]).unwrap();
    let d = wide["description"].as_str().unwrap();
    assert!(
        d.contains("70 groups: server00, server01,") && d.contains("server63 (and 6 more);"),
        "{d}"
    );
    assert!(!d.contains("server64"));
    for d in &defs {
        let v: Value = serde_json::from_str(d).unwrap();
        assert_eq!(v["annotations"]["readOnlyHint"], v["name"] != CALL);
        assert_eq!(v["annotations"]["openWorldHint"], false);
    }
}

#[test]
fn argument_rules() {
    let a = args(r#"{"query":" refund ","limit":3,"offset":5,"group":"stripe"}"#).unwrap();
    assert_eq!(
        a.query,
        Query {
            text: "refund".into(),
            limit: 3,
            offset: 5,
            group: Some("stripe".into())
        }
    );
    assert_eq!(
        args(r#"{"query":"x","limit":99}"#).unwrap().query.limit,
        5,
        "clamped"
    );
    assert_eq!(
        args(r#"{"query":"x","namespace":"a"}"#)
            .unwrap()
            .namespace
            .as_deref(),
        Some("a")
    );
    assert!(args(r#"{}"#)
        .unwrap_err()
        .contains("Missing required argument `query`"));
    assert!(args(r#"{"query":"  "}"#).unwrap_err().contains("empty"));
    assert!(args(r#"{"query":5}"#)
        .unwrap_err()
        .contains("must be a string"));
    assert!(args(&format!(r#"{{"query":"{}"}}"#, "a".repeat(501)))
        .unwrap_err()
        .contains("501 characters"));
    assert!(args(&format!(r#"{{"query":"{}"}}"#, "é".repeat(500))).is_ok());
    assert!(args(r#"{"query":"x","limit":2.5}"#)
        .unwrap_err()
        .contains("integer"));
    assert!(args(r#"{"query":"x","limit":"3"}"#)
        .unwrap_err()
        .contains("integer"));
    assert!(args(r#"{"query":"x","limit":0}"#)
        .unwrap_err()
        .contains("from 1 to 5"));
    assert!(args(r#"{"query":"x","offset":-1}"#)
        .unwrap_err()
        .contains("at least 0"));
    assert!(args(r#"[1]"#).unwrap_err().contains("must be an object"));
    assert!(parse_search(None, &Config::default(), Asker::Tool).is_err());
}

#[test]
fn describe_and_call_arguments() {
    let raw = |s: &str| -> Box<RawValue> { serde_json::from_str(s).unwrap() };
    assert_eq!(
        parse_describe(Some(&raw(r#"{"names":["a","b"]}"#))).unwrap(),
        ["a", "b"]
    );
    assert!(parse_describe(Some(&raw(r#"{"names":[]}"#))).is_err());
    assert!(parse_describe(Some(&raw(r#"{"names":[1]}"#))).is_err());
    let (name, a) = parse_call(Some(&raw(r#"{"name":"x","arguments":{"k": 1}}"#))).unwrap();
    assert_eq!((name.as_str(), a.unwrap().get()), ("x", r#"{"k": 1}"#));
    assert!(parse_call(Some(&raw(r#"{"arguments":{}}"#)))
        .unwrap_err()
        .contains("`name`"));
    assert!(parse_call(Some(&raw(r#"{"name":"x","arguments":[1]}"#)))
        .unwrap_err()
        .contains("object"));
}

#[test]
fn error_results_say_is_error() {
    let e: Value = serde_json::from_str(&error_result("bad \"q\"", false)).unwrap();
    assert_eq!(e["isError"], true);
    assert_eq!(e["content"][0]["text"], "bad \"q\"");
}

#[test]
fn groups_and_describe_results() {
    let g: Value = serde_json::from_str(&groups_result(
        &[("github".into(), 3), ("slack".into(), 1)],
        false,
    ))
    .unwrap();
    assert_eq!(
        g["content"][0]["text"],
        r#"[{"group":"github","tools":3},{"group":"slack","tools":1}]"#
    );
    let t = tool(r#"{"name":"a"}"#);
    let d: Value = serde_json::from_str(&describe_result(&[&t], &["zz".into()], false)).unwrap();
    assert_eq!(d["content"][0]["text"], r#"[{"name":"a"}]"#);
    assert_eq!(d["content"][1]["text"], "Not available: zz.");
    let none: Value = serde_json::from_str(&describe_result(&[], &["zz".into()], false)).unwrap();
    assert_eq!(none["isError"], true);
}

#[test]
fn the_search_tool_declares_its_output_schema_where_the_protocol_has_one() {
    let config = Config::default();
    let def: Value =
        serde_json::from_str(&definitions(&config, &["a"], &[], true, true)[0]).unwrap();
    let schema = &def["outputSchema"];
    assert_eq!(schema["type"], "object");
    assert_eq!(
        schema["required"],
        serde_json::json!(["results", "matches", "offset", "more"])
    );
    let props = &def["inputSchema"]["properties"];
    assert_eq!(
        props["detail"]["enum"],
        serde_json::json!(["full", "compact", "names"])
    );
    assert_eq!(props["max_tokens"]["maximum"], 10_000);
    assert_eq!(props["max_tokens"]["minimum"], 500);
    let old: Value =
        serde_json::from_str(&definitions(&config, &["a"], &[], true, false)[0]).unwrap();
    assert!(old.get("outputSchema").is_none());
}

#[test]
fn the_search_tools_description_stays_within_its_budget() {
    let names: Vec<String> = (0..300)
        .map(|i| format!("a_rather_long_tool_name_{i:03}"))
        .collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    for tokens in [250, 300, 1000, 2000] {
        let config = Config::parse(&format!(
            r#"{{"search":{{"max_description_tokens":{tokens}}}}}"#
        ))
        .unwrap();
        let def: Value =
            serde_json::from_str(&definitions(&config, &refs, &[], true, false)[0]).unwrap();
        let d = def["description"].as_str().unwrap();
        assert!(d.len() <= tokens * 4, "{tokens}: {} bytes", d.len());
        let shown = refs.iter().filter(|n| d.contains(*n)).count();
        assert!(d.ends_with(&format!("(and {} more).", 300 - shown)), "{d}");
        assert!(shown > 0, "{tokens}: no name fits");
    }
}

#[test]
fn detail_and_max_tokens_are_read_and_clamped() {
    let a = args(r#"{"query":"x","detail":"names","max_tokens":600}"#).unwrap();
    assert_eq!((a.detail, a.max_tokens), (Detail::Names, 600));
    assert_eq!(args(r#"{"query":"x"}"#).unwrap().detail, Detail::Full);
    assert_eq!(
        args(r#"{"query":"x","max_tokens":1}"#).unwrap().max_tokens,
        500
    );
    assert_eq!(
        args(r#"{"query":"x","max_tokens":1e9}"#)
            .unwrap()
            .max_tokens,
        10_000
    );
    assert!(args(r#"{"query":"x","detail":"all"}"#)
        .unwrap_err()
        .contains("`detail`"));
    assert!(args(r#"{"query":"x","max_tokens":"lots"}"#)
        .unwrap_err()
        .contains("`max_tokens`"));
    let summary = Config::parse(r#"{"search":{"result_format":"summary"}}"#).unwrap();
    let raw: Box<RawValue> = serde_json::from_str(r#"{"query":"x"}"#).unwrap();
    let a = parse_search(Some(&raw), &summary, Asker::Tool).unwrap();
    assert_eq!(a.detail, Detail::Compact);
}
