//! MCP on the wire (Streamable HTTP): JSON-RPC messages, SSE framing, the mirrored request
//! headers, endpoint paths, and the two things the filter changes: the `tools/list` result
//! (`list`) and the tools it answers itself (`injected`).

pub mod headers;
pub mod injected;
pub mod json;
pub mod jsonrpc;
pub mod list;
pub mod paths;
pub mod sse;
