//! The HTTP filters of a listener's chain: this filter and any proxy-wasm filter
//! ([`WasmFilter`]), and Envoy's `router`, `jwt_authn`, `rbac`, `fault`, `buffer`, `mcp` and
//! `mcp_router`.

use super::{typed, Yaml};
use std::path::{Path, PathBuf};

/// One entry of `http_filters`.
#[derive(Debug, Clone)]
pub struct HttpFilter {
    pub name: String,
    pub typed_config: Yaml,
}

impl HttpFilter {
    /// Filter `name` with `typed_config` (its `@type` included).
    pub fn new(name: &str, typed_config: Yaml) -> HttpFilter {
        HttpFilter {
            name: name.to_owned(),
            typed_config,
        }
    }

    /// `envoy.filters.http.router`, the last of every chain.
    pub fn router() -> HttpFilter {
        HttpFilter::new(
            "envoy.filters.http.router",
            typed("type.googleapis.com/envoy.extensions.filters.http.router.v3.Router"),
        )
    }

    /// This filter (or another proxy-wasm filter): see [`WasmFilter`].
    pub fn wasm(filter: &WasmFilter) -> HttpFilter {
        HttpFilter::new("envoy.filters.http.wasm", filter.typed_config())
    }

    /// Envoy's `envoy.filters.http.mcp` (parses MCP requests for `mcp_router`).
    pub fn mcp() -> HttpFilter {
        HttpFilter::new(
            "envoy.filters.http.mcp",
            typed("type.googleapis.com/envoy.extensions.filters.http.mcp.v3.Mcp"),
        )
    }

    /// Envoy's `envoy.filters.http.mcp_router` over `servers`.
    pub fn mcp_router(servers: &[McpServer]) -> HttpFilter {
        HttpFilter::new(
            "envoy.filters.http.mcp_router",
            typed("type.googleapis.com/envoy.extensions.filters.http.mcp_router.v3.McpRouter")
                .with("servers", Yaml::list(servers.iter().map(McpServer::node))),
        )
    }

    /// Envoy's `envoy.filters.http.buffer`: reads the whole request body (up to
    /// `max_request_bytes`) before the filters after it see the request.
    pub fn buffer(max_request_bytes: u64) -> HttpFilter {
        HttpFilter::new(
            "envoy.filters.http.buffer",
            typed("type.googleapis.com/envoy.extensions.filters.http.buffer.v3.Buffer")
                .with("max_request_bytes", max_request_bytes),
        )
    }

    /// The route configuration that turns [`HttpFilter::buffer`] off on a route.
    pub fn buffer_disabled() -> Yaml {
        typed("type.googleapis.com/envoy.extensions.filters.http.buffer.v3.BufferPerRoute")
            .with("disabled", true)
    }

    /// Envoy's `envoy.filters.http.fault`: `abort_percent` of requests answered 500,
    /// `delay_percent` held `delay_secs` first (the runtime keys are Envoy's defaults).
    pub fn fault(abort_percent: u32, delay_percent: u32, delay_secs: f64) -> HttpFilter {
        let percentage = |n: u32| {
            Yaml::map([
                ("numerator", Yaml::from(n)),
                ("denominator", "HUNDRED".into()),
            ])
        };
        HttpFilter::new(
            "envoy.filters.http.fault",
            typed("type.googleapis.com/envoy.extensions.filters.http.fault.v3.HTTPFault")
                .with(
                    "abort",
                    Yaml::map([
                        ("http_status", Yaml::from(500_u32)),
                        ("percentage", percentage(abort_percent)),
                    ]),
                )
                .with(
                    "delay",
                    Yaml::map([
                        ("fixed_delay", Yaml::from(format!("{delay_secs}s"))),
                        ("percentage", percentage(delay_percent)),
                    ]),
                ),
        )
    }

