//! ODS (OpenDocument spreadsheets): `content.xml` streamed once; each
//! table's name, its rows used (the last row holding a value, repeats
//! counted as numbers), and its first rows' cells, a repeated row or cell
//! placed only as often as the sample holds it.

use super::xml::{Tok, Xml, attr};
use super::zip::Zip;
use super::{Grid, MAX_COLUMNS, MAX_SHEETS, Read, SAMPLE_ROWS, Value, push_cut, sheet_name};
use crate::read::Source;

/// `content.xml` read, at most (inflated bytes).
const CONTENT_CAP: u64 = 32 << 20;
/// Spaces `<text:s text:c="N"/>` stands for, at most.
const MAX_SPACES: usize = 64;

/// A repeat count as the file states it (1 when absent or unreadable):
/// a number to add, never a size.
fn repeat(attrs: &[(String, String)], name: &str) -> u64 {
    attr(attrs, name)
        .and_then(|n| n.parse::<u64>().ok())
        .unwrap_or(1)
        .max(1)
}

/// The table being read.
struct Table {
    name: String,
    grid: Grid,
    /// The next row's index, and the rows up to the last holding a value.
    row: u64,
    used: u64,
}

/// The row being read: its repeat, its cells (within the sample's
/// columns), the next column and whether any cell holds a value.
#[derive(Default)]
struct Row {
    repeat: u64,
    cells: Vec<(u64, Value)>,
    col: u64,
    any: bool,
}

/// The cell being read.
struct Cell {
    value: Value,
    repeat: u64,
    text: String,
    paragraphs: usize,
}

pub(super) fn read(src: &Source, notes: &mut Vec<String>) -> Result<Read, String> {
    let zip = Zip::open(src)?;
    let mut xml = Xml::new(zip.part("content.xml", CONTENT_CAP)?);
    let mut sheets = Vec::new();
    let mut total = 0usize;
    let mut table: Option<Table> = None;
    // Tables inside a table (a cell's embedded object) are not sheets.
    let mut nested = 0usize;
    let mut row: Option<Row> = None;
    let mut cell: Option<Cell> = None;
    let mut in_note = 0usize;
    loop {
        let tok = match xml.next() {
            Ok(t) => t,
            Err(e) => {
                notes.push(format!("its content could not all be read: {e}"));
                Tok::Eof
            }
        };
        match tok {
            Tok::Start { name, attrs, empty } => match name.as_str() {
                "table" if table.is_some() => nested += usize::from(!empty),
                "table" => {
                    total += 1;
                    let name = sheet_name(attr(&attrs, "name").unwrap_or("?"));
                    if sheets.len() >= MAX_SHEETS {
                        // Counted, not read: passed over to its end.
                        if !empty {
                            skip_table(&mut xml)?;
                        }
                    } else if empty {
                        sheets.push((name, Some(0), Grid::new(false)));
                    } else {
                        table = Some(Table {
                            name,
                            grid: Grid::new(false),
                            row: 0,
                            used: 0,
                        });
                    }
                }
                "table-row" if nested == 0 && table.is_some() => {
                    let r = Row {
                        repeat: repeat(&attrs, "number-rows-repeated"),
                        ..Row::default()
                    };
                    if empty {
                        if let Some(t) = table.as_mut() {
                            t.row = t.row.saturating_add(r.repeat);
                        }
                    } else {
                        row = Some(r);
                    }
                }
                "table-cell" | "covered-table-cell" if nested == 0 && row.is_some() => {
                    let c = Cell {
                        value: value_of(&attrs),
                        repeat: repeat(&attrs, "number-columns-repeated"),
                        text: String::new(),
                        paragraphs: 0,
                    };
                    if empty {
                        end_cell(&mut row, c);
                    } else {
                        cell = Some(c);
                    }
                }
                "annotation" if !empty => in_note += 1,
                "p" | "h" if cell.is_some() && in_note == 0 => {
                    if let Some(c) = cell.as_mut() {
                        if c.paragraphs > 0 {
                            push_cut(&mut c.text, "\n");
                        }
                        c.paragraphs += 1;
                    }
                }
                "s" if cell.is_some() && in_note == 0 => {
                    if let Some(c) = cell.as_mut() {
                        let n = attr(&attrs, "c")
                            .and_then(|n| n.parse::<usize>().ok())
                            .unwrap_or(1)
                            .min(MAX_SPACES);
                        push_cut(&mut c.text, &" ".repeat(n));
                    }
                }
                "tab" if cell.is_some() && in_note == 0 => {
                    if let Some(c) = cell.as_mut() {
                        push_cut(&mut c.text, "\t");
                    }
                }
                "line-break" if cell.is_some() && in_note == 0 => {
                    if let Some(c) = cell.as_mut() {
                        push_cut(&mut c.text, "\n");
                    }
                }
                _ => {}
            },
            Tok::Text(t) if in_note == 0 => {
                if let Some(c) = cell.as_mut() {
                    push_cut(&mut c.text, &t);
                }
            }
            Tok::End(name) => match name.as_str() {
                "annotation" => in_note = in_note.saturating_sub(1),
                "table-cell" | "covered-table-cell" if nested == 0 => {
                    if let Some(c) = cell.take() {
                        end_cell(&mut row, c);
                    }
                }
                "table-row" if nested == 0 => {
                    if let (Some(r), Some(t)) = (row.take(), table.as_mut()) {
                        end_row(t, r);
                    }
                }
                "table" if nested > 0 => nested -= 1,
                "table" => {
                    if let Some(t) = table.take() {
                        sheets.push((t.name, Some(t.used), t.grid));
                    }
                }
                _ => {}
            },
            Tok::Eof => break,
            Tok::Text(_) => {}
        }
    }
    // A table cut short (the content was larger than what is read).
    if let Some(t) = table.take() {
        notes.push(format!(
            "its content is larger than the {} read: the rows of sheet \"{}\" are not counted, and sheets after it are not listed",
            crate::bytes(CONTENT_CAP),
            t.name
        ));
        sheets.push((t.name, None, t.grid));
    }
    Ok(Read {
        sheets,
        total_sheets: total,
    })
}

