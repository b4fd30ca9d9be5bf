//! Who may use which tool. The caller's identity comes from what Envoy already verified (the
//! `jwt_authn` filter's payload, as dynamic metadata or a forwarded header) or from a header an
//! earlier filter sets; rules map claim values to namespace and tool-name globs.

use crate::base64::{self, Alphabet};
use crate::config::entries::Entry;
use crate::config::glob::Glob;
use crate::config::read::{
    glob_list, non_empty_string, server_globs, string_list, ConfigError, Object,
};
use serde_json::Value;

/// Where the caller's claims come from.
#[derive(Debug, Clone, PartialEq)]
pub enum IdentitySource {
    /// `jwt_authn`'s `payload_in_metadata`: dynamic metadata `metadata.filter_metadata.<filter>.<key>`.
    JwtMetadata { filter: String, key: String },
    /// `jwt_authn`'s `forward_payload_header`: the payload as base64url JSON.
    JwtHeader { header: String },
    /// A header set by an earlier filter, comma-separated values, read as claim `claim`.
    Header { header: String, claim: String },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    Allow,
    Deny,
}

/// One rule: when the caller's `claim` holds one of `values` (or any value, for `*`), the
/// tools matching `namespaces` × `servers` × `tools` get `effect`.
#[derive(Debug, Clone, PartialEq)]
pub struct Rule {
    pub claim: String,
    pub values: Vec<String>,
    pub namespaces: Vec<Glob>,
    /// Globs of the server a tool name routes to behind an aggregating router (the part before
    /// the first `group_separator`); `None`: any tool, prefixed or not.
    pub servers: Option<Vec<Glob>>,
    pub tools: Vec<Glob>,
    /// Prompt-name globs.
    pub prompts: Vec<Glob>,
    /// Resource-URI globs (matched against a template's `uriTemplate` too).
    pub resources: Vec<Glob>,
    pub effect: Effect,
}

impl Rule {
    fn globs(&self, entry: Entry) -> &[Glob] {
        match entry {
            Entry::Tool => &self.tools,
            Entry::Prompt => &self.prompts,
            Entry::Resource | Entry::ResourceTemplate => &self.resources,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Policy {
    pub identity: IdentitySource,
    pub rules: Vec<Rule>,
    pub default: Effect,
    /// The configuration's `group_separator`, which splits a tool name into server and tool
    /// for `servers` rules (set by `Config::parse`, which validates that rules need it).
    pub server_separator: Option<String>,
}

/// The server a prefixed tool name reaches, split the way Envoy's `mcp_router` splits it: at
/// the first separator, the prefix kept even when empty (the router then finds no server
/// and refuses the call). No separator in the name: no server, so no `servers` rule matches
/// (a router with several servers refuses such a call; one with a single server sends it
/// there, and only a rule without `servers` should decide it).
pub fn server_of<'n>(name: &'n str, separator: &str) -> Option<&'n str> {
    name.split_once(separator).map(|(server, _)| server)
}

/// Whether the server of the prefixed name `name` matches one of `servers`; never without a
/// separator (nothing then says where a server's name ends).
pub fn server_matches(servers: &[Glob], name: &str, separator: Option<&str>) -> bool {
    separator
        .and_then(|sep| server_of(name, sep))
        .is_some_and(|server| servers.iter().any(|g| g.matches(server)))
}

/// The caller's claim values, as read from their identity.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Caller {
    /// The JWT payload (or, for a header source, `{claim: [values]}`); `None`: no identity.
    claims: Option<Value>,
}

impl Caller {
    pub fn anonymous() -> Self {
        Caller { claims: None }
    }

