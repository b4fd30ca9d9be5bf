//! BM25 over tool fields (Robertson & Zaragoza, "The Probabilistic Relevance Framework: BM25
//! and Beyond", 2009) in its BM25F form (Robertson, Zaragoza & Taylor, "Simple BM25 extension
//! to multiple weighted fields", CIKM 2004): each field's term frequency is normalized by that
//! field's own length, weighted, and the fields are summed before the one saturation, so a term
//! found in name and description counts more than in one, but never twice a full BM25 term.
//! Lucene's non-negative idf. Built once per catalog; a query touches only the postings of its
//! own terms, whose saturating input (the pseudo term frequency) is computed at build time.

use crate::config::{FieldWeights, TermRules, Tuning};
use crate::index::fnv::FnvHashMap;
use crate::index::tokenizer::{for_each_word, words};
use std::cmp::Ordering;

pub const B: f32 = 0.75;

/// The fields, in the order of `FIELD_NAMES` and of `Tuning::b`.
pub const FIELDS: usize = 3;
pub const FIELD_NAMES: [&str; FIELDS] = ["name", "description", "input_schema"];

/// The text of one tool, split by field.
#[derive(Debug, Clone, Copy)]
pub struct Fields<'a> {
    pub name: &'a str,
    /// Indexed as part of the description.
    pub title: &'a str,
    pub description: &'a str,
    pub input_schema: &'a str,
}

impl<'a> Fields<'a> {
    /// Each text with the field it counts in.
    fn texts(&self) -> [(&'a str, usize); 4] {
        [
            (self.name, 0),
            (self.title, 1),
            (self.description, 1),
            (self.input_schema, 2),
        ]
    }
}

#[derive(Debug, Default)]
pub struct Bm25Index {
    doc_count: usize,
    weights: [f32; FIELDS],
    tuning: Tuning,
    /// Per document, the number of terms in each field.
    field_len: Vec<[f32; FIELDS]>,
    avg_field_len: [f32; FIELDS],
    /// Each field's length normalization: the tuning's, or derived from `field_len`.
    b: [f32; FIELDS],
    /// Weighted document lengths and their mean (the length normalization without BM25F).
    avg_len: f32,
    term_ids: FnvHashMap<String, u32>,
    /// Per term: (document, pseudo term frequency: weighted and length-normalized), documents
    /// ascending.
    postings: Vec<Vec<(u32, f32)>>,
}

/// One term's part in a document's score, for `explain`.
#[derive(Debug, Clone, PartialEq)]
pub struct TermScore {
    pub term: String,
    pub idf: f32,
    /// The pseudo term frequency: the fields' weighted, length-normalized frequencies summed.
    pub tf: f32,
    pub score: f32,
    /// Per field (`FIELD_NAMES` order): the raw frequency, and the field's share of `tf`.
    pub fields: [FieldPart; FIELDS],
    /// `Some(weight)`: a query word found as written in the name, scored over names alone
    /// (`Tuning::name_as_written`), `score` weighted.
    pub as_written: Option<f32>,
}

#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct FieldPart {
    pub tf: f32,
    pub length: f32,
    pub avg_length: f32,
    pub weight: f32,
    pub b: f32,
    pub b_from_lengths: bool,
    /// This field's part of the pseudo term frequency.
    pub normalized_tf: f32,
}

