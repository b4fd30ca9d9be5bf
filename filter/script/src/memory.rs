//! The engine's heap, metered: QuickJS allocates through [`Metered`], which refuses what would
//! pass the script's memory limit and records that it did, watches the time, and gives back
//! every block when the run's runtime goes.
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
//!
//! A refusal lands wherever the built-in happens to be, and some of QuickJS's error paths then
//! leave objects unfreed (in Envoy, `JSON.stringify` ended this way left some about one run in
//! two). The patched QuickJS no longer aborts on them when the runtime is freed, and the heap
//! keeps its blocks in a list and frees whatever is left when it is dropped, after the runtime.
//! What such an object held outside this heap stays: a leaked host function's Rust closure
//! (rquickjs boxes it with the global allocator, and its finalizer never runs), which is why the
//! host functions hold the run's state only weakly (`run.rs`, `natives`).
//!
//! The limit counts each block with its header and rounding, which is what it takes from the
//! VM's memory.

use std::alloc::{self, Layout};
use std::cell::Cell;
use std::ptr::{self, NonNull};
use std::rc::Rc;

use rquickjs::allocator::Allocator;

use crate::Limit;

/// Allocations between two questions about the time. A question is a host call (the clock);
/// a loop allocating as fast as it can makes a few million allocations a second.
const CHECK_EVERY: u32 = 256;

/// What the heap still gives once a limit has ended the script ([`Metered::admit`]).
const RESERVE: usize = 64 << 10;

/// QuickJS stores 64-bit values in its blocks.
const ALIGN: usize = 8;

/// What precedes each block: its usable size and its neighbours in the list of live blocks.
#[repr(C)]
struct Header {
    size: usize,
    prev: *mut Header,
    next: *mut Header,
}

/// The header's size rounded up to [`ALIGN`], so that the block after it is aligned.
const HEADER: usize = std::mem::size_of::<Header>().div_ceil(ALIGN) * ALIGN;

pub(crate) struct Metered {
    limit: usize,
    used: usize,
    /// The most recent live block; each links to the one before.
    live: *mut Header,
    /// The limit that ended the script, shared with the run and its interrupt handler.
    ended: Rc<Cell<Option<Limit>>>,
    /// Whether the script must end (a limit, or its time); the run's.
    must_end: Rc<dyn Fn() -> bool>,
    since_check: u32,
}

impl Metered {
    pub(crate) fn new(
        limit: usize,
        ended: Rc<Cell<Option<Limit>>>,
        must_end: Rc<dyn Fn() -> bool>,
    ) -> Self {
        Self {
            limit,
            used: 0,
            live: ptr::null_mut(),
            ended,
            must_end,
            since_check: 0,
        }
    }

    /// Whether `extra` more bytes (as [`Metered::counted`] counts them) may be given. Over the
    /// limit, the refusal ends the script (unless another limit already
    /// has). Once a limit has ended it, [`RESERVE`] bytes more are given, but for one allocation
    /// in [`CHECK_EVERY`]: the engine must build the uncatchable error that stops the script,
    /// and were that refused, it would throw a catchable `null` instead, at every poll, to a
    /// script that catches it forever.
    fn admit(&mut self, extra: Option<usize>) -> bool {
        self.since_check += 1;
        if self.since_check >= CHECK_EVERY {
            self.since_check = 0;
            if (self.must_end)() {
                return false;
            }
        }
        let limit = match self.ended.get() {
            Some(_) => self.limit.saturating_add(RESERVE),
            None => self.limit,
        };
        let fits = extra
            .and_then(|extra| self.used.checked_add(extra))
            .is_some_and(|total| total <= limit);
        if !fits && self.ended.get().is_none() {
            self.ended.set(Some(Limit::Memory));
        }
        fits
    }

    /// What a block of `size` usable bytes costs the heap: with its header and rounding.
    fn counted(size: usize) -> Option<usize> {
        Self::layout(size).map(|layout| layout.size())
    }

    /// The layout of a block of `size` usable bytes with its header.
    fn layout(size: usize) -> Option<Layout> {
        let size = size.checked_next_multiple_of(ALIGN)?;
        Layout::from_size_align(size.checked_add(HEADER)?, ALIGN).ok()
    }

