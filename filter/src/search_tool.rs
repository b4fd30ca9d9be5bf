//! The injected search tool: its MCP definition, its argument rules and its results.

use crate::catalog::Found;
use crate::config::Config;
use crate::json;
use serde_json::value::RawValue;
use serde_json::Value;

/// A query longer than this is not a query: it is a pasted document or a prompt injection.
pub const MAX_QUERY_CHARS: usize = 500;
/// How many tool names the search tool's description may carry (DESIGN.md §3).
pub const DESCRIBED_NAMES: usize = 256;

/// The search tool's definition (a `Tool` of MCP spec 2025-11-25), fields in a fixed order.
/// `hidden` are the names of the progressive tools the caller may use, sorted.
pub fn definition(config: &Config, hidden: &[&str]) -> String {
    let max = config.search.max_allowable_results;
    let mut description = format!(
        "Search the tools of this server by what you want to do. {} more tools are available \
         than the ones listed; they are not listed to save context. Call this tool with a short \
         description of the task (for example \"create a calendar event\") or a tool's exact \
         name; it returns the full definitions of the best matching tools, best first. Then \
         call the tool you need by its name, with arguments that match its inputSchema.",
        hidden.len()
    );
    if !hidden.is_empty() {
        let shown: Vec<&str> = hidden.iter().take(DESCRIBED_NAMES).copied().collect();
        description.push_str(" Tools you can find include: ");
        description.push_str(&shown.join(", "));
        if hidden.len() > shown.len() {
            description.push_str(&format!(" (and {} more)", hidden.len() - shown.len()));
        }
        description.push('.');
    }
    let mut out = String::with_capacity(description.len() + 900);
    out.push_str("{\"name\":");
    json::write_string(&mut out, &config.search.tool_name);
    out.push_str(",\"title\":\"Search tools\",\"description\":");
    json::write_string(&mut out, &description);
    out.push_str(&format!(
        ",\"inputSchema\":{{\"type\":\"object\",\"properties\":{{\
         \"query\":{{\"type\":\"string\",\"minLength\":1,\"maxLength\":{MAX_QUERY_CHARS},\
         \"description\":\"What you want to do, in a few words, or a tool's exact name.\"}},\
         \"namespace\":{{\"type\":\"string\",\
         \"description\":\"Only search this namespace (optional; by default the namespace of this server).\"}},\
         \"limit\":{{\"type\":\"integer\",\"minimum\":1,\"maximum\":{max},\
         \"description\":\"How many tools to return, at most {max} (the default).\"}}}},\
         \"required\":[\"query\"]}},\
         \"annotations\":{{\"title\":\"Search tools\",\"readOnlyHint\":true,\"openWorldHint\":false}}}}"
    ));
    out
}

/// Validated arguments of a search call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchArgs {
    pub query: String,
    pub namespace: Option<String>,
    pub limit: usize,
}

/// Reads a call's `arguments`. An error is a message for the model: it says what to change.
pub fn parse_arguments(
    arguments: Option<&RawValue>,
    config: &Config,
) -> Result<SearchArgs, String> {
    let max = config.search.max_allowable_results as usize;
    let value: Value = match arguments {
        Some(raw) => serde_json::from_str(raw.get())
            .map_err(|e| format!("arguments are not valid JSON: {e}"))?,
        None => Value::Null,
    };
    let Some(args) = value.as_object() else {
        return Err(
            "Missing required argument `query`: pass {\"query\": \"what you want to do\"}."
                .to_string(),
        );
    };
    let query = match args.get("query") {
        None | Some(Value::Null) => {
            return Err(
                "Missing required argument `query`: pass {\"query\": \"what you want to do\"}."
                    .to_string(),
            )
        }
        Some(Value::String(q)) => q.trim(),
        Some(other) => {
            return Err(format!(
                "Argument `query` must be a string describing the task, not {other}."
            ))
        }
    };
    if query.is_empty() {
        return Err("Argument `query` is empty: describe the task in a few words.".to_string());
    }
    let chars = query.chars().count();
    if chars > MAX_QUERY_CHARS {
        return Err(format!(
            "Argument `query` has {chars} characters; the maximum is {MAX_QUERY_CHARS}. Describe the task in a few words."
        ));
    }
    let namespace = match args.get("namespace") {
        None | Some(Value::Null) => None,
        Some(Value::String(ns)) if !ns.trim().is_empty() => Some(ns.trim().to_string()),
        Some(Value::String(_)) => None,
        Some(other) => {
            return Err(format!(
                "Argument `namespace` must be a string, not {other}."
            ))
        }
    };
    let limit = match args.get("limit") {
        None | Some(Value::Null) => max,
        Some(Value::Number(n)) => match n.as_i64() {
            Some(l) if l >= 1 => usize::try_from(l).unwrap_or(max).min(max),
            Some(l) => {
                return Err(format!(
                    "Argument `limit` is {l}; it must be an integer from 1 to {max}."
                ))
            }
            None => {
                return Err(format!(
                    "Argument `limit` is {n}; it must be an integer from 1 to {max}."
                ))
            }
        },
        Some(other) => {
            return Err(format!(
                "Argument `limit` must be an integer from 1 to {max}, not {other}."
            ))
        }
    };
    Ok(SearchArgs {
        query: query.to_string(),
        namespace,
        limit,
    })
}

