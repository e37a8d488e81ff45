//! `codeloop resume SESSION [--at SEQ]`: a recorded session goes on live,
//! headless. Without `--at` the session continues on its own tape, from its
//! last record (after a kill, a cancel, or a limit); with it, a new session
//! forks from record SEQ. Either may first take the person's changes (a
//! hint, an edited code or tests file, a new task). Output as `codeloop run`.
//!
//! Limits of the resumed segment: the iteration limit is the session's so
//! far plus `--max-iterations N` (default: as many again when a function gave
//! up at the limit, none otherwise); the token budget counts from what the
//! session has used (`--token-budget N` more, default the configured budget).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, bail};

use super::model::{ModelArgs, select_model};
use super::run::Progress;
use crate::config::Config;
use crate::engine::{self, ContinueSetup, EngineOptions};
use crate::session::{Command, ConfigSummary, Event, State, index, read_tape};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The session: an id, a unique prefix of one, `last`, its folder, or its tape (tape.jsonl)
    #[arg(value_name = "SESSION")]
    pub(crate) session: PathBuf,
    /// Fork: a new session that goes on from record SEQ of this one (which stays as it is)
    #[arg(long, value_name = "SEQ")]
    pub(crate) at: Option<u64>,
    /// The model to go on with [default: the one the session used]
    #[command(flatten)]
    pub model: ModelArgs,
    /// More code versions each function may have [default: as many again if one gave up at the limit]
    #[arg(long, value_name = "N")]
    pub(crate) max_iterations: Option<u32>,
    /// More tokens the session may use from here; 0 = no limit [default: config]
    #[arg(long, value_name = "N")]
    pub(crate) token_budget: Option<u64>,
    /// A hint for NODE's next repair (repeatable)
    #[arg(long, value_name = "NODE=TEXT")]
    pub(crate) hint: Vec<String>,
    /// Replace NODE's code with the file's (its next iteration; repeatable)
    #[arg(long, value_name = "NODE=FILE")]
    pub(crate) edit_code: Vec<String>,
    /// Replace NODE's tests with the file's (repeatable)
    #[arg(long, value_name = "NODE=FILE")]
    pub(crate) edit_tests: Vec<String>,
    /// A new task: planned again; functions whose specs stay keep their tests and code
    #[arg(long, value_name = "TEXT")]
    pub(crate) task: Option<String>,
    /// Where to write the program, its tests and the report [default: out/ in the session folder]
    #[arg(long, value_name = "DIR")]
    pub(crate) out: Option<PathBuf>,
    /// Print every tape event of the new segment as JSON Lines on stdout
    #[arg(long)]
    pub(crate) json: bool,
}

/// The tape of SESSION: an id, a unique prefix, `last`, a folder or a tape
/// (the one resolver `open`, `replay` and `export` use too).
pub(crate) fn tape_of(session: &Path, sessions_dir: &Path) -> anyhow::Result<PathBuf> {
    let arg = session.to_string_lossy();
    match index::resolve(sessions_dir, &arg)? {
        Some(tape) => Ok(tape),
        None => Err(index::not_found(sessions_dir, &arg).into()),
    }
}

