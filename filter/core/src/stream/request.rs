//! A request on its way in: is it MCP traffic, the search endpoint or neither; what its
//! JSON-RPC body holds; whether the headers agree with it and the policy allows it; and so
//! whether it is answered here, refused, or sent upstream (with its list response awaited).

use super::reply::{bad_request, error_json, method_not_allowed};
use super::*;

impl Stream {
    pub fn on_request_headers(
        &mut self,
        config: &Config,
        env: &mut Env<'_>,
        head: RequestHead,
        end_of_stream: bool,
    ) -> RequestHeadersAction {
        // The filter's own catalog fetch through a loopback cluster: it must see the list as
        // the upstream sends it, neither answered nor rewritten here.
        if let Some(marker) = &head.fetch_marker {
            if env.is_own_fetch(marker) {
                return RequestHeadersAction::Continue;
            }
        }
        if config.authorization.is_some() && head.invalid_utf8.iter().any(|h| h == ":path") {
            // A path the filter can only read approximately may route anywhere upstream.
            return RequestHeadersAction::Reply(
                self.refuse_unreadable(env, "the path is not UTF-8"),
            );
        }
        let forms = crate::config::paths::candidates(&head.path);
        let path = &forms[0];
        if let Some(search_path) = config.search.http_path.as_deref() {
            // Code mode serves no search but the scripts' own: its search and groups paths are
            // the route's, like any other path.
            let searching = config.mode != Mode::Code;
            if searching && path == search_path {
                self.head = head;
                if self.head.method != "POST" {
                    return RequestHeadersAction::Reply(method_not_allowed("POST"));
                }
                self.phase = Phase::SearchEndpointBody;
                if end_of_stream {
                    return RequestHeadersAction::Reply(bad_request(
                        "the body must be a JSON object with a \"query\"",
                    ));
                }
                return self.read_body(
                    config,
                    env,
                    RequestHeadersAction::ReadBody {
                        hold: config.hold_request_headers,
                        strip_accept_encoding: false,
                        drop_content_length: false,
                    },
                );
            }
            if searching && path.strip_prefix(search_path) == Some("/groups") {
                if head.method != "GET" {
                    return RequestHeadersAction::Reply(method_not_allowed("GET"));
                }
                self.head = head;
                return RequestHeadersAction::Reply(self.answer_groups_view(config, env));
            }
            if path.strip_prefix(search_path) == Some("/health") {
                if head.method != "GET" {
                    return RequestHeadersAction::Reply(method_not_allowed("GET"));
                }
                self.head = head;
                return RequestHeadersAction::Reply(self.answer_health(config, env));
            }
            if path.strip_prefix(search_path) == Some("/insights") {
                if head.method != "GET" {
                    return RequestHeadersAction::Reply(method_not_allowed("GET"));
                }
                self.head = head;
                return RequestHeadersAction::Reply(self.answer_insights(config, env));
            }
        }
        if !config.is_mcp_path(&forms) {
            return RequestHeadersAction::Continue;
        }
        self.watch = true;
        if end_of_stream {
            self.head = head;
            return RequestHeadersAction::Continue;
        }
        // Only POST bodies hold client messages (Streamable HTTP, spec 2025-11-25
        // "Transports"); under a policy any body is read all the same, since what a server does
        // with an unexpected method is not ours to assume. No header lets a body go unread:
        // `Mcp-Method` and `Mcp-Name` are the client's word, the body is what the server runs.
        if head.method != "POST" && config.authorization.is_none() {
            return RequestHeadersAction::Continue;
        }
        if config.authorization.is_some() {
            if let Some(why) = unreadable_framing(&head) {
                return RequestHeadersAction::Reply(self.refuse_unreadable(env, &why));
            }
        }
        let hold = config.hold_request_headers;
        // Forwarded headers cannot wait for the body: a response that may be rewritten must
        // come back uncompressed, so every candidate request asks for identity encoding.
        let strip_accept_encoding =
            !hold || head.mcp.method.iter().any(|m| m.as_str() == "tools/list");
        let drop_content_length =
            !hold && Injected::of(config, injected::CALL) == Some(Injected::Call);
        self.head = head;
        self.phase = Phase::McpBody;
        self.read_body(
            config,
            env,
            RequestHeadersAction::ReadBody {
                hold,
                strip_accept_encoding,
                drop_content_length,
            },
        )
    }

