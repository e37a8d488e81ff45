//! Resource figures of each run: the CPU time and the peak memory of the
//! program itself (not codeloop's, not the fork server's), measured in every
//! sandbox mode this machine has, and what a run stopped by a limit used of it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

/// The sandbox helper cargo built for these tests.
const HELPER: &str = env!("CARGO_BIN_EXE_codeloop-sandbox-helper");

use std::path::PathBuf;
use std::time::Duration;

use codeloop_sandbox::{LimitHit, Limits, Outcome, RunSpec, Sandbox, SandboxOptions};
use tokio_util::sync::CancellationToken;

const MIB: u64 = 1 << 20;
/// Touches 100 MiB (bytes written, so resident) and keeps them.
const HUNDRED_MB: &str = "import time\nb = b'x' * (100 << 20)\nprint(len(b))\n";
/// Burns 0.6 s of CPU time.
const BUSY: &str = "import time\nt = time.process_time()\nn = 0\nwhile time.process_time() - t < 0.6:\n    n += 1\nprint(n > 0)\n";

#[derive(Debug, Clone, Copy)]
enum Mode {
    Native,
    Bwrap,
    Reduced,
}

/// The sandbox of `mode`, or None (said) where this machine lacks it.
fn sandbox(mode: Mode) -> Option<Sandbox> {
    let options = match mode {
        Mode::Native => SandboxOptions {
            helper: Some(HELPER.into()),
            ..SandboxOptions::default()
        },
        Mode::Bwrap => SandboxOptions {
            native_namespaces: false,
            helper: Some(HELPER.into()),
            ..Default::default()
        },
        Mode::Reduced => SandboxOptions {
            without: vec![codeloop_sandbox::Layer::Namespaces],
            allow_reduced: true,
            interpreter: system_python_for_root(),
            helper: Some(HELPER.into()),
            ..Default::default()
        },
    };
    let s = Sandbox::probe(&options);
    let ns = s
        .layer_reports()
        .iter()
        .find(|l| l.name == "namespaces")
        .cloned()?;
    let here = match mode {
        Mode::Native => ns.active && ns.detail.starts_with("built in"),
        Mode::Bwrap => ns.active && ns.detail.starts_with("bubblewrap"),
        Mode::Reduced => !ns.active,
    };
    if !here {
        println!("skipped {mode:?}: not on this machine ({})", ns.detail);
        return None;
    }
    Some(s)
}

fn system_python_for_root() -> Option<PathBuf> {
    let root = codeloop_sandbox::is_root();
    ["/usr/bin/python3", "/usr/local/bin/python3"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| root && p.exists())
}

fn spec(code: &str) -> RunSpec {
    RunSpec {
        files: vec![("main.py".into(), code.into())],
        script: "main.py".into(),
        limits: Limits {
            wall: Duration::from_secs(20),
            cpu_secs: 10,
            memory_bytes: 1 << 30,
            ..Limits::default()
        },
        ..RunSpec::default()
    }
}

async fn run(s: &Sandbox, spec: RunSpec) -> Outcome {
    s.run(spec, None, CancellationToken::new()).await.unwrap()
}

fn said(o: &Outcome) -> String {
    format!(
        "{:?} {:?} {:?}\n{}{}",
        o.exit_code,
        o.limit_hit,
        o.usage,
        o.stdout.text(),
        o.stderr.text()
    )
}

#[tokio::test]
async fn a_program_of_100_mb_reports_its_peak_and_a_small_one_a_small_peak_in_every_mode() {
    for mode in [Mode::Native, Mode::Bwrap, Mode::Reduced] {
        let Some(s) = sandbox(mode) else { continue };
        let o = run(&s, spec(HUNDRED_MB)).await;
        assert_eq!(o.exit_code, Some(0), "{mode:?}: {}", said(&o));
        let u = o.usage.unwrap_or_else(|| panic!("{mode:?}: no figures"));
        assert!(u.peak_rss_bytes >= 100 * MIB, "{mode:?}: {u:?}");
        // The program's own: not codeloop's memory, nor twice the program's.
        assert!(u.peak_rss_bytes < 200 * MIB, "{mode:?}: {u:?}");
        let small = run(&s, spec("print(1)\n")).await;
        let u = small.usage.unwrap();
        assert!(u.peak_rss_bytes < 64 * MIB, "{mode:?}: {u:?}");
    }
}

