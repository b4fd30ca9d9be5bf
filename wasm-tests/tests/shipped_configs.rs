//! The configurations shipped in `envoy/` that no Envoy here loads: the Istio `WasmPlugin`s, the
//! Envoy Gateway `EnvoyExtensionPolicy` and the docker-compose file. `make validate` runs `envoy --mode validate` on `demo.yaml`,
//! `gateway.yaml` and `baseline.yaml` (with the built `.wasm`, so demo's plugin configuration is checked by the
//! filter itself); these need no cluster and no Docker. Each plugin configuration goes through
//! the filter's own parser, the one that refuses a bad configuration in Envoy.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use mcp_tool_search_core::Config;
use mcp_tool_search_wasm_tests::harness::{workspace_root, FILTER_WASM_ARTIFACT};
use serde_json::Value;
use std::path::{Component, Path, PathBuf};

/// What `make wasm` writes, relative to the repository (the Makefile's `WASM`).
const WASM_ARTIFACT: &str = FILTER_WASM_ARTIFACT;

/// A shipped YAML file, as JSON (every key these files use is a string).
fn yaml(rel: &str) -> Value {
    let path = workspace_root().join(rel);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let doc: serde_norway::Value =
        serde_norway::from_str(&text).unwrap_or_else(|e| panic!("{rel} is not YAML: {e}"));
    serde_json::to_value(doc).unwrap_or_else(|e| panic!("{rel}: not representable as JSON: {e}"))
}

/// The filter's parser on one plugin configuration, as Envoy hands it over (a JSON string).
fn parse_plugin_config(what: &str, json: &str) -> Config {
    Config::parse(json).unwrap_or_else(|e| panic!("{what}: the filter refuses it: {e}\n{json}"))
}

/// An Istio `WasmPlugin`: its `pluginConfig` (Istio passes it to the plugin as JSON) parses, and
/// the fields the README relies on are as it says.
fn istio_plugin(rel: &str, mode: &str) -> Config {
    let doc = yaml(rel);
    assert_eq!(doc["apiVersion"], "extensions.istio.io/v1alpha1", "{rel}");
    assert_eq!(doc["kind"], "WasmPlugin", "{rel}");
    let spec = &doc["spec"];
    let url = spec["url"].as_str().unwrap_or_default();
    assert!(
        url.starts_with("oci://"),
        "{rel}: url {url:?} is not the OCI image `make oci` builds"
    );
    // A filter that failed to load must not let requests through unread.
    assert_eq!(spec["failStrategy"], "FAIL_CLOSE", "{rel}");
    let modes: Vec<&str> = spec["match"]
        .as_array()
        .unwrap_or_else(|| panic!("{rel}: no spec.match"))
        .iter()
        .filter_map(|m| m["mode"].as_str())
        .collect();
    assert_eq!(modes, [mode], "{rel}: spec.match modes");
    let plugin = &spec["pluginConfig"];
    assert!(plugin.is_object(), "{rel}: spec.pluginConfig is {plugin}");
    let config = parse_plugin_config(rel, &plugin.to_string());
    // A WasmPlugin cannot set Envoy's allow_on_headers_stop_iteration: with held headers the
    // filter would never see a body.
    assert!(!config.hold_request_headers, "{rel}: hold_request_headers");
    config
}

#[test]
fn the_sidecar_wasmplugin_parses_and_its_plugin_config_is_accepted() {
    let config = istio_plugin("envoy/istio-wasmplugin.yaml", "SERVER");
    assert_eq!(config.mcp_paths, ["/mcp"]);
    assert_eq!(config.search.tool_name, "tool_search");
}

#[test]
fn the_gateway_wasmplugin_parses_and_its_plugin_config_is_accepted() {
    let config = istio_plugin("envoy/istio-gateway-wasmplugin.yaml", "CLIENT");
    assert_eq!(config.mcp_paths, ["/github/mcp", "/slack/mcp"]);
}

/// The parser above is the one that refuses: the same pluginConfig with a value out of range, or
/// a field the filter does not know, is an error naming the field.
#[test]
fn a_broken_istio_plugin_config_is_refused() {
    let doc = yaml("envoy/istio-wasmplugin.yaml");
    let mut plugin = doc["spec"]["pluginConfig"].clone();
    plugin["search"]["max_allowable_results"] = 0.into();
    let err = Config::parse(&plugin.to_string()).expect_err("max_allowable_results 0");
    assert!(
        err.to_string().contains("search.max_allowable_results"),
        "{err}"
    );
    let mut plugin = doc["spec"]["pluginConfig"].clone();
    plugin["eager_pattern"] = Value::from(vec!["github_*"]);
    let err = Config::parse(&plugin.to_string()).expect_err("a misspelt field");
    assert!(err.to_string().contains("eager_pattern"), "{err}");
}

