//! A search over prompts, resources and resource templates (and tools, for `type: "all"`):
//! each kind's catalog ranked as tools are (BM25, or vectors where the kind has them), the
//! caller's entries only, then merged on scores normalized within each kind, ties by type and
//! key.
//!
//! Raw BM25 scores do not compare across kinds: a term's idf in three prompts is a fraction of
//! its idf in a thousand tools, so the larger catalog would win whatever matched. Each kind's
//! score is the one its own ranking gives (BM25 divided by the kind's best, or the hybrid
//! fusion, both from 0 to 1; or the cosine, which one encoder makes comparable by itself),
//! scaled by how well the kind's best entry answers the query on a scale every kind shares:
//! the share of the query's terms it holds (under hybrid ranking, or its cosine against the
//! best cosine of any kind, whichever is higher). So a prompt and a tool that match a query
//! equally well rank side by side, and the best of a kind that matches one word of four does
//! not rank beside the best of one that matches all four.

use super::search::{self, coverage, Fallback, Found, Query, Vectors};
use crate::config::entries::Entry;
use crate::config::{Config, Ranking};
use crate::index::bm25::{best_of, Hit};
use crate::index::catalog::{CatalogIndex, Tool};
use crate::vector::ToolVectors;
use std::rc::Rc;

/// One result: its kind and the entry (its score as its kind's ranking gave it).
#[derive(Debug, Clone, Copy)]
pub struct Mixed<'a> {
    pub entry: Entry,
    pub found: Found<'a>,
}

#[derive(Debug)]
pub struct MixedRanked<'a> {
    pub found: Vec<Mixed<'a>>,
    /// Entries that match, over every kind searched.
    pub matches: usize,
    /// Entries in scope (the caller's), over every kind searched.
    pub candidates: usize,
    /// Vector or hybrid when some kind was ranked with vectors, else BM25.
    pub strategy: Ranking,
    /// Under vector and hybrid ranking: the candidates of every kind that had a vector.
    pub embedded: Option<usize>,
    /// Why no kind was ranked with vectors, when none was and the configuration asks for them.
    pub fallback: Option<Fallback>,
}

/// Whether the caller may use an entry of a kind, by its key.
pub type EntryAllowed<'f> = &'f dyn Fn(Entry, &str) -> bool;

/// One kind's catalog and, when semantic ranking runs, its entries' vectors.
pub struct KindCatalog {
    pub entry: Entry,
    pub index: Rc<CatalogIndex>,
    pub vectors: Option<Rc<ToolVectors>>,
}