    /// `read` unless the declared length is already above the cap: such a body is never held
    /// (Envoy would answer 413 itself once the held bytes pass its buffer limit).
    fn read_body(
        &mut self,
        config: &Config,
        env: &mut Env<'_>,
        read: RequestHeadersAction,
    ) -> RequestHeadersAction {
        let cap = u64::try_from(self.request_cap(config)).unwrap_or(u64::MAX);
        if self.head.content_length.is_none_or(|length| length <= cap) {
            return read;
        }
        match self.request_too_large(config, env) {
            Some(reply) => RequestHeadersAction::Reply(reply),
            None => RequestHeadersAction::Continue,
        }
    }

    /// Whether the glue should buffer the request body for `on_request_body`.
    pub fn wants_request_body(&self) -> bool {
        matches!(self.phase, Phase::McpBody | Phase::SearchEndpointBody)
    }

    /// The most request body the filter holds before letting the request go unread.
    pub fn request_cap(&self, config: &Config) -> usize {
        if config.authorization.is_some() || self.names_call_tool(config) {
            config.max_body_bytes
        } else {
            REQUEST_CLASSIFY_CAP.min(config.max_body_bytes)
        }
    }

    /// The request's mirrored headers name the injected `call_tool`: only the filter can answer
    /// it (the upstream does not know it), so its arguments are read however large. 2026-07-28
    /// clients send `Mcp-Method` and `Mcp-Name` on every request (Streamable HTTP 2026-07-28);
    /// older clients have none to tell, and their calls are read up to `REQUEST_CLASSIFY_CAP`
    /// only (README "Known limits"). The headers decide how much is read, never what the
    /// request is: the body does.
    fn names_call_tool(&self, config: &Config) -> bool {
        let mirrored = &self.head.mcp;
        let one = |values: &[String]| match values {
            [value] => crate::mcp::headers::decode(value),
            _ => None,
        };
        one(&mirrored.method).as_deref() == Some("tools/call")
            && one(&mirrored.name)
                .is_some_and(|name| Injected::of(config, &name) == Some(Injected::Call))
    }

    /// The request body was larger than the cap: let it go as it is (or, for the search
    /// endpoint and under authorization, refuse it: an unread call cannot be authorized).
    pub fn request_too_large(&mut self, config: &Config, env: &mut Env<'_>) -> Option<LocalReply> {
        env.record(Event::PassedThrough(PassReason::TooLarge));
        let endpoint = matches!(self.phase, Phase::SearchEndpointBody);
        self.phase = Phase::Done;
        if endpoint {
            return Some(LocalReply::json(
                413,
                error_json("the search request body is too large"),
            ));
        }
        config.authorization.as_ref().map(|_| {
            LocalReply::json(
                413,
                jsonrpc::error_response(
                    None,
                    jsonrpc::INVALID_REQUEST,
                    "request too large to authorize",
                ),
            )
        })
    }

    /// The request body the filter was waiting for cannot be had whole (the host could not hand
    /// it over, or request trailers ended the stream before the body did). Under a policy, or
    /// for the search endpoint, the request is refused; otherwise it goes on unread.
    pub fn request_body_unavailable(
        &mut self,
        config: &Config,
        env: &mut Env<'_>,
        why: &str,
    ) -> Option<LocalReply> {
        if !self.wants_request_body() {
            return None;
        }
        let endpoint = matches!(self.phase, Phase::SearchEndpointBody);
        self.phase = Phase::Done;
        if endpoint {
            env.record(Event::SearchRejected);
            return Some(bad_request(&format!("the search request body: {why}")));
        }
        config.authorization.as_ref()?;
        Some(self.refuse_unreadable(env, why))
    }

    /// The whole request body.
    pub fn on_request_body(
        &mut self,
        config: &Config,
        env: &mut Env<'_>,
        body: &[u8],
    ) -> RequestBodyAction {
        match std::mem::replace(&mut self.phase, Phase::Done) {
            Phase::SearchEndpointBody => self.on_search_endpoint(config, env, body),
            Phase::McpBody => self.on_mcp_body(config, env, body),
            other => {
                self.phase = other;
                RequestBodyAction::Continue {
                    headers: Vec::new(),
                }
            }
        }
    }

