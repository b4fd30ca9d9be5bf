//! Callouts: `proxy_http_call` records the request for the test to answer (see
//! `Vm::pending_http_calls`), `proxy_get_status` reports how a callout ended during its response
//! callback, and the gRPC and foreign-function calls answer as Envoy does when the service or
//! function does not exist.

use super::guest::{copy_out_status, guard, ok, put_u32, read, read_str, C, R};
use crate::abi::{LogLevel, Status};
use crate::error::LogSource;
use crate::pairs::{self, Headers};
use crate::vm_state::{HttpCall, VmState};
use wasmtime::Linker;

pub(super) fn define(l: &mut Linker<VmState>) -> wasmtime::Result<()> {
    l.func_wrap(
        "env",
        "proxy_get_status",
        |mut c: C, code_ptr: i32, ptr_ptr: i32, size_ptr: i32| -> R {
            guard(&c, "proxy_get_status")?;
            let (code, message) = c.data().status.clone();
            if !put_u32(&mut c, code_ptr, code) {
                return ok(Status::InvalidMemoryAccess);
            }
            copy_out_status(&mut c, message.as_bytes(), ptr_ptr, size_ptr)
        },
    )?;
    l.func_wrap(
        "env",
        "proxy_http_call",
        |mut c: C,
         uri_ptr: i32,
         uri_size: i32,
         headers_ptr: i32,
         headers_size: i32,
         body_ptr: i32,
         body_size: i32,
         trailers_ptr: i32,
         trailers_size: i32,
         timeout: i32,
         token_ptr: i32|
         -> R {
            guard(&c, "proxy_http_call")?;
            let (Some(cluster), Some(body), Some(headers), Some(trailers)) = (
                read_str(&c, uri_ptr, uri_size),
                read(&c, body_ptr, body_size),
                read(&c, headers_ptr, headers_size),
                read(&c, trailers_ptr, trailers_size),
            ) else {
                return ok(Status::InvalidMemoryAccess);
            };
            // cpp-host writes the token first to check the memory before starting anything.
            if !put_u32(&mut c, token_ptr, 0) {
                return ok(Status::InvalidMemoryAccess);
            }
            if timeout < 0 {
                return ok(Status::BadArgument);
            }
            let mut headers: Headers = pairs::decode(&headers)
                .into_iter()
                .map(|(k, v)| (k.to_ascii_lowercase(), v))
                .collect();
            let known = match &c.data().opts.clusters {
                Some(list) => list.contains(&cluster),
                None => true,
            };
            if !known
                || pairs::get(&headers, ":path").is_none()
                || pairs::get(&headers, ":method").is_none()
                || pairs::get(&headers, ":authority").is_none()
            {
                return ok(Status::BadArgument);
            }
            if !body.is_empty() {
                pairs::replace(&mut headers, "content-length", &body.len().to_string());
            }
            let token = {
                let s = c.data_mut();
                let token = s.next_http_call;
                s.next_http_call = s.next_http_call.wrapping_add(1).max(1);
                let context = s.context();
                s.http_calls.insert(
                    token,
                    HttpCall {
                        token,
                        cluster,
                        headers,
                        body,
                        trailers: pairs::decode(&trailers),
                        timeout_ms: u32::from_ne_bytes(timeout.to_ne_bytes()),
                        context,
                    },
                );
                token
            };
            put_u32(&mut c, token_ptr, token);
            ok(Status::Ok)
        },
    )?;
    // gRPC callouts need a gRPC upstream; the shim has none. Envoy answers an unknown service
    // with BadArgument, which is what these return.
    l.func_wrap(
        "env",
        "proxy_grpc_call",
        |mut c: C,
         _a: i32,
         _b: i32,
         _d: i32,
         _e: i32,
         _f: i32,
         _g: i32,
         _h: i32,
         _i: i32,
         _j: i32,
         _k: i32,
         _timeout: i32,
         _token: i32|
         -> R {
            guard(&c, "proxy_grpc_call")?;
            c.data_mut().log(
                LogLevel::Warn,
                "host-shim: gRPC callouts are not supported".into(),
                LogSource::ProxyLog,
            );
            ok(Status::BadArgument)
        },
    )?;
    l.func_wrap(
        "env",
        "proxy_grpc_stream",
        |mut c: C,
         _a: i32,
         _b: i32,
         _d: i32,
         _e: i32,
         _f: i32,
         _g: i32,
         _h: i32,
         _i: i32,
         _token: i32|
         -> R {
            guard(&c, "proxy_grpc_stream")?;
            c.data_mut().log(
                LogLevel::Warn,
                "host-shim: gRPC streams are not supported".into(),
                LogSource::ProxyLog,
            );
            ok(Status::BadArgument)
        },
    )?;
    l.func_wrap("env", "proxy_grpc_cancel", |c: C, _token: i32| -> R {
        guard(&c, "proxy_grpc_cancel")?;
        ok(Status::NotFound)
    })?;
    l.func_wrap("env", "proxy_grpc_close", |c: C, _token: i32| -> R {
        guard(&c, "proxy_grpc_close")?;
        ok(Status::NotFound)
    })?;
    l.func_wrap(
        "env",
        "proxy_grpc_send",
        |c: C, _token: i32, _ptr: i32, _size: i32, _end: i32| -> R {
            guard(&c, "proxy_grpc_send")?;
            ok(Status::BadArgument)
        },
    )?;
    l.func_wrap(
        "env",
        "proxy_call_foreign_function",
        |c: C,
         name_ptr: i32,
         name_size: i32,
         args_ptr: i32,
         args_size: i32,
         _r: i32,
         _rs: i32|
         -> R {
            guard(&c, "proxy_call_foreign_function")?;
            if read(&c, name_ptr, name_size).is_none() || read(&c, args_ptr, args_size).is_none() {
                return ok(Status::InvalidMemoryAccess);
            }
            ok(Status::NotFound)
        },
    )?;
    Ok(())
}
