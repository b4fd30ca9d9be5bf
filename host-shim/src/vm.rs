//! One VM: one Envoy worker's instance of the plugin, with its root context, its streams, its
//! outstanding HTTP callouts and its log, over the process-wide [`Host`] store.

use crate::abi::{LogLevel, MetricType, Status};
use crate::error::{LogLine, LogSource, ShimError};
use crate::host::Host;
use crate::module::WasmModule;
use crate::pairs::Headers;
use crate::stream::{Dir, StreamState};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use wasmtime::{Func, Memory, Store, Val};

/// How Envoy is set up for the plugin: the `vm_config` and plugin fields of the Wasm filter.
#[derive(Debug, Clone)]
pub struct VmOptions {
    /// `vm_config.vm_id`: VMs with the same id share data and queues.
    pub vm_id: String,
    /// The plugin's `name` (property `plugin_name`).
    pub plugin_name: String,
    /// The plugin's `root_id` (property `plugin_root_id`).
    pub root_id: String,
    /// `vm_config.configuration`, given to `proxy_on_vm_start`.
    pub vm_configuration: Vec<u8>,
    /// The plugin `configuration`, given to `proxy_on_configure`.
    pub plugin_configuration: Vec<u8>,
    /// `vm_config.environment_variables`, what WASI `environ_get` returns.
    pub environment: Vec<(String, String)>,
    /// Envoy's `wasm` logger level (`proxy_get_log_level`); lines below it are dropped, as
    /// Envoy drops them.
    pub log_level: LogLevel,
    /// Envoy 1.35+ `allow_on_headers_stop_iteration`: a paused header callback is
    /// StopIteration (body callbacks still come) instead of StopAllIteration.
    pub allow_on_headers_stop_iteration: bool,
    /// Fail the driving call on any critical log line, even without a trap.
    pub strict: bool,
    /// Envoy's per-stream buffer limit (`per_connection_buffer_limit_bytes`, default 1 MiB):
    /// more buffered data than this is a 413 (request) or a 500/reset (response).
    pub buffer_limit: usize,
    /// The clusters `proxy_http_call` may target (Envoy: `BadArgument` for an unknown one);
    /// `None` accepts any name.
    pub clusters: Option<Vec<String>>,
    /// Properties every context sees (path segments, value bytes).
    pub plugin_properties: Vec<(Vec<String>, Vec<u8>)>,
    /// Properties every new stream starts with, e.g. `xds.cluster_name`.
    pub stream_properties: Vec<(Vec<String>, Vec<u8>)>,
}

impl Default for VmOptions {
    fn default() -> Self {
        VmOptions {
            vm_id: String::new(),
            plugin_name: "plugin".into(),
            root_id: String::new(),
            vm_configuration: Vec::new(),
            plugin_configuration: Vec::new(),
            environment: Vec::new(),
            log_level: LogLevel::Info,
            allow_on_headers_stop_iteration: false,
            strict: true,
            buffer_limit: 1024 * 1024,
            clusters: None,
            plugin_properties: Vec::new(),
            stream_properties: Vec::new(),
        }
    }
}

fn path_of(path: &[&str]) -> Vec<String> {
    path.iter().map(|s| s.to_string()).collect()
}

impl VmOptions {
    /// Defaults with this plugin configuration.
    pub fn new(plugin_configuration: impl Into<Vec<u8>>) -> Self {
        VmOptions {
            plugin_configuration: plugin_configuration.into(),
            ..VmOptions::default()
        }
    }

    pub fn allow_on_headers_stop_iteration(mut self, on: bool) -> Self {
        self.allow_on_headers_stop_iteration = on;
        self
    }

    pub fn strict(mut self, on: bool) -> Self {
        self.strict = on;
        self
    }

    pub fn log_level(mut self, level: LogLevel) -> Self {
        self.log_level = level;
        self
    }

    pub fn vm_id(mut self, id: &str) -> Self {
        self.vm_id = id.to_string();
        self
    }

    pub fn vm_configuration(mut self, bytes: impl Into<Vec<u8>>) -> Self {
        self.vm_configuration = bytes.into();
        self
    }

