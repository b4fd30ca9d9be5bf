//! Search insights: what agents looked for, what they found and what they called after. A
//! search's answer names itself (a search id) and its results' ranks; `link` remembers, per
//! session or caller, what recent searches returned, so that a tool call is counted by the rank
//! at which a search offered it, or as made without one. Each worker also tallies its searches
//! and calls (`tally`, `pending`), folds them into shared data on its tick, and the insights
//! endpoint reports the merged tally (`report`).

pub mod link;
pub mod pending;
pub mod report;
pub mod tally;

pub use link::{LinkKey, Linked};
pub use pending::Pending;
pub use tally::Tally;

use crate::stats;

impl Linked {
    /// How the call followed its session's searches, in a word (the access log's `linked`).
    pub fn label(&self) -> &'static str {
        match self.rank {
            Some(1) => "rank_1",
            Some(2..=5) => "rank_2_5",
            Some(_) => "rank_over_5",
            None if self.described => "after_describe",
            None => "without_search",
        }
    }

    /// The per-namespace counters this call adds one to.
    pub fn stats(&self) -> Vec<&'static str> {
        let mut out = Vec::with_capacity(2);
        out.push(match self.rank {
            Some(1) => stats::SEARCH_CALLS_AFTER_RANK_1,
            Some(2..=5) => stats::SEARCH_CALLS_AFTER_RANK_2_5,
            Some(_) => stats::SEARCH_CALLS_AFTER_RANK_OVER_5,
            None if self.described => stats::CALLS_AFTER_DESCRIBE,
            None => stats::CALLS_WITHOUT_SEARCH,
        });
        if self.rank.is_some() && self.described {
            out.push(stats::CALLS_AFTER_DESCRIBE);
        }
        out
    }
}

#[cfg(test)]
mod tests;
