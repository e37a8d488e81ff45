//! The panes and popups, one component a file. Each owns its state (scroll,
//! tab, selection, search), takes its keys from its own keymap table and
//! returns what the person meant (an intent), and draws from a narrow
//! context: the state folded at the cursor, its own state, the theme,
//! whether it has focus. No pane knows the app; only the app turns intents
//! into engine commands.

pub mod code;
pub mod code_coverage;
pub mod code_lines;
pub mod code_review;
pub mod code_tabs;
pub mod code_values;
pub mod confirm;
pub mod editor;
pub mod graph;
pub mod help;
pub mod history;
pub mod hscroll;
pub mod inspector;
pub mod inspector_lines;
pub mod line_edit;
pub mod message;
pub mod output;
pub mod pager;
pub mod palette;
pub mod path_complete;
pub mod pictures;
pub mod plan_stream;
pub mod sessions;
pub mod task;
pub mod travel;

use std::collections::BTreeMap;
use std::path::Path;

use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType};

use super::theme::Theme;
use codeloop_session::{NodeStatus, RunRecord, State};

/// The panes, in focus order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Focus {
    Task,
    Graph,
    Code,
    Output,
    History,
}

impl Focus {
    pub const ALL: [Focus; 5] = [
        Focus::Task,
        Focus::Graph,
        Focus::Code,
        Focus::Output,
        Focus::History,
    ];
    pub fn title(self) -> &'static str {
        match self {
            Focus::Task => "Task",
            Focus::Graph => "Workflow",
            Focus::Code => "Code",
            Focus::Output => "Output",
            Focus::History => "History",
        }
    }
    pub fn next(self) -> Focus {
        let i = Focus::ALL.iter().position(|f| *f == self).unwrap_or(0);
        Focus::ALL[(i + 1) % Focus::ALL.len()]
    }
    pub fn prev(self) -> Focus {
        let i = Focus::ALL.iter().position(|f| *f == self).unwrap_or(0);
        Focus::ALL[(i + Focus::ALL.len() - 1) % Focus::ALL.len()]
    }
}

/// What a component did with a key.
#[derive(Debug, Clone, PartialEq)]
pub enum Handled<I> {
    /// Not its key: the app tries its own tables.
    NotMine,
    /// Taken; nothing for the app to do.
    Done,
    /// Taken; the app acts on what the person meant.
    Intent(I),
}

/// A live re-run compared with the recording (replay --live).
#[derive(Debug, Clone, PartialEq)]
pub struct RerunMark {
    pub recorded: RunRecord,
    pub live: Result<RunRecord, String>,
}

impl RerunMark {
    /// Whether the outcome differs from the recording.
    pub fn differs(&self) -> bool {
        match &self.live {
            Ok(r) => {
                r.passed != self.recorded.passed
                    || r.exit_code != self.recorded.exit_code
                    || r.limit_hit != self.recorded.limit_hit
            }
            Err(_) => true,
        }
    }
}

pub type Reruns = BTreeMap<u64, RerunMark>;

/// What every pane draws from, besides its own state.
#[derive(Clone, Copy)]
pub struct Ctx<'a> {
    /// The session folded at the cursor.
    pub state: &'a State,
    pub theme: &'a Theme,
    pub focused: bool,
    /// The node the code and output panes show.
    pub selected: Option<&'a str>,
    pub reruns: &'a Reruns,
    /// The session's folder, where the full output logs are.
    pub session_dir: Option<&'a Path>,
}

impl<'a> Ctx<'a> {
    /// The frame of a pane: the focused one stands out.
    pub fn block<'b>(&self, title: Line<'b>) -> Block<'b> {
        Block::bordered()
            .border_type(if self.focused {
                BorderType::Thick
            } else {
                BorderType::Plain
            })
            .border_style(if self.focused {
                self.theme.border_focused
            } else {
                self.theme.border
            })
            .title(title)
    }

    /// A title: the pane's name, then details.
    pub fn title<'b>(&self, name: &'b str, detail: String) -> Line<'b> {
        let mut spans = vec![Span::styled(format!(" {name} "), self.theme.title)];
        if !detail.is_empty() {
            spans.push(Span::styled(format!("{detail} "), self.theme.dim));
        }
        Line::from(spans)
    }

    /// The selected node's state, if it has one.
    pub fn selected_node(&self) -> Option<&'a codeloop_session::state::NodeState> {
        self.state.nodes.get(self.selected?)
    }
}

/// Wrap `text` to `width` columns (by characters' display width).
pub fn wrap(text: &str, width: usize) -> Vec<String> {
    use unicode_width::UnicodeWidthChar;
    let width = width.max(8);
    let mut out = Vec::new();
    for para in text.split('\n') {
        let mut line = String::new();
        let mut w = 0;
        for word in para.split(' ') {
            let ww: usize = word.chars().map(|c| c.width().unwrap_or(0)).sum();
            if w > 0 && w + 1 + ww > width {
                out.push(std::mem::take(&mut line));
                w = 0;
            }
            if w > 0 {
                line.push(' ');
                w += 1;
            }
            if ww > width {
                // A word longer than the line: cut it.
                for c in word.chars() {
                    let cw = c.width().unwrap_or(0);
                    if w + cw > width {
                        out.push(std::mem::take(&mut line));
                        w = 0;
                    }
                    line.push(c);
                    w += cw;
                }
            } else {
                line.push_str(word);
                w += ww;
            }
        }
        out.push(line);
    }
    out
}

