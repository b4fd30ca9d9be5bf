//! The JSON the filter writes itself: tool results (MCP `CallToolResult`, spec 2025-11-25
//! "Tools"), the search metadata, and the plain-HTTP endpoint's bodies. What every search
//! writes (the result, its `_meta`, a list page) is written by hand with `json::Object`; the
//! rest through serde. Field order is the declaration order; definitions from the upstream go
//! in as raw JSON, untouched.

use crate::index::catalog::Tool;
use crate::mcp::json::{self, Object};
use crate::rank::search::Ranked;
use serde::Serialize;
use serde_json::value::RawValue;

/// The search metadata (`_meta["mcp-tool-search/search"]`, and `metadata` over HTTP), written
/// by hand ([`SearchMeta::write`]): it is on every search's path, where serde's per-field calls
/// cost more than the fields.
pub struct SearchMeta<'a> {
    strategy: &'static str,
    fallback: Option<FallbackMeta<'a>>,
    candidates: usize,
    /// Under vector and hybrid ranking: the candidates that had a vector.
    embedded: Option<usize>,
    matches: usize,
    offset: usize,
    returned: usize,
    /// Names this answer, so that the calls after it can be told apart (search insights).
    search_id: Option<&'a str>,
    /// Each result's name, in rank order from `offset + 1` (with `search_id`).
    results: Vec<&'a str>,
    routing: Option<RoutingMeta<'a>>,
}

/// How hierarchical search chose the tools it ranked (under `search.strategy: hierarchical`).
struct RoutingMeta<'a> {
    strategy_used: &'static str,
    groups_used: &'a [String],
    stage1_group_count: usize,
    stage2_candidate_count: usize,
    final_count: usize,
    /// Why it fell back to flat ranking.
    routing_fallback: Option<&'a str>,
}

