//! The fuzz corpora (`filter/core/fuzz/corpus/`) through the real `.wasm` in host-shim: a
//! deterministic sample of the `request` and `list` targets' inputs, read exactly as the native
//! targets read them (`filter/core/fuzz/src/format.rs`, included below), with the request body
//! and the response re-chunked by a seeded generator. libFuzzer proves the native core does not
//! panic on them; this shows the `.wasm` (panic = abort, wasm32, the glue in front of the core)
//! neither traps nor logs at critical on the same inputs.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

#[path = "../../filter/core/fuzz/src/format.rs"]
mod format;
mod shim_support;

use format::SplitMix;
use host_shim::{Host, HttpMessage, LogLevel, Outcome, Vm, VmOptions, WasmModule};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// How many inputs of each target are replayed (each a whole exchange through the `.wasm`,
/// some with a second one after it): enough to cover every configuration and shape, small
/// enough to keep this test a few seconds long.
const SAMPLE: usize = 400;
/// The seed of the sample and of the chunkings: a failure names its input and repeats.
const SEED: u64 = 0x6d63_702d_6675_7a7a;

fn corpus(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../filter/core/fuzz/corpus")
        .join(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert!(files.len() >= 20, "{}: corpus missing", dir.display());
    // Every file when the corpus is small, else an evenly spread sample from a seeded start.
    let mut rng = SplitMix(SEED ^ target.len() as u64);
    let step = files.len().div_ceil(SAMPLE).max(1);
    let start = (rng.next_u64() as usize) % step;
    files
        .into_iter()
        .skip(start)
        .step_by(step)
        .map(|p| {
            let bytes = std::fs::read(&p).unwrap();
            (p, bytes)
        })
        .collect()
}

/// A worker per configuration, as Envoy runs the plugin: the route's cluster is the native
/// harness's namespace and the stream's metadata holds the `jwt_authn` payload.
fn vm(module: &WasmModule, config: &str) -> Vm {
    let options = VmOptions::new(config)
        .stream_property(&["xds", "cluster_name"], shim_support::NAMESPACE)
        .stream_property(&["metadata"], format::jwt_metadata())
        .allow_on_headers_stop_iteration(format::holds_headers(config));
    let mut vm = Vm::new(&Host::new(), module, options).unwrap_or_else(|e| panic!("{e}"));
    // The catalog the native target learns first, so searches rank something.
    let learn = HttpMessage::post("/mcp").body(format::SEED_LIST_REQUEST);
    let list = HttpMessage::response(200)
        .header("content-type", "application/json")
        .body(format::SEED_LIST);
    vm.exchange(&learn, &list).unwrap_or_else(|e| panic!("{e}"));
    vm
}

/// The body in pieces a seeded generator picks: whole, two, or many small ones.
fn rechunk(body: &[u8], rng: &mut SplitMix) -> Vec<Vec<u8>> {
    if body.is_empty() {
        return Vec::new();
    }
    let pick = rng.next_u64();
    match pick % 4 {
        0 => vec![body.to_vec()],
        1 => {
            let at = (rng.next_u64() as usize) % (body.len() + 1);
            vec![body[..at].to_vec(), body[at..].to_vec()]
        }
        _ => format::chunks(body, (pick >> 8) as u8 | 1)
            .into_iter()
            .map(<[u8]>::to_vec)
            .collect(),
    }
}

/// One exchange that must neither trap nor log at critical (the VM is strict: either is an
/// `Err`, carrying the module's panic message).
fn run(vm: &mut Vm, input: &Path, request: &HttpMessage, response: &HttpMessage) -> Outcome {
    let x = vm.exchange(request, response).unwrap_or_else(|e| {
        panic!(
            "{}: the .wasm failed: {e}\nrequest: {request:?}",
            input.display()
        )
    });
    let critical = vm.log_messages(LogLevel::Critical);
    assert!(critical.is_empty(), "{}: {critical:?}", input.display());
    vm.clear_logs();
    x.outcome()
}

fn module() -> WasmModule {
    WasmModule::from_file(shim_support::wasm_path()).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn request_corpus_replays_through_the_wasm() {
    let started = Instant::now();
    let module = module();
    let mut vms: Vec<Option<Vm>> = format::REQUEST_CONFIGS.iter().map(|_| None).collect();
    let mut rng = SplitMix(SEED);
    let inputs = corpus("request");
    let mut answered = 0;
    for (path, bytes) in &inputs {
        let Some(case) = format::request_case(bytes) else {
            continue;
        };
        let vm = vms[case.config]
            .get_or_insert_with(|| vm(&module, format::REQUEST_CONFIGS[case.config]));
        let mut request = HttpMessage {
            // host-shim carries header values as strings: read lossily, as the glue does.
            headers: case
                .headers
                .iter()
                .map(|(k, v)| (k.clone(), String::from_utf8_lossy(v).into_owned()))
                .collect(),
            chunks: rechunk(&case.body, &mut rng),
            ..HttpMessage::default()
        };
        if case.trailers {
            request = request.trailers(vec![("x-trailer".into(), "1".into())]);
        }
        let (status, content_type, body) = case.response;
        let response = HttpMessage::response(status.parse().unwrap())
            .header("content-type", content_type)
            .chunks(format::chunks(body, case.chunk_seed));
        if matches!(run(vm, path, &request, &response), Outcome::Local { .. }) {
            answered += 1;
        }
    }
    eprintln!(
        "request: {} inputs through the .wasm in {:?}, {answered} answered by the filter",
        inputs.len(),
        started.elapsed()
    );
    // The sample reached the filter's decisions, not only its pass-through.
    assert!(
        answered * 10 >= inputs.len(),
        "{answered} of {}",
        inputs.len()
    );
}

#[test]
fn list_corpus_replays_through_the_wasm() {
    let started = Instant::now();
    let module = module();
    let mut vms: Vec<Option<Vm>> = format::LIST_CONFIGS.iter().map(|_| None).collect();
    let mut rng = SplitMix(SEED.rotate_left(17));
    let inputs = corpus("list");
    let (mut rewritten, mut answered) = (0, 0);
    for (path, bytes) in &inputs {
        let Some(case) = format::list_case(bytes) else {
            continue;
        };
        let vm =
            vms[case.config].get_or_insert_with(|| vm(&module, format::LIST_CONFIGS[case.config]));
        let mut request = HttpMessage::post("/mcp")
            .header("content-length", &case.request.len().to_string())
            .chunks(rechunk(&case.request, &mut rng));
        for (name, value) in &case.headers {
            request = request.header(name, value);
        }
        // The fuzzed chunking half the time, the generator's the other half.
        let pieces: Vec<Vec<u8>> = if rng.next_u64().is_multiple_of(2) {
            format::chunks(&case.body, case.chunk_seed)
                .into_iter()
                .map(<[u8]>::to_vec)
                .collect()
        } else {
            rechunk(&case.body, &mut rng)
        };
        let mut response = HttpMessage::response(200)
            .header("content-type", case.content_type)
            .chunks(pieces)
            .empty_final_chunk(case.empty_final_chunk);
        if case.content_type.starts_with("application/json") {
            response = response.header("content-length", &case.body.len().to_string());
        }
        if let Outcome::Upstream {
            rewritten: true, ..
        } = run(vm, path, &request, &response)
        {
            rewritten += 1;
        }
        if let Some(call) = &case.follow_up {
            let mut request = HttpMessage::post("/mcp").body(call.clone());
            for (name, value) in &case.headers {
                request = request.header(name, value);
            }
            let response = HttpMessage::response(200).header("content-type", "application/json");
            if matches!(run(vm, path, &request, &response), Outcome::Local { .. }) {
                answered += 1;
            }
        }
    }
    eprintln!(
        "list: {} inputs through the .wasm in {:?}, {rewritten} rewritten, {answered} follow-ups answered",
        inputs.len(),
        started.elapsed()
    );
    assert!(
        rewritten * 10 >= inputs.len(),
        "{rewritten} of {}",
        inputs.len()
    );
    assert!(answered > 0);
}
