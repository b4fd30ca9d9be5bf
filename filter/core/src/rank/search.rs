//! One search over a catalog: the candidates a caller may see, ranked by BM25, by vectors or by
//! a fusion of both, then thresholded and paged. Shared by the MCP search tool and the plain
//! HTTP endpoint so that both give the same answer.

use crate::config::routing::{RoutingConfig, Strategy};
use crate::config::{Config, Ranking};
use crate::index::bm25::{feedback_terms, top_k, Hit};
use crate::index::catalog::groups::{groups_of, GroupScore};
use crate::index::catalog::{CatalogIndex, Tool};
use crate::vector;

/// A search result: the tool and its score under the ranking that ran.
#[derive(Debug, Clone, Copy)]
pub struct Found<'a> {
    pub tool: &'a Tool,
    pub score: f32,
    /// Its position in the catalog (what `explain` takes).
    pub doc: u32,
}

/// What was asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Query {
    pub text: String,
    pub limit: usize,
    pub offset: usize,
    pub group: Option<String>,
}

/// Why a vector or hybrid search ran as BM25 instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FallbackKind {
    /// Some candidate tools have no vector yet.
    NotEmbedded,
    /// The embeddings call failed (connection, no healthy host).
    Unavailable,
    Timeout,
    /// A response without a 2xx `:status`.
    Status,
    /// A response body that is not the OpenAI embeddings shape.
    Malformed,
    /// Vectors of the wrong size or with non-finite values.
    Dimensions,
    /// The service failed repeatedly: not asked until its circuit's probe succeeds.
    CircuitOpen,
}

impl FallbackKind {
    pub const ALL: [FallbackKind; 7] = [
        FallbackKind::NotEmbedded,
        FallbackKind::Unavailable,
        FallbackKind::Timeout,
        FallbackKind::Status,
        FallbackKind::Malformed,
        FallbackKind::Dimensions,
        FallbackKind::CircuitOpen,
    ];

    pub fn name(self) -> &'static str {
        match self {
            FallbackKind::NotEmbedded => "not_embedded",
            FallbackKind::Unavailable => "unavailable",
            FallbackKind::Timeout => "timeout",
            FallbackKind::Status => "status",
            FallbackKind::Malformed => "malformed",
            FallbackKind::Dimensions => "dimensions",
            FallbackKind::CircuitOpen => "circuit_open",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fallback {
    pub kind: FallbackKind,
    pub reason: String,
}

impl Fallback {
    pub fn new(kind: FallbackKind, reason: impl Into<String>) -> Self {
        Fallback {
            kind,
            reason: reason.into(),
        }
    }
}

/// Vectors for semantic ranking, when the embeddings service answered.
#[derive(Clone, Copy)]
pub struct Vectors<'v> {
    pub query: &'v [f32],
    /// A tool's unit vector, by its position in the catalog.
    pub tool: &'v dyn Fn(usize) -> Option<&'v [f32]>,
}

/// The answer, and how it came about (for `_meta` and stats).
#[derive(Debug)]
pub struct Ranked<'a> {
    pub found: Vec<Found<'a>>,
    /// How many candidates match the query (the agent pages through these).
    pub matches: usize,
    /// How many tools were in scope (allowed, in the group).
    pub candidates: usize,
    /// The ranking that ran.
    pub strategy: Ranking,
    /// Why the configured ranking did not run, when it did not.
    pub fallback: Option<Fallback>,
    /// What the scores were normalized and fused with, for `explain`.
    pub scoring: Scoring,
    /// How hierarchical search chose the tools it ranked (`None` under `strategy: flat`).
    pub routing: Option<Routing>,
}

/// What stage 1 of a hierarchical search did.
#[derive(Debug, Clone, PartialEq)]
pub struct Routing {
    /// `Flat` when the search fell back to every tool (`fallback` says why).
    pub used: Strategy,
    /// The groups stage 2 searched, best first.
    pub groups: Vec<String>,
    /// How many groups matched the query in stage 1.
    pub stage1_groups: usize,
    pub fallback: Option<String>,
}