/// A style for a node status.
pub fn status_style(t: &Theme, status: NodeStatus) -> Style {
    match status {
        NodeStatus::Pending | NodeStatus::NotRun => t.dim,
        NodeStatus::Skipped | NodeStatus::Cancelled => t.warning,
        NodeStatus::Generating | NodeStatus::Checking | NodeStatus::Running => t.running,
        NodeStatus::Passed => t.ok,
        NodeStatus::Failed | NodeStatus::GaveUp => t.error,
        NodeStatus::Blocked => t.warning,
    }
}

/// A style for what a session came to.
pub fn outcome_style(t: &Theme, outcome: codeloop_session::Outcome) -> Style {
    use codeloop_session::Outcome;
    match outcome {
        Outcome::Passed => t.ok,
        Outcome::Cancelled => t.warning,
        Outcome::Working => t.running,
        Outcome::Failed | Outcome::NoPlan => t.error,
    }
}

pub fn status_symbol(status: NodeStatus) -> &'static str {
    match status {
        NodeStatus::Pending => "·",
        NodeStatus::Generating => "✎",
        NodeStatus::Checking => "…",
        NodeStatus::Running => "▶",
        NodeStatus::Passed => "✓",
        NodeStatus::Failed => "✗",
        NodeStatus::Blocked => "⊘",
        NodeStatus::GaveUp => "✗",
        NodeStatus::Skipped => "↷",
        NodeStatus::Cancelled => "■",
        NodeStatus::NotRun => "·",
    }
}

/// Lines to scroll for a page in a pane of `height` rows.
pub fn page(height: u16) -> usize {
    usize::from(height / 3).max(1)
}

/// A scroll request the list-like panes share.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scroll {
    Up,
    Down,
    PageUp,
    PageDown,
}

/// The scrolling keys the code, output and history tables share, each
/// wrapped in the table's own act.
macro_rules! scroll_keys {
    ($act:path) => {
        &[
            (
                $crate::keymap::Key::code(crossterm::event::KeyCode::Up),
                $act($crate::panes::Scroll::Up),
            ),
            (
                $crate::keymap::Key::ch('k'),
                $act($crate::panes::Scroll::Up),
            ),
            (
                $crate::keymap::Key::code(crossterm::event::KeyCode::Down),
                $act($crate::panes::Scroll::Down),
            ),
            (
                $crate::keymap::Key::ch('j'),
                $act($crate::panes::Scroll::Down),
            ),
            (
                $crate::keymap::Key::code(crossterm::event::KeyCode::PageUp),
                $act($crate::panes::Scroll::PageUp),
            ),
            (
                $crate::keymap::Key::code(crossterm::event::KeyCode::PageDown),
                $act($crate::panes::Scroll::PageDown),
            ),
        ]
    };
}
pub(crate) use scroll_keys;

/// A centred area of the screen, `percent_x` wide and `percent_y` high.
pub fn popup_area(
    screen: ratatui::layout::Rect,
    percent_x: u16,
    percent_y: u16,
) -> ratatui::layout::Rect {
    use ratatui::layout::{Constraint, Flex, Layout};
    let [v] = Layout::vertical([Constraint::Percentage(percent_y)])
        .flex(Flex::Center)
        .areas(screen);
    let [h] = Layout::horizontal([Constraint::Percentage(percent_x)])
        .flex(Flex::Center)
        .areas(v);
    h
}

/// `area` cut to the height `lines` take wrapped in it, with a border, and
/// centred vertically where it was (a popup no taller than its text).
pub fn fit_to_lines(
    area: ratatui::layout::Rect,
    lines: &[ratatui::text::Line],
) -> ratatui::layout::Rect {
    let inner = area.width.saturating_sub(2).max(1) as usize;
    let needed: usize = lines.iter().map(|l| l.width().max(1).div_ceil(inner)).sum();
    let height = (needed as u16).saturating_add(2).min(area.height);
    ratatui::layout::Rect {
        y: area.y + area.height.saturating_sub(height) / 2,
        height,
        ..area
    }
}

/// The rows of a popup's `table` the status bar names while the popup
/// covers the panes: those with a short name, but the ones whose keys
/// `go_without_saying` (moving up and down, which would not fit 80
/// columns beside the rest).
pub fn status_rows<A>(
    table: &[crate::keymap::Binding<A>],
    go_without_saying: impl Fn(&A) -> bool,
) -> Vec<crate::keymap::Row> {
    table
        .iter()
        .filter(|b| !b.short.is_empty() && !b.keys.iter().any(|(_, a)| go_without_saying(a)))
        .map(crate::keymap::Binding::row)
        .collect()
}