/// Past the end of the table just opened (tables inside it included).
fn skip_table<R: std::io::Read>(xml: &mut Xml<R>) -> Result<(), String> {
    let mut depth = 1usize;
    loop {
        match xml.next()? {
            Tok::Start { name, empty, .. } if name == "table" && !empty => depth += 1,
            Tok::End(name) if name == "table" => {
                depth -= 1;
                if depth == 0 {
                    return Ok(());
                }
            }
            Tok::Eof => return Ok(()),
            _ => {}
        }
    }
}

/// A cell's value from its attributes (text comes later, for strings).
fn value_of(attrs: &[(String, String)]) -> Value {
    let get = |name| attr(attrs, name).unwrap_or("");
    match get("value-type") {
        "float" | "percentage" | "currency" => {
            get("value").parse().map_or(Value::Empty, Value::Number)
        }
        "date" => Value::DateText(get("date-value").replace('T', " ")),
        "time" => Value::Text(get("time-value").to_string()),
        "boolean" => Value::Bool(matches!(get("boolean-value"), "true" | "1")),
        "string" => Value::Text(get("string-value").to_string()),
        _ => Value::Empty,
    }
}

/// A cell ended: kept in its row, once for each column of the sample it
/// repeats into.
fn end_cell(row: &mut Option<Row>, c: Cell) {
    let Some(r) = row.as_mut() else { return };
    let value = match c.value {
        // A string's text is its paragraphs (unless it says it in an attribute).
        Value::Text(s) if s.is_empty() => Value::Text(c.text),
        Value::Empty if !c.text.trim().is_empty() => Value::Text(c.text),
        v => v,
    };
    if value != Value::Empty && value != Value::Text(String::new()) {
        r.any = true;
    }
    let last = r.col.saturating_add(c.repeat).min(u64::from(MAX_COLUMNS));
    if value != Value::Empty {
        for col in r.col..last {
            r.cells.push((col, value.clone()));
        }
    }
    r.col = r.col.saturating_add(c.repeat);
}

/// A row ended: placed as often as it repeats within the sample, and
/// counted (a number) as often as it says.
fn end_row(t: &mut Table, r: Row) {
    let last = t.row.saturating_add(r.repeat).min(u64::from(SAMPLE_ROWS));
    for at in t.row..last {
        for (col, v) in &r.cells {
            t.grid.place(at, *col, v);
        }
    }
    t.row = t.row.saturating_add(r.repeat);
    if r.any {
        t.used = t.row;
    }
}
