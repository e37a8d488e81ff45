//! The app: it holds the panes, the mode and the tape's cursor, routes
//! events to them, and alone turns what the person meant into engine
//! commands or actions for the event loop.
//!
//! `App::update(msg)` changes state and returns `Action`s (engine commands,
//! quit, start a session); `App::prepare()` settles derived views before a
//! frame; `view::render(&app, frame)` only draws. The app never holds a
//! channel and never reads the clock: time comes in with `Msg::Tick`.

mod access;
mod attach;
mod choices;
mod external;
mod focus;
mod guard;
mod inspect;
mod keys;
mod loading;
mod log_pager;
mod pictures;
mod popups;
mod steer_live;
mod step;
mod timetravel;
pub mod view;
mod written_plan;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use crossterm::event::{Event as TermEvent, KeyEventKind};
use ratatui::layout::Rect;

use super::external_editor::{EditorOutcome, ExternalEdit};
use super::highlight::{HighlightRequest, Highlighted};
use super::keymap::ModeKind;
use super::panes::Panes;
use super::panes::editor::EditorPopup;
use super::panes::task::TaskPane;
use super::theme::Theme;
use super::timeline::Timeline;
use codeloop_session::{Command, Event, NoticeLevel, Record, RunRecord, State, TapeContents};
pub(crate) use popups::Popup;

pub use super::panes::Focus;
pub(crate) use super::panes::RerunMark;
pub use super::panes::code::CodeTab;
pub use super::panes::confirm::Confirm;
pub use super::panes::editor::EditTarget;
pub(crate) use super::panes::message::Message;
pub use super::panes::palette::ExportFormat;
pub use super::panes::welcome::DemoEntry;
pub use super::timeline::{OUTPUT_MEMORY_BUDGET, ReplayClock as Replay};
pub use attach::AttachFrom;
pub use choices::{FoundServer, SessionChoices};
pub use timetravel::{NOTHING_TO_RESUME, instead};

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
    pub(crate) step_armed: bool,
    /// The engine ended (its result, or why it failed).
    pub(crate) ended: Option<Result<(), String>>,
    /// When the running session's clock started, and the last tick.
    pub(crate) since: Option<Instant>,
    pub(crate) now: Option<Instant>,
}