/// What a search did, for the result's `_meta` (and the operator's stats).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchMeta {
    pub strategy: &'static str,
    pub candidates: usize,
}

/// A successful search result: one text content holding the JSON array of the found tools'
/// definitions, exactly as the upstream declared them, best first.
pub fn result(found: &[Found<'_>], meta: &SearchMeta, modern: bool) -> String {
    let mut defs = String::from("[");
    for (i, f) in found.iter().enumerate() {
        if i > 0 {
            defs.push(',');
        }
        defs.push_str(f.tool.definition.get());
    }
    defs.push(']');
    let mut out = String::with_capacity(defs.len() * 11 / 10 + 200);
    out.push_str("{\"content\":[{\"type\":\"text\",\"text\":");
    json::write_string(&mut out, &defs);
    out.push_str(&format!(
        "}}],\"isError\":false,\"_meta\":{{\"mcp-tool-search/search\":{{\"strategy\":{},\"candidates\":{},\"returned\":{}}}}}",
        json::string(meta.strategy),
        meta.candidates,
        found.len()
    ));
    finish_result(&mut out, modern);
    out
}

/// A tool result that reports a problem to the model (`isError`, MCP spec 2025-11-25 "Error
/// Handling": tool errors are results, so the model can read and correct them).
pub fn error_result(message: &str, modern: bool) -> String {
    let mut out = String::from("{\"content\":[{\"type\":\"text\",\"text\":");
    json::write_string(&mut out, message);
    out.push_str("}],\"isError\":true");
    finish_result(&mut out, modern);
    out
}

/// Protocol 2026-07-28 results say whether they are complete (`resultType`).
fn finish_result(out: &mut String, modern: bool) {
    if modern {
        out.push_str(",\"resultType\":\"complete\"");
    }
    out.push('}');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Tool;

    fn args(json: &str) -> Result<SearchArgs, String> {
        let raw: Box<RawValue> = serde_json::from_str(json).unwrap();
        parse_arguments(Some(&raw), &Config::default())
    }

    #[test]
    fn definition_is_valid_and_names_hidden_tools() {
        let config = Config::default();
        let names: Vec<String> = (0..300).map(|i| format!("t{i:03}")).collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let def: Value = serde_json::from_str(&definition(&config, &refs)).unwrap();
        assert_eq!(def["name"], "tool_search");
        assert_eq!(def["inputSchema"]["required"], serde_json::json!(["query"]));
        assert_eq!(def["inputSchema"]["properties"]["limit"]["maximum"], 5);
        assert_eq!(def["annotations"]["readOnlyHint"], true);
        assert_eq!(def["annotations"]["openWorldHint"], false);
        assert!(def.get("outputSchema").is_none());
        let d = def["description"].as_str().unwrap();
        assert!(d.contains("t000, t001") && d.contains("t255") && !d.contains("t256"));
        assert!(d.contains("(and 44 more)"));
        let keys: Vec<&String> = def.as_object().unwrap().keys().collect();
        assert_eq!(keys.len(), 5);
    }

    #[test]
    fn argument_rules() {
        assert_eq!(
            args(r#"{"query":" refund ","limit":3}"#).unwrap(),
            SearchArgs {
                query: "refund".into(),
                namespace: None,
                limit: 3
            }
        );
        assert_eq!(
            args(r#"{"query":"x","limit":99}"#).unwrap().limit,
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
        assert!(parse_arguments(None, &Config::default()).is_err());
    }

    #[test]
    fn results() {
        let raw: Box<RawValue> =
            serde_json::from_str(r#"{"name":"a", "description":"x"}"#).unwrap();
        let tool = Tool::from_raw(&raw).unwrap();
        let found = [Found {
            tool: &tool,
            score: 1.0,
        }];
        let meta = SearchMeta {
            strategy: "bm25",
            candidates: 10,
        };
        let r = result(&found, &meta, false);
        let v: Value = serde_json::from_str(&r).unwrap();
        assert_eq!(
            v["content"][0]["text"],
            r#"[{"name":"a", "description":"x"}]"#
        );
        assert_eq!(v["isError"], false);
        assert_eq!(v["_meta"]["mcp-tool-search/search"]["returned"], 1);
        let modern: Value = serde_json::from_str(&result(&found, &meta, true)).unwrap();
        assert_eq!(modern["resultType"], "complete");
        let e: Value = serde_json::from_str(&error_result("bad \"q\"", false)).unwrap();
        assert_eq!(e["isError"], true);
        assert_eq!(e["content"][0]["text"], "bad \"q\"");
    }
}
