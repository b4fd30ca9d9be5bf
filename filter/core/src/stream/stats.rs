//! The counters an operator reads at Envoy's `/stats` (prefixed `wasmcustom.mcp_tool_search.`),
//! and which event counts in which.

use super::{Event, PassReason, Refusal};
use crate::config::Ranking;
use crate::rank::search::FallbackKind;

/// Every counter, as the host defines them at start.
pub const STATS: &[&str] = &[
    "lists_rewritten",
    "tools_hidden",
    "searches_answered.bm25",
    "searches_answered.vector",
    "searches_answered.hybrid",
    "search_fallbacks.not_embedded",
    "search_fallbacks.unavailable",
    "search_fallbacks.timeout",
    "search_fallbacks.status",
    "search_fallbacks.malformed",
    "search_fallbacks.dimensions",
    "search_fallbacks.circuit_open",
    "searches_rejected",
    "calls_refused",
    "calls_forwarded",
    "errors",
    "embedding_failures_total",
    "embeddings_circuit.opened",
    "embeddings_circuit.half_open",
    "embeddings_circuit.closed",
    "passthrough.too_large",
    "passthrough.unparseable",
    "passthrough.encoded",
    "passthrough.content_type",
    "passthrough.status",
    "passthrough.mixed_batch",
    "requests_refused.unreadable",
    "requests_refused.header_mismatch",
    "catalog_fetches.ok",
    "catalog_fetches.failed",
    "responses_withheld",
    "lists_filtered_unpaired",
    "lists_not_learned",
];

impl Event {
    /// The counter this event adds to, and by how much.
    pub fn stat(self) -> (&'static str, u64) {
        let name = match self {
            Event::ListRewritten => "lists_rewritten",
            Event::ToolsHidden(n) => return ("tools_hidden", n),
            Event::SearchAnswered(Ranking::Bm25) => "searches_answered.bm25",
            Event::SearchAnswered(Ranking::Vector) => "searches_answered.vector",
            Event::SearchAnswered(Ranking::Hybrid) => "searches_answered.hybrid",
            Event::SearchFallback(kind) => match kind {
                FallbackKind::NotEmbedded => "search_fallbacks.not_embedded",
                FallbackKind::Unavailable => "search_fallbacks.unavailable",
                FallbackKind::Timeout => "search_fallbacks.timeout",
                FallbackKind::Status => "search_fallbacks.status",
                FallbackKind::Malformed => "search_fallbacks.malformed",
                FallbackKind::Dimensions => "search_fallbacks.dimensions",
                FallbackKind::CircuitOpen => "search_fallbacks.circuit_open",
            },
            Event::SearchRejected => "searches_rejected",
            Event::CallRefused => "calls_refused",
            Event::CallForwarded => "calls_forwarded",
            Event::Error => "errors",
            Event::PassedThrough(reason) => match reason {
                PassReason::TooLarge => "passthrough.too_large",
                PassReason::Unparseable => "passthrough.unparseable",
                PassReason::Encoded => "passthrough.encoded",
                PassReason::ContentType => "passthrough.content_type",
                PassReason::Status => "passthrough.status",
                PassReason::MixedBatch => "passthrough.mixed_batch",
            },
            Event::RequestRefused(Refusal::Unreadable) => "requests_refused.unreadable",
            Event::RequestRefused(Refusal::HeaderMismatch) => "requests_refused.header_mismatch",
            Event::CatalogFetched(true) => "catalog_fetches.ok",
            Event::CatalogFetched(false) => "catalog_fetches.failed",
            Event::ResponseWithheld => "responses_withheld",
            Event::ListFilteredUnpaired => "lists_filtered_unpaired",
            Event::ListNotLearned => "lists_not_learned",
        };
        (name, 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_event_counts_in_a_defined_stat_named_after_its_kind() {
        let mut events = vec![
            Event::ListRewritten,
            Event::ToolsHidden(3),
            Event::SearchRejected,
            Event::CallRefused,
            Event::CallForwarded,
            Event::Error,
            Event::CatalogFetched(true),
            Event::CatalogFetched(false),
            Event::ResponseWithheld,
            Event::ListFilteredUnpaired,
            Event::ListNotLearned,
        ];
        for r in [Ranking::Bm25, Ranking::Vector, Ranking::Hybrid] {
            events.push(Event::SearchAnswered(r));
            assert!(STATS.contains(&format!("searches_answered.{}", r.name()).as_str()));
        }
        for k in FallbackKind::ALL {
            events.push(Event::SearchFallback(k));
            assert_eq!(
                Event::SearchFallback(k).stat().0,
                format!("search_fallbacks.{}", k.name())
            );
        }
        for p in PassReason::ALL {
            events.push(Event::PassedThrough(p));
            assert_eq!(
                Event::PassedThrough(p).stat().0,
                format!("passthrough.{}", p.name())
            );
        }
        for r in Refusal::ALL {
            events.push(Event::RequestRefused(r));
            assert_eq!(
                Event::RequestRefused(r).stat().0,
                format!("requests_refused.{}", r.name())
            );
        }
        for e in events {
            assert!(STATS.contains(&e.stat().0), "{e:?}");
        }
        assert_eq!(Event::ToolsHidden(3).stat(), ("tools_hidden", 3));
    }
}
