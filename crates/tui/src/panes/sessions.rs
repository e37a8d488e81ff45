//! Recent sessions on the welcome screen, under the demos: one line each
//! (result, when, task, iterations, tokens, the parent of a fork), a
//! selection moved with ↑/↓, and keys to open, replay, resume, fork or
//! delete the selected one. The list is read once when the workbench opens
//! (from the session index's cached summaries), never while drawing.

use std::path::PathBuf;

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::text::{Line, Span};

use super::{Ctx, Handled};
use crate::keymap::{self, Binding, Key, Row};
use codeloop_protocol::present::count;
use codeloop_session::State;
use codeloop_session::index::{SessionResult, SessionSummary};

/// Sessions the welcome screen lists (the newest).
pub const RECENT: usize = 8;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SessionAct {
    Up,
    Down,
    Open,
    Replay,
    Resume,
    Fork,
    Lineage,
    Delete,
}

/// What the person meant for the selected session.
#[derive(Debug, Clone, PartialEq)]
pub enum SessionIntent {
    Open(PathBuf),
    Replay(PathBuf),
    Resume(PathBuf),
    /// Fork at the end of its tape.
    Fork(PathBuf),
    /// Its lineage: the sessions it was forked from and forked into.
    Lineage(PathBuf),
    /// Delete its folder (after a confirmation).
    Delete(PathBuf),
}

pub(crate) const KEYS: &[Binding<SessionAct>] = &[
    Binding {
        label: "↑ / ↓",
        does: "select a recent session",
        short: "select a session",
        keys: &[
            (Key::code(KeyCode::Up), SessionAct::Up),
            (Key::ch('k'), SessionAct::Up),
            (Key::code(KeyCode::Down), SessionAct::Down),
            (Key::ch('j'), SessionAct::Down),
        ],
    },
    Binding {
        label: "Enter",
        does: "open the session (review)",
        short: "open",
        keys: &[(Key::code(KeyCode::Enter), SessionAct::Open)],
    },
    Binding {
        label: "r",
        does: "replay the session",
        short: "replay",
        keys: &[(Key::ch('r'), SessionAct::Replay)],
    },
    Binding {
        label: "R",
        does: "resume the session (after a kill, a cancel or a limit)",
        short: "resume",
        keys: &[(Key::ch('R'), SessionAct::Resume)],
    },
    Binding {
        label: "F",
        does: "fork the session at its end (a new session goes on from there)",
        short: "fork",
        keys: &[(Key::ch('F'), SessionAct::Fork)],
    },
    Binding {
        label: "b",
        does: "the session's lineage (its forks, the session it was forked from): Enter opens a branch",
        short: "lineage",
        keys: &[(Key::ch('b'), SessionAct::Lineage)],
    },
    Binding {
        label: "d",
        does: "delete the session's folder (asks first)",
        short: "delete",
        keys: &[(Key::ch('d'), SessionAct::Delete)],
    },
];

#[derive(Debug, Default)]
pub(crate) struct SessionList {
    selected: usize,
}

impl SessionList {
    pub(crate) fn help() -> Vec<Row> {
        keymap::rows(KEYS).collect()
    }

    pub(crate) fn on_key(
        &mut self,
        key: KeyEvent,
        sessions: &[SessionSummary],
    ) -> Handled<SessionIntent> {
        if sessions.is_empty() {
            return Handled::NotMine;
        }
        let Some(act) = keymap::lookup(KEYS, &key) else {
            return Handled::NotMine;
        };
        let last = sessions.len() - 1;
        self.selected = self.selected.min(last);
        let shown = tree_order(sessions);
        let chosen = &sessions[shown.get(self.selected).map_or(0, |(_, i)| *i)];
        let dir = chosen.dir.clone();
        let tape = chosen.tape();
        Handled::Intent(match act {
            SessionAct::Up => {
                self.selected = self.selected.saturating_sub(1);
                return Handled::Done;
            }
            SessionAct::Down => {
                self.selected = (self.selected + 1).min(last);
                return Handled::Done;
            }
            SessionAct::Open => SessionIntent::Open(tape),
            SessionAct::Replay => SessionIntent::Replay(tape),
            SessionAct::Resume => SessionIntent::Resume(tape),
            SessionAct::Fork => SessionIntent::Fork(tape),
            SessionAct::Lineage => SessionIntent::Lineage(tape),
            SessionAct::Delete => SessionIntent::Delete(dir),
        })
    }

    /// Which of `lines` is the selected session (line 0 is the heading),
    /// when the list has the keys.
    pub(crate) fn selected_line(&self, ctx: &Ctx, sessions: &[SessionSummary]) -> Option<usize> {
        (ctx.focused && !sessions.is_empty()).then(|| 1 + self.selected.min(sessions.len() - 1))
    }

