use super::*;
use serde_json::Value;

fn target(id: Value, first_page: bool) -> ListTarget {
    let raw = RawValue::from_string(id.to_string()).unwrap();
    ListTarget::new(&raw, first_page, Entry::Tool).unwrap()
}

fn ctx<'a>(config: &'a Config, allowed: &'a dyn Fn(&str) -> bool) -> ListContext<'a> {
    ListContext {
        config,
        namespace: "ns",
        known: Box::leak(Box::default()),
        allowed,
        entry_allowed: &|_, _| true,
        authorizing: false,
        known_complete: false,
        audience: None,
        memo: None,
        structured: false,
    }
}

#[test]
fn a_remembered_result_is_replayed_for_the_same_bytes_and_caller_only() {
    let config = Config::parse(r#"{"eager_patterns":["get_*"]}"#).unwrap();
    let all = |_: &str| true;
    let memo = RefCell::new(None);
    let mut c = ctx(&config, &all);
    c.memo = Some(&memo);
    let first_page = |id: i64| [target(serde_json::json!(id), true)];
    let mut first = rewrite_message(LIST.as_bytes(), &first_page(2), &c)
        .unwrap()
        .unwrap();
    assert!(!first.replayed && first.learned.len() == 3);
    *memo.borrow_mut() = first.memo.take();
    // The same result under another id: replayed, nothing to learn, same tools.
    let again = LIST.replace(r#""id":2"#, r#""id":"x-9""#);
    let second = rewrite_message(again.as_bytes(), &first_page_str("x-9"), &c)
        .unwrap()
        .unwrap();
    assert!(second.replayed && second.learned.is_empty());
    assert_eq!((second.hidden, second.page), (first.hidden, first.page));
    assert_eq!(
        String::from_utf8(second.body.unwrap()).unwrap(),
        String::from_utf8(first.body.unwrap())
            .unwrap()
            .replace(r#""id":2"#, r#""id":"x-9""#)
    );
    // One changed byte, another caller, a later page or a batch: computed afresh.
    let changed = LIST.replace(r#""B""#, r#""C""#);
    let fresh = |text: &str, targets: &[ListTarget], c: &ListContext| {
        !rewrite_message(text.as_bytes(), targets, c)
            .unwrap()
            .unwrap()
            .replayed
    };
    assert!(fresh(&changed, &first_page(2), &c));
    let mut narrowed = ctx(&config, &all);
    narrowed.memo = Some(&memo);
    narrowed.audience = Some(vec![0]);
    assert!(fresh(LIST, &first_page(2), &narrowed));
    // A client whose protocol has `outputSchema` gets the search tool that declares one.
    let mut structured = ctx(&config, &all);
    structured.memo = Some(&memo);
    structured.structured = true;
    assert!(fresh(LIST, &first_page(2), &structured));
    let later = [target(serde_json::json!(2), false)];
    assert!(fresh(LIST, &later, &c));
    assert!(fresh(&format!("[{LIST}]"), &first_page(2), &c));
    assert!(!fresh(LIST, &first_page(2), &c));
    // The remembered bytes where the result stood, but under another member: not the
    // remembered list (its own result is read), nor is an error carrying them.
    let (head, result) = LIST.split_once(r#""result":"#).unwrap();
    let result = result.strip_suffix('}').unwrap();
    let moved = format!(r#"{head}"result":{{"tools":[]}},"x":{result}}}"#);
    let moved = rewrite_message(moved.as_bytes(), &first_page(2), &c)
        .unwrap()
        .unwrap();
    assert!(!moved.replayed && moved.learned.is_empty());
    let error = format!(r#"{head}"error":{result}}}"#);
    assert!(rewrite_message(error.as_bytes(), &first_page(2), &c)
        .unwrap()
        .is_none());
}

/// What a gateway joining its servers' lists as they arrive sends: the same tools in another
/// order. A rewrite that lists by name replays for it; one that depended on the order (a name
/// repeated: the first is the tool; an entry without a name kept where it stood) does not.
#[test]
fn the_same_tools_in_another_order_replay_the_same_answer() {
    let config = Config::parse(r#"{"eager_patterns":["get_*"]}"#).unwrap();
    let all = |_: &str| true;
    let (a, b, c) = (
        r#"{"name":"get_a","description":"A \"x\"", "inputSchema":{"type":"object"}}"#,
        r#"{"name":"do_b","description":"B"}"#,
        r#"{"name":"get_c","x":[1, 2]}"#,
    );
    let list = |id: &str, tools: &[&str]| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"result":{{"tools":[{}],"nextCursor":"abc"}}}}"#,
            tools.join(",")
        )
    };
    let rewrite = |text: &str, id: &str, memo: &RefCell<Option<ListMemo>>| {
        let mut c = ctx(&config, &all);
        c.memo = Some(memo);
        let raw = RawValue::from_string(id.to_string()).unwrap();
        let targets = [ListTarget::new(&raw, true, Entry::Tool).unwrap()];
        let mut out = rewrite_message(text.as_bytes(), &targets, &c)
            .unwrap()
            .unwrap();
        let body = out.body.take().map(|b| String::from_utf8(b).unwrap());
        (out, body)
    };
    let memo = RefCell::new(None);
    let (mut first, first_body) = rewrite(&list("2", &[a, b, c]), "2", &memo);
    assert!(!first.replayed);
    *memo.borrow_mut() = first.memo.take();
    let first_body = first_body.unwrap();
    // The memo remembers whether the last replay came in another order: then the next list is
    // looked at in any order first (a gateway's), else as bytes first (one server's).
    for (text, id) in [
        (list("3", &[c, b, a]), "3"),
        (list("4", &[b, a, c]), "4"),
        // Another id's length: the span is counted from the end of the message.
        (list("\"long-id\"", &[c, a, b]), "\"long-id\""),
        // Looked at in any order first, the first order still replays.
        (list("5", &[a, b, c]), "5"),
    ] {
        let (again, body) = rewrite(&text, id, &memo);
        assert!(again.replayed && again.learned.is_empty(), "{text}");
        assert_eq!(
            body.unwrap(),
            first_body.replacen(r#""id":2"#, &format!(r#""id":{id}"#), 1)
        );
        assert!(memo.borrow().as_ref().unwrap().reordered.get(), "{text}");
    }
    // The id after the result: the span is found by reading the message, where the result's
    // fingerprint is taken anyway, so the bytes are compared first and the memo learns how
    // the list matched.
    let id_last = |tools: &[&str]| {
        format!(
            r#"{{"jsonrpc":"2.0","result":{{"tools":[{}],"nextCursor":"abc"}},"id":7}}"#,
            tools.join(",")
        )
    };
    let expected: serde_json::Value =
        serde_json::from_str(&first_body.replacen(r#""id":2"#, r#""id":7"#, 1)).unwrap();
    for (tools, reordered) in [([a, b, c], false), ([b, c, a], true)] {
        let (again, body) = rewrite(&id_last(&tools), "7", &memo);
        assert!(again.replayed && again.learned.is_empty());
        let body: serde_json::Value = serde_json::from_str(&body.unwrap()).unwrap();
        assert_eq!(body, expected);
        assert_eq!(memo.borrow().as_ref().unwrap().reordered.get(), reordered);
    }
    // A byte changed, a tool lost or repeated: read afresh.
    let changed = b.replace('B', "C");
    for text in [
        list("3", &[c, &changed, a]),
        list("3", &[c, a]),
        list("3", &[c, b, a, b]),
    ] {
        assert!(!rewrite(&text, "3", &memo).0.replayed, "{text}");
    }

    // Two definitions of one name: the first is the tool, so the order decides.
    let other_a = r#"{"name":"get_a","description":"other"}"#;
    let memo = RefCell::new(None);
    let (mut first, _) = rewrite(&list("2", &[a, b, other_a]), "2", &memo);
    *memo.borrow_mut() = first.memo.take();
    let (again, body) = rewrite(&list("3", &[other_a, b, a]), "3", &memo);
    assert!(!again.replayed);
    assert!(body.unwrap().contains(other_a));
    // An entry without a name stays listed, after the named ones, as it came.
    let unnamed = r#"{"description":"no name"}"#;
    let memo = RefCell::new(None);
    let (mut first, body) = rewrite(&list("2", &[unnamed, a, b]), "2", &memo);
    assert!(body
        .unwrap()
        .ends_with(&format!(r#"{a},{unnamed}],"nextCursor":"abc"}}}}"#)));
    *memo.borrow_mut() = first.memo.take();
    assert!(!rewrite(&list("3", &[a, unnamed, b]), "3", &memo).0.replayed);
}

/// List mode with nobody to filter passes the list on as it came: a list of the same tools in
/// another order is recognised, and passed on as it came too.
#[test]
fn an_untouched_list_in_another_order_passes_as_it_came() {
    let config = Config::parse(r#"{"mode":"list"}"#).unwrap();
    let all = |_: &str| true;
    let memo = RefCell::new(None);
    let mut c = ctx(&config, &all);
    c.memo = Some(&memo);
    let targets = [target(serde_json::json!(2), true)];
    let mut first = rewrite_message(LIST.as_bytes(), &targets, &c)
        .unwrap()
        .unwrap();
    assert!(first.body.is_none());
    *memo.borrow_mut() = first.memo.take();
    let swapped = LIST.replace(
        r#"{"name":"do_b","description":"B"},{"name":"get_c","x":[1, 2]}"#,
        r#"{"name":"get_c","x":[1, 2]},{"name":"do_b","description":"B"}"#,
    );
    assert_ne!(swapped, LIST);
    let again = rewrite_message(swapped.as_bytes(), &targets, &c)
        .unwrap()
        .unwrap();
    assert!(again.replayed && again.body.is_none());
}

fn first_page_str(id: &str) -> [ListTarget; 1] {
    [target(serde_json::json!(id), true)]
}

const LIST: &str = r#"{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"get_a","description":"A", "inputSchema":{"type":"object"}},{"name":"do_b","description":"B"},{"name":"get_c","x":[1, 2]}],"nextCursor":"abc","_meta":{"k":1}}}"#;

#[test]
fn keeps_eager_hides_progressive_adds_search_tool_first() {
    let config = Config::parse(r#"{"eager_patterns":["get_*"]}"#).unwrap();
    let all = |_: &str| true;
    let targets = [target(serde_json::json!(2), true)];
    let out = rewrite_message(LIST.as_bytes(), &targets, &ctx(&config, &all))
        .unwrap()
        .unwrap();
    let text = String::from_utf8(out.body.unwrap()).unwrap();
    assert!(
        text.starts_with(r#"{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"tool_search","#)
    );
    assert!(text.ends_with(r#"{"name":"get_a","description":"A", "inputSchema":{"type":"object"}},{"name":"get_c","x":[1, 2]}],"nextCursor":"abc","_meta":{"k":1}}}"#), "{text}");
    assert_eq!(out.hidden, 1);
    assert_eq!(out.learned.len(), 3);
    assert!(!out.page.last, "has nextCursor");
}

#[test]
fn later_pages_get_no_search_tool_and_other_ids_are_untouched() {
    let config = Config::default();
    let all = |_: &str| true;
    let later = [target(serde_json::json!(2), false)];
    let out = rewrite_message(LIST.as_bytes(), &later, &ctx(&config, &all))
        .unwrap()
        .unwrap();
    let v: Value = serde_json::from_slice(out.body.as_ref().unwrap()).unwrap();
    assert_eq!(v["result"]["tools"], serde_json::json!([]));
    // `"2"` would be the same request as `2` to the Python SDK (`jsonrpc::IdKey`).
    let other = [target(serde_json::json!("3"), true)];
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
    let targets = [target(serde_json::json!(2), true)];
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
    // Listed by name, whatever order the upstream sent them in.
    assert_eq!(names, ["do_b", "get_a", "get_c"]);
}

#[test]
fn batch_responses() {
    let config = Config::default();
    let all = |_: &str| true;
    let body = format!(r#"[{{"jsonrpc":"2.0","id":1,"result":{{}}}},{LIST}]"#);
    let targets = [target(serde_json::json!(2), true)];
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
    let mut never = |_: &[u8]| -> Result<Option<Vec<u8>>, RewriteError> { Ok(Some(b"x".to_vec())) };
    let a = big.push(b"data: 0123456789", false, &mut never);
    let b = big.push(b"\n\n", true, &mut never);
    assert_eq!([a, b].concat(), b"data: 0123456789\n\n".to_vec());
    assert_eq!(big.gave_up(), Some(&SseGiveUp::TooLarge));
}
