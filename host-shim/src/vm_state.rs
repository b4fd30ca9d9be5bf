//! The store data of a VM: everything hostcalls read and change. It sits below both the host
//! functions (`imports`) and the VM (`vm`) so that the host functions never depend on the code
//! that instantiates and drives them.

use crate::abi::LogLevel;
use crate::error::{LogLine, LogSource};
use crate::host::Host;
use crate::options::VmOptions;
use crate::pairs::Headers;
use crate::stream_state::{Dir, StreamState};
use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use wasmtime::{Func, Memory};

/// Which hostcalls Envoy allows while it runs module code outside any context.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Restriction {
    /// `_initialize` (proxy-wasm-cpp-host `WasmBase::startVm`).
    Initialize,
    /// The module's allocator, called by the host to return data (`WasmBase::allocMemory`).
    Allocate,
}

/// proxy-wasm-cpp-host `src/wasm.cc` `startVm`: what `_initialize` may call (both WASI module
/// names are allowed for each WASI function; the `env.` ones are listed with their prefix).
const INITIALIZE_ALLOWED: &[&str] = &[
    "emscripten_notify_memory_growth",
    "proxy_log",
    "fd_write",
    "args_sizes_get",
    "args_get",
    "environ_sizes_get",
    "environ_get",
    "clock_time_get",
    "clock_res_get",
    "random_get",
    "poll_oneoff",
    "fd_fdstat_get",
    "fd_fdstat_set_flags",
    "fd_advise",
    "fd_allocate",
    "fd_datasync",
    "fd_fdstat_set_rights",
    "fd_filestat_get",
    "fd_filestat_set_size",
    "fd_filestat_set_times",
    "fd_pread",
    "fd_prestat_dir_name",
    "fd_prestat_get",
    "fd_pwrite",
    "fd_readdir",
    "fd_renumber",
    "fd_sync",
    "fd_tell",
    "path_create_directory",
    "path_filestat_get",
    "path_filestat_set_times",
    "path_link",
    "path_readlink",
    "path_remove_directory",
    "path_rename",
    "path_symlink",
    "path_unlink_file",
    "sock_accept",
    "sock_recv",
    "sock_send",
    "sock_shutdown",
];

/// proxy-wasm-cpp-host `include/proxy-wasm/wasm.h` `allocMemory`.
const ALLOCATE_ALLOWED: &[&str] = &["proxy_log", "fd_write", "clock_time_get", "poll_oneoff"];

impl Restriction {
    pub(crate) fn allows(self, name: &str) -> bool {
        match self {
            Restriction::Initialize => INITIALIZE_ALLOWED.contains(&name),
            Restriction::Allocate => ALLOCATE_ALLOWED.contains(&name),
        }
    }
}

/// An HTTP callout the module dispatched (`proxy_http_call`) that no test has answered yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpCall {
    pub token: u32,
    /// The cluster (`upstream` argument).
    pub cluster: String,
    pub headers: Headers,
    pub body: Vec<u8>,
    pub trailers: Headers,
    pub timeout_ms: u32,
    /// The context that dispatched it (Envoy issues it on the root context and calls
    /// `proxy_on_http_call_response` with the root context's id; the SDK routes it back).
    pub context: u32,
}

/// A callout's response while `proxy_on_http_call_response` runs.
#[derive(Debug, Clone, Default)]
pub(crate) struct CallResponse {
    pub headers: Headers,
    pub body: Vec<u8>,
    pub trailers: Headers,
}

/// What Envoy does once the module returns from a callback (`addAfterVmCallAction`).
#[derive(Debug, Clone)]
pub(crate) enum After {
    LocalReply {
        context: u32,
        status: u32,
        headers: Headers,
        body: Vec<u8>,
        details: String,
    },
    Continue {
        context: u32,
        dir: Dir,
    },
    Close {
        context: u32,
    },
}

/// The store data of a VM: everything hostcalls read and change.
pub(crate) struct VmState {
    pub host: Host,
    pub index: usize,
    pub opts: VmOptions,
    pub memory: Option<Memory>,
    pub alloc: Option<Func>,
    pub restriction: Option<Restriction>,
    pub current: u32,
    pub effective: u32,
    pub root_context: u32,
    /// The plugin configuration is readable (Envoy's `temp_plugin_`).
    pub configuring: bool,
    pub logs: Vec<LogLine>,
    /// A metric id → its slot in the host's store.
    pub metric_ids: HashMap<u32, usize>,
    pub next_metric_id: u32,
    pub tick_period_ms: u32,
    pub streams: BTreeMap<u32, StreamState>,
    pub next_context_id: u32,
    pub http_calls: BTreeMap<u32, HttpCall>,
    pub next_http_call: u32,
    pub call_response: Option<CallResponse>,
    pub stop_iteration: bool,
    pub after: Vec<After>,
    pub status: (u32, String),
    pub root_properties: HashMap<Vec<u8>, Vec<u8>>,
    pub random_state: u64,
    /// Every host function the module called, with the bytes it passed and received: what a
    /// request costs in crossings of the ABI, the same in any host (`Vm::hostcalls`). Interior
    /// mutability because the restriction check, which counts, sees the state read-only.
    pub census: RefCell<Census>,
}

