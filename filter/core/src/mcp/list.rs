//! `tools/list` responses: eager tools stay, progressive tools go, and the search tool is added
//! on the first page. Everything else in the message (other result fields such as
//! `nextCursor`, `_meta`, `resultType`, and every byte of the tools that stay) is kept.

use crate::config::catalog::CatalogScope;
use crate::config::entries::Entry;
use crate::config::{Config, DisclosureMode, Mode};
use crate::index::catalog::{Catalog, Page, Tool};
use crate::index::catalog::{ListMemo, MemoKey};
use crate::index::fnv;
use crate::mcp::injected;
use crate::mcp::json::RawObject;
use crate::mcp::jsonrpc;
use serde::de::{Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::cell::RefCell;
use std::fmt;
use unordered::Heads;

/// A `tools/list` request whose response is to be rewritten.
#[derive(Debug, Clone)]
pub struct ListTarget {
    /// The id as the request wrote it, to answer with.
    pub id: Box<RawValue>,
    /// What the answer's id must key to (`jsonrpc::IdKey`).
    pub key: jsonrpc::IdKey,
    pub first_page: bool,
    /// What the list lists (tools, prompts, resources or resource templates).
    pub entry: Entry,
}

impl ListTarget {
    /// The target of a list request with this id; `None` when the id has no key (its answer is
    /// then filtered like any other list on the stream, never paired).
    pub fn new(id: &RawValue, first_page: bool, entry: Entry) -> Option<ListTarget> {
        let key = jsonrpc::IdKey::of(id).ok()?;
        Some(ListTarget {
            id: id.to_owned(),
            key,
            first_page,
            entry,
        })
    }

    /// Whether a response's `id` answers this request.
    fn answered_by(&self, id: &RawValue) -> bool {
        jsonrpc::IdKey::of(id).is_ok_and(|key| key == self.key)
    }
}

/// What rewriting needs besides the message.
pub struct ListContext<'a> {
    pub config: &'a Config,
    pub namespace: &'a str,
    /// The tools already known for this namespace (from the shared catalog), so the first
    /// page can announce tools that later pages will bring.
    pub known: &'a Catalog,
    /// Whether the caller may see a tool (authorization; everything when unconfigured).
    pub allowed: &'a dyn Fn(&str) -> bool,
    /// Whether the caller may see a prompt, resource or resource template, by its key.
    pub entry_allowed: &'a dyn Fn(Entry, &str) -> bool,
    /// Whether an authorization policy is configured (then even list mode filters).
    pub authorizing: bool,
    /// Whether `known` is the whole list (a last page was learned).
    pub known_complete: bool,
    /// Who the answer is for: `None` when the caller may see every tool, else the policy
    /// rules that apply to them (`policy::Scope::rules`). Part of a memo's key.
    pub audience: Option<Vec<usize>>,
    /// The last rewrite of this catalog version, to reuse when the same result comes again.
    pub memo: Option<&'a RefCell<Option<ListMemo>>>,
    /// The listing's protocol defines `outputSchema` (the search tool declares its own). Part
    /// of a memo's key.
    pub structured: bool,
}

/// Larger rewritten results (list mode filtering a big catalog) are not kept: the memo would
/// double the VM's memory for a case that does not repeat cheaply anyway.
const MEMO_MAX_BYTES: usize = 1 << 20;

/// A rewritten message, and what it taught about the catalog.
#[derive(Debug, Default)]
pub struct Outcome {
    /// The new message; `None` when it stays as the upstream sent it (list mode).
    pub body: Option<Vec<u8>>,
    /// Every valid tool of the page(s), for the catalog.
    pub learned: Vec<Tool>,
    /// Every valid prompt, resource or resource template of other lists in the message, by
    /// kind and page.
    pub entries: Vec<(Entry, Vec<Tool>, Page)>,
    /// The answer was replayed from the memo: the page is already in the catalog.
    pub replayed: bool,
    /// What to remember once learning the page changes nothing (single messages only).
    pub memo: Option<ListMemo>,
    /// Where the page stands in its listing (for learning).
    pub page: Page,
    /// A `tools/list` response was among the rewritten messages (else `learned` and `page`
    /// say nothing about the tool catalog).
    pub tools: bool,
    /// The upstream said the list is shaped by the caller (`cacheScope: "private"`, spec
    /// 2026-07-28 "Caching").
    pub private: bool,
    pub hidden: usize,
    pub rewritten: usize,
    changed: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RewriteError {
    NotJson(String),
    NotUtf8,
}

impl fmt::Display for RewriteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RewriteError::NotJson(e) => write!(f, "tools/list response is not valid JSON: {e}"),
            RewriteError::NotUtf8 => write!(f, "tools/list response is not UTF-8"),
        }
    }
}

