//! mcp-tool-search's code-mode module: the filter's glue (`filter/src`, these same files) over
//! the core built with code mode, whose scripts run in QuickJS (`filter/script`). Everything
//! but `mode: "code"` behaves as in `mcp_tool_search.wasm`.

#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
#[path = "../../src/context.rs"]
mod context;
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
#[path = "../../src/host.rs"]
mod host;
#[path = "../../src/start.rs"]
mod start;
