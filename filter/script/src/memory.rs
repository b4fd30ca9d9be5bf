//! The engine's heap, metered: QuickJS allocates through [`Metered`], which refuses what would
//! pass the script's memory limit and records that it did, and which also watches the time.
//!
//! QuickJS's own limit (`JS_SetMemoryLimit`) only makes an allocation fail; the script can catch
//! the error, and when memory is too short even to build the error the engine throws `null`, so
//! the run could not tell a memory bomb from a script that throws `null`. Recording the refusal
//! here ends the script with the memory limit whatever it throws or catches.
//!
//! The engine polls its interrupt handler only from JavaScript (calls and loops), so a loop
//! around a costly built-in (`JSON.stringify` of a large value, `sort`, `split`) ran for 20 s
//! past a 200 ms limit in Envoy's V8 before the next poll. Built-ins allocate as they work: every
//! [`CHECK_EVERY`] allocations the heap asks whether the script is over its time, and refuses that
//! allocation if so, which ends the built-in at once.

use std::cell::Cell;
use std::rc::Rc;

use rquickjs::allocator::{Allocator, RustAllocator};

use crate::Limit;

/// Allocations between two questions about the time. A question is a host call (the clock);
/// a loop allocating as fast as it can makes a few million allocations a second.
const CHECK_EVERY: u32 = 256;

pub(crate) struct Metered {
    limit: usize,
    used: usize,
    /// The limit that ended the script, shared with the run and its interrupt handler.
    ended: Rc<Cell<Option<Limit>>>,
    /// Whether the script must end (a limit, or its time); the run's.
    over_time: Rc<dyn Fn() -> bool>,
    since_check: u32,
}

impl Metered {
    pub(crate) fn new(
        limit: usize,
        ended: Rc<Cell<Option<Limit>>>,
        over_time: Rc<dyn Fn() -> bool>,
    ) -> Self {
        Self {
            limit,
            used: 0,
            ended,
            over_time,
            since_check: 0,
        }
    }

    /// Whether `size` more bytes may be given. Over the limit, the refusal ends the script
    /// (unless another limit already has). Allocations go on being given afterwards, but for
    /// one in [`CHECK_EVERY`]: the engine needs them to stop the script uncatchably.
    fn admit(&mut self, size: Option<usize>) -> bool {
        self.since_check += 1;
        if self.since_check >= CHECK_EVERY {
            self.since_check = 0;
            if (self.over_time)() {
                return false;
            }
        }
        let fits = size
            .and_then(|size| self.used.checked_add(size))
            .is_some_and(|total| total <= self.limit);
        if !fits && self.ended.get().is_none() {
            self.ended.set(Some(Limit::Memory));
        }
        fits
    }
}

// SAFETY: every block is RustAllocator's, which records its size in a header; `used` counts
// those sizes, so `dealloc` and `realloc` only ever see blocks this allocator returned.
unsafe impl Allocator for Metered {
    fn alloc(&mut self, size: usize) -> *mut u8 {
        if !self.admit(Some(size)) {
            return std::ptr::null_mut();
        }
        let block = RustAllocator.alloc(size);
        if !block.is_null() {
            // SAFETY: a block RustAllocator just returned.
            self.used += unsafe { RustAllocator::usable_size(block) };
        }
        block
    }

    fn calloc(&mut self, count: usize, size: usize) -> *mut u8 {
        // RustAllocator panics on an overflowing product; it is refused here first.
        if !self.admit(count.checked_mul(size)) {
            return std::ptr::null_mut();
        }
        let block = RustAllocator.calloc(count, size);
        if !block.is_null() {
            // SAFETY: a block RustAllocator just returned.
            self.used += unsafe { RustAllocator::usable_size(block) };
        }
        block
    }

    unsafe fn dealloc(&mut self, block: *mut u8) {
        if block.is_null() {
            return;
        }
        self.used = self.used.saturating_sub(RustAllocator::usable_size(block));
        RustAllocator.dealloc(block);
    }

    unsafe fn realloc(&mut self, block: *mut u8, new_size: usize) -> *mut u8 {
        // C's realloc: a null block is an allocation, and a zero size a free.
        if block.is_null() {
            return self.alloc(new_size);
        }
        if new_size == 0 {
            self.dealloc(block);
            return std::ptr::null_mut();
        }
        let old = RustAllocator::usable_size(block);
        if new_size > old && !self.admit(Some(new_size - old)) {
            return std::ptr::null_mut();
        }
        let moved = RustAllocator.realloc(block, new_size);
        if !moved.is_null() {
            self.used = self.used.saturating_sub(old) + RustAllocator::usable_size(moved);
        }
        moved
    }

    unsafe fn usable_size(block: *mut u8) -> usize {
        RustAllocator::usable_size(block)
    }
}
