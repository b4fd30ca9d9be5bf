//! What a caller the policy restricts may receive, whatever the filter believes it asked.
//!
//! An answer can reach a client on a stream the filter did not pair with its request: under an
//! id the filter could not read, replayed on a resumed GET stream (Streamable HTTP 2025-11-25,
//! "Resumability and Redelivery"), or routed to another request by an SDK that keys answers by
//! `str(id)`. So every JSON-RPC message on every MCP response stream is read here, and every
//! result shaped like a list of entries is filtered, whatever its id.
//!
//! A result is a list when a top-level member of `result` is named `tools`, `prompts`,
//! `resources` or `resourceTemplates` (the members of `ListToolsResult`, `ListPromptsResult`,
//! `ListResourcesResult`, `ListResourceTemplatesResult`, spec 2025-11-25 "Schema"): that is
//! what a client reading the message as a list answer acts on. A tool's own result carries its
//! payload in `content` and `structuredContent`, which are never inspected; a tool result that
//! also has such a top-level member is filtered like a list, since a client that conflated its
//! id with a list request's would read it as one.
//!
//! What cannot be read in exactly one way (not UTF-8 JSON, a member named twice where clients
//! would take the last and the filter the first, a list member that is not an array) is
//! withheld, never passed on.

use crate::config::entries::Entry;
use crate::mcp::json::RawObject;
use serde_json::value::RawValue;
use std::fmt;

/// Why a message was withheld.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Withheld {
    NotUtf8,
    NotJson(String),
    NotAList(&'static str),
}

impl fmt::Display for Withheld {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Withheld::NotUtf8 => write!(f, "the message is not UTF-8"),
            Withheld::NotJson(e) => write!(f, "the message cannot be read in exactly one way: {e}"),
            Withheld::NotAList(member) => {
                write!(f, "the result's {member:?} member is not a list of entries")
            }
        }
    }
}

impl std::error::Error for Withheld {}

/// What guarding a body did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Guarded {
    /// The body to send instead; `None`: it goes on as it came.
    pub body: Option<Vec<u8>>,
    /// List results found (and filtered) in it.
    pub lists: usize,
    /// Entries removed from them.
    pub removed: usize,
}

/// Reads a response body (one JSON-RPC message or a batch) and filters every list result in it
/// with `allowed`: an entry kind and its key (`Entry::key_field`), or `None` for an entry
/// whose key cannot be read in exactly one way. An empty body (or only white space) carries no
/// message.
pub fn guard(
    body: &[u8],
    allowed: &dyn Fn(Entry, Option<&str>) -> bool,
) -> Result<Guarded, Withheld> {
    let text = std::str::from_utf8(body).map_err(|_| Withheld::NotUtf8)?;
    let trimmed = text.trim_start();
    let mut guarded = Guarded::default();
    if trimmed.is_empty() {
        return Ok(guarded);
    }
    let not_json = |e: serde_json::Error| Withheld::NotJson(e.to_string());
    if trimmed.starts_with('[') {
        let items: Vec<&RawValue> = serde_json::from_str(text).map_err(not_json)?;
        let mut changed = false;
        let mut out = Vec::with_capacity(items.len());
        for item in &items {
            match guard_message(item.get(), allowed, &mut guarded)? {
                Some(new) => {
                    changed = true;
                    out.push(new);
                }
                None => out.push(item.get().to_string()),
            }
        }
        if changed {
            guarded.body = Some(format!("[{}]", out.join(",")).into_bytes());
        }
        return Ok(guarded);
    }
    // Checks that the body is one JSON value, whatever it is.
    let _: &RawValue = serde_json::from_str(text).map_err(not_json)?;
    guarded.body = guard_message(text, allowed, &mut guarded)?.map(String::into_bytes);
    Ok(guarded)
}

/// One message: `Some(new text)` when it holds a list result, `None` when it goes on as it is.
fn guard_message(
    text: &str,
    allowed: &dyn Fn(Entry, Option<&str>) -> bool,
    guarded: &mut Guarded,
) -> Result<Option<String>, Withheld> {
    if !text.trim_start().starts_with('{') {
        // Not a JSON-RPC message: no client reads it as an answer.
        return Ok(None);
    }
    let not_json = |e: serde_json::Error| Withheld::NotJson(e.to_string());
    let mut message = RawObject::parse_unique(text).map_err(not_json)?;
    let Some(result) = message.borrowed("result") else {
        return Ok(None);
    };
    if !result.get().trim_start().starts_with('{') {
        return Ok(None);
    }
    let mut result = RawObject::parse_unique(result.get()).map_err(not_json)?;
    let mut lists = 0;
    for entry in Entry::ALL {
        let member = entry.list_member();
        let Some(items) = result.borrowed(member) else {
            continue;
        };
        lists += 1;
        let items: Vec<&RawValue> =
            serde_json::from_str(items.get()).map_err(|_| Withheld::NotAList(member))?;
        let kept: Vec<&str> = items
            .iter()
            .filter(|item| allowed(entry, key_of(entry, item).as_deref()))
            .map(|item| item.get())
            .collect();
        guarded.removed += items.len() - kept.len();
        let list = RawValue::from_string(format!("[{}]", kept.join(","))).map_err(not_json)?;
        result.set(member, list);
    }
    if lists == 0 {
        return Ok(None);
    }
    guarded.lists += lists;
    // Shaped by the caller's authorization: no cache may serve it to another (spec 2026-07-28
    // "Caching").
    result.put("cacheScope", raw_json("\"private\"")?);
    if result.get("resultType").is_some() && result.get("ttlMs").is_none() {
        result.put("ttlMs", raw_json("0")?);
    }
    let mut result_text = String::with_capacity(result.encoded_len());
    result.write(&mut result_text);
    message.set(
        "result",
        RawValue::from_string(result_text).map_err(not_json)?,
    );
    let mut out = String::with_capacity(message.encoded_len());
    message.write(&mut out);
    Ok(Some(out))
}

