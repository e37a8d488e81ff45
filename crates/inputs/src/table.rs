//! Delimited tables: the delimiter sniffed, the header told, the columns
//! typed from the first rows, the rows counted (small files) or estimated.

use std::io;

use crate::cell::{self, CellKind, ColumnBuilder};
use crate::read::{self, Source};
use crate::{Count, EXACT_BYTES, Table};

/// Rows the column types are inferred from, at most.
const SAMPLE_ROWS: usize = 1000;
/// Columns described, at most.
const MAX_COLUMNS: usize = 256;
/// Cells kept of the rows sampled, at most (a row of a million columns
/// keeps `MAX_COLUMNS` + 1 of them, the last standing for the rest).
const MAX_CELLS: usize = 50_000;
/// A field's bytes kept, at most (samples are cut far shorter).
const FIELD_BYTES: usize = 1024;
const CANDIDATES: &[u8] = b",\t;|";

/// The records of `data` split on `delim` (quotes as in RFC 4180), at most
/// `max` (and `MAX_CELLS` cells in all); with the bytes the whole records
/// took. A row keeps its first `MAX_COLUMNS` + 1 fields, each cut to
/// `FIELD_BYTES`: what a line holds beyond is read past, never kept.
fn records(data: &[u8], delim: u8, max: usize) -> (Vec<Vec<String>>, usize) {
    let mut out = Vec::new();
    let mut row: Vec<String> = Vec::new();
    let mut field: Vec<u8> = Vec::new();
    let mut in_quotes = false;
    let mut consumed = 0;
    let mut cells = 0;
    let mut i = 0;
    let keep = |field: &mut Vec<u8>, b: u8| {
        if field.len() < FIELD_BYTES {
            field.push(b);
        }
    };
    let end_field = |row: &mut Vec<String>, field: &mut Vec<u8>| {
        if row.len() <= MAX_COLUMNS {
            row.push(String::from_utf8_lossy(field).into_owned());
        }
        field.clear();
    };
    while i < data.len() && out.len() < max && cells < MAX_CELLS {
        let b = data[i];
        if in_quotes {
            if b == b'"' {
                if data.get(i + 1) == Some(&b'"') {
                    keep(&mut field, b'"');
                    i += 1;
                } else {
                    in_quotes = false;
                }
            } else {
                keep(&mut field, b);
            }
        } else if b == b'"' && field.is_empty() {
            in_quotes = true;
        } else if b == delim {
            end_field(&mut row, &mut field);
        } else if b == b'\n' {
            if field.last() == Some(&b'\r') {
                field.pop();
            }
            end_field(&mut row, &mut field);
            cells += row.len();
            out.push(std::mem::take(&mut row));
            consumed = i + 1;
        } else {
            keep(&mut field, b);
        }
        i += 1;
    }
    (out, consumed)
}

/// The delimiter whose field count is the same on most of the first lines
/// (more than one field), if any.
fn sniff(data: &[u8], ext: &str) -> Option<u8> {
    let mut best: Option<(usize, usize, u8)> = None;
    for &d in CANDIDATES {
        let (rows, _) = records(data, d, 30);
        if rows.is_empty() {
            continue;
        }
        let first = rows[0].len();
        if first < 2 {
            continue;
        }
        let same = rows.iter().filter(|r| r.len() == first).count();
        // Most rows agree with the first (a ragged line or two is allowed).
        if same * 10 < rows.len() * 8 {
            continue;
        }
        let prefer = usize::from((ext == "tsv" || ext == "tab") && d == b'\t')
            + usize::from(ext == "psv" && d == b'|');
        let score = (prefer, same * first, d);
        if best.is_none_or(|b| (score.0, score.1) > (b.0, b.1)) {
            best = Some(score);
        }
    }
    best.map(|b| b.2)
}

/// Whether the first row names the columns: a column whose other rows are
/// typed has text in the first, or every first cell is distinct text that
/// appears nowhere below it.
pub(crate) fn has_header(rows: &[Vec<String>]) -> bool {
    let Some(first) = rows.first() else {
        return false;
    };
    let rest = &rows[1..];
    let first_kinds: Vec<CellKind> = first.iter().map(|c| cell::infer(c)).collect();
    if first_kinds
        .iter()
        .any(|k| k.typed() || *k == CellKind::Empty)
    {
        return false;
    }
    let mut distinct = first.clone();
    distinct.sort();
    distinct.dedup();
    if distinct.len() != first.len() {
        return false;
    }
    if rest.is_empty() {
        return true;
    }
    for (i, _) in first.iter().enumerate() {
        let kind = rest
            .iter()
            .filter_map(|r| r.get(i))
            .map(|c| cell::infer(c))
            .fold(CellKind::Empty, CellKind::merge);
        if kind.typed() {
            return true;
        }
    }
    !rest
        .iter()
        .any(|r| r.iter().zip(first).any(|(a, b)| a == b))
}

