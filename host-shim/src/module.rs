//! Compiling a module once per process: one engine, one linker, and a cache keyed by the file's
//! path, size and modification time (tests make many VMs from the same `.wasm`).

use crate::error::ShimError;
use crate::imports;
use crate::vm_state::VmState;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::time::SystemTime;
use wasmtime::{Config, Engine, ExternType, InstancePre, Linker, Module, OptLevel};

/// A compiled module, ready to be instantiated as many VMs as needed.
#[derive(Clone)]
pub struct WasmModule {
    pub(crate) module: Module,
    pub(crate) pre: Option<InstancePre<VmState>>,
    /// Why the module cannot be linked against Envoy's host functions, if it cannot.
    pub(crate) link_error: Option<String>,
    pub(crate) name: String,
}

/// One import of a module: `module.name` and its signature, e.g. `env.proxy_log (i32 i32 i32) -> i32`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Import {
    pub module: String,
    pub name: String,
    pub signature: String,
    pub is_function: bool,
}

impl std::fmt::Display for Import {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{} {}", self.module, self.name, self.signature)
    }
}

fn engine() -> Result<&'static Engine, ShimError> {
    static ENGINE: OnceLock<Result<Engine, String>> = OnceLock::new();
    ENGINE
        .get_or_init(|| {
            let mut config = Config::new();
            config.cranelift_opt_level(OptLevel::Speed);
            // `perf record` names the module's functions from /tmp/perf-<pid>.map (the `.wasm`
            // keeps its name section in `--profile playground`).
            if std::env::var_os("SHIM_PERF_MAP").is_some() {
                config.profiler(wasmtime::ProfilingStrategy::PerfMap);
            }
            Engine::new(&config).map_err(|e| format!("{e:?}"))
        })
        .as_ref()
        .map_err(|e| ShimError::Load(format!("wasmtime engine: {e}")))
}

fn linker() -> Result<&'static Linker<VmState>, ShimError> {
    static LINKER: OnceLock<Result<Linker<VmState>, String>> = OnceLock::new();
    let engine = engine()?;
    LINKER
        .get_or_init(|| imports::linker(engine).map_err(|e| format!("{e:?}")))
        .as_ref()
        .map_err(|e| ShimError::Load(format!("host functions: {e}")))
}

type CacheKey = (PathBuf, u64, Option<SystemTime>);

fn cache() -> &'static Mutex<Vec<(CacheKey, WasmModule)>> {
    static CACHE: OnceLock<Mutex<Vec<(CacheKey, WasmModule)>>> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(Vec::new()))
}

impl WasmModule {
    /// Reads and compiles a `.wasm` file (compiled once per process while the file is unchanged).
    pub fn from_file(path: &Path) -> Result<WasmModule, ShimError> {
        let meta = std::fs::metadata(path)
            .map_err(|e| ShimError::Load(format!("{}: {e}", path.display())))?;
        let key: CacheKey = (path.to_path_buf(), meta.len(), meta.modified().ok());
        {
            let cached = cache().lock().unwrap_or_else(|p| p.into_inner());
            if let Some((_, m)) = cached.iter().find(|(k, _)| *k == key) {
                return Ok(m.clone());
            }
        }
        let bytes =
            std::fs::read(path).map_err(|e| ShimError::Load(format!("{}: {e}", path.display())))?;
        let module = WasmModule::from_bytes(&bytes, &path.display().to_string())?;
        let mut cached = cache().lock().unwrap_or_else(|p| p.into_inner());
        cached.retain(|(k, _)| k.0 != key.0);
        cached.push((key, module.clone()));
        Ok(module)
    }

    /// Compiles a module from its bytes.
    pub fn from_bytes(bytes: &[u8], name: &str) -> Result<WasmModule, ShimError> {
        let module =
            Module::new(engine()?, bytes).map_err(|e| ShimError::Load(format!("{name}: {e:?}")))?;
        let (pre, link_error) = match linker()?.instantiate_pre(&module) {
            Ok(pre) => (Some(pre), None),
            Err(e) => (None, Some(format!("{e:?}"))),
        };
        Ok(WasmModule {
            module,
            pre,
            link_error,
            name: name.to_string(),
        })
    }

    /// Every import of the module, in the module's order.
    pub fn imports(&self) -> Vec<Import> {
        self.module
            .imports()
            .map(|i| {
                let (signature, is_function) = match i.ty() {
                    ExternType::Func(f) => {
                        let params: Vec<String> = f.params().map(|p| p.to_string()).collect();
                        let results: Vec<String> = f.results().map(|r| r.to_string()).collect();
                        (
                            format!("({}) -> ({})", params.join(" "), results.join(" ")),
                            true,
                        )
                    }
                    other => (format!("{other:?}"), false),
                };
                Import {
                    module: i.module().to_string(),
                    name: i.name().to_string(),
                    signature,
                    is_function,
                }
            })
            .collect()
    }

    /// The names of the module's exports.
    pub fn exports(&self) -> Vec<String> {
        self.module
            .exports()
            .map(|e| e.name().to_string())
            .collect()
    }

    /// Why the module cannot be linked against the host functions Envoy provides, if so.
    pub fn link_error(&self) -> Option<&str> {
        self.link_error.as_deref()
    }

    pub(crate) fn engine(&self) -> &Engine {
        self.module.engine()
    }
}
