//! Hygiene: a fresh working directory per run, the environment cleared to
//! an allowlist (`plan::sandbox_env`), stdin from /dev/null, the run's own
//! session and process group killed as a group, output kept as head and
//! tail, the working directory's disk use watched (`run.rs`); in the
//! helper, no descriptor codeloop inherited goes on to the program.

use futures_util::future::BoxFuture;

use super::{Child, LayerImpl, LayerReport, RunPlan, Stage};
use crate::probes::{ProbeResult, limit_probe, marker_probe, run};
use crate::{LimitHit, Sandbox, SandboxOptions, sys};

pub(crate) struct Hygiene;

const FLOOD: &str = "import sys\nline = 'x' * 1023 + '\\n'\nfor _ in range(200 * 1024):\n    sys.stdout.write(line)\n";
const DISK_FILL: &str = "import os\nchunk = b'x' * (1 << 20)\nfor i in range(1000):\n    with open(f'fill{i}.bin', 'wb') as f:\n        f.write(chunk)\n        f.flush()\n        os.fsync(f.fileno())\n";

const PARENT_ENV: &str = r#"import os, sys
allowed = {"PATH", "HOME", "TMPDIR", "LANG", "LC_ALL", "TERM", "PWD"}
# The sandbox's own module directory, in the run's working directory.
if os.environ.get("PYTHONPATH", "").startswith(os.environ.get("HOME", "\0") + "/"):
    allowed.add("PYTHONPATH")
extra = sorted(set(os.environ) - allowed)
if extra:
    print("ESCAPED inherited " + ", ".join(extra))
leaks = []
for pid in {sys.argv[1], "1", str(os.getppid())}:
    try:
        data = open(f"/proc/{pid}/environ", "rb").read()
        if data:
            leaks.append(pid)
    except OSError:
        pass
print(("ESCAPED read the environment of pid " + ", ".join(leaks)) if leaks else "CONTAINED: no foreign environment readable, none inherited")
"#;

impl LayerImpl for Hygiene {
    fn probe(&self, _sandbox: &mut Sandbox, _options: &SandboxOptions) -> Result<(), String> {
        Ok(())
    }

    fn report(&self, _sandbox: &Sandbox) -> LayerReport {
        LayerReport {
            name: "hygiene".into(),
            active: true,
            detail: "fresh working directory per run, environment cleared to an allowlist, stdin from /dev/null, own session and process group killed as a group, output kept as head and tail, disk use of the working directory watched".into(),
            advice: None,
        }
    }

    fn stage(&self) -> Stage {
        Stage::Enter
    }

    fn plan(&self, _sandbox: &Sandbox, _run: &RunPlan) -> Option<serde_json::Value> {
        Some(serde_json::Value::Null)
    }

    fn apply(&self, _step: &serde_json::Value, _child: &mut Child) -> Result<(), String> {
        // Whatever codeloop inherited without close-on-exec (a terminal, a
        // socket, a file of the shell that started it) must not reach the
        // program: only stdin, stdout and stderr go on.
        close_inherited_on_exec()
    }

    fn doctor<'a>(&'a self, sandbox: &'a Sandbox) -> BoxFuture<'a, Vec<ProbeResult>> {
        Box::pin(async move {
            let me = std::process::id().to_string();
            vec![
                limit_probe(
                    "200 MB stdout flood",
                    run(sandbox, FLOOD, vec![]).await,
                    |h| matches!(h, LimitHit::Output(_)),
                ),
                limit_probe("disk fill", run(sandbox, DISK_FILL, vec![]).await, |h| {
                    matches!(h, LimitHit::Disk(_) | LimitHit::FileSize(_))
                }),
                marker_probe(
                    "read the parent's environment",
                    run(sandbox, PARENT_ENV, vec![me]).await,
                    true,
                ),
            ]
        })
    }
}

/// Mark every descriptor above stderr close-on-exec.
fn close_inherited_on_exec() -> Result<(), String> {
    if sys::close_range_on_exec(3).is_ok() {
        return Ok(());
    }
    // Kernels before 5.11: one descriptor at a time.
    let fds: Vec<i32> = std::fs::read_dir("/proc/self/fd")
        .map_err(|e| format!("cannot list the inherited descriptors: {e}"))?
        .flatten()
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse().ok()))
        .filter(|fd| *fd > 2)
        .collect();
    for fd in fds {
        sys::close_on_exec(fd);
    }
    Ok(())
}