/// The per-search quantities a result's score depends on besides its own terms: the best BM25
/// score (scores are divided by it), the cosine range (hybrid min-max normalizes cosines over
/// the matching tools), the feedback terms, and the tool the query names.
#[derive(Debug, Clone, Default)]
pub struct Scoring {
    pub strategy: Ranking,
    pub max_bm25: f32,
    /// Cosine of every tool with the query, by catalog position (vector and hybrid ranking).
    pub cosines: Option<Vec<f32>>,
    pub cosine_min: f32,
    pub cosine_max: f32,
    pub vector_weight: f32,
    /// Pseudo-relevance feedback: each lent term and its weight.
    pub feedback: Vec<(u32, f32)>,
    /// The tool the query names, ranked first whatever its score.
    pub exact: Option<u32>,
}

/// Runs a search. `allowed` is `None` when the caller may see every tool; `vectors` is `Err`
/// when the query could not be embedded.
pub fn search<'a>(
    index: &'a CatalogIndex,
    config: &Config,
    query: &Query,
    allowed: Option<&dyn Fn(&Tool) -> bool>,
    vectors: Result<Vectors<'_>, Fallback>,
) -> Ranked<'a> {
    // A search the agent already narrowed to one group has nothing for stage 1 to choose.
    if config.search.strategy == Strategy::Hierarchical && query.group.is_none() {
        return hierarchical(index, config, query, allowed, vectors);
    }
    ranked_within(index, config, query, allowed, None, vectors)
}

/// A flat search by BM25 alone, whatever `search.ranking` and `search.strategy` say (without
/// query vectors every ranking is BM25).
pub fn lexical<'a>(
    index: &'a CatalogIndex,
    config: &Config,
    query: &Query,
    allowed: Option<&dyn Fn(&Tool) -> bool>,
) -> Ranked<'a> {
    let none = Fallback::new(FallbackKind::Unavailable, "lexical search");
    ranked_within(index, config, query, allowed, None, Err(none))
}

/// Stage 1 ranks the caller's groups; stage 2 ranks the tools of the best ones. Neither finding
/// anything, the search is flat, and says why.
fn hierarchical<'a>(
    index: &'a CatalogIndex,
    config: &Config,
    query: &Query,
    allowed: Option<&dyn Fn(&Tool) -> bool>,
    vectors: Result<Vectors<'_>, Fallback>,
) -> Ranked<'a> {
    let groups = groups_of(index, config, allowed);
    let ranked_groups = groups.rank(&query.text);
    let chosen = chosen_groups(&ranked_groups, &config.search.routing);
    let flat = |why: &str| {
        let mut ranked = ranked_within(index, config, query, allowed, None, vectors.clone());
        ranked.routing = Some(Routing {
            used: Strategy::Flat,
            groups: Vec::new(),
            stage1_groups: ranked_groups.len(),
            fallback: Some(why.to_string()),
        });
        ranked
    };
    if chosen.is_empty() {
        return flat("no group matches the query");
    }
    let mut within = vec![false; index.catalog.len()];
    for g in chosen.iter().filter_map(|&g| groups.groups.get(g)) {
        for &d in &g.tools {
            if let Some(slot) = within.get_mut(d as usize) {
                *slot = true;
            }
        }
    }
    let mut ranked = ranked_within(
        index,
        config,
        query,
        allowed,
        Some(&within),
        vectors.clone(),
    );
    if ranked.matches == 0 {
        return flat("no tool of the chosen groups matches the query");
    }
    ranked.routing = Some(Routing {
        used: Strategy::Hierarchical,
        groups: chosen.iter().map(|&g| groups.name(g).to_string()).collect(),
        stage1_groups: ranked_groups.len(),
        fallback: None,
    });
    ranked
}

