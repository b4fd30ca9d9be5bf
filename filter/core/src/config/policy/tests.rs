use super::*;
use serde_json::json;

fn policy(v: Value) -> Policy {
    Policy::parse(&v).unwrap()
}

#[test]
fn an_unidentified_caller_gets_nothing_when_a_deny_rule_exists() {
    let policy = |rules: serde_json::Value| {
        Policy::parse(&json!({
            "identity": {"source": "header", "header": "x-roles"},
            "rules": rules,
            "default": "allow"
        }))
        .unwrap()
    };
    let deny_interns = policy(json!([
        {"claim": "roles", "values": ["intern"], "tools": ["*_delete_*"], "effect": "deny"}
    ]));
    let nobody = Caller::anonymous();
    assert!(!deny_interns.allows(&nobody, "ns", "github_get_issue"));
    assert!(!deny_interns.allows(&nobody, "ns", "repo_delete_file"));
    let staff = Caller::from_header("roles", "staff");
    assert!(deny_interns.allows(&staff, "ns", "repo_delete_file"));
    // Without deny rules the default still decides for everyone.
    let open = policy(json!([]));
    assert!(open.allows(&nobody, "ns", "github_get_issue"));
}

#[test]
fn rules_first_match_wins_then_default() {
    let p = policy(json!({
        "identity": {"source": "jwt_metadata"},
        "rules": [
            {"claim": "roles", "values": ["support"], "tools": ["github_delete_*"], "effect": "deny"},
            {"claim": "roles", "values": ["support"], "tools": ["github_*", "zendesk_*"]},
            {"claim": "scope", "values": ["admin:all"], "namespaces": ["demo"]},
            {"claim": "sub", "values": ["*"], "tools": ["weather"]}
        ]
    }));
    let support = Caller::from_payload(json!({"sub": "u1", "roles": ["support"]}));
    assert!(p.allows(&support, "demo", "github_get_issue"));
    assert!(!p.allows(&support, "demo", "github_delete_issue"));
    assert!(!p.allows(&support, "demo", "stripe_refund"));
    assert!(p.allows(&support, "demo", "weather"), "any subject");
    let admin = Caller::from_payload(json!({"scope": "read admin:all"}));
    assert!(p.allows(&admin, "demo", "stripe_refund"));
    assert!(!p.allows(&admin, "other", "stripe_refund"));
    assert!(!p.allows(&Caller::anonymous(), "demo", "weather"));
    // Narrowed to a caller, the answer needs no name when it cannot depend on one.
    assert!(p.scope(&admin, "demo").allows_everything());
    assert!(!p.scope(&admin, "other").allows_everything());
    assert!(!p.scope(&support, "demo").allows_everything());
    let open = policy(json!({
        "identity": {"source": "jwt_metadata"},
        "rules": [{"claim": "roles", "values": ["x"], "tools": ["a_*"]}],
        "default": "allow"
    }));
    assert!(open.scope(&support, "demo").allows_everything());
    let x = Caller::from_payload(json!({"roles": ["x"]}));
    assert!(open.scope(&x, "demo").allows_everything());
}

