//! The TUI entry points: the workbench (default), `open` and `replay`.
//! `open`'s view, its forks and the sessions begun from it: `ui/open.rs`;
//! the live workbench: `ui/live.rs`; how its sessions start: `ui/start.rs`.

mod live;
mod open;
mod start;

use start::{Continue, continue_session, start_session};

pub use open::open_view;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;

use crate::commands::model::{ModelArgs, Selected};
use crate::config::Config;
use crate::session::{TapeContents, index, parse_tape, read_tape};
use crate::tui::app::{DemoEntry, DemoModel, ExportFormat};
use crate::tui::event_loop::{self, Hooks};
use crate::tui::loader::{self, Opening};
use crate::tui::{App, Info, Theme};
use codeloop_sandbox::{Sandbox, SandboxOptions};

/// How the workbench starts.
#[derive(Debug, Clone)]
pub enum UiMode {
    /// The live workbench; optionally with a task to start at once.
    Live {
        task: Option<String>,
        model: ModelArgs,
    },
    /// Review a saved tape read-only.
    Open { tape: PathBuf },
    /// Play a recorded tape back.
    Replay {
        tape: PathBuf,
        speed: f64,
        live: bool,
        paused: bool,
    },
}

pub async fn run(mode: UiMode, config: Config) -> anyhow::Result<i32> {
    // Checked when the config was read: a value that slipped by is `auto`.
    let graphics = config.ui.graphics.parse().unwrap_or_default();
    let theme = Theme::load(&config.ui.theme, &config.paths.config_dir.join("themes"))?;
    let demos: Vec<DemoEntry> = crate::demos::all()
        .iter()
        .map(|d| DemoEntry {
            name: d.name.to_string(),
            title: d.title.to_string(),
            plan: d.plan(),
        })
        .collect();
    let mut hooks = Hooks {
        exporter: Some(Box::new(export_session)),
        ..Hooks::default()
    };
    let app = match mode {
        UiMode::Open { tape } => {
            let (app, opened) = open_view(&tape, &config, theme, demos)?;
            hooks = Hooks {
                exporter: hooks.exporter,
                ..opened
            };
            app
        }
        UiMode::Replay {
            tape,
            speed,
            live,
            paused,
        } => {
            let clock = crate::tui::app::Replay::new(speed, !paused, live);
            replay_view(&tape, clock, live, &config, theme, demos, &mut hooks).await?
        }
        UiMode::Live { task, model } => {
            live::live_view(task, model, config, theme, demos, &mut hooks).await?
        }
    };
    show(app, graphics, hooks).await
}

/// `replay`'s view, read like `open`'s: the first frame from the first
/// records, the rest while it plays. `live`: the recorded runs are run
/// again, in a sandbox probed here.
async fn replay_view(
    tape: &Path,
    clock: crate::tui::app::Replay,
    live: bool,
    config: &Config,
    theme: Theme,
    demos: Vec<DemoEntry>,
    hooks: &mut Hooks,
) -> anyhow::Result<App> {
    let (opening, source) = open_tape(tape, &config.sessions_dir())?;
    let mut info = info(source, demos);
    if live {
        let sandbox = probe_sandbox(config.sandbox.clone()).await?;
        info.sandbox_layers = sandbox.active_layers();
        info.sandbox_warning = sandbox.warning();
        let sandbox = Arc::new(sandbox);
        hooks.rerunner = Some(Arc::new(move |run_id, state| {
            let sandbox = Arc::clone(&sandbox);
            Box::pin(async move {
                crate::engine::rerun(&sandbox, &state, run_id)
                    .await
                    .map_err(|e| format!("{e:#}"))
            })
        }));
    }
    let (app, loading) = App::open_replay(opening, info, theme, clock);
    hooks.loading = loading;
    Ok(app)
}

