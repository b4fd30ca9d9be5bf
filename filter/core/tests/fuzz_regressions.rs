//! Inputs the fuzz targets (`filter/core/fuzz/`) found, minimized, as plain native tests: each
//! names its target, the input and what went wrong.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod support;

use support::*;

/// Target `list`, input `06 15 0a` + `data: {"j\n\r\r\n` (minimized): an SSE list event the
/// filter cannot parse, completed in the same chunk as the first byte of what follows (here a
/// CR that may start a CRLF). The rewrite gives up and passes the stream on unchanged: what the
/// SSE parser still holds of that chunk must go with it, in every chunking (a lost byte here was
/// `data: {"j\n\r\n`, one CR short; in a longer input, the start of the next event).
#[test]
fn an_unparseable_sse_list_passes_through_whole_in_any_chunking() {
    let body: &[u8] = b"data: {\"j\n\r\r\n";
    let request = br#"{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}"#;
    for split in 0..=body.len() {
        let mut env = TestEnv::new("{}");
        let (a, b) = body.split_at(split);
        let out = exchange(
            &mut env,
            post("/mcp"),
            request,
            ("200", "text/event-stream", &[a, b]),
        );
        assert_eq!(
            out.body(),
            body,
            "split at {split}: {:?}",
            String::from_utf8_lossy(out.body())
        );
    }
}
