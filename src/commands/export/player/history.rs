//! The history's lines as the page holds them: each entry of
//! `State::history` rendered once and kept, rendered again only while it
//! can still change (a reflection streaming, the last few entries), and
//! what changed told as "keep the first so many lines, then these".

use std::collections::BTreeSet;

use super::store::Val;
use crate::session::State;
use crate::session::state::HistoryEntry;

/// The last entries rendered again at every event that is not a streamed
/// piece: an entry's words may take a fact that comes just after it.
const RECENT: usize = 4;

#[derive(Debug, Default)]
pub(super) struct History {
    /// Each entry's lines, by entry.
    entries: Vec<Vec<Val>>,
    /// Entries whose text still streams.
    open: BTreeSet<usize>,
    /// The lines the page was last told.
    shown: Vec<Val>,
    /// The first entry whose lines changed since then.
    changed: Option<usize>,
}

impl History {
    /// The entries to render again now: the new ones, the open ones, the
    /// last few; with `call`, only the reflection that call writes.
    pub(super) fn stale(&self, state: &State, call: Option<u64>) -> Vec<usize> {
        if let Some(call) = call {
            return self
                .open
                .iter()
                .copied()
                .filter(|&i| {
                    matches!(state.history.get(i),
                        Some(HistoryEntry::Reflection { call_id: Some(c), .. }) if *c == call)
                })
                .collect();
        }
        let known = self.entries.len().min(state.history.len());
        let mut stale: BTreeSet<usize> = self.open.iter().copied().filter(|&i| i < known).collect();
        stale.extend(known.saturating_sub(RECENT)..state.history.len());
        stale.into_iter().collect()
    }

    /// Entry `i` reads as `lines`; `open` while it can still change.
    pub(super) fn put(&mut self, i: usize, lines: Vec<Val>, open: bool) {
        if self.entries.len() <= i {
            self.entries.resize(i + 1, Vec::new());
            self.changed = Some(self.changed.map_or(i, |c| c.min(i)));
        }
        if self.entries[i] != lines {
            self.entries[i] = lines;
            self.changed = Some(self.changed.map_or(i, |c| c.min(i)));
        }
        if open {
            self.open.insert(i);
        } else {
            self.open.remove(&i);
        }
    }

    /// What changed since the page was last told: (lines kept, lines after them).
    pub(super) fn changes(&mut self) -> Option<Change> {
        let from = self.changed.take()?;
        let keep: usize = self.entries[..from].iter().map(Vec::len).sum();
        let after: Vec<Val> = self.entries[from..].iter().flatten().copied().collect();
        // Lines that read the same as the page has are kept too.
        let same = self.shown[keep.min(self.shown.len())..]
            .iter()
            .zip(&after)
            .take_while(|(a, b)| a == b)
            .count();
        let keep = keep + same;
        let after = after[same..].to_vec();
        if keep == self.shown.len() && after.is_empty() {
            return None;
        }
        // The last line only grew (a reflection streaming in).
        let last = self.shown.len().checked_sub(1);
        if let ([grown], Some(last)) = (after.as_slice(), last)
            && keep == last
            && let Some(by) = grown.growth_from(self.shown[last])
        {
            self.shown[last] = *grown;
            return Some(Change::Grow(by));
        }
        self.shown.truncate(keep);
        self.shown.extend(after.iter().copied());
        Some(Change::Lines(keep, after))
    }
}

/// How the history's lines changed.
#[derive(Debug, PartialEq)]
pub(super) enum Change {
    /// Keep the first so many lines, then these.
    Lines(usize, Vec<Val>),
    /// The last line, a prefix, grew by so much.
    Grow(u32),
}
