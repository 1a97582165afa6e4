//! A fixed-capacity byte ring that keeps the newest bytes, so per-session state stays bounded
//! whatever the stream length.

/// A byte ring of fixed capacity; pushing past the capacity drops the oldest bytes.
///
/// Positions are logical: [`Ring::end`] counts every byte ever kept, so a caller can remember
/// where something started and later cut the ring back to it ([`Ring::truncate_to`]).
#[derive(Debug, Clone)]
pub(crate) struct Ring {
    buf: Box<[u8]>,
    /// Physical index of the oldest byte.
    head: usize,
    len: usize,
    /// Logical position just past the newest byte.
    end: u64,
}

impl Ring {
    /// A ring holding at most `capacity` bytes (at least one).
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            buf: vec![0; capacity.max(1)].into_boxed_slice(),
            head: 0,
            len: 0,
            end: 0,
        }
    }

    /// The capacity in bytes.
    pub(crate) fn capacity(&self) -> usize {
        self.buf.len()
    }

    /// Bytes held.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The logical position just past the newest byte.
    pub(crate) fn end(&self) -> u64 {
        self.end
    }

    /// The logical position of the oldest byte held.
    pub(crate) fn start(&self) -> u64 {
        self.end - self.len as u64
    }

    /// The held bytes from logical position `from` (clamped to what is held) to the end, as at
    /// most two slices.
    pub(crate) fn slices_from(&self, from: u64) -> (&[u8], &[u8]) {
        let skip = usize::try_from(from.saturating_sub(self.start()))
            .unwrap_or(usize::MAX)
            .min(self.len);
        let (a, b) = self.as_slices();
        if skip < a.len() {
            (&a[skip..], b)
        } else {
            (&b[skip - a.len()..], &b[b.len()..])
        }
    }

    /// Appends `data`, dropping the oldest bytes when full.
    #[inline]
    pub(crate) fn push(&mut self, data: &[u8]) {
        let cap = self.buf.len();
        let data = if data.len() > cap {
            self.end += (data.len() - cap) as u64;
            &data[data.len() - cap..]
        } else {
            data
        };
        let n = data.len();
        if n == 0 {
            return;
        }
        let mut tail = self.head + self.len;
        if tail >= cap {
            tail -= cap;
        }
        let first = n.min(cap - tail);
        self.buf[tail..tail + first].copy_from_slice(&data[..first]);
        if first < n {
            self.buf[..n - first].copy_from_slice(&data[first..]);
        }
        let overflow = (self.len + n).saturating_sub(cap);
        self.len += n - overflow;
        self.head += overflow;
        if self.head >= cap {
            self.head -= cap;
        }
        self.end += n as u64;
    }

    /// Appends one byte.
    #[inline]
    pub(crate) fn push_byte(&mut self, byte: u8) {
        self.push(&[byte]);
    }

    /// Drops the newest bytes so that the ring ends at logical position `end`. Positions older
    /// than what the ring still holds clear it; positions past the end do nothing.
    pub(crate) fn truncate_to(&mut self, end: u64) {
        if end >= self.end {
            return;
        }
        let drop = self.end - end;
        let drop = usize::try_from(drop).unwrap_or(usize::MAX).min(self.len);
        self.len -= drop;
        self.end -= drop as u64;
    }

    /// The held bytes, oldest first, as at most two slices.
    pub(crate) fn as_slices(&self) -> (&[u8], &[u8]) {
        let cap = self.buf.len();
        let first = self.len.min(cap - self.head);
        (
            &self.buf[self.head..self.head + first],
            &self.buf[..self.len - first],
        )
    }

    /// The newest `max` bytes (or all of them), oldest first, copied out.
    pub(crate) fn tail(&self, max: usize) -> Vec<u8> {
        let (a, b) = self.as_slices();
        let mut out = Vec::with_capacity(self.len.min(max));
        let skip = self.len.saturating_sub(max);
        if skip < a.len() {
            out.extend_from_slice(&a[skip..]);
            out.extend_from_slice(b);
        } else {
            out.extend_from_slice(&b[skip - a.len()..]);
        }
        out
    }
}

#[cfg(test)]
mod tests;
