//! JSON and JSON Lines: the shape of a document (keys and value types, two
//! levels below the top, array lengths) read with a byte budget, never the
//! whole document kept.

use std::io::{self, BufRead, BufReader, Read};

use serde::{Deserialize, Serialize};

use crate::read::{self, Source};
use crate::{Count, Counted, EXACT_BYTES, HEAD_BYTES, Json, JsonLines};

/// Levels below the top whose keys are recorded.
const MAX_DEPTH: usize = 2;
/// Keys recorded per object.
const MAX_FIELDS: usize = 40;
/// Array items whose shapes are merged into the array's item shape.
const SAMPLE_ITEMS: u64 = 50;
/// Lines of JSON Lines sampled.
const SAMPLE_LINES: usize = 1000;
/// Levels below the top whose array items are recorded.
const ARRAY_DEPTH: usize = MAX_DEPTH + 2;
/// Keys recorded in one document (or the lines sampled together), at most;
/// the rest are counted. The rendered text shows far fewer.
const FIELD_BUDGET: usize = 512;
/// Levels parsed one inside another; a value nested deeper is skipped
/// without recursion (its items counted), so no nesting a file holds can
/// exhaust the stack.
const MAX_NESTING: usize = 64;

/// The shape of a JSON value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Shape {
    Null,
    Bool,
    Int,
    Float,
    String {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        sample: Option<String>,
    },
    Array {
        len: Count,
        /// The items sampled, merged (none when empty or too deep).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        items: Option<Box<Shape>>,
    },
    Object {
        fields: Vec<Field>,
        /// Keys not recorded (too many, or too deep).
        #[serde(default)]
        more: u64,
    },
    /// Values of several types in one place.
    Mixed {
        types: Vec<String>,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Field {
    pub(crate) name: String,
    pub(crate) shape: Shape,
    /// Missing or null in some of the objects sampled.
    #[serde(default)]
    pub(crate) optional: bool,
}

impl Shape {
    pub(crate) fn word(&self) -> &'static str {
        match self {
            Shape::Null => "null",
            Shape::Bool => "bool",
            Shape::Int => "int",
            Shape::Float => "float",
            Shape::String { .. } => "string",
            Shape::Array { .. } => "array",
            Shape::Object { .. } => "object",
            Shape::Mixed { .. } => "mixed",
        }
    }

    /// The keys recorded in this shape, at every level.
    pub(crate) fn fields(&self) -> usize {
        match self {
            Shape::Object { fields, .. } => fields.iter().map(|f| 1 + f.shape.fields()).sum(),
            Shape::Array { items: Some(i), .. } => i.fields(),
            _ => 0,
        }
    }

    fn words(&self) -> Vec<String> {
        match self {
            Shape::Mixed { types } => types.clone(),
            s => vec![s.word().to_string()],
        }
    }

    /// The shape of a place holding both.
    pub(crate) fn merge(self, other: Shape) -> Shape {
        use Shape::*;
        match (self, other) {
            (Null, x) | (x, Null) => x,
            (Int, Float) | (Float, Int) => Float,
            (String { sample }, String { sample: s2 }) => String {
                sample: sample.or(s2),
            },
            (
                Object { fields, more },
                Object {
                    fields: f2,
                    more: m2,
                },
            ) => Object {
                fields: merge_fields(fields, f2),
                more: more.max(m2),
            },
            (Array { len, items }, Array { len: l2, items: i2 }) => Array {
                len: if len == l2 {
                    len
                } else {
                    Count::at_least(len.value.max(l2.value))
                },
                items: match (items, i2) {
                    (Some(a), Some(b)) => Some(Box::new(a.merge(*b))),
                    (a, b) => a.or(b),
                },
            },
            (a, b) if a.word() == b.word() => a,
            (a, b) => {
                let mut types = a.words();
                for t in b.words() {
                    if !types.contains(&t) {
                        types.push(t);
                    }
                }
                Mixed { types }
            }
        }
    }
}

fn merge_fields(mut a: Vec<Field>, b: Vec<Field>) -> Vec<Field> {
    for f in a.iter_mut() {
        if !b.iter().any(|g| g.name == f.name) {
            f.optional = true;
        }
    }
    for g in b {
        match a.iter().position(|f| f.name == g.name) {
            Some(i) => {
                let f = &mut a[i];
                let null = matches!(f.shape, Shape::Null) || matches!(g.shape, Shape::Null);
                let shape = std::mem::replace(&mut f.shape, Shape::Null);
                f.shape = shape.merge(g.shape);
                f.optional |= g.optional || null;
            }
            None if a.len() < MAX_FIELDS => a.push(Field {
                optional: true,
                ..g
            }),
            None => {}
        }
    }
    a
}

