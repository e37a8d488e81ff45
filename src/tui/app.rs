//! The app: what the workbench shows and how keys change it.
//!
//! `App::update(msg)` changes state and returns `Action`s (engine commands,
//! quit, start a session); `App::prepare()` settles derived views before a
//! frame; `view::render(&app, frame)` only draws. The app never holds a
//! channel: the event loop turns actions into effects.

use std::collections::{BTreeMap, VecDeque};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crossterm::event::{
    Event as TermEvent, KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseButton, MouseEvent,
    MouseEventKind,
};
use ratatui::layout::{Position, Rect};
use ratatui_textarea::TextArea;

use crate::session::{
    CodeSource, Command, Event, FunctionSpec, NoticeLevel, Record, RunKind, RunRecord, State,
    TapeContents,
};

use super::highlight::{HighlightRequest, Highlighted, StyledLine, text_key};
use super::sanitize::sanitize;
use super::theme::Theme;
use super::view;

/// Output text held in the in-memory tape beyond which the oldest output is
/// elided (the tape on disk keeps it all). Keeps a flood from growing memory.
pub const OUTPUT_MEMORY_BUDGET: usize = 8 << 20;
/// A copy of the state is kept every this many records, so stepping back
/// through a long tape refolds from the nearest copy, not from the start.
const CHECKPOINT_EVERY: usize = 4096;
/// Copies kept at most (thinned out evenly beyond this).
const MAX_CHECKPOINTS: usize = 32;
/// Highlighted texts kept.
const HIGHLIGHT_CACHE: usize = 8;
/// A replay shortens pauses longer than this (the person was away), so a
/// recording of a step-mode session does not stand still for minutes.
pub const REPLAY_MAX_GAP_MS: u64 = 2_000;

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
    fn next(self) -> Focus {
        let i = Focus::ALL.iter().position(|f| *f == self).unwrap_or(0);
        Focus::ALL[(i + 1) % Focus::ALL.len()]
    }
    fn prev(self) -> Focus {
        let i = Focus::ALL.iter().position(|f| *f == self).unwrap_or(0);
        Focus::ALL[(i + Focus::ALL.len() - 1) % Focus::ALL.len()]
    }
}

/// What the code pane shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CodeTab {
    Code,
    Tests,
    /// The node's code against its previous iteration.
    Diff,
    /// The assembled program.
    Program,
}

/// How the app was opened.
#[derive(Debug, Clone, PartialEq)]
pub enum Mode {
    /// The live workbench: a session runs (or is about to) under the engine.
    Live(Live),
    /// A saved tape, read-only; the cursor moves by keys.
    Review,
    /// A saved tape played back; the cursor moves by the clock.
    Replay(Replay),
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Live {
    /// A session was started (the task editor is closed).
    pub started: bool,
    /// Step mode chosen before the session started: it starts paused-before-steps.
    pub step_armed: bool,
    /// The engine ended (its result, or why it failed).
    pub ended: Option<Result<(), String>>,
    /// When the first record arrived (for the elapsed clock).
    pub since: Option<Instant>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Replay {
    pub speed: f64,
    pub playing: bool,
    /// Re-execute recorded runs and compare.
    pub live: bool,
    /// When the record at the cursor is due (set while playing).
    pub next_due: Option<Instant>,
}

/// What starting a session needs (the event loop and `commands::ui` do the rest).
#[derive(Debug, Clone, PartialEq)]
pub enum StartRequest {
    Task {
        task: String,
        inputs: Vec<PathBuf>,
        step_mode: bool,
    },
    Demo {
        name: String,
        step_mode: bool,
    },
}

/// What the app asks of the event loop.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    Quit,
    /// A steering command for the engine (it records it on the tape).
    Steer(Command),
    Start(StartRequest),
    /// Re-execute a recorded run (replay --live); the state is the one at the cursor.
    Rerun {
        run_id: u64,
        state: Box<State>,
    },
}

/// Everything that reaches the app.
#[derive(Debug, Clone)]
pub enum Msg {
    Term(TermEvent),
    Record(Record),
    /// The engine ended: Ok, or the error it ended with.
    EngineDone(Result<(), String>),
    /// Starting a session failed.
    StartFailed(String),
    Highlighted(Highlighted),
    /// The replay clock: apply what is due.
    ReplayTick,
    /// A live re-run of a recorded run finished.
    Rerun {
        run_id: u64,
        outcome: Result<RunRecord, String>,
    },
    /// A second passed (the elapsed clock of a running session).
    ClockTick,
}

/// A bundled demo as the welcome screen lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct DemoEntry {
    pub name: String,
    pub title: String,
}

/// Fixed facts for the status bar.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Info {
    /// The model as the status bar names it before a session says otherwise.
    pub model_label: String,
    /// Sandbox layers active on this machine (probed), before a session says otherwise.
    pub sandbox_layers: Vec<String>,
    /// Where the tape came from (review/replay) or the session folder (live).
    pub source: String,
    /// The session's folder, where the full output logs are (logs/run-N.log).
    pub session_dir: Option<PathBuf>,
    /// The tape's last line was cut off (line number): the session crashed mid-write.
    pub truncated_line: Option<usize>,
    pub demos: Vec<DemoEntry>,
}

/// What an open editor edits.
#[derive(Debug, Clone, PartialEq)]
pub enum EditTarget {
    Code {
        node: String,
    },
    Tests {
        node: String,
    },
    Spec {
        node: String,
    },
    Hint {
        node: String,
    },
    /// A path to attach to the task.
    Attach,
}

impl EditTarget {
    pub fn title(&self) -> String {
        match self {
            EditTarget::Code { node } => format!("Edit code of {node}"),
            EditTarget::Tests { node } => format!("Edit tests of {node}"),
            EditTarget::Spec { node } => format!("Edit spec of {node}"),
            EditTarget::Hint { node } => format!("Hint for the next repair of {node}"),
            EditTarget::Attach => "Attach an input file (path)".into(),
        }
    }
}

pub struct Editor {
    pub target: EditTarget,
    pub textarea: TextArea<'static>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Confirm {
    CancelSession,
    Quit,
}

/// A live re-run compared with the recording.
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

/// Output lines of one run, sanitized, stderr kept apart.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OutputLines {
    pub run_id: Option<u64>,
    /// (dropped bytes, kept bytes, chunks) of the run when built.
    pub version: (u64, usize, usize),
    pub lines: Vec<(crate::protocol::Stream, String)>,
}

