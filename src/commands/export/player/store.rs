//! What the player's page holds, compact: every text once, by id (a code
//! version, a test file, a run's output, a model's reply as it grows);
//! every other value of the view once, as JSON, by id; and for each
//! record of the tape, its frame: the slots of the view it changed.
//!
//! A slot holds either a shared value (its id) or a prefix of a text that
//! grows (a reply streaming, a run's output): `[text, length, ...]`, the
//! length in UTF-16 units (what the page's strings count). A prefix that
//! only grows is written as minus how much it grew, so a streamed piece
//! costs a few bytes.

use std::collections::HashMap;
use std::fmt::Write;

use super::history::Change;

/// A text longer than this (a code version, tests, a reply) is cut in the
/// page, with a note of how much is left out.
pub(super) const TEXT_CAP: usize = 256 << 10;
/// The texts of one page in all, at most (bytes): past it, a text is
/// replaced by a note and a growing text stops growing, so any tape's page
/// stays one a browser opens.
pub(super) const TEXT_BUDGET: usize = 48 << 20;

/// What a slot holds at a moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Val {
    /// A value in `vals`.
    Shared(u32),
    /// The first `len` UTF-16 units of a text. `more` and `flag` say more
    /// about it, by slot (see `player.js`); 0 is "nothing to say".
    Prefix {
        text: u32,
        len: u32,
        more: u64,
        flag: u8,
    },
}

impl Val {
    /// How much this prefix grew from `before`, if it is `before` grown.
    pub(super) fn growth_from(self, before: Val) -> Option<u32> {
        match (self, before) {
            (
                Val::Prefix {
                    text,
                    len,
                    more,
                    flag,
                },
                Val::Prefix {
                    text: t0,
                    len: l0,
                    more: m0,
                    flag: f0,
                },
            ) if text == t0 && more == m0 && flag == f0 && len > l0 => Some(len - l0),
            _ => None,
        }
    }
}

/// A text being written as the tape goes (a reply, a run's output).
#[derive(Debug, Default)]
struct Growing {
    /// Its length in UTF-16 units.
    len16: u32,
    /// What was left out past `TEXT_CAP` (bytes).
    cut: u64,
}

/// Where a stream's output changes (stdout, stderr) in a run's output text.
pub(super) type Streams = Vec<(u32, u8)>;

#[derive(Debug, Default)]
pub(super) struct Store {
    texts: Vec<String>,
    text_ids: HashMap<String, u32>,
    /// UTF-16 length of each text (those interned; growing ones in `growing`).
    lens: Vec<u32>,
    /// Bytes of text held, against `TEXT_BUDGET`.
    held: usize,
    growing: HashMap<u32, Growing>,
    /// Per output text, where stderr begins and ends.
    pub(super) streams: HashMap<u32, Streams>,
    vals: Vec<String>,
    val_ids: HashMap<String, u32>,
    slots: Vec<String>,
    slot_ids: HashMap<String, u32>,
    /// What each slot holds now (by slot id).
    now: Vec<Option<Val>>,
    /// The frames so far, each written as JSON (`0`: nothing changed).
    frames: Vec<String>,
    /// The slots changed in the frame being made, in order, with what
    /// each held before it.
    pending: Vec<(u32, Option<Val>)>,
    /// The history's changes in the frame being made, as written.
    history: Vec<String>,
}

/// The history's slot: its value is the list of lines, changed by `[keep, line...]`.
pub(super) const HISTORY: &str = "h";

impl Store {
    pub(super) fn new() -> Store {
        let mut store = Store::default();
        store.slot(HISTORY);
        store
    }

