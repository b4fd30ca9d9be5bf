//! Code mode: the agent's script (`code.tool_name`, default `run_script`) runs in the sandbox
//! (`mcp-tool-search-script`, QuickJS) next to the catalog. Its searches and descriptions are
//! answered from the catalog index for what the caller may use; each `tools.call` it makes is
//! authorized by the policy, then sent upstream as a plain `tools/call` with the caller's
//! headers (session, protocol, credentials) and the request's `params._meta`; the run waits
//! for the replies, several in flight at once, and the answer is its return value.

use super::*;
use crate::mcp::guard;
use crate::mcp::injected::answer;
use crate::stats::ScriptEnd;
use mcp_tool_search_script::{
    Host, Limits, Outcome, Reply, Run, ScriptError, Step, ToolCall, MAX_STACK_BYTES,
};
use std::fmt;
use std::time::Instant;

/// A script between its steps: the run, and the calls it waits for.
pub(super) struct Scripting {
    run: Run,
    /// The `run_script` request's id, answered at the end.
    id: Box<RawValue>,
    /// The request's `params._meta` (protocol 2026-07-28 carries the client's protocol version
    /// and capabilities there), sent with every call.
    meta: Option<Box<RawValue>>,
    limits: Limits,
    origin: Option<Origin>,
    /// The catalog the script sees: its tools' `x-mcp-header` annotations name the headers of
    /// their calls.
    index: Option<Rc<CatalogIndex>>,
    in_flight: Vec<InFlight>,
    /// Time with at least one call in flight, until `waiting_since`.
    waited_ns: u64,
    waiting_since: Option<u64>,
    /// The JSON-RPC ids of this script's calls start here: unlikely to be any id the caller's
    /// session uses, and below 2^53 (a TypeScript server reads ids as doubles).
    id_base: u64,
    sent: u64,
    /// Its place among the VM's running scripts, given back when this goes.
    _slot: crate::plugin::ScriptSlot,
}

struct InFlight {
    id: u32,
    sent_ns: u64,
    /// The script's call time left when the call was sent.
    left_ms: u64,
}

/// A call's timeout is the script's call time left plus this: Envoy's timers fire on its event
/// loop's cached clock, which can be a callback's length behind the clock the filter reads, so
/// a timeout of exactly what was left could end the call just before the filter sees it run
/// out.
const CALL_TIMEOUT_SLACK_MS: u64 = 50;

impl fmt::Debug for Scripting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Scripting")
            .field("in_flight", &self.in_flight.len())
            .field("sent", &self.sent)
            .finish_non_exhaustive()
    }
}

/// The limits a script runs under: the sandbox's defaults, with the operator's `code.limits`.
fn limits(config: &Config) -> Limits {
    let set = &config.code.limits;
    let size = |v: Option<u64>, default: usize| {
        v.map_or(default, |v| usize::try_from(v).unwrap_or(default))
    };
    let d = Limits::default();
    Limits {
        time_ms: set.time_ms.unwrap_or(d.time_ms),
        memory_bytes: size(set.memory_bytes, d.memory_bytes),
        stack_bytes: size(set.stack_bytes, d.stack_bytes).min(MAX_STACK_BYTES),
        calls: set
            .calls
            .map_or(d.calls, |c| u32::try_from(c).unwrap_or(d.calls)),
        call_time_ms: set.call_time_ms.unwrap_or(d.call_time_ms),
        output_bytes: size(set.output_bytes, d.output_bytes),
    }
}

impl Stream {
    /// A request that is one `run_script` call: the script starts.
    pub(super) fn script_request(
        &mut self,
        config: &Config,
        env: &mut Env<'_>,
        incoming: &Incoming,
    ) -> Option<RequestBodyAction> {
        let Incoming::Single(m) = incoming else {
            return None;
        };
        let Kind::ToolsCall { name, arguments } = m.kind() else {
            return None;
        };
        (Injected::of(config, name) == Some(Injected::Script))
            .then(|| self.start_script(config, env, m, arguments.as_deref()))
    }

