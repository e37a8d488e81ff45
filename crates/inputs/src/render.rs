//! The words of a description: `render` (several lines, bounded, for
//! prompts and reports) and `summary` (one line, for lists).

use codeloop_protocol::present::bytes;

use crate::json::Shape;
use crate::{
    Column, Count, Counted, InputDescription, Json, JsonLines, Parquet, RENDER_CHARS, Table, What,
    Workbook,
};

/// 41234567 as "41,234,567".
fn grouped(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A count with what it is: "1,204 rows", "about 41,000,000 rows (an
/// estimate)", "at least 12 rows".
pub(crate) fn count(c: Count, what: &str) -> String {
    let what = match what.strip_suffix('s') {
        Some(one) if c.value == 1 && c.how == Counted::Exact => one,
        _ => what,
    };
    match c.how {
        Counted::Exact => format!("{} {what}", grouped(c.value)),
        Counted::Estimate => format!("about {} {what} (an estimate)", grouped(round(c.value))),
        Counted::AtLeast => format!("at least {} {what}", grouped(c.value)),
    }
}

/// An estimate to three significant figures.
fn round(n: u64) -> u64 {
    let mut p = 1;
    while n / p >= 1000 {
        p *= 10;
    }
    (n + p / 2) / p * p
}

fn delimiter_word(d: char) -> &'static str {
    match d {
        ',' => "comma",
        '\t' => "tab",
        ';' => "semicolon",
        '|' => "pipe",
        _ => "other",
    }
}

fn table_kind(d: char) -> &'static str {
    match d {
        '\t' => "TSV",
        _ => "CSV",
    }
}

fn column_line(c: &Column) -> String {
    let mut s = format!("- {}: {}", c.name, c.kind.word());
    if !c.samples.is_empty() {
        // A value with a comma in it is quoted, so the list reads right.
        let shown: Vec<String> = c
            .samples
            .iter()
            .map(|v| {
                if v.contains(',') || v.contains('"') {
                    format!("\"{}\"", v.replace('"', "\\\""))
                } else {
                    v.clone()
                }
            })
            .collect();
        s.push_str(&format!(", e.g. {}", shown.join(", ")));
    }
    if c.empty > 0 && c.kind != crate::CellKind::Empty {
        s.push_str(&format!(" ({} empty)", c.empty));
    }
    s
}

/// A shape on one line, nested objects inline (bounded by the shape's own
/// bounds: two levels, 40 keys).
pub(crate) fn shape_inline(s: &Shape) -> String {
    match s {
        Shape::Array { len, items } => match items {
            Some(i) => format!("array of {} ({})", shape_inline(i), count(*len, "items")),
            None => format!("array ({})", count(*len, "items")),
        },
        Shape::Object { fields, more } if fields.is_empty() && *more > 0 => {
            format!("object ({})", count(Count::exact(*more), "keys"))
        }
        Shape::Object { fields, more } => {
            let mut parts: Vec<String> = fields
                .iter()
                .map(|f| {
                    let opt = if f.optional { "?" } else { "" };
                    format!("{}{opt}: {}", f.name, shape_inline(&f.shape))
                })
                .collect();
            if *more > 0 {
                parts.push(format!("… {more} more keys"));
            }
            format!("{{{}}}", parts.join(", "))
        }
        Shape::Mixed { types } => types.join(" | "),
        Shape::String { .. } => "string".into(),
        s => s.word().into(),
    }
}

/// The fields of an object shape, one line each.
fn field_lines(s: &Shape, out: &mut Vec<String>) {
    if let Shape::Object { fields, more } = s {
        for f in fields {
            let mut line = format!(
                "- {}{}: {}",
                f.name,
                if f.optional { " (optional)" } else { "" },
                shape_inline(&f.shape)
            );
            if let Shape::String { sample: Some(x) } = &f.shape {
                line.push_str(&format!(", e.g. \"{x}\""));
            }
            out.push(line);
        }
        if *more > 0 {
            out.push(format!("- … and {more} more keys"));
        }
    }
}

impl InputDescription {
    /// What the file is, in one line (no name, no size).
    pub fn summary(&self) -> String {
        match &self.what {
            What::Table(t) => format!(
                "{} ({}), {} columns, {}",
                table_kind(t.delimiter),
                delimiter_word(t.delimiter),
                t.columns.len(),
                count(t.rows, "rows")
            ),
            What::Json(j) => format!("JSON, {}", top_shape(&j.shape)),
            What::JsonLines(j) => format!("JSON Lines, {}", count(j.records, "records")),
            What::Excel(w) => {
                let names: Vec<&str> = w.sheets.iter().map(|s| s.name.as_str()).collect();
                format!(
                    "{} workbook, {}: {}",
                    w.kind,
                    count(Count::exact(w.sheets.len() as u64), "sheets"),
                    names.join(", ")
                )
            }
            What::Parquet(p) => match p.rows {
                _ if p.columns.is_empty() => "Parquet, schema not read".to_string(),
                Some(r) => format!(
                    "Parquet, {} columns, {}",
                    p.columns.len(),
                    count(Count::exact(r), "rows")
                ),
                None => format!("Parquet, {} columns, rows not read", p.columns.len()),
            },
            What::Image(i) => match (i.width, i.height) {
                (Some(w), Some(h)) => format!("{} image, {w} × {h} pixels", i.format),
                _ => format!("{} image, size not read", i.format),
            },
            What::Pdf(p) => match p.pages {
                Some(c) => format!("PDF, {}", count(c, "pages")),
                None => "PDF, pages not counted".to_string(),
            },
            What::Text(t) => format!("text ({}), {}", t.encoding, count(t.lines, "lines")),
            What::Other(o) => o.guess.clone(),
            What::Undescribed(u) => format!("could not be described ({})", u.why),
        }
    }