    pub fn env(mut self, key: &str, value: &str) -> Self {
        self.environment.push((key.to_string(), value.to_string()));
        self
    }

    pub fn buffer_limit(mut self, bytes: usize) -> Self {
        self.buffer_limit = bytes;
        self
    }

    pub fn clusters(mut self, names: &[&str]) -> Self {
        self.clusters = Some(names.iter().map(|s| s.to_string()).collect());
        self
    }

    pub fn plugin_property(mut self, path: &[&str], value: impl Into<Vec<u8>>) -> Self {
        self.plugin_properties.push((path_of(path), value.into()));
        self
    }

    /// A property every new stream has, e.g. `&["xds", "cluster_name"]`.
    pub fn stream_property(mut self, path: &[&str], value: impl Into<Vec<u8>>) -> Self {
        self.stream_properties.push((path_of(path), value.into()));
        self
    }
}

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
    pub metric_ids: HashMap<u32, (MetricType, String)>,
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
        id == self.root_context && id != 0 || self.streams.get(&id).is_some_and(|s| !s.deleted)
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

/// One worker's VM of the plugin.
pub struct Vm {
    pub(crate) store: Store<VmState>,
    exports: HashMap<String, Func>,
    pub(crate) failed: Option<String>,
}

impl std::fmt::Debug for Vm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Vm")
            .field("index", &self.index())
            .field("failed", &self.failed)
            .finish()
    }
}

impl Vm {
    /// Loads a `.wasm` file and starts it as Envoy does: `_initialize`, the root context,
    /// `proxy_on_vm_start`, `proxy_on_configure`. A refused plugin is an error carrying its log.
    pub fn load(host: &Host, wasm: &Path, options: VmOptions) -> Result<Vm, ShimError> {
        let module = WasmModule::from_file(wasm)?;
        Vm::new(host, &module, options)
    }

    /// Starts a compiled module as a new VM on `host` (see [`Vm::load`]).
    pub fn new(host: &Host, module: &WasmModule, options: VmOptions) -> Result<Vm, ShimError> {
        let mut vm = Vm::instantiate(host, module, options)?;
        vm.start()?;
        vm.configure()?;
        Ok(vm)
    }

    /// Instantiates the module and runs `_initialize` (with Envoy's restricted hostcalls), but
    /// creates no root context yet.
    pub fn instantiate(
        host: &Host,
        module: &WasmModule,
        options: VmOptions,
    ) -> Result<Vm, ShimError> {
        let Some(pre) = &module.pre else {
            return Err(ShimError::Load(format!(
                "{}: {}",
                module.name,
                module.link_error.as_deref().unwrap_or("cannot be linked")
            )));
        };
        let index = host.next_vm_index();
        let state = VmState {
            host: host.clone(),
            index,
            opts: options,
            memory: None,
            alloc: None,
            restriction: None,
            current: 0,
            effective: 0,
            root_context: 0,
            configuring: false,
            logs: Vec::new(),
            metric_ids: HashMap::new(),
            next_metric_id: 1,
            tick_period_ms: 0,
            streams: BTreeMap::new(),
            next_context_id: 1,
            http_calls: BTreeMap::new(),
            next_http_call: 1,
            call_response: None,
            stop_iteration: false,
            after: Vec::new(),
            status: (0, String::new()),
            root_properties: HashMap::new(),
            random_state: 0x5EED_0000 + index as u64,
        };
        let mut store = Store::new(module.engine(), state);
        let instance = pre
            .instantiate(&mut store)
            .map_err(|e| ShimError::Load(format!("{}: {e:?}", module.name)))?;
        let memory = instance.get_memory(&mut store, "memory");
        if memory.is_none() {
            return Err(ShimError::Load(format!(
                "{}: no exported memory",
                module.name
            )));
        }
        let alloc = instance
            .get_func(&mut store, "malloc")
            .or_else(|| instance.get_func(&mut store, "proxy_on_memory_allocate"));
        if alloc.is_none() {
            return Err(ShimError::Load(format!(
                "{}: Wasm module is missing malloc function",
                module.name
            )));
        }
        let exports_list: Vec<String> = module.exports();
        if !exports_list
            .iter()
            .any(|e| e == "proxy_abi_version_0_2_1" || e == "proxy_abi_version_0_2_0")
        {
            return Err(ShimError::Load(format!(
                "{}: no proxy_abi_version_0_2_1 export (the shim speaks ABI 0.2.x)",
                module.name
            )));
        }
        let mut exports = HashMap::new();
        for name in exports_list {
            if let Some(f) = instance.get_func(&mut store, &name) {
                exports.insert(name, f);
            }
        }
        {
            let s = store.data_mut();
            s.memory = memory;
            s.alloc = alloc;
            let props: Vec<(Vec<u8>, Vec<u8>)> = s
                .opts
                .plugin_properties
                .iter()
                .map(|(p, v)| (property_key(p), v.clone()))
                .collect();
            s.root_properties.extend(props);
        }
        let mut vm = Vm {
            store,
            exports,
            failed: None,
        };
        vm.store.data_mut().restriction = Some(Restriction::Initialize);
        let result = if vm.exports.contains_key("_initialize") {
            vm.call("_initialize", 0, &[]).and_then(|_| {
                if vm.exports.contains_key("main") {
                    vm.call("main", 0, &[0, 0]).map(|_| ())
                } else {
                    vm.call("__main_void", 0, &[]).map(|_| ())
                }
            })
        } else {
            vm.call("_start", 0, &[]).map(|_| ())
        };
        vm.store.data_mut().restriction = None;
        result?;
        Ok(vm)
    }