pub struct App {
    pub mode: Mode,
    pub info: Info,
    pub theme: Theme,
    records: Vec<Record>,
    /// Records folded into `state`.
    cursor: usize,
    /// (records folded, state) saved along the tape, in order.
    checkpoints: Vec<(usize, State)>,
    /// Output bytes held in `records`; the oldest is elided past the budget.
    output_held: usize,
    elide_from: usize,
    pub elided_output: bool,
    pub state: State,
    pub focus: Focus,
    pub zoom: bool,
    pub help: bool,
    pub confirm: Option<Confirm>,
    pub editor: Option<Editor>,
    pub task: TextArea<'static>,
    pub attached: Vec<PathBuf>,
    /// The node the code and output panes show.
    pub selected: Option<String>,
    /// The person chose a node: stop following the engine's activity.
    pub pinned: bool,
    /// The node the engine touched last (followed when not pinned).
    pub active: Option<String>,
    pub code_tab: CodeTab,
    pub code_scroll: usize,
    pub output: OutputLines,
    /// Lines scrolled up from the tail (0 = follow the tail).
    pub output_back: usize,
    pub search: Option<String>,
    pub search_input: Option<String>,
    pub history_back: usize,
    pub flash: Option<(NoticeLevel, String)>,
    pub reruns: BTreeMap<u64, RerunMark>,
    /// Lines added and removed by each code version against the one before,
    /// by (node, iteration): diffed once, not on every frame.
    pub changes: BTreeMap<(String, u32), (usize, usize)>,
    highlights: VecDeque<(u64, Vec<StyledLine>)>,
    highlight_generation: u64,
    highlight_asked: Option<u64>,
    /// Screen size at the last frame (mouse hit tests).
    pub screen: Rect,
    pub quit: bool,
    /// Keys handled so far (the benchmark's key-to-frame latency uses it).
    pub keys_handled: u64,
    /// Highlighting results taken (stale ones are not counted).
    pub highlights_applied: u64,
    dirty: bool,
}

impl App {
    fn blank(mode: Mode, info: Info, theme: Theme) -> App {
        let mut task = TextArea::default();
        task.set_wrap_mode(ratatui_textarea::WrapMode::WordOrGlyph);
        task.set_placeholder_text(
            "Describe what the program should do. Ctrl-S starts; Ctrl-O attaches a file.",
        );
        App {
            mode,
            info,
            theme,
            records: Vec::new(),
            cursor: 0,
            checkpoints: Vec::new(),
            output_held: 0,
            elide_from: 0,
            elided_output: false,
            state: State::default(),
            focus: Focus::Graph,
            zoom: false,
            help: false,
            confirm: None,
            editor: None,
            task,
            attached: Vec::new(),
            selected: None,
            pinned: false,
            active: None,
            code_tab: CodeTab::Code,
            code_scroll: 0,
            output: OutputLines::default(),
            output_back: 0,
            search: None,
            search_input: None,
            history_back: 0,
            flash: None,
            reruns: BTreeMap::new(),
            changes: BTreeMap::new(),
            highlights: VecDeque::new(),
            highlight_generation: 0,
            highlight_asked: None,
            screen: Rect::new(0, 0, 160, 48),
            quit: false,
            keys_handled: 0,
            highlights_applied: 0,
            dirty: true,
        }
    }

    /// The live workbench, before a session starts.
    pub fn live(info: Info, theme: Theme) -> App {
        let mut app = App::blank(Mode::Live(Live::default()), info, theme);
        app.focus = if app.info.demos.is_empty() {
            Focus::Task
        } else {
            Focus::Graph
        };
        app
    }

    /// Back to the welcome screen for another session (the finished one
    /// stays on its tape).
    fn new_session(&mut self) {
        let info = Info {
            session_dir: None,
            ..self.info.clone()
        };
        let mut fresh = App::live(info, self.theme.clone());
        fresh.screen = self.screen;
        fresh.keys_handled = self.keys_handled;
        fresh.flash = Some((
            NoticeLevel::Info,
            "new session: pick a demo or write a task (the last one is on its tape)".into(),
        ));
        *self = fresh;
    }

    /// Review a tape read-only; the cursor starts at the end.
    pub fn review(tape: TapeContents, mut info: Info, theme: Theme) -> App {
        info.truncated_line = tape.truncated_tail.map(|(line, _)| line);
        let mut app = App::blank(Mode::Review, info, theme);
        for r in tape.records {
            app.push_record(r);
        }
        app.set_cursor(app.records.len());
        app
    }

    /// Play a tape back from the start.
    pub fn replay(
        tape: TapeContents,
        info: Info,
        theme: Theme,
        speed: f64,
        paused: bool,
        live: bool,
    ) -> App {
        let mut app = App::review(tape, info, theme);
        app.mode = Mode::Replay(Replay {
            speed,
            playing: !paused,
            live,
            next_due: None,
        });
        app.set_cursor(0);
        app
    }

    pub fn records(&self) -> &[Record] {
        &self.records
    }

    pub fn cursor(&self) -> usize {
        self.cursor
    }

    /// The cursor is behind the last record (reviewing the past).
    pub fn at_end(&self) -> bool {
        self.cursor >= self.records.len()
    }

    /// Something changed since the last frame.
    pub fn is_dirty(&self) -> bool {
        self.dirty
    }

    pub fn mark_drawn(&mut self) {
        self.dirty = false;
    }

    /// Read-only: review and replay never steer.
    pub fn read_only(&self) -> bool {
        !matches!(self.mode, Mode::Live(_))
    }

    /// The engine of a live session takes commands (it stays after the
    /// session finished, for edits and re-runs).
    pub fn engine_alive(&self) -> bool {
        matches!(&self.mode, Mode::Live(l) if l.started && l.ended.is_none())
    }

    /// A live session is running (not ended).
    pub fn session_running(&self) -> bool {
        matches!(&self.mode, Mode::Live(l) if l.started && l.ended.is_none())
            && self.state.finished.is_none()
    }

    // ---- update -------------------------------------------------------

