//! The tools of one upstream (a namespace), as learned from its `tools/list` pages, and the
//! search index built over them once per catalog version.

use crate::config::entries::Entry;
use crate::config::{Config, FieldWeights, Tuning};
use crate::index::bm25::{Bm25Index, Fields};
use crate::index::fnv;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;
use std::borrow::{Borrow, Cow};
use std::cell::{OnceCell, RefCell};
use std::fmt;
use std::rc::Rc;

pub mod groups;

/// One tool: the fields search needs, and its definition exactly as the upstream declared it.
#[derive(Debug, Clone)]
pub struct Tool {
    pub name: String,
    pub title: String,
    pub description: String,
    /// Valid JSON (it came from a `RawValue`). Shared, not copied, when a catalog is merged
    /// or rebuilt: at 10,000 tools the definitions are megabytes, and a copy of them per
    /// catalog version was a third of a VM's peak memory.
    definition: Definition,
}

/// A definition's text: its own allocation, or a range of a loaded index snapshot's
/// definitions, which a worker takes over whole from shared data rather than copying
/// 10,000 definitions out of it one by one.
#[derive(Debug, Clone)]
enum Definition {
    Own(Rc<str>),
    /// Checked to be UTF-8 when read, not when loaded: a search renders five definitions, and
    /// validating all of them (megabytes) was a fifth of a worker's load of the snapshot.
    Shared {
        bytes: Rc<Vec<u8>>,
        start: u32,
        end: u32,
    },
}

impl Definition {
    fn as_bytes(&self) -> &[u8] {
        match self {
            Definition::Own(text) => text.as_bytes(),
            Definition::Shared { bytes, start, end } => bytes
                .get(*start as usize..*end as usize)
                .unwrap_or_default(),
        }
    }

    fn as_str(&self) -> &str {
        match self {
            Definition::Own(text) => text,
            // The snapshot was written from strings: only a damaged one is not UTF-8, and a
            // damaged definition reads as JSON `null`, never as other bytes.
            Definition::Shared { .. } => std::str::from_utf8(self.as_bytes()).unwrap_or("null"),
        }
    }
}

/// What a list needs of a definition. The input schema is skipped, not parsed: every list
/// reads every definition, and building a `Value` of each schema was a quarter of a list's cost.
#[derive(Deserialize)]
struct ToolView<'a> {
    #[serde(borrow)]
    name: Cow<'a, str>,
    #[serde(default, borrow)]
    title: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    description: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct SchemaView {
    #[serde(default, rename = "inputSchema")]
    input_schema: Option<Value>,
    /// A prompt's arguments (spec 2025-11-25 "Prompts": `name`, `description`, `required`):
    /// what a prompt takes, as a tool's input schema says what it takes.
    #[serde(default)]
    arguments: Option<Value>,
}

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

impl Tool {
    pub fn from_raw(raw: &RawValue) -> Result<Tool, CatalogError> {
        Tool::from_raw_known(raw, &Catalog::default())
    }

    /// `from_raw`, sharing what an identical tool of `known` holds: a list mostly repeats the
    /// catalog, and a second copy of every definition was a VM's largest allocation.
    pub fn from_raw_known(raw: &RawValue, known: &Catalog) -> Result<Tool, CatalogError> {
        let view: ToolView =
            serde_json::from_str(raw.get()).map_err(|e| CatalogError::BadTool {
                reason: e.to_string(),
            })?;
        if view.name.is_empty() {
            return Err(CatalogError::BadTool {
                reason: "empty name".to_string(),
            });
        }
        if let Some(same) = known
            .get(&view.name)
            .filter(|k| k.definition_bytes() == raw.get().as_bytes())
        {
            return Ok(same.clone());
        }
        Ok(Tool {
            name: view.name.into_owned(),
            title: view.title.map(Cow::into_owned).unwrap_or_default(),
            description: view.description.map(Cow::into_owned).unwrap_or_default(),
            definition: Definition::Own(Rc::from(raw.get())),
        })
    }