impl Bm25Index {
    pub fn build<'a>(docs: impl IntoIterator<Item = Fields<'a>>, weights: FieldWeights) -> Self {
        Self::build_tuned(docs, weights, Tuning::default())
    }

    pub fn build_tuned<'a>(
        docs: impl IntoIterator<Item = Fields<'a>>,
        weights: FieldWeights,
        tuning: Tuning,
    ) -> Self {
        // One copy of the build in the .wasm, whatever the callers iterate over.
        Self::build_from(&mut docs.into_iter(), weights, tuning)
    }

    fn build_from<'a>(
        docs: &mut dyn Iterator<Item = Fields<'a>>,
        weights: FieldWeights,
        tuning: Tuning,
    ) -> Self {
        let mut index = Bm25Index {
            weights: [weights.name, weights.description, weights.input_schema],
            tuning,
            ..Bm25Index::default()
        };
        // Per document, each term's frequency in each field; normalized once every length
        // (and so each field's mean) is known.
        let mut docs_tf: Vec<Vec<(u32, [f32; FIELDS])>> = Vec::new();
        // Each distinct word's term (None: a stop word), worked out once: a catalog repeats a
        // few hundred words across hundreds of thousands of tokens.
        let mut memo: FnvHashMap<String, Option<u32>> = FnvHashMap::default();
        let as_written = index.tuning.name_as_written > 0.0;
        let rules = index.tuning.terms;
        let mut buf = String::new();
        for fields in docs {
            let mut tf: Vec<(u32, [f32; FIELDS])> = Vec::new();
            let mut len = [0.0f32; FIELDS];
            for (text, field) in fields.texts() {
                if index.weights.get(field).is_none_or(|&w| w <= 0.0) || text.is_empty() {
                    continue;
                }
                let term_ids = &mut index.term_ids;
                for_each_word(text, &mut buf, |word| {
                    let id = match memo.get(word) {
                        Some(&id) => id,
                        None => {
                            let id = term_of(term_ids, rules, word);
                            memo.insert(word.to_string(), id);
                            id
                        }
                    };
                    if let Some(id) = id {
                        add_tf(&mut tf, id, field, 1.0);
                        if let Some(l) = len.get_mut(field) {
                            *l += 1.0;
                        }
                        if as_written && field == 0 {
                            add_tf(&mut tf, as_written_term(term_ids, word), 0, 1.0);
                        }
                    }
                });
            }
            docs_tf.push(tf);
            index.field_len.push(len);
        }
        index.doc_count = index.field_len.len();
        let n = index.doc_count.max(1) as f32;
        let mut total = 0.0;
        for len in &index.field_len {
            for (avg, l) in index.avg_field_len.iter_mut().zip(len) {
                *avg += l / n;
            }
            total += index.weighted_len(len);
        }
        index.avg_len = (total / n).max(f32::MIN_POSITIVE);
        index.b = effective_b(&index.tuning, &index.field_len);
        for (doc, tf) in docs_tf.into_iter().enumerate() {
            let doc = u32::try_from(doc).unwrap_or(u32::MAX);
            let len = index
                .field_len
                .get(doc as usize)
                .copied()
                .unwrap_or_default();
            for (term, freq) in tf {
                let pseudo = index.pseudo_tf(&freq, &len);
                let slot = term as usize;
                if index.postings.len() <= slot {
                    index.postings.resize_with(slot + 1, Vec::new);
                }
                if let Some(list) = index.postings.get_mut(slot) {
                    list.push((doc, pseudo));
                }
            }
        }
        index
    }

    fn weighted_len(&self, len: &[f32; FIELDS]) -> f32 {
        self.weights.iter().zip(len).map(|(w, l)| w * l).sum()
    }

    /// Each field's part of the pseudo term frequency of a term found `freq` times per field in
    /// a document of field lengths `len`.
    fn field_parts(&self, freq: &[f32; FIELDS], len: &[f32; FIELDS]) -> [f32; FIELDS] {
        let mut out = [0.0; FIELDS];
        if self.tuning.per_field {
            for (f, slot) in out.iter_mut().enumerate() {
                let (tf, l, avg, w, b) = (
                    freq.get(f).copied().unwrap_or(0.0),
                    len.get(f).copied().unwrap_or(0.0),
                    self.avg_field_len.get(f).copied().unwrap_or(0.0),
                    self.weights.get(f).copied().unwrap_or(0.0),
                    self.b.get(f).copied().unwrap_or(B),
                );
                if tf > 0.0 && avg > 0.0 {
                    *slot = w * tf / (1.0 - b + b * l / avg);
                }
            }
        } else {
            // One normalization by the weighted length of the whole tool (the simple BM25F,
            // with the name's `b`).
            let b = self.tuning.b.first().copied().unwrap_or(B);
            let norm = 1.0 - b + b * self.weighted_len(len) / self.avg_len;
            for (f, slot) in out.iter_mut().enumerate() {
                let tf = freq.get(f).copied().unwrap_or(0.0);
                *slot = self.weights.get(f).copied().unwrap_or(0.0) * tf / norm;
            }
        }
        out
    }

    fn pseudo_tf(&self, freq: &[f32; FIELDS], len: &[f32; FIELDS]) -> f32 {
        self.field_parts(freq, len).iter().sum()
    }

    pub fn len(&self) -> usize {
        self.doc_count
    }

    pub fn is_empty(&self) -> bool {
        self.doc_count == 0
    }

    fn idf(&self, doc_freq: usize) -> f32 {
        let n = self.doc_count as f32;
        let df = doc_freq as f32;
        (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
    }

    fn saturate(&self, idf: f32, tf: f32) -> f32 {
        let k1 = self.tuning.k1;
        idf * tf * (k1 + 1.0) / (tf + k1)
    }

    /// The query's distinct terms that the index knows, with their ids, in query order.
    pub fn query_terms(&self, query: &str) -> Vec<(String, u32)> {
        self.distinct_terms(query, false)
    }

    /// The query's distinct words that some name holds as written, with their ids (none when
    /// `Tuning::name_as_written` is 0).
    pub fn as_written_terms(&self, query: &str) -> Vec<(String, u32)> {
        self.distinct_terms(query, true)
    }

    fn distinct_terms(&self, query: &str, as_written: bool) -> Vec<(String, u32)> {
        let mut seen: Vec<(String, u32)> = Vec::new();
        self.each_query_term(query, &mut |written, text, id| {
            if written == as_written && !seen.iter().any(|(_, i)| *i == id) {
                seen.push((text.to_string(), id));
            }
        });
        seen
    }

    /// Calls `f` for each of the query's known terms in query order, repeats included: a word's
    /// stemmed term (`false`, the term), then, when names as written count, the word as some
    /// name holds it (`true`, the word). One reading of the query serves both kinds, which a
    /// search scores together (`scores_and_matches`).
    fn each_query_term(&self, query: &str, f: &mut dyn FnMut(bool, &str, u32)) {
        let as_written = self.tuning.name_as_written > 0.0;
        let mut key = String::new();
        for_each_word(query, &mut String::new(), |word| {
            let Some(term) = self.tuning.terms.term(word) else {
                return;
            };
            if let Some(&id) = self.term_ids.get(&term) {
                f(false, &term, id);
            }
            if as_written {
                key.clear();
                key.push(AS_WRITTEN);
                key.push_str(word);
                if let Some(&id) = self.term_ids.get(&key) {
                    f(true, word, id);
                }
            }
        });
    }

    /// The BM25 score of every document for `query` (0 where no term matches).
    pub fn scores(&self, query: &str) -> Vec<f32> {
        self.scores_and_matches(query).0
    }

    /// `scores`, and the documents that matched, each once: a search then looks at those (a
    /// few hundred) rather than at every document's score (thousands).
    pub fn scores_and_matches(&self, query: &str) -> (Vec<f32>, Vec<u32>) {
        let mut scores = vec![0.0; self.doc_count];
        let mut matched = Vec::new();
        // `query_terms`, then `as_written_terms`.
        let weight = self.tuning.name_as_written;
        let mut ids: Vec<(u32, f32)> = Vec::new();
        let mut written: Vec<(u32, f32)> = Vec::new();
        self.each_query_term(query, &mut |as_written, _, id| {
            if as_written {
                push_new(&mut written, id, weight);
            } else {
                push_new(&mut ids, id, 1.0);
            }
        });
        ids.append(&mut written);
        let postings: usize = ids
            .iter()
            .filter_map(|&(id, _)| self.postings.get(id as usize).map(Vec::len))
            .sum();
        matched.reserve(postings.min(self.doc_count));
        self.add_scores(&ids, &mut scores, Some(&mut matched));
        (scores, matched)
    }

    /// Adds each weighted term's BM25 score to `scores`; documents scored for the first time
    /// go to `matched` when given.
    pub fn add_scores(
        &self,
        terms: &[(u32, f32)],
        scores: &mut [f32],
        mut matched: Option<&mut Vec<u32>>,
    ) {
        for &(id, weight) in terms {
            let Some(list) = self.postings.get(id as usize) else {
                continue;
            };
            let idf = self.idf(list.len());
            for &(doc, tf) in list {
                if let Some(s) = scores.get_mut(doc as usize) {
                    if *s == 0.0 {
                        if let Some(m) = matched.as_deref_mut() {
                            m.push(doc);
                        }
                    }
                    *s += weight * self.saturate(idf, tf);
                }
            }
        }
    }

    /// The score one term adds to `doc` (0 when absent).
    pub fn term_score(&self, id: u32, doc: u32) -> f32 {
        let Some(list) = self.postings.get(id as usize) else {
            return 0.0;
        };
        match list.binary_search_by_key(&doc, |&(d, _)| d) {
            Ok(at) => list
                .get(at)
                .map_or(0.0, |&(_, tf)| self.saturate(self.idf(list.len()), tf)),
            Err(_) => 0.0,
        }
    }

    /// The terms of one document with their pseudo term frequencies, read again from its
    /// fields (`fields` must be what the document was built from).
    pub fn doc_terms(&self, doc: u32, fields: Fields<'_>) -> Vec<(u32, f32)> {
        let len = self
            .field_len
            .get(doc as usize)
            .copied()
            .unwrap_or_default();
        self.field_tf(fields)
            .into_iter()
            .map(|(id, freq)| (id, self.pseudo_tf(&freq, &len)))
            .collect()
    }

    /// Each known term's raw frequency per field, as `build` counted it.
    fn field_tf(&self, fields: Fields<'_>) -> Vec<(u32, [f32; FIELDS])> {
        let mut tf: Vec<(u32, [f32; FIELDS])> = Vec::new();
        let mut buf = String::new();
        for (text, field) in fields.texts() {
            if self.weights.get(field).is_none_or(|&w| w <= 0.0) || text.is_empty() {
                continue;
            }
            for_each_word(text, &mut buf, |word| {
                let Some(term) = self.tuning.terms.term(word) else {
                    return;
                };
                if let Some(&id) = self.term_ids.get(&term) {
                    add_tf(&mut tf, id, field, 1.0);
                }
            });
        }
        tf
    }

    /// How `doc`'s score for `query` comes about, term by term and field by field. `fields`
    /// must be what the document was built from.
    pub fn explain(&self, query: &str, doc: u32, fields: Fields<'_>) -> Vec<TermScore> {
        let found = self.field_tf(fields);
        let len = self
            .field_len
            .get(doc as usize)
            .copied()
            .unwrap_or_default();
        let name = words(fields.name);
        let written = self.as_written_terms(query).into_iter().map(|(word, id)| {
            let tf = name.iter().filter(|w| **w == word).count() as f32;
            (
                word,
                id,
                Some([tf, 0.0, 0.0]),
                Some(self.tuning.name_as_written),
            )
        });
        self.query_terms(query)
            .into_iter()
            .map(|(term, id)| {
                let freq = found.iter().find(|(t, _)| *t == id).map(|(_, f)| *f);
                (term, id, freq, None)
            })
            .chain(written)
            .filter_map(|(term, id, freq, as_written)| {
                let freq = freq.filter(|f| f.iter().any(|&x| x > 0.0))?;
                let freq = &freq;
                let list = self.postings.get(id as usize)?;
                let idf = self.idf(list.len());
                let parts = self.field_parts(freq, &len);
                let tf: f32 = parts.iter().sum();
                let mut fields = [FieldPart::default(); FIELDS];
                for (f, part) in fields.iter_mut().enumerate() {
                    *part = FieldPart {
                        tf: freq.get(f).copied().unwrap_or(0.0),
                        length: len.get(f).copied().unwrap_or(0.0),
                        avg_length: self.avg_field_len.get(f).copied().unwrap_or(0.0),
                        weight: self.weights.get(f).copied().unwrap_or(0.0),
                        b: self.b.get(f).copied().unwrap_or(B),
                        b_from_lengths: self.tuning.b_from_lengths.get(f).copied().unwrap_or(false),
                        normalized_tf: parts.get(f).copied().unwrap_or(0.0),
                    };
                }
                Some(TermScore {
                    term,
                    idf,
                    tf,
                    score: as_written.unwrap_or(1.0) * self.saturate(idf, tf),
                    fields,
                    as_written,
                })
            })
            .collect()
    }

    /// Whether the input schema is a field (its weight is above 0).
    pub fn indexes_schema(&self) -> bool {
        self.weights.get(2).is_some_and(|&w| w > 0.0)
    }

    /// How words become this index's terms.
    pub fn term_rules(&self) -> TermRules {
        self.tuning.terms
    }

    pub fn k1(&self) -> f32 {
        self.tuning.k1
    }

    /// The term a lowercase word stands for, when the index knows it.
    pub fn term_id(&self, term: &str) -> Option<u32> {
        self.term_ids.get(term).copied()
    }

    /// The term text of an id (a linear scan: for explanations only).
    pub fn term_text(&self, id: u32) -> Option<&str> {
        self.term_ids
            .iter()
            .find(|(_, &i)| i == id)
            .map(|(t, _)| t.as_str())
    }
}