    pub fn update(&mut self, msg: Msg) -> Vec<Action> {
        let mut actions = Vec::new();
        match msg {
            Msg::Term(TermEvent::Key(key)) => {
                if key.kind != KeyEventKind::Release {
                    self.keys_handled += 1;
                    self.dirty = true;
                    self.on_key(key, &mut actions);
                }
            }
            Msg::Term(TermEvent::Mouse(m)) => self.on_mouse(m),
            Msg::Term(TermEvent::Resize(w, h)) => {
                self.screen = Rect::new(0, 0, w, h);
                self.dirty = true;
            }
            Msg::Term(TermEvent::Paste(text)) => {
                if let Some(ed) = self.editor.as_mut() {
                    ed.textarea.insert_str(&text);
                } else if self.focus == Focus::Task && self.task_editable() {
                    self.task.insert_str(&text);
                }
                self.dirty = true;
            }
            Msg::Term(TermEvent::FocusGained | TermEvent::FocusLost) => {}
            Msg::Record(r) => {
                if let Mode::Live(live) = &mut self.mode {
                    live.since.get_or_insert_with(Instant::now);
                }
                let follow = self.at_end();
                // An info line about the last act gives way when the engine moves on.
                if matches!(r.event, Event::SessionStarted { .. } | Event::Paused { .. })
                    && matches!(&self.flash, Some((NoticeLevel::Info, _)))
                {
                    self.flash = None;
                }
                self.push_record(r);
                if follow {
                    self.set_cursor(self.records.len());
                }
                self.dirty = true;
            }
            Msg::EngineDone(result) => {
                if let Mode::Live(live) = &mut self.mode {
                    if let Err(e) = &result {
                        self.flash = Some((NoticeLevel::Error, format!("the engine stopped: {e}")));
                    }
                    live.ended = Some(result);
                }
                self.dirty = true;
            }
            Msg::StartFailed(message) => {
                if let Mode::Live(live) = &mut self.mode {
                    live.started = false;
                }
                self.flash = Some((NoticeLevel::Error, message));
                self.dirty = true;
            }
            Msg::Highlighted(h) => {
                // Latest wins: an older generation is stale unless it is for the
                // text on screen right now (then it is still useful).
                let current = self.code_text().map(|t| text_key(&t));
                if h.generation == self.highlight_generation || Some(h.key) == current {
                    self.highlights.retain(|(k, _)| *k != h.key);
                    self.highlights.push_back((h.key, h.lines));
                    while self.highlights.len() > HIGHLIGHT_CACHE {
                        self.highlights.pop_front();
                    }
                    if self.highlight_asked == Some(h.key) {
                        self.highlight_asked = None;
                    }
                    self.highlights_applied += 1;
                    self.dirty = true;
                }
            }
            Msg::ReplayTick => self.replay_tick(Instant::now(), &mut actions),
            Msg::Rerun { run_id, outcome } => {
                if let Some(recorded) = self
                    .state
                    .runs
                    .get(&run_id)
                    .and_then(|r| r.record.clone())
                    .or_else(|| self.recorded_run(run_id))
                {
                    self.reruns.insert(
                        run_id,
                        RerunMark {
                            recorded,
                            live: outcome,
                        },
                    );
                }
                self.dirty = true;
            }
            Msg::ClockTick => self.dirty = self.session_running(),
        }
        actions
    }

    fn recorded_run(&self, run_id: u64) -> Option<RunRecord> {
        self.records.iter().find_map(|r| match &r.event {
            Event::RunFinished { run_id: id, record } if *id == run_id => Some(record.clone()),
            _ => None,
        })
    }

    fn task_editable(&self) -> bool {
        matches!(&self.mode, Mode::Live(l) if !l.started)
    }

    fn on_key(&mut self, key: KeyEvent, actions: &mut Vec<Action>) {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        if ctrl && key.code == KeyCode::Char('c') {
            self.request_quit(actions);
            return;
        }
        self.flash = None;
        if self.help {
            self.help = false;
            return;
        }
        if let Some(confirm) = self.confirm.take() {
            if matches!(key.code, KeyCode::Char('y') | KeyCode::Enter) {
                match confirm {
                    Confirm::CancelSession => actions.push(Action::Steer(Command::Cancel)),
                    Confirm::Quit => {
                        actions.push(Action::Steer(Command::Cancel));
                        self.quit = true;
                        actions.push(Action::Quit);
                    }
                }
            }
            return;
        }
        if self.editor.is_some() {
            self.on_editor_key(key, actions);
            return;
        }
        if let Some(input) = self.search_input.as_mut() {
            match key.code {
                KeyCode::Enter => {
                    let q = std::mem::take(input);
                    self.search_input = None;
                    self.search = (!q.is_empty()).then_some(q);
                    self.jump_to_match(true, true);
                }
                KeyCode::Esc => self.search_input = None,
                KeyCode::Backspace => {
                    input.pop();
                }
                KeyCode::Char(c) if !ctrl => input.push(c),
                _ => {}
            }
            return;
        }
        if self.focus == Focus::Task && self.task_editable() {
            match key.code {
                KeyCode::Tab => self.focus = self.focus.next(),
                KeyCode::BackTab => self.focus = self.focus.prev(),
                KeyCode::Esc => self.focus = Focus::Graph,
                KeyCode::Char('s') if ctrl => self.submit_task(actions),
                KeyCode::Char('o') if ctrl => self.open_editor(EditTarget::Attach, String::new()),
                _ => {
                    self.task.input(key);
                }
            }
            return;
        }
        if self.on_pane_key(key, actions) {
            return;
        }
        self.on_global_key(key, actions);
    }

    fn request_quit(&mut self, actions: &mut Vec<Action>) {
        if self.session_running() && self.confirm.is_none() {
            self.confirm = Some(Confirm::Quit);
            return;
        }
        if self.session_running() {
            actions.push(Action::Steer(Command::Cancel));
        }
        self.quit = true;
        actions.push(Action::Quit);
    }

    /// Start the task in the editor now (a task given on the command line).
    pub fn submit_task_now(&mut self) -> Vec<Action> {
        let mut actions = Vec::new();
        self.submit_task(&mut actions);
        actions
    }

    fn submit_task(&mut self, actions: &mut Vec<Action>) {
        let task = self.task.lines().join("\n").trim().to_string();
        if task.is_empty() {
            self.flash = Some((
                NoticeLevel::Warning,
                "write a task first (or pick a demo in the Workflow pane)".into(),
            ));
            return;
        }
        self.start(
            StartRequest::Task {
                task,
                inputs: self.attached.clone(),
                step_mode: self.step_armed(),
            },
            actions,
        );
    }

