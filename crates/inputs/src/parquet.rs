//! Parquet: the schema, row count and row groups from the footer (the
//! file's last bytes: a Thrift compact `FileMetaData`), read by a small
//! reader of that encoding here; the data pages are never read.
//!
//! Nothing the footer states is trusted as a size: at most `FOOTER_READ`
//! of it is read (a longer one gives its schema and rows, which come
//! first), a list is never longer than the bytes left to hold it (each
//! element takes at least one), at most `MAX_ELEMENTS` schema elements
//! are kept and `MAX_NESTING` levels named, and names are cut short.

use std::io;

use crate::read::Source;
use crate::{Parquet, ParquetColumn, What};

/// The most of a footer read (its start: the schema and the rows).
const FOOTER_READ: u64 = 4 << 20;
/// Schema elements kept, at most, and columns listed; levels of nesting
/// named in a column's path; a name's bytes kept.
const MAX_ELEMENTS: usize = 4096;
const MAX_COLUMNS: usize = 1000;
const MAX_NESTING: usize = 32;
const NAME_BYTES: usize = 256;

pub(crate) fn describe(src: &Source, notes: &mut Vec<String>) -> io::Result<What> {
    let unread = |why: String, notes: &mut Vec<String>| {
        notes.push(format!("schema not read: {why}"));
        What::Parquet(Parquet {
            rows: None,
            row_groups: None,
            columns: Vec::new(),
            created_by: None,
        })
    };
    let tail = src.tail(8)?;
    if src.size < 12 || tail.get(4..8) != Some(b"PAR1") {
        return Ok(unread(
            "the file does not end as Parquet does (cut short?)".into(),
            notes,
        ));
    }
    let len = u64::from(u32::from_le_bytes([tail[0], tail[1], tail[2], tail[3]]));
    if len + 12 > src.size {
        return Ok(unread(
            format!("its footer says {len} bytes, more than the file holds"),
            notes,
        ));
    }
    let read = len.min(FOOTER_READ);
    let footer = src.window(src.size - 8 - len, read as usize)?;
    let cut = read < len;
    match meta(&footer, notes) {
        Some(p) => {
            if cut {
                notes.push(format!(
                    "its footer is {}: the first {} read (its schema and rows; its row groups not counted)",
                    crate::bytes(len),
                    crate::bytes(read)
                ));
            }
            Ok(What::Parquet(p))
        }
        None => Ok(unread("its footer could not be decoded".into(), notes)),
    }
}

/// Thrift's compact protocol, as much of it as the footer needs.
struct Compact<'a> {
    b: &'a [u8],
    at: usize,
    depth: usize,
}

const STOP: u8 = 0;

impl Compact<'_> {
    fn byte(&mut self) -> Option<u8> {
        let v = *self.b.get(self.at)?;
        self.at += 1;
        Some(v)
    }
    fn varint(&mut self) -> Option<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Some(v);
            }
        }
        None
    }
    fn int(&mut self) -> Option<i64> {
        let v = self.varint()?;
        Some(((v >> 1) as i64) ^ -((v & 1) as i64))
    }
    fn binary(&mut self) -> Option<&[u8]> {
        let n = usize::try_from(self.varint()?).ok()?;
        let s = self.b.get(self.at..self.at.checked_add(n)?)?;
        self.at += n;
        Some(s)
    }
    /// The next field's id and type; None at the struct's end.
    fn field(&mut self, last: &mut i16) -> Option<Option<(i16, u8)>> {
        let h = self.byte()?;
        if h == STOP {
            return Some(None);
        }
        let delta = (h >> 4) as i16;
        let id = if delta == 0 {
            self.int()? as i16
        } else {
            *last + delta
        };
        *last = id;
        Some(Some((id, h & 0x0f)))
    }
    /// A list's length and element type. A length the bytes left could
    /// not hold (each element takes at least one) is a lie: None.
    fn list_header(&mut self) -> Option<(u64, u8)> {
        let h = self.byte()?;
        let n = match h >> 4 {
            15 => self.varint()?,
            n => u64::from(n),
        };
        self.holds(n)?;
        Some((n, h & 0x0f))
    }

    /// Some when `n` elements of at least a byte each fit in what is left.
    fn holds(&self, n: u64) -> Option<()> {
        (n <= (self.b.len() - self.at.min(self.b.len())) as u64).then_some(())
    }

    /// An element of a list, set or map: a boolean there takes a byte.
    fn skip_element(&mut self, t: u8) -> Option<()> {
        if t == 1 || t == 2 {
            self.byte().map(drop)
        } else {
            self.skip(t)
        }
    }
    fn skip(&mut self, t: u8) -> Option<()> {
        self.depth += 1;
        if self.depth > 64 {
            return None;
        }
        match t {
            1 | 2 => {}
            3 => {
                self.byte()?;
            }
            4..=6 => {
                self.varint()?;
            }
            7 => self.at = self.at.checked_add(8).filter(|&a| a <= self.b.len())?,
            8 => {
                self.binary()?;
            }
            9 | 10 => {
                let (n, et) = self.list_header()?;
                for _ in 0..n {
                    self.skip_element(et)?;
                }
            }
            11 => {
                let n = self.varint()?;
                if n > 0 {
                    let kv = self.byte()?;
                    self.holds(n.saturating_mul(2))?;
                    for _ in 0..n {
                        self.skip_element(kv >> 4)?;
                        self.skip_element(kv & 0x0f)?;
                    }
                }
            }
            12 => {
                let mut last = 0;
                while let Some((_, ft)) = self.field(&mut last)? {
                    self.skip(ft)?;
                }
            }
            _ => return None,
        }
        self.depth -= 1;
        Some(())
    }
}

