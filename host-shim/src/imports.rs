//! The host functions: proxy-wasm ABI 0.2.1 (`env.proxy_*`) and the WASI preview1 functions,
//! with the names, signatures and results proxy-wasm-cpp-host gives them in Envoy
//! (`src/exports.cc`, `src/wasm.cc` `registerCallbacks`), and Envoy's own semantics for the
//! parts cpp-host leaves to it (`source/extensions/common/wasm/context.cc`).

use crate::abi::{buffer, errno, len_i32, map, stream_type, LogLevel, MetricType, Status};
use crate::error::{HostAbort, LogSource};
use crate::host::MetricValue;
use crate::pairs::{self, Headers};
use crate::stream_state::{BufferView, Dir};
use crate::vm_state::{After, HttpCall, Restriction, VmState};
use wasmtime::{Caller, Engine, Linker, Val};

type C<'a> = Caller<'a, VmState>;
type R = wasmtime::Result<i32>;

/// The WASI module names Envoy registers every WASI function under.
const WASI: [&str; 2] = ["wasi_snapshot_preview1", "wasi_unstable"];

fn guard(c: &C, name: &str) -> wasmtime::Result<()> {
    if let Some(r) = c.data().restriction {
        if !r.allows(name) {
            return Err(wasmtime::Error::new(HostAbort::Restricted(
                name.to_string(),
            )));
        }
    }
    Ok(())
}

fn u(v: i32) -> usize {
    u32::from_ne_bytes(v.to_ne_bytes()) as usize
}

fn ok(status: Status) -> R {
    Ok(status.code())
}

fn read(c: &C, ptr: i32, len: i32) -> Option<Vec<u8>> {
    let mem = c.data().memory?;
    let data = mem.data(c);
    let start = u(ptr);
    data.get(start..start.checked_add(u(len))?)
        .map(<[u8]>::to_vec)
}

fn read_str(c: &C, ptr: i32, len: i32) -> Option<String> {
    read(c, ptr, len).map(|b| String::from_utf8_lossy(&b).into_owned())
}

fn write(c: &mut C, ptr: i32, bytes: &[u8]) -> bool {
    let Some(mem) = c.data().memory else {
        return false;
    };
    let data = mem.data_mut(c);
    let start = u(ptr);
    match start
        .checked_add(bytes.len())
        .and_then(|end| data.get_mut(start..end))
    {
        Some(dst) => {
            dst.copy_from_slice(bytes);
            true
        }
        None => false,
    }
}

fn put_u32(c: &mut C, ptr: i32, v: u32) -> bool {
    write(c, ptr, &v.to_le_bytes())
}

fn put_u64(c: &mut C, ptr: i32, v: u64) -> bool {
    write(c, ptr, &v.to_le_bytes())
}

fn len_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// Copies `bytes` into memory the module allocates (its `malloc`/`proxy_on_memory_allocate`,
/// with Envoy's allocation-time restrictions) and writes the pointer and size. Empty data is
/// pointer 0, size 0 (`WasmBase::copyToPointerSize`). `Ok(false)`: a memory fault.
fn copy_out(c: &mut C, bytes: &[u8], ptr_ptr: i32, size_ptr: i32) -> wasmtime::Result<bool> {
    let mut ptr: i32 = 0;
    if !bytes.is_empty() {
        let Some(alloc) = c.data().alloc else {
            return Ok(false);
        };
        let before = c.data().restriction;
        c.data_mut().restriction = Some(Restriction::Allocate);
        let mut result = [Val::I32(0)];
        let called = alloc.call(&mut *c, &[Val::I32(len_i32(bytes.len()))], &mut result);
        c.data_mut().restriction = before;
        called?;
        ptr = match result.first() {
            Some(Val::I32(p)) => *p,
            _ => 0,
        };
        if ptr == 0 || !write(c, ptr, bytes) {
            return Ok(false);
        }
    }
    Ok(put_u32(c, ptr_ptr, u32::from_ne_bytes(ptr.to_ne_bytes()))
        && put_u32(c, size_ptr, len_u32(bytes.len())))
}

fn copy_out_status(c: &mut C, bytes: &[u8], ptr_ptr: i32, size_ptr: i32) -> R {
    if copy_out(c, bytes, ptr_ptr, size_ptr)? {
        ok(Status::Ok)
    } else {
        ok(Status::InvalidMemoryAccess)
    }
}

/// A header map for reading (Envoy `getConstMap`).
fn const_map(s: &VmState, ty: i32) -> Option<Headers> {
    match ty {
        map::HTTP_CALL_RESPONSE_HEADERS => s.call_response.as_ref().map(|r| r.headers.clone()),
        map::HTTP_CALL_RESPONSE_TRAILERS => s.call_response.as_ref().map(|r| r.trailers.clone()),
        map::GRPC_RECEIVE_INITIAL_METADATA | map::GRPC_RECEIVE_TRAILING_METADATA => None,
        _ => s.stream()?.readable_map(ty),
    }
}

