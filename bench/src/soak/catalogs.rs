//! The catalogs the upstreams serve, version after version.

use crate::{Result, UPSTREAMS};
use serde_json::Value;

/// A stable core (always served, so calls to it never fail for a reason of the catalog) plus a
/// rotating window; every change swaps part of the window and rewrites a few core descriptions,
/// so that each change adds, removes and alters tools (and some must be embedded again) while
/// the catalog's size stays the same: memory has no reason to grow with the versions. The size
/// (`--tools`) only moves the core: the window and what each change does stay the same, so
/// that a change is the same work for the sidecar at any size.
pub struct Catalogs {
    pool: Vec<Value>,
    /// Stable tools per catalog.
    core: usize,
}

/// Tools in each catalog by default (`--tools`), `slow_progress` aside.
pub const DEFAULT_TOOLS: usize = 120;
pub const ROTATING: usize = 20;
/// The tools the rotating window of each upstream moves through.
const ROTATION_POOL: usize = 100;
/// Tools that enter (and leave) the rotating window at each change.
pub const ROTATE_STEP: usize = 7;
/// Core tools whose description changes at each change.
pub const REWORDED: usize = 3;

impl Catalogs {
    /// Catalogs of `tools` tools each (`slow_progress` aside): `tools - ROTATING` stable ones
    /// and the rotating window.
    pub fn new(tools: usize) -> Result<Catalogs> {
        if tools <= ROTATING + REWORDED {
            return Err(format!(
                "--tools {tools}: a catalog needs more than {} tools ({ROTATING} rotate)",
                ROTATING + REWORDED
            ));
        }
        let core = tools - ROTATING;
        let per_upstream = core + ROTATION_POOL;
        let pool: Vec<Value> =
            mcp_tool_search_wasm_tests::catalog::generate(per_upstream * UPSTREAMS)
                .into_iter()
                .map(|t| serde_json::from_str(&t.json.to_json_string()))
                .collect::<std::result::Result<_, _>>()
                .map_err(|e| format!("generated catalog: {e}"))?;
        if pool.len() < per_upstream * UPSTREAMS {
            return Err(format!(
                "only {} generated tools, {} needed",
                pool.len(),
                per_upstream * UPSTREAMS
            ));
        }
        Ok(Catalogs { pool, core })
    }

    fn tool(&self, upstream: usize, i: usize) -> Option<&Value> {
        self.pool.get(upstream * (self.core + ROTATION_POOL) + i)
    }

    /// The name of the core tool every load connection calls.
    pub fn call_tool(&self, upstream: usize) -> String {
        self.tool(upstream, 0)
            .and_then(|t| t.get("name"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    }

    /// The JSONL `catalog-server` serves for `version` (0: the first).
    pub fn jsonl(&self, upstream: usize, version: usize) -> String {
        let mut out = String::new();
        let core = self.core;
        let indices = (0..core)
            .chain((0..ROTATING).map(|j| core + (version * ROTATE_STEP + j) % ROTATION_POOL));
        for i in indices {
            let Some(tool) = self.tool(upstream, i) else {
                continue;
            };
            let mut tool = tool.clone();
            let reworded = version > 0
                && i < core
                && (0..REWORDED).any(|k| (version * REWORDED + k) % core == i && i != 0);
            if reworded {
                if let Some(Value::String(d)) = tool.get_mut("description") {
                    d.push_str(&format!(" Revision {version} of this tool."));
                }
            }
            out.push_str(&tool.to_string());
            out.push('\n');
        }
        out
    }

    /// Tools served (with `catalog-server`'s built-in `slow_progress`).
    pub fn served(&self) -> usize {
        self.core + ROTATING + 1
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn names(jsonl: &str) -> Vec<String> {
        jsonl
            .lines()
            .map(|l| {
                let v: Value = serde_json::from_str(l).unwrap();
                v["name"].as_str().unwrap().to_owned()
            })
            .collect()
    }

    /// Every version has `tools` distinct tools, the two upstreams share none, and a change
    /// swaps ROTATE_STEP of them and rewords REWORDED, at the default size and at 10,000.
    #[test]
    fn catalogs_keep_their_size_and_change_the_same_way_at_any_size() {
        for tools in [DEFAULT_TOOLS, 10_000] {
            let c = Catalogs::new(tools).unwrap();
            assert_eq!(c.served(), tools + 1);
            let (a0, a1) = (c.jsonl(0, 0), c.jsonl(0, 1));
            let (n0, n1) = (names(&a0), names(&a1));
            assert_eq!(n0.len(), tools);
            assert_eq!(n0.iter().collect::<HashSet<_>>().len(), tools);
            let beta: HashSet<String> = names(&c.jsonl(1, 0)).into_iter().collect();
            assert!(n0.iter().all(|n| !beta.contains(n)), "{tools}");
            let new: Vec<&String> = n1.iter().filter(|n| !n0.contains(n)).collect();
            assert_eq!(new.len(), ROTATE_STEP, "{tools}");
            let reworded = a1.lines().filter(|l| l.contains("Revision 1 ")).count();
            assert_eq!(reworded, REWORDED, "{tools}");
            assert_eq!(c.call_tool(0), n0[0]);
        }
        assert!(Catalogs::new(ROTATING).is_err());
    }
}
