//! The core's host primitives (`Host`) through proxy-wasm hostcalls.

use mcp_tool_search_core::call::CallResponse;
use mcp_tool_search_core::plugin::{Host, HttpCall, Level, Plugin};
use mcp_tool_search_core::store::{SharedData, StoreError};
use mcp_tool_search_core::stream::STATS;
use proxy_wasm::hostcalls;
use proxy_wasm::types::{BufferType, MapType, MetricType, Status};
use std::time::{Duration, UNIX_EPOCH};

/// What a VM's contexts share: the core's plugin and the host it runs on.
pub(super) struct Shared {
    pub(super) plugin: Plugin,
    pub(super) host: ProxyHost,
}

/// Envoy through proxy-wasm. Counters are defined once per VM (Envoy shares a name's counter
/// across VMs); the ids are looked up by name.
pub(super) struct ProxyHost {
    counters: Vec<(&'static str, u32)>,
}

impl ProxyHost {
    pub(super) fn new() -> Self {
        let counters = STATS
            .iter()
            .filter_map(|&name| {
                let full = format!("mcp_tool_search.{name}");
                match hostcalls::define_metric(MetricType::Counter, &full) {
                    Ok(id) => Some((name, id)),
                    Err(status) => {
                        log::warn!("could not define stat {name}: {status:?}");
                        None
                    }
                }
            })
            .collect();
        ProxyHost { counters }
    }
}

impl SharedData for ProxyHost {
    fn get(&self, key: &str) -> Result<(Option<Vec<u8>>, Option<u32>), StoreError> {
        hostcalls::get_shared_data(key).map_err(|s| StoreError::Host(format!("{s:?}")))
    }

    fn set(&self, key: &str, value: &[u8], cas: Option<u32>) -> Result<(), StoreError> {
        match hostcalls::set_shared_data(key, Some(value), cas) {
            Ok(()) => Ok(()),
            Err(Status::CasMismatch) => Err(StoreError::CasMismatch),
            Err(s) => Err(StoreError::Host(format!("{s:?}"))),
        }
    }
}

impl Host for ProxyHost {
    fn now_ms(&self) -> u64 {
        hostcalls::get_current_time()
            .ok()
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
            .unwrap_or(0)
    }

    fn log(&self, level: Level, message: &str) {
        match level {
            Level::Error => log::error!("{message}"),
            Level::Warn => log::warn!("{message}"),
            Level::Info => log::info!("{message}"),
            Level::Debug => log::debug!("{message}"),
        }
    }

    fn increment(&self, stat: &'static str, by: u64) {
        if let Some((_, id)) = self.counters.iter().find(|(name, _)| *name == stat) {
            let _ = hostcalls::increment_metric(*id, i64::try_from(by).unwrap_or(i64::MAX));
        }
    }

    fn http_call(&self, call: HttpCall) -> Result<u32, String> {
        let headers: Vec<(&str, &str)> = call
            .headers
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        hostcalls::dispatch_http_call(
            &call.cluster,
            headers,
            Some(&call.body),
            Vec::new(),
            Duration::from_millis(call.timeout_ms),
        )
        .map_err(|status| format!("{status:?}"))
    }

    fn random_u64(&self) -> u64 {
        let mut bytes = [0u8; 8];
        // WASI `random_get`; should the host refuse, the clock still spreads retries a little.
        if getrandom::fill(&mut bytes).is_err() {
            return self.now_ms();
        }
        u64::from_le_bytes(bytes)
    }
}

/// A header's value, read as bytes (the SDK's string accessor panics on a value that is not
/// UTF-8, which Envoy passes on) and decoded lossily.
pub(super) fn header(map: MapType, name: &str) -> Option<String> {
    let bytes = hostcalls::get_map_value_bytes(map, name).ok().flatten()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// The answer to a dispatched call: its `:status` (if any), headers and body. A failed call
/// (reset, no healthy host) arrives with no headers at all, and then the host has no response
/// map: asking it for a header answers BadArgument, on which the SDK panics, so it is not asked.
pub(super) fn call_response(num_headers: usize, body_size: usize) -> CallResponse {
    if num_headers == 0 {
        return (None, Vec::new(), Vec::new());
    }
    let headers: Vec<(String, String)> = hostcalls::get_map_bytes(MapType::HttpCallResponseHeaders)
        .unwrap_or_default()
        .into_iter()
        .map(|(k, v)| (k, String::from_utf8_lossy(&v).into_owned()))
        .collect();
    let status = headers
        .iter()
        .find(|(k, _)| k == ":status")
        .map(|(_, v)| v.clone());
    let body = hostcalls::get_buffer(BufferType::HttpCallResponseBody, 0, body_size)
        .ok()
        .flatten()
        .unwrap_or_default();
    (status, headers, body)
}