fn in_access_log(s: &VmState) -> bool {
    s.stream().is_some_and(|st| st.access_log)
}

fn define_env(l: &mut Linker<VmState>) -> wasmtime::Result<()> {
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
            let now = c.data().host.now_ns();
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
        "proxy_get_property",
        |mut c: C, path_ptr: i32, path_size: i32, ptr_ptr: i32, size_ptr: i32| -> R {
            guard(&c, "proxy_get_property")?;
            let Some(path) = read(&c, path_ptr, path_size) else {
                return ok(Status::InvalidMemoryAccess);
            };
            let value = {
                let s = c.data();
                s.stream()
                    .and_then(|st| st.property(&path))
                    .or_else(|| s.root_properties.get(&path).cloned())
                    .or_else(|| builtin_property(s, &path))
            };
            match value {
                Some(v) => copy_out_status(&mut c, &v, ptr_ptr, size_ptr),
                None => ok(Status::NotFound),
            }
        },
    )?;
    l.func_wrap(
        "env",
        "proxy_set_property",
        |mut c: C, path_ptr: i32, path_size: i32, value_ptr: i32, value_size: i32| -> R {
            guard(&c, "proxy_set_property")?;
            let (Some(path), Some(value)) = (
                read(&c, path_ptr, path_size),
                read(&c, value_ptr, value_size),
            ) else {
                return ok(Status::InvalidMemoryAccess);
            };
            let s = c.data_mut();
            match s.stream_mut() {
                Some(st) => {
                    st.properties.insert(path, value);
                }
                None => {
                    s.root_properties.insert(path, value);
                }
            }
            ok(Status::Ok)
        },
    )?;
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
        "proxy_get_shared_data",
        |mut c: C, key_ptr: i32, key_size: i32, ptr_ptr: i32, size_ptr: i32, cas_ptr: i32| -> R {
            guard(&c, "proxy_get_shared_data")?;
            let Some(key) = read_str(&c, key_ptr, key_size) else {
                return ok(Status::InvalidMemoryAccess);
            };
            let found = {
                let s = c.data();
                s.host.lock().get_shared(&s.opts.vm_id, &key)
            };
            let Some((value, cas)) = found else {
                return ok(Status::NotFound);
            };
            if !copy_out(&mut c, &value, ptr_ptr, size_ptr)? || !put_u32(&mut c, cas_ptr, cas) {
                return ok(Status::InvalidMemoryAccess);
            }
            ok(Status::Ok)
        },
    )?;
    l.func_wrap(
        "env",
        "proxy_set_shared_data",
        |c: C, key_ptr: i32, key_size: i32, value_ptr: i32, value_size: i32, cas: i32| -> R {
            guard(&c, "proxy_set_shared_data")?;
            let (Some(key), Some(value)) = (
                read_str(&c, key_ptr, key_size),
                read(&c, value_ptr, value_size),
            ) else {
                return ok(Status::InvalidMemoryAccess);
            };
            let s = c.data();
            let status = s.host.lock().set_shared(
                &s.opts.vm_id,
                &key,
                &value,
                u32::from_ne_bytes(cas.to_ne_bytes()),
            );
            ok(status)
        },
    )?;
    l.func_wrap(
        "env",
        "proxy_register_shared_queue",
        |mut c: C, name_ptr: i32, name_size: i32, token_ptr: i32| -> R {
            guard(&c, "proxy_register_shared_queue")?;
            let Some(name) = read_str(&c, name_ptr, name_size) else {
                return ok(Status::InvalidMemoryAccess);
            };
            let token = {
                let s = c.data();
                // onQueueReady goes to the root context (a stream registers for its root).
                let owner = s.root_context;
                s.host
                    .lock()
                    .register_queue(&s.opts.vm_id, &name, s.index, owner)
            };
            ok(if put_u32(&mut c, token_ptr, token) {
                Status::Ok
            } else {
                Status::InvalidMemoryAccess
            })
        },
    )?;
    l.func_wrap(
        "env",
        "proxy_resolve_shared_queue",
        |mut c: C,
         vm_id_ptr: i32,
         vm_id_size: i32,
         name_ptr: i32,
         name_size: i32,
         token_ptr: i32|
         -> R {
            guard(&c, "proxy_resolve_shared_queue")?;
            let (Some(vm_id), Some(name)) = (
                read_str(&c, vm_id_ptr, vm_id_size),
                read_str(&c, name_ptr, name_size),
            ) else {
                return ok(Status::InvalidMemoryAccess);
            };
            let token = {
                let s = c.data();
                let vm_id = if vm_id.is_empty() {
                    s.opts.vm_id.clone()
                } else {
                    vm_id
                };
                s.host.lock().resolve_queue(&vm_id, &name)
            };
            let Some(token) = token else {
                return ok(Status::NotFound);
            };
            ok(if put_u32(&mut c, token_ptr, token) {
                Status::Ok
            } else {
                Status::InvalidMemoryAccess
            })
        },
    )?;
    l.func_wrap(
        "env",
        "proxy_dequeue_shared_queue",
        |mut c: C, token: i32, ptr_ptr: i32, size_ptr: i32| -> R {
            guard(&c, "proxy_dequeue_shared_queue")?;
            let got = c
                .data()
                .host
                .lock()
                .dequeue(u32::from_ne_bytes(token.to_ne_bytes()));
            match got {
                Ok(data) => copy_out_status(&mut c, &data, ptr_ptr, size_ptr),
                Err(status) => ok(status),
            }
        },
    )?;
    l.func_wrap(
        "env",
        "proxy_enqueue_shared_queue",
        |c: C, token: i32, ptr: i32, size: i32| -> R {
            guard(&c, "proxy_enqueue_shared_queue")?;
            let Some(data) = read(&c, ptr, size) else {
                return ok(Status::InvalidMemoryAccess);
            };
            let status = c
                .data()
                .host
                .lock()
                .enqueue(u32::from_ne_bytes(token.to_ne_bytes()), &data);
            ok(status)
        },
    )?;
    define_headers(l)?;
    define_buffers(l)?;
    define_calls(l)?;
    define_metrics(l)?;
    define_context(l)?;
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

