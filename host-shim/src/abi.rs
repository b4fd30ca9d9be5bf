//! The numbers of proxy-wasm ABI 0.2.1 as Envoy's host (proxy-wasm-cpp-host) uses them.

/// `WasmResult` of proxy-wasm-cpp-host (`include/proxy-wasm/word.h`... `context_interface.h`).
/// Only the results the shim returns: SerializationFailure (3), ParseFailure (4),
/// BadExpression (5), ResultMismatch (9) and InternalFailure (10) would be dead code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum Status {
    Ok = 0,
    NotFound = 1,
    BadArgument = 2,
    InvalidMemoryAccess = 6,
    Empty = 7,
    CasMismatch = 8,
    BrokenConnection = 11,
    Unimplemented = 12,
}

impl Status {
    pub fn code(self) -> i32 {
        self as i32
    }
}

/// Proxy-wasm log levels (`proxy_log`, `proxy_get_log_level`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum LogLevel {
    Trace = 0,
    Debug = 1,
    #[default]
    Info = 2,
    Warn = 3,
    Error = 4,
    Critical = 5,
}

impl LogLevel {
    pub fn from_code(code: i32) -> Option<LogLevel> {
        Some(match code {
            0 => LogLevel::Trace,
            1 => LogLevel::Debug,
            2 => LogLevel::Info,
            3 => LogLevel::Warn,
            4 => LogLevel::Error,
            5 => LogLevel::Critical,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            LogLevel::Trace => "trace",
            LogLevel::Debug => "debug",
            LogLevel::Info => "info",
            LogLevel::Warn => "warning",
            LogLevel::Error => "error",
            LogLevel::Critical => "critical",
        }
    }
}

/// `WasmHeaderMapType`.
pub mod map {
    pub const REQUEST_HEADERS: i32 = 0;
    pub const REQUEST_TRAILERS: i32 = 1;
    pub const RESPONSE_HEADERS: i32 = 2;
    pub const RESPONSE_TRAILERS: i32 = 3;
    pub const GRPC_RECEIVE_INITIAL_METADATA: i32 = 4;
    pub const GRPC_RECEIVE_TRAILING_METADATA: i32 = 5;
    pub const HTTP_CALL_RESPONSE_HEADERS: i32 = 6;
    pub const HTTP_CALL_RESPONSE_TRAILERS: i32 = 7;
    pub const MAX: i32 = 7;
}

/// `WasmBufferType`.
pub mod buffer {
    pub const HTTP_REQUEST_BODY: i32 = 0;
    pub const HTTP_RESPONSE_BODY: i32 = 1;
    pub const NETWORK_DOWNSTREAM_DATA: i32 = 2;
    pub const NETWORK_UPSTREAM_DATA: i32 = 3;
    pub const HTTP_CALL_RESPONSE_BODY: i32 = 4;
    pub const GRPC_RECEIVE_BUFFER: i32 = 5;
    pub const VM_CONFIGURATION: i32 = 6;
    pub const PLUGIN_CONFIGURATION: i32 = 7;
    pub const CALL_DATA: i32 = 8;
    pub const MAX: i32 = 8;
}

/// `WasmStreamType` (`proxy_continue_stream`, `proxy_close_stream`).
pub mod stream_type {
    pub const REQUEST: i32 = 0;
    pub const RESPONSE: i32 = 1;
    pub const DOWNSTREAM: i32 = 2;
    pub const UPSTREAM: i32 = 3;
    pub const MAX: i32 = 3;
}

/// Metric types (`proxy_define_metric`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricType {
    Counter,
    Gauge,
    Histogram,
}

impl MetricType {
    pub fn from_code(code: i32) -> Option<MetricType> {
        Some(match code {
            0 => MetricType::Counter,
            1 => MetricType::Gauge,
            2 => MetricType::Histogram,
            _ => return None,
        })
    }
}

/// Envoy's `FilterHeadersStatus`, what a header callback's return value becomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeadersStatus {
    Continue,
    StopIteration,
    ContinueAndDontEndStream,
    StopAllIterationAndBuffer,
    StopAllIterationAndWatermark,
}

impl HeadersStatus {
    /// proxy-wasm-cpp-host `convertVmCallResultToFilterHeadersStatus`: a local reply or an
    /// unknown value stops everything; `StopIteration` (1) becomes StopAllIteration unless the
    /// plugin sets `allow_on_headers_stop_iteration` (Envoy 1.35+).
    pub fn from_vm(result: i32, local_reply_sent: bool, allow_stop_iteration: bool) -> Self {
        if local_reply_sent {
            return HeadersStatus::StopAllIterationAndWatermark;
        }
        match result {
            0 => HeadersStatus::Continue,
            1 if allow_stop_iteration => HeadersStatus::StopIteration,
            2 => HeadersStatus::ContinueAndDontEndStream,
            3 => HeadersStatus::StopAllIterationAndBuffer,
            _ => HeadersStatus::StopAllIterationAndWatermark,
        }
    }
}

/// Envoy's `FilterDataStatus`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DataStatus {
    Continue,
    StopIterationAndBuffer,
    StopIterationAndWatermark,
    StopIterationNoBuffer,
}

impl DataStatus {
    /// proxy-wasm-cpp-host `convertVmCallResultToFilterDataStatus`.
    pub fn from_vm(result: i32, local_reply_sent: bool) -> Self {
        if local_reply_sent {
            return DataStatus::StopIterationNoBuffer;
        }
        match result {
            0 => DataStatus::Continue,
            1 => DataStatus::StopIterationAndBuffer,
            2 => DataStatus::StopIterationAndWatermark,
            _ => DataStatus::StopIterationNoBuffer,
        }
    }
}

/// Envoy's `FilterTrailersStatus`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrailersStatus {
    Continue,
    StopIteration,
}

impl TrailersStatus {
    pub fn from_vm(result: i32, local_reply_sent: bool) -> Self {
        if local_reply_sent || result != 0 {
            TrailersStatus::StopIteration
        } else {
            TrailersStatus::Continue
        }
    }
}

/// WASI errno values used by the WASI functions (as proxy-wasm-cpp-host returns them).
pub mod errno {
    pub const SUCCESS: i32 = 0;
    pub const BADF: i32 = 8;
    pub const FAULT: i32 = 21;
    pub const INVAL: i32 = 28;
    pub const NOENT: i32 = 44;
    pub const NOSYS: i32 = 52;
    pub const NOTSUP: i32 = 58;
    pub const NOTDIR: i32 = 20;
}

/// Ids and tokens cross the ABI as i32 words holding the u32's bits.
pub(crate) fn to_i32(v: u32) -> i32 {
    i32::from_ne_bytes(v.to_ne_bytes())
}

/// Sizes cross the ABI as u32 words; a larger size cannot be expressed and saturates.
pub(crate) fn len_i32(n: usize) -> i32 {
    to_i32(u32::try_from(n).unwrap_or(u32::MAX))
}