/// The app in the terminal until it quits; then, the terminal back, where
/// the session is kept and how to come back to it.
async fn show(
    mut app: App,
    graphics: crate::tui::graphics::Setting,
    mut hooks: Hooks,
) -> anyhow::Result<i32> {
    let (mut terminal, guard) = crate::tui::terminal::enter()?;
    // How pictures are drawn: asked of the terminal, if need be, before
    // the first frame and before anything reads its input.
    app.set_graphics(crate::tui::graphics::detect(graphics));
    // A terminal that printed part of the query instead of answering it
    // leaves nothing behind: the first frame is drawn on a clear screen.
    // (crossterm's clear: ratatui's would ask the terminal where its cursor
    // is, and wait for an answer.)
    crossterm::execute!(
        std::io::stdout(),
        crossterm::terminal::Clear(crossterm::terminal::ClearType::All)
    )?;
    let input = crate::tui::external_editor::InputSlot::new();
    hooks.editor = Some(crate::tui::external_editor::terminal_hook(input.clone()));
    let result = event_loop::run(&mut terminal, &mut app, input, None, hooks).await;
    drop(guard);
    if let Some(dir) = app.info().session_dir.as_ref() {
        println!(
            "{}",
            left_behind(dir, app.timeline().head().unwrap_or(app.state()))
        );
    }
    result?;
    Ok(0)
}

/// What the workbench says on quitting, of the session it showed: where it
/// is, how to review it, and (unless it passed) how to go on with it.
fn left_behind(dir: &Path, now: &crate::session::State) -> String {
    let id = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| dir.display().to_string());
    let mut text = format!(
        "session folder: {}
  review it: codeloop open {id}",
        dir.display()
    );
    if crate::session::Outcome::of(now) != crate::session::Outcome::Passed {
        text.push_str(&format!(
            "
  go on:     codeloop resume {id}"
        ));
    }
    text
}

/// How the welcome screen names the model a new session starts on, and,
/// for the demo model, its one task and what to say of any other
/// (`named_demo`: it was asked for with --demo).
fn welcome_model(
    selected: &Selected,
    named_demo: bool,
    demos: usize,
) -> (String, Option<DemoModel>) {
    let demo_model = selected.demo.map(|demo| DemoModel {
        task: demo.task.to_string(),
        refusal: format!(
            "{}\nHere: Esc, then 1-{demos} start a demo with its own task.",
            crate::commands::run::no_model_for_own_task(selected, named_demo),
        ),
    });
    // A demo asked for by name is named; otherwise no demo is chosen yet
    // (each key plays its own), so the label names none.
    let label = match (selected.demo, named_demo) {
        (Some(_), false) => {
            let keys = match demos {
                1 => "1 plays the bundled demo".to_string(),
                n => format!("1-{n} play the bundled demos"),
            };
            let mut label = format!("demo model: authored replies, offline ({keys})");
            if let Some(why) = &selected.fallback_reason {
                label.push_str(&format!("; {why}"));
            }
            label
        }
        _ => selected.description.clone(),
    };
    (label, demo_model)
}

/// The newest `limit` sessions, from the index's cached summaries (none
/// when the folder cannot be read: the list is a convenience).
fn recent_sessions(config: &Config, limit: usize) -> Vec<index::SessionSummary> {
    let mut sessions = index::list(&config.sessions_dir())
        .map(|l| l.sessions)
        .unwrap_or_default();
    sessions.truncate(limit);
    sessions
}

fn info(source: String, demos: Vec<DemoEntry>) -> Info {
    // A session's tape sits in its folder, beside logs/.
    let session_dir = Path::new(&source)
        .parent()
        .filter(|dir| dir.join("logs").is_dir())
        .map(Path::to_path_buf);
    Info {
        source,
        demos,
        session_dir,
        ..Info::default()
    }
}

/// Probe the sandbox off the async threads (it starts Python once).
async fn probe_sandbox(options: SandboxOptions) -> anyhow::Result<Sandbox> {
    let sandbox = tokio::task::spawn_blocking(move || {
        let sandbox = Sandbox::probe(&options);
        // The interpreter's packages, asked here once so that a session's
        // start (which names them in its prompts) does not wait for them.
        let _ = sandbox.python_environment();
        sandbox
    })
    .await
    .context("the sandbox probe failed")?;
    if let Some(problem) = sandbox.interpreter_problem() {
        anyhow::bail!("cannot run Python programs: {problem}");
    }
    Ok(sandbox)
}

