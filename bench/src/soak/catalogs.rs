//! The catalogs the upstreams serve, version after version.

use crate::{Result, UPSTREAMS};
use serde_json::Value;

/// A stable core (always served, so calls to it never fail for a reason of the catalog) plus a
/// rotating window; every change swaps part of the window and rewrites a few core descriptions,
/// so that each change adds, removes and alters tools (and some must be embedded again) while
/// the catalog's size stays the same: memory has no reason to grow with the versions.
pub struct Catalogs {
    pool: Vec<Value>,
}

pub const CORE: usize = 100;
pub const ROTATING: usize = 20;
const POOL_PER_UPSTREAM: usize = 200;
/// Tools that enter (and leave) the rotating window at each change.
pub const ROTATE_STEP: usize = 7;
/// Core tools whose description changes at each change.
pub const REWORDED: usize = 3;

impl Catalogs {
    pub fn new() -> Result<Catalogs> {
        let pool: Vec<Value> =
            mcp_tool_search_wasm_tests::catalog::generate(POOL_PER_UPSTREAM * UPSTREAMS)
                .into_iter()
                .map(|t| serde_json::from_str(&t.json.to_json_string()))
                .collect::<std::result::Result<_, _>>()
                .map_err(|e| format!("generated catalog: {e}"))?;
        if pool.len() < POOL_PER_UPSTREAM * UPSTREAMS {
            return Err(format!("only {} generated tools", pool.len()));
        }
        Ok(Catalogs { pool })
    }

    fn tool(&self, upstream: usize, i: usize) -> Option<&Value> {
        self.pool.get(upstream * POOL_PER_UPSTREAM + i)
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
        let rotating = POOL_PER_UPSTREAM - CORE;
        let indices =
            (0..CORE).chain((0..ROTATING).map(|j| CORE + (version * ROTATE_STEP + j) % rotating));
        for i in indices {
            let Some(tool) = self.tool(upstream, i) else {
                continue;
            };
            let mut tool = tool.clone();
            let reworded = version > 0
                && i < CORE
                && (0..REWORDED).any(|k| (version * REWORDED + k) % CORE == i && i != 0);
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
        CORE + ROTATING + 1
    }
}
