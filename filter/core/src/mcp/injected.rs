//! The tools the filter injects into `tools/list` and answers itself: the search tool,
//! `list_tool_groups`, and (with summary results) `describe_tool` and `call_tool`. Their
//! definitions (MCP spec 2025-11-25, "Tool"), argument rules and results.

use crate::config::entries::SearchType;
use crate::config::{Config, Mode, ResultFormat};
use crate::index::catalog::Tool;
pub(crate) mod answer;

use crate::mcp::jsonrpc::ListQuery;
use crate::mcp::result::{self, SearchMeta};
use crate::rank::search::{Query, Ranked};
use answer::Detail;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// A query longer than this is not a query: it is a pasted document or a prompt injection.
pub const MAX_QUERY_CHARS: usize = 500;
/// How many tool names the search tool's description may carry: enough for an agent to
/// recognise the catalog, few enough to keep the listing small.
pub const DESCRIBED_NAMES: usize = 256;
/// What the search tool's description keeps free of names for the "(and N more)" tail.
const NAMES_RESERVE: usize = 64;
/// How many definitions one `describe_tool` call may ask for.
pub const MAX_DESCRIBE: usize = 20;

pub const LIST_GROUPS: &str = "list_tool_groups";
/// How many group names the search tool's description carries: every server of a large
/// gateway (tens), without letting a catalog of thousands of one-tool groups fill the context.
const DESCRIBED_GROUPS: usize = 64;
pub const DESCRIBE: &str = "describe_tool";
pub const CALL: &str = "call_tool";
/// How the cursors of lists answered for a query begin (the offset of the page follows).
pub const LIST_CURSOR: &str = "mcp-tool-search:";

/// Which injected tool a call names, if any (given the configuration).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Injected {
    Search,
    ListGroups,
    Describe,
    Call,
    /// Code mode's tool: runs the agent's script (the only tool injected in code mode).
    Script,
}

impl Injected {
    pub fn of(config: &Config, name: &str) -> Option<Injected> {
        if config.mode == Mode::Code {
            return (name == config.code.tool_name).then_some(Injected::Script);
        }
        let summary = config.search.result_format == ResultFormat::Summary;
        match name {
            n if n == config.search.tool_name => Some(Injected::Search),
            LIST_GROUPS => Some(Injected::ListGroups),
            DESCRIBE if summary => Some(Injected::Describe),
            CALL if summary => Some(Injected::Call),
            _ => None,
        }
    }
}

