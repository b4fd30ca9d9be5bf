//! The OpenAI wire format over real HTTP: the in-process server with the real model, the
//! binary as an operator runs it, and the bounded queue with a stand-in model.
// Test code: helpers outside #[test] functions may unwrap and panic too.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use base64::Engine as _;
use common::{encoder, max_diff, norm, post, request, start, vectors, Server};
use mcp_tool_search_embedder::{Embed, EmbedError, Embedded, Settings};
use serde_json::json;

fn real_server(max_batch: usize) -> Server {
    start(
        encoder(),
        Settings {
            max_batch,
            ..Settings::default()
        },
    )
}

fn assert_error(
    response: &common::Response,
    status: u16,
    param: Option<&str>,
) -> serde_json::Value {
    assert_eq!(
        response.status,
        status,
        "{}",
        String::from_utf8_lossy(&response.body)
    );
    assert_eq!(response.header("content-type"), Some("application/json"));
    let body = response.json();
    let error = body["error"].as_object().expect("an OpenAI error object");
    assert!(!error["message"].as_str().unwrap().is_empty());
    assert!(error.contains_key("code"));
    assert_eq!(error["param"].as_str(), param, "param of {}", body);
    if status < 500 {
        assert_eq!(error["type"], "invalid_request_error");
    }
    body
}

#[test]
fn embeds_one_text_and_a_batch_in_the_openai_shape() {
    let server = real_server(64);
    let one = post(
        server.addr,
        &json!({"model": "all-MiniLM-L6-v2", "input": "This is an example sentence"}),
    );
    let body = one.json();
    assert_eq!(body["model"], "all-MiniLM-L6-v2");
    assert_eq!(body["usage"]["prompt_tokens"], 7);
    assert_eq!(body["usage"]["total_tokens"], 7);
    let single = vectors(&one);
    assert_eq!(single.len(), 1);
    assert_eq!(single[0].len(), 384);
    assert!((single[0][0] - 0.0677).abs() < 5e-4, "{}", single[0][0]);
    assert!((norm(&single[0]) - 1.0).abs() < 1e-5);

    // No model field, a list, encoding_format float: same vector at index 1.
    let batch = vectors(&post(
        server.addr,
        &json!({"input": ["a much longer first text so the example gets padded in this batch", "This is an example sentence"], "encoding_format": "float"}),
    ));
    assert_eq!(batch.len(), 2);
    assert!(max_diff(&batch[1], &single[0]) < 1e-5);

    // base64 (the OpenAI Python SDK's default) decodes to the same floats.
    let b64 = post(
        server.addr,
        &json!({"input": ["This is an example sentence"], "encoding_format": "base64"}),
    );
    assert_eq!(b64.status, 200);
    let text = b64.json()["data"][0]["embedding"]
        .as_str()
        .unwrap()
        .to_string();
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text)
        .unwrap();
    let decoded: Vec<f32> = bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    assert!(max_diff(&decoded, &single[0]) < 1e-6);
}

#[test]
fn health_and_models() {
    let server = real_server(64);
    let health = request(server.addr, "GET", "/health", b"");
    assert_eq!(health.status, 200);
    // The original fields unchanged, the cache's counters beside them.
    assert_eq!(
        health.json(),
        json!({"status": "ok", "model": "all-MiniLM-L6-v2", "dimensions": 384,
               "cache": {"capacity": 20000, "entries": 0, "hits": 0, "misses": 0}})
    );
    let models = request(server.addr, "GET", "/v1/models", b"");
    assert_eq!(models.status, 200);
    assert_eq!(models.json()["data"][0]["id"], "all-MiniLM-L6-v2");
}

