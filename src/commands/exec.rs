//! `codeloop exec FILE.py [-- ARGS]`: run one file in the sandbox, stream its
//! output live, exit with its exit code, and explain a failure at its line.
//! The output is stripped of control sequences (OSC 52, titles, terminal
//! queries...) as the workbench strips it, unless `--raw` asks for it as
//! the program wrote it.

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use tokio::sync::mpsc;

use crate::config::Config;
use crate::protocol::Stream;
use crate::protocol::sanitize::{self, Sanitizer, Tabs};
use codeloop_sandbox::{Limits, Outcome, RunSpec, Sandbox, locate};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The Python file to run.
    #[arg(value_name = "FILE.py")]
    pub(crate) file: PathBuf,
    /// Arguments for the program (after `--`).
    #[arg(last = true, value_name = "ARGS")]
    pub(crate) args: Vec<String>,
    /// More files to place beside it in the working directory (modules it imports, data).
    #[arg(long = "with", value_name = "FILE")]
    pub(crate) with: Vec<PathBuf>,
    /// Wall-clock limit in seconds (default: the config's run.timeout_secs).
    #[arg(long, value_name = "SECS")]
    pub(crate) timeout: Option<f64>,
    /// Memory limit in MiB (default: the config's run.memory_mb).
    #[arg(long, value_name = "MIB")]
    pub(crate) memory: Option<u64>,
    /// Also write the full output to this file.
    #[arg(long, value_name = "FILE")]
    pub(crate) log: Option<PathBuf>,
    /// Print the sandbox layers and limits before running.
    #[arg(long, short)]
    pub(crate) verbose: bool,
    /// Pass the program's output on as it wrote it, control sequences
    /// (escapes that move the cursor, set the title or the clipboard, or
    /// query the terminal) included; by default they are removed.
    #[arg(long)]
    pub(crate) raw: bool,
}

pub async fn run(args: Args, config: Config) -> anyhow::Result<i32> {
    let (name, files) = files_of(&args)?;
    let limits = limits_of(&args, &config)?;
    let sandbox = super::probe_for_programs(config.sandbox.clone()).await?;
    warn_inactive_layers(&sandbox, args.verbose);
    if args.verbose {
        say_setup(&sandbox, &limits);
    }
    let spec = RunSpec {
        files: files.clone(),
        script: name,
        args: args.args.clone(),
        limits,
        log_path: args.log.clone(),
        ..RunSpec::default()
    };
    let (tx, rx) = mpsc::channel(64);
    let printer = tokio::spawn(pass_on(rx, args.raw));
    let (cancel, ctrl_c) = super::cancel_on_ctrl_c();
    let result = sandbox.run(spec, Some(tx), cancel).await;
    ctrl_c.abort();
    let _ = printer.await;
    let outcome = match result {
        Ok(o) => o,
        Err(codeloop_sandbox::ExecError::Cancelled) => {
            eprintln!("codeloop: interrupted; the program and everything it started were stopped");
            return Ok(130);
        }
        Err(e) => return Err(e.into()),
    };
    eprintln!("{}", figures(&outcome));
    let explanation = explain(&outcome, &files);
    if !explanation.is_empty() {
        // Its lines quote the program's source and error: never raw.
        eprintln!("\n{}", sanitize::for_terminal(&explanation));
    }
    Ok(exit_code(&outcome))
}

/// The program's file (its name, the script run) and those given with
/// `--with`, each with its text.
fn files_of(args: &Args) -> anyhow::Result<(String, Vec<(String, String)>)> {
    let code = std::fs::read_to_string(&args.file)
        .with_context(|| format!("cannot read {}", args.file.display()))?;
    let name = file_name(&args.file)?;
    let mut files = vec![(name.clone(), code)];
    for extra in &args.with {
        let text = std::fs::read_to_string(extra)
            .with_context(|| format!("cannot read {} (given with --with)", extra.display()))?;
        files.push((file_name(extra)?, text));
    }
    Ok((name, files))
}

/// The run's limits: the config's `[run]`, or `--timeout` and `--memory`.
fn limits_of(args: &Args, config: &Config) -> anyhow::Result<Limits> {
    let mut limits = Limits {
        wall: Duration::from_secs(config.run.timeout_secs.max(1)),
        // CPU time is a backstop a second past the wall clock, so a busy
        // loop reads as the timeout the user set.
        cpu_secs: config.run.timeout_secs.max(1) + 1,
        memory_bytes: config.run.memory_mb.saturating_mul(1 << 20),
        ..Limits::default()
    };
    if let Some(t) = args.timeout {
        if !(t.is_finite() && t > 0.0 && t <= 86_400.0) {
            anyhow::bail!("--timeout must be a number of seconds between 0 and 86400, e.g. 5");
        }
        limits.wall = Duration::from_secs_f64(t);
        limits.cpu_secs = t.ceil() as u64 + 1;
    }
    if let Some(m) = args.memory {
        if m == 0 {
            anyhow::bail!("--memory must be a positive number of MiB, e.g. 512");
        }
        limits.memory_bytes = m.saturating_mul(1 << 20);
    }
    Ok(limits)
}