/// One injected tool's definition (MCP `Tool`, spec 2025-11-25 "Tools"); `output_schema`
/// for protocols that define it (2025-06-18 and later).
fn definition(
    name: &str,
    title: &str,
    description: &str,
    schema: &str,
    output_schema: Option<&str>,
    read_only: bool,
) -> String {
    #[derive(serde::Serialize)]
    struct Definition<'a> {
        name: &'a str,
        title: &'a str,
        description: &'a str,
        #[serde(rename = "inputSchema")]
        input_schema: Option<&'a RawValue>,
        #[serde(rename = "outputSchema", skip_serializing_if = "Option::is_none")]
        output_schema: Option<&'a RawValue>,
        annotations: Annotations<'a>,
    }
    #[derive(serde::Serialize)]
    struct Annotations<'a> {
        title: &'a str,
        #[serde(rename = "readOnlyHint")]
        read_only_hint: bool,
        #[serde(rename = "openWorldHint")]
        open_world_hint: bool,
    }
    // The schemas are this module's own JSON text; an invalid one would be a bug here, and the
    // tool still gets a schema a client accepts.
    let input_schema = serde_json::from_str::<&RawValue>(schema)
        .or_else(|_| serde_json::from_str::<&RawValue>(r#"{"type":"object"}"#))
        .ok();
    let output_schema = output_schema.and_then(|s| serde_json::from_str::<&RawValue>(s).ok());
    result::to_json(&Definition {
        name,
        title,
        description,
        input_schema,
        output_schema,
        annotations: Annotations {
            title,
            read_only_hint: read_only,
            open_world_hint: false,
        },
    })
}

/// The injected tools for a listing, in order. `hidden`: the progressive tools the caller may
/// use (sorted); `groups`: the caller's groups (sorted).
/// `complete`: whether `hidden` is every hidden tool (else the count is a lower bound, while
/// the pages of a first listing are still being learned). `structured`: the listing's
/// protocol defines `outputSchema` (the search tool then declares its own).
pub fn definitions(
    config: &Config,
    hidden: &[&str],
    groups: &[String],
    complete: bool,
    structured: bool,
) -> Vec<String> {
    let mut out = vec![search_definition(
        config, hidden, groups, complete, structured,
    )];
    if groups.len() > 1 {
        out.push(definition(
            LIST_GROUPS,
            "List tool groups",
            "List the groups the tools of this server fall into, with how many tools each holds. \
             Pass a group to the search tool to search only that group.",
            "{\"type\":\"object\",\"properties\":{}}",
            None,
            true,
        ));
    }
    if config.search.result_format == ResultFormat::Summary {
        out.push(definition(
            DESCRIBE,
            "Describe tools",
            "Get the full definitions (description and inputSchema) of tools found by the search \
             tool, by name.",
            &format!(
                "{{\"type\":\"object\",\"properties\":{{\"names\":{{\"type\":\"array\",\
                 \"items\":{{\"type\":\"string\"}},\"minItems\":1,\"maxItems\":{MAX_DESCRIBE},\
                 \"description\":\"Exact tool names from a search result.\"}}}},\"required\":[\"names\"]}}"
            ),
            None,
            true,
        ));
        out.push(definition(
            CALL,
            "Call a tool",
            "Call a tool found by the search tool, by name, with its arguments. Use this when you \
             cannot call the tool directly.",
            "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\",\
             \"description\":\"The exact tool name.\"},\"arguments\":{\"type\":\"object\",\
             \"description\":\"The tool's arguments, matching its inputSchema.\"}},\"required\":[\"name\"]}",
            None,
            false,
        ));
    }
    out
}

fn search_definition(
    config: &Config,
    hidden: &[&str],
    groups: &[String],
    complete: bool,
    structured: bool,
) -> String {
    let max = config.search.max_allowable_results;
    let summary = config.search.result_format == ResultFormat::Summary;
    let mut description = format!(
        "Search the tools of this server by what you want to do. {}{} more tools are available \
         than the ones listed; they are not listed to save context. Call this tool with a short \
         description of the task (for example \"create a calendar event\") or a tool's exact \
         name; it returns {}, best first. Then call the tool you need by its name, with \
         arguments that match its inputSchema.",
        if complete { "" } else { "At least " },
        hidden.len(),
        if summary {
            "one line per matching tool (use describe_tool for full definitions)"
        } else {
            "the full definitions of the best matching tools"
        }
    );
    if groups.len() > 1 {
        // Behind an aggregating router the groups are its servers: naming them tells the model
        // where a tool can come from before it spends a search on finding out. Said before the
        // tool names, which stay last (clients read that list to the end).
        let shown: Vec<&str> = groups
            .iter()
            .take(DESCRIBED_GROUPS)
            .map(String::as_str)
            .collect();
        description.push_str(&format!(
            " The tools fall into {} groups: {}{}; pass one as group to search only it.",
            groups.len(),
            shown.join(", "),
            if groups.len() > shown.len() {
                format!(" (and {} more)", groups.len() - shown.len())
            } else {
                String::new()
            }
        ));
    }
    if !hidden.is_empty() {
        // The names fill what the description's budget leaves, and at most `DESCRIBED_NAMES`.
        let budget = config.search.max_description_tokens.saturating_mul(4);
        let mut room = budget.saturating_sub(description.len() + NAMES_RESERVE);
        let shown: Vec<&str> = hidden
            .iter()
            .take(DESCRIBED_NAMES)
            .take_while(|name| match room.checked_sub(name.len() + 2) {
                Some(left) => {
                    room = left;
                    true
                }
                None => false,
            })
            .copied()
            .collect();
        description.push_str(" Tools you can find include: ");
        description.push_str(&shown.join(", "));
        if hidden.len() > shown.len() {
            description.push_str(&format!(" (and {} more)", hidden.len() - shown.len()));
        }
        description.push('.');
    }
    let group = if groups.len() > 1 {
        format!(
            ",\"group\":{{\"type\":\"string\",\"enum\":{},\"description\":\"Only search this group of tools.\"}}",
            result::to_json(&groups)
        )
    } else {
        String::new()
    };
    let schema = format!(
        "{{\"type\":\"object\",\"properties\":{{\
         \"query\":{{\"type\":\"string\",\"minLength\":1,\"maxLength\":{MAX_QUERY_CHARS},\
         \"description\":\"What you want to do, in a few words, or a tool's exact name.\"}},\
         \"namespace\":{{\"type\":\"string\",\
         \"description\":\"Only search this namespace (optional; by default the namespace of this server).\"}},\
         \"limit\":{{\"type\":\"integer\",\"minimum\":1,\"maximum\":{max},\
         \"description\":\"How many tools to return, at most {max} (the default).\"}},\
         \"offset\":{{\"type\":\"integer\",\"minimum\":0,\
         \"description\":\"How many matching tools to skip, to page through a long match (default 0).\"}},\
         \"type\":{{\"type\":\"string\",\"enum\":[\"tool\",\"prompt\",\"resource\",\"all\"],\
         \"description\":\"What to search: tools (the default), the server's prompts or resources, or all of them.\"}},\
         \"detail\":{{\"type\":\"string\",\"enum\":[\"full\",\"compact\",\"names\"],\
         \"description\":\"How much of each tool to return: full (definitions while they fit the answer's budget, then one line each), compact (one line each) or names; default {detail_default}.\"}},\
         \"max_tokens\":{{\"type\":\"integer\",\"minimum\":{min_tokens},\"maximum\":{max_tokens},\
         \"description\":\"The most tokens the answer may take (estimated as bytes / 4), at most {max_tokens} (the default).\"}}{group}}},\
         \"required\":[\"query\"]}}",
        detail_default = if summary { "compact" } else { "full" },
        min_tokens = answer::MIN_RESULT_TOKENS,
        max_tokens = answer::budget(config, None),
    );
    definition(
        &config.search.tool_name,
        "Search tools",
        &description,
        &schema,
        structured.then_some(answer::OUTPUT_SCHEMA),
        true,
    )
}

/// Validated arguments of a search call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchArgs {
    pub query: Query,
    pub namespace: Option<String>,
    /// What to search: tools (the default), prompts, resources, or all of them.
    pub kind: SearchType,
    /// How much of each result to show (`detail`; by default as `search.result_format` says).
    pub detail: Detail,
    /// The answer's budget, tokens: `max_tokens` clamped to `search.max_result_tokens`.
    pub max_tokens: usize,
}

