//! Reading a tape, line by line, in one pass: the damage bookkeeping every
//! reader shares (a cut-off last line, unreadable lines before it, a newer
//! format refused), the decoding of a line into a `Record`, and a reader that
//! hands a tape file over in batches (the workbench draws its first frame
//! from the first batch while the rest is still being read).
//!
//! Decoding is typed: a line is deserialized into the `Event` enum directly.
//! The derived `Record` (its event `flatten`ed beside `seq` and `t_ms`)
//! buffers every line into serde's generic content twice before it builds
//! the event; a line as the tape writer writes it (`{"seq":N,"t_ms":N,...`)
//! has its two numbers read by hand and the event parsed from the same line
//! (its variant ignores the two fields it does not know), and the events a
//! long tape is mostly made of (output, streamed deltas and reasoning) are
//! read straight into their payload structs (`OutputEvent`, ...). Any other
//! line, and any line this fast path cannot read, goes through the derived
//! `Record`, so what is accepted and every error message are the same as
//! before.

use codeloop_protocol::present::plural;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use super::event::{Event, Record, TAPE_VERSION};
use super::tape::{SkippedLine, TapeError};

/// Bytes the file reader asks the disk for at once.
const READ_BUFFER: usize = 1 << 20;

/// What a whole tape held beside its records.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TapeEnd {
    /// The last line was cut off mid-write: its 1-based line number and how many bytes it had.
    pub truncated_tail: Option<(usize, usize)>,
    /// Unreadable lines before the last, skipped.
    pub skipped: Vec<SkippedLine>,
    /// The session recorded its end (a `finished` event).
    pub finished: bool,
}

impl TapeEnd {
    /// One line for the person opening the tape about what could not be
    /// read, or None when every line was read.
    pub fn damage_report(&self) -> Option<String> {
        damage_report(&self.skipped, self.truncated_tail)
    }
}

