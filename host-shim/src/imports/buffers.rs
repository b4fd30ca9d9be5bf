//! Buffers (`proxy_*_buffer_*`): the stream's bodies (what the filter sees of them depends on
//! whether Envoy is buffering), the plugin and VM configuration, and the callout response body.
//! Only the two body buffers can be written.

use super::guest::{copy_out_status, guard, len_u32, ok, put_u32, read, u, C, R};
use crate::abi::{buffer, Status};
use crate::stream_state::{BufferView, Dir};
use crate::vm_state::VmState;
use wasmtime::Linker;

pub(super) fn define(l: &mut Linker<VmState>) -> wasmtime::Result<()> {
    l.func_wrap(
        "env",
        "proxy_get_buffer_bytes",
        |mut c: C, ty: i32, start: i32, length: i32, ptr_ptr: i32, size_ptr: i32| -> R {
            guard(&c, "proxy_get_buffer_bytes")?;
            if !(0..=buffer::MAX).contains(&ty) {
                return ok(Status::BadArgument);
            }
            let Some(bytes) = read_buffer(c.data(), ty) else {
                return ok(Status::NotFound);
            };
            let (start, length) = (u(start), u(length));
            let end = start.saturating_add(length).min(bytes.len());
            let slice = bytes.get(start..end).unwrap_or_default().to_vec();
            copy_out_status(&mut c, &slice, ptr_ptr, size_ptr)
        },
    )?;
    l.func_wrap(
        "env",
        "proxy_get_buffer_status",
        |mut c: C, ty: i32, length_ptr: i32, flags_ptr: i32| -> R {
            guard(&c, "proxy_get_buffer_status")?;
            if !(0..=buffer::MAX).contains(&ty) {
                return ok(Status::BadArgument);
            }
            let Some(bytes) = read_buffer(c.data(), ty) else {
                return ok(Status::NotFound);
            };
            ok(
                if put_u32(&mut c, length_ptr, len_u32(bytes.len()))
                    && put_u32(&mut c, flags_ptr, 0)
                {
                    Status::Ok
                } else {
                    Status::InvalidMemoryAccess
                },
            )
        },
    )?;
    l.func_wrap(
        "env",
        "proxy_set_buffer_bytes",
        |mut c: C, ty: i32, start: i32, length: i32, data_ptr: i32, data_size: i32| -> R {
            guard(&c, "proxy_set_buffer_bytes")?;
            if !(0..=buffer::MAX).contains(&ty) {
                return ok(Status::BadArgument);
            }
            let Some(data) = read(&c, data_ptr, data_size) else {
                return ok(Status::InvalidMemoryAccess);
            };
            let dir = match ty {
                buffer::HTTP_REQUEST_BODY => Dir::Request,
                buffer::HTTP_RESPONSE_BODY => Dir::Response,
                _ => {
                    return ok(if read_buffer(c.data(), ty).is_some() {
                        // Envoy's string-backed buffers cannot be written.
                        Status::BadArgument
                    } else {
                        Status::NotFound
                    });
                }
            };
            let s = c.data_mut();
            let Some(st) = s.stream_mut() else {
                return ok(Status::BadArgument);
            };
            ok(st.side_mut(dir).write_body(u(start), u(length), &data))
        },
    )?;
    Ok(())
}

/// Envoy `getBuffer`: `None` is "no such buffer now" (`NotFound`).
fn read_buffer(s: &VmState, ty: i32) -> Option<Vec<u8>> {
    match ty {
        buffer::HTTP_REQUEST_BODY | buffer::HTTP_RESPONSE_BODY => {
            let dir = if ty == buffer::HTTP_REQUEST_BODY {
                Dir::Request
            } else {
                Dir::Response
            };
            // A context without a body in flight still has an (empty) buffer in Envoy.
            Some(match s.stream() {
                Some(st) => match st.side(dir).view() {
                    BufferView::Buffered(b) | BufferView::Chunk(b) => b.to_vec(),
                    BufferView::None => Vec::new(),
                },
                None => Vec::new(),
            })
        }
        buffer::PLUGIN_CONFIGURATION => s.configuring.then(|| s.opts.plugin_configuration.clone()),
        buffer::VM_CONFIGURATION => Some(s.opts.vm_configuration.clone()),
        buffer::HTTP_CALL_RESPONSE_BODY => s.call_response.as_ref().map(|r| r.body.clone()),
        buffer::CALL_DATA
        | buffer::GRPC_RECEIVE_BUFFER
        | buffer::NETWORK_DOWNSTREAM_DATA
        | buffer::NETWORK_UPSTREAM_DATA => Some(Vec::new()),
        _ => None,
    }
}
