use super::*;

#[test]
fn data_parses() {
    if let Err(e) = data() {
        panic!("data/catalog-services.json: {e}");
    }
    assert_eq!(base_size(), 415);
}

/// The e2e tests and the demo serve the checked-in file: it must be what the data yields.
#[test]
fn checked_in_300_set_is_current() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/data/catalog-300.jsonl");
    let file = std::fs::read_to_string(path).unwrap();
    assert!(
        file == jsonl(300),
        "regenerate {path} with gen-catalog --count 300"
    );
}

#[test]
fn deterministic_and_prefix_stable() {
    let a = jsonl(300);
    let b = jsonl(300);
    assert_eq!(a, b);
    let big = jsonl(1000);
    assert!(big.starts_with(&a));
}

#[test]
fn names_unique_legal_and_props_in_range() {
    let tools = generate(5000);
    assert_eq!(tools.len(), 5000);
    let mut seen = HashSet::new();
    for t in &tools {
        assert!(is_legal_name(&t.name), "{}", t.name);
        assert!(seen.insert(t.name.clone()), "duplicate {}", t.name);
        let v: serde_json::Value = serde_json::from_str(&t.json.to_json_string()).unwrap();
        let n = v["inputSchema"]["properties"].as_object().unwrap().len();
        assert!((2..=5).contains(&n), "{} has {n} properties", t.name);
        for r in v["inputSchema"]["required"].as_array().unwrap() {
            assert!(v["inputSchema"]["properties"]
                .get(r.as_str().unwrap())
                .is_some());
        }
    }
}

#[test]
fn the_300_set_has_what_the_tests_use() {
    let names: Vec<String> = generate(300).into_iter().map(|t| t.name).collect();
    for want in [
        "stripe_refund_charge",
        "github_get_issue",
        "github_get_pull_request",
        "github_get_repository",
        "github_get_file_contents",
        "slack_post_message",
        "jira_transition_ticket",
        "gcal_list_events",
    ] {
        assert!(names.iter().any(|n| n == want), "{want} missing");
    }
    assert!(base_size() > 300);
}
