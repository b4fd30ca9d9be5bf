//! What the agent reads of a search: the answer sized to a budget of tokens, at the detail
//! asked, with `structuredContent` for the protocols that define it (MCP 2025-06-18 "Tools",
//! "Structured Content" and "Output Schema").
//!
//! Tokens are estimated as bytes / 4, rounded up, over everything the agent reads: every text
//! item and the structured content. Clients cap what they keep of a result (Claude Code about
//! 25,000 tokens), so an answer that fits its budget is read whole. Full definitions go first,
//! best result first, for as many results as fit; the rest get one line each (name, first
//! sentence, required arguments, whether the tool asks the user first) while those fit; a note
//! ends the answer, saying how to see more.

use super::{CALL, DESCRIBE};
use crate::config::{Config, ResultFormat};
use crate::mcp::json;
use crate::mcp::result::{self, MixedMeta, SearchMeta};
use crate::rank::search::{Found, Query, Ranked};
use serde::Serialize;
use serde_json::Value;

/// The smallest budget an answer can be given: the note and a query echoed in it fit.
pub const MIN_RESULT_TOKENS: usize = 500;
/// The longest query echo in an answer's header (a query may have 500 characters).
const ECHOED_QUERY_CHARS: usize = 120;
/// What the header and the closing note may take, bytes (checked again once written).
const NOTE_RESERVE: usize = 900;
/// The protocol that added `structuredContent` and `outputSchema` to tools.
pub const STRUCTURED_SINCE: &str = "2025-06-18";

/// How much of each result an answer shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Detail {
    /// Full definitions while they fit, then one line each.
    Full,
    /// One line each.
    Compact,
    /// Names only.
    Names,
}

impl Detail {
    pub fn parse(s: &str) -> Option<Detail> {
        match s {
            "full" => Some(Detail::Full),
            "compact" => Some(Detail::Compact),
            "names" => Some(Detail::Names),
            _ => None,
        }
    }

    /// The detail when the caller names none: as `search.result_format` says.
    pub fn default_for(config: &Config) -> Detail {
        match config.search.result_format {
            ResultFormat::Definitions => Detail::Full,
            ResultFormat::Summary => Detail::Compact,
        }
    }
}

/// How one result was shown (`structuredContent.results[].detail`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Shown {
    Full,
    Compact,
    Name,
}

/// The budget of a search's answer, tokens: the caller's `max_tokens` clamped to the
/// configuration's `search.max_result_tokens`.
pub fn budget(config: &Config, asked: Option<usize>) -> usize {
    let max = config.search.max_result_tokens.max(MIN_RESULT_TOKENS);
    asked.map_or(max, |t| t.clamp(MIN_RESULT_TOKENS, max))
}

/// Tokens as estimated for a budget: bytes / 4, rounded up.
pub fn tokens(bytes: usize) -> usize {
    bytes.div_ceil(4)
}

/// The tokens an agent reads of a tool result (`CallToolResult` as JSON): its text items and
/// its `structuredContent`, estimated as its budget is. `None` when it is not a result.
pub fn tokens_read(result: &str) -> Option<usize> {
    let result: Value = serde_json::from_str(result).ok()?;
    let texts = result
        .get("content")?
        .as_array()?
        .iter()
        .map(|c| c.get("text").and_then(Value::as_str).map_or(0, str::len))
        .sum::<usize>();
    let structured = result
        .get("structuredContent")
        .map_or(0, |s| s.to_string().len());
    Some(tokens(texts + structured))
}

/// One entry of `structuredContent.results`.
#[derive(Serialize)]
pub struct StructuredEntry<'a> {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub name: &'a str,
    pub rank: usize,
    pub score: f64,
    pub detail: Shown,
}

/// `structuredContent` of a search (the schema is `OUTPUT_SCHEMA`).
#[derive(Serialize)]
struct Structured<'a> {
    results: &'a [StructuredEntry<'a>],
    matches: usize,
    offset: usize,
    more: bool,
}

