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

/// Where a call after a search is counted, by the rank at which the search returned the tool:
/// the first result, the 2nd to 5th (what a default `limit` shows), or below.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RankBucket {
    First,
    SecondToFifth,
    BelowFifth,
}

impl RankBucket {
    pub fn of(rank: usize) -> RankBucket {
        match rank {
            0 | 1 => RankBucket::First,
            2..=5 => RankBucket::SecondToFifth,
            _ => RankBucket::BelowFifth,
        }
    }
}

impl Linked {
    /// How the call followed its session's searches: in a word (the access log's `linked`),
    /// and the per-namespace counter it adds to first.
    fn kind(&self) -> (&'static str, &'static str) {
        match self.rank.map(RankBucket::of) {
            Some(RankBucket::First) => ("rank_1", stats::SEARCH_CALLS_AFTER_RANK_1),
            Some(RankBucket::SecondToFifth) => ("rank_2_5", stats::SEARCH_CALLS_AFTER_RANK_2_5),
            Some(RankBucket::BelowFifth) => ("rank_over_5", stats::SEARCH_CALLS_AFTER_RANK_OVER_5),
            None if self.described => ("after_describe", stats::CALLS_AFTER_DESCRIBE),
            None => ("without_search", stats::CALLS_WITHOUT_SEARCH),
        }
    }

    /// How the call followed its session's searches, in a word (the access log's `linked`).
    pub fn label(&self) -> &'static str {
        self.kind().0
    }

    /// The per-namespace counters this call adds one to.
    pub fn stats(&self) -> Vec<&'static str> {
        let mut out = vec![self.kind().1];
        if self.rank.is_some() && self.described {
            out.push(stats::CALLS_AFTER_DESCRIBE);
        }
        out
    }
}

#[cfg(test)]
mod tests;