/// Envoy answers a few properties from the plugin and the stream; everything else a test sets.
fn builtin_property(s: &VmState, path: &[u8]) -> Option<Vec<u8>> {
    let text = String::from_utf8_lossy(path);
    let parts: Vec<&str> = text.split('\0').collect();
    let header = |headers: &Headers, name: &str| pairs::get(headers, name).map(|v| v.into());
    match parts.as_slice() {
        ["plugin_name"] => Some(s.opts.plugin_name.clone().into_bytes()),
        ["plugin_root_id"] => Some(s.opts.root_id.clone().into_bytes()),
        ["plugin_vm_id"] => Some(s.opts.vm_id.clone().into_bytes()),
        ["request", field] => {
            let h = &s.stream()?.req.headers;
            match *field {
                "path" => header(h, ":path"),
                "url_path" => pairs::get(h, ":path")
                    .map(|p| p.split('?').next().unwrap_or("").as_bytes().to_vec()),
                "method" => header(h, ":method"),
                "host" => header(h, ":authority"),
                "scheme" => header(h, ":scheme"),
                "id" => header(h, "x-request-id"),
                "protocol" => Some(b"HTTP/1.1".to_vec()),
                _ => None,
            }
        }
        ["request", "headers", name] => header(&s.stream()?.req.headers, name),
        ["response", "code"] => {
            let code: i64 = pairs::get(&s.stream()?.resp.headers, ":status")?
                .parse()
                .ok()?;
            Some(code.to_le_bytes().to_vec())
        }
        ["response", "headers", name] => header(&s.stream()?.resp.headers, name),
        _ => None,
    }
}

