//! The tools of one upstream (a namespace), as learned from its `tools/list` pages, and the
//! search index built over them once per catalog version.

use crate::bm25::{Bm25Index, Fields};
use crate::config::{Config, DisclosureMode};
use crate::fnv;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;
use std::fmt;

/// One tool: the fields search needs, and its definition exactly as the upstream declared it.
#[derive(Debug, Clone)]
pub struct Tool {
    pub name: String,
    pub title: String,
    pub description: String,
    /// Title and description, as indexed: what the tool is for, in words.
    pub about: String,
    /// Input-schema property names and descriptions, for when the schema is indexed.
    pub schema_text: String,
    pub definition: Box<RawValue>,
}

#[derive(Deserialize)]
struct ToolView {
    name: String,
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default, rename = "inputSchema")]
    input_schema: Option<Value>,
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
        let view: ToolView =
            serde_json::from_str(raw.get()).map_err(|e| CatalogError::BadTool {
                reason: e.to_string(),
            })?;
        if view.name.is_empty() {
            return Err(CatalogError::BadTool {
                reason: "empty name".to_string(),
            });
        }
        let mut schema_text = String::new();
        if let Some(schema) = &view.input_schema {
            collect_schema_text(schema, 0, &mut schema_text);
        }
        let title = view.title.unwrap_or_default();
        let description = view.description.unwrap_or_default();
        let about = if title.is_empty() {
            description.clone()
        } else {
            format!("{title}. {description}")
        };
        Ok(Tool {
            name: view.name,
            title,
            description,
            about,
            schema_text,
            definition: raw.to_owned(),
        })
    }

    pub fn fields(&self) -> Fields<'_> {
        Fields {
            name: &self.name,
            description: &self.about,
            input_schema: &self.schema_text,
        }
    }
}

/// Property names and descriptions, nested objects included, a few levels deep: enough to
/// index "what can I pass" without walking pathological schemas.
fn collect_schema_text(schema: &Value, depth: usize, out: &mut String) {
    if depth > 3 {
        return;
    }
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return;
    };
    for (name, prop) in props {
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
    pub fn from_tools(mut tools: Vec<Tool>) -> Catalog {
        // A later definition of the same name wins, as it would in a fresh list.
        tools.reverse();
        tools.sort_by(|a, b| a.name.cmp(&b.name));
        tools.dedup_by(|later, kept| later.name == kept.name);
        Catalog {
            tools,
            complete: false,
        }
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
        let complete = self.complete || at.last;
        let mut next = if at.first && at.last {
            Catalog::from_tools(page.to_vec())
        } else {
            let unchanged = page.iter().all(|t| {
                self.get(&t.name)
                    .is_some_and(|known| known.definition.get() == t.definition.get())
            });
            if unchanged && complete == self.complete {
                return None;
            }
            let mut all = self.tools.clone();
            all.extend(page.iter().cloned());
            Catalog::from_tools(all)
        };
        next.complete = complete;
        let same = next.complete == self.complete
            && next.tools.len() == self.tools.len()
            && next
                .tools
                .iter()
                .zip(&self.tools)
                .all(|(a, b)| a.definition.get() == b.definition.get());
        (!same).then_some(next)
    }

    /// The stored form: `{"complete":bool,"tools":[...]}` with each definition's original bytes.
    pub fn to_json(&self) -> String {
        let size: usize = self
            .tools
            .iter()
            .map(|t| t.definition.get().len() + 1)
            .sum();
        let mut out = String::with_capacity(size + 12);
        out.push_str(if self.complete {
            "{\"complete\":true,\"tools\":["
        } else {
            "{\"complete\":false,\"tools\":["
        });
        for (i, tool) in self.tools.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(tool.definition.get());
        }
        out.push_str("]}");
        out
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

    /// A version that changes whenever any definition changes.
    pub fn version(&self) -> u64 {
        fnv::hash(self.to_json().as_bytes())
    }
}

/// A catalog with its BM25 index and each tool's disclosure mode, built once per version.
#[derive(Debug)]
pub struct CatalogIndex {
    pub namespace: String,
    pub catalog: Catalog,
    pub modes: Vec<DisclosureMode>,
    pub bm25: Bm25Index,
}

/// A search result: the tool and its score under the ranking that ran.
#[derive(Debug, Clone, Copy)]
pub struct Found<'a> {
    pub tool: &'a Tool,
    pub score: f32,
}

impl CatalogIndex {
    pub fn build(namespace: &str, catalog: Catalog, config: &Config) -> CatalogIndex {
        let modes = catalog
            .tools()
            .iter()
            .map(|t| config.disclosure_mode(namespace, &t.name))
            .collect();
        let bm25 = Bm25Index::build(
            catalog.tools().iter().map(Tool::fields),
            config.search.weights,
        );
        CatalogIndex {
            namespace: namespace.to_string(),
            catalog,
            modes,
            bm25,
        }
    }

