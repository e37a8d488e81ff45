//! A small XML tokenizer for the parts of a workbook: tags with their
//! attributes, and text, with the five named entities and character
//! references decoded. No DTD is read (no entity of the file's own is
//! expanded), and no token may be longer than `MAX_TOKEN`: a reader that
//! keeps only what it needs never holds more than one token.

use std::io::{BufRead, BufReader, Read};

/// The longest tag or run of text read as one token (bytes).
const MAX_TOKEN: usize = 1 << 20;

pub(super) enum Tok {
    /// `<name a="v">` (or `<name/>`, `empty`): the local names (no prefix).
    Start {
        name: String,
        attrs: Vec<(String, String)>,
        empty: bool,
    },
    End(String),
    Text(String),
    Eof,
}

pub(super) struct Xml<R: Read> {
    r: BufReader<R>,
    raw: Vec<u8>,
    /// The '<' of the next tag was consumed with the text before it.
    after_lt: bool,
}

impl<R: Read> Xml<R> {
    pub(super) fn new(r: R) -> Xml<R> {
        Xml {
            r: BufReader::with_capacity(32 << 10, r),
            raw: Vec::new(),
            after_lt: false,
        }
    }

    /// Bytes up to (not including) `stop`, appended to `raw`; false at the end.
    fn until(&mut self, stop: u8) -> Result<bool, String> {
        loop {
            let buf = self.r.fill_buf().map_err(|e| e.to_string())?;
            if buf.is_empty() {
                return Ok(false);
            }
            let (take, found) = match buf.iter().position(|&b| b == stop) {
                Some(i) => (i, true),
                None => (buf.len(), false),
            };
            if self.raw.len() + take > MAX_TOKEN {
                return Err(format!(
                    "a part holds a token longer than {} KiB",
                    MAX_TOKEN >> 10
                ));
            }
            self.raw.extend_from_slice(&buf[..take]);
            self.r.consume(take + usize::from(found));
            if found {
                return Ok(true);
            }
        }
    }

    fn peek(&mut self) -> Result<Option<u8>, String> {
        Ok(self
            .r
            .fill_buf()
            .map_err(|e| e.to_string())?
            .first()
            .copied())
    }

    /// Bytes up to and including the sequence `end` (e.g. "-->"), dropped.
    fn skip_past(&mut self, end: &[u8]) -> Result<(), String> {
        let Some(&last) = end.last() else {
            return Ok(());
        };
        loop {
            self.raw.clear();
            if !self.until(last)? {
                return Ok(());
            }
            let before = &end[..end.len() - 1];
            if self.raw.ends_with(before) {
                return Ok(());
            }
        }
    }

    pub(super) fn next(&mut self) -> Result<Tok, String> {
        loop {
            self.raw.clear();
            if self.after_lt {
                self.after_lt = false;
            } else {
                let Some(b) = self.peek()? else {
                    return Ok(Tok::Eof);
                };
                if b != b'<' {
                    // Text runs to the next '<', which `until` consumes:
                    // the tag after it is read next time.
                    self.after_lt = self.until(b'<')?;
                    return Ok(Tok::Text(decode(&self.raw)));
                }
                self.r.consume(1);
            }
            if let Some(tok) = self.tag()? {
                return Ok(tok);
            }
        }
    }
}

impl<R: Read> Xml<R> {
    /// After '<': a tag, or None for a comment, PI, declaration.
    fn tag(&mut self) -> Result<Option<Tok>, String> {
        match self.peek()? {
            Some(b'?') => {
                self.skip_past(b"?>")?;
                return Ok(None);
            }
            Some(b'!') => return self.bang(),
            _ => {}
        }
        self.raw.clear();
        // A '>' inside a quoted attribute value does not end the tag.
        let mut quote: Option<u8> = None;
        loop {
            let buf = self.r.fill_buf().map_err(|e| e.to_string())?;
            if buf.is_empty() {
                return Ok(Some(Tok::Eof));
            }
            let mut end = None;
            for (i, &b) in buf.iter().enumerate() {
                match (quote, b) {
                    (None, b'"' | b'\'') => quote = Some(b),
                    (Some(q), _) if q == b => quote = None,
                    (None, b'>') => {
                        end = Some(i);
                        break;
                    }
                    _ => {}
                }
            }
            let take = end.unwrap_or(buf.len());
            if self.raw.len() + take > MAX_TOKEN {
                return Err(format!(
                    "a part holds a tag longer than {} KiB",
                    MAX_TOKEN >> 10
                ));
            }
            self.raw.extend_from_slice(&buf[..take]);
            self.r.consume(take + usize::from(end.is_some()));
            if end.is_some() {
                break;
            }
        }
        let raw = std::mem::take(&mut self.raw);
        let tok = parse_tag(&raw);
        self.raw = raw;
        Ok(Some(tok))
    }

