//! The layout's promises, checked on the sources: no import circles (between the top-level
//! modules, and between the sibling files of a folder); no proxy-wasm in the core; only
//! `http::Context` matches on what a stream decides; every shared-data key spelled in
//! `keys.rs` alone; no source file over 700 lines outside tests; the fuzz crate built with the
//! workspace; the crate's modules private behind the `pub use` facade of `lib.rs`.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// A file's module path (`stream/request.rs` → `["stream", "request"]`, `mod.rs` → its folder).
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts
}

/// The path written after each `prefix` in `code` (`crate::a::b::C` → `[a, b, C]`).
fn paths_after(code: &str, prefix: &str) -> Vec<Vec<String>> {
    code.match_indices(prefix)
        .map(|(i, _)| {
            code[i + prefix.len()..]
                .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                .next()
                .unwrap_or("")
                .split("::")
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect()
        })
        .collect()
}

/// The modules (as paths) a file's non-test code refers to through `crate::` and `super::`.
fn references(text: &str, module: &[String]) -> Vec<Vec<String>> {
    let code = text.split("#[cfg(test)]").next().unwrap_or("");
    let mut out = paths_after(code, "crate::");
    // `super` of `a/b/mod.rs` (module a::b) is a; of `a/c.rs` (module a::c) it is a too.
    let parent = &module[..module.len().saturating_sub(1)];
    for rest in paths_after(code, "super::") {
        out.push(parent.iter().cloned().chain(rest).collect());
    }
    out
}

fn find_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        match state.get(node) {
            Some(2) => return None,
            Some(1) => {
                let start = stack.iter().position(|n| n == node).unwrap_or(0);
                let mut cycle = stack[start..].to_vec();
                cycle.push(node.to_string());
                return Some(cycle);
            }
            _ => {}
        }
        state.insert(node.to_string(), 1);
        stack.push(node.to_string());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(c) = visit(next, graph, state, stack) {
                return Some(c);
            }
        }
        stack.pop();
        state.insert(node.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for node in graph.keys() {
        if let Some(c) = visit(node, graph, &mut state, &mut Vec::new()) {
            return Some(c);
        }
    }
    None
}

/// The module graph of a crate's `src/`: between top-level modules, and between the sibling
/// files of each folder (a folder's `mod.rs` and its children refer to each other by design).
fn graphs(src: &Path) -> Vec<(String, BTreeMap<String, BTreeSet<String>>)> {
    let mut files = Vec::new();
    sources(src, &mut files);
    let modules: BTreeSet<Vec<String>> = files.iter().map(|f| module_of(src, f)).collect();
    let mut top: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut siblings: BTreeMap<Vec<String>, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for file in &files {
        let module = module_of(src, file);
        let Some(first) = module.first() else {
            continue;
        };
        let is_mod = file.file_name().is_some_and(|n| n == "mod.rs");
        let text = std::fs::read_to_string(file).unwrap();
        for path in references(&text, &module) {
            // The longest prefix of the path that is a module of the crate.
            let Some(target) = (1..=path.len())
                .rev()
                .map(|n| path[..n].to_vec())
                .find(|p| modules.contains(p))
            else {
                continue;
            };
            if target[0] != *first {
                top.entry(first.clone())
                    .or_default()
                    .insert(target[0].clone());
                continue;
            }
            // Same top-level module: an edge between siblings of one folder, if both are files
            // below that folder (not the folder's own mod.rs).
            let folder = &module[..module.len() - usize::from(!is_mod)];
            if is_mod || target.len() != folder.len() + 1 || target[..folder.len()] != *folder {
                continue;
            }
            if module.len() == folder.len() + 1 && target != module {
                siblings
                    .entry(folder.to_vec())
                    .or_default()
                    .entry(module.last().cloned().unwrap_or_default())
                    .or_default()
                    .insert(target.last().cloned().unwrap_or_default());
            }
        }
    }
    let mut out = vec![("top-level modules".to_string(), top)];
    for (folder, graph) in siblings {
        out.push((format!("files of {}/", folder.join("/")), graph));
    }
    out
}