/// Fails on a field `node` has that Envoy Gateway's CRD does not: the API server would refuse it
/// (or, without pruning off, Envoy Gateway would ignore it).
fn assert_fields_known(what: &str, node: &Value, known: &[&str]) {
    let map = node
        .as_object()
        .unwrap_or_else(|| panic!("{what} is not an object: {node}"));
    let unknown: Vec<&String> = map
        .keys()
        .filter(|k| !known.contains(&k.as_str()))
        .collect();
    assert!(
        unknown.is_empty(),
        "{what}: fields {unknown:?} are not Envoy Gateway's (it has {known:?})"
    );
}

/// An `EnvoyExtensionPolicy`'s `wasm[].code`, by `type` (Envoy Gateway's `WasmCodeSource`,
/// api/v1alpha1/wasm_types.go).
fn eg_wasm_code<'a>(what: &str, code: &'a Value) -> &'a Value {
    assert_fields_known(what, code, &["type", "http", "image", "pullPolicy"]);
    match code["type"].as_str() {
        Some("Image") => {
            assert!(code.get("http").is_none(), "{what}: type Image with http");
            let image = &code["image"];
            assert_fields_known(
                &format!("{what}.image"),
                image,
                &["url", "sha256", "pullSecretRef", "tls"],
            );
            assert!(image["url"].is_string(), "{what}.image.url: {image}");
            image
        }
        Some("HTTP") => {
            assert!(code.get("image").is_none(), "{what}: type HTTP with image");
            let http = &code["http"];
            assert_fields_known(&format!("{what}.http"), http, &["url", "sha256", "tls"]);
            let url = http["url"].as_str().unwrap_or_default();
            assert!(url.starts_with("https://"), "{what}.http.url: {url:?}");
            // Without it Envoy Gateway runs whatever the server sends.
            assert!(http["sha256"].is_string(), "{what}.http.sha256: {http}");
            http
        }
        other => panic!("{what}.type is {other:?}, not Image or HTTP"),
    }
}

/// The YAML commented out in `text` from the comment line `# key:` on, for as long as the
/// comment lines keep its indentation.
fn commented_out(rel: &str, text: &str, key: &str) -> Value {
    let first = format!("# {key}:");
    let lines: Vec<&str> = text.lines().collect();
    let start = lines
        .iter()
        .position(|l| l.trim_start() == first)
        .unwrap_or_else(|| panic!("{rel}: no commented-out `{key}`"));
    let prefix = &lines[start][..lines[start].find('#').unwrap() + 2];
    let block: Vec<&str> = lines[start..]
        .iter()
        .map_while(|l| l.strip_prefix(prefix))
        .collect();
    let doc: serde_norway::Value = serde_norway::from_str(&block.join("\n"))
        .unwrap_or_else(|e| panic!("{rel}: the commented-out `{key}` is not YAML: {e}"));
    serde_json::to_value(doc).unwrap()
}

