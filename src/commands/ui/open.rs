//! `codeloop open`: the view over a tape being read, and what goes on from
//! it: forks (F), and the sessions begun on its welcome screen (`n`), whose
//! model and sandbox are chosen in the background while the tape shows.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{
    Continue, continue_session, info, open_tape, probe_sandbox, recent_sessions, start_session,
    welcome_model,
};
use crate::commands::model::{ModelArgs, SeveralServers, select_model};
use crate::config::Config;
use crate::llm::ChatModel;
use crate::llm::scripted::{Pacing, ScriptedModel};
use crate::session::read_tape;
use crate::tui::app::{DemoEntry, Msg, SessionChoices, StartRequest};
use crate::tui::event_loop::Hooks;
use crate::tui::{App, Theme};
use codeloop_sandbox::Sandbox;

/// `codeloop open`: the app over a tape being read, and what its loop
/// needs (the rest of the tape, the starter of forks and of sessions begun
/// on its welcome screen, the model those would use once it is chosen).
/// Called inside the runtime: the choices are made on a task of it.
pub fn open_view(
    tape: &Path,
    config: &Config,
    theme: Theme,
    demos: Vec<DemoEntry>,
) -> anyhow::Result<(App, Hooks)> {
    let (opening, source) = open_tape(tape, &config.sessions_dir())?;
    let mut info = info(source.clone(), demos);
    // For the lineage: the sessions forked from this one.
    info.sessions = recent_sessions(config, usize::MAX);
    // F forks at the cursor: on the session's own model, chosen (and the
    // sandbox probed) in the background meanwhile. The model a new session
    // would start on (`n`, after a fork too) is chosen there as well, and
    // the welcome screen told.
    let (chosen, messages) = tokio::sync::mpsc::channel(1);
    let demo_count = info.demos.len();
    let listing = config.clone();
    let (app, loading) = App::open(opening, info, theme);
    let hooks = Hooks {
        starter: Some(fork_starter(
            config.clone(),
            PathBuf::from(source),
            chosen,
            demo_count,
        )),
        sessions: Some(Box::new(move || {
            recent_sessions(&listing, crate::tui::panes::sessions::RECENT)
        })),
        loading,
        messages: Some(messages),
        ..Hooks::default()
    };
    Ok((app, hooks))
}

/// The model a fork from `codeloop open` goes on with: the one the session
/// recorded (chosen as `codeloop resume` chooses it), else the session's
/// tape as a scripted model; with a line that says which, and why.
async fn fork_model(config: &Config, tape: &Path) -> Result<(Arc<dyn ChatModel>, String), String> {
    let contents = read_tape(tape).map_err(|e| e.to_string())?;
    let state = crate::session::State::from_records(&contents.records);
    let recorded =
        crate::commands::resume::recorded_model(config, &state.config, &ModelArgs::default());
    let why = match recorded {
        Ok(args) => match select_model(config, &args).await {
            Ok(selected) => {
                let said = format!(
                    "going on with the model the session used: {}",
                    selected.description
                );
                return Ok((selected.model, said));
            }
            Err(e) => format!("{e:#}"),
        },
        Err(e) => format!("{e:#}"),
    };
    match ScriptedModel::from_file(tape, Pacing::demo()) {
        Ok(script) => Ok((
            Arc::new(script),
            format!(
                "the session's own model cannot be used ({why}); going on with its tape as a scripted model: a call whose prompt the tape recorded gets the recorded reply, any other stops with a prompt miss"
            ),
        )),
        Err(e) => Err(format!(
            "no model to go on with: the session's own cannot be used ({why}), and its tape cannot answer ({e}). Fork it headless with a model: `codeloop resume {} --at SEQ --base-url URL` (or --demo NAME, --scripted FILE)",
            state.session_id
        )),
    }
}