    /// Creates the root context (`proxy_on_context_create(root, 0)`) and calls
    /// `proxy_on_vm_start`. False from the module refuses the plugin.
    pub fn start(&mut self) -> Result<(), ShimError> {
        let root = {
            let s = self.store.data_mut();
            if s.root_context != 0 {
                return Err(ShimError::Usage("the VM is started already".into()));
            }
            let id = s.next_context_id;
            s.next_context_id += 1;
            s.root_context = id;
            s.configuring = true;
            id
        };
        let created = self.call("proxy_on_context_create", root, &[to_i32(root), 0]);
        self.store.data_mut().configuring = false;
        created?;
        let size = self.store.data().opts.vm_configuration.len();
        let started = self.call("proxy_on_vm_start", root, &[to_i32(root), len_i32(size)])?;
        self.run_after_actions()?;
        if started == Some(0) {
            return Err(self.refused("proxy_on_vm_start"));
        }
        Ok(())
    }

    /// `proxy_on_configure` with the plugin configuration. False refuses the plugin.
    pub fn configure(&mut self) -> Result<(), ShimError> {
        let root = self.root_context()?;
        let size = self.store.data().opts.plugin_configuration.len();
        self.store.data_mut().configuring = true;
        let result = self.call("proxy_on_configure", root, &[to_i32(root), len_i32(size)]);
        self.store.data_mut().configuring = false;
        let ok = result?;
        self.run_after_actions()?;
        if ok == Some(0) {
            return Err(self.refused("proxy_on_configure"));
        }
        Ok(())
    }

    fn refused(&self, callback: &str) -> ShimError {
        ShimError::Refused {
            vm: self.index(),
            callback: callback.to_string(),
            logs: self.logs().iter().map(|l| l.to_string()).collect(),
        }
    }

    pub(crate) fn root_context(&self) -> Result<u32, ShimError> {
        match self.store.data().root_context {
            0 => Err(ShimError::Usage("the VM has no root context yet".into())),
            id => Ok(id),
        }
    }

    /// Which worker this is (0, 1, ... in creation order on its host).
    pub fn index(&self) -> usize {
        self.store.data().index
    }

    pub fn host(&self) -> &Host {
        &self.store.data().host
    }

    pub fn options(&self) -> &VmOptions {
        &self.store.data().opts
    }

    /// Everything the module logged so far (at or above the configured level).
    pub fn logs(&self) -> &[LogLine] {
        &self.store.data().logs
    }

    /// The messages logged at exactly `level`.
    pub fn log_messages(&self, level: LogLevel) -> Vec<String> {
        self.logs()
            .iter()
            .filter(|l| l.level == level)
            .map(|l| l.message.clone())
            .collect()
    }

