//! The answers the filter gives itself, never reaching the upstream: `tool_search`,
//! `list_tool_groups`, `describe_tool` and refused calls (`call_tool` is `upstream.rs`).

use super::request::{list_query, search_text};
use super::*;
use crate::mcp::injected::answer::{self, Typed};
use crate::mcp::result::{self, MixedMeta};
use crate::rank::mixed::KindCatalog;

/// The error a server gives for a prompt or resource it does not have (spec 2025-11-25
/// "Prompts" and "Resources", Error Handling: -32602 for an unknown prompt, -32002 for a
/// resource not found).
fn unknown_entry(id: &RawValue, entry: Entry, key: &str) -> String {
    match entry {
        Entry::Resource | Entry::ResourceTemplate => format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":{},\"error\":{{\"code\":{RESOURCE_NOT_FOUND},\"message\":\"Resource not found\",\"data\":{{\"uri\":{}}}}}}}",
            id.get(),
            json::string(key)
        ),
        Entry::Tool | Entry::Prompt => jsonrpc::error_response(
            Some(id),
            jsonrpc::INVALID_PARAMS,
            &format!("Unknown {}: {key}", entry.type_name()),
        ),
    }
}

const RESOURCE_NOT_FOUND: i64 = -32002;

impl Stream {
    /// Answers every message of a request made only of our tools and refused calls.
    pub(super) fn answer_locally(
        &mut self,
        config: &Config,
        env: &mut Env<'_>,
        incoming: &Incoming,
        vectors: Result<Vec<Vec<f32>>, Fallback>,
    ) -> LocalReply {
        let modern = self.modern();
        let namespace = env.namespace();
        let mut vectors = match vectors {
            Ok(all) => Ok(all.into_iter()),
            Err(f) => Err(f),
        };
        let mut replies = Vec::new();
        for m in incoming.messages() {
            // The vectors of each valid search (its query's, then its parts'), in message order
            // (`search_texts`). Without vectors (BM25) no message is read twice to find out
            // which ones are searches.
            let vector = match &mut vectors {
                Err(f) => Err(f.clone()),
                Ok(all) => match search_text(config, m) {
                    Some(text) => crate::rank::parts::query_vector(all, &text).ok_or_else(|| {
                        Fallback::new(FallbackKind::Malformed, "fewer vectors than queries")
                    }),
                    None => Err(no_vectors()),
                },
            };
            let (id, name, arguments) = match m.kind() {
                Kind::ToolsList { .. } => {
                    let (Some(id), Some(query)) = (m.id.as_deref(), list_query(config, m)) else {
                        continue;
                    };
                    replies.push(self.answer_list_query(config, env, id, query.clone(), vector));
                    continue;
                }
                Kind::ToolsCall { name, arguments } => match m.id.as_deref() {
                    Some(id) => (id, name, arguments.as_deref()),
                    None => {
                        // A notification calling a forbidden tool: withheld, and JSON-RPC has
                        // no reply.
                        env.record(Event::CallRefused);
                        continue;
                    }
                },
                Kind::Use { entry, key } => {
                    // Answered as the server answers for an entry it does not have: the
                    // caller learns nothing of entries the policy hides.
                    env.record(Event::CallRefused);
                    if let Some(id) = m.id.as_deref() {
                        replies.push(unknown_entry(id, *entry, key));
                    }
                    continue;
                }
                _ => continue,
            };
            let reply = match Injected::of(config, name) {
                Some(Injected::Search) => jsonrpc::result_response(
                    id,
                    &self.answer_search(config, env, arguments, vector),
                ),
                Some(Injected::ListGroups) => {
                    jsonrpc::result_response(id, &self.answer_groups(config, env, &namespace))
                }
                Some(Injected::Describe) => jsonrpc::result_response(
                    id,
                    &self.answer_describe(config, env, &namespace, arguments),
                ),
                Some(Injected::Call) => jsonrpc::result_response(
                    id,
                    &injected::error_result(
                        "call_tool cannot be used inside a batch; send it alone.",
                        modern,
                    ),
                ),
                Some(Injected::Script) => jsonrpc::result_response(
                    id,
                    &injected::error_result(
                        &format!("{name} cannot be used inside a batch; send it alone."),
                        modern,
                    ),
                ),
                None => {
                    env.record(Event::CallRefused);
                    jsonrpc::error_response(
                        Some(id),
                        UNKNOWN_TOOL,
                        &format!("Unknown tool: {name}"),
                    )
                }
            };
            replies.push(reply);
        }
        if replies.is_empty() {
            return LocalReply::accepted();
        }
        let body = match incoming {
            Incoming::Single(_) => replies.concat(),
            Incoming::Batch(_) => format!("[{}]", replies.join(",")),
        };
        self.reply(body)
    }

