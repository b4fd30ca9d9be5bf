//! What search insights add to a search (issue 35's target: at most 3 µs): the same searches in
//! VMs of the same `.wasm`, [`VMS_EACH`] with `search.insights` on (the default) and as many with
//! it off, round robin, each search in an MCP session (so that the link's shared-data read and
//! write are in it, as an agent's SDK session has them).
//!
//! Several VMs per setting, because a VM's speed depends on more than its code: at 10,000 tools
//! two VMs alike differed by up to 3 µs, as much as what is measured, the earlier made the
//! slower; a setting's mean over VMs made in a balanced order is what one VM each cannot tell.

use crate::inproc::{median, reps, round_robin, search_bodies, Item, Result};
use crate::messages::{list_response, plugin_config};
use crate::shim::{shim_list, shim_search_in, start_vm};

use host_shim::{Host, HttpMessage, Vm, WasmModule};
use std::cell::RefCell;
use std::time::Duration;

/// The session every measured search is made in.
pub const SESSION: &str = "bench-session";

/// VMs per setting.
pub const VMS_EACH: usize = 4;

/// A search's exchange in the VM with insights on and off (means over the queries, medians over
/// rounds, means over the VMs of a setting).
#[derive(Debug, Clone, Default)]
pub struct InsightsCost {
    pub tools: usize,
    pub on: Duration,
    pub off: Duration,
    /// The fastest and slowest of the VMs with insights off: how far VMs alike land apart (what
    /// one VM per setting could not resolve).
    pub off_range: (Duration, Duration),
    pub rounds: usize,
}

impl InsightsCost {
    pub fn added(&self) -> Duration {
        self.on.saturating_sub(self.off)
    }

    /// How far the VMs with insights off land apart.
    pub fn alike(&self) -> Duration {
        self.off_range.1.saturating_sub(self.off_range.0)
    }
}

/// The plugin configuration of [`plugin_config`] with insights off.
pub fn without_insights(config: &str) -> String {
    let open = config.trim_end().trim_end_matches('}');
    format!("{open},\"search\":{{\"insights\":{{\"enabled\":false}}}}}}")
}

/// A VM (its own host: another Envoy) that listed `list_json` and published its index.
fn listed_vm(module: &WasmModule, config: &str, list_json: &str) -> Result<Vm> {
    let host = Host::new();
    let (mut vm, _) = start_vm(&host, module, config)?;
    let response = HttpMessage::response(200)
        .header("content-type", "application/json")
        .header("content-length", &list_json.len().to_string())
        .body(list_json.as_bytes().to_vec());
    shim_list(&mut vm, &response)?;
    vm.tick().map_err(|e| e.to_string())?;
    Ok(vm)
}

/// A [`listed_vm`] that made the searches of `bodies` once: a VM's first searches (its index,
/// its link slot) are not what is measured.
fn warmed_vm(
    module: &WasmModule,
    config: &str,
    list_json: &str,
    bodies: &[String],
) -> Result<RefCell<Vm>> {
    let vm = RefCell::new(listed_vm(module, config, list_json)?);
    mean_in_session(&vm, bodies)?;
    Ok(vm)
}

fn mean_in_session(vm: &RefCell<Vm>, bodies: &[String]) -> Result<Duration> {
    let mut total = Duration::ZERO;
    for body in bodies {
        total += shim_search_in(&mut vm.borrow_mut(), body, Some(SESSION))?;
    }
    Ok(total / u32::try_from(bodies.len().max(1)).unwrap_or(1))
}

pub fn measure(
    module: &WasmModule,
    tools: usize,
    jsonl: &str,
    queries: &[&str],
    budget: Duration,
) -> Result<InsightsCost> {
    let on_config = plugin_config(&["/mcp".to_owned()]);
    let off_config = without_insights(&on_config);
    let (list_json, _) = list_response(jsonl);
    let bodies = search_bodies(queries);
    // A VM made earlier ran slower here, by about a microsecond per VM made after it at 10,000
    // tools: the settings take turns in the Thue-Morse order (on, off, off, on, off, on, on,
    // off), which gives both the same mean place, and the same spread of places, in the order
    // the VMs were made.
    let mut vms = Vec::new();
    for i in 0..2 * VMS_EACH {
        let on = i.count_ones() % 2 == 0;
        let config = if on { &on_config } else { &off_config };
        vms.push((on, warmed_vm(module, config, &list_json, &bodies)?));
    }
    let mut items: Vec<Item<'_>> = vms
        .iter()
        .map(|(on, vm)| -> Item<'_> {
            let name = if *on {
                "wasm search, insights on"
            } else {
                "wasm search, insights off"
            };
            (name, Box::new(|| mean_in_session(vm, &bodies)))
        })
        .collect();
    let samples = round_robin(&mut items, 10, 2_000, budget)?;
    let medians: Vec<(bool, Duration)> = vms
        .iter()
        .zip(&samples)
        .map(|((on, _), s)| (*on, median(s)))
        .collect();
    let of = |setting: bool| -> Vec<Duration> {
        medians
            .iter()
            .filter(|(on, _)| *on == setting)
            .map(|(_, d)| *d)
            .collect()
    };
    let mean =
        |ds: &[Duration]| ds.iter().sum::<Duration>() / u32::try_from(ds.len().max(1)).unwrap_or(1);
    let off = of(false);
    Ok(InsightsCost {
        tools,
        on: mean(&of(true)),
        off: mean(&off),
        off_range: (
            off.iter().copied().min().unwrap_or_default(),
            off.iter().copied().max().unwrap_or_default(),
        ),
        rounds: samples.first().map_or(0, Vec::len),
    })
}

/// Searches in one session in a VM with insights on (or off) for `duration` (for `perf
/// record`): the number of rounds and the median.
pub fn perf_loop(
    module: &WasmModule,
    jsonl: &str,
    queries: &[&str],
    on: bool,
    duration: Duration,
) -> Result<(usize, Duration)> {
    let mut config = plugin_config(&["/mcp".to_owned()]);
    if !on {
        config = without_insights(&config);
    }
    let (list_json, _) = list_response(jsonl);
    let bodies = search_bodies(queries);
    let vm = warmed_vm(module, &config, &list_json, &bodies)?;
    let times = reps(10, usize::MAX, duration, || mean_in_session(&vm, &bodies))?;
    Ok((times.len(), median(&times)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_off_configuration_is_the_bench_configuration_with_insights_off() {
        let on = plugin_config(&["/mcp".to_owned()]);
        let off = without_insights(&on);
        let config = mcp_tool_search_core::Config::parse(&off).unwrap();
        assert!(!config.search.insights.enabled);
        assert!(config.hold_request_headers, "{off}");
    }
}
