//! Spreadsheets (xlsx, xlsm, xlsb, xls, ods) through calamine: the sheets,
//! each one's used rows and its columns typed from the first rows. An xlsx
//! sheet is streamed cell by cell and only its first rows are read.

use std::path::Path;

use calamine::{Data, DataRef, Reader, Xlsx};

use crate::cell::{self, CellKind, ColumnBuilder};
use crate::{Column, EXACT_BYTES, Sheet, What, Workbook};

/// Sheets described, at most, and rows sampled in each.
const MAX_SHEETS: usize = 12;
const SAMPLE_ROWS: u32 = 50;
const MAX_COLUMNS: u32 = 64;

const OLE: &[u8] = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1";

pub(crate) fn is_workbook(head: &[u8], ext: &str) -> bool {
    let zip = head.starts_with(b"PK\x03\x04");
    match ext {
        "xlsx" | "xlsm" | "xlsb" | "ods" => zip,
        "xls" => head.starts_with(OLE),
        _ => false,
    }
}

type Grid = Vec<Vec<(String, CellKind)>>;

fn cell_of_ref(d: &DataRef) -> (String, CellKind) {
    match d {
        DataRef::Int(i) => (i.to_string(), CellKind::Int),
        DataRef::Float(f) => (f.to_string(), CellKind::Float),
        DataRef::String(s) => (s.clone(), text_kind(s)),
        DataRef::SharedString(s) => (s.to_string(), text_kind(s)),
        DataRef::Bool(b) => (b.to_string(), CellKind::Bool),
        DataRef::DateTime(d) => date_cell(d),
        DataRef::DateTimeIso(s) => (s.clone(), CellKind::Datetime),
        DataRef::DurationIso(s) => (s.clone(), CellKind::Text),
        DataRef::Error(e) => (format!("{e}"), CellKind::Text),
        DataRef::Empty => (String::new(), CellKind::Empty),
    }
}

fn cell_of(d: &Data) -> (String, CellKind) {
    match d {
        Data::Int(i) => (i.to_string(), CellKind::Int),
        Data::Float(f) => (f.to_string(), CellKind::Float),
        Data::String(s) => (s.clone(), text_kind(s)),
        Data::Bool(b) => (b.to_string(), CellKind::Bool),
        Data::DateTime(d) => date_cell(d),
        Data::DateTimeIso(s) => (s.clone(), CellKind::Datetime),
        Data::DurationIso(s) => (s.clone(), CellKind::Text),
        Data::Error(e) => (format!("{e}"), CellKind::Text),
        Data::Empty => (String::new(), CellKind::Empty),
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

fn date_cell(d: &calamine::ExcelDateTime) -> (String, CellKind) {
    let serial = d.as_f64();
    let kind = if d.is_datetime() && serial.fract() != 0.0 {
        CellKind::Datetime
    } else if d.is_datetime() {
        CellKind::Date
    } else {
        CellKind::Text
    };
    (d.to_string(), kind)
}

fn sheet(name: String, rows: Option<u64>, grid: Grid) -> Sheet {
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

/// Put a cell into the grid (rows and columns from the sheet's start).
fn place(grid: &mut Grid, row: u32, col: u32, cell: (String, CellKind)) {
    let (r, c) = (row as usize, col as usize);
    while grid.len() <= r {
        grid.push(Vec::new());
    }
    let line = &mut grid[r];
    while line.len() <= c {
        line.push((String::new(), CellKind::Empty));
    }
    line[c] = cell;
}

fn xlsx(path: &Path, notes: &mut Vec<String>) -> Result<Vec<Sheet>, String> {
    let mut wb: Xlsx<_> =
        calamine::open_workbook(path).map_err(|e: calamine::XlsxError| e.to_string())?;
    let names = wb.sheet_names();
    if names.len() > MAX_SHEETS {
        notes.push(format!(
            "{} sheets; the first {MAX_SHEETS} are described",
            names.len()
        ));
    }
    let mut sheets = Vec::new();
    for name in names.into_iter().take(MAX_SHEETS) {
        let mut reader = wb
            .worksheet_cells_reader(&name)
            .map_err(|e| e.to_string())?;
        let dims = reader.dimensions();
        let mut grid = Grid::new();
        while let Some(cell) = reader.next_cell().map_err(|e| e.to_string())? {
            let (row, col) = cell.get_position();
            let (row, col) = (
                row.saturating_sub(dims.start.0),
                col.saturating_sub(dims.start.1),
            );
            if row >= SAMPLE_ROWS {
                break;
            }
            if col < MAX_COLUMNS {
                place(&mut grid, row, col, cell_of_ref(cell.get_value()));
            }
        }
        let rows = (dims.len() > 0).then(|| u64::from(dims.end.0 - dims.start.0) + 1);
        sheets.push(sheet(name, rows, grid));
    }
    Ok(sheets)
}

fn other(path: &Path, size: u64, notes: &mut Vec<String>) -> Result<Vec<Sheet>, String> {
    let mut wb = calamine::open_workbook_auto(path).map_err(|e| e.to_string())?;
    let names = wb.sheet_names();
    if size > EXACT_BYTES {
        notes.push("a large workbook of this kind is not read cell by cell: its sheets' columns are not described".into());
        return Ok(names
            .into_iter()
            .map(|name| Sheet {
                name,
                rows: None,
                header: false,
                columns: Vec::new(),
            })
            .collect());
    }
    let mut sheets = Vec::new();
    for name in names.into_iter().take(MAX_SHEETS) {
        let range = wb.worksheet_range(&name).map_err(|e| e.to_string())?;
        let mut grid = Grid::new();
        for (r, row) in range.rows().take(SAMPLE_ROWS as usize).enumerate() {
            for (c, d) in row.iter().take(MAX_COLUMNS as usize).enumerate() {
                place(&mut grid, r as u32, c as u32, cell_of(d));
            }
        }
        sheets.push(sheet(name, Some(range.height() as u64), grid));
    }
    Ok(sheets)
}

/// The workbook, or None (with a note) when calamine cannot read it.
pub(crate) fn describe(path: &Path, ext: &str, size: u64, notes: &mut Vec<String>) -> Option<What> {
    let read = if matches!(ext, "xlsx" | "xlsm") {
        xlsx(path, notes)
    } else {
        other(path, size, notes)
    };
    match read {
        Ok(sheets) => Some(What::Excel(Workbook {
            kind: ext.to_string(),
            sheets,
        })),
        Err(e) => {
            notes.push(format!("not readable as a {ext} workbook: {e}"));
            None
        }
    }
}