impl std::error::Error for RewriteError {}

/// Rewrites a JSON-RPC message (single or batch). `Ok(None)`: no target response in it.
pub fn rewrite_message(
    body: &[u8],
    targets: &[ListTarget],
    ctx: &ListContext<'_>,
) -> Result<Option<Outcome>, RewriteError> {
    let mut scanned = Scanned::default();
    if let Some(replayed) = replay(body, targets, ctx, &mut scanned) {
        return replayed.map(Some);
    }
    let text = std::str::from_utf8(body).map_err(|_| RewriteError::NotUtf8)?;
    let trimmed = text.trim_start();
    let mut outcome = Outcome::default();
    let out = if trimmed.starts_with('[') {
        let items: Vec<Box<RawValue>> =
            serde_json::from_str(text).map_err(|e| RewriteError::NotJson(e.to_string()))?;
        let mut out = String::with_capacity(text.len());
        out.push('[');
        for (i, item) in items.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            match rewrite_object(item.get(), targets, ctx, None, &mut outcome)? {
                Some(new) => out.push_str(&new),
                None => out.push_str(item.get()),
            }
        }
        out.push(']');
        out
    } else {
        match rewrite_object(text, targets, ctx, Some(&mut scanned), &mut outcome)? {
            Some(new) => new,
            None => return Ok(None),
        }
    };
    if outcome.rewritten == 0 {
        return Ok(None);
    }
    if outcome.changed {
        outcome.body = Some(out.into_bytes());
    }
    Ok(Some(outcome))
}

/// A list whose `result` is the remembered one, found without reading the megabytes of it:
/// the remembered result's bytes are fingerprinted where they stood last time (counted from the
/// end: only the `id` before it changes length), byte for byte or, where the remembered rewrite
/// did not depend on the tools' order, as a multiset of tools (`unordered`); and the rest of the
/// message, with a `0` in the result's place, is parsed to check that it is a response to one
/// of `targets` whose `result` is exactly there. `None`: not the remembered list, read it whole.
fn replay(
    body: &[u8],
    targets: &[ListTarget],
    ctx: &ListContext<'_>,
    scanned: &mut Scanned,
) -> Option<Result<Outcome, RewriteError>> {
    let memo = ctx.memo?.try_borrow().ok()?;
    let memo = memo.as_ref()?;
    let end = body.len().checked_sub(memo.tail)?;
    let start = end.checked_sub(memo.key.len)?;
    if !same_result(memo, body, start, scanned, None) {
        return None;
    }
    let before = std::str::from_utf8(body.get(..start)?).ok()?;
    let after = std::str::from_utf8(body.get(end..)?).ok()?;
    let rest = format!("{before}0{after}");
    if !rest.trim_start().starts_with('{') {
        return None;
    }
    let message = RawObject::parse(&rest).ok()?;
    let id = message.get("id")?;
    let target = targets.iter().find(|t| t.answered_by(id))?;
    let result = message.borrowed("result")?;
    let at = (result.get().as_ptr() as usize).checked_sub(rest.as_ptr() as usize)?;
    if target.entry != Entry::Tool || at != start || result.get() != "0" {
        return None;
    }
    let key = MemoKey {
        first_page: target.first_page,
        audience: ctx.audience.clone(),
        structured: ctx.structured,
        ..memo.key.clone()
    };
    if key != memo.key {
        return None;
    }
    let mut outcome = Outcome::default();
    let replayed = replay_memo(memo, message, &mut outcome);
    Some(replayed.map(|body| {
        outcome.body = body.map(String::into_bytes);
        outcome
    }))
}

