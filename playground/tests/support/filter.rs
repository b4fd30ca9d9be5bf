//! The filter's answers computed the way the proxy-wasm glue computes them, independently of
//! the playground's own driver: request heads read from header lists
//! (`RequestHead::from_headers`, as `glue/http.rs` does), the core's `Plugin` on a `MemoryHost`,
//! a `tools/list` learned from the upstream's response, then a `tools/call` of the search tool
//! answered by the filter. Shared by the native tests and the `filter-answer` example the
//! browser test compares the page with.

use mcp_tool_search_core::config::Config;
use mcp_tool_search_core::plugin::{MemoryHost, Plugin};
use mcp_tool_search_core::stream::{
    RequestBodyAction, RequestHead, RequestHeadersAction, ResponseHeadersAction, Stream,
};

/// The filter, one worker, in front of an upstream that answers `tools/list` with `list`
/// (a JSON-RPC response body whose id is 1).
pub struct Filter {
    pub config: Config,
    host: MemoryHost,
    plugin: Plugin,
    namespace: String,
}

impl Filter {
    pub fn new(config: &str, namespace: &str) -> Result<Filter, String> {
        let config = Config::parse(config).map_err(|e| e.to_string())?;
        let host = MemoryHost::default();
        host.clock_ms.set(1_767_225_600_000);
        let plugin = Plugin::new(config.clone(), "native".into());
        // As the glue does when a stream starts on the worker.
        plugin.stream_started();
        Ok(Filter {
            plugin,
            config,
            host,
            namespace: namespace.into(),
        })
    }

    fn head(&self, headers: &[(&str, &str)]) -> RequestHead {
        let mut all: Vec<(String, String)> = vec![
            (":method".into(), "POST".into()),
            (
                ":path".into(),
                self.config.mcp_paths.first().cloned().unwrap_or_default(),
            ),
            (":authority".into(), "mcp.example".into()),
            ("content-type".into(), "application/json".into()),
            (
                "accept".into(),
                "application/json, text/event-stream".into(),
            ),
        ];
        all.extend(headers.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        RequestHead::from_headers(&self.config, &all, || None)
    }

    /// A `tools/list` with `headers`, answered by the upstream with `list`: the body the client
    /// receives.
    pub fn list(&self, headers: &[(&str, &str)], list: &[u8]) -> Result<Vec<u8>, String> {
        let mut env = self.plugin.env(&self.host, self.namespace.clone());
        let mut stream = Stream::new();
        let request = br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
        if !matches!(
            stream.on_request_headers(&self.config, &mut env, self.head(headers), false),
            RequestHeadersAction::ReadBody { .. }
        ) {
            return Err("tools/list not read".into());
        }
        match stream.on_request_body(&self.config, &mut env, request) {
            RequestBodyAction::Continue { .. } => {}
            other => return Err(format!("tools/list not sent upstream: {other:?}")),
        }
        let action = stream.on_response_headers(
            &self.config,
            &mut env,
            Some("200"),
            Some("application/json"),
            None,
        );
        if action == ResponseHeadersAction::Continue {
            return Ok(list.to_vec());
        }
        Ok(stream.on_response_chunk(&self.config, &mut env, list, true))
    }

    /// A `tools/call` of `name` with `arguments` (JSON) and `headers`: the filter's reply.
    pub fn call(
        &self,
        headers: &[(&str, &str)],
        name: &str,
        arguments: &str,
    ) -> Result<serde_json::Value, String> {
        let mut env = self.plugin.env(&self.host, self.namespace.clone());
        let mut stream = Stream::new();
        let body = serde_json::json!({
            "jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": name, "arguments": serde_json::from_str::<serde_json::Value>(arguments).map_err(|e| e.to_string())?}
        })
        .to_string();
        if !matches!(
            stream.on_request_headers(&self.config, &mut env, self.head(headers), false),
            RequestHeadersAction::ReadBody { .. }
        ) {
            return Err("tools/call not read".into());
        }
        match stream.on_request_body(&self.config, &mut env, body.as_bytes()) {
            RequestBodyAction::Reply(reply) => {
                serde_json::from_slice(&reply.body).map_err(|e| e.to_string())
            }
            other => Err(format!("not answered by the filter: {other:?}")),
        }
    }
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
