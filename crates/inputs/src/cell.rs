//! A cell's type, inferred from its text, and a column's from its cells.

use serde::{Deserialize, Serialize};

use crate::Column;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CellKind {
    Int,
    Float,
    Bool,
    Date,
    Datetime,
    Text,
    /// Every cell sampled was empty.
    Empty,
}

impl CellKind {
    pub(crate) fn word(self) -> &'static str {
        match self {
            CellKind::Int => "int",
            CellKind::Float => "float",
            CellKind::Bool => "bool",
            CellKind::Date => "date",
            CellKind::Datetime => "datetime",
            CellKind::Text => "text",
            CellKind::Empty => "empty",
        }
    }

    /// The kind of a column holding both.
    pub(crate) fn merge(self, other: CellKind) -> CellKind {
        use CellKind::*;
        match (self, other) {
            (a, b) if a == b => a,
            (Empty, x) | (x, Empty) => x,
            (Int, Float) | (Float, Int) => Float,
            (Date, Datetime) | (Datetime, Date) => Datetime,
            _ => Text,
        }
    }

    /// Whether the kind says more than "text".
    pub(crate) fn typed(self) -> bool {
        !matches!(self, CellKind::Text | CellKind::Empty)
    }
}

/// The kind of one cell's text.
pub(crate) fn infer(raw: &str) -> CellKind {
    let s = raw.trim();
    if s.is_empty() {
        return CellKind::Empty;
    }
    if is_int(s) {
        return CellKind::Int;
    }
    if is_float(s) {
        return CellKind::Float;
    }
    if matches!(
        s.to_ascii_lowercase().as_str(),
        "true" | "false" | "yes" | "no"
    ) {
        return CellKind::Bool;
    }
    if let Some(rest) = date_prefix(s) {
        if rest.is_empty() {
            return CellKind::Date;
        }
        if let Some(t) = rest.strip_prefix(['T', ' '])
            && is_time(t)
        {
            return CellKind::Datetime;
        }
    }
    CellKind::Text
}

fn is_int(s: &str) -> bool {
    let d = s.strip_prefix(['-', '+']).unwrap_or(s);
    !d.is_empty() && d.len() <= 19 && d.bytes().all(|b| b.is_ascii_digit())
}

fn is_float(s: &str) -> bool {
    let lower = s.to_ascii_lowercase();
    if matches!(lower.as_str(), "nan" | "inf" | "-inf") {
        return true;
    }
    s.bytes().any(|b| b.is_ascii_digit())
        && s.bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'-' | b'+' | b'e' | b'E'))
        && s.parse::<f64>().is_ok()
}

/// A date at the start of `s` (2024-01-31, 2024/1/31, 31/01/2024,
/// 01.31.2024): what follows it.
fn date_prefix(s: &str) -> Option<&str> {
    let b = s.as_bytes();
    let digits = |from: usize| b[from..].iter().take_while(|c| c.is_ascii_digit()).count();
    let a = digits(0);
    let sep = *b.get(a)?;
    if !matches!(sep, b'-' | b'/' | b'.') {
        return None;
    }
    let m = digits(a + 1);
    if b.get(a + 1 + m) != Some(&sep) {
        return None;
    }
    let c = digits(a + 2 + m);
    let end = a + 2 + m + c;
    let ok = matches!((a, m, c), (4, 1..=2, 1..=2) | (1..=2, 1..=2, 4));
    ok.then(|| &s[end..])
}

/// 13:45, 13:45:07, 13:45:07.123, with Z or an offset.
fn is_time(t: &str) -> bool {
    let b = t.as_bytes();
    let mut i = 0;
    let mut parts = 0;
    loop {
        let n = b[i..].iter().take_while(|c| c.is_ascii_digit()).count();
        if !(1..=2).contains(&n) {
            return false;
        }
        i += n;
        parts += 1;
        if b.get(i) == Some(&b':') && parts < 3 {
            i += 1;
            continue;
        }
        break;
    }
    if parts < 2 {
        return false;
    }
    if b.get(i) == Some(&b'.') {
        i += 1;
        i += b[i..].iter().take_while(|c| c.is_ascii_digit()).count();
    }
    let rest = t[i..].trim();
    rest.is_empty()
        || rest == "Z"
        || ((rest.starts_with('+') || rest.starts_with('-'))
            && rest[1..].bytes().all(|c| c.is_ascii_digit() || c == b':')
            && rest.len() <= 6)
}

/// A cell's text cut for a sample, on one line (a newline or another
/// control character in it becomes a space).
pub(crate) fn sample(s: &str) -> String {
    let s: String = s
        .trim()
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if s.chars().count() <= 24 {
        return s;
    }
    let mut cut: String = s.chars().take(23).collect();
    cut.push('…');
    cut
}

/// A column built cell by cell.
#[derive(Default)]
pub(crate) struct ColumnBuilder {
    kind: Option<CellKind>,
    samples: Vec<String>,
    empty: u64,
}

impl ColumnBuilder {
    pub(crate) fn add(&mut self, raw: &str) {
        self.add_kind(raw, infer(raw));
    }

    pub(crate) fn add_kind(&mut self, raw: &str, kind: CellKind) {
        if kind == CellKind::Empty {
            self.empty += 1;
        } else if self.samples.len() < 3 {
            let s = sample(raw);
            if !self.samples.contains(&s) {
                self.samples.push(s);
            }
        }
        self.kind = Some(match self.kind {
            Some(k) => k.merge(kind),
            None => kind,
        });
    }

    pub(crate) fn kind(&self) -> CellKind {
        self.kind.unwrap_or(CellKind::Empty)
    }

    pub(crate) fn finish(self, name: String) -> Column {
        Column {
            name,
            kind: self.kind(),
            samples: self.samples,
            empty: self.empty,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_are_typed_by_their_text() {
        assert_eq!(infer("42"), CellKind::Int);
        assert_eq!(infer("-7"), CellKind::Int);
        assert_eq!(infer("3.25"), CellKind::Float);
        assert_eq!(infer("1e-3"), CellKind::Float);
        assert_eq!(infer("True"), CellKind::Bool);
        assert_eq!(infer("2024-01-31"), CellKind::Date);
        assert_eq!(infer("31/01/2024"), CellKind::Date);
        assert_eq!(infer("2024-01-31T13:45:07Z"), CellKind::Datetime);
        assert_eq!(infer("2024-01-31 13:45"), CellKind::Datetime);
        assert_eq!(infer("2024-01-31 lunch"), CellKind::Text);
        assert_eq!(infer("e"), CellKind::Text);
        assert_eq!(infer("1.2.3"), CellKind::Text);
        assert_eq!(infer("  "), CellKind::Empty);
        assert_eq!(CellKind::Int.merge(CellKind::Float), CellKind::Float);
        assert_eq!(CellKind::Int.merge(CellKind::Empty), CellKind::Int);
        assert_eq!(CellKind::Int.merge(CellKind::Date), CellKind::Text);
    }
}
