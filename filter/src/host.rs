//! The core's two host traits through proxy-wasm hostcalls: `Host` (shared data, clock, log,
//! counters, outgoing calls, randomness) and `HttpHost` (the current stream's headers, bodies,
//! local reply, resume, properties).

use mcp_tool_search_core::{
    Body, Direction, Headers, Host, HttpCall, HttpHost, Level, SharedData, StoreError, HISTOGRAMS,
    STATS,
};
use proxy_wasm::hostcalls;
use proxy_wasm::types::{BufferType, LogLevel, MapType, MetricType, Status};
use std::cell::RefCell;
use std::time::{Duration, UNIX_EPOCH};

/// Envoy through proxy-wasm. Metrics are defined once per VM (Envoy shares a name's metric
/// across VMs); the ids are looked up by name.
pub(crate) struct ProxyHost {
    counters: Vec<(&'static str, u32)>,
    histograms: Vec<(&'static str, u32)>,
    /// Counters named at run time (a namespace's), defined on first use.
    named: RefCell<Vec<(String, u32)>>,
}

fn define(kind: MetricType, name: &str) -> Option<u32> {
    match hostcalls::define_metric(kind, &format!("mcp_tool_search.{name}")) {
        Ok(id) => Some(id),
        Err(status) => {
            log::warn!("could not define stat {name}: {status:?}");
            None
        }
    }
}

fn define_all(kind: MetricType, names: &[&'static str]) -> Vec<(&'static str, u32)> {
    names
        .iter()
        .filter_map(|&name| Some((name, define(kind, name)?)))
        .collect()
}

impl ProxyHost {
    pub(crate) fn new() -> Self {
        ProxyHost {
            counters: define_all(MetricType::Counter, STATS),
            histograms: define_all(MetricType::Histogram, HISTOGRAMS),
            named: RefCell::new(Vec::new()),
        }
    }
}

fn id_of(metrics: &[(&'static str, u32)], name: &str) -> Option<u32> {
    metrics.iter().find(|(n, _)| *n == name).map(|(_, id)| *id)
}

fn count(id: u32, by: u64) {
    let _ = hostcalls::increment_metric(id, i64::try_from(by).unwrap_or(i64::MAX));
}

fn map_type(map: Headers) -> MapType {
    match map {
        Headers::Request => MapType::HttpRequestHeaders,
        Headers::Response => MapType::HttpResponseHeaders,
        Headers::CallResponse => MapType::HttpCallResponseHeaders,
    }
}

fn buffer_type(body: Body) -> BufferType {
    match body {
        Body::Request => BufferType::HttpRequestBody,
        Body::Response => BufferType::HttpResponseBody,
        Body::CallResponse => BufferType::HttpCallResponseBody,
    }
}

fn reason(status: Status) -> String {
    format!("{status:?}")
}

impl SharedData for ProxyHost {
    fn get(&self, key: &str) -> Result<(Option<Vec<u8>>, Option<u32>), StoreError> {
        hostcalls::get_shared_data(key).map_err(|s| StoreError::Host(reason(s)))
    }

    fn set(&self, key: &str, value: &[u8], cas: Option<u32>) -> Result<(), StoreError> {
        match hostcalls::set_shared_data(key, Some(value), cas) {
            Ok(()) => Ok(()),
            Err(Status::CasMismatch) => Err(StoreError::CasMismatch),
            Err(s) => Err(StoreError::Host(reason(s))),
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
        if let Some(id) = id_of(&self.counters, stat) {
            count(id, by);
        }
    }

    fn increment_named(&self, stat: &str, by: u64) {
        let mut named = self.named.borrow_mut();
        let id = match named.iter().find(|(n, _)| n == stat) {
            Some((_, id)) => *id,
            None => {
                let Some(id) = define(MetricType::Counter, stat) else {
                    return;
                };
                named.push((stat.to_string(), id));
                id
            }
        };
        count(id, by);
    }

    fn record(&self, histogram: &'static str, value: u64) {
        if let Some(id) = id_of(&self.histograms, histogram) {
            let _ = hostcalls::record_metric(id, value);
        }
    }

    fn now_ns(&self) -> u64 {
        hostcalls::get_current_time()
            .ok()
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
            .unwrap_or(0)
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
        .map_err(reason)
    }

    fn random_u64(&self) -> u64 {
        let mut bytes = [0u8; 8];
        // WASI `random_get`; should the host refuse, the clock still spreads retries a little.
        if self.fill_random(&mut bytes).is_err() {
            return self.now_ms();
        }
        u64::from_le_bytes(bytes)
    }

    fn fill_random(&self, out: &mut [u8]) -> Result<(), String> {
        getrandom::fill(out).map_err(|e| e.to_string())
    }
}

impl HttpHost for ProxyHost {
    fn headers(&self, map: Headers) -> Result<Vec<(String, Vec<u8>)>, String> {
        hostcalls::get_map_bytes(map_type(map)).map_err(reason)
    }

    fn header(&self, map: Headers, name: &str) -> Option<Vec<u8>> {
        hostcalls::get_map_value_bytes(map_type(map), name)
            .ok()
            .flatten()
    }

    fn set_header(&self, map: Headers, name: &str, value: &str) -> Result<(), String> {
        hostcalls::set_map_value(map_type(map), name, Some(value)).map_err(reason)
    }

    fn remove_header(&self, map: Headers, name: &str) -> Result<(), String> {
        hostcalls::remove_map_value(map_type(map), name).map_err(reason)
    }

    fn body(&self, body: Body, size: usize) -> Result<Vec<u8>, String> {
        hostcalls::get_buffer(buffer_type(body), 0, size)
            .map(Option::unwrap_or_default)
            .map_err(reason)
    }

    fn set_body(&self, body: Body, size: usize, new: &[u8]) -> Result<(), String> {
        hostcalls::set_buffer(buffer_type(body), 0, size, new).map_err(reason)
    }

    fn send_reply(
        &self,
        status: u32,
        headers: &[(String, String)],
        body: &[u8],
    ) -> Result<(), String> {
        let headers: Vec<(&str, &str)> = headers
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        hostcalls::send_http_response(status, headers, Some(body)).map_err(reason)
    }

    fn resume(&self, direction: Direction) -> Result<(), String> {
        match direction {
            Direction::Request => hostcalls::resume_http_request(),
            Direction::Response => hostcalls::resume_http_response(),
        }
        .map_err(reason)
    }

    fn property(&self, path: &[&str]) -> Option<Vec<u8>> {
        hostcalls::get_property(path.to_vec()).ok().flatten()
    }

    fn set_effective_context(&self, context_id: u32) -> Result<(), String> {
        hostcalls::set_effective_context(context_id).map_err(reason)
    }

    fn set_property(&self, path: &[&str], value: &[u8]) -> Result<(), String> {
        hostcalls::set_property(path.to_vec(), Some(value)).map_err(reason)
    }
}

/// Follows Envoy's log level: formatting a message Envoy would drop is wasted work.
pub(crate) fn follow_host_log_level() {
    let max = match hostcalls::get_log_level() {
        Ok(LogLevel::Trace) => log::LevelFilter::Trace,
        Ok(LogLevel::Debug) => log::LevelFilter::Debug,
        Ok(LogLevel::Info) => log::LevelFilter::Info,
        Ok(LogLevel::Warn) | Err(_) => log::LevelFilter::Warn,
        Ok(LogLevel::Error) => log::LevelFilter::Error,
        Ok(LogLevel::Critical) => log::LevelFilter::Off,
    };
    log::set_max_level(max);
}
