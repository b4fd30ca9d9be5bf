//! Events on a VM's root context: starting the plugin as Envoy does (`proxy_on_vm_start`,
//! `proxy_on_configure`), ticks, and the responses to HTTP callouts (Envoy delivers them to the
//! root context). Each ends with Envoy's after-VM-call actions, which can drive a stream (a
//! callout's response may resume or answer one): that is why this sits above `stream`.

use crate::abi::{len_i32, to_i32, Status};
use crate::error::ShimError;
use crate::host::Host;
use crate::module::WasmModule;
use crate::options::VmOptions;
use crate::pairs::Headers;
use crate::vm::Vm;
use crate::vm_state::CallResponse;
use std::path::Path;

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
}
