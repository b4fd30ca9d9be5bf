//! The counters an operator reads at Envoy's `/stats` (prefixed `wasmcustom.mcp_tool_search.`),
//! each named once here, and the events that count in them.

use crate::config::Ranking;
use crate::rank::search::FallbackKind;

/// Declares a table of stats once: a constant naming each, the table (`$all`) and what each
/// counts or records (`$help`, in the table's order).
macro_rules! stats {
    ($(#[$all_doc:meta])* $all:ident, $(#[$help_doc:meta])* $help_table:ident;
     $($name:ident = $stat:literal: $help:literal,)*) => {
        $(#[doc = $help] pub const $name: &str = $stat;)*
        $(#[$all_doc])*
        pub const $all: &[&str] = &[$($name),*];
        $(#[$help_doc])*
        pub const $help_table: &[(&str, &str)] = &[$(($name, $help)),*];
    };
}

stats! {
    /// Every counter, as the host defines them at start.
    STATS,
    /// What each counter counts, in the order of [`STATS`].
    HELP;
    LISTS_REWRITTEN = "lists_rewritten": "`tools/list` results rewritten (eager kept, progressive hidden, `tool_search` added)",
    TOOLS_HIDDEN = "tools_hidden": "tools hidden from rewritten lists (progressive), summed",
    LISTS_REPLAYED = "lists_replayed": "`tools/list` results answered as the last rewrite of the same tools (the same bytes, or the same tools in another order) without reading them again",
    SEARCHES_ANSWERED_BM25 = "searches_answered.bm25": "searches answered, ranked by BM25",
    SEARCHES_ANSWERED_VECTOR = "searches_answered.vector": "searches answered, ranked by vectors",
    SEARCHES_ANSWERED_HYBRID = "searches_answered.hybrid": "searches answered, ranked by BM25 and vectors together",
    SEARCH_FALLBACKS_NOT_EMBEDDED = "search_fallbacks.not_embedded": "vector or hybrid searches ranked by BM25: the catalog has no vectors yet",
    SEARCH_FALLBACKS_UNAVAILABLE = "search_fallbacks.unavailable": "... ranked by BM25: the embeddings service could not be called",
    SEARCH_FALLBACKS_TIMEOUT = "search_fallbacks.timeout": "... ranked by BM25: the embeddings service timed out",
    SEARCH_FALLBACKS_STATUS = "search_fallbacks.status": "... ranked by BM25: the embeddings service answered an error status",
    SEARCH_FALLBACKS_MALFORMED = "search_fallbacks.malformed": "... ranked by BM25: the embeddings service answered something unreadable",
    SEARCH_FALLBACKS_DIMENSIONS = "search_fallbacks.dimensions": "... ranked by BM25: the query vector's dimensions differ from the tools'",
    SEARCH_FALLBACKS_CIRCUIT_OPEN = "search_fallbacks.circuit_open": "... ranked by BM25: the embeddings circuit is open",
    SEARCHES_REJECTED = "searches_rejected": "searches refused for bad arguments",
    CALLS_REFUSED = "calls_refused": "`tools/call`s of tools the caller may not use, refused",
    CALLS_FORWARDED = "calls_forwarded": "`call_tool` calls made upstream as plain `tools/call`",
    ERRORS = "errors": "failed hostcalls and responses cut short (see the log)",
    EMBEDDING_FAILURES_TOTAL = "embedding_failures_total": "background tool embedding batches that failed",
    EMBEDDINGS_CIRCUIT_OPENED = "embeddings_circuit.opened": "the query embeddings' circuit opened",
    EMBEDDINGS_CIRCUIT_HALF_OPEN = "embeddings_circuit.half_open": "the circuit let a probe through",
    EMBEDDINGS_CIRCUIT_CLOSED = "embeddings_circuit.closed": "the circuit closed again",
    PASSTHROUGH_TOO_LARGE = "passthrough.too_large": "bodies let through unread: too large",
    PASSTHROUGH_UNPARSEABLE = "passthrough.unparseable": "bodies let through unread: not JSON-RPC the filter could read",
    PASSTHROUGH_ENCODED = "passthrough.encoded": "bodies let through unread: compressed",
    PASSTHROUGH_CONTENT_TYPE = "passthrough.content_type": "bodies let through unread: neither JSON nor SSE",
    PASSTHROUGH_STATUS = "passthrough.status": "bodies let through unread: not a 2xx response",
    PASSTHROUGH_MIXED_BATCH = "passthrough.mixed_batch": "bodies let through unread: a batch mixing the filter's tools with upstream calls",
    REQUESTS_REFUSED_UNREADABLE = "requests_refused.unreadable": "requests refused under a policy: not readable in exactly one way",
    REQUESTS_REFUSED_HEADER_MISMATCH = "requests_refused.header_mismatch": "requests refused: `Mcp-*` headers disagree with the body",
    CATALOG_FETCHES_OK = "catalog_fetches.ok": "catalog fetches that succeeded",
    CATALOG_FETCHES_FAILED = "catalog_fetches.failed": "catalog fetches that failed",
    RESPONSES_WITHHELD = "responses_withheld": "responses (or SSE events) withheld under a policy: not readable in exactly one way",
    LISTS_FILTERED_UNPAIRED = "lists_filtered_unpaired": "list results filtered for the caller on a stream that did not ask for them",
    LISTS_NOT_LEARNED = "lists_not_learned": "lists answered but not learned (another authority than `catalog.authority`)",
    SCRIPTS_OK = "scripts.ok": "code mode: scripts that returned a result",
    SCRIPTS_ERROR = "scripts.error": "code mode: scripts that threw, or were not valid",
    SCRIPTS_LIMIT = "scripts.limit": "code mode: scripts a limit ended (time, memory, stack, calls, call time, output)",
    SCRIPT_CALLS = "script_calls": "code mode: `tools/call`s scripts made upstream",
}

stats! {
    /// Every per-namespace counter: the host defines `namespace.<ns>.<stat>` the first time a
    /// namespace counts in it (see [`in_namespace`]).
    NAMESPACE_STATS,
    /// What each per-namespace counter counts, in the order of [`NAMESPACE_STATS`].
    NAMESPACE_HELP;
    SEARCH_ZERO_RESULTS = "search_zero_results": "tool searches that matched no tool",
    SEARCH_CALLS_AFTER_RANK_1 = "search_calls_after.rank_1": "tool calls of the first result of a recent search of the same session or caller",
    SEARCH_CALLS_AFTER_RANK_2_5 = "search_calls_after.rank_2_5": "... of its 2nd to 5th result",
    SEARCH_CALLS_AFTER_RANK_OVER_5 = "search_calls_after.rank_over_5": "... of a result ranked below 5th",
    CALLS_WITHOUT_SEARCH = "calls_without_search": "tool calls of a tool no recent search of the same session or caller returned",
    CALLS_AFTER_DESCRIBE = "calls_after_describe": "tool calls of a tool `describe_tool` gave the same session or caller",
}

/// The stat name of a per-namespace counter: `namespace.<ns>.<stat>`, the namespace with every
/// character but ASCII letters, digits, `_` and `-` written `_`, since Envoy reads dots in a stat
/// name as its hierarchy (and Prometheus allows no others).
pub fn in_namespace(namespace: &str, stat: &str) -> String {
    let ns: String = namespace
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("namespace.{ns}.{stat}")
}

stats! {
    /// Every histogram, as the host defines them at start.
    HISTOGRAMS,
    /// What each histogram records, in the order of [`HISTOGRAMS`].
    HISTOGRAM_HELP;
    SEARCH_TIME_US = "search_time_us": "microseconds a tool search took inside the filter (ranking and writing the answer)",
    SEARCH_RESULTS = "search_results": "tools a search answer returned",
    LIST_REWRITE_TIME_US = "list_rewrite_time_us": "microseconds a `tools/list` rewrite took",
    LIST_BYTES_SAVED = "list_bytes_saved": "bytes a `tools/list` rewrite removed from the result",
}

/// Why a body the filter meant to change went through unchanged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PassReason {
    TooLarge,
    Unparseable,
    Encoded,
    ContentType,
    Status,
    MixedBatch,
}

impl PassReason {
    pub const ALL: [PassReason; 6] = [
        PassReason::TooLarge,
        PassReason::Unparseable,
        PassReason::Encoded,
        PassReason::ContentType,
        PassReason::Status,
        PassReason::MixedBatch,
    ];

    pub fn name(self) -> &'static str {
        match self {
            PassReason::TooLarge => "too_large",
            PassReason::Unparseable => "unparseable",
            PassReason::Encoded => "encoded",
            PassReason::ContentType => "content_type",
            PassReason::Status => "status",
            PassReason::MixedBatch => "mixed_batch",
        }
    }
}

/// What the operator's stats count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    ListRewritten,
    /// A list answered from the memo of the last rewrite (`mcp::list`), not read again.
    ListReplayed,
    ToolsHidden(u64),
    /// A search answered, by the ranking that ran.
    SearchAnswered(Ranking),
    /// A vector or hybrid search that ran as BM25, and why.
    SearchFallback(FallbackKind),
    SearchRejected,
    /// A `tools/call` of a tool the caller may not use, refused by the filter.
    CallRefused,
    /// A `call_tool` turned into a plain `tools/call` upstream.
    CallForwarded,
    PassedThrough(PassReason),
    /// A request refused before it reached the upstream.
    RequestRefused(Refusal),
    /// A catalog fetch ended: `true` when it succeeded.
    CatalogFetched(bool),
    /// Under a policy, a response body or SSE event that could not be read in exactly one way,
    /// replaced by an error.
    ResponseWithheld,
    /// Under a policy, a list result on a stream that did not ask for it (another id, a resumed
    /// GET stream), filtered for the caller.
    ListFilteredUnpaired,
    /// A list of a request to another authority than `catalog.authority`: answered, not learned.
    ListNotLearned,
    /// A script ended (code mode).
    Script(ScriptEnd),
    /// A script's `tools/call`s sent upstream.
    ScriptCalls(u64),
    Error,
}

/// How a script ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScriptEnd {
    Ok,
    Error,
    Limit,
}

