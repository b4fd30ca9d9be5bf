//! README "Configuration" (and the `catalog` and `search.embeddings` tables) is the reference an
//! operator reads: every table `| field | default | range | meaning |` is checked against the
//! parser. A default written as a JSON value is the parser's (setting the field to it changes
//! nothing); a range `lo..hi` is accepted at both ends and refused just beyond them; every field
//! the parser takes has a row.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use mcp_tool_search_core::{Config, ConfigError};
use serde_json::{json, Map, Value};

const README: &str = include_str!("../../../README.md");
const HEADER: &str = "| field | default | range | meaning |";

#[derive(Debug)]
struct Row {
    line: usize,
    fields: Vec<String>,
    /// The default when the README writes it as a JSON value (else it is said in words).
    default: Option<Value>,
    range: Option<(Value, Value)>,
}

/// The first backquoted span of a cell, when the cell starts with one.
fn leading_code(cell: &str) -> Option<&str> {
    let rest = cell.trim().strip_prefix('`')?;
    rest.split_once('`').map(|(code, _)| code)
}

fn rows() -> Vec<Row> {
    let mut rows = Vec::new();
    let mut in_table = false;
    for (i, line) in README.lines().enumerate() {
        if line == HEADER {
            in_table = true;
            continue;
        }
        if !line.starts_with('|') {
            in_table = false;
        }
        if !in_table || line.starts_with("|---") {
            continue;
        }
        // | field | default | range | meaning |: no code span in the first three holds a `|`.
        let cells: Vec<&str> = line.split('|').skip(1).take(3).map(str::trim).collect();
        assert_eq!(cells.len(), 3, "README line {}: {line}", i + 1);
        let fields: Vec<String> = cells[0]
            .split(", ")
            .map(|f| f.trim().trim_matches('`').to_string())
            .collect();
        let default = leading_code(cells[1]).map(|code| {
            serde_json::from_str(code).unwrap_or_else(|e| {
                panic!("README line {}: default `{code}` is not JSON: {e}", i + 1)
            })
        });
        let range = leading_code(cells[2]).map(|code| {
            let (lo, hi) = code
                .split_once("..")
                .unwrap_or_else(|| panic!("README line {}: range `{code}` is not lo..hi", i + 1));
            let value = |s: &str| -> Value {
                serde_json::from_str(s)
                    .unwrap_or_else(|e| panic!("README line {}: range end {s}: {e}", i + 1))
            };
            (value(lo), value(hi))
        });
        rows.push(Row {
            line: i + 1,
            fields,
            default,
            range,
        });
    }
    rows
}

/// The smallest configuration in which `field` may be set: an embeddings field needs the block's
/// required fields.
fn base(field: &str) -> Value {
    if field.starts_with("search.embeddings.") {
        json!({"search": {"embeddings": {"cluster": "e", "model_id": "m", "dimensions": 3}}})
    } else {
        json!({})
    }
}

fn with(field: &str, value: Value) -> Value {
    let mut config = base(field);
    let mut object = config.as_object_mut().unwrap();
    let mut parts = field.split('.').peekable();
    while let Some(part) = parts.next() {
        if parts.peek().is_none() {
            object.insert(part.to_string(), value);
            break;
        }
        object = object
            .entry(part)
            .or_insert_with(|| Value::Object(Map::new()))
            .as_object_mut()
            .unwrap();
    }
    config
}

/// Whether this build takes the row's fields: `code` is only the code-mode module's (the search
/// module refuses the block).
fn runs_here(row: &Row) -> bool {
    cfg!(feature = "code-mode") || !row.fields.iter().any(|f| f.starts_with("code."))
}

fn parse(config: &Value) -> Result<Config, ConfigError> {
    Config::parse(&config.to_string())
}

