//! Why a tool scores what it scores in a search: its BM25 score term by term and field by field,
//! and under vector or hybrid ranking the parts of the fused score. For operators tuning
//! weights (the playground); the filter's own answers never carry it.
//!
//! The BM25 parts come from the index's own `explain`; the fusion is recomputed here over the
//! same pool `search::search` ranks, and the tests hold both to the same scores.

use crate::config::{Config, Ranking};
use crate::index::catalog::{base_namespace, CatalogIndex, Tool};
use crate::index::tokenizer::terms;
use crate::rank::search::{Query, Vectors};
use crate::vector;

/// One field's share of a term's score.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldShare {
    /// `name`, `title`, `description` or `input_schema`.
    pub field: &'static str,
    /// Occurrences of the term in the field times the field's weight.
    pub tf: f32,
    /// The term's score split in proportion to `tf`: BM25F folds the fields into one
    /// saturated frequency, so a proportional split is the only one that adds up.
    pub score: f32,
}

/// One query term's part in a tool's BM25 score.
#[derive(Debug, Clone, PartialEq)]
pub struct TermPart {
    /// The term as indexed (lowercased, stemmed).
    pub term: String,
    pub idf: f32,
    /// Weighted term frequency over every field.
    pub tf: f32,
    pub score: f32,
    pub fields: Vec<FieldShare>,
}

/// The vector side of a vector or hybrid score.
#[derive(Debug, Clone, PartialEq)]
pub struct VectorPart {
    pub cosine: f32,
    /// Hybrid: the cosine min-max normalized over the matching tools; vector: the cosine.
    pub normalized: f32,
    /// The vector share of the score (`hybrid_vector_weight`, or 1 under vector ranking).
    pub weight: f32,
}

/// How one tool's score comes about under `strategy`.
#[derive(Debug, Clone, PartialEq)]
pub struct Explanation {
    pub name: String,
    /// The raw BM25 score (the sum of `terms`).
    pub bm25: f32,
    /// `bm25` divided by the best BM25 score among the matching tools.
    pub bm25_normalized: f32,
    pub terms: Vec<TermPart>,
    /// Present when vectors ranked.
    pub vector: Option<VectorPart>,
    /// The score the ranking gives the tool.
    pub score: f32,
}

/// Explains `names` (tools of `index`) for a search that ran as `strategy` with these inputs,
/// the ones given to `search::search`. Names not in the catalog are skipped.
pub fn explain(
    index: &CatalogIndex,
    config: &Config,
    query: &Query,
    allowed: Option<&dyn Fn(&Tool) -> bool>,
    vectors: Option<&Vectors<'_>>,
    strategy: Ranking,
    names: &[&str],
) -> Vec<Explanation> {
    let tools = index.catalog.tools();
    let namespace = base_namespace(&index.namespace);
    let in_scope = |t: &Tool| {
        allowed.is_none_or(|allowed| allowed(t))
            && query
                .group
                .as_deref()
                .is_none_or(|g| config.group_of(namespace, &t.name) == g)
    };
    let (bm25, _) = index.bm25.scores_and_matches(&query.text);
    let raw = |d: usize| bm25.get(d).copied().unwrap_or(0.0);
    let cosine = |d: usize| -> Option<f32> {
        let v = vectors?;
        let t = (v.tool)(d)?;
        (t.len() == v.query.len()).then(|| vector::dot(v.query, t))
    };
    let vectors_ranked = matches!(strategy, Ranking::Vector | Ranking::Hybrid) && vectors.is_some();
    // The pool `search::search` normalizes over: the tools in scope that match.
    let pool: Vec<usize> = (0..tools.len())
        .filter(|&d| tools.get(d).is_some_and(in_scope))
        .filter(|&d| {
            raw(d) > 0.0
                || (vectors_ranked
                    && config
                        .search
                        .min_cosine
                        .is_none_or(|floor| cosine(d).is_some_and(|c| c >= floor)))
        })
        .collect();
    let max_bm25 = pool.iter().map(|&d| raw(d)).fold(0.0f32, f32::max);
    let (lo, hi) = pool
        .iter()
        .filter_map(|&d| cosine(d))
        .fold((f32::MAX, f32::MIN), |(lo, hi), x| (lo.min(x), hi.max(x)));
    let span = if hi > lo { hi - lo } else { 1.0 };

    names
        .iter()
        .filter_map(|name| {
            let doc = tools.binary_search_by(|t| t.name.as_str().cmp(name)).ok()?;
            let tool = tools.get(doc)?;
            let bm25 = raw(doc);
            let bm25_normalized = if max_bm25 > 0.0 { bm25 / max_bm25 } else { 0.0 };
            let terms = term_parts(index, config, tool, &query.text, doc);
            let (vector, score) = match (strategy, vectors_ranked) {
                (Ranking::Vector, true) => {
                    let c = cosine(doc).unwrap_or(-1.0);
                    let part = VectorPart {
                        cosine: c,
                        normalized: c,
                        weight: 1.0,
                    };
                    (Some(part), c)
                }
                (Ranking::Hybrid, true) => {
                    let c = cosine(doc).unwrap_or(lo);
                    let w = config.search.hybrid_vector_weight;
                    let normalized = (c - lo) / span;
                    let part = VectorPart {
                        cosine: c,
                        normalized,
                        weight: w,
                    };
                    (Some(part), w * normalized + (1.0 - w) * bm25_normalized)
                }
                _ => (None, bm25_normalized),
            };
            Some(Explanation {
                name: tool.name.clone(),
                bm25,
                bm25_normalized,
                terms,
                vector,
                score,
            })
        })
        .collect()
}

