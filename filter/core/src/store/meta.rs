//! What a worker needs to know about a catalog besides its tools: how old it is, where it came
//! from, where to refresh it from, and why the last fetch failed. One small key per namespace,
//! so that a search can check freshness without reading the catalog.

use super::{keys, SharedData, StoreError, MAX_CAS_RETRIES};
use crate::config::catalog::MIN_TTL_MS;
use crate::fetch::Origin;
use serde::{Deserialize, Serialize};

/// How the catalog was last obtained.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    /// From a client's `tools/list` passing through.
    #[default]
    Learned,
    /// By the filter itself.
    Fetched,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredOrigin {
    pub cluster: String,
    pub authority: String,
    pub path: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CatalogMeta {
    /// When the whole list was last seen (ms since the epoch); 0: never.
    #[serde(default)]
    pub updated_ms: u64,
    #[serde(default)]
    pub source: Source,
    /// A `notifications/tools/list_changed` arrived after `updated_ms`.
    #[serde(default)]
    pub stale: bool,
    /// The server's `ttlMs` on its last list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    /// The server's last list was `cacheScope: "private"`.
    #[serde(default)]
    pub private: bool,
    /// Where the filter fetches this catalog from (seen on the last request that could tell).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<StoredOrigin>,
    /// The last fetch attempt, and consecutive failures since the last success.
    #[serde(default)]
    pub attempt_ms: u64,
    #[serde(default)]
    pub failures: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
}

impl CatalogMeta {
    pub fn origin(&self) -> Option<Origin> {
        self.origin.as_ref().map(|o| Origin {
            cluster: o.cluster.clone(),
            authority: o.authority.clone(),
            path: o.path.clone(),
        })
    }

    pub fn set_origin(&mut self, origin: &Origin) {
        self.origin = Some(StoredOrigin {
            cluster: origin.cluster.clone(),
            authority: origin.authority.clone(),
            path: origin.path.clone(),
        });
    }

    /// How long this catalog may be used before a refresh is due: `max_age`, shortened to the
    /// server's `ttlMs` (2026-07-28 "Caching": past it the list may have changed), but never
    /// below `MIN_TTL_MS`, so that a server answering `ttlMs: 0` does not have every search of
    /// an agent's burst list it again.
    pub fn lifetime_ms(&self, max_age_ms: u64) -> u64 {
        self.ttl_ms
            .map_or(max_age_ms, |ttl| ttl.max(MIN_TTL_MS).min(max_age_ms))
    }

    /// Whether a refresh is due at `now_ms`.
    pub fn due(&self, now_ms: u64, max_age_ms: u64) -> bool {
        self.updated_ms == 0
            || self.stale
            || now_ms.saturating_sub(self.updated_ms) >= self.lifetime_ms(max_age_ms)
    }
}

pub fn read_meta(shared: &dyn SharedData, namespace: &str) -> Result<CatalogMeta, StoreError> {
    match shared.get(&keys::meta(namespace))?.0 {
        None => Ok(CatalogMeta::default()),
        Some(bytes) => serde_json::from_slice(&bytes)
            .map_err(|e| StoreError::Corrupt(format!("catalog meta: {e}"))),
    }
}

/// Changes a namespace's meta with compare-and-swap; `change` returns whether it changed
/// anything (nothing is written otherwise).
pub fn update_meta(
    shared: &dyn SharedData,
    namespace: &str,
    mut change: impl FnMut(&mut CatalogMeta) -> bool,
) -> Result<CatalogMeta, StoreError> {
    let key = keys::meta(namespace);
    for _ in 0..MAX_CAS_RETRIES {
        let (data, cas) = shared.get(&key)?;
        // An unreadable meta (another version's) is replaced rather than kept forever.
        let mut meta: CatalogMeta = data
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default();
        if !change(&mut meta) {
            return Ok(meta);
        }
        let bytes = serde_json::to_vec(&meta).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        match shared.set(&key, &bytes, cas) {
            Ok(()) => return Ok(meta),
            Err(StoreError::CasMismatch) => continue,
            Err(e) => return Err(e),
        }
    }
    Err(StoreError::Contended)
}