    /// Envoy's `envoy.filters.http.rbac` denying paths starting with `path_prefix` to every
    /// request whose header `header` is not exactly `value` (policy `policy`).
    pub fn rbac_deny_prefix_without_header(
        policy: &str,
        path_prefix: &str,
        header: &str,
        value: &str,
    ) -> HttpFilter {
        let permission = Yaml::map([(
            "url_path",
            Yaml::map([("path", Yaml::map([("prefix", Yaml::from(path_prefix))]))]),
        )]);
        let principal = Yaml::map([(
            "not_id",
            Yaml::map([(
                "header",
                Yaml::map([
                    ("name", Yaml::from(header)),
                    ("string_match", Yaml::map([("exact", Yaml::from(value))])),
                ]),
            )]),
        )]);
        HttpFilter::new(
            "envoy.filters.http.rbac",
            typed("type.googleapis.com/envoy.extensions.filters.http.rbac.v3.RBAC").with(
                "rules",
                Yaml::map([
                    ("action", Yaml::from("DENY")),
                    (
                        "policies",
                        Yaml::map([(
                            policy,
                            Yaml::map([
                                ("permissions", Yaml::list([permission])),
                                ("principals", Yaml::list([principal])),
                            ]),
                        )]),
                    ),
                ]),
            ),
        )
    }

    pub fn node(&self) -> Yaml {
        Yaml::map([
            ("name", Yaml::from(&self.name)),
            ("typed_config", self.typed_config.clone()),
        ])
    }
}

/// One server of [`HttpFilter::mcp_router`].
#[derive(Debug, Clone)]
pub struct McpServer {
    pub name: String,
    pub cluster: String,
    pub path: String,
    pub timeout: Option<String>,
}

impl McpServer {
    /// Server `name` behind cluster `name` at `/mcp`.
    pub fn new(name: &str) -> McpServer {
        McpServer {
            name: name.to_owned(),
            cluster: name.to_owned(),
            path: "/mcp".to_owned(),
            timeout: None,
        }
    }

    pub fn timeout(mut self, timeout: &str) -> McpServer {
        self.timeout = Some(timeout.to_owned());
        self
    }

    fn node(&self) -> Yaml {
        let mut cluster = Yaml::map([
            ("cluster", Yaml::from(&self.cluster)),
            ("path", Yaml::from(&self.path)),
        ]);
        if let Some(t) = &self.timeout {
            cluster = cluster.with("timeout", t);
        }
        Yaml::map([("name", Yaml::from(&self.name)), ("mcp_cluster", cluster)])
    }
}

/// A proxy-wasm filter on V8: this filter by default ([`WasmFilter::new`]).
#[derive(Debug, Clone)]
pub struct WasmFilter {
    /// The plugin's name and root id.
    pub name: String,
    pub wasm: PathBuf,
    /// The plugin configuration (JSON text), if any.
    pub configuration: Option<String>,
    /// `allow_on_headers_stop_iteration` (Envoy 1.35+): lets the filter hold request headers
    /// until it has read the body (`hold_request_headers`).
    pub allow_on_headers_stop_iteration: bool,
    /// A VM of its own.
    pub vm_id: Option<String>,
}

impl WasmFilter {
    /// This filter (`mcp_tool_search`) from `wasm` with plugin configuration `config_json`.
    pub fn new(wasm: &Path, config_json: &str) -> WasmFilter {
        WasmFilter {
            name: "mcp_tool_search".to_owned(),
            wasm: wasm.to_path_buf(),
            configuration: Some(config_json.to_owned()),
            allow_on_headers_stop_iteration: false,
            vm_id: None,
        }
    }

    /// See [`WasmFilter::allow_on_headers_stop_iteration`].
    pub fn allow_on_headers_stop_iteration(mut self, allow: bool) -> WasmFilter {
        self.allow_on_headers_stop_iteration = allow;
        self
    }