fn raw_json(text: &str) -> Result<Box<RawValue>, Withheld> {
    RawValue::from_string(text.to_string()).map_err(|e| Withheld::NotJson(e.to_string()))
}

/// The key an entry is authorized by, read in exactly one way; `None`: it cannot be (a caller
/// the policy restricts in that kind never sees an entry no rule could have allowed).
fn key_of(entry: Entry, item: &RawValue) -> Option<String> {
    let object = RawObject::parse_unique(item.get()).ok()?;
    serde_json::from_str::<String>(object.get(entry.key_field())?.get()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn github_only(entry: Entry, key: Option<&str>) -> bool {
        let Some(key) = key else {
            return false;
        };
        match entry {
            Entry::Tool => key.starts_with("github_"),
            Entry::Prompt => key == "ok_prompt",
            Entry::Resource | Entry::ResourceTemplate => key.starts_with("pub://"),
        }
    }

    fn run(body: &str) -> Result<Guarded, Withheld> {
        guard(body.as_bytes(), &github_only)
    }

    fn out(body: &str) -> Value {
        let g = run(body).unwrap();
        let text = String::from_utf8(g.body.unwrap_or_else(|| body.as_bytes().to_vec())).unwrap();
        // serde_json refuses the lone surrogate escape that Python's and JavaScript's readers take.
        serde_json::from_str(&text.replace("\\ud800", "\\u0041")).unwrap()
    }

    #[test]
    fn every_list_member_is_filtered_whatever_the_id() {
        for id in [
            "1",
            "\"1\"",
            "null",
            "99999999999999999999999999999",
            "\"\\ud800\"",
        ] {
            let body = format!(
                r#"{{"jsonrpc":"2.0","id":{id},"result":{{"tools":[{{"name":"github_a"}},{{"name":"stripe_b"}},{{"nam\u0065":"x"}},{{"name":7}},"str"],"nextCursor":"c"}}}}"#
            );
            let v = out(&body);
            assert_eq!(v["result"]["tools"], json!([{"name": "github_a"}]), "{id}");
            assert_eq!(v["result"]["cacheScope"], "private");
            assert_eq!(v["result"]["nextCursor"], "c");
        }
        let v = out(
            r#"{"id":1,"result":{"prompts":[{"name":"ok_prompt"},{"name":"secret"}],"resources":[{"uri":"pub://a"},{"uri":"hr://salaries"}],"resourceTemplates":[{"uriTemplate":"hr://{x}"}],"resultType":"complete"}}"#,
        );
        assert_eq!(v["result"]["prompts"], json!([{"name": "ok_prompt"}]));
        assert_eq!(v["result"]["resources"], json!([{"uri": "pub://a"}]));
        assert_eq!(v["result"]["resourceTemplates"], json!([]));
        assert_eq!(v["result"]["ttlMs"], 0);
    }

    #[test]
    fn batches_and_other_messages() {
        let v = out(
            r#"[{"id":1,"result":{"content":[{"type":"text","text":"{\"tools\":[{\"name\":\"stripe_b\"}]}"}]}},{"id":2,"result":{"tools":[{"name":"stripe_b"}]}},{"method":"notifications/progress","params":{"tools":[]}},7]"#,
        );
        assert_eq!(v[0]["result"]["content"][0]["type"], "text");
        assert!(v[0]["result"].get("cacheScope").is_none(), "a tool result");
        assert_eq!(v[1]["result"]["tools"], json!([]));
        assert_eq!(v[3], 7);
        let untouched = r#"{"jsonrpc":"2.0","id":1,"result":{"content":[],"structuredContent":{"tools":[{"name":"stripe_b"}]}}}"#;
        assert_eq!(run(untouched).unwrap(), Guarded::default());
        assert_eq!(run("  ").unwrap(), Guarded::default());
        assert_eq!(
            run(r#"{"id":1,"error":{"code":1,"message":"x"}}"#).unwrap(),
            Guarded::default()
        );
    }

    #[test]
    fn what_cannot_be_read_in_one_way_is_withheld() {
        for body in [
            r#"{"id":1,"result":{"tools":[{"name":"github_a"}],"tools":[{"name":"stripe_b"}]}}"#,
            r#"{"id":1,"result":{"tools":[],"t\u006fols":[{"name":"stripe_b"}]}}"#,
            r#"{"id":1,"result":{"tools":[]},"result":{"tools":[{"name":"stripe_b"}]}}"#,
            r#"{"id":1,"result":{"tools":{"name":"stripe_b"}}}"#,
            r#"{"id":1,"result":{"prompts":null}}"#,
            r#"{"id":1,"result":{"tools":[]}"#,
            r#"{"id":1,"result":{"tools":[]}} {"id":2}"#,
            r#"[{"id":1,"result":{"tools":[],"tools":[]}}]"#,
        ] {
            assert!(run(body).is_err(), "{body}");
        }
        assert_eq!(
            guard(b"{\"id\":\xff}", &github_only),
            Err(Withheld::NotUtf8)
        );
        // An entry whose key is named twice is no entry a rule could allow.
        let v = out(r#"{"id":1,"result":{"tools":[{"name":"github_a","name":"stripe_b"}]}}"#);
        assert_eq!(v["result"]["tools"], json!([]));
    }
}
