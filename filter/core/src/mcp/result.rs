//! The JSON the filter writes itself, through serde: tool results (MCP `CallToolResult`, spec
//! 2025-11-25 "Tools"), the search metadata, and the plain-HTTP endpoint's bodies. Field order
//! is the declaration order; definitions from the upstream go in as raw JSON, untouched.

use crate::index::catalog::Tool;
use crate::rank::search::Ranked;
use serde::Serialize;
use serde_json::value::RawValue;

/// One `{"type":"text","text":…}` content item.
#[derive(Serialize)]
struct Text<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    text: &'a str,
}

#[derive(Serialize)]
struct ToolResult<'a, M: Serialize> {
    content: Vec<Text<'a>>,
    /// MCP 2025-06-18 "Structured Content": beside the text, for a tool with an `outputSchema`.
    #[serde(rename = "structuredContent", skip_serializing_if = "Option::is_none")]
    structured_content: Option<&'a RawValue>,
    #[serde(rename = "isError")]
    is_error: bool,
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    meta: Option<M>,
    /// Protocol 2026-07-28 results say whether they are complete.
    #[serde(rename = "resultType", skip_serializing_if = "Option::is_none")]
    result_type: Option<&'static str>,
}

/// The search metadata (`_meta["mcp-tool-search/search"]`, and `metadata` over HTTP).
#[derive(Serialize)]
pub struct SearchMeta<'a> {
    strategy: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    fallback: Option<FallbackMeta<'a>>,
    candidates: usize,
    /// Under vector and hybrid ranking: the candidates that had a vector.
    #[serde(skip_serializing_if = "Option::is_none")]
    embedded: Option<usize>,
    matches: usize,
    offset: usize,
    returned: usize,
    /// Names this answer, so that the calls after it can be told apart (search insights).
    #[serde(skip_serializing_if = "Option::is_none")]
    search_id: Option<&'a str>,
    /// Each result's name and rank, in the answer's order (with `search_id`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    results: Vec<RankMeta<'a>>,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    routing: Option<RoutingMeta<'a>>,
}

#[derive(Serialize)]
struct RankMeta<'a> {
    name: &'a str,
    rank: usize,
}

/// How hierarchical search chose the tools it ranked (under `search.strategy: hierarchical`).
#[derive(Serialize)]
struct RoutingMeta<'a> {
    strategy_used: &'static str,
    groups_used: &'a [String],
    stage1_group_count: usize,
    stage2_candidate_count: usize,
    final_count: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    routing_fallback: Option<RoutingFallback<'a>>,
}

#[derive(Serialize)]
struct RoutingFallback<'a> {
    strategy: &'static str,
    reason: &'a str,
}

#[derive(Serialize)]
struct FallbackMeta<'a> {
    mode: &'static str,
    kind: &'static str,
    reason: &'a str,
}

#[derive(Serialize)]
struct MetaEnvelope<'a> {
    #[serde(rename = "mcp-tool-search/search")]
    search: SearchMeta<'a>,
}

impl<'a> SearchMeta<'a> {
    /// The answer shows `returned` of the results ranked (its budget left out the rest).
    pub fn showing(mut self, returned: usize) -> Self {
        self.returned = returned;
        if let Some(routing) = &mut self.routing {
            routing.final_count = returned;
        }
        self
    }

    /// The answer is search `id`, showing `names` in rank order from `offset + 1`.
    pub fn identified(mut self, id: &'a str, names: impl Iterator<Item = &'a str>) -> Self {
        self.search_id = Some(id);
        self.results = names
            .enumerate()
            .map(|(i, name)| RankMeta {
                name,
                rank: self.offset + i + 1,
            })
            .collect();
        self
    }