/// The model flags that choose again the model a session used (`--model`
/// alone picks another model on the same server), when the person chose
/// it: a tape is data, and one handed over names what its author wrote.
///
/// A server is gone on with only when it is one the person chose (their
/// config's, or one they named before: `model::chosen`); any other would
/// get their API key and every prompt, so it is refused, named, with the
/// flag that chooses it, and is sent nothing. A replies file is never read
/// from the path a tape names (it could be any file of the reader's): it
/// is named again with `--scripted`. A demo is the bundled one of that name.
pub(crate) fn recorded_model(
    config: &Config,
    recorded: &ConfigSummary,
    given: &ModelArgs,
) -> anyhow::Result<ModelArgs> {
    let mut args = given.clone();
    let shown = |s: &str| crate::protocol::sanitize::for_terminal(s);
    match recorded.provider.as_str() {
        "openai-compatible" => {
            if !super::model::chosen::is_chosen(config, &recorded.endpoint) {
                let url = shown(&recorded.endpoint);
                bail!(
                    "the session ran on the model server at {url}, which its tape names but you have not chosen (it is not in your config, nor a server you named to codeloop before): a tape handed over can name anyone's server, and codeloop sends your API key and prompts only where you send them. To go on there, name it: `codeloop resume SESSION --base-url {url}` (or base_url under [model] in your config); or choose another model (--base-url URL, --demo NAME, --scripted FILE)"
                );
            }
            args.base_url = Some(recorded.endpoint.clone());
            args.model = args.model.take().or_else(|| Some(recorded.model.clone()));
        }
        "scripted" => {
            let file = shown(&recorded.endpoint);
            bail!(
                "the session's model answered from the replies file {file}, which its tape names: codeloop reads no file a tape names as a model (a tape handed over can name any file of yours). To go on with it, name it: `codeloop resume SESSION --scripted {file}`; or choose another model (--base-url URL, --demo NAME)"
            );
        }
        "demo" => match recorded.demo() {
            Some(name) => args.demo = Some(name.to_string()),
            None => bail!(
                "the session's demo model \"{}\" is not a bundled demo's: choose a model (--demo NAME, --base-url URL)",
                shown(&recorded.model)
            ),
        },
        other => bail!(
            "the session used a model of provider \"{}\", which this codeloop cannot choose again: choose one (--base-url URL, --demo NAME, --scripted FILE)",
            shown(other)
        ),
    }
    Ok(args)
}

/// The person's changes as commands, in the order: task, tests, code, hints.
fn changes(args: &Args) -> anyhow::Result<Vec<Command>> {
    let split = |flag: &str, value: &str| -> anyhow::Result<(String, String)> {
        match value.split_once('=') {
            Some((node, rest)) if !node.trim().is_empty() => {
                Ok((node.trim().to_string(), rest.to_string()))
            }
            _ => bail!("--{flag} {value}: write it as NODE=..., e.g. --{flag} parse_line=..."),
        }
    };
    let read = |flag: &str, path: &str| {
        std::fs::read_to_string(path).with_context(|| format!("--{flag}: cannot read {path}"))
    };
    let mut commands = Vec::new();
    if let Some(task) = &args.task {
        if task.trim().is_empty() {
            bail!("--task is empty: say what the program should do");
        }
        commands.push(Command::EditTask { task: task.clone() });
    }
    for value in &args.edit_tests {
        let (node, path) = split("edit-tests", value)?;
        let code = read("edit-tests", &path)?;
        commands.push(Command::EditTests { node, code });
    }
    for value in &args.edit_code {
        let (node, path) = split("edit-code", value)?;
        let code = read("edit-code", &path)?;
        commands.push(Command::EditCode { node, code });
    }
    for value in &args.hint {
        let (node, text) = split("hint", value)?;
        commands.push(Command::Hint { node, text });
    }
    Ok(commands)
}