/// Each field's `b`: the tuning's, or for a field marked `b_from_lengths`, `derived_b` of its
/// lengths over the tools that have it.
fn effective_b(tuning: &Tuning, field_len: &[[f32; FIELDS]]) -> [f32; FIELDS] {
    let mut b = tuning.b;
    for (f, slot) in b.iter_mut().enumerate() {
        if tuning.b_from_lengths.get(f).copied().unwrap_or(false) {
            *slot = derived_b(field_len.iter().filter_map(|l| l.get(f).copied()));
        }
    }
    b
}

/// Length normalization from how much a field's lengths vary across the catalog. BM25's `b`
/// corrects for verbosity: a longer text repeats the same topic in more words
/// (Robertson & Zaragoza 2009, section 3.3). Where a field's lengths vary little (one or two
/// sentences each, as MetaTool's descriptions: a coefficient of variation of 0.51), a longer
/// one mostly says more, and normalizing it only penalizes detail (b 0 measured best there, and
/// even b 0.0125 lost 0.01 NDCG@10 on its first half); where they span orders of magnitude (real
/// servers put a manual in some descriptions and four words in others: 1.71 on `mcp-real`),
/// verbosity dominates and the textbook 0.75 measured best. Between, `b` rises linearly with
/// the coefficient of variation from 0.6 to 1.2; those two points have no catalog measured near
/// them. Tools without the field do not count.
pub fn derived_b(lengths: impl Iterator<Item = f32>) -> f32 {
    let (mut n, mut sum, mut squares) = (0.0f32, 0.0f32, 0.0f32);
    for l in lengths.filter(|&l| l > 0.0) {
        n += 1.0;
        sum += l;
        squares += l * l;
    }
    if n < 2.0 {
        return 0.0;
    }
    let mean = sum / n;
    let cv = (squares / n - mean * mean).max(0.0).sqrt() / mean;
    B * ((cv - 0.6) / 0.6).clamp(0.0, 1.0)
}

