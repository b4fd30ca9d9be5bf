//! The tools of one upstream (a namespace), as learned from its `tools/list` pages, and the
//! search index built over them once per catalog version.

use crate::config::{Config, FieldWeights, Tuning};
use crate::index::bm25::Bm25Index;
use crate::index::fnv;
use serde::Deserialize;
use serde_json::value::RawValue;
use std::borrow::Borrow;
use std::cell::{OnceCell, RefCell};
use std::fmt;

pub mod groups;
mod tool;

pub(crate) use tool::truncate;
pub use tool::Tool;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CatalogError {
    /// A tool definition without a string `name` (MCP requires one: spec 2025-11-25, Tool).
    BadTool {
        reason: String,
    },
    BadCatalog {
        reason: String,
    },
}

impl fmt::Display for CatalogError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CatalogError::BadTool { reason } => write!(f, "tool definition rejected: {reason}"),
            CatalogError::BadCatalog { reason } => write!(f, "stored catalog unreadable: {reason}"),
        }
    }
}

impl std::error::Error for CatalogError {}

/// The tools of one namespace, sorted by name, names unique.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    tools: Vec<Tool>,
    /// A last page (no `nextCursor`) has been learned: the catalog holds the whole list.
    complete: bool,
    /// Each definition's `fnv::fingerprint` with its position, in fingerprint order: built
    /// when a list is first read against this catalog (`with_definition`).
    by_definition: OnceCell<Vec<(u64, u32)>>,
}

/// Where a learned `tools/list` page stands in its listing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Page {
    /// No cursor in the request.
    pub first: bool,
    /// No `nextCursor` in the response.
    pub last: bool,
}

#[derive(Deserialize)]
struct StoredCatalog<'a> {
    #[serde(borrow)]
    tools: Vec<&'a RawValue>,
    #[serde(default)]
    complete: bool,
}

impl Catalog {
    pub fn from_tools(tools: Vec<Tool>) -> Catalog {
        Catalog {
            tools: latest_per_name(tools),
            ..Catalog::default()
        }
    }

    /// `tools` as they come, if they are already in name order with names unique (what a
    /// catalog holds); `None` otherwise.
    pub(crate) fn from_sorted(tools: Vec<Tool>, complete: bool) -> Option<Catalog> {
        tools
            .windows(2)
            .all(|pair| matches!(pair, [a, b] if a.name < b.name))
            .then(|| Catalog {
                tools,
                complete,
                ..Catalog::default()
            })
    }

    /// Whether the whole list has been seen (a last page learned).
    pub fn is_complete(&self) -> bool {
        self.complete
    }

    pub fn tools(&self) -> &[Tool] {
        &self.tools
    }

    pub fn len(&self) -> usize {
        self.tools.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    pub fn get(&self, name: &str) -> Option<&Tool> {
        self.tools
            .binary_search_by(|t| t.name.as_ref().cmp(name))
            .ok()
            .and_then(|i| self.tools.get(i))
    }

    /// The tool whose definition is `bytes`, found by its fingerprint (`print`, its
    /// `fnv::fingerprint`), then compared.
    pub fn with_definition(&self, bytes: &[u8], print: u64) -> Option<&Tool> {
        if self.tools.is_empty() {
            return None;
        }
        let by_definition = self.by_definition.get_or_init(|| {
            let mut all: Vec<(u64, u32)> = self
                .tools
                .iter()
                .zip(0u32..)
                .map(|(t, at)| (fnv::fingerprint(t.definition_bytes()), at))
                .collect();
            crate::sort::sort(&mut all);
            all
        });
        let first = by_definition.partition_point(|&(p, _)| p < print);
        by_definition
            .get(first..)?
            .iter()
            .take_while(|&&(p, _)| p == print)
            .filter_map(|&(_, at)| self.tools.get(at as usize))
            .find(|t| t.definition_bytes() == bytes)
    }

    /// The catalog after learning `page`: a first page that is also the last is the whole
    /// list and replaces the catalog; other pages add or update tools. `None` when nothing
    /// changes (no write needed).
    pub fn merged(&self, page: &[Tool], at: Page) -> Option<Catalog> {
        if self.unchanged_by(page, at) {
            return None;
        }
        let next = self.merge(page.to_vec(), at);
        (!next.same_as(self)).then_some(next)
    }

    /// Whether learning `page` would leave the catalog as it is, found without copying: every
    /// list of an unchanged catalog asks this.
    pub fn unchanged_by(&self, page: &[Tool], at: Page) -> bool {
        let complete = self.complete || at.last;
        if complete != self.complete {
            return false;
        }
        if at.first && at.last {
            same_definitions(&latest_per_name(page.iter().collect()), &self.tools)
        } else {
            page.iter().all(|t| {
                self.get(&t.name)
                    .is_some_and(|known| known.same_definition(t))
            })
        }
    }

    /// The catalog after learning `page`, which it takes rather than copies.
    pub fn merge(&self, page: Vec<Tool>, at: Page) -> Catalog {
        let mut next = if at.first && at.last {
            Catalog::from_tools(page)
        } else {
            let mut all = self.tools.clone();
            all.extend(page);
            Catalog::from_tools(all)
        };
        next.complete = self.complete || at.last;
        next
    }

    /// The same tools with the same definitions, equally complete.
    pub fn same_as(&self, other: &Catalog) -> bool {
        self.complete == other.complete && same_definitions(&self.tools, &other.tools)
    }

    /// The stored form: `{"complete":bool,"tools":[...]}` with each definition's original bytes.
    pub fn to_json(&self) -> String {
        let mut out = String::new();
        self.write_json(&mut out);
        out
    }

    /// `to_json` into `out` (cleared first), which keeps its allocation if large enough.
    pub fn write_json(&self, out: &mut String) {
        let size: usize = self
            .tools
            .iter()
            .map(|t| t.definition_bytes().len() + 1)
            .sum();
        out.clear();
        out.reserve(size + 28);
        out.push_str(if self.complete {
            "{\"complete\":true,\"tools\":["
        } else {
            "{\"complete\":false,\"tools\":["
        });
        for (i, tool) in self.tools.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(tool.definition());
        }
        out.push_str("]}");
    }

