//! A built `CatalogIndex` as bytes, so that one worker's index serves every worker: the VM that
//! indexes a catalog version publishes it to shared data, and the others load it instead of
//! parsing the stored catalog and splitting 300,000 words again (at 10,000 tools those were
//! tens of milliseconds per worker, the load is a copy and a pass over the postings).
//!
//! Layout: the definitions, concatenated (UTF-8), then the rest in little-endian binary, then a
//! trailer. The definitions come first so that a loaded snapshot's buffer, cut at their end
//! (which frees nothing and copies nothing), becomes the text every tool's definition points
//! into: a worker holds its definitions once, not once in the snapshot and once per tool.
//!
//! ```text
//! definitions | meta | meta_len: u32 | definitions_len: u32 | MAGIC
//! meta = version, complete, weights, tuning, tools (name, title, description, definition end),
//!        folded-name order, BM25 (see `Bm25Index::write`)
//! ```
//!
//! Anything unexpected (another format, a truncated value, a range off a character boundary)
//! makes the load answer `None`, and the worker indexes the stored catalog itself.

use crate::config::{FieldWeights, Tuning};
use crate::index::bm25::Bm25Index;
use crate::index::bytes::{Reader, Writer};
use crate::index::catalog::{Catalog, CatalogIndex, Tool};
use std::rc::Rc;

/// Names the format; a filter that writes another layout, or splits text into other terms (the
/// terms are stored, the query is split by the loading filter), writes another magic.
const MAGIC: &[u8; 8] = b"MTSIDX04";
const TRAILER: usize = 4 + 4 + MAGIC.len();

/// The snapshot of `index` for catalog `version`; `None` when its BM25 part is not built or a
/// size does not fit the format.
// Not inlined: a copy of the format's code at each caller is kilobytes of the .wasm.
#[inline(never)]
pub fn encode(index: &CatalogIndex, version: &[u8]) -> Option<Vec<u8>> {
    let bm25 = index.built_bm25()?;
    let tools = index.catalog.tools();
    let definitions: usize = tools.iter().map(|t| t.definition_bytes().len()).sum();
    let definitions_len = u32::try_from(definitions).ok()?;
    let mut count = Writer::counting();
    write_meta(&mut count, index, bm25, version)?;
    let meta_len = u32::try_from(count.counted).ok()?;
    let mut out = Vec::with_capacity(definitions + count.counted + TRAILER);
    for tool in tools {
        out.extend_from_slice(tool.definition_bytes());
    }
    let mut w = Writer::into(out);
    write_meta(&mut w, index, bm25, version)?;
    w.u32(meta_len);
    w.u32(definitions_len);
    w.out.extend_from_slice(MAGIC);
    Some(w.out)
}

fn write_meta(
    w: &mut Writer,
    index: &CatalogIndex,
    bm25: &Bm25Index,
    version: &[u8],
) -> Option<()> {
    let tools = index.catalog.tools();
    w.bytes(version)?;
    w.u8(u8::from(index.catalog.is_complete()));
    for weight in [
        index.weights.name,
        index.weights.description,
        index.weights.input_schema,
    ] {
        w.f32(weight);
    }
    write_tuning(w, &index.tuning);
    w.len(tools.len())?;
    let mut end = 0u32;
    for tool in tools {
        end = end.checked_add(u32::try_from(tool.definition_bytes().len()).ok()?)?;
        w.bytes(tool.name.as_bytes())?;
        w.bytes(tool.title.as_bytes())?;
        w.bytes(tool.description.as_bytes())?;
        w.u32(end);
    }
    w.len(index.by_folded_name.len())?;
    for &d in &index.by_folded_name {
        w.u32(d);
    }
    bm25.write(w)
}