/// Marks a name's word as written (unstemmed) in the term dictionary: words are runs of
/// letters and digits, so no stemmed term starts with it.
const AS_WRITTEN: char = '=';

fn as_written_term(term_ids: &mut FnvHashMap<String, u32>, word: &str) -> u32 {
    let next = u32::try_from(term_ids.len()).unwrap_or(u32::MAX);
    *term_ids
        .entry(format!("{AS_WRITTEN}{word}"))
        .or_insert(next)
}

fn term_of(term_ids: &mut FnvHashMap<String, u32>, rules: TermRules, word: &str) -> Option<u32> {
    let term = rules.term(word)?;
    let next = u32::try_from(term_ids.len()).unwrap_or(u32::MAX);
    Some(*term_ids.entry(term).or_insert(next))
}

/// Adds a query term once, at its first word.
fn push_new(ids: &mut Vec<(u32, f32)>, id: u32, weight: f32) {
    if !ids.iter().any(|(i, _)| *i == id) {
        ids.push((id, weight));
    }
}

/// A tool has a few dozen distinct terms: a list searched linearly beats a map.
fn add_tf(tf: &mut Vec<(u32, [f32; FIELDS])>, id: u32, field: usize, n: f32) {
    let at = match tf.iter().position(|(t, _)| *t == id) {
        Some(at) => at,
        None => {
            tf.push((id, [0.0; FIELDS]));
            tf.len() - 1
        }
    };
    if let Some(slot) = tf.get_mut(at).and_then(|(_, f)| f.get_mut(field)) {
        *slot += n;
    }
}

