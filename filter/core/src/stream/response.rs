//! The upstream's response to a `tools/list`: held (JSON) or read event by event (SSE),
//! rewritten for the caller, and learned into the shared catalog; anything that cannot be
//! rewritten passes through unchanged, or is refused under a policy.

use super::*;

impl Stream {
    pub fn on_response_headers(
        &mut self,
        config: &Config,
        env: &mut Env<'_>,
        status: Option<&str>,
        content_type: Option<&str>,
        content_encoding: Option<&str>,
    ) -> ResponseHeadersAction {
        let paired = matches!(self.phase, Phase::AwaitResponse);
        // What the client receives is decided on here, not on what it asked: under a policy
        // every response on an MCP path is read (`mcp::guard`).
        self.guarding = self.watch && self.restricted(config, &env.namespace());
        if !paired && !self.guarding {
            if status == Some("200") && self.watch_response(content_type) {
                return ResponseHeadersAction::Watch;
            }
            return ResponseHeadersAction::Continue;
        }
        self.phase = Phase::Done;
        let success = status.is_some_and(|s| s.starts_with('2'));
        if status != Some("200") && !(self.guarding && success) {
            // Another success status may still carry a list a client reads: under a policy it
            // cannot pass unfiltered. Error statuses are not list results, and a 401 must reach
            // the client as sent (MCP authorization: its WWW-Authenticate starts the flow).
            if success {
                return self.cannot_filter(config, env, PassReason::Status);
            }
            if paired {
                env.record(Event::PassedThrough(PassReason::Status));
            }
            return ResponseHeadersAction::Continue;
        }
        if content_encoding.is_some_and(|e| !e.trim().eq_ignore_ascii_case("identity")) {
            return self.cannot_filter(config, env, PassReason::Encoded);
        }
        let media = content_type
            .and_then(|c| c.split(';').next())
            .map(|c| c.trim().to_ascii_lowercase());
        match media.as_deref() {
            Some("application/json") => {
                self.phase = Phase::Json(Vec::new());
                ResponseHeadersAction::RewriteBody
            }
            Some("text/event-stream") => {
                self.phase = Phase::Sse(SseRewriter::new(config.max_body_bytes));
                ResponseHeadersAction::RewriteBody
            }
            _ => self.cannot_filter(config, env, PassReason::ContentType),
        }
    }

    /// A list the filter cannot read: unchanged without authorization, refused with it (it
    /// would show the caller tools the policy forbids).
    pub(super) fn cannot_filter(
        &mut self,
        config: &Config,
        env: &mut Env<'_>,
        reason: PassReason,
    ) -> ResponseHeadersAction {
        env.record(Event::PassedThrough(reason));
        if config.authorization.is_none() {
            return ResponseHeadersAction::Continue;
        }
        env.record(Event::ResponseWithheld);
        env.log_warn(&format!(
            "{} refused: it cannot be filtered for the caller ({})",
            self.what(),
            reason.name()
        ));
        self.phase = Phase::Refuse(reason, false);
        ResponseHeadersAction::Refuse
    }

