//! The proxy-wasm layer: Envoy's callbacks mapped onto the core, split by callback kind
//! (`root`: configuration, timer, background calls; `http`: one HTTP stream). Every decision
//! lives in the core (`mcp-tool-search-core`), tested natively; this layer only carries out
//! what it is told, and offers the core the host's primitives (`host`).
//!
//! Hostcalls are only made through the SDK's `Result`-returning functions (never the
//! convenience trait methods, which unwrap), and a failed hostcall degrades to "let the traffic
//! through": a panic here would trap the VM and take the listener's filter chain down with it.
//! Those functions still panic on a status they do not expect (SDK 0.2.5), so a call is only
//! made where the host has what it asks for: request headers are changed only while held (or in
//! the headers callback), a call response's headers are read only when it has some.

mod host;
mod http;
mod root;

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
pub(crate) fn start() {
    let _ = log::set_logger(&LOGGER);
    log::set_max_level(log::LevelFilter::Warn);
    std::panic::set_hook(Box::new(|info| {
        let _ = hostcalls::log(
            LogLevel::Critical,
            &format!("mcp-tool-search panicked: {info}"),
        );
    }));
    proxy_wasm::set_root_context(|context_id| Box::new(root::Root::new(context_id)));
}

/// Follows Envoy's log level: formatting a message Envoy would drop is wasted work.
fn follow_host_log_level() {
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
