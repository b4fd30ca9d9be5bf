//! mcp-tool-search without its host: everything the filter decides, in plain Rust.
//!
//! The path of a request, by folder: `stream/` classifies it and answers locally or lets it go
//! upstream; `mcp/` reads JSON-RPC and SSE, rewrites a `tools/list` result (`mcp::list`) and
//! answers the injected tools (`mcp::injected`); `index/` builds the BM25 index of a catalog;
//! `rank/` ranks a query (BM25, vectors, hybrid); `store` shares catalogs and vectors between
//! workers; `config/` parses the plugin configuration and the authorization policy. The host
//! (Envoy through proxy-wasm, or memory in tests) is reached only through `stream::Env`.

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

pub use stats::STATS;
