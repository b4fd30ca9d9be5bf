//! An outgoing HTTP call, as the host makes it: the filter's own requests (catalog fetches,
//! embeddings) go through a host cluster (proxy-wasm `dispatch_http_call`).

/// An HTTP call through a host cluster (proxy-wasm `dispatch_http_call`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpCall {
    pub cluster: String,
    /// Including the pseudo-headers the host needs: `:method`, `:path`, `:authority`.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub timeout_ms: u64,
}

/// What came back from a call: `:status` (`None` when the host got no response), the response
/// headers, the body.
pub type CallResponse = (Option<String>, Vec<(String, String)>, Vec<u8>);