/// `envoy/envoy-gateway-extension-policy.yaml`: only fields of Envoy Gateway's CRD
/// (api/v1alpha1: `EnvoyExtensionPolicySpec`, `Wasm`, `WasmCodeSource`), the image `make oci`
/// builds as the Istio examples name it, fail-closed, and as `config` the sidecar `WasmPlugin`'s
/// `pluginConfig`, which the filter accepts; the commented-out HTTP source is one too.
#[test]
fn the_envoy_gateway_policy_carries_the_istio_plugin_config() {
    let rel = "envoy/envoy-gateway-extension-policy.yaml";
    let doc = yaml(rel);
    assert_eq!(doc["apiVersion"], "gateway.envoyproxy.io/v1alpha1", "{rel}");
    assert_eq!(doc["kind"], "EnvoyExtensionPolicy", "{rel}");
    assert!(doc["metadata"]["name"].is_string(), "{rel}: metadata.name");
    let spec = &doc["spec"];
    assert_fields_known(
        "spec",
        spec,
        &[
            "targetRef",
            "targetRefs",
            "targetSelectors",
            "mergeType",
            "wasm",
            "extProc",
            "lua",
            "dynamicModule",
        ],
    );
    let targets = spec["targetRefs"]
        .as_array()
        .unwrap_or_else(|| panic!("{rel}: no spec.targetRefs"));
    assert!(!targets.is_empty(), "{rel}: spec.targetRefs is empty");
    for target in targets {
        assert_fields_known(
            "spec.targetRefs[]",
            target,
            &["group", "kind", "name", "sectionName"],
        );
        assert_eq!(target["group"], "gateway.networking.k8s.io", "{target}");
        assert!(
            target["kind"] == "HTTPRoute" || target["kind"] == "Gateway",
            "{rel}: a target that is neither an HTTPRoute nor a Gateway: {target}"
        );
        assert!(target["name"].is_string(), "{target}");
    }
    let wasm = spec["wasm"]
        .as_array()
        .unwrap_or_else(|| panic!("{rel}: no spec.wasm"));
    assert_eq!(wasm.len(), 1, "{rel}: one Wasm extension");
    let extension = &wasm[0];
    assert_fields_known(
        "spec.wasm[]",
        extension,
        &["name", "rootID", "code", "config", "failOpen", "env"],
    );
    assert!(extension["name"].is_string(), "{rel}: spec.wasm[].name");
    assert_eq!(
        extension["rootID"], "mcp_tool_search",
        "demo.yaml's root_id"
    );
    // A filter that failed to load must not let requests through unread; stated, not defaulted.
    assert_eq!(extension["failOpen"], false, "{rel}: spec.wasm[].failOpen");

    let istio = yaml("envoy/istio-wasmplugin.yaml");
    let istio_url = istio["spec"]["url"].as_str().unwrap();
    let image = eg_wasm_code("spec.wasm[].code", &extension["code"]);
    assert_eq!(
        Some(image["url"].as_str().unwrap()),
        istio_url.strip_prefix("oci://"),
        "{rel}: not the image the Istio examples pull"
    );
    assert_eq!(
        extension["config"], istio["spec"]["pluginConfig"],
        "{rel}: config is not istio-wasmplugin.yaml's pluginConfig"
    );
    let config = parse_plugin_config(rel, &extension["config"].to_string());
    // Envoy Gateway cannot set Envoy's allow_on_headers_stop_iteration either.
    assert!(!config.hold_request_headers, "{rel}: hold_request_headers");
    assert_eq!(config.mcp_paths, ["/mcp"]);
    assert_eq!(config.search.tool_name, "tool_search");

    let text = std::fs::read_to_string(workspace_root().join(rel)).unwrap();
    let alternative = commented_out(rel, &text, "code");
    assert_fields_known("the commented-out alternative", &alternative, &["code"]);
    let http = eg_wasm_code("the commented-out code", &alternative["code"]);
    assert!(
        http["url"].as_str().unwrap().ends_with(".wasm"),
        "{rel}: the HTTP source is the .wasm itself: {http}"
    );
}

/// Every Wasm filter's `configuration` string in an Envoy bootstrap.
fn wasm_plugin_configs(node: &Value, out: &mut Vec<String>) {
    match node {
        Value::Object(map) => {
            if map.get("name").and_then(Value::as_str) == Some("envoy.filters.http.wasm") {
                let value = &map["typed_config"]["config"]["configuration"]["value"];
                out.push(
                    value
                        .as_str()
                        .unwrap_or_else(|| {
                            panic!("a Wasm filter without a string configuration: {node}")
                        })
                        .to_owned(),
                );
            }
            map.values().for_each(|v| wasm_plugin_configs(v, out));
        }
        Value::Array(items) => items.iter().for_each(|v| wasm_plugin_configs(v, out)),
        _ => {}
    }
}

/// Every `code.local.filename` in an Envoy bootstrap.
fn wasm_files(node: &Value, out: &mut Vec<String>) {
    match node {
        Value::Object(map) => {
            if let Some(f) = map.get("local").and_then(|l| l["filename"].as_str()) {
                out.push(f.to_owned());
            }
            map.values().for_each(|v| wasm_files(v, out));
        }
        Value::Array(items) => items.iter().for_each(|v| wasm_files(v, out)),
        _ => {}
    }
}

