//! Hostile and harmless programs run through the sandbox to show what it
//! contains on this machine (`codeloop doctor`, and the tests). Each
//! layer's hostile programs are in its file (`layers/`, its `doctor`);
//! here are the means they share, the harmless programs, and the fork
//! server's.

use std::net::TcpListener;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::{LimitHit, Limits, Outcome, RunSpec, Sandbox};

/// What one probe showed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeResult {
    pub name: String,
    /// Hostile probes must be contained; harmless ones must work.
    pub hostile: bool,
    /// Contained (hostile) or worked (harmless).
    pub ok: bool,
    /// What happened, in a line.
    pub detail: String,
}

/// Limits for probes: small and quick, so `doctor` takes seconds.
pub fn probe_limits() -> Limits {
    Limits {
        wall: Duration::from_secs(8),
        cpu_secs: 2,
        memory_bytes: 512 << 20,
        file_size_bytes: 64 << 20,
        max_processes: 64,
        open_files: 256,
        output_keep_bytes: 4 << 10,
        disk_bytes: 32 << 20,
        output_bytes: 8 << 20,
        max_files: 4096,
    }
}

pub(crate) fn spec(code: &str, args: Vec<String>) -> RunSpec {
    RunSpec {
        files: vec![("probe.py".into(), code.into())],
        script: "probe.py".into(),
        args,
        limits: probe_limits(),
        ..RunSpec::default()
    }
}

pub(crate) async fn run(
    sandbox: &Sandbox,
    code: &str,
    args: Vec<String>,
) -> Result<Outcome, String> {
    run_within(sandbox, code, args, |_| {}).await
}

/// `run`, its limits changed by `tweak` first.
pub(crate) async fn run_within(
    sandbox: &Sandbox,
    code: &str,
    args: Vec<String>,
    tweak: impl FnOnce(&mut Limits),
) -> Result<Outcome, String> {
    let mut spec = spec(code, args);
    if let Some(bytes) = sandbox.run_memory {
        spec.limits.memory_bytes = bytes;
    }
    tweak(&mut spec.limits);
    sandbox
        .run(spec, None, CancellationToken::new())
        .await
        .map_err(|e| e.to_string())
}

fn last_line(outcome: &Outcome) -> String {
    let err = outcome.stderr.text();
    let out = outcome.stdout.text();
    err.lines()
        .rev()
        .chain(out.lines().rev())
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim()
        .chars()
        .take(160)
        .collect()
}

pub(crate) fn limit_probe(
    name: &str,
    outcome: Result<Outcome, String>,
    expected: fn(&LimitHit) -> bool,
) -> ProbeResult {
    match outcome {
        Ok(o) => match &o.limit_hit {
            Some(hit) if expected(hit) => ProbeResult {
                name: name.into(),
                hostile: true,
                ok: true,
                detail: format!(
                    "stopped by the {} after {:.2} s",
                    hit.describe(),
                    o.duration.as_secs_f64()
                ),
            },
            Some(hit) => ProbeResult {
                name: name.into(),
                hostile: true,
                ok: false,
                detail: format!("stopped by the {} instead", hit.describe()),
            },
            None => ProbeResult {
                name: name.into(),
                hostile: true,
                ok: false,
                detail: format!("ran to the end (exit {:?}): {}", o.exit_code, last_line(&o)),
            },
        },
        Err(e) => ProbeResult {
            name: name.into(),
            hostile: true,
            ok: false,
            detail: format!("could not run: {e}"),
        },
    }
}

/// The CPU spin: stopped by the CPU limit, or (on a machine so busy that
/// the spin got less CPU time than its limit before the wall clock) by the
/// wall clock with the CPU limit seen in place from inside.
pub(crate) fn cpu_probe(outcome: Result<Outcome, String>) -> ProbeResult {
    let name = "CPU spin";
    if let Ok(o) = &outcome
        && let Some(LimitHit::WallTimeout(_)) = o.limit_hit
    {
        let limit = probe_limits().cpu_secs;
        let seen = o.stdout.text().contains(&format!("CPU limit {limit}\n"));
        return ProbeResult {
            name: name.into(),
            hostile: true,
            ok: seen,
            detail: if seen {
                format!(
                    "stopped by the wall-clock timeout after {:.2} s; its CPU time limit of {limit} s was in place, but this busy machine gave it less CPU time than that",
                    o.duration.as_secs_f64()
                )
            } else {
                format!(
                    "stopped by the wall-clock timeout; no CPU time limit of {limit} s was in place: {}",
                    last_line(o)
                )
            },
        };
    }
    limit_probe(name, outcome, |h| matches!(h, LimitHit::CpuTime(_)))
}

