//! Envoy bootstraps, built from parts: [`Bootstrap`] (admin, listeners, clusters), [`Listener`]
//! (an HTTP connection manager: virtual hosts of [`Route`]s, [`HttpFilter`]s), [`Cluster`]
//! (plain HTTP/1.1 to one static endpoint: an upstream, the filter's loopback or embeddings
//! cluster), and the filters the tests and the bench put in front of the router: this filter
//! ([`WasmFilter`]), `jwt_authn`, `rbac`, `fault`, `buffer`, `mcp` and `mcp_router`.
//!
//! Every part is a [`Yaml`] tree, written out as block YAML with every string quoted, so no
//! value (a JSON plugin configuration, a path, a JWKS) is ever read as anything but a string.
//! Admin and listeners bind port 0 unless told otherwise: the harness reads the real ports back
//! from the admin API, so concurrent tests never race for a port.

mod filters;
mod yaml;

pub use filters::{HttpFilter, JwtAuthnOptions, JwtRequirement, McpServer, WasmFilter};
pub use yaml::{quoted, Yaml};

use std::net::SocketAddr;

/// `{ "@type": type_url }`, to which the typed config's fields are added.
pub(crate) fn typed(type_url: &str) -> Yaml {
    Yaml::map([("@type", Yaml::from(type_url))])
}

/// `{ socket_address: { address, port_value } }`.
pub(crate) fn socket_address(host: &str, port: u16) -> Yaml {
    Yaml::map([(
        "socket_address",
        Yaml::map([("address", host.into()), ("port_value", port.into())]),
    )])
}

// ---- the bootstrap ---------------------------------------------------------------------------------

/// A whole bootstrap: an admin on a port of the kernel's choosing, listeners, clusters.
#[derive(Debug, Clone, Default)]
pub struct Bootstrap {
    pub listeners: Vec<Listener>,
    pub clusters: Vec<Cluster>,
    /// A layered runtime with a static and an admin layer (keys set through `/runtime_modify`).
    pub runtime_admin_layer: bool,
}

impl Bootstrap {
    pub fn new() -> Bootstrap {
        Bootstrap::default()
    }

    pub fn listener(mut self, listener: Listener) -> Bootstrap {
        self.listeners.push(listener);
        self
    }

    pub fn cluster(mut self, cluster: Cluster) -> Bootstrap {
        self.clusters.push(cluster);
        self
    }

    pub fn clusters(mut self, clusters: impl IntoIterator<Item = Cluster>) -> Bootstrap {
        self.clusters.extend(clusters);
        self
    }

    /// See [`Bootstrap::runtime_admin_layer`].
    pub fn with_runtime_admin_layer(mut self) -> Bootstrap {
        self.runtime_admin_layer = true;
        self
    }

    pub fn node(&self) -> Yaml {
        let mut root = Yaml::map([(
            "admin",
            Yaml::map([("address", socket_address("127.0.0.1", 0))]),
        )]);
        if self.runtime_admin_layer {
            root = root.with(
                "layered_runtime",
                Yaml::map([(
                    "layers",
                    Yaml::list([
                        Yaml::map([("name", "static".into()), ("static_layer", Yaml::empty())]),
                        Yaml::map([("name", "admin".into()), ("admin_layer", Yaml::empty())]),
                    ]),
                )]),
            );
        }
        root.with(
            "static_resources",
            Yaml::map([
                (
                    "listeners",
                    Yaml::list(self.listeners.iter().map(Listener::node)),
                ),
                (
                    "clusters",
                    Yaml::list(self.clusters.iter().map(Cluster::node)),
                ),
            ]),
        )
    }

    pub fn to_yaml(&self) -> String {
        self.node().to_yaml()
    }
}

// ---- listeners -------------------------------------------------------------------------------------

