//! PDF: the version and the page count, from a bounded scan of the head and
//! the tail for the page tree's /Count (or the linearization's /N), in the
//! plain objects or in the Flate-compressed object streams of PDF 1.5+.

use std::io;

use crate::read::Source;
use crate::{Count, HEAD_BYTES, Pdf};

/// What is scanned: the head (up to 4 MB) and the tail (1 MB).
const SCAN_HEAD: usize = 4 * HEAD_BYTES;
const SCAN_TAIL: usize = HEAD_BYTES;

/// Inflated object streams looked into, at most (bytes, all together),
/// and object streams looked into, at most.
const INFLATE_MAX: u64 = 4 << 20;
const MAX_STREAMS: usize = 1024;
/// Dictionaries open inside one another that are followed; deeper ones
/// are passed over.
const MAX_DICTS: usize = 64;

/// One dictionary open while scanning: what it has said so far.
#[derive(Default)]
struct Dict {
    pages: bool,
    count: Option<u64>,
    linearized: bool,
    n: Option<u64>,
    objstm: bool,
    flate: bool,
}

/// What one pass over PDF bytes finds: the largest /Count of a
/// `/Type /Pages` dictionary (the root holds them all), a linearization
/// dictionary's /N, and where the Flate-compressed object streams' data
/// lie. One pass, each byte looked at a bounded number of times: a file of
/// a million page-tree nodes costs what its bytes cost.
#[derive(Default)]
struct Found {
    pages: Option<u64>,
    linearized: Option<u64>,
    streams: Vec<(usize, usize)>,
}

fn is_delimiter(b: u8) -> bool {
    b.is_ascii_whitespace() || b"()<>[]{}/%".contains(&b)
}

/// The number that starts at `at` (after whitespace), if any.
fn number_at(hay: &[u8], mut at: usize) -> Option<u64> {
    while hay.get(at).is_some_and(u8::is_ascii_whitespace) {
        at += 1;
    }
    let digits = hay[at.min(hay.len())..]
        .iter()
        .take(19)
        .take_while(|b| b.is_ascii_digit())
        .count();
    std::str::from_utf8(&hay[at..at + digits])
        .ok()?
        .parse()
        .ok()
}

fn scan(hay: &[u8]) -> Found {
    let mut found = Found::default();
    let mut dicts: Vec<Dict> = Vec::new();
    let mut deeper = 0usize;
    // The last name read, when it was /Type (its value names the kind).
    let mut after_type = false;
    // A dictionary just closed was a Flate object stream's: its data follow.
    let mut objstm_next = false;
    let mut i = 0;
    while i < hay.len() {
        match hay[i] {
            b'%' => {
                while i < hay.len() && hay[i] != b'\n' && hay[i] != b'\r' {
                    i += 1;
                }
            }
            b'(' => {
                let mut depth = 0usize;
                while i < hay.len() {
                    match hay[i] {
                        b'\\' => i += 1,
                        b'(' => depth += 1,
                        b')' => {
                            depth -= 1;
                            if depth == 0 {
                                break;
                            }
                        }
                        _ => {}
                    }
                    i += 1;
                }
                i += 1;
            }
            b'<' if hay.get(i + 1) == Some(&b'<') => {
                if dicts.len() < MAX_DICTS {
                    dicts.push(Dict::default());
                } else {
                    deeper += 1;
                }
                i += 2;
            }
            b'>' if hay.get(i + 1) == Some(&b'>') => {
                if deeper > 0 {
                    deeper -= 1;
                } else if let Some(d) = dicts.pop() {
                    if d.pages
                        && let Some(n) = d.count
                    {
                        found.pages = Some(found.pages.map_or(n, |b| b.max(n)));
                    }
                    if d.linearized && found.linearized.is_none() {
                        found.linearized = d.n;
                    }
                    objstm_next = d.objstm && d.flate;
                }
                i += 2;
            }
            b'/' => {
                let start = i + 1;
                i = start;
                while i < hay.len() && !is_delimiter(hay[i]) {
                    i += 1;
                }
                let name = &hay[start..i];
                let was_type = std::mem::take(&mut after_type);
                if let Some(d) = dicts.last_mut() {
                    match name {
                        b"Pages" if was_type => d.pages = true,
                        b"ObjStm" if was_type => d.objstm = true,
                        b"Type" => after_type = true,
                        b"Count" => d.count = number_at(hay, i),
                        b"Linearized" => d.linearized = true,
                        b"N" => d.n = number_at(hay, i),
                        b"FlateDecode" => d.flate = true,
                        _ => {}
                    }
                }
            }
            b's' if hay[i..].starts_with(b"stream")
                && (i == 0 || is_delimiter(hay[i - 1]))
                && hay.get(i + 6).is_none_or(|&b| b == b'\r' || b == b'\n') =>
            {
                let mut start = i + 6;
                if hay.get(start) == Some(&b'\r') {
                    start += 1;
                }
                if hay.get(start) == Some(&b'\n') {
                    start += 1;
                }
                // Data are passed over whole: what they hold is not PDF.
                let end = hay[start..]
                    .windows(9)
                    .position(|w| w == b"endstream")
                    .map_or(hay.len(), |p| start + p);
                if std::mem::take(&mut objstm_next) && found.streams.len() < MAX_STREAMS {
                    found.streams.push((start, end));
                }
                i = end + 9;
            }
            b if b.is_ascii_whitespace() => i += 1,
            _ => {
                after_type = false;
                i += 1;
            }
        }
    }
    found
}