/// The palette's export: into the session's folder (`export/`), or here.
fn export_session(
    format: ExportFormat,
    state: &crate::session::State,
    session_dir: Option<&Path>,
    source: &str,
) -> anyhow::Result<PathBuf> {
    use crate::commands::export;
    let format = match format {
        ExportFormat::Md => export::Format::Md,
        ExportFormat::Html => export::Format::Html,
        ExportFormat::Py => export::Format::Py,
    };
    let name = export::default_path(state, format);
    let path = match session_dir {
        // A session folder may be handed over: its `export/` (and a page's
        // folder in it) planted as a link is refused, not written through.
        Some(dir) => {
            use crate::session::session_fs::Folder;
            let into = Folder::open(dir)
                .and_then(|d| d.sub("export", true))
                .and_then(|e| match format {
                    export::Format::Py => e.sub(&name.to_string_lossy(), true).map(|_| e),
                    _ => Ok(e),
                })
                .with_context(|| format!("cannot export into {}", dir.join("export").display()))?;
            into.path().join(name)
        }
        None => std::env::current_dir()
            .context("cannot tell the current folder to export into")?
            .join(name),
    };
    export::write(state, source, format, &path)?;
    Ok(path)
}

/// `load_tape` for `open`: a tape file is read in the background (its
/// first records before the screen opens, the rest while it shows them).
pub fn open_tape(arg: &Path, sessions_dir: &Path) -> anyhow::Result<(Opening, String)> {
    if let Some(file) = index::resolve(sessions_dir, &arg.to_string_lossy())? {
        return Ok((loader::open(&file)?, file.display().to_string()));
    }
    let (contents, source) = load_tape(arg, sessions_dir)?;
    Ok((Opening::whole(contents), source))
}

/// The one way a session argument becomes a tape: a tape file, a session
/// folder, `last`, a session id or a unique prefix of one (looked up in
/// `sessions_dir`), or a bundled demo's name. Returns the tape and a label
/// naming where it came from.
pub fn load_tape(arg: &Path, sessions_dir: &Path) -> anyhow::Result<(TapeContents, String)> {
    let text = arg.to_string_lossy();
    if let Some(file) = index::resolve(sessions_dir, &text)? {
        let contents = read_tape(&file)?;
        return Ok((contents, file.display().to_string()));
    }
    if let Some(demo) = crate::demos::find(&text) {
        let label = PathBuf::from(format!("demo:{}", demo.name));
        let contents = parse_tape(demo.tape.as_bytes(), &label)
            .with_context(|| format!("the bundled demo `{}` has a broken tape", demo.name))?;
        return Ok((contents, format!("bundled demo `{}`", demo.name)));
    }
    let demos: Vec<&str> = crate::demos::all().iter().map(|d| d.name).collect();
    anyhow::bail!(
        "{} (bundled demos: {})",
        index::not_found(sessions_dir, &text),
        demos.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The workbench exports into the session folder's `export/`: in a
    /// folder handed over, an `export/` planted as a link (copied with the
    /// folder, so the reader's own) is refused, and nothing is written
    /// where it points; so is a page's folder planted inside it.
    #[test]
    fn an_export_into_a_handed_over_folder_follows_no_link_planted_there() {
        let dir = tempfile::tempdir().unwrap();
        let session = dir.path().join("handed");
        let victim = dir.path().join("victim");
        std::fs::create_dir_all(&session).unwrap();
        std::fs::create_dir_all(&victim).unwrap();
        std::os::unix::fs::symlink(&victim, session.join("export")).unwrap();
        let state = crate::session::State {
            session_id: "s1".into(),
            ..Default::default()
        };
        let e = export_session(ExportFormat::Md, &state, Some(&session), "tape").unwrap_err();
        assert!(format!("{e:#}").contains("symbolic link"), "{e:#}");
        assert_eq!(std::fs::read_dir(&victim).unwrap().count(), 0);

        std::fs::remove_file(session.join("export")).unwrap();
        std::fs::create_dir(session.join("export")).unwrap();
        std::os::unix::fs::symlink(&victim, session.join("export/codeloop-s1")).unwrap();
        let e = export_session(ExportFormat::Py, &state, Some(&session), "tape").unwrap_err();
        assert!(format!("{e:#}").contains("symbolic link"), "{e:#}");
        assert_eq!(std::fs::read_dir(&victim).unwrap().count(), 0);

        let written = export_session(ExportFormat::Md, &state, Some(&session), "tape").unwrap();
        assert_eq!(written, session.join("export/codeloop-s1.md"));
        assert!(written.is_file());
    }
}
