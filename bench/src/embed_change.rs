//! The filter's own part of embedding a catalog change, natively: a worker that learned and
//! embedded a catalog learns a changed list (7 tools swapped, 3 descriptions reworded, as the
//! chaos soak changes its catalogs), then its root ticks send what is missing to an embeddings
//! service that answers at once. Counted: the texts sent (only those whose text changed) and
//! the batches (one per tick, `EMBED_TICK_MS` apart in Envoy); timed: the filter's CPU from the
//! first tick to the last stored vector. What a change costs end to end is then at most the
//! batches' ticks, this, and the service's time for the changed texts.

use crate::inproc::{timed, Result};
use crate::messages::list_request;
use crate::native::{list_response, NativeEnv};
use mcp_tool_search_bench::ms;
use mcp_tool_search_core::{CallSource, Config, HttpCall, MemoryHost, EMBED_TICK_MS};
use serde_json::{json, Value};
use std::cell::Cell;
use std::fmt::Write as _;
use std::rc::Rc;
use std::time::Duration;

/// Catalog sizes measured: the chaos soak's and the largest `make bench` ranks.
pub const SIZES: [usize; 2] = [121, 10_000];
/// What each change does (the chaos soak's `ROTATE_STEP` and `REWORDED`).
const SWAPPED: usize = 7;
const REWORDED: usize = 3;
/// all-MiniLM-L6-v2's size: the vectors stored and read are as large as in production.
const DIMENSIONS: usize = 384;

pub struct ChangeRow {
    pub tools: usize,
    /// Texts the first embedding of the catalog sent.
    pub first_texts: usize,
    /// Texts the change sent: those whose text changed.
    pub change_texts: usize,
    /// Batches (ticks) the change took.
    pub change_batches: usize,
    /// The filter's CPU time from the first tick after the change to the last stored vector.
    pub change_cpu: Duration,
}

pub fn measure() -> Result<Vec<ChangeRow>> {
    SIZES.iter().map(|&n| measure_one(n)).collect()
}

fn measure_one(n: usize) -> Result<ChangeRow> {
    let mut config: Value = serde_json::from_str(&crate::messages::plugin_config(&["/mcp".into()]))
        .map_err(|e| e.to_string())?;
    let search = config
        .as_object_mut()
        .ok_or("the plugin configuration is not an object")?
        .entry("search")
        .or_insert_with(|| json!({}))
        .as_object_mut()
        .ok_or("its search block is not an object")?;
    search.insert("ranking".into(), json!("hybrid"));
    search.insert(
        "embeddings".into(),
        json!({"cluster": "embeddings", "model_id": "m", "dimensions": DIMENSIONS}),
    );
    let config = Config::parse(&config.to_string()).map_err(|e| e.to_string())?;
    let pool = mcp_tool_search_wasm_tests::catalog::generate(n + SWAPPED);
    if pool.len() < n + SWAPPED {
        return Err(format!("only {} generated tools", pool.len()));
    }
    let tools: Vec<String> = pool.iter().map(|t| t.json.to_json_string()).collect();
    let before = tools.get(..n).unwrap_or_default().to_vec();
    let mut after: Vec<String> = before.clone();
    after.truncate(n - SWAPPED);
    after.extend(tools.get(n..).unwrap_or_default().iter().cloned());
    for tool in after.iter_mut().take(REWORDED) {
        let mut v: Value = serde_json::from_str(tool).map_err(|e| e.to_string())?;
        let text = v
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let reworded = json!(format!("{text} Reworded."));
        if let Some(tool) = v.as_object_mut() {
            tool.insert("description".into(), reworded);
        }
        *tool = v.to_string();
    }
    let host = Rc::new(MemoryHost::default());
    let env = NativeEnv::new(&config, &host);
    let texts = Cell::new(0usize);
    let mut service = |call: &HttpCall, source: CallSource| embed(call, source, &texts);
    learn(&env, &before)?;
    env.embed_all(&mut service);
    let first_texts = texts.replace(0);
    learn(&env, &after)?;
    let (batches, change_cpu) = timed(|| env.embed_all(&mut service));
    Ok(ChangeRow {
        tools: n,
        first_texts,
        change_texts: texts.get(),
        change_batches: batches,
        change_cpu,
    })
}

/// The catalog `tools` (JSON definitions) as a client's `tools/list` teaches it.
fn learn(env: &NativeEnv, tools: &[String]) -> Result<()> {
    let jsonl = tools.join("\n");
    let (json, _) = crate::messages::list_response(&jsonl);
    env.list(
        list_request().as_bytes(),
        &list_response("application/json", &json),
    )
    .map(|_| ())
}

/// An embeddings service that answers at once: a unit vector per input derived from its text.
fn embed(
    call: &HttpCall,
    _: CallSource,
    texts: &Cell<usize>,
) -> mcp_tool_search_core::CallResponse {
    let Ok(request) = serde_json::from_slice::<Value>(&call.body) else {
        return (Some("400".into()), Vec::new(), Vec::new());
    };
    let inputs = request
        .get("input")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    texts.set(texts.get() + inputs.len());
    let data: Vec<Value> = inputs
        .iter()
        .enumerate()
        .map(|(i, text)| json!({"index": i, "embedding": vector(text.as_str().unwrap_or(""))}))
        .collect();
    (
        Some("200".into()),
        Vec::new(),
        json!({ "data": data }).to_string().into_bytes(),
    )
}

fn vector(text: &str) -> Vec<f32> {
    let mut state = text.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    }) | 1;
    (0..DIMENSIONS)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % 2001) as f32 / 1000.0 - 1.0
        })
        .collect()
}

pub fn section(rows: &[ChangeRow]) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "### Embedding a catalog change (the filter's part)\n");
    let _ = writeln!(
        o,
        "Natively (`bench/src/embed_change.rs`): a worker learns a catalog from a list and embeds it, then learns the list after a change \
         ({SWAPPED} tools swapped, {REWORDED} descriptions reworded, as the chaos soak changes its catalogs); its root ticks send what is \
         missing to an embeddings service that answers at once ({DIMENSIONS} dimensions). Only texts whose hash changed are sent. \
         The filter's CPU runs from the first tick after the change to the last stored vector (resolving every tool's text and hash, \
         the batch, storing the namespace's vectors). In Envoy each batch waits for a tick ({EMBED_TICK_MS} ms) and for the service, \
         so a change is vector-ranked within batches × {EMBED_TICK_MS} ms + this CPU + the service's time for the changed texts \
         (the chaos soak measures the whole at 121 tools with the real sidecar).\n"
    );
    let _ = writeln!(
        o,
        "| tools | texts embedded first | texts embedded for the change | batches | filter CPU for the change | bound without the service |"
    );
    let _ = writeln!(o, "|---:|---:|---:|---:|---:|---:|");
    for r in rows {
        let ticks = Duration::from_millis(EMBED_TICK_MS * r.change_batches as u64);
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {} | {} |",
            crate::report::thousands(r.tools),
            crate::report::thousands(r.first_texts),
            r.change_texts,
            r.change_batches,
            ms(r.change_cpu),
            ms(ticks + r.change_cpu),
        );
    }
    o.push('\n');
    o
}