/// Behind `mcp_router` (servers `alpha` and `beta`, separator `__`), a caller allowed only
/// `alpha` tries to reach `beta` by every spelling of a tool name; the router splits at the
/// first `__` and routes by the exact prefix, so each name must be decided by that prefix.
#[test]
fn a_servers_rule_holds_against_every_spelling_of_another_server() {
    let config = crate::config::Config::parse(
        r#"{"group_separator": "__",
            "authorization": {"identity": {"source": "header", "header": "x-roles"},
              "rules": [{"claim": "roles", "values": ["pay"], "servers": ["alpha"]}]}}"#,
    )
    .unwrap();
    let policy = config.authorization.as_ref().unwrap();
    let pay = Caller::from_header("roles", "pay");
    let scope = policy.scope(&pay, "gateway");
    assert!(scope.allows("alpha__stripe_refund_charge"));
    // The router sends this to `alpha` (tool `beta__x`): alpha's business, not beta's.
    assert!(scope.allows("alpha__beta__x"));
    for name in [
        "beta__square_refund_payment",
        "beta___x",       // server `beta`, tool `_x`
        "BETA__x",        // no server `BETA`: the router refuses, and so do we
        "Alpha__x",       // server names are compared exactly, as the router does
        "alpha_x",        // no separator: no server
        "alpha",          // no separator
        "__alpha__x",     // server `` (empty)
        "_alpha__x",      // server `_alpha`
        "alpha \u{0}__x", // not `alpha`
        "beta__alpha__x", // server `beta`
        "",
    ] {
        assert!(!scope.allows(name), "{name:?} must be refused");
    }
    assert!(!scope.allows_everything());
    // A deny rule by server holds the same way; other servers stay allowed.
    let config = crate::config::Config::parse(
        r#"{"group_separator": "__",
            "authorization": {"identity": {"source": "header", "header": "x-roles"},
              "rules": [{"claim": "roles", "values": ["*"], "servers": ["beta", "gam*"], "effect": "deny"},
                        {"claim": "roles", "values": ["*"], "tools": ["*"]}]}}"#,
    )
    .unwrap();
    let policy = config.authorization.as_ref().unwrap();
    let scope = policy.scope(&pay, "gateway");
    assert!(!scope.allows("beta__x"));
    assert!(!scope.allows("gamma__x"));
    assert!(!scope.allows("beta____x"));
    assert!(scope.allows("alpha__beta__x"));
    assert!(scope.allows("betamax__x"));
    assert!(scope.allows("plain"));
    assert!(!scope.allows_everything());
}

#[test]
fn servers_and_tools_both_narrow_a_rule() {
    let config = crate::config::Config::parse(
        r#"{"group_separator": "__",
            "authorization": {"identity": {"source": "header", "header": "x-roles"},
              "rules": [{"claim": "roles", "values": ["r"], "servers": ["alpha"], "tools": ["*_get_*"]},
                        {"claim": "roles", "values": ["r"], "servers": ["*"], "tools": ["*__echo"]}],
              "default": "deny"}}"#,
    )
    .unwrap();
    let policy = config.authorization.as_ref().unwrap();
    let scope = policy.scope(&Caller::from_header("roles", "r"), "gateway");
    assert!(scope.allows("alpha__github_get_issue"));
    assert!(!scope.allows("alpha__github_create_issue"));
    assert!(!scope.allows("beta__github_get_issue"));
    assert!(scope.allows("beta__echo"));
    // `*` over servers still needs a server: an unprefixed name is not one.
    assert!(!scope.allows("echo"));
}

#[test]
fn servers_rules_need_a_separator_and_names() {
    let err = |text: &str| crate::config::Config::parse(text).unwrap_err().to_string();
    let e = err(
        r#"{"authorization": {"identity": {"source": "header", "header": "x"},
        "rules": [{"claim": "roles", "values": ["a"]}, {"claim": "roles", "values": ["a"], "servers": ["alpha"]}]}}"#,
    );
    assert!(e.contains("`group_separator` is missing"), "{e}");
    assert!(
        e.contains("`authorization.rules[1].servers` names servers"),
        "{e}"
    );
    let e = err(
        r#"{"group_separator": "__", "authorization": {"identity": {"source": "header", "header": "x"},
        "rules": [{"claim": "roles", "values": ["a"], "servers": []}]}}"#,
    );
    assert!(e.contains("`authorization.rules[0].servers` is []"), "{e}");
    let e = err(
        r#"{"group_separator": "__", "authorization": {"identity": {"source": "header", "header": "x"},
        "rules": [{"claim": "roles", "values": ["a"], "servers": "alpha"}]}}"#,
    );
    assert!(e.contains("`authorization.rules[0].servers`"), "{e}");
    let e = err(
        r#"{"authorization": {"identity": {"source": "header", "header": "x"},
        "rules": [{"claim": "roles", "values": ["a"], "server": ["alpha"]}]}}"#,
    );
    assert!(e.contains("servers"), "the known fields are named: {e}");
}

