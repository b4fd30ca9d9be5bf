//! The filter's answers computed the way Envoy drives it, independently of the playground's
//! own driver: one worker (the core's `Root`) on a `MemoryHost`, fed whole exchanges by
//! the core's driver (`exchange`) with the request headers a client sends; a `tools/list`
//! learned from the upstream's response, then a `tools/call` of the search tool answered by
//! the filter. Shared by the native tests and the `filter-answer` example the browser test
//! compares the page with.

use mcp_tool_search_core::{
    exchange, CallResponse, CallSource, Config, Exchanged, HttpCall, MemoryHost, Plugin, Request,
    Response, Root, METADATA_KEY,
};

/// The filter, one worker, in front of an upstream that answers `tools/list` with `list`
/// (a JSON-RPC response body whose id is 1).
pub struct Filter {
    pub config: Config,
    host: MemoryHost,
    root: Root,
}

impl Filter {
    pub fn new(config: &str, namespace: &str) -> Result<Filter, String> {
        let config = Config::parse(config).map_err(|e| e.to_string())?;
        let host = MemoryHost::default();
        host.clock_ms.set(1_767_225_600_000);
        host.set_property(
            &[
                "xds",
                "route_metadata",
                "filter_metadata",
                METADATA_KEY,
                "namespace",
            ],
            namespace,
        );
        let root = Root::new(Plugin::new(config.clone(), "native".into()));
        Ok(Filter { config, host, root })
    }

    fn request(&self, headers: &[(&str, &str)], body: &[u8]) -> Request {
        let mut all: Vec<(String, Vec<u8>)> = vec![
            (":method".into(), b"POST".to_vec()),
            (
                ":path".into(),
                self.config
                    .mcp_paths
                    .first()
                    .cloned()
                    .unwrap_or_default()
                    .into_bytes(),
            ),
            (":authority".into(), b"mcp.example".to_vec()),
            ("content-type".into(), b"application/json".to_vec()),
            (
                "accept".into(),
                b"application/json, text/event-stream".to_vec(),
            ),
        ];
        all.extend(
            headers
                .iter()
                .map(|(k, v)| (k.to_string(), v.as_bytes().to_vec())),
        );
        Request {
            headers: all,
            chunks: vec![body.to_vec()],
            trailers: false,
        }
    }

    /// A `tools/list` with `headers`, answered by the upstream with `list`: the body the client
    /// receives.
    pub fn list(&self, headers: &[(&str, &str)], list: &[u8]) -> Result<Vec<u8>, String> {
        let request = self.request(
            headers,
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
        );
        let response = Response {
            headers: vec![
                (":status".into(), b"200".to_vec()),
                ("content-type".into(), b"application/json".to_vec()),
            ],
            chunks: vec![list.to_vec()],
            trailers: false,
        };
        match exchange(&self.root, &self.host, &request, &response, &mut no_calls) {
            Exchanged::Upstream { response, .. } => Ok(response),
            other => Err(format!("tools/list not sent upstream: {other:?}")),
        }
    }

    /// A `tools/call` of `name` with `arguments` (JSON) and `headers`: the filter's reply.
    pub fn call(
        &self,
        headers: &[(&str, &str)],
        name: &str,
        arguments: &str,
    ) -> Result<serde_json::Value, String> {
        let body = serde_json::json!({
            "jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": name, "arguments": serde_json::from_str::<serde_json::Value>(arguments).map_err(|e| e.to_string())?}
        })
        .to_string();
        let request = self.request(headers, body.as_bytes());
        let upstream = Response::default();
        match exchange(&self.root, &self.host, &request, &upstream, &mut no_calls) {
            Exchanged::Local(reply) => {
                serde_json::from_slice(&reply.body).map_err(|e| e.to_string())
            }
            other => Err(format!("not answered by the filter: {other:?}")),
        }
    }
}

/// The filter here makes no call that needs an answer: nothing answers.
fn no_calls(_: &HttpCall, _: CallSource) -> CallResponse {
    (None, Vec::new(), Vec::new())
}

/// `list` (a JSON-RPC response, a result, an array or JSON lines of tools) as the JSON-RPC
/// response to the request with id 1, every definition's bytes kept.
pub fn response_of(list: &str) -> String {
    use serde_json::value::RawValue;
    let trimmed = list.trim();
    let result = match serde_json::from_str::<&RawValue>(trimmed) {
        Ok(raw) if raw.get().starts_with('[') => format!("{{\"tools\":{}}}", raw.get()),
        Ok(raw) => {
            #[derive(serde::Deserialize)]
            struct Response<'a> {
                #[serde(borrow)]
                result: Option<&'a RawValue>,
            }
            match serde_json::from_str::<Response>(raw.get()) {
                Ok(Response { result: Some(r) }) => r.get().to_string(),
                _ => raw.get().to_string(),
            }
        }
        Err(_) => {
            let lines: Vec<&str> = trimmed.lines().filter(|l| !l.trim().is_empty()).collect();
            format!("{{\"tools\":[{}]}}", lines.join(","))
        }
    };
    format!("{{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{result}}}")
}
