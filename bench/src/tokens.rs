//! What the agent reads, in tokens (bytes / 4, the filter's own estimate): a `tools/list`
//! without the filter and with it, and a `tool_search` answer at `limit` 5 with no budget
//! (`search.max_result_tokens` at its maximum) and within the default budget, for the generated
//! catalogs and the same catalogs with large schemas (`large_schemas`). Natively, through the
//! core's `exchange` on a `MemoryHost`, as a 2025-11-25 client (so with `structuredContent`).

use crate::messages::{list_request, list_response, plugin_config, search_request};
use crate::native::{list_response as native_response, NativeEnv};
use mcp_tool_search_core::{tokens_read, Config, MemoryHost};
use serde_json::Value;
use std::rc::Rc;

type Result<T> = std::result::Result<T, String>;

/// One catalog's figures, tokens.
#[derive(Debug, Clone)]
pub struct TokenRow {
    pub catalog: &'static str,
    pub tools: usize,
    /// The largest definition, bytes.
    pub largest: usize,
    pub list_upstream: usize,
    pub list_filtered: usize,
    /// Over the bench's queries: (median, largest) answer.
    pub search_unbudgeted: (usize, usize),
    pub search_budgeted: (usize, usize),
    /// How many results of the budgeted answers were full definitions (of 5 per query).
    pub full_shown: (usize, usize),
}

fn tokens(bytes: usize) -> usize {
    bytes.div_ceil(4)
}

/// What the agent reads of a JSON-RPC tool result (tokens), and how many of its results were
/// full definitions.
fn read(body: &[u8]) -> Result<(usize, usize)> {
    let v: Value = serde_json::from_slice(body).map_err(|e| format!("search answer: {e}"))?;
    let result = v.get("result").ok_or("search answer without a result")?;
    let read = tokens_read(&result.to_string()).ok_or("search answer without content")?;
    let full = result
        .pointer("/structuredContent/results")
        .and_then(Value::as_array)
        .map_or(0, |r| {
            r.iter()
                .filter(|e| e.get("detail").and_then(Value::as_str) == Some("full"))
                .count()
        });
    Ok((read, full))
}

fn median_max(mut xs: Vec<usize>) -> (usize, usize) {
    xs.sort_unstable();
    (
        xs.get(xs.len() / 2).copied().unwrap_or(0),
        xs.last().copied().unwrap_or(0),
    )
}

/// The answers to the bench's queries under `config` (JSON with `search` merged in).
fn answers(jsonl: &str, search: &str) -> Result<(usize, Vec<(usize, usize)>)> {
    let mut config: Value =
        serde_json::from_str(&plugin_config(&["/mcp".to_owned()])).map_err(|e| e.to_string())?;
    if let Some(config) = config.as_object_mut() {
        config.insert(
            "search".to_owned(),
            serde_json::from_str(search).map_err(|e| e.to_string())?,
        );
    }
    let config = Config::parse(&config.to_string()).map_err(|e| e.to_string())?;
    let env = NativeEnv::new(&config, &Rc::new(MemoryHost::default()));
    let (json, _) = list_response(jsonl);
    let listed = env.list(
        list_request().as_bytes(),
        &native_response("application/json", &json),
    )?;
    let answers = crate::QUERIES
        .iter()
        .enumerate()
        .map(|(i, q)| read(&env.search(search_request(i + 2, q).as_bytes())?))
        .collect::<Result<Vec<_>>>()?;
    Ok((tokens(listed.len()), answers))
}

fn row(catalog: &'static str, tools: usize, jsonl: &str) -> Result<TokenRow> {
    let (list_filtered, unbudgeted) = answers(jsonl, r#"{"max_result_tokens":1000000}"#)?;
    let (_, budgeted) = answers(jsonl, "{}")?;
    let full: Vec<usize> = budgeted.iter().map(|&(_, f)| f).collect();
    Ok(TokenRow {
        catalog,
        tools,
        largest: jsonl.lines().map(str::len).max().unwrap_or(0),
        list_upstream: tokens(list_response(jsonl).0.len()),
        list_filtered,
        search_unbudgeted: median_max(unbudgeted.iter().map(|&(t, _)| t).collect()),
        search_budgeted: median_max(budgeted.iter().map(|&(t, _)| t).collect()),
        full_shown: (
            full.iter().copied().min().unwrap_or(0),
            full.iter().copied().max().unwrap_or(0),
        ),
    })
}

/// The largest catalog measured with large schemas.
pub const LARGE_MAX_TOOLS: usize = 1000;

/// Every catalog size, generated and (up to `LARGE_MAX_TOOLS`) with large schemas.
pub fn measure(catalogs: &[(usize, String)]) -> Result<Vec<TokenRow>> {
    let mut rows = Vec::new();
    for (n, jsonl) in catalogs {
        rows.push(row("generated", *n, jsonl).map_err(|e| format!("generated, {n} tools: {e}"))?);
    }
    // At 10,000 tools the large schemas make an 80 MB list, past the bench's `max_body_bytes`.
    for (n, _) in catalogs.iter().filter(|(n, _)| *n <= LARGE_MAX_TOOLS) {
        let large = mcp_tool_search_wasm_tests::large_schemas::jsonl(*n);
        rows.push(
            row("large schemas", *n, &large)
                .map_err(|e| format!("large schemas, {n} tools: {e}"))?,
        );
    }
    Ok(rows)
}