#[test]
fn identity_sources() {
    let c = Caller::from_header("roles", " a, b ,,c");
    assert_eq!(c.values("roles"), ["a", "b", "c"]);
    // {"sub":"x","realm":{"roles":["r1"]}} as base64url without padding.
    let c = Caller::from_base64url_json("eyJzdWIiOiJ4IiwicmVhbG0iOnsicm9sZXMiOlsicjEiXX19");
    assert_eq!(c.values("sub"), ["x"]);
    assert_eq!(c.values("realm.roles"), ["r1"]);
    assert_eq!(
        Caller::from_base64url_json("not base64!").values("sub"),
        Vec::<String>::new()
    );
    assert_eq!(
        Caller::from_base64url_json("bnVsbA").values("sub"),
        Vec::<String>::new()
    );
}

/// An identity header sent empty (or with nothing but separators) names nobody, as a
/// missing one does. Rules cannot name either (both have no claim value); the difference
/// would be the default, which a caller nobody identified does not get when the policy has
/// a deny rule: an empty header must not buy it.
#[test]
fn an_empty_identity_header_is_no_identity() {
    let policy = policy(json!({
        "identity": {"source": "header", "header": "x-roles"},
        "rules": [{"claim": "roles", "values": ["intern"], "tools": ["*_delete_*"], "effect": "deny"}],
        "default": "allow"
    }));
    let identify = |headers: &[(&str, &str)]| {
        let headers: Vec<(String, String)> = headers
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Caller::identify(&policy.identity, &headers, || None)
    };
    let missing = identify(&[]);
    assert_eq!(missing, Caller::anonymous());
    assert!(!policy.allows(&missing, "ns", "github_get_issue"));
    for value in ["", " ", "\t", ",", " , ,, "] {
        let caller = identify(&[("x-roles", value)]);
        assert_eq!(caller, missing, "{value:?}");
        assert!(
            !policy.allows(&caller, "ns", "github_get_issue"),
            "{value:?}"
        );
    }
    let staff = identify(&[("X-Roles", " staff ,")]);
    assert_eq!(staff.values("roles"), ["staff"]);
    assert!(policy.allows(&staff, "ns", "repo_delete_file"));
    assert_eq!(Caller::from_header("roles", " ,, "), Caller::anonymous());
    let jwt = IdentitySource::JwtHeader {
        header: "x-jwt".into(),
    };
    for value in ["", "  "] {
        let headers = vec![("x-jwt".to_string(), value.to_string())];
        assert_eq!(
            Caller::identify(&jwt, &headers, || None),
            Caller::anonymous()
        );
    }
}

/// Why "no identity" is the safe reading of an empty header: whatever the rules, a caller
/// nobody identified may use no more than one identified with no claim values.
#[test]
fn nobody_may_use_no_more_than_a_caller_without_values() {
    let no_values = Caller::from_payload(json!({"roles": []}));
    for rules in [
        json!([]),
        json!([{"claim": "roles", "values": ["*"], "tools": ["a*"], "effect": "deny"}]),
        json!([{"claim": "roles", "values": ["x"], "tools": ["a*"]}]),
        json!([{"claim": "roles", "values": ["*"], "tools": ["a*"]}]),
        json!([{"claim": "roles", "values": ["x"], "tools": ["b*"], "effect": "deny"}]),
    ] {
        for default in ["allow", "deny"] {
            let p = policy(
                json!({"identity": {"source": "jwt_metadata"}, "rules": rules, "default": default}),
            );
            for tool in ["a1", "b1", "c1"] {
                if p.allows(&Caller::anonymous(), "ns", tool) {
                    assert!(p.allows(&no_values, "ns", tool), "{rules} {default} {tool}");
                }
            }
        }
    }
}

#[test]
fn config_errors() {
    let err = |v: Value| Policy::parse(&v).unwrap_err().to_string();
    assert!(err(json!({})).contains("`authorization.identity` is missing"));
    assert!(err(json!({"identity":{"source":"cookie"}}))
        .contains("`authorization.identity.source` is \"cookie\""));
    assert!(err(json!({"identity":{"source":"header"}}))
        .contains("`authorization.identity.header` is missing"));
    assert!(
        err(json!({"identity":{"source":"header","header":"x"},"rules":[{"claim":"roles"}]}))
            .contains("`authorization.rules[0].values` is missing")
    );
    assert!(
        err(json!({"identity":{"source":"header","header":"x"},"default":"maybe"}))
            .contains("`authorization.default` is \"maybe\"")
    );
    assert!(err(json!({"identity":{"source":"jwt_metadata","bogus":1}}))
        .contains("`authorization.identity.bogus` is not known"));
}

