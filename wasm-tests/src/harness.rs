//! Process harness for end-to-end tests: child processes that die with the test (process group
//! killed on Drop, even while a test panics), per-test scratch directories, the catalog MCP
//! server, Envoy (the e2e bootstrap, with or without the Wasm filter, or any bootstrap), and the
//! embeddings sidecar with a fault-injecting Envoy in front of it.
//!
//! Spawn processes from the test's own thread (not from a short-lived helper thread): on Linux
//! they also get `PR_SET_PDEATHSIG`, which fires when the spawning thread ends.

mod catalog_server;
mod embedder;
mod envoy;
mod paths;
mod process;
mod script;

pub use crate::envoy_config::{JwtAuthnOptions, JwtRequirement};
pub use catalog_server::{CatalogOptions, CatalogServer};
pub use embedder::{
    embeddings_front_yaml, Embedder, EmbeddingsFront, FrontOptions, FRONT_ABORT_PERCENT,
    FRONT_DELAY_PERCENT, FRONT_GARBAGE_JSON_PERCENT, FRONT_GARBAGE_TEXT_PERCENT, GARBAGE_JSON,
    GARBAGE_TEXT,
};
pub use envoy::{
    bootstrap_yaml, http_get, http_post, raw_exchange, static_cluster_yaml, Envoy, EnvoyOptions,
    FilterOptions,
};
pub use paths::{
    catalog_300, code_wasm, embedder_bin, envoy_bin, filter_wasm, filter_wasm_path, model_dir,
    workspace_root, FILTER_WASM_ARTIFACT, MODEL_FILES,
};
pub use process::{free_port, port_open, tail, wait_until, Proc, TestDir};
pub use script::{run_printed, still_listening, Script};

use process::await_listening;
use std::sync::atomic::{AtomicU32, Ordering};

/// Errors are plain messages: a test prints them and fails.
pub type Error = Box<dyn std::error::Error + Send + Sync>;
pub type Result<T> = std::result::Result<T, Error>;

fn err<T>(msg: impl Into<String>) -> Result<T> {
    Err(msg.into().into())
}

static COUNTER: AtomicU32 = AtomicU32::new(0);

fn next_id() -> u32 {
    COUNTER.fetch_add(1, Ordering::Relaxed)
}

/// Whether a test that lacks something it checks against (Envoy's binary, the OCI image) must
/// fail instead of skipping: under CI, where a skip would pass unseen. CI is `CI` set to anything
/// but empty, `0` or `false` (GitHub Actions, GitLab and most runners set `CI=true`), or
/// `OCI_REQUIRED=1`, which `.ci/run` exports.
pub fn required() -> bool {
    required_by(
        std::env::var("CI").ok().as_deref(),
        std::env::var("OCI_REQUIRED").ok().as_deref(),
    )
}

fn required_by(ci: Option<&str>, oci_required: Option<&str>) -> bool {
    let ci = ci.is_some_and(|v| {
        let v = v.trim();
        !(v.is_empty() || v == "0" || v.eq_ignore_ascii_case("false"))
    });
    ci || oci_required == Some("1")
}

/// A test that cannot run here: under CI ([`required`]) an error, which the test fails with;
/// elsewhere `SKIPPED test: why` on stderr, and the test returns.
pub fn skip(test: &str, why: &str) -> Result<()> {
    if required() {
        return err(format!(
            "{test}: {why} (required under CI: CI or OCI_REQUIRED=1 is set)"
        ));
    }
    eprintln!("SKIPPED {test}: {why}");
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]
mod tests;
