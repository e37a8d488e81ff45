//! The panes and popups, one component a file. Each owns its state (scroll,
//! tab, selection, search), takes its keys from its own keymap table and
//! returns what the person meant (an intent), and draws from a narrow
//! context: the state folded at the cursor, its own state, the theme,
//! whether it has focus.
//!
//! Architecture Invariant: panes return intents. No pane knows the app or
//! holds a channel; only the app turns intents into engine commands
//! (`app/keys.rs`, `on_intent`). A pane's `render` only draws, from `Ctx`
//! and what its `prepare` settled.
//!
//! The panes on screen implement `Pane` and are listed once, in
//! `registry!` below: a new pane is its file, its `mod` line and one line
//! there (the recipe "Add a pane" in ARCHITECTURE.md). The popups implement
//! `popup::PopupView`, each carrying what it acts on, and are listed once
//! in the app's `popups!` (`app/popups.rs`; the recipe "Add a popup").

// The registered panes (`registry!`), declared here where rustfmt sees them.
pub mod code;
pub mod graph;
pub mod history;
pub mod output;
pub mod task;
pub mod welcome;

pub(crate) mod code_coverage;
pub(crate) mod code_lines;
pub(crate) mod code_review;
pub(crate) mod code_tabs;
pub(crate) mod code_values;
pub(crate) mod confirm;
pub(crate) mod editor;
pub(crate) mod help;
pub(crate) mod hscroll;
pub(crate) mod inspector;
pub mod inspector_lines;
pub(crate) mod line_edit;
pub mod lineage;
pub(crate) mod message;
pub(crate) mod pager;
pub mod palette;
pub(crate) mod path_complete;
pub(crate) mod pictures;
pub(crate) mod plan_stream;
pub(crate) mod popup;
pub(crate) mod servers;
pub mod sessions;
pub(crate) mod travel;

use std::collections::BTreeMap;
use std::path::Path;

use crossterm::event::KeyEvent;
use ratatui::Frame;
use ratatui::layout::{Constraint, Position, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType};

use super::highlight::HighlightRequest;
use super::keymap::Row;
use super::theme::Theme;
use codeloop_session::index::SessionSummary;
use codeloop_session::{NodeStatus, NoticeLevel, RunRecord, State};

/// The registry of the panes: one line a pane, in focus order (Tab goes
/// down the list, skipping the panes not on screen). Each line names the
/// pane's identifier (a `Focus` variant), its field in `Panes`, its module
/// (the file `panes/MODULE.rs`, declared above) and its type, which
/// implements `Pane`. The app routes keys, the wheel, clicks, `prepare`,
/// the layout, `render`, the help, the footer and the palette through
/// this list; nothing else names a pane to draw or route it.
macro_rules! registry {
    ($($id:ident => $field:ident: $module:ident::$ty:ident,)+) => {
        /// A pane, by its place in the registry (which has the focus).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Focus {
            $($id,)+
        }

        impl Focus {
            /// Every pane, in focus order.
            pub const ALL: &'static [Focus] = &[$(Focus::$id,)+];
        }

        /// Each pane's own state: the app holds one of each.
        #[derive(Default)]
        pub struct Panes {
            $(pub $field: $module::$ty,)+
        }

        impl Panes {
            pub fn get(&self, pane: Focus) -> &dyn Pane {
                match pane {
                    $(Focus::$id => &self.$field,)+
                }
            }

            pub(crate) fn get_mut(&mut self, pane: Focus) -> &mut dyn Pane {
                match pane {
                    $(Focus::$id => &mut self.$field,)+
                }
            }
        }
    };
}

registry! {
    Task => task: task::TaskPane,
    Welcome => welcome: welcome::WelcomePane,
    Graph => graph: graph::GraphPane,
    Code => code: code::CodePane,
    Output => output: output::OutputPane,
    History => history: history::HistoryPane,
}

