//! Retrieval evaluation: ranks every query of a data set with the filter's own ranking code and
//! prints one line per ranker:
//! `ranker=bm25 queries=N R@1=0.xxx R@5=0.xxx NDCG@10=0.xxx MRR=0.xxx`.
//!
//! Usage: `cargo run --release -p mcp-tool-search --example eval -- <folder>` where the folder
//! holds `tools.jsonl` (MCP tool definitions, one a line) and `queries.jsonl`
//! (`{"id","query","relevant":[names]}` one a line).

use mcp_tool_search::catalog::{Catalog, CatalogIndex, Tool};
use mcp_tool_search::config::Config;
use mcp_tool_search::search::{self, Fallback, FallbackKind, Query};
use serde::Deserialize;
use serde_json::value::RawValue;
use std::path::Path;
use std::process::ExitCode;

#[derive(Deserialize)]
struct Labeled {
    query: String,
    relevant: Vec<String>,
}

#[derive(Default)]
struct Metrics {
    queries: usize,
    r1: f64,
    r5: f64,
    ndcg10: f64,
    mrr: f64,
}

impl Metrics {
    fn add(&mut self, ranked: &[&str], relevant: &[String]) {
        let is_rel = |name: &&str| relevant.iter().any(|r| r == name);
        let rel_in = |k: usize| ranked.iter().take(k).filter(|n| is_rel(n)).count() as f64;
        let total = relevant.len().max(1) as f64;
        self.queries += 1;
        self.r1 += rel_in(1) / total;
        self.r5 += rel_in(5) / total;
        let dcg: f64 = ranked
            .iter()
            .take(10)
            .enumerate()
            .filter(|(_, n)| is_rel(n))
            .map(|(i, _)| 1.0 / ((i + 2) as f64).log2())
            .sum();
        let ideal: f64 = (0..relevant.len().min(10))
            .map(|i| 1.0 / ((i + 2) as f64).log2())
            .sum();
        if ideal > 0.0 {
            self.ndcg10 += dcg / ideal;
        }
        if let Some(rank) = ranked.iter().position(is_rel) {
            self.mrr += 1.0 / (rank + 1) as f64;
        }
    }

    fn line(&self, ranker: &str) -> String {
        let n = self.queries.max(1) as f64;
        format!(
            "ranker={ranker} queries={} R@1={:.3} R@5={:.3} NDCG@10={:.3} MRR={:.3}",
            self.queries,
            self.r1 / n,
            self.r5 / n,
            self.ndcg10 / n,
            self.mrr / n
        )
    }
}

fn read_lines(path: &Path) -> Result<Vec<String>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_string)
        .collect())
}

fn run(folder: &Path) -> Result<(), String> {
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
    let config = Config::default();
    let index = CatalogIndex::build("eval", Catalog::from_tools(tools), &config);
    let all = index.catalog.len();
    let mut bm25 = Metrics::default();
    for q in &queries {
        let query = Query {
            text: q.query.clone(),
            limit: all,
            offset: 0,
            group: None,
        };
        let off = Fallback::new(FallbackKind::Unavailable, "lexical only");
        let result = search::search(&index, &config, &query, &|_| true, Err(off));
        let ranked: Vec<&str> = result.found.iter().map(|f| f.tool.name.as_str()).collect();
        bm25.add(&ranked, &q.relevant);
    }
    println!("{}", bm25.line("bm25"));
    Ok(())
}

fn main() -> ExitCode {
    let Some(folder) = std::env::args().nth(1) else {
        eprintln!("usage: eval <folder with tools.jsonl and queries.jsonl>");
        return ExitCode::from(2);
    };
    match run(Path::new(&folder)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("eval: {e}");
            ExitCode::FAILURE
        }
    }
}
