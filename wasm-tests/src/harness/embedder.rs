//! The embeddings sidecar (`mcp-tool-search-embedder`) as a child process, and a second Envoy
//! in front of it that injects faults.

use super::{
    await_listening, embedder_bin, err, http_post, model_dir, next_id, port_open, wait_until,
    Envoy, Proc, Result, TestDir,
};
use crate::envoy_config::{Bootstrap, Cluster, HttpFilter, Listener, Route};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A running (or stopped) `mcp-tool-search-embedder`: all-MiniLM-L6-v2 behind an
/// OpenAI-compatible `POST /v1/embeddings`.
#[derive(Debug)]
pub struct Embedder {
    proc: Option<Proc>,
    /// Where it listens: chosen by the kernel at the first start, kept by [`Embedder::restart`].
    pub addr: SocketAddr,
    bin: PathBuf,
    model_dir: PathBuf,
    dir: PathBuf,
    /// The stderr of the current (or last) run.
    pub stderr_path: PathBuf,
}

impl Embedder {
    /// How long a start may take (model load and warm-up on a busy machine).
    const START_TIMEOUT: Duration = Duration::from_secs(60);

    /// Start it on a kernel-chosen port and wait for its `listening on` line.
    pub fn start(dir: &TestDir) -> Result<Self> {
        let bin = embedder_bin()?;
        let model_dir = model_dir()?;
        let (proc, addr, stderr_path) = Self::spawn(&bin, &model_dir, "127.0.0.1:0", dir.path())?;
        Ok(Self {
            proc: Some(proc),
            addr,
            bin,
            model_dir,
            dir: dir.path().to_path_buf(),
            stderr_path,
        })
    }

    fn spawn(
        bin: &Path,
        model_dir: &Path,
        listen: &str,
        dir: &Path,
    ) -> Result<(Proc, SocketAddr, PathBuf)> {
        let stderr_path = dir.join(format!("embedder-{}.stderr", next_id()));
        let mut cmd = Command::new(bin);
        cmd.arg("--model-dir")
            .arg(model_dir)
            .arg("--listen")
            .arg(listen)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr_path)?);
        let mut proc = Proc::spawn("mcp-tool-search-embedder", cmd)?;
        let addr = await_listening(&mut proc, &stderr_path, Self::START_TIMEOUT)?;
        Ok((proc, addr, stderr_path))
    }

    /// Kill it (SIGKILL: nothing in flight finishes) and wait until its port refuses
    /// connections. Idempotent.
    pub fn stop(&mut self) {
        if let Some(mut proc) = self.proc.take() {
            proc.kill();
        }
        let _ = wait_until(
            "the sidecar's port to close",
            Duration::from_secs(5),
            || (!port_open(self.addr)).then_some(()),
        );
    }

    /// Start it again on the same address (after [`Embedder::stop`], or stopping it first).
    pub fn restart(&mut self) -> Result<()> {
        self.stop();
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            match Self::spawn(
                &self.bin,
                &self.model_dir,
                &self.addr.to_string(),
                &self.dir,
            ) {
                Ok((proc, addr, stderr_path)) => {
                    if addr != self.addr {
                        return err(format!(
                            "the sidecar came back on {addr}, not {}",
                            self.addr
                        ));
                    }
                    self.proc = Some(proc);
                    self.stderr_path = stderr_path;
                    return Ok(());
                }
                // The port may be held for a moment by something else: try again.
                Err(e) if Instant::now() >= deadline => return Err(e),
                Err(_) => std::thread::sleep(Duration::from_millis(200)),
            }
        }
    }

    /// Is it running?
    pub fn running(&mut self) -> bool {
        self.proc.as_mut().is_some_and(|p| p.exited().is_none())
    }

    /// `http://ADDR/v1/embeddings`, bypassing Envoy.
    pub fn url(&self) -> String {
        format!("http://{}/v1/embeddings", self.addr)
    }
}

