//! Stage 1 of hierarchical search: one document per group (its name, and the operator's
//! description of it or else its tools' names, titles and descriptions), ranked by the same
//! BM25 as tools. Built from the tools a caller may use only, so that a group's rank never
//! depends on tools hidden from that caller.

use super::Tool;
use super::{base_namespace, CatalogIndex};
use crate::config::Config;
use crate::index::bm25::{Bm25Index, Fields};
use std::collections::BTreeMap;
use std::rc::Rc;

/// How many group indexes a catalog version keeps (one per distinct set of visible tools: the
/// callers of a few roles).
const CACHED_GROUP_INDEXES: usize = 8;

/// Group indexes by the tools they were built from (`None`: all; else a bitset of positions).
pub(crate) type GroupIndexes = Vec<(Option<Vec<u64>>, Rc<GroupIndex>)>;

/// The group index of the tools `allowed` admits (`None`: every tool), built once per catalog
/// version and set of tools.
pub fn groups_of(
    index: &CatalogIndex,
    config: &Config,
    allowed: Option<&dyn Fn(&Tool) -> bool>,
) -> Rc<GroupIndex> {
    let tools = index.catalog.tools();
    let visible = |d: u32| allowed.is_none_or(|allowed| tools.get(d as usize).is_some_and(allowed));
    // The visible set itself, not a hash of it: two roles must never share a group index.
    let key: Option<Vec<u64>> = allowed.map(|_| {
        let mut bits = vec![0u64; tools.len().div_ceil(64)];
        for d in (0..tools.len()).filter_map(|d| u32::try_from(d).ok()) {
            if visible(d) {
                if let Some(word) = bits.get_mut(d as usize / 64) {
                    *word |= 1 << (d % 64);
                }
            }
        }
        bits
    });
    if let Ok(cache) = index.group_indexes.try_borrow() {
        if let Some((_, groups)) = cache.iter().find(|(k, _)| *k == key) {
            return Rc::clone(groups);
        }
    }
    let groups = Rc::new(GroupIndex::build(index, config, visible));
    if let Ok(mut cache) = index.group_indexes.try_borrow_mut() {
        if cache.len() >= CACHED_GROUP_INDEXES {
            cache.remove(0);
        }
        cache.push((key, Rc::clone(&groups)));
    }
    groups
}

/// A group and the catalog positions of its tools.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    pub name: String,
    pub tools: Vec<u32>,
}

#[derive(Debug)]
pub struct GroupIndex {
    /// In name order.
    pub groups: Vec<Group>,
    bm25: Bm25Index,
}

/// A group's stage 1 score: raw BM25, and its share of the best group's.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GroupScore {
    /// Its position in `GroupIndex::groups`.
    pub group: usize,
    pub score: f32,
    pub normalized: f32,
}

impl GroupIndex {
    /// The groups of the tools `member` admits (catalog positions).
    pub fn build(index: &CatalogIndex, config: &Config, member: impl Fn(u32) -> bool) -> Self {
        let namespace = base_namespace(&index.namespace);
        let mut by_name: BTreeMap<String, Vec<u32>> = BTreeMap::new();
        for (d, tool) in index.catalog.tools().iter().enumerate() {
            let Ok(d) = u32::try_from(d) else { continue };
            if member(d) {
                by_name
                    .entry(config.group_of(namespace, &tool.name))
                    .or_default()
                    .push(d);
            }
        }
        let groups: Vec<Group> = by_name
            .into_iter()
            .map(|(name, tools)| Group { name, tools })
            .collect();
        let texts: Vec<String> = groups
            .iter()
            .map(|g| match config.search.routing.descriptions.get(&g.name) {
                Some(text) => text.clone(),
                None => {
                    let tools = index.catalog.tools();
                    let mut text = String::new();
                    for tool in g.tools.iter().filter_map(|&d| tools.get(d as usize)) {
                        for part in [&tool.name, &tool.title, &tool.description] {
                            text.push_str(part);
                            text.push(' ');
                        }
                    }
                    text
                }
            })
            .collect();
        let bm25 = Bm25Index::build_tuned(
            groups.iter().zip(&texts).map(|(g, text)| Fields {
                name: &g.name,
                title: "",
                description: text,
                input_schema: "",
            }),
            config.search.weights,
            config.search.tuning,
        );
        GroupIndex { groups, bm25 }
    }

    /// The groups that share a term with `query`, best first (ties by name).
    pub fn rank(&self, query: &str) -> Vec<GroupScore> {
        // Groups are few and kept in name order: an insertion in position order keeps ties by
        // name, without another instance of the sort in the .wasm.
        let scores = self.bm25.scores(query);
        let mut hits: Vec<(usize, f32)> = Vec::new();
        for (group, &score) in scores.iter().enumerate().filter(|(_, &s)| s > 0.0) {
            let at = hits
                .iter()
                .position(|&(_, other)| other < score)
                .unwrap_or(hits.len());
            hits.insert(at, (group, score));
        }
        let best = hits.first().map_or(0.0, |&(_, score)| score);
        hits.into_iter()
            .map(|(group, score)| GroupScore {
                group,
                score,
                normalized: if best > 0.0 { score / best } else { 0.0 },
            })
            .collect()
    }

