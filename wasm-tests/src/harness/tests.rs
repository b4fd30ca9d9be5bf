use super::envoy::base_id_in_use;
use super::*;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

#[test]
fn ci_is_required_unless_it_says_it_is_not() {
    for ci in ["true", "1", "yes", "TRUE"] {
        assert!(required_by(Some(ci), None), "CI={ci}");
    }
    for ci in [None, Some(""), Some("0"), Some("false"), Some("False")] {
        assert!(!required_by(ci, None), "CI={ci:?}");
        assert!(required_by(ci, Some("1")), "CI={ci:?} OCI_REQUIRED=1");
        assert!(!required_by(ci, Some("0")), "CI={ci:?} OCI_REQUIRED=0");
    }
}

#[test]
fn free_ports_are_distinct() {
    let a = free_port().unwrap();
    let b = free_port().unwrap();
    assert_ne!(a, b);
}

/// The YAML as JSON, to look into.
fn parsed(yaml: &str) -> serde_json::Value {
    let doc: serde_norway::Value = serde_norway::from_str(yaml).unwrap();
    serde_json::to_value(doc).unwrap()
}

fn hcm(y: &serde_json::Value) -> &serde_json::Value {
    &y["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]["typed_config"]
}

#[test]
fn bootstrap_quotes_plugin_config() {
    let opts = EnvoyOptions::new(
        "127.0.0.1:1234".parse().unwrap(),
        Some(FilterOptions {
            wasm: PathBuf::from("/x/f.wasm"),
            config_json: r#"{"a":"it's"}"#.to_owned(),
        }),
    );
    let text = bootstrap_yaml(&opts);
    assert!(text.contains(r#"value: '{"a":"it''s"}'"#), "{text}");
    let y = parsed(&text);
    let wasm = &hcm(&y)["http_filters"][0]["typed_config"]["config"];
    assert_eq!(wasm["configuration"]["value"], r#"{"a":"it's"}"#);
    assert_eq!(wasm["vm_config"]["code"]["local"]["filename"], "/x/f.wasm");
    let upstream = &y["static_resources"]["clusters"][0];
    assert_eq!(upstream["name"], "mcp_upstream");
    assert_eq!(
        upstream["load_assignment"]["endpoints"][0]["lb_endpoints"][0]["endpoint"]["address"]
            ["socket_address"]["port_value"],
        1234
    );
    assert_eq!(hcm(&y)["stream_idle_timeout"], "0s");
}

#[test]
fn bootstrap_with_jwt_metadata_and_search_routes() {
    let mut opts = EnvoyOptions::new(
        "127.0.0.1:1234".parse().unwrap(),
        Some(FilterOptions {
            wasm: PathBuf::from("/x/f.wasm"),
            config_json: "{}".to_owned(),
        }),
    );
    let mut jwt = JwtAuthnOptions::new("{\"keys\":[]}".to_owned(), JwtRequirement::AllowMissing);
    jwt.payload_in_metadata = Some("jwt_payload".to_owned());
    jwt.open_prefixes = vec!["/mcp/search/health".to_owned()];
    opts.http_filters_before.push(jwt.filter());
    opts.allow_on_headers_stop_iteration = true;
    opts.route_namespace = Some("ns1".to_owned());
    opts.search_prefix = Some("/mcp/search".to_owned());
    let y = parsed(&bootstrap_yaml(&opts));
    let filters = &hcm(&y)["http_filters"];
    assert_eq!(filters[0]["name"], "envoy.filters.http.jwt_authn");
    let jwt = &filters[0]["typed_config"];
    assert_eq!(
        jwt["providers"]["test"]["payload_in_metadata"],
        "jwt_payload"
    );
    assert_eq!(jwt["rules"][0]["match"]["prefix"], "/mcp/search/health");
    assert_eq!(
        jwt["rules"][1]["requires"]["requires_any"]["requirements"][1]["allow_missing"],
        serde_json::json!({})
    );
    assert_eq!(filters[1]["name"], "envoy.filters.http.wasm");
    assert_eq!(
        filters[1]["typed_config"]["config"]["allow_on_headers_stop_iteration"],
        true
    );
    assert_eq!(filters[2]["name"], "envoy.filters.http.router");
    let routes = hcm(&y)["route_config"]["virtual_hosts"][0]["routes"]
        .as_array()
        .unwrap();
    assert_eq!(routes[0]["match"]["prefix"], "/mcp/search");
    let namespaced = routes
        .iter()
        .filter(|r| r["metadata"]["filter_metadata"]["mcp_tool_search"]["namespace"] == "ns1")
        .count();
    assert_eq!(namespaced, 3);
}

#[test]
fn bootstrap_with_extra_clusters_and_the_embeddings_front() {
    let mut opts = EnvoyOptions::new("127.0.0.1:1234".parse().unwrap(), None);
    opts.extra_clusters.push(crate::envoy_config::Cluster::new(
        "embeddings",
        "127.0.0.1:5678".parse().unwrap(),
    ));
    let y = parsed(&bootstrap_yaml(&opts));
    let embeddings = &y["static_resources"]["clusters"][1];
    assert_eq!(embeddings["name"], "embeddings");
    assert_eq!(embeddings["type"], "STATIC");
    assert_eq!(hcm(&y)["http_filters"].as_array().unwrap().len(), 1);
    let mut front = FrontOptions::new("127.0.0.1:5678".parse().unwrap());
    front.abort_percent = 100;
    front.delay = Duration::from_millis(2500);
    let y = parsed(&embeddings_front_yaml(&front));
    let fault = &hcm(&y)["http_filters"][0]["typed_config"];
    assert_eq!(fault["delay"]["fixed_delay"], "2.5s");
    assert_eq!(fault["abort"]["percentage"]["numerator"], 100);
    assert_eq!(
        hcm(&y)["route_config"]["virtual_hosts"][0]["routes"][0]["match"]["runtime_fraction"]
            ["runtime_key"],
        "front.garbage_json"
    );
    assert_eq!(y["static_resources"]["clusters"][0]["name"], "sidecar");
}

#[test]
fn killing_a_process_group_reaps_grandchildren() {
    let dir = TestDir::new("proc").unwrap();
    let pidfile = dir.join("grandchild.pid");
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(format!("sleep 60 & echo $! > {}; wait", pidfile.display()));
    let proc = Proc::spawn("sh", cmd).unwrap();
    let gc: i32 = wait_until("grandchild pid", Duration::from_secs(5), || {
        std::fs::read_to_string(&pidfile).ok()?.trim().parse().ok()
    })
    .unwrap();
    drop(proc);
    // The grandchild is reparented to init and reaped there; it must disappear.
    wait_until("grandchild gone", Duration::from_secs(5), || {
        let state = std::fs::read_to_string(format!("/proc/{gc}/stat")).ok();
        match state {
            None => Some(()),
            Some(s) if s.contains(") Z ") => Some(()),
            Some(_) => None,
        }
    })
    .unwrap();
}

#[test]
fn a_failed_envoy_start_fails_at_once_with_envoy_s_reason() {
    let dir = TestDir::new("envoy-bad-config").unwrap();
    let bad = "static_resources:\n  clusters:\n  - name: c\n    type: NOT_A_TYPE\n";
    let e = Envoy::start_yaml(bad, "wasm:warning", &dir).expect_err("an invalid bootstrap started");
    let e = e.to_string();
    assert!(e.contains("envoy did not start"), "{e}");
    assert!(e.contains("NOT_A_TYPE"), "Envoy's reason is missing: {e}");
    let starts = std::fs::read_dir(dir.path())
        .unwrap()
        .filter(|f| {
            let name = f.as_ref().unwrap().file_name();
            let name = name.to_string_lossy();
            name.starts_with("envoy-") && name.ends_with(".yaml")
        })
        .count();
    assert_eq!(starts, 1, "a start that cannot succeed was retried");
}

#[test]
fn a_base_id_in_use_is_recognised_from_what_envoy_says() {
    let dir = TestDir::new("envoy-base-id").unwrap();
    let upstream: SocketAddr = format!("127.0.0.1:{}", free_port().unwrap())
        .parse()
        .unwrap();
    let first = Envoy::start(&EnvoyOptions::new(upstream, None), &dir).unwrap();
    // A second Envoy on the first one's base id, as a stray Envoy would be.
    let stderr_path = dir.join("second.stderr");
    let mut cmd = Command::new(envoy_bin().unwrap());
    cmd.arg("-c")
        .arg(&first.config_path)
        .arg("--base-id")
        .arg(first.base_id.to_string())
        .arg("--log-path")
        .arg(dir.join("second.log"))
        .stdin(Stdio::null())
        .stderr(std::fs::File::create(&stderr_path).unwrap());
    let mut second = Proc::spawn("second envoy", cmd).unwrap();
    let status = wait_until("the second envoy to exit", Duration::from_secs(30), || {
        second.exited()
    })
    .unwrap();
    let stderr = std::fs::read_to_string(&stderr_path).unwrap();
    assert!(!status.contains("exit status: 0"), "{status}: {stderr}");
    assert!(base_id_in_use(&stderr), "not recognised: {stderr}");
    assert!(!base_id_in_use(
        "error initializing configuration 'x.yaml': NOT_A_TYPE"
    ));
}