    /// Step mode chosen on the welcome screen, for the session about to start.
    pub fn step_armed(&self) -> bool {
        matches!(&self.mode, Mode::Live(l) if l.step_armed)
    }

    fn start(&mut self, request: StartRequest, actions: &mut Vec<Action>) {
        if let Mode::Live(live) = &mut self.mode {
            live.started = true;
            live.ended = None;
        }
        self.focus = Focus::Graph;
        self.flash = Some((NoticeLevel::Info, "starting the session…".into()));
        actions.push(Action::Start(request));
    }

    fn on_editor_key(&mut self, key: KeyEvent, actions: &mut Vec<Action>) {
        let Some(editor) = self.editor.as_mut() else {
            return;
        };
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let single_line = matches!(editor.target, EditTarget::Attach);
        match key.code {
            KeyCode::Esc => {
                self.editor = None;
                self.flash = Some((NoticeLevel::Info, "edit discarded".into()));
            }
            KeyCode::Char('s') if ctrl => self.submit_editor(actions),
            KeyCode::Enter if single_line => self.submit_editor(actions),
            _ => {
                editor.textarea.input(key);
            }
        }
    }

    fn submit_editor(&mut self, actions: &mut Vec<Action>) {
        let Some(editor) = self.editor.take() else {
            return;
        };
        let text = editor.textarea.lines().join("\n");
        let command = match editor.target {
            EditTarget::Code { node } => Command::EditCode {
                node,
                code: ensure_newline(text),
            },
            EditTarget::Tests { node } => Command::EditTests {
                node,
                code: ensure_newline(text),
            },
            EditTarget::Hint { node } => {
                if text.trim().is_empty() {
                    self.flash = Some((NoticeLevel::Warning, "an empty hint was not sent".into()));
                    return;
                }
                Command::Hint {
                    node,
                    text: text.trim().to_string(),
                }
            }
            EditTarget::Spec { node } => match parse_spec(&node, &text) {
                Ok(spec) => Command::EditSpec { node, spec },
                Err(message) => {
                    self.flash = Some((NoticeLevel::Error, message));
                    self.editor = Some(Editor {
                        target: EditTarget::Spec { node },
                        textarea: editor.textarea,
                    });
                    return;
                }
            },
            EditTarget::Attach => {
                let path = PathBuf::from(text.trim());
                if path.is_file() {
                    self.flash = Some((NoticeLevel::Info, format!("attached {}", path.display())));
                    self.attached.push(path);
                } else {
                    self.flash = Some((
                        NoticeLevel::Error,
                        format!("{} is not a readable file", path.display()),
                    ));
                }
                self.focus = Focus::Task;
                return;
            }
        };
        self.flash = Some((
            NoticeLevel::Info,
            format!("sent: {}", describe_command(&command)),
        ));
        actions.push(Action::Steer(command));
    }

    fn open_editor(&mut self, target: EditTarget, text: String) {
        let lines: Vec<String> = if text.is_empty() {
            vec![String::new()]
        } else {
            text.lines().map(str::to_string).collect()
        };
        let mut textarea = TextArea::new(lines);
        if matches!(target, EditTarget::Hint { .. }) {
            textarea.set_wrap_mode(ratatui_textarea::WrapMode::WordOrGlyph);
        }
        if !matches!(target, EditTarget::Attach | EditTarget::Hint { .. }) {
            textarea.set_line_number_style(self.theme.dim);
        }
        textarea.set_cursor_line_style(ratatui::style::Style::new());
        self.editor = Some(Editor { target, textarea });
    }

    /// Keys of the focused pane. Returns whether the pane took the key.
    fn on_pane_key(&mut self, key: KeyEvent, actions: &mut Vec<Action>) -> bool {
        let page = usize::from(self.screen.height / 3).max(1);
        match self.focus {
            Focus::Task => false,
            Focus::Graph => {
                let names: Vec<String> = self
                    .state
                    .nodes_in_order()
                    .map(|n| n.spec.name.clone())
                    .collect();
                if let Mode::Live(live) = &self.mode
                    && !live.started
                    && let KeyCode::Char(c @ '1'..='9') = key.code
                {
                    let i = (c as usize) - ('1' as usize);
                    if let Some(d) = self.info.demos.get(i) {
                        let name = d.name.clone();
                        let step_mode = self.step_armed();
                        self.start(StartRequest::Demo { name, step_mode }, actions);
                        return true;
                    }
                }
                let pos = self
                    .selected
                    .as_ref()
                    .and_then(|s| names.iter().position(|n| n == s));
                let pick = match key.code {
                    KeyCode::Down | KeyCode::Char('j') => Some(
                        pos.map(|p| (p + 1).min(names.len().saturating_sub(1)))
                            .unwrap_or(0),
                    ),
                    KeyCode::Up | KeyCode::Char('k') => {
                        Some(pos.map(|p| p.saturating_sub(1)).unwrap_or(0))
                    }
                    KeyCode::Enter => {
                        self.focus = Focus::Code;
                        return true;
                    }
                    KeyCode::Char('u') => {
                        // Unpin: follow the engine again.
                        self.pinned = false;
                        self.selected = self.active.clone();
                        return true;
                    }
                    _ => None,
                };
                match pick.and_then(|i| names.get(i)) {
                    Some(name) => {
                        self.select_node(name.clone());
                        true
                    }
                    None => pick.is_some(),
                }
            }
            Focus::Code => {
                let lines = self.code_text().map(|t| t.lines().count()).unwrap_or(0);
                match key.code {
                    KeyCode::Char('t') => self.toggle_tab(CodeTab::Tests),
                    KeyCode::Char('d') => self.toggle_tab(CodeTab::Diff),
                    KeyCode::Char('p') => self.toggle_tab(CodeTab::Program),
                    KeyCode::Down | KeyCode::Char('j') => {
                        self.code_scroll = (self.code_scroll + 1).min(lines.saturating_sub(1))
                    }
                    KeyCode::Up | KeyCode::Char('k') => {
                        self.code_scroll = self.code_scroll.saturating_sub(1)
                    }
                    KeyCode::PageDown => {
                        self.code_scroll = (self.code_scroll + page).min(lines.saturating_sub(1))
                    }
                    KeyCode::PageUp => self.code_scroll = self.code_scroll.saturating_sub(page),
                    _ => return false,
                }
                true
            }
            Focus::Output => {
                let n = self.output.lines.len();
                match key.code {
                    KeyCode::Up | KeyCode::Char('k') => {
                        self.output_back = (self.output_back + 1).min(n.saturating_sub(1))
                    }
                    KeyCode::Down | KeyCode::Char('j') => {
                        self.output_back = self.output_back.saturating_sub(1)
                    }
                    KeyCode::PageUp => {
                        self.output_back = (self.output_back + page).min(n.saturating_sub(1))
                    }
                    KeyCode::PageDown => self.output_back = self.output_back.saturating_sub(page),
                    KeyCode::Char('G') => self.output_back = 0,
                    KeyCode::Char('g') => self.output_back = n.saturating_sub(1),
                    KeyCode::Char('/') => self.search_input = Some(String::new()),
                    KeyCode::Char('n') => self.jump_to_match(true, false),
                    KeyCode::Char('N') => self.jump_to_match(false, false),
                    _ => return false,
                }
                true
            }
            Focus::History => {
                match key.code {
                    KeyCode::Up | KeyCode::Char('k') => self.history_back += 1,
                    KeyCode::Down | KeyCode::Char('j') => {
                        self.history_back = self.history_back.saturating_sub(1)
                    }
                    KeyCode::PageUp => self.history_back += page,
                    KeyCode::PageDown => self.history_back = self.history_back.saturating_sub(page),
                    _ => return false,
                }
                true
            }
        }
    }