    /// The caller as `identity` names it, from the request headers or (only when the source
    /// is `jwt_metadata`) the Envoy dynamic metadata `metadata` reads. A header the identity
    /// comes from must be sent once: a repeated one (one value set by the trusted proxy, one
    /// by the client) names nobody, and so does one sent empty (as if it were missing).
    pub fn identify(
        identity: &IdentitySource,
        headers: &[(String, String)],
        metadata: impl FnOnce() -> Option<Vec<u8>>,
    ) -> Self {
        let single = |name: &str| {
            let mut values = headers.iter().filter(|(k, _)| k.eq_ignore_ascii_case(name));
            let (_, first) = values.next()?;
            values.next().is_none().then_some(first.as_str())
        };
        match identity {
            IdentitySource::Header { header, claim } => single(header)
                .map(|v| Caller::from_header(claim, v))
                .unwrap_or_default(),
            IdentitySource::JwtHeader { header } => single(header)
                .map(Caller::from_base64url_json)
                .unwrap_or_default(),
            IdentitySource::JwtMetadata { filter, key } => metadata()
                .and_then(|bytes| crate::config::metadata::filter_metadata(&bytes, filter))
                .and_then(|v| v.get(key.as_str()).cloned())
                .filter(Value::is_object)
                .map(Caller::from_payload)
                .unwrap_or_default(),
        }
    }

    /// The identity as one text (its claims as JSON, keys sorted), `None` when there is none.
    pub fn identity_text(&self) -> Option<String> {
        self.claims.as_ref().map(Value::to_string)
    }

    pub fn from_payload(payload: Value) -> Self {
        Caller {
            claims: Some(payload),
        }
    }

    /// Values of a header set by an earlier filter: comma-separated, trimmed. A value with
    /// none (empty, blanks, commas) is no identity, as a missing header is: a proxy that writes
    /// the header empty for an anonymous request must not make it an identified caller, who
    /// escapes the deny-by-default that `Policy::scope` gives unidentified ones.
    pub fn from_header(claim: &str, value: &str) -> Self {
        let values: Vec<Value> = value
            .split(',')
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(|v| Value::String(v.to_string()))
            .collect();
        if values.is_empty() {
            return Caller::anonymous();
        }
        let mut map = serde_json::Map::new();
        map.insert(claim.to_string(), Value::Array(values));
        Caller {
            claims: Some(Value::Object(map)),
        }
    }

    /// A base64url (RFC 4648 §5, padding optional) JSON payload, as `forward_payload_header`
    /// sends it. Anything unreadable, an empty value included, is no identity at all.
    pub fn from_base64url_json(encoded: &str) -> Self {
        base64::decode(encoded.trim(), Alphabet::UrlOrStandard)
            .and_then(|bytes| serde_json::from_slice::<Value>(&bytes).ok())
            .filter(Value::is_object)
            .map(Caller::from_payload)
            .unwrap_or_default()
    }

    /// The values of a claim (`a.b.c` walks nested objects): arrays of scalars, or a string
    /// split on whitespace (OAuth `scope`, RFC 8693 §4.2).
    pub fn values(&self, claim: &str) -> Vec<String> {
        let Some(mut v) = self.claims.as_ref() else {
            return Vec::new();
        };
        for part in claim.split('.') {
            match v.get(part) {
                Some(next) => v = next,
                None => return Vec::new(),
            }
        }
        let scalar = |v: &Value| match v {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            Value::Bool(b) => Some(b.to_string()),
            _ => None,
        };
        match v {
            Value::Array(items) => items.iter().filter_map(scalar).collect(),
            Value::String(s) => s.split_whitespace().map(str::to_string).collect(),
            other => scalar(other).into_iter().collect(),
        }
    }
}

impl Policy {
    /// Whether `caller` may see and call tool `name` of `namespace`: the first rule that
    /// matches caller and tool decides; else the default.
    pub fn allows(&self, caller: &Caller, namespace: &str, name: &str) -> bool {
        self.scope(caller, namespace).allows(name)
    }

    /// The rules that can decide for `caller` in `namespace`, in order. A search or a list
    /// decides for every tool of a catalog: claims and namespaces are matched once, leaving a
    /// glob match per rule and tool.
    pub fn scope(&self, caller: &Caller, namespace: &str) -> Scope<'_> {
        let rules = self
            .rules
            .iter()
            .enumerate()
            .filter(|(_, rule)| {
                let have = caller.values(&rule.claim);
                rule.values
                    .iter()
                    .any(|want| (want == "*" && !have.is_empty()) || have.contains(want))
                    && rule.namespaces.iter().any(|g| g.matches(namespace))
            })
            .map(|(i, rule)| ScopedRule {
                position: i,
                servers: rule.servers.as_deref(),
                rule,
                effect: rule.effect,
            })
            .collect();
        // A caller nobody identified (no token, a repeated identity header) cannot be told
        // apart from one a deny rule names: with any deny rule, the default does not apply.
        let unidentified = caller.claims.is_none();
        let has_deny = self.rules.iter().any(|r| r.effect == Effect::Deny);
        let default = if unidentified && has_deny {
            Effect::Deny
        } else {
            self.default
        };
        Scope {
            rules,
            default,
            separator: self.server_separator.as_deref(),
        }
    }
}

