//! Shared by the embedder's integration tests: the real model, an in-process server and a
//! minimal HTTP/1.1 client (so the tests see exactly the bytes on the wire).
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use mcp_tool_search_embedder::{router, serve, Embed, SentenceEncoder, Settings};

/// The model directory: `$EMBEDDER_MODEL_DIR`, else `make model`'s place in the repository.
pub fn model_dir() -> PathBuf {
    match std::env::var_os("EMBEDDER_MODEL_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("..")
            .join(".cache/models/all-MiniLM-L6-v2"),
    }
}

/// The real all-MiniLM-L6-v2, loaded once per test binary. Fails (never skips) without it.
pub fn encoder() -> Arc<SentenceEncoder> {
    static ENCODER: OnceLock<Arc<SentenceEncoder>> = OnceLock::new();
    ENCODER
        .get_or_init(|| {
            let dir = model_dir();
            match SentenceEncoder::load(&dir) {
                Ok(e) => Arc::new(e),
                Err(e) => panic!(
                    "\n\nthe embedder tests need the real model: run `make model` in the repository \
                     root (or set EMBEDDER_MODEL_DIR).\n{e}\n\n"
                ),
            }
        })
        .clone()
}

/// A server running in this process on a free loopback port; stopped on drop.
pub struct Server {
    pub addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

pub fn start(backend: Arc<dyn Embed>, settings: Settings) -> Server {
    let app = router(backend, settings).unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let thread = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            ready_tx.send(listener.local_addr().unwrap()).unwrap();
            serve(listener, app, async {
                let _ = stopped.await;
            })
            .await
            .unwrap();
        });
    });
    let addr = ready_rx.recv_timeout(Duration::from_secs(10)).unwrap();
    Server {
        addr,
        stop: Some(stop),
        thread: Some(thread),
    }
}

/// A parsed HTTP response.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "status {} body is not JSON ({e}): {}",
                self.status,
                String::from_utf8_lossy(&self.body)
            )
        })
    }
}

/// One request on a fresh connection (`Connection: close`).
pub fn request(addr: SocketAddr, method: &str, path: &str, body: &[u8]) -> Response {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(120)))
        .unwrap();
    let head = format!(
        "{method} {path} HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\n\
         content-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    // A server may answer an oversized body (413) before reading it and close
    // (RFC 9110 §15.5.14): write while reading, as HTTP clients do, so the
    // answer is read whether or not the rest of the body was taken.
    let mut writer = stream.try_clone().unwrap();
    let mut sent = head.into_bytes();
    sent.extend_from_slice(body);
    let writing = std::thread::spawn(move || writer.write_all(&sent));
    let mut raw = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        match stream.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => raw.extend_from_slice(&chunk[..n]),
            // The reset that follows an early answer ends the stream once
            // that answer is in.
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset && !raw.is_empty() => break,
            Err(e) => panic!("reading the response: {e}"),
        }
    }
    let _ = writing.join();
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("no end of headers");
    let head = String::from_utf8(raw[..split].to_vec()).unwrap();
    let mut body = raw[split + 4..].to_vec();
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    if headers
        .iter()
        .any(|(k, v)| k == "transfer-encoding" && v.contains("chunked"))
    {
        body = dechunk(&body);
    }
    Response {
        status,
        headers,
        body,
    }
}

fn dechunk(mut raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let end = raw.windows(2).position(|w| w == b"\r\n").unwrap();
        let size =
            usize::from_str_radix(std::str::from_utf8(&raw[..end]).unwrap().trim(), 16).unwrap();
        raw = &raw[end + 2..];
        if size == 0 {
            return out;
        }
        out.extend_from_slice(&raw[..size]);
        raw = &raw[size + 2..];
    }
}

pub fn post(addr: SocketAddr, body: &serde_json::Value) -> Response {
    request(addr, "POST", "/v1/embeddings", body.to_string().as_bytes())
}

/// The vectors of a successful float response, checked for shape on the way.
pub fn vectors(response: &Response) -> Vec<Vec<f32>> {
    assert_eq!(
        response.status,
        200,
        "{}",
        String::from_utf8_lossy(&response.body)
    );
    let v = response.json();
    assert_eq!(v["object"], "list");
    v["data"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
        .map(|(i, item)| {
            assert_eq!(item["object"], "embedding");
            assert_eq!(item["index"], i);
            item["embedding"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_f64().unwrap() as f32)
                .collect()
        })
        .collect()
}

pub fn norm(v: &[f32]) -> f32 {
    v.iter().map(|x| x * x).sum::<f32>().sqrt()
}

pub fn max_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}