    fn on_global_key(&mut self, key: KeyEvent, actions: &mut Vec<Action>) {
        match key.code {
            KeyCode::Char('q') => self.request_quit(actions),
            KeyCode::Char('?') => self.help = true,
            KeyCode::Tab => self.focus = self.focus.next(),
            KeyCode::BackTab => self.focus = self.focus.prev(),
            KeyCode::Char('z') => self.zoom = !self.zoom,
            KeyCode::Esc => self.zoom = false,
            KeyCode::Char('i') if self.task_editable() => self.focus = Focus::Task,
            // Moving through the tape: review, replay, and the past of a live session.
            KeyCode::Left => self.step(-1),
            KeyCode::Right => self.step(1),
            KeyCode::Char('[') => self.jump_iteration(false),
            KeyCode::Char(']') => self.jump_iteration(true),
            KeyCode::Char('f') => self.jump_first_failure(),
            KeyCode::Home => {
                self.pause_replay();
                self.set_cursor(0)
            }
            KeyCode::End => {
                self.pause_replay();
                self.set_cursor(self.records.len())
            }
            _ => {
                if let Mode::Replay(_) = self.mode {
                    self.on_replay_key(key);
                } else if self.read_only() {
                    if is_steer_key(key.code) {
                        self.flash = Some((
                            NoticeLevel::Warning,
                            "read-only: this is a recorded session (replay it live with `codeloop replay --live`)".into(),
                        ));
                    }
                } else {
                    self.on_steer_key(key, actions);
                }
            }
        }
    }

    fn on_replay_key(&mut self, key: KeyEvent) {
        let Mode::Replay(replay) = &mut self.mode else {
            return;
        };
        match key.code {
            KeyCode::Char(' ') => {
                replay.playing = !replay.playing;
                replay.next_due = None;
                if replay.playing && self.cursor >= self.records.len() {
                    // Play again from the start.
                    self.set_cursor(0);
                }
            }
            KeyCode::Char('+') | KeyCode::Char('=') => {
                replay.speed = (replay.speed * 2.0).min(64.0);
                replay.next_due = None;
            }
            KeyCode::Char('-') => {
                replay.speed = (replay.speed / 2.0).max(0.125);
                replay.next_due = None;
            }
            _ => {}
        }
    }

    fn on_steer_key(&mut self, key: KeyEvent, actions: &mut Vec<Action>) {
        if key.code == KeyCode::Char('n') && matches!(&self.mode, Mode::Live(l) if l.started) {
            if self.session_running() {
                self.flash = Some((
                    NoticeLevel::Warning,
                    "a session is running: c cancels it first".into(),
                ));
            } else {
                self.new_session();
            }
            return;
        }
        let node = self.selected.clone();
        let need_node = |app: &mut App| {
            app.flash = Some((
                NoticeLevel::Warning,
                "select a node first (Workflow pane, ↑/↓)".into(),
            ));
        };
        if key.code == KeyCode::Char('s')
            && !self.engine_alive()
            && let Mode::Live(live) = &mut self.mode
            && !live.started
        {
            live.step_armed = !live.step_armed;
            self.flash = Some((
                NoticeLevel::Info,
                if live.step_armed {
                    "step mode on: the session will pause before each model call and run"
                } else {
                    "step mode off"
                }
                .into(),
            ));
            return;
        }
        if !self.engine_alive() && is_steer_key(key.code) {
            self.flash = Some((NoticeLevel::Warning, "no session is running".into()));
            return;
        }
        match key.code {
            KeyCode::Char('s') => {
                let on = !self.state.step_mode;
                actions.push(Action::Steer(Command::SetStepMode { on }));
                self.flash = Some((
                    NoticeLevel::Info,
                    if on {
                        "step mode on: the engine pauses before each model call and run"
                    } else {
                        "step mode off"
                    }
                    .into(),
                ));
            }
            KeyCode::Char('a') => {
                if self.state.paused.is_some() {
                    actions.push(Action::Steer(Command::Approve));
                } else {
                    self.flash = Some((
                        NoticeLevel::Warning,
                        "nothing to approve: the engine is not paused (s turns step mode on)"
                            .into(),
                    ));
                }
            }
            KeyCode::Char('x') => {
                if self.state.paused.is_some() {
                    actions.push(Action::Steer(Command::Skip));
                } else {
                    self.flash = Some((
                        NoticeLevel::Warning,
                        "nothing to skip: the engine is not paused".into(),
                    ));
                }
            }
            KeyCode::Char('e') => match node {
                Some(node) => {
                    let n = self.state.nodes.get(&node);
                    if self.code_tab == CodeTab::Tests {
                        let text = n.and_then(|n| n.tests.clone()).unwrap_or_default();
                        self.open_editor(EditTarget::Tests { node }, text);
                    } else {
                        let text = n.and_then(|n| n.code()).unwrap_or_default().to_string();
                        self.open_editor(EditTarget::Code { node }, text);
                    }
                }
                None => need_node(self),
            },
            KeyCode::Char('E') => match node {
                Some(node) => {
                    let text = self
                        .state
                        .nodes
                        .get(&node)
                        .map(|n| spec_text(&n.spec))
                        .unwrap_or_default();
                    self.open_editor(EditTarget::Spec { node }, text);
                }
                None => need_node(self),
            },
            KeyCode::Char('h') => match node {
                Some(node) => self.open_editor(EditTarget::Hint { node }, String::new()),
                None => need_node(self),
            },
            KeyCode::Char('r') => match node {
                Some(node) => {
                    self.flash = Some((NoticeLevel::Info, format!("re-running {node}")));
                    actions.push(Action::Steer(Command::RerunNode { node }));
                }
                None => need_node(self),
            },
            KeyCode::Char('c') => self.confirm = Some(Confirm::CancelSession),
            _ => {}
        }
    }

