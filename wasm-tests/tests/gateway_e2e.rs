//! The shipped gateway (`envoy/gateway.yaml`: this filter, then Envoy's `mcp` and `mcp_router`)
//! over three MCP servers of different kinds: `catalog` (rmcp, 301 tools), `python` (the Python
//! SDK's FastMCP) and `everything` (the TypeScript SDK's server-everything). One endpoint, one
//! catalog namespace, servers as groups, a policy by server, and a server that goes away and
//! comes back.
//!
//! Needs Envoy (`ENVOY_BIN`), the built filter (`FILTER_WASM`), the Python SDK (`MCP_PYTHON`,
//! `make python-peers`) and server-everything (`SERVER_EVERYTHING`, `make node-peers`).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod support;

use mcp_tool_search_wasm_tests::harness::{
    filter_wasm, free_port, http_get, run_printed, still_listening, workspace_root, CatalogOptions,
    CatalogServer, Envoy, Script, TestDir, FILTER_WASM_ARTIFACT,
};
use mcp_tool_search_wasm_tests::mcp;
use mcp_tool_search_wasm_tests::node::ServerEverything;
use mcp_tool_search_wasm_tests::python::{FastMcpOptions, FastMcpServer};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::time::Duration;
use support::*;

const CATALOG_TOOLS: u64 = 301;
const PYTHON_TOOLS: u64 = 5;

/// `envoy/gateway.yaml` as shipped, with this test's ports, the built `.wasm`, and `extra`
/// merged over its plugin configuration (objects key by key).
fn gateway_yaml(listen: u16, servers: [u16; 3], extra: &Value) -> String {
    let shipped = std::fs::read_to_string(workspace_root().join("envoy/gateway.yaml")).unwrap();
    let wasm = filter_wasm().unwrap();
    let mut out = String::new();
    for line in shipped.lines() {
        let mut line = line
            .replace("port_value: 9901", "port_value: 0")
            .replace("port_value: 10000", &format!("port_value: {listen}"))
            .replace("port_value: 18081", &format!("port_value: {}", servers[0]))
            .replace("port_value: 18082", &format!("port_value: {}", servers[1]))
            .replace("port_value: 18083", &format!("port_value: {}", servers[2]))
            .replace(FILTER_WASM_ARTIFACT, &wasm.display().to_string());
        if line.trim_start().starts_with("value: '{") {
            let start = line.find('\'').unwrap() + 1;
            let end = line.rfind('\'').unwrap();
            let mut config: Value = serde_json::from_str(&line[start..end]).unwrap();
            merge(&mut config, extra);
            line = format!("{}{}{}", &line[..start], config, &line[end..]);
        }
        out.push_str(&line);
        out.push('\n');
    }
    assert!(
        out.contains(&format!("port_value: {}", servers[2])),
        "{out}"
    );
    out
}

