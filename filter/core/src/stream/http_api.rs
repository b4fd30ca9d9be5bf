//! The plain-HTTP search endpoint (`POST <http_path>`), its health (`GET <http_path>/health`)
//! and its view of hierarchical search's stage 1 (`GET <http_path>/groups`), for callers that do
//! not speak MCP.
//!
//! All three read the route's own namespace and those `search.http_namespaces` lists, nothing
//! else: another route's catalog sits behind that route's access control (Envoy RBAC,
//! ext_authz), which a request to this route never passed, and the filter's internal catalog
//! keys (`<ns>#prompts`, `<ns>@private-<digest>`) are no namespace at all.

use super::reply::{bad_request, error_json};
use super::*;
use crate::mcp::injected::answer::{self, Detail};
use crate::mcp::result::{self, SearchMeta};
use crate::rank::explain::{explain, Shown};

impl Stream {
    pub(super) fn on_search_endpoint(
        &mut self,
        config: &Config,
        env: &mut Env<'_>,
        body: &[u8],
    ) -> RequestBodyAction {
        let request = match parse_http_search(body, config) {
            Ok(request) => request,
            Err(problem) => {
                env.record(Event::SearchRejected);
                return RequestBodyAction::Reply(bad_request(&problem));
            }
        };
        let namespace = match endpoint_namespace(config, env, request.namespace.as_deref()) {
            Ok(namespace) => namespace,
            Err(refused) => return RequestBodyAction::Reply(refused),
        };
        if self.must_fetch(config, env, &namespace, &|| request.kind.entries().to_vec()) {
            // Another namespace than the route's is fetched from where it was last seen.
            let origin = if namespace == env.namespace() {
                env.origin()
            } else {
                env.catalog_meta(&namespace).origin()
            };
            if let Some(origin) = origin {
                return self.fetch(env, &namespace, origin, Pending::Http(request));
            }
        }
        self.answer_pending(config, env, Pending::Http(request))
    }

    pub(super) fn answer_http_search(
        &self,
        config: &Config,
        env: &mut Env<'_>,
        request: &HttpSearch,
        vector: Result<Vec<f32>, Fallback>,
    ) -> LocalReply {
        let namespace = request.namespace.clone().unwrap_or_else(|| env.namespace());
        if request.kind != SearchType::Tool {
            let (results, meta) = match self.mixed_search(
                config,
                env,
                &namespace,
                &request.query,
                request.kind,
                vector,
            ) {
                Ok(answer) => answer,
                Err(e) => {
                    env.record(Event::Error);
                    return LocalReply::json(503, error_json(&format!("catalog unavailable: {e}")));
                }
            };
            return match RawValue::from_string(answer::typed_array(&results)) {
                Ok(results) => LocalReply::json(200, result::http_mixed(&results, meta)),
                Err(e) => {
                    env.record(Event::Error);
                    LocalReply::json(500, error_json(&format!("stored definitions: {e}")))
                }
            };
        }
        let index = match self.endpoint_catalog(env, &namespace) {
            Ok(index) => index,
            Err(reply) => return reply,
        };
        if let (Some(why), true) = (&self.fetch_error, index.catalog.is_empty()) {
            return LocalReply::json(
                502,
                error_json(&format!(
                    "the tool catalog of namespace {namespace:?} could not be fetched: {why}"
                )),
            );
        }
        if request.namespace.is_some() && index.catalog.is_empty() {
            return LocalReply::json(
                404,
                error_json(&format!("no tools are known for namespace {namespace:?}")),
            );
        }
        let ranked = self.rank(config, env, &index, &request.query, vector);
        let lines = |summary: bool| {
            let lines: Vec<Line> = ranked
                .found
                .iter()
                .map(|f| Line {
                    name: &f.tool.name,
                    summary: summary
                        .then(|| answer::compact_line(f, config.search.max_description_chars)),
                })
                .collect();
            result::to_json(&lines)
        };
        let tools = match request.detail {
            Detail::Full => result::definitions(ranked.found.iter().map(|f| f.tool)),
            Detail::Compact => lines(true),
            Detail::Names => lines(false),
        };
        // The ranking's statistics are the whole catalog's: a caller the policy restricts would
        // read in them the tools it may not see.
        let restricted = self.scope(config, &namespace).is_some()
            || self.scope(config, &index.namespace).is_some();
        let explanations: Option<Vec<Shown>> = request.explain.then(|| {
            ranked
                .found
                .iter()
                .map(|f| {
                    explain(&index, &request.query.text, &ranked.scoring, f.doc).shown(restricted)
                })
                .collect()
        });
        let body = match RawValue::from_string(tools) {
            Ok(tools) => result::http_search(
                &tools,
                SearchMeta::of(&ranked, request.query.offset),
                explanations.as_deref(),
            ),
            Err(e) => {
                env.record(Event::Error);
                return LocalReply::json(500, error_json(&format!("stored definitions: {e}")));
            }
        };
        LocalReply::json(200, body)
    }