/// Counts the replay of `memo` in `outcome`: the message with the remembered result, or `None`
/// when the remembered answer was to let the message go on untouched.
fn replay_memo(
    memo: &ListMemo,
    message: RawObject,
    outcome: &mut Outcome,
) -> Result<Option<String>, RewriteError> {
    outcome.tools = true;
    outcome.rewritten += 1;
    outcome.hidden += memo.hidden;
    outcome.page = memo.page;
    outcome.replayed = true;
    let Some(result) = &memo.result else {
        return Ok(None);
    };
    outcome.changed = true;
    with_result(message, result.clone()).map(Some)
}

/// Whether the `memo.key.len` bytes of `body` from `start` are the remembered result: the same
/// bytes, or the same tools in another order when the remembered rewrite allows it.
/// `fingerprint`: the span's fingerprint when the caller has taken it already.
fn same_result(
    memo: &ListMemo,
    body: &[u8],
    start: usize,
    scanned: &mut Scanned,
    fingerprint: Option<u64>,
) -> bool {
    let end = start.saturating_add(memo.key.len);
    let Some(bytes) = body.get(start..end) else {
        return false;
    };
    let mut reordered = || {
        memo.unordered
            .as_ref()
            .is_some_and(|u| scanned.of(body, start, end, &u.heads) == Some(u.print))
    };
    if fingerprint.is_none() && memo.reordered.get() && reordered() {
        return true;
    }
    let same = fingerprint.unwrap_or_else(|| fnv::fingerprint(bytes)) == memo.key.fingerprint;
    // `Scanned` keeps the span's print: asked again, it is not scanned again.
    let other_order = !same && reordered();
    memo.reordered.set(other_order);
    same || other_order
}

/// The order-free fingerprint of one span of the body, read once whether `replay` or
/// `rewrite_object` (or both) ask for it.
#[derive(Default)]
struct Scanned(Option<(usize, usize, Option<u64>)>);

impl Scanned {
    fn of(&mut self, body: &[u8], start: usize, end: usize, heads: &Heads) -> Option<u64> {
        match self.0 {
            Some((s, e, print)) if (s, e) == (start, end) => print,
            _ => {
                let print = body
                    .get(start..end)
                    .and_then(|span| unordered::fingerprint(span, heads));
                self.0 = Some((start, end, print));
                print
            }
        }
    }
}