/// `make validate` checks these with Envoy and the built `.wasm`; this is the same check of the
/// plugin configuration without either, and shows the baseline really has no filter.
#[test]
fn the_envoy_configs_carry_the_plugin_configs_the_filter_accepts() {
    let demo = yaml("envoy/demo.yaml");
    let mut configs = Vec::new();
    wasm_plugin_configs(&demo, &mut configs);
    assert_eq!(configs.len(), 1, "envoy/demo.yaml: one Wasm filter");
    let config = parse_plugin_config("envoy/demo.yaml", &configs[0]);
    assert!(
        config.hold_request_headers,
        "demo.yaml sets allow_on_headers_stop_iteration to hold headers"
    );
    let mut files = Vec::new();
    wasm_files(&demo, &mut files);
    assert_eq!(
        files,
        [WASM_ARTIFACT],
        "envoy/demo.yaml loads what `make wasm` builds"
    );

    let baseline = yaml("envoy/baseline.yaml");
    let mut configs = Vec::new();
    wasm_plugin_configs(&baseline, &mut configs);
    assert!(
        configs.is_empty(),
        "envoy/baseline.yaml is Envoy without the filter"
    );
}

/// `envoy/gateway.yaml` (`make gateway`, `make validate`; loaded as shipped by
/// tests/gateway_e2e.rs): the settings the README's "Many servers behind one endpoint" relies on.
#[test]
fn the_gateway_config_puts_the_filter_before_mcp_and_mcp_router() {
    let gw = yaml("envoy/gateway.yaml");
    let mut configs = Vec::new();
    wasm_plugin_configs(&gw, &mut configs);
    assert_eq!(configs.len(), 1, "envoy/gateway.yaml: one Wasm filter");
    let config = parse_plugin_config("envoy/gateway.yaml", &configs[0]);
    assert!(config.hold_request_headers);
    assert_eq!(
        config.group_separator.as_deref(),
        Some("__"),
        "mcp_router's separator"
    );
    // mcp_router acts on a tools/call whatever the path: every path is authorized.
    assert_eq!(config.mcp_paths, ["/"]);
    assert_eq!(config.catalog.cluster.as_deref(), Some("self"));
    assert!(config.catalog.loopback, "`self` is this listener");
    assert_eq!(config.catalog.path, "/mcp");
    let mut files = Vec::new();
    wasm_files(&gw, &mut files);
    assert_eq!(files, [WASM_ARTIFACT]);

    let listener = &gw["static_resources"]["listeners"][0];
    let port = &listener["address"]["socket_address"]["port_value"];
    let hcm = &listener["filter_chains"][0]["filters"][0]["typed_config"];
    assert_eq!(hcm["stream_idle_timeout"], "0s", "SSE streams");
    assert_eq!(hcm["normalize_path"], true);
    assert_eq!(hcm["merge_slashes"], true);
    assert_eq!(
        hcm["path_with_escaped_slashes_action"],
        "UNESCAPE_AND_REDIRECT"
    );
    assert!(
        listener["per_connection_buffer_limit_bytes"]
            .as_u64()
            .unwrap()
            > 8 << 20
    );
    let filters: Vec<&str> = hcm["http_filters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        filters,
        [
            "envoy.filters.http.wasm",
            "envoy.filters.http.mcp",
            "envoy.filters.http.mcp_router"
        ]
    );
    let wasm = &hcm["http_filters"][0]["typed_config"]["config"];
    assert_eq!(wasm["allow_on_headers_stop_iteration"], true);
    let routes = hcm["route_config"]["virtual_hosts"][0]["routes"]
        .as_array()
        .unwrap();
    assert_eq!(routes.len(), 1, "{routes:?}");
    assert_eq!(routes[0]["route"]["timeout"], "0s");
    assert_eq!(
        routes[0]["metadata"]["filter_metadata"]["mcp_tool_search"]["namespace"], "gateway",
        "one namespace for the aggregated endpoint, named by the route"
    );
    let router = &hcm["http_filters"][2]["typed_config"];
    let servers: Vec<&str> = router["servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(servers, ["catalog", "python", "everything"]);
    // A fetch waits for the router's slowest server: a hung one is left out of the list by the
    // router when its timeout passes, which must come before the fetch's own.
    let slowest_ms = router["servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let t = s["mcp_cluster"]["timeout"].as_str().unwrap();
            t.strip_suffix('s').unwrap().parse::<u64>().unwrap() * 1000
        })
        .max()
        .unwrap();
    assert!(
        config.catalog.timeout_ms > slowest_ms,
        "catalog.timeout {} ms is not above mcp_router's {slowest_ms} ms",
        config.catalog.timeout_ms
    );
    // The catalog fetch goes through this listener.
    let clusters = gw["static_resources"]["clusters"].as_array().unwrap();
    let own = clusters.iter().find(|c| c["name"] == "self").unwrap();
    assert_eq!(
        own["load_assignment"]["endpoints"][0]["lb_endpoints"][0]["endpoint"]["address"]
            ["socket_address"]["port_value"],
        *port
    );
}

