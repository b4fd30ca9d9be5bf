//! What a stream adds to the operator's search insights: a search answered (counted when it
//! matched nothing, timed, its results remembered for the session), the definitions
//! `describe_tool` gave, and each tool call that goes upstream, linked to the search that
//! offered its tool (`insights::link`); and `GET <http_path>/insights`, the report of every
//! worker's tally for the namespaces this route may read.

use super::reply::error_json;
use super::*;
use crate::config::DisclosureMode;
use crate::insights::{report, LinkKey};
use crate::mcp::json;
use crate::stats;

/// A search answer: the first `shown` of `ranked` (from `index`), as search `id`.
pub(super) struct Answered<'a, 'r> {
    pub index: &'a Rc<CatalogIndex>,
    pub ranked: &'a Ranked<'r>,
    pub query: &'a Query,
    pub shown: usize,
    pub id: &'a str,
}

impl Stream {
    /// Whose searches this request's calls follow: the MCP session (`Mcp-Session-Id`), else, for
    /// stateless protocols, the caller the policy identifies. `None`: nothing links them.
    fn link_key(&self) -> Option<LinkKey> {
        if let Some(session) = &self.head.session_id {
            return Some(LinkKey::of_kind("session", session));
        }
        let caller = self.head.caller.identity_text()?;
        Some(LinkKey::of_kind("caller", &caller))
    }

    /// A tool search of `index` answered, started at `started_ns`.
    pub(super) fn searched(&self, env: &mut Env<'_>, started_ns: u64, answered: Answered<'_, '_>) {
        let Answered {
            index,
            ranked,
            query,
            shown,
            id,
        } = answered;
        if ranked.matches == 0 {
            let namespace = env.namespace();
            env.count_in(&namespace, stats::SEARCH_ZERO_RESULTS);
        }
        let returned = || ranked.found.iter().take(shown);
        env.tally_search(
            (ranked.matches == 0).then_some(&query.text),
            index,
            returned().map(|f| (f.doc, f.tool.name.as_ref())),
        );
        env.observe(stats::SEARCH_RESULTS, count(shown));
        if let Some(key) = self.link_key() {
            env.remember_search(
                key,
                id,
                query.offset,
                returned().map(|f| f.tool.name.as_ref()),
            );
        }
        let elapsed_us = env.elapsed_us(started_ns);
        env.observe(stats::SEARCH_TIME_US, elapsed_us);
        let mut record = json::Object::with_capacity(192);
        record.text("action", "search");
        record.text("namespace", env.namespace_str());
        record.text("ranking", ranked.strategy.name());
        if let Some(fallback) = &ranked.fallback {
            record.text("fallback", fallback.kind.name());
        }
        record.number("matches", count(ranked.matches));
        record.number("results", count(shown));
        record.text("search_id", id);
        record.number("time_us", elapsed_us);
        env.access(record.end());
    }

    /// `describe_tool` gave this session the definitions of `tools`.
    pub(super) fn described(&self, env: &mut Env<'_>, tools: &[&Tool]) {
        if let (true, Some(key)) = (env.insights() && !tools.is_empty(), self.link_key()) {
            env.remember_described(key, tools.iter().map(|t| t.name.as_ref()));
        }
    }

    /// A call of the tool `name` goes upstream: counted by how it follows this session's
    /// searches.
    pub(super) fn calls(&self, env: &mut Env<'_>, name: &str) {
        if !env.insights() {
            return;
        }
        let linked = match self.link_key() {
            Some(key) => env.link_call(key, name),
            None => Default::default(),
        };
        let namespace = env.namespace();
        for stat in linked.stats() {
            env.count_in(&namespace, stat);
        }
        env.tally_call(name, &linked);
        let mut record = json::Object::with_capacity(160);
        record.text("action", "call");
        record.text("namespace", &namespace);
        record.text("tool", name);
        record.text("linked", linked.label());
        if let Some(id) = &linked.search_id {
            record.text("search_id", id);
        }
        env.access(record.end());
    }

    /// Every tool call of a request that goes upstream whole (a batch may hold several).
    pub(super) fn calls_in(&self, config: &Config, env: &mut Env<'_>, incoming: &Incoming) {
        for m in incoming.messages() {
            if let (Kind::ToolsCall { name, .. }, Some(_)) = (m.kind(), &m.id) {
                if Injected::of(config, name).is_none() {
                    self.calls(env, name);
                }
            }
        }
    }

    /// `GET <http_path>/insights[?namespace=…]`: for the route's namespace and those of
    /// `search.http_namespaces` (or the one asked), what the searches and calls came to. Under
    /// a policy, a caller sees only its tools, and a namespace where it may use none is left
    /// out (asked for by name: 403).
    pub(super) fn answer_insights(&self, config: &Config, env: &mut Env<'_>) -> LocalReply {
        if !config.search.insights.enabled {
            return LocalReply::json(
                404,
                error_json("search insights are off (`search.insights.enabled: false`)"),
            );
        }
        let asked = crate::config::paths::query_param(&self.head.path, "namespace");
        let namespaces = match asked.as_deref() {
            Some(asked) => match super::http_api::endpoint_namespace(config, env, Some(asked)) {
                Ok(ns) => vec![ns],
                Err(reply) => return reply,
            },
            None => {
                let mut all = config.search.http_namespaces.clone();
                all.push(env.namespace());
                crate::sort::sort(&mut all);
                all.dedup();
                all
            }
        };
        let mode = match config.mode {
            Mode::Search => "search",
            Mode::List => "list",
            Mode::Auto => "auto",
            Mode::Code => "code",
        };
        // Namespaces come sorted, each once.
        let mut reports = Vec::new();
        for ns in namespaces {
            let key = self.catalog_key(env, &ns);
            let index = env.catalog_of(&key).ok();
            let tools: Vec<&str> = index.as_ref().map_or_else(Vec::new, |i| {
                i.catalog.tools().iter().map(|t| t.name.as_ref()).collect()
            });
            let scope = self.scope(config, &ns);
            let allowed = |name: &str| scope.as_ref().is_none_or(|s| s.allows(name));
            if scope.is_some() && !tools.iter().any(|t| allowed(t)) {
                if asked.is_some() {
                    return LocalReply::json(
                        403,
                        error_json(&format!(
                            "no tool of namespace {ns:?} is available to this caller"
                        )),
                    );
                }
                continue;
            }
            let (tally, returned) = match env.insights_of(&ns) {
                Ok(found) => found,
                Err(e) => {
                    env.record(Event::Error);
                    env.log_warn(&format!("search insights unreadable: {e:?}"));
                    return LocalReply::json(
                        503,
                        error_json("the search insights cannot be read right now; retry"),
                    );
                }
            };
            let eager = |name: &str| config.disclosure_mode(&ns, name) == DisclosureMode::Eager;
            let ctx = report::Context {
                tools,
                allowed: &allowed,
                restricted: scope.is_some(),
                eager: &eager,
                search_threshold: config.search_threshold,
                mode,
            };
            reports.push((ns.clone(), report::report(&tally, &returned, &ctx)));
        }
        let mut body = String::from("{\"insights\":{");
        for (i, (ns, report)) in reports.iter().enumerate() {
            if i > 0 {
                body.push(',');
            }
            crate::mcp::json::write_string(&mut body, ns);
            body.push(':');
            body.push_str(report);
        }
        body.push_str("}}");
        LocalReply::json(200, body)
    }
}

fn count(n: usize) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}
