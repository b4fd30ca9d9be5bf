//! `tools/list` responses: eager tools stay, progressive tools go, and the search tool is added
//! on the first page. Everything else in the message (other result fields such as
//! `nextCursor`, `_meta`, `resultType`, and every byte of the tools that stay) is kept.

use crate::catalog::{Page, Tool};
use crate::config::{Config, DisclosureMode, Mode};
use crate::injected;
use crate::json::RawObject;
use crate::sse;
use serde_json::value::RawValue;
use serde_json::Value;
use std::fmt;

/// A `tools/list` request whose response is to be rewritten.
#[derive(Debug, Clone, PartialEq)]
pub struct ListTarget {
    pub id: Value,
    pub first_page: bool,
}

/// What rewriting needs besides the message.
pub struct ListContext<'a> {
    pub config: &'a Config,
    pub namespace: &'a str,
    /// Names of the tools already known for this namespace (from the shared catalog), so the
    /// first page can announce tools that later pages will bring.
    pub known: Vec<String>,
    /// Whether the caller may see a tool (authorization; everything when unconfigured).
    pub allowed: &'a dyn Fn(&str) -> bool,
    /// Whether an authorization policy is configured (then even list mode filters).
    pub authorizing: bool,
    /// Whether `known` is the whole list (a last page was learned).
    pub known_complete: bool,
}