/// What could not be read, in one line (None when everything was read).
pub(super) fn damage_report(
    skipped: &[SkippedLine],
    truncated_tail: Option<(usize, usize)>,
) -> Option<String> {
    let mut parts = Vec::new();
    if !skipped.is_empty() {
        let shown: Vec<String> = skipped.iter().take(3).map(SkippedLine::to_string).collect();
        let more = skipped.len().saturating_sub(shown.len());
        parts.push(format!(
            "{} unreadable line{} skipped ({}{})",
            skipped.len(),
            plural(skipped.len()),
            shown.join("; "),
            if more > 0 {
                format!("; {more} more")
            } else {
                String::new()
            }
        ));
    }
    if let Some((line, bytes)) = truncated_tail {
        parts.push(format!(
            "the last line ({line}) was cut off after {bytes} bytes"
        ));
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}

/// The lines of one tape, fed in order: keeps the line count, the bad line
/// waiting to be known as damage (a line follows it) or a cut-off tail (none
/// does), and whether any record was read.
#[derive(Debug)]
pub(super) struct LineReader {
    label: PathBuf,
    line_no: usize,
    first: bool,
    records: usize,
    pending_bad: Option<(usize, usize, String)>,
    end: TapeEnd,
}

impl LineReader {
    pub(super) fn new(label: &Path) -> LineReader {
        LineReader {
            label: label.to_path_buf(),
            line_no: 0,
            first: true,
            records: 0,
            pending_bad: None,
            end: TapeEnd::default(),
        }
    }

    /// One line, its line end included if it has one: its record, None for
    /// a blank or unreadable line, or an error if the tape is of a newer format.
    pub(super) fn line(&mut self, line: &[u8]) -> Result<Option<Record>, TapeError> {
        self.line_no += 1;
        if let Some((line, _, message)) = self.pending_bad.take() {
            // A bad line followed by more lines is damage, not a cut-off tail.
            self.end.skipped.push(SkippedLine { line, message });
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            return Ok(None);
        }
        if std::mem::take(&mut self.first) {
            let text = String::from_utf8_lossy(line);
            if let Some(found) = declared_version(&text)
                && found > u64::from(TAPE_VERSION)
            {
                return Err(TapeError::NewerVersion {
                    path: self.label.clone(),
                    found,
                    supported: TAPE_VERSION,
                });
            }
        }
        let end = line
            .iter()
            .rposition(|b| !matches!(b, b'\n' | b'\r'))
            .map_or(0, |i| i + 1);
        match decode(&line[..end]) {
            Ok(record) => {
                self.records += 1;
                self.end.finished |= matches!(record.event, Event::Finished(_));
                Ok(Some(record))
            }
            Err(message) => {
                let text = String::from_utf8_lossy(line);
                if !text.trim().is_empty() {
                    self.pending_bad = Some((self.line_no, line.len(), message));
                }
                Ok(None)
            }
        }
    }

    /// After the last line: what the tape held beside its records, or an
    /// error if it held no record at all.
    pub(super) fn finish(mut self) -> Result<TapeEnd, TapeError> {
        self.end.truncated_tail = self
            .pending_bad
            .take()
            .map(|(line, bytes, _)| (line, bytes));
        if self.records == 0 {
            return Err(match (self.end.skipped.first(), self.end.truncated_tail) {
                (Some(bad), _) => TapeError::Corrupt {
                    path: self.label,
                    line: bad.line,
                    message: bad.message.clone(),
                },
                (None, Some((line, bytes))) => TapeError::CutOff {
                    path: self.label,
                    line,
                    bytes,
                },
                (None, None) => TapeError::Empty { path: self.label },
            });
        }
        Ok(self.end)
    }
}

/// The format version a tape's first line declares, if it is a session start.
/// Read as plain JSON, so a newer tape whose events this codeloop cannot
/// parse still says which version it is.
fn declared_version(line: &str) -> Option<u64> {
    let value: serde_json::Value = serde_json::from_str(line).ok()?;
    if value.get("type")?.as_str()? != "session_started" {
        return None;
    }
    value.get("version")?.as_u64()
}

/// A line into a record (see the module's doc for the fast path); the
/// error message is the derived `Record`'s.
fn decode(line: &[u8]) -> Result<Record, String> {
    if let Some((seq, t_ms, rest)) = head(line) {
        let event = match tag(rest) {
            Some(b"output") => typed(line).map(Event::Output),
            Some(b"model_delta") => typed(line).map(Event::ModelDelta),
            Some(b"model_reasoning") => typed(line).map(Event::ModelReasoning),
            _ => serde_json::from_slice::<Event>(line).ok(),
        };
        if let Some(event) = event {
            return Ok(Record { seq, t_ms, event });
        }
    }
    match serde_json::from_slice::<Record>(line) {
        Ok(record) => Ok(record),
        // Not UTF-8: read it as the lossy text it shows as.
        Err(_) if std::str::from_utf8(line).is_err() => {
            serde_json::from_str::<Record>(&String::from_utf8_lossy(line))
                .map_err(|e| e.to_string())
        }
        Err(e) => Err(e.to_string()),
    }
}

fn typed<T: serde::de::DeserializeOwned>(line: &[u8]) -> Option<T> {
    serde_json::from_slice::<T>(line).ok()
}

/// `{"seq":N,"t_ms":N,` as the writer starts every line: the two numbers
/// and what follows them.
fn head(line: &[u8]) -> Option<(u64, u64, &[u8])> {
    let rest = line.strip_prefix(br#"{"seq":"#)?;
    let (seq, rest) = number(rest)?;
    let rest = rest.strip_prefix(br#","t_ms":"#)?;
    let (t_ms, rest) = number(rest)?;
    Some((seq, t_ms, rest.strip_prefix(b",")?))
}

fn number(bytes: &[u8]) -> Option<(u64, &[u8])> {
    let digits = bytes.iter().take_while(|b| b.is_ascii_digit()).count();
    // JSON has no leading zeros: leave such a line to the derived parser's error.
    if digits == 0 || digits > 20 || (digits > 1 && bytes[0] == b'0') {
        return None;
    }
    let (n, rest) = bytes.split_at(digits);
    let n = std::str::from_utf8(n).ok()?.parse().ok()?;
    Some((n, rest))
}

/// The event's tag when it comes first (`"type":"output",`).
fn tag(rest: &[u8]) -> Option<&[u8]> {
    let rest = rest.strip_prefix(br#""type":""#)?;
    let end = rest.iter().position(|b| *b == b'"')?;
    matches!(rest.get(end + 1), Some(b',' | b'}')).then(|| &rest[..end])
}

/// A tape file read in batches of records, in one pass, as the disk gives it.
pub struct TapeStream {
    file: BufReader<File>,
    lines: LineReader,
    buf: Vec<u8>,
    read: u64,
    total: u64,
    eof: bool,
}

impl TapeStream {
    pub fn open(path: &Path) -> Result<TapeStream, TapeError> {
        let read_err = |source| TapeError::Read {
            path: path.to_path_buf(),
            source,
        };
        let file = crate::tape::open_to_read(path).map_err(read_err)?;
        let total = file.metadata().map_err(read_err)?.len();
        Ok(TapeStream {
            file: BufReader::with_capacity(READ_BUFFER, file),
            lines: LineReader::new(path),
            buf: Vec::new(),
            read: 0,
            total,
            eof: false,
        })
    }

    /// The next records, at most `max` of them; empty at the end of the file.
    pub fn batch(&mut self, max: usize) -> Result<Vec<Record>, TapeError> {
        let mut records = Vec::with_capacity(max.min(16 * 1024));
        while records.len() < max && !self.eof {
            self.buf.clear();
            let n = self
                .file
                .read_until(b'\n', &mut self.buf)
                .map_err(|source| TapeError::Read {
                    path: self.lines.label.clone(),
                    source,
                })?;
            if n == 0 {
                self.eof = true;
                break;
            }
            self.read += n as u64;
            if let Some(r) = self.lines.line(&self.buf)? {
                records.push(r);
            }
        }
        let path = &self.lines.label;
        crate::tape::checked(&records, path, path.parent())?;
        Ok(records)
    }

    /// Bytes read so far and the file's size when it was opened.
    pub fn progress(&self) -> (u64, u64) {
        (self.read, self.total.max(self.read))
    }

    /// The file was read to its end.
    pub fn at_end(&self) -> bool {
        self.eof
    }

    /// After the last batch: what the tape held beside its records.
    pub fn finish(self) -> Result<TapeEnd, TapeError> {
        self.lines.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        Event, ModelDeltaEvent, ModelReasoningEvent, NoticeEvent, NoticeLevel, OutputEvent,
        PlanErrorEvent, Record,
    };
    use codeloop_protocol::Stream;

    fn record(seq: u64, event: Event) -> Record {
        Record {
            seq,
            t_ms: seq.wrapping_mul(7),
            event,
        }
    }

    fn derived(line: &str) -> Result<Record, String> {
        serde_json::from_str::<Record>(line).map_err(|e| e.to_string())
    }

    #[test]
    fn the_fast_path_reads_what_the_derived_record_reads() {
        let records = [
            record(
                0,
                Event::Output(OutputEvent {
                    run_id: 3,
                    stream: Stream::Stderr,
                    text: "a \"quoted\"\tline\n\u{1b}[31mred\u{1b}[0m é\n".into(),
                }),
            ),
            record(
                1,
                Event::ModelDelta(ModelDeltaEvent {
                    call_id: 9,
                    text: "def f(x):\n".into(),
                }),
            ),
            record(
                2,
                Event::ModelReasoning(ModelReasoningEvent {
                    call_id: 9,
                    text: String::new(),
                }),
            ),
            record(
                3,
                Event::Notice(NoticeEvent {
                    level: NoticeLevel::Warning,
                    message: "other events go through the enum".into(),
                }),
            ),
            record(
                u64::MAX,
                Event::PlanError(PlanErrorEvent {
                    message: "x".into(),
                }),
            ),
        ];
        for r in &records {
            let line = serde_json::to_string(r).unwrap();
            assert!(head(line.as_bytes()).is_some(), "{line}");
            assert_eq!(decode(line.as_bytes()).as_ref(), Ok(r), "{line}");
        }
    }

    #[test]
    fn lines_the_writer_does_not_write_are_read_or_refused_as_before() {
        let lines = [
            // Another key order, spaces, the tag first: the derived path.
            r#"{"type":"output","run_id":1,"stream":"stdout","text":"x","seq":1,"t_ms":2}"#,
            r#"{"seq": 1, "t_ms": 2, "type": "output", "run_id": 1, "stream": "stdout", "text": "x"}"#,
            // A field the fast path does not know is ignored, as by the enum.
            r#"{"seq":1,"t_ms":2,"type":"output","run_id":1,"stream":"stdout","text":"x","later":true}"#,
            // Refused with the derived parser's words.
            r#"{"seq":01,"t_ms":2,"type":"output","run_id":1,"stream":"stdout","text":"x"}"#,
            r#"{"seq":1,"t_ms":2,"type":"output","run_id":1,"stream":"stdin","text":"x"}"#,
            r#"{"seq":1,"t_ms":2,"type":"output","run_id":1,"stream":"stdout"}"#,
            r#"{"seq":1,"t_ms":2,"type":"from_the_future","x":1}"#,
            r#"{"seq":1,"t_ms":2,"type":"model_delta","call_id":"nine","text":"x"}"#,
            r#"{"seq":99999999999999999999,"t_ms":2,"type":"plan_error","message":"x"}"#,
            r#"{"seq":1,"t_ms":2,"type":"output","#,
        ];
        for line in lines {
            assert_eq!(decode(line.as_bytes()), derived(line), "{line}");
        }
        // Not UTF-8: read as the text it shows as.
        let mut bytes = br#"{"seq":1,"t_ms":2,"type":"plan_error","message":"a"#.to_vec();
        bytes.extend([0xff, b'"', b'}']);
        let lossy = String::from_utf8_lossy(&bytes).into_owned();
        assert_eq!(decode(&bytes), derived(&lossy));
        assert!(decode(&bytes).is_ok());
    }

    #[test]
    fn a_tape_read_in_batches_is_the_tape_read_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tape.jsonl");
        let mut text = String::new();
        for i in 0..100u64 {
            let r = record(
                i,
                Event::Output(OutputEvent {
                    run_id: 1,
                    stream: Stream::Stdout,
                    text: format!("{i}\n"),
                }),
            );
            text += &serde_json::to_string(&r).unwrap();
            text += if i == 40 { "\n\nnot a record\n" } else { "\n" };
        }
        text += r#"{"seq":100,"t_ms":1,"ty"#;
        std::fs::write(&path, &text).unwrap();
        let whole = crate::read_tape(&path).unwrap();
        let mut stream = TapeStream::open(&path).unwrap();
        let mut records = Vec::new();
        loop {
            let batch = stream.batch(7).unwrap();
            if batch.is_empty() {
                break;
            }
            assert!(batch.len() <= 7);
            records.extend(batch);
        }
        assert!(stream.at_end());
        assert_eq!(stream.progress(), (text.len() as u64, text.len() as u64));
        assert_eq!(records, whole.records);
        let end = stream.finish().unwrap();
        assert_eq!(end.skipped, whole.skipped);
        assert_eq!(end.skipped[0].line, 43);
        assert_eq!(end.truncated_tail, whole.truncated_tail);
        assert_eq!(end.truncated_tail, Some((103, 23)));
        assert!(!end.finished);
        assert_eq!(end.damage_report(), whole.damage_report());
    }
}