struct FallbackMeta<'a> {
    kind: &'static str,
    reason: &'a str,
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
        self.results = names.collect();
        self
    }

    /// [`SearchMeta::write`] into a string of its own.
    #[cfg(test)]
    fn json(&self) -> String {
        let mut out = String::with_capacity(160 + 40 * self.results.len());
        self.write(&mut out);
        out
    }

    /// The metadata as a JSON object at the end of `out`, fields in declaration order
    /// (`routing`'s flattened in).
    fn write(&self, out: &mut String) {
        let mut o = Object::starting(out);
        o.text("strategy", self.strategy);
        if let Some(f) = &self.fallback {
            let mut fallback = Object::new();
            fallback.text("mode", "bm25");
            fallback.text("kind", f.kind);
            fallback.text("reason", f.reason);
            o.raw("fallback", &fallback.end());
        }
        o.count("candidates", self.candidates);
        if let Some(embedded) = self.embedded {
            o.count("embedded", embedded);
        }
        o.count("matches", self.matches);
        o.count("offset", self.offset);
        o.count("returned", self.returned);
        if let Some(id) = self.search_id {
            o.text("search_id", id);
        }
        if !self.results.is_empty() {
            let ranked = self.results.iter().zip(self.offset + 1..);
            json::write_array(o.member("results"), ranked, |out, (name, rank)| {
                out.push_str("{\"name\":");
                json::write_string(out, name);
                out.push_str(",\"rank\":");
                json::write_usize(out, rank);
                out.push('}');
            });
        }
        if let Some(r) = &self.routing {
            o.text("strategy_used", r.strategy_used);
            json::write_array(o.member("groups_used"), r.groups_used, |out, group| {
                json::write_string(out, group);
            });
            o.count("stage1_group_count", r.stage1_group_count);
            o.count("stage2_candidate_count", r.stage2_candidate_count);
            o.count("final_count", r.final_count);
            if let Some(reason) = r.routing_fallback {
                let mut fallback = Object::new();
                fallback.text("strategy", "flat");
                fallback.text("reason", reason);
                o.raw("routing_fallback", &fallback.end());
            }
        }
        o.close_into(out);
    }

    /// `{"mcp-tool-search/search": …}`, the `_meta` of a search's result, at the end of `out`.
    fn write_envelope(&self, out: &mut String) {
        out.push_str("{\"mcp-tool-search/search\":");
        self.write(out);
        out.push('}');
    }

    pub fn of(ranked: &'a Ranked<'_>, offset: usize) -> Self {
        SearchMeta {
            strategy: ranked.strategy.name(),
            fallback: ranked.fallback.as_ref().map(|f| FallbackMeta {
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
                routing_fallback: r.fallback.as_deref(),
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

/// A result's `_meta`.
enum Meta<'a, 'm> {
    None,
    Search(&'a SearchMeta<'m>),
    /// A JSON object, as it is.
    Json(&'a str),
}

/// A `CallToolResult`: the texts, the structured content, and `_meta` as they are.
fn result(
    texts: &[&str],
    structured_content: Option<&RawValue>,
    is_error: bool,
    meta: Meta<'_, '_>,
    modern: bool,
) -> String {
    let size = texts.iter().map(|t| t.len() + 28).sum::<usize>()
        + structured_content.map_or(0, |s| s.get().len() + 20)
        + match meta {
            Meta::None => 0,
            Meta::Search(m) => 200 + 40 * m.results.len(),
            Meta::Json(m) => m.len() + 8,
        }
        + 64;
    let mut o = Object::with_capacity(size);
    json::write_array(o.member("content"), texts, |out, text| {
        out.push_str("{\"type\":\"text\",\"text\":");
        json::write_string(out, text);
        out.push('}');
    });
    // MCP 2025-06-18 "Structured Content": beside the text, for a tool with an `outputSchema`.
    if let Some(structured) = structured_content {
        o.raw("structuredContent", structured.get());
    }
    o.boolean("isError", is_error);
    match meta {
        Meta::None => {}
        Meta::Search(m) => m.write_envelope(o.member("_meta")),
        Meta::Json(m) => o.raw("_meta", m),
    }
    // Protocol 2026-07-28 results say whether they are complete.
    if modern {
        o.text("resultType", "complete");
    }
    o.end()
}

/// A script's tool result (code mode): its texts and, where the protocol has it, the same as
/// `structuredContent`.
#[cfg_attr(not(feature = "code-mode"), allow(dead_code))]
pub fn script(
    texts: &[&str],
    structured: Option<&RawValue>,
    is_error: bool,
    modern: bool,
) -> String {
    result(texts, structured, is_error, Meta::None, modern)
}

/// A tool result of text items.
pub fn text(texts: &[&str], is_error: bool, modern: bool) -> String {
    result(texts, None, is_error, Meta::None, modern)
}

/// A search's tool result, with how it was ranked in `_meta` and, for protocols that define
/// it, its `structuredContent`.
pub fn search(
    texts: &[&str],
    meta: SearchMeta<'_>,
    structured: Option<&RawValue>,
    modern: bool,
) -> String {
    result(texts, structured, false, Meta::Search(&meta), modern)
}

/// The definitions as a JSON array, each exactly as the upstream declared it.
pub fn definitions<'t>(tools: impl Iterator<Item = &'t Tool>) -> String {
    let mut defs = String::new();
    json::write_array(&mut defs, tools, |out, t| out.push_str(t.definition()));
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
    let defs = definitions(tools);
    let mut o = Object::with_capacity(defs.len() + 512);
    o.raw("tools", &defs);
    if let Some(cursor) = next_cursor {
        o.text("nextCursor", cursor);
    }
    meta.write_envelope(o.member("_meta"));
    if modern {
        o.text("resultType", "complete");
        o.number("ttlMs", 0);
    }
    if let Some(scope) = cache_scope {
        o.text("cacheScope", scope);
    }
    o.end()
}

/// `{"tools": [definitions…], "metadata": {…}}`: the HTTP search endpoint's answer.
/// `{"tools": [...], "metadata": {...}, "explanations"?: [...]}`, the explanations in the
/// order of the tools.
pub fn http_search(
    tools: &RawValue,
    meta: SearchMeta<'_>,
    explanations: Option<&[crate::rank::explain::Shown]>,
) -> String {
    let mut o = Object::with_capacity(tools.get().len() + 512);
    o.raw("tools", tools.get());
    meta.write(o.member("metadata"));
    if let Some(explanations) = explanations {
        o.raw("explanations", &to_json(&explanations));
    }
    o.end()
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
    let meta = to_json(&Envelope { search: meta });
    result(texts, structured, false, Meta::Json(&meta), modern)
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

    #[test]
    fn search_metadata_has_every_field_in_order_and_valid_json() {
        let groups = vec!["git\"hub".to_string(), "slack".to_string()];
        let meta = SearchMeta {
            strategy: "bm25",
            fallback: Some(FallbackMeta {
                kind: "timeout",
                reason: "no answer in 800 ms",
            }),
            candidates: 12,
            embedded: Some(10),
            matches: 9,
            offset: 2,
            returned: 2,
            search_id: Some("vm1-7"),
            results: vec!["create_issue", "a\nb"],
            routing: Some(RoutingMeta {
                strategy_used: "hierarchical",
                groups_used: &groups,
                stage1_group_count: 2,
                stage2_candidate_count: 12,
                final_count: 2,
                routing_fallback: Some("no group matched"),
            }),
        };
        let expected = r#"{"strategy":"bm25","fallback":{"mode":"bm25","kind":"timeout","reason":"no answer in 800 ms"},"candidates":12,"embedded":10,"matches":9,"offset":2,"returned":2,"search_id":"vm1-7","results":[{"name":"create_issue","rank":3},{"name":"a\nb","rank":4}],"strategy_used":"hierarchical","groups_used":["git\"hub","slack"],"stage1_group_count":2,"stage2_candidate_count":12,"final_count":2,"routing_fallback":{"strategy":"flat","reason":"no group matched"}}"#;
        assert_eq!(meta.json(), expected);
        serde_json::from_str::<serde_json::Value>(&meta.json()).unwrap();
        let bare = SearchMeta {
            fallback: None,
            embedded: None,
            search_id: None,
            results: Vec::new(),
            routing: None,
            ..meta
        };
        assert_eq!(
            bare.json(),
            r#"{"strategy":"bm25","candidates":12,"matches":9,"offset":2,"returned":2}"#
        );
        assert_eq!(
            search(&["t"], bare, None, true),
            r#"{"content":[{"type":"text","text":"t"}],"isError":false,"_meta":{"mcp-tool-search/search":{"strategy":"bm25","candidates":12,"matches":9,"offset":2,"returned":2}},"resultType":"complete"}"#
        );
    }
}
