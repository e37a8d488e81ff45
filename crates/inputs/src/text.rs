//! Plain text: its encoding (a BOM, valid UTF-8, or a latin-1 guess), its
//! lines counted or estimated, its first lines.

use std::io;

use crate::read::{self, Source};
use crate::{Count, EXACT_BYTES, Text};

/// Lines shown, at most, and their length.
const FIRST_LINES: usize = 8;
const LINE_CHARS: usize = 160;

pub(crate) struct Encoding {
    pub(crate) name: String,
    /// Bytes below 0x80 mean ASCII (UTF-8, latin-1): lines split on b'\n'.
    pub(crate) utf8_compatible: bool,
    utf16: Option<bool>,
}

/// The encoding of a text head, or None when it looks binary.
pub(crate) fn encoding(head: &[u8]) -> Option<Encoding> {
    let enc = |name: &str, utf8_compatible, utf16| {
        Some(Encoding {
            name: name.into(),
            utf8_compatible,
            utf16,
        })
    };
    if head.starts_with(&[0xEF, 0xBB, 0xBF]) {
        return enc("UTF-8 (with BOM)", true, None);
    }
    if head.starts_with(&[0xFF, 0xFE]) {
        return enc("UTF-16 LE (BOM)", false, Some(true));
    }
    if head.starts_with(&[0xFE, 0xFF]) {
        return enc("UTF-16 BE (BOM)", false, Some(false));
    }
    if head.contains(&0) {
        return None;
    }
    let control = head
        .iter()
        .filter(|&&b| b < 0x20 && !matches!(b, b'\n' | b'\r' | b'\t' | 0x0C | 0x1B))
        .count();
    if control * 100 > head.len().max(1) {
        return None;
    }
    match std::str::from_utf8(head) {
        Ok(s) if s.is_ascii() => enc("ASCII", true, None),
        Ok(_) => enc("UTF-8", true, None),
        // A character cut at the end of the head is still UTF-8.
        Err(e) if e.error_len().is_none() => enc("UTF-8", true, None),
        Err(_) => enc("latin-1 (a guess: not valid UTF-8)", true, None),
    }
}

pub(crate) fn strip_bom(head: &[u8]) -> &[u8] {
    head.strip_prefix(&[0xEF, 0xBB, 0xBF][..]).unwrap_or(head)
}

fn decode(bytes: &[u8], enc: &Encoding) -> String {
    match enc.utf16 {
        Some(le) => {
            let units: Vec<u16> = bytes[2.min(bytes.len())..]
                .chunks_exact(2)
                .map(|c| {
                    if le {
                        u16::from_le_bytes([c[0], c[1]])
                    } else {
                        u16::from_be_bytes([c[0], c[1]])
                    }
                })
                .collect();
            String::from_utf16_lossy(&units)
        }
        None if enc.name.starts_with("latin-1") => bytes.iter().map(|&b| char::from(b)).collect(),
        None => String::from_utf8_lossy(strip_bom(bytes)).into_owned(),
    }
}

fn cut(line: &str) -> String {
    let line = line.trim_end_matches('\r');
    if line.chars().count() <= LINE_CHARS {
        return line.to_string();
    }
    let mut s: String = line.chars().take(LINE_CHARS - 1).collect();
    s.push('…');
    s
}

pub(crate) fn describe(src: &Source, head: &[u8], enc: &Encoding) -> io::Result<Text> {
    let text = decode(head, enc);
    let first_lines = text.lines().take(FIRST_LINES).map(cut).collect();
    let whole = head.len() as u64 >= src.size;
    let unit = if enc.utf16.is_some() { 2 } else { 1 };
    let ends_open = |t: &str| !t.is_empty() && !t.ends_with('\n');
    let lines = if whole {
        Count::exact(text.matches('\n').count() as u64 + u64::from(ends_open(&text)))
    } else if src.size <= EXACT_BYTES && unit == 1 {
        let mut n = 0;
        let mut last = b'\n';
        src.stream(0, |c| {
            n += read::newlines(c);
            if let Some(&b) = c.last() {
                last = b;
            }
        })?;
        Count::exact(n + u64::from(last != b'\n'))
    } else {
        let n = text.matches('\n').count().max(1) as f64;
        let per = head.len() as f64 / n;
        Count::estimate((src.size as f64 / per).round() as u64)
    };
    Ok(Text {
        encoding: enc.name.clone(),
        lines,
        first_lines,
    })
}
