//! Reading a run's full output log (`logs/run-N.log` in the session folder)
//! for the pager, off the UI thread: the event loop runs `read_log` as a
//! blocking job and hands the result back as `Msg::LogRead`.
//!
//! The log holds the bytes as the program wrote them, stdout and stderr
//! interleaved in arrival order, without marks. The tape's output chunks
//! (the head of the output, with their streams) say which byte ranges were
//! stderr; `stderr_ranges` turns them into offsets in the log.

use std::io::Read;
use std::path::{Path, PathBuf};

use crate::sanitize::sanitize;
use codeloop_protocol::Stream;
use codeloop_session::state::RunState;

/// At most this much of a log is read (a note says when there is more).
pub(crate) const LOG_READ_LIMIT: u64 = 256 << 20;

/// A log read whole (up to the limit), split into lines.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LogText {
    /// Each line, control sequences stripped.
    pub(crate) lines: Vec<String>,
    /// The byte offset in the file where each line starts.
    pub(crate) starts: Vec<u64>,
    /// The file's size when read.
    pub(crate) bytes: u64,
    /// Bytes past `LOG_READ_LIMIT` that were not read.
    pub(crate) unread: u64,
}

/// Read and split the log at `path`.
pub fn read_log(path: &Path) -> Result<LogText, String> {
    // Never through a link planted in a session folder, never a FIFO.
    let file = codeloop_session::session_fs::open_no_link(path).map_err(|e| {
        format!(
            "cannot read the output log {}: {e} (a run's log is written while it runs; \
             a session recorded elsewhere may not have its logs folder)",
            path.display()
        )
    })?;
    let bytes = file.metadata().map(|m| m.len()).unwrap_or(0);
    let mut raw = Vec::with_capacity(bytes.min(LOG_READ_LIMIT) as usize);
    file.take(LOG_READ_LIMIT)
        .read_to_end(&mut raw)
        .map_err(|e| format!("cannot read the output log {}: {e}", path.display()))?;
    let mut text = LogText {
        bytes,
        unread: bytes.saturating_sub(raw.len() as u64),
        ..LogText::default()
    };
    let body = raw.strip_suffix(b"\n").unwrap_or(&raw);
    let mut at = 0u64;
    if !raw.is_empty() {
        for line in body.split(|b| *b == b'\n') {
            text.starts.push(at);
            at += line.len() as u64 + 1;
            let line = String::from_utf8_lossy(line);
            text.lines.push(sanitize(line.trim_end_matches('\r')));
        }
    }
    Ok(text)
}

/// Where a run's full output log is.
pub(crate) fn log_path(session_dir: &Path, run_id: u64) -> PathBuf {
    session_dir.join("logs").join(format!("run-{run_id}.log"))
}

/// The byte ranges of the log (start, end) that the tape saw come from
/// stderr, in order. Output past what the state holds is not covered.
pub(crate) fn stderr_ranges(run: &RunState) -> Vec<(u64, u64)> {
    let mut at = run.dropped_bytes;
    let mut ranges: Vec<(u64, u64)> = Vec::new();
    for (stream, text) in &run.chunks {
        let end = at + text.len() as u64;
        if *stream == Stream::Stderr {
            match ranges.last_mut() {
                Some(last) if last.1 == at => last.1 = end,
                _ => ranges.push((at, end)),
            }
        }
        at = end;
    }
    ranges
}

/// Which lines of `text` overlap a stderr range (both sorted: one pass).
pub(crate) fn stderr_lines(text: &LogText, ranges: &[(u64, u64)]) -> Vec<bool> {
    let mut marks = vec![false; text.lines.len()];
    let mut r = 0;
    for (i, &start) in text.starts.iter().enumerate() {
        let end = text
            .starts
            .get(i + 1)
            .copied()
            .unwrap_or(text.bytes)
            .max(start + 1);
        while r < ranges.len() && ranges[r].1 <= start {
            r += 1;
        }
        marks[i] = ranges.get(r).is_some_and(|&(s, _)| s < end);
    }
    marks
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log_is_split_into_lines_with_their_offsets_and_stripped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run-1.log");
        std::fs::write(&path, "one\n\x1b[31mtwo\x1b[0m\r\nthree").unwrap();
        let text = read_log(&path).unwrap();
        assert_eq!(text.lines, ["one", "two", "three"]);
        assert_eq!(text.starts, [0, 4, 18]);
        assert_eq!(text.unread, 0);
        let err = read_log(&dir.path().join("none.log")).unwrap_err();
        assert!(err.contains("none.log"), "{err}");
    }

    #[test]
    fn stderr_ranges_mark_the_lines_they_touch() {
        let run = RunState {
            node: None,
            iteration: 1,
            kind: codeloop_session::RunKind::Program,
            version: None,
            tests_version: 0,
            chunks: [
                (Stream::Stdout, "ok 1\nok 2\n"),
                (Stream::Stderr, "Traceback\n"),
                (Stream::Stderr, "  boom\n"),
                (Stream::Stdout, "after\n"),
            ]
            .into_iter()
            .map(|(s, t)| (s, t.to_string()))
            .collect(),
            kept_bytes: 33,
            dropped_bytes: 0,
            record: None,
            cancelled: false,
        };
        let ranges = stderr_ranges(&run);
        assert_eq!(ranges, [(10, 27)]);
        let text = LogText {
            lines: ["ok 1", "ok 2", "Traceback", "  boom", "after"]
                .map(String::from)
                .to_vec(),
            starts: vec![0, 5, 10, 20, 27],
            bytes: 33,
            unread: 0,
        };
        assert_eq!(
            stderr_lines(&text, &ranges),
            [false, false, true, true, false]
        );
    }
}
