//! One VM's filter: its plugin, the streams' contexts it starts, its tick, the answers to the
//! calls it makes in the background, and the requests that wait on another worker's catalog
//! fetch (resumed from the tick: a VM has one timer, the root's).

use super::context::Context;
use super::host::{call_response, HttpHost};
use super::{Root, Waiter};
use crate::config::{Config, ConfigError};
use crate::plugin::{install_fetch_secret, Host, Level, Plugin};
use std::cell::RefCell;

/// A configuration the filter cannot start with.
#[derive(Debug)]
pub enum StartError {
    NotUtf8,
    Config(ConfigError),
}

impl std::fmt::Display for StartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StartError::NotUtf8 => write!(f, "plugin configuration is not UTF-8 text"),
            StartError::Config(e) => write!(f, "{e}"),
        }
    }
}

impl Root {
    pub fn new(plugin: Plugin) -> Self {
        Root {
            plugin,
            waiting: RefCell::new(Vec::new()),
        }
    }

    /// The filter of one VM from its plugin configuration (`on_configure`). Envoy starts every
    /// worker's VM at once, and each VM numbers its contexts from the same start: neither the
    /// clock nor the context id tells two workers' leases apart, so the VM is named at random.
    pub fn configure(
        configuration: &[u8],
        context_id: u32,
        host: &dyn Host,
    ) -> Result<Root, StartError> {
        let text = std::str::from_utf8(configuration).map_err(|_| StartError::NotUtf8)?;
        let config = Config::parse(text).map_err(StartError::Config)?;
        let mut random = [0u8; 8];
        let vm_id = match host.fill_random(&mut random) {
            Ok(()) => u64::from_le_bytes(random),
            Err(e) => {
                host.log(
                    Level::Warn,
                    &format!(
                        "no randomness to name this VM: workers may fetch a catalog twice: {e}"
                    ),
                );
                host.now_ms()
            }
        };
        let plugin = Plugin::new(config, format!("{vm_id:016x}-{context_id}"));
        if plugin.config.catalog.cluster.is_some() && plugin.config.catalog.loopback {
            let mut secret = [0u8; 16];
            // The loopback fetch's marker must be unguessable: without randomness there is no
            // marker, and fetches through the loopback cluster are answered by the filter.
            match host.fill_random(&mut secret) {
                Ok(()) => install_fetch_secret(host, secret),
                Err(e) => host.log(
                    Level::Error,
                    &format!("no randomness for the catalog fetch marker: {e}"),
                ),
            }
        }
        Ok(Root::new(plugin))
    }

    /// A stream starts on this VM: its context.
    pub fn context(&self, context_id: u32) -> Context {
        self.plugin.stream_started();
        Context::new(context_id)
    }

    /// The root's timer: background work, then the requests whose awaited fetch ended.
    pub fn on_tick<H: Host + HttpHost>(&self, host: &H) {
        self.plugin.on_tick(host);
        self.resume_waiting(host);
    }

    /// The answer to a call the root made (a background fetch or embedding).
    pub fn on_http_call_response<H: Host + HttpHost>(
        &self,
        host: &H,
        token: u32,
        num_headers: usize,
        body_size: usize,
    ) {
        let (status, headers, body) = call_response(host, num_headers, body_size);
        self.plugin
            .on_root_response(host, token, status.as_deref(), &headers, &body);
    }

    pub(super) fn wait(&self, waiter: Waiter) {
        if let Ok(mut waiting) = self.waiting.try_borrow_mut() {
            waiting.push(waiter);
        }
    }

    /// Whether a request waits on another worker's fetch.
    pub fn has_waiting(&self) -> bool {
        self.waiting.try_borrow().is_ok_and(|w| !w.is_empty())
    }

    /// Resumes the requests whose awaited fetch (another worker's) has ended.
    pub fn resume_waiting<H: Host + HttpHost>(&self, host: &H) {
        let Ok(waiting) = self
            .waiting
            .try_borrow_mut()
            .map(|mut w| std::mem::take(&mut *w))
        else {
            return;
        };
        let mut still = Vec::new();
        for waiter in waiting {
            let Some(state) = waiter.state.upgrade() else {
                continue;
            };
            let Ok(mut inner) = state.try_borrow_mut() else {
                still.push(waiter);
                continue;
            };
            if !self.plugin.fetch_settled(host, &waiter.namespace) {
                drop(inner);
                still.push(waiter);
                continue;
            }
            if host.set_effective_context(waiter.context_id).is_err() {
                continue;
            }
            inner.on_catalog_settled(self, host, &waiter.namespace);
            if let Some(namespace) = inner.take_waiting() {
                still.push(Waiter {
                    context_id: waiter.context_id,
                    namespace,
                    state: waiter.state,
                });
            }
        }
        if let Ok(mut waiting) = self.waiting.try_borrow_mut() {
            waiting.extend(still);
        }
    }
}
