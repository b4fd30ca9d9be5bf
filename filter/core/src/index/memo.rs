//! The last `tools/list` answer of one catalog version, replayed while nothing changes.

use crate::index::catalog::Page;

/// A rewritten `tools/list` result kept for the next identical one. Upstreams answer with the
/// same bytes list after list, and reading megabytes of definitions to reach the same answer
/// was most of a list's cost. It lives in one catalog version's `CatalogIndex` (a new version
/// starts empty) and is stored only once learning the page changed nothing, so replaying it
/// skips learning too.
#[derive(Debug, Clone)]
pub struct ListMemo {
    pub(crate) key: MemoKey,
    /// The rewritten result; `None` when the message went on untouched.
    pub(crate) result: Option<String>,
    pub(crate) hidden: usize,
    pub(crate) page: Page,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MemoKey {
    pub(crate) len: usize,
    pub(crate) fingerprint: u64,
    pub(crate) first_page: bool,
    pub(crate) audience: Option<Vec<usize>>,
}