    fn on_mouse(&mut self, m: MouseEvent) {
        let areas = view::layout(self.screen, self.zoom.then_some(self.focus), self);
        let pos = Position::new(m.column, m.row);
        let hit = areas.pane_at(pos);
        match m.kind {
            MouseEventKind::Down(MouseButton::Left) => {
                if let Some(f) = hit {
                    self.focus = f;
                    self.dirty = true;
                    if f == Focus::Graph {
                        let row = usize::from(m.row.saturating_sub(areas.graph.y + 1));
                        if let Some(name) = view::graph_row_node(self, row, areas.graph.height) {
                            self.select_node(name);
                        }
                    }
                }
            }
            MouseEventKind::ScrollUp | MouseEventKind::ScrollDown => {
                let up = matches!(m.kind, MouseEventKind::ScrollUp);
                let n = self.output.lines.len();
                match hit {
                    Some(Focus::Output) => {
                        self.output_back = if up {
                            (self.output_back + 3).min(n.saturating_sub(1))
                        } else {
                            self.output_back.saturating_sub(3)
                        }
                    }
                    Some(Focus::Code) => {
                        self.code_scroll = if up {
                            self.code_scroll.saturating_sub(3)
                        } else {
                            self.code_scroll + 3
                        }
                    }
                    Some(Focus::History) => {
                        self.history_back = if up {
                            self.history_back + 3
                        } else {
                            self.history_back.saturating_sub(3)
                        }
                    }
                    _ => return,
                }
                self.dirty = true;
            }
            _ => {}
        }
    }

    fn toggle_tab(&mut self, tab: CodeTab) {
        self.code_tab = if self.code_tab == tab {
            CodeTab::Code
        } else {
            tab
        };
        self.code_scroll = 0;
    }

    pub fn select_node(&mut self, name: String) {
        if self.selected.as_deref() != Some(&name) {
            self.code_scroll = 0;
            self.output_back = 0;
        }
        self.selected = Some(name);
        self.pinned = true;
        if self.code_tab == CodeTab::Program {
            self.code_tab = CodeTab::Code;
        }
    }

    // ---- the tape and the cursor ----------------------------------------

    fn push_record(&mut self, mut r: Record) {
        if let Event::Output { text, .. } = &mut r.event {
            self.output_held += text.len();
        }
        self.records.push(r);
        if self.output_held > OUTPUT_MEMORY_BUDGET {
            self.elide_output();
        }
    }

    /// Drop the text of the oldest output records until within budget.
    /// The state (already folded) keeps its own bounded copy; only stepping
    /// back before this point shows less output than the tape on disk.
    fn elide_output(&mut self) {
        let target = OUTPUT_MEMORY_BUDGET / 2;
        while self.output_held > target && self.elide_from < self.records.len() {
            if let Event::Output { text, .. } = &mut self.records[self.elide_from].event {
                self.output_held -= text.len();
                *text = String::new();
                self.elided_output = true;
            }
            self.elide_from += 1;
        }
    }

    /// Fold to `n` records: forward by applying, backward by refolding.
    pub fn set_cursor(&mut self, n: usize) {
        let n = n.min(self.records.len());
        let refold = n < self.cursor;
        if refold {
            // Start from the nearest saved state at or before n.
            match self.checkpoints.iter().rev().find(|(at, _)| *at <= n) {
                Some((at, state)) => {
                    self.state = state.clone();
                    self.cursor = *at;
                }
                None => {
                    self.state = State::default();
                    self.cursor = 0;
                }
            }
        }
        for i in self.cursor..n {
            let r = &self.records[i];
            self.state.apply(r);
            if let Some(node) = active_node(&r.event) {
                self.active = Some(node.to_string());
            }
            let at = i + 1;
            if at % CHECKPOINT_EVERY == 0 && self.checkpoints.last().is_none_or(|(c, _)| *c < at) {
                self.checkpoints.push((at, self.state.clone()));
                if self.checkpoints.len() > MAX_CHECKPOINTS {
                    // Thin out evenly: keep every other one.
                    let mut keep = false;
                    self.checkpoints.retain(|_| {
                        keep = !keep;
                        keep
                    });
                }
            }
        }
        if refold || self.cursor == 0 {
            // Refolded: find the node active at the cursor.
            self.active = self.records[..n]
                .iter()
                .rev()
                .find_map(|r| active_node(&r.event))
                .map(str::to_string);
        }
        self.cursor = n;
        if !self.pinned || self.selected.is_none() {
            self.selected = self.active.clone();
        }
        self.dirty = true;
    }

    fn step(&mut self, delta: i64) {
        self.pause_replay();
        let n = if delta < 0 {
            self.cursor.saturating_sub(delta.unsigned_abs() as usize)
        } else {
            self.cursor + delta as usize
        };
        self.set_cursor(n);
    }

    fn pause_replay(&mut self) {
        if let Mode::Replay(r) = &mut self.mode {
            r.playing = false;
            r.next_due = None;
        }
    }

    /// Move to the next/previous new code version (an iteration of some node).
    fn jump_iteration(&mut self, forward: bool) {
        self.pause_replay();
        let is_code = |r: &Record| matches!(r.event, Event::Code { .. });
        let target = if forward {
            self.records[self.cursor.min(self.records.len())..]
                .iter()
                .position(is_code)
                .map(|i| self.cursor + i + 1)
        } else {
            // The cursor sits just after a code record: skip it.
            let before = self.cursor.saturating_sub(1);
            self.records[..before]
                .iter()
                .rposition(is_code)
                .map(|i| i + 1)
        };
        match target {
            Some(n) => self.set_cursor(n),
            None => {
                self.flash = Some((
                    NoticeLevel::Info,
                    if forward {
                        "no later iteration"
                    } else {
                        "no earlier iteration"
                    }
                    .into(),
                ))
            }
        }
    }

