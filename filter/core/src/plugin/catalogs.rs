//! Catalogs the filter fetches itself: on a miss (for a stream that waits for the answer) and
//! in the background when one is due for a refresh (from the root context's tick). One fetch
//! per namespace at a time across workers, by a shared-data lease.

use super::{Host, Level, Plugin};
use crate::config::catalog::CatalogScope;
use crate::config::entries::Entry;
use crate::fetch::{Context, Fetch, FetchError, FetchSpec, Fetched, Origin, Step};
use crate::index::catalog::{private_key, Page};
use crate::keys;
use crate::stats::Event;
use crate::store::{self, Learned, Source};

pub use crate::fetch::MARKER_HEADER as FETCH_MARKER_HEADER;
/// How precisely a client's lists date a catalog: one meta write per this interval at most.
pub(super) const LISTED_RESOLUTION_MS: u64 = 10_000;
/// The longest wait between background retries of a failing fetch.
const MAX_RETRY_MS: u64 = 60_000;

/// A fetch in flight: the token of its current call.
#[derive(Debug)]
pub(super) struct Running {
    token: u32,
    namespace: String,
    fetch: Fetch,
}

/// How starting a fetch went.
#[derive(Debug)]
pub enum FetchStart {
    /// Its first call is out; its answer comes with this token.
    Started(u32),
    /// Another worker is fetching this namespace: wait for it.
    Busy,
    Failed(FetchError),
}

/// Where a fetch stands after one of its answers.
#[derive(Debug, PartialEq, Eq)]
pub enum FetchProgress {
    /// Its next call is out, with this token.
    Next(u32),
    /// It ended: the number of tools now known, or why it failed.
    Finished {
        namespace: String,
        result: Result<usize, String>,
    },
}

impl Plugin {
    /// The lease a fetch holds: renewed at each of its calls.
    fn fetch_lease_ms(&self) -> u64 {
        self.config.catalog.timeout_ms.saturating_add(1000)
    }

    /// Starts fetching `namespace` as `spec` says, unless another worker already is.
    pub fn start_fetch(&self, host: &dyn Host, namespace: &str, spec: FetchSpec) -> FetchStart {
        self.start_fetch_if(host, namespace, spec, |_| true)
    }

    /// `start_fetch`, once the lease is held, only if `still` holds for the namespace's meta
    /// as it is then: what was read before the lease may predate another worker's fetch, which
    /// releases the lease only after it has stored its result.
    fn start_fetch_if(
        &self,
        host: &dyn Host,
        namespace: &str,
        spec: FetchSpec,
        still: impl Fn(&store::CatalogMeta) -> bool,
    ) -> FetchStart {
        let now = host.now_ms();
        match store::take_lease(
            host,
            store::Lease::Fetch,
            namespace,
            &self.vm_id,
            now,
            self.fetch_lease_ms(),
        ) {
            Ok(true) => {
                if store::read_meta(host, namespace).is_ok_and(|meta| !still(&meta)) {
                    let _ = store::release_lease(host, store::Lease::Fetch, namespace, &self.vm_id);
                    return FetchStart::Busy;
                }
            }
            Ok(false) => return FetchStart::Busy,
            Err(e) => {
                host.log(
                    Level::Warn,
                    &format!("catalog fetch: lease for {namespace:?} failed: {e}"),
                );
            }
        }
        let origin = spec.origin.clone();
        let (fetch, call) = Fetch::start(spec, now);
        match host.http_call(call) {
            Ok(token) => {
                if let Ok(mut running) = self.fetches.try_borrow_mut() {
                    running.push(Running {
                        token,
                        namespace: namespace.to_string(),
                        fetch,
                    });
                }
                FetchStart::Started(token)
            }
            Err(reason) => {
                let error = FetchError::NotStarted {
                    cluster: origin.cluster.clone(),
                    reason,
                };
                self.fetch_failed(host, namespace, &origin, &error);
                FetchStart::Failed(error)
            }
        }
    }

