//! `catalog`: how the filter gets a namespace's tools when no `tools/list` has passed through
//! it (fetch on miss) and how it keeps them fresh (refresh).

use super::read::{
    boolean, duration_ms, duration_ms_within, header_map, is_header_name, non_empty_string, Object,
};
use super::ConfigError;
use serde_json::Value;

/// Five minutes: tool sets change with deployments, not per request, and a server that can
/// announce changes (`notifications/tools/list_changed`) gets them noticed at once; for one that
/// cannot, five minutes bounds how long a removed tool may still be found, for the cost of one
/// `tools/list` per namespace per Envoy every five minutes.
pub const DEFAULT_MAX_AGE_MS: u64 = 300_000;
/// A day: a catalog that lives longer than one still gets refreshed by the server's
/// `list_changed` notifications, and a static server's operator may want no more than one fetch
/// a day per replica.
pub const MAX_AGE_LIMIT_MS: u64 = 86_400_000;
pub const DEFAULT_FETCH_TIMEOUT_MS: u64 = 5_000;
/// The shortest a server's `ttlMs` makes a catalog's lifetime.
pub const MIN_TTL_MS: u64 = 10_000;
/// `catalog.min_refresh_interval` by default: the shortest time between two fetches of one
/// namespace's catalog, whatever makes it due (a burst of `list_changed` notifications, a
/// `ttlMs` of 0, `max_age`). A refresh is about six upstream requests (initialize, the pages,
/// the other lists, DELETE) and every replica makes its own; a server that announces changes
/// still has them noticed within seconds. Shortened to `max_age` when that is shorter, so that
/// an operator's `max_age` keeps its meaning.
pub const DEFAULT_MIN_REFRESH_INTERVAL_MS: u64 = 5_000;
/// The least `catalog.min_refresh_interval` may be: a notification arriving every root tick
/// (200 ms) must not turn into a refresh every tick.
pub const MIN_REFRESH_INTERVAL_FLOOR_MS: u64 = 1_000;

/// Whose a learned or fetched list is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CatalogScope {
    /// One catalog per namespace, unless the server marks a list `cacheScope: "private"`.
    Shared,
    /// Every list is the caller's: kept per credential (the `forward_headers` values), as a
    /// private one is. For a 2025-era server that filters its lists per user and cannot say so.
    Credential,
}

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
    /// `cluster` routes back to this Envoy's listener: fetches carry the marker that lets this
    /// filter pass them untouched. Stated by the operator whenever `cluster` is set (an upstream
    /// must never receive the marker's secret, which would let it forge the filter's fetches).
    pub loopback: bool,
    /// The shortest time between two fetches of one namespace's catalog (see
    /// `DEFAULT_MIN_REFRESH_INTERVAL_MS`).
    pub min_refresh_interval_ms: u64,
    /// The MCP path fetched, as the operator wrote it (default: the first of `mcp_paths`).
    /// Never the caller's path: a fetch may carry the configured credentials.
    pub path: String,
    /// `:authority` of a fetch (default: the caller's, else the cluster name).
    pub authority: Option<String>,
    pub scope: CatalogScope,
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
            loopback: false,
            min_refresh_interval_ms: DEFAULT_MIN_REFRESH_INTERVAL_MS,
            path: super::DEFAULT_MCP_PATH.to_string(),
            authority: None,
            scope: CatalogScope::Shared,
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
        c.max_age_ms = duration_ms_within("catalog.max_age", v, MAX_AGE_LIMIT_MS)?;
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
    let loopback = obj.take("loopback");
    c.loopback = match (&c.cluster, loopback) {
        (Some(_), Some(v)) => boolean("catalog.loopback", v)?,
        (None, None) => false,
        (Some(cluster), None) => {
            return Err(ConfigError::missing(
                "catalog.loopback",
                &format!(
                    "`\"loopback\": true` when cluster {cluster:?} routes back to this Envoy's \
                     listener (fetches then carry the x-mcp-tool-search-fetch marker), or \
                     `\"loopback\": false` when it is an upstream (it is never sent the marker)"
                ),
            ))
        }
        (None, Some(v)) => {
            return Err(ConfigError::invalid(
                "catalog.loopback",
                v,
                "it only beside `catalog.cluster` (it says where that cluster routes): remove \
                 it, or name the cluster in `catalog.cluster`",
            ))
        }
    };
    c.min_refresh_interval_ms = match obj.take("min_refresh_interval") {
        Some(v) => {
            let ms = duration_ms("catalog.min_refresh_interval", v)?;
            if ms < MIN_REFRESH_INTERVAL_FLOOR_MS {
                return Err(ConfigError::invalid(
                    "catalog.min_refresh_interval",
                    v,
                    "a duration from 1s to 600s, such as \"5s\"",
                ));
            }
            ms
        }
        None => DEFAULT_MIN_REFRESH_INTERVAL_MS
            .min(c.max_age_ms)
            .max(MIN_REFRESH_INTERVAL_FLOOR_MS),
    };
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
    if let Some(v) = obj.take("scope") {
        c.scope = match v.as_str() {
            Some("shared") => CatalogScope::Shared,
            Some("credential") => CatalogScope::Credential,
            _ => {
                return Err(ConfigError::invalid(
                    "catalog.scope",
                    v,
                    "\"shared\" or \"credential\" (one catalog per caller's forwarded headers)",
                ))
            }
        };
    }
    obj.finish()?;
    Ok(c)
}