#[test]
fn a_rule_about_servers_denies_every_resource_and_allows_none() {
    let policy = |effect: &str| {
        let config = crate::config::Config::parse(&format!(
            r#"{{"group_separator":"__","authorization":{{"identity":{{"source":"header","header":"x-r"}},
            "rules":[{{"claim":"roles","values":["contractor"],"servers":["billing"],"effect":"{effect}"}}],
            "default":"{}"}}}}"#,
            if effect == "deny" { "allow" } else { "deny" }
        ))
        .unwrap();
        config.authorization.unwrap()
    };
    let contractor = Caller::from_header("roles", "contractor");
    let deny = policy("deny");
    let scope = deny.scope(&contractor, "ns");
    assert!(!scope.allows("billing__refund"));
    assert!(scope.allows("crm__lookup"));
    assert!(!scope.allows_entry(Entry::Prompt, "billing__summary"));
    assert!(!scope.allows_entry(Entry::Resource, "billing://ledger"));
    assert!(!scope.allows_entry(Entry::ResourceTemplate, "crm://{id}"));
    let allow = policy("allow");
    let scope = allow.scope(&contractor, "ns");
    assert!(scope.allows("billing__refund"));
    assert!(!scope.allows_entry(Entry::Resource, "billing://ledger"));
}

/// README "Authorization", identity sources: `jwt_metadata` reads the payload where the
/// operator's `filter` and `payload_key` say (jwt_authn's `payload_in_metadata`), and nowhere
/// else; `header` puts the header's values under the configured `claim`, which rules name.
#[test]
fn identity_sources_read_where_they_are_configured() {
    let jwt = policy(json!({
        "identity": {"source": "jwt_metadata", "filter": "corp.jwt", "payload_key": "claims"},
        "rules": [{"claim": "groups", "values": ["ops"], "tools": ["*"]}],
        "default": "deny"
    }));
    let payload = json!({"sub": "u1", "groups": ["ops"]});
    let identify = |bytes: Vec<u8>| Caller::identify(&jwt.identity, &[], || Some(bytes));
    let ops = identify(crate::config::metadata::encode_filter_metadata(
        "corp.jwt", "claims", &payload,
    ));
    assert_eq!(ops.values("groups"), ["ops"]);
    assert!(jwt.allows(&ops, "ns", "github_get_issue"));
    // The default places (envoy.filters.http.jwt_authn, jwt_payload), or the right filter with
    // another key: nobody.
    for (filter, key) in [
        ("envoy.filters.http.jwt_authn", "jwt_payload"),
        ("corp.jwt", "jwt_payload"),
        ("envoy.filters.http.jwt_authn", "claims"),
    ] {
        let caller = identify(crate::config::metadata::encode_filter_metadata(
            filter, key, &payload,
        ));
        assert_eq!(caller, Caller::anonymous(), "{filter} {key}");
        assert!(!jwt.allows(&caller, "ns", "github_get_issue"));
    }
    let defaults = policy(json!({"identity": {"source": "jwt_metadata"}, "rules": []}));
    assert_eq!(
        defaults.identity,
        IdentitySource::JwtMetadata {
            filter: "envoy.filters.http.jwt_authn".into(),
            key: "jwt_payload".into()
        }
    );

    let header = policy(json!({
        "identity": {"source": "header", "header": "X-Teams", "claim": "teams"},
        "rules": [{"claim": "teams", "values": ["billing"], "tools": ["stripe_*"]}],
        "default": "deny"
    }));
    let headers = vec![("x-teams".to_string(), "billing, support".to_string())];
    let billing = Caller::identify(&header.identity, &headers, || None);
    assert_eq!(billing.values("teams"), ["billing", "support"]);
    assert!(billing.values("roles").is_empty());
    assert!(header.allows(&billing, "ns", "stripe_refund_charge"));
    assert!(!header.allows(&billing, "ns", "github_get_issue"));
}
