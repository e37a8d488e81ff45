//! The TUI entry points: the workbench (default), `open` and `replay`.
//! `open`'s view, its forks and the sessions begun from it: `ui/open.rs`.

mod open;

pub use open::open_view;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;

use crate::commands::model::{ModelArgs, Selected, select_model};
use crate::config::Config;
use crate::engine::{EngineHandle, EngineOptions, EngineSetup, GivenPlan};
use crate::exec::{Sandbox, SandboxOptions};
use crate::llm::ChatModel;
use crate::llm::scripted::{Pacing, ScriptedModel};
use crate::session::{TapeContents, index, parse_tape, read_tape};
use crate::tui::app::{
    DemoEntry, DemoModel, ExportFormat, NOTHING_TO_RESUME, SessionChoices, StartRequest,
};
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
    // Checked when the config was read: a value that slipped by is `auto`.
    let graphics = config.ui.graphics.parse().unwrap_or_default();
    let theme = Theme::load(&config.ui.theme, &config.paths.config_dir.join("themes"))?;
    let demos: Vec<DemoEntry> = crate::demos::all()
        .iter()
        .map(|d| DemoEntry {
            name: d.name.to_string(),
            title: d.title.to_string(),
        })
        .collect();
    let mut hooks = Hooks {
        exporter: Some(Box::new(export_session)),
        ..Hooks::default()
    };
    let mut app = match mode {
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
            // Read like `open`'s: the first frame from the first records,
            // the rest while it plays.
            let (opening, source) = open_tape(&tape, &config.sessions_dir())?;
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
            let clock = crate::tui::app::Replay::new(speed, !paused, live);
            let (app, loading) = App::open_replay(opening, info, theme, clock);
            hooks.loading = loading;
            app
        }
        UiMode::Live { task, model } => {
            let asked_profile = model.profile.clone();
            let asked_model = model.model.clone();
            // The model and the sandbox are chosen before the screen opens, so a
            // configured server that does not answer is said plainly on stderr.
            let (selected, sandbox) = tokio::join!(
                select_model(&config, &model),
                probe_sandbox(config.sandbox.clone())
            );
            let selected = selected?;
            let sandbox = Arc::new(sandbox?);
            // The recent sessions, read once from the index's cached summaries.
            let sessions = recent_sessions(&config, crate::tui::panes::sessions::RECENT);
            let (model_label, demo_model) =
                welcome_model(&selected, model.demo.is_some(), demos.len());
            let mut app = App::live(
                Info {
                    model_label,
                    sandbox_layers: sandbox.active_layers(),
                    sandbox_warning: sandbox.warning(),
                    source: config.sessions_dir().display().to_string(),
                    demo_model,
                    demos,
                    sessions,
                    notify: config.ui.notify,
                    profiles: config.models.keys().cloned().collect(),
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
                    // And its input files, attached as the person would.
                    for path in demo.input_files(&config.paths.data_dir).with_context(|| {
                        format!(
                            "cannot write the demo's input files under {}",
                            config.paths.data_dir.display()
                        )
                    })? {
                        if let Err(refusal) = app.task_mut().attach(path) {
                            anyhow::bail!("the demo's input file {refusal}");
                        }
                    }
                    app.set_focus(crate::tui::Focus::Task);
                }
                _ => {}
            }
            // `--demo NAME` of a demo with a review: its task, started
            // from the Task pane, is reviewed as the demo's replies expect.
            let demo_review = model.demo.is_some() && selected.demo.is_some_and(|d| d.review);
            let model: Arc<dyn ChatModel> = selected.model;
            let listing = config.clone();
            hooks.sessions = Some(Box::new(move || {
                recent_sessions(&listing, crate::tui::panes::sessions::RECENT)
            }));
            // The palette's choices, handed over before each start.
            let choices = Arc::new(std::sync::Mutex::new(SessionChoices::default()));
            let chosen = Arc::clone(&choices);
            hooks.configure = Some(Box::new(move |c| {
                if let Ok(mut held) = chosen.lock() {
                    *held = c;
                }
            }));
            hooks.starter = Some(Box::new(move |request| {
                // The cache bypass is for the next session alone.
                let choices = choices
                    .lock()
                    .map(|mut c| {
                        let now = c.clone();
                        c.no_cache = false;
                        now
                    })
                    .unwrap_or_default();
                // A demo answers with its own replies, whatever the profile.
                let model = match &choices.profile {
                    Some(name) if !matches!(request, StartRequest::Demo { .. }) => {
                        profile_model(&config, name)?
                    }
                    _ => Arc::clone(&model),
                };
                // The review and the candidates: the chosen profile's, else `[run]`'s.
                let mut extras = crate::commands::loop_args::extras_of(
                    &config,
                    choices.profile.as_deref().or(asked_profile.as_deref()),
                    asked_model.as_deref(),
                );
                extras.review |= demo_review;
                start_session(
                    &config,
                    model,
                    Arc::clone(&sandbox),
                    request,
                    &choices,
                    extras,
                )
            }));
            app
        }
    };
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
    // The terminal is back: say where the session is kept, and how to
    // come back to it.
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