    pub(super) fn catalog_or_error(
        &self,
        env: &mut Env<'_>,
        namespace: &str,
    ) -> Result<Rc<CatalogIndex>, String> {
        match env.catalog_of(namespace) {
            Ok(index) if index.catalog.is_empty() => Err(self.no_catalog_message()),
            Ok(index) => Ok(index),
            Err(e) => {
                env.record(Event::Error);
                env.log_warn(&format!("tool search could not read the catalog: {e}"));
                Err(
                    "The tool catalog is unavailable right now; list tools again and retry."
                        .to_string(),
                )
            }
        }
    }

    pub(super) fn answer_search(
        &self,
        config: &Config,
        env: &mut Env<'_>,
        arguments: Option<&RawValue>,
        vector: Result<Vec<f32>, Fallback>,
    ) -> String {
        let modern = self.modern();
        let args = match injected::parse_search(arguments, config, injected::Asker::Tool) {
            Ok(args) => args,
            Err(message) => {
                env.record(Event::SearchRejected);
                return injected::error_result(&message, modern);
            }
        };
        let namespace = env.namespace();
        if let Some(ns) = &args.namespace {
            if *ns != namespace {
                env.record(Event::SearchRejected);
                return injected::error_result(
                    &format!("Namespace {ns:?} is not served here; this server's namespace is {namespace:?}. Search again without `namespace`."),
                    modern,
                );
            }
        }
        if args.kind != SearchType::Tool {
            return match self.mixed_search(config, env, &namespace, &args.query, args.kind, vector)
            {
                Ok((found, meta)) => answer::mixed_result(&found, meta, self.shape(&args)),
                Err(e) => {
                    env.record(Event::Error);
                    env.log_warn(&format!("search could not read a catalog: {e}"));
                    injected::error_result(
                        "The catalog is unavailable right now; retry the search.",
                        modern,
                    )
                }
            };
        }
        let started = env.insights().then(|| env.now_ns());
        let key = self.catalog_key(env, &namespace);
        let index = match self.catalog_or_error(env, &key) {
            Ok(index) => index,
            Err(message) => return injected::error_result(&message, modern),
        };
        let ranked = self.rank(config, env, &index, &args.query, vector);
        let id = started.map(|_| env.next_search_id());
        let shape = self.shape(&args);
        let answer = answer::search_answer(config, &args.query, &ranked, shape, id.as_deref());
        if let (Some(started), Some(id)) = (started, &id) {
            let answered = super::insight::Answered {
                index: &index,
                ranked: &ranked,
                query: &args.query,
                shown: answer.shown,
                id,
            };
            self.searched(env, started, answered);
        }
        answer.json
    }

    /// A search of prompts and resources (or of everything): the caller's entries of each kind,
    /// ranked together; the typed definitions as a JSON array, and what the search did.
    pub(super) fn mixed_search(
        &self,
        config: &Config,
        env: &mut Env<'_>,
        namespace: &str,
        query: &Query,
        kind: SearchType,
        vector: Result<Vec<f32>, Fallback>,
    ) -> Result<(Vec<Typed>, MixedMeta), StoreError> {
        let mut catalogs = Vec::new();
        for &entry in kind.entries() {
            let key = match entry {
                Entry::Tool => self.catalog_key(env, namespace),
                other => other.catalog_key(namespace),
            };
            let index = env.catalog_of(&key)?;
            let vectors = if vector.is_ok() {
                env.tool_vectors(&index)
            } else {
                None
            };
            catalogs.push(KindCatalog {
                entry,
                index,
                vectors,
            });
        }
        let allowed = self.entry_allowed(config, namespace);
        let ranked = crate::rank::mixed::search(
            &catalogs,
            config,
            query,
            config
                .authorization
                .is_some()
                .then_some(&allowed as &dyn Fn(Entry, &str) -> bool),
            vector.as_deref().map_err(Clone::clone),
        );
        env.record(Event::SearchAnswered(ranked.strategy));
        if let Some(f) = &ranked.fallback {
            if config.search.ranking != Ranking::Bm25 {
                env.record(Event::SearchFallback(f.kind));
            }
        }
        let meta = MixedMeta {
            kind: kind.name(),
            strategy: ranked.strategy.name(),
            embedded: ranked.embedded,
            candidates: ranked.candidates,
            matches: ranked.matches,
            offset: query.offset,
            returned: ranked.found.len(),
        };
        let found = ranked
            .found
            .iter()
            .map(|m| Typed {
                kind: m.entry.type_name(),
                name: m.found.tool.name.to_string(),
                score: m.found.score,
                json: result::typed_definition(m),
            })
            .collect();
        Ok((found, meta))
    }