#[tokio::test]
async fn a_busy_program_reports_its_cpu_time_in_every_mode() {
    for mode in [Mode::Native, Mode::Bwrap, Mode::Reduced] {
        let Some(s) = sandbox(mode) else { continue };
        let o = run(&s, spec(BUSY)).await;
        assert_eq!(o.stdout.text(), "True\n", "{mode:?}: {}", said(&o));
        let u = o.usage.unwrap();
        assert!(u.cpu_ms >= 550, "{mode:?}: {u:?}");
    }
}

#[tokio::test]
async fn a_fork_server_job_reports_its_own_figures_not_the_servers() {
    let mut server = Sandbox::probe(&codeloop_testkit::sandbox_options(HELPER))
        .fork_server(Limits::default())
        .await
        .unwrap();
    let job = |code: &str| RunSpec {
        limits: Limits {
            wall: Duration::from_secs(10),
            cpu_secs: 5,
            memory_bytes: 1 << 30,
            ..Limits::default()
        },
        ..spec(code)
    };
    let big = server.run(&job(HUNDRED_MB)).await.unwrap();
    let u = big.usage.unwrap();
    assert!(u.peak_rss_bytes >= 100 * MIB, "{u:?}");
    // The next job's peak is its own, not the largest so far.
    let small = server.run(&job("print(1)\n")).await.unwrap();
    assert!(small.usage.unwrap().peak_rss_bytes < 64 * MIB, "{small:?}");
    let busy = server.run(&job(BUSY)).await.unwrap();
    assert!(busy.usage.unwrap().cpu_ms >= 550, "{:?}", busy.usage);
    assert!(small.usage.unwrap().cpu_ms < 550, "{:?}", small.usage);
}

#[tokio::test]
async fn a_run_stopped_for_memory_says_how_close_it_came() {
    let s = Sandbox::probe(&codeloop_testkit::sandbox_options(HELPER));
    let mut job = spec("chunks = []\nwhile True:\n    chunks.append(b'x' * (16 << 20))\n");
    job.limits.memory_bytes = 256 * MIB;
    let o = run(&s, job).await;
    assert_eq!(
        o.limit_hit,
        Some(LimitHit::Memory(256 * MIB)),
        "{}",
        said(&o)
    );
    let u = o.usage.unwrap();
    assert!(
        u.peak_rss_bytes > 150 * MIB && u.peak_rss_bytes <= 256 * MIB,
        "{u:?}"
    );
    let words = o
        .limit_hit
        .as_ref()
        .unwrap()
        .describe_with(o.usage.as_ref());
    assert!(
        words.starts_with("memory limit of 256 MiB (peak "),
        "{words}"
    );
    assert!(words.ends_with(" of 256 MiB limit)"), "{words}");
}

#[tokio::test]
async fn a_run_stopped_for_time_says_its_cpu_time() {
    let s = Sandbox::probe(&codeloop_testkit::sandbox_options(HELPER));
    // The CPU limit: the kernel's signal, measured by the program's parent.
    let mut job = spec("while True:\n    pass\n");
    job.limits.cpu_secs = 1;
    let o = run(&s, job).await;
    assert_eq!(o.limit_hit, Some(LimitHit::CpuTime(1)), "{}", said(&o));
    // The kernel checks the limit on its own clock; the usage it reports
    // splits sampled ticks (seen 867 ms here under a load of 7 on 2 cores).
    assert!(o.usage.unwrap().cpu_ms >= 500, "{:?}", o.usage);
    let words = o
        .limit_hit
        .as_ref()
        .unwrap()
        .describe_with(o.usage.as_ref());
    assert!(
        words.starts_with("CPU time limit of 1 s (CPU time "),
        "{words}"
    );
    // The wall clock: killed from outside, measured just before.
    let mut busy = spec("while True:\n    pass\n");
    busy.limits.wall = Duration::from_millis(1500);
    let o = run(&s, busy).await;
    assert!(
        matches!(o.limit_hit, Some(LimitHit::WallTimeout(_))),
        "{}",
        said(&o)
    );
    assert!(o.usage.unwrap().cpu_ms >= 500, "{:?}", o.usage);
    let mut idle = spec("import time\ntime.sleep(60)\n");
    idle.limits.wall = Duration::from_millis(1500);
    let o = run(&s, idle).await;
    let words = o
        .limit_hit
        .as_ref()
        .unwrap()
        .describe_with(o.usage.as_ref());
    assert!(o.usage.unwrap().cpu_ms < 500, "{:?}", o.usage);
    assert!(
        words.starts_with("wall-clock timeout of 1.5 s (CPU time "),
        "{words}"
    );
}
