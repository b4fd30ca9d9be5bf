//! The index in the snapshot's binary form (`index/snapshot.rs` writes the weights, tuning and
//! trailer around it).

use super::{effective_b, Bm25Index};
use crate::config::{FieldWeights, Tuning};
use crate::index::bytes::{Reader, Writer};
use crate::index::fnv::FnvHashMap;

impl Bm25Index {
    /// The index in `snapshot`'s binary form (its weights and tuning are written by the caller).
    pub(crate) fn write(&self, w: &mut Writer) -> Option<()> {
        w.len(self.field_len.len())?;
        for len in &self.field_len {
            for l in len {
                w.f32(*l);
            }
        }
        for avg in self.avg_field_len {
            w.f32(avg);
        }
        w.f32(self.avg_len);
        // Terms in id order, so that reading them back gives each its id.
        let mut terms: Vec<&str> = vec![""; self.term_ids.len()];
        for (term, &id) in &self.term_ids {
            *terms.get_mut(id as usize)? = term;
        }
        w.len(terms.len())?;
        for term in terms {
            w.bytes(term.as_bytes())?;
        }
        w.len(self.postings.len())?;
        for list in &self.postings {
            w.len(list.len())?;
            for &(doc, tf) in list {
                w.u32(doc);
                w.f32(tf);
            }
        }
        Some(())
    }

    /// What `write` wrote, for an index of `doc_count` documents built with `weights` and
    /// `tuning`; `None` if it is not that.
    pub(crate) fn read(
        r: &mut Reader,
        weights: FieldWeights,
        tuning: Tuning,
        doc_count: usize,
    ) -> Option<Self> {
        if r.len()? != doc_count {
            return None;
        }
        let mut field_len = Vec::with_capacity(doc_count);
        for _ in 0..doc_count {
            field_len.push([r.f32()?, r.f32()?, r.f32()?]);
        }
        let avg_field_len = [r.f32()?, r.f32()?, r.f32()?];
        let avg_len = r.f32()?;
        let terms = r.len()?;
        let mut term_ids: FnvHashMap<String, u32> = FnvHashMap::default();
        for id in 0..terms {
            let term = std::str::from_utf8(r.bytes()?).ok()?;
            let id = u32::try_from(id).ok()?;
            if *term_ids.entry(term.to_string()).or_insert(id) != id {
                return None;
            }
        }
        let lists = r.len()?;
        if lists > terms {
            return None;
        }
        let mut postings = Vec::with_capacity(lists);
        for _ in 0..lists {
            let n = r.len()?;
            let mut list = Vec::with_capacity(n);
            let mut last = None;
            for _ in 0..n {
                let (doc, tf) = (r.u32()?, r.f32()?);
                // Documents ascending and in range: `term_score` searches them, `add_scores`
                // indexes the score vector with them.
                if doc as usize >= doc_count || last.is_some_and(|l| l >= doc) {
                    return None;
                }
                last = Some(doc);
                list.push((doc, tf));
            }
            postings.push(list);
        }
        Some(Bm25Index {
            doc_count,
            weights: [weights.name, weights.description, weights.input_schema],
            tuning,
            b: effective_b(&tuning, &field_len),
            field_len,
            avg_field_len,
            avg_len,
            term_ids,
            postings,
        })
    }
}
