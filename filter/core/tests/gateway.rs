//! Behind Envoy's `mcp_router` (servers prefixed `<server>__`), natively: servers as groups,
//! the search tool naming them, and a policy by server on every path a call can take.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod support;

use mcp_tool_search_core::{Caller, RequestHead};
use serde_json::{json, Value};
use support::*;

const LIST: &[u8] = br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;

/// The list `mcp_router` answers for servers alpha, beta and gamma.
fn aggregated() -> Vec<u8> {
    let tools = [
        ("alpha__github_get_issue", "Get a GitHub issue by number"),
        ("alpha__stripe_refund_charge", "Refund a Stripe charge"),
        ("beta__square_refund_payment", "Refund a Square payment"),
        ("beta__github_close_issue", "Close a GitHub issue"),
        (
            "gamma__slack_post_message",
            "Post a message to a Slack channel",
        ),
    ];
    let defs: Vec<Value> = tools
        .iter()
        .map(|(n, d)| json!({"name": n, "description": d, "inputSchema": {"type": "object"}}))
        .collect();
    serde_json::to_vec(&json!({"jsonrpc":"2.0","id":1,"result":{"tools": defs}})).unwrap()
}

const CONFIG: &str = r#"{"group_separator":"__","search":{"result_format":"summary"},
  "authorization":{"identity":{"source":"header","header":"x-roles"},
    "rules":[{"claim":"roles","values":["admin"]},
             {"claim":"roles","values":["pay"],"servers":["alpha"]},
             {"claim":"roles","values":["ops"],"servers":["*"],"tools":["*_github_*"]}],
    "default":"deny"}}"#;

fn as_role(role: &str) -> RequestHead {
    RequestHead {
        caller: Caller::from_header("roles", role),
        ..post("/mcp")
    }
}

fn env() -> TestEnv {
    let mut env = TestEnv::new(CONFIG);
    let body = aggregated();
    exchange(
        &mut env,
        as_role("admin"),
        LIST,
        ("200", "application/json", &[&body]),
    );
    env
}

fn listed(env: &mut TestEnv, role: &str) -> Vec<Value> {
    let body = aggregated();
    let out = exchange(
        env,
        as_role(role),
        LIST,
        ("200", "application/json", &[&body]),
    );
    let v: Value = serde_json::from_slice(out.body()).unwrap();
    v["result"]["tools"].as_array().unwrap().clone()
}

fn names(tools: &[Value]) -> Vec<String> {
    tools
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect()
}

fn call(env: &mut TestEnv, role: &str, body: &[u8]) -> Outcome {
    exchange(
        env,
        as_role(role),
        body,
        (
            "200",
            "application/json",
            &[br#"{"jsonrpc":"2.0","id":7,"result":{"content":[]}}"#],
        ),
    )
}

fn call_named(env: &mut TestEnv, role: &str, tool: &str, args: Value) -> Outcome {
    let body = json!({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":tool,"arguments":args}});
    call(env, role, &serde_json::to_vec(&body).unwrap())
}

fn refused(out: &Outcome) -> String {
    let Outcome::Local {
        status: 200, body, ..
    } = out
    else {
        panic!("{out:?}")
    };
    let v: Value = serde_json::from_slice(body).unwrap();
    assert_eq!(v["error"]["code"], -32602, "{v}");
    v["error"]["message"].as_str().unwrap().to_string()
}

#[test]
fn servers_are_groups_and_the_search_tool_names_them() {
    let mut env = env();
    let tools = listed(&mut env, "admin");
    assert_eq!(
        names(&tools),
        [
            "tool_search",
            "list_tool_groups",
            "describe_tool",
            "call_tool"
        ]
    );
    let description = tools[0]["description"].as_str().unwrap();
    assert!(
        description.contains("The tools fall into 3 groups: alpha, beta, gamma;"),
        "{description}"
    );
    let out = call_named(&mut env, "admin", "list_tool_groups", json!({}));
    let (reply, _) = local_result(&out);
    let groups: Value =
        serde_json::from_str(reply["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(
        groups,
        json!([{"group":"alpha","tools":2},{"group":"beta","tools":2},{"group":"gamma","tools":1}])
    );
    let out = call_named(
        &mut env,
        "admin",
        "tool_search",
        json!({"query": "refund", "group": "beta"}),
    );
    let (reply, _) = local_result(&out);
    let text = reply["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("beta__square_refund_payment"), "{text}");
    assert!(!text.contains("alpha__"), "{text}");
}

#[test]
fn a_servers_rule_decides_lists_searches_and_every_call() {
    let mut env = env();
    // pay may use alpha only: one group left, so no list_tool_groups, and only alpha's names.
    let tools = listed(&mut env, "pay");
    assert_eq!(names(&tools), ["tool_search", "describe_tool", "call_tool"]);
    let description = tools[0]["description"].as_str().unwrap();
    assert!(description.contains("alpha__stripe_refund_charge"));
    assert!(!description.contains("beta__") && !description.contains("gamma__"));
    let out = call_named(&mut env, "pay", "tool_search", json!({"query": "refund"}));
    let (reply, _) = local_result(&out);
    let text = reply["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("alpha__stripe_refund_charge"), "{text}");
    assert!(!text.contains("beta__square_refund_payment"), "{text}");

    for name in [
        "beta__square_refund_payment",
        "beta___square_refund_payment",
        "BETA__square_refund_payment",
        "Alpha__stripe_refund_charge",
        "square_refund_payment",
        "__alpha__x",
    ] {
        let out = call_named(&mut env, "pay", name, json!({}));
        assert_eq!(refused(&out), format!("Unknown tool: {name}"));
        assert_eq!(sent_upstream(), None, "{name}");
    }
    // Escapes are read as any JSON reader (and mcp_router) reads them.
    let out = call(
        &mut env,
        "pay",
        br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"b\u0065ta__square_refund_payment","arguments":{}}}"#,
    );
    assert_eq!(refused(&out), "Unknown tool: beta__square_refund_payment");
    assert_eq!(sent_upstream(), None);
    // call_tool names the same tools and is held to the same rule.
    let out = call_named(
        &mut env,
        "pay",
        "call_tool",
        json!({"name": "beta__square_refund_payment", "arguments": {}}),
    );
    let (reply, _) = local_result(&out);
    assert_eq!(reply["result"]["isError"], true, "{reply}");
    assert_eq!(sent_upstream(), None);
    // alpha's tools go upstream, including a name the router sends to alpha whole.
    for name in [
        "alpha__stripe_refund_charge",
        "alpha__beta__square_refund_payment",
    ] {
        let out = call_named(&mut env, "pay", name, json!({}));
        assert!(matches!(out, Outcome::Upstream { .. }), "{name}: {out:?}");
    }

    // servers and tools together: ops may use GitHub tools of any server, nothing else.
    let tools = listed(&mut env, "ops");
    let description = tools[0]["description"].as_str().unwrap();
    assert!(description.contains("alpha__github_get_issue"));
    assert!(description.contains("beta__github_close_issue"));
    assert!(!description.contains("refund"), "{description}");
    let out = call_named(&mut env, "ops", "beta__github_close_issue", json!({}));
    assert!(matches!(out, Outcome::Upstream { .. }));
    let out = call_named(&mut env, "ops", "gamma__slack_post_message", json!({}));
    assert_eq!(refused(&out), "Unknown tool: gamma__slack_post_message");
}