/// The groups stage 2 searches: the best `routing.groups` of those within `min_group_score`
/// of the best.
pub fn chosen_groups(ranked: &[GroupScore], routing: &RoutingConfig) -> Vec<usize> {
    ranked
        .iter()
        .filter(|g| g.normalized >= routing.min_group_score)
        .take(routing.groups)
        .map(|g| g.group)
        .collect()
}

/// A search over the tools `allowed` admits and, when given, `within` holds (by position).
fn ranked_within<'a>(
    index: &'a CatalogIndex,
    config: &Config,
    query: &Query,
    allowed: Option<&dyn Fn(&Tool) -> bool>,
    within: Option<&[bool]>,
    vectors: Result<Vectors<'_>, Fallback>,
) -> Ranked<'a> {
    let tools = index.catalog.tools();
    let in_scope = |d: u32| {
        tools.get(d as usize).is_some_and(|t| {
            within.is_none_or(|w| w.get(d as usize).copied().unwrap_or(false))
                && allowed.is_none_or(|allowed| allowed(t))
                && query.group.as_deref().is_none_or(|g| {
                    config.group_of(
                        crate::index::catalog::base_namespace(&index.namespace),
                        &t.name,
                    ) == g
                })
        })
    };
    // Only a restricted caller or a vector ranking needs the candidates one by one: an
    // unrestricted BM25 search looks at the matching tools only (hundreds among thousands).
    let restricted = allowed.is_some() || query.group.is_some() || within.is_some();
    let wants_vectors = config.search.ranking != Ranking::Bm25 && vectors.is_ok();
    let scoped: Option<Vec<u32>> = (restricted || wants_vectors).then(|| {
        (0..tools.len())
            .filter_map(|d| u32::try_from(d).ok())
            .filter(|&d| in_scope(d))
            .collect()
    });
    let candidates = scoped.as_ref().map_or(tools.len(), Vec::len);

    let wanted = config.search.ranking;
    let (strategy, fallback, cosines) = match (wanted, vectors) {
        (Ranking::Bm25, _) => (Ranking::Bm25, None, None),
        (_, Err(reason)) => (Ranking::Bm25, Some(reason), None),
        (_, Ok(v)) => match cosines_of(scoped.as_deref().unwrap_or(&[]), &v, tools.len()) {
            Ok(c) => (wanted, None, Some(c)),
            Err(reason) => (Ranking::Bm25, Some(reason), None),
        },
    };

    let (mut bm25, matched) = index.bm25().scores_and_matches(&query.text);
    let name_of = |d: u32| tools.get(d as usize).map(|t| t.name.as_str()).unwrap_or("");
    let feedback = feedback(
        index,
        config,
        &query.text,
        &mut bm25,
        &matched,
        |d| !restricted || in_scope(d),
        name_of,
    );
    let raw = |doc: u32| bm25.get(doc as usize).copied().unwrap_or(0.0);
    // The tools that can rank: under BM25 those in scope sharing a term with the query.
    let pool: Vec<u32> = match (scoped, strategy) {
        // A tool matches when the query shares a term with it or, by meaning, when its cosine
        // reaches the floor: cosine scores every tool, and without a floor a query nothing
        // matches would get confident-looking noise.
        (Some(scoped), Ranking::Vector | Ranking::Hybrid) => match config.search.min_cosine {
            None => scoped,
            Some(floor) => scoped
                .into_iter()
                .filter(|&d| {
                    raw(d) > 0.0
                        || cosines
                            .as_ref()
                            .and_then(|c| c.get(d as usize))
                            .is_some_and(|&c| c >= floor)
                })
                .collect(),
        },
        (scoped, _) => matched
            .into_iter()
            .filter(|&d| raw(d) > 0.0 && (scoped.is_none() || in_scope(d)))
            .collect(),
    };
    let max_bm25 = max_of(pool.iter().map(|&d| raw(d)));
    let bm25_norm = |doc: u32| {
        if max_bm25 > 0.0 {
            raw(doc) / max_bm25
        } else {
            0.0
        }
    };
    let (mut cosine_min, mut cosine_max) = (0.0, 0.0);
    let score: Box<dyn Fn(u32) -> f32> = match (&strategy, &cosines) {
        (Ranking::Vector, Some(c)) => Box::new(|doc| c.get(doc as usize).copied().unwrap_or(-1.0)),
        (Ranking::Hybrid, Some(c)) => {
            let (lo, hi) = pool
                .iter()
                .filter_map(|&d| c.get(d as usize).copied())
                .fold((f32::MAX, f32::MIN), |(lo, hi), x| (lo.min(x), hi.max(x)));
            (cosine_min, cosine_max) = (lo, hi);
            let w = config.search.hybrid_vector_weight;
            Box::new(move |doc| {
                hybrid_score(
                    w,
                    c.get(doc as usize).copied().unwrap_or(lo),
                    lo,
                    hi,
                    bm25_norm(doc),
                )
            })
        }
        _ => Box::new(bm25_norm),
    };

    let exact = index
        .named_ignoring_case(query.text.trim())
        .find(|&d| in_scope(d));
    let threshold = config.search.score_threshold;
    let matching: Vec<u32> = pool
        .into_iter()
        .filter(|&d| Some(d) != exact)
        .filter(|&d| threshold.is_none_or(|t| score(d) >= t))
        .collect();
    let matches = matching.len() + usize::from(exact.is_some());

    let end = query.offset.saturating_add(query.limit);
    let mut ordered: Vec<Hit> = exact
        .map(|doc| Hit {
            doc,
            score: score(doc),
        })
        .into_iter()
        .collect();
    ordered.extend(top_k(
        matching,
        &score,
        name_of,
        end.saturating_sub(ordered.len()),
    ));
    let found = ordered
        .into_iter()
        .skip(query.offset)
        .take(query.limit)
        .filter_map(|h| {
            tools.get(h.doc as usize).map(|tool| Found {
                tool,
                score: h.score,
                doc: h.doc,
            })
        })
        .collect();
    drop(score);
    Ranked {
        found,
        matches,
        candidates,
        strategy,
        fallback,
        scoring: Scoring {
            strategy,
            max_bm25,
            cosines,
            cosine_min,
            cosine_max,
            vector_weight: config.search.hybrid_vector_weight,
            feedback,
            exact,
        },
        routing: None,
    }
}