/// A listener on 127.0.0.1 with one HTTP connection manager.
#[derive(Debug, Clone)]
pub struct Listener {
    pub name: String,
    /// 0: the kernel's choice.
    pub port: u16,
    pub stat_prefix: String,
    /// `stream_idle_timeout: 0s`: an SSE stream may stay quiet for as long as it likes.
    pub no_stream_idle_timeout: bool,
    /// `normalize_path` and `merge_slashes`: routes see the path as RFC 3986 normalizes it.
    pub normalize_paths: bool,
    /// `per_connection_buffer_limit_bytes`.
    pub buffer_limit: Option<u64>,
    /// The route configuration's `name`, if any.
    pub route_config_name: Option<String>,
    pub virtual_hosts: Vec<VirtualHost>,
    /// In order; the router is not added (see [`HttpFilter::router`]).
    pub http_filters: Vec<HttpFilter>,
}

impl Listener {
    /// A listener on port 0 whose statistics prefix is its name, nothing else set.
    pub fn new(name: &str) -> Listener {
        Listener {
            name: name.to_owned(),
            port: 0,
            stat_prefix: name.to_owned(),
            no_stream_idle_timeout: false,
            normalize_paths: false,
            buffer_limit: None,
            route_config_name: None,
            virtual_hosts: Vec::new(),
            http_filters: Vec::new(),
        }
    }

    pub fn port(mut self, port: u16) -> Listener {
        self.port = port;
        self
    }

    pub fn stat_prefix(mut self, prefix: &str) -> Listener {
        self.stat_prefix = prefix.to_owned();
        self
    }

    /// See [`Listener::no_stream_idle_timeout`].
    pub fn no_stream_idle_timeout(mut self) -> Listener {
        self.no_stream_idle_timeout = true;
        self
    }

    /// See [`Listener::normalize_paths`].
    pub fn normalize_paths(mut self) -> Listener {
        self.normalize_paths = true;
        self
    }

    pub fn buffer_limit(mut self, bytes: u64) -> Listener {
        self.buffer_limit = Some(bytes);
        self
    }

    pub fn route_config_name(mut self, name: &str) -> Listener {
        self.route_config_name = Some(name.to_owned());
        self
    }

    pub fn virtual_host(mut self, host: VirtualHost) -> Listener {
        self.virtual_hosts.push(host);
        self
    }

    /// One virtual host `all` for every domain, with `routes`.
    pub fn routes(self, routes: Vec<Route>) -> Listener {
        self.virtual_host(VirtualHost::new("all", &["*"], routes))
    }

    pub fn filter(mut self, filter: HttpFilter) -> Listener {
        self.http_filters.push(filter);
        self
    }

    pub fn filters(mut self, filters: impl IntoIterator<Item = HttpFilter>) -> Listener {
        self.http_filters.extend(filters);
        self
    }

    pub fn node(&self) -> Yaml {
        let mut hcm = typed(
            "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
        )
        .with("stat_prefix", &self.stat_prefix);
        if self.no_stream_idle_timeout {
            hcm = hcm.with("stream_idle_timeout", "0s");
        }
        if self.normalize_paths {
            hcm = hcm.with("normalize_path", true).with("merge_slashes", true);
        }
        let mut route_config = Yaml::empty();
        if let Some(name) = &self.route_config_name {
            route_config = route_config.with("name", name);
        }
        let route_config = route_config.with(
            "virtual_hosts",
            Yaml::list(self.virtual_hosts.iter().map(VirtualHost::node)),
        );
        let hcm = hcm.with("route_config", route_config).with(
            "http_filters",
            Yaml::list(self.http_filters.iter().map(HttpFilter::node)),
        );
        let mut listener = Yaml::map([
            ("name", Yaml::from(&self.name)),
            ("address", socket_address("127.0.0.1", self.port)),
        ]);
        if let Some(limit) = self.buffer_limit {
            listener = listener.with("per_connection_buffer_limit_bytes", limit);
        }
        listener.with(
            "filter_chains",
            Yaml::list([Yaml::map([(
                "filters",
                Yaml::list([Yaml::map([
                    (
                        "name",
                        "envoy.filters.network.http_connection_manager".into(),
                    ),
                    ("typed_config", hcm),
                ])]),
            )])]),
        )
    }
}

/// A virtual host: the domains it answers and its routes, first match wins.
#[derive(Debug, Clone)]
pub struct VirtualHost {
    pub name: String,
    pub domains: Vec<String>,
    pub routes: Vec<Route>,
}