    /// Records a new block (its header at `header`) as live, and returns what QuickJS gets.
    ///
    /// # Safety
    /// `header` is a fresh allocation of `Self::layout(size)`.
    unsafe fn adopt(&mut self, header: *mut Header, size: usize) -> *mut u8 {
        header.write(Header {
            size,
            prev: ptr::null_mut(),
            next: self.live,
        });
        if let Some(next) = NonNull::new(self.live) {
            (*next.as_ptr()).prev = header;
        }
        self.live = header;
        self.used += Self::counted(size).unwrap_or(size);
        header.cast::<u8>().add(HEADER)
    }

    /// Takes a live block out of the list; returns its header and usable size.
    ///
    /// # Safety
    /// `block` is a pointer this heap returned and has not freed.
    unsafe fn unlink(&mut self, block: *mut u8) -> (*mut Header, usize) {
        let header = block.sub(HEADER).cast::<Header>();
        let Header { size, prev, next } = header.read();
        match NonNull::new(prev) {
            Some(prev) => (*prev.as_ptr()).next = next,
            None => self.live = next,
        }
        if let Some(next) = NonNull::new(next) {
            (*next.as_ptr()).prev = prev;
        }
        self.used = self
            .used
            .saturating_sub(Self::counted(size).unwrap_or(size));
        (header, size)
    }

    fn allocate(&mut self, size: usize, zeroed: bool) -> *mut u8 {
        let Some(layout) = Self::layout(size) else {
            return ptr::null_mut();
        };
        // SAFETY: the layout has a non-zero size (the header).
        let header = unsafe {
            if zeroed {
                alloc::alloc_zeroed(layout)
            } else {
                alloc::alloc(layout)
            }
        };
        if header.is_null() {
            // The VM's memory could not grow: as much the memory limit as the heap's own.
            if self.ended.get().is_none() {
                self.ended.set(Some(Limit::Memory));
            }
            return ptr::null_mut();
        }
        // SAFETY: a fresh allocation of that layout.
        unsafe { self.adopt(header.cast(), size) }
    }
}

// SAFETY: every block is allocated with its header by `allocate` or `realloc` and linked in the
// list, so `dealloc`, `realloc` and `usable_size` only ever see blocks this heap returned, with
// the layout it gave them.
unsafe impl Allocator for Metered {
    fn alloc(&mut self, size: usize) -> *mut u8 {
        if !self.admit(Self::counted(size)) {
            return ptr::null_mut();
        }
        self.allocate(size, false)
    }

    fn calloc(&mut self, count: usize, size: usize) -> *mut u8 {
        let total = count.checked_mul(size);
        if !self.admit(total.and_then(Self::counted)) {
            return ptr::null_mut();
        }
        self.allocate(total.unwrap_or(0), true)
    }

    unsafe fn dealloc(&mut self, block: *mut u8) {
        if block.is_null() {
            return;
        }
        let (header, size) = self.unlink(block);
        if let Some(layout) = Self::layout(size) {
            alloc::dealloc(header.cast(), layout);
        }
    }

    unsafe fn realloc(&mut self, block: *mut u8, new_size: usize) -> *mut u8 {
        // C's realloc: a null block is an allocation, and a zero size a free.
        if block.is_null() {
            return self.alloc(new_size);
        }
        if new_size == 0 {
            self.dealloc(block);
            return ptr::null_mut();
        }
        let old = Self::usable_size(block);
        if new_size > old {
            let growth = Self::counted(new_size)
                .zip(Self::counted(old))
                .map(|(new, old)| new.saturating_sub(old));
            if !self.admit(growth) {
                return ptr::null_mut();
            }
        }
        let (Some(old_layout), Some(new_layout)) = (Self::layout(old), Self::layout(new_size))
        else {
            return ptr::null_mut();
        };
        // Out of the list while it may move; back in whether it moved or not.
        let (header, _) = self.unlink(block);
        let moved = alloc::realloc(header.cast(), old_layout, new_layout.size());
        if moved.is_null() {
            return self.adopt(header, old);
        }
        self.adopt(moved.cast(), new_size)
    }