    pub fn clear_logs(&mut self) {
        self.store.data_mut().logs.clear();
    }

    /// Why the VM is dead, if it trapped.
    pub fn failure(&self) -> Option<&str> {
        self.failed.as_deref()
    }

    /// A counter's value by name (shared by every VM of the host, as Envoy's stats are).
    pub fn counter(&self, name: &str) -> u64 {
        self.host().counter(name)
    }

    /// The tick period the module asked for (0: none).
    pub fn tick_period_ms(&self) -> u32 {
        self.store.data().tick_period_ms
    }

    /// Fires `proxy_on_tick` on the root context if the module set a tick period; returns
    /// whether it fired.
    pub fn tick(&mut self) -> Result<bool, ShimError> {
        if self.tick_period_ms() == 0 {
            return Ok(false);
        }
        let root = self.root_context()?;
        self.call("proxy_on_tick", root, &[to_i32(root)])?;
        self.run_after_actions()?;
        self.deliver_queue_ready()?;
        Ok(true)
    }

    /// Delivers `proxy_on_queue_ready` for every enqueue (by any VM) on a queue this VM
    /// registered. Envoy posts these to the owner's worker; here they run when asked (and
    /// after each driven stream event).
    pub fn deliver_queue_ready(&mut self) -> Result<usize, ShimError> {
        let index = self.index();
        let mine: Vec<(u32, u32)> = {
            let mut store = self.host().lock();
            let mut mine = Vec::new();
            store.queue_ready.retain(|(vm, ctx, token)| {
                if *vm == index {
                    mine.push((*ctx, *token));
                    false
                } else {
                    true
                }
            });
            mine
        };
        for (ctx, token) in &mine {
            if self.store.data().context_exists(*ctx) {
                self.call(
                    "proxy_on_queue_ready",
                    *ctx,
                    &[to_i32(*ctx), to_i32(*token)],
                )?;
                self.run_after_actions()?;
            }
        }
        Ok(mine.len())
    }

    /// Callouts dispatched and not answered yet, oldest first.
    pub fn pending_http_calls(&self) -> Vec<HttpCall> {
        self.store.data().http_calls.values().cloned().collect()
    }

    /// Answers a callout: `headers` should hold `:status`.
    pub fn complete_http_call(
        &mut self,
        token: u32,
        headers: Headers,
        body: &[u8],
        trailers: Headers,
    ) -> Result<(), ShimError> {
        self.deliver_http_call(
            token,
            Some(CallResponse {
                headers,
                body: body.to_vec(),
                trailers,
            }),
        )
    }

    /// Fails a callout as Envoy does on a reset or an unknown/unreachable upstream: zero
    /// headers, an empty body, and `proxy_get_status` says `BrokenConnection`/"reset".
    pub fn fail_http_call(&mut self, token: u32) -> Result<(), ShimError> {
        self.deliver_http_call(token, None)
    }

    /// Times a callout out as Envoy's async client does: a 504 local reply from the router,
    /// delivered as a response.
    pub fn time_out_http_call(&mut self, token: u32) -> Result<(), ShimError> {
        let body = b"upstream request timeout";
        let headers = vec![
            (":status".to_string(), "504".to_string()),
            ("content-length".to_string(), body.len().to_string()),
            ("content-type".to_string(), "text/plain".to_string()),
        ];
        self.complete_http_call(token, headers, body, Vec::new())
    }

    fn deliver_http_call(
        &mut self,
        token: u32,
        response: Option<CallResponse>,
    ) -> Result<(), ShimError> {
        if self.store.data_mut().http_calls.remove(&token).is_none() {
            return Err(ShimError::Usage(format!(
                "no outstanding HTTP call {token}"
            )));
        }
        let root = self.root_context()?;
        let (headers, body, trailers) = {
            let s = self.store.data_mut();
            match response {
                Some(r) => {
                    let sizes = (r.headers.len(), r.body.len(), r.trailers.len());
                    s.call_response = Some(r);
                    sizes
                }
                None => {
                    s.status = (Status::BrokenConnection as u32, "reset".into());
                    s.call_response = None;
                    (0, 0, 0)
                }
            }
        };
        let result = self.call(
            "proxy_on_http_call_response",
            root,
            &[
                to_i32(root),
                to_i32(token),
                len_i32(headers),
                len_i32(body),
                len_i32(trailers),
            ],
        );
        {
            let s = self.store.data_mut();
            s.call_response = None;
            s.status = (0, String::new());
        }
        result?;
        self.run_after_actions()?;
        self.deliver_queue_ready()?;
        Ok(())
    }

