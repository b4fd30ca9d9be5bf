//! The embedding scheduler of one VM: which namespaces have tools to embed, the batch in
//! flight, and the backoff after failures. The plugin drives it from the root context's tick,
//! so catalog embedding never depends on a client stream staying open.

use crate::index::catalog::CatalogIndex;
use crate::rank::embeddings::text_hash;

/// One VM's background embedding of catalog tools.
#[derive(Debug, Default)]
pub struct Worker {
    pending: std::collections::BTreeSet<String>,
    in_flight: Option<InFlight>,
    failures: u32,
    retry_at_ms: u64,
    /// When the last batch failed.
    failed_at_ms: u64,
}

/// A batch sent to the embeddings service.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InFlight {
    pub token: u32,
    pub namespace: String,
    /// Tool name and text hash, in input order.
    pub items: Vec<(String, u64)>,
}

/// The longest wait between retries of a failing embeddings service. Short because a retry is
/// cheap (one batch per VM, a refused connection costs nothing) and because a tool added while
/// the service was down ranks by BM25 alone until its vector comes; a recovery another worker
/// saw ends the wait at once (`Worker::recovered`).
pub const MAX_BACKOFF_MS: u64 = 4_000;

impl Worker {
    /// A list or a search saw this namespace: embed what it lacks on the next tick.
    pub fn mark(&mut self, namespace: &str) {
        if !self.pending.contains(namespace) {
            self.pending.insert(namespace.to_string());
        }
    }

    pub fn pending(&self) -> Vec<String> {
        self.pending.iter().cloned().collect()
    }

    pub fn done(&mut self, namespace: &str) {
        self.pending.remove(namespace);
    }

    /// Whether a new batch may be sent now.
    pub fn due(&self, now_ms: u64) -> bool {
        self.in_flight.is_none() && now_ms >= self.retry_at_ms
    }

    /// The first batch of `missing` tools: their texts, and (name, hash) to store them under.
    pub fn batch(
        index: &CatalogIndex,
        missing: &[(usize, String)],
        max: usize,
    ) -> (Vec<String>, Vec<(String, u64)>) {
        missing
            .iter()
            .take(max)
            .filter_map(|(i, text)| {
                let tool = index.catalog.tools().get(*i)?;
                Some((text.clone(), (tool.name.to_string(), text_hash(text))))
            })
            .unzip()
    }

    pub fn sent(&mut self, batch: InFlight) {
        self.in_flight = Some(batch);
    }

    /// The batch a response answers, if it is ours.
    pub fn take(&mut self, token: u32) -> Option<InFlight> {
        match &self.in_flight {
            Some(b) if b.token == token => self.in_flight.take(),
            _ => None,
        }
    }

    pub fn succeeded(&mut self) {
        self.failures = 0;
        self.retry_at_ms = 0;
    }

    /// Waiting out a backoff at `now_ms`.
    pub fn backing_off(&self, now_ms: u64) -> bool {
        self.failures > 0 && now_ms < self.retry_at_ms
    }

    /// The service answered someone (any worker, a query or a batch) at `recovered_ms`: a
    /// backoff from a failure before that ends now.
    pub fn recovered(&mut self, recovered_ms: u64) {
        if self.failures > 0 && recovered_ms > self.failed_at_ms {
            self.succeeded();
        }
    }

    /// A failed batch: retry after 1 s, 2 s, then every `MAX_BACKOFF_MS`.
    pub fn failed(&mut self, now_ms: u64) -> u64 {
        self.in_flight = None;
        self.failed_at_ms = now_ms;
        self.failures = self.failures.saturating_add(1);
        let shift = self.failures.saturating_sub(1).min(16);
        let backoff = (1000u64 << shift).min(MAX_BACKOFF_MS);
        self.retry_at_ms = now_ms.saturating_add(backoff);
        backoff
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_and_resets() {
        let mut w = Worker::default();
        w.mark("ns");
        w.mark("ns");
        assert_eq!(w.pending(), ["ns"]);
        assert!(w.due(0));
        w.sent(InFlight {
            token: 7,
            namespace: "ns".into(),
            items: vec![],
        });
        assert!(!w.due(0), "one batch at a time");
        assert!(w.take(8).is_none());
        assert!(w.take(7).is_some());
        assert_eq!(w.failed(100), 1000);
        assert!(!w.due(1099) && w.due(1100));
        assert_eq!(w.failed(2000), 2000);
        for _ in 0..10 {
            w.failed(0);
        }
        assert_eq!(w.failed(0), MAX_BACKOFF_MS);
        w.succeeded();
        assert!(w.due(0));
        // Another worker's success after this one's failure ends its backoff; one before it
        // does not.
        w.failed(10_000);
        assert!(w.backing_off(10_001));
        w.recovered(9_999);
        assert!(!w.due(10_001));
        w.recovered(10_500);
        assert!(w.due(10_501) && !w.backing_off(10_501));
        w.done("ns");
        assert!(w.pending().is_empty());
    }
}