    /// The answer to a fetch's call; `None` when `token` is not a fetch's.
    pub fn on_fetch_response(
        &self,
        host: &dyn Host,
        token: u32,
        status: Option<&str>,
        headers: &[(String, String)],
        body: &[u8],
    ) -> Option<FetchProgress> {
        let mut running = {
            let mut all = self.fetches.try_borrow_mut().ok()?;
            let at = all.iter().position(|r| r.token == token)?;
            all.swap_remove(at)
        };
        let now = host.now_ms();
        let namespace = running.namespace.clone();
        match running.fetch.on_response(status, headers, body, now) {
            Step::Call(call) => {
                let _ = store::take_lease(
                    host,
                    store::Lease::Fetch,
                    &namespace,
                    &self.vm_id,
                    now,
                    self.fetch_lease_ms(),
                );
                match host.http_call(call) {
                    Ok(token) => {
                        running.token = token;
                        if let Ok(mut all) = self.fetches.try_borrow_mut() {
                            all.push(running);
                        }
                        Some(FetchProgress::Next(token))
                    }
                    Err(reason) => {
                        let origin = running.fetch.origin().clone();
                        let error = FetchError::NotStarted {
                            cluster: origin.cluster.clone(),
                            reason,
                        };
                        self.fetch_failed(host, &namespace, &origin, &error);
                        Some(FetchProgress::Finished {
                            namespace,
                            result: Err(error.to_string()),
                        })
                    }
                }
            }
            Step::Done(result, close) => {
                if let Some(close) = close {
                    // Its answer changes nothing: the token is not kept.
                    let _ = host.http_call(close);
                }
                let origin = running.fetch.origin().clone();
                let result = match result {
                    Ok(fetched) => self.fetched(
                        host,
                        &namespace,
                        &origin,
                        running.fetch.credential(),
                        fetched,
                    ),
                    Err(error) => {
                        self.fetch_failed(host, &namespace, &origin, &error);
                        Err(error.to_string())
                    }
                };
                Some(FetchProgress::Finished { namespace, result })
            }
        }
    }

    /// Where a list learned for `namespace` is kept: the namespace's catalog, or, for a list
    /// the server marked private, its credential's, whatever policy of ours also applies (and
    /// the namespace is marked private, so that every caller is looked up by credential).
    pub(super) fn learned_key(
        &self,
        host: &dyn Host,
        namespace: &str,
        learned: &Learned,
    ) -> String {
        if !learned.private {
            return namespace.to_string();
        }
        let _ = store::update_meta(host, namespace, |meta| {
            let was = meta.private;
            meta.private = true;
            !was
        });
        let _ = store::register_namespace(host, namespace);
        private_key(namespace, &learned.credential)
    }

    fn fetched(
        &self,
        host: &dyn Host,
        namespace: &str,
        origin: &Origin,
        credential: &str,
        fetched: Fetched,
    ) -> Result<usize, String> {
        let Fetched {
            tools,
            private,
            ttl_ms,
            entries,
            ..
        } = fetched;
        let private = private || self.config.catalog.scope == CatalogScope::Credential;
        // Prompts and resources, whole lists, beside the tools (not when the server shapes its
        // lists per caller: there is no caller to keep them for).
        if !private {
            // A kind the server did not list is stored empty: known, so that a search for it
            // does not fetch again.
            let listed: Vec<Entry> = entries.iter().map(|(entry, _)| *entry).collect();
            let unlisted = crate::fetch::KINDS_AFTER_TOOLS
                .into_iter()
                .filter(|e| !listed.contains(e))
                .map(|e| (e, Vec::new()));
            for (entry, list) in entries.into_iter().chain(unlisted) {
                let learned = Learned {
                    entry,
                    ..Learned::new(
                        list,
                        Page {
                            first: true,
                            last: true,
                        },
                    )
                };
                let key = entry.catalog_key(namespace);
                self.mark_for_embedding(&key);
                if let Ok(mut cache) = self.cache.try_borrow_mut() {
                    if let Err(e) = cache.learn(host, &key, learned) {
                        host.log(
                            Level::Warn,
                            &format!(
                                "catalog fetch: the {}s of {namespace:?} could not be stored: {e}",
                                entry.type_name()
                            ),
                        );
                    }
                }
            }
        }
        let count = tools.len();
        let mut learned = Learned::new(
            tools,
            Page {
                first: true,
                last: true,
            },
        );
        learned.private = private;
        learned.credential = credential.to_string();
        let leased = namespace;
        let namespace = &self.learned_key(host, namespace, &learned);
        let stored = self
            .cache
            .try_borrow_mut()
            .map_err(|_| "catalog cache busy".to_string())
            .and_then(|mut cache| {
                cache
                    .learn(host, namespace, learned)
                    .map_err(|e| e.to_string())
            });
        if let Err(e) = &stored {
            let _ = store::release_lease(host, store::Lease::Fetch, leased, &self.vm_id);
            self.fetch_failed(
                host,
                namespace,
                origin,
                &FetchError::NotStarted {
                    cluster: origin.cluster.clone(),
                    reason: format!("the fetched catalog could not be stored: {e}"),
                },
            );
            return Err(e.clone());
        }
        let now = host.now_ms();
        let _ = store::update_meta(host, namespace, |meta| {
            meta.updated_ms = now;
            meta.attempt_ms = now;
            meta.source = Source::Fetched;
            meta.stale = false;
            meta.ttl_ms = ttl_ms;
            // Kept per credential, and so refreshed in its callers' requests only.
            meta.private = private;
            meta.failures = 0;
            meta.last_error = None;
            meta.set_origin(origin);
            true
        });
        // Released once the result is stored: a worker taking the lease from here sees it.
        let _ = store::release_lease(host, store::Lease::Fetch, leased, &self.vm_id);
        let (stat, by) = Event::CatalogFetched(true).stat();
        host.increment(stat, by);
        self.mark_for_embedding(namespace);
        Ok(count)
    }

