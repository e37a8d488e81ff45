//! `codeloop run`: the repair loop headless. Progress on stderr, the tape's
//! events on stdout with `--json`, the program and its tests in an output
//! folder; exit code 0 only when every test passes.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, bail};

use super::model::{ModelArgs, Selected, select_model};
use crate::config::Config;
use crate::engine::{self, EngineOptions, EngineSetup};
use crate::session::Command;
use tokio::signal::unix::{Signal, SignalKind, signal};

mod progress;
pub(crate) use progress::Progress;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The task, in words (or use --task-file; with --demo, the demo's own task is the default)
    #[arg(value_name = "TASK")]
    pub(crate) task: Option<String>,
    /// Read the task from a file
    #[arg(long, value_name = "FILE", conflicts_with = "task")]
    pub(crate) task_file: Option<PathBuf>,
    /// Files the program gets in its working directory (described to the model)
    #[arg(long = "input", value_name = "FILE", num_args = 1..)]
    pub(crate) inputs: Vec<PathBuf>,
    #[command(flatten)]
    pub model: ModelArgs,
    /// Code versions a function may have before it is given up [default: config, 4]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) max_iterations: Option<u32>,
    /// Functions worked on in parallel at most [default: config, 2]
    #[arg(long, value_name = "N", value_parser = super::at_least_one)]
    pub(crate) workers: Option<usize>,
    /// Wall-clock limit of one test run, seconds, 1 to 86400 [default: config, 10]
    #[arg(long, value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub(crate) timeout: Option<u64>,
    /// Tokens the session may use in all; 0 = no limit [default: config]
    #[arg(long, value_name = "N")]
    pub(crate) token_budget: Option<u64>,
    /// Where to write the program, its tests and the report [default: out/ in the session folder]
    #[arg(long, value_name = "DIR")]
    pub(crate) out: Option<PathBuf>,
    /// Print every tape event as JSON Lines on stdout
    #[arg(long)]
    pub(crate) json: bool,
    /// Do not replay or store solved tasks in the cache
    #[arg(long)]
    pub(crate) no_cache: bool,
    /// Repair from the localized failure alone, without the runtime values at it
    #[arg(long)]
    pub(crate) no_runtime_values: bool,
    /// Repair every time, never start fresh from the spec [default: [loop]'s fresh_start]
    #[arg(long)]
    pub(crate) no_fresh_start: bool,
    /// Start fresh from the spec after N failed code versions [default: [loop]'s fresh_after, 3]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) fresh_after: Option<u32>,
    #[command(flatten)]
    pub(crate) extras: super::loop_args::LoopArgs,
}

/// The task from the arguments, or the demo's own.
fn task_of(args: &Args, selected: &Selected) -> anyhow::Result<String> {
    if let Some(t) = &args.task {
        if t.trim().is_empty() {
            bail!("the task is empty: say what the program should do");
        }
        return Ok(t.clone());
    }
    if let Some(f) = &args.task_file {
        let t = std::fs::read_to_string(f)
            .with_context(|| format!("cannot read the task file {}", f.display()))?;
        if t.trim().is_empty() {
            bail!("the task file {} is empty", f.display());
        }
        return Ok(t);
    }
    match selected.demo {
        Some(demo) => Ok(demo.task.to_string()),
        None => bail!(
            "no task: give one (`codeloop run \"reverse the words of a sentence\"`), or --task-file FILE, or --demo NAME to run a bundled demo"
        ),
    }
}

pub(crate) fn engine_options(config: &Config, args: &Args) -> EngineOptions {
    let extras = args.extras.extras(
        config,
        args.model.profile.as_deref(),
        args.model
            .model
            .as_deref()
            .or(Some(config.model.model.as_str())),
    );
    EngineOptions {
        max_iterations: args
            .max_iterations
            .unwrap_or(config.run.max_iterations)
            .max(1),
        workers: args.workers.unwrap_or(config.run.workers).max(1),
        run_timeout_secs: args.timeout.unwrap_or(config.run.timeout_secs).max(1),
        memory_mb: config.run.memory_mb,
        token_budget: args.token_budget.unwrap_or(config.run.token_budget),
        step_mode: false,
        keep_alive: false,
        cache_dir: (!args.no_cache).then(|| config.paths.cache_dir.clone()),
        output_dir: args.out.clone(),
        policy: policy_of(config, args, extras.review, extras.review_repairs),
        candidates: extras.candidates,
        tests: extras.tests,
        prefill: extras.prefill,
        first_temperature: extras.first_temperature,
    }
}

