//! The `tools/call`s the filter sends upstream itself: `call_tool` rewritten into a plain call of
//! its target (the held request, or a call the filter makes with the caller's headers), and the
//! calls of code mode's scripts (`script.rs`), with the headers a 2026-07-28 server checks
//! against the body (`mcp::outgoing`); the answer to a call the filter made, relayed.

use super::*;
use crate::mcp::outgoing;

impl Stream {
    /// `call_tool`: the same request, as a plain `tools/call` of the named tool.
    pub(super) fn forward_call(
        &mut self,
        config: &Config,
        env: &mut Env<'_>,
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
        self.calls(env, &target);
        let params = self.param_headers(env, &namespace, &target, target_args.as_deref());
        // Headers already forwarded still name call_tool in `mcp-name` (2026-07-28): the
        // upstream would refuse the rewritten body, so the filter makes the call itself, with
        // the caller's headers, and answers with the upstream's response; the request that went
        // upstream is reset before its body is sent.
        if !self.head.mcp.name.is_empty() && !config.hold_request_headers {
            let Some(body) = rewrite_call(message, &target, target_args.as_deref()) else {
                return fail(
                    self,
                    "call_tool could not be rewritten; call the tool directly.",
                );
            };
            let Some(origin) = env.route() else {
                return fail(
                    self,
                    &format!("Call {target} directly (this proxy cannot reach the server itself)."),
                );
            };
            env.record(Event::CallForwarded);
            self.phase = Phase::Calling(message.id.as_deref().map(ToOwned::to_owned));
            let call = self.upstream_call(config, origin, &target, body, params);
            return RequestBodyAction::Call(call);
        }
        match rewrite_call(message, &target, target_args.as_deref()) {
            Some(body) => {
                env.record(Event::CallForwarded);
                // Its response is the upstream's own; nothing to rewrite on the way back.
                let mut headers = Vec::new();
                if config.hold_request_headers {
                    headers.push(HeaderChange::Set("content-length", body.len().to_string()));
                    if !self.head.mcp.name.is_empty() {
                        let name = outgoing::header_value(&target);
                        headers.push(HeaderChange::Set("mcp-name", name));
                    }
                    headers.extend(params.into_iter().map(|(k, v)| HeaderChange::Add(k, v)));
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

    /// The `Mcp-Param-*` headers of a call of `target` with `arguments` (2026-07-28 "Custom
    /// Headers"), from its definition in the caller's catalog; none for older protocols.
    pub(super) fn param_headers(
        &self,
        env: &mut Env<'_>,
        namespace: &str,
        target: &str,
        arguments: Option<&RawValue>,
    ) -> Vec<(String, String)> {
        if !self.modern() {
            return Vec::new();
        }
        let key = self.catalog_key(env, namespace);
        let Ok(index) = env.catalog_of(&key) else {
            return Vec::new();
        };
        index.catalog.get(target).map_or_else(Vec::new, |tool| {
            outgoing::param_headers(tool.definition(), arguments.map_or("{}", RawValue::get))
        })
    }

    /// The `tools/call` of `target` as the caller would have sent it: its headers (but the
    /// hop-by-hop ones, the fetch marker and its own `Mcp-Param-*`), `mcp-name` naming the tool,
    /// to the route's cluster. `params`: the call's `Mcp-Param-*` headers ([`Stream::param_headers`]).
    pub(super) fn upstream_call(
        &self,
        config: &Config,
        origin: Origin,
        target: &str,
        body: String,
        params: Vec<(String, String)>,
    ) -> crate::call::HttpCall {
        const DROPPED: &[&str] = &[
            "content-length",
            "transfer-encoding",
            "connection",
            "keep-alive",
            "te",
            "upgrade",
            "host",
            "accept-encoding",
            "mcp-name",
            crate::fetch::MARKER_HEADER,
        ];
        let mut headers = vec![
            (":method".to_string(), "POST".to_string()),
            (":path".to_string(), self.head.path.clone()),
            (
                ":authority".to_string(),
                self.head.authority.clone().unwrap_or(origin.authority),
            ),
            ("mcp-name".to_string(), outgoing::header_value(target)),
        ];
        headers.extend(
            self.head
                .headers
                .iter()
                .filter(|(k, _)| {
                    // Envoy's own request controls (`x-envoy-upstream-rq-timeout-ms`, retries)
                    // are not the caller's to set on the filter's call.
                    !k.starts_with(':')
                        && !DROPPED.contains(&k.as_str())
                        && !k.starts_with("mcp-param-")
                        && !k.starts_with("x-envoy-")
                })
                .cloned(),
        );
        headers.extend(params);
        crate::call::HttpCall {
            cluster: origin.cluster,
            headers,
            body: body.into_bytes(),
            timeout_ms: config.search.call_timeout_ms,
        }
    }

    /// The upstream's answer to the call `call_tool` stood for (`Err`: why there is none):
    /// relayed as it came (status, content type, session, body; an SSE response whole).
    pub fn on_call_answer(
        &mut self,
        config: &Config,
        env: &mut Env<'_>,
        answer: Result<crate::call::CallResponse, String>,
    ) -> RequestBodyAction {
        let Phase::Calling(id) = std::mem::replace(&mut self.phase, Phase::Done) else {
            return RequestBodyAction::Continue {
                headers: Vec::new(),
            };
        };
        let failed = |stream: &Self, why: &str| {
            let text = format!("The tool call did not reach the server ({why}). Try again.");
            let body = match id.as_deref() {
                Some(id) => {
                    jsonrpc::result_response(id, &injected::error_result(&text, stream.modern()))
                }
                None => jsonrpc::error_response(None, jsonrpc::INTERNAL_ERROR, &text),
            };
            RequestBodyAction::Reply(stream.reply(body))
        };
        let (status, headers, body) = match answer {
            Ok((Some(status), headers, body)) => (status, headers, body),
            Ok((None, _, _)) => return failed(self, "no response"),
            Err(why) => return failed(self, &why),
        };
        let Ok(status) = status.parse::<u32>() else {
            return failed(self, "a response without a valid status");
        };
        let kept = ["content-type", "mcp-session-id", "content-encoding"];
        let mut reply = LocalReply {
            status,
            headers: headers
                .into_iter()
                .filter(|(k, _)| kept.contains(&k.to_ascii_lowercase().as_str()))
                .collect(),
            body,
        };
        self.guard_relayed(config, env, &mut reply);
        RequestBodyAction::Reply(reply)
    }

    /// The upstream's answer relayed as a local reply reaches the client like any response:
    /// under a policy that restricts the caller it is read and filtered the same way (a server
    /// that keys answers by `str(id)` can send a list here).
    fn guard_relayed(&mut self, config: &Config, env: &mut Env<'_>, reply: &mut LocalReply) {
        if !self.restricted(config, &env.namespace()) {
            return;
        }
        let header = |name: &str| {
            reply
                .headers
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.clone())
        };
        let (content_type, encoding) = (header("content-type"), header("content-encoding"));
        self.phase = Phase::AwaitResponse;
        let status = reply.status.to_string();
        let action = self.on_response_headers(
            config,
            env,
            Some(&status),
            content_type.as_deref(),
            encoding.as_deref(),
        );
        if action == ResponseHeadersAction::Refuse {
            reply.headers.retain(|(k, _)| {
                !k.eq_ignore_ascii_case("content-type")
                    && !k.eq_ignore_ascii_case("content-encoding")
            });
            reply
                .headers
                .push(("content-type".to_string(), "application/json".to_string()));
        }
        if self.rewriting_response() {
            reply.body = self.on_response_chunk(config, env, &reply.body, true);
        }
        self.phase = Phase::Done;
    }
}

/// The request with `params.name` set to `target` and `params.arguments` to `arguments`;
/// every other member (`jsonrpc`, `id`, `params._meta`) kept.
fn rewrite_call(message: &Message, target: &str, arguments: Option<&RawValue>) -> Option<String> {
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