pub(crate) fn describe(
    src: &mut Source,
    head: &[u8],
    ext: &str,
    encoding: &str,
    table_ext: bool,
    notes: &mut Vec<String>,
) -> io::Result<Option<Table>> {
    let bom = if head.starts_with(&[0xEF, 0xBB, 0xBF]) {
        3
    } else {
        0
    };
    let body = &head[bom..];
    let whole = head.len() as u64 >= src.size;
    // Whole records only: a cut last line would be typed wrong.
    let complete = if whole {
        body
    } else {
        match body.iter().rposition(|&b| b == b'\n') {
            Some(p) => &body[..=p],
            None => body,
        }
    };
    let delim = match sniff(complete, ext) {
        Some(d) => d,
        None if table_ext => b',',
        None => return Ok(None),
    };
    let mut data = complete.to_vec();
    if whole && !data.ends_with(b"\n") && !data.is_empty() {
        data.push(b'\n');
    }
    let (rows, _) = records(&data, delim, SAMPLE_ROWS + 1);
    if rows.is_empty() {
        return Ok(None);
    }
    let header = has_header(&rows);
    let data_rows = if header { &rows[1..] } else { &rows[..] };
    let columns = typed_columns(&rows, header);
    if rows.iter().map(Vec::len).max().unwrap_or(0) > MAX_COLUMNS {
        notes.push(format!(
            "only the first {MAX_COLUMNS} columns are described"
        ));
    }
    let header_bytes = if header {
        let (_, n) = records(&data, delim, 1);
        n as u64
    } else {
        0
    };
    let rows = count_rows(src, &data, header_bytes, bom as u64, whole)?;
    Ok(Some(Table {
        delimiter: char::from(delim),
        header,
        columns,
        rows,
        sampled_rows: data_rows.len() as u64,
        encoding: if bom == 3 {
            "UTF-8 with BOM".into()
        } else {
            encoding.to_string()
        },
    }))
}

/// Each column (the first `MAX_COLUMNS`) typed from the sampled rows, named
/// by the header where there is one.
fn typed_columns(rows: &[Vec<String>], header: bool) -> Vec<crate::Column> {
    let width = rows
        .iter()
        .map(Vec::len)
        .max()
        .unwrap_or(0)
        .min(MAX_COLUMNS);
    let data_rows = if header { &rows[1..] } else { rows };
    let mut builders: Vec<ColumnBuilder> = (0..width).map(|_| ColumnBuilder::default()).collect();
    for r in data_rows {
        for (i, b) in builders.iter_mut().enumerate() {
            b.add(r.get(i).map(String::as_str).unwrap_or(""));
        }
    }
    builders
        .into_iter()
        .enumerate()
        .map(|(i, b)| {
            let name = match rows[0].get(i) {
                Some(n) if header => cell::sample(n),
                _ => format!("column {}", i + 1),
            };
            b.finish(name)
        })
        .collect()
}

/// Records from `data` to its end, quotes kept in mind (a newline inside
/// quotes is part of a field); `in_quotes` carries across chunks.
fn count_records(data: &[u8], in_quotes: &mut bool) -> u64 {
    if !*in_quotes && !data.contains(&b'"') {
        return read::newlines(data);
    }
    let mut n = 0;
    for &b in data {
        match b {
            b'"' => *in_quotes = !*in_quotes,
            b'\n' if !*in_quotes => n += 1,
            _ => {}
        }
    }
    n
}

/// The data rows: counted in one streamed pass up to `EXACT_BYTES`, else
/// estimated from the average length of the records in the head and in a
/// window at the end.
fn count_rows(
    src: &Source,
    head: &[u8],
    header_bytes: u64,
    bom: u64,
    whole: bool,
) -> io::Result<Count> {
    let header_rows = u64::from(header_bytes > 0);
    if whole {
        let mut q = false;
        return Ok(Count::exact(
            count_records(head, &mut q).saturating_sub(header_rows),
        ));
    }
    if src.size <= EXACT_BYTES {
        let mut q = false;
        let mut n = 0;
        let mut last = b'\n';
        src.stream(0, |chunk| {
            n += count_records(chunk, &mut q);
            if let Some(&b) = chunk.last() {
                last = b;
            }
        })?;
        if last != b'\n' {
            n += 1;
        }
        return Ok(Count::exact(n.saturating_sub(header_rows)));
    }
    let mut q = false;
    let head_rows = count_records(head, &mut q).saturating_sub(header_rows);
    let head_bytes = (head.len() as u64).saturating_sub(header_bytes);
    // Rows may grow longer (or shorter) further on: the average row is the
    // mean of the head's, the middle's and the end's, each window's own.
    let mut averages = Vec::new();
    if head_rows > 0 {
        averages.push(head_bytes as f64 / head_rows as f64);
    }
    for at in [src.size / 2, src.size.saturating_sub(read::CHUNK as u64)] {
        let w = src.window(at, read::CHUNK)?;
        if let (Some(a), Some(b)) = (
            w.iter().position(|&b| b == b'\n'),
            w.iter().rposition(|&b| b == b'\n'),
        ) && b > a
        {
            averages.push((b - a) as f64 / read::newlines(&w[a + 1..=b]) as f64);
        }
    }
    if averages.is_empty() {
        return Ok(Count::at_least(head_rows));
    }
    let average = averages.iter().sum::<f64>() / averages.len() as f64;
    let body = src.size.saturating_sub(header_bytes + bom);
    let estimate = (body as f64 / average).round() as u64;
    Ok(Count::estimate(estimate))
}
