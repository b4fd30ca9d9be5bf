//! Little-endian binary writing and bounds-checked reading, for the index snapshot: a reader
//! answers `None` at the first byte that is not there, never panics, and never allocates more
//! than the input could hold.

/// Writes into `out`, or, counting, only adds up what it would write: a snapshot is measured
/// first and written into a buffer of exactly its size, since a buffer grown by doubling
/// would leave megabytes of a VM's memory (which never shrinks) spent on spare capacity.
pub(crate) struct Writer {
    pub(crate) out: Vec<u8>,
    counting: bool,
    pub(crate) counted: usize,
}

impl Writer {
    pub(crate) fn into(out: Vec<u8>) -> Writer {
        Writer {
            out,
            counting: false,
            counted: 0,
        }
    }
    pub(crate) fn counting() -> Writer {
        Writer {
            out: Vec::new(),
            counting: true,
            counted: 0,
        }
    }
    fn put(&mut self, b: &[u8]) {
        self.counted += b.len();
        if !self.counting {
            self.out.extend_from_slice(b);
        }
    }
    pub(crate) fn u8(&mut self, v: u8) {
        self.put(&[v]);
    }
    pub(crate) fn u32(&mut self, v: u32) {
        self.put(&v.to_le_bytes());
    }
    pub(crate) fn f32(&mut self, v: f32) {
        self.put(&v.to_le_bytes());
    }
    pub(crate) fn len(&mut self, n: usize) -> Option<()> {
        self.u32(u32::try_from(n).ok()?);
        Some(())
    }
    pub(crate) fn bytes(&mut self, b: &[u8]) -> Option<()> {
        self.len(b.len())?;
        self.put(b);
        Some(())
    }
}

pub(crate) struct Reader<'a> {
    pub(crate) rest: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take<const N: usize>(&mut self) -> Option<[u8; N]> {
        let (head, rest) = self.rest.split_first_chunk::<N>()?;
        self.rest = rest;
        Some(*head)
    }
    pub(crate) fn u8(&mut self) -> Option<u8> {
        self.take::<1>().map(|[b]| b)
    }
    pub(crate) fn u32(&mut self) -> Option<u32> {
        self.take::<4>().map(u32::from_le_bytes)
    }
    pub(crate) fn f32(&mut self) -> Option<f32> {
        self.take::<4>().map(f32::from_le_bytes)
    }
    /// A count of things of at least one byte each: never more than the bytes left, so a
    /// corrupt count cannot ask for a huge allocation.
    pub(crate) fn len(&mut self) -> Option<usize> {
        let n = self.u32()? as usize;
        (n <= self.rest.len()).then_some(n)
    }
    pub(crate) fn bytes(&mut self) -> Option<&'a [u8]> {
        let n = self.len()?;
        let (head, rest) = self.rest.split_at_checked(n)?;
        self.rest = rest;
        Some(head)
    }
    pub(crate) fn text(&mut self) -> Option<std::rc::Rc<str>> {
        std::str::from_utf8(self.bytes()?)
            .ok()
            .map(std::rc::Rc::from)
    }
}