    /// What the response is, for the operator's log.
    fn what(&self) -> &'static str {
        if self.targets.is_empty() {
            "response"
        } else {
            "tools/list response"
        }
    }

    /// The JSON-RPC error a client receives in place of what could not be filtered for it.
    fn refusal_message(&self, reason: &str) -> String {
        let subject = if self.targets.is_empty() {
            "response"
        } else {
            "tool list"
        };
        format!("the {subject} could not be filtered for this caller ({reason}); ask the operator")
    }

    /// The response's declared length: a JSON list is held whole, and growing the buffer by
    /// doubling would briefly need half as much again (megabytes at 10,000 tools).
    pub fn expect_response_length(&mut self, config: &Config, length: usize) {
        if let Phase::Json(held) = &mut self.phase {
            held.reserve_exact(length.min(config.max_body_bytes));
        }
    }

    /// The JSON-RPC error that replaces a list that cannot be filtered for the caller.
    pub(super) fn refusal(&self, reason: PassReason, sse: bool) -> Vec<u8> {
        let message = self.refusal_message(reason.name());
        let mut errors: Vec<String> = self
            .targets
            .iter()
            .map(|t| jsonrpc::error_response(Some(&t.id), jsonrpc::INTERNAL_ERROR, &message))
            .collect();
        if errors.is_empty() {
            let id = self.reply_id.as_deref();
            errors.push(jsonrpc::error_response(
                id,
                jsonrpc::INTERNAL_ERROR,
                &message,
            ));
        }
        let body = if errors.len() == 1 {
            errors.concat()
        } else {
            format!("[{}]", errors.join(","))
        };
        if sse {
            format!("event: message\ndata: {body}\n\n").into_bytes()
        } else {
            body.into_bytes()
        }
    }

    /// Passing held bytes on, or, under authorization, the error instead (and nothing after);
    /// logged with `detail` (why the list could not be read), and always when refused.
    pub(super) fn give_up(
        &mut self,
        config: &Config,
        env: &mut Env<'_>,
        held: Vec<u8>,
        reason: PassReason,
        sse: bool,
        detail: Option<&str>,
    ) -> Vec<u8> {
        let detail = detail.map(|d| format!(": {d}")).unwrap_or_default();
        if config.authorization.is_none() {
            if !detail.is_empty() {
                env.log_warn(&format!(
                    "tools/list response passed through unchanged ({}){detail}",
                    reason.name()
                ));
            }
            return held;
        }
        env.record(Event::ResponseWithheld);
        env.log_warn(&format!(
            "{} refused: it cannot be filtered for the caller ({}){detail}",
            self.what(),
            reason.name()
        ));
        self.phase = Phase::Refuse(reason, true);
        self.refusal(reason, sse)
    }

    /// A chunk of the response body; returns the bytes the client gets in its place (JSON is
    /// held until the end of the stream, SSE events go on as soon as they are complete).
    pub fn on_response_chunk(
        &mut self,
        config: &Config,
        env: &mut Env<'_>,
        chunk: &[u8],
        end_of_stream: bool,
    ) -> Vec<u8> {
        let mut phase = std::mem::replace(&mut self.phase, Phase::Done);
        match &mut phase {
            Phase::Json(held) => {
                held.extend_from_slice(chunk);
                if held.len() > config.max_body_bytes {
                    env.record(Event::PassedThrough(PassReason::TooLarge));
                    let held = std::mem::take(held);
                    return self.give_up(config, env, held, PassReason::TooLarge, false, None);
                }
                if !end_of_stream {
                    self.phase = phase;
                    return Vec::new();
                }
                let whole = std::mem::take(held);
                let paired = if self.targets.is_empty() {
                    Ok(None)
                } else {
                    self.rewrite_list(config, env, &whole)
                };
                let learning = self.may_learn(config);
                match paired {
                    Ok(Some(rewritten)) => {
                        let body = if rewritten.outcome.body.is_some() {
                            learn_from(env, rewritten, whole, &learning).unwrap_or_default()
                        } else {
                            learn_from(env, rewritten, Vec::new(), &learning);
                            whole
                        };
                        self.guard_json(config, env, body, true)
                    }
                    Ok(None) => self.guard_json(config, env, whole, false),
                    Err(e) => {
                        env.record(Event::PassedThrough(PassReason::Unparseable));
                        let detail = e.to_string();
                        self.give_up(
                            config,
                            env,
                            whole,
                            PassReason::Unparseable,
                            false,
                            Some(&detail),
                        )
                    }
                }
            }
            Phase::Watch(scanner) => {
                if scanner.push(chunk) {
                    let namespace = env.namespace();
                    env.mark_stale(&namespace);
                }
                if !end_of_stream {
                    self.phase = phase;
                }
                chunk.to_vec()
            }
            Phase::Sse(rewriter) => {
                let before = rewriter.gave_up().is_some();
                let out = rewriter.push(chunk, end_of_stream, &mut |data| {
                    self.answer_event(config, env, data)
                });
                if rewriter.take_list_changed() {
                    let namespace = env.namespace();
                    env.mark_stale(&namespace);
                }
                let (reason, detail) = match (before, rewriter.gave_up()) {
                    (false, Some(SseGiveUp::TooLarge)) => (Some(PassReason::TooLarge), None),
                    (false, Some(SseGiveUp::Unparseable(e))) => (
                        Some(PassReason::Unparseable),
                        Some(format!("an event: {e}")),
                    ),
                    _ => (None, None),
                };
                if !end_of_stream {
                    self.phase = phase;
                }
                match reason {
                    Some(reason) => {
                        env.record(Event::PassedThrough(reason));
                        self.give_up(config, env, out, reason, true, detail.as_deref())
                    }
                    None => out,
                }
            }
            Phase::Refuse(reason, sent) => {
                if !*sent {
                    *sent = true;
                    let reason = *reason;
                    if !end_of_stream {
                        self.phase = phase;
                    }
                    return self.refusal(reason, false);
                }
                if !end_of_stream {
                    self.phase = phase;
                }
                Vec::new()
            }
            _ => chunk.to_vec(),
        }
    }

    /// The stream ended in trailers (HTTP/2) with bytes still held: they can no longer be sent
    /// (proxy-wasm cannot add body data in the trailers callback). Returns how many were lost.
    pub fn on_response_trailers(&mut self, env: &mut Env<'_>) -> usize {
        let held = match &mut self.phase {
            Phase::Json(held) => held.len(),
            Phase::Sse(rewriter) => rewriter.pending(),
            _ => 0,
        };
        self.phase = Phase::Done;
        if held > 0 {
            env.record(Event::Error);
            env.log_warn(&format!(
                "response ended in trailers with {held} body bytes held for rewriting; they were dropped"
            ));
        }
        held
    }

    /// Whether a response to rewrite or watch is expected.
    pub fn awaiting_response(&self) -> bool {
        matches!(self.phase, Phase::AwaitResponse)
            || (self.watch && matches!(self.phase, Phase::Done | Phase::Ignored))
    }

    /// Whether the response body is still being rewritten.
    pub fn rewriting_response(&self) -> bool {
        matches!(
            self.phase,
            Phase::Json(_) | Phase::Sse(_) | Phase::Refuse(..) | Phase::Watch(_)
        )
    }

    pub(super) fn rewrite(
        &self,
        config: &Config,
        env: &mut Env<'_>,
        message: &[u8],
    ) -> Result<Option<Vec<u8>>, RewriteError> {
        let learning = self.may_learn(config);
        Ok(self
            .rewrite_list(config, env, message)?
            .and_then(|rewritten| learn_from(env, rewritten, Vec::new(), &learning)))
    }

    /// One SSE event's message as the client receives it: this stream's list rewritten, and,
    /// when guarding, every list in it filtered, or the whole event replaced by an error when
    /// it cannot be read (the stream goes on: a GET stream may carry minutes of other events).
    fn answer_event(
        &self,
        config: &Config,
        env: &mut Env<'_>,
        data: &[u8],
    ) -> Result<Option<Vec<u8>>, RewriteError> {
        let rewritten = if self.targets.is_empty() {
            Ok(None)
        } else {
            self.rewrite(config, env, data)
        };
        if !self.guarding {
            return rewritten;
        }
        let guarded = rewritten.map_err(|e| e.to_string()).and_then(|rewritten| {
            let paired = rewritten.is_some();
            let input = rewritten.as_deref().unwrap_or(data);
            let filtered = self.guard(config, env, input, paired)?;
            Ok(filtered.or(rewritten))
        });
        match guarded {
            Ok(data) => Ok(data),
            Err(why) => {
                env.record(Event::PassedThrough(PassReason::Unparseable));
                env.record(Event::ResponseWithheld);
                env.log_warn(&format!(
                    "{} refused: it cannot be filtered for the caller (unparseable): an event: {why}",
                    self.what()
                ));
                let message = self.refusal_message(PassReason::Unparseable.name());
                Ok(Some(
                    jsonrpc::error_response(
                        self.reply_id.as_deref(),
                        jsonrpc::INTERNAL_ERROR,
                        &message,
                    )
                    .into_bytes(),
                ))
            }
        }
    }

    /// A whole JSON body as the client receives it: when guarding, every list in it filtered
    /// (`paired`: this stream's own list was rewritten already), or the error in its place.
    fn guard_json(
        &mut self,
        config: &Config,
        env: &mut Env<'_>,
        body: Vec<u8>,
        paired: bool,
    ) -> Vec<u8> {
        if !self.guarding {
            return body;
        }
        match self.guard(config, env, &body, paired) {
            Ok(filtered) => filtered.unwrap_or(body),
            Err(detail) => {
                env.record(Event::PassedThrough(PassReason::Unparseable));
                self.give_up(
                    config,
                    env,
                    body,
                    PassReason::Unparseable,
                    false,
                    Some(&detail),
                )
            }
        }
    }

    /// `message` (a body or one event's data) with every list in it filtered for this caller
    /// (`None`: it goes on as it is), counting a list this stream did not ask for (`paired`:
    /// the stream's own list was rewritten already); `Err`: why it cannot be read in one way.
    fn guard(
        &self,
        config: &Config,
        env: &mut Env<'_>,
        message: &[u8],
        paired: bool,
    ) -> Result<Option<Vec<u8>>, String> {
        let namespace = env.namespace();
        let receivable = self.receivable(config, &namespace);
        let guarded = crate::mcp::guard::guard(message, &receivable).map_err(|e| e.to_string())?;
        if guarded.lists > 0 && !paired {
            env.record(Event::ListFilteredUnpaired);
        }
        Ok(guarded.body)
    }

    /// Whether lists on this stream may be learned into the namespace's catalog, and for whom:
    /// only a request to the authority the operator configured (`catalog.authority`) writes
    /// it; the catalog is every caller's, and another virtual host of the same upstream may
    /// list other tools (or an attacker's descriptions).
    fn may_learn(&self, config: &Config) -> Learning {
        let foreign = config.catalog.authority.as_deref().and_then(|configured| {
            let authority = self.head.authority.as_deref().unwrap_or_default();
            (!authority.eq_ignore_ascii_case(configured)).then(|| {
                format!("a list for authority {authority:?} is not learned: catalog.authority is {configured:?}")
            })
        });
        Learning {
            refused: foreign,
            credential: self.credential(),
        }
    }

    /// The rewrite of a `tools/list` response, not yet learned from: learning can wait until
    /// the response's bytes are freed (they and the learned definitions are each megabytes).
    pub(super) fn rewrite_list(
        &self,
        config: &Config,
        env: &mut Env<'_>,
        message: &[u8],
    ) -> Result<Option<Rewritten>, RewriteError> {
        let index = match env.catalog() {
            Ok(index) => Some(index),
            Err(e) => {
                env.record(Event::Error);
                env.log_warn(&format!("catalog unavailable while listing: {e}"));
                None
            }
        };
        let none = Catalog::default();
        let known = index.as_ref().map_or(&none, |index| &index.catalog);
        let known_complete = known.is_complete();
        let namespace = env.namespace();
        let scope = self.scope(config, &namespace);
        let allowed = |name: &str| scope.as_ref().is_none_or(|s| s.allows(name));
        let entry_allowed = self.entry_allowed(config, &namespace);
        let audience = scope.as_ref().map(Scope::rules);
        let ctx = ListContext {
            config,
            namespace: &namespace,
            known,
            allowed: &allowed,
            entry_allowed: &entry_allowed,
            authorizing: config.authorization.is_some(),
            known_complete,
            audience,
            memo: index.as_ref().map(|i| &i.list_memo),
            structured: self.structured(),
        };
        let started = env.insights().then(|| env.now_ns());
        let outcome = list::rewrite_message(message, &self.targets, &ctx)?;
        drop(ctx);
        if let (Some(started), Some(body)) =
            (started, outcome.as_ref().and_then(|o| o.body.as_ref()))
        {
            let elapsed_us = env.elapsed_us(started);
            env.observe(crate::stats::LIST_REWRITE_TIME_US, elapsed_us);
            let saved = message.len().saturating_sub(body.len());
            env.observe(
                crate::stats::LIST_BYTES_SAVED,
                u64::try_from(saved).unwrap_or(u64::MAX),
            );
            let hidden = outcome.as_ref().map_or(0, |o| o.hidden);
            env.access(format!(
                "{{\"action\":\"list_rewritten\",\"namespace\":{},\"hidden\":{hidden},\"bytes_saved\":{saved},\"time_us\":{elapsed_us}}}",
                crate::mcp::json::string(&namespace)
            ));
        }
        Ok(outcome.map(|outcome| Rewritten { outcome, index }))
    }
}