fn define_headers(l: &mut Linker<VmState>) -> wasmtime::Result<()> {
    l.func_wrap(
        "env",
        "proxy_get_header_map_value",
        |mut c: C, ty: i32, key_ptr: i32, key_size: i32, ptr_ptr: i32, size_ptr: i32| -> R {
            guard(&c, "proxy_get_header_map_value")?;
            if !(0..=map::MAX).contains(&ty) {
                return ok(Status::BadArgument);
            }
            let Some(key) = read_str(&c, key_ptr, key_size) else {
                return ok(Status::InvalidMemoryAccess);
            };
            let Some(headers) = const_map(c.data(), ty) else {
                // Envoy: "Requested map type is not currently available" (NotFound while
                // access logging).
                return ok(if in_access_log(c.data()) {
                    Status::NotFound
                } else {
                    Status::BadArgument
                });
            };
            match pairs::get(&headers, &key) {
                Some(v) => {
                    let v = v.as_bytes().to_vec();
                    copy_out_status(&mut c, &v, ptr_ptr, size_ptr)
                }
                None => ok(Status::NotFound),
            }
        },
    )?;
    l.func_wrap(
        "env",
        "proxy_get_header_map_pairs",
        |mut c: C, ty: i32, ptr_ptr: i32, size_ptr: i32| -> R {
            guard(&c, "proxy_get_header_map_pairs")?;
            if !(0..=map::MAX).contains(&ty) {
                return ok(Status::BadArgument);
            }
            let headers = const_map(c.data(), ty).unwrap_or_default();
            let bytes = if headers.is_empty() {
                Vec::new()
            } else {
                pairs::encode(&headers)
            };
            copy_out_status(&mut c, &bytes, ptr_ptr, size_ptr)
        },
    )?;
    l.func_wrap(
        "env",
        "proxy_set_header_map_pairs",
        |mut c: C, ty: i32, ptr: i32, size: i32| -> R {
            guard(&c, "proxy_set_header_map_pairs")?;
            if !(0..=map::MAX).contains(&ty) {
                return ok(Status::BadArgument);
            }
            let Some(bytes) = read(&c, ptr, size) else {
                return ok(Status::InvalidMemoryAccess);
            };
            let new: Headers = pairs::decode(&bytes)
                .into_iter()
                .map(|(k, v)| (k.to_ascii_lowercase(), v))
                .collect();
            ok(mutate_map(&mut c, ty, |h| *h = new))
        },
    )?;
    l.func_wrap(
        "env",
        "proxy_add_header_map_value",
        |mut c: C, ty: i32, key_ptr: i32, key_size: i32, value_ptr: i32, value_size: i32| -> R {
            guard(&c, "proxy_add_header_map_value")?;
            if !(0..=map::MAX).contains(&ty) {
                return ok(Status::BadArgument);
            }
            let (Some(key), Some(value)) = (
                read_str(&c, key_ptr, key_size),
                read_str(&c, value_ptr, value_size),
            ) else {
                return ok(Status::InvalidMemoryAccess);
            };
            ok(mutate_map(&mut c, ty, |h| pairs::add(h, &key, &value)))
        },
    )?;
    l.func_wrap(
        "env",
        "proxy_replace_header_map_value",
        |mut c: C, ty: i32, key_ptr: i32, key_size: i32, value_ptr: i32, value_size: i32| -> R {
            guard(&c, "proxy_replace_header_map_value")?;
            if !(0..=map::MAX).contains(&ty) {
                return ok(Status::BadArgument);
            }
            let (Some(key), Some(value)) = (
                read_str(&c, key_ptr, key_size),
                read_str(&c, value_ptr, value_size),
            ) else {
                return ok(Status::InvalidMemoryAccess);
            };
            ok(mutate_map(&mut c, ty, |h| pairs::replace(h, &key, &value)))
        },
    )?;
    l.func_wrap(
        "env",
        "proxy_remove_header_map_value",
        |mut c: C, ty: i32, key_ptr: i32, key_size: i32| -> R {
            guard(&c, "proxy_remove_header_map_value")?;
            if !(0..=map::MAX).contains(&ty) {
                return ok(Status::BadArgument);
            }
            let Some(key) = read_str(&c, key_ptr, key_size) else {
                return ok(Status::InvalidMemoryAccess);
            };
            ok(mutate_map(&mut c, ty, |h| pairs::remove(h, &key)))
        },
    )?;
    l.func_wrap(
        "env",
        "proxy_get_header_map_size",
        |mut c: C, ty: i32, result_ptr: i32| -> R {
            guard(&c, "proxy_get_header_map_size")?;
            if !(0..=map::MAX).contains(&ty) {
                return ok(Status::BadArgument);
            }
            let size = {
                let s = c.data_mut();
                s.stream_mut()
                    .and_then(|st| st.writable_map(ty))
                    .map(|h| pairs::byte_size(h))
            };
            let Some(size) = size else {
                return ok(Status::BadArgument);
            };
            ok(if put_u32(&mut c, result_ptr, len_u32(size)) {
                Status::Ok
            } else {
                Status::InvalidMemoryAccess
            })
        },
    )?;
    Ok(())
}

/// Envoy `getMap`: only the current stream's maps that are still held by the filter chain can
/// change; anything else is `BadArgument`.
fn mutate_map(c: &mut C, ty: i32, f: impl FnOnce(&mut Headers)) -> Status {
    let s = c.data_mut();
    match s.stream_mut().and_then(|st| st.writable_map(ty)) {
        Some(h) => {
            f(h);
            Status::Ok
        }
        None => Status::BadArgument,
    }
}

