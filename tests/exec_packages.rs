//! A person's own Python through the binary: `--python` chooses a venv for
//! `codeloop exec` and `doctor` names its packages, the README's import
//! policy lets a demo pass, a failure of codeloop's own harness is said as
//! such, and an ordinary user's venv is importable. (The sandbox's own
//! `crates/sandbox/tests/packages.rs` has the runs in every mode.)
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

use std::path::PathBuf;
use std::process::Command;

use codeloop_testkit::{ordinary_user, venv};

#[tokio::test]
async fn the_python_flag_chooses_the_venv_for_exec_and_doctor_names_its_packages() {
    let dir = venv::world_readable_tempdir();
    let python = venv::venv_with_tinypkg(dir.path());
    let script = dir.path().join("prog.py");
    std::fs::write(&script, "import tinypkg\nprint(tinypkg.hello())\n").unwrap();
    let exec = Command::new(env!("CARGO_BIN_EXE_codeloop"))
        .args(["--config", "/dev/null", "exec", "--python"])
        .arg(&python)
        .arg(&script)
        .env_remove("CODELOOP_PYTHON")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&exec.stdout);
    assert!(
        stdout.contains("hello from tinypkg"),
        "{stdout}\n{}",
        String::from_utf8_lossy(&exec.stderr)
    );
    let doctor = Command::new(env!("CARGO_BIN_EXE_codeloop"))
        .args(["--config", "/dev/null", "doctor", "--python"])
        .arg(&python)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&doctor.stdout);
    assert!(text.contains(&python.display().to_string()), "{text}");
    assert!(text.contains("tinypkg"), "{text}");
    // A path that is no interpreter is refused with what to do.
    let bad = Command::new(env!("CARGO_BIN_EXE_codeloop"))
        .args([
            "--config",
            "/dev/null",
            "exec",
            "--python",
            "/nonexistent/python",
        ])
        .arg(&script)
        .output()
        .unwrap();
    assert!(!bad.status.success());
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(err.contains("/nonexistent/python"), "{err}");
}

#[test]
fn the_readmes_import_policy_example_lets_a_demo_pass() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.toml");
    std::fs::write(
        &config,
        "[imports]\nblock = [\"os\"]\nallow = [\"os.path\"]\nenforce = true\n",
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_codeloop"))
        .args(["run", "--demo", "roman", "--pace", "0", "--no-cache"])
        .env("CODELOOP_CONFIG", &config)
        .env("CODELOOP_DATA_DIR", dir.path().join("data"))
        .output()
        .unwrap();
    let progress = String::from_utf8_lossy(&out.stderr);
    assert!(progress.contains("result: PASSED"), "{progress}");
    assert!(!progress.contains("is blocked"), "{progress}");
}

#[test]
fn a_failure_of_codeloops_own_harness_is_said_as_such_and_never_repaired() {
    // A venv whose start-up breaks what the harness uses (a `.pth` line
    // runs in every interpreter it starts): no code could mend that.
    let dir = venv::world_readable_tempdir();
    let python = venv::venv_with_tinypkg(dir.path());
    let out = Command::new(&python)
        .args(["-c", "import site; print(site.getsitepackages()[0])"])
        .output()
        .unwrap();
    let site = PathBuf::from(String::from_utf8(out.stdout).unwrap().trim());
    std::fs::write(
        site.join("broken.pth"),
        "import time; time.monotonic = None\n",
    )
    .unwrap();
    Command::new("chmod")
        .args(["-R", "a+rX"])
        .arg(dir.path())
        .status()
        .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_codeloop"))
        .args([
            "run",
            "--demo",
            "roman",
            "--pace",
            "0",
            "--no-cache",
            "--python",
        ])
        .arg(&python)
        .env("CODELOOP_CONFIG", dir.path().join("none.toml"))
        .env("CODELOOP_DATA_DIR", dir.path().join("data"))
        .output()
        .unwrap();
    let progress = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{progress}");
    assert!(
        progress.contains("HarnessError: codeloop's test harness failed (TypeError:"),
        "{progress}"
    );
    assert!(
        progress.contains("(its own error, not the code's), so no repair is asked for"),
        "{progress}"
    );
    assert!(!progress.contains("attempt "), "{progress}");
}

/// As an ordinary user: a venv of the system python, with its package,
/// through `codeloop exec --python` and `doctor --python`.
#[test]
fn an_ordinary_users_venv_is_importable_in_the_sandbox() {
    let Some((_turn, python, dir, bin)) =
        ordinary_user::ordinary_user("venv", std::path::Path::new(env!("CARGO_BIN_EXE_codeloop")))
    else {
        return;
    };
    let venv = dir.path().join("venv");
    assert!(
        Command::new(python)
            .args(["-m", "venv", "--without-pip"])
            .arg(&venv)
            .status()
            .unwrap()
            .success()
    );
    let out = Command::new(venv.join("bin/python"))
        .args(["-c", "import site; print(site.getsitepackages()[0])"])
        .output()
        .unwrap();
    let site = PathBuf::from(String::from_utf8(out.stdout).unwrap().trim());
    std::fs::create_dir_all(site.join("tinypkg")).unwrap();
    std::fs::write(
        site.join("tinypkg/__init__.py"),
        "def hello():\n    return 'hello from tinypkg'\n",
    )
    .unwrap();
    let script = dir.path().join("prog.py");
    std::fs::write(&script, "import tinypkg\nprint(tinypkg.hello())\n").unwrap();
    Command::new("chmod")
        .args(["-R", "a+rX"])
        .arg(dir.path())
        .status()
        .unwrap();
    let run = |args: &[&str]| {
        let o = Command::new("runuser")
            .args(["-u", ordinary_user::USER, "--"])
            .arg(&bin)
            .args(["--config", "/dev/null", "--python"])
            .arg(venv.join("bin/python"))
            .args(args)
            .current_dir(dir.path())
            .env("HOME", dir.path())
            .output()
            .unwrap();
        (
            String::from_utf8_lossy(&o.stdout).to_string(),
            String::from_utf8_lossy(&o.stderr).to_string(),
        )
    };
    let (report, _) = run(&["doctor", "--layers-only"]);
    assert!(
        report.contains("packages     1 third-party: tinypkg"),
        "{report}"
    );
    if !report.contains("mode         full") {
        println!("the user gets the reduced sandbox here: {report}");
        return;
    }
    let (stdout, stderr) = run(&["exec", script.to_str().unwrap()]);
    assert_eq!(stdout, "hello from tinypkg\n", "{stderr}");
}
