//! `codeloop eval PROBLEMS.jsonl[.gz] SAMPLES.jsonl`: human-eval compatible
//! functional correctness, every sample in its own sandboxed run.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use tokio::sync::mpsc;

use crate::config::Config;
use crate::eval::{self, EvalOptions};
use codeloop_sandbox::Sandbox;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The problems (HumanEval format: task_id, prompt, test, entry_point), .jsonl or .jsonl.gz.
    #[arg(value_name = "PROBLEMS")]
    pub(crate) problems: PathBuf,
    /// The samples (task_id, completion), .jsonl; results go to SAMPLES_results.jsonl.
    #[arg(value_name = "SAMPLES")]
    pub(crate) samples: PathBuf,
    /// The k of pass@k, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1,10,100")]
    pub(crate) k: Vec<usize>,
    /// Samples run in parallel (default: the number of CPUs).
    #[arg(long, visible_alias = "n-workers")]
    pub(crate) workers: Option<usize>,
    /// Per-sample timeout in seconds.
    #[arg(long, default_value_t = 3.0)]
    pub(crate) timeout: f64,
    /// Evaluate even when some problems have no sample.
    #[arg(long)]
    pub(crate) ignore_incomplete: bool,
    /// Give samples the interpreter's site-packages (third-party imports);
    /// by default they get the standard library only, which starts faster.
    #[arg(long)]
    pub(crate) site_packages: bool,
    /// Start a fresh sandboxed interpreter for every sample instead of
    /// forking it from a warm one (slower; each sample gets its own uid and
    /// namespaces rather than its own directory and nested Landlock domain).
    #[arg(long)]
    pub(crate) fresh_process: bool,
    /// Print no progress.
    #[arg(long, short)]
    pub(crate) quiet: bool,
}

pub async fn run(args: Args, config: Config) -> anyhow::Result<i32> {
    if !(args.timeout.is_finite() && args.timeout > 0.0 && args.timeout <= 3600.0) {
        anyhow::bail!("--timeout must be a number of seconds between 0 and 3600, e.g. 3");
    }
    if args.k.contains(&0) {
        anyhow::bail!("--k values must be positive, e.g. --k 1,10,100");
    }
    let (problems, samples) = read_inputs(&args)?;
    let sandbox = super::probe_for_programs(config.sandbox.clone()).await?;
    if let Some(warning) = sandbox.warning_red() {
        eprintln!("codeloop eval: {warning}");
    }
    let options = EvalOptions {
        workers: args
            .workers
            .unwrap_or_else(|| EvalOptions::default().workers),
        timeout: Duration::from_secs_f64(args.timeout),
        memory_bytes: config.run.memory_mb.saturating_mul(1 << 20),
        site_packages: args.site_packages,
        fork_server: !args.fresh_process,
    };
    if options.workers == 0 {
        anyhow::bail!("--workers must be at least 1");
    }
    if !args.quiet {
        say_start(&args, &options, &sandbox, samples.len(), problems.len());
    }
    let (tx, rx) = mpsc::channel::<usize>(64);
    let progress = tokio::spawn(count_samples(rx, samples.len(), args.quiet));
    let (cancel, ctrl_c) = super::cancel_on_ctrl_c();
    let started = Instant::now();
    let results = eval::evaluate(&sandbox, &problems, &samples, &options, Some(tx), cancel).await;
    ctrl_c.abort();
    let _ = progress.await;
    let results = results?;
    let elapsed = started.elapsed();
    let out = eval::results_path(&args.samples);
    eval::write_results(&out, &samples, &results)?;
    let passed = results.iter().filter(|r| r.passed).count();
    if !args.quiet {
        eprintln!(
            "  {passed}/{} passed in {:.2} s; results in {}",
            results.len(),
            elapsed.as_secs_f64(),
            out.display()
        );
    }
    let scores = eval::pass_at_k(&results, &args.k);
    let rendered: Vec<String> = scores
        .iter()
        .map(|(k, v)| format!("'pass@{k}': {v:?}"))
        .collect();
    println!("{{{}}}", rendered.join(", "));
    Ok(0)
}

/// The problems and the samples; a sample missing for a problem is refused
/// unless `--ignore-incomplete`.
fn read_inputs(args: &Args) -> anyhow::Result<(Vec<eval::Problem>, Vec<eval::Sample>)> {
    let problems = eval::read_problems(&args.problems)?;
    if problems.is_empty() {
        anyhow::bail!("{} holds no problems", args.problems.display());
    }
    let samples = eval::read_samples(&args.samples)?;
    let missing = eval::missing_problems(&problems, &samples);
    if !missing.is_empty() && !args.ignore_incomplete {
        return Err(eval::EvalError::Incomplete {
            missing: missing.len(),
            total: problems.len(),
            example: missing[0].to_string(),
        }
        .into());
    }
    Ok((problems, samples))
}

/// What is about to run, and how.
fn say_start(
    args: &Args,
    options: &EvalOptions,
    sandbox: &Sandbox,
    samples: usize,
    problems: usize,
) {
    eprintln!(
        "codeloop eval: {samples} samples of {problems} problems, {} workers, {} s timeout, {}; {} sandbox, layers: {}",
        options.workers,
        args.timeout,
        if options.fork_server && !options.site_packages {
            "forked from warm interpreters"
        } else {
            "a fresh interpreter per sample"
        },
        sandbox.mode().name(),
        sandbox.active_layers().join(", ")
    );
}

/// The samples run so far, on one line redrawn at most twice a second.
async fn count_samples(mut rx: mpsc::Receiver<usize>, total: usize, quiet: bool) {
    let mut last_print = Instant::now();
    while let Some(done) = rx.recv().await {
        if !quiet && (last_print.elapsed() > Duration::from_millis(500) || done == total) {
            eprint!("\r  {done}/{total} samples run");
            last_print = Instant::now();
        }
    }
    if !quiet {
        eprintln!();
    }
}
