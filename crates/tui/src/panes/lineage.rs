//! `b`: a session's lineage where the person is: the sessions it belongs
//! to as a tree (its forebears up to the first, each fork under the one
//! it came from, after which record), how each ended, this one marked.
//! ↑/↓ choose a branch and Enter opens it (`q` there goes back to the
//! welcome list, as from any session opened from it). The tree is read off
//! the UI thread (`session::lineage::of_tape`); the popup carries its rows.

use std::path::PathBuf;

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::Frame;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph};

use super::{Handled, popup_area};
use crate::keymap::{self, Binding, Key, Row};
use codeloop_protocol::present::count;
use codeloop_session::index::SessionResult;
use codeloop_session::lineage::Lineage;

/// One branch, as the popup shows it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct BranchRow {
    pub(crate) depth: usize,
    pub(crate) id: String,
    /// Its tape, where it could be read (the others cannot be opened).
    pub(crate) tape: Option<PathBuf>,
    pub(crate) result: Option<SessionResult>,
    /// Its result, repairs and task, or why it could not be read.
    pub(crate) words: String,
    /// Where it was forked, in words.
    pub(crate) forked: Option<String>,
    /// The session on screen (or chosen in the welcome's list).
    pub(crate) current: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LineageAct {
    Up,
    Down,
    Open,
    Close,
}

/// What the person meant.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum LineageIntent {
    Open(PathBuf),
    Close,
}

pub(crate) const KEYS: &[Binding<LineageAct>] = &[
    Binding {
        label: "↑ / ↓",
        does: "choose a branch",
        short: "choose",
        keys: &[
            (Key::code(KeyCode::Up), LineageAct::Up),
            (Key::ch('k'), LineageAct::Up),
            (Key::code(KeyCode::Down), LineageAct::Down),
            (Key::ch('j'), LineageAct::Down),
        ],
    },
    Binding {
        label: "Enter",
        does: "open the branch (review it)",
        short: "open",
        keys: &[(Key::code(KeyCode::Enter), LineageAct::Open)],
    },
    Binding {
        label: "Esc / b",
        does: "close",
        short: "close",
        keys: &[
            (Key::code(KeyCode::Esc), LineageAct::Close),
            (Key::ch('b'), LineageAct::Close),
            (Key::ch('q'), LineageAct::Close),
        ],
    },
];

/// How the branch of the session on screen is marked.
pub(crate) const ON_SCREEN: &str = "on screen";
/// How the branch chosen in the welcome's list (none on screen) is marked.
pub(crate) const CHOSEN: &str = "chosen";

/// The lineage popup: the branches, and the one chosen.
#[derive(Debug, Clone, PartialEq)]
pub struct LineageView {
    pub(crate) rows: Vec<BranchRow>,
    pub(crate) selected: usize,
    /// Branches left out past `lineage::MOST`.
    left_out: usize,
    /// How the current branch is marked: "on screen", or "chosen" for
    /// one chosen in the welcome's list.
    mark: &'static str,
}

impl LineageView {
    /// The view of `lineage`, `current` (the session on screen, or the one
    /// chosen in the welcome's list: `mark` says which) chosen.
    pub(crate) fn new(lineage: &Lineage, current: &str, mark: &'static str) -> LineageView {
        let rows: Vec<BranchRow> = lineage
            .branches
            .iter()
            .map(|(depth, b)| {
                let (result, words) = match &b.state {
                    Some(s) => {
                        let r = SessionResult::of(s);
                        let task = s.task.lines().next().unwrap_or("");
                        (
                            Some(r),
                            format!(
                                "{} · {} · {}",
                                r.label(),
                                count(s.repair_iterations(), "repair"),
                                crate::sanitize::sanitize(task)
                            ),
                        )
                    }
                    None => (
                        None,
                        format!("not read: {}", b.unread.as_deref().unwrap_or("no tape")),
                    ),
                };
                let forked = b.parent.as_ref().map(|(p, at)| match &b.fork_point {
                    Some(point) => format!("forked from {p} after {point}"),
                    None => format!("forked from {p} after record {at}"),
                });
                BranchRow {
                    depth: *depth,
                    id: b.id.clone(),
                    tape: b.state.as_ref().and(b.tape.clone()),
                    result,
                    words,
                    forked,
                    current: b.id == current,
                }
            })
            .collect();
        let selected = rows.iter().position(|r| r.current).unwrap_or(0);
        LineageView {
            rows,
            selected,
            left_out: lineage.left_out,
            mark,
        }
    }

