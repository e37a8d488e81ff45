//! PDF: the version and the page count, from a bounded scan of the head and
//! the tail for the page tree's /Count (or the linearization's /N), in the
//! plain objects or in the Flate-compressed object streams of PDF 1.5+.

use std::io;

use crate::read::Source;
use crate::{Count, HEAD_BYTES, Pdf};

/// What is scanned: the head (up to 4 MB) and the tail (1 MB).
const SCAN_HEAD: usize = 4 * HEAD_BYTES;
const SCAN_TAIL: usize = HEAD_BYTES;

fn find(hay: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    hay.get(from..)?
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| p + from)
}

/// The number after `key` (e.g. "/Count") in `dict`.
fn number_after(dict: &[u8], key: &[u8]) -> Option<u64> {
    let at = find(dict, key, 0)? + key.len();
    let rest = &dict[at..];
    let start = rest.iter().position(|b| !b.is_ascii_whitespace())?;
    let digits: Vec<u8> = rest[start..]
        .iter()
        .take_while(|b| b.is_ascii_digit())
        .copied()
        .collect();
    std::str::from_utf8(&digits).ok()?.parse().ok()
}

/// The dictionary around position `at`: from the "<<" before it to the ">>" after.
fn dict_around(hay: &[u8], at: usize) -> &[u8] {
    let from = at.saturating_sub(4096);
    let start = hay[from..at]
        .windows(2)
        .rposition(|w| w == b"<<")
        .map_or(at.saturating_sub(512), |p| p + from);
    let end = find(hay, b">>", at).unwrap_or((at + 512).min(hay.len()));
    &hay[start..end.min(hay.len())]
}

/// The largest /Count of a /Type /Pages dictionary in `hay` (the root
/// holds them all), or the /N of a linearization dictionary.
fn pages_in(hay: &[u8]) -> Option<u64> {
    let mut best: Option<u64> = None;
    let mut from = 0;
    while let Some(at) = find(hay, b"/Pages", from) {
        from = at + 6;
        let dict = dict_around(hay, at);
        let typed =
            find(dict, b"/Type/Pages", 0).is_some() || find(dict, b"/Type /Pages", 0).is_some();
        if typed && let Some(n) = number_after(dict, b"/Count") {
            best = Some(best.map_or(n, |b| b.max(n)));
        }
    }
    if best.is_none()
        && let Some(at) = find(hay, b"/Linearized", 0)
    {
        best = number_after(dict_around(hay, at), b"/N");
    }
    best
}

/// Inflated object streams looked into, at most (bytes, all together).
const INFLATE_MAX: u64 = 16 << 20;

/// The contents of the Flate-compressed object streams (`/Type /ObjStm`)
/// in `hay`, inflated (bounded): where PDF 1.5 and later keep the page tree.
fn object_streams(hay: &[u8]) -> Vec<u8> {
    use std::io::Read;
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(at) = find(hay, b"/ObjStm", from) {
        from = at + 7;
        let dict = dict_around(hay, at);
        if find(dict, b"/FlateDecode", 0).is_none() {
            continue;
        }
        let Some(s) = find(hay, b"stream", at) else {
            break;
        };
        let mut start = s + 6;
        if hay.get(start) == Some(&b'\r') {
            start += 1;
        }
        if hay.get(start) == Some(&b'\n') {
            start += 1;
        }
        let end = find(hay, b"endstream", start).unwrap_or(hay.len());
        let room = INFLATE_MAX.saturating_sub(out.len() as u64);
        if room == 0 {
            break;
        }
        let mut z = flate2::read::ZlibDecoder::new(&hay[start..end]).take(room);
        // A stream cut at the scan's edge inflates as far as it goes.
        let _ = z.read_to_end(&mut out);
        out.push(b'\n');
        from = end;
    }
    out
}

pub(crate) fn describe(src: &Source, head: &[u8], notes: &mut Vec<String>) -> io::Result<Pdf> {
    let version = head
        .get(5..8)
        .and_then(|v| std::str::from_utf8(v).ok())
        .filter(|v| v.chars().all(|c| c.is_ascii_digit() || c == '.'))
        .map(str::to_string);
    let mut scan = src.window(0, SCAN_HEAD)?;
    let whole = scan.len() as u64 >= src.size;
    if !whole {
        scan.extend(src.tail(SCAN_TAIL)?);
    }
    let pages = pages_in(&scan)
        .or_else(|| pages_in(&object_streams(&scan)))
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