    /// After "<!": a comment, CDATA (its text) or a declaration (skipped).
    fn bang(&mut self) -> Result<Option<Tok>, String> {
        self.raw.clear();
        let buf = self.r.fill_buf().map_err(|e| e.to_string())?;
        if buf.starts_with(b"!--") {
            self.r.consume(3);
            self.skip_past(b"-->")?;
            return Ok(None);
        }
        if buf.starts_with(b"![CDATA[") {
            self.r.consume(8);
            let mut text = Vec::new();
            loop {
                self.raw.clear();
                if !self.until(b'>')? {
                    break;
                }
                text.extend_from_slice(&self.raw);
                if text.ends_with(b"]]") {
                    text.truncate(text.len() - 2);
                    break;
                }
                text.push(b'>');
                if text.len() > MAX_TOKEN {
                    return Err("a part holds a CDATA section longer than 1 MiB".into());
                }
            }
            return Ok(Some(Tok::Text(String::from_utf8_lossy(&text).into_owned())));
        }
        // <!DOCTYPE ...>, with an internal subset in [...]: never expanded.
        let mut depth = 0usize;
        loop {
            let Some(b) = self.peek()? else {
                return Ok(None);
            };
            self.r.consume(1);
            match b {
                b'[' => depth += 1,
                b']' => depth = depth.saturating_sub(1),
                b'>' if depth == 0 => return Ok(None),
                _ => {}
            }
        }
    }
}

fn local(name: &[u8]) -> String {
    let name = match name.iter().rposition(|&b| b == b':') {
        Some(i) => &name[i + 1..],
        None => name,
    };
    String::from_utf8_lossy(name).into_owned()
}

/// `name a="v" b='w'` or `/name`, with a trailing `/` for an empty tag.
fn parse_tag(raw: &[u8]) -> Tok {
    if let Some(rest) = raw.strip_prefix(b"/") {
        return Tok::End(local(rest.trim_ascii()));
    }
    let (raw, empty) = match raw.strip_suffix(b"/") {
        Some(r) => (r, true),
        None => (raw, false),
    };
    let name_end = raw
        .iter()
        .position(|b| b.is_ascii_whitespace())
        .unwrap_or(raw.len());
    let name = local(&raw[..name_end]);
    let mut attrs = Vec::new();
    let mut at = name_end;
    while at < raw.len() {
        while at < raw.len() && raw[at].is_ascii_whitespace() {
            at += 1;
        }
        let key_start = at;
        while at < raw.len() && raw[at] != b'=' && !raw[at].is_ascii_whitespace() {
            at += 1;
        }
        let key = &raw[key_start..at];
        while at < raw.len() && (raw[at].is_ascii_whitespace() || raw[at] == b'=') {
            at += 1;
        }
        let Some(&quote) = raw.get(at) else { break };
        if quote != b'"' && quote != b'\'' {
            at += 1;
            continue;
        }
        let value_start = at + 1;
        let value_end = raw[value_start..]
            .iter()
            .position(|&b| b == quote)
            .map_or(raw.len(), |p| value_start + p);
        if !key.is_empty() {
            attrs.push((local(key), decode(&raw[value_start..value_end])));
        }
        at = value_end + 1;
    }
    Tok::Start { name, attrs, empty }
}

/// Text with `&lt;` `&gt;` `&amp;` `&quot;` `&apos;` and `&#N;` `&#xN;`
/// decoded; any other reference is kept as written.
pub(super) fn decode(raw: &[u8]) -> String {
    let text = String::from_utf8_lossy(raw);
    if !text.contains('&') {
        return text.into_owned();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest: &str = &text;
    while let Some(i) = rest.find('&') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        let Some(end) = after.find(';').filter(|&e| e <= 10) else {
            out.push('&');
            rest = after;
            continue;
        };
        let name = &after[..end];
        let c = match name {
            "lt" => Some('<'),
            "gt" => Some('>'),
            "amp" => Some('&'),
            "quot" => Some('"'),
            "apos" => Some('\''),
            _ => name
                .strip_prefix("#x")
                .or_else(|| name.strip_prefix("#X"))
                .and_then(|h| u32::from_str_radix(h, 16).ok())
                .or_else(|| name.strip_prefix('#').and_then(|d| d.parse().ok()))
                .and_then(char::from_u32),
        };
        match c {
            Some(c) => {
                out.push(c);
                rest = &after[end + 1..];
            }
            None => {
                out.push('&');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// An attribute's value by local name.
pub(super) fn attr<'a>(attrs: &'a [(String, String)], name: &str) -> Option<&'a str> {
    attrs
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(xml: &str) -> Vec<String> {
        let mut x = Xml::new(xml.as_bytes());
        let mut out = Vec::new();
        loop {
            match x.next().unwrap() {
                Tok::Start { name, attrs, empty } => out.push(format!(
                    "<{name}{}{}>",
                    attrs
                        .iter()
                        .map(|(k, v)| format!(" {k}={v}"))
                        .collect::<String>(),
                    if empty { "/" } else { "" }
                )),
                Tok::End(n) => out.push(format!("</{n}>")),
                Tok::Text(t) => out.push(t),
                Tok::Eof => return out,
            }
        }
    }

    #[test]
    fn tags_attributes_text_and_entities() {
        assert_eq!(
            all(
                "<?xml version=\"1.0\"?><!DOCTYPE x [<!ENTITY a \"b\">]><!-- c > d --><x:a p:k=\"1 &amp; 2\" j='>'>t&lt;&#65;&#x42;&unknown;<![CDATA[<raw>]]><b/></x:a>"
            ),
            ["<a k=1 & 2 j=>>", "t<AB&unknown;", "<raw>", "<b/>", "</a>"]
        );
    }
}