fn object(arguments: Option<&RawValue>) -> Result<Map<String, Value>, String> {
    let value: Value = match arguments {
        Some(raw) => serde_json::from_str(raw.get())
            .map_err(|e| format!("Arguments are not valid JSON: {e}"))?,
        None => Value::Null,
    };
    match value {
        Value::Object(map) => Ok(map),
        Value::Null => Ok(Map::new()),
        other => Err(format!("Arguments must be an object, not {other}.")),
    }
}

fn optional_string(
    args: &Map<String, Value>,
    key: &str,
    who: Asker,
) -> Result<Option<String>, String> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.trim().is_empty() => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.trim().to_string())),
        Some(other) => Err(format!("{} must be a string, not {other}.", who.name(key))),
    }
}

fn optional_integer(
    args: &Map<String, Value>,
    key: &str,
    min: i64,
    max: Option<i64>,
    who: Asker,
) -> Result<Option<i64>, String> {
    let range = match max {
        Some(max) => format!("an integer from {min} to {max}"),
        None => format!("an integer of at least {min}"),
    };
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => match n.as_i64() {
            Some(v) if v >= min => Ok(Some(v)),
            _ => Err(format!("{} is {n}; it must be {range}.", who.name(key))),
        },
        Some(other) => Err(format!("{} must be {range}, not {other}.", who.name(key))),
    }
}