impl VirtualHost {
    pub fn new(name: &str, domains: &[&str], routes: Vec<Route>) -> VirtualHost {
        VirtualHost {
            name: name.to_owned(),
            domains: domains.iter().map(|d| (*d).to_owned()).collect(),
            routes,
        }
    }

    pub fn node(&self) -> Yaml {
        Yaml::map([
            ("name", Yaml::from(&self.name)),
            ("domains", Yaml::list(self.domains.iter().map(Yaml::from))),
            ("routes", Yaml::list(self.routes.iter().map(Route::node))),
        ])
    }
}

/// One route: its match, its action (a cluster or a direct response) and what goes with it.
#[derive(Debug, Clone)]
pub struct Route {
    matcher: Yaml,
    /// `route` or `direct_response`, and its body.
    action: (&'static str, Yaml),
    /// More members (metadata, per-filter configuration, headers to add).
    rest: Vec<(String, Yaml)>,
}

impl Route {
    fn matching(kind: &str, value: &str) -> Route {
        Route {
            matcher: Yaml::map([(kind, Yaml::from(value))]),
            action: ("route", Yaml::empty()),
            rest: Vec::new(),
        }
    }

    /// Matches the path exactly (the query aside).
    pub fn path(path: &str) -> Route {
        Route::matching("path", path)
    }

    /// Matches every path starting with `prefix`.
    pub fn prefix(prefix: &str) -> Route {
        Route::matching("prefix", prefix)
    }

    /// Also requires header `name` to be exactly `value`.
    pub fn header_exact(mut self, name: &str, value: &str) -> Route {
        let matcher = Yaml::map([
            ("name", Yaml::from(name)),
            ("string_match", Yaml::map([("exact", Yaml::from(value))])),
        ]);
        if let Yaml::Map(pairs) = &mut self.matcher {
            match pairs.iter_mut().find(|(k, _)| k == "headers") {
                Some((_, Yaml::List(list))) => list.push(matcher),
                _ => pairs.push(("headers".to_owned(), Yaml::list([matcher]))),
            }
        }
        self
    }

    /// Matches only `percent` of requests, changed at run time through `runtime_key`.
    pub fn runtime_fraction(mut self, percent: u32, runtime_key: &str) -> Route {
        self.matcher = self.matcher.with(
            "runtime_fraction",
            Yaml::map([
                (
                    "default_value",
                    Yaml::map([
                        ("numerator", Yaml::from(percent)),
                        ("denominator", "HUNDRED".into()),
                    ]),
                ),
                ("runtime_key", runtime_key.into()),
            ]),
        );
        self
    }

    /// Proxied to `cluster` (Envoy's default route timeout).
    pub fn to_cluster(mut self, cluster: &str) -> Route {
        self.action = ("route", Yaml::map([("cluster", Yaml::from(cluster))]));
        self
    }

    /// Proxied to `cluster` with no route timeout (`0s`): an SSE stream may last.
    pub fn to_cluster_untimed(self, cluster: &str) -> Route {
        self.to_cluster(cluster).route_option("timeout", "0s")
    }

    /// A member of the `route` action (`timeout`, `prefix_rewrite`, `host_rewrite_literal`…).
    pub fn route_option(mut self, key: &str, value: impl Into<Yaml>) -> Route {
        let (kind, action) = self.action;
        self.action = (kind, action.with(key, value));
        self
    }

    /// Answered by Envoy: `status`, and `body` when given.
    pub fn direct(mut self, status: u16, body: Option<&str>) -> Route {
        let mut response = Yaml::map([("status", Yaml::from(status))]);
        if let Some(body) = body {
            response = response.with("body", Yaml::map([("inline_string", Yaml::from(body))]));
        }
        self.action = ("direct_response", response);
        self
    }