    /// `run_script`: starts the script and runs it to its end or its first tool calls.
    pub(super) fn start_script(
        &mut self,
        config: &Config,
        env: &mut Env<'_>,
        message: &Message,
        arguments: Option<&RawValue>,
    ) -> RequestBodyAction {
        let Some(id) = message.id.clone() else {
            // A notification has no answer to carry a result: nothing runs.
            return RequestBodyAction::Reply(LocalReply::accepted());
        };
        let script = match injected::parse_script(arguments) {
            Ok(script) => script,
            Err(message) => return self.script_not_run(env, &id, &message),
        };
        let Some(slot) = env.script_slot() else {
            let message = format!(
                "{} scripts already run on this proxy worker (code.max_running); retry in a moment.",
                config.code.max_running
            );
            return self.script_not_run(env, &id, &message);
        };
        let namespace = env.namespace();
        let key = self.catalog_key(env, &namespace);
        let origin = env.route();
        let index = self.catalog_or_error(env, &key);
        let view = CatalogView {
            index: index.clone(),
            config: env.shared_config(),
            caller: self.head.caller.clone(),
            namespace,
            can_call: origin.is_some(),
        };
        let limits = limits(config);
        let (run, step) = Run::start(&script, Box::new(view), limits.clone());
        let Some(run) = run else {
            return match step {
                Step::Done(outcome) => {
                    RequestBodyAction::Reply(self.script_answer(env, &id, 0, outcome))
                }
                Step::Waiting { .. } => self.script_not_run(env, &id, "the script could not start"),
            };
        };
        let scripting = Scripting {
            run,
            id,
            meta: params_meta(message),
            limits,
            origin,
            index: index.ok(),
            in_flight: Vec::new(),
            waited_ns: 0,
            waiting_since: None,
            id_base: (1 << 52) | ((env.random_u64() >> 12) & ((1 << 52) - 1) & !0x3ff),
            sent: 0,
            _slot: slot,
        };
        self.advance(config, env, Box::new(scripting), step)
    }

    /// A `run_script` answered with an error before any script ran.
    fn script_not_run(&self, env: &mut Env<'_>, id: &RawValue, message: &str) -> RequestBodyAction {
        env.record(Event::Script(ScriptEnd::Error));
        let result = injected::error_result(message, self.modern());
        RequestBodyAction::Reply(self.reply(jsonrpc::result_response(id, &result)))
    }

    /// The reply to the script's call `call` (`Err`: why there is none).
    pub fn on_script_reply(
        &mut self,
        config: &Config,
        env: &mut Env<'_>,
        call: u32,
        answer: Result<crate::call::CallResponse, String>,
    ) -> RequestBodyAction {
        let Phase::Script(mut s) = std::mem::replace(&mut self.phase, Phase::Done) else {
            return RequestBodyAction::Wait;
        };
        let Some(at) = s.in_flight.iter().position(|c| c.id == call) else {
            self.phase = Phase::Script(s);
            return RequestBodyAction::Wait;
        };
        let flight = s.in_flight.swap_remove(at);
        let now = env.clock_now_ns();
        if let Some(since) = s.waiting_since {
            s.waited_ns += now.saturating_sub(since);
            s.waiting_since = (!s.in_flight.is_empty()).then_some(now);
        }
        let budget_ns = s.limits.call_time_ms.saturating_mul(1_000_000);
        // An answer after what was left of the script's call time when the call was sent ran
        // out of it (Envoy's async client answers 504 itself at the call's timeout, a little
        // later).
        let timed_out =
            now.saturating_sub(flight.sent_ns) >= flight.left_ms.saturating_mul(1_000_000);
        let reply = if timed_out || s.waited_ns >= budget_ns {
            Reply::TimedOut
        } else {
            self.call_reply(config, env, s.id_base + u64::from(call), answer)
        };
        let step = s.run.resume(call, reply);
        self.advance(config, env, s, step)
    }