/// `scanned`: the message is the whole body (not in a batch), so a memo can stand for it.
fn rewrite_object(
    text: &str,
    targets: &[ListTarget],
    ctx: &ListContext<'_>,
    scanned: Option<&mut Scanned>,
    outcome: &mut Outcome,
) -> Result<Option<String>, RewriteError> {
    if !text.trim_start().starts_with('{') {
        return Ok(None);
    }
    let message =
        RawObject::parse_unique(text).map_err(|e| RewriteError::NotJson(e.to_string()))?;
    let Some(id) = message.get("id") else {
        return Ok(None);
    };
    let Some(target) = targets.iter().find(|t| t.answered_by(id)) else {
        return Ok(None);
    };
    let Some(result_raw) = message.borrowed("result") else {
        // An error response to tools/list: nothing to hide.
        return Ok(None);
    };
    if target.entry != Entry::Tool {
        return rewrite_entries(message, result_raw, target, ctx, outcome);
    }
    // Only a whole body with a memo to consult is fingerprinted (a pass over megabytes).
    let memo = ctx.memo.filter(|_| scanned.is_some());
    let result_start = (result_raw.get().as_ptr() as usize).saturating_sub(text.as_ptr() as usize);
    let key = memo.map(|_| MemoKey {
        len: result_raw.get().len(),
        fingerprint: fnv::fingerprint(result_raw.get().as_bytes()),
        first_page: target.first_page,
        audience: ctx.audience.clone(),
        structured: ctx.structured,
    });
    let remembered = memo.and_then(|m| m.try_borrow().ok());
    if let (Some(memo), Some(key), Some(scanned)) =
        (remembered.as_ref().and_then(|m| m.as_ref()), &key, scanned)
    {
        let context = MemoKey {
            fingerprint: memo.key.fingerprint,
            ..key.clone()
        };
        let same = context == memo.key
            && same_result(
                memo,
                text.as_bytes(),
                result_start,
                scanned,
                Some(key.fingerprint),
            );
        if same {
            return Ok(Some(
                replay_memo(memo, message, outcome)?.unwrap_or_else(|| text.to_string()),
            ));
        }
    }
    let hidden_before = outcome.hidden;
    let ListResult {
        members: mut result,
        tools,
    } = serde_json::from_str(result_raw.get()).map_err(|e| RewriteError::NotJson(e.to_string()))?;
    let Some(tools) = tools else {
        return Ok(None);
    };
    let tools_len = result_raw.get().len();
    let result_end = result_start.saturating_add(tools_len);
    let has_next = read_page_flags(&result, outcome, ctx.config);

    let whole_page = target.first_page && !has_next;
    // A definition without a string name cannot be searched or classified: it stays listed
    // (after the named tools) rather than be lost, and is never learned. Of two definitions
    // with one name the first is the tool: a later one is dropped here and never learned, so
    // that what is listed and what search returns agree.
    //
    // Each definition's fingerprint finds it in the known catalog and makes the memo's print of
    // the list whatever the tools' order (`unordered::of_tools`).
    let prints: Vec<u64> = tools
        .iter()
        .map(|raw| fnv::fingerprint(raw.get().as_bytes()))
        .collect();
    let mut page: Vec<(Option<Tool>, &str)> = tools
        .iter()
        .zip(&prints)
        .map(|(&raw, &print)| (Tool::from_raw_known(raw, print, ctx.known).ok(), raw.get()))
        .collect();
    let repeated: Vec<bool> = {
        let mut seen = fnv::FnvHashSet::default();
        page.iter()
            .map(|(t, _)| t.as_ref().is_some_and(|t| !seen.insert(t.name.as_ref())))
            .collect()
    };
    if repeated.contains(&true) {
        let mut at = 0;
        page.retain(|_| {
            let keep = !repeated.get(at).copied().unwrap_or(false);
            at += 1;
            keep
        });
        outcome.hidden += repeated.iter().filter(|&&r| r).count();
    }
    // What the caller may use: this page's tools and, unless this page is the whole list,
    // the tools known so far (later pages will bring them). A whole list is counted on its
    // own: the known catalog may be from before the upstream changed its tools.
    let known = ctx.known.tools().iter().filter(|_| !whole_page);
    let mut usable: Vec<&str> = known
        .map(|t| t.name.as_ref())
        .chain(
            page.iter()
                .filter_map(|(t, _)| t.as_ref().map(|t| t.name.as_ref())),
        )
        .filter(|n| (ctx.allowed)(n))
        .collect();
    usable.sort_unstable();
    usable.dedup();
    let config = ctx.config;
    let whole_list_known = ctx.known_complete || whole_page;
    let searching = match config.mode {
        Mode::Search | Mode::Code => true,
        Mode::List => false,
        // Until the whole list has been seen its size is unknown: search, so that no page
        // shows a different choice and every tool stays reachable.
        Mode::Auto => !whole_list_known || usable.len() > config.search_threshold,
    };
    let progressive =
        |name: &str| config.disclosure_mode(ctx.namespace, name) == DisclosureMode::Progressive;

    let mut kept: Vec<(Option<&str>, &str)> = Vec::with_capacity(tools.len());
    for (tool, raw) in &page {
        match tool {
            Some(t) if !(ctx.allowed)(&t.name) || (searching && progressive(&t.name)) => {
                outcome.hidden += 1;
            }
            // An entry the filter cannot read (no string name, a lone surrogate) is no tool a
            // policy could allow: a caller the policy restricts never sees it (fail closed).
            None if ctx.audience.is_some() => outcome.hidden += 1,
            _ => kept.push((tool.as_ref().map(|t| t.name.as_ref()), raw)),
        }
    }
    // Servers SHOULD list tools in a deterministic order (spec 2026-07-28, "Tools",
    // Capabilities: clients cache the list, models' prompt caches hit). A gateway joining its
    // servers' lists as their answers arrive does not, so what stays is listed by name (entries
    // without one after, as they came): the same answer for the same tools, whatever their order.
    crate::sort::sort_by(&mut kept, |a, b| {
        (a.0.is_none(), a.0).cmp(&(b.0.is_none(), b.0))
    });
    let order_free = !repeated.contains(&true) && kept.iter().all(|(name, _)| name.is_some());
    let kept: Vec<&str> = kept.into_iter().map(|(_, raw)| raw).collect();
    let hidden: Vec<&str> = usable.iter().copied().filter(|n| progressive(n)).collect();
    let injected = if config.mode == Mode::Code {
        // Scripts reach every tool the caller may use, eager ones too.
        match target.first_page {
            true => injected::script_definition(config, ctx.structured),
            false => Vec::new(),
        }
    } else if searching && target.first_page && !hidden.is_empty() {
        let mut groups: Vec<String> = usable
            .iter()
            .map(|n| config.group_of(ctx.namespace, n))
            .collect();
        groups.sort_unstable();
        groups.dedup();
        injected::definitions(config, &hidden, &groups, whole_list_known, ctx.structured)
    } else {
        Vec::new()
    };
    drop(usable);
    outcome
        .learned
        .extend(page.into_iter().filter_map(|(t, _)| t));
    outcome.page = Page {
        first: target.first_page,
        last: !has_next,
    };
    outcome.tools = true;
    outcome.rewritten += 1;
    let remember = |result: Option<&String>, order_free: bool| {
        if let Some(key) = key.filter(|_| result.is_none_or(|r| r.len() <= MEMO_MAX_BYTES)) {
            let unordered = order_free
                .then(|| unordered::of_tools(result_raw.get().as_bytes(), &tools, &prints))
                .flatten();
            outcome.memo = Some(ListMemo {
                key,
                unordered,
                reordered: Default::default(),
                tail: text.len().saturating_sub(result_end),
                result: result.cloned(),
                hidden: outcome.hidden - hidden_before,
                page: outcome.page,
            });
        }
    };
    if injected.is_empty() && outcome.hidden == 0 && !ctx.authorizing && !searching {
        // List mode with nobody to filter: the message goes on untouched.
        // Passed on as it came (nothing hidden: no name repeated), in whatever order.
        remember(None, true);
        return Ok(Some(text.to_string()));
    }
    outcome.changed = true;
    if ctx.authorizing {
        mark_private(&mut result)?;
    }

    let mut list = String::with_capacity(tools_len);
    let defs = injected.iter().map(String::as_str).chain(kept);
    crate::mcp::json::write_array(&mut list, defs, |out, def| out.push_str(def));
    set_member(&mut result, "tools", list)?;
    let mut result_text = String::with_capacity(result.encoded_len());
    result.write(&mut result_text);
    remember(Some(&result_text), order_free);
    with_result(message, result_text).map(Some)
}