/// Who asks for a search, for the wording of an error: the model through the search tool
/// ("Argument `query`"), an HTTP client of the search endpoint ("field `query`"), or a client
/// listing tools with a query ("`params.query`").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Asker {
    Tool,
    Http,
    List,
}

impl Asker {
    fn name(self, key: &str) -> String {
        match self {
            Asker::Tool => format!("Argument `{key}`"),
            Asker::Http => format!("field `{key}`"),
            Asker::List => format!("`params.{key}`"),
        }
    }
}

/// A query as given, trimmed: an error says what to change.
fn query_text(query: &str, who: Asker) -> Result<String, String> {
    let query = query.trim();
    if query.is_empty() {
        return Err(format!(
            "{} is empty: describe the task in a few words.",
            who.name("query")
        ));
    }
    let chars = query.chars().count();
    if chars > MAX_QUERY_CHARS {
        return Err(format!(
            "{} has {chars} characters; the maximum is {MAX_QUERY_CHARS}. Describe the task in a few words.",
            who.name("query")
        ));
    }
    Ok(query.to_string())
}

/// The cursor of the next page of a list answered for a query (`LIST_CURSOR` and an offset).
pub fn list_cursor(offset: usize) -> String {
    format!("{LIST_CURSOR}{offset}")
}

/// The first tool of the page a list-query cursor points at.
fn list_offset(cursor: Option<&str>) -> Result<usize, String> {
    let Some(cursor) = cursor else {
        return Ok(0);
    };
    cursor
        .strip_prefix(LIST_CURSOR)
        .and_then(|n| n.parse::<usize>().ok())
        .ok_or_else(|| {
            format!("Invalid cursor {cursor:?}: pass the nextCursor of the previous page")
        })
}

/// Reads a `tools/list` query (SEP-1821): a page of the configured maximum size.
pub fn parse_list_query(query: &ListQuery, config: &Config) -> Result<Query, String> {
    Ok(Query {
        text: query_text(&query.text, Asker::List)?,
        limit: usize::try_from(config.search.max_allowable_results).unwrap_or(1),
        offset: list_offset(query.cursor.as_deref())?,
        group: None,
    })
}

/// Reads a search's arguments. An error is a message for the asker: it says what to change.
pub fn parse_search(
    arguments: Option<&RawValue>,
    config: &Config,
    who: Asker,
) -> Result<SearchArgs, String> {
    let max = i64::from(config.search.max_allowable_results);
    let args = object(arguments)?;
    let missing = "Missing required argument `query`: pass {\"query\": \"what you want to do\"}.";
    let query = match args.get("query") {
        None | Some(Value::Null) => return Err(missing.to_string()),
        Some(Value::String(q)) => query_text(q, who)?,
        Some(other) => {
            return Err(format!(
                "{} must be a string describing the task, not {other}.",
                who.name("query")
            ))
        }
    };
    let limit = match optional_integer(&args, "limit", 1, Some(max), who) {
        Ok(l) => l.map_or(max, |l| l.min(max)),
        // Above the maximum is clamped, not refused (the model asked for "many").
        Err(_)
            if args
                .get("limit")
                .and_then(Value::as_i64)
                .is_some_and(|l| l > max) =>
        {
            max
        }
        Err(e) => return Err(e),
    };
    let offset = optional_integer(&args, "offset", 0, None, who)?.unwrap_or(0);
    let detail = match optional_string(&args, "detail", who)? {
        None => Detail::default_for(config),
        Some(d) => Detail::parse(&d).ok_or_else(|| {
            format!(
                "{} must be \"full\", \"compact\" or \"names\", not {d:?}.",
                who.name("detail")
            )
        })?,
    };
    // Outside the range is clamped, not refused: a budget is a ceiling the model guesses.
    let max_tokens = match args.get("max_tokens") {
        None | Some(Value::Null) => None,
        Some(Value::Number(n)) if n.as_f64().is_some_and(|t| t >= 0.0) => Some(
            n.as_u64()
                .map_or(usize::MAX, |t| usize::try_from(t).unwrap_or(usize::MAX)),
        ),
        Some(other) => {
            return Err(format!(
                "{} must be a positive integer (tokens), not {other}.",
                who.name("max_tokens")
            ))
        }
    };
    Ok(SearchArgs {
        query: Query {
            text: query,
            limit: usize::try_from(limit).unwrap_or(1),
            offset: usize::try_from(offset).unwrap_or(0),
            group: optional_string(&args, "group", who)?,
        },
        namespace: optional_string(&args, "namespace", who)?,
        kind: match optional_string(&args, "type", who)? {
            None => SearchType::Tool,
            Some(t) => SearchType::parse(&t).ok_or_else(|| {
                format!(
                    "{} must be \"tool\", \"prompt\", \"resource\" or \"all\", not {t:?}.",
                    who.name("type")
                )
            })?,
        },
        detail,
        max_tokens: answer::budget(config, max_tokens),
    })
}

