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
    /// The query's unit vector, then (for a task of several steps) each part's, laid end to
    /// end (`rank::parts`).
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
    /// Under vector and hybrid ranking, how many candidates had a vector (the others ranked by
    /// their BM25 score alone).
    pub embedded: Option<usize>,
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
    /// Cosine of every tool with the query, by catalog position (vector and hybrid ranking);
    /// `None` for a tool without a vector yet.
    pub cosines: Option<Vec<Option<f32>>>,
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

/// A search over every candidate, whatever `search.strategy` says.
pub fn flat<'a>(
    index: &'a CatalogIndex,
    config: &Config,
    query: &Query,
    allowed: Option<&dyn Fn(&Tool) -> bool>,
    vectors: Result<Vectors<'_>, Fallback>,
) -> Ranked<'a> {
    ranked_within(index, config, query, allowed, None, vectors)
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
        (_, Ok(v)) => {
            let scoped = scoped.as_deref().unwrap_or(&[]);
            match cosines_of(scoped, &v, tools.len(), config.search.require_all_vectors) {
                Ok(c) => (wanted, None, Some(c)),
                Err(reason) => (Ranking::Bm25, Some(reason), None),
            }
        }
    };
    let embedded = cosines.as_ref().map(|c| c.iter().flatten().count());

    let (mut bm25, matched) = index.bm25().scores_and_matches(&query.text);
    let name_of = |d: u32| tools.get(d as usize).map(|t| t.name.as_ref()).unwrap_or("");
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
                            .and_then(|c| c.get(d as usize).copied().flatten())
                            .is_some_and(|c| c >= floor)
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
    let mut weight = config.search.hybrid_vector_weight;
    let score: Box<dyn Fn(u32) -> f32> = match (&strategy, &cosines) {
        (Ranking::Vector | Ranking::Hybrid, Some(c)) => {
            let (lo, hi) = pool
                .iter()
                .filter_map(|&d| c.get(d as usize).copied().flatten())
                .fold((f32::MAX, f32::MIN), |(lo, hi), x| (lo.min(x), hi.max(x)));
            let (lo, hi) = if lo <= hi { (lo, hi) } else { (0.0, 0.0) };
            (cosine_min, cosine_max) = (lo, hi);
            let best = pool
                .iter()
                .copied()
                .filter(|&d| raw(d) > 0.0)
                .reduce(|a, b| if raw(b) > raw(a) { b } else { a });
            weight = vector_weight(
                config,
                best.map_or(0.0, |d| coverage(index, &query.text, d)),
            );
            let fusion = Fusion {
                strategy,
                vector_weight: weight,
                cosine_min: lo,
                cosine_max: hi,
            };
            Box::new(move |doc| {
                fusion.score(c.get(doc as usize).copied().flatten(), bm25_norm(doc))
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
        embedded,
        fallback,
        scoring: Scoring {
            strategy,
            max_bm25,
            cosines,
            cosine_min,
            cosine_max,
            vector_weight: weight,
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

/// The share of the query's distinct terms that the entry at `doc` holds.
pub(crate) fn coverage(index: &CatalogIndex, query: &str, doc: u32) -> f32 {
    let bm25 = index.bm25();
    let mut asked = bm25.term_rules().terms(query);
    crate::sort::sort(&mut asked);
    asked.dedup();
    if asked.is_empty() {
        return 0.0;
    }
    let held = bm25
        .query_terms(query)
        .iter()
        .filter(|(_, id)| bm25.term_score(*id, doc) > 0.0)
        .count();
    held as f32 / asked.len() as f32
}

/// The vector share of a hybrid score for a query whose best lexical match holds `coverage`
/// of its distinct terms: the configured weight where it holds none, falling by
/// `Tuning::vector_weight_drop` where it holds all. A query whose words the catalog uses
/// (an agent's task naming the service and the object) is answered best by its words; one
/// that paraphrases (a user's question against marketing descriptions) by its meaning. On the
/// first halves, 0.85 falling by 0.5 matched the fixed 0.75 on MetaTool and the service groups
/// and beat it on the schema set (+0.037 NDCG@10) and `mcp-real` (+0.006); README, "Retrieval
/// quality".
pub fn vector_weight(config: &Config, coverage: f32) -> f32 {
    let drop = config.search.tuning.vector_weight_drop;
    (config.search.hybrid_vector_weight - drop * coverage.clamp(0.0, 1.0)).max(0.0)
}

/// `w × cosine (min-max normalized over the matching tools) + (1 - w) × normalized BM25`.
pub fn hybrid_score(w: f32, cosine: f32, lo: f32, hi: f32, bm25_norm: f32) -> f32 {
    let span = if hi > lo { hi - lo } else { 1.0 };
    w * (cosine - lo) / span + (1.0 - w) * bm25_norm
}

/// How vector and hybrid ranking score one candidate, with or without its vector.
#[derive(Debug, Clone, Copy)]
pub struct Fusion {
    pub strategy: Ranking,
    pub vector_weight: f32,
    /// The cosine range over the matching candidates that have a vector.
    pub cosine_min: f32,
    pub cosine_max: f32,
}

impl Fusion {
    /// A candidate not embedded yet (a tool just added, a service that was down) takes its
    /// normalized BM25 score in place of its normalized cosine: it ranks among the others by
    /// what it says, instead of the whole answer falling back to BM25 until the last one is
    /// embedded.
    pub fn score(&self, cosine: Option<f32>, bm25_norm: f32) -> f32 {
        let (lo, hi) = (self.cosine_min, self.cosine_max);
        match (self.strategy, cosine) {
            (Ranking::Vector, Some(c)) => c,
            // Within the range the embedded candidates span: a degenerate range (one embedded
            // candidate) must not lift an unembedded one above every cosine.
            (Ranking::Vector, None) => lo + bm25_norm * (hi - lo).max(0.0),
            (_, Some(c)) => hybrid_score(self.vector_weight, c, lo, hi, bm25_norm),
            (_, None) => bm25_norm,
        }
    }

    /// The normalized cosine a candidate's score was fused from.
    pub fn normalized_cosine(&self, cosine: Option<f32>, bm25_norm: f32) -> f32 {
        let (lo, hi) = (self.cosine_min, self.cosine_max);
        match cosine {
            Some(c) if hi > lo => (c - lo) / (hi - lo),
            Some(_) => 0.0,
            None => bm25_norm,
        }
    }
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

/// A tool's cosine with a query: with the whole query, raised half way to its best part's
/// where that is higher. A task's part finds the tool for its step (all-MiniLM-L6-v2, vector
/// NDCG@10 on the first halves: `mcp-real` 0.680 → 0.698, the service groups 0.809 → 0.834),
/// and the whole query keeps its say: the best part's cosine outright lost 0.013 of hybrid
/// NDCG@10 on MetaTool's first half, where a question's clauses are not steps (README,
/// "Retrieval quality").
pub fn query_cosine(query: &[f32], tool: &[f32]) -> f32 {
    let mut chunks = query.chunks_exact(tool.len());
    let whole = chunks.next().map_or(0.0, |q| vector::dot(q, tool));
    let best_part = chunks.map(|p| vector::dot(p, tool)).fold(whole, f32::max);
    whole + 0.5 * (best_part - whole)
}

/// Cosine of every candidate that has a vector (indexed by catalog position), or why vectors
/// cannot rank: none of the candidates has one, or (`require_all`) some have none.
fn cosines_of(
    candidates: &[u32],
    v: &Vectors<'_>,
    len: usize,
    require_all: bool,
) -> Result<Vec<Option<f32>>, Fallback> {
    let mut out = vec![None; len];
    let mut missing = 0;
    for &d in candidates {
        match (v.tool)(d as usize) {
            Some(t) if !t.is_empty() && v.query.len().is_multiple_of(t.len()) => {
                if let Some(slot) = out.get_mut(d as usize) {
                    *slot = Some(query_cosine(v.query, t));
                }
            }
            _ => missing += 1,
        }
    }
    let none = !candidates.is_empty() && missing == candidates.len();
    if none || (require_all && missing > 0) {
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
mod tests;
