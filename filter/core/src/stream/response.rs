//! The upstream's response to a `tools/list`: held (JSON) or read event by event (SSE),
//! rewritten for the caller, and learned into the shared catalog; anything that cannot be
//! rewritten passes through unchanged, or is refused under a policy.

use super::*;

impl Stream {
    pub fn on_response_headers(
        &mut self,
        config: &Config,
        env: &mut dyn Env,
        status: Option<&str>,
        content_type: Option<&str>,
        content_encoding: Option<&str>,
    ) -> ResponseHeadersAction {
        if !matches!(self.phase, Phase::AwaitResponse) {
            if status == Some("200") && self.watch_response(content_type) {
                return ResponseHeadersAction::Watch;
            }
            return ResponseHeadersAction::Continue;
        }
        self.phase = Phase::Done;
        if status != Some("200") {
            // Another success status may still carry a list a client reads: under a policy it
            // cannot pass unfiltered. Error statuses are not list results, and a 401 must reach
            // the client as sent (MCP authorization: its WWW-Authenticate starts the flow).
            if status.is_some_and(|s| s.starts_with('2')) {
                return self.cannot_filter(config, env, PassReason::Status);
            }
            env.record(Event::PassedThrough(PassReason::Status));
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
        env: &mut dyn Env,
        reason: PassReason,
    ) -> ResponseHeadersAction {
        env.record(Event::PassedThrough(reason));
        if config.authorization.is_none() {
            return ResponseHeadersAction::Continue;
        }
        env.log_warn(&format!(
            "tools/list response refused: it cannot be filtered for the caller ({})",
            reason.name()
        ));
        self.phase = Phase::Refuse(reason, false);
        ResponseHeadersAction::Refuse
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
        let message = format!(
            "the tool list could not be filtered for this caller ({}); ask the operator",
            reason.name()
        );
        let errors: Vec<String> = self
            .targets
            .iter()
            .map(|t| {
                let id = RawValue::from_string(t.id.to_string()).ok();
                jsonrpc::error_response(id.as_deref(), jsonrpc::INTERNAL_ERROR, &message)
            })
            .collect();
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
        env: &mut dyn Env,
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
        env.log_warn(&format!(
            "tools/list response refused: it cannot be filtered for the caller ({}){detail}",
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
        env: &mut dyn Env,
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
                match self.rewrite_list(config, env, &whole) {
                    Ok(Some(rewritten)) => {
                        if rewritten.outcome.body.is_some() {
                            learn_from(env, rewritten, whole, &self.credential())
                                .unwrap_or_default()
                        } else {
                            learn_from(env, rewritten, Vec::new(), &self.credential());
                            whole
                        }
                    }
                    Ok(None) => whole,
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
                    self.rewrite(config, env, data)
                });
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
    pub fn on_response_trailers(&mut self, env: &mut dyn Env) -> usize {
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
        env: &mut dyn Env,
        message: &[u8],
    ) -> Result<Option<Vec<u8>>, RewriteError> {
        Ok(self
            .rewrite_list(config, env, message)?
            .and_then(|rewritten| learn_from(env, rewritten, Vec::new(), &self.credential())))
    }

    /// The rewrite of a `tools/list` response, not yet learned from: learning can wait until
    /// the response's bytes are freed (they and the learned definitions are each megabytes).
    pub(super) fn rewrite_list(
        &self,
        config: &Config,
        env: &mut dyn Env,
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
        };
        let outcome = list::rewrite_message(message, &self.targets, &ctx)?;
        drop(ctx);
        Ok(outcome.map(|outcome| Rewritten { outcome, index }))
    }
}

/// A rewritten list and the catalog version it was rewritten against.
pub(super) struct Rewritten {
    outcome: list::Outcome,
    index: Option<Rc<CatalogIndex>>,
}

/// Learns the page of a rewritten list and counts it; returns the new body (`None`: unchanged).
/// `buffer` is the response's, spent: the catalog is written to shared data through it.
pub(super) fn learn_from(
    env: &mut dyn Env,
    rewritten: Rewritten,
    buffer: Vec<u8>,
    credential: &str,
) -> Option<Vec<u8>> {
    let Rewritten { mut outcome, index } = rewritten;
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
    if outcome.body.is_some() {
        for _ in 0..outcome.rewritten {
            env.record(Event::ListRewritten);
        }
        env.record(Event::ToolsHidden(outcome.hidden as u64));
    }
    outcome.body
}
