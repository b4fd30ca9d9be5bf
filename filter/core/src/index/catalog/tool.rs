//! One tool (or prompt, resource, template) as the catalog keeps it: the fields search reads,
//! and its definition exactly as the upstream declared it.

use super::{Catalog, CatalogError};
use crate::config::entries::Entry;
use crate::index::bm25::Fields;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;
use std::borrow::Cow;
use std::rc::Rc;

/// One tool: the fields search needs, and its definition exactly as the upstream declared it.
#[derive(Debug, Clone)]
pub struct Tool {
    /// Shared, not copied, by the catalog versions that hold the tool (a list after a change
    /// takes every unchanged tool from the last version).
    pub name: Rc<str>,
    pub title: Rc<str>,
    pub description: Rc<str>,
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

impl Tool {
    /// `from_raw`, sharing what an identical tool of `known` holds: a list mostly repeats the
    /// catalog, and a second copy of every definition was a VM's largest allocation. `print`
    /// is the definition's `fnv::fingerprint`.
    pub fn from_raw_known(
        raw: &RawValue,
        print: u64,
        known: &Catalog,
    ) -> Result<Tool, CatalogError> {
        // A known definition is taken whole when its bytes are the same: reading the fields
        // again would give what they gave then, and reading each definition (its schema
        // skipped, still scanned) was most of the first list after a change. Found by the
        // definition's bytes, not by where its name is: a gateway writes members in its order.
        if let Some(same) = known.with_definition(raw.get().as_bytes(), print) {
            return Ok(same.clone());
        }
        Tool::from_raw(raw)
    }

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
        Ok(Tool {
            name: view.name.into(),
            title: view.title.map_or_else(Rc::default, |t| t.into()),
            description: view.description.map_or_else(Rc::default, |d| d.into()),
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
            name: key.into(),
            title: view.title.or(label).map_or_else(Rc::default, |t| t.into()),
            description: view.description.map_or_else(Rc::default, |d| d.into()),
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

    /// Whether two tools have the same definition: one shared text is, without reading it (a
    /// list of an unchanged catalog shares every known definition, megabytes at 10,000 tools).
    pub fn same_definition(&self, other: &Tool) -> bool {
        let shared = match (&self.definition, &other.definition) {
            (Definition::Own(a), Definition::Own(b)) => Rc::ptr_eq(a, b),
            (
                Definition::Shared { bytes, start, end },
                Definition::Shared {
                    bytes: other_bytes,
                    start: other_start,
                    end: other_end,
                },
            ) => Rc::ptr_eq(bytes, other_bytes) && (start, end) == (other_start, other_end),
            _ => false,
        };
        shared || self.definition_bytes() == other.definition_bytes()
    }

    /// A tool whose definition is `bytes[start..end]` (`index::snapshot`); `None` if that is
    /// not a range of `bytes`.
    pub(crate) fn with_shared_definition(
        name: Rc<str>,
        title: Rc<str>,
        description: Rc<str>,
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
            self.description.to_string()
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
        truncate(&mut out, MAX_SCHEMA_TEXT_BYTES);
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

/// Cuts `text` to at most `max` bytes, at a character boundary.
pub(crate) fn truncate(text: &mut String, max: usize) {
    if text.len() > max {
        let cut = (0..=max)
            .rev()
            .find(|&i| text.is_char_boundary(i))
            .unwrap_or(0);
        text.truncate(cut);
    }
}
