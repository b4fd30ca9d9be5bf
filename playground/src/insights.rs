//! The insights endpoint's answer (`GET <http_path>/insights`, README "Search insights") read
//! beside the pasted catalog and configuration: the tools agents call most and whether they are
//! eager here, the queries that found nothing, the tools no search returned, and the pasted
//! configuration with the suggested tools made eager, to try at once.

use crate::Error;
use mcp_tool_search_core::{Config, DisclosureMode};
use serde::Serialize;
use serde_json::{json, Value};

#[derive(Debug, Serialize)]
pub struct InsightsView {
    pub namespace: String,
    /// The tools called most (the endpoint's `suggested_eager`), and their share of the calls.
    pub suggested: Vec<Tool>,
    pub share: f64,
    pub without_search: Vec<Tool>,
    pub zero_queries: Vec<ZeroQuery>,
    pub never_returned: Vec<String>,
    pub never_returned_count: u64,
    /// The pasted configuration with every suggested tool of this catalog that is not eager
    /// made eager (a `tools` entry each); `None` when there is none to change.
    pub eager_config: Option<String>,
}

/// A tool the insights name, and what it is under the pasted configuration.
#[derive(Debug, Serialize)]
pub struct Tool {
    pub name: String,
    pub calls: u64,
    pub share: Option<f64>,
    /// Eager under the pasted configuration (listed, not searched for).
    pub eager: bool,
    /// In the pasted catalog (insights from another catalog may name others).
    pub in_catalog: bool,
}

#[derive(Debug, Serialize)]
pub struct ZeroQuery {
    /// The query as the agent wrote it (with `record_queries`), else `None`.
    pub query: Option<String>,
    pub group: String,
    pub count: u64,
}

fn bad(why: &str) -> Error {
    Error::Insights(why.to_string())
}

/// The namespace's part of `text` (the endpoint's whole answer, or one namespace's object).
fn namespace_part<'v>(value: &'v Value, namespace: &str) -> Result<(String, &'v Value), Error> {
    let Some(all) = value.get("insights").and_then(Value::as_object) else {
        return match value.get("auto_mode") {
            Some(_) => Ok((namespace.to_string(), value)),
            None => Err(bad(
                "paste the answer of GET <http_path>/insights: {\"insights\": {\"<namespace>\": {...}}}",
            )),
        };
    };
    if let Some(part) = all.get(namespace) {
        return Ok((namespace.to_string(), part));
    }
    match all.iter().next() {
        Some((ns, part)) if all.len() == 1 => Ok((ns.clone(), part)),
        _ => Err(bad(&format!(
            "no insights for namespace {namespace:?}; the answer has: {}",
            all.keys().cloned().collect::<Vec<_>>().join(", ")
        ))),
    }
}

fn tools(list: Option<&Value>, config: &Config, namespace: &str, catalog: &[String]) -> Vec<Tool> {
    list.and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(|t| {
                    let name = t.get("name")?.as_str()?.to_string();
                    Some(Tool {
                        eager: config.disclosure_mode(namespace, &name) == DisclosureMode::Eager,
                        in_catalog: catalog.contains(&name),
                        calls: t.get("calls").and_then(Value::as_u64).unwrap_or(0),
                        share: t.get("share").and_then(Value::as_f64),
                        name,
                    })
                })
                .collect()
        })
        .unwrap_or_default()
}

/// `config_text` with a `tools` entry `{"name", "disclosure_mode": "EAGER"}` for each of
/// `names` (an entry of the same name and no namespace is made eager instead).
fn with_eager(config_text: &str, names: &[&str]) -> Result<String, Error> {
    let mut config: Value = serde_json::from_str(config_text)
        .map_err(|e| bad(&format!("the configuration is not JSON: {e}")))?;
    let Some(object) = config.as_object_mut() else {
        return Err(bad("the configuration is not a JSON object"));
    };
    let tools = object.entry("tools").or_insert_with(|| json!([]));
    let Some(tools) = tools.as_array_mut() else {
        return Err(bad("the configuration's `tools` is not a list"));
    };
    for name in names {
        let existing = tools.iter_mut().find(|t| {
            t.get("name").and_then(Value::as_str) == Some(name) && t.get("namespace").is_none()
        });
        match existing {
            Some(entry) => {
                if let Some(entry) = entry.as_object_mut() {
                    entry.insert("disclosure_mode".into(), json!("EAGER"));
                }
            }
            None => tools.push(json!({"name": name, "disclosure_mode": "EAGER"})),
        }
    }
    serde_json::to_string_pretty(&config).map_err(|e| bad(&e.to_string()))
}

pub fn view(
    config_text: &str,
    config: &Config,
    namespace: &str,
    catalog: &[String],
    text: &str,
) -> Result<InsightsView, Error> {
    let value: Value = serde_json::from_str(text).map_err(|e| bad(&format!("not JSON: {e}")))?;
    let (namespace, part) = namespace_part(&value, namespace)?;
    let suggested_part = part.get("suggested_eager");
    let suggested = tools(
        suggested_part.and_then(|s| s.get("tools")),
        config,
        &namespace,
        catalog,
    );
    let to_make: Vec<&str> = suggested
        .iter()
        .filter(|t| t.in_catalog && !t.eager)
        .map(|t| t.name.as_str())
        .collect();
    let eager_config = if to_make.is_empty() {
        None
    } else {
        Some(with_eager(config_text, &to_make)?)
    };
    let zero_queries = part
        .get("zero_result_queries")
        .and_then(Value::as_array)
        .map(|groups| {
            groups
                .iter()
                .map(|g| ZeroQuery {
                    query: g.get("query").and_then(Value::as_str).map(str::to_string),
                    group: g
                        .get("group")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string(),
                    count: g.get("count").and_then(Value::as_u64).unwrap_or(0),
                })
                .collect()
        })
        .unwrap_or_default();
    let never = part.get("never_returned");
    Ok(InsightsView {
        without_search: tools(
            part.get("called_without_search"),
            config,
            &namespace,
            catalog,
        ),
        share: suggested_part
            .and_then(|s| s.get("share"))
            .and_then(Value::as_f64)
            .unwrap_or(0.0),
        suggested,
        zero_queries,
        never_returned: never
            .and_then(|n| n.get("tools"))
            .and_then(Value::as_array)
            .map(|t| {
                t.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default(),
        never_returned_count: never
            .and_then(|n| n.get("count"))
            .and_then(Value::as_u64)
            .unwrap_or(0),
        eager_config,
        namespace,
    })
}
