//! xlsx and xlsm (Office Open XML): the workbook's sheet list, each
//! described sheet's first rows streamed cell by cell, the number formats
//! (which cells are dates), and of the shared strings only those the
//! sampled cells name, found in one streamed pass.

use std::collections::BTreeMap;

use super::xml::{Tok, Xml, attr};
use super::zip::Zip;
use super::{
    Cells, Grid, MAX_COLUMNS, MAX_SHEETS, Pending, Read, SAMPLE_ROWS, SheetCells, Styles, Value,
    grids, push_cut, sheet_name, wanted_strings,
};
use crate::read::Source;

/// How much of a part is inflated and read, at most (bytes): a sheet
/// (until its first rows are read), the shared strings (until the last one
/// named is found), anything else.
const SHEET_CAP: u64 = 16 << 20;
const STRINGS_CAP: u64 = 8 << 20;
const PART_CAP: u64 = 4 << 20;
/// Relationships kept of one part, at most.
const MAX_RELS: usize = 4096;

struct SheetRead {
    rows: Option<u64>,
    cells: Cells,
}

/// `A1`-style reference to (row, column), both from 0.
fn cell_ref(r: &str) -> Option<(u64, u64)> {
    let letters = r.bytes().take_while(u8::is_ascii_alphabetic).count();
    if letters == 0 || letters > 3 {
        return None;
    }
    let mut col = 0u64;
    for b in r[..letters].bytes() {
        col = col * 26 + u64::from(b.to_ascii_uppercase() - b'A' + 1);
    }
    let row: u64 = r[letters..].parse().ok()?;
    Some((row.checked_sub(1)?, col - 1))
}

/// A part's path from `base` (a part's own path) and a relationship's target.
fn resolve(base: &str, target: &str) -> String {
    if let Some(abs) = target.strip_prefix('/') {
        return abs.to_string();
    }
    let mut parts: Vec<&str> = base.split('/').collect();
    parts.pop();
    for piece in target.split('/') {
        match piece {
            ".." => {
                parts.pop();
            }
            "." | "" => {}
            p => parts.push(p),
        }
    }
    parts.join("/")
}

/// The relationships file of the part at `path`.
fn rels_of(path: &str) -> String {
    match path.rsplit_once('/') {
        Some((dir, file)) => format!("{dir}/_rels/{file}.rels"),
        None => format!("_rels/{path}.rels"),
    }
}

/// Each relationship of the part at `path`: (id, type, resolved target).
pub(super) fn relationships(zip: &Zip, path: &str) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    let Ok(part) = zip.part(&rels_of(path), PART_CAP) else {
        return out;
    };
    let mut xml = Xml::new(part);
    while out.len() < MAX_RELS {
        match xml.next() {
            Ok(Tok::Start { name, attrs, .. }) if name == "Relationship" => {
                if attr(&attrs, "TargetMode") == Some("External") {
                    continue;
                }
                if let (Some(id), Some(kind), Some(target)) = (
                    attr(&attrs, "Id"),
                    attr(&attrs, "Type"),
                    attr(&attrs, "Target"),
                ) {
                    out.push((id.to_string(), kind.to_string(), resolve(path, target)));
                }
            }
            Ok(Tok::Eof) | Err(_) => break,
            Ok(_) => {}
        }
    }
    out
}

/// The target of the first relationship whose type ends with `kind`.
pub(super) fn target_of(rels: &[(String, String, String)], kind: &str) -> Option<String> {
    rels.iter()
        .find(|(_, t, _)| t.ends_with(kind))
        .map(|(_, _, target)| target.clone())
}

/// The workbook part, as the package's relationships name it.
pub(super) fn workbook_path(zip: &Zip, otherwise: &str) -> String {
    target_of(&relationships(zip, ""), "/officeDocument")
        .filter(|p| zip.has(p))
        .unwrap_or_else(|| otherwise.to_string())
}

