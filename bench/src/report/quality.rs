//! Section 4 of the report: retrieval quality, read from `make eval` output beside the
//! reference rows of `testdata/metatool/README.md`.

use crate::args::Args;
use std::fmt::Write as _;

fn eval_rows(files: &[std::path::PathBuf]) -> Vec<(String, String)> {
    let mut rows = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(f).unwrap_or_default();
        for line in text.lines().filter(|l| l.starts_with("ranker=")) {
            let field = |k: &str| {
                line.split_whitespace()
                    .find_map(|w| w.strip_prefix(k))
                    .unwrap_or("")
                    .to_owned()
            };
            let ranker = field("ranker=");
            if rows.iter().any(|(r, _): &(String, String)| *r == ranker) {
                continue;
            }
            let how = match ranker.as_str() {
                "vector" | "hybrid" => "`make eval EMBEDDINGS=1`, all-MiniLM-L6-v2 sidecar",
                "reference-bm25" => {
                    "`make eval`: a textbook BM25 beside ours, `filter/core/examples/eval/reference.rs`"
                }
                _ => "`make eval`",
            };
            rows.push((
                ranker.clone(),
                format!(
                    "| **{ranker}** ({how}) | {} | {} | {} | {} |",
                    field("R@1="),
                    field("R@5="),
                    field("NDCG@10="),
                    field("MRR=")
                ),
            ));
        }
    }
    rows
}

/// Section 4.
pub fn write(o: &mut String, a: &Args) {
    let _ = writeln!(o, "## 4. Retrieval quality\n");
    let rows = eval_rows(&a.eval);
    if rows.is_empty() {
        let _ = writeln!(o, "Not run (pass `--eval FILE` with `make eval` output).\n");
    } else {
        let _ = writeln!(
            o,
            "`make eval` on `testdata/metatool` (199 tools, 21,041 queries), every ranker of the filter, beside the reference \
             rows of `testdata/metatool/README.md`:\n"
        );
        let _ = writeln!(
            o,
            "| method | R@1 | R@5 | NDCG@10 | MRR |\n|---|---|---|---|---|"
        );
        for (_, row) in &rows {
            let _ = writeln!(o, "{row}");
        }
        let reference = std::fs::read_to_string("testdata/metatool/README.md").unwrap_or_default();
        for line in reference
            .lines()
            .filter(|l| l.starts_with("| ") && !l.starts_with("| method"))
        {
            let mut cells: Vec<&str> = line.split('|').collect();
            if let Some(c) = cells.get_mut(1) {
                let label = format!(" reference: {}", c.trim());
                let _ = writeln!(
                    o,
                    "|{label}|{}",
                    cells.get(2..).map(|r| r.join("|")).unwrap_or_default()
                );
            }
        }
        if !rows.iter().any(|(r, _)| r == "vector") {
            let _ = writeln!(
                o,
                "\n`vector` and `hybrid` need the embedder sidecar: `make bench EMBEDDINGS=1` adds them (builds the sidecar and fetches the model)."
            );
        }
        let _ = writeln!(o);
    }
}