enum Stop {
    Io(io::Error),
    Syntax(u64),
    Budget,
}

impl From<io::Error> for Stop {
    fn from(e: io::Error) -> Self {
        Stop::Io(e)
    }
}

/// A pull parser that keeps only shapes.
struct Parser<R: Read> {
    r: BufReader<R>,
    pos: u64,
    budget: u64,
    /// The budget ran out inside a value: every level returns what it has.
    stopped: bool,
    /// Keys that may still be recorded (`FIELD_BUDGET`).
    fields_left: usize,
    /// A value nested deeper than `MAX_NESTING` was skipped.
    too_deep: bool,
}

impl<R: Read> Parser<R> {
    fn new(r: R, budget: u64) -> Self {
        Parser {
            r: BufReader::with_capacity(read::CHUNK, r),
            pos: 0,
            budget,
            stopped: false,
            fields_left: FIELD_BUDGET,
            too_deep: false,
        }
    }

    fn peek(&mut self) -> Result<Option<u8>, Stop> {
        if self.pos >= self.budget {
            return Err(Stop::Budget);
        }
        Ok(self.r.fill_buf()?.first().copied())
    }

    fn bump(&mut self) {
        self.r.consume(1);
        self.pos += 1;
    }

    fn next(&mut self) -> Result<u8, Stop> {
        match self.peek()? {
            Some(b) => {
                self.bump();
                Ok(b)
            }
            None => Err(Stop::Syntax(self.pos)),
        }
    }

    fn ws(&mut self) -> Result<Option<u8>, Stop> {
        loop {
            match self.peek()? {
                Some(b) if b.is_ascii_whitespace() => self.bump(),
                other => return Ok(other),
            }
        }
    }

    fn expect(&mut self, word: &[u8]) -> Result<(), Stop> {
        for &w in word {
            if self.next()? != w {
                return Err(Stop::Syntax(self.pos));
            }
        }
        Ok(())
    }

    /// A string (the opening quote next); its first characters kept.
    fn string(&mut self, keep: usize) -> Result<String, Stop> {
        self.expect(b"\"")?;
        let mut kept = Vec::new();
        loop {
            // Whole runs of plain bytes at once.
            let buf = self.r.fill_buf()?;
            if buf.is_empty() {
                return Err(Stop::Syntax(self.pos));
            }
            let run = buf
                .iter()
                .position(|&b| b == b'"' || b == b'\\')
                .unwrap_or(buf.len());
            let run = run.min((self.budget.saturating_sub(self.pos)) as usize);
            if kept.len() < keep * 4 {
                let take = run.min(keep * 4 - kept.len());
                kept.extend_from_slice(&buf[..take]);
            }
            self.r.consume(run);
            self.pos += run as u64;
            match self.next()? {
                b'"' => break,
                b'\\' => {
                    let e = self.next()?;
                    if e == b'u' {
                        for _ in 0..4 {
                            self.next()?;
                        }
                        kept.push(b'?');
                    } else {
                        kept.push(e);
                    }
                }
                b => kept.push(b),
            }
        }
        let s = String::from_utf8_lossy(&kept);
        Ok(s.chars()
            .take(keep)
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect())
    }

    fn value(&mut self, depth: usize, record: bool) -> Result<Shape, Stop> {
        match self.ws()? {
            Some(b'{') if depth >= MAX_NESTING => Ok(Shape::Object {
                fields: Vec::new(),
                more: self.skip_nested()?,
            }),
            Some(b'[') if depth >= MAX_NESTING => Ok(Shape::Array {
                len: Count::exact(self.skip_nested()?),
                items: None,
            }),
            Some(b'{') => self.object(depth, record),
            Some(b'[') => self.array(depth, record),
            Some(b'"') => {
                let s = self.string(if record { 40 } else { 0 })?;
                Ok(Shape::String {
                    sample: (record && !s.is_empty()).then_some(s),
                })
            }
            Some(b't') => self.expect(b"true").map(|_| Shape::Bool),
            Some(b'f') => self.expect(b"false").map(|_| Shape::Bool),
            Some(b'n') => self.expect(b"null").map(|_| Shape::Null),
            Some(b'-' | b'0'..=b'9') => {
                let mut float = false;
                while let Some(b) = self.peek()? {
                    match b {
                        b'0'..=b'9' | b'-' | b'+' => {}
                        b'.' | b'e' | b'E' => float = true,
                        _ => break,
                    }
                    self.bump();
                }
                Ok(if float { Shape::Float } else { Shape::Int })
            }
            _ => Err(Stop::Syntax(self.pos)),
        }
    }