/// Ranks `catalogs` (one per kind) for `query`; `allowed` says which entries the caller may
/// use (`None`: all); `query_vector` is `Err` when the query has no vector.
pub fn search<'a>(
    catalogs: &'a [KindCatalog],
    config: &Config,
    query: &Query,
    allowed: Option<EntryAllowed<'_>>,
    query_vector: Result<&[f32], Fallback>,
) -> MixedRanked<'a> {
    let wanted = query.offset.saturating_add(query.limit);
    let each = Query {
        limit: wanted,
        offset: 0,
        group: None,
        ..query.clone()
    };
    let mut found: Vec<Mixed<'a>> = Vec::new();
    // Per kind: its ranking, its best entry's query coverage and best cosine, and where its
    // results end in `found`.
    let mut ranked_kinds = Vec::new();
    let (mut matches, mut candidates) = (0, 0);
    let (mut strategy, mut embedded, mut fallback) = (Ranking::Bm25, None, None);
    for kind in catalogs {
        let entry = kind.entry;
        let scope = |t: &Tool| allowed.is_none_or(|a| a(entry, &t.name));
        let lookup = |i: usize| kind.vectors.as_ref().and_then(|v| v.get(i));
        let vectors = match (&query_vector, &kind.vectors) {
            (Ok(q), Some(_)) => Ok(Vectors {
                query: q,
                tool: &lookup,
            }),
            (Ok(_), None) => Err(Fallback::new(
                search::FallbackKind::NotEmbedded,
                format!("no {} vectors yet", entry.type_name()),
            )),
            (Err(f), _) => Err(f.clone()),
        };
        let ranked = search::flat(
            &kind.index,
            config,
            &each,
            allowed.map(|_| &scope as &dyn Fn(&Tool) -> bool),
            vectors,
        );
        matches += ranked.matches;
        candidates += ranked.candidates;
        let best = ranked.found.first().map(|f| f.doc);
        let coverage = best.map_or(0.0, |doc| coverage(&kind.index, &query.text, doc));
        let best_cosine = ranked
            .scoring
            .cosines
            .as_ref()
            .and_then(|c| c.iter().flatten().copied().reduce(f32::max));
        if ranked.strategy != Ranking::Bm25 {
            strategy = ranked.strategy;
            *embedded.get_or_insert(0) += ranked.embedded.unwrap_or(0);
        } else if fallback.is_none() {
            fallback = ranked.fallback;
        }
        found.extend(ranked.found.into_iter().map(|found| Mixed { entry, found }));
        ranked_kinds.push((ranked.strategy, coverage, best_cosine, found.len()));
    }
    let best_cosine = ranked_kinds
        .iter()
        .filter_map(|k| k.2)
        .reduce(f32::max)
        .unwrap_or(0.0);
    let mut start = 0;
    for (ranking, coverage, kind_cosine, end) in ranked_kinds {
        let strength = match (ranking, kind_cosine) {
            (Ranking::Vector, _) => 1.0,
            (Ranking::Hybrid, Some(c)) if best_cosine > 0.0 => coverage.max(c / best_cosine),
            _ => coverage,
        };
        for m in found.get_mut(start..end).unwrap_or_default() {
            m.found.score *= strength;
        }
        start = end;
    }
    // Best first, ties by kind then key: a total order (a key is unique in its kind's catalog),
    // chosen over positions in `found` by the ranking's own top-k.
    let mut hits = found.iter().enumerate().filter_map(|(i, m)| {
        Some(Hit {
            doc: u32::try_from(i).ok()?,
            score: m.found.score,
        })
    });
    let before = |a: u32, b: u32| match (found.get(a as usize), found.get(b as usize)) {
        (Some(a), Some(b)) => (a.entry, &a.found.tool.name) < (b.entry, &b.found.tool.name),
        _ => false,
    };
    let found = best_of(&mut hits, &before, wanted)
        .into_iter()
        .skip(query.offset)
        .filter_map(|h| found.get(h.doc as usize).copied())
        .collect();
    MixedRanked {
        found,
        matches,
        candidates,
        strategy,
        embedded,
        fallback: (strategy == Ranking::Bm25).then_some(fallback).flatten(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::catalog::Catalog;
    use crate::rank::search::FallbackKind;
    use serde_json::value::RawValue;

    fn catalog(entry: Entry, defs: &[&str]) -> KindCatalog {
        let entries = defs
            .iter()
            .map(|d| {
                let raw: Box<RawValue> = serde_json::from_str(d).unwrap();
                Tool::from_entry(entry, &raw).unwrap()
            })
            .collect();
        let index = CatalogIndex::build("ns", Catalog::from_tools(entries), &Config::default());
        KindCatalog {
            entry,
            index: Rc::new(index),
            vectors: None,
        }
    }

    fn lexical() -> Result<&'static [f32], Fallback> {
        Err(Fallback::new(FallbackKind::Unavailable, "lexical"))
    }

    fn q(text: &str, limit: usize, offset: usize) -> Query {
        Query {
            text: text.into(),
            limit,
            offset,
            group: None,
        }
    }

    #[test]
    fn kinds_are_ranked_together_and_filtered_for_the_caller() {
        let catalogs = [
            catalog(
                Entry::Tool,
                &[r#"{"name":"create_invoice","description":"Create an invoice"}"#],
            ),
            catalog(
                Entry::Prompt,
                &[
                    r#"{"name":"invoice_reminder","description":"Write a reminder for an unpaid invoice"}"#,
                    r#"{"name":"standup","description":"Summarize the daily standup"}"#,
                ],
            ),
            catalog(
                Entry::Resource,
                &[
                    r#"{"uri":"file:///invoices/2026.csv","name":"invoices 2026","description":"Every invoice of the year"}"#,
                ],
            ),
        ];
        let config = Config::default();
        let r = search(&catalogs, &config, &q("invoice", 10, 0), None, lexical());
        let kinds: Vec<Entry> = r.found.iter().map(|m| m.entry).collect();
        assert_eq!(r.matches, 3);
        assert_eq!(r.candidates, 4);
        assert_eq!(kinds.len(), 3);
        assert!(kinds.contains(&Entry::Resource));
        assert_eq!(
            r.found
                .iter()
                .find(|m| m.entry == Entry::Resource)
                .unwrap()
                .found
                .tool
                .name
                .as_ref(),
            "file:///invoices/2026.csv"
        );
        // Paging runs over the merged order.
        let second = search(&catalogs, &config, &q("invoice", 1, 1), None, lexical());
        assert_eq!(second.found[0].found.tool.name, r.found[1].found.tool.name);
        // The caller may not use resources: none is ranked, none counted.
        let no_resources = |e: Entry, _: &str| e != Entry::Resource;
        let r = search(
            &catalogs,
            &config,
            &q("invoice", 10, 0),
            Some(&no_resources),
            lexical(),
        );
        assert_eq!(r.matches, 2);
        assert!(r.found.iter().all(|m| m.entry != Entry::Resource));
    }

    /// The same two entries as tools among many and as prompts among few: BM25's idf differs
    /// tenfold between the two catalogs, yet each prompt ranks beside its tool.
    #[test]
    fn a_prompt_and_a_tool_of_equal_relevance_interleave() {
        let pair = [
            r#"{"name":"invoice_reminder","description":"Write a reminder for an unpaid invoice"}"#,
            r#"{"name":"invoice_export","description":"Export an invoice as a file"}"#,
        ];
        let fillers: Vec<String> = (0..40)
            .map(|i| {
                format!(r#"{{"name":"filler_{i:02}","description":"Unrelated tool number {i}"}}"#)
            })
            .collect();
        let mut tools: Vec<&str> = fillers.iter().map(String::as_str).collect();
        tools.extend(pair);
        let catalogs = [catalog(Entry::Tool, &tools), catalog(Entry::Prompt, &pair)];
        let r = search(
            &catalogs,
            &Config::default(),
            &q("invoice reminder", 4, 0),
            None,
            lexical(),
        );
        let order: Vec<(Entry, &str)> = r
            .found
            .iter()
            .map(|m| (m.entry, m.found.tool.name.as_ref()))
            .collect();
        assert_eq!(
            &order[..2],
            [
                (Entry::Tool, "invoice_reminder"),
                (Entry::Prompt, "invoice_reminder")
            ]
        );
        let mut rest = order[2..].to_vec();
        rest.sort();
        assert_eq!(
            rest,
            [
                (Entry::Tool, "invoice_export"),
                (Entry::Prompt, "invoice_export")
            ]
        );
    }

    /// Under hybrid ranking a prompt is found by meaning, with no word of the query.
    #[test]
    fn kinds_with_vectors_rank_by_meaning() {
        let config = Config::parse(
            r#"{"search":{"ranking":"hybrid","embeddings":{"cluster":"e","model_id":"m","dimensions":2}}}"#,
        )
        .unwrap();
        let mut tools = catalog(
            Entry::Tool,
            &[r#"{"name":"create_invoice","description":"Create an invoice"}"#],
        );
        tools.vectors = Some(Rc::new(ToolVectors {
            by_position: vec![Some(vec![1.0, 0.0])],
        }));
        let mut prompts = catalog(
            Entry::Prompt,
            &[
                r#"{"name":"standup","description":"Summarize the daily standup"}"#,
                r#"{"name":"release_notes","description":"Draft release notes"}"#,
            ],
        );
        // By catalog position (release_notes, standup). release_notes has no vector yet: it
        // takes part by its BM25 score (none here).
        prompts.vectors = Some(Rc::new(ToolVectors {
            by_position: vec![None, Some(vec![0.0, 1.0])],
        }));
        let catalogs = [tools, prompts];
        let query = [0.0f32, 1.0];
        let r = search(
            &catalogs,
            &config,
            &q("morning meeting recap", 5, 0),
            None,
            Ok(&query),
        );
        assert_eq!((r.strategy, r.embedded), (Ranking::Hybrid, Some(2)));
        assert!(r.fallback.is_none());
        let names: Vec<&str> = r.found.iter().map(|m| m.found.tool.name.as_ref()).collect();
        assert_eq!(names, ["standup"]);
        // Without vectors for any kind: BM25, and why.
        let bare = [catalog(
            Entry::Tool,
            &[r#"{"name":"create_invoice","description":"Create an invoice"}"#],
        )];
        let r = search(&bare, &config, &q("invoice", 5, 0), None, Ok(&query));
        assert_eq!(r.strategy, Ranking::Bm25);
        assert_eq!(r.fallback.map(|f| f.kind), Some(FallbackKind::NotEmbedded));
    }

    /// A prompt's arguments say what it is for as a tool's input schema does: they are
    /// searched (and embedded) with its name and description.
    #[test]
    fn a_prompt_is_found_by_its_arguments() {
        let catalogs = [catalog(
            Entry::Prompt,
            &[
                r#"{"name":"completable","title":"Team Management","description":"First argument choice narrows values for second argument.","arguments":[{"name":"department","description":"Choose the department."},{"name":"name","description":"Choose a team member to lead the selected department."}]}"#,
                r#"{"name":"simple","description":"A prompt with no arguments"}"#,
            ],
        )];
        let r = search(
            &catalogs,
            &Config::default(),
            &q("lead a department", 5, 0),
            None,
            lexical(),
        );
        let names: Vec<&str> = r.found.iter().map(|m| m.found.tool.name.as_ref()).collect();
        assert_eq!(names, ["completable"]);
    }
}
