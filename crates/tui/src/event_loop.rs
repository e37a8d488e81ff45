//! The event loop: one `tokio::select!` over terminal input, engine records,
//! the replay clock, highlighting results and live re-runs. Nothing in it
//! blocks; a frame is drawn when something changed, at most once per
//! `MIN_FRAME` while output floods, and at once after a key or a highlighting
//! result.

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

use super::app::view;
use super::app::{Action, App, Msg, StartRequest};
use super::external_editor::EditorHook;
use super::highlight::Highlighter;
use super::loader::Loaded;
use codeloop_engine::EngineHandle;
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

/// What the loop may ask of the outside world.
#[derive(Default)]
pub struct Hooks {
    /// Start a live session.
    pub starter: Option<Starter>,
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
    mut engine: Option<EngineHandle>,
    mut hooks: Hooks,
) -> anyhow::Result<()>
where
    B: Backend + std::io::Write,
    B::Error: Send + Sync + 'static,
    S: Stream<Item = std::io::Result<TermEvent>> + Unpin,
{
    let (hl_tx, mut hl_rx) = mpsc::channel(4);
    let highlighter = Highlighter::spawn(hl_tx)
        .map_err(|e| anyhow::anyhow!("cannot start the highlighting thread: {e}"))?;
    let (rerun_tx, mut rerun_rx) = mpsc::channel::<(u64, Result<RunRecord, String>)>(16);
    let rerun_gate = Arc::new(tokio::sync::Semaphore::new(1));
    let (log_tx, mut log_rx) = mpsc::channel::<Msg>(4);
    let mut clock = tokio::time::interval(Duration::from_secs(1));
    clock.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);

    if let Ok(size) = terminal.size() {
        app.update(Msg::Term(TermEvent::Resize(size.width, size.height)));
    }
    let mut last_frame = draw(terminal, app, &highlighter, &mut hooks)?;
    let mut initial = std::mem::take(&mut hooks.initial);
    let mut loading = hooks.loading.take();
    let mut messages = hooks.messages.take();

    loop {
        let now = Instant::now();
        let replay_due = app.replay_deadline(now);
        let min_frame = if loading.is_some() {
            LOADING_FRAME
        } else {
            MIN_FRAME
        };
        let frame_due = app.is_dirty().then(|| last_frame + min_frame);
        let running = app.session_running();
        let mut draw_now = false;
        let mut actions = Vec::new();

        tokio::select! {
            biased;
            _ = std::future::ready(()), if !initial.is_empty() => {
                actions = std::mem::take(&mut initial);
            }
            ev = input.next() => match ev {
                Some(Ok(ev)) => {
                    let is_key = matches!(ev, TermEvent::Key(_));
                    actions = app.update(Msg::Term(ev));
                    draw_now = is_key;
                }
                Some(Err(e)) => return Err(anyhow::anyhow!("cannot read the terminal: {e}")),
                None => break,
            },
            rec = recv_record(&mut engine) => match rec {
                Some(r) => {
                    actions = app.update(Msg::Record(r));
                    // Take what else is waiting, so one frame serves many records.
                    if let Some(h) = engine.as_mut() {
                        for _ in 0..DRAIN_BATCH {
                            match h.events.try_recv() {
                                Ok(r) => actions.extend(app.update(Msg::Record(r))),
                                Err(_) => break,
                            }
                        }
                    }
                }
                None => {
                    if let Some(h) = engine.take() {
                        let result = match h.done.await {
                            Ok(Ok(_)) => Ok(()),
                            Ok(Err(e)) => Err(format!("{e:#}")),
                            Err(e) => Err(format!("the engine task failed: {e}")),
                        };
                        actions = app.update(Msg::EngineDone(result));
                    }
                }
            },
            Some(m) = log_rx.recv() => actions = app.update(m),
            m = recv_message(&mut messages) => match m {
                Some(m) => actions = app.update(m),
                None => messages = None,
            },
            Some(h) = hl_rx.recv() => {
                actions = app.update(Msg::Highlighted(h));
                // At most two results a request (the screen first, then all):
                // shown at once, not a frame interval after the plain frame.
                draw_now = true;
            }
            loaded = recv_loaded(&mut loading) => match loaded {
                Some(Loaded::Records { records, progress }) => app.load_records(records, progress),
                Some(Loaded::End(end)) => {
                    app.load_finished(end);
                    loading = None;
                }
                None => {
                    app.load_finished(Err("the reading thread stopped".into()));
                    loading = None;
                }
            },
            Some((run_id, outcome)) = rerun_rx.recv() => {
                actions = app.update(Msg::Rerun { run_id, outcome });
            }
            _ = sleep_until(replay_due) => actions = app.update(Msg::Tick(Instant::now())),
            _ = sleep_until(frame_due) => draw_now = true,
            _ = clock.tick(), if running => actions = app.update(Msg::Tick(Instant::now())),
        }

        let mut pending = std::collections::VecDeque::from(actions);
        while let Some(action) = pending.pop_front() {
            match action {
                Action::Quit => {}
                Action::Notify(text) => {
                    write_raw(terminal, &super::notify::Desktop::from_env().escape(&text));
                }
                Action::Copy(text) => write_raw(terminal, &super::notify::osc52(&text)),
                Action::ReadLog(path) => {
                    let tx = log_tx.clone();
                    tokio::task::spawn_blocking(move || {
                        let result = super::log_reader::read_log(&path).map(Arc::new);
                        let _ = tx.blocking_send(Msg::LogRead { path, result });
                    });
                }
                Action::ReadPicture(path) => {
                    let tx = log_tx.clone();
                    tokio::task::spawn_blocking(move || {
                        let result = super::picture::decode(&path).map(Arc::new);
                        let _ = tx.blocking_send(Msg::PictureRead { path, result });
                    });
                }
                Action::Steer(command) => steer(app, engine.as_ref(), command),
                Action::Configure(choices) => {
                    if let Some(configure) = hooks.configure.as_mut() {
                        configure(choices);
                    }
                }
                Action::Export {
                    format,
                    state,
                    session_dir,
                    source,
                } => match hooks.exporter.as_mut() {
                    Some(export) => match export(format, &state, session_dir.as_deref(), &source) {
                        Ok(path) => {
                            app.say(NoticeLevel::Info, format!("exported to {}", path.display()))
                        }
                        Err(e) => app.say(NoticeLevel::Error, format!("export failed: {e:#}")),
                    },
                    None => app.say(NoticeLevel::Warning, "this view cannot export"),
                },
                Action::Start(request) => match hooks.starter.as_mut() {
                    Some(start) => match start(request) {
                        Ok(handle) => {
                            app.set_session_dir(handle.session_dir.clone());
                            engine = Some(handle);
                        }
                        Err(e) => {
                            app.update(Msg::StartFailed(format!(
                                "cannot start the session: {e:#}"
                            )));
                        }
                    },
                    None => {
                        app.update(Msg::StartFailed("this view cannot start sessions".into()));
                    }
                },
                Action::Open { tape, replay } => {
                    if let Some(rest) = open_session(app, &tape, replay) {
                        loading = Some(rest);
                    }
                }
                Action::ListSessions => {
                    if let Some(list) = hooks.sessions.as_mut() {
                        app.set_sessions(list());
                    }
                }
                Action::DeleteSession(dir) => match std::fs::remove_dir_all(&dir) {
                    Ok(()) => {
                        app.forget_session(&dir);
                        app.say(NoticeLevel::Info, format!("deleted {}", dir.display()));
                    }
                    Err(e) => app.say(
                        NoticeLevel::Error,
                        format!(
                            "cannot delete {}: {e} (check its permissions, or delete it by hand)",
                            dir.display()
                        ),
                    ),
                },
                Action::OpenEditor(edit) => {
                    let outcome = match hooks.editor.as_mut() {
                        Some(open) => {
                            let outcome = open(edit.text).await;
                            // The hook cleared the screen; forget both frames so the
                            // next draw is whole (`clear()` would read the cursor
                            // position, racing the terminal input reader).
                            terminal.swap_buffers();
                            terminal.swap_buffers();
                            outcome
                        }
                        None => crate::external_editor::EditorOutcome::Failed {
                            message: "this view cannot open an editor".into(),
                            text: None,
                        },
                    };
                    let target = edit.target;
                    pending.extend(app.update(Msg::EditorDone { target, outcome }));
                    draw_now = true;
                }
                Action::Rerun { run_id, state } => {
                    if let Some(rerun) = hooks.rerunner.clone() {
                        let tx = rerun_tx.clone();
                        let gate = Arc::clone(&rerun_gate);
                        tokio::spawn(async move {
                            // One re-run at a time: they are real processes.
                            let _permit = gate.acquire_owned().await;
                            let outcome = rerun(run_id, state).await;
                            let _ = tx.send((run_id, outcome)).await;
                        });
                    }
                }
            }
        }
        if app.quitting() {
            break;
        }
        if loading.is_some() && app.info().loading.is_none() {
            // The tape being read is no longer on screen (a new session):
            // stop its reading thread.
            loading = None;
        }
        if app.is_dirty() && (draw_now || last_frame.elapsed() >= min_frame) {
            last_frame = draw(terminal, app, &highlighter, &mut hooks)?;
        }
    }
    Ok(())
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
            *app = opened;
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
