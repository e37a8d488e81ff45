//! The event loop: one `tokio::select!` over terminal input, engine records,
//! the replay clock, highlighting results and live re-runs. Nothing in it
//! blocks; a frame is drawn when something changed, at most once per
//! `MIN_FRAME` while output floods or keys come faster than that (a paste
//! typed in as keys: each key is handled as it comes, and the frame after
//! the last one falls due `MIN_FRAME` after the one before), at once after
//! a key that comes alone or a highlighting result.

use std::future::Future;
use std::io::Write;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossterm::event::Event as TermEvent;
use futures_util::{Stream, StreamExt};
use ratatui::Terminal;
use ratatui::backend::Backend;
use tokio::sync::mpsc;

mod actions;

use super::app::view;
use super::app::{Action, App, Msg, StartRequest};
use super::external_editor::EditorHook;
use super::highlight::{Highlighted, Highlighter};
use super::loader::Loaded;
use codeloop_session::EngineHandle;
use codeloop_session::{Command, NoticeLevel, RunRecord, State};

/// At most this many frames a second while records flood in.
pub(crate) const MIN_FRAME: Duration = Duration::from_millis(16);
/// At most this many frames a second while a tape is being read (its
/// progress needs no more; the fold gets the time).
pub(crate) const LOADING_FRAME: Duration = Duration::from_millis(50);
/// Records applied in one go before the loop looks at the keyboard again.
const DRAIN_BATCH: usize = 2048;

pub(crate) type RerunFuture = Pin<Box<dyn Future<Output = Result<RunRecord, String>> + Send>>;
/// Re-executes a recorded run given the state at the cursor.
pub(crate) type Rerunner = Arc<dyn Fn(u64, Box<State>) -> RerunFuture + Send + Sync>;
/// Writes a session in a format (`codeloop export`): the state folded to
/// its end, the session's folder (None: here), where the tape came from; the
/// path written.
pub(crate) type Exporter = Box<
    dyn FnMut(
            super::app::ExportFormat,
            &State,
            Option<&std::path::Path>,
            &str,
        ) -> anyhow::Result<std::path::PathBuf>
        + Send,
>;
/// Starts a live session.
pub type Starter = Box<dyn FnMut(StartRequest) -> anyhow::Result<EngineHandle> + Send>;

/// Describe an input file the person attaches (run off the UI thread):
/// the binary's, which describes it as a session's start does.
pub type Describer = Arc<
    dyn Fn(&std::path::Path) -> Result<codeloop_session::InputFile, codeloop_inputs::Refusal>
        + Send
        + Sync,
>;

/// What the loop may ask of the outside world.
#[derive(Default)]
pub struct Hooks {
    /// Start a live session.
    pub starter: Option<Starter>,
    /// Describe a file the person attaches.
    pub describer: Option<Describer>,
    /// Re-execute a recorded run (replay --live).
    pub rerunner: Option<Rerunner>,
    /// Actions to perform as the loop starts (a task given on the command line).
    pub initial: Vec<Action>,
    /// Told about every frame drawn (the benchmark measures with it).
    pub on_frame: Option<Box<dyn FnMut(FrameStats) + Send>>,
    /// Run the person's editor with the terminal handed over (`o`).
    pub editor: Option<EditorHook>,
    /// The recent sessions, read again when the welcome screen shows.
    pub sessions: Option<Box<dyn FnMut() -> Vec<codeloop_session::index::SessionSummary> + Send>>,
    /// What the next session starts with (the palette's choices).
    pub configure: Option<Box<dyn FnMut(super::app::SessionChoices) + Send>>,
    /// Write the session (the palette's export).
    pub exporter: Option<Exporter>,
    /// The rest of a tape being opened (`tui::loader`), folded batch by batch.
    pub loading: Option<mpsc::Receiver<Loaded>>,
    /// Messages from work started before the loop (the model `open`
    /// chooses in the background).
    pub messages: Option<mpsc::Receiver<Msg>>,
}

