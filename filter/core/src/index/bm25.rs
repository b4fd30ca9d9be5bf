//! BM25 over tool fields (Robertson & Zaragoza, "The Probabilistic Relevance Framework", 2009),
//! with per-field weights folded into term frequency and document length (the simple BM25F),
//! and Lucene's non-negative idf. Built once per catalog; a query touches only the postings of
//! its own terms.

use crate::config::FieldWeights;
use crate::index::fnv::FnvHashMap;
use crate::index::stem::stem;
use crate::index::tokenizer::{for_each_word, is_stop_word, terms};
use std::cmp::Ordering;

pub const K1: f32 = 1.2;
pub const B: f32 = 0.75;

/// The text of one tool, split by field.
#[derive(Debug, Clone, Copy)]
pub struct Fields<'a> {
    pub name: &'a str,
    /// Indexed as part of the description.
    pub title: &'a str,
    pub description: &'a str,
    pub input_schema: &'a str,
}

#[derive(Debug, Default)]
pub struct Bm25Index {
    doc_count: usize,
    doc_len: Vec<f32>,
    avg_len: f32,
    term_ids: FnvHashMap<String, u32>,
    /// Per term: (document, weighted term frequency), documents ascending.
    postings: Vec<Vec<(u32, f32)>>,
}

/// One term's part in a document's score, for `explain`.
#[derive(Debug, Clone, PartialEq)]
pub struct TermScore {
    pub term: String,
    pub idf: f32,
    pub tf: f32,
    pub score: f32,
}

