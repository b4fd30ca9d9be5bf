//! Retrieval evaluation: ranks every query of a data set with the filter's own ranking code and
//! prints one line per ranker:
//! `ranker=bm25 queries=N R@1=0.xxx R@5=0.xxx NDCG@10=0.xxx MRR=0.xxx`.
//!
//! Usage: `cargo run --release -p mcp-tool-search --example eval -- <folder> [--embeddings URL]
//! [--sweep]` where the folder holds `tools.jsonl` (MCP tool definitions, one a line) and
//! `queries.jsonl` (`{"id","query","relevant":[names]}` one a line). With `--embeddings` (an
//! OpenAI-compatible `/v1/embeddings` URL, e.g. the embedder sidecar) it also prints the
//! `vector` and `hybrid` rankers; `--sweep` prints hybrid at other vector weights on stderr.
//!
//! The split: every parameter of the shipped ranking is chosen on the first half of
//! `queries.jsonl` (by line order), and each figure is also printed for each half
//! (`split=first|second ranker=...`), so the second half shows what the choice is worth on
//! queries it never saw. `--set key=value` (repeatable) changes one parameter from the shipped
//! default, for ablations and sweeps: `k1`, `b` (every field), `b_name`, `b_description`,
//! `b_input_schema`, `per_field` (0/1), `name_as_written`, `vector_weight_drop`,
//! `feedback_docs`, `feedback_terms`, `feedback_weight`, `stem` and `stop_words` (0/1: the
//! term rules), `name`, `description`,
//! `input_schema` (field weights), `hybrid` (the vector weight), `task_parts` (0: embed the
//! whole query alone, not its parts too), `argument_descriptions` (1: embed the arguments'
//! descriptions with their names). `--vectors FILE` keeps the embeddings of tools and queries in FILE and reads
//! them from there next time (same texts only).

mod embed;
mod metrics;
mod reference;

use mcp_tool_search_core::{
    query_cosine, query_texts, query_vector, search, tool_text, Catalog, CatalogIndex, Config,
    Fallback, FallbackKind, Query, Ranking, Strategy, Tool, ToolVectors, Tuning, Vectors,
};
use serde::Deserialize;
use serde_json::value::RawValue;
use std::path::Path;
use std::process::ExitCode;

use embed::{embed, embed_cached};
use metrics::Metrics;

#[derive(Deserialize)]
struct Labeled {
    query: String,
    relevant: Vec<String>,
}

fn read_lines(path: &Path) -> Result<Vec<String>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_string)
        .collect())
}

fn evaluate(
    index: &CatalogIndex,
    config: &Config,
    queries: &[Labeled],
    vectors: Option<(&ToolVectors, &[Vec<f32>])>,
) -> Metrics {
    let all = index.catalog.len();
    let mut metrics = Metrics::default();
    for (i, q) in queries.iter().enumerate() {
        let query = Query {
            text: q.query.clone(),
            limit: all,
            offset: 0,
            group: None,
        };
        let lookup = |p: usize| vectors.and_then(|(t, _)| t.get(p));
        let v = match vectors.and_then(|(_, qs)| qs.get(i)) {
            Some(qv) => Ok(Vectors {
                query: qv,
                tool: &lookup,
            }),
            None => Err(Fallback::new(FallbackKind::Unavailable, "lexical only")),
        };
        let result = search(index, config, &query, None, v);
        let ranked: Vec<&str> = result.found.iter().map(|f| f.tool.name.as_ref()).collect();
        metrics.add(&ranked, &q.relevant);
    }
    metrics
}

/// The reference ranker's lines for the whole set and each half.
fn report_reference(reference: &reference::Reference, queries: &[Labeled]) {
    let score = |qs: &[Labeled]| {
        let mut m = Metrics::default();
        for q in qs {
            m.add(&reference.rank(&q.query), &q.relevant);
        }
        m
    };
    let (first, second) = queries.split_at(queries.len() / 2);
    Metrics::print(
        "reference-bm25",
        &score(queries),
        &score(first),
        &score(second),
    );
}

/// The figures rank every tool: no cosine floor (its effect is reported on its own).
fn with_ranking(ranking: Ranking, weight: f32) -> Config {
    let mut config = base_config();
    config.search.ranking = ranking;
    config.search.hybrid_vector_weight = weight;
    config.search.min_cosine = None;
    config
}

thread_local! {
    static OVERRIDES: std::cell::RefCell<Vec<(String, f32)>> = const { std::cell::RefCell::new(Vec::new()) };
    /// The set's own plugin configuration (`config.json` in its folder), else the default.
    static SET_CONFIG: std::cell::RefCell<Config> = std::cell::RefCell::new(Config::default());
}

