//! A run in the page: its title, and its output kept within a budget (the
//! first bytes and the last of a long one, where stderr begins and ends).

use std::collections::HashMap;

use serde::Serialize;

use super::Views;
use crate::commands::export::player::store::{Val, floor_boundary};
use crate::protocol::Stream;
use crate::protocol::sanitize::sanitize;
use crate::session::State;
use crate::session::story::words;

/// A run's output kept in the page: its first bytes and its last, each at
/// most this much (the run's log on disk has the rest)...
pub(crate) const OUTPUT_KEPT: u64 = 64 << 10;
/// ...and the outputs of all runs at most this much: past it, each run
/// keeps less (`kept`), never under `OUTPUT_KEPT_LEAST` at each end.
const OUTPUT_BUDGET: u64 = 16 << 20;
const OUTPUT_KEPT_LEAST: u64 = 4 << 10;

/// Raw bytes a run's output keeps at each end, given each run's total:
/// `OUTPUT_KEPT`, or less when all of them would pass `OUTPUT_BUDGET`.
pub(super) fn kept(totals: &HashMap<u64, u64>) -> u64 {
    let wanted: u64 = totals.values().map(|t| (*t).min(2 * OUTPUT_KEPT)).sum();
    if wanted <= OUTPUT_BUDGET {
        return OUTPUT_KEPT;
    }
    let long = totals
        .values()
        .filter(|t| **t > 2 * OUTPUT_KEPT_LEAST)
        .count() as u64;
    (OUTPUT_BUDGET / (2 * long.max(1))).clamp(OUTPUT_KEPT_LEAST, OUTPUT_KEPT)
}

/// A run's output copied into the page: its first `OUTPUT_KEPT` bytes and
/// its last (raw bytes, counted as the state counts them).
pub(super) struct Output {
    head: u32,
    tail: Option<u32>,
    /// Raw bytes of the run's output seen.
    seen: u64,
    /// Raw bytes the run printed in all (read ahead from the tape).
    total: u64,
    /// Raw bytes kept at each end of a long output.
    kept: u64,
    /// Each text's last stream, to mark where stderr begins and ends.
    last_stream: HashMap<u32, u8>,
}

impl Output {
    /// Where the tail begins (raw bytes): all of it is kept when it is small.
    fn tail_from(&self) -> u64 {
        if self.total <= 2 * self.kept {
            u64::MAX
        } else {
            self.total - self.kept
        }
    }

    /// Where the head ends (raw bytes).
    fn head_end(&self) -> u64 {
        if self.tail_from() == u64::MAX {
            u64::MAX
        } else {
            self.kept
        }
    }
}

/// A run as the output pane's title says it.
#[derive(Serialize)]
struct RunView {
    title: String,
    cls: &'static str,
    verdict: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    fig: String,
}

impl Views {
    /// A run's title in the output pane.
    pub(super) fn run(&mut self, state: &State, id: u64) {
        let value = state.runs.get(&id).map(|r| {
            let title = match &r.node {
                Some(n) => format!("run {id} · {n} #{}", r.iteration),
                None => format!("run {id} · the program"),
            };
            let (cls, verdict, fig) = match &r.record {
                None => ("running", "running".to_string(), String::new()),
                Some(rec) => (
                    if rec.passed { "passed" } else { "failed" },
                    words::run_result(rec, r.cancelled),
                    rec.resources.map(|res| res.short()).unwrap_or_default(),
                ),
            };
            RunView {
                title,
                cls,
                verdict,
                fig,
            }
        });
        let value = value.map(|v| self.store.shared(&v));
        self.store.set(&format!("r/{id}"), value);
    }

    /// A run's output as it is now: what the page keeps of it, and flags
    /// for what it does not (1: more came than its first bytes kept; as
    /// `more`, the bytes before its last ones).
    pub(super) fn output(&mut self, state: &State, id: u64) {
        let Some(run) = state.runs.get(&id) else {
            self.store.set(&format!("o/{id}"), None);
            return;
        };
        if !self.outputs.contains_key(&id) {
            let head = self.store.grow_new();
            let total = self.totals.get(&id).copied().unwrap_or(0);
            self.outputs.insert(
                id,
                Output {
                    head,
                    tail: None,
                    seen: 0,
                    total,
                    kept: self.kept,
                    last_stream: HashMap::new(),
                },
            );
        }
        let seen = run.kept_bytes as u64 + run.dropped_bytes;
        let Some(out) = self.outputs.get(&id) else {
            return;
        };
        let mut need = seen.saturating_sub(out.seen) as usize;
        // The new output is the last chunks' (one a record).
        let mut pieces: Vec<(Stream, &str)> = Vec::new();
        for (stream, text) in run.chunks.iter().rev() {
            if need == 0 {
                break;
            }
            let take = need.min(text.len());
            let from = floor_boundary(text, text.len() - take);
            pieces.push((*stream, &text[from..]));
            need = need.saturating_sub(text.len() - from);
        }
        pieces.reverse();
        let mut at = out.seen;
        for (stream, piece) in pieces {
            self.output_piece(id, at, stream, piece);
            at += piece.len() as u64;
        }
        let Some(out) = self.outputs.get_mut(&id) else {
            return;
        };
        out.seen = seen;
        let value = if seen >= out.tail_from() {
            out.tail.map(|tail| Val::Prefix {
                text: tail,
                len: self.store.len_of(tail),
                more: out.tail_from(),
                flag: 0,
            })
        } else {
            Some(Val::Prefix {
                text: out.head,
                len: self.store.len_of(out.head),
                more: 0,
                flag: u8::from(seen > out.head_end()),
            })
        };
        self.store.set(&format!("o/{id}"), value);
    }

    /// A piece of a run's output at raw offset `at`, into the head, the
    /// tail, or neither (the middle of a long output).
    fn output_piece(&mut self, id: u64, at: u64, stream: Stream, piece: &str) {
        let Some(out) = self.outputs.get_mut(&id) else {
            return;
        };
        let tail_from = out.tail_from();
        let head_end = out.head_end();
        let end = at + piece.len() as u64;
        let mut parts: Vec<(u32, &str)> = Vec::new();
        if at < head_end {
            let upto = floor_boundary(piece, (head_end - at).min(piece.len() as u64) as usize);
            parts.push((out.head, &piece[..upto]));
        }
        if end > tail_from {
            let tail = match out.tail {
                Some(t) => t,
                None => {
                    let t = self.store.grow_new();
                    out.tail = Some(t);
                    t
                }
            };
            let from = floor_boundary(piece, tail_from.saturating_sub(at) as usize);
            parts.push((tail, &piece[from..]));
        }
        let code = match stream {
            Stream::Stdout => 0,
            Stream::Stderr => 1,
        };
        for (text, part) in parts {
            if part.is_empty() {
                continue;
            }
            let clean = sanitize(part);
            let last = out.last_stream.get(&text).copied().unwrap_or(0);
            if last != code {
                let start = self.store.len_of(text);
                self.store
                    .streams
                    .entry(text)
                    .or_default()
                    .push((start, code));
                out.last_stream.insert(text, code);
            }
            self.store.append(text, &clean);
        }
    }
}