/// The search tool's `outputSchema`: what `structured` writes.
pub const OUTPUT_SCHEMA: &str = "{\"type\":\"object\",\"properties\":{\
\"results\":{\"type\":\"array\",\"description\":\"The results shown, best first.\",\"items\":{\"type\":\"object\",\"properties\":{\
\"type\":{\"type\":\"string\",\"enum\":[\"tool\",\"prompt\",\"resource\",\"resource_template\"]},\
\"name\":{\"type\":\"string\",\"description\":\"The tool's or prompt's name, the resource's URI.\"},\
\"rank\":{\"type\":\"integer\",\"minimum\":1},\
\"score\":{\"type\":\"number\",\"description\":\"The ranking's score (higher is better).\"},\
\"detail\":{\"type\":\"string\",\"enum\":[\"full\",\"compact\",\"name\"],\"description\":\"How the text shows it: full definition, one line, or name.\"}},\
\"required\":[\"type\",\"name\",\"rank\",\"score\",\"detail\"]}},\
\"matches\":{\"type\":\"integer\",\"minimum\":0,\"description\":\"How many results match in all.\"},\
\"offset\":{\"type\":\"integer\",\"minimum\":0},\
\"more\":{\"type\":\"boolean\",\"description\":\"Whether more results follow: search again with offset set past the last rank.\"}},\
\"required\":[\"results\",\"matches\",\"offset\",\"more\"]}";

/// A finite score as JSON can carry it.
pub fn score(s: f32) -> f64 {
    if s.is_finite() {
        (f64::from(s) * 10_000.0).round() / 10_000.0
    } else {
        0.0
    }
}

/// What one entry of `structuredContent` adds to an answer, bytes: its name and ~80 bytes of
/// fields (nothing without structured content).
fn entry_cost(name: &str, structured: bool) -> usize {
    if structured {
        name.len() + 80
    } else {
        0
    }
}

/// `structuredContent` for `entries`.
pub fn structured(
    entries: &[StructuredEntry<'_>],
    matches: usize,
    offset: usize,
) -> Box<serde_json::value::RawValue> {
    result::to_raw_json(&Structured {
        results: entries,
        matches,
        offset,
        more: matches > offset + entries.len(),
    })
}

/// The results an answer shows, and how: the full definitions come first, then one line for
/// each of the rest (`lines`).
struct Page<'f, 'a> {
    entries: Vec<(&'f Found<'a>, Shown)>,
    lines: Vec<String>,
}

impl Page<'_, '_> {
    /// The full definitions, as a JSON array.
    fn definitions(&self) -> String {
        result::definitions(
            self.entries
                .iter()
                .filter(|(_, shown)| *shown == Shown::Full)
                .map(|(f, _)| f.tool),
        )
    }
}

/// What an answer is asked to be: its detail and budget (tokens), and what the caller's
/// protocol reads (`structuredContent` from 2025-06-18, `resultType` from 2026-07-28).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    pub detail: Detail,
    pub max_tokens: usize,
    pub structured: bool,
    pub modern: bool,
}

/// A search's tool result, and how many of the ranked tools it shows (the first ones).
pub struct SearchAnswer {
    pub json: String,
    pub shown: usize,
}