    fn jump_first_failure(&mut self) {
        self.pause_replay();
        let first = self.records.iter().position(|r| match &r.event {
            Event::RunFinished { record, .. } => !record.passed,
            Event::Localized { .. } => true,
            _ => false,
        });
        match first {
            Some(i) => {
                // Include the localization that follows a failed run.
                let localized = self.records[i + 1..]
                    .iter()
                    .take(6)
                    .position(|r| matches!(r.event, Event::Localized { .. }));
                let n = match localized {
                    Some(k) => i + 1 + k + 1,
                    None => i + 1,
                };
                self.set_cursor(n);
            }
            None => self.flash = Some((NoticeLevel::Info, "no run failed in this session".into())),
        }
    }

    /// When the replay clock next needs the app (None: not playing or at the end).
    pub fn replay_deadline(&mut self, now: Instant) -> Option<Instant> {
        let Mode::Replay(replay) = &mut self.mode else {
            return None;
        };
        if !replay.playing || self.cursor >= self.records.len() {
            return None;
        }
        let due = *replay.next_due.get_or_insert_with(|| {
            let gap = match self.cursor {
                0 => 0,
                c => self.records[c]
                    .t_ms
                    .saturating_sub(self.records[c - 1].t_ms)
                    .min(REPLAY_MAX_GAP_MS),
            };
            now + Duration::from_secs_f64(gap as f64 / 1000.0 / replay.speed)
        });
        Some(due)
    }

    /// Apply every record that is due by `now`.
    fn replay_tick(&mut self, now: Instant, actions: &mut Vec<Action>) {
        let mut applied = 0;
        while let Some(due) = self.replay_deadline(now) {
            if due > now || applied >= 10_000 {
                break;
            }
            let before = self.cursor;
            self.set_cursor(self.cursor + 1);
            applied += 1;
            if let Mode::Replay(replay) = &mut self.mode {
                // The next record is due relative to this one's due time.
                let gap = match self.records.get(self.cursor) {
                    Some(next) => next
                        .t_ms
                        .saturating_sub(self.records[before].t_ms)
                        .min(REPLAY_MAX_GAP_MS),
                    None => 0,
                };
                replay.next_due =
                    Some(due + Duration::from_secs_f64(gap as f64 / 1000.0 / replay.speed));
                if replay.live
                    && let Event::RunFinished { run_id, .. } = &self.records[before].event
                {
                    actions.push(Action::Rerun {
                        run_id: *run_id,
                        state: Box::new(self.state.clone()),
                    });
                }
            }
        }
        if self.cursor >= self.records.len()
            && let Mode::Replay(replay) = &mut self.mode
            && replay.playing
        {
            replay.playing = false;
            replay.next_due = None;
            self.flash = Some((
                NoticeLevel::Info,
                "replay finished: ←/→ step, Home restarts, space plays again".into(),
            ));
        }
        self.dirty = true;
    }

    // ---- derived views (settled before each frame) ---------------------

    /// The text the code pane shows, if any (None: nothing yet).
    /// Highlighting requests made so far (each replaces the one before).
    pub fn highlight_requests(&self) -> u64 {
        self.highlight_generation
    }

    pub fn code_text(&self) -> Option<String> {
        if self.code_tab == CodeTab::Program {
            return self.state.program.as_ref().map(|(code, _)| code.clone());
        }
        let node = self.state.nodes.get(self.selected.as_ref()?)?;
        match self.code_tab {
            CodeTab::Code | CodeTab::Diff => node.code().map(str::to_string),
            CodeTab::Tests => node.tests.clone(),
            CodeTab::Program => None,
        }
    }

    /// The highlighted lines of `text`, if the worker has done them.
    pub fn highlighted(&self, text: &str) -> Option<&[StyledLine]> {
        let key = text_key(text);
        self.highlights
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, l)| l.as_slice())
    }

    /// The run the output pane shows.
    pub fn output_run(&self) -> Option<u64> {
        if self.code_tab == CodeTab::Program {
            return self
                .state
                .run_order
                .iter()
                .rev()
                .find(|id| {
                    self.state
                        .runs
                        .get(id)
                        .is_some_and(|r| r.kind == RunKind::Program)
                })
                .copied();
        }
        match self.selected.as_ref().and_then(|s| self.state.nodes.get(s)) {
            Some(node) => node.last_run,
            None => self.state.run_order.last().copied(),
        }
    }

    /// Settle what the frame needs: the output lines, the highlight request.
    pub fn prepare(&mut self) -> Option<HighlightRequest> {
        self.prepare_output();
        self.prepare_changes();
        let syntax = self.theme.syntax.clone()?;
        if matches!(self.code_tab, CodeTab::Diff) {
            return None;
        }
        let streaming = self
            .selected
            .as_ref()
            .and_then(|s| self.state.nodes.get(s))
            .is_some_and(|n| n.streaming.is_some());
        if streaming && self.code_tab == CodeTab::Code {
            return None;
        }
        let text = self.code_text()?;
        let key = text_key(&text);
        if self.highlighted(&text).is_some() || self.highlight_asked == Some(key) {
            return None;
        }
        self.highlight_generation += 1;
        self.highlight_asked = Some(key);
        Some(HighlightRequest {
            generation: self.highlight_generation,
            key,
            code: text,
            theme: syntax,
        })
    }

    fn prepare_changes(&mut self) {
        for node in self.state.nodes.values() {
            for pair in node.versions.windows(2) {
                let key = (node.spec.name.clone(), pair[1].iteration);
                self.changes.entry(key).or_insert_with(|| {
                    super::panes::code::change_counts(&pair[0].code, &pair[1].code)
                });
            }
        }
    }

    fn prepare_output(&mut self) {
        let run_id = self.output_run();
        let run = run_id.and_then(|id| self.state.runs.get(&id));
        let version = run
            .map(|r| (r.dropped_bytes, r.kept_bytes, r.chunks.len()))
            .unwrap_or_default();
        if self.output.run_id == run_id && self.output.version == version {
            return;
        }
        let old_len = self.output.lines.len();
        let same_run = self.output.run_id == run_id;
        let mut lines: Vec<(crate::protocol::Stream, String)> = Vec::new();
        if let Some(run) = run {
            // The stream whose last line is still open (no newline yet).
            let mut open: Option<crate::protocol::Stream> = None;
            for (stream, text) in &run.chunks {
                let clean = sanitize(text);
                let ends_line = clean.ends_with('\n');
                let body = if ends_line {
                    &clean[..clean.len() - 1]
                } else {
                    &clean[..]
                };
                for (i, piece) in body.split('\n').enumerate() {
                    match lines.last_mut() {
                        Some(last) if i == 0 && open == Some(*stream) => last.1.push_str(piece),
                        _ => lines.push((*stream, piece.to_string())),
                    }
                }
                open = (!ends_line).then_some(*stream);
            }
        }
        if same_run && self.output_back > 0 {
            // Keep the view still while the tail grows.
            self.output_back += lines.len().saturating_sub(old_len);
            self.output_back = self.output_back.min(lines.len().saturating_sub(1));
        } else if !same_run {
            self.output_back = 0;
        }
        self.output = OutputLines {
            run_id,
            version,
            lines,
        };
    }

    /// Scroll to the next (or previous) line matching the search.
    fn jump_to_match(&mut self, forward: bool, from_tail: bool) {
        let Some(q) = self.search.clone() else {
            self.flash = Some((NoticeLevel::Info, "no search: press / to search".into()));
            return;
        };
        let n = self.output.lines.len();
        if n == 0 {
            return;
        }
        let q = q.to_lowercase();
        let current = if from_tail {
            n
        } else {
            n - 1 - self.output_back.min(n - 1)
        };
        let hit = |i: usize| self.output.lines[i].1.to_lowercase().contains(&q);
        let found = if forward && !from_tail {
            (current + 1..n)
                .find(|&i| hit(i))
                .or_else(|| (0..current).find(|&i| hit(i)))
        } else {
            (0..current.min(n))
                .rev()
                .find(|&i| hit(i))
                .or_else(|| (current..n).rev().find(|&i| hit(i)))
        };
        match found {
            Some(i) => self.output_back = n - 1 - i,
            None => {
                self.flash = Some((
                    NoticeLevel::Info,
                    format!("`{q}` not found in this run's output"),
                ))
            }
        }
    }
}

