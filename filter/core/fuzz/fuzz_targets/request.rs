//! `cargo fuzz run request`: see `mcp_tool_search_core_fuzz::request` for what it feeds.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| mcp_tool_search_core_fuzz::request(data));
