#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use super::*;
use serde_json::json;
use std::path::Path;

/// The YAML as JSON, as Envoy's loader reads it.
fn parsed(yaml: &str) -> serde_json::Value {
    let doc: serde_norway::Value = serde_norway::from_str(yaml).unwrap();
    serde_json::to_value(doc).unwrap()
}

#[test]
fn every_string_stays_a_string() {
    let tricky = [
        "yes",
        "0s",
        "1234",
        "true",
        "~",
        "null",
        "it's",
        "a: b",
        "- x",
        "#c",
        "{\"a\":[1]}",
        "line\nbreak",
        "tab\there",
        "",
        "@type",
        "*",
    ];
    let y = Yaml::map(tricky.iter().map(|s| (*s, Yaml::from(*s))))
        .with("list", Yaml::list(tricky.iter().map(|s| Yaml::from(*s))));
    let v = parsed(&y.to_yaml());
    for s in tricky {
        assert_eq!(v[s], json!(s), "{}", y.to_yaml());
    }
    assert_eq!(v["list"], json!(tricky));
}

#[test]
fn nests_maps_and_lists_in_block_style() {
    let y = Yaml::map([
        (
            "a",
            Yaml::list([Yaml::map([
                ("b", Yaml::from(1_u32)),
                ("c", Yaml::list([Yaml::from(true)])),
            ])]),
        ),
        ("d", Yaml::empty()),
        ("e", Yaml::list([])),
        ("f", Yaml::list([Yaml::list([Yaml::from("x")])])),
    ]);
    assert_eq!(
        parsed(&y.to_yaml()),
        json!({"a": [{"b": 1, "c": [true]}], "d": {}, "e": [], "f": [["x"]]})
    );
}

#[test]
fn a_bootstrap_holds_what_it_was_given() {
    let addr: SocketAddr = "127.0.0.1:4321".parse().unwrap();
    let wasm = WasmFilter::new(Path::new("/w/f's.wasm"), r#"{"x":"it's"}"#)
        .allow_on_headers_stop_iteration(true);
    let listener = Listener::new("gw")
        .port(8080)
        .no_stream_idle_timeout()
        .normalize_paths()
        .buffer_limit(1 << 20)
        .virtual_host(VirtualHost::new(
            "h",
            &["h", "h:*"],
            vec![
                Route::path("/mcp")
                    .header_exact("x-k", "v")
                    .to_cluster_untimed("up")
                    .route_option("host_rewrite_literal", "127.0.0.1:1")
                    .namespace("ns")
                    .per_filter_config("envoy.filters.http.buffer", HttpFilter::buffer_disabled()),
                Route::prefix("/").direct(403, Some("no")),
            ],
        ))
        .filter(HttpFilter::wasm(&wasm))
        .filter(HttpFilter::mcp())
        .filter(HttpFilter::mcp_router(&[
            McpServer::new("up").timeout("30s")
        ]))
        .filter(HttpFilter::router());
    let y = parsed(
        &Bootstrap::new()
            .listener(listener)
            .cluster(
                Cluster::new("up", addr)
                    .connect_timeout("5s")
                    .buffer_limit(7),
            )
            .to_yaml(),
    );
    let l = &y["static_resources"]["listeners"][0];
    assert_eq!(l["address"]["socket_address"]["port_value"], 8080);
    assert_eq!(l["per_connection_buffer_limit_bytes"], 1 << 20);
    let hcm = &l["filter_chains"][0]["filters"][0]["typed_config"];
    assert_eq!(hcm["stat_prefix"], "gw");
    assert_eq!(hcm["normalize_path"], true);
    assert!(hcm["route_config"].get("name").is_none());
    let route = &hcm["route_config"]["virtual_hosts"][0]["routes"][0];
    assert_eq!(
        route,
        &json!({
            "match": {"path": "/mcp", "headers": [{"name": "x-k", "string_match": {"exact": "v"}}]},
            "route": {"cluster": "up", "timeout": "0s", "host_rewrite_literal": "127.0.0.1:1"},
            "metadata": {"filter_metadata": {"mcp_tool_search": {"namespace": "ns"}}},
            "typed_per_filter_config": {"envoy.filters.http.buffer": {
                "@type": "type.googleapis.com/envoy.extensions.filters.http.buffer.v3.BufferPerRoute",
                "disabled": true
            }}
        })
    );
    let config = &hcm["http_filters"][0]["typed_config"]["config"];
    assert_eq!(config["configuration"]["value"], r#"{"x":"it's"}"#);
    assert_eq!(
        config["vm_config"]["code"]["local"]["filename"],
        "/w/f's.wasm"
    );
    assert_eq!(
        hcm["http_filters"][2]["typed_config"]["servers"][0]["mcp_cluster"],
        json!({"cluster": "up", "path": "/mcp", "timeout": "30s"})
    );
    let c = &y["static_resources"]["clusters"][0];
    assert_eq!(c["connect_timeout"], "5s");
    assert_eq!(c["per_connection_buffer_limit_bytes"], 7);
}
