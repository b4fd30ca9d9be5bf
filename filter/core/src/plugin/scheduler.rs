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
}

/// A batch sent to the embeddings service.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InFlight {
    pub token: u32,
    pub namespace: String,
    /// Tool name and text hash, in input order.
    pub items: Vec<(String, u64)>,
}

/// The longest wait between retries of a failing embeddings service.
pub const MAX_BACKOFF_MS: u64 = 60_000;

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
                Some((text.clone(), (tool.name.clone(), text_hash(text))))
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

    /// A failed batch: retry after 1 s, 2 s, 4 s, ... up to a minute.
    pub fn failed(&mut self, now_ms: u64) -> u64 {
        self.in_flight = None;
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
        w.done("ns");
        assert!(w.pending().is_empty());
    }
}