    pub(super) fn on_mcp_body(
        &mut self,
        config: &Config,
        env: &mut Env<'_>,
        body: &[u8],
    ) -> RequestBodyAction {
        let strict = config.authorization.is_some();
        let incoming = match jsonrpc::parse(body) {
            Ok(incoming) => incoming,
            // Under a policy, what the filter cannot read in exactly one way may be read some
            // other way by the server: it never reaches it.
            Err(e) if strict => {
                return RequestBodyAction::Reply(self.refuse_unreadable(env, &e.to_string()))
            }
            // Not ours to judge: the upstream answers malformed requests with its own error.
            Err(_) => {
                return RequestBodyAction::Continue {
                    headers: Vec::new(),
                }
            }
        };
        if let Err(mismatch) = headers::validate(&self.head.mcp, &incoming) {
            env.record(Event::RequestRefused(Refusal::HeaderMismatch));
            let id = match &incoming {
                Incoming::Single(m) => m.id.as_deref(),
                Incoming::Batch(_) => None,
            };
            return RequestBodyAction::Reply(LocalReply::json(
                400,
                jsonrpc::error_response(id, headers::HEADER_MISMATCH, &mismatch.to_string()),
            ));
        }
        if strict {
            // An id the filter cannot hold as the value the server and the client hold may
            // pair answers the filter cannot see (spec 2025-11-25 "Base Protocol": ids are
            // strings or integers).
            if let Some(Err(why)) = incoming
                .messages()
                .iter()
                .find_map(|m| m.id_key().filter(|key| key.is_err()))
            {
                return RequestBodyAction::Reply(self.refuse_unreadable(env, &why));
            }
            if repeats_an_id(&incoming) {
                // Responses are matched to requests by id: two requests of one id could have
                // the answer of one read as the other's (a tools list as a prompts list).
                let reply = self.refuse_unreadable(env, "a batch repeats a request id");
                return RequestBodyAction::Reply(reply);
            }
        }
        if let Incoming::Single(m) = &incoming {
            self.reply_id = m.id.clone();
        }
        let namespace = env.namespace();
        let listing = config.mode != Mode::List;
        let mut local = 0;
        let mut refused = 0;
        for m in incoming.messages() {
            match m.kind() {
                Kind::ToolsList { .. } if list_query(config, m).is_some() => local += 1,
                // The kill switch: with nobody to filter for, lists are left completely alone.
                Kind::ToolsList { .. } if !listing && config.authorization.is_none() => {}
                Kind::ToolsList { first_page, .. } => {
                    let target =
                        m.id.as_deref()
                            .and_then(|id| ListTarget::new(id, *first_page, Entry::Tool));
                    self.targets.extend(target);
                }
                Kind::ToolsCall { name, .. } => {
                    if listing && m.id.is_some() && Injected::of(config, name).is_some() {
                        local += 1;
                    } else if !self.allowed(config, &namespace)(name) {
                        refused += 1;
                    }
                }
                Kind::UnreadableCall(why) if strict => {
                    let reply = self.refuse_unreadable(env, &format!("tools/call {why}"));
                    return RequestBodyAction::Reply(reply);
                }
                Kind::EntriesList { entry, first_page } => {
                    // Learned for search; under a policy, filtered for the caller.
                    if listing || config.authorization.is_some() {
                        let target =
                            m.id.as_deref()
                                .and_then(|id| ListTarget::new(id, *first_page, *entry));
                        self.targets.extend(target);
                    }
                }
                Kind::Use { entry, key } => {
                    let uri = matches!(entry, Entry::Resource | Entry::ResourceTemplate);
                    if let Some(why) = uri
                        .then(|| crate::config::paths::resource_uri_problem(key))
                        .flatten()
                        .filter(|_| strict)
                    {
                        let reply = self.refuse_unreadable(env, &format!("resource URI: {why}"));
                        return RequestBodyAction::Reply(reply);
                    }
                    if !self.entry_allowed(config, &namespace)(*entry, key) {
                        refused += 1;
                    }
                }
                Kind::UnreadableUse(why) if strict => {
                    let reply = self.refuse_unreadable(env, why);
                    return RequestBodyAction::Reply(reply);
                }
                Kind::UnreadableCall(_) | Kind::UnreadableUse(_) | Kind::Other => {}
            }
        }
        let total = incoming.messages().len();
        if local + refused > 0 {
            if local + refused < total {
                // Nothing of a batch that calls a forbidden tool may reach the upstream; under
                // a policy neither may a call of our tools' names, which the upstream would run
                // as its own tool of that name if it has one.
                if refused > 0 || strict {
                    env.record(Event::CallRefused);
                    return RequestBodyAction::Reply(self.refuse_batch(&incoming));
                }
                // A batch mixing our tools with upstream calls cannot be split without rewriting
                // both directions; batches left the protocol in 2025-06-18, so it goes upstream
                // (a list in it is still rewritten).
                env.record(Event::PassedThrough(PassReason::MixedBatch));
                return self.await_lists(config);
            }
            if let Incoming::Single(m) = &incoming {
                if let Kind::ToolsCall { name, arguments } = m.kind() {
                    if Injected::of(config, name) == Some(Injected::Call) {
                        return self.forward_call(config, env, m, arguments.as_deref());
                    }
                }
            }
            if needs_catalog(config, &incoming)
                && self.must_fetch(config, env, &namespace, &|| {
                    searched_kinds(config, &incoming)
                })
            {
                if let Some(origin) = env.origin() {
                    return self.fetch(env, &namespace, origin, Pending::Mcp(incoming));
                }
            }
            #[cfg(feature = "code-mode")]
            if let Some(action) = self.script_request(config, env, &incoming) {
                return action;
            }
            if self.needs_query_vectors(config) {
                let texts = search_texts(config, &incoming);
                if !texts.is_empty() {
                    self.phase = Phase::Embedding(Pending::Mcp(incoming));
                    return RequestBodyAction::Embed { texts };
                }
            }
            return RequestBodyAction::Reply(self.answer_locally(
                config,
                env,
                &incoming,
                Err(no_vectors()),
            ));
        }
        if listing {
            self.calls_in(config, env, &incoming);
        }
        self.await_lists(config)
    }