/// Why a request was refused before it reached the upstream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// Under a policy: a body that cannot be read in exactly one way, one too large to read,
    /// or one that could not be read whole.
    Unreadable,
    /// `Mcp-Method`, `Mcp-Name` or `MCP-Protocol-Version` disagrees with the body.
    HeaderMismatch,
}

impl Refusal {
    pub const ALL: [Refusal; 2] = [Refusal::Unreadable, Refusal::HeaderMismatch];

    pub fn name(self) -> &'static str {
        match self {
            Refusal::Unreadable => "unreadable",
            Refusal::HeaderMismatch => "header_mismatch",
        }
    }
}

impl Event {
    /// The event that adds `by` to `stat` (the inverse of [`Event::stat`]), for hosts that
    /// keep counts event by event.
    pub fn from_stat(stat: &str, by: u64) -> Option<Event> {
        if stat == TOOLS_HIDDEN {
            return Some(Event::ToolsHidden(by));
        }
        if stat == SCRIPT_CALLS {
            return Some(Event::ScriptCalls(by));
        }
        let mut every = vec![
            Event::ListRewritten,
            Event::ListReplayed,
            Event::SearchRejected,
            Event::CallRefused,
            Event::CallForwarded,
            Event::Error,
            Event::CatalogFetched(true),
            Event::CatalogFetched(false),
            Event::ResponseWithheld,
            Event::ListFilteredUnpaired,
            Event::ListNotLearned,
            Event::Script(ScriptEnd::Ok),
            Event::Script(ScriptEnd::Error),
            Event::Script(ScriptEnd::Limit),
        ];
        every.extend([Ranking::Bm25, Ranking::Vector, Ranking::Hybrid].map(Event::SearchAnswered));
        every.extend(FallbackKind::ALL.map(Event::SearchFallback));
        every.extend(PassReason::ALL.map(Event::PassedThrough));
        every.extend(Refusal::ALL.map(Event::RequestRefused));
        every.into_iter().find(|e| e.stat() == (stat, by))
    }

