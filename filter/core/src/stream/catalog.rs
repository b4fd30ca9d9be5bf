//! A request answered here that finds no catalog: the filter fetches it from the upstream
//! (`fetch`) and answers once it has it, in the same request. A catalog that exists is used
//! as it is, fresh or not: refreshing it is the root tick's job (stale while revalidate).

use super::*;
use crate::fetch::Context;

impl Stream {
    /// Whether answering needs `namespace`'s catalog fetched first: there is none yet, and
    /// this request has not fetched already.
    pub(super) fn must_fetch(&self, config: &Config, env: &mut dyn Env, namespace: &str) -> bool {
        config.catalog.fetch
            && !self.fetched
            && env
                .catalog_of(namespace)
                .is_ok_and(|i| i.catalog.is_empty())
    }

    /// Fetches `namespace`'s catalog from `origin`; the request waits in `pending`.
    pub(super) fn fetch(
        &mut self,
        env: &mut dyn Env,
        namespace: &str,
        origin: Origin,
        pending: Pending,
    ) -> RequestBodyAction {
        let context = self.fetch_context();
        let forwarded = match context {
            // The HTTP endpoint's callers are not MCP clients: their headers are not the
            // upstream's credentials.
            Context::Own if !self.is_mcp() => Vec::new(),
            _ => self.head.forwarded.clone(),
        };
        let spec = env.fetch_spec(origin, context, forwarded);
        self.fetched = true;
        self.phase = Phase::Fetching(pending);
        RequestBodyAction::Fetch {
            namespace: namespace.to_string(),
            spec,
        }
    }

    /// Whose context a fetch for this request runs in (module `fetch`).
    fn fetch_context(&self) -> Context {
        if !self.is_mcp() {
            return Context::Own;
        }
        if self.modern() {
            return Context::Modern;
        }
        match (&self.head.session_id, self.head.mcp.protocol_version.first()) {
            (Some(id), Some(version)) => Context::Session {
                id: id.clone(),
                protocol_version: version.clone(),
            },
            _ => Context::Own,
        }
    }

    fn is_mcp(&self) -> bool {
        self.watch
    }

    /// The catalog fetch this request waited for ended: `Ok(tools)` or why it failed. The
    /// request is answered now (or goes on to embed its queries).
    pub fn on_catalog(
        &mut self,
        config: &Config,
        env: &mut dyn Env,
        result: Result<usize, String>,
    ) -> RequestBodyAction {
        let Phase::Fetching(pending) = std::mem::replace(&mut self.phase, Phase::Done) else {
            return RequestBodyAction::Continue {
                headers: Vec::new(),
            };
        };
        if let Err(why) = result {
            self.fetch_error = Some(why);
        }
        self.answer_pending(config, env, pending)
    }

    /// Another worker's fetch of `namespace`, which this request waited for, ended.
    pub fn on_catalog_settled(
        &mut self,
        config: &Config,
        env: &mut dyn Env,
        namespace: &str,
    ) -> RequestBodyAction {
        let result = match env.catalog_of(namespace) {
            Ok(index) if !index.catalog.is_empty() => Ok(index.catalog.len()),
            _ => Err(env
                .catalog_meta(namespace)
                .last_error
                .unwrap_or_else(|| "the server listed no tools".to_string())),
        };
        self.on_catalog(config, env, result)
    }

    /// Whether the stream waits for a catalog fetch.
    pub fn awaiting_catalog(&self) -> bool {
        matches!(self.phase, Phase::Fetching(_))
    }

    /// Answers a request kept while waiting: embeds its queries first when ranking needs them.
    pub(super) fn answer_pending(
        &mut self,
        config: &Config,
        env: &mut dyn Env,
        pending: Pending,
    ) -> RequestBodyAction {
        match pending {
            Pending::Mcp(body) => {
                let Ok(incoming) = jsonrpc::parse(&body) else {
                    return RequestBodyAction::Continue {
                        headers: Vec::new(),
                    };
                };
                if self.needs_query_vectors(config) {
                    let texts = request::search_texts(config, &incoming);
                    if !texts.is_empty() {
                        self.phase = Phase::Embedding(Pending::Mcp(body));
                        return RequestBodyAction::Embed { texts };
                    }
                }
                RequestBodyAction::Reply(self.answer_locally(
                    config,
                    env,
                    &incoming,
                    Err(no_vectors()),
                ))
            }
            Pending::Http(request) => {
                if self.needs_query_vectors(config) {
                    let texts = vec![request.query.text.clone()];
                    self.phase = Phase::Embedding(Pending::Http(request));
                    return RequestBodyAction::Embed { texts };
                }
                RequestBodyAction::Reply(self.answer_http_search(
                    config,
                    env,
                    &request,
                    Err(no_vectors()),
                ))
            }
        }
    }

    /// Why there is no catalog to answer from, in words for the agent.
    pub(super) fn no_catalog_message(&self) -> String {
        match &self.fetch_error {
            Some(why) => format!(
                "The tool catalog could not be fetched from the server ({why}). Retry the search later."
            ),
            None => {
                "No tools are known for this server yet: call tools/list once, then search again."
                    .to_string()
            }
        }
    }

    /// Watches a response for `notifications/tools/list_changed` when it is an SSE stream of
    /// an MCP request; `false`: nothing to watch.
    pub(super) fn watch_response(&mut self, content_type: Option<&str>) -> bool {
        let sse = content_type
            .and_then(|c| c.split(';').next())
            .is_some_and(|c| c.trim().eq_ignore_ascii_case("text/event-stream"));
        if !self.watch || !sse {
            return false;
        }
        self.phase = Phase::Watch(crate::mcp::notify::ListChangedScanner::default());
        true
    }
}