/// The largest of `values`, or 0: four running maxima, since one waits on the last at every
/// step and a query can match thousands of tools.
fn max_of(values: impl Iterator<Item = f32>) -> f32 {
    let mut lanes = [0.0f32; 4];
    for (i, v) in values.enumerate() {
        if let Some(m) = lanes.get_mut(i % 4) {
            *m = m.max(v);
        }
    }
    lanes.into_iter().fold(0.0, f32::max)
}

/// `w × cosine (min-max normalized over the matching tools) + (1 - w) × normalized BM25`.
pub fn hybrid_score(w: f32, cosine: f32, lo: f32, hi: f32, bm25_norm: f32) -> f32 {
    let span = if hi > lo { hi - lo } else { 1.0 };
    w * (cosine - lo) / span + (1.0 - w) * bm25_norm
}

/// Pseudo-relevance feedback: the best tools' other terms re-rank the tools the query matched
/// (they add no matches: a tool sharing no term with the query, nor reaching the cosine floor,
/// is still no answer to it). Tool descriptions are a sentence or two, so a query's wording
/// often misses the one a tool uses; the best few tools say how the catalog words it. The
/// feedback tools are those the caller may see, so a hidden tool's words never shape a result.
fn feedback<'n>(
    index: &CatalogIndex,
    config: &Config,
    text: &str,
    bm25: &mut [f32],
    matched: &[u32],
    visible: impl Fn(u32) -> bool,
    name_of: impl Fn(u32) -> &'n str,
) -> Vec<(u32, f32)> {
    let tuning = config.search.tuning;
    if tuning.feedback_docs == 0 || tuning.feedback_terms == 0 || tuning.feedback_weight <= 0.0 {
        return Vec::new();
    }
    let raw = |d: u32| bm25.get(d as usize).copied().unwrap_or(0.0);
    let best = top_k(
        matched.iter().copied().filter(|&d| visible(d)),
        raw,
        name_of,
        tuning.feedback_docs,
    );
    let tools = index.catalog.tools();
    let with_schema = config.search.weights.input_schema > 0.0;
    let docs: Vec<(f32, Vec<(u32, f32)>)> = best
        .iter()
        .filter_map(|h| {
            let tool = tools.get(h.doc as usize)?;
            let schema = if with_schema {
                tool.schema_text()
            } else {
                String::new()
            };
            Some((h.score, index.bm25().doc_terms(h.doc, tool.fields(&schema))))
        })
        .collect();
    let asked: Vec<u32> = index
        .bm25()
        .query_terms(text)
        .into_iter()
        .map(|(_, id)| id)
        .collect();
    let mut lent = feedback_terms(&docs, &asked, tuning.feedback_terms);
    let top = lent.first().map_or(0.0, |&(_, w)| w);
    if top <= 0.0 {
        return Vec::new();
    }
    for (_, w) in &mut lent {
        *w = tuning.feedback_weight * *w / top;
    }
    let mut extra = vec![0.0; bm25.len()];
    index.bm25().add_scores(&lent, &mut extra, None);
    for &d in matched {
        if let (Some(s), Some(e)) = (bm25.get_mut(d as usize), extra.get(d as usize)) {
            *s += e;
        }
    }
    lent
}

