//! What the app asks of the event loop, done: escapes beside the frame,
//! files read off the UI thread, the engine steered, sessions started,
//! opened, listed and deleted, the editor run, a recorded run re-run, the
//! export written. The answers the app gives come back in the same queue.

use std::collections::VecDeque;
use std::io::Write;
use std::sync::Arc;

use ratatui::Terminal;
use ratatui::backend::Backend;

use super::{Hooks, Sources, Woke, open_session, steer, write_raw};
use crate::app::{Action, App, Msg, StartRequest};
use crate::external_editor::EditorOutcome;
use codeloop_session::NoticeLevel;

impl Sources {
    /// Perform the actions one by one, and any the app asks for in answer;
    /// whether the frame is to be drawn at once.
    pub(super) async fn perform<B: Backend + Write>(
        &mut self,
        terminal: &mut Terminal<B>,
        app: &mut App,
        hooks: &mut Hooks,
        woke: Woke,
    ) -> bool {
        let mut draw_now = woke.draw_now;
        let mut pending = VecDeque::from(woke.actions);
        while let Some(action) = pending.pop_front() {
            match action {
                Action::Quit => {}
                Action::Notify(text) => {
                    write_raw(terminal, &crate::notify::Desktop::from_env().escape(&text));
                }
                Action::Copy(text) => write_raw(terminal, &crate::notify::osc52(&text)),
                Action::ReadLog(path) => self.read_off_thread(move || {
                    let result = crate::log_reader::read_log(&path).map(Arc::new);
                    Msg::LogRead { path, result }
                }),
                Action::DescribeInput { path, from } => match hooks.describer.clone() {
                    Some(describe) => self.read_off_thread(move || {
                        let result = describe(&path);
                        Msg::InputDescribed { path, from, result }
                    }),
                    None => pending.extend(app.update(Msg::InputDescribed {
                        result: Err(codeloop_inputs::Refusal {
                            path: path.clone(),
                            why: "cannot be described in this view".into(),
                            todo: "attach it where a session can start (`codeloop`)".into(),
                        }),
                        path,
                        from,
                    })),
                },
                Action::ReadLineage(tape) => self.read_off_thread(move || {
                    let result = codeloop_session::lineage::of_tape(&tape).map(|l| l.map(Box::new));
                    Msg::LineageRead { tape, result }
                }),
                Action::ReadPicture(path) => self.read_off_thread(move || {
                    let result = crate::picture::decode(&path).map(Arc::new);
                    Msg::PictureRead { path, result }
                }),
                Action::Steer(command) => steer(app, self.engine.as_ref(), command),
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
                } => export(app, hooks, format, &state, session_dir.as_deref(), &source),
                Action::Start(request) => self.start(app, hooks, request),
                Action::Open { tape, replay } => {
                    if let Some(rest) = open_session(app, &tape, replay) {
                        self.loading = Some(rest);
                    }
                }
                Action::ListSessions => {
                    if let Some(list) = hooks.sessions.as_mut() {
                        app.set_sessions(list());
                    }
                }
                Action::DeleteSession(dir) => delete_session(app, &dir),
                Action::OpenEditor(edit) => {
                    let outcome = edit_outside(terminal, hooks, edit.text).await;
                    let target = edit.target;
                    pending.extend(app.update(Msg::EditorDone { target, outcome }));
                    draw_now = true;
                }
                Action::Rerun { run_id, state } => {
                    if let Some(rerun) = hooks.rerunner.clone() {
                        let tx = self.reruns.clone();
                        let gate = Arc::clone(&self.rerun_gate);
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
        draw_now
    }

    /// A file read on a blocking thread, its message sent back to the loop.
    fn read_off_thread(&self, read: impl FnOnce() -> Msg + Send + 'static) {
        let tx = self.reads.clone();
        tokio::task::spawn_blocking(move || {
            let _ = tx.blocking_send(read());
        });
    }

    /// A live session started through the starter, its engine listened to.
    fn start(&mut self, app: &mut App, hooks: &mut Hooks, request: StartRequest) {
        match hooks.starter.as_mut() {
            Some(start) => match start(request) {
                Ok(handle) => {
                    app.set_session_dir(handle.session_dir.clone());
                    self.engine = Some(handle);
                }
                Err(e) => {
                    app.update(Msg::StartFailed(format!("cannot start the session: {e:#}")));
                }
            },
            None => {
                app.update(Msg::StartFailed("this view cannot start sessions".into()));
            }
        }
    }
}

/// The palette's export, written through the exporter and said.
fn export(
    app: &mut App,
    hooks: &mut Hooks,
    format: crate::app::ExportFormat,
    state: &codeloop_session::State,
    session_dir: Option<&std::path::Path>,
    source: &str,
) {
    match hooks.exporter.as_mut() {
        Some(export) => match export(format, state, session_dir, source) {
            Ok(path) => app.say(NoticeLevel::Info, format!("exported to {}", path.display())),
            Err(e) => app.say(NoticeLevel::Error, format!("export failed: {e:#}")),
        },
        None => app.say(NoticeLevel::Warning, "this view cannot export"),
    }
}

/// A listed session's folder deleted, and the list told.
fn delete_session(app: &mut App, dir: &std::path::Path) {
    match std::fs::remove_dir_all(dir) {
        Ok(()) => {
            app.forget_session(dir);
            app.say(NoticeLevel::Info, format!("deleted {}", dir.display()));
        }
        Err(e) => app.say(
            NoticeLevel::Error,
            format!(
                "cannot delete {}: {e} (check its permissions, or delete it by hand)",
                dir.display()
            ),
        ),
    }
}

/// The person's editor on `text`, with the terminal handed over.
async fn edit_outside<B: Backend>(
    terminal: &mut Terminal<B>,
    hooks: &mut Hooks,
    text: String,
) -> EditorOutcome {
    match hooks.editor.as_mut() {
        Some(open) => {
            let outcome = open(text).await;
            // The hook cleared the screen; forget both frames so the
            // next draw is whole (`clear()` would read the cursor
            // position, racing the terminal input reader).
            terminal.swap_buffers();
            terminal.swap_buffers();
            outcome
        }
        None => EditorOutcome::Failed {
            message: "this view cannot open an editor".into(),
            text: None,
        },
    }
}