#[derive(Debug, Clone, Copy)]
pub struct FrameStats {
    pub at: Instant,
    /// Keys the app had handled when this frame was drawn.
    pub keys_handled: u64,
    /// Records the app holds.
    pub records: usize,
    pub highlight_requests: u64,
    pub highlights_applied: u64,
    /// A tape was still being read (`tui::loader`).
    pub loading: bool,
}

/// Run until the app quits or the input ends.
pub async fn run<B, S>(
    terminal: &mut Terminal<B>,
    app: &mut App,
    mut input: S,
    engine: Option<EngineHandle>,
    mut hooks: Hooks,
) -> anyhow::Result<()>
where
    B: Backend + std::io::Write,
    B::Error: Send + Sync + 'static,
    S: Stream<Item = std::io::Result<TermEvent>> + Unpin,
{
    let mut sources = Sources::new(engine, &mut hooks)?;
    if let Ok(size) = terminal.size() {
        app.update(Msg::Term(TermEvent::Resize(size.width, size.height)));
    }
    let mut last_frame = draw(terminal, app, &sources.highlighter, &mut hooks)?;
    loop {
        let min_frame = sources.min_frame();
        let frame_due = app.is_dirty().then(|| last_frame + min_frame);
        let Some(woke) = sources.wait(app, &mut input, frame_due).await? else {
            break;
        };
        let draw_now = sources.perform(terminal, app, &mut hooks, woke).await;
        if app.quitting() {
            break;
        }
        if sources.loading.is_some() && app.info().loading.is_none() {
            // The tape being read is no longer on screen (a new session):
            // stop its reading thread.
            sources.loading = None;
        }
        if app.is_dirty() && (draw_now || last_frame.elapsed() >= min_frame) {
            last_frame = draw(terminal, app, &sources.highlighter, &mut hooks)?;
        }
    }
    Ok(())
}

/// What the loop listens to beside the terminal's input, and the work it
/// started in the background whose results come back to it.
struct Sources {
    /// The live session's engine: its records, then its end.
    engine: Option<EngineHandle>,
    /// Actions to perform first (a task given on the command line).
    initial: Vec<Action>,
    /// The rest of a tape being read.
    loading: Option<mpsc::Receiver<Loaded>>,
    /// Messages from work started before the loop.
    messages: Option<mpsc::Receiver<Msg>>,
    highlighter: Highlighter,
    highlighted: mpsc::Receiver<Highlighted>,
    /// Files read off the UI thread (a run's log, a picture): where their
    /// readers send, and where the loop hears.
    reads: mpsc::Sender<Msg>,
    read: mpsc::Receiver<Msg>,
    /// Re-runs (replay --live), one at a time, and their outcomes.
    reruns: mpsc::Sender<(u64, Result<RunRecord, String>)>,
    rerun: mpsc::Receiver<(u64, Result<RunRecord, String>)>,
    rerun_gate: Arc<tokio::sync::Semaphore>,
    /// The second hand of a running session's clock.
    clock: tokio::time::Interval,
}

/// What woke the loop: what the app asks for in answer, and whether the
/// frame is drawn at once (a highlighting result, a frame fallen due).
#[derive(Default)]
struct Woke {
    actions: Vec<Action>,
    draw_now: bool,
}

impl Sources {
    fn new(engine: Option<EngineHandle>, hooks: &mut Hooks) -> anyhow::Result<Sources> {
        let (hl_tx, highlighted) = mpsc::channel(4);
        let highlighter = Highlighter::spawn(hl_tx)
            .map_err(|e| anyhow::anyhow!("cannot start the highlighting thread: {e}"))?;
        let (reruns, rerun) = mpsc::channel(16);
        let (reads, read) = mpsc::channel(4);
        let mut clock = tokio::time::interval(Duration::from_secs(1));
        clock.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        Ok(Sources {
            engine,
            initial: std::mem::take(&mut hooks.initial),
            loading: hooks.loading.take(),
            messages: hooks.messages.take(),
            highlighter,
            highlighted,
            reads,
            read,
            reruns,
            rerun,
            rerun_gate: Arc::new(tokio::sync::Semaphore::new(1)),
            clock,
        })
    }

