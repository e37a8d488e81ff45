//! Spreadsheets (xlsx, xlsm, xlsb, xls, ods): the sheets, each one's used
//! rows and its columns typed from the first rows, by readers of each
//! format's own written here (`excel/`) that keep only what a description
//! needs and trust no count, size or depth the file states: a sheet's
//! first `SAMPLE_ROWS` rows of `MAX_COLUMNS` columns are placed, whatever
//! the file says its rows repeat or its shared strings number; a shared
//! string is kept only where one of those cells names it; every part is
//! read through a cap of what it may inflate to; a count the file states
//! (rows used) is a number said, never a size allocated.

mod cfb;
mod ods;
mod xls;
mod xlsb;
mod xlsx;
mod xml;
mod zip;

use crate::cell::{self, CellKind, ColumnBuilder};
use crate::read::Source;
use crate::{Column, Sheet, What, Workbook};

/// Sheets described, at most, and rows and columns sampled in each.
const MAX_SHEETS: usize = 12;
const SAMPLE_ROWS: u32 = 50;
const MAX_COLUMNS: u32 = 64;
/// A cell's text kept, at most (bytes); the samples are cut shorter still.
const CELL_BYTES: usize = 256;

const OLE: &[u8] = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1";

pub(crate) fn is_workbook(head: &[u8], ext: &str) -> bool {
    let zip = head.starts_with(b"PK\x03\x04");
    match ext {
        "xlsx" | "xlsm" | "xlsb" | "ods" => zip,
        "xls" => head.starts_with(OLE),
        _ => false,
    }
}

/// One cell's value as a format stores it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Value {
    Empty,
    Number(f64),
    /// A serial date (days since the workbook's epoch), a number formatted
    /// as a date.
    Serial(f64),
    /// A date or time written out (ODS, xlsx's `t="d"`).
    DateText(String),
    Text(String),
    Bool(bool),
    Error(String),
}

/// The first rows of a sheet: cells placed at their row and column from
/// the sheet's start, within `SAMPLE_ROWS` × `MAX_COLUMNS`.
#[derive(Debug, Default)]
pub(crate) struct Grid {
    rows: Vec<Vec<(String, CellKind)>>,
    date1904: bool,
}

impl Grid {
    fn new(date1904: bool) -> Grid {
        Grid {
            rows: Vec::new(),
            date1904,
        }
    }

    /// Whether a cell at `row` (from the sheet's start) would be placed.
    fn wants_row(row: u64) -> bool {
        row < u64::from(SAMPLE_ROWS)
    }

    /// Put a cell into the grid; one out of its bounds, or empty (as if
    /// absent: an empty cell widens nothing), is dropped.
    fn place(&mut self, row: u64, col: u64, value: &Value) {
        if row >= u64::from(SAMPLE_ROWS) || col >= u64::from(MAX_COLUMNS) || *value == Value::Empty
        {
            return;
        }
        let (r, c) = (row as usize, col as usize);
        if self.rows.len() <= r {
            self.rows.resize_with(r + 1, Vec::new);
        }
        let line = &mut self.rows[r];
        if line.len() <= c {
            line.resize(c + 1, (String::new(), CellKind::Empty));
        }
        line[c] = cell_of(value, self.date1904);
    }
}

/// A cell as text and kind.
fn cell_of(v: &Value, date1904: bool) -> (String, CellKind) {
    match v {
        Value::Empty => (String::new(), CellKind::Empty),
        Value::Number(f) => (number_text(*f), CellKind::Float),
        Value::Serial(f) => serial_date(*f, date1904),
        Value::DateText(s) => {
            let s = cut(s);
            let kind = match cell::infer(&s) {
                k @ (CellKind::Date | CellKind::Datetime) => k,
                _ => CellKind::Text,
            };
            (s, kind)
        }
        Value::Text(s) => {
            let s = cut(s);
            let kind = text_kind(&s);
            (s, kind)
        }
        Value::Bool(b) => (b.to_string(), CellKind::Bool),
        Value::Error(e) => (cut(e), CellKind::Text),
    }
}

/// At most `CELL_BYTES` of `s`, on a character boundary.
fn cut(s: &str) -> String {
    if s.len() <= CELL_BYTES {
        return s.to_string();
    }
    let mut end = CELL_BYTES;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_string()
}

/// Keep at most `CELL_BYTES` in `s` while text is appended to it.
fn push_cut(s: &mut String, more: &str) {
    if s.len() >= CELL_BYTES {
        return;
    }
    let mut end = more.len().min(CELL_BYTES - s.len());
    while !more.is_char_boundary(end) {
        end -= 1;
    }
    s.push_str(&more[..end]);
}

/// A number as a spreadsheet shows it: 12 rather than 12.0.
fn number_text(f: f64) -> String {
    if f.is_finite() && f.fract() == 0.0 && f.abs() < 1e15 {
        format!("{}", f as i64)
    } else {
        f.to_string()
    }
}

