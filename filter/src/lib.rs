//! mcp-tool-search: a proxy-wasm filter that puts tool search in front of an MCP server.
//!
//! This crate is the glue: it maps Envoy's callbacks (through proxy-wasm) onto the core
//! (`mcp-tool-search-core`), which decides everything and never calls the host itself.

// Natively nothing calls the glue (Envoy does, through the exports `main!` sets up); it is
// still compiled, so native builds check it.
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
mod glue;

#[cfg(target_arch = "wasm32")]
proxy_wasm::main! {{
    glue::start();
}}
