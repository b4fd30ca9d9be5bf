//! A search over prompts, resources and resource templates (and tools, for `type: "all"`):
//! each kind's catalog ranked by BM25, the caller's entries only, then merged by raw BM25 score
//! (normalized per kind, each kind's best would rank first whatever it matched), ties by type
//! and key. Vectors are for tools: a mixed
//! search is lexical whatever `search.ranking` says, so that scores compare across kinds.

use super::search::{self, Found, Query};
use crate::config::entries::Entry;
use crate::config::Config;
use crate::index::bm25::{best_of, Hit};
use crate::index::catalog::{CatalogIndex, Tool};

/// One result: its kind and the entry (its score the raw BM25 score).
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
}

/// Whether the caller may use an entry of a kind, by its key.
pub type EntryAllowed<'f> = &'f dyn Fn(Entry, &str) -> bool;

/// Ranks `catalogs` (one per kind) for `query`; `allowed` says which entries the caller may
/// use (`None`: all).
pub fn search<'a>(
    catalogs: &'a [(Entry, std::rc::Rc<CatalogIndex>)],
    config: &Config,
    query: &Query,
    allowed: Option<EntryAllowed<'_>>,
) -> MixedRanked<'a> {
    let wanted = query.offset.saturating_add(query.limit);
    let each = Query {
        limit: wanted,
        offset: 0,
        group: None,
        ..query.clone()
    };
    let mut found = Vec::new();
    let (mut matches, mut candidates) = (0, 0);
    for (entry, index) in catalogs {
        let entry = *entry;
        let scope = |t: &Tool| allowed.is_none_or(|a| a(entry, &t.name));
        let ranked = search::lexical(
            index,
            config,
            &each,
            allowed.map(|_| &scope as &dyn Fn(&Tool) -> bool),
        );
        matches += ranked.matches;
        candidates += ranked.candidates;
        let best = ranked.scoring.max_bm25;
        found.extend(ranked.found.into_iter().map(|found| Mixed {
            entry,
            found: Found {
                score: found.score * best,
                ..found
            },
        }));
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
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::catalog::Catalog;
    use serde_json::value::RawValue;
    use std::rc::Rc;

    fn catalog(entry: Entry, defs: &[&str]) -> (Entry, Rc<CatalogIndex>) {
        let entries = defs
            .iter()
            .map(|d| {
                let raw: Box<RawValue> = serde_json::from_str(d).unwrap();
                Tool::from_entry(entry, &raw).unwrap()
            })
            .collect();
        let index = CatalogIndex::build("ns", Catalog::from_tools(entries), &Config::default());
        (entry, Rc::new(index))
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
        let r = search(&catalogs, &config, &q("invoice", 10, 0), None);
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
                .name,
            "file:///invoices/2026.csv"
        );
        // Paging runs over the merged order.
        let second = search(&catalogs, &config, &q("invoice", 1, 1), None);
        assert_eq!(second.found[0].found.tool.name, r.found[1].found.tool.name);
        // The caller may not use resources: none is ranked, none counted.
        let no_resources = |e: Entry, _: &str| e != Entry::Resource;
        let r = search(
            &catalogs,
            &config,
            &q("invoice", 10, 0),
            Some(&no_resources),
        );
        assert_eq!(r.matches, 2);
        assert!(r.found.iter().all(|m| m.entry != Entry::Resource));
    }
}