impl Focus {
    pub(crate) fn next(self) -> Focus {
        let i = Focus::ALL.iter().position(|f| *f == self).unwrap_or(0);
        Focus::ALL[(i + 1) % Focus::ALL.len()]
    }
    pub(crate) fn prev(self) -> Focus {
        let i = Focus::ALL.iter().position(|f| *f == self).unwrap_or(0);
        Focus::ALL[(i + Focus::ALL.len() - 1) % Focus::ALL.len()]
    }
}

/// What every pane is to the app. A pane owns its state, takes its keys
/// from its own table and says what the person meant (an `Intent`, never
/// a command), settles what it shows before a frame and draws from a
/// `Ctx` only.
pub trait Pane {
    /// Its name: its frame's title, and the heading of its keys in the
    /// footer, the help and the palette.
    fn title(&self) -> &'static str;

    /// Where it goes on `ctx.screen`: a column of `columns` (left, right)
    /// and its height there; the panes of a column are stacked in registry
    /// order. None: not on this screen (nor reached by Tab).
    fn place(&self, ctx: &Ctx, columns: [Rect; 2]) -> Option<Place>;

    /// Its keys, one row each, as the help, the footer and the palette
    /// list them (`keymap::rows` of its table).
    fn keymap(&self, ctx: &Ctx) -> Vec<Row>;

    /// A key while it has the focus: not its key (the app tries its own
    /// tables), taken, or what the person meant.
    fn on_key(&mut self, key: KeyEvent, ctx: &Ctx) -> Handled<Intent>;

    /// The mouse wheel over it. Returns whether it scrolled.
    fn on_wheel(&mut self, _up: bool) -> bool {
        false
    }

    /// A left click at `pos` in its `area` (it has the focus by then).
    fn on_click(&mut self, _ctx: &Ctx, _area: Rect, _pos: Position) -> Handled<Intent> {
        Handled::NotMine
    }

    /// The node the panes show was chosen again (`changed`: another one).
    fn on_select(&mut self, _changed: bool) {}

    /// Before a frame: derive what it shows from the state at the cursor;
    /// `area` is where it will be drawn (empty when it is not on screen).
    /// It may ask for slow work (highlighting) done off the UI thread.
    fn prepare(&mut self, _ctx: &Ctx, _area: Rect) -> Option<HighlightRequest> {
        None
    }

    /// Draw, only: no I/O, no mutation, no clock.
    fn render(&self, ctx: &Ctx, area: Rect, frame: &mut Frame);
}

/// What the person meant in a pane; the app alone turns it into commands
/// and actions (`app/keys.rs`, `on_intent`).
#[derive(Debug, Clone, PartialEq)]
pub enum Intent {
    /// Tell the person something in the status line.
    Say(NoticeLevel, String),
    /// Give the focus to this pane.
    Focus(Focus),
    /// A node was chosen (`changed`: another one than before): each pane's
    /// `on_select` hears it.
    Selected { changed: bool },
    /// Follow the engine's activity again.
    Follow,
    /// Run the bundled demo at this index.
    Demo(usize),
    /// Start the session with the task typed.
    SubmitTask,
    /// Ask for a file to attach to the task.
    Attach,
    /// Show the attached files' descriptions.
    DescribeInputs,
    /// The shown run's whole output log, in the pager.
    OpenLog,
    /// Open, replay, resume, fork or delete a listed session.
    Session(sessions::SessionIntent),
}

/// What the workbench shows, which the panes are laid out for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Screen {
    /// The live workbench before a session: the task editor and the welcome.
    Welcome,
    /// A session with no plan yet: the workflow takes the code's place.
    BeforePlan,
    /// A session with its plan.
    Session,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Column {
    Left,
    Right,
}

/// Where a pane goes on a screen.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Place {
    pub(crate) column: Column,
    /// Its height in the column.
    pub(crate) height: Constraint,
}

