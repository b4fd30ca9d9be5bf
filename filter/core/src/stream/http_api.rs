//! The plain-HTTP search endpoint (`POST <http_path>`) and its health (`GET
//! <http_path>/health`), for callers that do not speak MCP.

use super::reply::{bad_request, error_json};
use super::request::no_vectors;
use super::*;

impl Stream {
    pub(super) fn on_search_endpoint(
        &mut self,
        config: &Config,
        env: &mut dyn Env,
        body: &[u8],
    ) -> RequestBodyAction {
        let request = match parse_http_search(body, config) {
            Ok(request) => request,
            Err(problem) => {
                env.record(Event::SearchRejected);
                return RequestBodyAction::Reply(bad_request(&problem));
            }
        };
        if self.needs_query_vectors(config) {
            let texts = vec![request.query.text.clone()];
            self.phase = Phase::Embedding(Pending::Http(request));
            return RequestBodyAction::Embed { texts };
        }
        RequestBodyAction::Reply(self.answer_http_search(config, env, &request, Err(no_vectors())))
    }

    pub(super) fn answer_http_search(
        &self,
        config: &Config,
        env: &mut dyn Env,
        request: &HttpSearch,
        vector: Result<Vec<f32>, Fallback>,
    ) -> LocalReply {
        let namespace = request.namespace.clone().unwrap_or_else(|| env.namespace());
        let index = match env.catalog_of(&namespace) {
            Ok(index) => index,
            Err(e) => {
                env.record(Event::Error);
                return LocalReply::json(503, error_json(&format!("catalog unavailable: {e}")));
            }
        };
        if request.namespace.is_some() && index.catalog.is_empty() {
            return LocalReply::json(
                404,
                error_json(&format!("no tools are known for namespace {namespace:?}")),
            );
        }
        let ranked = self.rank(config, env, &index, &request.query, vector);
        let body = format!(
            "{{\"tools\":{},\"metadata\":{}}}",
            injected::definitions_array(ranked.found.iter().map(|f| f.tool)),
            injected::metadata_json(&ranked, request.query.offset)
        );
        LocalReply::json(200, body)
    }
}

/// `{"query": "...", "limit": N, "namespace": "...", "offset": N, "group": "..."}`.
pub(super) fn parse_http_search(body: &[u8], config: &Config) -> Result<HttpSearch, String> {
    let value: Value =
        serde_json::from_slice(body).map_err(|e| format!("the body is not JSON: {e}"))?;
    let Value::Object(map) = &value else {
        return Err("the body must be a JSON object with a \"query\"".to_string());
    };
    for key in map.keys() {
        if !["query", "limit", "namespace", "offset", "group"].contains(&key.as_str()) {
            return Err(format!(
                "unknown field \"{key}\"; allowed: query, limit, offset, namespace, group"
            ));
        }
    }
    let raw = RawValue::from_string(value.to_string()).map_err(|e| e.to_string())?;
    // The same rules as the search tool, worded for an HTTP client.
    let args = injected::parse_search(Some(&raw), config)
        .map_err(|m| m.replace("Argument `", "field `"))?;
    Ok(HttpSearch {
        query: args.query,
        namespace: args.namespace,
    })
}

/// `GET <search path>/health`.
pub(super) fn health(config: &Config, env: &mut dyn Env) -> LocalReply {
    let mode = match config.search.ranking {
        Ranking::Bm25 => "lexical",
        Ranking::Vector => "semantic",
        Ranking::Hybrid => "hybrid",
    };
    let degraded = if config.search.ranking == Ranking::Bm25 {
        None
    } else {
        env.embeddings_degraded()
    };
    let mut search = format!(
        "{{\"status\":{},\"mode\":\"{mode}\"",
        if degraded.is_some() {
            "\"degraded\""
        } else {
            "\"ok\""
        }
    );
    if let Some(reason) = &degraded {
        search.push_str(",\"reason\":");
        search.push_str(&json::string(reason));
    }
    search.push('}');
    let mut catalogs = Vec::new();
    for ns in env.namespaces() {
        let (tools, embedded) = match env.catalog_of(&ns) {
            Ok(index) => {
                let embedded = env.tool_vectors(&index).map(|v| v.count()).unwrap_or(0);
                (index.catalog.len(), embedded)
            }
            Err(_) => (0, 0),
        };
        catalogs.push(format!(
            "{}:{{\"tools\":{tools},\"embedded\":{embedded}}}",
            json::string(&ns)
        ));
    }
    LocalReply::json(
        200,
        format!(
            "{{\"search\":{search},\"catalogs\":{{{}}}}}",
            catalogs.join(",")
        ),
    )
}