/// A prompts, resources or resource templates list: every readable entry is learned (for
/// search); under a policy the entries the caller may not use go, an entry the filter cannot
/// read goes for a restricted caller (fail closed), and the list is `cacheScope: "private"`.
fn rewrite_entries(
    message: RawObject,
    result_raw: &RawValue,
    target: &ListTarget,
    ctx: &ListContext<'_>,
    outcome: &mut Outcome,
) -> Result<Option<String>, RewriteError> {
    let entry = target.entry;
    let not_json = |e: serde_json::Error| RewriteError::NotJson(e.to_string());
    let mut result = RawObject::parse_unique(result_raw.get()).map_err(not_json)?;
    let Some(items) = result.borrowed(entry.list_member()) else {
        return Ok(None);
    };
    let items: Vec<&RawValue> = serde_json::from_str(items.get()).map_err(not_json)?;
    let has_next = read_page_flags(&result, outcome, ctx.config);
    // Progressive prompts or resources are found through the search tool, never listed (but
    // for the kill switch, `mode: list`).
    let progressive = ctx.config.mode != Mode::List
        && ctx.config.entry_disclosure(entry) == DisclosureMode::Progressive;
    let mut kept = Vec::with_capacity(items.len());
    let mut learned: Vec<Tool> = Vec::with_capacity(items.len());
    let mut seen = fnv::FnvHashSet::default();
    for raw in items {
        // Learned whatever this caller may see: the catalog is every caller's, and each
        // search filters it for its caller.
        match Tool::from_entry(entry, raw) {
            Ok(e) => {
                if !progressive && (ctx.entry_allowed)(entry, &e.name) {
                    kept.push(raw.get());
                } else {
                    outcome.hidden += 1;
                }
                if seen.insert(e.name.clone()) {
                    learned.push(e);
                }
            }
            Err(_) if ctx.authorizing || progressive => outcome.hidden += 1,
            Err(_) => kept.push(raw.get()),
        }
    }
    let page = Page {
        first: target.first_page,
        last: !has_next,
    };
    outcome.entries.push((entry, learned, page));
    outcome.rewritten += 1;
    if !ctx.authorizing && !progressive {
        return Ok(Some(message_text(&message)));
    }
    outcome.changed = true;
    if ctx.authorizing {
        mark_private(&mut result)?;
    }
    set_member(
        &mut result,
        entry.list_member(),
        format!("[{}]", kept.join(",")),
    )?;
    let mut result_text = String::with_capacity(result.encoded_len());
    result.write(&mut result_text);
    with_result(message, result_text).map(Some)
}