fn assert_acyclic(src: &Path) {
    for (what, graph) in graphs(src) {
        assert!(
            find_cycle(&graph).is_none(),
            "import circle among the {what} of {}: {:?}\n{graph:#?}",
            src.display(),
            find_cycle(&graph)
        );
    }
}

#[test]
fn no_import_circles_in_the_core_or_the_glue() {
    let core = Path::new(env!("CARGO_MANIFEST_DIR"));
    assert_acyclic(&core.join("src"));
    assert_acyclic(&core.join("../src"));
}

#[test]
fn the_cycle_finder_finds_a_cycle() {
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    g.entry("a".into()).or_default().insert("b".into());
    g.entry("b".into()).or_default().insert("c".into());
    assert!(find_cycle(&g).is_none());
    g.entry("c".into()).or_default().insert("a".into());
    assert_eq!(find_cycle(&g).unwrap(), ["a", "b", "c", "a"]);
}

#[test]
fn the_core_does_not_depend_on_proxy_wasm() {
    let manifest =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml")).unwrap();
    let dependencies: Vec<&str> = manifest
        .lines()
        .skip_while(|l| !l.starts_with("[dependencies]"))
        .take_while(|l| !l.starts_with('#'))
        .collect();
    assert!(dependencies.len() > 1, "{manifest}");
    assert!(
        !dependencies.iter().any(|l| l.contains("proxy-wasm")),
        "{dependencies:?}"
    );
    let mut files = Vec::new();
    sources(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut files,
    );
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        assert!(!text.contains("proxy_wasm"), "{}", f.display());
    }
}

/// The repository's root.
fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every `.rs` file below `dir` (build output and dependencies excluded).
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for entry in entries {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            // A folder with a VENDORED.md holds another project's code (QuickJS's bindings), kept
            // as published: these rules are ours.
            let vendored = path.join("VENDORED.md").is_file();
            if !vendored && !["target", "node_modules", "pkg", ".git"].contains(&name.as_str()) {
                out.extend(rust_files(&path));
            }
        } else if name.ends_with(".rs") {
            out.push(path);
        }
    }
    out
}

/// A file that holds only tests: below a `tests/` folder, or named `tests.rs` / `*_tests.rs`.
fn is_test_file(path: &Path) -> bool {
    let name = path.file_name().unwrap().to_string_lossy();
    name == "tests.rs"
        || name.ends_with("_tests.rs")
        || path.components().any(|c| c.as_os_str() == "tests")
}

/// The code of a file without its comments (`//` to the end of the line).
fn code_lines(text: &str) -> impl Iterator<Item = &str> {
    text.lines()
        .map(|line| match line.find("//") {
            Some(at) if !line[..at].contains('"') => &line[..at],
            _ => line,
        })
        .filter(|line| !line.trim().is_empty())
}

#[test]
fn no_source_file_is_over_700_lines() {
    let root = repository();
    let mut checked = 0;
    for dir in ["filter", "host-shim/src", "wasm-tests/src", "bench"] {
        for file in rust_files(&root.join(dir)) {
            if is_test_file(&file) {
                continue;
            }
            let lines = std::fs::read_to_string(&file).unwrap().lines().count();
            assert!(lines <= 700, "{} has {lines} lines", file.display());
            checked += 1;
        }
    }
    assert!(checked > 50, "only {checked} files found");
}