/// Loads the snapshot `bytes` of catalog `version` for `namespace`, if it is one and was built
/// with `weights` and `tuning` (an index built otherwise would rank otherwise).
#[inline(never)]
pub fn decode(
    mut bytes: Vec<u8>,
    version: &[u8],
    namespace: &str,
    weights: FieldWeights,
    tuning: Tuning,
) -> Option<CatalogIndex> {
    let (meta, definitions_len) = split(&bytes)?;
    let mut r = Reader { rest: meta };
    if r.bytes()? != version {
        return None;
    }
    let complete = r.u8()? != 0;
    let stored_weights = [r.f32()?, r.f32()?, r.f32()?];
    if stored_weights != [weights.name, weights.description, weights.input_schema]
        || !same_tuning(&read_tuning(&mut r)?, &tuning)
    {
        return None;
    }
    let count = r.len()?;
    let mut fields = Vec::with_capacity(count.min(meta.len() / 16));
    for _ in 0..count {
        fields.push((r.text()?, r.text()?, r.text()?, r.u32()?));
    }
    let folded = r.len()?;
    if folded != count {
        return None;
    }
    let mut by_folded_name = Vec::with_capacity(folded);
    for _ in 0..folded {
        let d = r.u32()?;
        if d as usize >= count {
            return None;
        }
        by_folded_name.push(d);
    }
    let bm25 = Bm25Index::read(&mut r, weights, tuning, count)?;
    if !r.rest.is_empty() {
        return None;
    }
    // Not shrunk to fit: that reallocation copied the megabytes of definitions, and the
    // capacity it would return is already part of the VM's memory (which never shrinks).
    bytes.truncate(definitions_len);
    let text = Rc::new(bytes);
    let mut tools = Vec::with_capacity(count);
    let mut start = 0u32;
    for (name, title, description, end) in fields {
        tools.push(Tool::with_shared_definition(
            name,
            title,
            description,
            &text,
            start,
            end,
        )?);
        start = end;
    }
    if start as usize != text.len() {
        return None;
    }
    let catalog = Catalog::from_sorted(tools, complete)?;
    Some(CatalogIndex::from_parts(
        namespace,
        catalog,
        weights,
        tuning,
        by_folded_name,
        Some(bm25),
    ))
}

/// The meta part and the definitions' length.
fn split(bytes: &[u8]) -> Option<(&[u8], usize)> {
    let body_len = bytes.len().checked_sub(TRAILER)?;
    let (body, trailer) = bytes.split_at_checked(body_len)?;
    let (lens, magic) = trailer.split_at_checked(8)?;
    if magic != MAGIC {
        return None;
    }
    let mut r = Reader { rest: lens };
    let meta_len = r.u32()? as usize;
    let definitions_len = r.u32()? as usize;
    if definitions_len.checked_add(meta_len)? != body.len() {
        return None;
    }
    Some((body.get(definitions_len..)?, definitions_len))
}

fn write_tuning(w: &mut Writer, tuning: &Tuning) {
    w.f32(tuning.k1);
    for b in tuning.b {
        w.f32(b);
    }
    w.u8(u8::from(tuning.per_field));
    w.u8(from_lengths_mask(tuning));
    w.f32(tuning.name_as_written);
    w.u8(rules_mask(tuning));
}

/// The term rules: stored terms were made by them, and a query must be split the same way.
fn rules_mask(tuning: &Tuning) -> u8 {
    u8::from(tuning.terms.stem) | (u8::from(tuning.terms.stop_words) << 1)
}

fn from_lengths_mask(tuning: &Tuning) -> u8 {
    tuning
        .b_from_lengths
        .iter()
        .enumerate()
        .fold(0, |m, (f, &on)| m | (u8::from(on) << f))
}

/// The tuning the index depends on (feedback is applied at query time).
fn read_tuning(r: &mut Reader) -> Option<(f32, [f32; 3], bool, u8, f32, u8)> {
    Some((
        r.f32()?,
        [r.f32()?, r.f32()?, r.f32()?],
        r.u8()? != 0,
        r.u8()?,
        r.f32()?,
        r.u8()?,
    ))
}