/// Starts the forks of `codeloop open`, and the sessions begun on its
/// welcome screen (`n`): the fork's model, the workbench's (the one
/// `codeloop` alone would start on: the configured model or the bundled
/// demo model) and the sandbox are chosen in the background when the view
/// opens, and the welcome screen is told the workbench's (`chosen`); a
/// start before they are ready is told to wait.
fn fork_starter(
    config: Config,
    tape: PathBuf,
    chosen: tokio::sync::mpsc::Sender<Msg>,
    demos: usize,
) -> crate::tui::event_loop::Starter {
    let slot: Arc<std::sync::Mutex<Option<Arc<Ready>>>> = Arc::default();
    let filled = Arc::clone(&slot);
    let background = config.clone();
    tokio::spawn(async move {
        let ready = choose(&background, &tape, chosen, demos).await;
        *filled.lock().unwrap_or_else(|e| e.into_inner()) = Some(Arc::new(ready));
    });
    Box::new(move |request| {
        let ready = slot.lock().unwrap_or_else(|e| e.into_inner()).clone();
        match ready {
            Some(ready) => start(&config, &ready, request),
            None => match request {
                StartRequest::Task { .. } | StartRequest::Demo { .. } => anyhow::bail!(
                    "still choosing the model and probing the sandbox: start it again in a moment"
                ),
                StartRequest::ForkAt { .. }
                | StartRequest::Fork { .. }
                | StartRequest::Resume { .. } => anyhow::bail!(
                    "still choosing the model and probing the sandbox for the fork: press F again in a moment"
                ),
            },
        }
    })
}

/// What `open`'s starts go on with, once chosen (or why each cannot be).
struct Ready {
    /// The fork's model, and the note its tape gets of the choice.
    fork: Result<(Arc<dyn ChatModel>, String), String>,
    /// The model a new session starts on.
    workbench: Result<Arc<dyn ChatModel>, String>,
    sandbox: Result<Arc<Sandbox>, String>,
}

/// The fork's model, the workbench's and the sandbox, chosen side by side.
/// The welcome screen is told as soon as its model and the sandbox are
/// known, not after the fork's model (a server that may be slow to answer).
async fn choose(
    config: &Config,
    tape: &Path,
    chosen: tokio::sync::mpsc::Sender<Msg>,
    demos: usize,
) -> Ready {
    let workbench_and_sandbox = async {
        let asked = ModelArgs::default();
        let (workbench, sandbox) = tokio::join!(
            select_model(config, &asked),
            probe_sandbox(config.sandbox.clone())
        );
        let (label, demo_model) = match &workbench {
            Ok(selected) => welcome_model(selected, false, demos),
            Err(e) => match e.downcast_ref::<SeveralServers>() {
                Some(several) => (
                    format!(
                        "none chosen: {} model servers answer on this machine (`codeloop` asks which; or --base-url URL)",
                        several.servers().len()
                    ),
                    None,
                ),
                None => (format!("none usable ({e:#})"), None),
            },
        };
        let (sandbox_layers, sandbox_warning) = match &sandbox {
            Ok(sandbox) => (sandbox.active_layers(), sandbox.warning()),
            Err(_) => (Vec::new(), None),
        };
        let told = Msg::ModelChosen {
            label,
            demo_model,
            sandbox_layers,
            sandbox_warning,
        };
        let _ = chosen.send(told).await;
        (workbench, sandbox)
    };
    let (fork, (workbench, sandbox)) =
        tokio::join!(fork_model(config, tape), workbench_and_sandbox);
    Ready {
        fork,
        workbench: workbench.map(|s| s.model).map_err(|e| format!("{e:#}")),
        sandbox: sandbox.map(Arc::new).map_err(|e| format!("{e:#}")),
    }
}