    pub fn of(ranked: &'a Ranked<'_>, offset: usize) -> Self {
        SearchMeta {
            strategy: ranked.strategy.name(),
            fallback: ranked.fallback.as_ref().map(|f| FallbackMeta {
                mode: "bm25",
                kind: f.kind.name(),
                reason: &f.reason,
            }),
            candidates: ranked.candidates,
            embedded: ranked.embedded,
            matches: ranked.matches,
            offset,
            returned: ranked.found.len(),
            search_id: None,
            results: Vec::new(),
            routing: ranked.routing.as_ref().map(|r| RoutingMeta {
                strategy_used: r.used.name(),
                groups_used: &r.groups,
                stage1_group_count: r.stage1_groups,
                stage2_candidate_count: ranked.candidates,
                final_count: ranked.found.len(),
                routing_fallback: r.fallback.as_deref().map(|reason| RoutingFallback {
                    strategy: "flat",
                    reason,
                }),
            }),
        }
    }
}

/// Serializes what holds only strings, numbers and raw JSON: it cannot fail, and the fallback
/// keeps the output valid JSON regardless.
pub fn to_json<T: Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| "null".to_string())
}

/// [`to_json`] as raw JSON to embed in a larger message: written once, never parsed back
/// (`null`, the default, if it could not be written).
pub fn to_raw_json<T: Serialize>(value: &T) -> Box<RawValue> {
    serde_json::value::to_raw_value(value).unwrap_or_default()
}

fn result<M: Serialize>(
    texts: &[&str],
    structured_content: Option<&RawValue>,
    is_error: bool,
    meta: Option<M>,
    modern: bool,
) -> String {
    to_json(&ToolResult {
        content: texts
            .iter()
            .map(|text| Text { kind: "text", text })
            .collect(),
        structured_content,
        is_error,
        meta,
        result_type: modern.then_some("complete"),
    })
}

/// A tool result of text items.
pub fn text(texts: &[&str], is_error: bool, modern: bool) -> String {
    result::<()>(texts, None, is_error, None, modern)
}

/// A search's tool result, with how it was ranked in `_meta` and, for protocols that define
/// it, its `structuredContent`.
pub fn search(
    texts: &[&str],
    meta: SearchMeta<'_>,
    structured: Option<&RawValue>,
    modern: bool,
) -> String {
    result(
        texts,
        structured,
        false,
        Some(MetaEnvelope { search: meta }),
        modern,
    )
}

/// The definitions as a JSON array, each exactly as the upstream declared it.
pub fn definitions<'t>(tools: impl Iterator<Item = &'t Tool>) -> String {
    let mut defs = String::from("[");
    for (i, t) in tools.enumerate() {
        if i > 0 {
            defs.push(',');
        }
        defs.push_str(t.definition());
    }
    defs.push(']');
    defs
}

/// A `tools/list` result of `tools` (a query's page); protocol 2026-07-28 adds `resultType`
/// and `ttlMs`.
pub fn list<'t>(
    tools: impl Iterator<Item = &'t Tool>,
    next_cursor: Option<&str>,
    meta: SearchMeta<'_>,
    cache_scope: Option<&'static str>,
    modern: bool,
) -> String {
    #[derive(Serialize)]
    struct ListResult<'a> {
        tools: &'a RawValue,
        #[serde(rename = "nextCursor", skip_serializing_if = "Option::is_none")]
        next_cursor: Option<&'a str>,
        #[serde(rename = "_meta")]
        meta: MetaEnvelope<'a>,
        #[serde(rename = "resultType", skip_serializing_if = "Option::is_none")]
        result_type: Option<&'static str>,
        #[serde(rename = "ttlMs", skip_serializing_if = "Option::is_none")]
        ttl_ms: Option<u64>,
        #[serde(rename = "cacheScope", skip_serializing_if = "Option::is_none")]
        cache_scope: Option<&'static str>,
    }
    let defs = definitions(tools);
    let Ok(tools) = RawValue::from_string(defs) else {
        return "null".to_string();
    };
    to_json(&ListResult {
        tools: &tools,
        next_cursor,
        meta: MetaEnvelope { search: meta },
        result_type: modern.then_some("complete"),
        ttl_ms: modern.then_some(0),
        cache_scope,
    })
}