/// A search's tool result within its budget: full definitions, then lines, then the note; with
/// `id`, its `_meta` names the search and each result's rank.
pub fn search_answer(
    config: &Config,
    query: &Query,
    ranked: &Ranked<'_>,
    shape: Shape,
    id: Option<&str>,
) -> SearchAnswer {
    let Shape {
        detail,
        max_tokens,
        structured,
        ..
    } = shape;
    let budget = max_tokens.saturating_mul(4);
    let reserve = NOTE_RESERVE;
    let mut used = 0;
    let mut page = Page {
        entries: Vec::new(),
        lines: Vec::new(),
    };
    let mut full = detail == Detail::Full;
    for f in &ranked.found {
        let entry = entry_cost(&f.tool.name, structured);
        if full {
            let cost = f.tool.definition().len() + 1 + entry;
            if used + cost + reserve <= budget {
                used += cost;
                page.entries.push((f, Shown::Full));
                continue;
            }
            full = false;
        }
        let (line, shown) = match detail {
            Detail::Names => (f.tool.name.to_string(), Shown::Name),
            _ => (
                compact_line(f, config.search.max_description_chars),
                Shown::Compact,
            ),
        };
        let cost = line.len() + 1 + entry;
        if used + cost + reserve > budget {
            break;
        }
        used += cost;
        page.lines.push(line);
        page.entries.push((f, shown));
    }
    // The reserve is an estimate: drop results from the end until the written answer fits.
    loop {
        let answer = write(config, query, ranked, &page, shape, id);
        if tokens(answer.1) <= max_tokens || page.entries.is_empty() {
            return SearchAnswer {
                json: answer.0,
                shown: page.entries.len(),
            };
        }
        if let Some((_, Shown::Compact | Shown::Name)) = page.entries.pop() {
            page.lines.pop();
        }
    }
}

/// The result, and the bytes the agent reads of it (texts and structured content).
fn write(
    config: &Config,
    query: &Query,
    ranked: &Ranked<'_>,
    page: &Page<'_, '_>,
    shape: Shape,
    id: Option<&str>,
) -> (String, usize) {
    let Shape {
        detail,
        max_tokens,
        structured,
        modern,
    } = shape;
    let shown = page.entries.len();
    let last = query.offset + shown;
    let more = ranked.matches > last;
    // Nothing fits: say so, rather than point at the same page again.
    let too_large = match ranked.found.first() {
        Some(best) if shown == 0 => format!(
            " The best match, {}, is larger than this answer's budget of {} tokens: call again with a larger max_tokens (at most {}) or with offset {} to skip it.",
            echo(&best.tool.name),
            max_tokens,
            budget(config, None),
            query.offset + 1
        ),
        _ => String::new(),
    };
    let texts: Vec<String> = match detail {
        Detail::Full if page.lines.is_empty() && shown == ranked.found.len() => {
            vec![
                page.definitions(),
                definitions_note(query, ranked, shown, more),
            ]
        }
        Detail::Full => {
            let mut texts = vec![page.definitions()];
            if !page.lines.is_empty() {
                texts.push(page.lines.join("\n"));
            }
            let mut note = definitions_note(query, ranked, shown, more && shown > 0);
            note.push_str(&too_large);
            if !page.lines.is_empty() {
                note.push_str(&format!(
                    " The first {} are full definitions; the other {} did not fit this answer's budget and are one line each: ",
                    shown - page.lines.len(),
                    page.lines.len()
                ));
                note.push_str(&full_definition_hint(config));
            }
            texts.push(note);
            texts
        }
        Detail::Compact | Detail::Names => {
            let mut text = lines_text(config, query, ranked, &page.lines, more && shown > 0);
            text.push_str(&too_large);
            vec![text]
        }
    };
    let entries: Vec<StructuredEntry<'_>> = page
        .entries
        .iter()
        .enumerate()
        .map(|(i, (f, shown))| StructuredEntry {
            kind: "tool",
            name: &f.tool.name,
            rank: query.offset + i + 1,
            score: score(f.score),
            detail: *shown,
        })
        .collect();
    let structured = structured.then(|| self::structured(&entries, ranked.matches, query.offset));
    let read = texts.iter().map(String::len).sum::<usize>()
        + structured.as_ref().map_or(0, |s| s.get().len());
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    let mut meta = SearchMeta::of(ranked, query.offset).showing(shown);
    if let Some(id) = id {
        meta = meta.identified(id, page.entries.iter().map(|(f, _)| f.tool.name.as_ref()));
    }
    (
        result::search(&texts, meta, structured.as_deref(), modern),
        read,
    )
}