    pub fn from_json(text: &str) -> Result<Catalog, CatalogError> {
        let stored: StoredCatalog =
            serde_json::from_str(text).map_err(|e| CatalogError::BadCatalog {
                reason: e.to_string(),
            })?;
        let tools = stored
            .tools
            .into_iter()
            .map(Tool::from_raw)
            .collect::<Result<Vec<_>, _>>()?;
        let mut catalog = Catalog::from_tools(tools);
        catalog.complete = stored.complete;
        Ok(catalog)
    }
}

/// One tool per name, in name order; a later definition of a name wins, as it would in a fresh
/// list. Over tools or references to them (comparing a page without copying it).
fn latest_per_name<T: Borrow<Tool>>(mut tools: Vec<T>) -> Vec<T> {
    fn name<T: Borrow<Tool>>(t: &T) -> &str {
        &t.borrow().name
    }
    tools.reverse();
    tools.sort_by(|a, b| name(a).cmp(name(b)));
    tools.dedup_by(|later, kept| name(later) == name(kept));
    tools
}

/// The same tools, position by position, with the same definitions.
fn same_definitions<T: Borrow<Tool>>(a: &[T], b: &[Tool]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(a, b)| a.borrow().same_definition(b))
}

/// The version of a catalog stored as `json` (`Catalog::to_json`): its `fnv::fingerprint`
/// (FNV-1a's byte a step cost the list that taught a 10,000-tool catalog 10 ms).
pub fn version_of(json: &str) -> u64 {
    fnv::fingerprint(json.as_bytes())
}

/// Marks the key of one credential's catalog in a namespace whose lists are private.
pub use crate::keys::{base_namespace, private_key};

/// A catalog with its BM25 index and each tool's disclosure mode, built once per version (the
/// BM25 part when a search first needs it, or loaded from another worker's snapshot).
#[derive(Debug)]
pub struct CatalogIndex {
    pub namespace: String,
    pub catalog: Catalog,
    /// Built on first use: a `tools/list` needs the catalog, not its index, and building the
    /// index of 10,000 tools in the list's response path was most of that list's added time.
    bm25: OnceCell<Bm25Index>,
    /// What the index is built with (the configuration's weights and tuning).
    pub(crate) weights: FieldWeights,
    pub(crate) tuning: Tuning,
    /// Catalog positions ordered by ASCII-lowercased name, then position: an exact-name query
    /// (any ASCII case) is a binary search, not a scan of every name.
    pub(crate) by_folded_name: Vec<u32>,
    /// The last `tools/list` rewrite against this version, to replay for the same result.
    pub list_memo: RefCell<Option<ListMemo>>,
    /// Hierarchical search's group indexes, by the set of tools they were built from.
    pub(crate) group_indexes: RefCell<groups::GroupIndexes>,
}

/// Names compared as `eq_ignore_ascii_case` sees them.
fn cmp_folded(a: &str, b: &str) -> std::cmp::Ordering {
    a.bytes()
        .map(|c| c.to_ascii_lowercase())
        .cmp(b.bytes().map(|c| c.to_ascii_lowercase()))
}

impl CatalogIndex {
    pub fn build(namespace: &str, catalog: Catalog, config: &Config) -> CatalogIndex {
        let index = CatalogIndex::lazy(namespace, catalog, config);
        index.bm25();
        index
    }

