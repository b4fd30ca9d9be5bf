//! One VM: one Envoy worker's instance of the plugin, with its root context, its streams, its
//! outstanding HTTP callouts and its log, over the process-wide [`Host`] store.
//!
//! Here: instantiating the plugin and calling its exports. What drives a VM is in `impl Vm`
//! blocks of the modules above this one (`stream`, `root`, `exchange`), so that this one never
//! depends on them; its state is in `vm_state`, below the host functions.

use crate::abi::LogLevel;
use crate::error::{HostAbort, LogLine, LogSource, ShimError};
use crate::host::Host;
use crate::module::WasmModule;
use crate::options::VmOptions;
use crate::vm_state::{property_key, HostcallCensus, HttpCall, Restriction, VmState};
use std::collections::{BTreeMap, HashMap};
use wasmtime::{Func, Store, Val};

/// One worker's VM of the plugin.
pub struct Vm {
    pub(crate) store: Store<VmState>,
    exports: HashMap<String, Func>,
    failed: Option<String>,
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
            census: Default::default(),
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

    /// The host functions the module called since the last call of this (or since the VM
    /// started), by name, with the bytes each moved and the keys read; the census starts again
    /// empty.
    pub fn hostcalls(&mut self) -> HostcallCensus {
        self.store.data().census.borrow_mut().take()
    }

    /// A counter's value by name (shared by every VM of the host, as Envoy's stats are).
    pub fn counter(&self, name: &str) -> u64 {
        self.host().counter(name)
    }

    /// The tick period the module asked for (0: none).
    pub fn tick_period_ms(&self) -> u32 {
        self.store.data().tick_period_ms
    }

    /// Callouts dispatched and not answered yet, oldest first.
    pub fn pending_http_calls(&self) -> Vec<HttpCall> {
        self.store.data().http_calls.values().cloned().collect()
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
    if let Some(abort) = e.downcast_ref::<HostAbort>() {
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
