//! Parquet: the schema, row count and row groups from the footer (the
//! file's last bytes: a Thrift compact `FileMetaData`), read by a small
//! reader of that encoding here; the data pages are never read.

use std::io;

use crate::read::Source;
use crate::{Parquet, ParquetColumn, What};

/// A footer larger than this is not read.
const MAX_FOOTER: u64 = 16 << 20;

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
    if len > MAX_FOOTER || len + 12 > src.size {
        return Ok(unread(
            format!("its footer says {len} bytes, more than is read"),
            notes,
        ));
    }
    let footer = src.window(src.size - 8 - len, len as usize)?;
    match meta(&footer) {
        Some(p) => Ok(What::Parquet(p)),
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
    fn list_header(&mut self) -> Option<(u64, u8)> {
        let h = self.byte()?;
        let n = match h >> 4 {
            15 => self.varint()?,
            n => u64::from(n),
        };
        Some((n, h & 0x0f))
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
                    if et == 1 || et == 2 {
                        self.byte()?;
                    } else {
                        self.skip(et)?;
                    }
                }
            }
            11 => {
                let n = self.varint()?;
                if n > 0 {
                    let kv = self.byte()?;
                    for _ in 0..n {
                        self.skip(kv >> 4)?;
                        self.skip(kv & 0x0f)?;
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
            (4, 8) => e.name = String::from_utf8_lossy(c.binary()?).into_owned(),
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

fn meta(footer: &[u8]) -> Option<Parquet> {
    let mut c = Compact {
        b: footer,
        at: 0,
        depth: 0,
    };
    let mut elements = Vec::new();
    let mut rows = None;
    let mut row_groups = None;
    let mut created_by = None;
    let mut last = 0;
    while let Some((id, t)) = c.field(&mut last)? {
        match (id, t) {
            (2, 9) => {
                let (n, _) = c.list_header()?;
                for _ in 0..n {
                    elements.push(element(&mut c)?);
                }
            }
            (3, 6) => rows = u64::try_from(c.int()?).ok(),
            (4, 9) => {
                let (n, et) = c.list_header()?;
                row_groups = Some(n);
                for _ in 0..n {
                    c.skip(et)?;
                }
            }
            (6, 8) => created_by = Some(String::from_utf8_lossy(c.binary()?).into_owned()),
            (_, t) => c.skip(t)?,
        }
    }
    // The schema is the tree flattened depth first; the root comes first.
    let mut columns = Vec::new();
    let mut stack: Vec<(String, i64)> = Vec::new();
    for (i, e) in elements.iter().enumerate() {
        if i == 0 {
            stack.push((String::new(), e.children));
            continue;
        }
        while stack.last().is_some_and(|(_, left)| *left == 0) {
            stack.pop();
        }
        let prefix = stack
            .iter()
            .skip(1)
            .map(|(n, _)| n.as_str())
            .collect::<Vec<_>>()
            .join(".");
        if let Some(top) = stack.last_mut() {
            top.1 -= 1;
        }
        let name = if prefix.is_empty() {
            e.name.clone()
        } else {
            format!("{prefix}.{}", e.name)
        };
        if e.children > 0 {
            stack.push((e.name.clone(), e.children));
        } else {
            columns.push(ParquetColumn {
                name,
                kind: kind(e),
                optional: e.repetition == Some(1),
            });
        }
    }
    Some(Parquet {
        rows,
        row_groups,
        columns,
        created_by,
    })
}
