use super::*;
use crate::config::Ranking;
use crate::index::catalog::Tool;
use serde_json::value::RawValue;

fn search_result(config: &Config, query: &Query, ranked: &Ranked<'_>, shape: Shape) -> String {
    search_answer(config, query, ranked, shape, None).json
}

fn tool(def: &str) -> Tool {
    let raw: Box<RawValue> = serde_json::from_str(def).unwrap();
    Tool::from_raw(&raw).unwrap()
}

fn ranked<'a>(tools: &'a [Tool], matches: usize) -> Ranked<'a> {
    Ranked {
        found: tools
            .iter()
            .zip(0..)
            .map(|(tool, doc)| Found {
                tool,
                score: 1.0,
                doc,
            })
            .collect(),
        matches,
        candidates: 300,
        strategy: Ranking::Bm25,
        embedded: None,
        fallback: Some(crate::rank::search::Fallback::new(
            crate::rank::search::FallbackKind::Timeout,
            "embeddings service timed out",
        )),
        scoring: Default::default(),
        routing: None,
    }
}

fn query(text: &str, limit: usize) -> Query {
    Query {
        text: text.into(),
        limit,
        offset: 0,
        group: None,
    }
}

/// The tokens the agent reads of a result.
fn read(result: &Value) -> usize {
    tokens_read(&result.to_string()).unwrap()
}