fn define_buffers(l: &mut Linker<VmState>) -> wasmtime::Result<()> {
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

fn define_calls(l: &mut Linker<VmState>) -> wasmtime::Result<()> {
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

fn define_metrics(l: &mut Linker<VmState>) -> wasmtime::Result<()> {
    l.func_wrap(
        "env",
        "proxy_define_metric",
        |mut c: C, ty: i32, name_ptr: i32, name_size: i32, id_ptr: i32| -> R {
            guard(&c, "proxy_define_metric")?;
            let Some(name) = read_str(&c, name_ptr, name_size) else {
                return ok(Status::InvalidMemoryAccess);
            };
            let Some(kind) = MetricType::from_code(ty) else {
                return ok(Status::BadArgument);
            };
            let id = {
                let s = c.data_mut();
                let id = s.next_metric_id;
                s.next_metric_id += 1;
                s.metric_ids.insert(id, (kind, name.clone()));
                s.host.lock().define_metric(kind, &name);
                id
            };
            ok(if put_u32(&mut c, id_ptr, id) {
                Status::Ok
            } else {
                Status::InvalidMemoryAccess
            })
        },
    )?;
    l.func_wrap(
        "env",
        "proxy_increment_metric",
        |c: C, id: i32, offset: i64| -> R {
            guard(&c, "proxy_increment_metric")?;
            ok(update_metric(c.data(), id, |m| match m {
                MetricValue::Counter(n) if offset > 0 => {
                    *n = n.saturating_add(offset.unsigned_abs());
                    Status::Ok
                }
                MetricValue::Counter(_) | MetricValue::Histogram(_) => Status::BadArgument,
                MetricValue::Gauge(n) => {
                    *n = n.saturating_add(offset);
                    Status::Ok
                }
            }))
        },
    )?;
    l.func_wrap(
        "env",
        "proxy_record_metric",
        |c: C, id: i32, value: i64| -> R {
            guard(&c, "proxy_record_metric")?;
            let value = u64::from_ne_bytes(value.to_ne_bytes());
            ok(update_metric(c.data(), id, |m| {
                match m {
                    MetricValue::Counter(n) => *n = n.saturating_add(value),
                    MetricValue::Gauge(n) => *n = i64::try_from(value).unwrap_or(i64::MAX),
                    MetricValue::Histogram(v) => v.push(value),
                }
                Status::Ok
            }))
        },
    )?;
    l.func_wrap(
        "env",
        "proxy_get_metric",
        |mut c: C, id: i32, result_ptr: i32| -> R {
            guard(&c, "proxy_get_metric")?;
            let value = {
                let s = c.data();
                let name = s
                    .metric_ids
                    .get(&u32::from_ne_bytes(id.to_ne_bytes()))
                    .map(|(_, n)| n.clone());
                name.and_then(|n| s.host.metric(&n))
            };
            let v = match value {
                None => return ok(Status::NotFound),
                Some(MetricValue::Histogram(_)) => return ok(Status::BadArgument),
                Some(MetricValue::Counter(n)) => n,
                Some(MetricValue::Gauge(n)) => u64::from_ne_bytes(n.to_ne_bytes()),
            };
            ok(if put_u64(&mut c, result_ptr, v) {
                Status::Ok
            } else {
                Status::InvalidMemoryAccess
            })
        },
    )?;
    Ok(())
}

fn update_metric(s: &VmState, id: i32, f: impl FnOnce(&mut MetricValue) -> Status) -> Status {
    let Some((_, name)) = s.metric_ids.get(&u32::from_ne_bytes(id.to_ne_bytes())) else {
        return Status::NotFound;
    };
    let mut store = s.host.lock();
    match store.metrics.get_mut(name) {
        Some(m) => f(m),
        None => Status::NotFound,
    }
}

fn define_context(l: &mut Linker<VmState>) -> wasmtime::Result<()> {
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

fn wasi_log(c: &mut C, fd: i32, iovs: i32, iovs_len: i32) -> Result<usize, i32> {
    let (level, source) = match fd {
        1 => (LogLevel::Info, LogSource::Stdout),
        2 => (LogLevel::Error, LogSource::Stderr),
        _ => return Err(errno::BADF),
    };
    let mut text = Vec::new();
    for i in 0..u(iovs_len) {
        let at = u(iovs).saturating_add(i.saturating_mul(8));
        let Some(iov) = read(c, len_i32(at), 8) else {
            return Err(errno::FAULT);
        };
        let word = |k: usize| -> i32 {
            let b: [u8; 4] = iov
                .get(k..k + 4)
                .and_then(|s| s.try_into().ok())
                .unwrap_or([0; 4]);
            i32::from_le_bytes(b)
        };
        let (buf, len) = (word(0), word(4));
        if len != 0 {
            let Some(bytes) = read(c, buf, len) else {
                return Err(errno::FAULT);
            };
            text.extend_from_slice(&bytes);
        }
    }
    let written = text.len();
    if written != 0 {
        if text.last() == Some(&b'\n') {
            text.pop();
        }
        c.data_mut()
            .log(level, String::from_utf8_lossy(&text).into_owned(), source);
    }
    Ok(written)
}

fn host_note(c: &mut C, message: &str) {
    c.data_mut().log(
        LogLevel::Error,
        format!("host: {message}"),
        LogSource::ProxyLog,
    );
}

fn define_wasi(l: &mut Linker<VmState>, m: &str) -> wasmtime::Result<()> {
    l.func_wrap(
        m,
        "fd_write",
        |mut c: C, fd: i32, iovs: i32, iovs_len: i32, nwritten: i32| -> R {
            guard(&c, "fd_write")?;
            match wasi_log(&mut c, fd, iovs, iovs_len) {
                Ok(n) => Ok(if put_u32(&mut c, nwritten, len_u32(n)) {
                    errno::SUCCESS
                } else {
                    errno::FAULT
                }),
                Err(e) => Ok(e),
            }
        },
    )?;
    l.func_wrap(
        m,
        "fd_pwrite",
        |mut c: C, fd: i32, iovs: i32, iovs_len: i32, _offset: i64, nwritten: i32| -> R {
            guard(&c, "fd_pwrite")?;
            match wasi_log(&mut c, fd, iovs, iovs_len) {
                Ok(n) => Ok(if put_u32(&mut c, nwritten, len_u32(n)) {
                    errno::SUCCESS
                } else {
                    errno::FAULT
                }),
                Err(e) => Ok(e),
            }
        },
    )?;
    l.func_wrap(m, "fd_read", |c: C, _: i32, _: i32, _: i32, _: i32| -> R {
        guard(&c, "fd_read")?;
        Ok(errno::NOSYS)
    })?;
    l.func_wrap(
        m,
        "fd_seek",
        |mut c: C, _fd: i32, _offset: i64, _whence: i32, _new: i32| -> R {
            guard(&c, "fd_seek")?;
            host_note(&mut c, "wasi_unstable fd_seek");
            Ok(errno::SUCCESS)
        },
    )?;
    l.func_wrap(m, "fd_close", |mut c: C, _fd: i32| -> R {
        guard(&c, "fd_close")?;
        host_note(&mut c, "wasi_unstable fd_close");
        Ok(errno::SUCCESS)
    })?;
    l.func_wrap(m, "fd_fdstat_get", |mut c: C, fd: i32, out: i32| -> R {
        guard(&c, "fd_fdstat_get")?;
        if fd != 1 && fd != 2 {
            return Ok(errno::BADF);
        }
        let mut stat = [0u8; 24];
        if let Some(rights) = stat.get_mut(8..16) {
            rights.copy_from_slice(&64u64.to_le_bytes());
        }
        write(&mut c, out, &stat);
        Ok(errno::SUCCESS)
    })?;
    l.func_wrap(
        m,
        "fd_fdstat_set_flags",
        |c: C, _fd: i32, _flags: i32| -> R {
            guard(&c, "fd_fdstat_set_flags")?;
            Ok(errno::NOSYS)
        },
    )?;
    let stdio = |fd: i32| {
        if fd == 1 || fd == 2 {
            errno::SUCCESS
        } else {
            errno::BADF
        }
    };
    l.func_wrap(
        m,
        "fd_fdstat_set_rights",
        move |c: C, fd: i32, _base: i64, _inheriting: i64| -> R {
            guard(&c, "fd_fdstat_set_rights")?;
            Ok(stdio(fd))
        },
    )?;
    l.func_wrap(
        m,
        "environ_sizes_get",
        |mut c: C, count: i32, size: i32| -> R {
            guard(&c, "environ_sizes_get")?;
            let (n, bytes) = {
                let env = &c.data().opts.environment;
                let bytes: usize = env.iter().map(|(k, v)| k.len() + v.len() + 2).sum();
                (env.len(), bytes)
            };
            Ok(
                if put_u32(&mut c, count, len_u32(n)) && put_u32(&mut c, size, len_u32(bytes)) {
                    errno::SUCCESS
                } else {
                    errno::FAULT
                },
            )
        },
    )?;
    l.func_wrap(m, "environ_get", |mut c: C, array: i32, buf: i32| -> R {
        guard(&c, "environ_get")?;
        let env = c.data().opts.environment.clone();
        let (mut array, mut buf) = (u(array), u(buf));
        for (k, v) in env {
            let entry = format!("{k}={v}\0");
            let (a, b) = (len_i32(array), len_i32(buf));
            if !put_u32(&mut c, a, len_u32(buf)) || !write(&mut c, b, entry.as_bytes()) {
                return Ok(errno::FAULT);
            }
            buf += entry.len();
            array += 4;
        }
        Ok(errno::SUCCESS)
    })?;
    l.func_wrap(m, "args_get", |c: C, _argv: i32, _buf: i32| -> R {
        guard(&c, "args_get")?;
        Ok(errno::SUCCESS)
    })?;
    l.func_wrap(m, "args_sizes_get", |mut c: C, argc: i32, size: i32| -> R {
        guard(&c, "args_sizes_get")?;
        Ok(if put_u32(&mut c, argc, 0) && put_u32(&mut c, size, 0) {
            errno::SUCCESS
        } else {
            errno::FAULT
        })
    })?;
    l.func_wrap(
        m,
        "clock_time_get",
        |mut c: C, id: i32, _precision: i64, out: i32| -> R {
            guard(&c, "clock_time_get")?;
            let now = {
                let store = c.data().host.lock();
                match id {
                    0 => store.now_ns,
                    1 => store.monotonic_ns,
                    _ => return Ok(errno::NOTSUP),
                }
            };
            Ok(if put_u64(&mut c, out, now) {
                errno::SUCCESS
            } else {
                errno::FAULT
            })
        },
    )?;
    l.func_wrap(m, "clock_res_get", |mut c: C, id: i32, out: i32| -> R {
        guard(&c, "clock_res_get")?;
        if id != 0 && id != 1 {
            return Ok(errno::NOTSUP);
        }
        Ok(if put_u64(&mut c, out, 1) {
            errno::SUCCESS
        } else {
            errno::FAULT
        })
    })?;
    l.func_wrap(
        m,
        "fd_advise",
        |c: C, _fd: i32, _offset: i64, _len: i64, _advice: i32| -> R {
            guard(&c, "fd_advise")?;
            Ok(errno::SUCCESS)
        },
    )?;
    l.func_wrap(
        m,
        "fd_allocate",
        move |c: C, fd: i32, _offset: i64, _len: i64| -> R {
            guard(&c, "fd_allocate")?;
            Ok(stdio(fd))
        },
    )?;
    l.func_wrap(m, "fd_datasync", move |c: C, fd: i32| -> R {
        guard(&c, "fd_datasync")?;
        Ok(stdio(fd))
    })?;
    l.func_wrap(m, "fd_sync", move |c: C, fd: i32| -> R {
        guard(&c, "fd_sync")?;
        Ok(stdio(fd))
    })?;
    l.func_wrap(
        m,
        "fd_filestat_set_size",
        move |c: C, fd: i32, _size: i64| -> R {
            guard(&c, "fd_filestat_set_size")?;
            Ok(stdio(fd))
        },
    )?;
    l.func_wrap(
        m,
        "fd_filestat_set_times",
        move |c: C, fd: i32, _atim: i64, _mtim: i64, _flags: i32| -> R {
            guard(&c, "fd_filestat_set_times")?;
            Ok(stdio(fd))
        },
    )?;
    l.func_wrap(
        m,
        "fd_pread",
        |c: C, _fd: i32, _iovs: i32, _len: i32, _offset: i64, _nread: i32| -> R {
            guard(&c, "fd_pread")?;
            Ok(errno::NOSYS)
        },
    )?;
    l.func_wrap(
        m,
        "fd_readdir",
        |mut c: C, _fd: i32, _buf: i32, _len: i32, _cookie: i64, nread: i32| -> R {
            guard(&c, "fd_readdir")?;
            if !put_u32(&mut c, nread, 0) {
                return Ok(errno::FAULT);
            }
            Ok(errno::NOTDIR)
        },
    )?;
    l.func_wrap(m, "fd_renumber", |c: C, fd: i32, to: i32| -> R {
        guard(&c, "fd_renumber")?;
        if (fd != 1 && fd != 2) || (to != 1 && to != 2) {
            return Ok(errno::BADF);
        }
        Ok(errno::NOTSUP)
    })?;
    l.func_wrap(m, "fd_tell", |mut c: C, fd: i32, out: i32| -> R {
        guard(&c, "fd_tell")?;
        if fd != 1 && fd != 2 {
            return Ok(errno::BADF);
        }
        Ok(if put_u64(&mut c, out, 0) {
            errno::SUCCESS
        } else {
            errno::FAULT
        })
    })?;
    l.func_wrap(m, "fd_prestat_get", |c: C, _fd: i32, _buf: i32| -> R {
        guard(&c, "fd_prestat_get")?;
        Ok(errno::BADF)
    })?;
    l.func_wrap(
        m,
        "fd_prestat_dir_name",
        |c: C, _fd: i32, _path: i32, _len: i32| -> R {
            guard(&c, "fd_prestat_dir_name")?;
            Ok(errno::NOSYS)
        },
    )?;
    l.func_wrap(m, "fd_filestat_get", |c: C, _fd: i32, _buf: i32| -> R {
        guard(&c, "fd_filestat_get")?;
        Ok(errno::BADF)
    })?;
    l.func_wrap(
        m,
        "path_open",
        |c: C,
         _fd: i32,
         _dirflags: i32,
         _path: i32,
         _path_len: i32,
         _oflags: i32,
         _base: i64,
         _inheriting: i64,
         _fdflags: i32,
         _out: i32|
         -> R {
            guard(&c, "path_open")?;
            Ok(errno::NOENT)
        },
    )?;
    l.func_wrap(
        m,
        "path_filestat_get",
        |c: C, _fd: i32, _flags: i32, _path: i32, _len: i32, _buf: i32| -> R {
            guard(&c, "path_filestat_get")?;
            Ok(errno::NOTSUP)
        },
    )?;
    l.func_wrap(
        m,
        "path_create_directory",
        |c: C, _fd: i32, _path: i32, _len: i32| -> R {
            guard(&c, "path_create_directory")?;
            Ok(errno::NOTSUP)
        },
    )?;
    l.func_wrap(
        m,
        "path_filestat_set_times",
        |c: C, _fd: i32, _flags: i32, _path: i32, _len: i32, _a: i64, _m: i64, _f: i32| -> R {
            guard(&c, "path_filestat_set_times")?;
            Ok(errno::NOTSUP)
        },
    )?;
    // Six parameters, as proxy-wasm-cpp-host declares it (WASI's has seven).
    l.func_wrap(
        m,
        "path_link",
        |c: C, _a: i32, _b: i32, _d: i32, _e: i32, _f: i32, _g: i32| -> R {
            guard(&c, "path_link")?;
            Ok(errno::NOTSUP)
        },
    )?;
    l.func_wrap(
        m,
        "path_readlink",
        |mut c: C, _fd: i32, _path: i32, _len: i32, _buf: i32, _buf_len: i32, out: i32| -> R {
            guard(&c, "path_readlink")?;
            if !put_u32(&mut c, out, 0) {
                return Ok(errno::FAULT);
            }
            Ok(errno::NOTSUP)
        },
    )?;
    l.func_wrap(
        m,
        "path_remove_directory",
        |c: C, _fd: i32, _path: i32, _len: i32| -> R {
            guard(&c, "path_remove_directory")?;
            Ok(errno::NOTSUP)
        },
    )?;
    l.func_wrap(
        m,
        "path_rename",
        |c: C, _a: i32, _b: i32, _d: i32, _e: i32, _f: i32, _g: i32| -> R {
            guard(&c, "path_rename")?;
            Ok(errno::NOTSUP)
        },
    )?;
    // Four parameters, as proxy-wasm-cpp-host declares it (WASI's has five).
    l.func_wrap(
        m,
        "path_symlink",
        |c: C, _a: i32, _b: i32, _d: i32, _e: i32| -> R {
            guard(&c, "path_symlink")?;
            Ok(errno::NOTSUP)
        },
    )?;
    l.func_wrap(
        m,
        "path_unlink_file",
        |c: C, _fd: i32, _path: i32, _len: i32| -> R {
            guard(&c, "path_unlink_file")?;
            Ok(errno::NOTSUP)
        },
    )?;
    l.func_wrap(
        m,
        "sock_accept",
        |mut c: C, _fd: i32, _flags: i32, out: i32| -> R {
            guard(&c, "sock_accept")?;
            if !put_u64(&mut c, out, 0) {
                return Ok(errno::FAULT);
            }
            Ok(errno::NOTSUP)
        },
    )?;
    l.func_wrap(
        m,
        "sock_recv",
        |mut c: C, _fd: i32, _data: i32, _len: i32, _flags: i32, out0: i32, out1: i32| -> R {
            guard(&c, "sock_recv")?;
            if !put_u32(&mut c, out0, 0) || !write(&mut c, out1, &[0, 0]) {
                return Ok(errno::FAULT);
            }
            Ok(errno::NOTSUP)
        },
    )?;
    l.func_wrap(
        m,
        "sock_send",
        |mut c: C, _fd: i32, _data: i32, _len: i32, _flags: i32, out: i32| -> R {
            guard(&c, "sock_send")?;
            if !put_u32(&mut c, out, 0) {
                return Ok(errno::FAULT);
            }
            Ok(errno::NOTSUP)
        },
    )?;
    l.func_wrap(m, "sock_shutdown", |c: C, _fd: i32, _how: i32| -> R {
        guard(&c, "sock_shutdown")?;
        Ok(errno::NOTSUP)
    })?;
    l.func_wrap(m, "random_get", |mut c: C, buf: i32, len: i32| -> R {
        guard(&c, "random_get")?;
        let len = u(len);
        if len > 64 * 1024 {
            return Ok(errno::INVAL);
        }
        let mut bytes = Vec::with_capacity(len + 8);
        while bytes.len() < len {
            let r = c.data_mut().next_random();
            bytes.extend_from_slice(&r.to_le_bytes());
        }
        bytes.truncate(len);
        Ok(if write(&mut c, buf, &bytes) {
            errno::SUCCESS
        } else {
            errno::FAULT
        })
    })?;
    l.func_wrap(m, "sched_yield", |c: C| -> R {
        guard(&c, "sched_yield")?;
        Ok(errno::SUCCESS)
    })?;
    l.func_wrap(
        m,
        "poll_oneoff",
        |mut c: C, _in: i32, _out: i32, _n: i32, nevents: i32| -> R {
            guard(&c, "poll_oneoff")?;
            Ok(if put_u32(&mut c, nevents, 0) {
                errno::SUCCESS
            } else {
                errno::FAULT
            })
        },
    )?;
    // Envoy only logs it and returns; the module traps right after (wasi-libc's `_Exit`).
    l.func_wrap(
        m,
        "proc_exit",
        |mut c: C, code: i32| -> wasmtime::Result<()> {
            guard(&c, "proc_exit")?;
            host_note(&mut c, &format!("wasi_unstable proc_exit({code})"));
            Ok(())
        },
    )?;
    Ok(())
}

/// Every host function Envoy 1.40 gives a proxy-wasm 0.2.1 module.
pub(crate) fn linker(engine: &Engine) -> wasmtime::Result<Linker<VmState>> {
    let mut l = Linker::new(engine);
    define_env(&mut l)?;
    for m in WASI {
        define_wasi(&mut l, m)?;
    }
    Ok(l)
}