    /// The id of `text`, kept once (cut at `TEXT_CAP`).
    pub(super) fn text(&mut self, text: &str) -> u32 {
        if let Some(&id) = self.text_ids.get(text) {
            return id;
        }
        let kept = if self.held + text.len().min(TEXT_CAP) > TEXT_BUDGET {
            format!(
                "({} bytes not in this page: the page holds {} MB of text at most)",
                text.len(),
                TEXT_BUDGET >> 20
            )
        } else {
            cut(text)
        };
        self.held += kept.len();
        let id = self.texts.len() as u32;
        self.lens.push(utf16(&kept));
        self.texts.push(kept);
        self.text_ids.insert(text.to_string(), id);
        id
    }

    /// `text` as a whole prefix (for a slot that may also hold a growing one).
    pub(super) fn whole(&mut self, text: &str, flag: u8) -> Val {
        let id = self.text(text);
        Val::Prefix {
            text: id,
            len: self.lens[id as usize],
            more: 0,
            flag,
        }
    }

    /// A new text that will grow (`append`).
    pub(super) fn grow_new(&mut self) -> u32 {
        let id = self.texts.len() as u32;
        self.texts.push(String::new());
        self.lens.push(0);
        self.growing.insert(id, Growing::default());
        id
    }

    /// Add `piece` to the growing text `id`: its length after, in UTF-16
    /// units, and whether anything was cut.
    pub(super) fn append(&mut self, id: u32, piece: &str) -> (u32, bool) {
        let Some(g) = self.growing.get_mut(&id) else {
            return (0, false);
        };
        let text = &mut self.texts[id as usize];
        let room = TEXT_CAP
            .saturating_sub(text.len())
            .min(TEXT_BUDGET.saturating_sub(self.held));
        let kept = floor_boundary(piece, room);
        text.push_str(&piece[..kept]);
        self.held += kept;
        g.len16 += utf16(&piece[..kept]);
        g.cut += (piece.len() - kept) as u64;
        (g.len16, g.cut > 0)
    }

    /// The length of text `id` now, in UTF-16 units.
    pub(super) fn len_of(&self, id: u32) -> u32 {
        match self.growing.get(&id) {
            Some(g) => g.len16,
            None => self.lens.get(id as usize).copied().unwrap_or(0),
        }
    }

    /// The text of `id` as it is now.
    pub(super) fn text_of(&self, id: u32) -> &str {
        self.texts.get(id as usize).map_or("", String::as_str)
    }

    /// The id of a value, given as JSON, kept once.
    pub(super) fn val(&mut self, json: String) -> Val {
        if let Some(&id) = self.val_ids.get(&json) {
            return Val::Shared(id);
        }
        let id = self.vals.len() as u32;
        self.vals.push(json.clone());
        self.val_ids.insert(json, id);
        Val::Shared(id)
    }

    /// A value serialized and kept once.
    pub(super) fn shared<T: serde::Serialize>(&mut self, value: &T) -> Val {
        self.val(serde_json::to_string(value).unwrap_or_else(|_| "null".into()))
    }

    fn slot(&mut self, name: &str) -> u32 {
        if let Some(&id) = self.slot_ids.get(name) {
            return id;
        }
        let id = self.slots.len() as u32;
        self.slots.push(name.to_string());
        self.slot_ids.insert(name.to_string(), id);
        self.now.push(None);
        id
    }

    /// The slots whose names begin with `prefix` that hold something now.
    pub(super) fn held(&self, prefix: &str) -> Vec<String> {
        self.slots
            .iter()
            .zip(&self.now)
            .filter(|(name, v)| v.is_some() && name.starts_with(prefix))
            .map(|(name, _)| name.clone())
            .collect()
    }

    /// `slot` holds `value` from this frame on (None: nothing).
    pub(super) fn set(&mut self, slot: &str, value: Option<Val>) {
        let id = self.slot(slot);
        let held = &mut self.now[id as usize];
        if *held == value {
            return;
        }
        let before = std::mem::replace(held, value);
        if !self.pending.iter().any(|(s, _)| *s == id) {
            self.pending.push((id, before));
        }
    }