#[test]
fn definitions_result_with_paging_note_and_meta() {
    let tools = [tool(r#"{"name":"a", "description":"x"}"#)];
    let config = Config::default();
    let r: Value = serde_json::from_str(&search_result(
        &config,
        &query("q", 1),
        &ranked(&tools, 3),
        Shape {
            detail: Detail::Full,
            max_tokens: budget(&config, None),
            structured: false,
            modern: true,
        },
    ))
    .unwrap();
    assert_eq!(
        r["content"][0]["text"],
        r#"[{"name":"a", "description":"x"}]"#
    );
    assert_eq!(
        r["content"][1]["text"],
        "1 of 3 matching tools (results 1 to 1); call again with offset 1 for more."
    );
    assert!(r.get("structuredContent").is_none());
    let m = &r["_meta"]["mcp-tool-search/search"];
    assert_eq!(m["strategy"], "bm25");
    assert_eq!(m["fallback"]["reason"], "embeddings service timed out");
    assert_eq!(
        (
            m["candidates"].as_u64(),
            m["matches"].as_u64(),
            m["returned"].as_u64()
        ),
        (Some(300), Some(3), Some(1))
    );
    assert_eq!(r["resultType"], "complete");
}

#[test]
fn summary_lines() {
    let config = Config::parse(r#"{"search":{"result_format":"summary"}}"#).unwrap();
    let tools = [
        tool(
            r#"{"name":"stripe_refund_charge","description":"Refund a charge. Partial refunds too.","inputSchema":{"type":"object","required":["charge_id","amount"]}}"#,
        ),
        tool(
            r#"{"name":"stripe_get_charge","description":"Get a charge by ID","annotations":{"readOnlyHint":true}}"#,
        ),
    ];
    let r: Value = serde_json::from_str(&search_result(
        &config,
        &query("refund", 2),
        &ranked(&tools, 7),
        Shape {
            detail: Detail::default_for(&config),
            max_tokens: budget(&config, None),
            structured: false,
            modern: false,
        },
    ))
    .unwrap();
    let text = r["content"][0]["text"].as_str().unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        "7 tools of 300 match \"refund\" (showing 1 to 2):"
    );
    assert_eq!(lines[1], "stripe_refund_charge · Refund a charge. · requires: charge_id, amount · asks the user first");
    assert_eq!(lines[2], "stripe_get_charge · Get a charge by ID");
    assert!(
        lines[3].starts_with("Next: call describe_tool")
            && lines[3].ends_with("again with offset 2.")
    );
    assert_eq!(first_sentence("v1.2 is out. Yes"), "v1.2 is out.");
}

#[test]
fn structured_content_names_ranks_scores_and_detail() {
    let tools = [
        tool(r#"{"name":"a","description":"x"}"#),
        tool(r#"{"name":"b","description":"y"}"#),
    ];
    let config = Config::default();
    let mut q = query("q", 2);
    q.offset = 4;
    let r: Value = serde_json::from_str(&search_result(
        &config,
        &q,
        &ranked(&tools, 9),
        Shape {
            detail: Detail::Names,
            max_tokens: budget(&config, None),
            structured: true,
            modern: false,
        },
    ))
    .unwrap();
    assert_eq!(
        r["structuredContent"],
        serde_json::json!({"results":[
            {"type":"tool","name":"a","rank":5,"score":1.0,"detail":"name"},
            {"type":"tool","name":"b","rank":6,"score":1.0,"detail":"name"}],
            "matches":9,"offset":4,"more":true})
    );
    let text = r["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("\na\nb\n"), "{text}");
    assert!(text.ends_with("again with offset 6."), "{text}");
}

#[test]
fn compact_descriptions_are_cut_at_a_sentence_with_a_marker() {
    assert_eq!(cut("One. Two. Three.", 100), "One. Two. Three.");
    assert_eq!(
        cut("One. Two. Three.", 12),
        format!("One. Two.{CUT_MARKER}")
    );
    assert_eq!(
        cut("no sentence end here at all", 12),
        format!("no sentence{CUT_MARKER}")
    );
    assert_eq!(cut("ééééé", 2), format!("éé{CUT_MARKER}"));
    let long = format!("{}.", "word ".repeat(1000).trim_end());
    let t = tool(&serde_json::json!({"name":"n","description":long}).to_string());
    let found = Found {
        tool: &t,
        score: 1.0,
        doc: 0,
    };
    let line = compact_line(&found, 2048);
    assert!(
        line.contains(CUT_MARKER) && line.len() < 2048 + 100,
        "{}",
        line.len()
    );
    // A full definition is the upstream's, whole.
    let config = Config::default();
    let r: Value = serde_json::from_str(&search_result(
        &config,
        &query("q", 1),
        &ranked(std::slice::from_ref(&t), 1),
        Shape {
            detail: Detail::Full,
            max_tokens: budget(&config, None),
            structured: false,
            modern: false,
        },
    ))
    .unwrap();
    assert!(r["content"][0]["text"].as_str().unwrap().contains(&long));
}

/// Catalogs of tools with schemas from tiny to huge, answered at every detail within budgets
/// from the smallest up: never more than the budget, and the best result a full definition
/// whenever it fits.
#[test]
fn an_answer_never_exceeds_its_budget() {
    let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
    let mut next = move || {
        seed ^= seed >> 12;
        seed ^= seed << 25;
        seed ^= seed >> 27;
        seed.wrapping_mul(0x2545_f491_4f6c_dd1d)
    };
    let mut checked = 0;
    for round in 0..300 {
        let count = 1 + (next() % 12) as usize;
        let tools: Vec<Tool> = (0..count)
            .map(|i| {
                let huge = next() % 4 == 0;
                let properties: serde_json::Map<String, Value> = (0..next() % if huge { 400 } else { 12 })
                    .map(|p| {
                        (
                            format!("argument_{p}"),
                            serde_json::json!({"type":"string","description":"x ".repeat((next() % 200) as usize)}),
                        )
                    })
                    .collect();
                let description = "Does a thing. ".repeat(1 + (next() % 300) as usize);
                tool(
                    &serde_json::json!({"name":format!("tool_{round}_{i}"),"description":description,
                        "inputSchema":{"type":"object","properties":properties,"required":["argument_0"]},
                        "annotations":{"readOnlyHint": next() % 2 == 0}})
                    .to_string(),
                )
            })
            .collect();
        let config = if round % 3 == 0 {
            Config::parse(r#"{"search":{"result_format":"summary"}}"#).unwrap()
        } else {
            Config::default()
        };
        let max_tokens = budget(&config, Some(500 + (next() % 12_000) as usize));
        let detail = [Detail::Full, Detail::Compact, Detail::Names][(next() % 3) as usize];
        let structured = next() % 2 == 0;
        let mut q = query(&"q".repeat(1 + (next() % 500) as usize), count);
        q.offset = (next() % 3) as usize;
        let ranked = ranked(&tools, count + 5);
        let r: Value = serde_json::from_str(&search_result(
            &config,
            &q,
            &ranked,
            Shape {
                detail,
                max_tokens,
                structured,
                modern: true,
            },
        ))
        .unwrap();
        assert!(
            read(&r) <= max_tokens,
            "round {round}: {} tokens > {max_tokens}",
            read(&r)
        );
        let best = tools[0].definition().len() + 1 + 80 + tools[0].name.len();
        if detail == Detail::Full && best + NOTE_RESERVE <= max_tokens * 4 {
            let first = &r["content"][0]["text"].as_str().unwrap();
            assert!(
                first.starts_with(&format!("[{}", tools[0].definition())),
                "round {round}: the best result fits but is not in full"
            );
            checked += 1;
        }
        let returned = r["_meta"]["mcp-tool-search/search"]["returned"]
            .as_u64()
            .unwrap();
        if structured {
            assert_eq!(
                r["structuredContent"]["results"].as_array().unwrap().len() as u64,
                returned
            );
        }
    }
    assert!(
        checked > 30,
        "only {checked} rounds had a best result that fits"
    );
}

/// A best match larger than the whole budget: the answer says so and how to go on (a larger
/// budget, or the next offset), and never points at the same page again.
#[test]
fn a_best_match_over_the_budget_is_named_with_the_way_on() {
    let huge = format!("huge_{}", "segment".repeat(4000));
    let tools = [
        tool(&serde_json::json!({"name": huge, "description": "x"}).to_string()),
        tool(r#"{"name":"small","description":"x"}"#),
    ];
    let config = Config::default();
    for detail in [Detail::Full, Detail::Compact, Detail::Names] {
        let shape = Shape {
            detail,
            max_tokens: 500,
            structured: true,
            modern: false,
        };
        let r: Value = serde_json::from_str(&search_result(
            &config,
            &query("q", 2),
            &ranked(&tools, 2),
            shape,
        ))
        .unwrap();
        assert!(read(&r) <= 500, "{detail:?}");
        let text: String = r["content"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["text"].as_str().unwrap())
            .collect();
        assert!(
            text.contains("is larger than this answer's budget of 500 tokens")
                && text.contains("with offset 1 to skip it"),
            "{detail:?}: {text}"
        );
        assert!(!text.contains("offset 0"), "{detail:?}: {text}");
    }
}