/// Only `http::Context` drives a stream: nothing else matches on what the stream decides.
#[test]
fn only_the_http_context_matches_on_a_stream_action() {
    let root = repository();
    let http = root.join("filter/core/src/http");
    let actions = [
        "RequestHeadersAction",
        "RequestBodyAction",
        "ResponseHeadersAction",
        "HeaderChange",
    ];
    // An action named as a pattern: before a match arm's `=>`, in `matches!`, `if let` or
    // `let … else` (named after `=>`, it is being built, which the stream does).
    let matching = |line: &str| {
        let pattern = line.split("=>").next().unwrap_or("");
        (line.contains("=>") && actions.iter().any(|a| pattern.contains(&format!("{a}::"))))
            || line.contains("matches!")
            || line.trim_start().starts_with("if let")
            || (line.trim_start().starts_with("let ") && line.contains("else"))
    };
    let mut in_http = 0;
    for dir in [
        "filter",
        "host-shim",
        "wasm-tests",
        "bench",
        "playground",
        "embedder",
    ] {
        for file in rust_files(&root.join(dir)) {
            let text = std::fs::read_to_string(&file).unwrap();
            for line in code_lines(&text) {
                if !actions.iter().any(|a| line.contains(&format!("{a}::"))) || !matching(line) {
                    continue;
                }
                if file.starts_with(&http) {
                    in_http += 1;
                } else {
                    panic!("{} matches on a stream action: {line}", file.display());
                }
            }
        }
    }
    assert!(
        in_http >= 6,
        "the context's own matches not found ({in_http})"
    );
}

/// Every shared-data key is spelled in `keys.rs`: the literals it holds appear nowhere else.
#[test]
fn no_shared_data_key_is_spelled_outside_its_file() {
    let root = repository();
    let keys_file = root.join("filter/core/src/keys.rs");
    let text = std::fs::read_to_string(&keys_file).unwrap();
    let prefix = text
        .split("concat!(\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap()
        .to_string();
    // Keys under the prefix are found by the prefix; the suffixes and marks by themselves.
    let mut literals = vec![prefix];
    for line in text.lines().filter(|l| l.starts_with("pub const ")) {
        if let Some(value) = line.split("= \"").nth(1).and_then(|r| r.split('"').next()) {
            literals.push(value.to_string());
        }
    }
    assert!(literals.len() >= 12, "{literals:?}");
    for dir in ["filter", "host-shim", "wasm-tests", "bench", "playground"] {
        for file in rust_files(&root.join(dir)) {
            if file.starts_with(root.join("filter/core/src/keys")) || file == keys_file {
                continue;
            }
            let text = std::fs::read_to_string(&file).unwrap();
            for line in code_lines(&text) {
                for literal in &literals {
                    // Marks and prefixes are found inside longer literals; a suffix such as
                    // "/meta" only as a whole literal.
                    let found = if literal.starts_with('/') {
                        line.contains(&format!("\"{literal}\""))
                    } else {
                        line.contains(literal.as_str())
                    };
                    assert!(
                        !found,
                        "{} spells the shared-data key {literal:?}: {line}",
                        file.display()
                    );
                }
            }
        }
    }
}

#[test]
fn the_fuzz_crate_is_a_member_of_the_workspace() {
    let root = repository();
    let workspace = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let members = workspace
        .lines()
        .find(|l| l.starts_with("members"))
        .unwrap();
    assert!(members.contains("\"filter/core/fuzz\""), "{members}");
    let fuzz = std::fs::read_to_string(root.join("filter/core/fuzz/Cargo.toml")).unwrap();
    assert!(
        !fuzz.lines().any(|l| l.trim() == "[workspace]"),
        "the fuzz crate declares its own workspace"
    );
}

/// The crate's surface is what `lib.rs` re-exports: its modules are private, except the two
/// tables other components read by name (shared-data keys and Envoy counters).
#[test]
fn the_core_is_a_facade_over_private_modules() {
    let lib = std::fs::read_to_string(repository().join("filter/core/src/lib.rs")).unwrap();
    let public: Vec<&str> = code_lines(&lib)
        .filter_map(|l| l.trim().strip_prefix("pub mod "))
        .collect();
    assert_eq!(public, ["keys;", "stats;"]);
    assert!(
        code_lines(&lib).any(|l| l.starts_with("pub use http::")),
        "lib.rs re-exports nothing from http/"
    );
}
