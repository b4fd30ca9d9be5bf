//! The insights endpoint's answer for one namespace: what its tally says, shaped for the
//! operator who decides the configuration (which tools to make eager, which searches fail), and
//! for the caller who asks: a caller the policy restricts sees only its own tools, and none of
//! the namespace's counts or queries.
//!
//! Written as JSON by hand, in a fixed field order: serde's derived serializers for these
//! shapes cost the `.wasm` several times more.

use super::tally::{Tally, ToolCalls};
use crate::mcp::json::{string, Object};

/// The most entries a table of the answer lists.
pub const LISTED: usize = 20;
/// The most never-returned tools named (all are counted).
pub const NEVER_RETURNED_NAMED: usize = 100;
/// The suggested eager set covers this share of the calls (per mille), with at most
/// [`EAGER_SUGGESTED`] tools.
pub const EAGER_SHARE_PERMILLE: u64 = 800;
pub const EAGER_SUGGESTED: usize = 10;

/// What the report needs besides the tally: the catalog's tool names, what the caller may see,
/// how each tool is disclosed, and `auto` mode's threshold.
pub struct Context<'a> {
    pub tools: Vec<&'a str>,
    pub allowed: &'a dyn Fn(&str) -> bool,
    /// The policy keeps some tool of the namespace from the caller.
    pub restricted: bool,
    pub eager: &'a dyn Fn(&str) -> bool,
    pub search_threshold: usize,
    pub mode: &'static str,
}

fn array(items: impl Iterator<Item = String>) -> String {
    let items: Vec<String> = items.collect();
    format!("[{}]", items.join(","))
}

/// `part` of `whole` per mille, as JSON (`0.667`).
fn share(part: u64, whole: u64) -> String {
    let permille = (part * 1000 + whole / 2).checked_div(whole).unwrap_or(0);
    permille_json(permille)
}

fn permille_json(permille: u64) -> String {
    let text = format!("{}.{:03}", permille / 1000, permille % 1000);
    let text = text.trim_end_matches('0').trim_end_matches('.');
    text.to_string()
}

/// The tools of `tally` the caller may see, by `key` descending (ties by name), the first `n`.
fn top<'t>(
    tally: &'t Tally,
    ctx: &Context<'_>,
    key: &dyn Fn(&ToolCalls) -> u64,
    n: usize,
) -> Vec<&'t (String, ToolCalls)> {
    let mut tools: Vec<&(String, ToolCalls)> = tally
        .tools
        .iter()
        .filter(|(name, calls)| key(calls) > 0 && (ctx.allowed)(name))
        .collect();
    crate::sort::sort_by(&mut tools, |a, b| {
        key(&b.1).cmp(&key(&a.1)).then_with(|| a.0.cmp(&b.0))
    });
    tools.truncate(n);
    tools
}

/// The report of `tally` as a JSON object; `returned` is the sorted names of every tool a
/// search returned.
pub fn report(tally: &Tally, returned: &[String], ctx: &Context<'_>) -> String {
    let mut out = Object::new();
    if tally.since_ms > 0 {
        out.number("since_ms", tally.since_ms);
    }
    if ctx.restricted {
        // The caller sees only the tools the policy gives it: no counts of the namespace, no
        // queries.
        out.raw("restricted", "true");
    } else {
        out.number("searches", tally.searches);
        out.number("zero_results", tally.zero_results);
        let mut calls = Object::new();
        calls.number("total", tally.calls);
        calls.number("after_search", tally.calls_after_search);
        calls.number("without_search", tally.calls_without_search);
        calls.number("after_describe", tally.calls_after_describe);
        calls.number("rank_1", tally.rank_1);
        calls.number("rank_2_5", tally.rank_2_5);
        calls.number("rank_over_5", tally.rank_over_5);
        out.raw("calls", &calls.end());
        let mut groups: Vec<_> = tally.zero_queries.iter().collect();
        crate::sort::sort_by(&mut groups, |a, b| {
            b.1.count.cmp(&a.1.count).then_with(|| a.0.cmp(&b.0))
        });
        let groups = groups.into_iter().take(LISTED).map(|(group, g)| {
            let mut o = Object::new();
            o.text("group", group);
            o.number("count", g.count);
            if let Some(text) = &g.text {
                o.text("query", text);
            }
            o.end()
        });
        out.raw("zero_result_queries", &array(groups));
    }
    let after = top(tally, ctx, &|c| c.after_search, LISTED)
        .into_iter()
        .map(|(name, c)| {
            let mut o = Object::new();
            o.text("name", name);
            o.number("calls", c.after_search);
            match c.median_rank() {
                Some(rank) => o.number("median_rank", rank as u64),
                None => o.raw("median_rank", "null"),
            }
            o.end()
        });
    out.raw("called_after_search", &array(after));
    let without = top(tally, ctx, &|c| c.without_search, LISTED)
        .into_iter()
        .map(|(name, c)| {
            let mut o = Object::new();
            o.text("name", name);
            o.number("calls", c.without_search);
            o.raw("eager", if (ctx.eager)(name) { "true" } else { "false" });
            o.end()
        });
    out.raw("called_without_search", &array(without));
    let visible: Vec<&str> = ctx
        .tools
        .iter()
        .copied()
        .filter(|t| (ctx.allowed)(t))
        .collect();
    let mut never: Vec<&str> = visible
        .iter()
        .copied()
        .filter(|t| returned.binary_search_by(|r| r.as_str().cmp(t)).is_err())
        .collect();
    never.sort_unstable();
    let mut never_returned = Object::new();
    never_returned.number("count", never.len() as u64);
    let named = never.iter().take(NEVER_RETURNED_NAMED).map(|t| string(t));
    never_returned.raw("tools", &array(named));
    out.raw("never_returned", &never_returned.end());
    out.raw("suggested_eager", &suggested_eager(tally, ctx));
    let mut auto = Object::new();
    auto.text("mode", ctx.mode);
    auto.number("search_threshold", ctx.search_threshold as u64);
    auto.number("tools", visible.len() as u64);
    let decides = if visible.len() > ctx.search_threshold {
        "search"
    } else {
        "list"
    };
    auto.text("decides", decides);
    out.raw("auto_mode", &auto.end());
    out.end()
}

/// The tools called most, until they take [`EAGER_SHARE_PERMILLE`] of the calls.
fn suggested_eager(tally: &Tally, ctx: &Context<'_>) -> String {
    let called = top(tally, ctx, &ToolCalls::total, usize::MAX);
    let total: u64 = called.iter().map(|(_, c)| c.total()).sum();
    let mut covered = 0;
    let mut tools = Vec::new();
    for (name, calls) in called {
        let enough = covered * 1000 >= EAGER_SHARE_PERMILLE * total;
        if tools.len() >= EAGER_SUGGESTED || enough {
            break;
        }
        covered += calls.total();
        let mut o = Object::new();
        o.text("name", name);
        o.number("calls", calls.total());
        o.raw("share", &share(calls.total(), total));
        o.raw("eager", if (ctx.eager)(name) { "true" } else { "false" });
        tools.push(o.end());
    }
    let mut out = Object::new();
    out.raw("share", &share(covered, total));
    out.raw("tools", &array(tools.into_iter()));
    out.end()
}
