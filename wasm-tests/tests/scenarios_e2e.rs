//! The shared scenarios (`filter/core/tests/support/scenarios.rs`) in real Envoy: the third
//! driver after the native core and host-shim. Each exchange is a raw HTTP/1.1 request to Envoy
//! with the filter, in front of an upstream that answers what the scenario says (status,
//! content type, body pieces) and records the requests it received whole.
//!
//! Needs Envoy and the built filter (`make test` provides both).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

#[path = "../../filter/core/tests/support/mod.rs"]
mod native;

use mcp_tool_search_core::{Event, RequestHead, STATS};
use mcp_tool_search_wasm_tests::harness::{
    self, raw_exchange, Envoy, EnvoyOptions, FilterOptions, TestDir,
};
use mcp_tool_search_wasm_tests::http1::Request;
use native::scenarios as support_scenarios;
use native::Outcome;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

crate::scenarios!(EnvoyDriver);

/// What the upstream answers next, and the request bodies it received whole.
#[derive(Default)]
struct Script {
    response: (String, String, Vec<Vec<u8>>),
    received: Vec<Vec<u8>>,
}

/// An upstream on loopback that answers every request with the scripted response.
struct Upstream {
    addr: SocketAddr,
    script: Arc<Mutex<Script>>,
}

impl Upstream {
    fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let script = Arc::new(Mutex::new(Script::default()));
        let shared = Arc::clone(&script);
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(conn) = conn else { return };
                let script = Arc::clone(&shared);
                std::thread::spawn(move || serve(conn, &script));
            }
        });
        Upstream { addr, script }
    }
}

/// One request on a connection (then closed): read whole, recorded, answered.
fn serve(conn: TcpStream, script: &Mutex<Script>) {
    let mut reader = BufReader::new(conn.try_clone().unwrap());
    let mut length = None;
    let mut chunked = false;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let lower = line.to_ascii_lowercase();
        if let Some(v) = lower.strip_prefix("content-length:") {
            length = v.trim().parse::<usize>().ok();
        }
        if lower.starts_with("transfer-encoding:") && lower.contains("chunked") {
            chunked = true;
        }
    }
    let mut body = Vec::new();
    if chunked {
        loop {
            let mut size = String::new();
            if reader.read_line(&mut size).unwrap_or(0) == 0 {
                return;
            }
            let Ok(n) = usize::from_str_radix(size.trim(), 16) else {
                return;
            };
            let mut chunk = vec![0; n + 2];
            if reader.read_exact(&mut chunk).is_err() {
                return;
            }
            if n == 0 {
                break;
            }
            body.extend_from_slice(&chunk[..n]);
        }
    } else if let Some(n) = length {
        body.resize(n, 0);
        if reader.read_exact(&mut body).is_err() {
            return;
        }
    }
    let (status, content_type, chunks) = {
        let mut s = script.lock().unwrap();
        s.received.push(body);
        s.response.clone()
    };
    let mut out = conn;
    let mut head = format!("HTTP/1.1 {status} X\r\nconnection: close\r\n");
    if !content_type.is_empty() {
        head.push_str(&format!("content-type: {content_type}\r\n"));
    }
    if content_type.starts_with("application/json") || chunks.is_empty() {
        let len: usize = chunks.iter().map(Vec::len).sum();
        head.push_str(&format!("content-length: {len}\r\n\r\n"));
        let _ = out.write_all(head.as_bytes());
        let _ = out.write_all(&chunks.concat());
    } else {
        head.push_str("transfer-encoding: chunked\r\n\r\n");
        let _ = out.write_all(head.as_bytes());
        for c in &chunks {
            let _ = out.write_all(format!("{:x}\r\n", c.len()).as_bytes());
            let _ = out.write_all(c);
            let _ = out.write_all(b"\r\n");
            let _ = out.flush();
        }
        let _ = out.write_all(b"0\r\n\r\n");
    }
    let _ = out.flush();
}

/// A worker of the filter in real Envoy: Envoy (two workers, one shared catalog) and the
/// scripted upstream. Two drivers made by `two_workers` share one Envoy.
struct EnvoyDriver {
    stack: Arc<(Envoy, Upstream, TestDir)>,
}

impl EnvoyDriver {
    fn envoy(&self) -> &Envoy {
        &self.stack.0
    }