/// Text in a cell stays text (a spreadsheet types its numbers itself),
/// unless it is a date written out.
fn text_kind(s: &str) -> CellKind {
    match cell::infer(s) {
        k @ (CellKind::Date | CellKind::Datetime | CellKind::Empty) => k,
        _ => CellKind::Text,
    }
}

/// A serial date as ISO text: days from 1899-12-30 (or 1904-01-01), the
/// fraction the time of day. A date alone when the fraction is none.
fn serial_date(serial: f64, date1904: bool) -> (String, CellKind) {
    if !serial.is_finite() || !(-1.0e6..=3.0e6).contains(&serial) {
        return (number_text(serial), CellKind::Float);
    }
    let offset = if date1904 { 24_107 } else { 25_569 };
    let whole = serial.floor();
    let days = whole as i64 - offset;
    let (y, m, d) = civil_from_days(days);
    let secs = ((serial - whole) * 86_400.0).round() as i64;
    if secs == 0 {
        return (format!("{y:04}-{m:02}-{d:02}"), CellKind::Date);
    }
    let (h, min, s) = (secs / 3600, secs / 60 % 60, secs % 60);
    (
        format!("{y:04}-{m:02}-{d:02} {h:02}:{min:02}:{s:02}"),
        CellKind::Datetime,
    )
}

/// Days since 1970-01-01 as (year, month, day) (Howard Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// Whether a number format shows a date or a time: the built-in ones by
/// their id, a format's own code by its letters (outside quotes, escapes
/// and brackets other than elapsed time).
fn is_date_format(id: u32, code: Option<&str>) -> bool {
    if let Some(code) = code {
        return is_date_code(code);
    }
    matches!(id, 14..=22 | 27..=36 | 45..=47 | 50..=58)
}

fn is_date_code(code: &str) -> bool {
    let mut chars = code.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                for q in chars.by_ref() {
                    if q == '"' {
                        break;
                    }
                }
            }
            '\\' | '_' | '*' => {
                chars.next();
            }
            '[' => {
                let mut inner = String::new();
                for q in chars.by_ref() {
                    if q == ']' {
                        break;
                    }
                    if inner.len() < 16 {
                        inner.push(q);
                    }
                }
                let lower = inner.to_ascii_lowercase();
                if !lower.is_empty() && lower.chars().all(|c| matches!(c, 'h' | 'm' | 's')) {
                    return true;
                }
            }
            ';' => return false,
            'd' | 'D' | 'm' | 'M' | 'y' | 'Y' | 'h' | 'H' | 's' | 'S' => return true,
            _ => {}
        }
    }
    false
}

/// The number formats of a workbook: which cell styles show a date.
#[derive(Debug, Default)]
struct Styles {
    /// A style's index to whether its format is a date (at most `MAX_STYLES`).
    date_styles: Vec<bool>,
    /// Formats of the workbook's own, by id: whether each shows a date.
    own_formats: Vec<(u32, bool)>,
}

/// Styles and formats kept, at most.
const MAX_STYLES: usize = 1 << 14;
const MAX_FORMATS: usize = 1 << 12;

impl Styles {
    fn add_format(&mut self, id: u32, code: &str) {
        if self.own_formats.len() < MAX_FORMATS {
            self.own_formats.push((id, is_date_code(code)));
        }
    }

    fn format_is_date(&self, id: u32) -> bool {
        match self.own_formats.iter().find(|(i, _)| *i == id) {
            Some((_, date)) => *date,
            None => is_date_format(id, None),
        }
    }

    /// A style naming format `id`, in order; false past `MAX_STYLES`.
    fn add_style(&mut self, format: u32) {
        if self.date_styles.len() < MAX_STYLES {
            let date = self.format_is_date(format);
            self.date_styles.push(date);
        }
    }

    fn is_date(&self, style: usize) -> bool {
        self.date_styles.get(style).copied().unwrap_or(false)
    }

    /// A number in a cell of `style`.
    fn number(&self, style: usize, f: f64) -> Value {
        if self.is_date(style) {
            Value::Serial(f)
        } else {
            Value::Number(f)
        }
    }
}

/// What a reader of one format gives: the first sheets' grids and how
/// many rows each says it uses, and the number of sheets in all.
struct Read {
    sheets: Vec<(String, Option<u64>, Grid)>,
    total_sheets: usize,
}

/// A cell read from a sheet, its shared string not yet looked up.
enum Pending {
    Value(Value),
    Shared(u64),
}

/// A sheet's sampled cells: (row, column, value) from its origin.
type Cells = Vec<(u64, u64, Pending)>;

/// A sheet as read: its name, the rows it says it uses, its cells.
type SheetCells = (String, Option<u64>, Cells);

/// The shared strings the sheets' cells name, sorted, each once.
fn wanted_strings(sheets: &[SheetCells]) -> Vec<u64> {
    let mut wanted: Vec<u64> = sheets
        .iter()
        .flat_map(|(_, _, cells)| cells.iter())
        .filter_map(|(_, _, p)| match p {
            Pending::Shared(i) => Some(*i),
            Pending::Value(_) => None,
        })
        .collect();
    wanted.sort_unstable();
    wanted.dedup();
    wanted
}

