//! `cargo fuzz run config`: see `mcp_tool_search_core_fuzz::config` for what it feeds.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| mcp_tool_search_core_fuzz::config(data));