impl CatalogConfig {
    /// Whether a namespace whose catalog was last fetched (or tried) at `attempt_ms` (0:
    /// never) may be fetched again at `now_ms`.
    pub fn may_refetch(&self, attempt_ms: u64, now_ms: u64) -> bool {
        attempt_ms == 0 || now_ms.saturating_sub(attempt_ms) >= self.min_refresh_interval_ms
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse_catalog(v: Value) -> Result<CatalogConfig, String> {
        parse(&v, "/mcp").map_err(|e| e.to_string())
    }

    #[test]
    fn a_cluster_says_whether_it_is_a_loopback() {
        let c = parse_catalog(json!({"cluster": "self", "loopback": true})).unwrap();
        assert_eq!((c.cluster.as_deref(), c.loopback), (Some("self"), true));
        let c = parse_catalog(json!({"cluster": "mcp", "loopback": false})).unwrap();
        assert_eq!((c.cluster.as_deref(), c.loopback), (Some("mcp"), false));
        let c = parse_catalog(json!({})).unwrap();
        assert_eq!((c.cluster, c.loopback), (None, false));
        // `null` is absent, as everywhere in the configuration.
        let c = parse_catalog(json!({"loopback": null})).unwrap();
        assert!(!c.loopback);

        let e = parse_catalog(json!({"cluster": "self"})).unwrap_err();
        assert_eq!(
            e,
            "plugin configuration field `catalog.loopback` is missing; expected `\"loopback\": true` \
             when cluster \"self\" routes back to this Envoy's listener (fetches then carry the \
             x-mcp-tool-search-fetch marker), or `\"loopback\": false` when it is an upstream (it \
             is never sent the marker)"
        );
        let e = parse_catalog(json!({"loopback": false})).unwrap_err();
        assert_eq!(
            e,
            "plugin configuration field `catalog.loopback` is false; expected it only beside \
             `catalog.cluster` (it says where that cluster routes): remove it, or name the \
             cluster in `catalog.cluster`"
        );
        let e = parse_catalog(json!({"cluster": "self", "loopback": 1})).unwrap_err();
        assert!(
            e.contains("`catalog.loopback` is 1; expected true or false"),
            "{e}"
        );
    }

    #[test]
    fn min_refresh_interval() {
        let ms = |v: Value| parse_catalog(v).map(|c| c.min_refresh_interval_ms);
        assert_eq!(ms(json!({})), Ok(5_000));
        assert_eq!(CatalogConfig::default().min_refresh_interval_ms, 5_000);
        assert_eq!(ms(json!({"min_refresh_interval": "30s"})), Ok(30_000));
        assert_eq!(ms(json!({"min_refresh_interval": 1500})), Ok(1_500));
        // A shorter max_age shortens the default, down to 1 s; an explicit interval stays.
        assert_eq!(ms(json!({"max_age": "2s"})), Ok(2_000));
        assert_eq!(ms(json!({"max_age": "100ms"})), Ok(1_000));
        assert_eq!(
            ms(json!({"max_age": "2s", "min_refresh_interval": "10s"})),
            Ok(10_000)
        );
        for bad in [json!("500ms"), json!(0), json!("5 minutes"), json!(true)] {
            let e = ms(json!({ "min_refresh_interval": bad })).unwrap_err();
            assert!(e.contains("`catalog.min_refresh_interval`"), "{e}");
        }
        let c = CatalogConfig::default();
        assert!(c.may_refetch(0, 1_000));
        assert!(!c.may_refetch(10_000, 14_999));
        assert!(c.may_refetch(10_000, 15_000));
        // A clock that went back does not allow one at once.
        assert!(!c.may_refetch(10_000, 9_000));
    }
}
