//! The root context: the plugin configuration, the embedding timer, and the answers to the
//! background calls it makes.

use super::host::{call_response, ProxyHost, Shared};
use super::http::Http;
use mcp_tool_search_core::config::Config;
use mcp_tool_search_core::plugin::Plugin;
use proxy_wasm::hostcalls;
use proxy_wasm::traits::{Context, HttpContext, RootContext};
use proxy_wasm::types::{BufferType, ContextType};
use std::rc::Rc;
use std::time::Duration;

pub(super) struct Root {
    context_id: u32,
    shared: Option<Rc<Shared>>,
}

impl Root {
    pub(super) fn new(context_id: u32) -> Self {
        Root {
            context_id,
            shared: None,
        }
    }
}

impl Context for Root {
    fn on_http_call_response(
        &mut self,
        token: u32,
        headers: usize,
        body_size: usize,
        _trailers: usize,
    ) {
        if let Some(shared) = &self.shared {
            let (status, response_headers, body) = call_response(headers, body_size);
            shared.plugin.on_root_response(
                &shared.host,
                token,
                status.as_deref(),
                &response_headers,
                &body,
            );
        }
    }
}

impl RootContext for Root {
    fn on_configure(&mut self, size: usize) -> bool {
        super::follow_host_log_level();
        let bytes = match hostcalls::get_buffer(BufferType::PluginConfiguration, 0, size) {
            Ok(bytes) => bytes.unwrap_or_default(),
            Err(status) => {
                log::error!("could not read the plugin configuration: {status:?}");
                return false;
            }
        };
        let Ok(text) = String::from_utf8(bytes) else {
            log::error!("plugin configuration is not UTF-8 text");
            return false;
        };
        let config = match Config::parse(&text) {
            Ok(config) => config,
            Err(e) => {
                // Envoy refuses the plugin when this returns false; the operator sees why here.
                log::error!("{e}");
                return false;
            }
        };
        let host = ProxyHost::new();
        // Envoy starts every worker's VM at once, and each VM numbers its contexts from the
        // same start: neither the clock nor the context id tells two workers' leases apart.
        let mut random = [0u8; 8];
        let vm_id = match getrandom::fill(&mut random) {
            Ok(()) => u64::from_le_bytes(random),
            Err(e) => {
                log::warn!("no randomness to name this VM: workers may fetch a catalog twice: {e}");
                mcp_tool_search_core::plugin::Host::now_ms(&host)
            }
        };
        let plugin = Plugin::new(config, format!("{vm_id:016x}-{}", self.context_id));
        if let Some(period) = plugin.tick_period_ms() {
            if let Err(status) = hostcalls::set_tick_period(Duration::from_millis(period)) {
                log::error!("could not start the background timer: {status:?}");
                return false;
            }
        }
        if plugin.config.catalog.cluster.is_some() && plugin.config.catalog.loopback {
            let mut secret = [0u8; 16];
            // The loopback fetch's marker must be unguessable: without randomness there is
            // no marker, and fetches through the loopback cluster are answered by the filter.
            match getrandom::fill(&mut secret) {
                Ok(()) => mcp_tool_search_core::plugin::install_fetch_secret(&host, secret),
                Err(e) => log::error!("no randomness for the catalog fetch marker: {e}"),
            }
        }
        self.shared = Some(Rc::new(Shared { plugin, host }));
        true
    }

    fn on_tick(&mut self) {
        if let Some(shared) = &self.shared {
            shared.plugin.on_tick(&shared.host);
            super::http::resume_waiters();
        }
    }

    fn create_http_context(&self, context_id: u32) -> Option<Box<dyn HttpContext>> {
        let shared = Rc::clone(self.shared.as_ref()?);
        shared.plugin.stream_started();
        Some(Box::new(Http::new(shared, context_id)))
    }

    fn get_type(&self) -> Option<ContextType> {
        Some(ContextType::HttpContext)
    }
}