#[derive(Debug, Clone)]
struct ScopedRule<'p> {
    position: usize,
    servers: Option<&'p [Glob]>,
    rule: &'p Rule,
    effect: Effect,
}

impl ScopedRule<'_> {
    /// `name` is the entry's key (`Entry::key_field`).
    fn matches(&self, entry: Entry, name: &str, separator: Option<&str>) -> bool {
        let server_matches = match (self.servers, entry) {
            (None, _) => true,
            // A resource's URI names no server: a rule about servers that denies holds for
            // every resource (fail closed), one that allows for none.
            (Some(_), Entry::Resource | Entry::ResourceTemplate) => self.effect == Effect::Deny,
            // Parsing refuses `servers` without a separator; should one get here, it matches
            // nothing rather than everything.
            (Some(servers), Entry::Tool | Entry::Prompt) => {
                server_matches(servers, name, separator)
            }
        };
        server_matches && self.rule.globs(entry).iter().any(|g| g.matches(name))
    }

    fn matches_everything(&self, entry: Entry) -> bool {
        self.servers.is_none() && self.rule.globs(entry).iter().any(Glob::matches_everything)
    }
}

/// A policy narrowed to one caller and namespace.
#[derive(Debug, Clone)]
pub struct Scope<'p> {
    rules: Vec<ScopedRule<'p>>,
    default: Effect,
    separator: Option<&'p str>,
}

impl Scope<'_> {
    /// Whether the caller may see and call tool `name`.
    pub fn allows(&self, name: &str) -> bool {
        self.allows_entry(Entry::Tool, name)
    }

    /// Whether the caller may see and use the entry `key` names (`Entry::key_field`).
    pub fn allows_entry(&self, entry: Entry, key: &str) -> bool {
        self.rules
            .iter()
            .find(|rule| rule.matches(entry, key, self.separator))
            .map_or(self.default, |rule| rule.effect)
            == Effect::Allow
    }

    /// Which rules apply, by position: two callers with the same rules see the same tools.
    pub fn rules(&self) -> Vec<usize> {
        self.rules.iter().map(|rule| rule.position).collect()
    }

    /// Whether every tool is allowed, as far as the rules show without a name: an allow-all
    /// rule reached before any deny rule, or no deny rule and an allowing default.
    pub fn allows_everything(&self) -> bool {
        self.allows_every(Entry::Tool)
    }

    /// `allows_everything` for one kind of entry.
    pub fn allows_every(&self, entry: Entry) -> bool {
        for rule in &self.rules {
            match rule.effect {
                Effect::Deny => return false,
                Effect::Allow if rule.matches_everything(entry) => return true,
                Effect::Allow => {}
            }
        }
        self.default == Effect::Allow
    }
}

impl Policy {
    pub(crate) fn parse(value: &Value) -> Result<Policy, ConfigError> {
        let mut obj = Object::new("authorization", value)?;
        let identity = match obj.take("identity") {
            Some(v) => parse_identity(v)?,
            None => {
                return Err(ConfigError::missing(
                    "authorization.identity",
                    "{\"source\": \"jwt_metadata\" | \"jwt_header\" | \"header\", ...}",
                ))
            }
        };
        let rules = match obj.take("rules") {
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, r)| parse_rule(&format!("authorization.rules[{i}]"), r))
                .collect::<Result<Vec<_>, _>>()?,
            Some(other) => {
                return Err(ConfigError::invalid(
                    "authorization.rules",
                    other,
                    "a list of rules",
                ))
            }
            None => Vec::new(),
        };
        let default = match obj.take("default") {
            None => Effect::Deny,
            Some(v) => parse_effect("authorization.default", v)?,
        };
        obj.finish()?;
        Ok(Policy {
            identity,
            rules,
            default,
            server_separator: None,
        })
    }
}