/// The calls of one host function since the census was last taken.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Hostcalls {
    pub calls: u64,
    /// Bytes the host read from the module's memory (paths, keys, values, bodies it was given).
    pub bytes_in: u64,
    /// Bytes the host copied into memory the module allocated (properties, headers, buffers,
    /// shared data it returned).
    pub bytes_out: u64,
}

/// What `Vm::hostcalls` reports: the calls of each function, and how often each key was read
/// by the functions that read one by key (shared data, properties, single headers).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostcallCensus {
    pub functions: BTreeMap<&'static str, Hostcalls>,
    /// `"<function> <key>"` (a property path's segments joined by `.`) → reads.
    pub keys: BTreeMap<String, u64>,
}

/// The census being taken. Every host function call passes through it, so it keeps its counts
/// in a short list searched by the name's address (a `&'static str` per function), not in a
/// map of string keys: counting must not add to what a hostcall costs in the figures it serves.
#[derive(Debug, Default)]
pub(crate) struct Census {
    functions: Vec<(&'static str, Hostcalls)>,
    /// `functions[i].0`, the function being called: the one memory reads and copies are counted
    /// against.
    current: Option<usize>,
    /// (function, key as the module passed it) → reads.
    keys: Vec<(usize, Vec<u8>, u64)>,
}

impl Census {
    pub fn call(&mut self, name: &'static str) {
        let same = |f: &(&'static str, Hostcalls)| std::ptr::eq(f.0, name) || f.0 == name;
        let i = match self.functions.iter().position(same) {
            Some(i) => i,
            None => {
                self.functions.push((name, Hostcalls::default()));
                self.functions.len() - 1
            }
        };
        if let Some((_, h)) = self.functions.get_mut(i) {
            h.calls += 1;
        }
        self.current = Some(i);
    }

    pub fn key(&mut self, key: &[u8]) {
        let Some(f) = self.current else {
            return;
        };
        match self.keys.iter_mut().find(|(g, k, _)| *g == f && k == key) {
            Some((_, _, n)) => *n += 1,
            None => self.keys.push((f, key.to_vec(), 1)),
        }
    }

    pub fn bytes(&mut self, into_module: bool, n: usize) {
        if let Some((_, h)) = self.current.and_then(|i| self.functions.get_mut(i)) {
            let n = n as u64;
            if into_module {
                h.bytes_out += n;
            } else {
                h.bytes_in += n;
            }
        }
    }

    /// What was counted, and a census started again empty.
    pub fn take(&mut self) -> HostcallCensus {
        let functions = std::mem::take(&mut self.functions);
        let keys = std::mem::take(&mut self.keys)
            .into_iter()
            .map(|(f, key, n)| {
                let name = functions.get(f).map_or("?", |(name, _)| name);
                let key = String::from_utf8_lossy(&key).replace('\0', ".");
                (format!("{name} {key}"), n)
            })
            .fold(BTreeMap::new(), |mut all, (k, n)| {
                *all.entry(k).or_insert(0) += n;
                all
            });
        self.current = None;
        HostcallCensus {
            functions: functions.into_iter().collect(),
            keys,
        }
    }
}

pub(crate) fn property_key(path: &[String]) -> Vec<u8> {
    path.join("\0").into_bytes()
}

impl VmState {
    /// proxy-wasm-cpp-host `contextOrEffectiveContext`.
    pub fn context(&self) -> u32 {
        if self.effective != 0 && self.context_exists(self.effective) {
            self.effective
        } else {
            self.current
        }
    }

    pub fn context_exists(&self, id: u32) -> bool {
        id == self.root_context && id != 0 || self.streams.contains_key(&id)
    }

    /// Whether `id` was a stream that has been finished and deleted.
    pub fn ended_stream(&self, id: u32) -> bool {
        id != 0
            && id != self.root_context
            && id < self.next_context_id
            && !self.streams.contains_key(&id)
    }

    pub fn stream(&self) -> Option<&StreamState> {
        self.streams.get(&self.context())
    }

    pub fn stream_mut(&mut self) -> Option<&mut StreamState> {
        let id = self.context();
        self.streams.get_mut(&id)
    }

    pub fn log(&mut self, level: LogLevel, message: String, source: LogSource) {
        if level >= self.opts.log_level {
            self.logs.push(LogLine {
                vm: self.index,
                level,
                message,
                source,
            });
        }
    }

    pub fn next_random(&mut self) -> u64 {
        // splitmix64: deterministic per VM, which keeps hash seeds (and test runs) repeatable.
        self.random_state = self.random_state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.random_state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}
