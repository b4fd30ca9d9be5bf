use super::private_key;
use super::*;
use crate::config::Config;

#[test]
fn keys_are_spelled_as_every_worker_of_this_layout_reads_them() {
    assert_eq!(PREFIX, "mcp-tool-search/v1/");
    assert_eq!(NAMESPACES, "mcp-tool-search/v1/namespaces");
    assert_eq!(EMBEDDINGS_CIRCUIT, "mcp-tool-search/v1/embeddings-circuit");
    assert_eq!(EMBEDDINGS_HEALTH, "mcp-tool-search/v1/embeddings-health");
    assert_eq!(FETCH_SECRET, "mcp-tool-search/v1/fetch-secret");
    let ns = "team-a";
    for (key, want) in [
        (catalog(ns), "catalog"),
        (version(ns), "version"),
        (index(ns), "index"),
        (index_version(ns), "index-version"),
        (vectors(ns), "vectors"),
        (vectors_version(ns), "vectors-version"),
        (embed_lease(ns), "embed-lease"),
        (fetch_lease(ns), "fetch-lease"),
        (meta(ns), "meta"),
    ] {
        assert_eq!(key, format!("mcp-tool-search/v1/team-a/{want}"));
    }
    assert_eq!(
        catalog(&Entry::Prompt.catalog_key(ns)),
        "mcp-tool-search/v1/team-a#prompts/catalog"
    );
}

#[test]
fn catalog_keys_round_trip() {
    for entry in Entry::ALL {
        let key = entry.catalog_key("team-a");
        assert_eq!(Entry::of_catalog_key(&key), (entry, "team-a"));
    }
    assert_eq!(Entry::Resource.catalog_key("a"), "a#resources");
    assert_eq!(
        Entry::ResourceTemplate.catalog_key("a"),
        "a#resource-templates"
    );
}

/// `search.http_namespaces` names namespaces: no catalog key but a namespace's own is one.
#[test]
fn no_internal_catalog_key_is_a_searchable_namespace() {
    let mut internal: Vec<String> = [Entry::Prompt, Entry::Resource, Entry::ResourceTemplate]
        .iter()
        .map(|e| e.catalog_key("team-a"))
        .collect();
    internal.push(private_key("team-a", "0123"));
    for key in internal {
        let e = Config::parse(&format!(
            r#"{{"search":{{"http_namespaces":["team-b",{key:?}]}}}}"#
        ))
        .unwrap_err()
        .to_string();
        assert!(
            e.starts_with(&format!(
                "plugin configuration field `search.http_namespaces[1]` is {key:?}; expected a namespace name without '#' or '@'"
            )),
            "{e}"
        );
    }
}