    /// A prompt, resource or resource template as the catalog keeps it: named by its key
    /// (`Entry::key_field`: a resource by its URI), titled by its title or else its name.
    pub fn from_entry(entry: Entry, raw: &RawValue) -> Result<Tool, CatalogError> {
        if entry == Entry::Tool {
            return Tool::from_raw(raw);
        }
        #[derive(Deserialize)]
        struct EntryView<'a> {
            #[serde(default, borrow)]
            name: Option<Cow<'a, str>>,
            #[serde(default, borrow)]
            uri: Option<Cow<'a, str>>,
            #[serde(default, borrow, rename = "uriTemplate")]
            uri_template: Option<Cow<'a, str>>,
            #[serde(default, borrow)]
            title: Option<Cow<'a, str>>,
            #[serde(default, borrow)]
            description: Option<Cow<'a, str>>,
        }
        let view: EntryView =
            serde_json::from_str(raw.get()).map_err(|e| CatalogError::BadTool {
                reason: e.to_string(),
            })?;
        let (key, label) = match entry {
            Entry::Resource => (view.uri, view.name),
            Entry::ResourceTemplate => (view.uri_template, view.name),
            Entry::Tool | Entry::Prompt => (view.name, None),
        };
        let key = key
            .filter(|k| !k.is_empty())
            .ok_or_else(|| CatalogError::BadTool {
                reason: format!("no {} string", entry.key_field()),
            })?;
        Ok(Tool {
            name: key.into_owned(),
            title: view
                .title
                .or(label)
                .map(Cow::into_owned)
                .unwrap_or_default(),
            description: view.description.map(Cow::into_owned).unwrap_or_default(),
            definition: Definition::Own(Rc::from(raw.get())),
        })
    }

    /// The definition exactly as the upstream declared it.
    pub fn definition(&self) -> &str {
        self.definition.as_str()
    }

    /// The definition's bytes, for comparing definitions without reading them as text.
    pub fn definition_bytes(&self) -> &[u8] {
        self.definition.as_bytes()
    }

    /// A tool whose definition is `bytes[start..end]` (`index::snapshot`); `None` if that is
    /// not a range of `bytes`.
    pub(crate) fn with_shared_definition(
        name: String,
        title: String,
        description: String,
        bytes: &Rc<Vec<u8>>,
        start: u32,
        end: u32,
    ) -> Option<Tool> {
        (start <= end && end as usize <= bytes.len()).then(|| Tool {
            name,
            title,
            description,
            definition: Definition::Shared {
                bytes: Rc::clone(bytes),
                start,
                end,
            },
        })
    }

    /// Title and description: what the tool is for, in words.
    pub fn about(&self) -> String {
        if self.title.is_empty() {
            self.description.clone()
        } else {
            format!("{}. {}", self.title, self.description)
        }
    }

    /// The definition's input schema and a prompt's arguments.
    fn schema_view(&self) -> Option<SchemaView> {
        serde_json::from_str(self.definition()).ok()
    }

    /// What the entry takes, as words: a tool's input-schema property names (top level,
    /// sorted), or a prompt's arguments, each name with its description, in order; each name
    /// split into words, joined by ", ". A tool's argument descriptions are left out (alike across
    /// a catalog's tools, they drown a short description in a sentence vector); a prompt's are
    /// kept: its few arguments, what it asks the user for, are often its only account of what it
    /// does ("Choose a team member to lead the selected department").
    pub fn argument_text(&self) -> String {
        let mut out = String::new();
        let Some(view) = self.schema_view() else {
            return out;
        };
        // By name, whatever order a JSON map keeps: the text (and so the vector) of a tool is
        // the same in every build.
        let mut names: Vec<(&str, &str)> = Vec::new();
        if let Some(props) = view
            .input_schema
            .as_ref()
            .and_then(|s| s.get("properties"))
            .and_then(Value::as_object)
        {
            for (name, _) in props {
                names.push((name, ""));
            }
        }
        crate::sort::sort(&mut names);
        for argument in view.arguments.iter().filter_map(Value::as_array).flatten() {
            if let Some(name) = argument.get("name").and_then(Value::as_str) {
                let about = argument.get("description").and_then(Value::as_str);
                names.push((name, about.unwrap_or_default()));
            }
        }
        for (name, about) in names {
            for word in crate::index::tokenizer::words(name) {
                if !out.is_empty() && !out.ends_with(", ") {
                    out.push(' ');
                }
                out.push_str(&word);
            }
            if !about.trim().is_empty() {
                out.push_str(": ");
                out.push_str(about.trim());
            }
            if !out.is_empty() && !out.ends_with(", ") {
                out.push_str(", ");
            }
        }
        out.truncate(out.trim_end_matches(", ").len());
        out
    }

    /// Input-schema property names and descriptions, read from the definition when asked (the
    /// schema is indexed only when its weight is set, and embedded once per tool).
    pub fn schema_text(&self) -> String {
        let mut out = String::new();
        if let Some(view) = self.schema_view() {
            if let Some(schema) = &view.input_schema {
                collect_schema_text(schema, 0, &mut out);
            }
            for argument in view.arguments.iter().filter_map(Value::as_array).flatten() {
                for field in ["name", "description"] {
                    if let Some(text) = argument.get(field).and_then(Value::as_str) {
                        out.push_str(text);
                        out.push(' ');
                    }
                }
            }
        }
        if out.len() > MAX_SCHEMA_TEXT_BYTES {
            let cut = (0..=MAX_SCHEMA_TEXT_BYTES)
                .rev()
                .find(|&i| out.is_char_boundary(i))
                .unwrap_or(0);
            out.truncate(cut);
        }
        out
    }

    /// Its fields for the index; `schema` is its `schema_text()` when the schema is indexed.
    pub fn fields<'a>(&'a self, schema: &'a str) -> Fields<'a> {
        Fields {
            name: &self.name,
            title: &self.title,
            description: &self.description,
            input_schema: schema,
        }
    }
}