/// Reads `describe_tool`'s names.
pub fn parse_describe(arguments: Option<&RawValue>) -> Result<Vec<String>, String> {
    let args = object(arguments)?;
    let names = match args.get("names") {
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| v.as_str().map(str::to_string))
            .collect::<Option<Vec<_>>>(),
        Some(Value::String(one)) => Some(vec![one.clone()]),
        _ => None,
    };
    match names {
        Some(n) if !n.is_empty() && n.len() <= MAX_DESCRIBE => Ok(n),
        _ => Err(format!(
            "Argument `names` must be a list of 1 to {MAX_DESCRIBE} tool names from a search result."
        )),
    }
}

/// Reads `call_tool`'s target name and arguments (raw, passed on as they are).
pub fn parse_call(arguments: Option<&RawValue>) -> Result<(String, Option<Box<RawValue>>), String> {
    #[derive(serde::Deserialize)]
    struct Call {
        #[serde(default)]
        name: Option<Value>,
        #[serde(default)]
        arguments: Option<Box<RawValue>>,
    }
    let raw = arguments.map(RawValue::get).unwrap_or("{}");
    let call: Call = serde_json::from_str(raw).map_err(|_| {
        "Arguments must be {\"name\": \"tool name\", \"arguments\": {...}}.".to_string()
    })?;
    let name = match call.name {
        Some(Value::String(n)) if !n.trim().is_empty() => n.trim().to_string(),
        _ => {
            return Err(
                "Missing required argument `name`: the exact name of the tool to call.".to_string(),
            )
        }
    };
    if let Some(a) = &call.arguments {
        let t = a.get().trim_start();
        if !t.starts_with('{') && t != "null" {
            return Err(
                "Argument `arguments` must be an object matching the tool's inputSchema."
                    .to_string(),
            );
        }
    }
    Ok((name, call.arguments))
}

/// `list_tool_groups`: the caller's groups with their tool counts.
pub fn groups_result(groups: &[(String, usize)], modern: bool) -> String {
    #[derive(serde::Serialize)]
    struct Group<'a> {
        group: &'a str,
        tools: usize,
    }
    let items: Vec<Group> = groups
        .iter()
        .map(|(group, tools)| Group {
            group,
            tools: *tools,
        })
        .collect();
    result::text(&[&result::to_json(&items)], false, modern)
}

/// `describe_tool`: the definitions found, and the names that were not.
pub fn describe_result(found: &[&Tool], missing: &[String], modern: bool) -> String {
    if found.is_empty() {
        return error_result(
            &format!(
                "No tool named {} is available; use the search tool to find names.",
                missing.join(", ")
            ),
            modern,
        );
    }
    let definitions = result::definitions(found.iter().copied());
    let not_available = format!("Not available: {}.", missing.join(", "));
    let mut texts = vec![definitions.as_str()];
    if !missing.is_empty() {
        texts.push(&not_available);
    }
    result::text(&texts, false, modern)
}

