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
//! The modules stay public for the tests, benchmarks, evaluation and playground that exercise
//! the index and the ranking directly; a host needs only what is re-exported here.

mod base64;
pub mod call;
pub mod config;
pub mod fetch;
pub mod http;
pub mod index;
pub mod keys;
pub mod mcp;
pub mod plugin;
pub mod rank;
mod sort;
pub mod stats;
pub mod store;
pub mod stream;
pub mod vector;

pub use call::{CallResponse, HttpCall};
pub use config::{Config, ConfigError};
pub use http::{
    exchange, Action, Body, CallSource, Context, Direction, Exchanged, Headers, HttpHost,
    MemoryHost, Request, Response, Root, StartError,
};
pub use plugin::{Host, Level, Plugin};
pub use stats::{Event, HELP, STATS};
pub use store::{SharedData, StoreError};
pub use stream::RequestHead;
