//! The live workbench: the model and the sandbox chosen before the screen
//! opens, the task offered (given on the command line, or a `--demo`'s
//! own), and the hooks through which its sessions start.

use std::sync::Arc;

use anyhow::Context;

use super::start::{profile_model, server_model, start_session};
use super::{probe_sandbox, recent_sessions, welcome_model};
use crate::commands::model::{ModelArgs, Selected, SeveralServers, before_choosing, select_model};
use crate::config::Config;
use crate::llm::ChatModel;
use crate::tui::app::{DemoEntry, FoundServer, SessionChoices, StartRequest};
use crate::tui::event_loop::Hooks;
use crate::tui::{App, Info, Theme};
use codeloop_sandbox::Sandbox;

pub(super) async fn live_view(
    task: Option<String>,
    model: ModelArgs,
    config: Config,
    theme: Theme,
    demos: Vec<DemoEntry>,
    hooks: &mut Hooks,
) -> anyhow::Result<App> {
    // The model and the sandbox are chosen before the screen opens, so a
    // configured server that does not answer is said plainly on stderr.
    let (selected, sandbox) = tokio::join!(
        select_model(&config, &model),
        probe_sandbox(config.sandbox.clone())
    );
    // Several servers answer here and none is configured: the workbench
    // asks which (the demo model stands in until then).
    let (selected, servers) = match selected {
        Ok(selected) => (selected, Vec::new()),
        Err(e) => match e.downcast::<SeveralServers>() {
            Ok(several) => (before_choosing(&several)?, found_servers(&several)),
            Err(e) => return Err(e),
        },
    };
    let sandbox = Arc::new(sandbox?);
    // The recent sessions, read once from the index's cached summaries.
    let sessions = recent_sessions(&config, crate::tui::panes::sessions::RECENT);
    let (model_label, demo_model) = welcome_model(&selected, model.demo.is_some(), demos.len());
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
            servers,
            input_room: Some(crate::engine::inputs::room()),
            ..Info::default()
        },
        theme,
    );
    app.ask_which_server();
    offer_task(&mut app, task, &selected, &model, &config, hooks)?;
    // `--demo NAME` of a demo with a review: its task, started
    // from the Task pane, is reviewed as the demo's replies expect.
    let demo_review = model.demo.is_some() && selected.demo.is_some_and(|d| d.review);
    session_hooks(hooks, config, &model, selected.model, sandbox, demo_review);
    Ok(app)
}

/// The task the workbench opens with: one given on the command line starts
/// at once; a `--demo NAME`'s own task (its replies fit it) waits in the
/// Task pane with its input files attached, as the person would.
fn offer_task(
    app: &mut App,
    task: Option<String>,
    selected: &Selected,
    model: &ModelArgs,
    config: &Config,
    hooks: &mut Hooks,
) -> anyhow::Result<()> {
    match (task, selected.demo) {
        (Some(task), _) => {
            app.task_mut().insert_str(&task);
            hooks.initial = app.submit_task_now();
        }
        (None, Some(demo)) if model.demo.is_some() => {
            app.task_mut().insert_str(demo.task);
            for path in demo.input_files(&config.paths.data_dir).with_context(|| {
                format!(
                    "cannot write the demo's input files under {}",
                    config.paths.data_dir.display()
                )
            })? {
                // Before the screen opens: described here (in a child
                // process, as every input file is), then attached.
                let room = Some(crate::engine::inputs::room());
                let attached = crate::engine::inputs::describe(&path)
                    .and_then(|file| app.task_mut().attach_described(path, &file, room));
                if let Err(refusal) = attached {
                    anyhow::bail!("the demo's input file {refusal}");
                }
            }
            app.set_focus(crate::tui::Focus::Task);
        }
        _ => {}
    }
    Ok(())
}

/// The hooks of a live workbench: the session list read again, the
/// palette's choices held for the next start, the starter, and the
/// describer of the files the person attaches.
fn session_hooks(
    hooks: &mut Hooks,
    config: Config,
    asked: &ModelArgs,
    model: Arc<dyn ChatModel>,
    sandbox: Arc<Sandbox>,
    demo_review: bool,
) {
    let asked_profile = asked.profile.clone();
    let asked_model = asked.model.clone();
    let listing = config.clone();
    hooks.describer = Some(Arc::new(crate::engine::inputs::describe));
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
        let demo = matches!(request, StartRequest::Demo { .. });
        let model = match (&choices.server, &choices.profile) {
            (Some(server), _) if !demo => server_model(&config, server)?,
            (None, Some(name)) if !demo => profile_model(&config, name)?,
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
}

/// The servers the workbench offers when several answer.
fn found_servers(several: &SeveralServers) -> Vec<FoundServer> {
    several
        .servers()
        .into_iter()
        .filter_map(|s| {
            Some(FoundServer {
                base_url: s.base_url.clone(),
                server: s.server.clone(),
                model: s.model.clone()?,
            })
        })
        .collect()
}