/// The index's term-by-term explanation of `doc`, each term split over the fields it was
/// found in, counted as the index counts them (the same words, stop words and stems).
fn term_parts(
    index: &CatalogIndex,
    config: &Config,
    tool: &Tool,
    query: &str,
    doc: usize,
) -> Vec<TermPart> {
    let weights = config.search.weights;
    let schema = if weights.input_schema > 0.0 {
        tool.schema_text()
    } else {
        String::new()
    };
    let fields: Vec<(&'static str, Vec<String>, f32)> = [
        ("name", tool.name.as_str(), weights.name),
        ("title", tool.title.as_str(), weights.description),
        (
            "description",
            tool.description.as_str(),
            weights.description,
        ),
        ("input_schema", schema.as_str(), weights.input_schema),
    ]
    .into_iter()
    .filter(|(_, text, weight)| *weight > 0.0 && !text.is_empty())
    .map(|(field, text, weight)| (field, terms(text), weight))
    .collect();
    let Ok(doc) = u32::try_from(doc) else {
        return Vec::new();
    };
    index
        .bm25
        .explain(query, doc)
        .into_iter()
        .map(|t| {
            let shares = fields
                .iter()
                .filter_map(|(field, words, weight)| {
                    let count = words.iter().filter(|w| **w == t.term).count();
                    (count > 0).then(|| FieldShare {
                        field,
                        tf: count as f32 * weight,
                        score: if t.tf > 0.0 {
                            t.score * count as f32 * weight / t.tf
                        } else {
                            0.0
                        },
                    })
                })
                .collect();
            TermPart {
                term: t.term,
                idf: t.idf,
                tf: t.tf,
                score: t.score,
                fields: shares,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::catalog::Catalog;
    use crate::rank::search::{search, Fallback, FallbackKind};
    use serde_json::value::RawValue;

    fn index(config: &Config) -> CatalogIndex {
        let tool = |name: &str, title: &str, d: &str| {
            let raw: Box<RawValue> = serde_json::from_str(&format!(
                r#"{{"name":"{name}","title":"{title}","description":"{d}","inputSchema":{{"properties":{{"issue_number":{{"description":"The issue"}}}}}}}}"#
            ))
            .unwrap();
            Tool::from_raw(&raw).unwrap()
        };
        let catalog = Catalog::from_tools(vec![
            tool("github_create_issue", "Create issue", "Open an issue"),
            tool("github_close_issue", "", "Close an issue in a repository"),
            tool("github_list_issues", "", "List issues"),
            tool("slack_post_message", "", "Post a message"),
            tool("stripe_refund_charge", "", "Refund a charge"),
        ]);
        CatalogIndex::build("ns", catalog, config)
    }

    fn off() -> Fallback {
        Fallback::new(FallbackKind::Unavailable, "off")
    }

    fn q(text: &str) -> Query {
        Query {
            text: text.into(),
            limit: 10,
            offset: 0,
            group: None,
        }
    }

    #[test]
    fn bm25_terms_and_fields_add_up_to_the_score_search_gives() {
        let config = Config::parse(r#"{"search":{"weights":{"input_schema":0.5}}}"#).unwrap();
        let idx = index(&config);
        let query = q("create issue number");
        let ranked = search(&idx, &config, &query, None, Err(off()));
        let names: Vec<&str> = ranked.found.iter().map(|f| f.tool.name.as_str()).collect();
        assert_eq!(names.len(), 5, "{names:?}");
        let explained = explain(&idx, &config, &query, None, None, Ranking::Bm25, &names);
        assert_eq!(explained.len(), 5);
        for (e, f) in explained.iter().zip(&ranked.found) {
            assert_eq!(e.name, f.tool.name);
            assert!((e.score - f.score).abs() < 1e-6, "{e:?} vs {}", f.score);
            let sum: f32 = e.terms.iter().map(|t| t.score).sum();
            assert!((sum - e.bm25).abs() < 1e-5, "{e:?}");
            for t in &e.terms {
                let tf: f32 = t.fields.iter().map(|s| s.tf).sum();
                let score: f32 = t.fields.iter().map(|s| s.score).sum();
                assert!((tf - t.tf).abs() < 1e-5, "{t:?}");
                assert!((score - t.score).abs() < 1e-5, "{t:?}");
            }
        }
        let create = &explained[0];
        assert_eq!(create.name, "github_create_issue");
        assert_eq!((create.bm25_normalized, create.vector.clone()), (1.0, None));
        // "issue": twice the name weight, once each in title and description, and the
        // schema's "issue_number" and "The issue" at 0.5 each.
        let issue = &terms("issue")[0];
        let issue = create.terms.iter().find(|t| t.term == *issue).unwrap();
        let fields: Vec<(&str, f32)> = issue.fields.iter().map(|s| (s.field, s.tf)).collect();
        assert_eq!(
            fields,
            [
                ("name", 2.0),
                ("title", 1.0),
                ("description", 1.0),
                ("input_schema", 1.0)
            ]
        );
        let number = &terms("number")[0];
        let number = create.terms.iter().find(|t| t.term == *number).unwrap();
        assert_eq!(number.fields.len(), 1);
        assert_eq!(number.fields[0].field, "input_schema");
        // Names outside the catalog are skipped.
        assert!(explain(&idx, &config, &query, None, None, Ranking::Bm25, &["nope"]).is_empty());
    }

    #[test]
    fn hybrid_and_vector_parts_give_the_scores_search_gives() {
        for ranking in ["hybrid", "vector"] {
            let config = Config::parse(&format!(
                r#"{{"search":{{"ranking":"{ranking}","embeddings":{{"cluster":"c","model_id":"m","dimensions":2}}}}}}"#
            ))
            .unwrap();
            let idx = index(&config);
            let vecs: Vec<Vec<f32>> = vec![
                vec![1.0, 0.0],
                vec![0.8, 0.6],
                vec![0.6, 0.8],
                vec![0.0, 1.0],
                vec![-1.0, 0.0],
            ];
            let lookup = |i: usize| vecs.get(i).map(Vec::as_slice);
            let qv = [0.6f32, 0.8];
            let vectors = Vectors {
                query: &qv,
                tool: &lookup,
            };
            let query = q("issue");
            let no_slack = |t: &Tool| !t.name.starts_with("slack");
            let allowed: Option<&dyn Fn(&Tool) -> bool> = Some(&no_slack);
            let ranked = search(
                &idx,
                &config,
                &query,
                allowed,
                Ok(Vectors {
                    query: &qv,
                    tool: &lookup,
                }),
            );
            assert_eq!(ranked.strategy.name(), ranking);
            let names: Vec<&str> = ranked.found.iter().map(|f| f.tool.name.as_str()).collect();
            assert!(names.len() >= 3, "{names:?}");
            let explained = explain(
                &idx,
                &config,
                &query,
                allowed,
                Some(&vectors),
                ranked.strategy,
                &names,
            );
            for (e, f) in explained.iter().zip(&ranked.found) {
                assert_eq!(e.name, f.tool.name);
                assert!(
                    (e.score - f.score).abs() < 1e-6,
                    "{ranking}: {e:?} vs {}",
                    f.score
                );
                assert!(e.vector.is_some());
            }
        }
    }
}