/// The runtime key of the front's abort percentage (Envoy's fault filter default).
pub const FRONT_ABORT_PERCENT: &str = "fault.http.abort.abort_percent";
/// The runtime key of the front's delay percentage (Envoy's fault filter default).
pub const FRONT_DELAY_PERCENT: &str = "fault.http.delay.fixed_delay_percent";
/// The runtime key of the share of requests answered with [`GARBAGE_JSON`].
pub const FRONT_GARBAGE_JSON_PERCENT: &str = "front.garbage_json";
/// The runtime key of the share of requests answered with [`GARBAGE_TEXT`].
pub const FRONT_GARBAGE_TEXT_PERCENT: &str = "front.garbage_text";
/// A 200 JSON answer that is not the OpenAI embeddings shape.
pub const GARBAGE_JSON: &str = r#"{"object":"list","message":"this is not an embeddings API"}"#;
/// A 200 text answer.
pub const GARBAGE_TEXT: &str = "hello from a server that does not speak embeddings";

/// What the front does to each request, in percent of requests (changed at run time with
/// [`EmbeddingsFront::set`] through the front's admin runtime layer). Abort and delay come from
/// Envoy's real `envoy.filters.http.fault`; garbage from `direct_response` routes chosen by
/// `runtime_fraction`; everything else is proxied to the sidecar.
#[derive(Debug, Clone)]
pub struct FrontOptions {
    /// The sidecar.
    pub backend: SocketAddr,
    /// Answered 500 by the fault filter.
    pub abort_percent: u32,
    /// Held for `delay` by the fault filter, then proxied.
    pub delay_percent: u32,
    pub delay: Duration,
    /// Answered 200 [`GARBAGE_JSON`].
    pub garbage_json_percent: u32,
    /// Answered 200 [`GARBAGE_TEXT`].
    pub garbage_text_percent: u32,
}

impl FrontOptions {
    /// Everything proxied to `backend`, untouched.
    pub fn new(backend: SocketAddr) -> Self {
        Self {
            backend,
            abort_percent: 0,
            delay_percent: 0,
            delay: Duration::from_secs(2),
            garbage_json_percent: 0,
            garbage_text_percent: 0,
        }
    }
}

/// The front's bootstrap: admin and listener on port 0, a runtime admin layer.
pub fn embeddings_front_yaml(opts: &FrontOptions) -> String {
    let routes = vec![
        Route::prefix("/")
            .runtime_fraction(opts.garbage_json_percent, FRONT_GARBAGE_JSON_PERCENT)
            .direct(200, Some(GARBAGE_JSON))
            .response_header("content-type", "application/json"),
        Route::prefix("/")
            .runtime_fraction(opts.garbage_text_percent, FRONT_GARBAGE_TEXT_PERCENT)
            .direct(200, Some(GARBAGE_TEXT)),
        Route::prefix("/").to_cluster_untimed("sidecar"),
    ];
    let listener = Listener::new("embeddings_front")
        .route_config_name("front")
        .routes(routes)
        .filter(HttpFilter::fault(
            opts.abort_percent,
            opts.delay_percent,
            opts.delay.as_secs_f64(),
        ))
        .filter(HttpFilter::router());
    Bootstrap::new()
        .with_runtime_admin_layer()
        .listener(listener)
        .cluster(Cluster::new("sidecar", opts.backend))
        .to_yaml()
}

/// A second Envoy between the filter's `embeddings` cluster and the sidecar, injecting faults.
#[derive(Debug)]
pub struct EmbeddingsFront {
    pub envoy: Envoy,
}

impl EmbeddingsFront {
    pub fn start(opts: &FrontOptions, dir: &TestDir) -> Result<Self> {
        let envoy =
            Envoy::start_yaml(&embeddings_front_yaml(opts), "http:debug,router:debug", dir)?;
        Ok(Self { envoy })
    }

    /// Where the filter's `embeddings` cluster should point.
    pub fn addr(&self) -> SocketAddr {
        self.envoy.listener
    }

    /// Sets a runtime key (one of the `FRONT_*` constants) through the admin layer; takes
    /// effect for the next request.
    pub fn set(&self, key: &str, percent: u32) -> Result<()> {
        match http_post(
            self.envoy.admin,
            &format!("/runtime_modify?{key}={percent}"),
        )? {
            (200, _) => Ok(()),
            (status, body) => err(format!("runtime_modify {key}={percent}: {status} {body}")),
        }
    }
}