pub(super) fn read(src: &Source, notes: &mut Vec<String>) -> Result<Read, String> {
    let zip = Zip::open(src)?;
    let workbook = workbook_path(&zip, "xl/workbook.xml");
    let rels = relationships(&zip, &workbook);
    // The sheets in the workbook's order, and whether dates count from 1904.
    let mut listed: Vec<(String, Option<String>)> = Vec::new();
    let mut total = 0usize;
    let mut date1904 = false;
    let mut xml = Xml::new(zip.part(&workbook, PART_CAP)?);
    loop {
        match xml.next()? {
            Tok::Start { name, attrs, .. } if name == "sheet" => {
                total += 1;
                if listed.len() < MAX_SHEETS {
                    let shown = sheet_name(attr(&attrs, "name").unwrap_or("?"));
                    listed.push((shown, attr(&attrs, "id").map(str::to_string)));
                }
            }
            Tok::Start { name, attrs, .. } if name == "workbookPr" => {
                date1904 = matches!(attr(&attrs, "date1904"), Some("1" | "true"));
            }
            Tok::Eof => break,
            _ => {}
        }
    }
    let styles = target_of(&rels, "/styles")
        .map(|p| styles(&zip, &p))
        .unwrap_or_default();
    let mut read: Vec<SheetCells> = Vec::new();
    for (name, id) in listed {
        let path = id
            .and_then(|id| rels.iter().find(|(i, _, _)| *i == id))
            .map(|(_, _, t)| t.clone());
        let sheet = match path {
            Some(p) => worksheet(&zip, &p, &styles).unwrap_or_else(|e| {
                notes.push(format!("sheet \"{name}\" not read: {e}"));
                SheetRead {
                    rows: None,
                    cells: Vec::new(),
                }
            }),
            None => SheetRead {
                rows: None,
                cells: Vec::new(),
            },
        };
        read.push((name, sheet.rows, sheet.cells));
    }
    // The shared strings the sampled cells name, looked up in one pass.
    let wanted = wanted_strings(&read);
    let strings = match target_of(&rels, "/sharedStrings") {
        Some(p) if !wanted.is_empty() => shared_strings(&zip, &p, wanted, notes),
        _ => BTreeMap::new(),
    };
    Ok(Read {
        sheets: grids(read, &strings, date1904),
        total_sheets: total,
    })
}

/// The number formats and the cell styles that name them (`cellXfs`).
fn styles(zip: &Zip, path: &str) -> Styles {
    let mut styles = Styles::default();
    let Ok(part) = zip.part(path, PART_CAP) else {
        return styles;
    };
    let mut xml = Xml::new(part);
    let mut in_cell_xfs = false;
    loop {
        match xml.next() {
            Ok(Tok::Start { name, attrs, empty }) => match name.as_str() {
                "numFmt" => {
                    if let (Some(id), Some(code)) = (
                        attr(&attrs, "numFmtId").and_then(|i| i.parse().ok()),
                        attr(&attrs, "formatCode"),
                    ) {
                        styles.add_format(id, code);
                    }
                }
                "cellXfs" => in_cell_xfs = !empty,
                "xf" if in_cell_xfs => {
                    let id = attr(&attrs, "numFmtId")
                        .and_then(|i| i.parse().ok())
                        .unwrap_or(0);
                    styles.add_style(id);
                }
                _ => {}
            },
            Ok(Tok::End(name)) if name == "cellXfs" => in_cell_xfs = false,
            Ok(Tok::Eof) | Err(_) => return styles,
            Ok(_) => {}
        }
    }
}

/// A worksheet's rows used (from its `<dimension>`) and its first rows' cells.
fn worksheet(zip: &Zip, path: &str, styles: &Styles) -> Result<SheetRead, String> {
    let mut xml = Xml::new(zip.part(path, SHEET_CAP)?);
    let mut out = SheetRead {
        rows: None,
        cells: Vec::new(),
    };
    // The sheet's first row and column (its dimension's, else the first seen).
    let mut origin: Option<(u64, u64)> = None;
    let mut row = 0u64;
    let mut col = 0u64;
    // The cell being read: its type, style, position and text.
    let mut cell: Option<(String, usize, u64, u64)> = None;
    let mut text = String::new();
    let mut in_text = false;
    let mut in_phonetic = false;
    loop {
        let tok = match xml.next() {
            Ok(t) => t,
            // A sheet cut or damaged after its first rows still tells them.
            Err(_) if !out.cells.is_empty() => return Ok(out),
            Err(e) => return Err(e),
        };
        match tok {
            Tok::Start { name, attrs, empty } => match name.as_str() {
                "dimension" => {
                    if let Some(r) = attr(&attrs, "ref") {
                        let mut ends = r.split(':').filter_map(cell_ref);
                        if let Some(first) = ends.next() {
                            let last = ends.next().unwrap_or(first);
                            out.rows = Some(last.0.saturating_sub(first.0) + 1);
                            origin.get_or_insert(first);
                        }
                    }
                }
                "row" => {
                    row = attr(&attrs, "r")
                        .and_then(|r| r.parse::<u64>().ok())
                        .and_then(|r| r.checked_sub(1))
                        .unwrap_or(row + 1);
                    col = 0;
                    let start = origin.get_or_insert((row, 0)).0;
                    if !Grid::wants_row(row.saturating_sub(start)) {
                        return Ok(out);
                    }
                }
                "c" => {
                    if let Some((r, c)) = attr(&attrs, "r").and_then(cell_ref) {
                        row = r;
                        col = c;
                    }
                    let kind = attr(&attrs, "t").unwrap_or("n").to_string();
                    let style = attr(&attrs, "s").and_then(|s| s.parse().ok()).unwrap_or(0);
                    text.clear();
                    if empty {
                        col += 1;
                    } else {
                        cell = Some((kind, style, row, col));
                    }
                }
                "v" | "t" if cell.is_some() && !in_phonetic && !empty => in_text = true,
                "rPh" if !empty => in_phonetic = true,
                _ => {}
            },
            Tok::Text(t) if in_text => push_cut(&mut text, &t),
            Tok::End(name) => match name.as_str() {
                "v" | "t" => in_text = false,
                "rPh" => in_phonetic = false,
                "c" => {
                    if let Some((kind, style, r, c)) = cell.take() {
                        let (r0, c0) = origin.unwrap_or((0, 0));
                        let (r, c) = (r.saturating_sub(r0), c.saturating_sub(c0));
                        if r < u64::from(SAMPLE_ROWS) && c < u64::from(MAX_COLUMNS) {
                            out.cells.push((r, c, pending(&kind, style, &text, styles)));
                        }
                        col += 1;
                    }
                }
                "sheetData" => return Ok(out),
                _ => {}
            },
            Tok::Eof => return Ok(out),
            Tok::Text(_) => {}
        }
    }
}