#[test]
fn bad_requests_get_400_in_the_openai_error_shape() {
    let server = real_server(64);
    let cases: &[(&[u8], Option<&str>)] = &[
        (b"this is not json", None),
        (b"{\"input\": [\"unterminated\"", None),
        (b"[\"a\"]", None),
        (b"{}", Some("input")),
        (b"{\"model\": \"all-MiniLM-L6-v2\"}", Some("input")),
        (b"{\"input\": null}", Some("input")),
        (b"{\"input\": \"\"}", Some("input")),
        (b"{\"input\": []}", Some("input")),
        (b"{\"input\": [\"ok\", \"\"]}", Some("input")),
        (b"{\"input\": 42}", Some("input")),
        (b"{\"input\": {\"text\": \"a\"}}", Some("input")),
        (b"{\"input\": [\"a\", 7]}", Some("input")),
        (b"{\"input\": [[101, 102]]}", Some("input")),
        (b"{\"input\": [\"a\", null]}", Some("input")),
        (b"{\"input\": \"a\", \"model\": 3}", Some("model")),
        (
            b"{\"input\": \"a\", \"encoding_format\": \"int8\"}",
            Some("encoding_format"),
        ),
        (
            b"{\"input\": \"a\", \"dimensions\": 256}",
            Some("dimensions"),
        ),
    ];
    for (body, param) in cases {
        let response = request(server.addr, "POST", "/v1/embeddings", body);
        assert_error(&response, 400, *param);
    }
}

#[test]
fn too_many_inputs_get_413_and_an_unknown_model_404() {
    let server = real_server(4);
    let ok = post(server.addr, &json!({"input": ["a", "b", "c", "d"]}));
    assert_eq!(vectors(&ok).len(), 4);
    let big = post(server.addr, &json!({"input": ["a", "b", "c", "d", "e"]}));
    let body = assert_error(&big, 413, Some("input"));
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("at most 4"));

    let unknown = post(
        server.addr,
        &json!({"model": "text-embedding-3-small", "input": "a"}),
    );
    let body = assert_error(&unknown, 404, Some("model"));
    assert_eq!(body["error"]["code"], "model_not_found");

    let huge_body = json!({"input": "word ".repeat(1_000_000)});
    assert_error(&post(server.addr, &huge_body), 413, Some("input"));

    let path = request(server.addr, "POST", "/v1/nothing", b"{}");
    assert_eq!(
        assert_error(&path, 404, None)["error"]["code"],
        "unknown_url"
    );
    let method = request(server.addr, "GET", "/v1/embeddings", b"");
    assert_error(&method, 405, None);
}

/// A stand-in model that holds every batch until the test opens the gate.
struct Gate {
    open: Mutex<bool>,
    cv: Condvar,
    entered: AtomicUsize,
}

impl Embed for Gate {
    fn dimensions(&self) -> usize {
        3
    }
    fn embed(&self, texts: &[String]) -> Result<Embedded, EmbedError> {
        self.entered.fetch_add(1, Ordering::SeqCst);
        let mut open = self.open.lock().unwrap();
        while !*open {
            open = self.cv.wait(open).unwrap();
        }
        Ok(Embedded {
            vectors: texts.iter().map(|_| vec![0.0, 1.0, 0.0]).collect(),
            tokens: texts.len(),
        })
    }
}