    /// This caller's catalog of `namespace`, or the 503 that says why there is none to read.
    fn endpoint_catalog(
        &self,
        env: &mut Env<'_>,
        namespace: &str,
    ) -> Result<Rc<CatalogIndex>, LocalReply> {
        let key = self.catalog_key(env, namespace);
        env.catalog_of(&key).map_err(|e| {
            env.record(Event::Error);
            LocalReply::json(503, error_json(&format!("catalog unavailable: {e}")))
        })
    }

    /// `GET <http_path>/groups?query=…[&namespace=…]`: how stage 1 of hierarchical search ranks
    /// this caller's groups for the query (whatever `search.strategy` is), from the catalog
    /// this Envoy knows.
    pub(super) fn answer_groups_view(&mut self, config: &Config, env: &mut Env<'_>) -> LocalReply {
        let param = |name| crate::config::paths::query_param(&self.head.path, name);
        let Some(query) = param("query").filter(|q| !q.trim().is_empty()) else {
            env.record(Event::SearchRejected);
            return bad_request("the query string must have a non-empty `query` parameter");
        };
        let namespace = match endpoint_namespace(config, env, param("namespace").as_deref()) {
            Ok(namespace) => namespace,
            Err(refused) => return refused,
        };
        let index = match self.endpoint_catalog(env, &namespace) {
            Ok(index) => index,
            Err(reply) => return reply,
        };
        if index.catalog.is_empty() {
            return LocalReply::json(
                404,
                error_json(&format!(
                    "no tools are known for namespace {namespace:?} yet: a search fetches them"
                )),
            );
        }
        let scope = self.scope(config, &index.namespace);
        let allowed = |t: &Tool| scope.as_ref().is_none_or(|s| s.allows(&t.name));
        let groups = crate::index::catalog::groups::groups_of(
            &index,
            config,
            scope
                .is_some()
                .then_some(&allowed as &dyn Fn(&Tool) -> bool),
        );
        let ranked = groups.rank(&query);
        let chosen = crate::rank::search::chosen_groups(&ranked, &config.search.routing);
        LocalReply::json(
            200,
            result::groups_view(&query, config, &groups, &ranked, &chosen),
        )
    }
}

/// A result of the endpoint below full detail: the name, and the line the search tool shows.
#[derive(serde::Serialize)]
struct Line<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    summary: Option<String>,
}

/// The namespace a request to the endpoint reads: the route's own unless it names one that
/// `search.http_namespaces` lists; anything else is a 403 naming what this route searches.
pub(super) fn endpoint_namespace(
    config: &Config,
    env: &mut Env<'_>,
    asked: Option<&str>,
) -> Result<String, LocalReply> {
    let own = env.namespace();
    let Some(asked) = asked else {
        return Ok(own);
    };
    let internal = asked.contains(['#', '@']);
    let listed = config.search.http_namespaces.iter().any(|ns| ns == asked);
    if !internal && (asked == own || listed) {
        return Ok(asked.to_string());
    }
    env.record(Event::SearchRejected);
    let why = if internal {
        " ('#' and '@' mark the filter's internal catalog keys)"
    } else {
        ""
    };
    let mut searchable = format!("{own:?} (this route's namespace)");
    let others: Vec<String> = config
        .search
        .http_namespaces
        .iter()
        .filter(|ns| **ns != own)
        .map(|ns| format!("{ns:?}"))
        .collect();
    if !others.is_empty() {
        searchable.push_str(&format!(
            " and {} (search.http_namespaces)",
            others.join(", ")
        ));
    }
    Err(LocalReply::json(
        403,
        error_json(&format!(
            "namespace {asked:?} is not searchable from this route{why}; searchable here: {searchable}"
        )),
    ))
}