    pub fn mode(&self, doc: usize) -> DisclosureMode {
        self.modes
            .get(doc)
            .copied()
            .unwrap_or(DisclosureMode::Progressive)
    }

    /// Names of the progressive tools `allowed` admits, in name order.
    pub fn progressive_names(&self, allowed: impl Fn(&Tool) -> bool) -> Vec<&str> {
        self.catalog
            .tools()
            .iter()
            .enumerate()
            .filter(|(i, t)| self.mode(*i) == DisclosureMode::Progressive && allowed(t))
            .map(|(_, t)| t.name.as_str())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn tool(def: &str) -> Tool {
        let raw: Box<RawValue> = serde_json::from_str(def).unwrap();
        Tool::from_raw(&raw).unwrap()
    }

    fn sample() -> Catalog {
        Catalog::from_tools(vec![
            tool(
                r#"{"name":"stripe_refund_charge","description":"Refund a charge.","inputSchema":{"type":"object","properties":{"charge_id":{"type":"string","description":"The charge to refund"}}}}"#,
            ),
            tool(
                r#"{"name":"github_create_issue","description":"Open a new issue in a repository."}"#,
            ),
            tool(r#"{"name":"weather","description":"Forecast for a city.","title":"Weather"}"#),
        ])
    }

    #[test]
    fn tool_fields() {
        let t = tool(
            r#"{"name":"x","title":"T","description":"D","inputSchema":{"type":"object","properties":{"a":{"description":"first","type":"object","properties":{"b":{"description":"nested"}}}}}}"#,
        );
        assert_eq!(t.schema_text, "a first b nested ");
        assert_eq!(t.about, "T. D");
        assert!(Tool::from_raw(
            &serde_json::value::to_raw_value(&serde_json::json!({"description":"no name"}))
                .unwrap()
        )
        .is_err());
        assert!(Tool::from_raw(
            &serde_json::value::to_raw_value(&serde_json::json!({"name":""})).unwrap()
        )
        .is_err());
    }

    #[test]
    fn catalog_sorted_unique_and_round_trips() {
        let c = sample();
        let names: Vec<&str> = c.tools().iter().map(|t| t.name.as_str()).collect();
        assert_eq!(
            names,
            ["github_create_issue", "stripe_refund_charge", "weather"]
        );
        let mut complete = c
            .merged(
                &[],
                Page {
                    first: false,
                    last: true,
                },
            )
            .unwrap();
        assert!(complete.is_complete() && !c.is_complete());
        assert!(Catalog::from_json(&complete.to_json())
            .unwrap()
            .is_complete());
        complete = Catalog::from_json(&complete.to_json()).unwrap();
        assert!(complete
            .merged(
                &[],
                Page {
                    first: false,
                    last: true
                }
            )
            .is_none());
        let back = Catalog::from_json(&c.to_json()).unwrap();
        assert_eq!(back.to_json(), c.to_json());
        assert_eq!(back.version(), c.version());
        assert!(Catalog::from_json("{\"tools\":5}").is_err());
    }

    #[test]
    fn merge_upserts_or_replaces() {
        let c = sample();
        assert!(c
            .merged(
                &[tool(
                    r#"{"name":"weather","description":"Forecast for a city.","title":"Weather"}"#
                )],
                Page {
                    first: false,
                    last: false
                }
            )
            .is_none());
        let updated = c
            .merged(
                &[tool(r#"{"name":"weather","description":"New."}"#)],
                Page {
                    first: false,
                    last: false,
                },
            )
            .unwrap();
        assert_eq!(updated.len(), 3);
        assert_eq!(updated.get("weather").unwrap().description, "New.");
        assert_ne!(updated.version(), c.version());
        let replaced = c
            .merged(
                &[tool(r#"{"name":"only"}"#)],
                Page {
                    first: true,
                    last: true,
                },
            )
            .unwrap();
        assert_eq!(replaced.len(), 1);
        let dup = Catalog::from_tools(vec![
            tool(r#"{"name":"a","description":"1"}"#),
            tool(r#"{"name":"a","description":"2"}"#),
        ]);
        assert_eq!(dup.len(), 1);
        assert_eq!(dup.get("a").unwrap().description, "2");
    }

    #[test]
    fn progressive_names_follow_the_config() {
        let config = Config::parse(r#"{"eager_patterns":["weather"]}"#).unwrap();
        let index = CatalogIndex::build("ns", sample(), &config);
        assert_eq!(
            index.progressive_names(|_| true),
            ["github_create_issue", "stripe_refund_charge"]
        );
        assert_eq!(
            index.progressive_names(|t| t.name != "github_create_issue"),
            ["stripe_refund_charge"]
        );
    }
}