    /// The shortest time between two frames now.
    fn min_frame(&self) -> Duration {
        if self.loading.is_some() {
            LOADING_FRAME
        } else {
            MIN_FRAME
        }
    }

    /// Wait for the next thing that happens and hand it to the app: the
    /// input, the engine's records, the background work's results, the
    /// replay's and the session's clocks, a frame falling due. None: the
    /// input ended.
    async fn wait<S>(
        &mut self,
        app: &mut App,
        input: &mut S,
        frame_due: Option<Instant>,
    ) -> anyhow::Result<Option<Woke>>
    where
        S: Stream<Item = std::io::Result<TermEvent>> + Unpin,
    {
        let replay_due = app.replay_deadline(Instant::now());
        let running = app.session_running();
        let mut woke = Woke::default();
        tokio::select! {
            biased;
            _ = std::future::ready(()), if !self.initial.is_empty() => {
                woke.actions = std::mem::take(&mut self.initial);
            }
            ev = input.next() => match ev {
                Some(Ok(ev)) => {
                    // A key is drawn at once unless frames come faster than
                    // `MIN_FRAME` (then the frame is due, and drawn, after it).
                    woke.actions = app.update(Msg::Term(ev));
                }
                Some(Err(e)) => return Err(anyhow::anyhow!("cannot read the terminal: {e}")),
                None => return Ok(None),
            },
            rec = recv_record(&mut self.engine) => match rec {
                Some(r) => woke.actions = self.records(app, r),
                None => {
                    if let Some(h) = self.engine.take() {
                        let result = match h.done.await {
                            Ok(Ok(_)) => Ok(()),
                            Ok(Err(e)) => Err(format!("{e:#}")),
                            Err(e) => Err(format!("the engine task failed: {e}")),
                        };
                        woke.actions = app.update(Msg::EngineDone(result));
                    }
                }
            },
            Some(m) = self.read.recv() => woke.actions = app.update(m),
            m = recv_message(&mut self.messages) => match m {
                Some(m) => woke.actions = app.update(m),
                None => self.messages = None,
            },
            Some(h) = self.highlighted.recv() => {
                woke.actions = app.update(Msg::Highlighted(h));
                // At most two results a request (the screen first, then all):
                // shown at once, not a frame interval after the plain frame.
                woke.draw_now = true;
            }
            loaded = recv_loaded(&mut self.loading) => self.loaded(app, loaded),
            Some((run_id, outcome)) = self.rerun.recv() => {
                woke.actions = app.update(Msg::Rerun { run_id, outcome });
            }
            _ = sleep_until(replay_due) => woke.actions = app.update(Msg::Tick(Instant::now())),
            _ = sleep_until(frame_due) => woke.draw_now = true,
            _ = self.clock.tick(), if running => woke.actions = app.update(Msg::Tick(Instant::now())),
        }
        Ok(Some(woke))
    }

    /// A record from the engine, and what else is waiting, so one frame
    /// serves many records.
    fn records(&mut self, app: &mut App, first: codeloop_session::Record) -> Vec<Action> {
        let mut actions = app.update(Msg::Record(first));
        if let Some(h) = self.engine.as_mut() {
            for _ in 0..DRAIN_BATCH {
                match h.events.try_recv() {
                    Ok(r) => actions.extend(app.update(Msg::Record(r))),
                    Err(_) => break,
                }
            }
        }
        actions
    }

    /// A batch of the tape being read, or its end.
    fn loaded(&mut self, app: &mut App, loaded: Option<Loaded>) {
        match loaded {
            Some(Loaded::Records { records, progress }) => app.load_records(records, progress),
            Some(Loaded::End(end)) => {
                app.load_finished(end);
                self.loading = None;
            }
            None => {
                app.load_finished(Err("the reading thread stopped".into()));
                self.loading = None;
            }
        }
    }
}