    /// The counter this event adds to, and by how much.
    pub fn stat(self) -> (&'static str, u64) {
        let name = match self {
            Event::ListRewritten => LISTS_REWRITTEN,
            Event::ListReplayed => LISTS_REPLAYED,
            Event::ToolsHidden(n) => return (TOOLS_HIDDEN, n),
            Event::SearchAnswered(Ranking::Bm25) => SEARCHES_ANSWERED_BM25,
            Event::SearchAnswered(Ranking::Vector) => SEARCHES_ANSWERED_VECTOR,
            Event::SearchAnswered(Ranking::Hybrid) => SEARCHES_ANSWERED_HYBRID,
            Event::SearchFallback(kind) => match kind {
                FallbackKind::NotEmbedded => SEARCH_FALLBACKS_NOT_EMBEDDED,
                FallbackKind::Unavailable => SEARCH_FALLBACKS_UNAVAILABLE,
                FallbackKind::Timeout => SEARCH_FALLBACKS_TIMEOUT,
                FallbackKind::Status => SEARCH_FALLBACKS_STATUS,
                FallbackKind::Malformed => SEARCH_FALLBACKS_MALFORMED,
                FallbackKind::Dimensions => SEARCH_FALLBACKS_DIMENSIONS,
                FallbackKind::CircuitOpen => SEARCH_FALLBACKS_CIRCUIT_OPEN,
            },
            Event::SearchRejected => SEARCHES_REJECTED,
            Event::CallRefused => CALLS_REFUSED,
            Event::CallForwarded => CALLS_FORWARDED,
            Event::Error => ERRORS,
            Event::PassedThrough(reason) => match reason {
                PassReason::TooLarge => PASSTHROUGH_TOO_LARGE,
                PassReason::Unparseable => PASSTHROUGH_UNPARSEABLE,
                PassReason::Encoded => PASSTHROUGH_ENCODED,
                PassReason::ContentType => PASSTHROUGH_CONTENT_TYPE,
                PassReason::Status => PASSTHROUGH_STATUS,
                PassReason::MixedBatch => PASSTHROUGH_MIXED_BATCH,
            },
            Event::RequestRefused(Refusal::Unreadable) => REQUESTS_REFUSED_UNREADABLE,
            Event::RequestRefused(Refusal::HeaderMismatch) => REQUESTS_REFUSED_HEADER_MISMATCH,
            Event::CatalogFetched(true) => CATALOG_FETCHES_OK,
            Event::CatalogFetched(false) => CATALOG_FETCHES_FAILED,
            Event::ResponseWithheld => RESPONSES_WITHHELD,
            Event::ListFilteredUnpaired => LISTS_FILTERED_UNPAIRED,
            Event::ListNotLearned => LISTS_NOT_LEARNED,
            Event::Script(ScriptEnd::Ok) => SCRIPTS_OK,
            Event::Script(ScriptEnd::Error) => SCRIPTS_ERROR,
            Event::Script(ScriptEnd::Limit) => SCRIPTS_LIMIT,
            Event::ScriptCalls(n) => return (SCRIPT_CALLS, n),
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
            Event::ListReplayed,
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
            Event::Script(ScriptEnd::Ok),
            Event::Script(ScriptEnd::Error),
            Event::Script(ScriptEnd::Limit),
            Event::ScriptCalls(2),
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

    #[test]
    fn a_namespace_is_one_segment_of_its_stat_names() {
        assert_eq!(
            in_namespace(
                "outbound|8080||svc.ns.svc.cluster.local",
                SEARCH_ZERO_RESULTS
            ),
            "namespace.outbound_8080__svc_ns_svc_cluster_local.search_zero_results"
        );
        assert_eq!(
            in_namespace("git-hub_2", CALLS_WITHOUT_SEARCH),
            "namespace.git-hub_2.calls_without_search"
        );
    }
}