    /// Sends the calls a step asked for, or answers with the script's outcome.
    fn advance(
        &mut self,
        config: &Config,
        env: &mut Env<'_>,
        mut s: Box<Scripting>,
        step: Step,
    ) -> RequestBodyAction {
        let calls = match step {
            Step::Done(outcome) => {
                let reply = self.script_answer(env, &s.id, s.sent, outcome);
                return RequestBodyAction::Reply(reply);
            }
            Step::Waiting { calls } => calls,
        };
        // The script ran for part of this callback: its calls leave now.
        let now = env.clock_now_ns();
        let waited = s.waited_ns + s.waiting_since.map_or(0, |t| now.saturating_sub(t));
        let left_ms = s.limits.call_time_ms.saturating_sub(waited / 1_000_000);
        let mut out = Vec::with_capacity(calls.len());
        for call in calls {
            if left_ms == 0 {
                // The calls in flight used the script's call time while it ran on: this one
                // would run upstream for a script already past its limit.
                let step = s.run.resume(call.id, Reply::TimedOut);
                return self.advance(config, env, s, step);
            }
            let timeout_ms = left_ms + CALL_TIMEOUT_SLACK_MS;
            let Some(http) = self.script_call(config, &s, &call, timeout_ms) else {
                // Not for a call the view authorized (it checks the route and the arguments);
                // were it so, the script ends here rather than wait for a call never sent.
                let step = s.run.resume(call.id, Reply::TimedOut);
                return self.advance(config, env, s, step);
            };
            s.in_flight.push(InFlight {
                id: call.id,
                sent_ns: now,
                left_ms,
            });
            s.sent += 1;
            out.push((call.id, http));
        }
        if !s.in_flight.is_empty() && s.waiting_since.is_none() {
            s.waiting_since = Some(now);
        }
        self.phase = Phase::Script(s);
        if out.is_empty() {
            RequestBodyAction::Wait
        } else {
            RequestBodyAction::ScriptCalls(out)
        }
    }

