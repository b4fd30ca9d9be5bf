//! Start-up: the logger, the panic hook and the root context factory, registered once per VM
//! from `_initialize` (`proxy_wasm::main!`).

use proxy_wasm::hostcalls;
use proxy_wasm::types::LogLevel;

/// Routes the `log` crate to Envoy's log, dropping what the host refuses.
struct HostLogger;

impl log::Log for HostLogger {
    fn enabled(&self, metadata: &log::Metadata) -> bool {
        metadata.level() <= log::max_level()
    }

    fn log(&self, record: &log::Record) {
        if !self.enabled(record.metadata()) {
            return;
        }
        let level = match record.level() {
            log::Level::Error => LogLevel::Error,
            log::Level::Warn => LogLevel::Warn,
            log::Level::Info => LogLevel::Info,
            log::Level::Debug => LogLevel::Debug,
            log::Level::Trace => LogLevel::Trace,
        };
        let _ = hostcalls::log(level, &format!("mcp-tool-search: {}", record.args()));
    }

    fn flush(&self) {}
}

static LOGGER: HostLogger = HostLogger;

/// Called once per VM from `_initialize`, where the host allows almost no hostcalls (Envoy
/// answers `restricted_callback`): only register what later callbacks need.
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
fn start() {
    let _ = log::set_logger(&LOGGER);
    log::set_max_level(log::LevelFilter::Warn);
    std::panic::set_hook(Box::new(|info| {
        let _ = hostcalls::log(
            LogLevel::Critical,
            &format!("mcp-tool-search panicked: {info}"),
        );
    }));
    proxy_wasm::set_root_context(|context_id| Box::new(crate::context::Root::new(context_id)));
}

#[cfg(target_arch = "wasm32")]
proxy_wasm::main! {{
    start();
}}