/// Terms the best documents share, for pseudo-relevance feedback (RM3: Lavrenko & Croft,
/// "Relevance-Based Language Models", SIGIR 2001; Abdul-Jaleel et al., UMass at TREC 2004):
/// each document lends its terms in proportion to their share of it, weighted by its score.
/// The query's own terms are left out; ties go to the lower term id (catalog order).
pub fn feedback_terms(
    docs: &[(f32, Vec<(u32, f32)>)],
    exclude: &[u32],
    count: usize,
) -> Vec<(u32, f32)> {
    let total: f32 = docs.iter().map(|(s, _)| *s).sum();
    if total <= 0.0 || count == 0 {
        return Vec::new();
    }
    let mut weights: FnvHashMap<u32, f32> = FnvHashMap::default();
    for (score, terms) in docs {
        let mass: f32 = terms.iter().map(|(_, tf)| tf).sum();
        if mass <= 0.0 {
            continue;
        }
        for &(id, tf) in terms {
            if !exclude.contains(&id) {
                *weights.entry(id).or_insert(0.0) += (score / total) * (tf / mass);
            }
        }
    }
    // The ids are unique: the order is total, whatever the map's.
    let mut lent = weights.into_iter().map(|(doc, score)| Hit { doc, score });
    best_of(&mut lent, &|a, b| a < b, count)
        .into_iter()
        .map(|h| (h.doc, h.score))
        .collect()
}

