//! Envoy's callbacks, one line each, handed to the core's `Root` (the VM) and
//! `Context` (one stream).

use crate::host::ProxyHost;
use mcp_tool_search_core as core;
use proxy_wasm::hostcalls;
use proxy_wasm::traits::{Context, HttpContext, RootContext};
use proxy_wasm::types::{Action, BufferType, ContextType};
use std::rc::Rc;
use std::time::Duration;

/// What a VM's contexts share: the core's root and the host it runs on.
struct Vm {
    root: core::Root,
    host: ProxyHost,
}

pub(crate) struct Root {
    context_id: u32,
    vm: Option<Rc<Vm>>,
}

impl Root {
    pub(crate) fn new(context_id: u32) -> Self {
        Root {
            context_id,
            vm: None,
        }
    }
}

impl Context for Root {
    fn on_http_call_response(&mut self, token: u32, headers: usize, body_size: usize, _: usize) {
        if let Some(vm) = &self.vm {
            vm.root
                .on_http_call_response(&vm.host, token, headers, body_size);
        }
    }
}

impl RootContext for Root {
    fn on_configure(&mut self, size: usize) -> bool {
        crate::host::follow_host_log_level();
        let bytes = match hostcalls::get_buffer(BufferType::PluginConfiguration, 0, size) {
            Ok(bytes) => bytes.unwrap_or_default(),
            Err(status) => {
                log::error!("could not read the plugin configuration: {status:?}");
                return false;
            }
        };
        let host = ProxyHost::new();
        // Envoy refuses the plugin when this returns false; the operator sees why in the log.
        let root = match core::Root::configure(&bytes, self.context_id, &host) {
            Ok(root) => root,
            Err(e) => {
                log::error!("{e}");
                return false;
            }
        };
        if let Some(period) = root.plugin.tick_period_ms() {
            if let Err(status) = hostcalls::set_tick_period(Duration::from_millis(period)) {
                log::error!("could not start the background timer: {status:?}");
                return false;
            }
        }
        self.vm = Some(Rc::new(Vm { root, host }));
        true
    }

    fn on_tick(&mut self) {
        if let Some(vm) = &self.vm {
            vm.root.on_tick(&vm.host);
        }
    }

    fn create_http_context(&self, context_id: u32) -> Option<Box<dyn HttpContext>> {
        let vm = Rc::clone(self.vm.as_ref()?);
        let stream = vm.root.context(context_id);
        Some(Box::new(Stream { vm, stream }))
    }

    fn get_type(&self) -> Option<ContextType> {
        Some(ContextType::HttpContext)
    }
}

struct Stream {
    vm: Rc<Vm>,
    stream: core::Context,
}

fn action(action: core::Action) -> Action {
    match action {
        core::Action::Continue => Action::Continue,
        core::Action::Pause => Action::Pause,
    }
}

impl Context for Stream {
    fn on_http_call_response(&mut self, token: u32, headers: usize, body_size: usize, _: usize) {
        let Stream { vm, stream } = self;
        stream.on_http_call_response(&vm.root, &vm.host, token, headers, body_size);
    }
}

impl HttpContext for Stream {
    fn on_http_request_headers(&mut self, _: usize, end_of_stream: bool) -> Action {
        let Stream { vm, stream } = self;
        action(stream.on_request_headers(&vm.root, &vm.host, end_of_stream))
    }

    fn on_http_request_body(&mut self, body_size: usize, end_of_stream: bool) -> Action {
        let Stream { vm, stream } = self;
        action(stream.on_request_body(&vm.root, &vm.host, body_size, end_of_stream))
    }

    fn on_http_request_trailers(&mut self, _: usize) -> Action {
        let Stream { vm, stream } = self;
        action(stream.on_request_trailers(&vm.root, &vm.host))
    }

    fn on_http_response_headers(&mut self, _: usize, end_of_stream: bool) -> Action {
        let Stream { vm, stream } = self;
        action(stream.on_response_headers(&vm.root, &vm.host, end_of_stream))
    }

    fn on_http_response_body(&mut self, body_size: usize, end_of_stream: bool) -> Action {
        let Stream { vm, stream } = self;
        action(stream.on_response_body(&vm.root, &vm.host, body_size, end_of_stream))
    }

    fn on_http_response_trailers(&mut self, _: usize) -> Action {
        let Stream { vm, stream } = self;
        action(stream.on_response_trailers(&vm.root, &vm.host))
    }
}