    /// Past the object or array that begins here, in a loop (no recursion
    /// however deep it goes): the values (or keys) of its own level.
    fn skip_nested(&mut self) -> Result<u64, Stop> {
        self.too_deep = true;
        let mut depth = 0usize;
        let mut commas = 0u64;
        let mut any = false;
        loop {
            match self.peek()? {
                None => return Err(Stop::Syntax(self.pos)),
                Some(b'"') => {
                    any |= depth == 1;
                    self.string(0)?;
                }
                Some(b'{' | b'[') => {
                    any |= depth == 1;
                    depth += 1;
                    self.bump();
                }
                Some(b'}' | b']') => {
                    self.bump();
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        return Ok(if any { commas + 1 } else { 0 });
                    }
                }
                Some(b',') => {
                    commas += u64::from(depth == 1);
                    self.bump();
                }
                Some(b) => {
                    any |= depth == 1 && !b.is_ascii_whitespace();
                    self.bump();
                }
            }
        }
    }

    fn object(&mut self, depth: usize, record: bool) -> Result<Shape, Stop> {
        self.bump();
        let mut fields: Vec<Field> = Vec::new();
        let mut more = 0;
        if self.ws()? == Some(b'}') {
            self.bump();
            return Ok(Shape::Object { fields, more });
        }
        loop {
            let step = (|| -> Result<bool, Stop> {
                self.ws()?;
                let keep = record
                    && depth <= MAX_DEPTH
                    && fields.len() < MAX_FIELDS
                    && self.fields_left > 0;
                if keep {
                    self.fields_left -= 1;
                }
                let name = self.string(if keep { 64 } else { 0 })?;
                if self.ws()? != Some(b':') {
                    return Err(Stop::Syntax(self.pos));
                }
                self.bump();
                let shape = self.value(depth + 1, keep)?;
                if keep {
                    fields.push(Field {
                        name,
                        shape,
                        optional: false,
                    });
                } else {
                    more += 1;
                }
                match self.ws()? {
                    Some(b',') => {
                        self.bump();
                        Ok(true)
                    }
                    Some(b'}') => {
                        self.bump();
                        Ok(false)
                    }
                    _ => Err(Stop::Syntax(self.pos)),
                }
            })();
            match step {
                Ok(true) if !self.stopped => {}
                Ok(_) => return Ok(Shape::Object { fields, more }),
                Err(Stop::Budget) => {
                    self.stopped = true;
                    return Ok(Shape::Object { fields, more });
                }
                Err(e) => return Err(e),
            }
        }
    }

    fn array(&mut self, depth: usize, record: bool) -> Result<Shape, Stop> {
        self.bump();
        let mut len = 0u64;
        let mut items: Option<Shape> = None;
        if self.ws()? == Some(b']') {
            self.bump();
            return Ok(Shape::Array {
                len: Count::exact(0),
                items: None,
            });
        }
        loop {
            let step = (|| -> Result<bool, Stop> {
                let keep = record && len < SAMPLE_ITEMS && depth < ARRAY_DEPTH;
                let shape = self.value(depth + 1, keep)?;
                len += 1;
                if keep {
                    items = Some(match items.take() {
                        Some(i) => i.merge(shape),
                        None => shape,
                    });
                }
                match self.ws()? {
                    Some(b',') => {
                        self.bump();
                        Ok(true)
                    }
                    Some(b']') => {
                        self.bump();
                        Ok(false)
                    }
                    _ => Err(Stop::Syntax(self.pos)),
                }
            })();
            let done = |len, items: Option<Shape>, exact: bool| Shape::Array {
                len: if exact {
                    Count::exact(len)
                } else {
                    Count::at_least(len)
                },
                items: items.map(Box::new),
            };
            match step {
                Ok(true) if !self.stopped => {}
                Ok(_) => return Ok(done(len, items, !self.stopped)),
                Err(Stop::Budget) => {
                    self.stopped = true;
                    return Ok(done(len, items, false));
                }
                Err(e) => return Err(e),
            }
        }
    }
}

