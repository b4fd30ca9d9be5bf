//! `mcp-tool-search-embedder`: see `--help` and embedder/README.md.

use std::io::Write as _;
use std::process::ExitCode;
use std::sync::Arc;

use mcp_tool_search_embedder::cli::{self, Command, USAGE};
use mcp_tool_search_embedder::{router, serve, Embed, SentenceEncoder};

async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = ctrl_c => {},
                    _ = term.recv() => {},
                }
            }
            Err(_) => {
                let _ = ctrl_c.await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = ctrl_c.await;
    }
}

fn run(options: cli::Options) -> Result<(), String> {
    let (encoder, took) =
        SentenceEncoder::load_timed(&options.model_dir).map_err(|e| e.to_string())?;
    // One small batch so the first real request does not pay for first-touch allocations.
    encoder
        .embed(&["warm up".to_string()])
        .map_err(|e| format!("the model loaded but could not embed: {e}"))?;
    eprintln!(
        "loaded {} ({} dimensions) from {} in {} ms",
        options.settings.model_id,
        encoder.dimensions(),
        options.model_dir.display(),
        took.as_millis()
    );
    let workers = options.settings.workers;
    let queue = options.settings.queue;
    let cache_entries = options.settings.cache_entries;
    let app = router(Arc::new(encoder), options.settings).map_err(|e| e.to_string())?;

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("could not start the async runtime: {e}"))?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(options.listen)
            .await
            .map_err(|e| format!("cannot listen on {}: {e}", options.listen))?;
        let addr = listener
            .local_addr()
            .map_err(|e| format!("cannot read the bound address: {e}"))?;
        eprintln!(
            "{workers} inference thread(s), queue of {queue}, cache of {cache_entries} vectors{}",
            if cache_entries == 0 {
                " (disabled)"
            } else {
                ""
            }
        );
        let mut stdout = std::io::stdout().lock();
        writeln!(stdout, "listening on {addr}")
            .and_then(|()| stdout.flush())
            .map_err(|e| format!("cannot write to stdout: {e}"))?;
        drop(stdout);
        serve(listener, app, shutdown_signal())
            .await
            .map_err(|e| format!("server failed: {e}"))
    })
}

fn main() -> ExitCode {
    match cli::parse(std::env::args().skip(1)) {
        Ok(Command::Help) => {
            print!("{USAGE}");
            ExitCode::SUCCESS
        }
        Ok(Command::Serve(options)) => match run(options) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("mcp-tool-search-embedder: {e}");
                ExitCode::FAILURE
            }
        },
        Err(e) => {
            eprintln!("mcp-tool-search-embedder: {e}\n\n{USAGE}");
            ExitCode::from(2)
        }
    }
}
