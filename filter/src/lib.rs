//! mcp-tool-search: a proxy-wasm filter that puts tool search in front of an MCP server.
//!
//! This crate is the glue, and only the glue: `context` hands each of Envoy's callbacks to
//! the core's `http::Root` and `http::Context` (`mcp-tool-search-core`, which decides
//! everything and is tested natively over the same callbacks), and `host` implements the
//! core's two host traits with proxy-wasm hostcalls. No state lives here.
//!
//! Hostcalls are only made through the SDK's `Result`-returning functions (never the
//! convenience trait methods, which unwrap): a panic would trap the VM and take the listener's
//! filter chain down with it. Those functions still panic on a status they do not expect (SDK
//! 0.2.5), so a call is only made where the host has what it asks for (the core asks for a
//! call response's headers only when it has some).

// Natively nothing calls the glue (Envoy does, through the exports `main!` sets up); it is
// still compiled, so native builds check it. The code-mode module (code-module/) is built from
// these same files.
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
mod context;
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
mod host;
mod start;