    fn fetch_failed(&self, host: &dyn Host, namespace: &str, origin: &Origin, error: &FetchError) {
        let _ = store::release_lease(host, store::Lease::Fetch, namespace, &self.vm_id);
        let now = host.now_ms();
        let _ = store::update_meta(host, namespace, |meta| {
            meta.attempt_ms = now;
            meta.failures = meta.failures.saturating_add(1);
            meta.last_error = Some(error.to_string());
            // Retried in the background from here, and reported in health.
            meta.set_origin(origin);
            true
        });
        let _ = store::register_namespace(host, namespace);
        let (stat, by) = Event::CatalogFetched(false).stat();
        host.increment(stat, by);
        host.log(
            Level::Warn,
            &format!("catalog fetch for {namespace:?} failed: {error}"),
        );
    }

    /// Whether a stream waiting on another worker's fetch of `namespace` can go on: the fetch
    /// ended (its lease is free), however it ended.
    pub fn fetch_settled(&self, host: &dyn Host, namespace: &str) -> bool {
        !store::fetch_leased_by_other(host, namespace, &self.vm_id, host.now_ms()).unwrap_or(false)
    }

    /// The background refresh of catalogs that are due (from the root tick). The filter's own
    /// session and the configured headers only: no caller's credentials outlive their request.
    pub(super) fn refresh_due(&self, host: &dyn Host) {
        let catalog = &self.config.catalog;
        if !catalog.fetch {
            return;
        }
        let now = host.now_ms();
        for namespace in store::namespaces(host).unwrap_or_default() {
            // Prompts and resources come with their namespace's tools.
            if Entry::of_catalog_key(&namespace).0 != Entry::Tool {
                continue;
            }
            let Ok(meta) = store::read_meta(host, &namespace) else {
                continue;
            };
            // Catalogs shaped by the caller are refreshed in the caller's requests only.
            if meta.private || !meta.due(now, catalog.max_age_ms) {
                continue;
            }
            let Some(origin) = meta.origin() else {
                continue;
            };
            if now < next_attempt(&meta, catalog.min_refresh_interval_ms, host.random_u64()) {
                continue;
            }
            let already = self
                .fetches
                .try_borrow()
                .map(|all| all.iter().any(|r| r.namespace == namespace))
                .unwrap_or(true);
            if already {
                continue;
            }
            let spec = self.fetch_spec(host, origin, Context::Own, Vec::new());
            let max_age_ms = catalog.max_age_ms;
            let still_due = |meta: &store::CatalogMeta| meta.due(now, max_age_ms);
            if let FetchStart::Started(_) = self.start_fetch_if(host, &namespace, spec, still_due) {
                host.log(
                    Level::Info,
                    &format!("catalog {namespace:?}: refreshing in the background"),
                );
            }
        }
    }

