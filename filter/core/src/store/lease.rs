//! Leases in shared data: one worker at a time embeds a namespace's tools or fetches its
//! catalog, and the others wait (or leave it) until the lease is given back or expires. A lease
//! holds `<owner> <until ms>`, taken and renewed with compare-and-swap.

use super::{keys, SharedData, StoreError};

/// What a lease gives one worker the right to do for a namespace while the others wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lease {
    /// Embed its tools.
    Embed,
    /// Fetch its catalog.
    Fetch,
}

impl Lease {
    fn key(self, namespace: &str) -> String {
        match self {
            Lease::Embed => keys::embed_lease(namespace),
            Lease::Fetch => keys::fetch_lease(namespace),
        }
    }
}

/// Takes (or renews) `lease` on `namespace` until `now_ms + ttl_ms`. `false`: another worker
/// holds it.
pub fn take_lease(
    shared: &dyn SharedData,
    lease: Lease,
    namespace: &str,
    owner: &str,
    now_ms: u64,
    ttl_ms: u64,
) -> Result<bool, StoreError> {
    let key = lease.key(namespace);
    let (data, cas) = shared.get(&key)?;
    if let Some(bytes) = data {
        let text = String::from_utf8_lossy(&bytes);
        if let Some((holder, until)) = text.split_once(' ') {
            let until: u64 = until.parse().unwrap_or(0);
            if holder != owner && until > now_ms {
                return Ok(false);
            }
        }
    }
    let value = format!("{owner} {}", now_ms.saturating_add(ttl_ms));
    match shared.set(&key, value.as_bytes(), cas) {
        Ok(()) => Ok(true),
        Err(StoreError::CasMismatch) => Ok(false),
        Err(e) => Err(e),
    }
}

/// Gives `lease` back (if `owner` still holds it), so a waiting worker need not wait for it to
/// expire.
pub fn release_lease(
    shared: &dyn SharedData,
    lease: Lease,
    namespace: &str,
    owner: &str,
) -> Result<(), StoreError> {
    let key = lease.key(namespace);
    let (data, cas) = shared.get(&key)?;
    let held = data.is_some_and(|bytes| {
        String::from_utf8_lossy(&bytes)
            .split_once(' ')
            .is_some_and(|(holder, _)| holder == owner)
    });
    if !held {
        return Ok(());
    }
    match shared.set(&key, format!("{owner} 0").as_bytes(), cas) {
        Ok(()) | Err(StoreError::CasMismatch) => Ok(()),
        Err(e) => Err(e),
    }
}

/// Whether someone other than `owner` holds the fetch lease of `namespace` now.
pub fn fetch_leased_by_other(
    shared: &dyn SharedData,
    namespace: &str,
    owner: &str,
    now_ms: u64,
) -> Result<bool, StoreError> {
    let (data, _) = shared.get(&keys::fetch_lease(namespace))?;
    Ok(data.is_some_and(|bytes| {
        let text = String::from_utf8_lossy(&bytes);
        text.split_once(' ').is_some_and(|(holder, until)| {
            holder != owner && until.parse::<u64>().unwrap_or(0) > now_ms
        })
    }))
}