    /// The index of `catalog`, its BM25 part built when first searched.
    pub fn lazy(namespace: &str, catalog: Catalog, config: &Config) -> CatalogIndex {
        let name_of = |d: u32| {
            catalog
                .tools()
                .get(d as usize)
                .map_or("", |t| t.name.as_ref())
        };
        let mut by_folded_name: Vec<u32> = (0..catalog.len())
            .filter_map(|d| u32::try_from(d).ok())
            .collect();
        // The catalog is in name order: without ASCII capitals that is already folded order.
        if catalog
            .tools()
            .iter()
            .any(|t| t.name.bytes().any(|b| b.is_ascii_uppercase()))
        {
            by_folded_name.sort_by(|&a, &b| cmp_folded(name_of(a), name_of(b)).then(a.cmp(&b)));
        }
        CatalogIndex::from_parts(
            namespace,
            catalog,
            config.search.weights,
            config.search.tuning,
            by_folded_name,
            None,
        )
    }

    pub(crate) fn from_parts(
        namespace: &str,
        catalog: Catalog,
        weights: FieldWeights,
        tuning: Tuning,
        by_folded_name: Vec<u32>,
        bm25: Option<Bm25Index>,
    ) -> CatalogIndex {
        let cell = OnceCell::new();
        if let Some(bm25) = bm25 {
            let _ = cell.set(bm25);
        }
        CatalogIndex {
            namespace: namespace.to_string(),
            catalog,
            bm25: cell,
            weights,
            tuning,
            by_folded_name,
            list_memo: RefCell::new(None),
            group_indexes: RefCell::new(Vec::new()),
        }
    }

    /// The BM25 index of the catalog (built now if it was not yet).
    pub fn bm25(&self) -> &Bm25Index {
        self.bm25.get_or_init(|| self.build_bm25())
    }

    // One copy of the build, not one in every caller of `bm25`.
    #[inline(never)]
    fn build_bm25(&self) -> Bm25Index {
        let schemas: Vec<String> = if self.weights.input_schema > 0.0 {
            self.catalog.tools().iter().map(Tool::schema_text).collect()
        } else {
            Vec::new()
        };
        Bm25Index::build_tuned(
            self.catalog
                .tools()
                .iter()
                .enumerate()
                .map(|(i, t)| t.fields(schemas.get(i).map(String::as_str).unwrap_or(""))),
            self.weights,
            self.tuning,
        )
    }

    /// The BM25 index, if it has been built.
    pub fn built_bm25(&self) -> Option<&Bm25Index> {
        self.bm25.get()
    }

    /// The positions of the tools named `name` in any ASCII case, in catalog order.
    pub fn named_ignoring_case<'s>(&'s self, name: &'s str) -> impl Iterator<Item = u32> + 's {
        let tools = self.catalog.tools();
        let name_of = move |d: u32| tools.get(d as usize).map_or("", |t| t.name.as_ref());
        let start = self
            .by_folded_name
            .partition_point(|&d| cmp_folded(name_of(d), name).is_lt());
        self.by_folded_name
            .iter()
            .skip(start)
            .copied()
            .take_while(move |&d| name_of(d).eq_ignore_ascii_case(name))
    }
}

/// A rewritten `tools/list` result kept for the next identical one. Upstreams answer with the
/// same bytes list after list, and reading megabytes of definitions to reach the same answer
/// was most of a list's cost. It lives in one catalog version's `CatalogIndex` (a new version
/// starts empty) and is stored only once learning the page changed nothing, so replaying it
/// skips learning too.
#[derive(Debug, Clone)]
pub struct ListMemo {
    pub(crate) key: MemoKey,
    /// The result's print with its tools in any order (`mcp::list::unordered`), when the
    /// rewrite did not depend on their order: the same tools in another order replay it.
    pub(crate) unordered: Option<Unordered>,
    /// Whether the last list that replayed this came in another order: a gateway's lists do
    /// every time, so the next one is scanned for `unordered` before its bytes are
    /// fingerprinted whole (a pass over megabytes that could not match).
    pub(crate) reordered: std::cell::Cell<bool>,
    /// How many bytes of the message followed the result (where to look for it next time).
    pub(crate) tail: usize,
    /// The rewritten result; `None` when the message went on untouched.
    pub(crate) result: Option<String>,
    pub(crate) hidden: usize,
    pub(crate) page: Page,
}

/// A remembered list's print whatever its tools' order, and its tools by their first bytes, so
/// that a list in another order is read by stepping from tool to tool rather than through each
/// tool's JSON (`mcp::list::unordered`).
#[derive(Debug, Clone, Default)]
pub(crate) struct Unordered {
    pub(crate) print: u64,
    /// The fingerprint of each tool's first `unordered::HEAD` bytes, its length and its
    /// fingerprint, by the first.
    pub(crate) heads: Vec<(u64, usize, u64)>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MemoKey {
    pub(crate) len: usize,
    pub(crate) fingerprint: u64,
    pub(crate) first_page: bool,
    pub(crate) audience: Option<Vec<usize>>,
    /// Whether the search tool's definition carries its `outputSchema`.
    pub(crate) structured: bool,
}

#[cfg(test)]
pub(crate) mod tests;