impl Bm25Index {
    pub fn build<'a>(docs: impl IntoIterator<Item = Fields<'a>>, weights: FieldWeights) -> Self {
        let mut index = Bm25Index::default();
        // A tool has a few dozen distinct terms: a list searched linearly beats a map.
        let mut tf: Vec<(u32, f32)> = Vec::new();
        // Each distinct word's term (None: a stop word), worked out once: a catalog repeats a
        // few hundred words across hundreds of thousands of tokens.
        let mut memo: FnvHashMap<String, Option<u32>> = FnvHashMap::default();
        let mut buf = String::new();
        for (doc, fields) in docs.into_iter().enumerate() {
            let doc = u32::try_from(doc).unwrap_or(u32::MAX);
            tf.clear();
            let mut len = 0.0;
            for (text, weight) in [
                (fields.name, weights.name),
                (fields.title, weights.description),
                (fields.description, weights.description),
                (fields.input_schema, weights.input_schema),
            ] {
                if weight <= 0.0 || text.is_empty() {
                    continue;
                }
                let term_ids = &mut index.term_ids;
                for_each_word(text, &mut buf, |word| {
                    let id = match memo.get(word) {
                        Some(&id) => id,
                        None => {
                            let id = (!is_stop_word(word)).then(|| {
                                let next = u32::try_from(term_ids.len()).unwrap_or(u32::MAX);
                                *term_ids.entry(stem(word)).or_insert(next)
                            });
                            memo.insert(word.to_string(), id);
                            id
                        }
                    };
                    if let Some(id) = id {
                        match tf.iter_mut().find(|(t, _)| *t == id) {
                            Some((_, f)) => *f += weight,
                            None => tf.push((id, weight)),
                        }
                        len += weight;
                    }
                });
            }
            for &(term, freq) in &tf {
                let slot = term as usize;
                if index.postings.len() <= slot {
                    index.postings.resize_with(slot + 1, Vec::new);
                }
                if let Some(list) = index.postings.get_mut(slot) {
                    list.push((doc, freq));
                }
            }
            index.doc_len.push(len);
        }
        index.doc_count = index.doc_len.len();
        let total: f32 = index.doc_len.iter().sum();
        index.avg_len = if index.doc_count == 0 {
            1.0
        } else {
            (total / index.doc_count as f32).max(f32::MIN_POSITIVE)
        };
        index
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

    fn term_score(&self, idf: f32, tf: f32, doc: u32) -> f32 {
        let dl = self.doc_len.get(doc as usize).copied().unwrap_or(0.0);
        idf * tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * dl / self.avg_len))
    }

    /// The query's distinct terms that the index knows, with their postings.
    fn query_postings(&self, query: &str) -> Vec<(String, &Vec<(u32, f32)>)> {
        let mut seen: Vec<String> = Vec::new();
        for t in terms(query) {
            if !seen.contains(&t) {
                seen.push(t);
            }
        }
        seen.into_iter()
            .filter_map(|t| {
                let id = *self.term_ids.get(&t)?;
                let list = self.postings.get(id as usize)?;
                Some((t, list))
            })
            .collect()
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
        for (_, list) in self.query_postings(query) {
            let idf = self.idf(list.len());
            for &(doc, tf) in list {
                if let Some(s) = scores.get_mut(doc as usize) {
                    if *s == 0.0 {
                        matched.push(doc);
                    }
                    *s += self.term_score(idf, tf, doc);
                }
            }
        }
        (scores, matched)
    }

    /// How `doc`'s score for `query` comes about, term by term.
    pub fn explain(&self, query: &str, doc: u32) -> Vec<TermScore> {
        self.query_postings(query)
            .into_iter()
            .filter_map(|(term, list)| {
                let at = list.binary_search_by_key(&doc, |&(d, _)| d).ok()?;
                let &(_, tf) = list.get(at)?;
                let idf = self.idf(list.len());
                Some(TermScore {
                    term,
                    idf,
                    tf,
                    score: self.term_score(idf, tf, doc),
                })
            })
            .collect()
    }
}

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
    let mut hits: Vec<Hit> = candidates
        .into_iter()
        .map(|doc| Hit {
            doc,
            score: score_of(doc),
        })
        .collect();
    let order = |a: &Hit, b: &Hit| {
        b.score
            .partial_cmp(&a.score)
            .unwrap_or(Ordering::Equal)
            .then_with(|| name_of(a.doc).cmp(name_of(b.doc)))
    };
    if limit == 0 {
        return Vec::new();
    }
    if hits.len() > limit {
        hits.select_nth_unstable_by(limit - 1, order);
        hits.truncate(limit);
    }
    hits.sort_by(order);
    hits
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields<'a>(docs: &'a [(&'a str, &'a str)]) -> Vec<Fields<'a>> {
        docs.iter()
            .map(|(n, d)| Fields {
                name: n,
                title: "",
                description: d,
                input_schema: "",
            })
            .collect()
    }

    #[test]
    fn scores_follow_bm25() {
        let docs = [
            ("weather_forecast", "Get the weather forecast for a city."),
            ("stock_quote", "Get a stock quote."),
            ("flight_search", "Search flights between two cities."),
        ];
        let index = Bm25Index::build(fields(&docs), FieldWeights::default());
        let s = index.scores("weather in Paris");
        assert!(s[0] > 0.0 && s[1] == 0.0 && s[2] == 0.0);
        // weather: tf = 2 (name) + 1 (description); dl = 2*2 + 4 ("get weather forecast city").
        let avg = index.avg_len;
        let idf = (1.0f32 + (3.0 - 1.0 + 0.5) / (1.0 + 0.5)).ln();
        let expected = idf * 3.0 * 2.2 / (3.0 + 1.2 * (0.25 + 0.75 * 8.0 / avg));
        assert!((s[0] - expected).abs() < 1e-5, "{} vs {expected}", s[0]);
        let explained = index.explain("weather in Paris", 0);
        assert_eq!(explained.len(), 1);
        assert_eq!(explained[0].term, "weather");
        assert!((explained[0].score - s[0]).abs() < 1e-6);
    }

    #[test]
    fn name_terms_weigh_double() {
        let docs = [
            ("search_flights", "Find trips."),
            ("book_trip", "Search flights."),
        ];
        let index = Bm25Index::build(fields(&docs), FieldWeights::default());
        let s = index.scores("search flights");
        assert!(s[0] > s[1]);
    }

    #[test]
    fn schema_indexed_only_when_weighted() {
        let docs = [Fields {
            name: "create_event",
            title: "",
            description: "Create an event.",
            input_schema: "attendees Email addresses of attendees",
        }];
        let off = Bm25Index::build(docs, FieldWeights::default());
        assert_eq!(off.scores("attendees")[0], 0.0);
        let on = Bm25Index::build(
            docs,
            FieldWeights {
                input_schema: 0.5,
                ..FieldWeights::default()
            },
        );
        assert!(on.scores("attendees")[0] > 0.0);
    }

    #[test]
    fn top_k_breaks_ties_by_name_and_keeps_zero_scores() {
        let names = ["b", "a", "d", "c"];
        let scores = [1.0, 1.0, 0.0, 2.0];
        let hits = top_k(0..4, |d| scores[d as usize], |d| names[d as usize], 3);
        let got: Vec<&str> = hits.iter().map(|h| names[h.doc as usize]).collect();
        assert_eq!(got, ["c", "a", "b"]);
        let all = top_k(0..4, |d| scores[d as usize], |d| names[d as usize], 10);
        assert_eq!(all.len(), 4);
        assert_eq!(names[all[3].doc as usize], "d");
        assert!(top_k(0..4, |_| 0.0, |d| names[d as usize], 0).is_empty());
    }

    #[test]
    fn empty_index() {
        let index = Bm25Index::build(Vec::<Fields>::new(), FieldWeights::default());
        assert!(index.is_empty());
        assert!(index.scores("anything").is_empty());
    }
}