/// Cosine of every candidate (indexed by catalog position), or why vectors cannot rank them
/// all: a partial vector ranking would silently drop the tools not yet embedded.
fn cosines_of(candidates: &[u32], v: &Vectors<'_>, len: usize) -> Result<Vec<f32>, Fallback> {
    let mut out = vec![-1.0; len];
    let mut missing = 0;
    for &d in candidates {
        match (v.tool)(d as usize) {
            Some(t) if t.len() == v.query.len() => {
                if let Some(slot) = out.get_mut(d as usize) {
                    *slot = vector::dot(v.query, t);
                }
            }
            _ => missing += 1,
        }
    }
    if missing > 0 {
        return Err(Fallback::new(
            FallbackKind::NotEmbedded,
            format!(
                "{missing} of {} candidate tools have no vector yet",
                candidates.len()
            ),
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::catalog::Catalog;
    use serde_json::value::RawValue;

    fn index(config: &Config) -> CatalogIndex {
        let tool = |name: &str, d: &str| {
            let raw: Box<RawValue> =
                serde_json::from_str(&format!(r#"{{"name":"{name}","description":"{d}"}}"#))
                    .unwrap();
            Tool::from_raw(&raw).unwrap()
        };
        let catalog = Catalog::from_tools(vec![
            tool("github_create_issue", "Open an issue"),
            tool("github_close_issue", "Close an issue"),
            tool("github_list_issues", "List issues"),
            tool("slack_post_message", "Post a message"),
            tool("stripe_refund_charge", "Refund a charge"),
        ]);
        CatalogIndex::build("ns", catalog, config)
    }

    fn off() -> Fallback {
        Fallback::new(FallbackKind::Unavailable, "off")
    }

    fn q(text: &str, limit: usize, offset: usize) -> Query {
        Query {
            text: text.into(),
            limit,
            offset,
            group: None,
        }
    }

    fn names(r: &Ranked) -> Vec<String> {
        r.found.iter().map(|f| f.tool.name.clone()).collect()
    }

    #[test]
    fn paging_is_disjoint_and_covers_the_matches() {
        let config = Config::default();
        let idx = index(&config);
        let first = search(&idx, &config, &q("issue", 2, 0), None, Err(off()));
        let second = search(&idx, &config, &q("issue", 2, 2), None, Err(off()));
        assert_eq!(first.matches, 3);
        assert_eq!(first.candidates, 5);
        let mut seen = names(&first);
        seen.extend(names(&second));
        assert_eq!(seen.len(), 3);
        seen.sort();
        seen.dedup();
        assert_eq!(
            seen,
            [
                "github_close_issue",
                "github_create_issue",
                "github_list_issues"
            ]
        );
        let past = search(&idx, &config, &q("issue", 2, 10), None, Err(off()));
        assert!(past.found.is_empty());
        assert_eq!(first.strategy, Ranking::Bm25);
    }

    #[test]
    fn groups_and_authorization() {
        let config = Config::parse(r#"{"group_separator":"_"}"#).unwrap();
        let idx = index(&config);
        let no_stripe = |t: &Tool| !t.name.starts_with("stripe");
        let r = search(
            &idx,
            &config,
            &q("refund charge", 5, 0),
            Some(&no_stripe),
            Err(off()),
        );
        assert!(r.found.is_empty());
        let mut grouped = q("issue message", 5, 0);
        grouped.group = Some("slack".into());
        let r = search(&idx, &config, &grouped, None, Err(off()));
        assert_eq!(names(&r), ["slack_post_message"]);
        assert_eq!(r.candidates, 1);
    }

    #[test]
    fn vectors_rank_only_when_every_candidate_has_one() {
        let config = Config::parse(r#"{"search":{"ranking":"vector","embeddings":{"cluster":"c","model_id":"m","dimensions":2}}}"#).unwrap();
        let idx = index(&config);
        // Catalog order: close, create, list, slack, stripe. Query vector points at slack.
        let vecs: Vec<Vec<f32>> = vec![
            vec![1.0, 0.0],
            vec![0.8, 0.6],
            vec![0.6, 0.8],
            vec![0.0, 1.0],
            vec![-1.0, 0.0],
        ];
        let lookup = |i: usize| vecs.get(i).map(Vec::as_slice);
        let query = [0.0f32, 1.0];
        let r = search(
            &idx,
            &config,
            &q("anything", 2, 0),
            None,
            Ok(Vectors {
                query: &query,
                tool: &lookup,
            }),
        );
        assert_eq!(r.strategy, Ranking::Vector);
        assert_eq!(names(&r), ["slack_post_message", "github_list_issues"]);
        // Cosines 0, 0.6, 0.8, 1, -1: three reach the floor (0.25); "anything" matches no term.
        assert_eq!(r.matches, 3);
        let partial = |i: usize| {
            if i == 4 {
                None
            } else {
                vecs.get(i).map(Vec::as_slice)
            }
        };
        let r = search(
            &idx,
            &config,
            &q("refund", 2, 0),
            None,
            Ok(Vectors {
                query: &query,
                tool: &partial,
            }),
        );
        assert_eq!(r.strategy, Ranking::Bm25);
        assert_eq!(
            r.fallback,
            Some(Fallback::new(
                FallbackKind::NotEmbedded,
                "1 of 5 candidate tools have no vector yet"
            ))
        );
        assert_eq!(names(&r), ["stripe_refund_charge"]);
        let down = Fallback::new(FallbackKind::Status, "embeddings service answered 500");
        let r = search(&idx, &config, &q("refund", 2, 0), None, Err(down.clone()));
        assert_eq!(r.fallback, Some(down));
    }

    #[test]
    fn a_query_nothing_matches_finds_nothing_under_vector_and_hybrid_ranking() {
        for ranking in ["vector", "hybrid"] {
            let config = Config::parse(&format!(r#"{{"search":{{"ranking":"{ranking}","embeddings":{{"cluster":"c","model_id":"m","dimensions":2}}}}}}"#)).unwrap();
            let idx = index(&config);
            // Every tool at cosine 0.1 of the query: below the floor.
            let vecs: Vec<Vec<f32>> = (0..5).map(|_| vec![0.1, 0.995]).collect();
            let lookup = |i: usize| vecs.get(i).map(Vec::as_slice);
            let query = [1.0f32, 0.0];
            let vectors = || {
                Ok(Vectors {
                    query: &query,
                    tool: &lookup,
                })
            };
            let r = search(&idx, &config, &q("zzzz qqqq", 5, 0), None, vectors());
            assert_eq!((r.matches, names(&r).len()), (0, 0), "{ranking}");
            // A term match still matches, whatever its cosine.
            let r = search(&idx, &config, &q("refund", 5, 0), None, vectors());
            assert_eq!(names(&r), ["stripe_refund_charge"], "{ranking}");
            // Without a floor every tool matches.
            let mut open = config.clone();
            open.search.min_cosine = None;
            let r = search(&idx, &open, &q("zzzz qqqq", 5, 0), None, vectors());
            assert_eq!(r.matches, 5, "{ranking}");
        }
    }

    #[test]
    fn exact_name_in_any_ascii_case_among_the_allowed() {
        let config = Config::default();
        let tool = |name: &str| {
            let raw: Box<RawValue> =
                serde_json::from_str(&format!(r#"{{"name":"{name}","description":"x"}}"#)).unwrap();
            Tool::from_raw(&raw).unwrap()
        };
        let catalog = Catalog::from_tools(vec![tool("Get_Issue"), tool("get_issue"), tool("x")]);
        let idx = CatalogIndex::build("ns", catalog, &config);
        let r = search(&idx, &config, &q(" GET_ISSUE ", 1, 0), None, Err(off()));
        assert_eq!(names(&r), ["Get_Issue"]);
        let lower_only = |t: &Tool| t.name != "Get_Issue";
        let r = search(
            &idx,
            &config,
            &q("GET_ISSUE", 1, 0),
            Some(&lower_only),
            Err(off()),
        );
        assert_eq!(names(&r), ["get_issue"]);
        assert_eq!(r.candidates, 2);
        assert_eq!(
            idx.named_ignoring_case("nope").count() + idx.named_ignoring_case("").count(),
            0
        );
    }

    /// The threshold compares BM25 scores divided by the best candidate's: the best scores 1,
    /// and a threshold between two scores keeps exactly those at or above it.
    #[test]
    fn threshold_drops_results_below_the_normalized_score() {
        let open = Config::default();
        let idx = index(&open);
        let all = search(&idx, &open, &q("close issue", 5, 0), None, Err(off()));
        assert_eq!(all.matches, 3, "{:?}", names(&all));
        let scores: Vec<f32> = all.found.iter().map(|f| f.score).collect();
        assert_eq!(names(&all)[0], "github_close_issue");
        assert!((scores[0] - 1.0).abs() < 1e-6, "{scores:?}");
        let second = scores[1];
        assert!(second < 1.0 && second > 0.0, "{scores:?}");
        for (threshold, kept) in [
            (second, 1 + scores.iter().filter(|&&s| s == second).count()),
            ((1.0 + second) / 2.0, 1),
        ] {
            let mut config = open.clone();
            config.search.score_threshold = Some(threshold);
            let r = search(&idx, &config, &q("close issue", 5, 0), None, Err(off()));
            assert_eq!(r.matches, kept, "threshold {threshold}: {scores:?}");
            assert_eq!(r.found.len(), kept, "threshold {threshold}: {scores:?}");
            assert_eq!(names(&r)[0], "github_close_issue");
            assert!(
                r.found.iter().all(|f| f.score >= threshold),
                "{:?}",
                r.found
            );
        }
        // Over 1 nothing is left, not even the best.
        let mut config = open.clone();
        config.search.score_threshold = Some(1.01);
        let r = search(&idx, &config, &q("close issue", 5, 0), None, Err(off()));
        assert_eq!((r.matches, r.found.len()), (0, 0));
    }

    #[test]
    fn exact_name_first_even_under_threshold() {
        let open = Config::default();
        let idx = index(&open);
        let query = q("github_list_issues", 5, 0);
        let unfiltered = search(&idx, &open, &query, None, Err(off()));
        assert!(unfiltered.matches > 1, "{:?}", names(&unfiltered));
        // 1.01: no score reaches it, yet the tool named by the query stays, alone.
        let mut config = open.clone();
        config.search.score_threshold = Some(1.01);
        let r = search(&idx, &config, &query, None, Err(off()));
        assert_eq!(names(&r), ["github_list_issues"]);
        assert_eq!(r.matches, 1);
    }

    fn hierarchical(extra: &str) -> Config {
        Config::parse(&format!(
            r#"{{"group_separator":"_","search":{{"strategy":"hierarchical"{extra}}}}}"#
        ))
        .unwrap()
    }

    #[test]
    fn hierarchical_search_ranks_only_the_tools_of_the_best_groups() {
        let config = hierarchical(r#","routing":{"groups":1}"#);
        let idx = index(&config);
        // "message" is slack's word; "charge" would draw stripe in a flat search.
        let r = search(
            &idx,
            &config,
            &q("post a message about a charge", 5, 0),
            None,
            Err(off()),
        );
        let routing = r.routing.clone().unwrap();
        assert_eq!(routing.used, Strategy::Hierarchical);
        assert_eq!(routing.groups, ["slack"]);
        assert_eq!(routing.stage1_groups, 2);
        assert_eq!(names(&r), ["slack_post_message"]);
        assert_eq!(
            r.candidates, 1,
            "stage 2 ranks the chosen group's tools only"
        );
        let flat = search(
            &idx,
            &Config::parse(r#"{"group_separator":"_"}"#).unwrap(),
            &q("post a message about a charge", 5, 0),
            None,
            Err(off()),
        );
        assert_eq!(names(&flat).len(), 2);
        assert!(flat.routing.is_none());
    }

    #[test]
    fn hierarchical_search_falls_back_to_flat_and_says_why() {
        let config = hierarchical("");
        let idx = index(&config);
        let r = search(
            &idx,
            &config,
            &q("weather tomorrow", 5, 0),
            None,
            Err(off()),
        );
        let routing = r.routing.unwrap();
        assert_eq!(routing.used, Strategy::Flat);
        assert_eq!(
            routing.fallback.as_deref(),
            Some("no group matches the query")
        );
        assert_eq!(r.candidates, 5);
        // A description matches, the group's tools do not: stage 2 finds nothing.
        let config = hierarchical(
            r#","routing":{"descriptions":{"slack":"chat with the team about payments"}}"#,
        );
        let idx = index(&config);
        let r = search(&idx, &config, &q("payments", 5, 0), None, Err(off()));
        assert_eq!(
            r.routing.unwrap().fallback.as_deref(),
            Some("no tool of the chosen groups matches the query")
        );
        // An agent's own group choice is a flat search inside it.
        let mut grouped = q("issue", 5, 0);
        grouped.group = Some("github".into());
        assert!(search(&idx, &config, &grouped, None, Err(off()))
            .routing
            .is_none());
    }

    #[test]
    fn hierarchical_groups_are_the_callers_own() {
        let config = hierarchical("");
        let idx = index(&config);
        let no_stripe = |t: &Tool| !t.name.starts_with("stripe");
        let r = search(
            &idx,
            &config,
            &q("refund a charge", 5, 0),
            Some(&no_stripe),
            Err(off()),
        );
        let routing = r.routing.unwrap();
        assert_eq!(routing.stage1_groups, 0, "a hidden group is never ranked");
        assert_eq!(routing.used, Strategy::Flat);
        assert!(r.found.is_empty());
        let all = search(&idx, &config, &q("refund a charge", 5, 0), None, Err(off()));
        assert_eq!(all.routing.unwrap().groups, ["stripe"]);
    }
}