    fn typed_config(&self) -> Yaml {
        let mut config = Yaml::map([
            ("name", Yaml::from(&self.name)),
            ("root_id", Yaml::from(&self.name)),
        ]);
        if self.allow_on_headers_stop_iteration {
            config = config.with("allow_on_headers_stop_iteration", true);
        }
        if let Some(json) = &self.configuration {
            config = config.with(
                "configuration",
                typed("type.googleapis.com/google.protobuf.StringValue").with("value", json),
            );
        }
        let mut vm = Yaml::empty();
        if let Some(id) = &self.vm_id {
            vm = vm.with("vm_id", id);
        }
        let vm = vm.with("runtime", "envoy.wasm.runtime.v8").with(
            "code",
            Yaml::map([(
                "local",
                Yaml::map([("filename", Yaml::from(self.wasm.display().to_string()))]),
            )]),
        );
        typed("type.googleapis.com/envoy.extensions.filters.http.wasm.v3.Wasm")
            .with("config", config.with("vm_config", vm))
    }
}

/// How `jwt_authn` treats a request without a valid token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JwtRequirement {
    /// A valid token is required: missing or invalid is a 401.
    Required,
    /// A missing token passes (anonymous); an invalid one is a 401.
    AllowMissing,
    /// Missing or invalid tokens both pass (as anonymous).
    AllowMissingOrFailed,
}

/// Envoy's real `envoy.filters.http.jwt_authn`, one provider `test` with a local JWKS inline.
#[derive(Debug, Clone)]
pub struct JwtAuthnOptions {
    pub issuer: String,
    pub audience: String,
    /// The JWKS JSON (e.g. [`crate::jwt::Hs256Key::jwks`]).
    pub jwks: String,
    /// `payload_in_metadata`: dynamic metadata `envoy.filters.http.jwt_authn.<key>`.
    pub payload_in_metadata: Option<String>,
    /// `forward_payload_header`: the payload as base64url JSON in this request header.
    pub forward_payload_header: Option<String>,
    pub requirement: JwtRequirement,
    /// Path prefixes that need no token at all (matched before `/`).
    pub open_prefixes: Vec<String>,
}

impl JwtAuthnOptions {
    pub fn new(jwks: String, requirement: JwtRequirement) -> Self {
        Self {
            issuer: crate::jwt::ISSUER.to_owned(),
            audience: crate::jwt::AUDIENCE.to_owned(),
            jwks,
            payload_in_metadata: None,
            forward_payload_header: None,
            requirement,
            open_prefixes: Vec::new(),
        }
    }

    /// The filter.
    pub fn filter(&self) -> HttpFilter {
        let mut provider = Yaml::map([
            ("issuer", Yaml::from(&self.issuer)),
            ("audiences", Yaml::list([Yaml::from(&self.audience)])),
            (
                "local_jwks",
                Yaml::map([("inline_string", Yaml::from(&self.jwks))]),
            ),
            ("forward", Yaml::Bool(true)),
        ]);
        if let Some(key) = &self.payload_in_metadata {
            provider = provider.with("payload_in_metadata", key);
        }
        if let Some(h) = &self.forward_payload_header {
            provider = provider.with("forward_payload_header", h);
        }
        let test = || Yaml::map([("provider_name", Yaml::from("test"))]);
        let either = |alternative: &str| {
            Yaml::map([(
                "requires_any",
                Yaml::map([(
                    "requirements",
                    Yaml::list([test(), Yaml::map([(alternative, Yaml::empty())])]),
                )]),
            )])
        };
        let requires = match self.requirement {
            JwtRequirement::Required => test(),
            JwtRequirement::AllowMissing => either("allow_missing"),
            JwtRequirement::AllowMissingOrFailed => either("allow_missing_or_failed"),
        };
        let prefix = |p: &str| Yaml::map([("prefix", Yaml::from(p))]);
        let mut rules: Vec<Yaml> = self
            .open_prefixes
            .iter()
            .map(|p| Yaml::map([("match", prefix(p))]))
            .collect();
        rules.push(Yaml::map([("match", prefix("/")), ("requires", requires)]));
        HttpFilter::new(
            "envoy.filters.http.jwt_authn",
            typed(
                "type.googleapis.com/envoy.extensions.filters.http.jwt_authn.v3.JwtAuthentication",
            )
            .with("providers", Yaml::map([("test", provider)]))
            .with("rules", Yaml::List(rules)),
        )
    }
}