/// A cell's value by its type (`t`), style and text.
fn pending(kind: &str, style: usize, text: &str, styles: &Styles) -> Pending {
    let text = text.trim();
    Pending::Value(match kind {
        "s" => {
            return match text.parse() {
                Ok(i) => Pending::Shared(i),
                Err(_) => Pending::Value(Value::Empty),
            };
        }
        "str" | "inlineStr" => Value::Text(text.to_string()),
        "b" => Value::Bool(text == "1" || text.eq_ignore_ascii_case("true")),
        "e" => Value::Error(text.to_string()),
        "d" => Value::DateText(text.to_string()),
        _ if text.is_empty() => Value::Empty,
        _ => match text.parse::<f64>() {
            Ok(f) => styles.number(style, f),
            Err(_) => Value::Text(text.to_string()),
        },
    })
}

/// The shared strings at the `wanted` indexes, in one pass that stops at
/// the last of them (or at `STRINGS_CAP` inflated bytes).
fn shared_strings(
    zip: &Zip,
    path: &str,
    wanted: Vec<u64>,
    notes: &mut Vec<String>,
) -> BTreeMap<u64, String> {
    let mut out = BTreeMap::new();
    let Some(&last) = wanted.last() else {
        return out;
    };
    let Ok(part) = zip.part(path, STRINGS_CAP) else {
        return out;
    };
    let mut xml = Xml::new(part);
    let mut index = 0u64;
    let mut text = String::new();
    let (mut in_si, mut in_t, mut in_phonetic) = (false, false, false);
    loop {
        match xml.next() {
            Ok(Tok::Start { name, empty, .. }) => match name.as_str() {
                "si" if empty => index += 1,
                "si" => {
                    in_si = true;
                    text.clear();
                }
                "t" if in_si && !in_phonetic && !empty => in_t = true,
                "rPh" if !empty => in_phonetic = true,
                _ => {}
            },
            Ok(Tok::Text(t)) if in_t => push_cut(&mut text, &t),
            Ok(Tok::End(name)) => match name.as_str() {
                "t" => in_t = false,
                "rPh" => in_phonetic = false,
                "si" => {
                    if wanted.binary_search(&index).is_ok() {
                        out.insert(index, std::mem::take(&mut text));
                    }
                    in_si = false;
                    index += 1;
                    if index > last {
                        return out;
                    }
                }
                _ => {}
            },
            Ok(Tok::Eof) => break,
            Err(e) => {
                notes.push(format!("its shared strings could not all be read: {e}"));
                return out;
            }
            Ok(_) => {}
        }
    }
    if index <= last {
        notes.push(format!(
            "some cells name shared strings past the {} read",
            crate::render::count(crate::Count::exact(index), "strings")
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_and_paths() {
        assert_eq!(cell_ref("A1"), Some((0, 0)));
        assert_eq!(cell_ref("AB12"), Some((11, 27)));
        assert_eq!(cell_ref("XFD1048576"), Some((1_048_575, 16_383)));
        assert_eq!(cell_ref("1A"), None);
        assert_eq!(
            resolve("xl/workbook.xml", "worksheets/sheet1.xml"),
            "xl/worksheets/sheet1.xml"
        );
        assert_eq!(resolve("xl/workbook.xml", "/xl/s.xml"), "xl/s.xml");
        assert_eq!(resolve("xl/worksheets/a.xml", "../b.xml"), "xl/b.xml");
        assert_eq!(rels_of("xl/workbook.xml"), "xl/_rels/workbook.xml.rels");
        assert_eq!(rels_of(""), "_rels/.rels");
    }
}