/// One prompt, resource, template or tool a search over several kinds found: its typed
/// definition (`{"type": …, "definition": …}`, the definition as the upstream wrote it).
pub struct Typed {
    pub kind: &'static str,
    pub name: String,
    pub score: f32,
    pub json: String,
}

/// Typed definitions as a JSON array.
pub fn typed_array(items: &[Typed]) -> String {
    let mut out = String::new();
    crate::mcp::json::write_array(&mut out, items, |out, item| out.push_str(&item.json));
    out
}

/// A search over prompts and resources (or everything) as the search tool answers it: typed
/// definitions while they fit `max_tokens`, then the note.
pub fn mixed_result(items: &[Typed], mut meta: MixedMeta, shape: Shape) -> String {
    let Shape {
        max_tokens,
        structured,
        modern,
        ..
    } = shape;
    let budget = max_tokens.saturating_mul(4);
    let mut used = 0;
    let mut shown = 0;
    for item in items {
        let entry = entry_cost(&item.name, structured);
        let cost = item.json.len() + 1 + entry;
        if used + cost + NOTE_RESERVE > budget {
            break;
        }
        used += cost;
        shown += 1;
    }
    let (matches, offset) = (meta.matches, meta.offset);
    loop {
        let page = items.get(..shown).unwrap_or(items);
        let last = offset + page.len();
        let mut note = format!(
            "{} of {matches} matching entries. Use a prompt with prompts/get and a resource with resources/read.",
            page.len()
        );
        if matches > last {
            note.push_str(&format!(" Call again with offset {last} for more."));
        }
        let definitions = typed_array(page);
        let entries: Vec<StructuredEntry<'_>> = page
            .iter()
            .enumerate()
            .map(|(i, item)| StructuredEntry {
                kind: item.kind,
                name: &item.name,
                rank: offset + i + 1,
                score: score(item.score),
                detail: Shown::Full,
            })
            .collect();
        let structured = structured.then(|| self::structured(&entries, matches, offset));
        let read =
            definitions.len() + note.len() + structured.as_ref().map_or(0, |s| s.get().len());
        if tokens(read) <= max_tokens || shown == 0 {
            meta.returned = page.len();
            return result::mixed(&[&definitions, &note], meta, structured.as_deref(), modern);
        }
        shown -= 1;
    }
}

/// How to get one tool's full definition, by what the configuration offers.
fn full_definition_hint(config: &Config) -> String {
    if config.search.result_format == ResultFormat::Summary {
        format!("call {DESCRIBE} with the names you need for their full definitions.")
    } else {
        format!(
            "search again with a tool's exact name (and \"limit\": 1) for its full definition, or call {} with a smaller \"limit\".",
            config.search.tool_name
        )
    }
}

/// The closing note of an answer of definitions (today's wording when everything fits).
fn definitions_note(query: &Query, ranked: &Ranked<'_>, shown: usize, more: bool) -> String {
    let first = query.offset + 1;
    let last = query.offset + shown;
    let mut note = format!("{shown} of {} matching tools", ranked.matches);
    if shown > 0 {
        note.push_str(&format!(" (results {first} to {last})"));
    }
    if more {
        note.push_str(&format!("; call again with offset {last} for more"));
    }
    note.push('.');
    note
}

