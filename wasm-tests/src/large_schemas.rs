//! The generated catalog (`catalog::generate`) with large input schemas, as real servers have
//! them: every tool gets 12 more documented arguments and every fifth 300 (a ~40 kB definition),
//! so that one answer of five full definitions can outgrow what a client keeps of a result. For
//! the benchmark's token table and the budget tests.

use serde_json::{json, Map, Value};

/// One tool's added arguments: `count` documented options.
fn options(count: usize) -> Map<String, Value> {
    (0..count)
        .map(|p| {
            (
                format!("option_{p}"),
                json!({
                    "type": "string",
                    "description": "A setting of the request, spelled as the vendor's API spells it; leave it out for the default.",
                }),
            )
        })
        .collect()
}

/// The JSONL text of `count` tools (one definition a line, trailing newline).
pub fn jsonl(count: usize) -> String {
    let mut out = String::new();
    for (i, tool) in crate::catalog::generate(count).iter().enumerate() {
        let mut def: Value =
            serde_json::from_str(&tool.json.to_json_string()).unwrap_or_else(|_| json!({}));
        let added = options(if i % 5 == 0 { 300 } else { 12 });
        if let Some(props) = def
            .pointer_mut("/inputSchema/properties")
            .and_then(Value::as_object_mut)
        {
            props.extend(added);
        }
        out.push_str(&def.to_string());
        out.push('\n');
    }
    out
}
