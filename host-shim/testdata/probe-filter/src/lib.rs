//! The probe: what it does is chosen by words in its plugin configuration.
//!
//! - `panic-on-missing-header`: unwraps the `x-required` request header (panics without it),
//!   exactly the bug the SDK's convenience methods invite.
//! - `critical`: logs at critical on request headers, without trapping.
//! - `callout`: pauses request headers, calls cluster `backend`, answers the client itself
//!   with the callout's status and body (or 502 on failure).
//!   With `naive` it reads the callout's headers without checking they exist (a failed
//!   callout then panics, as it would in Envoy).
//! - `resume`: pauses request headers, calls `backend`, then adds `x-callout-status` and
//!   resumes the request.
//! - `upper`: buffers the response body to its end and upper-cases it; logs every callback's
//!   body size.
//! - `hold`: pauses request headers, logs every request body callback, continues at the end.
//! - `tick`: asks for a 1 s tick; counts ticks in `probe.ticks`.
//! - `queue`: registers queue `probe`; every request enqueues its path; `on_queue_ready`
//!   dequeues and counts in `probe.dequeued`.
//!
//! Environment (`vm_config.environment_variables`): `PROBE_HOOK=1` installs a panic hook that
//! logs at critical; `PROBE_INIT_HOSTCALL=1` defines a metric during `_initialize`, which
//! Envoy forbids.

use proxy_wasm::hostcalls;
use proxy_wasm::traits::{Context, HttpContext, RootContext};
use proxy_wasm::types::{Action, ContextType, LogLevel, MetricType};
use std::time::Duration;

proxy_wasm::main! {{
    if std::env::var("PROBE_HOOK").is_ok() {
        std::panic::set_hook(Box::new(|info| {
            let _ = hostcalls::log(LogLevel::Critical, &format!("probe panicked: {info}"));
        }));
    }
    if std::env::var("PROBE_INIT_HOSTCALL").is_ok() {
        let _ = hostcalls::define_metric(MetricType::Counter, "probe.init");
    }
    proxy_wasm::set_root_context(|_| Box::new(Root::default()));
}}

#[derive(Default)]
struct Root {
    config: String,
    ticks: u32,
    dequeued: u32,
    queue: Option<u32>,
}

impl Root {
    fn has(&self, word: &str) -> bool {
        self.config.split([',', ' ']).any(|w| w == word)
    }
}

impl Context for Root {}

impl RootContext for Root {
    fn on_configure(&mut self, _size: usize) -> bool {
        self.config = self
            .get_plugin_configuration()
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default();
        if self.config.contains("refuse") {
            let _ = hostcalls::log(LogLevel::Error, "probe: refusing this configuration");
            return false;
        }
        self.ticks = hostcalls::define_metric(MetricType::Counter, "probe.ticks").unwrap_or(0);
        self.dequeued =
            hostcalls::define_metric(MetricType::Counter, "probe.dequeued").unwrap_or(0);
        if self.has("tick") {
            self.set_tick_period(Duration::from_secs(1));
        }
        if self.has("queue") {
            self.queue = hostcalls::register_shared_queue("probe").ok();
        }
        true
    }

    fn on_tick(&mut self) {
        let _ = hostcalls::increment_metric(self.ticks, 1);
    }

    fn on_queue_ready(&mut self, queue_id: u32) {
        while let Ok(Some(_)) = hostcalls::dequeue_shared_queue(queue_id) {
            let _ = hostcalls::increment_metric(self.dequeued, 1);
        }
    }

    fn create_http_context(&self, _context_id: u32) -> Option<Box<dyn HttpContext>> {
        Some(Box::new(Http {
            config: self.config.clone(),
        }))
    }

    fn get_type(&self) -> Option<ContextType> {
        Some(ContextType::HttpContext)
    }
}

struct Http {
    config: String,
}

impl Http {
    fn has(&self, word: &str) -> bool {
        self.config.split([',', ' ']).any(|w| w == word)
    }

    fn call_backend(&self) -> Action {
        match self.dispatch_http_call(
            "backend",
            vec![
                (":method", "GET"),
                (":path", "/check"),
                (":authority", "backend"),
            ],
            None,
            vec![],
            Duration::from_secs(5),
        ) {
            Ok(_) => Action::Pause,
            Err(status) => {
                self.send_http_response(500, vec![], Some(format!("{status:?}").as_bytes()));
                Action::Pause
            }
        }
    }
}

impl Context for Http {
    fn on_http_call_response(
        &mut self,
        _token: u32,
        headers: usize,
        body: usize,
        _trailers: usize,
    ) {
        // A failed callout has no response at all: Envoy answers BadArgument for its headers,
        // and the SDK panics on that. Check the count first (unless told to be naive).
        let status = if headers == 0 && !self.has("naive") {
            None
        } else {
            self.get_http_call_response_header(":status")
        };
        if self.has("resume") {
            let value = status.unwrap_or_else(|| "failed".into());
            self.set_http_request_header("x-callout-status", Some(&value));
            self.resume_http_request();
            return;
        }
        match status {
            Some(status) => {
                let body = self
                    .get_http_call_response_body(0, body)
                    .unwrap_or_default();
                self.send_http_response(200, vec![("x-callout-status", &status)], Some(&body));
            }
            None => {
                let (code, message) = hostcalls::get_grpc_status().unwrap_or((0, None));
                let text = format!("callout failed: {code} {}", message.unwrap_or_default());
                self.send_http_response(502, vec![], Some(text.as_bytes()));
            }
        }
    }
}

impl HttpContext for Http {
    fn on_http_request_headers(&mut self, _num_headers: usize, _end_of_stream: bool) -> Action {
        if self.has("panic-on-missing-header") {
            let value = self.get_http_request_header("x-required").unwrap();
            self.set_http_request_header("x-seen", Some(&value));
        }
        if self.has("critical") {
            let _ = hostcalls::log(LogLevel::Critical, "probe: something is very wrong");
        }
        if self.has("queue") {
            if let Ok(Some(q)) = hostcalls::resolve_shared_queue("", "probe") {
                let path = self.get_http_request_header(":path").unwrap_or_default();
                let _ = hostcalls::enqueue_shared_queue(q, Some(path.as_bytes()));
            }
        }
        if self.has("callout") || self.has("resume") {
            return self.call_backend();
        }
        if self.has("hold") {
            return Action::Pause;
        }
        Action::Continue
    }

    fn on_http_request_body(&mut self, body_size: usize, end_of_stream: bool) -> Action {
        if self.has("hold") {
            let _ = hostcalls::log(
                LogLevel::Info,
                &format!("request body_size={body_size} end_of_stream={end_of_stream}"),
            );
            return if end_of_stream {
                Action::Continue
            } else {
                Action::Pause
            };
        }
        Action::Continue
    }

    fn on_http_response_headers(&mut self, _num_headers: usize, _end_of_stream: bool) -> Action {
        if self.has("upper") {
            self.set_http_response_header("content-length", None);
        }
        Action::Continue
    }

    fn on_http_response_body(&mut self, body_size: usize, end_of_stream: bool) -> Action {
        if !self.has("upper") {
            return Action::Continue;
        }
        let _ = hostcalls::log(
            LogLevel::Info,
            &format!("response body_size={body_size} end_of_stream={end_of_stream}"),
        );
        if !end_of_stream {
            return Action::Pause;
        }
        let body = self
            .get_http_response_body(0, body_size)
            .unwrap_or_default();
        self.set_http_response_body(0, body_size, &body.to_ascii_uppercase());
        Action::Continue
    }
}