/// `{"tools": [definitions…], "metadata": {…}}`: the HTTP search endpoint's answer.
/// `{"tools": [...], "metadata": {...}, "explanations"?: [...]}`, the explanations in the
/// order of the tools.
pub fn http_search(
    tools: &RawValue,
    meta: SearchMeta<'_>,
    explanations: Option<&[crate::rank::explain::Shown]>,
) -> String {
    #[derive(Serialize)]
    struct Body<'a> {
        tools: &'a RawValue,
        metadata: SearchMeta<'a>,
        #[serde(skip_serializing_if = "Option::is_none")]
        explanations: Option<&'a [crate::rank::explain::Shown]>,
    }
    to_json(&Body {
        tools,
        metadata: meta,
        explanations,
    })
}

/// The HTTP endpoint's view of stage 1: the caller's groups that match, best first.
pub fn groups_view(
    query: &str,
    config: &crate::config::Config,
    groups: &crate::index::catalog::groups::GroupIndex,
    ranked: &[crate::index::catalog::groups::GroupScore],
    chosen: &[usize],
) -> String {
    #[derive(Serialize)]
    struct Group<'a> {
        group: &'a str,
        score: f32,
        normalized: f32,
        tools: usize,
        chosen: bool,
    }
    #[derive(Serialize)]
    struct Body<'a> {
        query: &'a str,
        strategy: &'static str,
        max_groups: usize,
        min_group_score: f32,
        group_count: usize,
        groups: Vec<Group<'a>>,
    }
    let routing = &config.search.routing;
    to_json(&Body {
        query,
        strategy: config.search.strategy.name(),
        max_groups: routing.groups,
        min_group_score: routing.min_group_score,
        group_count: groups.groups.len(),
        groups: ranked
            .iter()
            .map(|g| Group {
                group: groups.name(g.group),
                score: g.score,
                normalized: g.normalized,
                tools: groups.groups.get(g.group).map_or(0, |x| x.tools.len()),
                chosen: chosen.contains(&g.group),
            })
            .collect(),
    })
}

/// What a search over prompts and resources did (`_meta["mcp-tool-search/search"]`, and
/// `metadata` over HTTP).
#[derive(Serialize)]
pub struct MixedMeta {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub strategy: &'static str,
    pub candidates: usize,
    /// Under vector and hybrid ranking: the candidates that had a vector.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub embedded: Option<usize>,
    pub matches: usize,
    pub offset: usize,
    pub returned: usize,
}

/// One mixed result: `{"type": "prompt", "definition": {...}}`, the definition exactly as the
/// upstream declared it.
pub fn typed_definition(found: &crate::rank::mixed::Mixed<'_>) -> String {
    format!(
        "{{\"type\":\"{}\",\"definition\":{}}}",
        found.entry.type_name(),
        found.found.tool.definition()
    )
}

/// The HTTP endpoint's answer to a search over prompts and resources.
pub fn http_mixed(results: &RawValue, meta: MixedMeta) -> String {
    #[derive(Serialize)]
    struct Body<'a> {
        results: &'a RawValue,
        metadata: MixedMeta,
    }
    to_json(&Body {
        results,
        metadata: meta,
    })
}

/// The search tool's answer to a search over prompts and resources.
pub fn mixed(
    texts: &[&str],
    meta: MixedMeta,
    structured: Option<&RawValue>,
    modern: bool,
) -> String {
    #[derive(Serialize)]
    struct Envelope {
        #[serde(rename = "mcp-tool-search/search")]
        search: MixedMeta,
    }
    result(
        texts,
        structured,
        false,
        Some(Envelope { search: meta }),
        modern,
    )
}

/// `{"error": message}`: the HTTP endpoint's errors.
pub fn http_error(message: &str) -> String {
    #[derive(Serialize)]
    struct Body<'a> {
        error: &'a str,
    }
    to_json(&Body { error: message })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_escape_text_and_keep_field_order() {
        assert_eq!(
            text(&["bad \"q\"\n"], true, true),
            r#"{"content":[{"type":"text","text":"bad \"q\"\n"}],"isError":true,"resultType":"complete"}"#
        );
        assert_eq!(
            text(&["a", "b"], false, false),
            r#"{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}],"isError":false}"#
        );
        assert_eq!(http_error("x\"y"), r#"{"error":"x\"y"}"#);
    }
}
