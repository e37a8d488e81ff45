//! The TUI entry points: the workbench (default), `open` and `replay`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;

use crate::commands::model::{ModelArgs, select_model};
use crate::config::Config;
use crate::engine::{EngineHandle, EngineOptions, EngineSetup};
use crate::exec::Sandbox;
use crate::llm::ChatModel;
use crate::llm::scripted::{Pacing, ScriptedModel};
use crate::session::{TapeContents, index, parse_tape, read_tape};
use crate::tui::app::{DemoEntry, DemoModel, StartRequest};
use crate::tui::event_loop::{self, Hooks};
use crate::tui::loader::{self, Opening};
use crate::tui::{App, Info, Theme};

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
    let theme = Theme::load(&config.ui.theme, &config.paths.config_dir.join("themes"))?;
    let demos: Vec<DemoEntry> = crate::demos::all()
        .iter()
        .map(|d| DemoEntry {
            name: d.name.to_string(),
            title: d.title.to_string(),
        })
        .collect();
    let mut hooks = Hooks::default();
    let mut app = match mode {
        UiMode::Open { tape } => {
            let (opening, source) = open_tape(&tape, &config.sessions_dir())?;
            let mut info = info(source, demos);
            // For the lineage: the sessions forked from this one.
            info.sessions = recent_sessions(&config, usize::MAX);
            let (app, loading) = App::open(opening, info, theme);
            hooks.loading = loading;
            app
        }
        UiMode::Replay {
            tape,
            speed,
            live,
            paused,
        } => {
            let (contents, source) = load_tape(&tape, &config.sessions_dir())?;
            let mut info = info(source, demos);
            if live {
                let sandbox = probe_sandbox().await?;
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
            App::replay(contents, info, theme, speed, paused, live)
        }
        UiMode::Live { task, model } => {
            // The model and the sandbox are chosen before the screen opens, so a
            // configured server that does not answer is said plainly on stderr.
            let (selected, sandbox) = tokio::join!(select_model(&config, &model), probe_sandbox());
            let selected = selected?;
            let sandbox = Arc::new(sandbox?);
            // The recent sessions, read once from the index's cached summaries.
            let sessions = recent_sessions(&config, crate::tui::panes::sessions::RECENT);
            let mut app = App::live(
                Info {
                    model_label: selected.description.clone(),
                    sandbox_layers: sandbox.active_layers(),
                    sandbox_warning: sandbox.warning(),
                    source: config.sessions_dir().display().to_string(),
                    demo_model: selected.demo.map(|demo| DemoModel {
                        task: demo.task.to_string(),
                        refusal: format!(
                            "{}\nHere: Esc, then 1-{} start a demo with its own task.",
                            crate::commands::run::no_model_for_own_task(
                                &selected,
                                model.demo.is_some()
                            ),
                            demos.len()
                        ),
                    }),
                    demos,
                    sessions,
                    notify: config.ui.notify,
                    ..Info::default()
                },
                theme,
            );
            match (task, selected.demo) {
                (Some(task), _) => {
                    app.task_mut().insert_str(&task);
                    hooks.initial = app.submit_task_now();
                }
                // `--demo NAME`: its replies fit its own task, so offer that task.
                (None, Some(demo)) if model.demo.is_some() => {
                    app.task_mut().insert_str(demo.task);
                    app.set_focus(crate::tui::Focus::Task);
                }
                _ => {}
            }
            let model: Arc<dyn ChatModel> = selected.model;
            hooks.starter = Some(Box::new(move |request| {
                start_session(&config, Arc::clone(&model), Arc::clone(&sandbox), request)
            }));
            app
        }
    };
    let (mut terminal, guard) = crate::tui::terminal::enter()?;
    let input = crate::tui::external_editor::InputSlot::new();
    hooks.editor = Some(crate::tui::external_editor::terminal_hook(input.clone()));
    let result = event_loop::run(&mut terminal, &mut app, input, None, hooks).await;
    drop(guard);
    // The terminal is back: say where the session is kept.
    if let Some(dir) = app.info().session_dir.as_ref() {
        println!("session folder: {}", dir.display());
    }
    result?;
    Ok(0)
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
async fn probe_sandbox() -> anyhow::Result<Sandbox> {
    let sandbox = tokio::task::spawn_blocking(Sandbox::probe)
        .await
        .context("the sandbox probe failed")?;
    if let Some(problem) = sandbox.interpreter_problem() {
        anyhow::bail!("cannot run Python programs: {problem}");
    }
    Ok(sandbox)
}

/// Start the engine on a task, or on a bundled demo with its own model.
fn start_session(
    config: &Config,
    model: Arc<dyn ChatModel>,
    sandbox: Arc<Sandbox>,
    request: StartRequest,
) -> anyhow::Result<EngineHandle> {
    let (task, inputs, model, cache_dir, step_mode) = match request {
        StartRequest::Task {
            task,
            inputs,
            step_mode,
        } => (
            task,
            inputs,
            model,
            Some(config.paths.cache_dir.clone()),
            step_mode,
        ),
        StartRequest::Demo { name, step_mode } => {
            let (task, model) = demo_model(&name)?;
            // No cache: a demo is there to show its failure and repair.
            (task, Vec::new(), model, None, step_mode)
        }
        StartRequest::Resume { tape } => {
            return continue_session(config, model, sandbox, tape, None);
        }
        StartRequest::Fork { tape } => {
            let dir = crate::engine::new_session_dir(&config.sessions_dir());
            return continue_session(config, model, sandbox, tape, Some(&dir));
        }
    };
    let sessions = config.sessions_dir();
    std::fs::create_dir_all(&sessions)
        .with_context(|| format!("cannot create the sessions folder {}", sessions.display()))?;
    let prompts = config.paths.config_dir.join("prompts");
    let run = &config.run;
    crate::engine::start(EngineSetup {
        task,
        inputs,
        model,
        sandbox,
        options: EngineOptions {
            max_iterations: run.max_iterations,
            workers: run.workers,
            run_timeout_secs: run.timeout_secs,
            memory_mb: run.memory_mb,
            token_budget: run.token_budget,
            step_mode: run.step_mode || step_mode,
            // The workbench keeps the engine for edits and re-runs after the end.
            keep_alive: true,
            cache_dir,
            output_dir: None,
            ..EngineOptions::default()
        },
        session_dir: crate::engine::new_session_dir(&sessions),
        prompt_overrides: prompts.is_dir().then_some(prompts),
        given: None,
    })
}

/// A bundled demo's task and its model of authored replies.
fn demo_model(name: &str) -> anyhow::Result<(String, Arc<dyn ChatModel>)> {
    let demo = crate::demos::find(name)
        .ok_or_else(|| anyhow::anyhow!("there is no bundled demo called `{name}`"))?;
    let model = ScriptedModel::demo(demo.name, demo.replies, Pacing::demo())
        .with_context(|| format!("the bundled demo `{name}` is damaged"))?;
    Ok((demo.task.to_string(), Arc::new(model)))
}

/// Go on with a recorded session: on its own tape (`fork_into` None), or as
/// a new session forked at its end. A demo's session goes on with the
/// demo's own replies; any other with the workbench's model.
fn continue_session(
    config: &Config,
    model: Arc<dyn ChatModel>,
    sandbox: Arc<Sandbox>,
    tape: PathBuf,
    fork_into: Option<&Path>,
) -> anyhow::Result<EngineHandle> {
    let contents = read_tape(&tape)?;
    let state = crate::session::State::from_records(&contents.records);
    let model = match state.config.model.strip_prefix("demo:") {
        Some(name) if state.config.provider == "demo" => demo_model(name)?.1,
        _ => model,
    };
    let run = &config.run;
    let base = EngineOptions {
        max_iterations: state.config.max_iterations.max(1),
        workers: run.workers,
        run_timeout_secs: run.timeout_secs,
        memory_mb: run.memory_mb,
        token_budget: run.token_budget,
        step_mode: false,
        keep_alive: true,
        cache_dir: None,
        output_dir: None,
        ..EngineOptions::default()
    };
    let prompts = config.paths.config_dir.join("prompts");
    let with = crate::engine::ContinueSetup {
        model,
        sandbox,
        options: crate::engine::segment_options(&state, base, None, None),
        prompt_overrides: prompts.is_dir().then_some(prompts),
        commands: Vec::new(),
    };
    Ok(match fork_into {
        Some(dir) => {
            let at = contents.records.last().map_or(0, |r| r.seq);
            crate::engine::fork(&tape, at, dir, with)?
        }
        None => crate::engine::resume(&tape, with)?,
    })
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