/// `{"query": "...", "limit": N, "namespace": "...", "offset": N, "group": "...", "explain":
/// bool}`.
pub(super) fn parse_http_search(body: &[u8], config: &Config) -> Result<HttpSearch, String> {
    let mut value: Value =
        serde_json::from_slice(body).map_err(|e| format!("the body is not JSON: {e}"))?;
    let Value::Object(map) = &mut value else {
        return Err("the body must be a JSON object with a \"query\"".to_string());
    };
    for key in map.keys() {
        if ![
            "query",
            "limit",
            "namespace",
            "offset",
            "group",
            "explain",
            "type",
            "detail",
        ]
        .contains(&key.as_str())
        {
            return Err(format!(
                "unknown field \"{key}\"; allowed: query, limit, offset, namespace, group, explain, type, detail"
            ));
        }
    }
    let explain = match map.remove("explain") {
        None | Some(Value::Bool(false)) => false,
        Some(Value::Bool(true)) => true,
        Some(other) => return Err(format!("\"explain\" must be true or false, not {other}")),
    };
    let asked_detail = map.contains_key("detail");
    let raw = RawValue::from_string(value.to_string()).map_err(|e| e.to_string())?;
    // The same rules as the search tool, worded for an HTTP client.
    let args = injected::parse_search(Some(&raw), config, injected::Asker::Http)?;
    Ok(HttpSearch {
        query: args.query,
        namespace: args.namespace,
        kind: args.kind,
        explain,
        // An HTTP client gets definitions unless it asks for less, whatever the search tool's
        // `result_format`.
        detail: if asked_detail {
            args.detail
        } else {
            Detail::Full
        },
    })
}

/// How many of `index`'s entries of kind `entry` the caller may use (`scope`: the policy for
/// this caller and namespace, `None` without one).
fn usable(index: &CatalogIndex, entry: Entry, scope: Option<&Scope<'_>>) -> usize {
    match scope.filter(|s| !s.allows_every(entry)) {
        None => index.catalog.len(),
        Some(scope) => index
            .catalog
            .tools()
            .iter()
            .filter(|t| scope.allows_entry(entry, &t.name))
            .count(),
    }
}