    /// The sum of the filter's counters named in `names`: one read of Envoy's admin stats.
    fn counters(&self, names: &[&str]) -> u64 {
        let stats = self.envoy().stats("mcp_tool_search").unwrap();
        names
            .iter()
            .map(|name| {
                let full = format!("mcp_tool_search.{name}");
                stats
                    .iter()
                    .filter(|(k, _)| k.ends_with(&full))
                    .map(|(_, v)| *v)
                    .sum::<u64>()
            })
            .sum()
    }
}

fn request_bytes(addr: SocketAddr, head: &RequestHead, body: &[u8]) -> Vec<u8> {
    let mut req = Request::builder(&head.method, &head.path).header("host", &addr.to_string());
    if let Some(a) = &head.accept {
        req = req.header("accept", a);
    }
    if let Some(s) = &head.session_id {
        req = req.header("mcp-session-id", s);
    }
    for v in &head.mcp.method {
        req = req.header("mcp-method", v);
    }
    for v in &head.mcp.name {
        req = req.header("mcp-name", v);
    }
    for v in &head.mcp.protocol_version {
        req = req.header("mcp-protocol-version", v);
    }
    if !body.is_empty() {
        req = req.header("content-type", "application/json");
    }
    req.body(body).bytes
}

impl support_scenarios::Driver for EnvoyDriver {
    fn with_config(config: &str) -> Self {
        let dir = TestDir::new("envoy_scenario").unwrap();
        let upstream = Upstream::start();
        let filter = FilterOptions {
            wasm: harness::filter_wasm().unwrap_or_else(|e| panic!("{e}")),
            config_json: config.to_owned(),
        };
        let mut opts = EnvoyOptions::new(upstream.addr, Some(filter));
        // The native driver's namespace, so that answers naming it agree.
        opts.route_namespace = Some("upstream".to_owned());
        opts.catch_all_route = true;
        let envoy = Envoy::start(&opts, &dir).unwrap_or_else(|e| panic!("{e}"));
        EnvoyDriver {
            stack: Arc::new((envoy, upstream, dir)),
        }
    }

    fn two_workers(config: &str) -> (Self, Self) {
        let first = EnvoyDriver::with_config(config);
        let second = EnvoyDriver {
            stack: Arc::clone(&first.stack),
        };
        (first, second)
    }

    fn exchange(
        &mut self,
        head: RequestHead,
        request: &[u8],
        response: (&str, &str, &[&[u8]]),
    ) -> Outcome {
        let (status, content_type, chunks) = response;
        let upstream = &self.stack.1;
        let before = {
            let mut s = upstream.script.lock().unwrap();
            s.response = (
                status.to_owned(),
                content_type.to_owned(),
                chunks.iter().map(|c| c.to_vec()).collect(),
            );
            s.received.len()
        };
        let addr = self.envoy().listener;
        let reply = raw_exchange(addr, &request_bytes(addr, &head, request)).unwrap();
        let reached = upstream.script.lock().unwrap().received.len() > before;
        if reached {
            let rewritten = reply.body != chunks.concat();
            return Outcome::Upstream {
                body: reply.body,
                rewritten,
            };
        }
        let headers = reply
            .headers()
            .map(|(k, v)| (k.to_ascii_lowercase(), v.to_owned()))
            .filter(|(k, _)| k == "content-type" || k == "mcp-session-id")
            .collect();
        Outcome::Local {
            status: u32::from(reply.status),
            headers,
            body: reply.body,
        }
    }

    fn count(&self, event: Event) -> u64 {
        self.counters(&[event.stat().0])
    }

    fn events_total(&self) -> u64 {
        self.counters(STATS)
    }
}

/// The listener is reached; Envoy serves the driver's own scripted upstream.
#[test]
fn the_driver_reaches_its_upstream() {
    let mut d = <EnvoyDriver as support_scenarios::Driver>::with_config("{}");
    let out = support_scenarios::Driver::exchange(
        &mut d,
        native::post("/other"),
        b"{}",
        ("200", "text/plain", &[b"hello"]),
    );
    assert_eq!(
        out,
        Outcome::Upstream {
            body: b"hello".to_vec(),
            rewritten: false
        }
    );
}
