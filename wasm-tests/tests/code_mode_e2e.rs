//! Code mode in Envoy: `mcp_tool_search_code.wasm` in front of the rmcp catalog server and the
//! Python SDK's FastMCP, JSON and SSE, both hold modes. An agent's script searches, describes and
//! calls three tools and returns one answer; a call the policy forbids throws inside the script
//! and never reaches the server; an endless loop, a memory bomb, too many calls and a call that
//! hangs each end with their limit's error, and the workers serve the next script.
//!
//! Needs Envoy, `make wasm` (both modules) and, for FastMCP, `mcp` 1.x at `MCP_PYTHON`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod support;

use mcp_tool_search_wasm_tests::harness::{
    self, CatalogOptions, Envoy, EnvoyOptions, FilterOptions, TestDir,
};
use mcp_tool_search_wasm_tests::mcp;
use mcp_tool_search_wasm_tests::python::{FastMcpOptions, FastMcpServer};
use serde_json::{json, Value};
use std::time::Instant;
use support::*;

const ROLE: (&str, &str) = ("x-user-roles", "support");
/// `structuredContent` exists from protocol 2025-06-18 on.
const PROTOCOL: (&str, &str) = ("mcp-protocol-version", "2025-06-18");

fn config(hold: bool) -> Value {
    json!({
        "mode": "code",
        "hold_request_headers": hold,
        "code": {"limits": {"calls": 4, "call_time_ms": 1500}},
        "authorization": {
            "identity": {"source": "header", "header": "x-user-roles"},
            "rules": [{"claim": "roles", "values": ["support"],
                       "tools": ["github_*", "slack_*", "gcal_*", "slow_*"]}],
            "default": "deny"
        }
    })
}

/// The code-mode module, or `None` (a skip; under CI a failure) when it is not built.
fn code_module() -> Option<std::path::PathBuf> {
    let wasm = harness::code_wasm();
    if wasm.is_err() {
        harness::skip(
            "code_mode_e2e",
            "the code-mode module is not built: run `make wasm`",
        )
        .unwrap();
    }
    wasm.ok()
}

/// Runs `script` through `run_script` at `url`: the tool result, and how long it took.
async fn run(url: &str, script: &str) -> (Value, f64) {
    let body = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
        "params": {"name": "run_script", "arguments": {"script": script}}});
    let started = Instant::now();
    let resp = rpc(url, &[ROLE, PROTOCOL], &body).await;
    let ms = started.elapsed().as_secs_f64() * 1e3;
    assert_eq!(resp.status, 200, "{}", resp.text());
    (result_of(&resp, 9), ms)
}

fn answer(result: &Value) -> Value {
    assert_eq!(result["isError"], false, "{result:#}");
    result["structuredContent"]["result"].clone()
}

const CATALOG_SCRIPT: &str = r#"
const find = (query) => catalog.tools.search({query, limit: 1})[0];
const issue = find("get a github issue by its number");
const message = find("post a message to a slack channel");
const events = find("list google calendar events");
const [def] = catalog.tools.describe([events.name]);
console.log(def.inputSchema.required.join(","));
const [a, b] = await Promise.all([
  tools.call(issue.name, {owner: "o", repo: "r", issue_number: 7}),
  tools.call(message.name, {channel: "C1", text: "hi"}),
]);
const c = await tools[events.name]({calendar_id: "primary"});
const read = (r) => JSON.parse(r.content[0].text);
return [read(a), read(b), read(c)].map((r) => [r.tool, r.ok]);
"#;

