//! How Envoy is set up for the plugin: [`VmOptions`].

use crate::abi::LogLevel;

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
