//! The README's own examples, as a reader copies them: every JSON block is JSON and every YAML
//! block is YAML (a block written with `...` for what it leaves out is a sketch, and says so);
//! a JSON block that is a plugin configuration, and every plugin configuration inside a YAML
//! block (the `configuration` string Envoy hands the filter), is one the filter accepts.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use mcp_tool_search_core::{Config, ConfigError};
use mcp_tool_search_wasm_tests::harness::workspace_root;
use serde_json::Value;

struct Block {
    line: usize,
    lang: String,
    text: String,
}

fn blocks() -> Vec<Block> {
    let readme = std::fs::read_to_string(workspace_root().join("README.md")).unwrap();
    let mut out = Vec::new();
    let mut open: Option<Block> = None;
    for (i, line) in readme.lines().enumerate() {
        let fence = line.trim_start();
        match (&mut open, fence.strip_prefix("```")) {
            (None, Some(lang)) => {
                open = Some(Block {
                    line: i + 1,
                    lang: lang.trim().to_string(),
                    text: String::new(),
                })
            }
            (Some(_), Some(_)) => out.extend(open.take()),
            (Some(block), None) => {
                block.text.push_str(line);
                block.text.push('\n');
            }
            (None, None) => {}
        }
    }
    assert!(open.is_none(), "README: a code block is never closed");
    out
}

/// The top-level fields of a plugin configuration, from the parser's refusal of an unknown one.
fn plugin_fields() -> Vec<String> {
    match Config::parse(r#"{"not_a_field":1}"#) {
        Err(ConfigError::UnknownField { allowed, .. }) => {
            allowed.split(", ").map(str::to_string).collect()
        }
        other => panic!("{other:?}"),
    }
}

/// Every `configuration` an Envoy Wasm filter in `doc` carries (a `StringValue`'s `value`).
fn plugin_configurations(doc: &Value, out: &mut Vec<String>) {
    match doc {
        Value::Object(map) => {
            if let Some(value) = map
                .get("configuration")
                .and_then(|c| c.get("value"))
                .and_then(Value::as_str)
            {
                out.push(value.to_string());
            }
            map.values().for_each(|v| plugin_configurations(v, out));
        }
        Value::Array(items) => items.iter().for_each(|v| plugin_configurations(v, out)),
        _ => {}
    }
}

#[test]
fn every_json_and_yaml_example_parses_and_every_plugin_configuration_is_accepted() {
    let fields = plugin_fields();
    let (mut json, mut yaml, mut configs) = (0, 0, 0);
    for block in blocks() {
        let sketch = block.text.contains("...");
        let at = format!("README line {}", block.line);
        match block.lang.as_str() {
            "json" if !sketch => {
                let v: Value = serde_json::from_str(&block.text)
                    .unwrap_or_else(|e| panic!("{at}: not JSON: {e}\n{}", block.text));
                json += 1;
                let is_config = v
                    .as_object()
                    .is_some_and(|m| m.keys().all(|k| fields.contains(k)));
                if is_config {
                    if let Err(e) = Config::parse(&block.text) {
                        panic!("{at}: the filter refuses it: {e}\n{}", block.text);
                    }
                    configs += 1;
                }
            }
            "yaml" if !sketch => {
                let doc: serde_norway::Value = serde_norway::from_str(&block.text)
                    .unwrap_or_else(|e| panic!("{at}: not YAML: {e}\n{}", block.text));
                yaml += 1;
                let mut found = Vec::new();
                plugin_configurations(&serde_json::to_value(doc).unwrap(), &mut found);
                for config in found {
                    if let Err(e) = Config::parse(&config) {
                        panic!("{at}: the filter refuses its configuration: {e}\n{config}");
                    }
                    configs += 1;
                }
            }
            _ => {}
        }
    }
    // As many as the README has today, so that a change in how blocks are found fails here.
    assert!(
        json >= 6 && yaml >= 4 && configs >= 8,
        "json {json}, yaml {yaml}, plugin configurations {configs}"
    );
}