/// What starting a session needs (the event loop and `commands::ui` do the rest).
#[derive(Debug, Clone, PartialEq)]
pub enum StartRequest {
    Task {
        task: String,
        inputs: Vec<PathBuf>,
        step_mode: bool,
        /// A plan the person wrote: the model is asked only for the rest.
        plan: Option<Vec<codeloop_session::FunctionSpec>>,
        /// The bundled demo whose replies answer (a plan written after
        /// a demo's session goes on with that demo, not the workbench's model).
        demo: Option<String>,
    },
    Demo {
        name: String,
        step_mode: bool,
    },
    /// Go on with a recorded session on its own tape.
    Resume {
        tape: PathBuf,
    },
    /// A new session from the end of a recorded one.
    Fork {
        tape: PathBuf,
    },
    /// A new session from record `at` of a recorded one (F at the cursor,
    /// U's rewind).
    ForkAt {
        tape: PathBuf,
        at: u64,
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
    /// Open a recorded session (review, or replay from its start).
    Open {
        tape: PathBuf,
        replay: bool,
    },
    /// Delete a session's folder (the person confirmed).
    DeleteSession(PathBuf),
    /// Hand the terminal to the person's editor with this text.
    OpenEditor(ExternalEdit),
    /// Ring the terminal: the engine waits for approval, or the session ended.
    Notify(String),
    /// Put text on the clipboard (OSC 52).
    Copy(String),
    /// Read the recent sessions again (the welcome screen shows).
    ListSessions,
    /// Read a run's whole output log off the UI thread (`Msg::LogRead` back).
    ReadLog(PathBuf),
    /// Decode a picture off the UI thread (`Msg::PictureRead` back).
    ReadPicture(PathBuf),
    /// Describe an input file off the UI thread, with the event loop's
    /// `Hooks::describer` (`Msg::InputDescribed` back).
    DescribeInput {
        path: PathBuf,
        from: AttachFrom,
    },
    /// Read the lineage of the session at this tape off the UI thread
    /// (`Msg::LineageRead` back).
    ReadLineage(PathBuf),
    /// What the next session starts with (given before each `Start`).
    Configure(SessionChoices),
    /// Write the session (`state`, folded to its end) in `format`, into
    /// the session's folder when it has one; the app is told where.
    Export {
        format: ExportFormat,
        state: Box<State>,
        session_dir: Option<PathBuf>,
        /// Where the tape came from (the HTML page names it).
        source: String,
    },
}

/// Everything that reaches the app.
// A record is most of what arrives and is moved once, by value: boxing it
// would allocate for each of them to save a few hundred bytes on a stack.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone)]
pub enum Msg {
    Term(TermEvent),
    Record(Record),
    /// The engine ended: Ok, or the error it ended with.
    EngineDone(Result<(), String>),
    /// Starting a session failed.
    StartFailed(String),
    Highlighted(Highlighted),
    /// The time now: a replay applies what is due by then, a running
    /// session's clock moves.
    Tick(Instant),
    /// A live re-run of a recorded run finished.
    Rerun {
        run_id: u64,
        outcome: Result<RunRecord, String>,
    },
    /// A log asked for with `Action::ReadLog` was read.
    LogRead {
        path: PathBuf,
        result: Result<std::sync::Arc<super::log_reader::LogText>, String>,
    },
    /// An input file asked for with `Action::DescribeInput` was described
    /// (or refused).
    InputDescribed {
        path: PathBuf,
        from: AttachFrom,
        result: Result<codeloop_session::InputFile, codeloop_inputs::Refusal>,
    },
    /// A picture asked for with `Action::ReadPicture` was decoded.
    PictureRead {
        path: PathBuf,
        result: Result<std::sync::Arc<crate::picture::Pixels>, String>,
    },
    /// A lineage asked for with `Action::ReadLineage` was read (None: the
    /// session is no fork and has none).
    LineageRead {
        tape: PathBuf,
        result: Result<Option<Box<codeloop_session::lineage::Lineage>>, String>,
    },
    /// The person's editor closed (`Action::OpenEditor`).
    EditorDone {
        target: EditTarget,
        outcome: EditorOutcome,
    },
    /// The model a new session would start on and the sandbox it would
    /// run in, chosen after the screen opened (`codeloop open` chooses
    /// them in the background): the welcome screen names them.
    ModelChosen {
        label: String,
        demo_model: Option<DemoModel>,
        sandbox_layers: Vec<String>,
        sandbox_warning: Option<String>,
    },
}

/// Fixed facts for the status bar.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Info {
    /// The model as the status bar names it before a session says otherwise.
    pub model_label: String,
    /// Sandbox layers active on this machine (probed), before a session says otherwise.
    pub sandbox_layers: Vec<String>,
    /// The sandbox here is not full: what is missing, in words (shown in red
    /// on every screen). None when it is full, or not probed (plain review).
    pub sandbox_warning: Option<String>,
    /// Where the tape came from (review/replay) or the session folder (live).
    pub source: String,
    /// The session's folder, where the full output logs are (logs/run-N.log).
    pub session_dir: Option<PathBuf>,
    /// The tape's last line was cut off (line number): the session crashed mid-write.
    pub truncated_line: Option<usize>,
    /// The tape has no `finished` event (the session was killed): "did not finish".
    pub unfinished: bool,
    /// What could not be read from the tape (skipped lines), in one line.
    pub damage: Option<String>,
    pub demos: Vec<DemoEntry>,
    /// Recent sessions, newest first, for the welcome screen.
    pub sessions: Vec<codeloop_session::index::SessionSummary>,
    /// The model is the demo model: it answers only its demo's own task.
    pub demo_model: Option<DemoModel>,
    /// Ring the terminal on a pause for approval and at a session's end.
    pub notify: bool,
    /// The config's `[models.NAME]` profiles (the palette offers them).
    pub profiles: Vec<String>,
    /// The model servers found on this machine when several answer and
    /// none is configured: the workbench asks which (empty otherwise).
    pub servers: Vec<FoundServer>,
    /// The tape is still being read: how much of it, in percent.
    pub loading: Option<u8>,
    /// How pictures are drawn in this terminal (`graphics::detect`).
    pub graphics: crate::graphics::Graphics,
    /// What a run's working directory holds (its disk quota, bytes): the
    /// files attached together must fit in it. None checks nothing (a view
    /// that starts no run).
    pub input_room: Option<u64>,
}

/// The demo model's one task, and what to say when another is started.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DemoModel {
    pub task: String,
    /// No model is available for the person's own task, how to configure one.
    pub refusal: String,
}