/// The node an event is about, for following the engine's activity.
fn active_node(event: &Event) -> Option<&str> {
    match event {
        Event::ModelRequest { purpose, .. } => purpose.node(),
        Event::Tests { node, .. }
        | Event::Code { node, .. }
        | Event::Check { node, .. }
        | Event::Localized { node, .. }
        | Event::Attempt { node, .. }
        | Event::TestsChanged { node, .. }
        | Event::Reflection { node, .. } => Some(node),
        Event::RunStarted { node, .. } => node.as_deref(),
        Event::NodeStatus { node, status } => {
            (!matches!(status, crate::session::NodeStatus::Blocked)).then_some(node.as_str())
        }
        Event::SessionStarted { .. }
        | Event::ModelDelta { .. }
        | Event::ModelReply { .. }
        | Event::ModelError { .. }
        | Event::Plan { .. }
        | Event::PlanError { .. }
        | Event::Output { .. }
        | Event::RunFinished { .. }
        | Event::Paused { .. }
        | Event::Steer { .. }
        | Event::Notice { .. }
        | Event::Program { .. }
        | Event::ProgramOutput { .. }
        | Event::Finished { .. } => None,
    }
}

fn is_steer_key(code: KeyCode) -> bool {
    matches!(
        code,
        KeyCode::Char('s' | 'a' | 'x' | 'e' | 'E' | 'h' | 'r' | 'c')
    )
}

fn ensure_newline(mut text: String) -> String {
    if !text.ends_with('\n') {
        text.push('\n');
    }
    text
}

/// A spec as the person edits it: one `key: value` a line.
pub fn spec_text(spec: &FunctionSpec) -> String {
    format!(
        "purpose: {}\ninputs: {}\noutput: {}\ndepends_on: {}\n",
        spec.purpose,
        spec.inputs,
        spec.output,
        spec.depends_on.join(", ")
    )
}

/// Read an edited spec back (the name stays the node's).
pub fn parse_spec(node: &str, text: &str) -> Result<FunctionSpec, String> {
    let mut spec = FunctionSpec {
        name: node.to_string(),
        purpose: String::new(),
        inputs: String::new(),
        output: String::new(),
        depends_on: Vec::new(),
    };
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let Some((key, value)) = line.split_once(':') else {
            return Err(format!(
                "spec line {} has no `key: value` (keys: purpose, inputs, output, depends_on)",
                i + 1
            ));
        };
        let value = value.trim().to_string();
        match key.trim() {
            "purpose" => spec.purpose = value,
            "inputs" => spec.inputs = value,
            "output" => spec.output = value,
            "depends_on" => {
                spec.depends_on = value
                    .split(',')
                    .map(|s| s.trim().to_string())
                    .filter(|s| !s.is_empty())
                    .collect()
            }
            other => {
                return Err(format!(
                    "spec line {}: unknown key `{other}` (keys: purpose, inputs, output, depends_on)",
                    i + 1
                ));
            }
        }
    }
    if spec.purpose.is_empty() {
        return Err("the spec needs a `purpose:` line".into());
    }
    Ok(spec)
}

/// A command in a few words, for the flash line and the history.
pub fn describe_command(command: &Command) -> String {
    match command {
        Command::SetStepMode { on: true } => "step mode on".into(),
        Command::SetStepMode { on: false } => "step mode off".into(),
        Command::Approve => "approved".into(),
        Command::Skip => "skipped".into(),
        Command::EditTask { .. } => "task edited".into(),
        Command::EditSpec { node, .. } => format!("spec of {node} edited"),
        Command::EditCode { node, code } => {
            format!("code of {node} edited ({} lines)", code.lines().count())
        }
        Command::EditTests { node, .. } => format!("tests of {node} edited"),
        Command::Hint { node, text } => format!("hint for {node}: {text}"),
        Command::RerunNode { node } => format!("re-run {node}"),
        Command::Cancel => "cancelled".into(),
    }
}

/// The label of a code version's origin.
pub fn source_label(source: CodeSource) -> &'static str {
    match source {
        CodeSource::Model => "model",
        CodeSource::Edit => "edited by you",
        CodeSource::Cache => "cache",
        CodeSource::Given => "given",
    }
}