impl Place {
    pub(crate) fn left(height: Constraint) -> Option<Place> {
        Some(Place {
            column: Column::Left,
            height,
        })
    }
    pub(crate) fn right(height: Constraint) -> Option<Place> {
        Some(Place {
            column: Column::Right,
            height,
        })
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
    pub(crate) recorded: RunRecord,
    pub(crate) live: Result<RunRecord, String>,
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

pub(crate) type Reruns = BTreeMap<u64, RerunMark>;

/// What every pane draws from, besides its own state.
#[derive(Clone, Copy)]
pub struct Ctx<'a> {
    /// The session folded at the cursor.
    pub(crate) state: &'a State,
    pub(crate) theme: &'a Theme,
    pub(crate) focused: bool,
    /// The node the code and output panes show.
    pub(crate) selected: Option<&'a str>,
    pub(crate) reruns: &'a Reruns,
    /// The session's folder, where the full output logs are.
    pub(crate) session_dir: Option<&'a Path>,
    /// What the workbench shows (the welcome, a session before its plan, a session).
    pub(crate) screen: Screen,
    /// The terminal's rows (a page of scrolling is a third of them).
    pub(crate) rows: u16,
    /// The code pane shows the whole program: the output shows its run.
    pub(crate) program: bool,
    /// What the workbench knows beside the session.
    pub(crate) around: Around<'a>,
}

/// What the workbench knows beside the session at the cursor: what the
/// welcome offers, and what the history says of the tape itself.
#[derive(Clone, Copy)]
pub(crate) struct Around<'a> {
    /// The model a new session starts on.
    pub(crate) model_label: &'a str,
    pub(crate) demos: &'a [welcome::DemoEntry],
    /// Recent sessions, newest first.
    pub(crate) sessions: &'a [SessionSummary],
    /// The sandbox's layers here (probed), and what is missing, if any.
    pub(crate) sandbox_layers: &'a [String],
    pub(crate) sandbox_warning: Option<&'a str>,
    pub(crate) notes: history::TapeNotes<'a>,
}

impl<'a> Ctx<'a> {
    /// The frame of a pane: the focused one stands out.
    pub(crate) fn block<'b>(&self, title: Line<'b>) -> Block<'b> {
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
    pub(crate) fn title<'b>(&self, name: &'b str, detail: String) -> Line<'b> {
        let mut spans = vec![Span::styled(format!(" {name} "), self.theme.title)];
        if !detail.is_empty() {
            spans.push(Span::styled(format!("{detail} "), self.theme.dim));
        }
        Line::from(spans)
    }

    /// The selected node's state, if it has one.
    pub(crate) fn selected_node(&self) -> Option<&'a codeloop_session::state::NodeState> {
        self.state.nodes.get(self.selected?)
    }
}

/// Wrap `text` to `width` columns (by characters' display width).
pub(crate) fn wrap(text: &str, width: usize) -> Vec<String> {
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
pub(crate) fn status_style(t: &Theme, status: NodeStatus) -> Style {
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
pub(crate) fn outcome_style(t: &Theme, outcome: codeloop_session::Outcome) -> Style {
    use codeloop_session::Outcome;
    match outcome {
        Outcome::Passed => t.ok,
        Outcome::Cancelled => t.warning,
        Outcome::Working => t.running,
        Outcome::Failed | Outcome::NoPlan => t.error,
    }
}

pub(crate) fn status_symbol(status: NodeStatus) -> &'static str {
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
pub(crate) fn page(height: u16) -> usize {
    usize::from(height / 3).max(1)
}

/// A scroll request the list-like panes share.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scroll {
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
pub(crate) fn popup_area(
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
pub(crate) fn fit_to_lines(
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
pub(crate) fn status_rows<A>(
    table: &[crate::keymap::Binding<A>],
    go_without_saying: impl Fn(&A) -> bool,
) -> Vec<crate::keymap::Row> {
    table
        .iter()
        .filter(|b| !b.short.is_empty() && !b.keys.iter().any(|(_, a)| go_without_saying(a)))
        .map(crate::keymap::Binding::row)
        .collect()
}