/// An answer of one line per result: a header, the lines, what to do next.
fn lines_text(
    config: &Config,
    query: &Query,
    ranked: &Ranked<'_>,
    lines: &[String],
    more: bool,
) -> String {
    let first = query.offset + 1;
    let last = query.offset + lines.len();
    let echoed = echo(&query.text);
    let mut out = if lines.is_empty() {
        format!(
            "{} tools of {} match {echoed}.",
            ranked.matches, ranked.candidates
        )
    } else {
        format!(
            "{} tools of {} match {echoed} (showing {first} to {last}):",
            ranked.matches, ranked.candidates
        )
    };
    for line in lines {
        out.push('\n');
        out.push_str(line);
    }
    out.push('\n');
    if lines.is_empty() && ranked.found.is_empty() {
        out.push_str("Next: search again with other words.");
    } else {
        if config.search.result_format == ResultFormat::Summary {
            out.push_str(&format!(
                "Next: call {DESCRIBE} with the names you need for their full definitions, then call the tool by name (or use {CALL} with name and arguments)."
            ));
        } else {
            out.push_str("Next: ");
            out.push_str(&full_definition_hint(config));
            out.push_str(" Then call the tool by name.");
        }
        if more {
            out.push_str(&format!(
                " More matches: call {} again with offset {last}.",
                config.search.tool_name
            ));
        }
    }
    out
}

/// The query as an answer quotes it: a JSON string, cut past `ECHOED_QUERY_CHARS`.
fn echo(query: &str) -> String {
    match query.char_indices().nth(ECHOED_QUERY_CHARS) {
        Some((at, _)) => json::string(&format!("{}…", query.get(..at).unwrap_or(query))),
        None => json::string(query),
    }
}

/// One line for a result: name, the description's first sentence (cut at `max_chars`, with
/// a marker), its required arguments, and whether it asks the user first (not read-only).
pub fn compact_line(found: &Found<'_>, max_chars: usize) -> String {
    let tool = found.tool;
    let def: Value = serde_json::from_str(tool.definition()).unwrap_or(Value::Null);
    let mut line = tool.name.to_string();
    let sentence = short_description(&tool.description, max_chars);
    if !sentence.is_empty() {
        line.push_str(" · ");
        line.push_str(&sentence);
    }
    let required = required_arguments(&def);
    if !required.is_empty() {
        line.push_str(" · requires: ");
        line.push_str(&required.join(", "));
    }
    let read_only = def.pointer("/annotations/readOnlyHint") == Some(&Value::Bool(true));
    if !read_only {
        line.push_str(" · asks the user first");
    }
    line
}

/// A description as one-line results show it: its first sentence, cut at `max_chars`.
pub fn short_description(description: &str, max_chars: usize) -> String {
    cut(&first_sentence(description), max_chars)
}

/// The names a tool definition's `inputSchema.required` lists.
pub fn required_arguments(definition: &Value) -> Vec<&str> {
    definition
        .pointer("/inputSchema/required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// The marker a cut description ends with.
pub const CUT_MARKER: &str = " […]";

/// `text` within `max_chars` characters: cut after the last sentence that fits, else at the
/// last word, with `CUT_MARKER`.
fn cut(text: &str, max_chars: usize) -> String {
    let Some((limit, _)) = text.char_indices().nth(max_chars) else {
        return text.to_string();
    };
    let head = text.get(..limit).unwrap_or(text);
    let sentence = head
        .char_indices()
        .rev()
        .find(|&(i, c)| {
            matches!(c, '.' | '!' | '?') && head.get(i + 1..).is_some_and(|r| r.starts_with(' '))
        })
        .map(|(i, c)| i + c.len_utf8());
    let end = sentence
        .or_else(|| head.rfind(' '))
        .filter(|&e| e > 0)
        .unwrap_or(limit);
    format!("{}{CUT_MARKER}", head.get(..end).unwrap_or(head).trim_end())
}

/// The description's first sentence, on one line.
pub fn first_sentence(description: &str) -> String {
    let text = description.split_whitespace().collect::<Vec<_>>().join(" ");
    let end = text
        .char_indices()
        .find(|&(i, c)| {
            matches!(c, '.' | '!' | '?')
                && text
                    .get(i + 1..)
                    .is_none_or(|rest| rest.is_empty() || rest.starts_with(' '))
        })
        .map(|(i, c)| i + c.len_utf8());
    match end {
        Some(end) => text.get(..end).unwrap_or(&text).to_string(),
        None => text,
    }
}

#[cfg(test)]
mod tests;
