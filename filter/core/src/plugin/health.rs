//! Why semantic ranking is degraded right now, shared by every worker so that health answers the
//! same wherever it is asked.

use super::host::Host;
use crate::keys;
use std::cell::RefCell;

/// What this VM last wrote to the shared health key (`None`: healthy, or nothing written).
#[derive(Default)]
pub(super) struct Health {
    last: RefCell<Option<String>>,
}

impl Health {
    pub(super) fn failed(&self, host: &dyn Host, reason: &str) {
        self.set(host, reason);
    }

    pub(super) fn worked(&self, host: &dyn Host) {
        self.set(host, "");
    }

    /// Writes the shared key when this VM's view changes. A success while this VM holds no
    /// failure of its own may still clear one another worker wrote: it reads the key first, so
    /// that the common case (healthy, on every search) costs a read, not a write.
    fn set(&self, host: &dyn Host, reason: &str) {
        let Ok(mut last) = self.last.try_borrow_mut() else {
            return;
        };
        let next = (!reason.is_empty()).then(|| reason.to_string());
        if *last == next && (next.is_some() || self.degraded(host).is_none()) {
            return;
        }
        let _ = host.set(keys::EMBEDDINGS_HEALTH, reason.as_bytes(), None);
        *last = next;
    }

    pub(super) fn degraded(&self, host: &dyn Host) -> Option<String> {
        let (value, _) = host.get(keys::EMBEDDINGS_HEALTH).ok()?;
        let reason = String::from_utf8(value?).ok()?;
        (!reason.is_empty()).then_some(reason)
    }
}
