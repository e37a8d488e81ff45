//! Input files described by what they are: a table's columns and their
//! types, a JSON document's shape, a workbook's sheets, a Parquet file's
//! schema, an image's size, a PDF's pages, a text's encoding and lines, or
//! for anything else its first bytes and a guess.
//!
//! A description reads only what it needs, with bounded buffers: the head of
//! a file (at most [`HEAD_BYTES`]), a little of its tail, and, for files of
//! at most [`EXACT_BYTES`], one streamed pass to count rows exactly. Larger
//! files get an estimate, said as one. A 2 GB CSV is described in a few
//! milliseconds and a few megabytes (`cargo bench --bench inputs`).
//!
//! [`open`] refuses, with why and what to do, what no run could read: a
//! missing path, a folder, a file the user may not read, a FIFO or a device
//! (never opened in a way that could wait).
//!
//! [`InputDescription`] is plain serde data (it is kept on the session's
//! tape); [`InputDescription::render`] is its one text for prompts, at most
//! [`RENDER_CHARS`] characters, and [`InputDescription::summary`] its one
//! line.
#![warn(unreachable_pub)]

mod binary;
mod cell;
mod excel;
mod image;
mod json;
mod parquet;
mod pdf;
mod read;
mod refuse;
mod render;
mod table;
mod text;

use std::path::Path;

use serde::{Deserialize, Serialize};

pub use cell::CellKind;
pub use codeloop_protocol::present::bytes;
pub use json::{Field, Shape};
pub use refuse::{Refusal, check_room, open};

/// What is read from the start of a file to describe it, at most.
pub(crate) const HEAD_BYTES: usize = 1 << 20;
/// Files up to this size have their rows or lines counted exactly (one
/// streamed pass); larger ones get an estimate.
pub(crate) const EXACT_BYTES: u64 = 32 << 20;
/// The rendered description of one file, at most (characters).
pub(crate) const RENDER_CHARS: usize = 1500;

/// What an input file is, as far as a bounded read could tell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InputDescription {
    /// The file's name (as the program sees it).
    pub name: String,
    pub size_bytes: u64,
    pub(crate) what: What,
    /// What could not be told, and why (in plain words).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) notes: Vec<String>,
}

/// The kind of file, with what was read of it.
///
/// On the tape it is an object tagged by `format` ("table", "image", ...).
/// Its derived serde is kept as inherent functions (`remote = "Self"`) and
/// wrapped by the trait impls below, which read the tapes written while an
/// image's own field was also called `format` (a duplicate key: those tapes'
/// first line could not be read back).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "format", rename_all = "snake_case", remote = "Self")]
pub(crate) enum What {
    /// CSV, TSV or another delimited table.
    Table(Table),
    Json(Json),
    JsonLines(JsonLines),
    Excel(Workbook),
    Parquet(Parquet),
    Image(Image),
    Pdf(Pdf),
    Text(Text),
    /// Anything else: its first bytes and a guess.
    Other(Other),
    /// A file whose description failed (the describing process crashed,
    /// ran out of its memory or time): only its name and size are known.
    Undescribed(Undescribed),
}

/// Why a file could not be described.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Undescribed {
    pub(crate) why: String,
}

impl Serialize for What {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        What::serialize(self, s)
    }
}

impl<'de> Deserialize<'de> for What {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<What, D::Error> {
        let fields = d.deserialize_map(TagOnce)?;
        What::deserialize(serde_json::Value::Object(fields)).map_err(serde::de::Error::custom)
    }
}

/// The fields of a `What`, its tag kept once: a second `format` (an image's,
/// on tapes written before it was `kind`) is read as the image's `kind`.
struct TagOnce;

impl<'de> serde::de::Visitor<'de> for TagOnce {
    type Value = serde_json::Map<String, serde_json::Value>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a file's description, tagged by its format")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut fields = serde_json::Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let value: serde_json::Value = map.next_value()?;
            let key = if key == "format" && fields.contains_key("format") {
                "kind".to_string()
            } else {
                key
            };
            fields.insert(key, value);
        }
        Ok(fields)
    }
}

/// A number counted, estimated or known to be at least this.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Count {
    pub(crate) value: u64,
    #[serde(default)]
    pub(crate) how: Counted,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Counted {
    #[default]
    Exact,
    /// From the bytes sampled and the average length of what they held.
    Estimate,
    /// Counted until the read stopped.
    AtLeast,
}

impl Count {
    pub(crate) fn exact(value: u64) -> Count {
        Count {
            value,
            how: Counted::Exact,
        }
    }
    pub(crate) fn estimate(value: u64) -> Count {
        Count {
            value,
            how: Counted::Estimate,
        }
    }
    pub(crate) fn at_least(value: u64) -> Count {
        Count {
            value,
            how: Counted::AtLeast,
        }
    }
}

/// A delimited table (CSV, TSV, ...).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Table {
    pub(crate) delimiter: char,
    /// Whether the first row names the columns.
    pub(crate) header: bool,
    pub(crate) columns: Vec<Column>,
    /// Data rows (the header not counted).
    pub(crate) rows: Count,
    /// How many data rows the column types were inferred from.
    pub(crate) sampled_rows: u64,
    /// "UTF-8", "UTF-8 with BOM", or a guess.
    pub(crate) encoding: String,
}

/// A column of a table or a sheet.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Column {
    pub(crate) name: String,
    pub(crate) kind: CellKind,
    /// A few distinct values, cut short.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) samples: Vec<String>,
    /// Empty cells among the rows sampled.
    #[serde(default)]
    pub(crate) empty: u64,
}

/// A JSON document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Json {
    pub(crate) shape: Shape,
}

