//! xlsb (BIFF12 records in a ZIP): the sheet list from `workbook.bin`,
//! the number formats and cell styles, each described sheet's first rows
//! from its cell records and its rows used from `BrtWsDim`, and of the
//! shared strings those the sampled cells name. A record longer than
//! `MAX_RECORD` is skipped unread, whatever length it states.

use std::collections::BTreeMap;
use std::io::Read as _;

use super::xlsx;
use super::zip::Zip;
use super::{
    Cells, MAX_COLUMNS, MAX_SHEETS, Pending, Read, SAMPLE_ROWS, SheetCells, Styles, Value,
    error_text, grids, rk, sheet_name, wanted_strings,
};
use crate::read::Source;

/// A part read, at most (inflated bytes), and one record's payload kept.
const PART_CAP: u64 = 32 << 20;
const MAX_RECORD: usize = 1 << 16;

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

/// An `XLWideString` at `at`: its text (cut) and the bytes it takes.
fn wide_string(b: &[u8], at: usize) -> (String, usize) {
    let cch = u32_at(b, at) as usize;
    let bytes = b.get(at + 4..).unwrap_or(&[]);
    let n = cch.min(bytes.len() / 2);
    let units: Vec<u16> = bytes[..n * 2]
        .chunks_exact(2)
        .take(super::CELL_BYTES)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect();
    (String::from_utf16_lossy(&units), 4 + n * 2)
}

/// BIFF12 records read one at a time from a part.
struct Records<R> {
    r: R,
    data: Vec<u8>,
}

impl<R: std::io::Read> Records<R> {
    fn byte(&mut self) -> Option<u8> {
        let mut b = [0u8];
        self.r.read_exact(&mut b).ok()?;
        Some(b[0])
    }

    /// A variable-length number of at most `bytes` bytes, 7 bits each.
    fn varint(&mut self, bytes: u32) -> Option<u32> {
        let mut v = 0u32;
        for i in 0..bytes {
            let b = self.byte()?;
            v |= u32::from(b & 0x7F) << (7 * i);
            if b & 0x80 == 0 {
                break;
            }
        }
        Some(v)
    }

    /// The next record's type; its payload in `self.data` (empty when
    /// longer than `MAX_RECORD`, skipped).
    fn next(&mut self) -> Option<u32> {
        let kind = self.varint(2)?;
        let len = self.varint(4)? as usize;
        self.data.clear();
        if len > MAX_RECORD {
            let skipped =
                std::io::copy(&mut (&mut self.r).take(len as u64), &mut std::io::sink()).ok()?;
            return (skipped == len as u64).then_some(kind);
        }
        self.data.resize(len, 0);
        self.r.read_exact(&mut self.data).ok()?;
        Some(kind)
    }
}

fn records<'a>(zip: &Zip<'a>, path: &str) -> Result<Records<Box<dyn std::io::Read + 'a>>, String> {
    Ok(Records {
        r: zip.part(path, PART_CAP)?,
        data: Vec::new(),
    })
}

