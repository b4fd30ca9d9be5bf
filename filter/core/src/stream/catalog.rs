//! A request answered here that finds no catalog: the filter fetches it from the upstream
//! (`fetch`) and answers once it has it, in the same request. A catalog that exists is used
//! as it is, fresh or not: refreshing it is the root tick's job (stale while revalidate).

use super::*;
use crate::fetch::Context;

impl Stream {
    /// Whether answering needs `namespace`'s catalog fetched first: there is none yet (for
    /// this caller, when the server's lists are private), or this caller's private one is due
    /// (no background refresh has this caller's credentials), or a kind the request searches
    /// (`kinds`, asked only then) was never seen: tools learned from a client's list come
    /// without the server's prompts and resources, which a fetch lists beside them. At most
    /// once per request.
    pub(super) fn must_fetch(
        &self,
        config: &Config,
        env: &mut Env<'_>,
        namespace: &str,
        kinds: &dyn Fn() -> Vec<Entry>,
    ) -> bool {
        if !config.catalog.fetch || self.fetched {
            return false;
        }
        let key = self.catalog_key(env, namespace);
        let Ok(index) = env.catalog_of(&key) else {
            return false;
        };
        if index.catalog.is_empty() {
            return true;
        }
        let unseen = key == namespace
            && kinds()
                .into_iter()
                .any(|k| k != Entry::Tool && !env.catalog_known(&k.catalog_key(namespace)));
        if unseen {
            let meta = env.catalog_meta(namespace);
            return config.catalog.may_refetch(meta.attempt_ms, env.now_ms());
        }
        // A caller's own catalog that is due is fetched again in its requests, at most once per
        // `min_refresh_interval` however often it searches. The shared catalog is the root
        // tick's to refresh: its search reads neither the clock nor the meta for it.
        if key == namespace {
            return false;
        }
        let meta = env.catalog_meta(&key);
        let now = env.now_ms();
        meta.due(now, config.catalog.max_age_ms) && config.catalog.may_refetch(meta.attempt_ms, now)
    }

    /// The digest of this caller's credentials (the forwarded headers' values).
    pub(super) fn credential(&self) -> String {
        crate::fetch::credential_of(&self.head.forwarded)
    }

    /// Where this caller's catalog of `namespace` is kept: the namespace's own, or, when the
    /// server marks its lists `cacheScope: "private"` (spec 2026-07-28 "Caching"), the catalog
    /// of this caller's credentials, with or without a policy of ours (which then narrows it
    /// further): a list shaped by the server for one caller is never searched for another.
    pub(super) fn catalog_key(&self, env: &mut Env<'_>, namespace: &str) -> String {
        if env.catalog_meta(namespace).private {
            crate::index::catalog::private_key(namespace, &self.credential())
        } else {
            namespace.to_string()
        }
    }

    /// Fetches `namespace`'s catalog from `origin`; the request waits in `pending`.
    pub(super) fn fetch(
        &mut self,
        env: &mut Env<'_>,
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
        match (
            &self.head.session_id,
            self.head.mcp.protocol_version.first(),
        ) {
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
        env: &mut Env<'_>,
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
        env: &mut Env<'_>,
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

    /// Whether the request is being answered here, whatever the upstream does meanwhile: the
    /// search endpoint, and requests waiting for a catalog, query vectors or the call
    /// `call_tool` stands for. An upstream response that arrives first must not reach the client.
    pub fn answering_locally(&self) -> bool {
        self.running_script()
            || matches!(
                self.phase,
                Phase::SearchEndpointBody
                    | Phase::Fetching(_)
                    | Phase::Embedding(_)
                    | Phase::Calling(_)
            )
    }

    /// Whether the stream waits for a catalog fetch.
    pub fn awaiting_catalog(&self) -> bool {
        matches!(self.phase, Phase::Fetching(_))
    }

    /// Answers a request kept while waiting: embeds its queries first when ranking needs them.
    pub(super) fn answer_pending(
        &mut self,
        config: &Config,
        env: &mut Env<'_>,
        pending: Pending,
    ) -> RequestBodyAction {
        match pending {
            Pending::Mcp(incoming) => {
                #[cfg(feature = "code-mode")]
                if let Some(action) = self.script_request(config, env, &incoming) {
                    return action;
                }
                if self.needs_query_vectors(config) {
                    let texts = request::search_texts(config, &incoming);
                    if !texts.is_empty() {
                        self.phase = Phase::Embedding(Pending::Mcp(incoming));
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
                    let texts = crate::rank::parts::query_texts(&request.query.text).collect();
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
