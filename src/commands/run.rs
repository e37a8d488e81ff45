//! `codeloop run`: the repair loop headless. Progress on stderr, the tape's
//! events on stdout with `--json`, the program and its tests in an output
//! folder; exit code 0 only when every test passes.

use crate::protocol::present::{count, plural};
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, bail};

use super::model::{ModelArgs, Selected, select_model};
use crate::config::Config;
use crate::engine::{self, EngineOptions, EngineSetup};
use crate::session::{Command, Event, NodeStatus, NoticeLevel, Outcome, Record, RunKind, State};
use tokio::signal::unix::{Signal, SignalKind, signal};

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
    /// Repair every time, never start fresh from the spec
    #[arg(long)]
    pub(crate) no_fresh_start: bool,
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
        runtime_values: !args.no_runtime_values,
        fresh_start: !args.no_fresh_start,
        review: extras.review,
        review_repairs: extras.review_repairs,
        candidates: extras.candidates,
    }
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
        "{head}.\nConfigure a model:\n  - Ollama: `ollama serve`, then `ollama pull qwen2.5-coder:7b` (codeloop finds it on localhost:11434 by itself)\n  - any OpenAI-compatible server (vLLM, llama.cpp, LM Studio, OpenAI): --base-url URL [--model NAME] [--api-key-env VAR]\n  - or base_url and model under [model] in {}\nTo watch a bundled demo instead, with its own task: `codeloop run --demo NAME` ({}).",
        Config::default_file().display(),
        names.join(", ")
    )
}

