//! How one result's score came about: per query term its idf and per field its frequency,
//! length normalization and weight; the feedback terms; with vectors the cosine and the fused
//! score. The model is a search engine's `explain` (Lucene's `Explanation`, tantivy's
//! `Searcher::explain`), as plain data: it serializes with serde, its fields in declaration
//! order and its lists in query, field and feedback order, so the same search explains the
//! same way everywhere.
//!
//! idf, average field lengths, the best raw score and the feedback weights are computed over
//! the whole catalog, tools a restricted caller may not see included: from them a caller could
//! count those tools and learn their words. Such a caller gets `Explanation::withheld`, the
//! result's own facts only.

use crate::config::Ranking;
use crate::index::bm25::FIELD_NAMES;
use crate::index::catalog::CatalogIndex;
use crate::rank::search::{Fusion, Scoring};
use serde::Serialize;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Explanation {
    pub name: String,
    /// `bm25`, `vector` or `hybrid`: the ranking that ran.
    pub ranking: &'static str,
    /// The result's score as ranked (see the README, "Scores").
    pub score: f32,
    /// The query is this tool's name: it comes first whatever its score.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub exact_name: bool,
    pub bm25: LexicalExplanation,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vector: Option<VectorExplanation>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LexicalExplanation {
    /// The BM25 score: the query terms' scores plus the feedback terms' scores.
    pub score: f32,
    /// `score` divided by the best matching tool's (`best`).
    pub normalized: f32,
    pub best: f32,
    pub k1: f32,
    pub terms: Vec<TermExplanation>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub feedback: Vec<FeedbackExplanation>,
}

/// One query term: `score = idf × tf × (k1 + 1) / (tf + k1)`, where `tf` is the fields'
/// normalized frequencies summed (BM25F).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TermExplanation {
    /// The term as indexed (lowercase, stemmed).
    pub term: String,
    pub idf: f32,
    pub tf: f32,
    pub score: f32,
    /// The fields the term was found in, in the order name, description, input_schema.
    pub fields: Vec<FieldExplanation>,
    /// Set for a query word found as written (unstemmed) in the name: the weight of the
    /// names-only BM25 that scored it; `score` includes it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name_as_written: Option<f32>,
}

/// One field's part: `normalized_tf = weight × tf / (1 - b + b × length / avg_length)`;
/// `score` is the term's score split in proportion to `normalized_tf` (the saturation applies
/// to the fields together, so this is a share, not a score of its own).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FieldExplanation {
    pub field: &'static str,
    pub tf: f32,
    pub length: f32,
    pub avg_length: f32,
    pub weight: f32,
    pub b: f32,
    /// `b` was derived from how much this field's length varies across the catalog
    /// (`bm25::derived_b`) rather than configured.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub b_from_lengths: bool,
    pub normalized_tf: f32,
    pub score: f32,
}

/// A term lent by pseudo-relevance feedback: its weight and what it adds to this tool.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FeedbackExplanation {
    pub term: String,
    pub weight: f32,
    pub score: f32,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VectorExplanation {
    /// `None`: the tool has no vector yet, and ranks by its BM25 score (`normalized` is then
    /// its normalized BM25 score).
    pub cosine: Option<f32>,
    /// Hybrid: the cosine min-max normalized over the matching tools (`cosine_min`,
    /// `cosine_max`); vector: the cosine.
    pub normalized: f32,
    pub cosine_min: f32,
    pub cosine_max: f32,
    /// The vector share of the hybrid score (1 under vector ranking).
    pub weight: f32,
    /// `weight × normalized + (1 - weight) × bm25.normalized` under hybrid ranking.
    pub fused: f32,
}