/// The shipped configuration (as the set's `config.json` changes it) with `--set` applied.
fn base_config() -> Config {
    let mut config = SET_CONFIG.with(|c| c.borrow().clone());
    OVERRIDES.with(|o| {
        for (key, value) in o.borrow().iter() {
            apply(&mut config, key, *value);
        }
    });
    config
}

const KEYS: &[&str] = &[
    "k1",
    "b",
    "b_name",
    "b_description",
    "b_input_schema",
    "per_field",
    "name_as_written",
    "vector_weight_drop",
    "feedback_docs",
    "feedback_terms",
    "feedback_weight",
    "stem",
    "stop_words",
    "name",
    "description",
    "input_schema",
    "hybrid",
    "task_parts",
    "argument_descriptions",
];

fn apply(config: &mut Config, key: &str, v: f32) {
    let t: &mut Tuning = &mut config.search.tuning;
    match key {
        "k1" => t.k1 = v,
        "b" => {
            t.b = [v; 3];
            t.b_from_lengths = [false; 3];
        }
        "b_name" => (t.b[0], t.b_from_lengths[0]) = (v, false),
        "b_description" => (t.b[1], t.b_from_lengths[1]) = (v, false),
        "b_input_schema" => (t.b[2], t.b_from_lengths[2]) = (v, false),
        "per_field" => t.per_field = v != 0.0,
        "name_as_written" => t.name_as_written = v,
        "vector_weight_drop" => t.vector_weight_drop = v,
        "feedback_docs" => t.feedback_docs = v as usize,
        "feedback_terms" => t.feedback_terms = v as usize,
        "feedback_weight" => t.feedback_weight = v,
        "stem" => t.terms.stem = v != 0.0,
        "stop_words" => t.terms.stop_words = v != 0.0,
        "name" => config.search.weights.name = v,
        "description" => config.search.weights.description = v,
        "input_schema" => config.search.weights.input_schema = v,
        "hybrid" => config.search.hybrid_vector_weight = v,
        _ => {}
    }
}

/// The whole set's line, then each half's.
fn report(
    index: &CatalogIndex,
    config: &Config,
    queries: &[Labeled],
    vectors: Option<(&ToolVectors, &[Vec<f32>])>,
    ranker: &str,
) -> Metrics {
    let whole = evaluate(index, config, queries, vectors);
    let half = queries.len() / 2;
    let (first, second) = queries.split_at(half);
    let split_vectors = vectors.map(|(t, q)| {
        let (a, b) = q.split_at(half.min(q.len()));
        ((t, a), (t, b))
    });
    let a = evaluate(index, config, first, split_vectors.map(|(a, _)| a));
    let b = evaluate(index, config, second, split_vectors.map(|(_, b)| b));
    Metrics::print(ranker, &whole, &a, &b);
    whole
}

/// Hierarchical search (`search.strategy: hierarchical`) beside flat: the shipped routing, then
/// stage 1's limits chosen on the first half and scored on the second.
fn routing_report(
    index: &CatalogIndex,
    queries: &[Labeled],
    vectors: Option<(&ToolVectors, &[Vec<f32>])>,
    ranking: &str,
) {
    let config = |groups: Option<usize>, min: Option<f32>| {
        let mut c = match vectors {
            None => base_config(),
            Some(_) => with_ranking(Ranking::Hybrid, base_config().search.hybrid_vector_weight),
        };
        c.search.strategy = Strategy::Hierarchical;
        if let Some(g) = groups {
            c.search.routing.groups = g;
        }
        if let Some(m) = min {
            c.search.routing.min_group_score = m;
        }
        c
    };
    let shipped = config(None, None);
    report(
        index,
        &shipped,
        queries,
        vectors,
        &format!("{ranking}+hierarchical"),
    );
    let half = queries.len() / 2;
    let (first, second) = queries.split_at(half);
    let split = vectors.map(|(t, q)| {
        let (a, b) = q.split_at(half.min(q.len()));
        ((t, a), (t, b))
    });
    let ndcg = |m: &Metrics| m.ndcg10 / m.queries.max(1) as f64;
    let mut best = (
        f64::MIN,
        shipped.search.routing.groups,
        shipped.search.routing.min_group_score,
    );
    for groups in [1, 2, 3, 5, 8] {
        for min in [0.0, 0.25, 0.5, 0.75] {
            let m = ndcg(&evaluate(
                index,
                &config(Some(groups), Some(min)),
                first,
                split.map(|(a, _)| a),
            ));
            eprintln!("split=first ranker={ranking}+hierarchical groups={groups} min_group_score={min:.2} NDCG@10={m:.4}");
            if m > best.0 + 1e-9 {
                best = (m, groups, min);
            }
        }
    }
    let (_, groups, min) = best;
    let chosen = evaluate(
        index,
        &config(Some(groups), Some(min)),
        second,
        split.map(|(_, b)| b),
    );
    println!(
        "routing chosen on the first half: groups={groups} min_group_score={min:.2}; second half {}",
        chosen.line(&format!("{ranking}+hierarchical"))
    );
}

