//! `search.insights`: what the filter keeps of searches and the calls that follow them, for the
//! operator (search ids, per-namespace stats, histograms, `<http_path>/insights`).

use super::read::{boolean, Object};
use super::ConfigError;
use serde_json::Value;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InsightsConfig {
    /// Off: no search id, no link between a search and the calls after it, no per-namespace
    /// counters, no histograms, nothing kept for the insights endpoint.
    pub enabled: bool,
    /// Keep the text of queries that found nothing (bounded, truncated); off, only a hash of
    /// their terms is kept. Query text is the user's text.
    pub record_queries: bool,
}

impl Default for InsightsConfig {
    fn default() -> Self {
        InsightsConfig {
            enabled: true,
            record_queries: false,
        }
    }
}

pub(super) fn parse_insights(value: &Value) -> Result<InsightsConfig, ConfigError> {
    let mut obj = Object::new("search.insights", value)?;
    let mut insights = InsightsConfig::default();
    if let Some(v) = obj.take("enabled") {
        insights.enabled = boolean("search.insights.enabled", v)?;
    }
    if let Some(v) = obj.take("record_queries") {
        insights.record_queries = boolean("search.insights.record_queries", v)?;
    }
    obj.finish()?;
    Ok(insights)
}
