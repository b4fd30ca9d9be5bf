//! Contexts and stream control: which context later calls act on (`proxy_set_effective_context`),
//! `proxy_done`, and what the module asks of its stream (a local reply, continue, close). As in
//! Envoy, the stream actions run after the current callback returns (`After`), and a local
//! reply turns that callback's result into a stop.

use super::guest::{guard, ok, read, read_str, C, R};
use crate::abi::{stream_type, Status};
use crate::pairs;
use crate::stream_state::Dir;
use crate::vm_state::{After, VmState};
use wasmtime::Linker;

pub(super) fn define(l: &mut Linker<VmState>) -> wasmtime::Result<()> {
    l.func_wrap(
        "env",
        "proxy_send_local_response",
        |mut c: C,
         code: i32,
         details_ptr: i32,
         details_size: i32,
         body_ptr: i32,
         body_size: i32,
         headers_ptr: i32,
         headers_size: i32,
         _grpc_status: i32|
         -> R {
            guard(&c, "proxy_send_local_response")?;
            let (Some(details), Some(body), Some(headers)) = (
                read_str(&c, details_ptr, details_size),
                read(&c, body_ptr, body_size),
                read(&c, headers_ptr, headers_size),
            ) else {
                return ok(Status::InvalidMemoryAccess);
            };
            let headers = pairs::decode(&headers);
            let s = c.data_mut();
            let context = s.context();
            // Envoy only replies for stream contexts (`decoder_callbacks_`); either way the
            // current callback's result becomes a stop.
            if s.streams.contains_key(&context) {
                s.after.push(After::LocalReply {
                    context,
                    status: u32::from_ne_bytes(code.to_ne_bytes()),
                    headers,
                    body,
                    details,
                });
            }
            s.stop_iteration = true;
            ok(Status::Ok)
        },
    )?;
    l.func_wrap(
        "env",
        "proxy_set_effective_context",
        |mut c: C, id: i32| -> R {
            guard(&c, "proxy_set_effective_context")?;
            let id = u32::from_ne_bytes(id.to_ne_bytes());
            let s = c.data_mut();
            if !s.context_exists(id) {
                return ok(Status::BadArgument);
            }
            s.effective = id;
            ok(Status::Ok)
        },
    )?;
    l.func_wrap("env", "proxy_done", |c: C| -> R {
        guard(&c, "proxy_done")?;
        // Only a root context that Envoy is shutting down can be "done"; none is here.
        ok(Status::NotFound)
    })?;
    l.func_wrap("env", "proxy_continue_stream", |mut c: C, ty: i32| -> R {
        guard(&c, "proxy_continue_stream")?;
        if !(0..=stream_type::MAX).contains(&ty) {
            return ok(Status::BadArgument);
        }
        let s = c.data_mut();
        let context = s.context();
        let dir = match ty {
            stream_type::REQUEST => Dir::Request,
            stream_type::RESPONSE => Dir::Response,
            stream_type::DOWNSTREAM => return ok(Status::Ok),
            stream_type::UPSTREAM => return ok(Status::Unimplemented),
            _ => return ok(Status::BadArgument),
        };
        if let Some(st) = s.streams.get_mut(&context) {
            s.after.push(After::Continue { context, dir });
            // Envoy forgets the request maps here, whichever direction resumes.
            st.req.headers_visible = false;
            st.req.trailers_visible = false;
            st.req.chunk_visible = false;
        }
        ok(Status::Ok)
    })?;
    l.func_wrap("env", "proxy_close_stream", |mut c: C, ty: i32| -> R {
        guard(&c, "proxy_close_stream")?;
        if !(0..=stream_type::MAX).contains(&ty) {
            return ok(Status::BadArgument);
        }
        let s = c.data_mut();
        let context = s.context();
        if (ty == stream_type::REQUEST || ty == stream_type::RESPONSE)
            && s.streams.contains_key(&context)
        {
            s.after.push(After::Close { context });
        }
        ok(Status::Ok)
    })?;
    Ok(())
}
