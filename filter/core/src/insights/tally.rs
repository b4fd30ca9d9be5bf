//! What one namespace's searches and calls came to, for the insights endpoint: counts and
//! bounded top-N tables, never a log. Each worker adds to its own tally and folds it into the
//! shared one on its tick (`merge`, under compare-and-swap); the endpoint reads the shared one.
//! Every table is trimmed to its size by count (ties by name): the counts of the namespace are
//! exact, a table's head (the tools called most, the queries that fail most) is kept whatever
//! the order in which workers merge, and its tail, near the cut, is approximate.
//!
//! Kept as lines of text rather than JSON: the `.wasm` has a size budget, and a derived
//! deserializer for these tables cost more of it than this whole module.

use super::RankBucket;

/// Query groups that found nothing, kept by count.
pub const ZERO_QUERIES_KEPT: usize = 64;
/// Tools kept by calls.
pub const TOOLS_KEPT: usize = 256;
/// A query kept as text (`search.insights.record_queries`) is cut to this many characters.
pub const QUERY_TEXT_CHARS: usize = 120;
/// What the first line of a tally starts with (its layout's version).
const HEADER: &str = "tally1";

/// The counts of one namespace.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tally {
    /// When the first of these was counted (ms since the epoch; 0: nothing yet).
    pub since_ms: u64,
    pub searches: u64,
    pub zero_results: u64,
    pub calls: u64,
    pub calls_after_search: u64,
    pub calls_without_search: u64,
    pub calls_after_describe: u64,
    /// Calls after a search, by the rank at which it returned the tool.
    pub rank_1: u64,
    pub rank_2_5: u64,
    pub rank_over_5: u64,
    /// Searches that matched nothing, by query group (a hash of the query's terms), sorted by
    /// group.
    pub zero_queries: Vec<(String, QueryGroup)>,
    /// Calls by tool, sorted by name.
    pub tools: Vec<(String, ToolCalls)>,
}

/// Searches of one query group that matched nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QueryGroup {
    pub count: u64,
    /// The latest query of the group as the agent wrote it, cut to [`QUERY_TEXT_CHARS`]; only
    /// with `search.insights.record_queries`.
    pub text: Option<String>,
}

/// The calls of one tool.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolCalls {
    pub after_search: u64,
    pub without_search: u64,
    pub after_describe: u64,
    /// Calls after a search by the rank at which it returned the tool, sorted by rank.
    pub ranks: Vec<(usize, u64)>,
}

/// Changes the entry of `key` in a table sorted by key (made when missing).
fn update<K: Ord + Clone, V: Default>(table: &mut Vec<(K, V)>, key: &K, f: impl FnOnce(&mut V)) {
    let i = match table.binary_search_by(|(k, _)| k.cmp(key)) {
        Ok(i) => i,
        Err(i) => {
            table.insert(i, (key.clone(), V::default()));
            i
        }
    };
    if let Some((_, v)) = table.get_mut(i) {
        f(v);
    }
}

impl ToolCalls {
    pub fn total(&self) -> u64 {
        self.after_search + self.without_search
    }

    /// The median rank of the calls after a search (the lower middle of an even count).
    pub fn median_rank(&self) -> Option<usize> {
        let middle = self.after_search.div_ceil(2).max(1);
        let mut seen = 0;
        for (rank, n) in &self.ranks {
            seen += n;
            if seen >= middle {
                return Some(*rank);
            }
        }
        None
    }

    fn add(&mut self, other: &ToolCalls) {
        self.after_search += other.after_search;
        self.without_search += other.without_search;
        self.after_describe += other.after_describe;
        for (rank, n) in &other.ranks {
            update(&mut self.ranks, rank, |r| *r += n);
        }
    }
}

/// The query group of a query's terms: their set, whatever the order or repetition.
pub fn query_group(terms: &[String]) -> String {
    let mut terms: Vec<&str> = terms.iter().map(String::as_str).collect();
    terms.sort_unstable();
    terms.dedup();
    format!(
        "{:016x}",
        crate::index::fnv::hash(terms.join(" ").as_bytes())
    )
}

/// Keeps the `keep` entries of `table` with the highest `count` (ties: the first names).
fn trim<V>(table: &mut Vec<(String, V)>, keep: usize, count: impl Fn(&V) -> u64) {
    if table.len() <= keep {
        return;
    }
    let mut order: Vec<(u64, usize)> = table.iter().map(|(_, v)| count(v)).zip(0..).collect();
    // By count descending, then by position (the table is sorted by name).
    order.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let mut kept = vec![false; table.len()];
    for (_, i) in order.into_iter().take(keep) {
        if let Some(k) = kept.get_mut(i) {
            *k = true;
        }
    }
    let mut flags = kept.into_iter();
    table.retain(|_| flags.next().unwrap_or(false));
}

/// A name or query as one field of a line: no tab, no line break.
fn field(text: &str) -> String {
    text.replace(['\t', '\n', '\r'], " ")
}

impl Tally {
    pub fn is_empty(&self) -> bool {
        *self == Tally::default()
    }

    /// Dates the tally, unless it is dated (the clock is read only then).
    pub fn started(&mut self, now_ms: impl FnOnce() -> u64) {
        if self.since_ms == 0 {
            self.since_ms = now_ms();
        }
    }

    /// A search answered; `zero` holds its query group (and text) when it matched nothing.
    pub fn searched(&mut self, zero: Option<(String, Option<String>)>) {
        self.searches += 1;
        if let Some((group, text)) = zero {
            self.zero_results += 1;
            update(&mut self.zero_queries, &group, |g| {
                g.count += 1;
                if let Some(text) = text {
                    g.text = Some(field(&text).chars().take(QUERY_TEXT_CHARS).collect());
                }
            });
            trim(&mut self.zero_queries, ZERO_QUERIES_KEPT, |g| g.count);
        }
    }