/// Queries no tool answers, to see what the floor keeps out.
const NONSENSE: &[&str] = &[
    "zzzz qqqq",
    "asdf jkl",
    "lorem ipsum dolor sit amet",
    "qwerty uiop",
    "xyzzy plugh",
    "blorft snerg wibble",
];

/// How the cosine floor is chosen, on the first half of the queries: the highest floor (in steps
/// of 0.05) at which hybrid NDCG@10 stays within 0.005 of ranking without one. Then, on the
/// second half, the share of relevant tools it keeps and NDCG@10 with and without it; and how
/// many tools the nonsense queries match.
fn floor_report(
    index: &CatalogIndex,
    queries: &[Labeled],
    tools: &ToolVectors,
    query_vectors: &[Vec<f32>],
    nonsense: &[Vec<f32>],
) {
    // The cosine the filter ranks and floors with (a task's parts count).
    let dot = |q: &[f32], t: &[f32]| query_cosine(q, t);
    let cosine = |q: &[f32], name: &str| {
        let at = index
            .catalog
            .tools()
            .iter()
            .position(|t| &*t.name == name)?;
        Some(dot(q, tools.get(at)?))
    };
    let half = queries.len() / 2;
    let (first, second) = queries.split_at(half);
    let (first_v, second_v) = query_vectors.split_at(half.min(query_vectors.len()));
    let hybrid = |floor: Option<f32>| {
        let mut c = with_ranking(
            Ranking::Hybrid,
            mcp_tool_search_core::DEFAULT_HYBRID_VECTOR_WEIGHT,
        );
        c.search.min_cosine = floor;
        c
    };
    let ndcg = |m: &Metrics| m.ndcg10 / m.queries.max(1) as f64;
    let kept = |qs: &[Labeled], vs: &[Vec<f32>], floor: f32| {
        let (mut kept, mut all) = (0usize, 0usize);
        for (q, v) in qs.iter().zip(vs) {
            for c in q.relevant.iter().filter_map(|n| cosine(v, n)) {
                all += 1;
                kept += usize::from(c >= floor);
            }
        }
        100.0 * kept as f64 / all.max(1) as f64
    };
    let nonsense_over = |floor: f32| {
        nonsense
            .iter()
            .map(|qv| {
                (0..index.catalog.len())
                    .filter_map(|i| tools.get(i))
                    .filter(|t| dot(qv, t) >= floor)
                    .count()
            })
            .max()
            .unwrap_or(0)
    };
    let base = ndcg(&evaluate(
        index,
        &hybrid(None),
        first,
        Some((tools, first_v)),
    ));
    let mut chosen = 0.0f32;
    for step in 1..=12 {
        let floor = step as f32 * 0.05;
        let m = ndcg(&evaluate(
            index,
            &hybrid(Some(floor)),
            first,
            Some((tools, first_v)),
        ));
        println!(
            "floor {floor:.2}: first half hybrid NDCG@10 {m:.4} (none: {base:.4}), relevant tools kept {:.1}%, nonsense queries match at most {} tools",
            kept(first, first_v, floor),
            nonsense_over(floor)
        );
        if base - m <= 0.005 {
            chosen = floor;
        }
    }
    let open = evaluate(index, &hybrid(None), second, Some((tools, second_v)));
    let floored = evaluate(
        index,
        &hybrid(Some(chosen)),
        second,
        Some((tools, second_v)),
    );
    println!(
        "chosen min_cosine {chosen:.2}; second half: relevant tools kept {:.1}%, hybrid NDCG@10 {:.4} without it, {:.4} with it",
        kept(second, second_v, chosen),
        ndcg(&open),
        ndcg(&floored)
    );
    for (text, qv) in NONSENSE.iter().zip(nonsense) {
        let best = (0..index.catalog.len())
            .filter_map(|i| tools.get(i))
            .map(|t| dot(qv, t))
            .fold(f32::MIN, f32::max);
        let over = (0..index.catalog.len())
            .filter_map(|i| tools.get(i))
            .filter(|t| dot(qv, t) >= chosen)
            .count();
        println!("nonsense {text:?}: best cosine {best:.3}, {over} tools at or above {chosen:.2}");
    }
}

