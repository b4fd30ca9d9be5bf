//! `cargo fuzz run metadata`: see `mcp_tool_search_core_fuzz::metadata` for what it feeds.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| mcp_tool_search_core_fuzz::metadata(data));