/// The session on screen: how it was opened, the tape and its cursor,
/// what is known around it, and its live re-runs.
pub(crate) struct SessionView {
    mode: Mode,
    info: Info,
    timeline: Timeline,
    reruns: super::panes::Reruns,
}

impl SessionView {
    /// What the workbench shows: the welcome before a session, the
    /// session before its plan, or with it.
    pub(crate) fn screen(&self) -> super::panes::Screen {
        use super::panes::Screen;
        match &self.mode {
            Mode::Live(l) if !l.started => Screen::Welcome,
            _ if self.timeline.state().specs.is_empty() => Screen::BeforePlan,
            _ => Screen::Session,
        }
    }
}

/// The popups over the panes (the top one takes every key), and the one
/// waiting to open.
#[derive(Default)]
pub(crate) struct Popups {
    /// Open popups, the top one last.
    open: Vec<Popup>,
    /// `e` at a pause before a model call asked for its prompt: the editor
    /// opens on it once the engine has written it and paused again.
    edit_prompt_when_written: bool,
}

impl Popups {
    fn push(&mut self, popup: Popup) {
        self.open.push(popup);
    }
    fn pop(&mut self) -> Option<Popup> {
        self.open.pop()
    }
    /// The top one.
    fn last(&self) -> Option<&Popup> {
        self.open.last()
    }
    fn last_mut(&mut self) -> Option<&mut Popup> {
        self.open.last_mut()
    }
    /// Bottom to top.
    fn iter(&self) -> std::slice::Iter<'_, Popup> {
        self.open.iter()
    }
    fn iter_mut(&mut self) -> std::slice::IterMut<'_, Popup> {
        self.open.iter_mut()
    }
}

/// The app, as owned parts by concept: the session on screen, the panes
/// (and which has the focus), the popups over them, and what the next
/// session starts with; then the few facts of the terminal itself.
pub struct App {
    session: SessionView,
    theme: Theme,
    focus: Focus,
    zoom: bool,
    popups: Popups,
    /// Every pane's own state (the registry, `panes/mod.rs`).
    panes: Panes,
    /// The view a fork or rewind left, until the new session's first
    /// record: a start that fails goes back to it.
    travelled_from: Option<Box<App>>,
    /// The welcome screen a listed session was opened from: `q` goes back
    /// to it (Ctrl-C quits). Kept across sessions opened from there on, never
    /// nested.
    listed_from: Option<Box<App>>,
    flash: Option<(NoticeLevel, String)>,
    /// What the next session starts with (the palette's choices).
    choices: SessionChoices,
    /// Screen size at the last frame (mouse hit tests, page sizes).
    screen: Rect,
    quit: bool,
    /// Keys handled so far (the benchmark's key-to-frame latency uses it).
    keys_handled: u64,
    dirty: bool,
}

impl App {
    fn blank(mode: Mode, info: Info, theme: Theme) -> App {
        App {
            session: SessionView {
                mode,
                info,
                timeline: Timeline::default(),
                reruns: Default::default(),
            },
            theme,
            focus: Focus::Graph,
            zoom: false,
            popups: Popups::default(),
            panes: Panes::default(),
            travelled_from: None,
            listed_from: None,
            flash: None,
            choices: SessionChoices::default(),
            screen: Rect::new(0, 0, 160, 48),
            quit: false,
            keys_handled: 0,
            dirty: true,
        }
    }

    /// The live workbench, before a session starts.
    pub fn live(info: Info, theme: Theme) -> App {
        let mut app = App::blank(Mode::Live(Live::default()), info, theme);
        app.focus = if app.session.info.demos.is_empty() {
            Focus::Task
        } else {
            Focus::Welcome
        };
        app
    }

    /// Several model servers answer on this machine and none is configured:
    /// ask which one the next session uses (the live workbench does, as it opens).
    pub fn ask_which_server(&mut self) {
        if self.session.info.servers.len() > 1 {
            self.ask_server(false);
        }
    }

