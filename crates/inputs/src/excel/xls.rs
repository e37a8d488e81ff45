//! xls (BIFF8, and BIFF5's `Book`): the workbook stream (at most
//! `STREAM_CAP` of it), its sheet list, number formats and cell styles;
//! each described sheet's first rows from its cell records, and its rows
//! used from its DIMENSIONS; of the shared strings, those the sampled
//! cells name, in one pass over the SST and its CONTINUE records.

use std::collections::BTreeMap;

use super::cfb::Cfb;
use super::{
    Cells, MAX_COLUMNS, MAX_SHEETS, Pending, Read, SAMPLE_ROWS, SheetCells, Styles, Value,
    error_text, grids, rk, sheet_name, wanted_strings,
};
use crate::read::Source;

/// The workbook stream read, at most.
const STREAM_CAP: u64 = 8 << 20;

fn u16_at(b: &[u8], at: usize) -> u16 {
    b.get(at..at + 2)
        .map_or(0, |s| u16::from_le_bytes([s[0], s[1]]))
}
fn u32_at(b: &[u8], at: usize) -> u32 {
    b.get(at..at + 4)
        .map_or(0, |s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}
fn f64_at(b: &[u8], at: usize) -> Option<f64> {
    Some(f64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// The records from `at`: (type, payload), until the stream's end.
fn records(stream: &[u8], mut at: usize) -> impl Iterator<Item = (u16, &[u8])> {
    std::iter::from_fn(move || {
        let head = stream.get(at..at + 4)?;
        let (kind, len) = (u16_at(head, 0), usize::from(u16_at(head, 2)));
        let data = stream.get(at + 4..(at + 4 + len).min(stream.len()))?;
        at += 4 + len;
        Some((kind, data))
    })
}

/// Characters of a BIFF string: 8-bit (latin-1) or UTF-16.
fn chars(b: &[u8], wide: bool, max: usize) -> String {
    if wide {
        let units: Vec<u16> = b
            .chunks_exact(2)
            .take(max)
            .map(|c| u16::from_le_bytes([c[0], c[1]]))
            .collect();
        String::from_utf16_lossy(&units)
    } else {
        b.iter().take(max).map(|&c| char::from(c)).collect()
    }
}

/// A string with a 16-bit length (`cch`) at `at`: BIFF8's flags byte
/// after it, BIFF5's 8-bit characters.
fn long_string(b: &[u8], at: usize, biff8: bool) -> String {
    let cch = usize::from(u16_at(b, at));
    if biff8 {
        let wide = b.get(at + 2).is_some_and(|f| f & 1 != 0);
        chars(
            b.get(at + 3..).unwrap_or(&[]),
            wide,
            cch.min(super::CELL_BYTES),
        )
    } else {
        chars(
            b.get(at + 2..).unwrap_or(&[]),
            false,
            cch.min(super::CELL_BYTES),
        )
    }
}

pub(super) fn read(src: &Source, notes: &mut Vec<String>) -> Result<Read, String> {
    let cfb = Cfb::open(src)?;
    let (stream, size) = cfb
        .stream("Workbook", STREAM_CAP)
        .or_else(|| cfb.stream("Book", STREAM_CAP))
        .ok_or("it holds no workbook stream")?;
    if size > STREAM_CAP {
        notes.push(format!(
            "its workbook is {}: the sheets after its first {} are not described",
            crate::bytes(size),
            crate::bytes(STREAM_CAP)
        ));
    }
    let biff8 = records(&stream, 0)
        .next()
        .is_some_and(|(kind, data)| kind == 0x0809 && u16_at(data, 0) == 0x0600);
    // The globals: sheets, shared strings, formats and styles.
    let mut sheets: Vec<(String, u32)> = Vec::new();
    let mut total = 0usize;
    let mut sst: Vec<&[u8]> = Vec::new();
    let mut in_sst = false;
    let mut styles = Styles::default();
    let mut date1904 = false;
    for (kind, data) in records(&stream, 0) {
        if kind != 0x003C {
            in_sst = false;
        }
        match kind {
            0x000A => break,
            0x002F => return Err("it is encrypted".into()),
            0x0085 if data.get(5) == Some(&0) => {
                total += 1;
                if sheets.len() < MAX_SHEETS {
                    let cch = usize::from(data.get(6).copied().unwrap_or(0));
                    let name = if biff8 {
                        let wide = data.get(7).is_some_and(|f| f & 1 != 0);
                        chars(data.get(8..).unwrap_or(&[]), wide, cch)
                    } else {
                        chars(data.get(7..).unwrap_or(&[]), false, cch)
                    };
                    sheets.push((sheet_name(&name), u32_at(data, 0)));
                }
            }
            0x00FC => {
                sst = vec![data.get(8..).unwrap_or(&[])];
                in_sst = true;
            }
            0x003C if in_sst => sst.push(data),
            0x041E | 0x001E => {
                let id = u32::from(u16_at(data, 0));
                let code = if biff8 {
                    long_string(data, 2, true)
                } else {
                    let cch = usize::from(data.get(2).copied().unwrap_or(0));
                    chars(data.get(3..).unwrap_or(&[]), false, cch)
                };
                styles.add_format(id, &code);
            }
            0x00E0 => styles.add_style(u32::from(u16_at(data, 2))),
            0x0022 => date1904 = u16_at(data, 0) == 1,
            _ => {}
        }
    }
    let mut read: Vec<SheetCells> = Vec::new();
    for (name, at) in sheets {
        let (rows, cells) = sheet(&stream, at as usize, biff8, &styles);
        read.push((name, rows, cells));
    }
    let strings = shared_strings(&sst, wanted_strings(&read));
    Ok(Read {
        sheets: grids(read, &strings, date1904),
        total_sheets: total,
    })
}

/// A sheet's substream from `at`: its rows used and its first rows' cells.
fn sheet(stream: &[u8], at: usize, biff8: bool, styles: &Styles) -> (Option<u64>, Cells) {
    let mut rows = None;
    let mut origin = (0u64, 0u64);
    let mut cells = Vec::new();
    let mut formula_at: Option<(u64, u64)> = None;
    for (i, (kind, d)) in records(stream, at).enumerate() {
        if i == 0 && kind != 0x0809 {
            break;
        }
        let (r, c, xf) = (u16_at(d, 0), u16_at(d, 2), usize::from(u16_at(d, 4)));
        match kind {
            0x000A => break,
            0x0200 => {
                let (first, last, col) = if biff8 {
                    (
                        u64::from(u32_at(d, 0)),
                        u64::from(u32_at(d, 4)),
                        u16_at(d, 8),
                    )
                } else {
                    (
                        u64::from(u16_at(d, 0)),
                        u64::from(u16_at(d, 2)),
                        u16_at(d, 4),
                    )
                };
                rows = Some(last.saturating_sub(first));
                origin = (first, u64::from(col));
            }
            0x0203 => {
                if let Some(f) = f64_at(d, 6) {
                    push(
                        &mut cells,
                        origin,
                        r,
                        c,
                        Pending::Value(styles.number(xf, f)),
                    );
                }
            }
            0x027E => push(
                &mut cells,
                origin,
                r,
                c,
                Pending::Value(styles.number(xf, rk(u32_at(d, 6)))),
            ),
            0x00BD => {
                for (k, one) in d
                    .get(4..d.len().saturating_sub(2))
                    .unwrap_or(&[])
                    .chunks_exact(6)
                    .enumerate()
                {
                    let v = styles.number(usize::from(u16_at(one, 0)), rk(u32_at(one, 2)));
                    let col = c.saturating_add(u16::try_from(k).unwrap_or(u16::MAX));
                    push(&mut cells, origin, r, col, Pending::Value(v));
                }
            }
            0x00FD => push(
                &mut cells,
                origin,
                r,
                c,
                Pending::Shared(u64::from(u32_at(d, 6))),
            ),
            0x0204 | 0x00D6 => push(
                &mut cells,
                origin,
                r,
                c,
                Pending::Value(Value::Text(long_string(d, 6, biff8))),
            ),
            0x0205 => {
                let v = match (d.get(6).copied(), d.get(7).copied()) {
                    (Some(b), Some(0)) => Value::Bool(b != 0),
                    (Some(e), _) => Value::Error(error_text(e)),
                    _ => Value::Empty,
                };
                push(&mut cells, origin, r, c, Pending::Value(v));
            }
            0x0006 => {
                let result = d.get(6..14).unwrap_or(&[0; 8]);
                if result[6..8] == [0xFF, 0xFF] {
                    let v = match result[0] {
                        0 => {
                            // The string comes in the STRING record that follows.
                            formula_at = Some((u64::from(r), u64::from(c)));
                            continue;
                        }
                        1 => Value::Bool(result[2] != 0),
                        2 => Value::Error(error_text(result[2])),
                        _ => Value::Empty,
                    };
                    push(&mut cells, origin, r, c, Pending::Value(v));
                } else if let Some(f) = f64_at(result, 0) {
                    push(
                        &mut cells,
                        origin,
                        r,
                        c,
                        Pending::Value(styles.number(xf, f)),
                    );
                }
            }
            0x0207 => {
                if let Some((fr, fc)) = formula_at.take() {
                    let text = long_string(d, 0, biff8);
                    let (fr, fc) = (
                        u16::try_from(fr).unwrap_or(u16::MAX),
                        u16::try_from(fc).unwrap_or(u16::MAX),
                    );
                    push(
                        &mut cells,
                        origin,
                        fr,
                        fc,
                        Pending::Value(Value::Text(text)),
                    );
                }
            }
            _ => {}
        }
    }
    (rows, cells)
}

/// Keep a cell of the sheet's first rows and columns (from its origin).
fn push(cells: &mut Cells, origin: (u64, u64), r: u16, c: u16, p: Pending) {
    let (r, c) = (
        u64::from(r).saturating_sub(origin.0),
        u64::from(c).saturating_sub(origin.1),
    );
    if r < u64::from(SAMPLE_ROWS) && c < u64::from(MAX_COLUMNS) {
        cells.push((r, c, p));
    }
}

/// The shared strings at the `wanted` indexes, from the SST's pieces (the
/// record and its CONTINUEs): one pass that stops after the last wanted.
fn shared_strings(pieces: &[&[u8]], wanted: Vec<u64>) -> BTreeMap<u64, String> {
    let mut out = BTreeMap::new();
    let Some(&last) = wanted.last() else {
        return out;
    };
    let mut cur = Cursor {
        pieces,
        piece: 0,
        at: 0,
    };
    let mut index = 0u64;
    while index <= last {
        let (Some(cch), Some(flags)) = (cur.u16(), cur.byte()) else {
            break;
        };
        let runs = if flags & 0x08 != 0 {
            cur.u16()
        } else {
            Some(0)
        };
        let ext = if flags & 0x04 != 0 {
            cur.u32()
        } else {
            Some(0)
        };
        let (Some(runs), Some(ext)) = (runs, ext) else {
            break;
        };
        let keep = wanted.binary_search(&index).is_ok();
        let Some(text) = cur.chars(usize::from(cch), flags & 1 != 0, keep) else {
            break;
        };
        if keep {
            out.insert(index, text);
        }
        if !cur.skip(usize::from(runs) * 4 + ext as usize) {
            break;
        }
        index += 1;
    }
    out
}

/// Reading across the SST's pieces: a string's characters cut at a piece's
/// end go on after a flags byte (8-bit or UTF-16 from there).
struct Cursor<'a> {
    pieces: &'a [&'a [u8]],
    piece: usize,
    at: usize,
}

impl Cursor<'_> {
    fn current(&mut self) -> Option<&[u8]> {
        while self.at >= self.pieces.get(self.piece)?.len() {
            self.piece += 1;
            self.at = 0;
        }
        self.pieces.get(self.piece).map(|p| &p[self.at..])
    }

    fn byte(&mut self) -> Option<u8> {
        let b = *self.current()?.first()?;
        self.at += 1;
        Some(b)
    }

    fn u16(&mut self) -> Option<u16> {
        Some(u16::from_le_bytes([self.byte()?, self.byte()?]))
    }

    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes([
            self.byte()?,
            self.byte()?,
            self.byte()?,
            self.byte()?,
        ]))
    }

    fn skip(&mut self, mut n: usize) -> bool {
        while n > 0 {
            let Some(rest) = self.current() else {
                return false;
            };
            let step = rest.len().min(n);
            self.at += step;
            n -= step;
        }
        true
    }

    /// `count` characters (kept, up to `CELL_BYTES`, when `keep`).
    fn chars(&mut self, mut count: usize, mut wide: bool, keep: bool) -> Option<String> {
        let mut text = String::new();
        loop {
            let rest = self.pieces.get(self.piece)?.get(self.at..)?;
            let unit = if wide { 2 } else { 1 };
            let n = (rest.len() / unit).min(count);
            if keep && text.len() < super::CELL_BYTES {
                text.push_str(&chars(&rest[..n * unit], wide, super::CELL_BYTES));
            }
            self.at += n * unit;
            count -= n;
            if count == 0 {
                return Some(text);
            }
            // The piece ended inside the string: the next begins with a
            // flags byte saying how its characters are stored.
            self.piece += 1;
            let flags = *self.pieces.get(self.piece)?.first()?;
            self.at = 1;
            wide = flags & 1 != 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_string_cut_across_continue_records_reads_whole() {
        // "ab" (8-bit) then, after CONTINUE's flags byte, "cd" in UTF-16.
        let sst: &[u8] = &[4, 0, 0, b'a', b'b'];
        let cont: &[u8] = &[1, b'c', 0, b'd', 0, 1, 0, 0, b'z'];
        let s = shared_strings(&[sst, cont], vec![0, 1]);
        assert_eq!(s.get(&0).map(String::as_str), Some("abcd"));
        assert_eq!(s.get(&1).map(String::as_str), Some("z"));
    }
}
