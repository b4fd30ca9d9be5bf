//! A deterministic generator of realistic MCP tool definitions (SaaS-style names and
//! descriptions), used by the `gen-catalog` binary, the e2e tests and the benchmarks.
//!
//! The order is stable and prefix-stable: the first N tools of `generate(M)` for M > N are
//! exactly `generate(N)`. Tools are taken round-robin across services (and within a service
//! round-robin across its objects), so any prefix covers many services. Past the base set
//! (415 tools from 44 services), workspace-qualified variants (`eu_github_get_issue`, ...) follow.
//! Randomness comes only from a fixed-seed SplitMix64 keyed by the tool name.
//!
//! What is combined (services, objects, actions, wording) lives in `data/catalog-services.json`,
//! the combining and the standard verbs' sentence templates here. Any edit to either changes the
//! output: regenerate `data/catalog-300.jsonl` (`gen-catalog --count 300`), which tests serve.

use std::collections::HashSet;
use std::fmt::Write as _;
use std::sync::OnceLock;

use serde::Deserialize;

/// One JSON value, objects keeping insertion order (the output is written in a fixed order).
#[derive(Debug, Clone, PartialEq)]
pub enum Json {
    Str(String),
    Bool(bool),
    Int(i64),
    Arr(Vec<Json>),
    Obj(Vec<(String, Json)>),
}

impl Json {
    fn write(&self, out: &mut String) {
        match self {
            Json::Str(s) => write_str(s, out),
            Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Json::Int(i) => {
                let _ = write!(out, "{i}");
            }
            Json::Arr(items) => {
                out.push('[');
                for (n, item) in items.iter().enumerate() {
                    if n > 0 {
                        out.push(',');
                    }
                    item.write(out);
                }
                out.push(']');
            }
            Json::Obj(members) => {
                out.push('{');
                for (n, (key, value)) in members.iter().enumerate() {
                    if n > 0 {
                        out.push(',');
                    }
                    write_str(key, out);
                    out.push(':');
                    value.write(out);
                }
                out.push('}');
            }
        }
    }

    /// Compact JSON text.
    pub fn to_json_string(&self) -> String {
        let mut out = String::new();
        self.write(&mut out);
        out
    }
}

fn write_str(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// SplitMix64: a tiny, well-known, fixed-seed PRNG (no OS randomness anywhere).
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// Seeded from a string (FNV-1a) mixed with a fixed project seed.
    pub fn from_key(key: &str) -> Self {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in key.bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        Self(h ^ 0x6d63_702d_746f_6f6c)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform-ish in `0..n` (n > 0; returns 0 for n == 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            return 0;
        }
        (self.next_u64() % n as u64) as usize
    }

    pub fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        let i = self.below(items.len());
        items.get(i).copied().unwrap_or("")
    }
}

// ---- the data -------------------------------------------------------------------------------

/// The services, their objects and verbs, and all wording except the standard verbs' templates.
/// Embedded so that the binaries need no file at run time.
const DATA: &str = include_str!("../data/catalog-services.json");

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Data {
    shared: Shared,
    /// Workspace qualifiers for the tools beyond the base set.
    qualifiers: Vec<Qualifier>,
    services: Vec<Svc>,
}

/// Properties the standard verbs add besides an object's own.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Shared {
    limit: Prop,
    cursor: Prop,
    /// Lets a list with little scope still take two properties.
    updated_since: Prop,
    query: Prop,
    /// For a get whose object has no scope.
    extra_fields: Prop,
    /// For a create with no scope and a single settable field.
    description: Prop,
    /// For a delete or an action that would otherwise take one property.
    confirm: Prop,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Qualifier {
    /// Name prefix (`eu` in `eu_github_get_issue`).
    prefix: String,
    /// For titles and descriptions ("EU").
    label: String,
}

/// One input property.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Prop {
    name: String,
    #[serde(rename = "type")]
    ty: String,
    required: bool,
    description: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Kind {
    Read,
    Write,
    Destructive,
}

/// A service-specific action, named `{service}_{name}`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Action {
    name: String,
    title: String,
    description: String,
    with_id: bool,
    kind: Kind,
    props: Vec<Prop>,
}

