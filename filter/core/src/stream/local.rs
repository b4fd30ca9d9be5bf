//! The answers the filter gives itself, never reaching the upstream: `tool_search`,
//! `list_tool_groups`, `describe_tool`, refused calls, and `call_tool` rewritten into the
//! plain `tools/call` that does go upstream.

use super::*;

impl Stream {
    /// Answers every message of a request made only of our tools and refused calls.
    pub(super) fn answer_locally(
        &mut self,
        config: &Config,
        env: &mut dyn Env,
        incoming: &Incoming,
        vectors: Result<Vec<Vec<f32>>, Fallback>,
    ) -> LocalReply {
        let modern = self.modern();
        let namespace = env.namespace();
        let mut next_vector = 0;
        let mut replies = Vec::new();
        for m in incoming.messages() {
            let Kind::ToolsCall { name, arguments } = m.kind() else {
                continue;
            };
            let Some(id) = m.id.as_deref() else {
                // A notification calling a forbidden tool: withheld, and JSON-RPC has no reply.
                env.record(Event::CallRefused);
                continue;
            };
            let reply = match Injected::of(config, &name) {
                Some(Injected::Search) => {
                    let vector = match &vectors {
                        Ok(all) => {
                            let v = all.get(next_vector).cloned().ok_or_else(|| {
                                Fallback::new(FallbackKind::Malformed, "fewer vectors than queries")
                            });
                            next_vector += 1;
                            v
                        }
                        Err(f) => Err(f.clone()),
                    };
                    jsonrpc::result_response(
                        id,
                        &self.answer_search(config, env, arguments, vector),
                    )
                }
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
            // Streamable HTTP: notifications alone are answered 202 Accepted with no body.
            return LocalReply {
                status: 202,
                headers: Vec::new(),
                body: Vec::new(),
            };
        }
        let body = match incoming {
            Incoming::Single(_) => replies.concat(),
            Incoming::Batch(_) => format!("[{}]", replies.join(",")),
        };
        self.reply(body)
    }

    pub(super) fn catalog_or_error(
        &self,
        env: &mut dyn Env,
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
        env: &mut dyn Env,
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
        let key = self.catalog_key(config, env, &namespace);
        let index = match self.catalog_or_error(env, &key) {
            Ok(index) => index,
            Err(message) => return injected::error_result(&message, modern),
        };
        let ranked = self.rank(config, env, &index, &args.query, vector);
        injected::search_result(config, &args.query, &ranked, modern)
    }

    /// Runs a search over `index` for this caller and records how it ranked.
    pub(super) fn rank<'i>(
        &self,
        config: &Config,
        env: &mut dyn Env,
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
        env: &mut dyn Env,
        namespace: &str,
    ) -> String {
        let modern = self.modern();
        let key = self.catalog_key(config, env, namespace);
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
        groups.sort();
        injected::groups_result(&groups, modern)
    }

    pub(super) fn answer_describe(
        &self,
        config: &Config,
        env: &mut dyn Env,
        namespace: &str,
        arguments: Option<&RawValue>,
    ) -> String {
        let modern = self.modern();
        let names = match injected::parse_describe(arguments) {
            Ok(names) => names,
            Err(message) => return injected::error_result(&message, modern),
        };
        let key = self.catalog_key(config, env, namespace);
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
        injected::describe_result(&found, &missing, modern)
    }

    /// `call_tool`: the same request, as a plain `tools/call` of the named tool.
    pub(super) fn forward_call(
        &mut self,
        config: &Config,
        env: &mut dyn Env,
        message: &Message,
        arguments: Option<&RawValue>,
    ) -> RequestBodyAction {
        let modern = self.modern();
        let fail = |stream: &Self, text: &str| {
            let id = message.id.as_deref();
            let body = match id {
                Some(id) => jsonrpc::result_response(id, &injected::error_result(text, modern)),
                None => jsonrpc::error_response(None, jsonrpc::INVALID_REQUEST, text),
            };
            RequestBodyAction::Reply(stream.reply(body))
        };
        let (target, target_args) = match injected::parse_call(arguments) {
            Ok(call) => call,
            Err(text) => return fail(self, &text),
        };
        let namespace = env.namespace();
        if Injected::of(config, &target).is_some() {
            return fail(
                self,
                &format!("{target} is not called through call_tool; call it directly."),
            );
        }
        if !self.allowed(config, &namespace)(&target) {
            env.record(Event::CallRefused);
            return fail(
                self,
                &format!("Unknown tool: {target}. Use the search tool to find available tools."),
            );
        }
        // Headers already forwarded still name call_tool in `mcp-name` (2026-07-28): the
        // upstream would refuse the rewritten body.
        if !self.head.mcp.name.is_empty() && !config.hold_request_headers {
            return fail(
                self,
                &format!(
                    "Call {target} directly (this proxy cannot rename the request in flight)."
                ),
            );
        }
        match rewrite_call(message, &target, target_args.as_deref()) {
            Some(body) => {
                env.record(Event::CallForwarded);
                // Its response is the upstream's own; nothing to rewrite on the way back.
                let mut headers = Vec::new();
                if config.hold_request_headers {
                    headers.push(HeaderChange::Set("content-length", body.len().to_string()));
                    if !self.head.mcp.name.is_empty() {
                        headers.push(HeaderChange::Set("mcp-name", target));
                    }
                }
                RequestBodyAction::Replace {
                    body: body.into_bytes(),
                    headers,
                }
            }
            None => fail(
                self,
                "call_tool could not be rewritten; call the tool directly.",
            ),
        }
    }
}

/// The request with `params.name` set to `target` and `params.arguments` to `arguments`;
/// every other member (`jsonrpc`, `id`, `params._meta`) kept.
pub(super) fn rewrite_call(
    message: &Message,
    target: &str,
    arguments: Option<&RawValue>,
) -> Option<String> {
    let params = message.params.as_deref()?;
    let mut params = RawObject::parse(params.get()).ok()?;
    params.0.retain(|(k, _)| k != "name" && k != "arguments");
    params.0.insert(
        0,
        (
            "name".to_string(),
            Cow::Owned(RawValue::from_string(json::string(target)).ok()?),
        ),
    );
    if let Some(args) = arguments {
        params
            .0
            .insert(1, ("arguments".to_string(), Cow::Borrowed(args)));
    }
    let mut params_text = String::new();
    params.write(&mut params_text);
    let mut out = String::from("{\"jsonrpc\":\"2.0\"");
    if let Some(id) = message.id.as_deref() {
        out.push_str(",\"id\":");
        out.push_str(id.get());
    }
    out.push_str(",\"method\":\"tools/call\",\"params\":");
    out.push_str(&params_text);
    out.push('}');
    Some(out)
}