pub async fn run(args: Args, config: Config) -> anyhow::Result<i32> {
    // Before any model is asked: a file no run could read or hold is
    // refused here, with why and what to do.
    if let Err(refusal) = engine::inputs::describe_all(&args.inputs) {
        bail!("the input file {refusal}");
    }
    let selected = select_model(&config, &args.model).await?;
    let task = task_of(&args, &selected)?;
    if let Some(demo) = selected.demo
        && task.trim() != demo.task.trim()
    {
        // Authored replies for another task would pass off a demo as an answer.
        bail!(
            "{}",
            no_model_for_own_task(&selected, args.model.demo.is_some())
        );
    }
    let mut inputs = args.inputs.clone();
    let mut options = engine_options(&config, &args);
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
        options.review |= demo.review;
    }
    let sandbox = super::sandbox_for_generated_code(&config.sandbox)?;
    let session_dir = engine::new_session_dir(&config.sessions_dir());
    let tape = session_dir.join("tape.jsonl");
    let setup = EngineSetup {
        task,
        inputs,
        model: selected.model.clone(),
        sandbox: Arc::new(sandbox),
        options,
        session_dir: session_dir.clone(),
        prompt_overrides: Some(config.paths.config_dir.join("prompts")),
        given: None,
    };
    let mut signals = StopSignals::install()?;
    let mut handle = engine::start(setup)?;
    let mut printer = Progress::new(&selected.description);
    let stdout = std::io::stdout();
    let mut stopped: Option<StopSignal> = None;
    loop {
        tokio::select! {
            record = handle.events.recv() => {
                let Some(record) = record else { break };
                if args.json {
                    let mut out = stdout.lock();
                    if let Ok(line) = serde_json::to_string(&record) {
                        // A closed stdout (piped into `head`) must not stop the session.
                        let _ = writeln!(out, "{line}");
                    }
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

/// Progress lines on stderr, one view of the tape.
pub(crate) struct Progress {
    state: State,
    description: String,
    color: bool,
}

impl Progress {
    pub(crate) fn new(description: &str) -> Progress {
        Progress {
            state: State::default(),
            description: description.to_string(),
            color: std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none(),
        }
    }

    fn paint(&self, code: &str, text: &str) -> String {
        if self.color {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }

    pub(crate) fn show(&mut self, record: &Record) {
        self.state.apply(record);
        if let Some(text) = self.line(record) {
            say(&text);
        }
    }

    /// Fold a record in without a line (a resumed session's history).
    pub(crate) fn absorb(&mut self, record: &Record) {
        self.state.apply(record);
    }

    fn line(&self, record: &Record) -> Option<String> {
        let s = &self.state;
        Some(match &record.event {
            Event::SessionStarted {
                session_id,
                config,
                task,
                inputs,
                ..
            } => {
                let layers = if config.sandbox_layers.is_empty() {
                    "none active (run `codeloop doctor`)".to_string()
                } else {
                    config.sandbox_layers.join(", ")
                };
                let python = config
                    .python
                    .as_ref()
                    .map(|p| {
                        let count = p.packages.len() + p.more;
                        format!(
                            "\n  python:  {} (Python {}, {})",
                            p.interpreter,
                            p.version,
                            crate::protocol::present::count(count, "third-party package")
                        )
                    })
                    .unwrap_or_default();
                let mut out = format!(
                    "codeloop: session {session_id}\n  model:   {}\n  sandbox: {layers}{python}\n  task:    {}",
                    self.description,
                    task.trim()
                );
                for f in inputs {
                    out.push_str(&format!(
                        "\n  input:   {} ({}): {}",
                        f.name,
                        codeloop_inputs::bytes(f.size_bytes),
                        f.summary()
                    ));
                }
                out
            }
            Event::Picture { picture, .. } => {
                format!("picture {} kept as {}", picture.describe(), picture.path)
            }
            Event::Notice { level, message } => match level {
                NoticeLevel::Info => format!("  note: {message}"),
                NoticeLevel::Warning => self.paint("33", &format!("  warning: {message}")),
                NoticeLevel::Error => self.paint("31", &format!("  error: {message}")),
            },
            Event::Plan { specs } => {
                let mut out = format!("plan: {} function{}", specs.len(), plural(specs.len()));
                for spec in specs {
                    out.push_str(&format!(
                        "\n  {}({}) -> {}",
                        spec.name,
                        spec.inputs,
                        if spec.output.is_empty() {
                            "?"
                        } else {
                            &spec.output
                        }
                    ));
                    if !spec.depends_on.is_empty() {
                        out.push_str(&format!("   uses {}", spec.depends_on.join(", ")));
                    }
                }
                out
            }
            Event::PlanError { message } => self.paint("31", &format!("plan rejected: {message}")),
            Event::ModelError { message, .. } => {
                self.paint("31", &format!("model error: {message}"))
            }
            Event::Tests { node, code, source } => {
                let n = code
                    .lines()
                    .filter(|l| l.trim_start().starts_with("def test"))
                    .count();
                format!(
                    "tests   {node}: {n} test function{} ({source:?})",
                    plural(n)
                )
            }
            Event::Code {
                node,
                iteration,
                source,
                ..
            } => {
                format!("code    {node} #{iteration} ({source:?})")
            }
            Event::Check {
                node,
                iteration,
                findings,
            } if !findings.is_empty() => {
                let items: Vec<String> = findings
                    .iter()
                    .map(|f| match f.line {
                        Some(l) => format!("{} (line {l}): {}", f.kind, f.message),
                        None => format!("{}: {}", f.kind, f.message),
                    })
                    .collect();
                format!("check   {node} #{iteration}: {}", items.join("; "))
            }
            Event::RunFinished { run_id, record } => {
                let run = s.runs.get(run_id)?;
                let who = match (&run.kind, &run.node) {
                    (RunKind::Program, _) | (_, None) => "program".to_string(),
                    (RunKind::NodeTests, Some(n)) => format!("{n} #{}", run.iteration),
                };
                let counts = match (record.tests_passed, record.tests_failed) {
                    (Some(p), Some(0)) => count(p, "test"),
                    (Some(p), Some(f)) => format!("{f} of {} failed", p + f),
                    _ => String::new(),
                };
                let verdict = if record.passed {
                    self.paint("32", "passed")
                } else if s.cancelled {
                    // Stopped by the cancel, not failed.
                    self.paint("33", "cancelled")
                } else {
                    self.paint("31", "FAILED")
                };
                let mut line = format!(
                    "run     {who}: {verdict} ({counts}{}{} ms{})",
                    if counts.is_empty() { "" } else { ", " },
                    record.duration_ms,
                    record
                        .resources
                        .map(|r| format!(", {}", r.short()))
                        .unwrap_or_default()
                );
                if let Some(limit) = &record.limit_hit {
                    line.push_str(&format!(" - stopped: {limit}"));
                }
                line
            }
            Event::Localized { location, .. } => {
                let text = location.render();
                text.lines()
                    .map(|l| format!("        {l}"))
                    .collect::<Vec<_>>()
                    .join("\n")
            }
            Event::Attempt {
                node,
                iteration,
                kind,
                runtime_values,
            } => format!(
                "attempt {node} #{iteration}: {}{}",
                kind.label(),
                if *runtime_values {
                    " (with runtime values)"
                } else {
                    ""
                }
            ),
            Event::TestsChanged {
                node,
                iteration,
                reason,
                applied,
                rejected_because,
                ..
            } => {
                let verdict = match (applied, rejected_because) {
                    (true, _) => "applied".to_string(),
                    (false, Some(why)) => format!("rejected: {why}"),
                    (false, None) => "rejected".to_string(),
                };
                self.paint(
                    "33",
                    &format!(
                        "tests   {node} changed by the model (after #{iteration}, {verdict}): {}",
                        reason.replace('\n', " ")
                    ),
                )
            }
            Event::Candidates { node, .. } => {
                let info = s.nodes.get(node)?.candidates.as_ref()?;
                let scores: Vec<String> = info
                    .candidates
                    .iter()
                    .enumerate()
                    .map(|(i, c)| match c.loaded {
                        true => format!("#{} {}", i + 1, c.score),
                        false => format!("#{} did not load", i + 1),
                    })
                    .collect();
                format!(
                    "vote    {node} #{}: {} [{}]",
                    info.iteration,
                    info.summary(),
                    scores.join(", ")
                )
            }
            Event::Review {
                node,
                iteration,
                verdict,
                findings,
                call_id,
            } => {
                let tokens = call_id
                    .and_then(|id| s.calls.get(&id))
                    .and_then(|c| c.usage)
                    .map(|u| format!(" ({} tokens)", u.prompt_tokens + u.completion_tokens))
                    .unwrap_or_default();
                let head = format!(
                    "review  {node} #{iteration}: {}{tokens}",
                    crate::session::review::summary(*verdict, findings)
                );
                let mut out = match (
                    verdict,
                    findings
                        .iter()
                        .any(|f| f.severity == crate::session::Severity::Serious),
                ) {
                    (_, true) => self.paint("31", &head),
                    (crate::session::ReviewVerdict::Concerns, false) => self.paint("33", &head),
                    (crate::session::ReviewVerdict::Ok, false) => head,
                };
                for f in findings {
                    out.push_str(&format!("\n        {}", f.line_text().replace('\n', " ")));
                }
                out
            }
            Event::Reflection {
                node,
                iteration,
                text,
            } => {
                format!(
                    "reflect {node} (after #{iteration}): {}",
                    text.replace('\n', " ")
                )
            }
            Event::ProgramOutput { output } => {
                let mut out = format!(
                    "output  the program (main) printed:\n{}",
                    output.stdout.trim_end()
                );
                if !output.succeeded() {
                    out.push_str(&self.paint(
                        "31",
                        &format!(
                            "\n        and failed: {}",
                            output
                                .limit_hit
                                .clone()
                                .unwrap_or_else(|| output.stderr.trim().to_string())
                        ),
                    ));
                }
                out
            }
            Event::NodeStatus { node, status } => match status {
                NodeStatus::Blocked => self.paint("33", &format!("blocked {node}")),
                NodeStatus::GaveUp => self.paint("31", &format!("gave up {node}")),
                _ => return None,
            },
            Event::Finished { result } => {
                // The same word the workbench's badge and the report give.
                let outcome = Outcome::of(s);
                let verdict = match outcome {
                    Outcome::Passed => self.paint("32", "PASSED"),
                    Outcome::Cancelled => self.paint("33", "CANCELLED"),
                    Outcome::Failed | Outcome::NoPlan | Outcome::Working => {
                        self.paint("31", &outcome.label().to_uppercase())
                    }
                };
                let label = format!("{}: ", outcome.label());
                let summary = result
                    .summary
                    .strip_prefix(&label)
                    .unwrap_or(&result.summary);
                let mut out = format!(
                    "result: {verdict}: {}\n  repairs: {}, tokens: {}",
                    summary,
                    result.iterations,
                    result.usage.words()
                );
                let (reviews, review_tokens) = crate::session::review::review_cost(s);
                if reviews > 0 {
                    out.push_str(&format!(
                        " (of them {review_tokens} in {reviews} review{} before running)",
                        plural(reviews)
                    ));
                }
                if let Some(total) = crate::session::figures::total_line(s) {
                    out.push_str(&format!("\n  resources: {total}"));
                    for node in crate::session::figures::per_node(s) {
                        out.push_str(&format!("\n    {}", node.line()));
                    }
                }
                if let Some(dir) = &result.output_dir {
                    out.push_str(&format!("\n  output: {dir}"));
                }
                out
            }
            Event::Forked {
                parent_id, at_seq, ..
            } => format!(
                "codeloop: session {}, forked from session {parent_id} at record {at_seq}",
                s.session_id
            ),
            Event::Resumed {
                from_seq,
                after,
                config,
                ..
            } => format!(
                "codeloop: session {} resumed after record {from_seq} ({after})\n  model:   {}\n  limit:   {} iteration{} a function",
                s.session_id,
                self.description,
                config.max_iterations,
                plural(config.max_iterations as usize)
            ),
            Event::ModelRestart { reason, .. } => {
                format!("        the model's reply starts again: {reason}")
            }
            Event::ModelRequest { .. }
            | Event::ModelDelta { .. }
            | Event::ModelReasoning { .. }
            | Event::ModelContinued { .. }
            | Event::ModelReply { .. }
            | Event::Check { .. }
            | Event::RunStarted { .. }
            | Event::Output { .. }
            | Event::Paused { .. }
            | Event::Steer { .. }
            | Event::Program { .. } => return None,
        })
    }
}