/// In the data, a standard verb is a string (`"get"`), an action `{"action": {...}}`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Verb {
    List,
    Get,
    Create,
    Update,
    Delete,
    Search,
    Action(Action),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Obj {
    /// snake_case singular, used in names (`issue`, `pull_request`).
    one: String,
    /// snake_case plural (`issues`).
    many: String,
    /// Where it lives, for descriptions (" in a repository"); may be empty.
    place: String,
    scope: Vec<Prop>,
    id: Prop,
    /// What a full record holds, for descriptions.
    fields: String,
    /// Fields settable on create/update (the first is required on create).
    set: Vec<Prop>,
    verbs: Vec<Verb>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Svc {
    key: String,
    name: String,
    objects: Vec<Obj>,
}

/// The parsed data, or why it did not parse (kept for the tests to show).
fn data() -> Result<&'static Data, &'static str> {
    static PARSED: OnceLock<Result<Data, String>> = OnceLock::new();
    PARSED
        .get_or_init(|| serde_json::from_str(DATA).map_err(|e| e.to_string()))
        .as_ref()
        .map_err(String::as_str)
}

// ---- generation ----------------------------------------------------------------------------

/// One generated tool, in output form.
#[derive(Debug, Clone)]
pub struct ToolDef {
    pub name: String,
    pub title: String,
    pub description: String,
    pub json: Json,
}

fn words(snake: &str) -> String {
    snake.replace('_', " ")
}

fn prop_json(p: &Prop) -> Json {
    let mut members = vec![("type".to_owned(), Json::Str(p.ty.clone()))];
    if p.ty == "array" {
        members.push((
            "items".to_owned(),
            Json::Obj(vec![("type".to_owned(), Json::Str("string".to_owned()))]),
        ));
    }
    members.push(("description".to_owned(), Json::Str(p.description.clone())));
    Json::Obj(members)
}

fn push_unique(props: &mut Vec<Prop>, p: &Prop) {
    if !props.iter().any(|q| q.name == p.name) {
        props.push(p.clone());
    }
}

struct Draft {
    suffix: String,
    title: String,
    description: String,
    props: Vec<Prop>,
    kind: Kind,
    idempotent: bool,
}

fn draft(shared: &Shared, svc: &Svc, obj: &Obj, verb: &Verb, rng: &mut SplitMix64) -> Draft {
    let many = words(&obj.many);
    let one = words(&obj.one);
    let name = &svc.name;
    let place = &obj.place;
    let mut props: Vec<Prop> = Vec::new();
    let (suffix, title, description, kind, idempotent) = match verb {
        Verb::List => {
            for p in &obj.scope {
                push_unique(&mut props, p);
            }
            if props.len() < 2 && rng.below(2) == 0 {
                push_unique(&mut props, &shared.updated_since);
            }
            push_unique(&mut props, &shared.limit);
            push_unique(&mut props, &shared.cursor);
            let desc = match rng.below(3) {
                0 => format!("List {many} in {name}{place}. Supports filtering and cursor-based pagination; returns a page of {many} with their IDs and key fields."),
                1 => format!("Return the {many}{place} from {name}, most recently updated first. Pass the cursor from a previous call to get the next page."),
                _ => format!("Page through {name} {many}{place}. Each entry includes the ID and a summary; use the matching get tool for full details."),
            };
            (
                format!("list_{}", obj.many),
                format!("List {name} {many}"),
                desc,
                Kind::Read,
                true,
            )
        }
        Verb::Get => {
            for p in &obj.scope {
                push_unique(&mut props, p);
            }
            push_unique(&mut props, &obj.id);
            if props.len() < 2 {
                push_unique(&mut props, &shared.extra_fields);
            }
            let desc = match rng.below(2) {
                0 => format!(
                    "Retrieve a single {name} {one} by ID, including {}.",
                    obj.fields
                ),
                _ => format!(
                    "Get one {one} from {name} by its ID and return its {}.",
                    obj.fields
                ),
            };
            (
                format!("get_{}", obj.one),
                format!("Get {name} {one}"),
                desc,
                Kind::Read,
                true,
            )
        }
        Verb::Create => {
            for p in &obj.scope {
                push_unique(&mut props, p);
            }
            for (i, p) in obj.set.iter().enumerate() {
                let mut p = p.clone();
                p.required |= i == 0;
                push_unique(&mut props, &p);
            }
            if props.len() < 2 {
                push_unique(&mut props, &shared.description);
            }
            let desc = match rng.below(2) {
                0 => format!("Create a new {one} in {name}{place}. Returns the created {one} with its ID."),
                _ => format!("Create a {name} {one}{place} from the given fields and return it, including the new ID."),
            };
            (
                format!("create_{}", obj.one),
                format!("Create {name} {one}"),
                desc,
                Kind::Write,
                false,
            )
        }
        Verb::Update => {
            for p in &obj.scope {
                push_unique(&mut props, p);
            }
            push_unique(&mut props, &obj.id);
            for p in &obj.set {
                let mut p = p.clone();
                p.required = false;
                push_unique(&mut props, &p);
            }
            let desc = format!(
                "Update an existing {name} {one}. Only the fields provided are changed; returns the updated {one}."
            );
            (
                format!("update_{}", obj.one),
                format!("Update {name} {one}"),
                desc,
                Kind::Write,
                true,
            )
        }
        Verb::Delete => {
            for p in &obj.scope {
                push_unique(&mut props, p);
            }
            push_unique(&mut props, &obj.id);
            if props.len() < 2 {
                push_unique(&mut props, &shared.confirm);
            }
            let desc = format!("Permanently delete a {name} {one} by ID. This cannot be undone.");
            (
                format!("delete_{}", obj.one),
                format!("Delete {name} {one}"),
                desc,
                Kind::Destructive,
                true,
            )
        }
        Verb::Search => {
            push_unique(&mut props, &shared.query);
            for p in &obj.scope {
                push_unique(&mut props, p);
            }
            push_unique(&mut props, &shared.limit);
            let desc = match rng.below(2) {
                0 => format!("Search {name} {many} by free-text query{place}. Returns the best matching {many} ranked by relevance."),
                _ => format!("Find {many} in {name} whose text matches a query; results are ranked by relevance."),
            };
            (
                format!("search_{}", obj.many),
                format!("Search {name} {many}"),
                desc,
                Kind::Read,
                true,
            )
        }
        Verb::Action(a) => {
            let own_scope = a
                .props
                .iter()
                .any(|p| obj.scope.iter().any(|q| q.name == p.name));
            if !own_scope {
                for p in &obj.scope {
                    push_unique(&mut props, p);
                }
            }
            if a.with_id {
                push_unique(&mut props, &obj.id);
            }
            for p in &a.props {
                push_unique(&mut props, p);
            }
            if props.len() < 2 {
                push_unique(&mut props, &shared.confirm);
            }
            (
                a.name.clone(),
                a.title.clone(),
                a.description.clone(),
                a.kind,
                a.kind != Kind::Write,
            )
        }
    };
    // 2-5 properties: required ones first, then optional ones, cut at 5.
    let survivors: Vec<String> = props
        .iter()
        .filter(|p| p.required)
        .chain(props.iter().filter(|p| !p.required))
        .take(5)
        .map(|p| p.name.clone())
        .collect();
    // Keep declaration order among the survivors (scope first reads naturally).
    props.retain(|p| survivors.contains(&p.name));
    Draft {
        suffix,
        title,
        description,
        props,
        kind,
        idempotent,
    }
}

fn tool_json(name: &str, title: &str, description: &str, d: &Draft) -> Json {
    let properties = Json::Obj(
        d.props
            .iter()
            .map(|p| (p.name.clone(), prop_json(p)))
            .collect(),
    );
    let required = Json::Arr(
        d.props
            .iter()
            .filter(|p| p.required)
            .map(|p| Json::Str(p.name.clone()))
            .collect(),
    );
    let schema = Json::Obj(vec![
        ("type".to_owned(), Json::Str("object".to_owned())),
        ("properties".to_owned(), properties),
        ("required".to_owned(), required),
    ]);
    let annotations = Json::Obj(vec![
        ("readOnlyHint".to_owned(), Json::Bool(d.kind == Kind::Read)),
        (
            "destructiveHint".to_owned(),
            Json::Bool(d.kind == Kind::Destructive),
        ),
        ("idempotentHint".to_owned(), Json::Bool(d.idempotent)),
        ("openWorldHint".to_owned(), Json::Bool(true)),
    ]);
    Json::Obj(vec![
        ("name".to_owned(), Json::Str(name.to_owned())),
        ("title".to_owned(), Json::Str(title.to_owned())),
        ("description".to_owned(), Json::Str(description.to_owned())),
        ("inputSchema".to_owned(), schema),
        ("annotations".to_owned(), annotations),
    ])
}

/// The base set, in output order: round-robin across services; within a service, round-robin
/// across its objects (each object's verbs in their listed order).
fn base_order(data: &Data) -> Vec<(&Svc, &Obj, &Verb)> {
    let per_service: Vec<Vec<(&Svc, &Obj, &Verb)>> = data
        .services
        .iter()
        .map(|svc| {
            let mut out = Vec::new();
            let depth = svc.objects.iter().map(|o| o.verbs.len()).max().unwrap_or(0);
            for k in 0..depth {
                for obj in &svc.objects {
                    if let Some(v) = obj.verbs.get(k) {
                        out.push((svc, obj, v));
                    }
                }
            }
            out
        })
        .collect();
    let depth = per_service.iter().map(Vec::len).max().unwrap_or(0);
    let mut out = Vec::new();
    for k in 0..depth {
        for tools in &per_service {
            if let Some(t) = tools.get(k) {
                out.push(*t);
            }
        }
    }
    out
}

/// Is `name` a legal MCP tool name for this generator: `[A-Za-z0-9_.-]{1,64}`.
pub fn is_legal_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.' || b == b'-')
}

