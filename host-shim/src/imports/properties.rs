//! Properties (`proxy_get_property`, `proxy_set_property`): paths are NUL-separated segments.
//! A stream's properties come first, then the root context's, then the few Envoy answers
//! itself from the plugin and the stream's headers.

use super::guest::{copy_out_status, guard, note_key, ok, read, C, R};
use crate::abi::Status;
use crate::pairs::{self, Headers};
use crate::vm_state::VmState;
use wasmtime::Linker;

pub(super) fn define(l: &mut Linker<VmState>) -> wasmtime::Result<()> {
    l.func_wrap(
        "env",
        "proxy_get_property",
        |mut c: C, path_ptr: i32, path_size: i32, ptr_ptr: i32, size_ptr: i32| -> R {
            guard(&c, "proxy_get_property")?;
            let Some(path) = read(&c, path_ptr, path_size) else {
                return ok(Status::InvalidMemoryAccess);
            };
            note_key(&c, &path);
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