    unsafe fn usable_size(block: *mut u8) -> usize {
        (*block.sub(HEADER).cast::<Header>()).size
    }
}

impl Drop for Metered {
    /// Frees what QuickJS left: the runtime is gone by now (rquickjs drops its allocator after
    /// `JS_FreeRuntime`), so nothing points into these blocks.
    fn drop(&mut self) {
        let mut header = self.live;
        while let Some(h) = NonNull::new(header) {
            // SAFETY: a live block's header, with the layout it was allocated with.
            unsafe {
                let Header { size, next, .. } = h.as_ptr().read();
                if let Some(layout) = Self::layout(size) {
                    alloc::dealloc(h.as_ptr().cast(), layout);
                }
                header = next;
            }
        }
        self.live = ptr::null_mut();
    }
}

#[cfg(test)]
#[allow(clippy::indexing_slicing)]
mod tests {
    use super::*;

    fn heap(limit: usize) -> Metered {
        Metered::new(limit, Rc::new(Cell::new(None)), Rc::new(|| false))
    }

    /// The live list, newest first: (block, usable size).
    fn live(heap: &Metered) -> Vec<(*mut u8, usize)> {
        let mut out = Vec::new();
        let mut header = heap.live;
        while let Some(h) = NonNull::new(header) {
            // SAFETY: the heap's own live headers.
            unsafe {
                out.push((h.as_ptr().cast::<u8>().add(HEADER), (*h.as_ptr()).size));
                header = (*h.as_ptr()).next;
            }
        }
        out
    }

    #[test]
    fn the_live_list_and_the_count_follow_every_allocation() {
        let mut heap = heap(1 << 20);
        let mut blocks: Vec<(*mut u8, usize)> = Vec::new();
        for i in 1..=40 {
            let block = heap.alloc(i * 24);
            assert!(!block.is_null());
            assert_eq!(block as usize % ALIGN, 0);
            // SAFETY: a block of that size.
            unsafe { block.write_bytes(0xab, i * 24) };
            blocks.push((block, i * 24));
        }
        for (block, size) in blocks.iter_mut().step_by(3) {
            // SAFETY: a live block of this heap.
            let moved = unsafe { heap.realloc(*block, *size * 5) };
            assert!(!moved.is_null());
            // SAFETY: the first bytes moved with the block.
            assert_eq!(unsafe { moved.read() }, 0xab);
            *block = moved;
            *size *= 5;
        }
        for at in (0..blocks.len()).step_by(4).rev() {
            let (block, _) = blocks.remove(at);
            // SAFETY: a live block of this heap, freed once.
            unsafe { heap.dealloc(block) };
            assert!(live(&heap).iter().all(|(b, _)| *b != block));
        }
        let mut listed = live(&heap);
        listed.sort();
        blocks.sort();
        assert_eq!(listed, blocks);
        for (block, size) in &listed {
            // SAFETY: a live block of this heap.
            assert_eq!(unsafe { Metered::usable_size(*block) }, *size);
        }
        let counted: usize = listed
            .iter()
            .filter_map(|(_, s)| Metered::counted(*s))
            .sum();
        assert_eq!(heap.used, counted);
    }

    #[test]
    fn a_refused_allocation_ends_the_script_and_a_reserve_is_left_to_stop_it() {
        let mut heap = heap(1000);
        let block = heap.alloc(600);
        assert!(!block.is_null());
        // SAFETY: a live block of this heap.
        assert!(unsafe { heap.realloc(block, 2000) }.is_null());
        assert_eq!(heap.used, HEADER + 600, "a refused realloc keeps the block");
        assert_eq!(heap.ended.get(), Some(Limit::Memory));
        // Small allocations go on, within the reserve, so that the engine can stop the script.
        let error = heap.alloc(200);
        assert!(!error.is_null());
        assert!(heap.alloc(RESERVE + 1000).is_null());
        assert!(heap.calloc(usize::MAX, 2).is_null());
    }
}