/// Generate `count` tools. Deterministic and prefix-stable.
pub fn generate(count: usize) -> Vec<ToolDef> {
    // Only an edit to the embedded data can make this fail, and the tests catch that.
    let Ok(data) = data() else {
        return Vec::new();
    };
    let base = base_order(data);
    let mut out = Vec::with_capacity(count);
    let mut seen: HashSet<String> = HashSet::new();
    let mut round = 0usize;
    while out.len() < count && !base.is_empty() {
        for (svc, obj, verb) in &base {
            if out.len() >= count {
                break;
            }
            let probe = format!("{}_{}_{}_{round}", svc.key, obj.one, verb_key(verb));
            let mut rng = SplitMix64::from_key(&probe);
            let d = draft(&data.shared, svc, obj, verb, &mut rng);
            let base_name = format!("{}_{}", svc.key, d.suffix);
            let (name, title, description) = if round == 0 {
                (base_name, d.title.clone(), d.description.clone())
            } else {
                // Without qualifiers the base set is all there is.
                let Some((q, label)) = qualifier(&data.qualifiers, round) else {
                    return out;
                };
                (
                    format!("{q}_{base_name}"),
                    format!("{} ({label})", d.title),
                    format!(
                        "{} Operates on the {label} {} workspace.",
                        d.description, svc.name
                    ),
                )
            };
            if !is_legal_name(&name) || !seen.insert(name.clone()) {
                continue;
            }
            let json = tool_json(&name, &title, &description, &d);
            out.push(ToolDef {
                name,
                title,
                description,
                json,
            });
        }
        round += 1;
    }
    out
}

