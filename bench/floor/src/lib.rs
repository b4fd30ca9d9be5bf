//! The proxy-wasm floor of `make bench`: the least a proxy-wasm filter can do to answer a
//! `tool_search` locally. Per request it reads `:path`, waits for the whole body, copies it out
//! of Envoy, looks it up and answers the bytes learned for it with `send_http_response`. Any
//! filter that answers from the request body pays at least this (the V8 calls, the body copy,
//! the local reply through the filter chain), so the gap between it and the real filter is
//! what the filter's own work costs.
//!
//! - `POST /floor/learn`, body `<request body> NUL <content-type> NUL <response body>`: remember
//!   that answer for that request body; 204.
//! - Any other request: the answer learned for its body (200, that `content-type`), or 404.
//!
//! The answers live in the VM, not in shared data: reading shared data would be work the real
//! filter's search does not do per request. So they are per VM: with several workers, each
//! would have to be taught. The bench runs Envoy with `--concurrency 1`: one worker VM sees
//! every request, the teaching ones included.

use proxy_wasm::hostcalls;
use proxy_wasm::traits::{Context, HttpContext, RootContext};
use proxy_wasm::types::{Action, BufferType, ContextType, MapType};
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

/// Request body → (response `content-type`, response body).
type Answers = Rc<RefCell<HashMap<Vec<u8>, (String, Vec<u8>)>>>;

const LEARN_PATH: &str = "/floor/learn";

proxy_wasm::main! {{
    proxy_wasm::set_root_context(|_| -> Box<dyn RootContext> {
        Box::new(Root { answers: Answers::default() })
    });
}}

struct Root {
    answers: Answers,
}

impl Context for Root {}

impl RootContext for Root {
    fn get_type(&self) -> Option<ContextType> {
        Some(ContextType::HttpContext)
    }

    fn create_http_context(&self, _context_id: u32) -> Option<Box<dyn HttpContext>> {
        Some(Box::new(Floor {
            answers: Rc::clone(&self.answers),
            learn: false,
        }))
    }
}

struct Floor {
    answers: Answers,
    learn: bool,
}

impl Context for Floor {}

impl HttpContext for Floor {
    fn on_http_request_headers(&mut self, _num_headers: usize, end_of_stream: bool) -> Action {
        self.learn = matches!(
            hostcalls::get_map_value(MapType::HttpRequestHeaders, ":path"),
            Ok(Some(path)) if path == LEARN_PATH
        );
        if end_of_stream {
            self.answer(&[]);
        }
        // Holding the headers (with `allow_on_headers_stop_iteration`) keeps the router from
        // opening an upstream request that the local reply would then have to reset.
        Action::Pause
    }

    fn on_http_request_body(&mut self, body_size: usize, end_of_stream: bool) -> Action {
        if !end_of_stream {
            // Envoy buffers the body until the last chunk: one copy out of Envoy, as the
            // real filter does for a search.
            return Action::Pause;
        }
        let body = match hostcalls::get_buffer(BufferType::HttpRequestBody, 0, body_size) {
            Ok(Some(body)) => body,
            _ => Vec::new(),
        };
        self.answer(&body);
        Action::Pause
    }
}

impl Floor {
    fn answer(&self, body: &[u8]) {
        // A reply that cannot be sent leaves nothing else to do: the client times out, and the
        // bench reports the failed request.
        let _ = if self.learn {
            self.store(body)
        } else {
            self.replay(body)
        };
    }

    fn store(&self, body: &[u8]) -> Result<(), proxy_wasm::types::Status> {
        let mut parts = body.splitn(3, |b| *b == 0);
        let (Some(request), Some(content_type), Some(response)) =
            (parts.next(), parts.next(), parts.next())
        else {
            return text(
                400,
                "expected <request body> NUL <content-type> NUL <response body>\n",
            );
        };
        let Ok(content_type) = std::str::from_utf8(content_type) else {
            return text(400, "the content-type is not UTF-8\n");
        };
        let Ok(mut answers) = self.answers.try_borrow_mut() else {
            return text(500, "the answers are in use\n");
        };
        answers.insert(
            request.to_vec(),
            (content_type.to_owned(), response.to_vec()),
        );
        hostcalls::send_http_response(204, Vec::new(), None)
    }

    fn replay(&self, body: &[u8]) -> Result<(), proxy_wasm::types::Status> {
        let Ok(answers) = self.answers.try_borrow() else {
            return text(500, "the answers are in use\n");
        };
        match answers.get(body) {
            Some((content_type, response)) => hostcalls::send_http_response(
                200,
                vec![("content-type", content_type.as_str())],
                Some(response),
            ),
            None => text(404, "no answer learned for this request body\n"),
        }
    }
}

fn text(status: u32, message: &str) -> Result<(), proxy_wasm::types::Status> {
    hostcalls::send_http_response(
        status,
        vec![("content-type", "text/plain")],
        Some(message.as_bytes()),
    )
}
