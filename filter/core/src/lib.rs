//! mcp-tool-search without its host: everything the filter decides, in plain Rust.
//!
//! A host starts here: one [`Root`] per VM ([`Root::configure`] with the plugin configuration)
//! and one [`Context`] per HTTP stream ([`Root::context`]), fed exactly proxy-wasm's callbacks,
//! over the two host traits [`Host`] and [`HttpHost`]. Envoy provides them through the glue
//! crate; [`MemoryHost`] provides them in memory, and [`exchange`] drives a stream as Envoy does.
//!
//! The path of a request, by folder: `http/` (the callbacks, the calls a stream waits on);
//! `stream/` decides (classifies the request, answers locally or lets it go upstream, rewrites or
//! guards the response); `mcp/` reads JSON-RPC and SSE, rewrites a `tools/list` result
//! (`mcp::list`) and answers the injected tools (`mcp::injected`); `index/` builds the BM25 index
//! of a catalog; `rank/` ranks a query (BM25, vectors, hybrid); `store/` shares catalogs and
//! vectors between workers under the keys of `keys.rs`; `plugin/` is one VM's state; `config/`
//! parses the plugin configuration and the authorization policy; `stats.rs` names every counter.
//!
//! The modules are private: this file is the crate's whole surface. The first group is what a
//! host needs; the rest is what the native drivers (tests, fuzz targets, the benchmark, the
//! evaluation and the playground) reach below the stream to exercise the index, the ranking and
//! the parsers directly. `keys` and `stats` stay modules: they are the names other components
//! see (shared-data keys, Envoy counters), read as tables.

mod base64;
mod call;
mod config;
mod fetch;
mod find;
mod http;
mod index;
mod insights;
pub mod keys;
mod mcp;
mod plugin;
mod rank;
mod sort;
pub mod stats;
mod store;
mod stream;
mod vector;

// Hosting the filter: one root per VM, one context per stream, the two host traits.
pub use call::{CallResponse, HttpCall};
pub use config::{Config, ConfigError};
pub use http::{
    Action, Body, Context, Direction, Headers, HttpHost, Root, StartError, ACCESS_PROPERTY,
    METADATA_KEY,
};
pub use plugin::{Host, Level, Plugin, CATALOG_TICK_MS, EMBED_TICK_MS, MAX_BACKOFF_MS};
pub use stats::{Event, PassReason, Refusal, ScriptEnd, HELP, HISTOGRAMS, STATS};
pub use store::{SharedData, StoreError};
pub use stream::RequestHead;

// The native host, and the plugin state its drivers inspect.
pub use fetch::{credential_of, MARKER_HEADER};
pub use http::{
    exchange, CallSource, Exchanged, MemoryHost, MemoryStream, Request, Response, Serve,
};
pub use plugin::{fetch_secret, install_fetch_secret, FetchProgress};
pub use store::{read_meta, update_meta, CatalogCache, CatalogMeta, Learned, MemorySharedData};

// The configuration's parts.
pub use config::entries::Entry;
pub use config::metadata::encode_filter_metadata;
pub use config::paths::{candidates as path_candidates, resource_uri_problem};
pub use config::policy::{Caller, IdentitySource};
pub use config::routing::Strategy;
pub use config::{
    DisclosureMode, Ranking, ResultFormat, Tuning, DEFAULT_HYBRID_VECTOR_WEIGHT, DEFAULT_MCP_PATH,
};

// The index and the ranking.
pub use index::catalog::groups::GroupIndex;
pub use index::catalog::{Catalog, CatalogIndex, Page, Tool};
pub use index::fnv::{fingerprint, hash};
pub use index::tokenizer::{for_each_word, terms, words};
pub use rank::embeddings::{
    parse_response as parse_embeddings, request_body as embeddings_request, tool_text,
};
pub use rank::explain::{explain, Explanation};
pub use rank::parts::{query_texts, query_vector};
pub use rank::search::{query_cosine, search, Fallback, FallbackKind, Query, Vectors};
pub use vector::{normalize, ToolVectors};

// The wire: SSE, notifications, mirrored headers, the injected tools' arguments.
pub use mcp::headers::Mirrored;
pub use mcp::injected::answer::tokens_read;
pub use mcp::injected::{parse_search, Asker, Injected};
pub use mcp::notify::ListChangedScanner;
pub use mcp::sse::{replace_data, Event as SseEvent, Parser as SseParser};