/// Explains the score of the tool at catalog position `doc` for `query`, as the search that
/// produced `scoring` (`Ranked::scoring`) ranked it. The schema field is read again from the
/// tool's definition when the index weights it.
pub fn explain(index: &CatalogIndex, query: &str, scoring: &Scoring, doc: u32) -> Explanation {
    let tool = index.catalog.tools().get(doc as usize);
    let schema = match tool {
        Some(t) if index.bm25().indexes_schema() => t.schema_text(),
        _ => String::new(),
    };
    let terms: Vec<TermExplanation> = match tool {
        Some(t) => index
            .bm25()
            .explain(query, doc, t.fields(&schema))
            .into_iter()
            .map(|ts| {
                let fields = FIELD_NAMES
                    .iter()
                    .zip(ts.fields.iter())
                    .filter(|(_, p)| p.tf > 0.0)
                    .map(|(&field, p)| FieldExplanation {
                        field,
                        tf: p.tf,
                        length: p.length,
                        avg_length: p.avg_length,
                        weight: p.weight,
                        b: p.b,
                        b_from_lengths: p.b_from_lengths,
                        normalized_tf: p.normalized_tf,
                        score: if ts.tf > 0.0 {
                            ts.score * p.normalized_tf / ts.tf
                        } else {
                            0.0
                        },
                    })
                    .collect();
                TermExplanation {
                    term: ts.term,
                    idf: ts.idf,
                    tf: ts.tf,
                    score: ts.score,
                    fields,
                    name_as_written: ts.as_written,
                }
            })
            .collect(),
        None => Vec::new(),
    };
    let asked: f32 = terms.iter().map(|t| t.score).sum();
    // Feedback re-ranks only the tools the query matched (see `search`).
    let feedback: Vec<FeedbackExplanation> = if asked > 0.0 {
        scoring
            .feedback
            .iter()
            .filter_map(|&(id, weight)| {
                let term = index.bm25().term_text(id)?.to_string();
                Some(FeedbackExplanation {
                    term,
                    weight,
                    score: weight * index.bm25().term_score(id, doc),
                })
            })
            .collect()
    } else {
        Vec::new()
    };
    let lexical = asked + feedback.iter().map(|f| f.score).sum::<f32>();
    let normalized = if scoring.max_bm25 > 0.0 {
        lexical / scoring.max_bm25
    } else {
        0.0
    };
    let cosine = scoring
        .cosines
        .as_ref()
        .and_then(|c| c.get(doc as usize).copied());
    let fusion = Fusion {
        strategy: scoring.strategy,
        vector_weight: scoring.vector_weight,
        cosine_min: scoring.cosine_min,
        cosine_max: scoring.cosine_max,
    };
    let vector = match (scoring.strategy, cosine) {
        (Ranking::Vector | Ranking::Hybrid, Some(cosine)) => Some(VectorExplanation {
            cosine,
            normalized: match scoring.strategy {
                Ranking::Vector => cosine.unwrap_or_else(|| fusion.score(None, normalized)),
                _ => fusion.normalized_cosine(cosine, normalized),
            },
            cosine_min: scoring.cosine_min,
            cosine_max: scoring.cosine_max,
            weight: match scoring.strategy {
                Ranking::Vector => 1.0,
                _ => scoring.vector_weight,
            },
            fused: fusion.score(cosine, normalized),
        }),
        _ => None,
    };
    let score = vector.as_ref().map_or(normalized, |v| v.fused);
    Explanation {
        name: tool.map(|t| t.name.to_string()).unwrap_or_default(),
        ranking: scoring.strategy.name(),
        score,
        exact_name: scoring.exact == Some(doc),
        bm25: LexicalExplanation {
            score: lexical,
            normalized,
            best: scoring.max_bm25,
            k1: index.bm25().k1(),
            terms,
            feedback,
        },
        vector,
    }
}

/// An explanation as a caller the policy restricts may read it: the result's score and, per
/// query term found in it, the term's frequency and the length of each field it is in; nothing
/// computed over the catalog (idf, average lengths, raw BM25 scores, feedback). The vector part
/// stays whole: its cosine is the result's own, and its minimum and maximum are taken over the
/// tools this caller's search ranked.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WithheldExplanation {
    pub name: String,
    pub ranking: &'static str,
    pub score: f32,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub exact_name: bool,
    /// Always `"withheld"`: says why the catalog's statistics are missing.
    pub statistics: &'static str,
    pub bm25: WithheldLexical,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vector: Option<VectorExplanation>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WithheldLexical {
    /// The BM25 part of the score (relative to the best result this caller could get).
    pub normalized: f32,
    pub k1: f32,
    pub terms: Vec<WithheldTerm>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WithheldTerm {
    pub term: String,
    pub fields: Vec<WithheldField>,
}

/// A field's own facts: the term's frequency in it, its length, and the configured weight and
/// `b` (settings, not statistics).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WithheldField {
    pub field: &'static str,
    pub tf: f32,
    pub length: f32,
    pub weight: f32,
    pub b: f32,
}

/// What the HTTP endpoint answers for one result: the whole explanation, or the withheld one.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Shown {
    Whole(Explanation),
    Withheld(WithheldExplanation),
}

impl Explanation {
    /// This explanation without anything computed over the catalog.
    pub fn withheld(self) -> WithheldExplanation {
        WithheldExplanation {
            name: self.name,
            ranking: self.ranking,
            score: self.score,
            exact_name: self.exact_name,
            statistics: "withheld",
            bm25: WithheldLexical {
                normalized: self.bm25.normalized,
                k1: self.bm25.k1,
                terms: self
                    .bm25
                    .terms
                    .into_iter()
                    .map(|t| WithheldTerm {
                        term: t.term,
                        fields: t
                            .fields
                            .into_iter()
                            .map(|f| WithheldField {
                                field: f.field,
                                tf: f.tf,
                                length: f.length,
                                weight: f.weight,
                                b: f.b,
                            })
                            .collect(),
                    })
                    .collect(),
            },
            vector: self.vector,
        }
    }

    /// As shown to a caller the policy restricts (`restricted`) or not.
    pub fn shown(self, restricted: bool) -> Shown {
        if restricted {
            Shown::Withheld(self.withheld())
        } else {
            Shown::Whole(self)
        }
    }
}