    /// The description for a prompt or a report: several lines, at most
    /// `RENDER_CHARS` characters (what does not fit is said to be left out).
    pub fn render(&self) -> String {
        let mut lines = vec![format!(
            "{} ({}): {}",
            self.name,
            bytes(self.size_bytes),
            self.summary()
        )];
        match &self.what {
            What::Table(t) => table_lines(t, &mut lines),
            What::Json(j) => json_lines(j, &mut lines),
            What::JsonLines(j) => json_lines_lines(j, &mut lines),
            What::Excel(w) => workbook_lines(w, &mut lines),
            What::Parquet(p) => parquet_lines(p, &mut lines),
            What::Pdf(p) => {
                if let Some(v) = &p.version {
                    lines.push(format!("PDF version {v}"));
                }
            }
            What::Text(t) => {
                lines.push("first lines:".into());
                lines.extend(t.first_lines.iter().map(|l| format!("  {l}")));
            }
            What::Other(o) => lines.push(format!("first bytes: {}", o.hex_head)),
            What::Undescribed(_) => lines.push(
                "it is in the working directory all the same: a program can open it and see what it holds".into(),
            ),
            What::Image(_) => {}
        }
        lines.extend(self.notes.iter().map(|n| format!("note: {n}")));
        bounded(lines)
    }
}

/// A table: its encoding, its header, each column.
fn table_lines(t: &Table, lines: &mut Vec<String>) {
    lines.push(format!(
        "{} encoding; {}; types from the first {} rows:",
        t.encoding,
        if t.header {
            "the first row is a header"
        } else {
            "no header row (columns by position)"
        },
        t.sampled_rows
    ));
    lines.extend(t.columns.iter().map(column_line));
}

/// A JSON document: the fields of its top object (or of its array's items).
fn json_lines(j: &Json, lines: &mut Vec<String>) {
    match &j.shape {
        Shape::Array { items: Some(i), .. } if matches!(**i, Shape::Object { .. }) => {
            lines.push("each item is an object:".into());
            field_lines(i, lines);
        }
        s @ Shape::Object { .. } => {
            lines.push("the top is an object:".into());
            field_lines(s, lines);
        }
        s => lines.push(format!("the top is {}", shape_inline(s))),
    }
}

/// JSON Lines: the shape of the records sampled (and how many were not JSON).
fn json_lines_lines(j: &JsonLines, lines: &mut Vec<String>) {
    lines.push(format!(
        "shape of the first {} records{}:",
        j.sampled,
        if j.invalid > 0 {
            format!(" ({} of them not JSON)", j.invalid)
        } else {
            String::new()
        }
    ));
    if matches!(j.shape, Shape::Object { .. }) {
        field_lines(&j.shape, lines);
    } else {
        lines.push(format!("- {}", shape_inline(&j.shape)));
    }
}

/// A workbook: each sheet, its rows, its header and columns.
fn workbook_lines(w: &Workbook, lines: &mut Vec<String>) {
    for s in &w.sheets {
        lines.push(format!(
            "sheet \"{}\": {}{}",
            s.name,
            s.rows
                .map(|r| format!("{} used", count(Count::exact(r), "rows")))
                .unwrap_or_else(|| "rows not counted".into()),
            if s.columns.is_empty() {
                String::new()
            } else if s.header {
                ", the first row is a header; columns:".into()
            } else {
                ", no header row; columns:".into()
            }
        ));
        lines.extend(s.columns.iter().map(|c| format!("  {}", column_line(c))));
    }
}

/// Parquet: its row groups and typed columns.
fn parquet_lines(p: &Parquet, lines: &mut Vec<String>) {
    if let Some(g) = p.row_groups {
        lines.push(format!("{g} row groups; columns:"));
    }
    lines.extend(p.columns.iter().map(|c| {
        format!(
            "- {}: {}{}",
            c.name,
            c.kind,
            if c.optional { " (nullable)" } else { "" }
        )
    }));
}

fn top_shape(s: &Shape) -> String {
    match s {
        Shape::Array { len, items } => {
            let what = match items.as_deref() {
                Some(Shape::Object { .. }) => "objects",
                Some(Shape::Array { .. }) => "arrays",
                Some(Shape::String { .. }) => "strings",
                Some(Shape::Int | Shape::Float) => "numbers",
                _ => "items",
            };
            format!("an array of {}", count(*len, what))
        }
        Shape::Object { fields, more } => {
            format!("an object of {} keys", fields.len() as u64 + more)
        }
        s => format!("a single {}", s.word()),
    }
}

/// Lines joined until the bound; what is left out is counted.
fn bounded(lines: Vec<String>) -> String {
    let mut out = String::new();
    let total = lines.len();
    for (i, line) in lines.into_iter().enumerate() {
        let line: String = if line.chars().count() > 300 {
            let mut l: String = line.chars().take(299).collect();
            l.push('…');
            l
        } else {
            line
        };
        let tail = format!("… ({} more lines left out)", total - i);
        if out.chars().count() + line.chars().count() + 1 + tail.chars().count() + 1 > RENDER_CHARS
        {
            out.push_str(&tail);
            return out;
        }
        out.push_str(&line);
        out.push('\n');
    }
    out.pop();
    out
}