/// Open a recorded session in place of the welcome screen: review, or a
/// replay from its start; read in the background like `codeloop open` (the
/// rest of it is returned for the loop to fold).
fn open_session(
    app: &mut App,
    tape: &std::path::Path,
    replay: bool,
) -> Option<mpsc::Receiver<Loaded>> {
    let info = super::app::Info {
        source: tape.display().to_string(),
        session_dir: tape.parent().map(std::path::Path::to_path_buf),
        ..app.info().clone()
    };
    let theme = app.theme().clone();
    let screen = app.screen();
    let opened = super::loader::open(tape).map(|opening| match replay {
        true => {
            let clock = super::app::Replay::new(1.0, true, false);
            App::open_replay(opening, info, theme, clock)
        }
        false => App::open(opening, info, theme),
    });
    match opened {
        Ok((opened, rest)) => {
            let left = std::mem::replace(app, opened);
            app.opened_from(left);
            app.set_screen(screen);
            rest
        }
        Err(e) => {
            app.say(NoticeLevel::Error, format!("cannot open the session: {e}"));
            None
        }
    }
}

/// Escape sequences beside the frame (a bell, the clipboard), through the
/// terminal backend. One that cannot be written is not worth stopping for.
fn write_raw<B: Backend + Write>(terminal: &mut Terminal<B>, bytes: &str) {
    let backend = terminal.backend_mut();
    let _ = Write::write_all(backend, bytes.as_bytes()).and_then(|()| Write::flush(backend));
}

fn steer(app: &mut App, engine: Option<&EngineHandle>, command: Command) {
    let Some(h) = engine else {
        app.say(NoticeLevel::Warning, "no session is running");
        return;
    };
    if let Err(e) = h.commands.try_send(command) {
        app.say(
            NoticeLevel::Error,
            format!("the engine did not take the command ({e}); try again"),
        );
    }
}

/// Settle the app's derived views, ask for highlighting, draw.
pub(crate) fn draw<B: Backend>(
    terminal: &mut Terminal<B>,
    app: &mut App,
    highlighter: &Highlighter,
    hooks: &mut Hooks,
) -> anyhow::Result<Instant>
where
    B::Error: Send + Sync + 'static,
{
    if let Some(request) = app.prepare() {
        highlighter.request(request);
    }
    terminal
        .draw(|f| view::render(app, f))
        .map_err(|e| anyhow::anyhow!("cannot draw: {e}"))?;
    app.mark_drawn();
    let at = Instant::now();
    if let Some(on_frame) = hooks.on_frame.as_mut() {
        on_frame(FrameStats {
            at,
            keys_handled: app.keys_handled(),
            records: app.records().len(),
            highlight_requests: app.panes().code.highlight_requests(),
            highlights_applied: app.panes().code.highlights_applied(),
            loading: app.info().loading.is_some(),
        });
    }
    Ok(at)
}

async fn recv_record(engine: &mut Option<EngineHandle>) -> Option<codeloop_session::Record> {
    match engine {
        Some(h) => h.events.recv().await,
        None => std::future::pending().await,
    }
}

async fn recv_loaded(loading: &mut Option<mpsc::Receiver<Loaded>>) -> Option<Loaded> {
    match loading {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}

async fn recv_message(messages: &mut Option<mpsc::Receiver<Msg>>) -> Option<Msg> {
    match messages {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(tokio::time::Instant::from_std(at)).await,
        None => std::future::pending().await,
    }
}

/// Draw one frame without a loop (tests and snapshots).
pub fn draw_once<B: Backend>(terminal: &mut Terminal<B>, app: &mut App) -> anyhow::Result<()>
where
    B::Error: Send + Sync + 'static,
{
    let size = terminal
        .size()
        .map_err(|e| anyhow::anyhow!("cannot read the terminal size: {e}"))?;
    app.set_screen(ratatui::layout::Rect::new(0, 0, size.width, size.height));
    app.prepare();
    terminal
        .draw(|f| view::render(app, f))
        .map_err(|e| anyhow::anyhow!("cannot draw: {e}"))?;
    app.mark_drawn();
    Ok(())
}
