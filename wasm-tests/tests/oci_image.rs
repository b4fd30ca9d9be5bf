//! The OCI image `make oci` builds (`envoy/oci-image.sh`), as Istio's `WasmPlugin` pulls it: an
//! OCI image layout whose one manifest has one gzip tar layer holding only `plugin.wasm`, that
//! file byte for byte the built filter, every blob matching its digest.
//!
//! `make test` builds the archive into `$OCI_ARCHIVE` when umoci can be installed; otherwise
//! this test says so and checks nothing, except under CI (`harness::required`), where that fails.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use mcp_tool_search_wasm_tests::harness;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::Command;

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A blob by its descriptor, checked against the descriptor's digest and size.
fn blob(layout: &Path, descriptor: &Value) -> Vec<u8> {
    let digest = descriptor["digest"].as_str().unwrap();
    let hex = digest.strip_prefix("sha256:").unwrap();
    let bytes = std::fs::read(layout.join("blobs/sha256").join(hex)).unwrap();
    assert_eq!(
        sha256_hex(&bytes),
        hex,
        "blob {digest} does not match its digest"
    );
    assert_eq!(
        descriptor["size"].as_u64(),
        Some(bytes.len() as u64),
        "blob {digest}: size"
    );
    bytes
}

fn run(cmd: &mut Command) -> Vec<u8> {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

#[test]
fn the_oci_image_holds_the_built_filter_as_istio_pulls_it() {
    image_holds("OCI_ARCHIVE", || harness::filter_wasm().unwrap());
}

#[test]
fn the_code_mode_image_holds_the_code_mode_module() {
    image_holds("CODE_OCI_ARCHIVE", || harness::code_wasm().unwrap());
}

/// The archive at `$var` is an image as Istio pulls it, whose one layer holds `module()` as
/// `plugin.wasm`.
fn image_holds(var: &str, module: impl FnOnce() -> PathBuf) {
    let archive = std::env::var_os(var).map(PathBuf::from);
    let Some(archive) = archive.filter(|a| a.is_file()) else {
        let why = format!(
            "no OCI image archive at ${var}: umoci could not be installed here (make test builds \
             both with `envoy/oci-image.sh --install`)"
        );
        harness::skip("oci_image", &why).unwrap();
        return;
    };
    let wasm = std::fs::read(module()).unwrap();
    let dir =
        std::env::temp_dir().join(format!("mcp-tool-search-oci-{var}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let layout = dir.join("layout");
    std::fs::create_dir_all(&layout).unwrap();
    run(Command::new("tar")
        .arg("-C")
        .arg(&layout)
        .arg("-xf")
        .arg(&archive));

    let oci_layout: Value =
        serde_json::from_slice(&std::fs::read(layout.join("oci-layout")).unwrap()).unwrap();
    assert_eq!(oci_layout["imageLayoutVersion"], "1.0.0");
    let index: Value =
        serde_json::from_slice(&std::fs::read(layout.join("index.json")).unwrap()).unwrap();
    let manifests = index["manifests"].as_array().unwrap();
    assert_eq!(manifests.len(), 1, "{index}");
    assert!(manifests[0]["annotations"]["org.opencontainers.image.ref.name"].is_string());

    // An OCI manifest, not Docker's (Istio reads a Docker one otherwise); the manifest itself
    // may omit its media type (OCI image spec 1.0), and then the descriptor's is the one.
    let oci_manifest = "application/vnd.oci.image.manifest.v1+json";
    assert_eq!(manifests[0]["mediaType"], oci_manifest);
    let manifest: Value = serde_json::from_slice(&blob(&layout, &manifests[0])).unwrap();
    assert!(
        manifest.get("mediaType").is_none() || manifest["mediaType"] == oci_manifest,
        "{manifest}"
    );
    assert_eq!(
        manifest["annotations"]["module.wasm.image/variant"],
        "compat"
    );
    let layers = manifest["layers"].as_array().unwrap();
    assert_eq!(layers.len(), 1, "one layer: {manifest}");
    assert_eq!(
        layers[0]["mediaType"],
        "application/vnd.oci.image.layer.v1.tar+gzip"
    );
    let config: Value = serde_json::from_slice(&blob(&layout, &manifest["config"])).unwrap();

    let gz = dir.join("layer.tar.gz");
    std::fs::write(&gz, blob(&layout, &layers[0])).unwrap();
    let tar = run(Command::new("gzip").arg("-dc").arg(&gz));
    assert_eq!(
        config["rootfs"]["diff_ids"][0],
        format!("sha256:{}", sha256_hex(&tar)),
        "the config's diff_id is the uncompressed layer"
    );
    let rootfs = dir.join("rootfs");
    std::fs::create_dir_all(&rootfs).unwrap();
    run(Command::new("tar")
        .arg("-C")
        .arg(&rootfs)
        .arg("-xzf")
        .arg(&gz));
    let files: Vec<String> = std::fs::read_dir(&rootfs)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(files, ["plugin.wasm"], "the layer holds plugin.wasm only");
    let plugin = std::fs::read(rootfs.join("plugin.wasm")).unwrap();
    assert!(
        plugin == wasm,
        "plugin.wasm ({} bytes) is not the built filter ({} bytes)",
        plugin.len(),
        wasm.len()
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