    /// A response header set on what this route answers (replacing one already there).
    pub fn response_header(mut self, name: &str, value: &str) -> Route {
        let header = Yaml::map([
            (
                "header",
                Yaml::map([("key", Yaml::from(name)), ("value", Yaml::from(value))]),
            ),
            ("append_action", "OVERWRITE_IF_EXISTS_OR_ADD".into()),
        ]);
        match self
            .rest
            .iter_mut()
            .find(|(k, _)| k == "response_headers_to_add")
        {
            Some((_, Yaml::List(list))) => list.push(header),
            _ => self
                .rest
                .push(("response_headers_to_add".to_owned(), Yaml::list([header]))),
        }
        self
    }

    /// Route metadata `filter_metadata.mcp_tool_search.namespace`: the filter's catalog
    /// namespace for this route (else the cluster's name).
    pub fn namespace(mut self, namespace: &str) -> Route {
        self.rest.push((
            "metadata".to_owned(),
            Yaml::map([(
                "filter_metadata",
                Yaml::map([(
                    "mcp_tool_search",
                    Yaml::map([("namespace", Yaml::from(namespace))]),
                )]),
            )]),
        ));
        self
    }

    /// `namespace` when given.
    pub fn namespace_opt(self, namespace: Option<&str>) -> Route {
        match namespace {
            Some(ns) => self.namespace(ns),
            None => self,
        }
    }

    /// `typed_per_filter_config` for the filter named `filter`.
    pub fn per_filter_config(mut self, filter: &str, config: Yaml) -> Route {
        match self
            .rest
            .iter_mut()
            .find(|(k, _)| k == "typed_per_filter_config")
        {
            Some((_, map)) => *map = std::mem::replace(map, Yaml::empty()).with(filter, config),
            None => self.rest.push((
                "typed_per_filter_config".to_owned(),
                Yaml::map([(filter, config)]),
            )),
        }
        self
    }

    pub fn node(&self) -> Yaml {
        let (kind, action) = &self.action;
        let mut route = Yaml::map([("match", self.matcher.clone()), (*kind, action.clone())]);
        for (k, v) in &self.rest {
            route = route.with(k, v.clone());
        }
        route
    }
}

// ---- clusters --------------------------------------------------------------------------------------

/// A cluster: plain HTTP/1.1 to one static endpoint.
#[derive(Debug, Clone)]
pub struct Cluster {
    pub name: String,
    pub addr: SocketAddr,
    pub connect_timeout: String,
    /// `per_connection_buffer_limit_bytes`.
    pub buffer_limit: Option<u64>,
}

impl Cluster {
    /// Cluster `name` to `addr`, connect timeout 1 s.
    pub fn new(name: &str, addr: SocketAddr) -> Cluster {
        Cluster {
            name: name.to_owned(),
            addr,
            connect_timeout: "1s".to_owned(),
            buffer_limit: None,
        }
    }

    pub fn connect_timeout(mut self, timeout: &str) -> Cluster {
        self.connect_timeout = timeout.to_owned();
        self
    }

    pub fn buffer_limit(mut self, bytes: u64) -> Cluster {
        self.buffer_limit = Some(bytes);
        self
    }

    pub fn node(&self) -> Yaml {
        let mut cluster = Yaml::map([
            ("name", Yaml::from(&self.name)),
            ("type", Yaml::from("STATIC")),
            ("connect_timeout", Yaml::from(&self.connect_timeout)),
        ]);
        if let Some(limit) = self.buffer_limit {
            cluster = cluster.with("per_connection_buffer_limit_bytes", limit);
        }
        let endpoint = Yaml::map([(
            "endpoint",
            Yaml::map([(
                "address",
                socket_address(&self.addr.ip().to_string(), self.addr.port()),
            )]),
        )]);
        cluster.with(
            "load_assignment",
            Yaml::map([
                ("cluster_name", Yaml::from(&self.name)),
                (
                    "endpoints",
                    Yaml::list([Yaml::map([("lb_endpoints", Yaml::list([endpoint]))])]),
                ),
            ]),
        )
    }

    /// The cluster as one YAML list item (`- name: ...`), unindented.
    pub fn to_yaml(&self) -> String {
        Yaml::list([self.node()]).to_yaml()
    }
}

#[cfg(test)]
#[path = "envoy_config_tests.rs"]
mod tests;