    /// A call of `name` went upstream: after a search that returned it at `rank`, or not, and
    /// after `describe_tool` gave its definition, or not.
    pub fn called(&mut self, name: &str, rank: Option<usize>, described: bool) {
        self.calls += 1;
        match rank.map(RankBucket::of) {
            Some(RankBucket::First) => self.rank_1 += 1,
            Some(RankBucket::SecondToFifth) => self.rank_2_5 += 1,
            Some(RankBucket::BelowFifth) => self.rank_over_5 += 1,
            None => self.calls_without_search += 1,
        }
        if rank.is_some() {
            self.calls_after_search += 1;
        }
        if described {
            self.calls_after_describe += 1;
        }
        update(&mut self.tools, &field(name), |tool| {
            match rank {
                Some(rank) => {
                    tool.after_search += 1;
                    update(&mut tool.ranks, &rank, |n| *n += 1);
                }
                None => tool.without_search += 1,
            }
            if described {
                tool.after_describe += 1;
            }
        });
        trim(&mut self.tools, TOOLS_KEPT, ToolCalls::total);
    }

    /// Adds `other` (another worker's counts) to these.
    pub fn merge(&mut self, other: &Tally) {
        self.since_ms = match (self.since_ms, other.since_ms) {
            (0, t) | (t, 0) => t,
            (a, b) => a.min(b),
        };
        for (mine, theirs) in self.counts_mut().into_iter().zip(other.counts()) {
            *mine += theirs;
        }
        for (group, g) in &other.zero_queries {
            update(&mut self.zero_queries, group, |mine| {
                mine.count += g.count;
                if g.text.is_some() {
                    mine.text.clone_from(&g.text);
                }
            });
        }
        trim(&mut self.zero_queries, ZERO_QUERIES_KEPT, |g| g.count);
        for (name, calls) in &other.tools {
            update(&mut self.tools, name, |mine| mine.add(calls));
        }
        trim(&mut self.tools, TOOLS_KEPT, ToolCalls::total);
    }

    fn counts(&self) -> [u64; 9] {
        [
            self.searches,
            self.zero_results,
            self.calls,
            self.calls_after_search,
            self.calls_without_search,
            self.calls_after_describe,
            self.rank_1,
            self.rank_2_5,
            self.rank_over_5,
        ]
    }

    fn counts_mut(&mut self) -> [&mut u64; 9] {
        [
            &mut self.searches,
            &mut self.zero_results,
            &mut self.calls,
            &mut self.calls_after_search,
            &mut self.calls_without_search,
            &mut self.calls_after_describe,
            &mut self.rank_1,
            &mut self.rank_2_5,
            &mut self.rank_over_5,
        ]
    }

    /// The tally as shared data holds it: a header line of counts, then `q` lines (query
    /// groups) and `t` lines (tools), fields separated by tabs.
    pub fn write(&self) -> Vec<u8> {
        let mut out = format!("{HEADER}\t{}", self.since_ms);
        for n in self.counts() {
            out.push_str(&format!("\t{n}"));
        }
        for (group, g) in &self.zero_queries {
            out.push_str(&format!("\nq\t{group}\t{}", g.count));
            if let Some(text) = &g.text {
                out.push('\t');
                out.push_str(text);
            }
        }
        for (name, t) in &self.tools {
            out.push_str(&format!(
                "\nt\t{name}\t{}\t{}\t{}\t",
                t.after_search, t.without_search, t.after_describe
            ));
            let ranks: Vec<String> = t.ranks.iter().map(|(r, n)| format!("{r}:{n}")).collect();
            out.push_str(&ranks.join(","));
        }
        out.into_bytes()
    }

    /// A tally as [`Tally::write`] wrote it; `None` when it is not one (then it starts again).
    pub fn read(bytes: &[u8]) -> Option<Tally> {
        let text = std::str::from_utf8(bytes).ok()?;
        let mut lines = text.split('\n');
        let mut head = lines.next()?.split('\t');
        if head.next()? != HEADER {
            return None;
        }
        let number = |s: Option<&str>| s.and_then(|s| s.parse::<u64>().ok());
        let mut tally = Tally {
            since_ms: number(head.next())?,
            ..Tally::default()
        };
        for slot in tally.counts_mut() {
            *slot = number(head.next())?;
        }
        for line in lines {
            let mut f = line.split('\t');
            match f.next()? {
                "q" => {
                    let group = f.next()?.to_string();
                    let count = number(f.next())?;
                    let text = f.next().map(str::to_string);
                    tally.zero_queries.push((group, QueryGroup { count, text }));
                }
                "t" => {
                    let name = f.next()?.to_string();
                    let mut calls = ToolCalls {
                        after_search: number(f.next())?,
                        without_search: number(f.next())?,
                        after_describe: number(f.next())?,
                        ranks: Vec::new(),
                    };
                    for pair in f.next()?.split(',').filter(|p| !p.is_empty()) {
                        let (rank, n) = pair.split_once(':')?;
                        calls.ranks.push((rank.parse().ok()?, n.parse().ok()?));
                    }
                    tally.tools.push((name, calls));
                }
                _ => return None,
            }
        }
        // Written sorted; read back sorted whatever wrote it.
        crate::sort::sort_by(&mut tally.zero_queries, |a, b| a.0.cmp(&b.0));
        crate::sort::sort_by(&mut tally.tools, |a, b| a.0.cmp(&b.0));
        Some(tally)
    }
}
