//! Keeping a bounded view of a stream: its head and its tail, with a count
//! of what was dropped between them; and decoding chunks as UTF-8 without
//! splitting a character across two chunks.
//!
//! Architecture Invariant: everything is bounded: a run's output kept,
//! snapshots, retries, iterations, tokens, time. What a program prints is
//! kept here up to its cap, never whole.

use std::collections::VecDeque;

use super::Captured;

/// Collects one stream into a head of at most `keep` bytes and a tail of at
/// most `keep` bytes.
#[derive(Debug)]
pub(crate) struct HeadTail {
    keep: usize,
    head: Vec<u8>,
    tail: VecDeque<u8>,
    total: u64,
}

impl HeadTail {
    pub(crate) fn new(keep: usize) -> Self {
        HeadTail {
            keep,
            head: Vec::new(),
            tail: VecDeque::new(),
            total: 0,
        }
    }

    pub(crate) fn push(&mut self, mut bytes: &[u8]) {
        self.total += bytes.len() as u64;
        let room = self.keep.saturating_sub(self.head.len());
        if room > 0 {
            let n = room.min(bytes.len());
            self.head.extend_from_slice(&bytes[..n]);
            bytes = &bytes[n..];
        }
        if self.keep == 0 || bytes.is_empty() {
            return;
        }
        if bytes.len() >= self.keep {
            self.tail.clear();
            self.tail.extend(&bytes[bytes.len() - self.keep..]);
            return;
        }
        let overflow = (self.tail.len() + bytes.len()).saturating_sub(self.keep);
        self.tail.drain(..overflow);
        self.tail.extend(bytes);
    }

    pub(crate) fn finish(self) -> Captured {
        let kept = self.head.len() as u64 + self.tail.len() as u64;
        let tail: Vec<u8> = self.tail.into_iter().collect();
        Captured {
            head: String::from_utf8_lossy(&self.head).into_owned(),
            tail: String::from_utf8_lossy(&tail).into_owned(),
            dropped_bytes: self.total.saturating_sub(kept),
        }
    }
}

impl Captured {
    /// The text kept: the head, a marker saying how much was dropped (if
    /// anything was), and the tail.
    pub fn text(&self) -> String {
        if self.dropped_bytes == 0 {
            return format!("{}{}", self.head, self.tail);
        }
        let mut out = String::with_capacity(self.head.len() + self.tail.len() + 48);
        out.push_str(&self.head);
        if !self.head.ends_with('\n') {
            out.push('\n');
        }
        out.push_str(&format!("[... {} bytes dropped ...]\n", self.dropped_bytes));
        out.push_str(&self.tail);
        out
    }

    /// True when nothing was written to the stream.
    pub fn is_empty(&self) -> bool {
        self.head.is_empty() && self.tail.is_empty() && self.dropped_bytes == 0
    }
}

/// Decodes a byte stream chunk by chunk, carrying an incomplete trailing
/// UTF-8 sequence over to the next chunk. Invalid bytes become U+FFFD.
#[derive(Debug, Default)]
pub(crate) struct Utf8Chunker {
    carry: Vec<u8>,
}

impl Utf8Chunker {
    pub(crate) fn decode(&mut self, bytes: &[u8]) -> String {
        let mut buf = std::mem::take(&mut self.carry);
        buf.extend_from_slice(bytes);
        let keep_from = incomplete_suffix_start(&buf);
        self.carry = buf.split_off(keep_from);
        String::from_utf8_lossy(&buf).into_owned()
    }

    pub(crate) fn flush(&mut self) -> String {
        let rest = std::mem::take(&mut self.carry);
        String::from_utf8_lossy(&rest).into_owned()
    }
}

/// Where a trailing, possibly incomplete UTF-8 sequence starts (or `len`).
fn incomplete_suffix_start(buf: &[u8]) -> usize {
    let len = buf.len();
    // A sequence is at most 4 bytes: look back over at most 3 continuation bytes.
    for back in 1..=len.min(4) {
        let b = buf[len - back];
        if b & 0b1100_0000 == 0b1000_0000 {
            continue;
        }
        let need = match b {
            0x00..=0x7F => 1,
            0xC0..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF7 => 4,
            _ => 1,
        };
        return if need > back { len - back } else { len };
    }
    len
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_output_is_kept_whole() {
        let mut c = HeadTail::new(8);
        c.push(b"hello");
        c.push(b" you");
        let got = c.finish();
        assert_eq!(got.dropped_bytes, 0);
        assert_eq!(got.text(), "hello you");
    }

    #[test]
    fn long_output_keeps_head_and_tail_and_counts_the_middle() {
        let mut c = HeadTail::new(4);
        for chunk in [&b"abcdef"[..], b"ghij", b"k", b"lmnop"] {
            c.push(chunk);
        }
        let got = c.finish();
        assert_eq!(got.head, "abcd");
        assert_eq!(got.tail, "mnop");
        assert_eq!(got.dropped_bytes, 16 - 8);
        assert_eq!(got.text(), "abcd\n[... 8 bytes dropped ...]\nmnop");
    }

    #[test]
    fn a_character_split_across_chunks_is_decoded_whole() {
        let bytes = "né €".as_bytes();
        let mut d = Utf8Chunker::default();
        let mut out = String::new();
        for b in bytes {
            out.push_str(&d.decode(std::slice::from_ref(b)));
        }
        out.push_str(&d.flush());
        assert_eq!(out, "né €");
    }
}