/// The sheets' grids, their shared strings looked up in `strings` (one not
/// found is empty text).
fn grids(
    sheets: Vec<SheetCells>,
    strings: &std::collections::BTreeMap<u64, String>,
    date1904: bool,
) -> Vec<(String, Option<u64>, Grid)> {
    sheets
        .into_iter()
        .map(|(name, rows, cells)| {
            let mut grid = Grid::new(date1904);
            for (r, c, p) in cells {
                let value = match p {
                    Pending::Value(v) => v,
                    Pending::Shared(i) => Value::Text(strings.get(&i).cloned().unwrap_or_default()),
                };
                grid.place(r, c, &value);
            }
            (name, rows, grid)
        })
        .collect()
}

/// An RK number (xls, xlsb): a 30-bit integer or the high bits of a
/// double, divided by 100 when its flag says.
fn rk(v: u32) -> f64 {
    let n = if v & 2 != 0 {
        f64::from((v as i32) >> 2)
    } else {
        f64::from_bits(u64::from(v & 0xFFFF_FFFC) << 32)
    };
    if v & 1 != 0 { n / 100.0 } else { n }
}

/// A cell error's code (xls, xlsb) as a spreadsheet shows it.
fn error_text(code: u8) -> String {
    match code {
        0x00 => "#NULL!",
        0x07 => "#DIV/0!",
        0x0F => "#VALUE!",
        0x17 => "#REF!",
        0x1D => "#NAME?",
        0x24 => "#NUM!",
        0x2A => "#N/A",
        _ => "#ERROR",
    }
    .to_string()
}

fn sheet(name: String, rows: Option<u64>, grid: Grid) -> Sheet {
    let grid = grid.rows;
    let strings: Vec<Vec<String>> = grid
        .iter()
        .map(|r| r.iter().map(|(s, _)| s.clone()).collect())
        .collect();
    let header = crate::table::has_header(&strings);
    let width = grid.iter().map(Vec::len).max().unwrap_or(0);
    let body = if header {
        &grid[1.min(grid.len())..]
    } else {
        &grid[..]
    };
    let mut builders: Vec<ColumnBuilder> = (0..width).map(|_| ColumnBuilder::default()).collect();
    for r in body {
        for (i, b) in builders.iter_mut().enumerate() {
            match r.get(i) {
                Some((s, k)) => b.add_kind(s, *k),
                None => b.add_kind("", CellKind::Empty),
            }
        }
    }
    let columns: Vec<Column> = builders
        .into_iter()
        .enumerate()
        .map(|(i, b)| {
            let name = match strings.first().and_then(|r| r.get(i)) {
                Some(n) if header => cell::sample(n),
                _ => format!("column {}", i + 1),
            };
            b.finish(name)
        })
        .collect();
    Sheet {
        name,
        rows,
        header,
        columns,
    }
}

/// The workbook, or None (with a note) when it cannot be read as one.
pub(crate) fn describe(src: &Source, ext: &str, notes: &mut Vec<String>) -> Option<What> {
    let read = match ext {
        "xlsx" | "xlsm" => xlsx::read(src, notes),
        "xlsb" => xlsb::read(src, notes),
        "ods" => ods::read(src, notes),
        _ => xls::read(src, notes),
    };
    match read {
        Ok(read) => {
            if read.total_sheets > read.sheets.len() {
                notes.push(format!(
                    "{} sheets; the first {} are described",
                    read.total_sheets,
                    read.sheets.len()
                ));
            }
            Some(What::Excel(Workbook {
                kind: ext.to_string(),
                sheets: read
                    .sheets
                    .into_iter()
                    .map(|(name, rows, grid)| sheet(name, rows, grid))
                    .collect(),
            }))
        }
        Err(e) => {
            notes.push(format!("not readable as a {ext} workbook: {e}"));
            None
        }
    }
}

/// A sheet's name as kept: cut short, on one line.
fn sheet_name(raw: &str) -> String {
    let s: String = raw
        .chars()
        .take(64)
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serial_dates_and_formats() {
        assert_eq!(
            serial_date(45322.0, false),
            ("2024-01-31".into(), CellKind::Date)
        );
        assert_eq!(
            serial_date(45322.5, false),
            ("2024-01-31 12:00:00".into(), CellKind::Datetime)
        );
        assert_eq!(serial_date(0.0, true).0, "1904-01-01");
        assert!(is_date_code("yyyy-mm-dd"));
        assert!(is_date_code("[h]:mm"));
        assert!(!is_date_code("0.00"));
        assert!(!is_date_code("\"days\" 0"));
        assert!(!is_date_code("[Red]0.00"));
        assert!(!is_date_code("General"));
        assert!(is_date_format(14, None));
        assert!(!is_date_format(2, None));
        assert_eq!(number_text(12.0), "12");
        assert_eq!(rk((7 << 2) | 2), 7.0);
        assert_eq!(rk((1234 << 2) | 3), 12.34);
        assert_eq!(rk((3.5f64.to_bits() >> 32) as u32), 3.5);
        assert_eq!(number_text(3.5), "3.5");
    }
}