    pub(crate) fn help() -> Vec<Row> {
        keymap::rows(KEYS).collect()
    }

    pub(crate) fn on_key(&mut self, key: KeyEvent) -> Handled<LineageIntent> {
        let Some(act) = keymap::lookup(KEYS, &key) else {
            return Handled::Done;
        };
        match act {
            LineageAct::Up => self.selected = self.selected.saturating_sub(1),
            LineageAct::Down => {
                self.selected = (self.selected + 1).min(self.rows.len().saturating_sub(1));
            }
            LineageAct::Close => return Handled::Intent(LineageIntent::Close),
            LineageAct::Open => {
                return match self.rows.get(self.selected) {
                    // Any branch but the one on screen: the one chosen in
                    // the welcome's list is not open yet.
                    Some(BranchRow {
                        current,
                        tape: Some(tape),
                        ..
                    }) if !*current || self.mark == CHOSEN => {
                        Handled::Intent(LineageIntent::Open(tape.clone()))
                    }
                    // The one on screen, or one whose tape cannot be read.
                    _ => Handled::Done,
                };
            }
        }
        Handled::Done
    }

    /// The rows as lines of `width`: a branch's sign and id, then what it
    /// came to and where it was forked, wrapped under it; and the line of
    /// the chosen branch.
    fn lines(&self, t: &crate::theme::Theme, width: usize) -> (Vec<Line<'static>>, usize) {
        let mut lines = Vec::new();
        let mut chosen = 0;
        for (i, r) in self.rows.iter().enumerate() {
            let indent = "  ".repeat(r.depth.min(8));
            let (sign, style) = match r.result {
                Some(SessionResult::Passed) => ("✓", t.ok),
                Some(SessionResult::Failed | SessionResult::NoPlan) => ("✗", t.error),
                Some(SessionResult::Cancelled) => ("■", t.warning),
                Some(SessionResult::DidNotFinish) => ("…", t.warning),
                Some(SessionResult::Running) => ("▶", t.running),
                None => ("?", t.dim),
            };
            let here = i == self.selected;
            if here {
                chosen = lines.len();
            }
            let mut spans = vec![
                Span::raw(format!("{}{indent}", if here { "›" } else { " " })),
                Span::styled(format!("{sign} "), style),
                Span::styled(r.id.clone(), if r.current { t.title } else { t.text }),
            ];
            if r.current {
                spans.push(Span::styled(format!(" ({})", self.mark), t.accent));
            }
            let mut line = Line::from(spans);
            if here {
                line = line.style(t.selection);
            }
            lines.push(line);
            let under = format!(" {indent}  ");
            let room = width.saturating_sub(under.chars().count());
            for text in std::iter::once(&r.words).chain(r.forked.as_ref()) {
                for piece in super::wrap(text, room) {
                    lines.push(Line::styled(format!("{under}{piece}"), t.dim));
                }
            }
        }
        if self.left_out > 0 {
            let more = match self.left_out {
                1 => "1 more branch left out".to_string(),
                n => format!("{n} more branches left out"),
            };
            lines.push(Line::styled(more, t.dim));
        }
        (lines, chosen)
    }
}

impl super::popup::PopupView for LineageView {
    fn render(&self, cx: &super::popup::PopupCtx, frame: &mut Frame) {
        let t = cx.theme;
        let most = popup_area(frame.area(), 90, 80);
        let (lines, chosen_line) = self.lines(t, usize::from(most.width.saturating_sub(2)));
        let area = super::fit_to_lines(most, &lines);
        let inner_height = usize::from(area.height.saturating_sub(2));
        // Keep the chosen branch in view, with what is said under it.
        let scroll = chosen_line.saturating_sub(inner_height.saturating_sub(3));
        frame.render_widget(Clear, area);
        let title = format!(" Lineage: {} ", count(self.rows.len(), "session"));
        frame.render_widget(
            Paragraph::new(lines).scroll((scroll as u16, 0)).block(
                Block::bordered()
                    .border_style(t.accent)
                    .title(Line::styled(title, t.title)),
            ),
            area,
        );
    }

    /// It takes every key: the footer is its keys.
    fn footer(&self) -> Option<(&'static str, Vec<Row>)> {
        Some(("Lineage", LineageView::help()))
    }
}
