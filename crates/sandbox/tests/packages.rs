//! A person's own Python (a venv with its packages) in the sandbox, the
//! import policy enforced inside it in every mode, and the pictures a
//! program leaves read back. (Through the binary, `--python`, `doctor` and
//! an ordinary user's venv: the root's `tests/exec_packages.rs`.)
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

/// The sandbox helper cargo built for these tests.
const HELPER: &str = env!("CARGO_BIN_EXE_codeloop-sandbox-helper");

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use codeloop_sandbox::{ImportPolicy, Limits, RunSpec, Sandbox, SandboxOptions};
use codeloop_testkit::venv;
use tokio_util::sync::CancellationToken;

fn spec(code: &str) -> RunSpec {
    RunSpec {
        files: vec![("main.py".into(), code.into())],
        script: "main.py".into(),
        limits: Limits {
            wall: Duration::from_secs(20),
            cpu_secs: 10,
            ..Limits::default()
        },
        ..RunSpec::default()
    }
}

#[tokio::test]
async fn a_venvs_own_package_is_importable_in_the_sandbox_and_read_only() {
    let dir = venv::world_readable_tempdir();
    let python = venv::venv_with_tinypkg(dir.path());
    let sandbox = Sandbox::probe(&SandboxOptions {
        interpreter: Some(python.clone()),
        helper: Some(HELPER.into()),
        ..Default::default()
    });
    assert!(sandbox.interpreter_problem().is_none());
    let env = sandbox.python_environment().unwrap();
    assert_eq!(env.prefix, dir.path().join("venv").display().to_string());
    assert!(
        env.packages.iter().any(|p| p.name == "tinypkg"),
        "{:?}",
        env.packages
    );
    assert!(!env.packages.iter().any(|p| p.name == "pip"));
    let site = env.site_packages[0].clone();
    let code = format!(
        "import sys, tinypkg\nprint(tinypkg.hello(), sys.prefix)\ntry:\n    open({site:?} + '/evil.py', 'w').write('x')\n    print('wrote')\nexcept OSError as e:\n    print('refused', type(e).__name__)\n"
    );
    let o = sandbox
        .run(spec(&code), None, CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(o.exit_code, Some(0), "{}", o.stderr.text());
    let out = o.stdout.text();
    assert!(out.contains("hello from tinypkg"), "{out}");
    assert!(out.contains("refused"), "{out}");
    assert!(!Path::new(&site).join("evil.py").exists());
}

/// numpy from PyPI in a cached venv (scripts/data_venv.sh); skipped, saying
/// so, where pip cannot reach the registry.
#[tokio::test]
async fn a_real_package_from_the_registry_runs_in_the_sandbox() {
    let script = codeloop_testkit::workspace().join("scripts/data_venv.sh");
    let out = Command::new("bash").arg(&script).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let Some(python) = stdout
        .lines()
        .find_map(|l| l.strip_prefix("VENV_PYTHON="))
        .filter(|_| out.status.success())
    else {
        eprintln!(
            "SKIPPED: no venv with numpy (scripts/data_venv.sh failed: {})",
            String::from_utf8_lossy(&out.stderr).trim()
        );
        return;
    };
    let sandbox = Sandbox::probe(&SandboxOptions {
        interpreter: Some(PathBuf::from(python)),
        helper: Some(HELPER.into()),
        ..Default::default()
    });
    let env = sandbox.python_environment().unwrap();
    assert!(env.packages.iter().any(|p| p.name == "numpy"), "{env:?}");
    let o = sandbox
        .run(
            spec("import numpy as np\nprint(int(np.arange(10).sum()))\n"),
            None,
            CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(o.exit_code, Some(0), "{}", o.stderr.text());
    assert_eq!(o.stdout.text(), "45\n");
}

fn enforced() -> ImportPolicy {
    ImportPolicy {
        enforce: true,
        ..ImportPolicy::default()
    }
}

const MESSAGE: &str = "import of 'socket' is blocked by the import policy (config [imports])";

/// Tries the ways a program imports a module, and ways it might undo the guard.
const TRIES: &str = r#"
import sys, importlib, json
results = []
for how in ("import", "importlib", "dunder", "meta_path cleared"):
    try:
        if how == "import":
            import socket
        elif how == "importlib":
            importlib.import_module("socket")
        elif how == "dunder":
            __import__("socket")
        else:
            sys.meta_path[:] = [f for f in sys.meta_path if "Policy" not in type(f).__name__ and "Policy" not in getattr(f, "__name__", "")]
            import socket
        results.append((how, "imported"))
    except ImportError as e:
        results.append((how, str(e)))
print(json.dumps(results))
"#;

/// Ways around the guard a reviewer found (issue 33), and the next ones
/// after them: each must end refused, by the import policy.
const ATTACKS: &str = r#"
import sys, importlib, json
results = []

class Liar(str):
    # Says it is not what the guard looks for, to every question.
    def split(self, *a, **k): return ["os"]
    def startswith(self, *a, **k): return False
    def __eq__(self, other): return False
    def __hash__(self): return str.__hash__(self)

def liar(name):
    __import__(Liar(name))

def meta_path_emptied():
    sys.meta_path[:] = [f for f in sys.meta_path if "Policy" not in type(f).__name__ and "Policy" not in getattr(f, "__name__", "")]
    importlib.import_module("shutil")

def by_hand():
    import importlib.util, os
    path = os.path.join(os.path.dirname(os.__file__), "shutil.py")
    spec = importlib.util.spec_from_file_location("not_shutil", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

def globals_shadowed():
    # The guard was installed in these globals: its names must not be ours.
    g = sys.modules["__main__"].__dict__
    g["isinstance"] = lambda *a: False
    g["ImportError"] = KeyError
    try:
        import subprocess
    finally:
        del g["isinstance"], g["ImportError"]

def finder_emptied():
    # Every list of the finder's closures emptied: the hook keeps its own.
    def empty(f, depth):
        for cell in getattr(f, "__closure__", None) or ():
            value = cell.cell_contents
            if isinstance(value, tuple):
                cell.cell_contents = ()
            elif callable(value) and depth < 4:
                empty(value, depth + 1)
    empty(sys.meta_path[0].find_spec, 0)
    import socket

def gc_reached():
    import gc
    gc.get_objects()

# The finder emptied first: every attempt after it meets the hook alone.
for how, attempt in [
    ("finder emptied", finder_emptied),
    ("liar subprocess", lambda: liar("subprocess")),
    ("liar socket", lambda: liar("socket")),
    ("liar shutil", lambda: liar("shutil")),
    ("meta_path emptied", meta_path_emptied),
    ("a spec by hand", by_hand),
    ("globals shadowed", globals_shadowed),
    ("gc reached", gc_reached),
]:
    try:
        attempt()
        results.append((how, "imported"))
    except BaseException as e:
        results.append((how, "%s: %s" % (type(e).__name__, e)))
print(json.dumps(results))
"#;

fn assert_attacks_refused(stdout: &str) {
    let results: Vec<(String, String)> = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(results.len(), 8, "{stdout}");
    for (how, said) in results {
        assert!(
            said.contains("blocked by the import policy (config [imports])")
                || said.contains("refused while the import policy is enforced"),
            "{how}: {said}"
        );
    }
}

fn assert_all_refused(stdout: &str) {
    let results: Vec<(String, String)> = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(results.len(), 4);
    for (how, said) in results {
        assert_eq!(said, MESSAGE, "{how}");
    }
}

async fn refused_in(sandbox: &Sandbox) {
    let o = sandbox
        .run(spec(TRIES), None, CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(o.exit_code, Some(0), "{}", o.stderr.text());
    assert_all_refused(&o.stdout.text());
    let o = sandbox
        .run(spec(ATTACKS), None, CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(o.exit_code, Some(0), "{}", o.stderr.text());
    assert_attacks_refused(&o.stdout.text());
    // The error as the program sees it, uncaught.
    let o = sandbox
        .run(
            spec("import json\nimport socket\n"),
            None,
            CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(o.exit_code, Some(1));
    let err = o.stderr.text();
    assert!(err.contains(&format!("ImportError: {MESSAGE}")), "{err}");
    assert!(err.contains("main.py\", line 2"), "{err}");
    // Its C half goes with it.
    let o = sandbox
        .run(spec("import _socket\n"), None, CancellationToken::new())
        .await
        .unwrap();
    let err = o.stderr.text();
    assert!(
        err.contains("import of '_socket' is blocked by the import policy (config [imports])"),
        "{err}"
    );
    // Allowed modules and a program's own arguments and __main__ still work.
    let mut s =
        spec("import sys, json, math\nprint(__name__, sys.argv[1:], json.dumps(math.pi > 3))\n");
    s.args = vec!["x".into()];
    let o = sandbox
        .run(s, None, CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(
        o.stdout.text(),
        "__main__ ['x'] true\n",
        "{}",
        o.stderr.text()
    );
}

#[tokio::test]
async fn an_enforced_policy_refuses_a_blocked_import_in_the_full_sandbox() {
    let sandbox =
        Sandbox::probe(&codeloop_testkit::sandbox_options(HELPER)).with_import_policy(enforced());
    refused_in(&sandbox).await;
}

#[tokio::test]
async fn an_enforced_policy_refuses_a_blocked_import_under_bubblewrap() {
    let sandbox = Sandbox::probe(&SandboxOptions {
        native_namespaces: false,
        import_policy: enforced(),
        helper: Some(HELPER.into()),
        ..Default::default()
    });
    if !sandbox.active_layers().contains(&"namespaces".to_string()) {
        eprintln!("SKIPPED: no bubblewrap with namespaces on this machine");
        return;
    }
    refused_in(&sandbox).await;
}

#[tokio::test]
async fn an_enforced_policy_refuses_a_blocked_import_in_the_reduced_sandbox() {
    let sandbox = Sandbox::probe(&SandboxOptions {
        allow_reduced: true,
        without: vec![codeloop_sandbox::Layer::Namespaces],
        interpreter: Some("/usr/bin/python3".into()).filter(|p: &PathBuf| p.exists()),
        import_policy: enforced(),
        helper: Some(HELPER.into()),
        ..Default::default()
    });
    assert!(!sandbox.active_layers().contains(&"namespaces".to_string()));
    refused_in(&sandbox).await;
}

#[tokio::test]
async fn an_enforced_policy_refuses_a_blocked_import_in_a_fork_servers_jobs() {
    let sandbox =
        Sandbox::probe(&codeloop_testkit::sandbox_options(HELPER)).with_import_policy(enforced());
    let mut server = sandbox.fork_server(Limits::default()).await.unwrap();
    for _ in 0..2 {
        let o = server.run(&spec(TRIES)).await.unwrap();
        assert_eq!(o.exit_code, Some(0), "{}", o.stderr.text());
        assert_all_refused(&o.stdout.text());
        let o = server.run(&spec(ATTACKS)).await.unwrap();
        assert_eq!(o.exit_code, Some(0), "{}", o.stderr.text());
        assert_attacks_refused(&o.stdout.text());
    }
    let o = server
        .run(&spec("import math\nprint(math.factorial(5))\n"))
        .await
        .unwrap();
    assert_eq!(o.stdout.text(), "120\n");
}

/// Every module of the interpreter's standard library but `builtins`: what
/// a policy could block that codeloop's own harness imports.
fn whole_standard_library() -> Vec<String> {
    let real = Sandbox::probe(&codeloop_testkit::sandbox_options(HELPER)).interpreter;
    let out = Command::new(real)
        .args([
            "-c",
            "import sys; print('\\n'.join(sorted(sys.stdlib_module_names)))",
        ])
        .output()
        .unwrap();
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter(|m| *m != "builtins")
        .map(str::to_string)
        .collect()
}

#[tokio::test]
async fn an_enforced_policy_holds_for_the_tested_code_and_never_for_codeloops_harness() {
    use codeloop_sandbox::harness::{self, ModuleSource, TestReport};
    let policy = ImportPolicy {
        block: whole_standard_library(),
        allow: Vec::new(),
        enforce: true,
    };
    let sandbox =
        Sandbox::probe(&codeloop_testkit::sandbox_options(HELPER)).with_import_policy(policy);
    let code = "def f(x):\n    y = x * 2\n    if x > 3:\n        y = y + 1\n    return y\n";
    let tests = "def test_ok():\n    assert f(1) == 2\n\ndef test_wrong():\n    assert f(5) == 10\n\ndef test_crash():\n    f(None)\n\ndef test_import():\n    import os\n";
    let module = ModuleSource {
        name: "f".into(),
        code: code.into(),
        ..ModuleSource::default()
    };
    let tested = harness::test_run(
        &[module],
        "f",
        &[(harness::tests_file_name("f"), tests.into())],
        spec("").limits,
    );
    let o = sandbox
        .run(tested, None, CancellationToken::new())
        .await
        .unwrap();
    let report = TestReport::from_outcome(&o).unwrap();
    assert_eq!(report.harness_error, None, "{}", o.stderr.text());
    assert_eq!((report.passed, report.failed), (1, 3), "{report:?}");
    let error = |name: &str| {
        report
            .tests
            .iter()
            .find(|t| t.name == name)
            .and_then(|t| t.error.clone())
            .unwrap()
    };
    // The harness still explains a wrong value, with the values that led to it.
    let wrong = error("test_wrong");
    assert_eq!(
        (wrong.expected.as_deref(), wrong.actual.as_deref()),
        (Some("10"), Some("11"))
    );
    assert!(!wrong.values.is_empty() && !wrong.executed_lines.is_empty());
    assert_eq!(error("test_crash").error_type, "TypeError");
    // And the tested code is refused what the policy blocks.
    let refused = error("test_import");
    assert_eq!(
        refused.message,
        "import of 'os' is blocked by the import policy (config [imports])"
    );
    // A program started by the bootstrap is refused it too, the bootstrap never.
    let o = sandbox
        .run(
            spec("print(1 + 1)\nimport os\n"),
            None,
            CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(o.stdout.text(), "2\n", "{}", o.stderr.text());
    assert!(
        o.stderr.text().contains("import of 'os' is blocked"),
        "{}",
        o.stderr.text()
    );
}

#[tokio::test]
async fn an_advisory_policy_lets_the_import_through() {
    let sandbox = Sandbox::probe(&codeloop_testkit::sandbox_options(HELPER));
    assert!(!sandbox.import_policy().enforce);
    let o = sandbox
        .run(
            spec("import socket\nprint('ok')\n"),
            None,
            CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(o.stdout.text(), "ok\n", "{}", o.stderr.text());
}

#[tokio::test]
async fn the_static_check_names_a_blocked_import_as_a_note_or_a_failure() {
    use codeloop_sandbox::check::{self, CheckInput};
    let input = CheckInput {
        file: "f.py".into(),
        code: "import socket\nfrom subprocess import run\n\ndef f():\n    return 1\n".into(),
        defines: vec!["f".into()],
        foreign: Default::default(),
        mend: false,
    };
    let sandbox = Sandbox::probe(&codeloop_testkit::sandbox_options(HELPER));
    for (policy, kind) in [(ImportPolicy::default(), "risky"), (enforced(), "blocked")] {
        let o = sandbox
            .run(
                check::check_run_with(std::slice::from_ref(&input), &policy),
                None,
                CancellationToken::new(),
            )
            .await
            .unwrap();
        let findings = check::parse_findings(&o).unwrap();
        let named: Vec<_> = findings.iter().filter(|f| f.kind == kind).collect();
        assert_eq!(named.len(), 2, "{findings:?}");
        assert!(named[0].message.contains("'socket'") || named[0].message.contains("socket"));
        assert_eq!(named[0].line, Some(1));
        assert_eq!(
            named.iter().any(|f| f.is_blocking()),
            policy.enforce,
            "{findings:?}"
        );
    }
}

const PNG_WRITER: &str = r#"
import struct, zlib
def png(w, h, rgb):
    raw = b"".join(b"\x00" + bytes(rgb) * w for _ in range(h))
    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xffffffff)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")
open("chart.png", "wb").write(png(3, 2, (255, 0, 0)))
open("notes.txt", "w").write("not a picture")
print("drawn")
"#;

async fn images_come_back_from(sandbox: &Sandbox) {
    let mut s = spec(PNG_WRITER);
    s.collect_images = true;
    let o = sandbox
        .run(s, None, CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(o.exit_code, Some(0), "{}", o.stderr.text());
    assert_eq!(
        o.images.len(),
        1,
        "{:?}",
        o.images.iter().map(|i| &i.0).collect::<Vec<_>>()
    );
    assert_eq!(o.images[0].0, "chart.png");
    assert!(o.images[0].1.starts_with(b"\x89PNG"));
    // An image attached as an input is not the program's, unless it changed it.
    let attached = codeloop_testkit::workspace().join("tests/fixtures/inputs/pic.png");
    let mut s = spec(PNG_WRITER);
    s.collect_images = true;
    s.inputs = vec![attached.clone()];
    let o = sandbox
        .run(s, None, CancellationToken::new())
        .await
        .unwrap();
    let names: Vec<&str> = o.images.iter().map(|i| i.0.as_str()).collect();
    assert_eq!(names, ["chart.png"], "{}", o.stderr.text());
    let mut s = spec(&PNG_WRITER.replace("chart.png", "pic.png"));
    s.collect_images = true;
    s.inputs = vec![attached];
    let o = sandbox
        .run(s, None, CancellationToken::new())
        .await
        .unwrap();
    let names: Vec<&str> = o.images.iter().map(|i| i.0.as_str()).collect();
    assert_eq!(names, ["pic.png"], "{}", o.stderr.text());
    // Not asked for: none.
    let o = sandbox
        .run(spec(PNG_WRITER), None, CancellationToken::new())
        .await
        .unwrap();
    assert!(o.images.is_empty());
}

#[tokio::test]
async fn a_picture_the_program_writes_comes_back_in_the_full_sandbox() {
    images_come_back_from(&Sandbox::probe(&codeloop_testkit::sandbox_options(HELPER))).await;
}

#[tokio::test]
async fn a_picture_the_program_writes_comes_back_in_the_reduced_sandbox() {
    let sandbox = Sandbox::probe(&SandboxOptions {
        allow_reduced: true,
        without: vec![codeloop_sandbox::Layer::Namespaces],
        interpreter: Some("/usr/bin/python3".into()).filter(|p: &PathBuf| p.exists()),
        helper: Some(HELPER.into()),
        ..Default::default()
    });
    images_come_back_from(&sandbox).await;
}