/// A rewritten list and the catalog version it was rewritten against.
pub(super) struct Rewritten {
    outcome: list::Outcome,
    index: Option<Rc<CatalogIndex>>,
}

/// Whether a stream's lists are learned, and whose they are when the server made them private.
pub(super) struct Learning {
    /// Why the lists are not learned, if they are not.
    refused: Option<String>,
    credential: String,
}

/// Learns the page of a rewritten list and counts it; returns the new body (`None`: unchanged).
/// `buffer` is the response's, spent: the catalog is written to shared data through it.
pub(super) fn learn_from(
    env: &mut Env<'_>,
    rewritten: Rewritten,
    buffer: Vec<u8>,
    learning: &Learning,
) -> Option<Vec<u8>> {
    let Rewritten { mut outcome, index } = rewritten;
    let credential = learning.credential.as_str();
    if let Some(why) = &learning.refused {
        if outcome.tools || !outcome.entries.is_empty() {
            env.record(Event::ListNotLearned);
            env.log_warn(why);
        }
        outcome.entries.clear();
        outcome.tools = false;
    }
    for (entry, entries, page) in std::mem::take(&mut outcome.entries) {
        // A list the server shaped for this caller is never searched for another; without a
        // policy of ours to key it by, it is not learned at all.
        if outcome.private {
            continue;
        }
        let learned = Learned {
            entry,
            ..Learned::new(entries, page)
        };
        if let Err(e) = env.learn(learned) {
            env.record(Event::Error);
            env.log_warn(&format!(
                "could not store the learned {}s: {e}",
                entry.type_name()
            ));
        }
    }
    if outcome.tools && !outcome.replayed {
        let learned = Learned {
            entry: Entry::Tool,
            tools: std::mem::take(&mut outcome.learned),
            page: outcome.page,
            buffer,
            private: outcome.private,
            credential: credential.to_string(),
            memo: outcome
                .memo
                .clone()
                .filter(|_| outcome.page.first && outcome.page.last && !outcome.private),
        };
        match env.learn(learned) {
            // The page is already in this catalog version: the same result can be replayed.
            Ok(false) => {
                if let (Some(index), Some(memo)) = (&index, outcome.memo.take()) {
                    if let Ok(mut slot) = index.list_memo.try_borrow_mut() {
                        *slot = Some(memo);
                    }
                }
            }
            Ok(true) => {}
            Err(e) => {
                env.record(Event::Error);
                env.log_warn(&format!("could not store the learned tools: {e}"));
            }
        }
    }
    if outcome.replayed {
        env.record(Event::ListReplayed);
    }
    if outcome.body.is_some() {
        for _ in 0..outcome.rewritten {
            env.record(Event::ListRewritten);
        }
        env.record(Event::ToolsHidden(outcome.hidden as u64));
    }
    outcome.body
}