    /// Continue upstream, rewriting the response if the request holds a `tools/list`.
    pub(super) fn await_lists(&mut self, config: &Config) -> RequestBodyAction {
        if self.targets.is_empty() {
            return RequestBodyAction::Continue {
                headers: Vec::new(),
            };
        }
        self.phase = Phase::AwaitResponse;
        // The response will be rewritten: it must come back uncompressed.
        let mut headers = Vec::new();
        if config.hold_request_headers {
            headers.push(HeaderChange::Remove("accept-encoding"));
        }
        RequestBodyAction::Continue { headers }
    }

    pub(super) fn needs_query_vectors(&self, config: &Config) -> bool {
        config.search.ranking != Ranking::Bm25 && config.search.embeddings.is_some()
    }

    /// The query vectors arrived (or failed): answer the request that waited for them.
    pub fn on_query_embeddings(
        &mut self,
        config: &Config,
        env: &mut Env<'_>,
        vectors: Result<Vec<Vec<f32>>, Fallback>,
    ) -> RequestBodyAction {
        match std::mem::replace(&mut self.phase, Phase::Done) {
            Phase::Embedding(Pending::Mcp(incoming)) => {
                RequestBodyAction::Reply(self.answer_locally(config, env, &incoming, vectors))
            }
            Phase::Embedding(Pending::Http(request)) => {
                let vector = vectors.and_then(|v| {
                    crate::rank::parts::query_vector(&mut v.into_iter(), &request.query.text)
                        .ok_or_else(|| {
                            Fallback::new(FallbackKind::Malformed, "too few vectors returned")
                        })
                });
                RequestBodyAction::Reply(self.answer_http_search(config, env, &request, vector))
            }
            other => {
                self.phase = other;
                RequestBodyAction::Continue {
                    headers: Vec::new(),
                }
            }
        }
    }

    /// Whether the stream waits for query vectors.
    pub fn awaiting_embeddings(&self) -> bool {
        matches!(self.phase, Phase::Embedding(_))
    }

    /// A request the policy cannot be applied to: refused before it reaches the upstream.
    pub(super) fn refuse_unreadable(&mut self, env: &mut Env<'_>, why: &str) -> LocalReply {
        env.record(Event::RequestRefused(Refusal::Unreadable));
        env.log_warn(&format!(
            "request refused under the authorization policy: {why}"
        ));
        self.phase = Phase::Done;
        LocalReply::json(
            400,
            jsonrpc::error_response(
                None,
                jsonrpc::INVALID_REQUEST,
                &format!(
                    "Request refused: the authorization policy needs a body it can read in exactly one way ({why})"
                ),
            ),
        )
    }

    pub(super) fn refuse_batch(&self, incoming: &Incoming) -> LocalReply {
        let replies: Vec<String> = incoming
            .messages()
            .iter()
            .filter_map(|m| m.id.as_deref())
            .map(|id| {
                jsonrpc::error_response(
                    Some(id),
                    jsonrpc::INVALID_REQUEST,
                    "batch refused: it calls a tool that is not available; send the requests one by one",
                )
            })
            .collect();
        self.reply(format!("[{}]", replies.join(",")))
    }
}

