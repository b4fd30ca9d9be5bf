//! Issue "Caller-aware catalog", end to end: Envoy's real `jwt_authn` filter (an HS256 key in
//! an inline local JWKS, tokens minted here) in front of the mcp-tool-search `.wasm`, the rmcp
//! client and raw HTTP in front of Envoy, the rmcp `catalog-server` behind it.
//!
//! The policy: role `support` may use `github_*` and `slack_*`, role `billing` `stripe_*`,
//! everything else is denied. Eager: `github_get_*`, `stripe_get_*` and `jira_get_*` (so each
//! role has allowed eager tools, and some eager tools are allowed to nobody).
//!
//! Needs Envoy (`ENVOY_BIN`, else `.venv/bin/envoy`) and the built filter (`make wasm`).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod support;

use std::collections::BTreeSet;

use mcp_tool_search_wasm_tests::harness::{
    self, CatalogOptions, Envoy, EnvoyOptions, FilterOptions, JwtAuthnOptions, JwtRequirement,
    TestDir,
};
use mcp_tool_search_wasm_tests::jwt::{self, Hs256Key};
use mcp_tool_search_wasm_tests::mcp::{self, RawResponse};
use rmcp::model::CallToolResult;
use rmcp::service::ServiceError;
use serde_json::{json, Value};
use support::*;

const SECRET: &[u8] = b"mcp-tool-search e2e HS256 secret, 32+ bytes long";

const SUPPORT_EAGER: [&str; 4] = [
    "github_get_issue",
    "github_get_pull_request",
    "github_get_repository",
    "github_get_file_contents",
];
const SUPPORT_PROGRESSIVE: [&str; 12] = [
    "github_list_issues",
    "github_list_pull_requests",
    "github_list_repositories",
    "github_create_or_update_file",
    "slack_post_message",
    "slack_list_channels",
    "slack_list_users",
    "slack_list_messages",
    "slack_create_channel",
    "slack_lookup_user_by_email",
    "slack_reply_to_thread",
    "slack_invite_to_channel",
];
const BILLING_EAGER: [&str; 4] = [
    "stripe_get_customer",
    "stripe_get_subscription",
    "stripe_get_invoice",
    "stripe_get_charge",
];
const BILLING_PROGRESSIVE: [&str; 4] = [
    "stripe_refund_charge",
    "stripe_create_customer",
    "stripe_create_subscription",
    "stripe_create_invoice",
];

fn key() -> Hs256Key {
    Hs256Key::new(SECRET)
}

/// The plugin configuration with this identity source.
fn plugin_config(identity: Value) -> Value {
    json!({
        "mcp_paths": ["/mcp"],
        "eager_patterns": ["github_get_*", "stripe_get_*", "jira_get_*"],
        "group_separator": "_",
        "authorization": {
            "identity": identity,
            "rules": [
                {"claim": "roles", "values": ["support"], "tools": ["github_*", "slack_*"]},
                {"claim": "roles", "values": ["billing"], "tools": ["stripe_*"]}
            ],
            "default": "deny"
        }
    })
}

fn jwt_filter(requirement: JwtRequirement) -> JwtAuthnOptions {
    let mut j = JwtAuthnOptions::new(key().jwks(), requirement);
    j.payload_in_metadata = Some("jwt_payload".to_owned());
    j.open_prefixes = vec![format!("{SEARCH_PATH}/health")];
    j
}

/// `jwt_authn` with `payload_in_metadata`, identity `jwt_metadata`.
fn metadata_setup(requirement: JwtRequirement) -> Setup {
    Setup::new(plugin_config(json!({"source": "jwt_metadata"}))).jwt(jwt_filter(requirement))
}

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

fn union(a: &[&str], b: &[&str]) -> BTreeSet<String> {
    a.iter().chain(b).map(|s| (*s).to_owned()).collect()
}