/// JSON Lines: one JSON value a line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct JsonLines {
    pub(crate) records: Count,
    /// The records sampled, merged into one shape.
    pub(crate) shape: Shape,
    pub(crate) sampled: u64,
    /// Lines among those sampled that are not JSON.
    #[serde(default)]
    pub(crate) invalid: u64,
}

/// A spreadsheet workbook.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Workbook {
    /// "xlsx", "xls", "xlsb" or "ods".
    pub(crate) kind: String,
    pub(crate) sheets: Vec<Sheet>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Sheet {
    pub(crate) name: String,
    /// Rows used (the header included), where the sheet says.
    pub(crate) rows: Option<u64>,
    pub(crate) header: bool,
    pub(crate) columns: Vec<Column>,
}

/// A Parquet file, from its footer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Parquet {
    pub(crate) rows: Option<u64>,
    pub(crate) row_groups: Option<u64>,
    pub(crate) columns: Vec<ParquetColumn>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) created_by: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ParquetColumn {
    /// The path of a leaf column ("address.city").
    pub(crate) name: String,
    /// Its type in words ("int64", "string", "timestamp", ...).
    pub(crate) kind: String,
    #[serde(default)]
    pub(crate) optional: bool,
}

/// An image, from its header.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Image {
    /// "PNG", "JPEG", "GIF", "BMP" or "WebP" (`kind` on the tape: `format`
    /// is the tag of the description it is in).
    #[serde(rename = "kind")]
    pub(crate) format: String,
    pub(crate) width: Option<u32>,
    pub(crate) height: Option<u32>,
}

/// A PDF document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Pdf {
    pub(crate) version: Option<String>,
    pub(crate) pages: Option<Count>,
}

/// Plain text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Text {
    /// "UTF-8", "ASCII", "UTF-16 LE (BOM)", "latin-1 (a guess)", ...
    pub(crate) encoding: String,
    pub(crate) lines: Count,
    /// The first few lines, cut short.
    pub(crate) first_lines: Vec<String>,
}

/// A file of no kind recognized here.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Other {
    /// What its first bytes suggest.
    pub(crate) guess: String,
    /// Its first bytes, in hex.
    pub(crate) hex_head: String,
}

impl InputDescription {
    /// A file that could not be described, and why: its name and size are
    /// all that is said of it (it is attached and copied all the same).
    pub fn undescribed(name: String, size_bytes: u64, why: String) -> InputDescription {
        InputDescription {
            name,
            size_bytes,
            what: What::Undescribed(Undescribed { why }),
            notes: Vec::new(),
        }
    }

    /// Why the file could not be described, if it could not.
    pub fn failure(&self) -> Option<&str> {
        match &self.what {
            What::Undescribed(u) => Some(&u.why),
            _ => None,
        }
    }
}

/// What to do about a file that could not be described (said beside
/// `InputDescription::failure` by `run` and the workbench alike).
pub const UNDESCRIBED_TODO: &str = "the file is attached and copied into every run all the same; say in the task what it holds, or attach a smaller or simpler copy";

/// Describe the file at `path`, reading only what the description needs.
/// A path no run could read is refused, with why and what to do.
pub fn describe(path: &Path) -> Result<InputDescription, Refusal> {
    let file = open(path)?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "input".into());
    let mut src = read::Source::new(file).map_err(|e| Refusal::read(path, &e))?;
    let mut notes = Vec::new();
    let what = classify(&mut src, path, &mut notes).map_err(|e| Refusal::read(path, &e))?;
    Ok(InputDescription {
        name,
        size_bytes: src.size,
        what,
        notes,
    })
}

/// The extension, lower case ("" without one).
fn extension(path: &Path) -> String {
    path.extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default()
}

fn classify(src: &mut read::Source, path: &Path, notes: &mut Vec<String>) -> std::io::Result<What> {
    let ext = extension(path);
    let head = src.head(HEAD_BYTES)?;
    if let Some(img) = image::describe(src, &head)? {
        return Ok(What::Image(img));
    }
    if head.starts_with(b"%PDF-") {
        return Ok(What::Pdf(pdf::describe(src, &head, notes)?));
    }
    if head.starts_with(b"PAR1") {
        return parquet::describe(src, notes);
    }
    if excel::is_workbook(&head, &ext) {
        return Ok(excel::describe(src, &ext, notes).unwrap_or_else(|| binary::describe(&head)));
    }
    let encoding = text::encoding(&head);
    let Some(encoding) = encoding else {
        return Ok(binary::describe(&head));
    };
    if encoding.utf8_compatible {
        let whole = head.len() as u64 >= src.size;
        let body = text::strip_bom(&head);
        let first = body.iter().copied().find(|b| !b.is_ascii_whitespace());
        let json_ext = matches!(ext.as_str(), "json" | "geojson");
        let lines_ext = matches!(ext.as_str(), "jsonl" | "ndjson" | "jsonlines");
        if lines_ext
            || (matches!(first, Some(b'{' | b'[')) && !json_ext && json::looks_like_lines(body))
        {
            if let Some(lines) = json::describe_lines(src, body, whole, notes)? {
                return Ok(What::JsonLines(lines));
            }
        } else if json_ext || matches!(first, Some(b'{' | b'[')) {
            if let Some(doc) = json::describe(src, &head, notes)? {
                return Ok(What::Json(doc));
            }
            if json::looks_like_lines(body)
                && let Some(lines) = json::describe_lines(src, body, whole, notes)?
            {
                return Ok(What::JsonLines(lines));
            }
        }
        let table_ext = matches!(ext.as_str(), "csv" | "tsv" | "tab" | "psv");
        if let Some(t) = table::describe(src, &head, &ext, &encoding.name, table_ext, notes)? {
            return Ok(What::Table(t));
        }
    }
    Ok(What::Text(text::describe(src, &head, &encoding)?))
}

#[cfg(test)]
mod tests;
