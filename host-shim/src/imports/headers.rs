//! Header and trailer maps (`proxy_*_header_map_*`): the stream's request and response maps
//! while the filter holds them, and the callout response's maps during its callback. Keys are
//! lower-cased on the way in, as Envoy's header maps are.

use super::guest::{copy_out_status, guard, len_u32, note_key, ok, put_u32, read, read_str, C, R};
use crate::abi::{map, Status};
use crate::pairs::{self, Headers};
use crate::vm_state::VmState;
use wasmtime::Linker;

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

pub(super) fn define(l: &mut Linker<VmState>) -> wasmtime::Result<()> {
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
            note_key(&c, key.as_bytes());
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
