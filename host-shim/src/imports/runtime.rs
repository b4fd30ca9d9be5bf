//! The VM-wide functions that belong to no ABI area of their own: `proxy_log` and the log
//! level, the clock and the tick period, and the two libc helpers proxy-wasm-cpp-host registers
//! under `env` for modules built with Emscripten or threads (`pthread_equal`,
//! `emscripten_notify_memory_growth`).

use super::guest::{guard, ok, put_u32, put_u64, read_str, C, R};
use crate::abi::{LogLevel, Status};
use crate::error::LogSource;
use crate::vm_state::VmState;
use wasmtime::Linker;

pub(super) fn define(l: &mut Linker<VmState>) -> wasmtime::Result<()> {
    l.func_wrap(
        "env",
        "proxy_log",
        |mut c: C, level: i32, ptr: i32, size: i32| -> R {
            guard(&c, "proxy_log")?;
            let Some(level) = LogLevel::from_code(level) else {
                return ok(Status::BadArgument);
            };
            let Some(message) = read_str(&c, ptr, size) else {
                return ok(Status::InvalidMemoryAccess);
            };
            c.data_mut().log(level, message, LogSource::ProxyLog);
            ok(Status::Ok)
        },
    )?;
    l.func_wrap("env", "proxy_get_log_level", |mut c: C, ptr: i32| -> R {
        guard(&c, "proxy_get_log_level")?;
        let level = c.data().opts.log_level as u32;
        ok(if put_u32(&mut c, ptr, level) {
            Status::Ok
        } else {
            Status::InvalidMemoryAccess
        })
    })?;
    l.func_wrap(
        "env",
        "proxy_get_current_time_nanoseconds",
        |mut c: C, ptr: i32| -> R {
            guard(&c, "proxy_get_current_time_nanoseconds")?;
            let now = c.data().host.read_clock(0).unwrap_or(0);
            ok(if put_u64(&mut c, ptr, now) {
                Status::Ok
            } else {
                Status::InvalidMemoryAccess
            })
        },
    )?;
    l.func_wrap(
        "env",
        "proxy_set_tick_period_milliseconds",
        |mut c: C, period: i32| -> R {
            guard(&c, "proxy_set_tick_period_milliseconds")?;
            c.data_mut().tick_period_ms = u32::from_ne_bytes(period.to_ne_bytes());
            ok(Status::Ok)
        },
    )?;
    l.func_wrap("env", "pthread_equal", |c: C, a: i32, b: i32| -> R {
        guard(&c, "pthread_equal")?;
        Ok(i32::from(a == b))
    })?;
    l.func_wrap(
        "env",
        "emscripten_notify_memory_growth",
        |c: C, _index: i32| -> wasmtime::Result<()> {
            guard(&c, "emscripten_notify_memory_growth")?;
            Ok(())
        },
    )?;
    Ok(())
}
