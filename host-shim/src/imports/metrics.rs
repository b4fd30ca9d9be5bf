//! Metrics (`proxy_define_metric` and the calls on its id): each VM numbers its own ids, the
//! values live on the host by name, so two workers defining one name share one metric.

use super::guest::{guard, ok, put_u32, put_u64, read_str, C, R};
use crate::abi::{MetricType, Status};
use crate::host::{MetricValue, HISTOGRAM_VALUES_KEPT};
use crate::vm_state::VmState;
use wasmtime::Linker;

pub(super) fn define(l: &mut Linker<VmState>) -> wasmtime::Result<()> {
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
                let slot = s.host.lock().define_metric(kind, &name);
                s.metric_ids.insert(id, slot);
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
                MetricValue::Counter(_) | MetricValue::Histogram { .. } => Status::BadArgument,
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
                    MetricValue::Histogram { count, values } => {
                        *count = count.saturating_add(1);
                        if values.len() < HISTOGRAM_VALUES_KEPT {
                            values.push(value);
                        }
                    }
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
                let slot = s.metric_ids.get(&u32::from_ne_bytes(id.to_ne_bytes()));
                slot.and_then(|&slot| s.host.lock().metric_values.get(slot).cloned())
            };
            let v = match value {
                None => return ok(Status::NotFound),
                Some(MetricValue::Histogram { .. }) => return ok(Status::BadArgument),
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
    let Some(&slot) = s.metric_ids.get(&u32::from_ne_bytes(id.to_ne_bytes())) else {
        return Status::NotFound;
    };
    let mut store = s.host.lock();
    match store.metric_values.get_mut(slot) {
        Some(m) => f(m),
        None => Status::NotFound,
    }
}