/// CI's quality floors: the least NDCG@10 over the whole set each ranker may score.
#[derive(Default)]
struct Floors {
    bm25: Option<f64>,
    vector: Option<f64>,
    hybrid: Option<f64>,
}

/// A ranking change that loses NDCG@10 below the floor (set by make's `variable`) fails the
/// run.
fn at_least(
    ranker: &str,
    variable: &str,
    metrics: &Metrics,
    floor: Option<f64>,
) -> Result<(), String> {
    let Some(floor) = floor else {
        return Ok(());
    };
    let ndcg = metrics.ndcg10 / metrics.queries.max(1) as f64;
    if ndcg < floor {
        return Err(format!(
            "{ranker} NDCG@10 {ndcg:.4} is below the floor {floor} ({variable})"
        ));
    }
    Ok(())
}

fn run(
    folder: &Path,
    embeddings_url: Option<&str>,
    sweep: bool,
    floors: &Floors,
    cache: Option<&Path>,
) -> Result<(), String> {
    let tools_path = folder.join("tools.jsonl");
    let mut tools = Vec::new();
    for (i, line) in read_lines(&tools_path)?.iter().enumerate() {
        let raw: Box<RawValue> = serde_json::from_str(line)
            .map_err(|e| format!("{}:{}: {e}", tools_path.display(), i + 1))?;
        tools.push(
            Tool::from_raw(&raw).map_err(|e| format!("{}:{}: {e}", tools_path.display(), i + 1))?,
        );
    }
    let queries_path = folder.join("queries.jsonl");
    let mut queries = Vec::new();
    for (i, line) in read_lines(&queries_path)?.iter().enumerate() {
        let q: Labeled = serde_json::from_str(line)
            .map_err(|e| format!("{}:{}: {e}", queries_path.display(), i + 1))?;
        queries.push(q);
    }
    let config_path = folder.join("config.json");
    if let Ok(text) = std::fs::read_to_string(&config_path) {
        let set = Config::parse(&text).map_err(|e| format!("{}: {e}", config_path.display()))?;
        SET_CONFIG.with(|c| *c.borrow_mut() = set);
    }
    let config = base_config();
    let index = CatalogIndex::build("eval", Catalog::from_tools(tools), &config);
    let half = queries.len() / 2;
    println!(
        "split: parameters chosen on the first half (queries 1 to {half}); second half {} to {} held out",
        half + 1,
        queries.len()
    );
    let bm25 = report(&index, &config, &queries, None, "bm25");
    report_reference(
        &reference::Reference::build(index.catalog.tools()),
        &queries,
    );
    let grouped =
        config.group_separator.is_some() || config.tools.iter().any(|t| t.group.is_some());
    if grouped {
        routing_report(&index, &queries, None, "bm25");
    }
    at_least("BM25", "MIN_NDCG", &bm25, floors.bm25)?;
    let Some(url) = embeddings_url else {
        if floors.vector.is_some() || floors.hybrid.is_some() {
            return Err(
                "vector and hybrid floors need the embeddings service (EMBEDDINGS=1)".into(),
            );
        }
        return Ok(());
    };
    // The filter's own tool text and vectors, as it would embed them.
    // `--set argument_descriptions=1`: the arguments' names and descriptions, as embedded
    // before only their names were.
    let descriptions = OVERRIDES.with(|o| {
        o.borrow()
            .iter()
            .any(|(k, v)| k == "argument_descriptions" && *v != 0.0)
    });
    let texts: Vec<String> = index
        .catalog
        .tools()
        .iter()
        .map(|t| {
            let text = tool_text(t);
            let schema = t.schema_text();
            match text.split_once(" Arguments: ") {
                Some((head, _)) if descriptions => format!("{head} Arguments: {}", schema.trim()),
                _ => text,
            }
        })
        .collect();
    let tool_vectors = ToolVectors {
        by_position: embed_cached(url, &texts, cache)?
            .into_iter()
            .map(Some)
            .collect(),
    };
    // What the filter sends for each query (the query, then its parts) and the one vector it
    // ranks with (theirs laid end to end); `--set task_parts=0` keeps the whole query's alone.
    let query_texts: Vec<String> = queries.iter().flat_map(|q| query_texts(&q.query)).collect();
    let whole_only = OVERRIDES.with(|o| {
        o.borrow()
            .iter()
            .any(|(k, v)| k == "task_parts" && *v == 0.0)
    });
    let mut answered = embed_cached(url, &query_texts, cache)?.into_iter();
    let mut query_vectors = Vec::with_capacity(queries.len());
    for q in &queries {
        let mut v = query_vector(&mut answered, &q.query).ok_or("fewer vectors than queries")?;
        if whole_only {
            v.truncate(
                tool_vectors
                    .by_position
                    .first()
                    .and_then(|t| t.as_ref())
                    .map_or(0, Vec::len),
            );
        }
        query_vectors.push(v);
    }
    let vectors = Some((&tool_vectors, query_vectors.as_slice()));
    let vector = with_ranking(Ranking::Vector, 1.0);
    let vector_metrics = report(&index, &vector, &queries, vectors, "vector");
    let hybrid = with_ranking(Ranking::Hybrid, config.search.hybrid_vector_weight);
    let hybrid_metrics = report(&index, &hybrid, &queries, vectors, "hybrid");
    if grouped {
        routing_report(&index, &queries, vectors, "hybrid");
    }
    let nonsense = embed(
        url,
        &NONSENSE.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
    )?;
    floor_report(&index, &queries, &tool_vectors, &query_vectors, &nonsense);
    at_least("vector", "MIN_NDCG_VECTOR", &vector_metrics, floors.vector)?;
    at_least("hybrid", "MIN_NDCG_HYBRID", &hybrid_metrics, floors.hybrid)?;
    if sweep {
        // On the first half only: the weight is a parameter like any other.
        let (first, first_v) = (
            queries.get(..half).unwrap_or_default(),
            query_vectors.get(..half).unwrap_or_default(),
        );
        for w in [0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9] {
            let c = with_ranking(Ranking::Hybrid, w);
            eprintln!(
                "split=first {}",
                evaluate(&index, &c, first, Some((&tool_vectors, first_v)))
                    .line(&format!("hybrid(w={w})"))
            );
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(folder) = args.first() else {
        eprintln!(
            "usage: eval <folder with tools.jsonl and queries.jsonl> [--embeddings URL] [--sweep] [--min-ndcg X] [--min-ndcg-vector X] [--min-ndcg-hybrid X]"
        );
        return ExitCode::from(2);
    };
    let url = args
        .iter()
        .position(|a| a == "--embeddings")
        .and_then(|i| args.get(i + 1));
    let sweep = args.iter().any(|a| a == "--sweep");
    let cache = args
        .iter()
        .position(|a| a == "--vectors")
        .and_then(|i| args.get(i + 1))
        .map(Path::new);
    let mut overrides = Vec::new();
    for (i, a) in args.iter().enumerate() {
        if a != "--set" {
            continue;
        }
        let parsed = args
            .get(i + 1)
            .and_then(|kv| kv.split_once('='))
            .and_then(|(k, v)| Some((k.to_string(), v.parse::<f32>().ok()?)))
            .filter(|(k, _)| KEYS.contains(&k.as_str()));
        match parsed {
            Some(kv) => overrides.push(kv),
            None => {
                eprintln!(
                    "eval: --set needs key=number, key one of {}",
                    KEYS.join(", ")
                );
                return ExitCode::from(2);
            }
        }
    }
    OVERRIDES.with(|o| *o.borrow_mut() = overrides);
    let floor = |flag: &str| -> Result<Option<f64>, ExitCode> {
        match args.iter().position(|a| a == flag) {
            None => Ok(None),
            Some(i) => match args.get(i + 1).and_then(|v| v.parse::<f64>().ok()) {
                Some(x) => Ok(Some(x)),
                None => {
                    eprintln!("eval: {flag} needs a number, such as 0.56");
                    Err(ExitCode::from(2))
                }
            },
        }
    };
    let floors = match (
        floor("--min-ndcg"),
        floor("--min-ndcg-vector"),
        floor("--min-ndcg-hybrid"),
    ) {
        (Ok(bm25), Ok(vector), Ok(hybrid)) => Floors {
            bm25,
            vector,
            hybrid,
        },
        (Err(code), _, _) | (_, Err(code), _) | (_, _, Err(code)) => return code,
    };
    match run(
        Path::new(folder),
        url.map(String::as_str),
        sweep,
        &floors,
        cache,
    ) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("eval: {e}");
            ExitCode::FAILURE
        }
    }
}