/// A host path for `path` inside a container whose `volumes` are `host:container[:mode]`, host
/// paths relative to the compose file's folder.
fn host_path(compose_dir: &Path, volumes: &[(PathBuf, String)], path: &str) -> Option<PathBuf> {
    volumes
        .iter()
        .find_map(|(host, mount)| {
            let rest = Path::new(path).strip_prefix(mount).ok()?;
            Some(host.join(rest))
        })
        .or_else(|| {
            Path::new(path)
                .is_relative()
                .then(|| compose_dir.join(path))
        })
}

/// `a/b/../c` as `a/c`, without touching the file system (the file may not exist).
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// The compose file runs from a checkout: every path its services name (the mounted repository,
/// the Envoy config, the catalog, the peer binary) is one the repository has.
#[test]
fn docker_compose_names_files_the_repository_has() {
    let root = workspace_root();
    let compose_dir = root.join("envoy");
    let doc = yaml("envoy/docker-compose.yaml");
    let services = doc["services"]
        .as_object()
        .expect("envoy/docker-compose.yaml: services");
    assert!(
        services.contains_key("envoy") && services.contains_key("catalog"),
        "services: {:?}",
        services.keys().collect::<Vec<_>>()
    );
    let mut checked = Vec::new();
    for (name, service) in services {
        assert!(service["image"].is_string(), "{name}: image");
        let volumes: Vec<(PathBuf, String)> = service["volumes"]
            .as_array()
            .unwrap_or_else(|| panic!("{name}: volumes"))
            .iter()
            .map(|v| {
                let v = v.as_str().unwrap_or_else(|| panic!("{name}: volume {v}"));
                let mut parts = v.split(':');
                let host = normalize(&compose_dir.join(parts.next().unwrap_or_default()));
                let mount = parts.next().unwrap_or_else(|| panic!("{name}: volume {v}"));
                assert!(
                    host.exists(),
                    "{name}: volume {v}: {} is missing",
                    host.display()
                );
                (host, mount.to_owned())
            })
            .collect();
        let workdir = service["working_dir"].as_str().unwrap_or("/");
        let workdir = host_path(&compose_dir, &volumes, workdir)
            .unwrap_or_else(|| panic!("{name}: working_dir {workdir} is not a mounted folder"));
        assert_eq!(
            normalize(&workdir),
            root,
            "{name}: working_dir is the repository"
        );
        let words: Vec<String> = match &service["command"] {
            Value::String(s) => s.split_whitespace().map(str::to_owned).collect(),
            Value::Array(a) => a
                .iter()
                .filter_map(|w| w.as_str().map(str::to_owned))
                .collect(),
            other => panic!("{name}: command {other}"),
        };
        for word in words
            .iter()
            .filter(|w| w.contains('/') && !w.contains("://"))
        {
            let path = if Path::new(word).is_absolute() {
                host_path(&compose_dir, &volumes, word)
                    .unwrap_or_else(|| panic!("{name}: {word} is outside every volume"))
            } else {
                workdir.join(word)
            };
            assert!(
                path.exists(),
                "{name}: {word} ({}) is not in the repository",
                path.display()
            );
            checked.push(word.clone());
        }
        // The binary `cargo run --bin` builds is one of this package's.
        if let Some(at) = words.iter().position(|w| w == "--bin") {
            let bin = &words[at + 1];
            let package = &words[words.iter().position(|w| w == "-p").expect("-p") + 1];
            assert_eq!(package, env!("CARGO_PKG_NAME"), "{name}: cargo -p");
            let manifest = std::fs::read_to_string(root.join("wasm-tests/Cargo.toml")).unwrap();
            assert!(
                manifest.contains(&format!("[[bin]]\nname = \"{bin}\"")),
                "{name}: no bin {bin} in wasm-tests/Cargo.toml"
            );
        }
    }
    assert!(
        checked.iter().any(|w| w == "/repo/envoy/demo.yaml")
            && checked.iter().any(|w| w.ends_with("catalog-300.jsonl")),
        "the Envoy config and the catalog were not among the paths checked: {checked:?}"
    );
}