/// A hostile probe that prints CONTAINED when every attempt failed, and
/// ESCAPED otherwise.
pub(crate) fn marker_probe(
    name: &str,
    outcome: Result<Outcome, String>,
    host_ok: bool,
) -> ProbeResult {
    match outcome {
        Ok(o) => {
            let out = o.stdout.text();
            let escaped = out.contains("ESCAPED") || !host_ok;
            let ok = !escaped && out.contains("CONTAINED");
            let detail = out
                .lines()
                .filter(|l| l.starts_with("CONTAINED") || l.starts_with("ESCAPED"))
                .collect::<Vec<_>>()
                .join("; ");
            ProbeResult {
                name: name.into(),
                hostile: true,
                ok,
                detail: if detail.is_empty() {
                    format!("no verdict: {}", last_line(&o))
                } else if !host_ok {
                    format!("{detail}; but the host saw the attempt succeed")
                } else {
                    detail
                },
            }
        }
        Err(e) => ProbeResult {
            name: name.into(),
            hostile: true,
            ok: false,
            detail: format!("could not run: {e}"),
        },
    }
}

const HARMLESS: &[(&str, &str, &str)] = &[
    (
        "threads",
        "import threading\nout = []\nts = [threading.Thread(target=out.append, args=(i,)) for i in range(16)]\nfor t in ts: t.start()\nfor t in ts: t.join()\nprint(sum(out))\n",
        "120",
    ),
    (
        "multiprocessing",
        "import multiprocessing as mp\ndef sq(x):\n    return x * x\nif __name__ == '__main__':\n    with mp.Pool(2) as p:\n        print(sum(p.map(sq, range(10))))\n",
        "285",
    ),
    (
        "sqlite",
        "import sqlite3\ndb = sqlite3.connect('probe.db')\ndb.execute('create table t(x)')\ndb.executemany('insert into t values (?)', [(i,) for i in range(5)])\ndb.commit()\nprint(db.execute('select sum(x) from t').fetchone()[0])\n",
        "10",
    ),
    (
        "temp files",
        "import tempfile, os\nwith tempfile.TemporaryDirectory() as d:\n    p = os.path.join(d, 'a.txt')\n    open(p, 'w').write('hello')\n    print(open(p).read())\nwith tempfile.NamedTemporaryFile('w+') as f:\n    f.write('x'); f.flush(); print(os.path.getsize(f.name))\n",
        "hello\n1",
    ),
];

/// Run every probe; `sandbox` should be the one the caller will use: each
/// layer's hostile programs in the registry's order, then the harmless ones.
pub async fn run_all(sandbox: &Sandbox) -> Vec<ProbeResult> {
    let mut results = super::layers::doctor(sandbox).await;
    for (name, code, expected) in HARMLESS {
        let r = run(sandbox, code, vec![]).await;
        results.push(match r {
            Ok(o) if o.exit_code == Some(0) && o.stdout.text().trim() == *expected => ProbeResult {
                name: (*name).into(),
                hostile: false,
                ok: true,
                detail: format!("works ({:.0} ms)", o.duration.as_secs_f64() * 1000.0),
            },
            Ok(o) => ProbeResult {
                name: (*name).into(),
                hostile: false,
                ok: false,
                detail: format!("failed (exit {:?}): {}", o.exit_code, last_line(&o)),
            },
            Err(e) => ProbeResult {
                name: (*name).into(),
                hostile: false,
                ok: false,
                detail: format!("could not run: {e}"),
            },
        });
    }
    results
}

const JOB_ESCAPE: &str = r#"import os, signal, socket, sys
escaped = []
try:
    os.kill(os.getppid(), signal.SIGKILL)
    escaped.append("signalled the server")
except OSError:
    pass