/// The names the search tool's description offers (after "Tools you can find include: ").
fn described_names(search_tool: &Value) -> BTreeSet<String> {
    let d = search_tool["description"].as_str().unwrap_or("");
    let list = d
        .split_once("Tools you can find include: ")
        .map(|(_, rest)| rest.trim_end_matches('.'))
        .unwrap_or("");
    list.split(", ")
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Lists with the rmcp client as the holder of `auth`; returns the listed tools.
async fn list_as(stack: &Stack, auth: &[(&str, &str)]) -> Vec<Value> {
    let (client, _) = connect(&stack.url(), auth).await;
    let tools: Vec<Value> = client
        .list_all_tools()
        .await
        .expect("tools/list")
        .iter()
        .map(to_value)
        .collect();
    let _ = client.cancel().await;
    tools
}

/// Asserts what one role sees: the eager tools it may use and the search tool, whose
/// description names exactly its progressive tools; a search finds only its tools.
async fn assert_role_view(
    stack: &Stack,
    auth: &[(&str, &str)],
    eager: &[&str],
    progressive: &[&str],
    query: &str,
    expect_first: &str,
) {
    let (client, _) = connect(&stack.url(), auth).await;
    let tools: Vec<Value> = client
        .list_all_tools()
        .await
        .expect("tools/list")
        .iter()
        .map(to_value)
        .collect();
    let want_groups: BTreeSet<String> = eager
        .iter()
        .chain(progressive)
        .filter_map(|n| n.split('_').next())
        .map(str::to_owned)
        .collect();
    let mut want = set(eager);
    want.insert(TOOL_SEARCH.to_owned());
    if want_groups.len() > 1 {
        want.insert("list_tool_groups".to_owned());
    }
    assert_eq!(name_set(&tools), want, "tools/list for {auth:?}");
    let search = by_name(&tools, TOOL_SEARCH);
    assert_eq!(
        described_names(search),
        set(progressive),
        "the search tool's description for {auth:?}: {}",
        search["description"]
    );
    let groups: BTreeSet<String> = search["inputSchema"]["properties"]["group"]["enum"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    if want_groups.len() > 1 {
        assert_eq!(groups, want_groups, "group enum for {auth:?}");
    } else {
        assert!(groups.is_empty(), "one group, no group enum: {search}");
    }

    let result = client
        .call_tool(call(TOOL_SEARCH, json!({"query": query, "limit": 5})))
        .await
        .expect("tool_search");
    assert_ne!(result.is_error, Some(true), "{}", to_value(&result));
    let found = names(&found_definitions(&result));
    assert_eq!(
        found.first().map(String::as_str),
        Some(expect_first),
        "{query:?} as {auth:?}: {found:?}"
    );
    let allowed = union(eager, progressive);
    for n in &found {
        assert!(allowed.contains(n), "{n} found for {auth:?}: {found:?}");
    }
    let meta = search_meta(&result);
    assert_eq!(
        meta["candidates"].as_u64(),
        Some(allowed.len() as u64),
        "candidates are the caller's tools: {meta}"
    );
    let _ = client.cancel().await;
}

/// Asserts a `tools/call` was refused by the filter as an unknown tool (-32602).
fn assert_unknown_tool(outcome: Result<CallToolResult, ServiceError>, name: &str) {
    match outcome {
        Err(ServiceError::McpError(e)) => {
            assert_eq!(e.code.0, -32602, "{e:?}");
            assert_eq!(e.message, format!("Unknown tool: {name}"), "{e:?}");
        }
        Err(other) => panic!("tools/call {name}: expected JSON-RPC error -32602, got {other}"),
        Ok(r) => panic!("tools/call {name} succeeded: {}", to_value(&r)),
    }
}

// ---- tests ---------------------------------------------------------------------------------------

/// Two roles (JWT payload in dynamic metadata) see different lists, searches and search-tool
/// descriptions; a role with no tools sees an empty list; forbidden calls never reach the
/// upstream.
#[tokio::test]
async fn jwt_metadata_roles_see_their_own_catalog() {
    // A stateful upstream (sessions, the rmcp client's GET stream) for once.
    let stack = metadata_setup(JwtRequirement::Required)
        .catalog(CatalogOptions::default())
        .start("authz_jwt_metadata");
    within("jwt_metadata_roles_see_their_own_catalog", async {
        let k = key();
        let support = bearer(&k.token("alice", &["support"]));
        let billing = bearer(&k.token("bob", &["billing"]));
        let nobody = bearer(&k.token("carol", &["marketing"]));
        let both = bearer(&k.token("dave", &["support", "billing"]));
        let as_support = [("authorization", support.as_str())];
        let as_billing = [("authorization", billing.as_str())];

        assert_role_view(
            &stack,
            &as_support,
            &SUPPORT_EAGER,
            &SUPPORT_PROGRESSIVE,
            "post a message to a channel",
            "slack_post_message",
        )
        .await;
        assert_role_view(
            &stack,
            &as_billing,
            &BILLING_EAGER,
            &BILLING_PROGRESSIVE,
            "refund a charge",
            "stripe_refund_charge",
        )
        .await;

        // Both roles: the union.
        let tools = list_as(&stack, &[("authorization", both.as_str())]).await;
        let mut want = union(&SUPPORT_EAGER, &BILLING_EAGER);
        want.insert(TOOL_SEARCH.to_owned());
        want.insert("list_tool_groups".to_owned());
        assert_eq!(name_set(&tools), want);
        assert_eq!(
            described_names(by_name(&tools, TOOL_SEARCH)),
            union(&SUPPORT_PROGRESSIVE, &BILLING_PROGRESSIVE)
        );

        // No permitted tool: an empty list, no search tool.
        let tools = list_as(&stack, &[("authorization", nobody.as_str())]).await;
        assert!(tools.is_empty(), "{:?}", names(&tools));

        // Forbidden calls: refused by the filter, never seen upstream; allowed ones go through.
        let (client, _) = connect(&stack.url(), &as_support).await;
        assert_unknown_tool(
            client
                .call_tool(call(
                    "stripe_refund_charge",
                    json!({"charge_id": "ch_1", "amount": 5}),
                ))
                .await,
            "stripe_refund_charge",
        );
        assert_unknown_tool(
            client
                .call_tool(call("jira_get_ticket", json!({"ticket_key": "ENG-1"})))
                .await,
            "jira_get_ticket",
        );
        let ok = client
            .call_tool(call(
                "slack_post_message",
                json!({"channel": "C1", "text": "hi"}),
            ))
            .await
            .expect("an allowed progressive tool");
        assert_upstream_ok(&ok, "slack_post_message");
        let _ = client.cancel().await;

        let (client, _) = connect(&stack.url(), &as_billing).await;
        assert_unknown_tool(
            client
                .call_tool(call(
                    "github_get_issue",
                    json!({"owner": "o", "repo": "r", "issue_number": 1}),
                ))
                .await,
            "github_get_issue",
        );
        let ok = client
            .call_tool(call(
                "stripe_refund_charge",
                json!({"charge_id": "ch_1", "amount": 5}),
            ))
            .await
            .expect("billing may refund");
        assert_upstream_ok(&ok, "stripe_refund_charge");
        let _ = client.cancel().await;

        let rec = stack.recorded();
        assert!(
            rec.contains(&"tools/call slack_post_message".to_owned()),
            "{rec:?}"
        );
        assert!(
            rec.contains(&"tools/call stripe_refund_charge".to_owned()),
            "{rec:?}"
        );
        assert_eq!(
            rec.iter()
                .filter(|l| *l == "tools/call stripe_refund_charge")
                .count(),
            1,
            "only billing's call of stripe_refund_charge reached the upstream: {rec:?}"
        );
        stack.assert_never_called(&["jira_get_ticket", "github_get_issue", TOOL_SEARCH]);
        let refused = stack
            .envoy
            .stats("mcp_tool_search.calls_refused")
            .expect("stats");
        assert!(
            refused.iter().any(|(_, v)| *v >= 3),
            "calls_refused counts the 3 refusals: {refused:?}"
        );
    })
    .await;
}

/// A missing, forged, expired or foreign token is refused by `jwt_authn` (401) before the
/// filter or the upstream sees anything; the health endpoint is open by configuration.
#[tokio::test]
async fn jwt_required_refuses_missing_and_invalid_tokens() {
    let stack = metadata_setup(JwtRequirement::Required).start("authz_jwt_required");
    within("jwt_required_refuses_missing_and_invalid_tokens", async {
        let k = key();
        let now = jwt::now();
        let claims = |exp: u64, iss: &str, aud: &str| {
            json!({"iss": iss, "aud": aud, "sub": "mallory", "roles": ["support"], "iat": now - 7200, "exp": exp})
        };
        let forged = Hs256Key::new(b"not the key the JWKS holds, also 32+ bytes").token("mallory", &["support"]);
        let expired = k.sign(&claims(now - 3600, jwt::ISSUER, jwt::AUDIENCE));
        let foreign_issuer = k.sign(&claims(now + 3600, "https://elsewhere.test", jwt::AUDIENCE));
        let wrong_audience = k.sign(&claims(now + 3600, jwt::ISSUER, "another-api"));
        let list = list_request(1, None);
        // (case, Authorization, jwt_authn's status and body)
        let cases: Vec<(&str, Option<String>, u16, &str)> = vec![
            ("missing", None, 401, "Jwt is missing"),
            ("not a JWT", Some("Bearer not-a-jwt".to_owned()), 401, "Jwt is not in the form of Header.Payload.Signature"),
            ("forged signature", Some(bearer(&forged)), 401, "Jwt verification fails"),
            ("expired", Some(bearer(&expired)), 401, "Jwt is expired"),
            ("foreign issuer", Some(bearer(&foreign_issuer)), 401, "Jwt issuer is not configured"),
            ("wrong audience", Some(bearer(&wrong_audience)), 403, "Audiences in Jwt are not allowed"),
        ];
        for (what, auth, want, why) in &cases {
            let headers: Vec<(&str, &str)> = auth.iter().map(|a| ("authorization", a.as_str())).collect();
            let resp = rpc(&stack.url(), &headers, &list).await;
            assert_eq!(resp.status, *want, "{what}: {} {}", resp.status, resp.text());
            assert!(resp.text().starts_with(why), "{what}: {}", resp.text());
            let (status, _, _) = http_search(&stack, &headers, br#"{"query":"refund"}"#).await;
            assert_eq!(status, *want, "{what}: POST {SEARCH_PATH}");
        }
        assert!(
            stack.recorded().is_empty(),
            "nothing may reach the upstream without a valid token: {:?}",
            stack.recorded()
        );
        // The open health endpoint, and a valid token.
        let (status, _, body) = mcp::get(&stack.envoy.url(&format!("{SEARCH_PATH}/health")))
            .await
            .unwrap();
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
        let ok = bearer(&k.token("alice", &["support"]));
        let resp = rpc(&stack.url(), &[("authorization", ok.as_str())], &list).await;
        assert_eq!(resp.status, 200, "{}", resp.text());
        assert_eq!(
            name_set(&listed(&resp, 1)),
            union(&SUPPORT_EAGER, &[TOOL_SEARCH, "list_tool_groups"])
        );
    })
    .await;
}

/// `allow_missing`: a request without a token passes `jwt_authn` as anonymous, and the
/// policy's default (deny) gives it nothing; an invalid token is still a 401.
#[tokio::test]
async fn jwt_allow_missing_anonymous_gets_default_deny() {
    let stack = metadata_setup(JwtRequirement::AllowMissing).start("authz_jwt_allow_missing");
    within("jwt_allow_missing_anonymous_gets_default_deny", async {
        let (client, _) = connect(&stack.url(), &[]).await;
        let tools = client.list_all_tools().await.expect("anonymous tools/list");
        assert!(
            tools.is_empty(),
            "anonymous sees nothing: {:?}",
            names(&tools.iter().map(to_value).collect::<Vec<_>>())
        );
        assert_unknown_tool(
            client
                .call_tool(call(
                    "github_get_issue",
                    json!({"owner": "o", "repo": "r", "issue_number": 1}),
                ))
                .await,
            "github_get_issue",
        );
        // The search tool is not offered; called anyway, it finds nothing.
        let r = client
            .call_tool(call(TOOL_SEARCH, json!({"query": "get a github issue"})))
            .await
            .expect("tool_search as anonymous");
        let body = to_value(&r).to_string();
        assert!(found_definitions(&r).is_empty(), "{body}");
        assert_eq!(search_meta(&r)["candidates"], 0, "{body}");
        let _ = client.cancel().await;

        let forged = Hs256Key::new(b"not the key the JWKS holds, also 32+ bytes")
            .token("mallory", &["support"]);
        let resp = rpc(
            &stack.url(),
            &[("authorization", &bearer(&forged))],
            &list_request(1, None),
        )
        .await;
        assert_eq!(resp.status, 401, "{}", resp.text());

        // The HTTP search endpoint, anonymous: nothing either.
        let (status, _, v) = http_search(&stack, &[], br#"{"query":"get a github issue"}"#).await;
        assert_eq!(status, 200, "{v}");
        assert_eq!(v["tools"], json!([]), "{v}");
        assert_eq!(v["metadata"]["candidates"], 0, "{v}");

        // A valid token still sees its tools (the anonymous listing taught the catalog).
        let ok = bearer(&key().token("bob", &["billing"]));
        let resp = rpc(
            &stack.url(),
            &[("authorization", ok.as_str())],
            &list_request(2, None),
        )
        .await;
        assert_eq!(resp.status, 200, "{}", resp.text());
        assert_eq!(
            name_set(&listed(&resp, 2)),
            union(&BILLING_EAGER, &[TOOL_SEARCH])
        );
        stack.assert_never_called(&["github_get_issue", TOOL_SEARCH]);
    })
    .await;
}

/// Identity from `forward_payload_header` (base64url JSON payload in `x-jwt-payload`).
#[tokio::test]
async fn jwt_forwarded_payload_header_identity() {
    let mut jwt = jwt_filter(JwtRequirement::AllowMissing);
    jwt.payload_in_metadata = None;
    jwt.forward_payload_header = Some("x-jwt-payload".to_owned());
    let stack = Setup::new(plugin_config(
        json!({"source": "jwt_header", "header": "x-jwt-payload"}),
    ))
    .jwt(jwt)
    .start("authz_jwt_header");
    within("jwt_forwarded_payload_header_identity", async {
        let k = key();
        let support = bearer(&k.token("alice", &["support"]));
        let billing = bearer(&k.token("bob", &["billing"]));
        assert_role_view(
            &stack,
            &[("authorization", support.as_str())],
            &SUPPORT_EAGER,
            &SUPPORT_PROGRESSIVE,
            "list the issues of a repository",
            "github_list_issues",
        )
        .await;
        assert_role_view(
            &stack,
            &[("authorization", billing.as_str())],
            &BILLING_EAGER,
            &BILLING_PROGRESSIVE,
            "create an invoice",
            "stripe_create_invoice",
        )
        .await;

        // A client that sends the payload header itself, without a token, is anonymous:
        // jwt_authn must not let a forged x-jwt-payload through to the filter.
        let forged = jwt::base64url(
            json!({"sub": "mallory", "roles": ["support", "billing"]})
                .to_string()
                .as_bytes(),
        );
        let resp = rpc(
            &stack.url(),
            &[("x-jwt-payload", forged.as_str())],
            &list_request(1, None),
        )
        .await;
        assert_eq!(resp.status, 200, "{}", resp.text());
        let tools = listed(&resp, 1);
        assert!(
            tools.is_empty(),
            "a forged x-jwt-payload header without a token must give nothing, got {:?}",
            names(&tools)
        );
        let resp = rpc(
            &stack.url(),
            &[("x-jwt-payload", forged.as_str())],
            &call_request(
                2,
                "stripe_refund_charge",
                json!({"charge_id": "ch_1", "amount": 1}),
            ),
        )
        .await;
        assert_eq!(resp.status, 200, "{}", resp.text());
        let error = resp
            .response_for(&json!(2))
            .map(|r| r["error"]["code"].clone());
        assert_eq!(error, Some(json!(-32602)), "{}", resp.text());
        stack.assert_never_called(&["stripe_refund_charge"]);
    })
    .await;
}

/// Identity from a plain request header (as an earlier filter would set it): comma-separated
/// roles.
#[tokio::test]
async fn header_identity_source() {
    let stack = Setup::new(plugin_config(
        json!({"source": "header", "header": "x-user-roles"}),
    ))
    .start("authz_header");
    within("header_identity_source", async {
        assert_role_view(
            &stack,
            &[("x-user-roles", "support")],
            &SUPPORT_EAGER,
            &SUPPORT_PROGRESSIVE,
            "invite someone to a slack channel",
            "slack_invite_to_channel",
        )
        .await;
        assert_role_view(
            &stack,
            &[("x-user-roles", "billing")],
            &BILLING_EAGER,
            &BILLING_PROGRESSIVE,
            "create a subscription",
            "stripe_create_subscription",
        )
        .await;
        let tools = list_as(&stack, &[("x-user-roles", " support , billing ")]).await;
        assert_eq!(
            name_set(&tools),
            union(
                &union(&SUPPORT_EAGER, &BILLING_EAGER)
                    .iter()
                    .map(String::as_str)
                    .collect::<Vec<_>>(),
                &[TOOL_SEARCH, "list_tool_groups"]
            )
        );
        assert!(list_as(&stack, &[]).await.is_empty(), "no header: nothing");
        assert!(list_as(&stack, &[("x-user-roles", "marketing")])
            .await
            .is_empty());
    })
    .await;
}

// ---- no path names a forbidden tool ----------------------------------------------------------

/// Every request one caller made and every response body it got back.
#[derive(Default)]
struct Exchanges(Vec<(String, String)>);

impl Exchanges {
    fn add(&mut self, request: impl Into<String>, response: impl Into<String>) {
        self.0.push((request.into(), response.into()));
    }

    /// No response names a forbidden tool, unless its own request named it (a refusal may
    /// echo what the caller asked for: "Unknown tool: NAME").
    fn assert_no_forbidden(&self, forbidden: &[String]) {
        let mut leaks = Vec::new();
        for (request, response) in &self.0 {
            for name in forbidden {
                if mentions(response, name) && !mentions(request, name) {
                    leaks.push(format!(
                        "{name}\n  request: {request}\n  response: {response}"
                    ));
                }
            }
        }
        assert!(
            leaks.is_empty(),
            "{} responses name tools the caller may not use:\n{}",
            leaks.len(),
            leaks.iter().take(5).cloned().collect::<Vec<_>>().join("\n")
        );
    }
}

/// Raw JSON-RPC as the caller, recorded.
async fn probe(
    stack: &Stack,
    auth: &[(&str, &str)],
    seen: &mut Exchanges,
    body: Value,
) -> RawResponse {
    let resp = rpc(&stack.url(), auth, &body).await;
    // Every probe is answered in JSON-RPC (a refusal too): another status would hide a leak
    // from the checks on the body.
    assert_eq!(resp.status, 200, "{body}: {}", resp.text());
    seen.add(body.to_string(), resp.text());
    resp
}

/// Tries every path a caller has to a tool name, as `support` (summary results, groups, a
/// paged upstream). Returns what was exchanged.
async fn probe_every_path(stack: &Stack, token: &str) -> Exchanges {
    let auth_value = bearer(token);
    let auth = [("authorization", auth_value.as_str())];
    let mut seen = Exchanges::default();

    // tools/list, every page (raw), then the rmcp client's own paging.
    let mut cursor: Option<String> = None;
    let mut listed_names = BTreeSet::new();
    for page in 0..20 {
        let r = probe(
            stack,
            &auth,
            &mut seen,
            list_request(100 + page, cursor.as_deref()),
        )
        .await;
        assert_eq!(r.status, 200, "{}", r.text());
        let result = result_of(&r, 100 + page);
        listed_names.extend(names(
            result["tools"].as_array().map(Vec::as_slice).unwrap_or(&[]),
        ));
        cursor = result["nextCursor"].as_str().map(str::to_owned);
        if cursor.is_none() {
            break;
        }
    }
    assert_eq!(
        listed_names,
        union(
            &SUPPORT_EAGER,
            &[
                TOOL_SEARCH,
                "list_tool_groups",
                "describe_tool",
                "call_tool"
            ]
        ),
        "the pages together"
    );
    let (client, _) = connect(&stack.url(), &auth).await;
    let tools = client.list_all_tools().await.expect("rmcp tools/list");
    seen.add("rmcp list_all_tools", to_value(&tools).to_string());

    // The search tool: many queries, pages, groups (also a forbidden group).
    let queries = [
        "refund a stripe charge",
        "stripe_refund_charge",
        "jira ticket",
        "create",
        "list",
        "get",
        "send an email",
        "slow progress",
        "github",
        "stripe",
    ];
    let mut found_any = false;
    let mut id = 200;
    for q in queries {
        for args in [
            json!({"query": q}),
            json!({"query": q, "offset": 5, "limit": 5}),
            json!({"query": q, "group": "stripe"}),
            json!({"query": q, "group": "slack"}),
            json!({"query": q, "namespace": "mcp_upstream"}),
        ] {
            id += 1;
            let r = probe(stack, &auth, &mut seen, call_request(id, TOOL_SEARCH, args)).await;
            let result = result_of(&r, id);
            let text = result["content"][0]["text"].as_str().unwrap_or("");
            found_any |= SUPPORT_PROGRESSIVE
                .iter()
                .chain(&SUPPORT_EAGER)
                .any(|n| mentions(text, n));
        }
    }
    assert!(
        found_any,
        "the searches found none of the caller's own tools"
    );

    // describe_tool, call_tool, list_tool_groups.
    for args in [
        json!({"names": ["stripe_refund_charge"]}),
        json!({"names": ["stripe_refund_charge", "github_list_issues", "jira_get_ticket"]}),
        json!({"names": ["slow_progress"]}),
    ] {
        id += 1;
        probe(
            stack,
            &auth,
            &mut seen,
            call_request(id, "describe_tool", args),
        )
        .await;
    }
    for args in [
        json!({"name": "stripe_refund_charge", "arguments": {"charge_id": "ch_1", "amount": 1}}),
        json!({"name": "jira_get_ticket", "arguments": {"ticket_key": "ENG-1"}}),
        json!({"name": "slow_progress", "arguments": {"steps": 1, "delay_ms": 1}}),
        json!({"name": "github_list_issues", "arguments": {"owner": "o", "repo": "r"}}),
    ] {
        id += 1;
        probe(stack, &auth, &mut seen, call_request(id, "call_tool", args)).await;
    }
    id += 1;
    let r = probe(
        stack,
        &auth,
        &mut seen,
        call_request(id, "list_tool_groups", json!({})),
    )
    .await;
    let groups: Value = serde_json::from_str(
        result_of(&r, id)["content"][0]["text"]
            .as_str()
            .unwrap_or("null"),
    )
    .unwrap_or(Value::Null);
    assert_eq!(
        groups,
        json!([{"group": "github", "tools": 8}, {"group": "slack", "tools": 8}]),
        "{}",
        r.text()
    );

    // Direct calls of forbidden tools (eager-but-forbidden, progressive, the server's own).
    for name in [
        "stripe_refund_charge",
        "jira_get_ticket",
        "slow_progress",
        "stripe_get_charge",
    ] {
        id += 1;
        let r = probe(stack, &auth, &mut seen, call_request(id, name, json!({}))).await;
        let error = &r.response_for(&json!(id)).expect("a response")["error"];
        assert_eq!(error["code"], -32602, "{}", r.text());
        assert_eq!(
            error["message"],
            format!("Unknown tool: {name}"),
            "{}",
            r.text()
        );
    }
    let refused = client
        .call_tool(call(
            "stripe_refund_charge",
            json!({"charge_id": "ch_1", "amount": 1}),
        ))
        .await;
    seen.add(
        "rmcp tools/call stripe_refund_charge",
        format!("{refused:?}"),
    );
    assert_unknown_tool(refused, "stripe_refund_charge");
    let _ = client.cancel().await;

    // Protocol 2026-07-28: the method and tool name in headers.
    let mut h2026: Vec<(&str, &str)> = mcp::headers_2026("tools/list", None);
    h2026.extend_from_slice(&auth);
    let body = json!({"jsonrpc": "2.0", "id": "l-2026", "method": "tools/list", "params": {"_meta": mcp::meta_2026()}});
    let resp = rpc(&stack.url(), &h2026, &body).await;
    assert_eq!(resp.status, 200, "{}", resp.text());
    seen.add(body.to_string(), resp.text());
    for (name, args) in [
        (
            "stripe_refund_charge",
            json!({"charge_id": "ch_1", "amount": 1}),
        ),
        (TOOL_SEARCH, json!({"query": "refund a stripe charge"})),
        (
            "call_tool",
            json!({"name": "stripe_refund_charge", "arguments": {}}),
        ),
    ] {
        let mut h: Vec<(&str, &str)> = mcp::headers_2026("tools/call", Some(name));
        h.extend_from_slice(&auth);
        let body = json!({"jsonrpc": "2.0", "id": "c-2026", "method": "tools/call",
            "params": {"name": name, "arguments": args, "_meta": mcp::meta_2026()}});
        let resp = rpc(&stack.url(), &h, &body).await;
        assert_eq!(resp.status, 200, "{}", resp.text());
        seen.add(body.to_string(), resp.text());
    }

    // The HTTP search endpoint.
    for q in queries {
        for body in [
            json!({"query": q, "limit": 5}),
            json!({"query": q, "limit": 5, "offset": 5, "namespace": NAMESPACE}),
            json!({"query": q, "group": "stripe"}),
            json!({"query": q, "namespace": "mcp_upstream"}),
            json!({"query": q, "namespace": "elsewhere"}),
            json!({"query": q, "namespace": mcp_tool_search_core::Entry::Prompt.catalog_key(NAMESPACE)}),
        ] {
            let (status, _, v) = http_search(stack, &auth, body.to_string().as_bytes()).await;
            // A listed namespace with no catalog (the route's is NAMESPACE) answers 404; one
            // neither the route's nor listed, or an internal key, 403.
            let want = if body["namespace"] == "mcp_upstream" {
                404
            } else if body["namespace"].as_str().is_some_and(|ns| ns != NAMESPACE) {
                403
            } else {
                200
            };
            assert_eq!(status, want, "POST {SEARCH_PATH} {body}: {v}");
            seen.add(body.to_string(), v.to_string());
        }
    }
    seen
}

/// For one restricted caller, no path (list pages, search results and description,
/// describe_tool, call_tool, list_tool_groups, direct calls, 2026-07-28 headers, the HTTP search
/// endpoint) returns or names a tool its policy forbids; and no forbidden call reaches the
/// upstream. Once with request headers held until the body is read, once without.
#[tokio::test]
async fn no_path_names_a_forbidden_tool() {
    let mut config = plugin_config(json!({"source": "jwt_metadata"}));
    // `mcp_upstream`: a namespace the HTTP endpoint may read that has no catalog.
    config["search"] = json!({"result_format": "summary", "http_namespaces": ["mcp_upstream"]});
    let paged = CatalogOptions {
        stateless: true,
        page_size: 50,
        ..CatalogOptions::default()
    };
    let setup = Setup::new(config)
        .catalog(paged)
        .jwt(jwt_filter(JwtRequirement::Required));
    let streaming = setup.clone().start("authz_no_leak_streaming");
    let holding = setup.holding().start("authz_no_leak_holding");
    within("no_path_names_a_forbidden_tool", async {
        let allowed = union(&SUPPORT_EAGER, &SUPPORT_PROGRESSIVE);
        let forbidden: Vec<String> = catalog_names()
            .into_iter()
            .filter(|n| !allowed.contains(n))
            .collect();
        assert_eq!(forbidden.len(), 301 - 16);
        let token = key().token("alice", &["support"]);
        for stack in [&streaming, &holding] {
            let seen = probe_every_path(stack, &token).await;
            eprintln!("{} exchanges checked", seen.0.len());
            seen.assert_no_forbidden(&forbidden);
            let forbidden_refs: Vec<&str> = forbidden.iter().map(String::as_str).collect();
            stack.assert_never_called(&forbidden_refs);
            stack.assert_never_called(&[
                TOOL_SEARCH,
                "describe_tool",
                "call_tool",
                "list_tool_groups",
            ]);
            let rec = stack.recorded();
            assert!(
                rec.contains(&"tools/call github_list_issues".to_owned()),
                "call_tool of an allowed tool reaches the upstream: {rec:?}"
            );
        }
    })
    .await;
}

// ---- the HTTP search endpoint ---------------------------------------------------------------

/// `POST /mcp/search` answers with full definitions filtered by the caller's policy, rejects
/// malformed bodies with a 400 naming the problem and other methods with a 405; `GET
/// /mcp/search/health` reports the mode and the learned catalogs.
#[tokio::test]
async fn http_search_endpoint_follows_the_policy() {
    let stack = metadata_setup(JwtRequirement::Required).start("authz_http_search");
    within("http_search_endpoint_follows_the_policy", async {
        let health_url = stack.envoy.url(&format!("{SEARCH_PATH}/health"));
        let (status, ct, body) = mcp::get(&health_url).await.unwrap();
        let health: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        assert_eq!((status, ct.as_str()), (200, "application/json"), "{health}");
        assert_eq!(health["search"], json!({"status": "ok", "mode": "lexical"}), "{health}");

        let k = key();
        let support = bearer(&k.token("alice", &["support"]));
        let billing = bearer(&k.token("bob", &["billing"]));
        let as_support = [("authorization", support.as_str())];
        let as_billing = [("authorization", billing.as_str())];
        // The catalog is learned from a listing passing through.
        let (direct, _) = connect(&stack.upstream.mcp_url(), &[]).await;
        let upstream: Vec<Value> = direct.list_all_tools().await.unwrap().iter().map(to_value).collect();
        let _ = direct.cancel().await;
        let resp = rpc(&stack.url(), &as_support, &list_request(1, None)).await;
        assert_eq!(resp.status, 200, "{}", resp.text());

        let (status, _, body) = mcp::get(&health_url).await.unwrap();
        let health: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        assert_eq!(status, 200);
        let age = health["catalogs"][NAMESPACE]["age_ms"].as_u64();
        assert!(age.is_some_and(|ms| ms < 60_000), "{health}");
        // Without a token the caller is unidentified: under `"default": "deny"` it may use none
        // of the 301 tools, and health counts what its caller may use.
        assert_eq!(
            health,
            json!({"search": {"status": "ok", "mode": "lexical"}, "catalogs": {NAMESPACE: {"tools": 0, "embedded": 0, "source": "learned", "stale": false, "age_ms": age}}})
        );

        for (auth, allowed, query, first) in [
            (&as_support, union(&SUPPORT_EAGER, &SUPPORT_PROGRESSIVE), "create a channel", "slack_create_channel"),
            (&as_billing, union(&BILLING_EAGER, &BILLING_PROGRESSIVE), "create a customer", "stripe_create_customer"),
            (&as_billing, union(&BILLING_EAGER, &BILLING_PROGRESSIVE), "refund a charge", "stripe_refund_charge"),
        ] {
            let body = json!({"query": query, "limit": 3});
            let (status, headers, v) = http_search(&stack, auth, body.to_string().as_bytes()).await;
            assert_eq!(status, 200, "{v}");
            assert_eq!(headers.get("content-type").and_then(|h| h.to_str().ok()), Some("application/json"));
            let tools = v["tools"].as_array().cloned().unwrap_or_default();
            assert!(!tools.is_empty() && tools.len() <= 3, "{v}");
            assert_eq!(names(&tools)[0], first, "{query}: {v}");
            for t in &tools {
                let n = t["name"].as_str().unwrap_or("?");
                assert!(allowed.contains(n), "{n} is not the caller's: {v}");
                assert_eq!(t, by_name(&upstream, n), "full definitions, as the upstream declared them");
            }
            let meta = &v["metadata"];
            assert_eq!(meta["strategy"], "bm25", "{v}");
            assert_eq!(meta["candidates"].as_u64(), Some(allowed.len() as u64), "{v}");
            assert_eq!(meta["returned"].as_u64(), Some(tools.len() as u64), "{v}");
            assert!(meta["matches"].as_u64() >= Some(tools.len() as u64), "{v}");
        }
        // Explicit namespace, clamped limit.
        let (status, _, v) = http_search(&stack, &as_support, format!(r#"{{"query":"list","limit":99,"namespace":"{NAMESPACE}"}}"#).as_bytes()).await;
        assert_eq!(status, 200, "{v}");
        assert_eq!(v["tools"].as_array().map(Vec::len), Some(5), "limit clamped to 5: {v}");

        // Malformed bodies: 400 with a JSON error naming the problem.
        let bad: [(&[u8], &str); 10] = [
            (b"", "query"),
            (b"not json", "not JSON"),
            (b"[1,2]", "JSON object"),
            (b"{}", "query"),
            (br#"{"query":""}"#, "query"),
            (br#"{"query":"   "}"#, "query"),
            (br#"{"query":5}"#, "query"),
            (br#"{"query":"x","limit":"3"}"#, "limit"),
            (br#"{"query":"x","limit":0}"#, "limit"),
            (br#"{"query":"x","offset":-1}"#, "offset"),
        ];
        for (body, word) in bad.iter().chain(&[
            (&br#"{"query":"x","namespace":7}"#[..], "namespace"),
            (&br#"{"query":"x","bogus":1}"#[..], "bogus"),
        ]) {
            let (status, headers, v) = http_search(&stack, &as_support, body).await;
            let shown = String::from_utf8_lossy(body);
            assert_eq!(status, 400, "{shown}: {v}");
            assert_eq!(headers.get("content-type").and_then(|h| h.to_str().ok()), Some("application/json"), "{shown}");
            let error = v["error"].as_str().unwrap_or_else(|| panic!("{shown}: no \"error\" string in {v}"));
            assert!(error.contains(word), "{shown}: the error should name `{word}`: {error}");
        }

        // Other methods: 405 with Allow.
        for method in ["GET", "PUT", "DELETE", "PATCH"] {
            let (status, headers, body) = mcp::request(method, &stack.envoy.url(SEARCH_PATH), &as_support, None)
                .await
                .unwrap();
            assert_eq!(status, 405, "{method}: {}", String::from_utf8_lossy(&body));
            assert_eq!(headers.get("allow").and_then(|h| h.to_str().ok()), Some("POST"), "{method}");
        }
        let (status, headers, _) = mcp::request("POST", &health_url, &[], Some(b"{}".to_vec())).await.unwrap();
        assert_eq!(status, 405);
        assert_eq!(headers.get("allow").and_then(|h| h.to_str().ok()), Some("GET"));

        let rec = stack.recorded();
        assert!(
            !rec.iter().any(|l| l.starts_with("tools/call")),
            "searches are answered by the filter, never upstream: {rec:?}"
        );
    })
    .await;
}

// ---- fail closed -----------------------------------------------------------------------------

/// The error that replaces a list the filter cannot filter for the caller (`Stream::refusal`).
fn refusal_message(reason: &str) -> String {
    format!("the tool list could not be filtered for this caller ({reason}); ask the operator")
}

/// Asserts `resp` is exactly the refusal of list `id`: HTTP 200 (the upstream's status is kept)
/// with one JSON-RPC message, error -32603.
fn assert_refused(resp: &RawResponse, id: i64, reason: &str) {
    assert_eq!(resp.status, 200, "{}", resp.text());
    let messages: Vec<&Value> = resp.messages.iter().map(|(_, m)| m).collect();
    assert_eq!(
        messages,
        [
            &json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32603, "message": refusal_message(reason)}})
        ],
        "{} {}",
        resp.content_type(),
        resp.text()
    );
}

/// A counter of the filter in Envoy's `/stats` (`wasmcustom.mcp_tool_search.NAME`), 0 when absent.
/// Waits for `line` in Envoy's log (it is flushed every 50 ms).
async fn assert_logged(envoy: &Envoy, line: &str) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !envoy.log().contains(line) {
        assert!(
            std::time::Instant::now() < deadline,
            "not in the Envoy log: {line}\n{}",
            envoy.log()
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// A listing the filter cannot rewrite (here: larger than `max_body_bytes`) must not reach a
/// restricted caller unfiltered. Without a policy, passing it through is the safe choice;
/// with one, it hands the caller every forbidden tool.
#[tokio::test]
async fn oversized_list_is_not_passed_through_unfiltered() {
    let mut config = plugin_config(json!({"source": "header", "header": "x-user-roles"}));
    config["max_body_bytes"] = json!(65536); // the 301-tool list is about 230 KB
    let sse = Setup::new(config.clone()).start("authz_oversized_sse");
    let json_up = Setup::new(config)
        .catalog(CatalogOptions {
            json: true,
            stateless: true,
            ..CatalogOptions::default()
        })
        .start("authz_oversized_json");
    within("oversized_list_is_not_passed_through_unfiltered", async {
        let allowed = union(&SUPPORT_EAGER, &SUPPORT_PROGRESSIVE);
        let forbidden: Vec<String> = catalog_names()
            .into_iter()
            .filter(|n| !allowed.contains(n))
            .collect();
        for (stack, content_type) in [(&sse, "text/event-stream"), (&json_up, "application/json")] {
            let mut seen = Exchanges::default();
            let body = list_request(1, None);
            let resp = rpc(&stack.url(), &[("x-user-roles", "support")], &body).await;
            seen.add(body.to_string(), resp.text());
            assert_refused(&resp, 1, "too_large");
            assert!(
                resp.content_type().starts_with(content_type),
                "{}",
                resp.content_type()
            );
            assert_eq!(
                nonzero_stats(stack),
                [
                    (
                        "wasmcustom.mcp_tool_search.passthrough.too_large".to_owned(),
                        1
                    ),
                    (
                        "wasmcustom.mcp_tool_search.responses_withheld".to_owned(),
                        1
                    )
                ]
            );
            seen.assert_no_forbidden(&forbidden);
        }
    })
    .await;
}

/// The filter's non-zero counters.
fn nonzero_stats(stack: &Stack) -> Vec<(String, u64)> {
    stack
        .envoy
        .stats("mcp_tool_search")
        .unwrap()
        .into_iter()
        .filter(|(_, v)| *v > 0)
        .collect()
}

/// An upstream that answers every request with one scripted raw HTTP/1.1 response (status line,
/// headers, body): the faults a real MCP server rarely shows on demand (a compressed or
/// unparseable list, another content type or status). Returns its address and the script.
fn scripted_upstream() -> (
    std::net::SocketAddr,
    std::sync::Arc<std::sync::Mutex<Vec<u8>>>,
) {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let script = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let shared = std::sync::Arc::clone(&script);
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            let mut reader = BufReader::new(conn.try_clone().unwrap());
            let mut length = 0;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 {
                    break;
                }
                let line = line.trim_end().to_ascii_lowercase();
                if line.is_empty() {
                    break;
                }
                if let Some(v) = line.strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0; length];
            let _ = reader.read_exact(&mut body);
            let response = shared.lock().unwrap().clone();
            let _ = conn.write_all(&response);
            let _ = conn.flush();
        }
    });
    (addr, script)
}

fn raw_response(status: &str, headers: &[(&str, &str)], body: &[u8]) -> Vec<u8> {
    let mut head = format!("HTTP/1.1 {status} X\r\nconnection: close\r\n");
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str(&format!("content-length: {}\r\n\r\n", body.len()));
    [head.into_bytes(), body.to_vec()].concat()
}

/// README "Stats": under a policy, a list the filter cannot filter for the caller (compressed,
/// another content type, unparseable; too large is above) is replaced by the JSON-RPC error,
/// counted by reason and logged at warning, in Envoy. A list under another status passes on
/// unchanged: that is what the code does, although README lists "not 200" among the reasons.
#[tokio::test]
async fn every_list_the_filter_cannot_read_is_refused_under_a_policy() {
    let dir = TestDir::new("authz_fail_closed").unwrap();
    let (addr, script) = scripted_upstream();
    let mut config = plugin_config(json!({"source": "header", "header": "x-user-roles"}));
    config["eager_patterns"] = json!(["*"]);
    let filter = FilterOptions {
        wasm: harness::filter_wasm().unwrap_or_else(|e| panic!("{e}")),
        config_json: config.to_string(),
    };
    let mut opts = EnvoyOptions::new(addr, Some(filter));
    opts.route_namespace = Some(NAMESPACE.to_owned());
    let envoy = Envoy::start(&opts, &dir).unwrap_or_else(|e| panic!("{e}"));
    within("every_list_the_filter_cannot_read_is_refused_under_a_policy", async {
        let list = serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": [
            {"name": "github_get_issue", "description": "Get an issue", "inputSchema": {"type": "object"}},
            {"name": "stripe_refund_charge", "description": "Refund a charge", "inputSchema": {"type": "object"}}
        ]}}))
        .unwrap();
        let auth = [("x-user-roles", "support")];
        let json_type = ("content-type", "application/json");
        // The control: the same list, readable, is filtered for the caller.
        *script.lock().unwrap() = raw_response("200", &[json_type], &list);
        let resp = rpc(&envoy.mcp_url(), &auth, &list_request(1, None)).await;
        assert_eq!(resp.status, 200, "{}", resp.text());
        assert_eq!(names(&listed(&resp, 1)), ["github_get_issue"]);
        assert_eq!(envoy.stat("lists_rewritten").unwrap(), 1);

        let unparseable = br#"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"stripe_refund_charge"},{]}}"#;
        // (response headers, body, reason, warning logged).
        type Case<'a> = (&'a [(&'a str, &'a str)], &'a [u8], &'a str, &'a str);
        let cases: [Case; 3] = [
            (
                &[json_type, ("content-encoding", "gzip")],
                b"\x1f\x8b\x08\x00compressed",
                "encoded",
                "tools/list response refused: it cannot be filtered for the caller (encoded)",
            ),
            (
                &[("content-type", "text/html")],
                &list,
                "content_type",
                "tools/list response refused: it cannot be filtered for the caller (content_type)",
            ),
            (
                &[json_type],
                unparseable,
                "unparseable",
                "tools/list response refused: it cannot be filtered for the caller (unparseable): tools/list response is not valid JSON",
            ),
        ];
        for (headers, body, reason, warning) in cases {
            *script.lock().unwrap() = raw_response("200", headers, body);
            let resp = rpc(&envoy.mcp_url(), &auth, &list_request(1, None)).await;
            assert_refused(&resp, 1, reason);
            assert_eq!(resp.content_type(), "application/json", "{reason}");
            assert_eq!(resp.header("content-encoding"), None, "{reason}");
            assert!(!mentions(&resp.text(), "stripe_refund_charge"), "{reason}");
            assert_eq!(envoy.stat(&format!("passthrough.{reason}")).unwrap(), 1, "{reason}");
            assert_logged(&envoy, warning).await;
        }
        *script.lock().unwrap() = raw_response("500", &[json_type], &list);
        let resp = rpc(&envoy.mcp_url(), &auth, &list_request(1, None)).await;
        assert_eq!((resp.status, resp.body.as_slice()), (500, list.as_slice()));
        assert_eq!(envoy.stat("passthrough.status").unwrap(), 1);
        assert_eq!(envoy.stat("lists_rewritten").unwrap(), 1);
    })
    .await;
}

/// A JSON-RPC batch (protocol 2025-03-26) of `tools/list` and a search-tool call: the filter
/// cannot split it, so under a policy it refuses it whole before the upstream (README
/// "Authorization"). A batch of `tools/list` and an upstream call goes upstream, and the listing
/// in the answer is still filtered for the restricted caller. The upstream here is
/// catalog-server's `/other`, which answers any request with the whole list (as id 1), standing
/// in for a batch-capable server.
#[tokio::test]
async fn mixed_batch_does_not_bypass_the_policy() {
    let mut config = plugin_config(json!({"source": "header", "header": "x-user-roles"}));
    config["mcp_paths"] = json!(["/mcp", "/other"]);
    let stack = Setup::new(config).start("authz_mixed_batch");
    within("mixed_batch_does_not_bypass_the_policy", async {
        let allowed = union(&SUPPORT_EAGER, &SUPPORT_PROGRESSIVE);
        let forbidden: Vec<String> = catalog_names()
            .into_iter()
            .filter(|n| !allowed.contains(n))
            .collect();
        let other = stack.envoy.url("/other");
        let auth = [("x-user-roles", "support")];
        let mut seen = Exchanges::default();
        let filtered = union(&SUPPORT_EAGER, &[TOOL_SEARCH, "list_tool_groups"]);

        // Control: a lone tools/list on that path is filtered.
        let single = list_request(1, None);
        let resp = rpc(&other, &auth, &single).await;
        assert_eq!(resp.status, 200, "{}", resp.text());
        assert_eq!(
            name_set(&listed(&resp, 1)),
            filtered,
            "a single tools/list on /other is rewritten"
        );
        seen.add(single.to_string(), resp.text());

        // tools/list + tool_search: refused whole, never upstream.
        let batch = json!([
            list_request(1, None),
            call_request(2, TOOL_SEARCH, json!({"query": "refund"}))
        ]);
        let before = stack.recorded().len();
        let resp = rpc(&other, &auth, &batch).await;
        seen.add(batch.to_string(), resp.text());
        assert_eq!(resp.status, 200, "{}", resp.text());
        let refused = json!({"code": -32600, "message": "batch refused: it calls a tool that is not available; send the requests one by one"});
        assert_eq!(
            serde_json::from_slice::<Value>(&resp.body).unwrap(),
            json!([
                {"jsonrpc": "2.0", "id": 1, "error": refused},
                {"jsonrpc": "2.0", "id": 2, "error": refused}
            ]),
            "{}",
            resp.text()
        );
        assert_eq!(stack.recorded().len(), before, "{:?}", stack.recorded());
        assert_eq!(stack.envoy.stat("calls_refused").unwrap(), 1);

        // tools/list + an allowed upstream call: upstream, and the list is filtered.
        let batch = json!([
            list_request(1, None),
            call_request(2, "github_get_issue", json!({}))
        ]);
        let resp = rpc(&other, &auth, &batch).await;
        seen.add(batch.to_string(), resp.text());
        assert_eq!(resp.status, 200, "{}", resp.text());
        assert_eq!(name_set(&listed(&resp, 1)), filtered, "{}", resp.text());
        assert_eq!(stack.envoy.stat("lists_rewritten").unwrap(), 2);
        assert_eq!(stack.envoy.stat("passthrough.mixed_batch").unwrap(), 0);
        seen.assert_no_forbidden(&forbidden);
    })
    .await;
}