/// Start the engine on a task, or on a bundled demo with its own model.
fn start_session(
    config: &Config,
    model: Arc<dyn ChatModel>,
    sandbox: Arc<Sandbox>,
    request: StartRequest,
    choices: &SessionChoices,
    extras: crate::commands::loop_args::Extras,
) -> anyhow::Result<EngineHandle> {
    let mut review_demo = false;
    let (task, inputs, model, cache_dir, step_mode, plan) = match request {
        StartRequest::Task {
            task,
            inputs,
            step_mode,
            plan,
        } => (
            task,
            inputs,
            model,
            (!choices.no_cache).then(|| config.paths.cache_dir.clone()),
            step_mode,
            plan,
        ),
        StartRequest::Demo { name, step_mode } => {
            let (task, model) = demo_model(&name)?;
            let demo = crate::demos::find(&name);
            let inputs = match demo {
                Some(d) => d.input_files(&config.paths.data_dir).with_context(|| {
                    format!(
                        "cannot write the demo's input files under {}",
                        config.paths.data_dir.display()
                    )
                })?,
                None => Vec::new(),
            };
            review_demo = demo.is_some_and(|d| d.review);
            // No cache: a demo is there to show its failure and repair.
            (task, inputs, model, None, step_mode, None)
        }
        StartRequest::Resume { tape } => {
            return continue_session(config, model, sandbox, tape, Continue::Resume, None);
        }
        StartRequest::Fork { tape } => {
            return continue_session(config, model, sandbox, tape, Continue::Fork(None), None);
        }
        StartRequest::ForkAt { tape, at } => {
            let how = Continue::Fork(Some(at));
            return continue_session(config, model, sandbox, tape, how, None);
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
            workers: choices.workers.unwrap_or(run.workers),
            run_timeout_secs: run.timeout_secs,
            memory_mb: run.memory_mb,
            token_budget: run.token_budget,
            step_mode: run.step_mode || step_mode,
            // The workbench keeps the engine for edits and re-runs after the end.
            keep_alive: true,
            cache_dir,
            output_dir: None,
            review: extras.review || review_demo,
            review_repairs: extras.review_repairs,
            candidates: extras.candidates,
            ..EngineOptions::default()
        },
        session_dir: crate::engine::new_session_dir(&sessions),
        prompt_overrides: prompts.is_dir().then_some(prompts),
        // The person's plan: the model writes the tests and code only.
        given: plan.map(|specs| GivenPlan {
            specs,
            ..GivenPlan::default()
        }),
    })
}

/// The model of a `[models.NAME]` profile (the palette's choice). The
/// starter is synchronous: the choice is made on this worker thread, which
/// the runtime is told may block (a server's model list is asked for).
fn profile_model(config: &Config, name: &str) -> anyhow::Result<Arc<dyn ChatModel>> {
    let args = ModelArgs {
        profile: Some(name.to_string()),
        ..ModelArgs::default()
    };
    let selected = tokio::task::block_in_place(|| {
        tokio::runtime::Handle::current().block_on(select_model(config, &args))
    })
    .with_context(|| format!("the model profile {name} cannot be used"))?;
    Ok(selected.model)
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
        Some(dir) => dir.join("export").join(name),
        None => std::env::current_dir()
            .context("cannot tell the current folder to export into")?
            .join(name),
    };
    export::write(state, source, format, &path)?;
    Ok(path)
}

/// A bundled demo's task and its model of authored replies.
fn demo_model(name: &str) -> anyhow::Result<(String, Arc<dyn ChatModel>)> {
    let demo = crate::demos::find(name)
        .ok_or_else(|| anyhow::anyhow!("there is no bundled demo called `{name}`"))?;
    let model = ScriptedModel::demo(demo.name, demo.replies, Pacing::demo())
        .with_context(|| format!("the bundled demo `{name}` is damaged"))?;
    Ok((demo.task.to_string(), Arc::new(model)))
}

/// How a recorded session goes on.
#[derive(Debug, Clone, Copy)]
enum Continue {
    /// On its own tape, from its end.
    Resume,
    /// As a new session, forked at this record (None: at its end).
    Fork(Option<u64>),
}

/// Go on with a recorded session. A demo's session goes on with the demo's
/// own replies; any other with `model` (the workbench's). A fork's tape
/// says which (`note`, or the choice made here).
fn continue_session(
    config: &Config,
    model: Arc<dyn ChatModel>,
    sandbox: Arc<Sandbox>,
    tape: PathBuf,
    how: Continue,
    note: Option<String>,
) -> anyhow::Result<EngineHandle> {
    let contents = read_tape(&tape)?;
    let state = crate::session::State::from_records(&contents.records);
    let (model, chosen) = match state.config.model.strip_prefix("demo:") {
        Some(name) if state.config.provider == "demo" => (
            demo_model(name)?.1,
            format!("going on with the demo's own replies (demo:{name})"),
        ),
        _ => {
            let said = format!(
                "going on with the workbench's model ({} {})",
                model.provider(),
                model.model_name()
            );
            (model, said)
        }
    };
    let run = &config.run;
    let extras = crate::commands::loop_args::extras_of(config, None, None);
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
        review: extras.review,
        review_repairs: extras.review_repairs,
        candidates: extras.candidates,
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
    Ok(match how {
        Continue::Fork(at) => {
            let dir = crate::engine::new_session_dir(&config.sessions_dir());
            let at = at.unwrap_or_else(|| contents.records.last().map_or(0, |r| r.seq));
            let note = note.unwrap_or(chosen);
            crate::engine::fork_noting(&tape, at, &dir, with, Some(note))?
        }
        Continue::Resume => {
            if let Some(why) = crate::engine::nothing_left(&state, &with.options) {
                let id = &state.session_id;
                anyhow::bail!(
                    "{NOTHING_TO_RESUME}: session {id} {why}.\n\n{}",
                    crate::tui::app::instead(id)
                );
            }
            crate::engine::resume(&tape, with)?
        }
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