/// What every script against the catalog server must come to, whatever the wire or hold mode.
async fn catalog_server_flow(stack: &Stack) {
    let url = stack.url();
    // The list: run_script, nothing else (every tool is progressive), no tool_search.
    let resp = rpc(&url, &[ROLE, PROTOCOL], &list_request(1, None)).await;
    let tools = listed(&resp, 1);
    assert_eq!(names(&tools), ["run_script"], "{}", stack.filter_log());

    let (result, _) = run(&url, CATALOG_SCRIPT).await;
    assert_eq!(
        answer(&result),
        json!([
            ["github_get_issue", true],
            ["slack_post_message", true],
            ["gcal_list_events", true]
        ]),
        "{}",
        stack.filter_log()
    );
    assert_eq!(result["structuredContent"]["log"], "calendar_id\n");
    let calls: Vec<String> = stack
        .recorded()
        .into_iter()
        .filter(|l| l.starts_with("tools/call"))
        .collect();
    assert_eq!(calls.len(), 3, "{calls:?}");

    // A forbidden call throws inside the script and never reaches the server.
    let (result, _) = run(
        &url,
        r#"try { await tools.stripe_refund_charge({charge_id: "ch_1"}); return "called"; }
           catch (e) { return e.message; }"#,
    )
    .await;
    assert_eq!(answer(&result), "Unknown tool: stripe_refund_charge");
    stack.assert_never_called(&["stripe_refund_charge"]);

    // Each limit ends its script; both workers serve the next one.
    let limits = [
        ("for (;;) {}", "time_ms"),
        ("const a = []; for (;;) a.push('x'.repeat(1 << 16));", "memory_bytes"),
        (
            "for (let i = 0; i < 5; i++) await tools.github_get_issue({owner: 'o', repo: 'r', issue_number: i});",
            "calls",
        ),
        (
            "try { await tools.slow_progress({steps: 1, delay_ms: 60000}); } catch (e) { return 'caught: ' + e.message; }",
            "call_time_ms",
        ),
    ];
    for (script, limit) in limits {
        let (result, ms) = run(&url, script).await;
        assert_eq!(
            result["isError"], true,
            "{script} after {ms} ms: {result:#}"
        );
        assert_eq!(
            result["structuredContent"]["limit"],
            limit,
            "{script}: {result:#}\n{}",
            stack.filter_log()
        );
        let most = if limit == "call_time_ms" {
            4_000.0
        } else {
            2_000.0
        };
        assert!(ms < most, "{script}: ended after {ms} ms");
        for _ in 0..4 {
            let (result, _) = run(&url, "return 1 + 1").await;
            assert_eq!(answer(&result), 2, "after {script}\n{}", stack.filter_log());
        }
    }
    let stats = stack.envoy.stats("mcp_tool_search.script").unwrap();
    let stat = |name: &str| {
        stats
            .iter()
            .filter(|(k, _)| k.ends_with(name))
            .map(|(_, v)| *v)
            .sum::<u64>()
    };
    assert_eq!(stat("scripts.limit"), 4, "{stats:?}");
    assert!(stat("scripts.ok") >= 18, "{stats:?}");
    assert_eq!(stat("script_calls"), 3 + 4 + 1, "{stats:?}");
    let log = stack.envoy.log();
    assert!(
        !log.lines()
            .any(|l| l.contains("[wasm]") && l.contains("failed")),
        "a VM failed:\n{log}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scripts_against_the_rmcp_catalog_server_json_and_sse_both_hold_modes() {
    if code_module().is_none() {
        return;
    }
    for (hold, json) in [(false, false), (true, true), (false, true), (true, false)] {
        let mut setup = Setup::new(config(hold))
            .code_module()
            .catalog(CatalogOptions {
                stateless: true,
                json,
                ..CatalogOptions::default()
            });
        if hold {
            setup = setup.holding();
        }
        let stack = setup.start(&format!("code_mode_rmcp_{hold}_{json}"));
        within("catalog server flow", catalog_server_flow(&stack)).await;
    }
}

const FASTMCP_SCRIPT: &str = r#"
const names = catalog.tools.search({query: "github issues and the stripe balance", limit: 5}).map((t) => t.name);
const [issue] = catalog.tools.describe("github_get_issue");
if (issue.inputSchema.properties.number.type !== "integer") throw new Error("not the server's definition");
const results = await Promise.all([
  tools.github_get_issue({number: 3}),
  tools.github_list_issues({repo: "a/b"}),
  tools.stripe_get_balance(),
]);
let refund;
try { await tools.stripe_create_refund({charge: "ch_1"}); } catch (e) { refund = e.message; }
return {found: names.sort(), ran: results.map((r) => r.content[0].text), refund};
"#;

/// The code-mode configuration for the Python SDK's servers (their tools: GitHub and Stripe).
fn fastmcp_config(hold: bool) -> Value {
    let mut config = config(hold);
    config["authorization"]["rules"][0]["tools"] = json!(["github_*", "stripe_get_balance"]);
    config
}

/// Envoy with the code-mode module before `server`, holding request headers when `config` does.
fn envoy_before(
    server: &FastMcpServer,
    wasm: &std::path::Path,
    config: &Value,
    dir: &TestDir,
) -> Envoy {
    let filter = FilterOptions {
        wasm: wasm.to_path_buf(),
        config_json: config.to_string(),
    };
    let mut opts = EnvoyOptions::new(server.addr, Some(filter));
    opts.allow_on_headers_stop_iteration = config["hold_request_headers"] == true;
    Envoy::start(&opts, dir).unwrap_or_else(|e| panic!("{e}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scripts_against_fastmcp_json_and_sse_both_hold_modes() {
    let Some(wasm) = code_module() else {
        return;
    };
    for (hold, sse) in [(false, false), (true, true), (false, true), (true, false)] {
        let dir = TestDir::new(&format!("code_mode_fastmcp_{hold}_{sse}")).unwrap();
        let server = FastMcpServer::start(
            FastMcpOptions {
                sse,
                stateful: false,
            },
            &dir,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let envoy = envoy_before(&server, &wasm, &fastmcp_config(hold), &dir);
        let url = envoy.mcp_url();
        within("fastmcp flow", async {
            let resp = rpc(&url, &[ROLE, PROTOCOL], &list_request(1, None)).await;
            assert_eq!(names(&listed(&resp, 1)), ["run_script"]);
            let (result, _) = run(&url, FASTMCP_SCRIPT).await;
            assert_eq!(
                answer(&result),
                json!({
                    "found": ["github_get_issue", "github_list_issues", "stripe_get_balance"],
                    "ran": ["github_get_issue ran", "github_list_issues ran", "stripe_get_balance ran"],
                    "refund": "Unknown tool: stripe_create_refund"
                }),
                "{}\n{}",
                server.log(),
                envoy.log()
            );
            let (result, _) = run(&url, "for (;;) {}").await;
            assert_eq!(result["structuredContent"]["limit"], "time_ms");
            let (result, _) = run(&url, "return 1 + 1").await;
            assert_eq!(answer(&result), 2);
        })
        .await;
        let ran = server.recorded();
        assert_eq!(ran.len(), 3, "{ran:?}");
        assert!(
            !ran.iter().any(|l| l.contains("stripe_create_refund")),
            "{ran:?}"
        );
    }
}

/// The SDK 2.x server speaks protocol 2026-07-28, which checks `Mcp-Name` against the body: a
/// 2026-07-28 client's script calls carry their own, with the request's `params._meta`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scripts_of_a_2026_07_28_client_against_the_sdk2_server_both_hold_modes() {
    let Some(wasm) = code_module() else {
        return;
    };
    let Ok(python2) = mcp_tool_search_wasm_tests::python::python2() else {
        harness::skip("code_mode_e2e", "no Python with `mcp` 2.x (MCP2_PYTHON)").unwrap();
        return;
    };
    drop(python2);
    for hold in [false, true] {
        let dir = TestDir::new(&format!("code_mode_sdk2_{hold}")).unwrap();
        let server = FastMcpServer::start_sdk2(FastMcpOptions::default(), &dir)
            .unwrap_or_else(|e| panic!("{e}"));
        let envoy = envoy_before(&server, &wasm, &fastmcp_config(hold), &dir);
        let url = envoy.mcp_url();
        within("sdk2 flow", async {
            let mut headers = mcp::headers_2026("tools/list", None);
            headers.push(ROLE);
            let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list",
                "params": {"_meta": mcp::meta_2026()}});
            let resp = rpc(&url, &headers, &list).await;
            assert_eq!(names(&listed(&resp, 1)), ["run_script"], "{}", resp.text());
            let mut headers = mcp::headers_2026("tools/call", Some("run_script"));
            headers.push(ROLE);
            let body = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
                "params": {"name": "run_script", "arguments": {"script": FASTMCP_SCRIPT},
                           "_meta": mcp::meta_2026()}});
            let resp = rpc(&url, &headers, &body).await;
            let result = result_of(&resp, 9);
            assert_eq!(result["resultType"], "complete", "{result}");
            assert_eq!(
                answer(&result)["ran"],
                json!([
                    "github_get_issue ran",
                    "github_list_issues ran",
                    "stripe_get_balance ran"
                ]),
                "{}\n{}",
                server.log(),
                envoy.log()
            );
        })
        .await;
        assert_eq!(server.recorded().len(), 3, "{:?}", server.recorded());
    }
}