    pub fn name(&self, group: usize) -> &str {
        self.groups.get(group).map_or("", |g| g.name.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::catalog::{Catalog, Tool};
    use serde_json::value::RawValue;

    fn tool(name: &str, description: &str) -> Tool {
        let json = serde_json::json!({"name": name, "description": description}).to_string();
        let raw = RawValue::from_string(json).unwrap();
        Tool::from_raw(&raw).unwrap()
    }

    fn index(config: &Config) -> CatalogIndex {
        let tools = vec![
            tool("github_create_issue", "Open an issue in a repository"),
            tool("github_merge_pull_request", "Merge a pull request"),
            tool("slack_post_message", "Post a message to a channel"),
            tool("slack_list_channels", "List the channels of a workspace"),
            tool("stripe_refund_charge", "Refund a charge to the customer"),
        ];
        CatalogIndex::build("ns", Catalog::from_tools(tools), config)
    }

    fn config(extra: &str) -> Config {
        Config::parse(&format!(r#"{{"group_separator":"_"{extra}}}"#)).unwrap()
    }

    #[test]
    fn groups_are_ranked_by_their_tools_words() {
        let config = config("");
        let index = index(&config);
        let groups = GroupIndex::build(&index, &config, |_| true);
        let names: Vec<&str> = groups.groups.iter().map(|g| g.name.as_str()).collect();
        assert_eq!(names, ["github", "slack", "stripe"]);
        let ranked = groups.rank("post a message to the team channel");
        assert_eq!(groups.name(ranked[0].group), "slack");
        assert_eq!(ranked[0].normalized, 1.0);
        assert!(groups.rank("zebra").is_empty());
    }

    #[test]
    fn a_configured_description_replaces_the_tools_words() {
        let config =
            config(r#","search":{"routing":{"descriptions":{"stripe":"payments billing money"}}}"#);
        let index = index(&config);
        let groups = GroupIndex::build(&index, &config, |_| true);
        assert_eq!(groups.name(groups.rank("billing")[0].group), "stripe");
        assert!(
            groups.rank("refund").is_empty(),
            "its tools' words are not read"
        );
    }

    /// Built once per catalog version and set of visible tools: the same set gets the same
    /// index (`Rc::ptr_eq`), another set its own, a new version of the catalog a new one; at
    /// most `CACHED_GROUP_INDEXES` sets are kept.
    #[test]
    fn a_group_index_is_built_once_per_catalog_version_and_visible_set() {
        let config = config("");
        let index = index(&config);
        let all = groups_of(&index, &config, None);
        assert!(Rc::ptr_eq(&all, &groups_of(&index, &config, None)));
        let slack = |t: &Tool| t.name.starts_with("slack_");
        let only_slack = groups_of(&index, &config, Some(&slack));
        assert!(!Rc::ptr_eq(&all, &only_slack));
        assert_eq!(only_slack.groups.len(), 1);
        // Another predicate admitting the same tools is the same set.
        let same = |t: &Tool| t.name.contains("slack");
        assert!(Rc::ptr_eq(
            &only_slack,
            &groups_of(&index, &config, Some(&same))
        ));
        // A new version of the catalog (a rebuilt index) builds its own.
        let rebuilt = self::index(&config);
        assert!(!Rc::ptr_eq(&all, &groups_of(&rebuilt, &config, None)));
        // Past the cache's size the oldest set is built again.
        let names: Vec<String> = index
            .catalog
            .tools()
            .iter()
            .map(|t| t.name.to_string())
            .collect();
        for mask in 1..=CACHED_GROUP_INDEXES {
            let subset = |t: &Tool| {
                let position = names.iter().position(|n| **n == *t.name).unwrap_or(0);
                mask & (1 << position) != 0
            };
            groups_of(&index, &config, Some(&subset));
        }
        assert_eq!(index.group_indexes.borrow().len(), CACHED_GROUP_INDEXES);
        assert!(!Rc::ptr_eq(&all, &groups_of(&index, &config, None)));
    }

    #[test]
    fn hidden_tools_neither_make_a_group_nor_lend_it_words() {
        let config = config("");
        let index = index(&config);
        // Only the slack tools are visible.
        let groups = GroupIndex::build(&index, &config, |d| (2..4).contains(&d));
        assert_eq!(groups.groups.len(), 1);
        assert!(groups.rank("refund a charge").is_empty());
        assert!(groups.rank("merge pull request").is_empty());
    }
}