#[test]
fn a_full_queue_answers_503_with_retry_after_and_recovers() {
    let gate = Arc::new(Gate {
        open: Mutex::new(false),
        cv: Condvar::new(),
        entered: AtomicUsize::new(0),
    });
    let server = start(
        gate.clone(),
        Settings {
            workers: 1,
            queue: 1,
            ..Settings::default()
        },
    );
    let addr = server.addr;
    // One request in the worker...
    let running = std::thread::spawn(move || post(addr, &json!({"input": "first"})));
    let deadline = Instant::now() + Duration::from_secs(10);
    while gate.entered.load(Ordering::SeqCst) == 0 {
        assert!(
            Instant::now() < deadline,
            "the worker never took the first request"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    // ...then two more: one fits in the queue, the other is refused at once. Which one is
    // which depends on arrival order, so take whichever answers first: it must be the 503.
    let (tx, rx) = std::sync::mpsc::channel();
    let senders: Vec<_> = ["second", "third"]
        .into_iter()
        .map(|text| {
            let tx = tx.clone();
            std::thread::spawn(move || tx.send(post(addr, &json!({"input": text}))).unwrap())
        })
        .collect();
    let refused = rx.recv_timeout(Duration::from_secs(30)).unwrap();
    let body = assert_error(&refused, 503, None);
    assert_eq!(body["error"]["type"], "server_error");
    assert_eq!(body["error"]["code"], "overloaded");
    assert_eq!(refused.header("retry-after"), Some("1"));

    *gate.open.lock().unwrap() = true;
    gate.cv.notify_all();
    assert_eq!(vectors(&running.join().unwrap()), vec![vec![0.0, 1.0, 0.0]]);
    let queued = rx.recv_timeout(Duration::from_secs(30)).unwrap();
    assert_eq!(vectors(&queued).len(), 1);
    for sender in senders {
        sender.join().unwrap();
    }
    assert_eq!(vectors(&post(addr, &json!({"input": ["again"]}))).len(), 1);
}

/// Kills the child process on drop, so a failing assertion leaves nothing running.
struct Kill(Child);

impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn the_binary_prints_its_address_and_serves() {
    let mut child = Kill(
        Command::new(env!("CARGO_BIN_EXE_mcp-tool-search-embedder"))
            .args([
                "--listen",
                "127.0.0.1:0",
                "--max-batch",
                "2",
                "--model-id",
                "mini",
                "--cache-entries",
                "5",
            ])
            .arg("--model-dir")
            .arg(common::model_dir())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap(),
    );
    let mut line = String::new();
    BufReader::new(child.0.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| {
            panic!("unexpected first line {line:?} (is the model there? `make model`)")
        })
        .parse()
        .unwrap();
    let health = request(addr, "GET", "/health", b"");
    assert_eq!(health.json()["model"], "mini");
    assert_eq!(health.json()["cache"]["capacity"], 5);
    let v = vectors(&post(
        addr,
        &json!({"model": "mini", "input": ["This is an example sentence", "b"]}),
    ));
    assert!((v[0][0] - 0.0677).abs() < 5e-4);
    let again = vectors(&post(
        addr,
        &json!({"model": "mini", "input": ["This is an example sentence", "b"]}),
    ));
    assert_eq!(again, v);
    let cache = request(addr, "GET", "/health", b"").json()["cache"].clone();
    assert_eq!(
        cache,
        json!({"capacity": 5, "entries": 2, "hits": 2, "misses": 2})
    );
    assert_error(
        &post(addr, &json!({"input": ["a", "b", "c"]})),
        413,
        Some("input"),
    );
    assert_error(
        &post(addr, &json!({"model": "all-MiniLM-L6-v2", "input": "a"})),
        404,
        Some("model"),
    );
}

#[test]
fn the_binary_explains_a_missing_model() {
    let output = Command::new(env!("CARGO_BIN_EXE_mcp-tool-search-embedder"))
        .args(["--listen", "127.0.0.1:0", "--model-dir"])
        .arg(std::env::temp_dir().join("mcp-tool-search-embedder-no-model"))
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(output.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("run `make model`"), "{stderr}");
}

/// A stand-in model that records every batch it is asked for and answers, per text, a vector
/// made of its length, first byte and a constant, so a misplaced vector shows.
#[derive(Default)]
struct Recorder {
    batches: Mutex<Vec<Vec<String>>>,
}

fn vector_of(text: &str) -> Vec<f32> {
    vec![text.len() as f32, f32::from(text.as_bytes()[0]), 1.0]
}

impl Embed for Recorder {
    fn dimensions(&self) -> usize {
        3
    }
    fn embed(&self, texts: &[String]) -> Result<Embedded, EmbedError> {
        self.batches.lock().unwrap().push(texts.to_vec());
        Ok(Embedded {
            vectors: texts.iter().map(|t| vector_of(t)).collect(),
            tokens: texts.iter().map(String::len).sum(),
        })
    }
}

impl Recorder {
    fn batches(&self) -> Vec<Vec<String>> {
        self.batches.lock().unwrap().clone()
    }
}

fn recorder_server(cache_entries: usize) -> (Arc<Recorder>, Server) {
    let recorder = Arc::new(Recorder::default());
    let server = start(
        recorder.clone(),
        Settings {
            cache_entries,
            ..Settings::default()
        },
    );
    (recorder, server)
}

fn cache_stats(server: &Server) -> serde_json::Value {
    request(server.addr, "GET", "/health", b"").json()["cache"].clone()
}

#[test]
fn a_repeated_request_is_answered_from_the_cache_without_the_model() {
    let (recorder, server) = recorder_server(100);
    let body = json!({"input": ["list pull requests", "send an email"]});
    let cold = post(server.addr, &body);
    assert_eq!(cold.json()["usage"]["prompt_tokens"], 31);
    let warm = post(server.addr, &body);
    assert_eq!(vectors(&warm), vectors(&cold));
    assert_eq!(
        recorder.batches(),
        vec![vec!["list pull requests", "send an email"]],
        "the second request never reached the model"
    );
    // The model read nothing for it; the rest of the shape is today's.
    let warm = warm.json();
    assert_eq!(
        warm["usage"],
        json!({"prompt_tokens": 0, "total_tokens": 0})
    );
    assert_eq!(warm["model"], "all-MiniLM-L6-v2");
    assert_eq!(
        cache_stats(&server),
        json!({"capacity": 100, "entries": 2, "hits": 2, "misses": 2})
    );
}

#[test]
fn a_mixed_batch_sends_only_its_distinct_misses_and_keeps_order() {
    let (recorder, server) = recorder_server(100);
    vectors(&post(server.addr, &json!({"input": ["bb", "dddd"]})));
    let texts = ["ccc", "bb", "eeeee", "ccc", "dddd", "a", "eeeee"];
    let response = post(
        server.addr,
        &json!({"input": texts, "encoding_format": "float"}),
    );
    let want: Vec<Vec<f32>> = texts.iter().map(|t| vector_of(t)).collect();
    assert_eq!(vectors(&response), want);
    assert_eq!(
        recorder.batches(),
        vec![vec!["bb", "dddd"], vec!["ccc", "eeeee", "a"]],
        "one batch of the distinct misses, in order of first appearance"
    );
    assert_eq!(response.json()["usage"]["prompt_tokens"], 3 + 5 + 1);
    // 2 cached + 2 repeats are hits; 2 + 3 texts reached the model.
    assert_eq!(
        cache_stats(&server),
        json!({"capacity": 100, "entries": 5, "hits": 4, "misses": 5})
    );
}

#[test]
fn the_cache_keeps_its_bound_and_evicts_the_least_recently_used() {
    let (recorder, server) = recorder_server(3);
    for text in ["a1", "b22", "c333", "d4444", "e55555"] {
        vectors(&post(server.addr, &json!({"input": text})));
    }
    assert_eq!(cache_stats(&server)["entries"], 3);
    let calls = recorder.batches().len();
    // The three most recent are kept...
    vectors(&post(
        server.addr,
        &json!({"input": ["e55555", "c333", "d4444"]}),
    ));
    assert_eq!(recorder.batches().len(), calls);
    // ...the older ones were evicted.
    vectors(&post(server.addr, &json!({"input": ["a1"]})));
    assert_eq!(recorder.batches().len(), calls + 1);
    assert_eq!(recorder.batches().last().unwrap(), &vec!["a1"]);
    assert_eq!(cache_stats(&server)["entries"], 3);
}

#[test]
fn cache_entries_0_disables_the_cache() {
    let (recorder, server) = recorder_server(0);
    let body = json!({"input": ["same", "same"]});
    let first = vectors(&post(server.addr, &body));
    assert_eq!(first, vec![vector_of("same"), vector_of("same")]);
    vectors(&post(server.addr, &body));
    assert_eq!(
        recorder.batches(),
        vec![vec!["same", "same"], vec!["same", "same"]],
        "without a cache every request reaches the model as sent"
    );
    assert_eq!(
        cache_stats(&server),
        json!({"capacity": 0, "entries": 0, "hits": 0, "misses": 0})
    );
}

/// The real model: a vector served from the cache is the very vector the model produced, bit
/// for bit (base64 carries the exact f32 bytes), and equal to the model's own output.
#[test]
fn cached_vectors_are_bit_identical_to_fresh_ones() {
    let server = real_server(64);
    let texts = [
        "Create an issue in a GitHub repository with a title, body and labels",
        "Send an email to a recipient with a subject and a body",
        "x",
    ];
    let body = json!({"input": texts, "encoding_format": "base64"});
    let cold = post(server.addr, &body).json();
    let warm = post(server.addr, &body).json();
    assert_eq!(cold["data"], warm["data"]);
    assert_eq!(warm["usage"]["prompt_tokens"], 0);
    let direct = encoder().embed(&texts.map(String::from)).unwrap().vectors;
    for (i, vector) in direct.iter().enumerate() {
        let bytes: Vec<u8> = vector.iter().flat_map(|x| x.to_le_bytes()).collect();
        assert_eq!(
            warm["data"][i]["embedding"],
            base64::engine::general_purpose::STANDARD.encode(bytes),
            "text {i}"
        );
    }
    // A cached text inside a batch of new ones comes back with its cached bits, in its place.
    let mixed = post(
        server.addr,
        &json!({"input": ["a new text", texts[1], "another new one"], "encoding_format": "base64"}),
    )
    .json();
    assert_eq!(mixed["data"][1]["embedding"], cold["data"][1]["embedding"]);
    assert_eq!(mixed["data"][1]["index"], 1);
    assert_eq!(
        cache_stats(&server),
        json!({"capacity": 20000, "entries": 5, "hits": 4, "misses": 5})
    );
}

/// A request of cached texts alone is answered by the handler, even while the only inference
/// thread is stuck in a long batch: it never queues.
#[test]
fn a_cached_request_does_not_wait_for_a_busy_worker() {
    let gate = Arc::new(Gate {
        open: Mutex::new(true),
        cv: Condvar::new(),
        entered: AtomicUsize::new(0),
    });
    let server = start(
        gate.clone(),
        Settings {
            workers: 1,
            queue: 1,
            ..Settings::default()
        },
    );
    let addr = server.addr;
    vectors(&post(addr, &json!({"input": ["cached one", "cached two"]})));
    *gate.open.lock().unwrap() = false;
    let busy = std::thread::spawn(move || post(addr, &json!({"input": ["a slow batch", "x"]})));
    let deadline = Instant::now() + Duration::from_secs(10);
    while gate.entered.load(Ordering::SeqCst) < 2 {
        assert!(Instant::now() < deadline, "the worker never took the batch");
        std::thread::sleep(Duration::from_millis(5));
    }
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(post(addr, &json!({"input": ["cached two", "cached one"]})));
    });
    let cached = rx.recv_timeout(Duration::from_secs(10));
    let entered = gate.entered.load(Ordering::SeqCst);
    // Release the worker before asserting, so a failure fails instead of hanging the shutdown.
    *gate.open.lock().unwrap() = true;
    gate.cv.notify_all();
    let cached = cached.expect("a cached request waited for the busy inference thread");
    assert_eq!(vectors(&cached).len(), 2);
    assert_eq!(entered, 2, "the cached request did not reach the model");
    assert_eq!(vectors(&busy.join().unwrap()).len(), 2);
}