/// `--verbose`: the interpreter, the layers and the limits, before the run.
fn say_setup(sandbox: &Sandbox, limits: &Limits) {
    eprintln!(
        "codeloop: {} (Python {}), layers: {}; {} wall, {} s CPU, {} memory",
        sandbox.interpreter.display(),
        sandbox.interpreter_version(),
        sandbox.active_layers().join(", "),
        codeloop_sandbox::LimitHit::WallTimeout(limits.wall)
            .describe()
            .trim_start_matches("wall-clock timeout of "),
        limits.cpu_secs,
        codeloop_sandbox::LimitHit::Memory(limits.memory_bytes)
            .describe()
            .trim_start_matches("memory limit of "),
    );
}

/// The program's output passed on as it comes, each stream to its own,
/// control sequences removed unless `raw`.
async fn pass_on(mut rx: mpsc::Receiver<codeloop_sandbox::OutputChunk>, raw: bool) {
    let mut stdout = std::io::stdout();
    let mut stderr = std::io::stderr();
    // One filter per stream: a sequence cut between two chunks goes whole.
    let mut filters = [Sanitizer::new(Tabs::Keep), Sanitizer::new(Tabs::Keep)];
    while let Some(chunk) = rx.recv().await {
        let (out, filter): (&mut dyn Write, _) = match chunk.stream {
            Stream::Stdout => (&mut stdout, &mut filters[0]),
            Stream::Stderr => (&mut stderr, &mut filters[1]),
        };
        let text = if raw {
            chunk.text
        } else {
            filter.push(&chunk.text)
        };
        let _ = out.write_all(text.as_bytes()).and(out.flush());
    }
}

fn file_name(path: &std::path::Path) -> anyhow::Result<String> {
    path.file_name()
        .and_then(|n| n.to_str())
        .map(str::to_string)
        .with_context(|| format!("{} has no usable file name", path.display()))
}

/// The reduced sandbox is announced, in red, on every run; in verbose
/// mode every inactive layer is named with what to do.
fn warn_inactive_layers(sandbox: &Sandbox, verbose: bool) {
    if let Some(warning) = sandbox.warning_red() {
        eprintln!("codeloop: {warning}");
    }
    if !verbose {
        return;
    }
    for layer in sandbox.layer_reports().iter().filter(|l| !l.active) {
        eprintln!(
            "codeloop: sandbox layer {} is not active: {}{}",
            layer.name,
            layer.detail,
            layer
                .advice
                .as_ref()
                .map(|a| format!(" ({a})"))
                .unwrap_or_default()
        );
    }
}

/// How the run ended and what it used, in one line: `codeloop: exit code
/// 0 after 0.21 s · CPU 46 ms · peak 13 MiB` (the CPU time and peak memory
/// where they were measured: not for a run stopped from outside).
fn figures(outcome: &Outcome) -> String {
    let end = match (outcome.exit_code, outcome.signal) {
        (Some(c), _) => format!("exit code {c}"),
        (None, Some(s)) => format!("killed by signal {s}"),
        (None, None) => "ended".to_string(),
    };
    let used = outcome
        .usage
        .as_ref()
        .map(|u| format!(" · {}", u.short()))
        .unwrap_or_default();
    format!(
        "codeloop: {end} after {:.2} s{used}",
        outcome.duration.as_secs_f64()
    )
}

/// The shell's convention: the exit code, or 128 + the signal.
fn exit_code(outcome: &Outcome) -> i32 {
    match (outcome.exit_code, outcome.signal) {
        (Some(c), _) => c,
        (None, Some(s)) => 128 + s,
        (None, None) => 1,
    }
}

/// What went wrong, in words: the limit hit, and the failing line.
pub(crate) fn explain(outcome: &Outcome, sources: &[(String, String)]) -> String {
    let mut out = String::new();
    if let Some(limit) = &outcome.limit_hit {
        out.push_str(&format!(
            "codeloop: the program was stopped by the {} after {:.2} s\n",
            limit.describe_with(outcome.usage.as_ref()),
            outcome.duration.as_secs_f64()
        ));
    } else if let (None, Some(sig)) = (outcome.exit_code, outcome.signal) {
        out.push_str(&format!(
            "codeloop: the program was killed by signal {sig} ({})\n",
            signal_name(sig)
        ));
    }
    if outcome.exit_code != Some(0)
        && let Some(loc) = locate::locate(&outcome.stderr.text(), sources)
    {
        out.push_str("codeloop: the failure is at ");
        out.push_str(&loc.render());
    }
    out.trim_end().to_string()
}

fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV, a crash",
        libc::SIGABRT => "SIGABRT, an abort",
        libc::SIGXCPU => "SIGXCPU, CPU time",
        libc::SIGXFSZ => "SIGXFSZ, file size",
        libc::SIGTERM => "SIGTERM",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        _ => "a signal",
    }
}
