//! Code mode's sandbox alone in a proxy-wasm module, for the Envoy e2e of its limits.
//!
//! Every request's body is a script, run with the default [`Limits`] against a catalog that
//! holds nothing and a host that sends no tool call. The answer (200, JSON) is its outcome:
//! `{"result": <the return value>}` or `{"error": <message>, "limit": <limit name or null>}`,
//! with `"ms"`, the time from start to outcome. A script that waits for a tool call is answered
//! with an error at once: this module serves none.
//!
//! The request is held from its headers on (`Action::Pause`), so the router never sees it and
//! the route needs no upstream that answers.

use mcp_tool_search_script::{Host, Limits, Run, ScriptError, Step};
use proxy_wasm::hostcalls;
use proxy_wasm::traits::{Context, HttpContext, RootContext};
use proxy_wasm::types::{Action, BufferType, ContextType};
use serde_json::{json, Value};
use std::time::UNIX_EPOCH;

proxy_wasm::main! {{
    proxy_wasm::set_root_context(|_| -> Box<dyn RootContext> { Box::new(Root) });
}}

struct Root;

impl Context for Root {}

impl RootContext for Root {
    fn get_type(&self) -> Option<ContextType> {
        Some(ContextType::HttpContext)
    }

    fn create_http_context(&self, _context_id: u32) -> Option<Box<dyn HttpContext>> {
        Some(Box::new(Request))
    }
}

struct Request;

impl Context for Request {}

impl HttpContext for Request {
    fn on_http_request_headers(&mut self, _headers: usize, end_of_stream: bool) -> Action {
        if end_of_stream {
            answer(&run(""));
        }
        Action::Pause
    }

    fn on_http_request_body(&mut self, size: usize, end_of_stream: bool) -> Action {
        if !end_of_stream {
            return Action::Pause;
        }
        let body = hostcalls::get_buffer(BufferType::HttpRequestBody, 0, size)
            .ok()
            .flatten()
            .unwrap_or_default();
        answer(&run(&String::from_utf8_lossy(&body)));
        Action::Pause
    }
}

fn answer(outcome: &Value) {
    let body = outcome.to_string();
    let headers = [("content-type", "application/json")];
    if let Err(e) = hostcalls::send_http_response(200, headers.to_vec(), Some(body.as_bytes())) {
        log::warn!("sandbox module: cannot answer: {e:?}");
    }
}

fn run(script: &str) -> Value {
    let started = now_ns();
    let (_run, step) = Run::start(script, Box::new(Empty), Limits::default());
    let ms = now_ns().saturating_sub(started) as f64 / 1e6;
    let outcome = match step {
        Step::Waiting { .. } => {
            return json!({"error": "this module sends no tool call", "limit": null, "ms": ms})
        }
        Step::Done(outcome) => outcome,
    };
    match outcome.result {
        Ok(result) => {
            let result: Value = serde_json::from_str(&result).unwrap_or(Value::String(result));
            json!({"result": result, "log": outcome.log, "ms": ms})
        }
        Err(error) => {
            let limit = match &error {
                ScriptError::Limit { limit, .. } => Some(limit.name()),
                _ => None,
            };
            json!({"error": error.to_string(), "limit": limit, "log": outcome.log, "ms": ms})
        }
    }
}

fn now_ns() -> u64 {
    hostcalls::get_current_time()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// A catalog that holds nothing, on the proxy's clock.
struct Empty;

impl Host for Empty {
    fn search(&mut self, _: &str, _: Option<&str>, _: Option<u32>) -> Result<String, String> {
        Ok("[]".to_owned())
    }

    fn describe(&mut self, _: &[String]) -> Result<String, String> {
        Ok("[]".to_owned())
    }

    fn authorize(&mut self, _: &str, _: &str) -> Result<(), String> {
        Ok(())
    }

    fn now_ns(&self) -> u64 {
        now_ns()
    }
}