/// Sorts `hits` best first: a bottom-up merge sort, a few hundred bytes of .wasm where a sort
/// of the standard library is tens of kilobytes per element type.
fn merge_sort(hits: &mut Vec<Hit>, better: &dyn Fn(&Hit, &Hit) -> bool) {
    let n = hits.len();
    let mut out = hits.clone();
    let mut width = 1;
    while width < n {
        let mut start = 0;
        while start < n {
            let mid = start.saturating_add(width).min(n);
            let end = start.saturating_add(width.saturating_mul(2)).min(n);
            let (mut i, mut j) = (start, mid);
            for slot in out.get_mut(start..end).unwrap_or_default() {
                let left = hits.get(i).filter(|_| i < mid);
                let right = hits.get(j).filter(|_| j < end);
                *slot = match (left, right) {
                    (Some(l), Some(r)) if better(r, l) => {
                        j += 1;
                        *r
                    }
                    (Some(l), _) => {
                        i += 1;
                        *l
                    }
                    (None, Some(r)) => {
                        j += 1;
                        *r
                    }
                    (None, None) => break,
                };
            }
            start = end;
        }
        std::mem::swap(hits, &mut out);
        width = width.saturating_mul(2);
    }
}

/// Up to this many results, `top_k` keeps them in order as it goes; beyond (a deep page), it
/// selects among all the candidates.
const SMALL_PAGE: usize = 64;

/// A ranked document.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hit {
    pub doc: u32,
    pub score: f32,
}

/// The best `limit` of `candidates` by score, then by name (`name_of`), as a stable, total
/// order: every worker gives the same answer for the same catalog and query.
pub fn top_k<'n>(
    candidates: impl IntoIterator<Item = u32>,
    score_of: impl Fn(u32) -> f32,
    name_of: impl Fn(u32) -> &'n str,
    limit: usize,
) -> Vec<Hit> {
    let mut hits = candidates.into_iter().map(|doc| Hit {
        doc,
        score: score_of(doc),
    });
    best_of(&mut hits, &|a, b| name_of(a) < name_of(b), limit)
}

/// The best `limit` of `hits` by score, NaN last, then `before` (whether one document goes
/// before another of the same score): `top_k` and `feedback_terms` behind `dyn`, one copy of
/// both ways of choosing whatever the callers' closures (one per caller, or a standard sort,
/// was kilobytes of the .wasm each).
#[inline(never)]
pub(crate) fn best_of(
    hits: &mut dyn Iterator<Item = Hit>,
    before: &dyn Fn(u32, u32) -> bool,
    limit: usize,
) -> Vec<Hit> {
    if limit == 0 {
        return Vec::new();
    }
    // NaN ranks last, so that the order is total and both ways below agree.
    let key = |h: &Hit| {
        if h.score.is_nan() {
            f32::NEG_INFINITY
        } else {
            h.score
        }
    };
    let better = |a: &Hit, b: &Hit| match key(a).partial_cmp(&key(b)) {
        Some(Ordering::Greater) => true,
        Some(Ordering::Less) => false,
        _ => before(a.doc, b.doc),
    };
    if limit > SMALL_PAGE {
        let mut hits: Vec<Hit> = hits.collect();
        merge_sort(&mut hits, &better);
        hits.truncate(limit);
        return hits;
    }
    // One pass keeping the best `limit` in order: a query at 10,000 tools matches thousands,
    // a page is a handful, and most candidates lose to the last kept one in one comparison
    // (a selection over all of them was a tenth of such a search).
    let mut best: Vec<Hit> = Vec::with_capacity(limit + 1);
    for hit in hits {
        if best.len() == limit && best.last().is_none_or(|last| !better(&hit, last)) {
            continue;
        }
        let at = best.partition_point(|kept| better(kept, &hit));
        best.insert(at, hit);
        best.truncate(limit);
    }
    best
}

mod stored;
#[cfg(test)]
mod tests;
