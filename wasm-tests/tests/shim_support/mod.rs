//! The built `.wasm` driven through host-shim the way `filter/core/tests/support` drives the
//! native core (`http::exchange`): same `exchange(...)` signature, same `Outcome`, so a scenario
//! reads the same either way and its expected output can be compared with the native one. Every
//! exchange also checks what only a host can see: the `content-length` the client gets, the
//! request the upstream gets, and that a local reply never reaches the upstream whole.
#![allow(
    dead_code,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

/// The native driver, compiled here too so both sides run in one test.
#[path = "../../../filter/core/tests/support/mod.rs"]
pub mod native;

use host_shim::{Exchange, Headers, Host, HttpMessage, Outcome, Vm, VmOptions};
use mcp_tool_search_core::{Event, RequestHead};
use native::Outcome as NativeOutcome;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The `.wasm` under test: `FILTER_WASM` (what `make test` sets), else the workspace's release
/// build. Missing or older than the filter's sources is a failure that says what to run.
pub fn wasm_path() -> &'static Path {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let path = mcp_tool_search_wasm_tests::harness::filter_wasm_path();
        let Ok(meta) = std::fs::metadata(&path) else {
            panic!(
                "{} is missing: run `make wasm` first (`make test` does it for you)",
                path.display()
            );
        };
        let built = meta.modified().unwrap();
        let mut dirs = vec![root.join("filter/src"), root.join("filter/core/src")];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let entry = entry.unwrap();
                if entry.file_type().unwrap().is_dir() {
                    dirs.push(entry.path());
                    continue;
                }
                let changed = entry.metadata().unwrap().modified().unwrap();
                assert!(
                    changed <= built,
                    "{} is older than {}: run `make wasm` first (`make test` does it for you)",
                    path.display(),
                    entry.path().display()
                );
            }
        }
        path
    })
}

/// The namespace the native `TestEnv` uses, given to the `.wasm` as the upstream cluster.
pub const NAMESPACE: &str = "upstream";

pub fn options(config: &str) -> VmOptions {
    VmOptions::new(config).stream_property(&["xds", "cluster_name"], NAMESPACE)
}

/// A worker running the `.wasm`, on a host (Envoy process) it may share with other workers.
pub struct ShimEnv {
    pub host: Host,
    pub vm: Vm,
}

impl ShimEnv {
    pub fn new(config: &str) -> Self {
        ShimEnv::on(&Host::new(), options(config))
    }

    /// A second worker of the same Envoy.
    pub fn sharing(config: &str, other: &ShimEnv) -> Self {
        ShimEnv::on(&other.host, options(config))
    }

    pub fn on(host: &Host, options: VmOptions) -> Self {
        let vm = Vm::load(host, wasm_path(), options).unwrap_or_else(|e| panic!("{e}"));
        ShimEnv {
            host: host.clone(),
            vm,
        }
    }

    /// A stat of the filter (`mcp_tool_search.NAME`).
    pub fn stat(&self, name: &str) -> u64 {
        self.host.counter(&format!("mcp_tool_search.{name}"))
    }

    /// How many times the filter counted `event` (the native `TestEnv::count`). Stats sum
    /// `ToolsHidden`: read `stat("tools_hidden")` for it.
    pub fn count(&self, event: Event) -> u64 {
        self.stat(event.stat().0)
    }

    /// Every stat of the filter, by short name.
    pub fn stats(&self) -> Vec<(String, u64)> {
        self.host
            .metrics()
            .keys()
            .filter_map(|k| k.strip_prefix("mcp_tool_search.").map(str::to_string))
            .map(|k| {
                let v = self.stat(&k);
                (k, v)
            })
            .collect()
    }
}

/// The request a client sends for `head` and `body` (one piece, as the native driver gives it).
pub fn request(head: &RequestHead, body: &[u8]) -> HttpMessage {
    let mut m = HttpMessage::request(&head.method, &head.path)
        // Clients ask for compression; the filter must strip it where it rewrites.
        .header("accept-encoding", "gzip, deflate");
    let optional = [
        ("accept", &head.accept),
        ("mcp-session-id", &head.session_id),
    ];
    for (name, value) in optional {
        if let Some(v) = value {
            m = m.header(name, v);
        }
    }
    let mirrored = [
        ("mcp-method", &head.mcp.method),
        ("mcp-name", &head.mcp.name),
        ("mcp-protocol-version", &head.mcp.protocol_version),
    ];
    for (name, values) in mirrored {
        for v in values {
            m = m.header(name, v);
        }
    }
    if !body.is_empty() {
        m = m
            .header("content-type", "application/json")
            .header("content-length", &body.len().to_string());
    }
    m.body(body.to_vec())
}

