//! What search insights add to a search (issue 35's target: at most 3 µs): the same searches in
//! two VMs of the same `.wasm`, one with `search.insights` on (the default) and one with it off,
//! round robin, each search in an MCP session (so that the link's shared-data read and write are
//! in it, as an agent's SDK session has them).

use crate::inproc::{
    list_response, median, plugin_config, reps, round_robin, search_bodies, Item, Result,
};
use crate::shim::{shim_list, shim_search_in, start_vm};

use host_shim::{Host, HttpMessage, Vm, WasmModule};
use std::cell::RefCell;
use std::time::Duration;

/// The session every measured search is made in.
pub const SESSION: &str = "bench-session";

/// A search's exchange in the VM with insights on and off (means over the queries, medians over
/// rounds).
#[derive(Debug, Clone, Default)]
pub struct InsightsCost {
    pub tools: usize,
    pub on: Duration,
    pub off: Duration,
    /// A second VM with insights off, in the same rounds: how far two VMs alike differ (what
    /// the measurement can resolve).
    pub off_again: Duration,
    pub rounds: usize,
}

impl InsightsCost {
    pub fn added(&self) -> Duration {
        self.on.saturating_sub(self.off)
    }

    /// How far the two VMs with insights off differ, either way.
    pub fn alike(&self) -> Duration {
        self.off.abs_diff(self.off_again)
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
    let on = warmed_vm(module, &on_config, &list_json, &bodies)?;
    let off = warmed_vm(module, &off_config, &list_json, &bodies)?;
    let off_again = warmed_vm(module, &off_config, &list_json, &bodies)?;
    let mut items: Vec<Item<'_>> = vec![
        (
            "wasm search, insights on",
            Box::new(|| mean_in_session(&on, &bodies)),
        ),
        (
            "wasm search, insights off",
            Box::new(|| mean_in_session(&off, &bodies)),
        ),
        (
            "wasm search, insights off, second VM",
            Box::new(|| mean_in_session(&off_again, &bodies)),
        ),
    ];
    let samples = round_robin(&mut items, 10, 2_000, budget)?;
    let m = |i: usize| samples.get(i).map(|v| median(v)).unwrap_or_default();
    Ok(InsightsCost {
        tools,
        on: m(0),
        off: m(1),
        off_again: m(2),
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