struct Element {
    name: String,
    physical: Option<i64>,
    repetition: Option<i64>,
    children: i64,
    converted: Option<i64>,
    /// The logical type union's field id.
    logical: Option<i16>,
}

fn element(c: &mut Compact) -> Option<Element> {
    let mut e = Element {
        name: String::new(),
        physical: None,
        repetition: None,
        children: 0,
        converted: None,
        logical: None,
    };
    let mut last = 0;
    while let Some((id, t)) = c.field(&mut last)? {
        match (id, t) {
            (1, 5) => e.physical = Some(c.int()?),
            (3, 5) => e.repetition = Some(c.int()?),
            (4, 8) => e.name = name_of(c.binary()?),
            (5, 5) => e.children = c.int()?,
            (6, 5) => e.converted = Some(c.int()?),
            (10, 12) => {
                let mut l = 0;
                if let Some((which, ft)) = c.field(&mut l)? {
                    e.logical = Some(which);
                    c.skip(ft)?;
                    // The union holds one field, then its STOP.
                    while let Some((_, ft)) = c.field(&mut l)? {
                        c.skip(ft)?;
                    }
                }
            }
            (_, t) => c.skip(t)?,
        }
    }
    Some(e)
}

/// A name as kept: cut to `NAME_BYTES`, on one line.
fn name_of(raw: &[u8]) -> String {
    String::from_utf8_lossy(&raw[..raw.len().min(NAME_BYTES)])
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

fn kind(e: &Element) -> String {
    let logical = match e.logical {
        Some(1) => Some("string"),
        Some(4) => Some("enum"),
        Some(5) => Some("decimal"),
        Some(6) => Some("date"),
        Some(7) => Some("time"),
        Some(8) => Some("timestamp"),
        Some(12) => Some("json"),
        Some(14) => Some("uuid"),
        Some(15) => Some("float16"),
        _ => None,
    };
    let converted = match e.converted {
        Some(0) => Some("string"),
        Some(4) => Some("enum"),
        Some(5) => Some("decimal"),
        Some(6) => Some("date"),
        Some(7 | 8) => Some("time"),
        Some(9 | 10) => Some("timestamp"),
        Some(19) => Some("json"),
        _ => None,
    };
    let physical = match e.physical {
        Some(0) => "bool",
        Some(1) => "int32",
        Some(2) => "int64",
        Some(3) => "int96 (timestamp)",
        Some(4) => "float",
        Some(5) => "double",
        Some(6) => "bytes",
        Some(7) => "fixed bytes",
        _ => "?",
    };
    logical.or(converted).unwrap_or(physical).to_string()
}

/// The footer's `FileMetaData`: None when it cannot be decoded; what was
/// read when it is cut after the schema (a footer longer than is read).
fn meta(footer: &[u8], notes: &mut Vec<String>) -> Option<Parquet> {
    let mut c = Compact {
        b: footer,
        at: 0,
        depth: 0,
    };
    let mut elements = Vec::new();
    let mut declared = 0u64;
    let mut rows = None;
    let mut row_groups = None;
    let mut created_by = None;
    let mut last = 0;
    loop {
        let Some(field) = c.field(&mut last) else {
            // Cut: what came before the cut still tells, once the schema did.
            if elements.is_empty() {
                return None;
            }
            break;
        };
        let Some((id, t)) = field else { break };
        let read = match (id, t) {
            (2, 9) => (|| {
                let (n, _) = c.list_header()?;
                declared = n;
                for i in 0..n {
                    let e = element(&mut c)?;
                    if (i as usize) < MAX_ELEMENTS {
                        elements.push(e);
                    }
                }
                Some(())
            })(),
            (3, 6) => c.int().map(|n| rows = u64::try_from(n).ok()),
            (4, 9) => (|| {
                let (n, et) = c.list_header()?;
                for _ in 0..n {
                    c.skip_element(et)?;
                }
                row_groups = Some(n);
                Some(())
            })(),
            (6, 8) => c.binary().map(|b| created_by = Some(name_of(b))),
            (_, t) => c.skip(t),
        };
        if read.is_none() {
            if elements.is_empty() || (id == 2 && t == 9) {
                return None;
            }
            break;
        }
    }
    if declared > MAX_ELEMENTS as u64 {
        notes.push(format!(
            "its schema has {declared} elements; the first {MAX_ELEMENTS} are read"
        ));
    }
    // The schema is the tree flattened depth first; the root comes first.
    let mut columns = Vec::new();
    let mut listed = 0u64;
    let mut stack: Vec<(String, i64)> = Vec::new();
    for (i, e) in elements.iter().enumerate() {
        if i == 0 {
            stack.push((String::new(), e.children));
            continue;
        }
        while stack.last().is_some_and(|(_, left)| *left <= 0) && stack.len() > 1 {
            stack.pop();
        }
        if let Some(top) = stack.last_mut() {
            top.1 -= 1;
        }
        if e.children > 0 && stack.len() < MAX_NESTING {
            stack.push((e.name.clone(), e.children));
            continue;
        }
        listed += 1;
        if columns.len() < MAX_COLUMNS {
            let prefix = stack
                .iter()
                .skip(1)
                .map(|(n, _)| n.as_str())
                .collect::<Vec<_>>()
                .join(".");
            let name = if prefix.is_empty() {
                e.name.clone()
            } else {
                format!("{prefix}.{}", e.name)
            };
            columns.push(ParquetColumn {
                name,
                kind: kind(e),
                optional: e.repetition == Some(1),
            });
        }
    }
    if listed > MAX_COLUMNS as u64 {
        notes.push(format!(
            "{listed} columns; the first {MAX_COLUMNS} are listed"
        ));
    }
    Some(Parquet {
        rows,
        row_groups,
        columns,
        created_by,
    })
}