    /// `tools/list` with a query (draft SEP-1821): the permitted tools that match, ranked, as
    /// a list result; eager and progressive tools alike, the filter's own tools not among them.
    pub(super) fn answer_list_query(
        &self,
        config: &Config,
        env: &mut Env<'_>,
        id: &RawValue,
        query: Result<ListQuery, String>,
        vector: Result<Vec<f32>, Fallback>,
    ) -> String {
        let query = match query.and_then(|q| injected::parse_list_query(&q, config)) {
            Ok(query) => query,
            Err(message) => {
                env.record(Event::SearchRejected);
                return jsonrpc::error_response(Some(id), jsonrpc::INVALID_PARAMS, &message);
            }
        };
        let namespace = env.namespace();
        let key = self.catalog_key(env, &namespace);
        let index = match self.catalog_or_error(env, &key) {
            Ok(index) => index,
            Err(message) => {
                return jsonrpc::error_response(Some(id), jsonrpc::INTERNAL_ERROR, &message)
            }
        };
        let ranked = self.rank(config, env, &index, &query, vector);
        // Shaped by the caller: by a policy, or by a catalog kept per credential.
        let private = config.authorization.is_some() || key != namespace;
        let result = injected::list_query_result(&query, &ranked, self.modern(), private);
        jsonrpc::result_response(id, &result)
    }

    /// Runs a search over `index` for this caller and records how it ranked.
    pub(super) fn rank<'i>(
        &self,
        config: &Config,
        env: &mut Env<'_>,
        index: &'i CatalogIndex,
        query: &Query,
        vector: Result<Vec<f32>, Fallback>,
    ) -> Ranked<'i> {
        let scope = self.scope(config, &index.namespace);
        let allowed = |t: &Tool| scope.as_ref().is_none_or(|s| s.allows(&t.name));
        let table = if vector.is_ok() {
            env.tool_vectors(index)
        } else {
            None
        };
        let lookup = |i: usize| table.as_ref().and_then(|t| t.get(i));
        let vectors = match (&vector, &table) {
            (Ok(q), Some(_)) => Ok(Vectors {
                query: q,
                tool: &lookup,
            }),
            (Ok(_), None) => Err(Fallback::new(
                FallbackKind::NotEmbedded,
                "no tool vectors yet",
            )),
            (Err(f), _) => Err(f.clone()),
        };
        let ranked = search::search(
            index,
            config,
            query,
            scope
                .is_some()
                .then_some(&allowed as &dyn Fn(&Tool) -> bool),
            vectors,
        );
        env.record(Event::SearchAnswered(ranked.strategy));
        if let Some(f) = &ranked.fallback {
            if config.search.ranking != Ranking::Bm25 {
                env.record(Event::SearchFallback(f.kind));
            }
        }
        ranked
    }

    pub(super) fn answer_groups(
        &self,
        config: &Config,
        env: &mut Env<'_>,
        namespace: &str,
    ) -> String {
        let modern = self.modern();
        let key = self.catalog_key(env, namespace);
        let index = match self.catalog_or_error(env, &key) {
            Ok(index) => index,
            Err(message) => return injected::error_result(&message, modern),
        };
        let allowed = self.allowed(config, namespace);
        let mut groups: Vec<(String, usize)> = Vec::new();
        for t in index.catalog.tools().iter().filter(|t| allowed(&t.name)) {
            let g = config.group_of(namespace, &t.name);
            match groups.iter_mut().find(|(name, _)| *name == g) {
                Some((_, n)) => *n += 1,
                None => groups.push((g, 1)),
            }
        }
        crate::sort::sort(&mut groups);
        injected::groups_result(&groups, modern)
    }

    pub(super) fn answer_describe(
        &self,
        config: &Config,
        env: &mut Env<'_>,
        namespace: &str,
        arguments: Option<&RawValue>,
    ) -> String {
        let modern = self.modern();
        let names = match injected::parse_describe(arguments) {
            Ok(names) => names,
            Err(message) => return injected::error_result(&message, modern),
        };
        let key = self.catalog_key(env, namespace);
        let index = match self.catalog_or_error(env, &key) {
            Ok(index) => index,
            Err(message) => return injected::error_result(&message, modern),
        };
        let allowed = self.allowed(config, namespace);
        let mut found = Vec::new();
        let mut missing = Vec::new();
        for name in names {
            match index.catalog.get(&name).filter(|t| allowed(&t.name)) {
                Some(t) => found.push(t),
                None => missing.push(name),
            }
        }
        self.described(env, &found);
        injected::describe_result(&found, &missing, modern)
    }
}
