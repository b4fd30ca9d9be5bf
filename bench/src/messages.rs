//! The MCP messages the bench sends, the lists its upstreams answer with, and the filter's
//! configuration it runs under.

/// The plugin configuration used everywhere (Envoy adds its `mcp_paths`).
pub fn plugin_config(mcp_paths: &[String]) -> String {
    let paths: Vec<String> = mcp_paths.iter().map(|p| format!("\"{p}\"")).collect();
    format!(
        "{{\"mcp_paths\":[{}],\"hold_request_headers\":true,\"max_body_bytes\":134217728,\"eager_patterns\":[\"github_get_*\"]}}",
        paths.join(",")
    )
}

pub fn list_request() -> String {
    r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#.to_owned()
}

pub fn search_request(id: usize, query: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"tool_search","arguments":{{"query":{},"limit":5}}}}}}"#,
        serde_json::Value::String(query.to_owned())
    )
}

pub fn tool_lines(jsonl: &str) -> impl Iterator<Item = &str> {
    jsonl.lines().filter(|l| !l.trim().is_empty())
}

fn json_list(tools: &[&str]) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":1,"result":{{"tools":[{}]}}}}"#,
        tools.join(",")
    )
}

/// The list response an upstream sends, as JSON and as one SSE event.
pub fn list_response(jsonl: &str) -> (String, String) {
    let json = json_list(&tool_lines(jsonl).collect::<Vec<_>>());
    let sse = format!("event: message\ndata: {json}\n\n");
    (json, sse)
}

/// JSON list responses of the catalog's tools rotated by each of `eighths` eighths: the same
/// tools in other orders, as a gateway joins its servers' lists as they arrive.
pub fn rotated_lists(jsonl: &str, eighths: impl IntoIterator<Item = usize>) -> Vec<String> {
    let tools: Vec<&str> = tool_lines(jsonl).collect();
    eighths
        .into_iter()
        .map(|k| {
            let mut rotated = tools.clone();
            rotated.rotate_left(tools.len() * k / 8);
            json_list(&rotated)
        })
        .collect()
}