    /// Back to the welcome screen for another session (the finished one
    /// stays on its tape).
    fn new_session(&mut self, actions: &mut Vec<Action>) {
        let info = Info {
            session_dir: None,
            loading: None,
            ..self.session.info.clone()
        };
        let mut fresh = App::live(info, self.theme.clone());
        // The starter holds the choices for the next session still.
        fresh.choices = self.choices.clone();
        fresh.screen = self.screen;
        fresh.keys_handled = self.keys_handled;
        let left = self.session.timeline.head().unwrap_or(self.state());
        let carried = fresh.carry_over(left);
        // Step mode stays on for the next session.
        if let Mode::Live(live) = &mut fresh.session.mode {
            live.step_armed = left.step_mode;
        }
        let said = if fresh.has_draft() {
            "new session: its task is the last one's, ready to edit (Ctrl-S sends it)"
        } else {
            "new session: pick a demo or write a task (the last one is on its tape)"
        };
        fresh.flash = Some((NoticeLevel::Info, said.into()));
        if fresh.has_draft() {
            fresh.focus = Focus::Task;
        }
        *self = fresh;
        for path in carried {
            self.describe_file(path, AttachFrom::Carried, actions);
        }
    }

    /// Review a tape read-only; the cursor starts at the end.
    pub fn review(tape: TapeContents, info: Info, theme: Theme) -> App {
        App::open(super::loader::Opening::whole(tape), info, theme).0
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
        let clock = Replay::new(speed, !paused, live);
        App::open_replay(super::loader::Opening::whole(tape), info, theme, clock).0
    }

    // ---- what the app holds --------------------------------------------

    pub fn update(&mut self, msg: Msg) -> Vec<Action> {
        let mut actions = Vec::new();
        match msg {
            Msg::Term(ev) => self.on_term(ev, &mut actions),
            Msg::Record(r) => self.on_record(r, &mut actions),
            Msg::EngineDone(result) => {
                if let Mode::Live(live) = &mut self.session.mode {
                    if let Err(e) = &result {
                        self.flash = Some((NoticeLevel::Error, format!("the engine stopped: {e}")));
                    }
                    live.ended = Some(result);
                }
                self.dirty = true;
            }
            Msg::StartFailed(message) => {
                if let Mode::Live(live) = &mut self.session.mode {
                    live.started = false;
                }
                self.start_failed(message);
            }
            Msg::Highlighted(h) => {
                let state = self.session.timeline.state();
                if self
                    .panes
                    .code
                    .take_highlight(h, state, self.panes.graph.selected())
                {
                    self.dirty = true;
                }
            }
            Msg::Tick(now) => self.tick(now, &mut actions),
            Msg::ModelChosen {
                label,
                demo_model,
                sandbox_layers,
                sandbox_warning,
            } => {
                self.session.info.model_label = label;
                self.session.info.demo_model = demo_model;
                self.session.info.sandbox_layers = sandbox_layers;
                self.session.info.sandbox_warning = sandbox_warning;
                self.dirty = true;
            }
            Msg::LogRead { path, result } => self.on_log_read(path, result),
            Msg::PictureRead { path, result } => self.on_picture_read(path, result),
            Msg::InputDescribed { path, from, result } => {
                self.on_input_described(path, from, result);
            }
            Msg::LineageRead { tape, result } => self.on_lineage_read(&tape, result),
            Msg::EditorDone { target, outcome } => {
                self.on_editor_done(target, outcome, &mut actions);
            }
            Msg::Rerun { run_id, outcome } => self.on_rerun(run_id, outcome),
        }
        actions
    }

    /// The terminal: a key, the mouse, a new size, a paste.
    fn on_term(&mut self, ev: TermEvent, actions: &mut Vec<Action>) {
        match ev {
            TermEvent::Key(key) => {
                if key.kind != KeyEventKind::Release {
                    self.keys_handled += 1;
                    self.dirty = true;
                    self.on_key(key, actions);
                }
            }
            TermEvent::Mouse(m) => self.on_mouse(m),
            TermEvent::Resize(w, h) => {
                self.screen = Rect::new(0, 0, w, h);
                self.dirty = true;
            }
            TermEvent::Paste(text) => {
                if let Some(Popup::Editor(ed)) = self.popups.last_mut() {
                    ed.paste(&text);
                } else if self.focus == Focus::Task && self.welcome() {
                    self.panes.task.insert_str(&text);
                }
                self.dirty = true;
            }
            TermEvent::FocusGained | TermEvent::FocusLost => {}
        }
    }

