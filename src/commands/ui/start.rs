//! How the workbench's sessions start: a new one on a task or a bundled
//! demo, and a recorded one going on (resumed, or forked), with the model a
//! palette's profile names.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;

use crate::commands::loop_args::Extras;
use crate::commands::model::{ModelArgs, select_model};
use crate::config::Config;
use crate::engine::{EngineHandle, EngineOptions, EngineSetup, GivenPlan};
use crate::llm::ChatModel;
use crate::llm::scripted::{Pacing, ScriptedModel};
use crate::session::{FunctionSpec, read_tape};
use crate::tui::app::{FoundServer, NOTHING_TO_RESUME, SessionChoices, StartRequest};
use codeloop_sandbox::Sandbox;

/// Start the engine on a task, or on a bundled demo with its own model; a
/// recorded session goes on with `continue_session`.
pub(super) fn start_session(
    config: &Config,
    model: Arc<dyn ChatModel>,
    sandbox: Arc<Sandbox>,
    request: StartRequest,
    choices: &SessionChoices,
    extras: Extras,
) -> anyhow::Result<EngineHandle> {
    let fresh = match request {
        StartRequest::Task {
            task,
            inputs,
            step_mode,
            plan,
            demo,
        } => Fresh {
            task,
            inputs,
            // A plan written after a demo's session: the demo answers.
            model: match demo {
                Some(name) => demo_model(&name)?.1,
                None => model,
            },
            cache_dir: (!choices.no_cache).then(|| config.paths.cache_dir.clone()),
            step_mode,
            plan,
            review_demo: false,
        },
        StartRequest::Demo { name, step_mode } => demo_start(config, &name, step_mode)?,
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
    start_fresh(config, sandbox, fresh, choices, extras)
}

/// A new session: what it starts on.
struct Fresh {
    task: String,
    inputs: Vec<PathBuf>,
    model: Arc<dyn ChatModel>,
    cache_dir: Option<PathBuf>,
    step_mode: bool,
    /// The person's plan, if they wrote one.
    plan: Option<Vec<FunctionSpec>>,
    /// A bundled demo whose replies expect its code reviewed.
    review_demo: bool,
}

/// A bundled demo's session: its task, its input files and its replies.
fn demo_start(config: &Config, name: &str, step_mode: bool) -> anyhow::Result<Fresh> {
    let (task, model) = demo_model(name)?;
    let demo = crate::demos::find(name);
    let inputs = match demo {
        Some(d) => d.input_files(&config.paths.data_dir).with_context(|| {
            format!(
                "cannot write the demo's input files under {}",
                config.paths.data_dir.display()
            )
        })?,
        None => Vec::new(),
    };
    Ok(Fresh {
        task,
        inputs,
        model,
        // No cache: a demo is there to show its failure and repair.
        cache_dir: None,
        step_mode,
        plan: None,
        review_demo: demo.is_some_and(|d| d.review),
    })
}

/// The engine started on a new session in the sessions folder, with the
/// config's `[run]` and the palette's choices.
fn start_fresh(
    config: &Config,
    sandbox: Arc<Sandbox>,
    fresh: Fresh,
    choices: &SessionChoices,
    extras: Extras,
) -> anyhow::Result<EngineHandle> {
    let sessions = config.sessions_dir();
    crate::session::session_fs::make_private_dirs(&sessions)
        .with_context(|| format!("cannot create the sessions folder {}", sessions.display()))?;
    let prompts = config.paths.config_dir.join("prompts");
    let run = &config.run;
    crate::engine::start(EngineSetup {
        task: fresh.task,
        inputs: fresh.inputs,
        model: fresh.model,
        sandbox,
        options: EngineOptions {
            max_iterations: run.max_iterations,
            workers: choices.workers.unwrap_or(run.workers),
            run_timeout_secs: run.timeout_secs,
            memory_mb: run.memory_mb,
            token_budget: run.token_budget,
            step_mode: run.step_mode || fresh.step_mode,
            // The workbench keeps the engine for edits and re-runs after the end.
            keep_alive: true,
            cache_dir: fresh.cache_dir,
            output_dir: None,
            policy: config
                .repair
                .policy(extras.review || fresh.review_demo, extras.review_repairs),
            candidates: extras.candidates,
            tests: extras.tests,
            prefill: extras.prefill,
            first_temperature: extras.first_temperature,
        },
        session_dir: crate::engine::new_session_dir(&sessions),
        prompt_overrides: prompts.is_dir().then_some(prompts),
        // The person's plan: the model writes the tests and code only.
        given: fresh.plan.map(|specs| GivenPlan {
            specs,
            ..GivenPlan::default()
        }),
    })
}

/// The model of a `[models.NAME]` profile (the palette's choice). The
/// starter is synchronous: the choice is made on this worker thread, which
/// the runtime is told may block (a server's model list is asked for).
pub(super) fn profile_model(config: &Config, name: &str) -> anyhow::Result<Arc<dyn ChatModel>> {
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

/// The model of a server found on this machine, chosen when several answer
/// (as `--base-url URL --model NAME` would choose it; blocking, like
/// `profile_model`).
pub(super) fn server_model(
    config: &Config,
    server: &FoundServer,
) -> anyhow::Result<Arc<dyn ChatModel>> {
    let args = ModelArgs {
        base_url: Some(server.base_url.clone()),
        model: Some(server.model.clone()),
        ..ModelArgs::default()
    };
    let selected = tokio::task::block_in_place(|| {
        tokio::runtime::Handle::current().block_on(select_model(config, &args))
    })
    .with_context(|| format!("the model server at {} cannot be used", server.base_url))?;
    Ok(selected.model)
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
pub(super) enum Continue {
    /// On its own tape, from its end.
    Resume,
    /// As a new session, forked at this record (None: at its end).
    Fork(Option<u64>),
}

/// Go on with a recorded session. A demo's session goes on with the demo's
/// own replies; any other with `model` (the workbench's). A fork's tape
/// says which (`note`, or the choice made here).
pub(super) fn continue_session(
    config: &Config,
    model: Arc<dyn ChatModel>,
    sandbox: Arc<Sandbox>,
    tape: PathBuf,
    how: Continue,
    note: Option<String>,
) -> anyhow::Result<EngineHandle> {
    let contents = read_tape(&tape)?;
    let state = crate::session::State::from_records(&contents.records);
    let (model, chosen) = match state.config.demo() {
        Some(name) => (
            demo_model(name)?.1,
            format!("going on with the demo's own replies (demo:{name})"),
        ),
        _ => {
            let said = format!(
                "going on with the workbench's model ({} {})",
                model.provider(),
                crate::protocol::present::model_shown(model.model_name())
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
        policy: config.repair.policy(extras.review, extras.review_repairs),
        candidates: extras.candidates,
        tests: extras.tests,
        prefill: extras.prefill,
        first_temperature: extras.first_temperature,
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