    /// The `tools/call` a script's call stands for, as the caller would have sent it.
    fn script_call(
        &self,
        config: &Config,
        s: &Scripting,
        call: &ToolCall,
        timeout_ms: u64,
    ) -> Option<crate::call::HttpCall> {
        #[derive(serde::Serialize)]
        struct Params<'a> {
            name: &'a str,
            arguments: &'a RawValue,
            #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
            meta: Option<&'a RawValue>,
        }
        #[derive(serde::Serialize)]
        struct Request<'a> {
            jsonrpc: &'a str,
            id: u64,
            method: &'a str,
            params: Params<'a>,
        }
        let origin = s.origin.clone()?;
        let arguments = RawValue::from_string(call.arguments.clone()).ok()?;
        let body = crate::mcp::result::to_json(&Request {
            jsonrpc: "2.0",
            id: s.id_base + u64::from(call.id),
            method: "tools/call",
            params: Params {
                name: &call.name,
                arguments: &arguments,
                meta: s.meta.as_deref(),
            },
        });
        let definition = s.index.as_deref().and_then(|i| i.catalog.get(&call.name));
        let params = match definition {
            Some(tool) if self.modern() => {
                crate::mcp::outgoing::param_headers(tool.definition(), &call.arguments)
            }
            _ => Vec::new(),
        };
        let mut http = self.upstream_call(config, origin, &call.name, body, params);
        http.timeout_ms = timeout_ms;
        Some(http)
    }

    /// What the script's `tools.call` resolves or rejects with.
    fn call_reply(
        &mut self,
        config: &Config,
        env: &mut Env<'_>,
        rpc_id: u64,
        answer: Result<crate::call::CallResponse, String>,
    ) -> Reply {
        let (status, body) = match answer {
            Ok((Some(status), _, body)) => (status, body),
            Ok((None, _, _)) => return Reply::Error("the server did not answer".to_string()),
            Err(why) => return Reply::Error(format!("the call failed: {why}")),
        };
        let result = match crate::fetch::read_reply(&body, rpc_id) {
            Ok(result) => result,
            Err(crate::fetch::ReplyError::Rpc { code, message }) => {
                return Reply::Error(format!("{message} (JSON-RPC error {code})"))
            }
            Err(e) if !status.starts_with('2') => {
                return Reply::Error(format!("the server answered HTTP {status} ({e})"))
            }
            Err(e) => return Reply::Error(format!("the server's answer cannot be read: {e}")),
        };
        match self.guard_call_result(config, env, &result) {
            Ok(result) => Reply::Result(result),
            Err(why) => Reply::Error(why),
        }
    }

    /// A call's result reaches the agent through the script: under a policy that restricts the
    /// caller it is read and filtered as any answer on any stream is (`mcp::guard`).
    fn guard_call_result(
        &self,
        config: &Config,
        env: &mut Env<'_>,
        result: &RawValue,
    ) -> Result<String, String> {
        let namespace = env.namespace();
        if !self.restricted(config, &namespace) {
            return Ok(result.get().to_string());
        }
        let message = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{}}}",
            result.get()
        );
        let receivable = self.receivable(config, &namespace);
        match guard::guard(message.as_bytes(), &receivable) {
            Ok(guarded) => match guarded.body {
                None => Ok(result.get().to_string()),
                Some(body) => {
                    #[derive(serde::Deserialize)]
                    struct Filtered<'a> {
                        #[serde(borrow)]
                        result: &'a RawValue,
                    }
                    let body = String::from_utf8_lossy(&body).into_owned();
                    serde_json::from_str::<Filtered>(&body)
                        .map(|f| f.result.get().to_string())
                        .map_err(|e| format!("the server's answer was withheld ({e})"))
                }
            },
            Err(why) => {
                env.record(Event::ResponseWithheld);
                Err(format!("the server's answer was withheld ({why})"))
            }
        }
    }

    /// The answer to `run_script`: the return value as JSON text (or the error, with its line
    /// or limit), the log, and both as `structuredContent` where the protocol has it.
    fn script_answer(
        &mut self,
        env: &mut Env<'_>,
        id: &RawValue,
        sent: u64,
        outcome: Outcome,
    ) -> LocalReply {
        self.phase = Phase::Done;
        if sent > 0 {
            env.record(Event::ScriptCalls(sent));
        }
        #[derive(serde::Serialize)]
        struct Structured<'a> {
            #[serde(skip_serializing_if = "Option::is_none")]
            result: Option<&'a RawValue>,
            #[serde(skip_serializing_if = "Option::is_none")]
            error: Option<String>,
            #[serde(skip_serializing_if = "Option::is_none")]
            limit: Option<&'a str>,
            log: &'a str,
        }
        let log_text = (!outcome.log.is_empty()).then(|| format!("console.log:\n{}", outcome.log));
        let (text, structured, is_error) = match &outcome.result {
            Ok(json) => {
                env.record(Event::Script(ScriptEnd::Ok));
                let value = RawValue::from_string(json.clone()).unwrap_or_default();
                let structured = Structured {
                    result: Some(&value),
                    error: None,
                    limit: None,
                    log: &outcome.log,
                };
                (
                    json.clone(),
                    crate::mcp::result::to_raw_json(&structured),
                    false,
                )
            }
            Err(error) => {
                let limit = match error {
                    ScriptError::Limit { limit, .. } => Some(limit.name()),
                    _ => None,
                };
                env.record(Event::Script(match limit {
                    Some(_) => ScriptEnd::Limit,
                    None => ScriptEnd::Error,
                }));
                let message = error.to_string();
                let structured = Structured {
                    result: None,
                    error: Some(message.clone()),
                    limit,
                    log: &outcome.log,
                };
                (message, crate::mcp::result::to_raw_json(&structured), true)
            }
        };
        let mut texts = vec![text.as_str()];
        texts.extend(log_text.as_deref());
        let structured = self.structured().then_some(&*structured);
        let result = crate::mcp::result::script(&texts, structured, is_error, self.modern());
        self.reply(jsonrpc::result_response(id, &result))
    }
}

/// `params._meta` of the request, if it has one, without its `progressToken`: the calls a
/// script makes together would share it, and a token names one request (spec 2025-11-25
/// "Progress": unique across active requests).
fn params_meta(message: &Message) -> Option<Box<RawValue>> {
    #[derive(serde::Deserialize)]
    struct Params<'a> {
        #[serde(borrow, rename = "_meta", default)]
        meta: Option<&'a RawValue>,
    }
    let params = message.params.as_deref()?;
    let meta = serde_json::from_str::<Params>(params.get()).ok()?.meta?;
    let mut meta = crate::mcp::json::RawObject::parse(meta.get()).ok()?;
    meta.0.retain(|(k, _)| k != "progressToken");
    let mut text = String::new();
    meta.write(&mut text);
    RawValue::from_string(text).ok()
}