/// A rewritten message, and what it taught about the catalog.
#[derive(Debug, Default)]
pub struct Outcome {
    /// The new message; `None` when it stays as the upstream sent it (list mode).
    pub body: Option<Vec<u8>>,
    /// Every valid tool of the page(s), for the catalog.
    pub learned: Vec<Tool>,
    /// Where the page stands in its listing (for learning).
    pub page: Page,
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
            match rewrite_object(item.get(), targets, ctx, &mut outcome)? {
                Some(new) => out.push_str(&new),
                None => out.push_str(item.get()),
            }
        }
        out.push(']');
        out
    } else {
        match rewrite_object(text, targets, ctx, &mut outcome)? {
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

fn rewrite_object(
    text: &str,
    targets: &[ListTarget],
    ctx: &ListContext<'_>,
    outcome: &mut Outcome,
) -> Result<Option<String>, RewriteError> {
    if !text.trim_start().starts_with('{') {
        return Ok(None);
    }
    let mut message = RawObject::parse(text).map_err(|e| RewriteError::NotJson(e.to_string()))?;
    let Some(id) = message
        .get("id")
        .and_then(|raw| serde_json::from_str::<Value>(raw.get()).ok())
    else {
        return Ok(None);
    };
    let Some(target) = targets.iter().find(|t| t.id == id) else {
        return Ok(None);
    };
    let Some(result_raw) = message.get("result") else {
        // An error response to tools/list: nothing to hide.
        return Ok(None);
    };
    let mut result =
        RawObject::parse(result_raw.get()).map_err(|e| RewriteError::NotJson(e.to_string()))?;
    let Some(tools_raw) = result.get("tools") else {
        return Ok(None);
    };
    let tools: Vec<Box<RawValue>> =
        serde_json::from_str(tools_raw.get()).map_err(|e| RewriteError::NotJson(e.to_string()))?;
    let has_next = result
        .get("nextCursor")
        .is_some_and(|c| c.get().trim() != "null");

    let mut page: Vec<(Option<Tool>, &str)> = Vec::with_capacity(tools.len());
    for raw in &tools {
        // A definition without a name cannot be searched or classified: it stays in place
        // rather than be lost.
        page.push((Tool::from_raw(raw).ok(), raw.get()));
    }
    // What the caller may use: the tools known so far and this page's.
    let mut usable: Vec<&str> = ctx
        .known
        .iter()
        .map(String::as_str)
        .chain(
            page.iter()
                .filter_map(|(t, _)| t.as_ref().map(|t| t.name.as_str())),
        )
        .filter(|n| (ctx.allowed)(n))
        .collect();
    usable.sort_unstable();
    usable.dedup();
    let config = ctx.config;
    let whole_list_known = ctx.known_complete || (target.first_page && !has_next);
    let searching = match config.mode {
        Mode::Search => true,
        Mode::List => false,
        // Until the whole list has been seen its size is unknown: search, so that no page
        // shows a different choice and every tool stays reachable.
        Mode::Auto => !whole_list_known || usable.len() > config.search_threshold,
    };
    let progressive =
        |name: &str| config.disclosure_mode(ctx.namespace, name) == DisclosureMode::Progressive;

    let mut kept: Vec<&str> = Vec::with_capacity(tools.len());
    for (tool, raw) in &page {
        match tool {
            Some(t) if !(ctx.allowed)(&t.name) || (searching && progressive(&t.name)) => {
                outcome.hidden += 1;
            }
            _ => kept.push(raw),
        }
    }
    outcome
        .learned
        .extend(page.iter().filter_map(|(t, _)| t.clone()));
    let hidden: Vec<&str> = usable.iter().copied().filter(|n| progressive(n)).collect();
    let injected = if searching && target.first_page && !hidden.is_empty() {
        let mut groups: Vec<String> = usable
            .iter()
            .map(|n| config.group_of(ctx.namespace, n))
            .collect();
        groups.sort_unstable();
        groups.dedup();
        injected::definitions(config, &hidden, &groups, whole_list_known)
    } else {
        Vec::new()
    };
    outcome.page = Page {
        first: target.first_page,
        last: !has_next,
    };
    outcome.rewritten += 1;
    if injected.is_empty() && outcome.hidden == 0 && !ctx.authorizing && !searching {
        // List mode with nobody to filter: the message goes on untouched.
        return Ok(Some(text.to_string()));
    }
    outcome.changed = true;

    let mut list = String::with_capacity(tools_raw.get().len());
    list.push('[');
    for (i, def) in injected.iter().map(String::as_str).chain(kept).enumerate() {
        if i > 0 {
            list.push(',');
        }
        list.push_str(def);
    }
    list.push(']');
    set_member(&mut result, "tools", list)?;
    let mut result_text = String::with_capacity(encoded_len(&result));
    result.write(&mut result_text);
    set_member(&mut message, "result", result_text)?;
    let mut out = String::new();
    message.write(&mut out);
    Ok(Some(out))
}

fn encoded_len(obj: &RawObject) -> usize {
    obj.0.iter().map(|(k, v)| k.len() + v.get().len() + 4).sum()
}

fn set_member(obj: &mut RawObject, key: &str, value: String) -> Result<(), RewriteError> {
    let raw = RawValue::from_string(value).map_err(|e| RewriteError::NotJson(e.to_string()))?;
    if let Some(slot) = obj.0.iter_mut().find(|(k, _)| k == key) {
        slot.1 = raw;
    }
    Ok(())
}

/// Rewrites one event's data: `Some(new data)` for the target response, `None` to keep it.
pub type EventRewrite<'a> = dyn FnMut(&[u8]) -> Result<Option<Vec<u8>>, RewriteError> + 'a;

/// Why an SSE rewrite stopped rewriting and let the rest of the stream through unchanged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SseGiveUp {
    TooLarge,
    Unparseable(RewriteError),
}

/// Rewrites a `text/event-stream` response chunk by chunk: each event is passed on as soon as it
/// is complete, the target response's event is rewritten.
#[derive(Debug)]
pub struct SseRewriter {
    parser: sse::Parser,
    cap: usize,
    gave_up: Option<SseGiveUp>,
}

impl SseRewriter {
    pub fn new(cap: usize) -> Self {
        SseRewriter {
            parser: sse::Parser::new(),
            cap,
            gave_up: None,
        }
    }

    /// Bytes held for an event not yet complete.
    pub fn pending(&self) -> usize {
        self.parser.pending()
    }

    /// Why rewriting stopped, if it did (the first reason only).
    pub fn gave_up(&self) -> Option<&SseGiveUp> {
        self.gave_up.as_ref()
    }

    /// Feeds a chunk; returns the bytes to send on now. `rewrite` gets each event's data and
    /// returns the new data for a rewritten event.
    pub fn push(
        &mut self,
        chunk: &[u8],
        end_of_stream: bool,
        rewrite: &mut EventRewrite<'_>,
    ) -> Vec<u8> {
        if self.gave_up.is_some() {
            return chunk.to_vec();
        }
        let mut out = Vec::with_capacity(chunk.len());
        let mut events = self.parser.push(chunk);
        let rest = if end_of_stream {
            let (last, rest) = self.parser.finish();
            events.extend(last);
            rest
        } else {
            Vec::new()
        };
        for event in events {
            if self.gave_up.is_none() && event.raw.len() > self.cap {
                self.gave_up = Some(SseGiveUp::TooLarge);
            }
            if self.gave_up.is_some() {
                out.extend_from_slice(&event.raw);
                continue;
            }
            let new_data = match &event.data {
                Some(data) => match rewrite(data) {
                    Ok(new) => new,
                    Err(e) => {
                        self.gave_up = Some(SseGiveUp::Unparseable(e));
                        None
                    }
                },
                None => None,
            };
            match new_data {
                Some(data) => out.extend_from_slice(&sse::replace_data(&event, &data)),
                None => out.extend_from_slice(&event.raw),
            }
        }
        out.extend_from_slice(&rest);
        if self.gave_up.is_none() && self.parser.pending() > self.cap {
            self.gave_up = Some(SseGiveUp::TooLarge);
            let (_, held) = self.parser.finish();
            out.extend_from_slice(&held);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx<'a>(config: &'a Config, allowed: &'a dyn Fn(&str) -> bool) -> ListContext<'a> {
        ListContext {
            config,
            namespace: "ns",
            known: Vec::new(),
            allowed,
            authorizing: false,
            known_complete: false,
        }
    }

    const LIST: &str = r#"{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"get_a","description":"A", "inputSchema":{"type":"object"}},{"name":"do_b","description":"B"},{"name":"get_c","x":[1, 2]}],"nextCursor":"abc","_meta":{"k":1}}}"#;

    #[test]
    fn keeps_eager_hides_progressive_adds_search_tool_first() {
        let config = Config::parse(r#"{"eager_patterns":["get_*"]}"#).unwrap();
        let all = |_: &str| true;
        let targets = [ListTarget {
            id: serde_json::json!(2),
            first_page: true,
        }];
        let out = rewrite_message(LIST.as_bytes(), &targets, &ctx(&config, &all))
            .unwrap()
            .unwrap();
        let text = String::from_utf8(out.body.unwrap()).unwrap();
        assert!(text
            .starts_with(r#"{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"tool_search","#));
        assert!(text.ends_with(r#"{"name":"get_a","description":"A", "inputSchema":{"type":"object"}},{"name":"get_c","x":[1, 2]}],"nextCursor":"abc","_meta":{"k":1}}}"#), "{text}");
        assert_eq!(out.hidden, 1);
        assert_eq!(out.learned.len(), 3);
        assert!(!out.page.last, "has nextCursor");
    }

    #[test]
    fn later_pages_get_no_search_tool_and_other_ids_are_untouched() {
        let config = Config::default();
        let all = |_: &str| true;
        let later = [ListTarget {
            id: serde_json::json!(2),
            first_page: false,
        }];
        let out = rewrite_message(LIST.as_bytes(), &later, &ctx(&config, &all))
            .unwrap()
            .unwrap();
        let v: Value = serde_json::from_slice(out.body.as_ref().unwrap()).unwrap();
        assert_eq!(v["result"]["tools"], serde_json::json!([]));
        let other = [ListTarget {
            id: serde_json::json!("2"),
            first_page: true,
        }];
        assert!(
            rewrite_message(LIST.as_bytes(), &other, &ctx(&config, &all))
                .unwrap()
                .is_none()
        );
        assert!(rewrite_message(b"{nope", &other, &ctx(&config, &all)).is_err());
    }

    #[test]
    fn all_eager_means_no_search_tool() {
        let config = Config::parse(r#"{"default_disclosure_mode":"EAGER"}"#).unwrap();
        let all = |_: &str| true;
        let targets = [ListTarget {
            id: serde_json::json!(2),
            first_page: true,
        }];
        let out = rewrite_message(LIST.as_bytes(), &targets, &ctx(&config, &all))
            .unwrap()
            .unwrap();
        let v: Value = serde_json::from_slice(out.body.as_ref().unwrap()).unwrap();
        let names: Vec<&str> = v["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["get_a", "do_b", "get_c"]);
    }

    #[test]
    fn batch_responses() {
        let config = Config::default();
        let all = |_: &str| true;
        let body = format!(r#"[{{"jsonrpc":"2.0","id":1,"result":{{}}}},{LIST}]"#);
        let targets = [ListTarget {
            id: serde_json::json!(2),
            first_page: true,
        }];
        let out = rewrite_message(body.as_bytes(), &targets, &ctx(&config, &all))
            .unwrap()
            .unwrap();
        let v: Value = serde_json::from_slice(out.body.as_ref().unwrap()).unwrap();
        assert_eq!(
            v[0],
            serde_json::json!({"jsonrpc":"2.0","id":1,"result":{}})
        );
        assert_eq!(v[1]["result"]["tools"][0]["name"], "tool_search");
    }

    #[test]
    fn sse_rewriter_passes_other_events_and_gives_up_when_too_large() {
        let mut r = SseRewriter::new(1024);
        let mut calls = 0;
        let mut rw = |data: &[u8]| -> Result<Option<Vec<u8>>, RewriteError> {
            calls += 1;
            Ok((data == b"target").then(|| b"new".to_vec()))
        };
        let mut out = r.push(
            b": ping\n\ndata: other\n\nevent: message\ndata: tar",
            false,
            &mut rw,
        );
        out.extend(r.push(b"get\n\n", true, &mut rw));
        assert_eq!(
            out,
            b": ping\n\ndata: other\n\nevent: message\ndata: new\n\n".to_vec()
        );
        let mut big = SseRewriter::new(8);
        let mut never =
            |_: &[u8]| -> Result<Option<Vec<u8>>, RewriteError> { Ok(Some(b"x".to_vec())) };
        let a = big.push(b"data: 0123456789", false, &mut never);
        let b = big.push(b"\n\n", true, &mut never);
        assert_eq!([a, b].concat(), b"data: 0123456789\n\n".to_vec());
        assert_eq!(big.gave_up(), Some(&SseGiveUp::TooLarge));
    }
}