/// The page count of the Flate-compressed object streams' contents (where
/// PDF 1.5 and later keep the page tree), each inflated in turn, bounded.
fn pages_in_object_streams(hay: &[u8], streams: &[(usize, usize)]) -> Option<u64> {
    use std::io::Read;
    let mut room = INFLATE_MAX;
    let mut best: Option<u64> = None;
    for &(start, end) in streams {
        if room == 0 {
            break;
        }
        let mut out = Vec::new();
        let mut z = flate2::read::ZlibDecoder::new(&hay[start..end.min(hay.len())]).take(room);
        // A stream cut at the scan's edge inflates as far as it goes.
        let _ = z.read_to_end(&mut out);
        room -= out.len() as u64;
        if let Some(n) = scan(&out).pages {
            best = Some(best.map_or(n, |b| b.max(n)));
        }
    }
    best
}

pub(crate) fn describe(src: &Source, head: &[u8], notes: &mut Vec<String>) -> io::Result<Pdf> {
    let version = head
        .get(5..8)
        .and_then(|v| std::str::from_utf8(v).ok())
        .filter(|v| v.chars().all(|c| c.is_ascii_digit() || c == '.'))
        .map(str::to_string);
    // The head and the tail in one buffer of their size.
    let whole = src.size <= SCAN_HEAD as u64;
    let mut bytes = Vec::with_capacity(if whole {
        src.size as usize
    } else {
        SCAN_HEAD + SCAN_TAIL
    });
    src.append(0, SCAN_HEAD, &mut bytes)?;
    if !whole {
        src.append(
            src.size.saturating_sub(SCAN_TAIL as u64),
            SCAN_TAIL,
            &mut bytes,
        )?;
    }
    let found = scan(&bytes);
    let pages = found
        .pages
        .or_else(|| pages_in_object_streams(&bytes, &found.streams))
        .or(found.linearized)
        .map(Count::exact);
    if pages.is_none() {
        notes.push(if whole {
            "its page tree was not found (its objects may be compressed)".into()
        } else {
            format!(
                "its page count was not found in the first {} and the last {} (its objects may be compressed)",
                crate::bytes(SCAN_HEAD as u64),
                crate::bytes(SCAN_TAIL as u64)
            )
        });
    }
    Ok(Pdf { version, pages })
}
