//! What `eval` prints for a ranking: recall at 1 and 5, NDCG@10 and MRR, averaged over queries.

#[derive(Default)]
pub struct Metrics {
    pub queries: usize,
    r1: f64,
    r5: f64,
    pub ndcg10: f64,
    mrr: f64,
    /// The same over the queries with two or more relevant tools: tasks that need several
    /// tools (or one of several that serve the same step).
    multi: Option<Box<Metrics>>,
}

impl Metrics {
    pub fn add(&mut self, ranked: &[&str], relevant: &[String]) {
        if relevant.len() >= 2 {
            self.multi
                .get_or_insert_with(Default::default)
                .add_one(ranked, relevant);
        }
        self.add_one(ranked, relevant);
    }

    fn add_one(&mut self, ranked: &[&str], relevant: &[String]) {
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

    pub fn line(&self, ranker: &str) -> String {
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

    /// `line` over the queries with two or more relevant tools, if any.
    pub fn multi_line(&self, ranker: &str) -> Option<String> {
        self.multi
            .as_ref()
            .map(|m| format!("subset=multi {}", m.line(ranker)))
    }

    /// The lines of a ranker over the whole set (then its multi-tool subset) and each half.
    pub fn print(ranker: &str, whole: &Metrics, first: &Metrics, second: &Metrics) {
        println!("{}", whole.line(ranker));
        if let Some(line) = whole.multi_line(ranker) {
            println!("{line}");
        }
        println!("split=first {}", first.line(ranker));
        println!("split=second {}", second.line(ranker));
    }
}