/// Whether two requests of a batch have one id as some reader keys ids (`jsonrpc::IdKey`).
fn repeats_an_id(incoming: &Incoming) -> bool {
    // As strings: one sort in the .wasm with the list rewrite's sort of group names.
    let mut keys: Vec<String> = incoming
        .messages()
        .iter()
        .filter_map(|m| m.id_key()?.ok())
        .map(jsonrpc::IdKey::into_string)
        .collect();
    let all = keys.len();
    keys.sort_unstable();
    keys.dedup();
    keys.len() < all
}

/// Whether answering the request reads the catalog (a search, the groups, a description, a
/// list for a query).
fn needs_catalog(config: &Config, incoming: &Incoming) -> bool {
    incoming.messages().iter().any(|m| match m.kind() {
        Kind::ToolsCall { name, .. } => matches!(
            Injected::of(config, name),
            Some(Injected::Search | Injected::ListGroups | Injected::Describe | Injected::Script)
        ),
        Kind::ToolsList { .. } => list_query(config, m).is_some(),
        _ => false,
    })
}

/// The kinds of entry the request's searches look for besides tools.
fn searched_kinds(config: &Config, incoming: &Incoming) -> Vec<Entry> {
    let mut kinds = Vec::new();
    for m in incoming.messages() {
        if let Kind::ToolsCall { name, arguments } = m.kind() {
            if Injected::of(config, name) == Some(Injected::Search) {
                if let Ok(args) =
                    injected::parse_search(arguments.as_deref(), config, injected::Asker::Tool)
                {
                    kinds.extend(args.kind.entries());
                }
            }
        }
    }
    kinds
}

/// A `tools/list` request's query, where the filter answers it: `search.list_query` on and
/// lists not left alone (`mode: "list"`).
pub(super) fn list_query<'m>(
    config: &Config,
    m: &'m Message,
) -> Option<&'m Result<ListQuery, String>> {
    if !config.search.list_query || matches!(config.mode, Mode::List | Mode::Code) {
        return None;
    }
    match m.kind() {
        Kind::ToolsList { query, .. } => query.as_ref(),
        _ => None,
    }
}

/// The text a message searches for, when it is a valid search (a `tool_search` call or a
/// list for a query): one query vector each, in message order.
pub(super) fn search_text(config: &Config, m: &Message) -> Option<String> {
    m.id.as_ref()?;
    match m.kind() {
        Kind::ToolsCall { name, arguments }
            if Injected::of(config, name) == Some(Injected::Search) =>
        {
            injected::parse_search(arguments.as_deref(), config, injected::Asker::Tool)
                .ok()
                .map(|a| a.query.text)
        }
        Kind::ToolsList { .. } => list_query(config, m)?
            .as_ref()
            .ok()
            .and_then(|q| injected::parse_list_query(q, config).ok())
            .map(|q| q.text),
        _ => None,
    }
}

/// The queries of the searches in a request, in order (for one embeddings call).
pub(super) fn search_texts(config: &Config, incoming: &Incoming) -> Vec<String> {
    incoming
        .messages()
        .iter()
        .filter_map(|m| search_text(config, m))
        .flat_map(|text| crate::rank::parts::query_texts(&text).collect::<Vec<_>>())
        .collect()
}

/// Why, under a policy, the headers say the body may be read otherwise than as plain UTF-8
/// JSON: a server that honours `charset=utf-7` (Express's `body-parser`) or a
/// `content-encoding` would run a different body from the one the filter authorized, and a
/// header value that is not UTF-8 cannot be compared at all.
fn unreadable_framing(head: &RequestHead) -> Option<String> {
    if let Some(name) = head.invalid_utf8.first() {
        return Some(format!("header {name} is not UTF-8"));
    }
    match head.content_type.as_slice() {
        [] => {}
        // Envoy joins a repeated content-type into one value with commas.
        [one] if one.contains(',') => return Some("content-type sent more than once".to_string()),
        [one] => {
            for param in one.split(';').skip(1) {
                let (key, value) = param.split_once('=').unwrap_or((param, ""));
                let value = value.trim().trim_matches('"');
                if !key.trim().eq_ignore_ascii_case("charset")
                    || !value.eq_ignore_ascii_case("utf-8")
                {
                    return Some(format!(
                        "content-type {one:?}: only application/json with charset utf-8 is read"
                    ));
                }
            }
        }
        _ => return Some("content-type sent more than once".to_string()),
    }
    head.content_encoding
        .iter()
        .find(|e| !e.trim().eq_ignore_ascii_case("identity"))
        .map(|e| format!("content-encoding {e:?}: an encoded body cannot be authorized"))
}
