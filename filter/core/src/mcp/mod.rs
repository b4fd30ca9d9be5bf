//! MCP on the wire (Streamable HTTP): JSON-RPC messages, SSE framing, the mirrored request
//! headers, and the two things the filter changes: the `tools/list` result
//! (`list`) and the tools it answers itself (`injected`, whose search answers are sized by
//! `injected::answer`).

pub mod guard;
pub mod headers;
pub mod injected;
pub(crate) mod json;
pub(crate) mod jsonrpc;
pub(crate) mod list;
pub mod notify;
pub(crate) mod outgoing;
pub(crate) mod result;
pub mod sse;