#[test]
fn the_reference_tables_exist() {
    let rows = rows();
    for field in [
        "mcp_paths",
        "search.call_timeout",
        "search.embeddings.timeout",
        "catalog.max_age",
    ] {
        assert!(
            rows.iter().any(|r| r.fields.iter().any(|f| f == field)),
            "no README row for {field}"
        );
    }
}

#[test]
fn every_default_the_readme_writes_is_the_parsers() {
    let mut checked = 0;
    for row in rows().into_iter().filter(runs_here) {
        let Some(default) = &row.default else {
            continue;
        };
        for field in &row.fields {
            let expected = parse(&base(field)).unwrap();
            let set = parse(&with(field, default.clone())).unwrap_or_else(|e| {
                panic!(
                    "README line {}: {field} = {default} is refused: {e}",
                    row.line
                )
            });
            assert_eq!(
                set, expected,
                "README line {}: {field} = {default} is not the default",
                row.line
            );
            checked += 1;
        }
    }
    assert!(checked >= 40, "only {checked} defaults checked");
}

/// Milliseconds of a range end: a duration string (`"250ms"`, `"5s"`) or a number.
fn number(end: &Value) -> f64 {
    match end {
        Value::Number(n) => n.as_f64().unwrap(),
        Value::String(s) => match s.strip_suffix("ms") {
            Some(ms) => ms.parse().unwrap(),
            None => s.strip_suffix('s').unwrap().parse::<f64>().unwrap() * 1000.0,
        },
        other => panic!("range end {other}"),
    }
}

#[test]
fn every_range_the_readme_states_is_the_parsers() {
    let mut checked = 0;
    for row in rows().into_iter().filter(runs_here) {
        let Some((lo, hi)) = &row.range else {
            continue;
        };
        for field in &row.fields {
            for end in [lo, hi] {
                if let Err(e) = parse(&with(field, end.clone())) {
                    panic!("README line {}: {field} = {end} is refused: {e}", row.line);
                }
            }
            // Just outside, in the field's own unit (durations in milliseconds): refused,
            // the error naming the field.
            let (lo, hi) = (number(lo), number(hi));
            for outside in [lo - 1.0, lo - 0.001, hi + 0.001, hi + 1.0] {
                match parse(&with(field, json!(outside))) {
                    Err(e) => assert!(
                        e.to_string().contains(&format!("`{field}`")),
                        "README line {}: {field} = {outside}: {e}",
                        row.line
                    ),
                    Ok(_) => panic!(
                        "README line {}: {field} = {outside} is accepted, outside {lo}..{hi}",
                        row.line
                    ),
                }
            }
            checked += 1;
        }
    }
    assert!(checked >= 20, "only {checked} ranges checked");
}

/// The fields the parser takes in the object at `path`, from its refusal of an unknown one.
fn allowed(path: &str) -> Vec<String> {
    let probe = if path.is_empty() {
        json!({"not_a_field": 1})
    } else {
        with(&format!("{path}.not_a_field"), json!(1))
    };
    match parse(&probe) {
        Err(ConfigError::UnknownField { allowed, .. }) => {
            allowed.split(", ").map(str::to_string).collect()
        }
        other => panic!("{path}: {other:?}"),
    }
}

#[test]
fn every_field_the_parser_takes_has_a_row() {
    let documented: Vec<String> = rows().into_iter().flat_map(|r| r.fields).collect();
    let mut missing = Vec::new();
    for path in [
        "",
        "search",
        "search.weights",
        "search.routing",
        "search.embeddings",
        "catalog",
        "code",
        "code.limits",
    ] {
        if path.starts_with("code") && !cfg!(feature = "code-mode") {
            continue;
        }
        for name in allowed(path) {
            let field = if path.is_empty() {
                name
            } else {
                format!("{path}.{name}")
            };
            let prefix = format!("{field}.");
            if !documented
                .iter()
                .any(|d| *d == field || d.starts_with(&prefix))
            {
                missing.push(field);
            }
        }
    }
    assert!(
        missing.is_empty(),
        "fields without a README row: {missing:?}"
    );
}