/// The most schema text read per tool: a few dozen arguments with their descriptions. Past it
/// an upstream's schema would cost index memory and build time without saying more about what
/// the tool is for.
pub const MAX_SCHEMA_TEXT_BYTES: usize = 4096;

/// Property names and descriptions, nested objects included, a few levels deep and at most
/// `MAX_SCHEMA_TEXT_BYTES`: enough to index "what can I pass" without walking pathological
/// schemas.
fn collect_schema_text(schema: &Value, depth: usize, out: &mut String) {
    if depth > 3 || out.len() >= MAX_SCHEMA_TEXT_BYTES {
        return;
    }
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return;
    };
    for (name, prop) in props {
        if out.len() >= MAX_SCHEMA_TEXT_BYTES {
            return;
        }
        out.push_str(name);
        out.push(' ');
        if let Some(d) = prop.get("description").and_then(Value::as_str) {
            out.push_str(d);
            out.push(' ');
        }
        collect_schema_text(prop, depth + 1, out);
        if let Some(items) = prop.get("items") {
            collect_schema_text(items, depth + 1, out);
        }
    }
}

/// The tools of one namespace, sorted by name, names unique.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    tools: Vec<Tool>,
    /// A last page (no `nextCursor`) has been learned: the catalog holds the whole list.
    complete: bool,
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
            complete: false,
        }
    }

    /// `tools` as they come, if they are already in name order with names unique (what a
    /// catalog holds); `None` otherwise.
    pub(crate) fn from_sorted(tools: Vec<Tool>, complete: bool) -> Option<Catalog> {
        tools
            .windows(2)
            .all(|pair| matches!(pair, [a, b] if a.name < b.name))
            .then_some(Catalog { tools, complete })
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
            .binary_search_by(|t| t.name.as_str().cmp(name))
            .ok()
            .and_then(|i| self.tools.get(i))
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
                    .is_some_and(|known| known.definition_bytes() == t.definition_bytes())
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
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(a, b)| a.borrow().definition_bytes() == b.definition_bytes())
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
                .map_or("", |t| t.name.as_str())
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
        let name_of = move |d: u32| tools.get(d as usize).map_or("", |t| t.name.as_str());
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
    /// How many bytes of the message followed the result (where to look for it next time).
    pub(crate) tail: usize,
    /// The rewritten result; `None` when the message went on untouched.
    pub(crate) result: Option<String>,
    pub(crate) hidden: usize,
    pub(crate) page: Page,
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
