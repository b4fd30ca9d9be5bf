//! Every shared-data key the filter reads or writes, and how each is spelled. Shared data is one
//! flat map of string keys with no listing call (proxy-wasm ABI 0.2.1); every key of the filter
//! starts with [`PREFIX`].
//!
//! Keys of one namespace are `<PREFIX><catalog key><suffix>`. The catalog key is the
//! namespace itself for its tools, the namespace with a kind's mark for its prompts and
//! resources (`Entry::catalog_key`, below), or one credential's private catalog
//! ([`private_key`], `<ns>@private-<digest>`; [`base_namespace`] reads the namespace back out
//! of it).

use crate::config::entries::Entry;

/// Spells a key under [`PREFIX`] as a constant.
macro_rules! prefixed {
    ($key:literal) => {
        concat!("mcp-tool-search/v1/", $key)
    };
}

/// What every key of the filter starts with: the filter's name and the key layout's version.
pub const PREFIX: &str = prefixed!("");

/// Every namespace with a catalog, a sorted JSON list of catalog keys: shared data has no listing
/// call (ABI 0.2.1).
pub const NAMESPACES: &str = prefixed!("namespaces");
/// The query-embedding circuit breaker's state, JSON (`store::circuit::Circuit`).
pub const EMBEDDINGS_CIRCUIT: &str = prefixed!("embeddings-circuit");
/// Why semantic ranking is degraded, as text (empty: it is not).
pub const EMBEDDINGS_HEALTH: &str = prefixed!("embeddings-health");
/// This Envoy's random secret (hex) that marks the filter's own fetches through a loopback
/// cluster.
pub const FETCH_SECRET: &str = prefixed!("fetch-secret");

/// Suffix of a catalog's definitions (JSON, `Catalog::to_json`).
pub const CATALOG: &str = "/catalog";
/// Suffix of a catalog's short version, read on every request before the catalog.
pub const VERSION: &str = "/version";
/// Suffix of one worker's index of a catalog version (the `snapshot` of the index module), for the others.
pub const INDEX: &str = "/index";
/// Suffix of the catalog version the index was built from, written after the index.
pub const INDEX_VERSION: &str = "/index-version";
/// Suffix of the tool vectors (binary, keyed by text hash).
pub const VECTORS: &str = "/vectors";
/// Suffix of the vectors' version.
pub const VECTORS_VERSION: &str = "/vectors-version";
/// Suffix of the lease of the VM that embeds the catalog's tools now (`<owner> <until ms>`).
pub const EMBED_LEASE: &str = "/embed-lease";
/// Suffix of the lease of the VM that fetches the catalog now (`<owner> <until ms>`).
pub const FETCH_LEASE: &str = "/fetch-lease";
/// Suffix of the catalog's meta, JSON (`store::CatalogMeta`: age, source, origin, last error).
pub const META: &str = "/meta";

/// Suffix (before a slot number) of what the searches of the sessions of one slot returned
/// (`insights::link`).
pub const LINK: &str = "/link/";

/// Suffix of a namespace's search insights, JSON (`insights::Tally`), every worker's merged.
pub const INSIGHTS: &str = "/insights-tally";
/// Suffix of the names of the tools a search of the namespace ever returned, one per line.
pub const INSIGHTS_RETURNED: &str = "/insights-returned";

/// Marks the catalog key of a namespace's prompts.
pub const PROMPTS_MARK: &str = "#prompts";
/// Marks the catalog key of a namespace's resources.
pub const RESOURCES_MARK: &str = "#resources";
/// Marks the catalog key of a namespace's resource templates.
pub const RESOURCE_TEMPLATES_MARK: &str = "#resource-templates";

fn of(catalog_key: &str, suffix: &str) -> String {
    format!("{PREFIX}{catalog_key}{suffix}")
}

/// The key of a catalog's definitions.
pub fn catalog(catalog_key: &str) -> String {
    of(catalog_key, CATALOG)
}

/// The key of a catalog's version.
pub fn version(catalog_key: &str) -> String {
    of(catalog_key, VERSION)
}

/// The key of a catalog's published index.
pub fn index(catalog_key: &str) -> String {
    of(catalog_key, INDEX)
}

/// The key of the catalog version the published index was built from.
pub fn index_version(catalog_key: &str) -> String {
    of(catalog_key, INDEX_VERSION)
}

/// The key of a catalog's tool vectors.
pub fn vectors(catalog_key: &str) -> String {
    of(catalog_key, VECTORS)
}

/// The key of the tool vectors' version.
pub fn vectors_version(catalog_key: &str) -> String {
    of(catalog_key, VECTORS_VERSION)
}

/// The key of a catalog's embedding lease.
pub fn embed_lease(catalog_key: &str) -> String {
    of(catalog_key, EMBED_LEASE)
}

/// The key of a catalog's fetch lease.
pub fn fetch_lease(catalog_key: &str) -> String {
    of(catalog_key, FETCH_LEASE)
}

/// The key of a catalog's meta.
pub fn meta(catalog_key: &str) -> String {
    of(catalog_key, META)
}

/// The key of a namespace's search insights.
pub fn insights(namespace: &str) -> String {
    of(namespace, INSIGHTS)
}

/// The key of the tools a namespace's searches ever returned.
pub fn insights_returned(namespace: &str) -> String {
    of(namespace, INSIGHTS_RETURNED)
}

/// The key of one slot of a namespace's search links.
pub fn link(namespace: &str, slot: usize) -> String {
    format!("{PREFIX}{namespace}{LINK}{slot}")
}

// The kinds of entry are configuration (`config` sits below `store`); their catalog keys are
// spelled here, with every other part of a key.
impl Entry {
    /// Where this kind's catalog of `namespace` is kept: tools in the namespace's own, the
    /// others beside it (`#` is not in a route's namespace or a cluster name).
    pub fn catalog_key(self, namespace: &str) -> String {
        match self {
            Entry::Tool => namespace.to_string(),
            Entry::Prompt => format!("{namespace}{PROMPTS_MARK}"),
            Entry::Resource => format!("{namespace}{RESOURCES_MARK}"),
            Entry::ResourceTemplate => format!("{namespace}{RESOURCE_TEMPLATES_MARK}"),
        }
    }

    /// The kind and namespace of a catalog key.
    pub fn of_catalog_key(key: &str) -> (Entry, &str) {
        for (entry, mark) in [
            (Entry::Prompt, PROMPTS_MARK),
            (Entry::Resource, RESOURCES_MARK),
            (Entry::ResourceTemplate, RESOURCE_TEMPLATES_MARK),
        ] {
            if let Some(namespace) = key.strip_suffix(mark) {
                return (entry, namespace);
            }
        }
        (Entry::Tool, key)
    }
}

/// The mark between a namespace and a credential's digest in a private catalog key.
pub const PRIVATE_MARK: &str = "@private-";

/// The catalog key of one credential in `namespace` (its lists are `cacheScope: "private"`).
pub fn private_key(namespace: &str, credential: &str) -> String {
    format!("{namespace}{PRIVATE_MARK}{credential}")
}

/// The namespace a catalog key belongs to.
pub fn base_namespace(key: &str) -> &str {
    key.split_once(PRIVATE_MARK).map_or(key, |(base, _)| base)
}

#[cfg(test)]
mod tests;