    /// Calls an export with context `context` current. A missing export is `Ok(None)` (Envoy
    /// skips callbacks a module does not export).
    pub(crate) fn call(
        &mut self,
        name: &str,
        context: u32,
        args: &[i32],
    ) -> Result<Option<i32>, ShimError> {
        if let Some(reason) = &self.failed {
            return Err(ShimError::VmFailed {
                vm: self.index(),
                reason: reason.clone(),
            });
        }
        let Some(func) = self.exports.get(name).copied() else {
            return Ok(None);
        };
        let ty = func.ty(&self.store);
        if ty.params().len() != args.len() {
            return Err(ShimError::Load(format!(
                "export {name} takes {} parameters, the ABI passes {}",
                ty.params().len(),
                args.len()
            )));
        }
        let params: Vec<Val> = args.iter().map(|a| Val::I32(*a)).collect();
        let mut results: Vec<Val> = ty.results().map(|_| Val::I32(0)).collect();
        let mark = {
            let s = self.store.data_mut();
            s.current = context;
            s.effective = 0;
            s.stop_iteration = false;
            s.logs.len()
        };
        let outcome = func.call(&mut self.store, &params, &mut results);
        {
            let s = self.store.data_mut();
            s.current = 0;
            s.effective = 0;
        }
        let index = self.index();
        let since: Vec<LogLine> = self.logs().get(mark..).unwrap_or_default().to_vec();
        if let Err(e) = outcome {
            let trap = describe_trap(&e);
            let panic: Vec<String> = since
                .iter()
                .filter(|l| l.level == LogLevel::Critical || l.source == LogSource::Stderr)
                .map(|l| l.message.trim().to_string())
                .filter(|m| !m.is_empty() && !m.starts_with("note: run with `RUST_BACKTRACE"))
                .collect();
            let mut reason = format!("trapped in {name}: {trap}");
            if let Some(first) = panic.first() {
                reason.push_str(&format!(" ({first})"));
            }
            self.failed = Some(reason);
            return Err(ShimError::Trap {
                vm: index,
                callback: name.to_string(),
                trap,
                panic,
            });
        }
        if self.store.data().opts.strict {
            if let Some(line) = since.iter().find(|l| l.level == LogLevel::Critical) {
                return Err(ShimError::CriticalLog {
                    vm: index,
                    callback: name.to_string(),
                    line: line.message.clone(),
                });
            }
        }
        Ok(match results.first() {
            Some(Val::I32(v)) => Some(*v),
            Some(Val::I64(v)) => Some(i32::try_from(*v).unwrap_or(i32::MAX)),
            _ => None,
        })
    }

    /// Whether the last call sent a local reply (proxy-wasm-cpp-host `isNextIterationStopped`).
    pub(crate) fn take_stop_iteration(&mut self) -> bool {
        std::mem::take(&mut self.store.data_mut().stop_iteration)
    }
}

fn describe_trap(e: &wasmtime::Error) -> String {
    if let Some(abort) = e.downcast_ref::<crate::error::HostAbort>() {
        return abort.to_string();
    }
    let mut text = match e.downcast_ref::<wasmtime::Trap>() {
        Some(trap) => trap.to_string(),
        None => e.to_string(),
    };
    if let Some(bt) = e.downcast_ref::<wasmtime::WasmBacktrace>() {
        let bt = bt.to_string();
        if !bt.trim().is_empty() {
            text.push('\n');
            text.push_str(bt.trim_end());
        }
    }
    text
}

pub(crate) fn to_i32(v: u32) -> i32 {
    i32::from_ne_bytes(v.to_ne_bytes())
}

pub(crate) fn len_i32(n: usize) -> i32 {
    to_i32(u32::try_from(n).unwrap_or(u32::MAX))
}
