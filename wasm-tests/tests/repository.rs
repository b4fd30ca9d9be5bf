//! What the repository ships besides the filter. `make run` (`envoy/run.sh`): a user's plugin
//! configuration file is merged over the shipped one, so that it changes what it names and keeps
//! the rest (`hold_request_headers`, which the shipped Envoy config's
//! `allow_on_headers_stop_iteration` goes with); the effective configuration is printed and is
//! one the filter accepts. Committed figures name only paths inside the repository.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use mcp_tool_search_core::Config;
use mcp_tool_search_wasm_tests::harness;
use serde_json::{json, Value};
use std::os::unix::fs::PermissionsExt;
use std::process::Command;

/// Runs `envoy/run.sh` with an "Envoy" that prints the config it was given; returns the plugin
/// configuration rendered into it and what the script printed on stderr.
fn rendered(user: Option<&Value>) -> (Value, String) {
    let root = harness::workspace_root();
    let wasm = harness::filter_wasm().unwrap();
    let dir = std::env::temp_dir().join(format!(
        "mcp-tool-search-run-{}-{}",
        std::process::id(),
        user.is_some()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let fake = dir.join("envoy");
    std::fs::write(&fake, "#!/bin/sh\n# envoy -c FILE ...\ncat \"$2\"\n").unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut cmd = Command::new("envoy/run.sh");
    cmd.current_dir(&root)
        .env("ENVOY_BIN", &fake)
        .env("FILTER_WASM", &wasm)
        .args(["127.0.0.1:18099", "10999"]);
    if let Some(user) = user {
        let file = dir.join("plugin.json");
        std::fs::write(&file, user.to_string()).unwrap();
        cmd.arg(&file);
    }
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "run.sh failed: {stderr}");
    let yaml = String::from_utf8(out.stdout).unwrap();
    let line = yaml
        .lines()
        .find(|l| l.contains("# @plugin-config"))
        .unwrap_or_else(|| panic!("no plugin configuration in\n{yaml}"));
    let start = line.find("value: '").unwrap() + "value: '".len();
    let end = line.rfind('\'').unwrap();
    let value: Value = serde_json::from_str(&line[start..end].replace("''", "'")).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    (value, stderr)
}

#[test]
fn a_users_plugin_configuration_is_merged_over_the_shipped_one() {
    let (shipped, _) = rendered(None);
    assert_eq!(shipped["hold_request_headers"], true, "{shipped}");

    let user = json!({
        "eager_patterns": ["slack_*"],
        "search": {"max_allowable_results": 7, "result_format": "summary"}
    });
    let (effective, stderr) = rendered(Some(&user));
    // What the file names changes; everything else is the shipped value.
    assert_eq!(effective["eager_patterns"], json!(["slack_*"]));
    assert_eq!(effective["search"]["max_allowable_results"], 7);
    assert_eq!(effective["search"]["result_format"], "summary");
    assert_eq!(effective["hold_request_headers"], true, "{effective}");
    assert_eq!(effective["mcp_paths"], shipped["mcp_paths"]);
    // Printed at start, and accepted by the filter.
    assert!(
        stderr.contains("effective plugin configuration")
            && stderr.contains("\"max_allowable_results\": 7"),
        "{stderr}"
    );
    let config = Config::parse(&effective.to_string()).unwrap();
    assert!(config.hold_request_headers);
    assert_eq!(config.search.max_allowable_results, 7);

    // The user's file may still turn it off, explicitly.
    let (off, _) = rendered(Some(&json!({"hold_request_headers": false})));
    assert_eq!(off["hold_request_headers"], false);
}

/// `BENCHMARKS.md` says how it was run with commands anyone can rerun from a clone: no absolute
/// path of the machine it ran on.
#[test]
fn the_benchmarks_invocation_names_only_repository_paths() {
    let text = std::fs::read_to_string(harness::workspace_root().join("BENCHMARKS.md")).unwrap();
    let start = text
        .find("## How it was run")
        .expect("a How it was run section");
    let section = &text[start..];
    let block = section
        .split("```sh\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .expect("the commands, in a sh block");
    let absolute: Vec<&str> = block
        .split(|c: char| c.is_whitespace() || c == '=' || c == '`' || c == '"')
        .filter(|t| t.starts_with('/') || t.starts_with("~/"))
        .collect();
    assert!(
        absolute.is_empty(),
        "absolute paths in BENCHMARKS.md: {absolute:?}"
    );
    assert!(block.contains("make bench"), "{block}");
}

/// The `.wasm` operators load stays within its budget, 1 MiB (README "Performance"): every
/// replica's every worker compiles it, an OCI registry serves it, and Istio fetches it per
/// node. `make test` builds it the way `make wasm` does (release, `FILTER_WASM`).
#[test]
fn the_filter_wasm_stays_under_one_mebibyte() {
    let wasm = harness::filter_wasm().unwrap();
    let size = std::fs::metadata(&wasm).unwrap().len();
    assert!(
        size <= 1024 * 1024,
        "{} is {size} bytes, over the 1 MiB budget by {}",
        wasm.display(),
        size - 1024 * 1024
    );
}