/// Name prefix and label for `round` (>= 1): each qualifier in turn, then all of them again
/// numbered from 2 (`eu2`, "EU 2"), and so on.
fn qualifier(qualifiers: &[Qualifier], round: usize) -> Option<(String, String)> {
    let idx = round.checked_sub(1)?;
    let q = qualifiers.get(idx.checked_rem(qualifiers.len())?)?;
    let lap = idx.checked_div(qualifiers.len())?;
    Some(if lap == 0 {
        (q.prefix.clone(), q.label.clone())
    } else {
        (
            format!("{}{}", q.prefix, lap + 1),
            format!("{} {}", q.label, lap + 1),
        )
    })
}

fn verb_key(v: &Verb) -> &str {
    match v {
        Verb::List => "list",
        Verb::Get => "get",
        Verb::Create => "create",
        Verb::Update => "update",
        Verb::Delete => "delete",
        Verb::Search => "search",
        Verb::Action(a) => &a.name,
    }
}

/// The JSONL text for `count` tools (one definition a line, trailing newline).
pub fn jsonl(count: usize) -> String {
    let mut out = String::new();
    for t in generate(count) {
        out.push_str(&t.json.to_json_string());
        out.push('\n');
    }
    out
}

/// Number of distinct tools in the base (unqualified) set.
pub fn base_size() -> usize {
    data().map_or(0, |d| base_order(d).len())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]
mod tests;