/// A start once everything is chosen: a fork or a resume goes on with the
/// fork's model; a demo answers with its own replies; a task goes to the
/// workbench's model, the one the welcome screen names.
fn start(
    config: &Config,
    ready: &Ready,
    request: StartRequest,
) -> anyhow::Result<crate::engine::EngineHandle> {
    let sandbox = match &ready.sandbox {
        Ok(sandbox) => Arc::clone(sandbox),
        Err(e) => anyhow::bail!("{e}"),
    };
    let (tape, how) = match request {
        StartRequest::ForkAt { tape, at } => (tape, Continue::Fork(Some(at))),
        StartRequest::Fork { tape } => (tape, Continue::Fork(None)),
        StartRequest::Resume { tape } => (tape, Continue::Resume),
        request @ (StartRequest::Task { .. } | StartRequest::Demo { .. }) => {
            let model = match &ready.workbench {
                Ok(model) => Arc::clone(model),
                Err(e) => anyhow::bail!("no model for a new session: {e}"),
            };
            return start_session(
                config,
                model,
                sandbox,
                request,
                &SessionChoices::default(),
                crate::commands::loop_args::extras_of(config, None, None),
            );
        }
    };
    let (model, note) = match &ready.fork {
        Ok((model, note)) => (Arc::clone(model), note.clone()),
        Err(e) => anyhow::bail!("{e}"),
    };
    continue_session(config, model, sandbox, tape, how, Some(note))
}

#[cfg(test)]
mod tests {
    use super::*;
    use codeloop_testkit::prompt_server::PromptServer;

    /// The roman demo's tape as if its session had run on `provider` at
    /// `endpoint`, written into a folder of its own in `dir`.
    fn tape_naming(dir: &Path, provider: &str, endpoint: &str) -> PathBuf {
        let demo = Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/demos/roman/tape.jsonl");
        let tape = std::fs::read_to_string(demo).unwrap();
        let recorded = r#""provider":"demo","model":"demo:roman","endpoint":"bundled demo \"roman\" (authored replies, offline)""#;
        assert!(tape.contains(recorded));
        let named = format!(
            r#""provider":{},"model":"loopback-coder","endpoint":{}"#,
            serde_json::Value::from(provider),
            serde_json::Value::from(endpoint)
        );
        let folder = dir.join("handed");
        std::fs::create_dir_all(&folder).unwrap();
        let path = folder.join("tape.jsonl");
        std::fs::write(&path, tape.replace(recorded, &named)).unwrap();
        path
    }

    fn config_in(dir: &Path) -> Config {
        let mut config = Config::default();
        config.paths.data_dir = dir.join("data");
        config.paths.cache_dir = dir.join("cache");
        config.paths.config_dir = dir.join("config");
        config
    }

    /// `codeloop open` chooses the fork's model as soon as the view opens:
    /// a handed-over tape naming its author's server is sent nothing (not
    /// the model-list probe, which would carry the reader's key), and the
    /// fork goes on with the tape itself, saying why.
    #[tokio::test]
    async fn opening_a_tape_sends_nothing_to_the_server_it_names() {
        let server = PromptServer::start(|_| "");
        let dir = tempfile::tempdir().unwrap();
        let tape = tape_naming(dir.path(), "openai-compatible", &server.base_url);
        let config = config_in(dir.path());
        let (_, note) = fork_model(&config, &tape).await.unwrap();
        assert!(server.exchanges().is_empty(), "{:?}", server.exchanges());
        assert!(note.contains(&server.base_url), "{note}");
        assert!(
            note.contains("going on with its tape as a scripted model"),
            "{note}"
        );
        // Once named (here: the config's), it is the fork's model.
        let mut config = config;
        config.model.base_url = Some(server.base_url.clone());
        let (_, note) = fork_model(&config, &tape).await.unwrap();
        assert!(
            note.starts_with("going on with the model the session used"),
            "{note}"
        );
        assert!(!server.exchanges().is_empty());
    }

    /// Nor is a replies file read from the path the tape names (one of
    /// the reader's own files, here a replies file that would serve).
    #[tokio::test]
    async fn opening_a_tape_reads_no_replies_file_it_names() {
        let dir = tempfile::tempdir().unwrap();
        let mine = dir.path().join("my-replies.jsonl");
        let demo = Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/demos/roman/replies.jsonl");
        std::fs::copy(demo, &mine).unwrap();
        let tape = tape_naming(dir.path(), "scripted", mine.to_str().unwrap());
        let (_, note) = fork_model(&config_in(dir.path()), &tape).await.unwrap();
        assert!(
            note.contains("going on with its tape as a scripted model"),
            "{note}"
        );
        assert!(note.contains("--scripted"), "{note}");
    }
}