/// The upstream's response: status, content type (none if empty) and body pieces. JSON
/// responses carry `content-length`, as the SDK servers send them.
pub fn response(status: &str, content_type: &str, chunks: &[&[u8]]) -> HttpMessage {
    let mut m = HttpMessage::response(status.parse().unwrap());
    if !content_type.is_empty() {
        m = m.header("content-type", content_type);
    }
    if content_type.starts_with("application/json") {
        let len: usize = chunks.iter().map(|c| c.len()).sum();
        m = m.header("content-length", &len.to_string());
    }
    m.chunks(chunks.iter().copied())
}

/// Runs one exchange through the `.wasm`; the same signature and result as the native
/// `support::exchange`.
pub fn exchange(
    env: &mut ShimEnv,
    head: RequestHead,
    request_body: &[u8],
    upstream: (&str, &str, &[&[u8]]),
) -> NativeOutcome {
    let (status, content_type, chunks) = upstream;
    exchange_full(
        env,
        &request(&head, request_body),
        &response(status, content_type, chunks),
    )
    .0
}

/// Runs one exchange and checks what Envoy guarantees a client and an upstream must see.
pub fn exchange_full(
    env: &mut ShimEnv,
    request: &HttpMessage,
    response: &HttpMessage,
) -> (NativeOutcome, Exchange) {
    let x = env
        .vm
        .exchange(request, response)
        .unwrap_or_else(|e| panic!("{e}"));
    check_envoy_invariants(request, response, &x);
    let outcome = match x.outcome() {
        Outcome::Local {
            status,
            headers,
            body,
        } => NativeOutcome::Local {
            status,
            headers,
            body,
        },
        Outcome::Upstream { body, rewritten } => NativeOutcome::Upstream { body, rewritten },
        other => panic!(
            "the exchange did not complete: {other:?}\nevents: {:#?}",
            x.events
        ),
    };
    (outcome, x)
}

fn check_envoy_invariants(request: &HttpMessage, response: &HttpMessage, x: &Exchange) {
    // A client must never get a content-length that disagrees with the body.
    if let Some(len) = x.client.header("content-length") {
        assert_eq!(
            len.parse::<usize>().unwrap(),
            x.client.body().len(),
            "content-length sent with a body of another size; events: {:#?}",
            x.events
        );
    }
    assert!(x.client.end_of_stream, "the client got no end of stream");
    assert!(!x.client.reset, "the client's stream was reset");
    if x.local_reply.is_some() {
        // The upstream may have had the headers, never the whole request.
        assert!(
            !x.upstream.end_of_stream,
            "a locally answered request reached upstream"
        );
        if x.upstream.headers.is_some() {
            assert!(x.upstream.reset, "the upstream request was left open");
        }
    } else {
        assert!(x.upstream.end_of_stream);
        // A request whose body the filter replaced must not go up with the old length.
        if let Some(len) = x.upstream.header("content-length") {
            assert_eq!(len.parse::<usize>().unwrap(), x.upstream.body().len());
        }
        if x.upstream.body() != request.body_bytes() {
            assert!(
                x.upstream.header("content-length").is_none()
                    || request.header_value("content-length").is_none()
            );
        }
        assert!(x.upstream_response.is_some());
        // The response status and other headers pass unchanged.
        assert_eq!(
            x.client.status(),
            response.header_value(":status").map(|s| s.parse().unwrap())
        );
    }
}

/// The upstream request's headers minus what Envoy adds before any filter.
pub fn upstream_headers(x: &Exchange) -> Headers {
    x.upstream
        .headers
        .clone()
        .unwrap_or_default()
        .into_iter()
        .filter(|(k, _)| k != "x-forwarded-proto" && k != "x-request-id")
        .collect()
}

/// `out` with every search id written `*`.
pub fn unidentified(out: &native::Outcome) -> native::Outcome {
    let blank = |body: &[u8]| {
        let text = String::from_utf8_lossy(body);
        let mut parts = text.split("\"search_id\":\"");
        let mut blanked = parts.next().unwrap_or_default().to_string();
        for part in parts {
            let rest = part.split_once('"').map_or("", |(_, rest)| rest);
            blanked.push_str("\"search_id\":\"*\"");
            blanked.push_str(rest);
        }
        blanked.into_bytes()
    };
    match out {
        native::Outcome::Local {
            status,
            headers,
            body,
        } => native::Outcome::Local {
            status: *status,
            headers: headers.clone(),
            body: blank(body),
        },
        native::Outcome::Upstream { body, rewritten } => native::Outcome::Upstream {
            body: blank(body),
            rewritten: *rewritten,
        },
        native::Outcome::Held => native::Outcome::Held,
    }
}