pub(super) fn read(src: &Source, notes: &mut Vec<String>) -> Result<Read, String> {
    let zip = Zip::open(src)?;
    let workbook = xlsx::workbook_path(&zip, "xl/workbook.bin");
    let rels = xlsx::relationships(&zip, &workbook);
    let mut listed: Vec<(String, String)> = Vec::new();
    let mut total = 0usize;
    let mut date1904 = false;
    let mut recs = records(&zip, &workbook)?;
    while let Some(kind) = recs.next() {
        match kind {
            0x0099 => date1904 = u32_at(&recs.data, 0) & 1 != 0,
            0x009C => {
                total += 1;
                if listed.len() < MAX_SHEETS {
                    let (id, used) = wide_string(&recs.data, 8);
                    let (name, _) = wide_string(&recs.data, 8 + used);
                    listed.push((sheet_name(&name), id));
                }
            }
            _ => {}
        }
    }
    let mut styles = Styles::default();
    if let Some(path) = xlsx::target_of(&rels, "/styles")
        && let Ok(mut recs) = records(&zip, &path)
    {
        let mut in_cell_xfs = false;
        while let Some(kind) = recs.next() {
            match kind {
                0x002C => {
                    let (code, _) = wide_string(&recs.data, 2);
                    styles.add_format(u32::from(u16_at(&recs.data, 0)), &code);
                }
                0x0269 => in_cell_xfs = true,
                0x026A => in_cell_xfs = false,
                0x002F if in_cell_xfs => styles.add_style(u32::from(u16_at(&recs.data, 2))),
                _ => {}
            }
        }
    }
    let mut read: Vec<SheetCells> = Vec::new();
    for (name, id) in listed {
        let path = rels
            .iter()
            .find(|(i, _, _)| *i == id)
            .map(|(_, _, t)| t.clone());
        let (rows, cells) = match path.map(|p| sheet(&zip, &p, &styles)) {
            Some(Ok(s)) => s,
            Some(Err(e)) => {
                notes.push(format!("sheet \"{name}\" not read: {e}"));
                (None, Vec::new())
            }
            None => (None, Vec::new()),
        };
        read.push((name, rows, cells));
    }
    let wanted = wanted_strings(&read);
    let mut strings = BTreeMap::new();
    if let (Some(&last), Some(path)) = (wanted.last(), xlsx::target_of(&rels, "/sharedStrings"))
        && let Ok(mut recs) = records(&zip, &path)
    {
        let mut index = 0u64;
        while index <= last {
            let Some(kind) = recs.next() else { break };
            if kind == 0x0013 {
                if wanted.binary_search(&index).is_ok() {
                    strings.insert(index, wide_string(&recs.data, 1).0);
                }
                index += 1;
            }
        }
    }
    Ok(Read {
        sheets: grids(read, &strings, date1904),
        total_sheets: total,
    })
}

/// A sheet's rows used and its first rows' cells.
fn sheet(zip: &Zip, path: &str, styles: &Styles) -> Result<(Option<u64>, Cells), String> {
    let mut recs = records(zip, path)?;
    let mut rows = None;
    let mut origin: Option<(u64, u64)> = None;
    let mut row = 0u64;
    let mut cells = Vec::new();
    while let Some(kind) = recs.next() {
        let d = &recs.data;
        let col = u64::from(u32_at(d, 0));
        let style = (u32_at(d, 4) & 0x00FF_FFFF) as usize;
        let value = match kind {
            0x0094 => {
                let (first, last) = (u64::from(u32_at(d, 0)), u64::from(u32_at(d, 4)));
                rows = Some(last.saturating_sub(first) + 1);
                origin = Some((first, u64::from(u32_at(d, 8))));
                continue;
            }
            0x0000 => {
                row = u64::from(u32_at(d, 0));
                let start = origin.get_or_insert((row, 0)).0;
                if row.saturating_sub(start) >= u64::from(SAMPLE_ROWS) {
                    break;
                }
                continue;
            }
            0x0092 => break,
            0x0001 => Pending::Value(Value::Empty),
            0x0002 => Pending::Value(styles.number(style, rk(u32_at(d, 8)))),
            0x0003 | 0x000B => {
                Pending::Value(Value::Error(error_text(d.get(8).copied().unwrap_or(0))))
            }
            0x0004 | 0x000A => Pending::Value(Value::Bool(d.get(8).is_some_and(|&b| b != 0))),
            0x0005 | 0x0009 => match f64_at(d, 8) {
                Some(f) => Pending::Value(styles.number(style, f)),
                None => continue,
            },
            0x0006 | 0x0008 => Pending::Value(Value::Text(wide_string(d, 8).0)),
            0x0007 => Pending::Shared(u64::from(u32_at(d, 8))),
            _ => continue,
        };
        let (r0, c0) = origin.unwrap_or((0, 0));
        let (r, c) = (row.saturating_sub(r0), col.saturating_sub(c0));
        if r < u64::from(SAMPLE_ROWS) && c < u64::from(MAX_COLUMNS) {
            cells.push((r, c, value));
        }
    }
    Ok((rows, cells))
}