/// One JSON document's shape, or None when the text is not one JSON value
/// (it may be JSON Lines, or not JSON at all).
pub(crate) fn describe(
    src: &Source,
    head: &[u8],
    notes: &mut Vec<String>,
) -> io::Result<Option<Json>> {
    let bom = if head.starts_with(&[0xEF, 0xBB, 0xBF]) {
        3
    } else {
        0
    };
    let budget = if src.size <= EXACT_BYTES {
        src.size + 1
    } else {
        HEAD_BYTES as u64
    };
    let mut p = Parser::new(src.reader_at(bom)?, budget);
    let start = match p.ws() {
        Ok(_) => p.pos,
        Err(Stop::Io(e)) => return Err(e),
        Err(_) => return Ok(None),
    };
    let shape = match p.value(0, true) {
        Ok(s) => s,
        Err(Stop::Io(e)) => return Err(e),
        Err(Stop::Syntax(at)) => {
            notes.push(format!("not valid JSON at byte {}", at + bom));
            return Ok(None);
        }
        Err(Stop::Budget) => {
            notes.push("its first value is larger than what is read".into());
            return Ok(None);
        }
    };
    if p.too_deep {
        notes.push(format!(
            "it nests values more than {MAX_NESTING} levels deep: what lies deeper is counted, not described"
        ));
    }
    if !p.stopped {
        match p.ws() {
            Ok(None) | Err(Stop::Budget) => {}
            Ok(Some(_)) => return Ok(None),
            Err(Stop::Io(e)) => return Err(e),
            Err(Stop::Syntax(_)) => {}
        }
    }
    let shape = match shape {
        // The top array stopped: its length from the bytes read.
        Shape::Array { len, items }
            if len.how == Counted::AtLeast && p.pos > start && len.value > 0 =>
        {
            let body = src.size.saturating_sub(start + bom);
            let per = (p.pos - start) as f64 / len.value as f64;
            notes.push(format!(
                "read the first {} of it; the length is an estimate",
                crate::bytes(p.pos)
            ));
            Shape::Array {
                len: Count::estimate((body as f64 / per).round() as u64),
                items,
            }
        }
        s => {
            if p.stopped {
                notes.push(format!(
                    "read the first {} of it; what follows is not described",
                    crate::bytes(p.pos)
                ));
            }
            s
        }
    };
    Ok(Some(Json { shape }))
}

/// The first two lines each look like one JSON object or array.
pub(crate) fn looks_like_lines(body: &[u8]) -> bool {
    let mut lines = body
        .split(|&b| b == b'\n')
        .map(|l| l.trim_ascii())
        .filter(|l| !l.is_empty());
    let (Some(a), Some(b)) = (lines.next(), lines.next()) else {
        return false;
    };
    matches!(a.first(), Some(b'{' | b'['))
        && matches!(a.last(), Some(b'}' | b']'))
        && matches!(b.first(), Some(b'{' | b'['))
}

/// JSON Lines: the records sampled from the head merged into one shape;
/// the records counted (small files) or estimated.
pub(crate) fn describe_lines(
    src: &Source,
    body: &[u8],
    whole: bool,
    notes: &mut Vec<String>,
) -> io::Result<Option<JsonLines>> {
    let complete = if whole {
        body
    } else {
        match body.iter().rposition(|&b| b == b'\n') {
            Some(p) => &body[..=p],
            None => body,
        }
    };
    let mut shape: Option<Shape> = None;
    let mut sampled = 0u64;
    let mut invalid = 0u64;
    let mut too_deep = false;
    for line in complete
        .split(|&b| b == b'\n')
        .map(|l| l.trim_ascii())
        .filter(|l| !l.is_empty())
        .take(SAMPLE_LINES)
    {
        sampled += 1;
        let mut p = Parser::new(line, line.len() as u64 + 1);
        match p.value(0, true) {
            Ok(s) if !p.stopped && matches!(p.ws(), Ok(None) | Err(Stop::Budget)) => {
                let merged = match shape.take() {
                    Some(a) => a.merge(s),
                    None => s,
                };
                // The records merged so far hold as many keys as are kept:
                // the lines after are counted, not merged.
                let full = merged.fields() >= FIELD_BUDGET;
                shape = Some(merged);
                if full {
                    break;
                }
            }
            _ => invalid += 1,
        }
        too_deep |= p.too_deep;
    }
    if too_deep {
        notes.push(format!(
            "some records nest values more than {MAX_NESTING} levels deep: what lies deeper is counted, not described"
        ));
    }
    let Some(shape) = shape else {
        return Ok(None);
    };
    if invalid * 2 > sampled {
        return Ok(None);
    }
    let lines_in = |bytes: &[u8]| {
        bytes
            .split(|&b| b == b'\n')
            .filter(|l| !l.trim_ascii().is_empty())
            .count() as u64
    };
    let records = if whole {
        Count::exact(lines_in(complete))
    } else if src.size <= EXACT_BYTES {
        let mut n = 0;
        let mut last = b'\n';
        src.stream(0, |chunk| {
            n += read::newlines(chunk);
            if let Some(&b) = chunk.last() {
                last = b;
            }
        })?;
        Count::exact(n + u64::from(last != b'\n'))
    } else {
        let n = read::newlines(complete).max(1);
        let per = complete.len() as f64 / n as f64;
        notes.push(format!(
            "records estimated from the first {}",
            crate::bytes(complete.len() as u64)
        ));
        Count::estimate((src.size as f64 / per).round() as u64)
    };
    Ok(Some(JsonLines {
        records,
        shape,
        sampled,
        invalid,
    }))
}