    /// The history's lines changed: the page is told `change` (as
    /// `[keep, line...]`, or minus the last line's growth).
    pub(super) fn history(&mut self, change: Change) {
        self.history.push(match change {
            Change::Grow(by) => format!("-{by}"),
            Change::Lines(keep, lines) => {
                let mut out = format!("[{keep}");
                for l in lines {
                    let _ = write!(out, ",{}", value_json(Some(l), None));
                }
                out.push(']');
                out
            }
        });
    }

    /// The frame of one record is made: written down, and the next begins.
    pub(super) fn end_frame(&mut self) {
        let mut out = String::new();
        for (slot, before) in std::mem::take(&mut self.pending) {
            let now = self.now[slot as usize];
            if now == before {
                continue;
            }
            let _ = write!(out, "{slot},{},", value_json(now, before));
        }
        for change in std::mem::take(&mut self.history) {
            let _ = write!(out, "0,{change},");
        }
        if out.is_empty() {
            self.frames.push("0".into());
        } else {
            out.pop();
            self.frames.push(format!("[{out}]"));
        }
    }

    /// The page's data: texts, values, slots, frames and `extra` fields
    /// (already JSON), as one JSON object.
    pub(super) fn json(&self, extra: &[(&str, String)]) -> String {
        let mut out = String::from("{");
        let _ = write!(
            out,
            "\"texts\":{},",
            serde_json::to_string(&self.texts).unwrap_or_else(|_| "[]".into())
        );
        out.push_str("\"vals\":[");
        out.push_str(&self.vals.join(","));
        out.push_str("],");
        let _ = write!(
            out,
            "\"slots\":{},",
            serde_json::to_string(&self.slots).unwrap_or_else(|_| "[]".into())
        );
        let streams: HashMap<String, Vec<u32>> = self
            .streams
            .iter()
            .map(|(id, s)| {
                (
                    id.to_string(),
                    s.iter().flat_map(|(at, e)| [*at, u32::from(*e)]).collect(),
                )
            })
            .collect();
        let _ = write!(
            out,
            "\"streams\":{},",
            serde_json::to_string(&streams).unwrap_or_else(|_| "{}".into())
        );
        for (key, json) in extra {
            let _ = write!(out, "\"{key}\":{json},");
        }
        out.push_str("\"frames\":[");
        out.push_str(&self.frames.join(","));
        out.push_str("]}");
        out
    }
}

/// A value as a frame writes it: a shared value's id, a prefix as an
/// array, a prefix grown from `previous` as minus its growth, null for none.
fn value_json(value: Option<Val>, previous: Option<Val>) -> String {
    let Some(value) = value else {
        return "null".into();
    };
    if let Some(by) = previous.and_then(|p| value.growth_from(p)) {
        return format!("-{by}");
    }
    match value {
        Val::Shared(id) => id.to_string(),
        Val::Prefix {
            text,
            len,
            more,
            flag,
        } => match (more, flag) {
            (0, 0) => format!("[{text},{len}]"),
            (more, 0) => format!("[{text},{len},{more}]"),
            (more, flag) => format!("[{text},{len},{more},{flag}]"),
        },
    }
}

/// `text` cut at `TEXT_CAP` bytes, with a note of what was left out.
fn cut(text: &str) -> String {
    if text.len() <= TEXT_CAP {
        return text.to_string();
    }
    let at = floor_boundary(text, TEXT_CAP);
    format!(
        "{}\n… ({} more bytes are not in this page)",
        &text[..at],
        text.len() - at
    )
}

/// The largest char boundary of `text` at or below `at`.
pub(super) fn floor_boundary(text: &str, at: usize) -> usize {
    if at >= text.len() {
        return text.len();
    }
    (0..=at)
        .rev()
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(0)
}

/// The length of `text` in UTF-16 units.
pub(super) fn utf16(text: &str) -> u32 {
    text.chars().map(|c| c.len_utf16() as u32).sum()
}
