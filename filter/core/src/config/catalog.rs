//! `catalog`: how the filter gets a namespace's tools when no `tools/list` has passed through
//! it (fetch on miss) and how it keeps them fresh (refresh).

use super::read::{boolean, duration_ms, header_map, is_header_name, non_empty_string, Object};
use super::ConfigError;
use serde_json::Value;

/// Five minutes: tool sets change with deployments, not per request, and a server that can
/// announce changes (`notifications/tools/list_changed`) gets them noticed at once; for one that
/// cannot, five minutes bounds how long a removed tool may still be found, for the cost of one
/// `tools/list` per namespace per Envoy every five minutes.
pub const DEFAULT_MAX_AGE_MS: u64 = 300_000;
pub const DEFAULT_FETCH_TIMEOUT_MS: u64 = 5_000;
/// The shortest a server's `ttlMs` makes a catalog's lifetime.
pub const MIN_TTL_MS: u64 = 10_000;
/// Never refresh one namespace more often than this, whatever asks for it (a burst of
/// `list_changed` notifications, a `ttlMs` of 0).
pub const MIN_REFRESH_INTERVAL_MS: u64 = 1_000;

#[derive(Debug, Clone, PartialEq)]
pub struct CatalogConfig {
    /// Fetch a missing catalog, and refresh stale ones in the background.
    pub fetch: bool,
    pub max_age_ms: u64,
    /// Each HTTP call of a fetch (initialize, each page, ...).
    pub timeout_ms: u64,
    /// Caller headers copied into a fetch made for that caller (lowercase).
    pub forward_headers: Vec<String>,
    /// Headers sent with every fetch (a service credential for background refreshes).
    pub headers: Vec<(String, String)>,
    /// Fetch through this cluster instead of the route's: a loopback cluster to Envoy's own
    /// listener when the route's cluster is one backend of an aggregating router.
    pub cluster: Option<String>,
    /// The MCP path fetched, as the operator wrote it (default: the first of `mcp_paths`).
    /// Never the caller's path: a fetch may carry the configured credentials.
    pub path: String,
    /// `:authority` of a fetch (default: the caller's, else the cluster name).
    pub authority: Option<String>,
}

impl Default for CatalogConfig {
    fn default() -> Self {
        CatalogConfig {
            fetch: true,
            max_age_ms: DEFAULT_MAX_AGE_MS,
            timeout_ms: DEFAULT_FETCH_TIMEOUT_MS,
            forward_headers: vec!["authorization".to_string()],
            headers: Vec::new(),
            cluster: None,
            path: super::DEFAULT_MCP_PATH.to_string(),
            authority: None,
        }
    }
}

/// Headers a fetch sets itself; forwarding the caller's would break the fetch's own exchange.
const OWN_HEADERS: &[&str] = &[
    "content-type",
    "content-length",
    "accept",
    "accept-encoding",
    "host",
    "mcp-session-id",
    "mcp-protocol-version",
    "mcp-method",
    "mcp-name",
    "transfer-encoding",
    "connection",
];

/// `first_mcp_path`: the first of `mcp_paths` as written, the default fetch path.
pub(super) fn parse(value: &Value, first_mcp_path: &str) -> Result<CatalogConfig, ConfigError> {
    let mut obj = Object::new("catalog", value)?;
    let mut c = CatalogConfig {
        path: first_mcp_path.to_string(),
        ..CatalogConfig::default()
    };
    if let Some(v) = obj.take("fetch") {
        c.fetch = boolean("catalog.fetch", v)?;
    }
    if let Some(v) = obj.take("max_age") {
        c.max_age_ms = duration_ms("catalog.max_age", v)?;
    }
    if let Some(v) = obj.take("timeout") {
        c.timeout_ms = duration_ms("catalog.timeout", v)?;
    }
    if let Some(v) = obj.take("forward_headers") {
        let items = v.as_array().ok_or_else(|| {
            ConfigError::invalid("catalog.forward_headers", v, "a list of header names")
        })?;
        c.forward_headers = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let field = format!("catalog.forward_headers[{i}]");
            let name = non_empty_string(&field, item)?.to_ascii_lowercase();
            if !is_header_name(&name) || OWN_HEADERS.contains(&name.as_str()) {
                return Err(ConfigError::invalid(
                    &field,
                    item,
                    "a header name other than the ones a fetch sets itself (content-type, accept, mcp-*, ...)",
                ));
            }
            c.forward_headers.push(name);
        }
    }
    if let Some(v) = obj.take("headers") {
        c.headers = header_map("catalog.headers", v)?;
        if let Some((name, _)) = c
            .headers
            .iter()
            .find(|(n, _)| OWN_HEADERS.contains(&n.as_str()))
        {
            return Err(ConfigError::invalid(
                &format!("catalog.headers.{name}"),
                &Value::String(name.clone()),
                "a header other than the ones a fetch sets itself (content-type, accept, mcp-*, ...)",
            ));
        }
    }
    if let Some(v) = obj.take("cluster") {
        c.cluster = Some(non_empty_string("catalog.cluster", v)?);
    }
    if let Some(v) = obj.take("path") {
        let path = non_empty_string("catalog.path", v)?;
        if !path.starts_with('/') {
            return Err(ConfigError::invalid(
                "catalog.path",
                v,
                "an absolute path such as \"/mcp\"",
            ));
        }
        c.path = path;
    }
    if let Some(v) = obj.take("authority") {
        c.authority = Some(non_empty_string("catalog.authority", v)?);
    }
    obj.finish()?;
    Ok(c)
}
