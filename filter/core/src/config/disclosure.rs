//! `disclosure_defaults`: the disclosure mode of every tool of some namespaces or, behind Envoy's
//! `mcp_router`, of some servers, where no `tools` entry or `eager_patterns` glob names the
//! tool. An operator who fronts several servers keeps one server's few tools listed and
//! another's thousand searched without naming each tool.

use super::glob::Glob;
use super::policy::server_matches;
use super::read::{glob_list, server_globs, Object};
use super::{ConfigError, DisclosureMode};
use serde_json::Value;

/// One entry: the tools of the namespaces (and servers) it names get `disclosure_mode`.
#[derive(Debug, Clone, PartialEq)]
pub struct DisclosureDefault {
    /// `None`: every namespace.
    pub namespaces: Option<Vec<Glob>>,
    /// `None`: every server; else the tool's server (the prefix before `group_separator`) must
    /// match one.
    pub servers: Option<Vec<Glob>>,
    pub disclosure_mode: DisclosureMode,
}

impl DisclosureDefault {
    pub fn applies(&self, namespace: &str, tool_name: &str, separator: Option<&str>) -> bool {
        let namespace_matches = self
            .namespaces
            .as_ref()
            .is_none_or(|globs| globs.iter().any(|g| g.matches(namespace)));
        namespace_matches
            && self
                .servers
                .as_ref()
                .is_none_or(|globs| server_matches(globs, tool_name, separator))
    }
}

/// `separator`: the configuration's `group_separator`, which `servers` needs.
pub(super) fn parse(
    value: &Value,
    separator: Option<&str>,
) -> Result<Vec<DisclosureDefault>, ConfigError> {
    let field = "disclosure_defaults";
    let items = value.as_array().ok_or_else(|| {
        ConfigError::invalid(
            field,
            value,
            "a list of {\"namespaces\"?, \"servers\"?, \"disclosure_mode\"} objects",
        )
    })?;
    let mut defaults = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let path = format!("{field}[{i}]");
        let mut obj = Object::new(&path, item)?;
        let namespaces = obj
            .take("namespaces")
            .map(|v| glob_list(&format!("{path}.namespaces"), v))
            .transpose()?;
        let servers = obj
            .take("servers")
            .map(|v| server_globs(&format!("{path}.servers"), v))
            .transpose()?;
        if servers.is_some() && separator.is_none() {
            return Err(ConfigError::invalid(
                &format!("{path}.servers"),
                obj.take("servers").unwrap_or(&Value::Null),
                "servers only with `group_separator` (\"__\" behind Envoy's mcp_router), which says where a tool's server name ends",
            ));
        }
        let disclosure_mode = match obj.take("disclosure_mode") {
            Some(v) => DisclosureMode::parse(&format!("{path}.disclosure_mode"), v)?,
            None => {
                return Err(ConfigError::missing(
                    &format!("{path}.disclosure_mode"),
                    "\"EAGER\" or \"PROGRESSIVE\"",
                ))
            }
        };
        obj.finish()?;
        defaults.push(DisclosureDefault {
            namespaces,
            servers,
            disclosure_mode,
        });
    }
    Ok(defaults)
}