fn merge(base: &mut Value, over: &Value) {
    match (base, over) {
        (Value::Object(b), Value::Object(o)) => {
            for (k, v) in o {
                match b.get_mut(k) {
                    Some(existing) => merge(existing, v),
                    None => {
                        b.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        (b, o) => *b = o.clone(),
    }
}

struct Gateway {
    envoy: Envoy,
    catalog: CatalogServer,
    python: Option<FastMcpServer>,
    python_port: u16,
    _everything: ServerEverything,
    dir: TestDir,
}

impl Gateway {
    fn start(name: &str, extra: Value) -> Gateway {
        let dir = TestDir::new(name).unwrap();
        let catalog = CatalogServer::start(
            std::path::Path::new(env!("CARGO_BIN_EXE_catalog-server")),
            &CatalogOptions::default(),
            &dir,
        )
        .unwrap();
        let python_port = free_port().unwrap();
        let python = FastMcpServer::start_on(FastMcpOptions::default(), python_port, &dir).unwrap();
        let everything = ServerEverything::start_on(free_port().unwrap(), &dir).unwrap();
        let listen = free_port().unwrap();
        let yaml = gateway_yaml(
            listen,
            [catalog.addr.port(), python_port, everything.addr.port()],
            &extra,
        );
        let envoy = Envoy::start_yaml(&yaml, "wasm:debug", &dir).unwrap();
        Gateway {
            envoy,
            catalog,
            python: Some(python),
            python_port,
            _everything: everything,
            dir,
        }
    }

    fn python(&self) -> &FastMcpServer {
        self.python.as_ref().expect("python is running")
    }

    /// The gateway namespace's catalog as `/mcp/search/health` reports it.
    fn health(&self) -> Value {
        let (status, body) = http_get(self.envoy.listener, "/mcp/search/health").unwrap();
        assert_eq!(status, 200, "{body}");
        let health: Value = serde_json::from_str(&body).unwrap();
        let catalogs = health["catalogs"].as_object().unwrap();
        assert_eq!(
            catalogs.keys().collect::<Vec<_>>(),
            ["gateway"],
            "one namespace, named by the route: {health}"
        );
        catalogs["gateway"].clone()
    }
}

/// A session with the gateway (mcp_router's composite session), as raw JSON-RPC.
struct Session {
    url: String,
    headers: Vec<(String, String)>,
    next_id: std::sync::atomic::AtomicI64,
}

impl Session {
    async fn open(url: &str, extra: &[(&str, &str)]) -> Session {
        let mut headers: Vec<(String, String)> = extra
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        let h: Vec<(&str, &str)> = headers
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let resp = rpc(
            url,
            &h,
            &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "gateway-e2e", "version": "1"}}}),
        )
        .await;
        assert_eq!(resp.status, 200, "{}", resp.text());
        let session = resp
            .header("mcp-session-id")
            .unwrap_or_else(|| panic!("no session: {}", resp.text()))
            .to_owned();
        headers.push(("mcp-session-id".to_owned(), session));
        headers.push(("mcp-protocol-version".to_owned(), "2025-06-18".to_owned()));
        Session {
            url: url.to_owned(),
            headers,
            next_id: std::sync::atomic::AtomicI64::new(1),
        }
    }

    fn headers(&self) -> Vec<(&str, &str)> {
        self.headers
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect()
    }

    /// One request; the whole JSON-RPC response message.
    async fn send(&self, method: &str, params: Value) -> Value {
        let id = self
            .next_id
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            + 1;
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let resp = rpc(&self.url, &self.headers(), &body).await;
        resp.response_for(&json!(id))
            .cloned()
            .unwrap_or_else(|| panic!("{body}: no response: {} {}", resp.status, resp.text()))
    }

    async fn list(&self) -> Vec<Value> {
        let r = self.send("tools/list", json!({})).await;
        r["result"]["tools"]
            .as_array()
            .cloned()
            .unwrap_or_else(|| panic!("no tools: {r}"))
    }

    async fn call(&self, name: &str, arguments: Value) -> Value {
        self.send("tools/call", json!({"name": name, "arguments": arguments}))
            .await
    }

    /// `list_tool_groups`: group → tool count.
    async fn groups(&self) -> BTreeMap<String, u64> {
        let r = self.call("list_tool_groups", json!({})).await;
        let text = r["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_else(|| panic!("{r}"));
        let groups: Vec<Value> = serde_json::from_str(text).unwrap();
        groups
            .iter()
            .map(|g| {
                (
                    g["group"].as_str().unwrap().to_owned(),
                    g["tools"].as_u64().unwrap(),
                )
            })
            .collect()
    }

    /// `tool_search`'s definitions, best first (fails on an error result).
    async fn search(&self, arguments: Value) -> Vec<String> {
        let r = self.call("tool_search", arguments.clone()).await;
        let result = &r["result"];
        assert_ne!(result["isError"], true, "{arguments}: {r}");
        let text = result["content"][0]["text"].as_str().unwrap();
        let defs: Vec<Value> = serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {r}"));
        names(&defs)
    }
}

/// Polls `probe` until `done` holds (a refresh is due every second here); panics with the last
/// value after a minute.
async fn eventually<T: std::fmt::Debug, F, Fut>(
    what: &str,
    mut probe: F,
    done: impl Fn(&T) -> bool,
) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = T>,
{
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let value = probe().await;
        if done(&value) {
            return value;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting for {what}: {value:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn server(name: &str) -> &str {
    name.split_once("__").map_or("", |(s, _)| s)
}

#[tokio::test(flavor = "multi_thread")]
async fn three_servers_behind_one_endpoint_list_search_call_and_a_server_comes_back() {
    // A short max_age so that the catalog follows a server going and coming within the test;
    // the shipped 30 s would do the same, only slower.
    let mut gw = Gateway::start("gateway-three", json!({"catalog": {"max_age": "1s"}}));
    let url = gw.envoy.mcp_url();
    let s = Session::open(&url, &[]).await;

    // tools/list: the three servers' tools, all progressive, behind the filter's own tools;
    // the search tool names the servers.
    let tools = s.list().await;
    assert_eq!(
        names(&tools),
        ["tool_search", "list_tool_groups"],
        "{tools:?}"
    );
    let description = tools[0]["description"].as_str().unwrap();
    assert!(
        description.contains("The tools fall into 3 groups: catalog, everything, python;"),
        "{description}"
    );
    assert_eq!(
        tools[0]["inputSchema"]["properties"]["group"]["enum"],
        json!(["catalog", "everything", "python"])
    );

    // list_tool_groups: one group per server, with its tool count.
    let r = s.call("list_tool_groups", json!({})).await;
    let groups: Value =
        serde_json::from_str(r["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    let groups = groups.as_array().unwrap();
    assert_eq!(
        groups
            .iter()
            .map(|g| g["group"].as_str().unwrap())
            .collect::<Vec<_>>(),
        ["catalog", "everything", "python"]
    );
    assert_eq!(groups[0]["tools"], CATALOG_TOOLS);
    assert_eq!(groups[2]["tools"], PYTHON_TOOLS);
    let everything_tools = groups[1]["tools"].as_u64().unwrap();
    assert!(everything_tools > 5, "{groups:?}");
    // One catalog for the endpoint, holding every server's tools. (server-everything offers
    // some tools only to sessions with some client capabilities, and a refresh may land between
    // two reads: its count is compared within one answer, never across two.)
    let health = gw.health();
    assert!(
        health["tools"].as_u64().unwrap() > CATALOG_TOOLS + PYTHON_TOOLS + 5,
        "{health}"
    );

    // One search across servers: GitHub tools of the catalog and of FastMCP.
    let found = s
        .search(json!({"query": "get a github issue", "limit": 10}))
        .await;
    assert!(
        found.contains(&"python__github_get_issue".to_owned()),
        "{found:?}"
    );
    assert!(
        found.contains(&"catalog__github_get_issue".to_owned()),
        "{found:?}"
    );
    let found = s.search(json!({"query": "the sum of two numbers"})).await;
    assert_eq!(
        found.first().map(String::as_str),
        Some("everything__get-sum"),
        "{found:?}"
    );
    // `group` narrows the search to one server.
    let found = s
        .search(json!({"query": "github issue", "group": "python", "limit": 10}))
        .await;
    assert!(!found.is_empty());
    assert!(found.iter().all(|n| server(n) == "python"), "{found:?}");

    // A found tool is called by its prefixed name: the router strips the prefix and sends the
    // call to that server only.
    let r = s
        .call("python__github_get_issue", json!({"number": 7}))
        .await;
    assert_ne!(r["result"]["isError"], true, "{r}");
    assert_eq!(gw.python().recorded(), ["tools/call github_get_issue"]);
    let r = s.call("everything__get-sum", json!({"a": 2, "b": 3})).await;
    assert!(
        r["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains('5'),
        "{r}"
    );
    let r = s
        .call(
            "catalog__stripe_refund_charge",
            json!({"charge_id": "ch_1"}),
        )
        .await;
    assert_ne!(r["result"]["isError"], true, "{r}");
    assert!(gw
        .catalog
        .recorded()
        .iter()
        .any(|l| l.contains("stripe_refund_charge")));
    assert!(!gw
        .catalog
        .recorded()
        .iter()
        .any(|l| l.contains("github_get_issue")));

    // python stops: the next refresh lists the two others; searches keep answering, without
    // python's tools. (server-everything's tool count depends on the capabilities of the
    // session that lists it, so the groups are compared, not a total.)
    drop(gw.python.take());
    let s2 = Session::open(&url, &[]).await;
    let groups = eventually(
        "the catalog without python",
        || s2.groups(),
        |g| g.keys().map(String::as_str).collect::<Vec<_>>() == ["catalog", "everything"],
    )
    .await;
    assert_eq!(groups["catalog"], CATALOG_TOOLS);
    assert!(groups["everything"] > 5, "{groups:?}");
    let found = s2
        .search(json!({"query": "get a github issue", "limit": 10}))
        .await;
    assert!(
        found.contains(&"catalog__github_get_issue".to_owned()),
        "{found:?}"
    );
    assert!(found.iter().all(|n| server(n) != "python"), "{found:?}");
    let health = gw.health();
    assert_eq!(health["source"], "fetched", "{health}");

    // python comes back on its port: the catalog has its tools again, and calls reach it.
    gw.python =
        Some(FastMcpServer::start_on(FastMcpOptions::default(), gw.python_port, &gw.dir).unwrap());
    let groups = eventually(
        "the catalog with python again",
        || s2.groups(),
        |g| g.get("python") == Some(&PYTHON_TOOLS),
    )
    .await;
    assert_eq!(groups.len(), 3, "{groups:?}");
    let s3 = Session::open(&url, &[]).await;
    let found = s3
        .search(json!({"query": "github issue", "group": "python", "limit": 10}))
        .await;
    assert!(
        found.contains(&"python__github_get_issue".to_owned()),
        "{found:?}"
    );
    let r = s3.call("python__stripe_get_balance", json!({})).await;
    assert_ne!(r["result"]["isError"], true, "{r}");
    assert_eq!(gw.python().recorded(), ["tools/call stripe_get_balance"]);
    assert!(gw.envoy.running());
}

/// `mcp_router` joins its servers' lists as their answers arrive. What the filter lists stays
/// in name order, so every list reads the same, and a list of the tools it last rewrote is
/// answered again without being read (`lists_replayed`), in whatever order the router joined it.
#[tokio::test(flavor = "multi_thread")]
async fn the_routers_lists_read_the_same_every_time_and_are_replayed() {
    let gw = Gateway::start(
        "gateway-replay",
        json!({"disclosure_defaults": [{"servers": ["python"], "disclosure_mode": "EAGER"}]}),
    );
    let s = Session::open(&gw.envoy.mcp_url(), &[]).await;
    let first = s.list().await;
    let listed = names(&first);
    assert_eq!(listed.len(), 2 + PYTHON_TOOLS as usize, "{listed:?}");
    let (injected, python) = listed.split_at(2);
    assert_eq!(injected, ["tool_search", "list_tool_groups"]);
    assert!(
        python.iter().all(|n| n.starts_with("python__")),
        "{python:?}"
    );
    assert!(python.is_sorted(), "name order: {python:?}");
    let before = gw.envoy.stat("lists_replayed").unwrap();
    const LISTS: u64 = 8;
    for _ in 0..LISTS {
        assert_eq!(
            s.list().await,
            first,
            "the same list, byte for byte as JSON"
        );
    }
    // The first lists teach the catalog (a list is remembered once learning it changes
    // nothing); every later one is replayed.
    let replayed = gw.envoy.stat("lists_replayed").unwrap() - before;
    assert!(
        replayed >= LISTS - 2,
        "{replayed} of {LISTS} lists replayed"
    );
}

/// A caller allowed only `python` (by a `servers` rule) tries to reach `catalog` every way a
/// name or a path can be spelled; nothing reaches `catalog`, and python's tools work.
#[tokio::test(flavor = "multi_thread")]
async fn a_per_server_policy_holds_against_every_spelling() {
    let gw = Gateway::start(
        "gateway-policy",
        json!({"authorization": {
            "identity": {"source": "header", "header": "x-roles"},
            "rules": [{"claim": "roles", "values": ["py"], "servers": ["python"]}],
            "default": "deny"}}),
    );
    let url = gw.envoy.mcp_url();
    let s = Session::open(&url, &[("x-roles", "py")]).await;
    let baseline = gw.catalog.recorded().len();

    let refused = |r: &Value, name: &str| {
        assert_eq!(r["error"]["code"], -32602, "{name}: {r}");
        assert!(
            r["error"]["message"]
                .as_str()
                .unwrap()
                .contains("Unknown tool"),
            "{name}: {r}"
        );
    };
    for name in [
        "catalog__stripe_refund_charge",
        "catalog___stripe_refund_charge",
        "CATALOG__stripe_refund_charge",
        "catalog____stripe_refund_charge",
        "stripe_refund_charge",
        "__catalog__stripe_refund_charge",
        "everything__get-sum",
    ] {
        let r = s.call(name, json!({"charge_id": "ch_1"})).await;
        refused(&r, name);
    }
    // The same name with JSON escapes (read as `catalog__...` by every JSON reader).
    let raw = br#"{"jsonrpc":"2.0","id":90,"method":"tools/call","params":{"name":"catalog\u005f\u005fstripe_refund_charge","arguments":{}}}"#;
    let h = s.headers();
    let mut headers = vec![
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
    ];
    headers.extend(h.iter().copied());
    for path in ["/mcp", "/other", "/", "/mcp/x", "/MCP"] {
        let (status, _, body) =
            mcp::request("POST", &gw.envoy.url(path), &headers, Some(raw.to_vec()))
                .await
                .unwrap();
        let text = String::from_utf8_lossy(&body);
        assert!(
            text.contains("Unknown tool") && text.contains("-32602"),
            "{path}: {status} {text}"
        );
    }
    // A plain name on a path other than /mcp: mcp_router would route it all the same.
    let plain = serde_json::to_vec(&call_request(
        91,
        "catalog__stripe_refund_charge",
        json!({}),
    ))
    .unwrap();
    for path in ["/other", "/mcp/../admin", "//mcp"] {
        let (status, _, body) =
            mcp::request("POST", &gw.envoy.url(path), &headers, Some(plain.clone()))
                .await
                .unwrap();
        let text = String::from_utf8_lossy(&body);
        assert!(text.contains("Unknown tool"), "{path}: {status} {text}");
    }
    // Decoys for a parser that reads `params.name` anywhere but at the top: the filter decides
    // on the top-level `params.name` (python's), and so must mcp's parser, which the router
    // routes by; a decoy before or after it, nested or in the arguments, must not reach catalog.
    let decoy = r#"{"params":{"name":"catalog__stripe_refund_charge"},"method":"tools/call"}"#;
    for (i, body) in [
        format!(r#"{{"jsonrpc":"2.0","id":93,"x":{decoy},"method":"tools/call","params":{{"name":"python__stripe_get_balance","arguments":{{}}}}}}"#),
        format!(r#"{{"jsonrpc":"2.0","id":94,"method":"tools/call","params":{{"name":"python__stripe_get_balance","arguments":{{}}}},"x":{decoy}}}"#),
        format!(r#"{{"jsonrpc":"2.0","id":95,"method":"tools/call","params":{{"arguments":{decoy},"name":"python__stripe_get_balance"}}}}"#),
        format!(r#"{{"jsonrpc":"2.0","id":96,"method":"tools/call","params":{{"_meta":{decoy},"name":"python__stripe_get_balance"}}}}"#),
    ]
    .into_iter()
    .enumerate()
    {
        let (status, _, reply) =
            mcp::request("POST", &gw.envoy.url("/mcp"), &headers, Some(body.into_bytes()))
                .await
                .unwrap();
        let text = String::from_utf8_lossy(&reply);
        assert!(!text.contains("Unknown tool"), "decoy {i}: {status} {text}");
    }
    assert_eq!(
        gw.catalog.recorded().len(),
        baseline,
        "a decoy reached catalog: {:?}",
        gw.catalog.recorded()
    );
    let python_seen = gw.python().recorded().len();
    assert_eq!(python_seen, 4, "{:?}", gw.python().recorded());

    // `python__catalog__x` is python's to answer (the router splits at the first `__`).
    let r = s
        .call("python__catalog__stripe_refund_charge", json!({}))
        .await;
    assert!(
        r.get("error").is_some() || r["result"]["isError"] == true,
        "{r}"
    );
    assert_eq!(
        gw.catalog.recorded().len(),
        baseline,
        "nothing reached catalog: {:?}",
        gw.catalog.recorded()
    );

    // What the caller sees: python's tools only, no groups to choose from.
    let tools = s.list().await;
    assert_eq!(names(&tools), ["tool_search"], "{tools:?}");
    let found = s
        .search(json!({"query": "refund a charge", "limit": 10}))
        .await;
    assert!(!found.is_empty());
    assert!(found.iter().all(|n| server(n) == "python"), "{found:?}");
    let r = s.call("python__stripe_create_refund", json!({})).await;
    assert_ne!(r["result"]["isError"], true, "{r}");
    assert_eq!(
        gw.python().recorded().last().map(String::as_str),
        Some("tools/call stripe_create_refund")
    );
    let python_seen = gw.python().recorded().len();

    // Another caller with no matching rule gets nothing.
    let other = Session::open(&url, &[("x-roles", "guest")]).await;
    let r = other.call("python__stripe_get_balance", json!({})).await;
    refused(&r, "python__stripe_get_balance");
    assert_eq!(gw.python().recorded().len(), python_seen);
}

/// README "Many servers behind one endpoint": `make gateway` (`envoy/gateway.sh`) prints the
/// endpoint, a search across the servers and a call through the router, then a curl flow
/// whose commands work as printed; Ctrl-C stops Envoy and the three servers.
#[test]
fn make_gateway_prints_what_the_readme_says_and_its_curl_flow_works() {
    let ports: Vec<u16> = (0..5).map(|_| free_port().unwrap()).collect();
    let [listen, admin, catalog, python, everything] = ports[..] else {
        unreachable!()
    };
    let mut command = std::process::Command::new("envoy/gateway.sh");
    command
        .current_dir(workspace_root())
        .env(
            "ENVOY_BIN",
            mcp_tool_search_wasm_tests::harness::envoy_bin().unwrap(),
        )
        .env("FILTER_WASM", filter_wasm().unwrap())
        .env(
            "MCP_PYTHON",
            mcp_tool_search_wasm_tests::python::python().unwrap(),
        )
        .env(
            "SERVER_EVERYTHING",
            mcp_tool_search_wasm_tests::node::server_everything().unwrap(),
        )
        .env("CATALOG_SERVER", env!("CARGO_BIN_EXE_catalog-server"))
        .env("LISTEN", listen.to_string())
        .env("ADMIN", admin.to_string())
        .env("CATALOG_PORT", catalog.to_string())
        .env("PYTHON_PORT", python.to_string())
        .env("EVERYTHING_PORT", everything.to_string());
    let mut gateway = Script::start(command).unwrap();
    gateway
        .until("Or point any MCP client at", Duration::from_secs(180))
        .unwrap();
    let text = gateway.text();
    let endpoint = format!("http://127.0.0.1:{listen}/mcp");
    for expected in [
        format!("==> Envoy 1.40.0: the filter, mcp, mcp_router on 127.0.0.1:{listen}"),
        "==> tools/list through the filter".to_string(),
        "    2 tools listed: tool_search, list_tool_groups".to_string(),
        format!(
            "    [{{\"group\":\"catalog\",\"tools\":{CATALOG_TOOLS}}},{{\"group\":\"everything\","
        ),
        format!("{{\"group\":\"python\",\"tools\":{PYTHON_TOOLS}}}]"),
        "==> tool_search {\"query\": \"the sum of two numbers\"} across every server".to_string(),
        "    1. everything__get-sum: Returns the sum of two numbers".to_string(),
        "The sum of 2 and 3 is 5.".to_string(),
        format!("MCP endpoint: {endpoint}   (servers: catalog, python, everything"),
    ] {
        assert!(text.contains(&expected), "no {expected:?} in:\n{text}");
    }
    // The flow as printed: a search in one group with the gateway's session, the plain-HTTP
    // search across every server, and health.
    let commands = gateway.commands();
    assert_eq!(commands.len(), 3, "{commands:?}");
    let grouped: Value = serde_json::from_str(&run_printed(&commands[0]).unwrap()).unwrap();
    let text_of = |v: &Value| {
        v["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let found: Vec<Value> = serde_json::from_str(&text_of(&grouped)).unwrap();
    assert!(!found.is_empty(), "{grouped}");
    assert!(
        found
            .iter()
            .all(|t| t["name"].as_str().unwrap().starts_with("catalog__")),
        "{found:?}"
    );
    let http: Value = serde_json::from_str(&run_printed(&commands[1]).unwrap()).unwrap();
    assert!(
        http["tools"][0]["name"]
            .as_str()
            .is_some_and(|n| n.ends_with("github_get_issue")),
        "{http}"
    );
    let health: Value = serde_json::from_str(&run_printed(&commands[2]).unwrap()).unwrap();
    assert!(health["catalogs"].is_object(), "{health}");

    let rest = gateway.stop().unwrap();
    assert!(
        rest.iter().any(|l| l.starts_with("stopped (logs in ")),
        "{rest:?}"
    );
    assert_eq!(
        still_listening(&ports, Duration::from_secs(10)),
        Vec::<u16>::new(),
        "still listening after Ctrl-C"
    );
}
