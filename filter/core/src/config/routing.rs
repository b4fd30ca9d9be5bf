//! `search.strategy` and `search.routing`: whether a search ranks every tool at once (`flat`)
//! or first the groups, then the tools inside the best groups (`hierarchical`).

use super::read::{integer, non_empty_string, Object};
use super::ConfigError;
use serde_json::Value;
use std::collections::BTreeMap;

/// How a search picks the tools it ranks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Strategy {
    /// Every tool the caller may use is ranked.
    #[default]
    Flat,
    /// Stage 1 ranks the groups; stage 2 ranks the tools of the best groups only.
    Hierarchical,
}

impl Strategy {
    pub fn name(self) -> &'static str {
        match self {
            Strategy::Flat => "flat",
            Strategy::Hierarchical => "hierarchical",
        }
    }
}

/// Stage 1's limits, and what a group is about in the operator's words.
#[derive(Debug, Clone, PartialEq)]
pub struct RoutingConfig {
    /// How many of the best groups stage 2 searches.
    pub groups: usize,
    /// A group is searched only when its score is at least this share of the best group's.
    pub min_group_score: f32,
    /// A group's description; a group without one is described by its tools' names, titles
    /// and descriptions.
    pub descriptions: BTreeMap<String, String>,
}

/// Chosen on the first half of `testdata/service-groups` (`make eval DATA=testdata/service-groups`).
pub const DEFAULT_ROUTING_GROUPS: usize = 5;
pub const DEFAULT_MIN_GROUP_SCORE: f32 = 0.0;
/// The most groups stage 2 may search: past it hierarchical routing is flat search.
pub const MAX_ROUTING_GROUPS: u64 = 64;

impl Default for RoutingConfig {
    fn default() -> Self {
        RoutingConfig {
            groups: DEFAULT_ROUTING_GROUPS,
            min_group_score: DEFAULT_MIN_GROUP_SCORE,
            descriptions: BTreeMap::new(),
        }
    }
}

pub(super) fn parse_strategy(value: &Value) -> Result<Strategy, ConfigError> {
    match value.as_str() {
        Some("flat") => Ok(Strategy::Flat),
        Some("hierarchical") => Ok(Strategy::Hierarchical),
        _ => Err(ConfigError::invalid(
            "search.strategy",
            value,
            "\"flat\" or \"hierarchical\"",
        )),
    }
}

/// `{"groups": N, "min_group_score": S, "descriptions": {"group": "text"}}`.
pub(super) fn parse_routing(value: &Value) -> Result<RoutingConfig, ConfigError> {
    let mut obj = Object::new("search.routing", value)?;
    let mut routing = RoutingConfig::default();
    if let Some(v) = obj.take("groups") {
        let n = integer("search.routing.groups", v, 1, MAX_ROUTING_GROUPS)?;
        routing.groups = usize::try_from(n).unwrap_or(DEFAULT_ROUTING_GROUPS);
    }
    if let Some(v) = obj.take("min_group_score") {
        routing.min_group_score = match v.as_f64() {
            Some(s) if (0.0..=1.0).contains(&s) => s as f32,
            _ => {
                return Err(ConfigError::invalid(
                    "search.routing.min_group_score",
                    v,
                    "a number from 0 to 1 (a share of the best group's score)",
                ))
            }
        };
    }
    if let Some(v) = obj.take("descriptions") {
        let Value::Object(map) = v else {
            return Err(ConfigError::invalid(
                "search.routing.descriptions",
                v,
                "an object of group name to description",
            ));
        };
        for (group, text) in map {
            let field = format!("search.routing.descriptions.{group}");
            routing
                .descriptions
                .insert(group.clone(), non_empty_string(&field, text)?);
        }
    }
    obj.finish()?;
    Ok(routing)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn routing_is_read_and_bad_values_are_named() {
        let r = parse_routing(&json!({"groups": 2, "min_group_score": 0.25,
            "descriptions": {"github": "Code hosting: issues, pull requests, repositories"}}))
        .unwrap();
        assert_eq!(r.groups, 2);
        assert_eq!(r.min_group_score, 0.25);
        assert_eq!(r.descriptions.len(), 1);
        assert_eq!(parse_routing(&json!({})).unwrap(), RoutingConfig::default());
        let e = |v: Value| parse_routing(&v).unwrap_err().to_string();
        assert!(e(json!({"groups": 0})).contains("search.routing.groups"));
        assert!(e(json!({"min_group_score": 1.5})).contains("search.routing.min_group_score"));
        assert!(e(json!({"descriptions": {"x": ""}})).contains("search.routing.descriptions.x"));
        assert!(e(json!({"group": 1})).contains("group"));
        assert_eq!(
            parse_strategy(&json!("hierarchical")).unwrap(),
            Strategy::Hierarchical
        );
        assert!(parse_strategy(&json!("tree"))
            .unwrap_err()
            .to_string()
            .contains("\"flat\" or \"hierarchical\""));
    }
}
