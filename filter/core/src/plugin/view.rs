//! One callback's view of the host (`CallbackView`): a stream deciding how to answer asks for
//! the same catalog's meta (is the server's list private, is it due) and version several times.
//! Each ask is a `proxy_get_shared_data` that copies the value out of the host, and the meta is
//! JSON. The view keeps those two small values for the rest of the callback and forgets
//! everything it kept at any write, so that a compare-and-swap retry reads what the host holds.
//!
//! It lives for one callback and one stream (`Plugin::env`), never longer: another worker's
//! write is seen from the next callback on, and no caller's view is ever another's. Within a
//! callback a worker runs alone on its VM, so the values agree with one another as of the
//! callback's first read of each.

use super::Host;
use crate::keys;
use crate::store::{self, CatalogMeta, SharedData, StoreError};
use std::cell::RefCell;

type Read = (Option<Vec<u8>>, Option<u32>);

pub(super) struct CallbackView<'a> {
    host: &'a dyn Host,
    reads: RefCell<Vec<(String, Read)>>,
    metas: RefCell<Vec<(String, CatalogMeta)>>,
}

impl<'a> CallbackView<'a> {
    pub(super) fn new(host: &'a dyn Host) -> Self {
        CallbackView {
            host,
            reads: RefCell::new(Vec::new()),
            metas: RefCell::new(Vec::new()),
        }
    }

    /// `namespace`'s meta, parsed once per callback (absent or unreadable: the default).
    pub(super) fn meta(&self, namespace: &str) -> CatalogMeta {
        if let Ok(metas) = self.metas.try_borrow() {
            if let Some((_, meta)) = metas.iter().find(|(n, _)| n == namespace) {
                return meta.clone();
            }
        }
        let meta = store::read_meta(self, namespace).unwrap_or_default();
        if let Ok(mut metas) = self.metas.try_borrow_mut() {
            metas.push((namespace.to_string(), meta.clone()));
        }
        meta
    }

    fn forget(&self) {
        if let Ok(mut reads) = self.reads.try_borrow_mut() {
            reads.clear();
        }
        if let Ok(mut metas) = self.metas.try_borrow_mut() {
            metas.clear();
        }
    }
}

/// The keys read on every request: a catalog's version (is the cached index current) and meta.
/// Catalogs, indexes and vectors are read once per version anyway, and leases and secrets are
/// read where a write follows.
fn kept(key: &str) -> bool {
    key.ends_with(keys::VERSION) || key.ends_with(keys::META)
}

impl SharedData for CallbackView<'_> {
    fn get(&self, key: &str) -> Result<Read, StoreError> {
        if !kept(key) {
            return self.host.get(key);
        }
        if let Ok(reads) = self.reads.try_borrow() {
            if let Some((_, read)) = reads.iter().find(|(k, _)| k == key) {
                return Ok(read.clone());
            }
        }
        let read = self.host.get(key)?;
        if let Ok(mut reads) = self.reads.try_borrow_mut() {
            reads.push((key.to_string(), read.clone()));
        }
        Ok(read)
    }

    fn set(&self, key: &str, value: &[u8], cas: Option<u32>) -> Result<(), StoreError> {
        self.forget();
        self.host.set(key, value, cas)
    }
}

crate::host_beside_shared_data!(CallbackView<'_>, host);

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]

    use super::*;
    use crate::http::MemoryHost;
    use std::cell::Cell;

    /// A host that counts its shared-data reads and lets another worker write between a read
    /// and the write that follows it.
    struct Counting {
        host: MemoryHost,
        gets: Cell<usize>,
        other_worker: RefCell<Option<(String, Vec<u8>)>>,
    }

    impl SharedData for Counting {
        fn get(&self, key: &str) -> Result<Read, StoreError> {
            self.gets.set(self.gets.get() + 1);
            let read = self.host.get(key);
            if let Some((k, v)) = self.other_worker.borrow_mut().take() {
                self.host.set(&k, &v, None)?;
            }
            read
        }
        fn set(&self, key: &str, value: &[u8], cas: Option<u32>) -> Result<(), StoreError> {
            self.host.set(key, value, cas)
        }
    }

    crate::host_beside_shared_data!(Counting, host);

    fn counting() -> Counting {
        Counting {
            host: MemoryHost::default(),
            gets: Cell::new(0),
            other_worker: RefCell::new(None),
        }
    }

    #[test]
    fn a_version_and_a_meta_are_read_once_per_callback_and_other_keys_every_time() {
        let host = counting();
        host.host.set(&keys::version("ns"), b"v1", None).unwrap();
        host.host.set(&keys::catalog("ns"), b"{}", None).unwrap();
        let view = CallbackView::new(&host);
        for _ in 0..3 {
            assert_eq!(view.get(&keys::version("ns")).unwrap().0.unwrap(), b"v1");
            assert!(!view.meta("ns").private);
        }
        assert_eq!(host.gets.get(), 2, "one version read, one meta read");
        view.get(&keys::catalog("ns")).unwrap();
        view.get(&keys::catalog("ns")).unwrap();
        assert_eq!(host.gets.get(), 4);
        // The next callback's view reads again.
        let next = CallbackView::new(&host);
        next.get(&keys::version("ns")).unwrap();
        assert_eq!(host.gets.get(), 5);
    }

    #[test]
    fn a_write_forgets_every_kept_read() {
        let host = counting();
        let view = CallbackView::new(&host);
        assert_eq!(view.get(&keys::version("ns")).unwrap().0, None);
        assert!(!view.meta("ns").private);
        view.set(&keys::version("ns"), b"v2", None).unwrap();
        store::update_meta(&view, "ns", |meta| {
            meta.private = true;
            true
        })
        .unwrap();
        assert_eq!(view.get(&keys::version("ns")).unwrap().0.unwrap(), b"v2");
        assert!(view.meta("ns").private);
    }

    #[test]
    fn a_compare_and_swap_that_lost_to_another_worker_retries_on_what_the_host_holds() {
        let host = counting();
        let view = CallbackView::new(&host);
        store::update_meta(&view, "ns", |meta| {
            meta.updated_ms = 1;
            true
        })
        .unwrap();
        assert_eq!(view.meta("ns").updated_ms, 1);
        // Another worker marks the catalog stale between this view's read and its write.
        let mut theirs = view.meta("ns");
        theirs.stale = true;
        *host.other_worker.borrow_mut() =
            Some((keys::meta("ns"), serde_json::to_vec(&theirs).unwrap()));
        let fresh = CallbackView::new(&host);
        let meta = store::update_meta(&fresh, "ns", |meta| {
            meta.attempt_ms = 7;
            true
        })
        .unwrap();
        assert!(meta.stale && meta.attempt_ms == 7, "{meta:?}");
        let stored = store::read_meta(&host.host, "ns").unwrap();
        assert!(stored.stale && stored.attempt_ms == 7, "{stored:?}");
    }
}