/// A tool result that reports a problem to the model (`isError`, MCP spec 2025-11-25 "Error
/// Handling": tool errors are results, so the model can read and correct them).
/// The longest script `run_script` takes, in UTF-8 bytes: a program an agent writes is a few
/// kilobytes, and a request body above 256 KiB is not read (`REQUEST_CLASSIFY_CAP`).
#[cfg_attr(not(feature = "code-mode"), allow(dead_code))]
pub const MAX_SCRIPT_BYTES: usize = 100_000;

/// Code mode's tool: its input is the script; its structured result the script's return value
/// (`result`) or its error (`error`, with the `limit` that ended it), and its log.
pub fn script_definition(config: &Config, structured: bool) -> Vec<String> {
    #[cfg(feature = "code-mode")]
    {
        let schema = format!(
            "{{\"type\":\"object\",\"properties\":{{\"script\":{{\"type\":\"string\",\
             \"maxLength\":{MAX_SCRIPT_BYTES},\"description\":\"JavaScript: the body of an \
             async function. Use await, and return the answer.\"}}}},\"required\":[\"script\"]}}"
        );
        let output =
            "{\"type\":\"object\",\"properties\":{\"result\":{},\"error\":{\"type\":\"string\"},\
                      \"limit\":{\"type\":[\"string\",\"null\"]},\"log\":{\"type\":\"string\"}}}";
        vec![definition(
            &config.code.tool_name,
            "Run a script",
            mcp_tool_search_script::API,
            &schema,
            structured.then_some(output),
            false,
        )]
    }
    #[cfg(not(feature = "code-mode"))]
    {
        // `mode: "code"` is refused at configuration in a module without the sandbox.
        let _ = (config, structured);
        Vec::new()
    }
}

/// `run_script`'s arguments: `{"script": "..."}`.
#[cfg_attr(not(feature = "code-mode"), allow(dead_code))]
pub fn parse_script(arguments: Option<&RawValue>) -> Result<String, String> {
    let args = object(arguments)?;
    match args.get("script") {
        Some(Value::String(s)) if s.trim().is_empty() => {
            Err("Argument `script` is empty: pass the JavaScript to run.".to_string())
        }
        Some(Value::String(s)) if s.len() > MAX_SCRIPT_BYTES => Err(format!(
            "Argument `script` is longer than {MAX_SCRIPT_BYTES} bytes (UTF-8)."
        )),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(other) => Err(format!(
            "Argument `script` must be a string of JavaScript, not {other}."
        )),
        None => Err(
            "Missing required argument `script`: pass {\"script\": \"return 1 + 1\"}.".to_string(),
        ),
    }
}

pub fn error_result(message: &str, modern: bool) -> String {
    result::text(&[message], true, modern)
}

/// A `tools/list` result for a query: the page's definitions as the upstream declared them,
/// `nextCursor` while more match, how they were ranked in `_meta`; for protocol 2026-07-28 the
/// caching hints (server/utilities/caching.mdx): ranked answers are stale at once, and private
/// when shaped by the caller's authorization (said to every client then, as lists under a
/// policy are).
pub fn list_query_result(
    query: &Query,
    ranked: &Ranked<'_>,
    modern: bool,
    private: bool,
) -> String {
    let next = query.offset + ranked.found.len();
    let next_cursor =
        (ranked.matches > next && !ranked.found.is_empty()).then(|| list_cursor(next));
    result::list(
        ranked.found.iter().map(|f| f.tool),
        next_cursor.as_deref(),
        SearchMeta::of(ranked, query.offset),
        match (private, modern) {
            (true, _) => Some("private"),
            (false, true) => Some("public"),
            (false, false) => None,
        },
        modern,
    )
}

#[cfg(test)]
mod tests;