for path in ["../escape.txt", "/tmp/escape.txt", sys.argv[1]]:
    try:
        with open(path, "w") as f:
            f.write("x")
        escaped.append("wrote " + path)
    except OSError:
        pass
try:
    socket.create_connection(("127.0.0.1", int(sys.argv[2])), timeout=2)
    escaped.append("connected to the loopback listener")
except OSError:
    pass
import subprocess
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "codeloop-leftover-probe"])
print(("ESCAPED " + "; ".join(escaped)) if escaped else "CONTAINED: no signal to the server, no write outside the job, no TCP")
"#;

// A process already sent SIGKILL runs no more of its code: on a busy
// machine it may still be listed for a moment after the server's kill.
const JOB_LEFTOVERS: &str = r#"import os
left = 0
try:
    pids = os.listdir("/proc")
except OSError:
    print("CONTAINED: no process list in view")
    pids = []
for pid in pids:
    if pid.isdigit():
        try:
            if b"codeloop-leftover-probe" not in open(f"/proc/{pid}/cmdline", "rb").read():
                continue
            status = dict(l.split(":", 1) for l in open(f"/proc/{pid}/status").read().splitlines() if ":" in l)
            pending = int(status.get("SigPnd", "0"), 16) | int(status.get("ShdPnd", "0"), 16)
            if status.get("State", "").split()[:1] not in (["Z"], ["X"]) and not pending & (1 << 8):
                left += 1
        except (OSError, ValueError):
            pass
if pids:
    print(f"ESCAPED {left} process(es) of the last job still run" if left else "CONTAINED: nothing of the last job still runs")
"#;

/// Hostile jobs through a fork server (the path `codeloop eval` takes): a
/// job must not reach the server, write outside its directory, connect
/// anywhere, or leave processes for the next job.
pub async fn run_fork_server(sandbox: &Sandbox) -> Vec<ProbeResult> {
    let fail = |name: &str, detail: String| ProbeResult {
        name: name.into(),
        hostile: true,
        ok: false,
        detail,
    };
    let mut server = match sandbox.fork_server(probe_limits()).await {
        Ok(s) => s,
        Err(e) => return vec![fail("fork server", format!("did not start: {e}"))],
    };
    let outside = match tempfile::Builder::new()
        .prefix("codeloop-doctor-")
        .tempdir()
    {
        Ok(d) => d,
        Err(e) => return vec![fail("fork server", format!("no target directory: {e}"))],
    };
    use std::os::unix::fs::PermissionsExt;
    let _ = std::fs::set_permissions(outside.path(), std::fs::Permissions::from_mode(0o777));
    let target = outside.path().join("written-by-job");
    let listener = match TcpListener::bind("127.0.0.1:0") {
        Ok(l) => l,
        Err(e) => return vec![fail("fork server", format!("no loopback listener: {e}"))],
    };
    let port = listener.local_addr().map(|a| a.port()).unwrap_or(0);
    let _ = listener.set_nonblocking(true);
    let escape = spec(
        JOB_ESCAPE,
        vec![target.display().to_string(), port.to_string()],
    );
    let first = server.run(&escape).await.map_err(|e| e.to_string());
    let host_ok = !target.exists() && listener.accept().is_err();
    let mut results = vec![marker_probe(
        "fork server: job vs server, files, TCP",
        first,
        host_ok,
    )];
    let second = server
        .run(&spec(JOB_LEFTOVERS, vec![]))
        .await
        .map_err(|e| e.to_string());
    let none_left = live_processes_marked("codeloop-leftover-probe") == 0;
    results.push(marker_probe(
        "fork server: previous job's leftovers",
        second,
        none_left,
    ));
    results
}

/// Processes on this machine whose command line holds `marker` and that
/// can still run code: not zombies, and not already sent SIGKILL.
fn live_processes_marked(marker: &str) -> usize {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    let mut live = 0;
    for entry in entries.flatten() {
        let dir = entry.path();
        let Ok(cmdline) = std::fs::read(dir.join("cmdline")) else {
            continue;
        };
        if !cmdline
            .windows(marker.len())
            .any(|w| w == marker.as_bytes())
        {
            continue;
        }
        if super::procstatus::ProcStatus::read(&dir).is_some_and(|s| s.can_still_run()) {
            live += 1;
        }
    }
    live
}