/// The repair policy: `[loop]`'s, the flags over it.
pub(crate) fn policy_of(
    config: &Config,
    args: &Args,
    review: bool,
    review_repairs: bool,
) -> crate::engine::RepairPolicy {
    let mut policy = config.repair.policy(review, review_repairs);
    policy.runtime_values &= !args.no_runtime_values;
    policy.fresh_start &= !args.no_fresh_start;
    if let Some(n) = args.fresh_after {
        policy.fresh_after = n;
    }
    policy
}

/// Why a task of the user's own cannot go to the model `select_model`
/// chose: it is the demo model, whose replies are authored for its demo's
/// task only. `explicit` is true when the user asked for it with --demo.
pub(crate) fn no_model_for_own_task(selected: &Selected, explicit: bool) -> String {
    let demo = selected.demo.map(|d| d.name).unwrap_or("NAME");
    let names: Vec<&str> = crate::demos::all().iter().map(|d| d.name).collect();
    let head = if explicit {
        format!(
            "the demo model has only the authored replies of the demo \"{demo}\": they answer that demo's own task, not yours"
        )
    } else {
        let why = selected
            .fallback_reason
            .clone()
            .unwrap_or_else(|| "the config's model provider is \"demo\"".to_string());
        format!("no model is available for your task: {why}")
    };
    format!(
        "{head}.\nConfigure a model:\n  - start a local server on its default port and codeloop finds it by itself: Ollama (`ollama serve`, then `ollama pull qwen2.5-coder:7b`), llama.cpp's llama-server, LM Studio, llama-cpp-python or vLLM\n  - any OpenAI-compatible server, anywhere (vLLM, llama.cpp, LM Studio, OpenAI): --base-url URL [--model NAME] [--api-key-env VAR]\n  - or base_url and model under [model] in {}\nTo watch a bundled demo instead, with its own task: `codeloop run --demo NAME` ({}).",
        Config::default_file().display(),
        names.join(", ")
    )
}

pub async fn run(args: Args, config: Config) -> anyhow::Result<i32> {
    // Before any model is asked: a file no run could read or hold is
    // refused here, with why and what to do.
    match engine::inputs::describe_all(&args.inputs) {
        Err(refusal) => bail!("the input file {refusal}"),
        // A file whose description failed (in its child process) is used
        // all the same: said, with what to do.
        Ok(files) => {
            for file in &files {
                if let Some(why) = file.description.as_ref().and_then(|d| d.failure()) {
                    say(&format!(
                        "codeloop: could not describe this file: {}: {why}; {}",
                        file.name,
                        engine::inputs::UNDESCRIBED_TODO
                    ));
                }
            }
        }
    }
    let selected = select_model(&config, &args.model).await?;
    let setup = setup(&args, &config, &selected)?;
    let session_dir = setup.session_dir.clone();
    let tape = session_dir.join("tape.jsonl");
    let mut signals = StopSignals::install()?;
    let mut handle = engine::start(setup)?;
    let mut printer = Progress::new(&selected.description);
    let mut stopped: Option<StopSignal> = None;
    loop {
        tokio::select! {
            record = handle.events.recv() => {
                let Some(record) = record else { break };
                if args.json {
                    print_json(&record);
                }
                printer.show(&record);
            }
            signal = signals.next() => {
                if stopped.is_some() {
                    say(&format!("codeloop: {} again: quitting at once; the tape (without its end) is {}", signal.name(), tape.display()));
                    // The runs' sandboxes die with codeloop (bubblewrap's
                    // --die-with-parent, the helper's parent-death signal).
                    std::process::exit(signal.exit_code());
                }
                stopped = Some(signal);
                say(&format!("codeloop: {}: cancelling the session (the same signal again quits at once)", signal.name()));
                // Headless, nothing else sends commands: the buffer has room.
                let _ = handle.commands.try_send(Command::Cancel);
            }
        }
    }
    let result = handle.done.await;
    say(&format!("  tape: {}", tape.display()));
    if stopped.is_some()
        && let Some(id) = session_dir.file_name()
    {
        say(&format!(
            "  go on: codeloop resume {}",
            id.to_string_lossy()
        ));
    }
    let result = result.context("the session's task stopped unexpectedly")??;
    Ok(match stopped {
        Some(signal) => signal.exit_code(),
        None if result.passed => 0,
        None => 1,
    })
}