    /// A record of the live session: on the timeline (the cursor follows
    /// it from the end), a desktop notice, a pause's prompt.
    fn on_record(&mut self, r: Record, actions: &mut Vec<Action>) {
        self.travelled_from = None;
        let follow = self.at_end();
        // An info line about the last act gives way when the engine moves on.
        if matches!(r.event, Event::SessionStarted(_) | Event::Paused(_))
            && matches!(&self.flash, Some((NoticeLevel::Info, _)))
        {
            self.flash = None;
        }
        // A pause, and whether it is before a prompt; the end is none.
        let paused_at = if let Event::Paused(e) = &r.event {
            Some(matches!(e.step, codeloop_session::Step::Prompt { .. }))
        } else {
            matches!(r.event, Event::Finished(_)).then_some(false)
        };
        let rings = self.session.info.notify && paused_at.is_some();
        self.session.timeline.push(r);
        if follow {
            self.set_cursor(self.session.timeline.records().len());
        }
        let timeline = &self.session.timeline;
        if rings
            && let (Some(state), Some(r)) = (timeline.head(), timeline.records().last())
            && let Some(text) = super::notify::notice_for(state, r)
        {
            actions.push(Action::Notify(text));
        }
        if let Some(prompt) = paused_at {
            self.prompt_written(prompt, actions);
        }
        self.dirty = true;
    }

    /// A recorded run run again (replay --live), marked beside its record.
    fn on_rerun(&mut self, run_id: u64, outcome: Result<RunRecord, String>) {
        if let Some(recorded) = self
            .state()
            .runs
            .get(&run_id)
            .and_then(|r| r.record.clone())
            .or_else(|| self.session.timeline.recorded_run(run_id))
        {
            self.session.reruns.insert(
                run_id,
                RerunMark {
                    recorded,
                    live: outcome,
                },
            );
        }
        self.dirty = true;
    }

    fn tick(&mut self, now: Instant, actions: &mut Vec<Action>) {
        let running = self.session_running();
        let more_coming = self.session.info.loading.is_some();
        match &mut self.session.mode {
            Mode::Replay(clock) => {
                let tick = clock.tick(&mut self.session.timeline, now, more_coming);
                for (run_id, state) in tick.finished_runs {
                    actions.push(Action::Rerun {
                        run_id,
                        state: Box::new(state),
                    });
                }
                if tick.applied > 0 {
                    self.panes.graph.follow(self.session.timeline.active());
                }
                if tick.finished {
                    self.say_replay_finished();
                }
                self.dirty = true;
            }
            Mode::Live(live) if running => {
                let t_ms = self.session.timeline.state().t_ms;
                // The session's start as the tape counts it.
                live.since.get_or_insert_with(|| {
                    now.checked_sub(Duration::from_millis(t_ms)).unwrap_or(now)
                });
                live.now = Some(now);
                self.dirty = true;
            }
            Mode::Live(_) | Mode::Review => {}
        }
    }

    fn say_replay_finished(&mut self) {
        self.flash = Some((
            NoticeLevel::Info,
            "replay finished: ←/→ step, Home restarts, space plays again".into(),
        ));
    }

    /// When the replay clock next needs a tick (None: not playing or at the end).
    pub fn replay_deadline(&mut self, now: Instant) -> Option<Instant> {
        match &mut self.session.mode {
            Mode::Replay(clock) => clock.deadline(&self.session.timeline, now),
            Mode::Live(_) | Mode::Review => None,
        }
    }

    /// Fold to `n` records; the graph follows the engine's node unless pinned.
    pub fn set_cursor(&mut self, n: usize) {
        self.session.timeline.set_cursor(n);
        self.panes.graph.follow(self.session.timeline.active());
        self.dirty = true;
    }

    /// Choose the node the code and output panes show (pinned).
    pub fn select_node(&mut self, name: String) {
        let intent = self.panes.graph.select(name);
        self.on_intent(intent, &mut Vec::new());
    }

    /// Start the task in the editor now (a task given on the command line).
    pub fn submit_task_now(&mut self) -> Vec<Action> {
        let mut actions = Vec::new();
        self.submit_task(&mut actions);
        actions
    }

    /// Settle what the frame needs: each pane's `prepare` (the output
    /// lines, the changes the history counts, the highlight request).
    pub fn prepare(&mut self) -> Option<HighlightRequest> {
        self.prepare_pictures();
        let areas = view::layout(self, self.screen);
        let selected = self.panes.graph.selected().map(str::to_string);
        let mut request = None;
        for &pane in Focus::ALL {
            let seen = self.seen(selected.as_deref(), pane);
            let ctx = view::ctx_of(&self.session, &self.theme, seen);
            let asked = self.panes.get_mut(pane).prepare(&ctx, areas.of(pane));
            request = request.or(asked);
        }
        request
    }
}
