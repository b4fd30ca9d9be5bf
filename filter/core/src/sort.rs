//! A stable sort for the cold paths (configuration, catalog and vector loading, the health
//! and insights reports, the groups answer, a list memo's tools): one merge sort of positions behind `dyn` for all of them, where
//! each `slice::sort` is about 7 KB of .wasm per element type and comparator. Ranking keeps the
//! standard library's sorts (and `index::bm25`'s own merge sort of hits).

use std::cmp::Ordering;

/// Sorts `items` in their `Ord` order, stably.
pub(crate) fn sort<T: Ord>(items: &mut [T]) {
    sort_by(items, T::cmp);
}

/// Sorts `items` by `cmp`, stably: equal items keep their order, as with `slice::sort_by`.
pub(crate) fn sort_by<T>(items: &mut [T], cmp: impl Fn(&T, &T) -> Ordering) {
    let order = stable_order(items.len(), &|a, b| match (items.get(a), items.get(b)) {
        (Some(x), Some(y)) => cmp(x, y),
        _ => Ordering::Equal,
    });
    permute(&order, &mut |a, b| items.swap(a, b));
}

/// The positions `0..len` in the order `cmp` sorts them, stably: a natural merge sort, which
/// merges the runs already in order (a list in order, or nearly, takes a pass or two).
#[inline(never)]
fn stable_order(len: usize, cmp: &dyn Fn(usize, usize) -> Ordering) -> Vec<usize> {
    let mut order: Vec<usize> = (0..len).collect();
    // Each run ends where the next begins: ascending (no item less than the one before it), or
    // strictly descending and then reversed, which keeps equal items in their order.
    let mut ends = Vec::new();
    let mut start = 0;
    while start < len {
        let mut end = start + 1;
        if end < len && cmp(end, start) == Ordering::Less {
            while end < len && cmp(end, end - 1) == Ordering::Less {
                end += 1;
            }
            order.get_mut(start..end).unwrap_or_default().reverse();
        } else {
            while end < len && cmp(end, end - 1) != Ordering::Less {
                end += 1;
            }
        }
        ends.push(end);
        start = end;
    }
    let mut out = order.clone();
    while ends.len() > 1 {
        let mut merged = Vec::with_capacity(ends.len() / 2 + 1);
        let mut start = 0;
        for pair in ends.chunks(2) {
            let (mid, end) = match *pair {
                [mid, end] => (mid, end),
                [end] => (end, end),
                _ => break,
            };
            let (mut i, mut j) = (start, mid);
            for slot in out.get_mut(start..end).unwrap_or_default() {
                let left = order.get(i).filter(|_| i < mid);
                let right = order.get(j).filter(|_| j < end);
                *slot = match (left, right) {
                    // Only a strictly smaller right item goes first: that keeps the sort stable.
                    (Some(&l), Some(&r)) if cmp(r, l) == Ordering::Less => {
                        j += 1;
                        r
                    }
                    (Some(&l), _) => {
                        i += 1;
                        l
                    }
                    (None, Some(&r)) => {
                        j += 1;
                        r
                    }
                    (None, None) => break,
                };
            }
            merged.push(end);
            start = end;
        }
        std::mem::swap(&mut order, &mut out);
        ends = merged;
    }
    order
}

/// Puts the item at position `order[k]` at position `k`, by `swap`s (at most one per item).
#[inline(never)]
fn permute(order: &[usize], swap: &mut dyn FnMut(usize, usize)) {
    // `dest[i]`: the position the item now at `i` goes to.
    let mut dest = vec![0; order.len()];
    for (k, &i) in order.iter().enumerate() {
        if let Some(d) = dest.get_mut(i) {
            *d = k;
        }
    }
    for i in 0..dest.len() {
        while let Some(&d) = dest.get(i).filter(|&&d| d != i && d < order.len()) {
            swap(i, d);
            dest.swap(i, d);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Random lists of up to 39 items with repeated keys sort as `slice::sort_by` sorts them,
    /// equal keys in their first order included.
    #[test]
    fn same_as_the_standard_stable_sort() {
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        for len in 0..40 {
            for _ in 0..50 {
                let items: Vec<(u8, usize)> = (0..len)
                    .map(|i| {
                        seed ^= seed << 13;
                        seed ^= seed >> 7;
                        seed ^= seed << 17;
                        ((seed % 5) as u8, i)
                    })
                    .collect();
                let mut ours = items.clone();
                sort_by(&mut ours, |a, b| a.0.cmp(&b.0));
                let mut std = items.clone();
                std.sort_by_key(|a| a.0);
                assert_eq!(ours, std);
            }
        }
    }

    /// Runs in order, reversed, interleaved and with equal items, as `slice::sort_by` sorts them.
    #[test]
    fn runs_as_the_standard_stable_sort() {
        let lists: Vec<Vec<(u8, usize)>> = vec![
            (0..50).map(|i| (i as u8, i)).collect(),
            (0..50).map(|i| (50 - i as u8, i)).collect(),
            (0..50).map(|i| ((i % 25) as u8, i)).collect(),
            (0..50).map(|i| ((i / 3) as u8, i)).collect(),
            (0..50).map(|i| (50 - (i / 3) as u8, i)).collect(),
            (0..50).map(|i| (((i + 1) % 2) as u8, i)).collect(),
            (0..50).map(|i| (7, i)).collect(),
            vec![(3, 0), (1, 1), (1, 2), (0, 3), (2, 4)],
        ];
        for items in lists {
            let mut ours = items.clone();
            sort_by(&mut ours, |a, b| a.0.cmp(&b.0));
            let mut std = items.clone();
            std.sort_by_key(|a| a.0);
            assert_eq!(ours, std, "{items:?}");
        }
    }

    #[test]
    fn sorted_reversed_and_empty() {
        let mut v: Vec<u32> = (0..100).collect();
        sort(&mut v);
        assert_eq!(v, (0..100).collect::<Vec<_>>());
        v.reverse();
        sort(&mut v);
        assert_eq!(v, (0..100).collect::<Vec<_>>());
        let mut e: Vec<String> = Vec::new();
        sort(&mut e);
        assert!(e.is_empty());
    }
}