    /// The list's lines for the welcome screen.
    pub(crate) fn lines(&self, ctx: &Ctx, sessions: &[SessionSummary]) -> Vec<Line<'static>> {
        let t = ctx.theme;
        if sessions.is_empty() {
            return Vec::new();
        }
        let mut lines = vec![Line::styled(
            "Recent sessions (↑/↓, Enter open · r replay · R resume · F fork · b lineage · d delete):",
            t.text,
        )];
        let selected = self.selected.min(sessions.len() - 1);
        for (i, (depth, at)) in tree_order(sessions).into_iter().enumerate() {
            let s = &sessions[at];
            let (sign, style) = match s.result {
                SessionResult::Passed => ("✓", t.ok),
                SessionResult::Failed | SessionResult::NoPlan => ("✗", t.error),
                SessionResult::Cancelled => ("■", t.warning),
                SessionResult::DidNotFinish => ("…", t.warning),
                SessionResult::Running => ("▶", t.running),
            };
            let when = s
                .started_at
                .get(..16)
                .unwrap_or(&s.started_at)
                .replace('T', " ");
            // A fork's lineage before its task, so a row cut short keeps
            // it: under its parent where that is listed, else named.
            let lineage = match s.parent.as_deref().and_then(|p| p.rsplit_once('@')) {
                Some((_, at)) if depth > 0 => format!("fork at #{at}  "),
                _ => s
                    .parent
                    .as_ref()
                    .map(|p| format!("fork of {p}  "))
                    .unwrap_or_default(),
            };
            let branch = match depth {
                0 => String::new(),
                d => format!("{}└ ", "  ".repeat(d - 1)),
            };
            let spans = vec![
                Span::styled(format!("  {branch}{sign} "), style),
                Span::styled(format!("{when}  {lineage}"), t.dim),
                Span::styled(s.task.lines().next().unwrap_or("").to_string(), t.text),
                Span::styled(
                    format!(
                        "  · {} · {} · {} tok",
                        s.result.label(),
                        count(s.iterations, "repair"),
                        s.tokens
                    ),
                    t.dim,
                ),
            ];
            let mut line = Line::from(spans);
            if i == selected && ctx.focused {
                line = line.style(t.selection);
            }
            lines.push(line);
        }
        lines
    }
}

/// The listed sessions as the list shows them: each fork under the session
/// it came from where that is listed too (its depth, and its index in
/// `sessions`), the trees in the order of their newest session.
fn tree_order(sessions: &[SessionSummary]) -> Vec<(usize, usize)> {
    let index_of = |id: &str| sessions.iter().position(|s| s.id == id);
    let parent_of = |s: &SessionSummary| {
        s.parent
            .as_deref()
            .and_then(|p| p.rsplit_once('@'))
            .and_then(|(p, _)| index_of(p))
    };
    let mut out = Vec::with_capacity(sessions.len());
    let mut placed = vec![false; sessions.len()];
    // Roots (no listed parent), newest first, each with its listed
    // descendants, oldest fork first.
    fn place(
        at: usize,
        depth: usize,
        sessions: &[SessionSummary],
        parent_of: &dyn Fn(&SessionSummary) -> Option<usize>,
        placed: &mut Vec<bool>,
        out: &mut Vec<(usize, usize)>,
    ) {
        if placed[at] {
            return;
        }
        placed[at] = true;
        out.push((depth, at));
        // Newest first in `sessions`: the oldest fork is the last.
        for child in (0..sessions.len()).rev() {
            if parent_of(&sessions[child]) == Some(at) {
                place(child, depth + 1, sessions, parent_of, placed, out);
            }
        }
    }
    for i in 0..sessions.len() {
        // The root of this session's listed tree (a cycle, which no fork
        // makes, stops the walk).
        let mut root = i;
        let mut steps = 0;
        while let Some(p) = parent_of(&sessions[root]).filter(|_| steps < sessions.len()) {
            root = p;
            steps += 1;
        }
        place(root, 0, sessions, &parent_of, &mut placed, &mut out);
    }
    out
}

/// A session's lineage in a few words: the session it was forked from (and
/// where), and the sessions forked from it that the index knows.
pub(crate) fn lineage(state: &State, sessions: &[SessionSummary]) -> Option<String> {
    let mut parts = Vec::new();
    if let Some(p) = &state.parent {
        parts.push(format!("fork of {} at #{}", p.session_id, p.at_seq));
    }
    let id = &state.session_id;
    let forks: Vec<&str> = sessions
        .iter()
        .filter(|s| {
            !id.is_empty()
                && s.parent
                    .as_deref()
                    .and_then(|p| p.rsplit_once('@'))
                    .is_some_and(|(parent, _)| parent == id)
        })
        .map(|s| s.id.as_str())
        .collect();
    if !forks.is_empty() {
        parts.push(format!("forks: {}", forks.join(", ")));
    }
    (!parts.is_empty()).then(|| parts.join(" · "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use codeloop_session::state::ParentSession;

    fn summary(id: &str, parent: Option<&str>) -> SessionSummary {
        SessionSummary {
            id: id.into(),
            started_at: String::new(),
            task: String::new(),
            model: String::new(),
            provider: String::new(),
            result: SessionResult::Passed,
            iterations: 0,
            tokens: 0,
            parent: parent.map(str::to_string),
            events: 0,
            dir: PathBuf::from(id),
        }
    }

    #[test]
    fn lineage_names_the_parent_and_the_forks() {
        let mut state = State {
            session_id: "b".into(),
            ..State::default()
        };
        let sessions = vec![
            summary("c", Some("b@40")),
            summary("d", Some("bb@3")),
            summary("e", Some("b@7")),
        ];
        assert_eq!(lineage(&state, &sessions).as_deref(), Some("forks: c, e"));
        state.parent = Some(ParentSession {
            session_id: "a".into(),
            tape: "a/tape.jsonl".into(),
            at_seq: 12,
        });
        assert_eq!(
            lineage(&state, &sessions[1..2]).as_deref(),
            Some("fork of a at #12")
        );
        state.session_id = String::new();
        state.parent = None;
        assert_eq!(lineage(&state, &sessions), None);
    }
}