    /// A fetch of `origin` in `context`, with the caller's forwarded headers, the configured
    /// ones, and the marker when fetching through a cluster the operator declared a loopback to
    /// this listener (`catalog.loopback`): the marker's secret lets whoever holds it pass as
    /// this filter's own fetch, so an upstream is never sent it.
    pub fn fetch_spec(
        &self,
        host: &dyn Host,
        origin: Origin,
        context: Context,
        forwarded: Vec<(String, String)>,
    ) -> FetchSpec {
        let catalog = &self.config.catalog;
        let credential = crate::fetch::credential_of(&forwarded);
        let mut headers = forwarded;
        headers.extend(catalog.headers.iter().cloned());
        if catalog.cluster.is_some() && catalog.loopback {
            if let Some(secret) = fetch_secret(host) {
                headers.push((FETCH_MARKER_HEADER.to_string(), secret));
            }
        }
        FetchSpec {
            origin,
            context,
            headers,
            timeout_ms: catalog.timeout_ms,
            max_bytes: self.config.max_body_bytes,
            credential,
        }
    }
}

/// When a due catalog may be fetched again: `interval` (`catalog.min_refresh_interval`) after
/// the last attempt, whatever made it due; after a failure, after a backoff that doubles per
/// failure up to a minute (or `interval`, when that is longer), jittered by up to a quarter so
/// that the replicas of a mesh do not retry in step.
fn next_attempt(meta: &store::CatalogMeta, interval: u64, random: u64) -> u64 {
    let base = if meta.failures == 0 {
        interval
    } else {
        let exp = meta.failures.saturating_sub(1).min(16);
        interval
            .saturating_mul(1u64 << exp)
            .min(MAX_RETRY_MS)
            .max(interval)
    };
    let jitter = if meta.failures == 0 {
        0
    } else {
        random % (base / 4 + 1)
    };
    meta.attempt_ms.saturating_add(base).saturating_add(jitter)
}

/// The secret of this Envoy's fetch marker (`None` until one was installed).
pub fn fetch_secret(host: &dyn Host) -> Option<String> {
    let (value, _) = host.get(keys::FETCH_SECRET).ok()?;
    String::from_utf8(value?).ok().filter(|s| s.len() >= 32)
}

/// Installs the fetch marker's secret from 16 random bytes, unless a worker already did (every
/// worker reads the one stored, so the last writer of a race wins for all of them).
pub fn install_fetch_secret(host: &dyn Host, random: [u8; 16]) {
    if fetch_secret(host).is_some() {
        return;
    }
    let hex: String = random.iter().map(|b| format!("{b:02x}")).collect();
    let _ = host.set(keys::FETCH_SECRET, hex.as_bytes(), None);
}

/// Whether a request's marker header is this Envoy's own fetch.
pub fn is_own_fetch(host: &dyn Host, marker: &str) -> bool {
    fetch_secret(host).is_some_and(|secret| {
        // Compared in full whatever the first difference: the secret must not leak by timing.
        secret.len() == marker.len()
            && secret
                .bytes()
                .zip(marker.bytes())
                .fold(0u8, |acc, (a, b)| acc | (a ^ b))
                == 0
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(attempt_ms: u64, failures: u32) -> store::CatalogMeta {
        store::CatalogMeta {
            attempt_ms,
            failures,
            ..store::CatalogMeta::default()
        }
    }

    #[test]
    fn attempts_are_an_interval_apart_and_back_off_after_failures() {
        assert_eq!(next_attempt(&meta(0, 0), 5_000, 99), 5_000);
        assert_eq!(next_attempt(&meta(100_000, 0), 5_000, 99), 105_000);
        assert_eq!(next_attempt(&meta(100_000, 0), 30_000, 99), 130_000);
        // Failures double the wait (plus jitter of up to a quarter), up to a minute.
        let after = |failures, interval| next_attempt(&meta(0, failures), interval, 0);
        assert_eq!(after(1, 5_000), 5_000);
        assert_eq!(after(2, 5_000), 10_000);
        assert_eq!(after(5, 5_000), 60_000);
        assert_eq!(after(30, 5_000), 60_000);
        // ... never under the interval.
        assert_eq!(after(3, 120_000), 120_000);
        let jittered = next_attempt(&meta(0, 2), 5_000, 1_234_567);
        assert!((10_000..=12_500).contains(&jittered), "{jittered}");
    }
}