pub async fn run(args: Args, config: Config) -> anyhow::Result<i32> {
    let tape = tape_of(&args.session, &config.sessions_dir())?;
    let contents = read_tape(&tape)?;
    if let Some(damage) = contents.damage_report() {
        eprintln!(
            "codeloop: {}: {damage}; going on from the rest",
            tape.display()
        );
    }
    let state = match args.at {
        Some(at) => State::from_records(contents.records.iter().filter(|r| r.seq <= at)),
        None => State::from_records(&contents.records),
    };
    let commands = changes(&args)?;
    check_nodes(&commands, &state)?;
    // A tape names its inputs by paths on the machine it was made on: one
    // that is not the file the tape describes is left out of the runs.
    for input in &state.inputs {
        if let Err(why) = crate::session::tape_check::input_matches(input) {
            let line = format!("codeloop: {why}; the runs go on without it");
            eprintln!("{}", crate::protocol::sanitize::for_terminal(&line));
        }
    }
    let chosen =
        args.model.base_url.is_some() || args.model.demo.is_some() || args.model.scripted.is_some();
    let model_args = if chosen {
        args.model.clone()
    } else {
        recorded_model(&config, &state.config, &args.model)?
    };
    let selected = select_model(&config, &model_args).await?;
    let sandbox = super::sandbox_for_generated_code(&config.sandbox)?;
    let with = ContinueSetup {
        model: selected.model.clone(),
        sandbox: Arc::new(sandbox),
        options: engine::segment_options(
            &state,
            recorded_options(&args, &config, &state),
            args.max_iterations,
            args.token_budget,
        ),
        prompt_overrides: Some(config.paths.config_dir.join("prompts")),
        commands,
    };
    let handle = match args.at {
        Some(at) => {
            let dir = engine::new_session_dir(&config.sessions_dir());
            engine::fork(&tape, at, &dir, with)?
        }
        None => engine::resume(&tape, with)?,
    };
    follow(handle, &selected.description, args.json).await
}

/// Each change names a function the session has at that point.
fn check_nodes(commands: &[Command], state: &State) -> anyhow::Result<()> {
    for command in commands {
        if let Command::EditCode { node, .. }
        | Command::EditTests { node, .. }
        | Command::Hint { node, .. } = command
            && !state.nodes.contains_key(node)
        {
            let known: Vec<&str> = state.specs.iter().map(|s| s.name.as_str()).collect();
            bail!(
                "the session has no function `{node}` at that point; its functions are: {}",
                if known.is_empty() {
                    "none (it has no plan yet)".to_string()
                } else {
                    known.join(", ")
                }
            );
        }
    }
    Ok(())
}

/// The engine's options: the session's own settings where its tape keeps
/// them, the config's and the flags' otherwise.
fn recorded_options(args: &Args, config: &Config, state: &State) -> EngineOptions {
    let recorded = |n: u64, otherwise: u64| if n > 0 { n } else { otherwise };
    let extras = super::loop_args::extras_of(config, args.model.profile.as_deref(), None);
    EngineOptions {
        max_iterations: state.config.max_iterations.max(1),
        workers: recorded(state.config.workers.into(), config.run.workers as u64).max(1) as usize,
        run_timeout_secs: recorded(state.config.timeout_secs, config.run.timeout_secs).max(1),
        memory_mb: config.run.memory_mb,
        token_budget: config.run.token_budget,
        step_mode: false,
        keep_alive: false,
        cache_dir: None,
        output_dir: args.out.clone(),
        // The recorded policy replaces it (`segment_options`).
        policy: config.repair.policy(extras.review, extras.review_repairs),
        candidates: extras.candidates,
        tests: extras.tests,
        prefill: extras.prefill,
        first_temperature: extras.first_temperature,
    }
}

/// `run`'s progress (and `--json`'s records) from the fork or the resume
/// on, the history before it folded quietly; the exit code: 0 once passed.
async fn follow(
    mut handle: engine::EngineHandle,
    description: &str,
    json: bool,
) -> anyhow::Result<i32> {
    let session_dir = handle.session_dir.clone();
    let mut printer = Progress::new(description);
    let mut live = false;
    while let Some(record) = handle.events.recv().await {
        // The history comes first: folded quietly, shown from the fork or the resume on.
        live |= matches!(record.event, Event::Forked(_) | Event::Resumed(_));
        if !live {
            printer.absorb(&record);
            continue;
        }
        if json {
            super::run::print_json(&record);
        }
        printer.show(&record);
    }
    let result = handle
        .done
        .await
        .context("the session's task stopped unexpectedly")??;
    eprintln!("  tape: {}", session_dir.join("tape.jsonl").display());
    Ok(if result.passed { 0 } else { 1 })
}
