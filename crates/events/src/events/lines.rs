//! Splitting a byte stream into bounded lines.

/// The longest line kept; longer lines are reported as oversized and skipped.
pub const MAX_LINE: usize = 32 * 1024 * 1024;

/// Splits bytes arriving in arbitrary chunks into `\n`-terminated lines, keeping at most
/// [`MAX_LINE`] bytes of a line; the rest of an oversized line is dropped until the next
/// newline and the line is reported with `oversized = true`.
#[derive(Debug, Default)]
pub struct LineSplitter {
    buf: Vec<u8>,
    oversized: bool,
}

impl LineSplitter {
    /// Feeds `chunk`, calling `line(bytes, oversized)` for every completed line (without the
    /// newline).
    pub fn feed(&mut self, mut chunk: &[u8], mut line: impl FnMut(&[u8], bool)) {
        while let Some(pos) = memchr(b'\n', chunk) {
            let (head, rest) = chunk.split_at(pos);
            if self.buf.is_empty() && !self.oversized {
                line(head, false);
            } else {
                self.push(head);
                line(&self.buf, self.oversized);
                self.buf.clear();
                self.oversized = false;
            }
            chunk = &rest[1..];
        }
        self.push(chunk);
    }

    /// Flushes a last line that had no newline.
    pub fn finish(&mut self, mut line: impl FnMut(&[u8], bool)) {
        if !self.buf.is_empty() || self.oversized {
            line(&self.buf, self.oversized);
        }
        self.buf.clear();
        self.oversized = false;
    }

    fn push(&mut self, bytes: &[u8]) {
        let room = MAX_LINE.saturating_sub(self.buf.len());
        if bytes.len() > room {
            self.oversized = true;
        }
        self.buf.extend_from_slice(&bytes[..bytes.len().min(room)]);
    }
}

fn memchr(needle: u8, haystack: &[u8]) -> Option<usize> {
    haystack.iter().position(|&b| b == needle)
}
