//! mcp-tool-search: a proxy-wasm filter that puts tool search in front of an MCP server.
//!
//! This crate is the glue, and only the glue: `context` hands each of Envoy's callbacks to
//! the core's `http::Root` and `http::Context` (`mcp-tool-search-core`, which decides
//! everything and is tested natively over the same callbacks), and `host` implements the
//! core's two host traits with proxy-wasm hostcalls. No state lives here.
//!
//! Hostcalls are only made through the SDK's `Result`-returning functions (never the
//! convenience trait methods, which unwrap): a panic would trap the VM and take the listener's
//! filter chain down with it. Those functions still panic on a status they do not expect (SDK
//! 0.2.5), so a call is only made where the host has what it asks for (the core asks for a
//! call response's headers only when it has some).

// Natively nothing calls the glue (Envoy does, through the exports `main!` sets up); it is
// still compiled, so native builds check it.
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
mod context;
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
mod host;

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
    proxy_wasm::set_root_context(|context_id| Box::new(context::Root::new(context_id)));
}

/// Follows Envoy's log level: formatting a message Envoy would drop is wasted work.
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
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

#[cfg(target_arch = "wasm32")]
proxy_wasm::main! {{
    start();
}}