/// The session to start: its task (a demo's model answers only its own),
/// its input files (a demo brings its own), the options, the sandbox and a
/// new folder.
fn setup(args: &Args, config: &Config, selected: &Selected) -> anyhow::Result<EngineSetup> {
    let task = task_of(args, selected)?;
    if let Some(demo) = selected.demo
        && task.trim() != demo.task.trim()
    {
        // Authored replies for another task would pass off a demo as an answer.
        bail!(
            "{}",
            no_model_for_own_task(selected, args.model.demo.is_some())
        );
    }
    let mut inputs = args.inputs.clone();
    let mut options = engine_options(config, args);
    // A demo brings its own input files and shows what its replies show.
    if let Some(demo) = selected.demo {
        if inputs.is_empty() {
            inputs = demo.input_files(&config.paths.data_dir).with_context(|| {
                format!(
                    "cannot write the demo's input files under {}",
                    config.paths.data_dir.display()
                )
            })?;
        }
        options.policy.review |= demo.review;
    }
    let sandbox = super::sandbox_for_generated_code(&config.sandbox)?;
    Ok(EngineSetup {
        task,
        inputs,
        model: selected.model.clone(),
        sandbox: Arc::new(sandbox),
        options,
        session_dir: engine::new_session_dir(&config.sessions_dir()),
        prompt_overrides: Some(config.paths.config_dir.join("prompts")),
        given: None,
    })
}

/// `--json`: a record as a line on stdout. A closed stdout (piped into
/// `head`) must not stop the session.
pub(crate) fn print_json(record: &crate::session::Record) {
    if let Ok(line) = serde_json::to_string(record) {
        let line = crate::protocol::sanitize::for_json(&line);
        let _ = writeln!(std::io::stdout().lock(), "{line}");
    }
}

/// A line on stderr. A terminal that went away (SIGHUP) or a closed pipe
/// must not end the session before it records its end. Its words may quote
/// the task, the model or a program (a failure's error): never raw.
pub(crate) fn say(text: &str) {
    let _ = writeln!(
        std::io::stderr(),
        "{}",
        crate::protocol::sanitize::for_terminal(text)
    );
}

/// The signals that stop a headless session: Ctrl-C, `kill`, a closed terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StopSignal {
    Interrupt,
    Terminate,
    Hangup,
}

impl StopSignal {
    pub(crate) fn name(self) -> &'static str {
        match self {
            StopSignal::Interrupt => "interrupted (SIGINT)",
            StopSignal::Terminate => "terminated (SIGTERM)",
            StopSignal::Hangup => "the terminal hung up (SIGHUP)",
        }
    }

    /// The shell's convention: 128 + the signal's number.
    pub(crate) fn exit_code(self) -> i32 {
        128 + match self {
            StopSignal::Interrupt => libc::SIGINT,
            StopSignal::Terminate => libc::SIGTERM,
            StopSignal::Hangup => libc::SIGHUP,
        }
    }
}

/// Listens for the stop signals from its creation on (their default action,
/// ending the process at once, no longer applies).
pub(crate) struct StopSignals {
    interrupt: Signal,
    terminate: Signal,
    hangup: Signal,
}

impl StopSignals {
    pub(crate) fn install() -> anyhow::Result<StopSignals> {
        let listen = |kind: SignalKind, name: &str| {
            signal(kind).with_context(|| format!("cannot listen for {name}"))
        };
        Ok(StopSignals {
            interrupt: listen(SignalKind::interrupt(), "SIGINT")?,
            terminate: listen(SignalKind::terminate(), "SIGTERM")?,
            hangup: listen(SignalKind::hangup(), "SIGHUP")?,
        })
    }

    /// The next stop signal.
    pub(crate) async fn next(&mut self) -> StopSignal {
        tokio::select! {
            _ = self.interrupt.recv() => StopSignal::Interrupt,
            _ = self.terminate.recv() => StopSignal::Terminate,
            _ = self.hangup.recv() => StopSignal::Hangup,
        }
    }
}