fn same_tuning(stored: &(f32, [f32; 3], bool, u8, f32, u8), tuning: &Tuning) -> bool {
    stored.0.to_bits() == tuning.k1.to_bits()
        && stored
            .1
            .iter()
            .zip(&tuning.b)
            .all(|(a, b)| a.to_bits() == b.to_bits())
        && stored.2 == tuning.per_field
        && stored.3 == from_lengths_mask(tuning)
        && stored.4.to_bits() == tuning.name_as_written.to_bits()
        && stored.5 == rules_mask(tuning)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::rank::search::{search, Fallback, FallbackKind, Query};

    fn catalog() -> Catalog {
        let tools = [
            r#"{"name":"github_create_issue","description":"Open a new issue in a repository.","inputSchema":{"type":"object"}}"#,
            r#"{"name":"Stripe_Refund","title":"Refund","description":"Refund a charge — ünïcode."}"#,
            r#"{"name":"weather","description":"Forecast for a city."}"#,
        ];
        Catalog::from_tools(
            tools
                .iter()
                .map(|d| {
                    let raw: Box<serde_json::value::RawValue> = serde_json::from_str(d).unwrap();
                    Tool::from_raw(&raw).unwrap()
                })
                .collect(),
        )
    }

    fn names(index: &CatalogIndex, query: &str) -> Vec<String> {
        let query = Query {
            text: query.to_string(),
            limit: 5,
            offset: 0,
            group: None,
        };
        let off = Fallback::new(FallbackKind::Unavailable, "lexical");
        search(index, &Config::default(), &query, None, Err(off))
            .found
            .iter()
            .map(|found| found.tool.name.to_string())
            .collect()
    }

    #[test]
    fn a_loaded_snapshot_searches_and_renders_as_the_index_it_was_made_from() {
        let config = Config::default();
        let built = CatalogIndex::build("ns", catalog(), &config);
        let bytes = encode(&built, b"v1").unwrap();
        let (w, t) = (config.search.weights, config.search.tuning);
        let loaded = decode(bytes, b"v1", "ns", w, t).unwrap();
        assert!(loaded.built_bm25().is_some());
        assert_eq!(loaded.catalog.to_json(), built.catalog.to_json());
        assert_eq!(loaded.catalog.is_complete(), built.catalog.is_complete());
        for query in ["refund a charge", "issue", "city forecast", "ünïcode"] {
            assert_eq!(names(&loaded, query), names(&built, query), "{query}");
        }
        let folded: Vec<u32> = loaded.named_ignoring_case("stripe_refund").collect();
        assert_eq!(folded.len(), 1);
    }

    #[test]
    fn another_version_other_tuning_or_any_damage_is_not_loaded() {
        let config = Config::default();
        let built = CatalogIndex::build("ns", catalog(), &config);
        let bytes = encode(&built, b"v1").unwrap();
        let (w, t) = (config.search.weights, config.search.tuning);
        assert!(decode(bytes.clone(), b"v2", "ns", w, t).is_none());
        let mut other = w;
        other.name += 1.0;
        assert!(decode(bytes.clone(), b"v1", "ns", other, t).is_none());
        // Names as written are terms of their own: an index built without them has none.
        let mut unwritten = t;
        unwritten.name_as_written = 0.0;
        assert!(decode(bytes.clone(), b"v1", "ns", w, unwritten).is_none());
        // Stored terms are stemmed, stop words left out: a filter splitting queries otherwise
        // would miss them.
        for (stem, stop_words) in [(false, true), (true, false)] {
            let mut other_rules = t;
            other_rules.terms = crate::config::TermRules { stem, stop_words };
            assert!(decode(bytes.clone(), b"v1", "ns", w, other_rules).is_none());
        }
        // Every truncation and every single-byte change of the trailer and meta either fails or
        // loads a well-formed index; none panics.
        for cut in 0..bytes.len() {
            assert!(decode(bytes[..cut].to_vec(), b"v1", "ns", w, t).is_none());
        }
        for at in 0..bytes.len() {
            let mut damaged = bytes.clone();
            damaged[at] ^= 0x5a;
            if let Some(index) = decode(damaged, b"v1", "ns", w, t) {
                let _ = names(&index, "refund issue city");
            }
        }
    }

    #[test]
    fn an_index_not_yet_built_is_not_encoded() {
        let index = CatalogIndex::lazy("ns", catalog(), &Config::default());
        assert!(encode(&index, b"v1").is_none());
    }
}