impl Stream {
    /// `GET <search path>/health`: the search mode, and the catalogs of the namespaces this
    /// route's endpoint reads (its own and `search.http_namespaces`) that are known. Under a
    /// policy the counts are of what this caller may use (a catalog's whole size would tell it
    /// how many entries it may not see); a private namespace reports this caller's credential's
    /// catalog.
    pub(super) fn answer_health(&self, config: &Config, env: &mut Env<'_>) -> LocalReply {
        let mode = match config.search.ranking {
            Ranking::Bm25 => "lexical",
            Ranking::Vector => "semantic",
            Ranking::Hybrid => "hybrid",
        };
        let (degraded, circuit) = if config.search.ranking == Ranking::Bm25 {
            (None, None)
        } else {
            (env.embeddings_degraded(), env.embeddings_circuit())
        };
        let now = env.now_ms();
        let circuit = circuit.map(|c| {
            let closed = c.state == crate::store::circuit::State::Closed;
            Circuit {
                state: c.state.name(),
                since_ms: (c.since_ms > 0).then_some(c.since_ms),
                probe_in_ms: (!closed).then(|| c.until_ms.saturating_sub(now)),
            }
        });
        let open = circuit.as_ref().is_some_and(|c| c.state != "closed");
        #[derive(serde::Serialize)]
        struct Search<'a> {
            status: &'static str,
            mode: &'static str,
            #[serde(skip_serializing_if = "Option::is_none")]
            reason: Option<&'a str>,
            #[serde(skip_serializing_if = "Option::is_none")]
            circuit: Option<Circuit>,
        }
        /// The query embeddings' circuit breaker: its state and since when.
        #[derive(serde::Serialize)]
        struct Circuit {
            state: &'static str,
            #[serde(skip_serializing_if = "Option::is_none")]
            since_ms: Option<u64>,
            #[serde(skip_serializing_if = "Option::is_none")]
            probe_in_ms: Option<u64>,
        }
        #[derive(serde::Serialize)]
        struct Catalog {
            tools: usize,
            embedded: usize,
            /// `learned` from a client's list, or `fetched` by the filter.
            source: crate::store::Source,
            /// Since the whole list was last seen; absent when it never was.
            #[serde(skip_serializing_if = "Option::is_none")]
            age_ms: Option<u64>,
            /// A refresh is due (`max_age`, `ttlMs` or a list-changed notification).
            stale: bool,
            #[serde(skip_serializing_if = "Option::is_none")]
            last_error: Option<String>,
            #[serde(skip_serializing_if = "is_zero")]
            failures: u32,
            /// The server's lists are private: each credential has its own catalog, and this
            /// one is the caller's.
            #[serde(skip_serializing_if = "std::ops::Not::not")]
            private: bool,
            /// Prompts, resources and resource templates known beside the tools.
            #[serde(skip_serializing_if = "Option::is_none")]
            prompts: Option<usize>,
            #[serde(skip_serializing_if = "Option::is_none")]
            resources: Option<usize>,
            #[serde(skip_serializing_if = "Option::is_none")]
            resource_templates: Option<usize>,
        }
        fn is_zero(n: &u32) -> bool {
            *n == 0
        }
        #[derive(serde::Serialize)]
        struct Health<'a> {
            search: Search<'a>,
            catalogs: std::collections::BTreeMap<String, Catalog>,
        }
        let mut catalogs = std::collections::BTreeMap::new();
        let keys = env.namespaces();
        let mut namespaces = config.search.http_namespaces.clone();
        namespaces.push(env.namespace());
        crate::sort::sort(&mut namespaces);
        namespaces.dedup();
        for ns in namespaces {
            // Prompts, resources and private catalogs are reported with their namespace.
            let known = keys.iter().any(|key| {
                crate::index::catalog::base_namespace(Entry::of_catalog_key(key).1) == ns
            });
            if !known {
                continue;
            }
            let scope = config
                .authorization
                .as_ref()
                .map(|policy| policy.scope(&self.head.caller, &ns));
            let mut count = |entry: Entry| {
                let key = entry.catalog_key(&ns);
                keys.contains(&key).then(|| {
                    env.catalog_of(&key)
                        .map_or(0, |index| usable(&index, entry, scope.as_ref()))
                })
            };
            let (prompts, resources, resource_templates) = (
                count(Entry::Prompt),
                count(Entry::Resource),
                count(Entry::ResourceTemplate),
            );
            let key = self.catalog_key(env, &ns);
            let (tools, embedded) = match env.catalog_of(&key) {
                Ok(index) => {
                    let tools = usable(&index, Entry::Tool, scope.as_ref());
                    let embedded = env.tool_vectors(&index).map_or(0, |vectors| {
                        match scope.as_ref().filter(|s| !s.allows_everything()) {
                            None => vectors.count(),
                            Some(scope) => index
                                .catalog
                                .tools()
                                .iter()
                                .enumerate()
                                .filter(|(i, t)| vectors.get(*i).is_some() && scope.allows(&t.name))
                                .count(),
                        }
                    });
                    (tools, embedded)
                }
                Err(_) => (0, 0),
            };
            let meta = env.catalog_meta(&key);
            let age_ms = (meta.updated_ms > 0).then(|| now.saturating_sub(meta.updated_ms));
            // A private namespace's own key holds no list: its callers' catalogs are apart.
            let holds_no_list = meta.private && key == ns;
            catalogs.insert(
                ns.clone(),
                Catalog {
                    tools,
                    embedded,
                    source: meta.source,
                    age_ms,
                    stale: !holds_no_list && meta.due(now, config.catalog.max_age_ms),
                    last_error: meta.last_error,
                    failures: meta.failures,
                    private: meta.private || key != ns,
                    prompts,
                    resources,
                    resource_templates,
                },
            );
        }
        let health = Health {
            search: Search {
                status: if degraded.is_some() || open {
                    "degraded"
                } else {
                    "ok"
                },
                mode,
                reason: degraded.as_deref(),
                circuit,
            },
            catalogs,
        };
        LocalReply::json(200, crate::mcp::result::to_json(&health))
    }
}