/// Notes a `cacheScope: "private"` result (or any list, when the operator says the server
/// shapes every list per caller: `catalog.scope`) in `outcome`; returns whether a page follows.
fn read_page_flags(result: &RawObject, outcome: &mut Outcome, config: &Config) -> bool {
    outcome.private |= config.catalog.scope == CatalogScope::Credential
        || result
            .get("cacheScope")
            .is_some_and(|c| c.get().trim() == "\"private\"");
    result
        .get("nextCursor")
        .is_some_and(|c| c.get().trim() != "null")
}

/// A list shaped by the caller's authorization must not be cached for other callers (spec
/// 2026-07-28 "Caching": `cacheScope: "private"`); a 2026-07-28 result keeps its `ttlMs`, or
/// gets 0 where it had none.
fn mark_private(result: &mut RawObject) -> Result<(), RewriteError> {
    let raw = |text: &str| {
        RawValue::from_string(text.to_string()).map_err(|e| RewriteError::NotJson(e.to_string()))
    };
    result.put("cacheScope", raw("\"private\"")?);
    if result.get("resultType").is_some() && result.get("ttlMs").is_none() {
        result.put("ttlMs", raw("0")?);
    }
    Ok(())
}

fn message_text(message: &RawObject) -> String {
    let mut out = String::with_capacity(message.encoded_len());
    message.write(&mut out);
    out
}

/// The message, written out with `result` as its result.
fn with_result(mut message: RawObject, result: String) -> Result<String, RewriteError> {
    set_member(&mut message, "result", result)?;
    let mut out = String::with_capacity(message.encoded_len());
    message.write(&mut out);
    Ok(out)
}

fn set_member(obj: &mut RawObject, key: &str, value: String) -> Result<(), RewriteError> {
    let raw = RawValue::from_string(value).map_err(|e| RewriteError::NotJson(e.to_string()))?;
    obj.set(key, raw);
    Ok(())
}

/// A `tools/list` result read in one pass: its members kept raw, and the `tools` array split
/// into definitions as it is read rather than scanned a second time (megabytes at 10,000
/// tools). The `tools` member's value is a placeholder: a rewrite always replaces it.
struct ListResult<'a> {
    members: RawObject<'a>,
    tools: Option<Vec<&'a RawValue>>,
}

impl<'de> Deserialize<'de> for ListResult<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Members;
        impl<'de> Visitor<'de> for Members {
            type Value = ListResult<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a tools/list result object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ListResult<'de>, A::Error> {
                let mut members = Vec::new();
                let mut tools = None;
                while let Some(key) = map.next_key::<String>()? {
                    if members.iter().any(|(k, _)| *k == key) {
                        // Clients' readers take the last of two, this one would take the first.
                        return Err(serde::de::Error::custom(format!(
                            "duplicate member {key:?} in the result"
                        )));
                    }
                    if key == "tools" {
                        tools = Some(map.next_value::<Vec<&'de RawValue>>()?);
                        let placeholder = RawValue::from_string("[]".to_string())
                            .map_err(serde::de::Error::custom)?;
                        members.push((key, Cow::Owned(placeholder)));
                    } else {
                        members.push((key, Cow::Borrowed(map.next_value::<&'de RawValue>()?)));
                    }
                }
                Ok(ListResult {
                    members: RawObject(members),
                    tools,
                })
            }
        }
        deserializer.deserialize_map(Members)
    }
}

mod event_stream;
mod unordered;

pub use event_stream::{SseGiveUp, SseRewriter};

#[cfg(test)]
mod tests;
