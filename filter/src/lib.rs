//! mcp-tool-search: a proxy-wasm filter that puts tool search in front of an MCP server.
//!
//! Everything but `glue` is plain Rust with no proxy-wasm calls, tested natively; `glue` maps
//! Envoy's callbacks onto it and is the only code that needs a host.

pub mod bm25;
pub mod catalog;
pub mod config;
pub mod fnv;
pub mod glob;
pub mod glue;
pub mod injected;
pub mod json;
pub mod jsonrpc;
pub mod mcp_headers;
pub mod paths;
pub mod rewrite;
pub mod sse;
pub mod stem;
pub mod store;
pub mod stream;
pub mod tokenizer;

#[cfg(target_arch = "wasm32")]
proxy_wasm::main! {{
    glue::start();
}}
pub mod embeddings;
pub mod policy;
pub mod proto;
pub mod search;
pub mod vector;