/// What a script sees of the catalog: the caller's, as the policy allows it, ranked as
/// `tool_search` ranks (BM25: a script's search cannot wait for the embeddings service).
struct CatalogView {
    index: Result<Rc<CatalogIndex>, String>,
    config: Rc<Config>,
    caller: crate::config::policy::Caller,
    namespace: String,
    /// The route has an upstream cluster the filter can call.
    can_call: bool,
}

impl CatalogView {
    fn scope(&self) -> Option<Scope<'_>> {
        self.config
            .authorization
            .as_ref()
            .map(|policy| policy.scope(&self.caller, &self.namespace))
            .filter(|scope| !scope.allows_everything())
    }

    fn index(&self) -> Result<&CatalogIndex, String> {
        self.index.as_deref().map_err(Clone::clone)
    }
}

impl Host for CatalogView {
    fn search(
        &mut self,
        query: &str,
        namespace: Option<&str>,
        limit: Option<u32>,
    ) -> Result<String, String> {
        if let Some(ns) = namespace.filter(|ns| *ns != self.namespace) {
            return Err(format!(
                "namespace {ns:?} is not served here; this server's namespace is {:?}",
                self.namespace
            ));
        }
        let mut args = serde_json::Map::new();
        args.insert("query".to_string(), Value::from(query));
        if let Some(limit) = limit {
            args.insert("limit".to_string(), Value::from(limit));
        }
        let args = crate::mcp::result::to_raw_json(&args);
        let parsed = injected::parse_search(Some(&args), &self.config, injected::Asker::Tool)?;
        let index = self.index()?;
        let scope = self.scope();
        let allowed = |t: &Tool| scope.as_ref().is_none_or(|s| s.allows(&t.name));
        let ranked = search::search(
            index,
            &self.config,
            &parsed.query,
            scope
                .is_some()
                .then_some(&allowed as &dyn Fn(&Tool) -> bool),
            Err(no_vectors()),
        );
        // As `tool_search`'s one-line results describe a tool.
        let max_chars = self.config.search.max_description_chars;
        let entries: Vec<Value> = ranked
            .found
            .iter()
            .map(|f| {
                let definition: Value =
                    serde_json::from_str(f.tool.definition()).unwrap_or(Value::Null);
                serde_json::json!({
                    "name": &*f.tool.name,
                    "description": answer::short_description(&f.tool.description, max_chars),
                    "required": answer::required_arguments(&definition),
                })
            })
            .collect();
        Ok(crate::mcp::result::to_json(&entries))
    }

    fn describe(&mut self, names: &[String]) -> Result<String, String> {
        let index = self.index()?;
        let scope = self.scope();
        let found = names.iter().filter_map(|name| {
            index
                .catalog
                .get(name)
                .filter(|t| scope.as_ref().is_none_or(|s| s.allows(&t.name)))
        });
        Ok(crate::mcp::result::definitions(found))
    }

    fn authorize(&mut self, name: &str, arguments: &str) -> Result<(), String> {
        if Injected::of(&self.config, name).is_some() {
            return Err(format!("{name} cannot be called from a script"));
        }
        if self.scope().is_some_and(|s| !s.allows(name)) {
            // To this caller a tool the policy keeps from it does not exist.
            return Err(format!("Unknown tool: {name}"));
        }
        if !self.can_call {
            return Err("this proxy cannot reach the server (the route has no cluster)".into());
        }
        serde_json::from_str::<&RawValue>(arguments)
            .map(drop)
            .map_err(|e| format!("the arguments are not JSON: {e}"))
    }

    fn now_ns(&self) -> u64 {
        monotonic_ns()
    }
}

/// A monotonic clock for the script's time limit (WASI `clock_time_get` in the module, which
/// Envoy provides): the callback's clock stands still while the script runs.
fn monotonic_ns() -> u64 {
    thread_local! {
        static START: Instant = Instant::now();
    }
    START.with(|start| u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_configurations_stack_cap_is_the_sandboxs() {
        assert_eq!(
            Some(crate::config::code::MAX_STACK_BYTES),
            u64::try_from(super::MAX_STACK_BYTES).ok()
        );
    }
}