fn parse_effect(field: &str, v: &Value) -> Result<Effect, ConfigError> {
    match v.as_str() {
        Some("allow") => Ok(Effect::Allow),
        Some("deny") => Ok(Effect::Deny),
        _ => Err(ConfigError::invalid(field, v, "\"allow\" or \"deny\"")),
    }
}

fn parse_identity(value: &Value) -> Result<IdentitySource, ConfigError> {
    let mut obj = Object::new("authorization.identity", value)?;
    let source = obj.take("source").and_then(Value::as_str);
    let field = |obj: &mut Object, key: &'static str| -> Result<Option<String>, ConfigError> {
        obj.take(key)
            .map(|v| non_empty_string(&format!("authorization.identity.{key}"), v))
            .transpose()
    };
    let identity = match source {
        Some("jwt_metadata") => IdentitySource::JwtMetadata {
            filter: field(&mut obj, "filter")?
                .unwrap_or_else(|| "envoy.filters.http.jwt_authn".to_string()),
            key: field(&mut obj, "payload_key")?.unwrap_or_else(|| "jwt_payload".to_string()),
        },
        Some("jwt_header") => IdentitySource::JwtHeader {
            header: field(&mut obj, "header")?
                .ok_or_else(|| {
                    ConfigError::missing(
                        "authorization.identity.header",
                        "the header jwt_authn's forward_payload_header names",
                    )
                })?
                .to_ascii_lowercase(),
        },
        Some("header") => IdentitySource::Header {
            header: field(&mut obj, "header")?
                .ok_or_else(|| {
                    ConfigError::missing(
                        "authorization.identity.header",
                        "a request header name such as \"x-user-roles\"",
                    )
                })?
                .to_ascii_lowercase(),
            claim: field(&mut obj, "claim")?.unwrap_or_else(|| "roles".to_string()),
        },
        _ => {
            return Err(ConfigError::invalid(
                "authorization.identity.source",
                obj.take("source").unwrap_or(&Value::Null),
                "\"jwt_metadata\", \"jwt_header\" or \"header\"",
            ))
        }
    };
    obj.finish()?;
    Ok(identity)
}

fn parse_rule(path: &str, value: &Value) -> Result<Rule, ConfigError> {
    let mut obj = Object::new(path, value)?;
    let claim = match obj.take("claim") {
        Some(v) => non_empty_string(&format!("{path}.claim"), v)?,
        None => {
            return Err(ConfigError::missing(
                &format!("{path}.claim"),
                "a claim name such as \"roles\", \"scope\", \"groups\" or \"sub\"",
            ))
        }
    };
    let values = match obj.take("values") {
        Some(v) => string_list(&format!("{path}.values"), v)?,
        None => {
            return Err(ConfigError::missing(
                &format!("{path}.values"),
                "the claim values this rule applies to, or [\"*\"]",
            ))
        }
    };
    let globs = |obj: &mut Object, key: &'static str| {
        obj.take(key)
            .map(|v| glob_list(&format!("{path}.{key}"), v))
            .transpose()
    };
    let every = || vec![Glob::new("*")];
    let namespaces = globs(&mut obj, "namespaces")?.unwrap_or_else(every);
    let servers = obj
        .take("servers")
        .map(|v| server_globs(&format!("{path}.servers"), v))
        .transpose()?;
    // A rule that names none of the kinds is about every entry; one that names some is about
    // those only.
    let (tools, prompts, resources) = match (
        globs(&mut obj, "tools")?,
        globs(&mut obj, "prompts")?,
        globs(&mut obj, "resources")?,
    ) {
        (None, None, None) => (every(), every(), every()),
        (tools, prompts, resources) => (
            tools.unwrap_or_default(),
            prompts.unwrap_or_default(),
            resources.unwrap_or_default(),
        ),
    };
    let effect = match obj.take("effect") {
        None => Effect::Allow,
        Some(v) => parse_effect(&format!("{path}.effect"), v)?,
    };
    obj.finish()?;
    Ok(Rule {
        claim,
        values,
        namespaces,
        servers,
        tools,
        prompts,
        resources,
        effect,
    })
}

#[cfg(test)]
mod tests;
