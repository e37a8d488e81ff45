//! `codeloop exec` and `codeloop doctor` as a user runs them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

use std::path::Path;
use std::process::{Command, Output};
use std::sync::Mutex;

use codeloop_testkit::copy_binary;

/// The doctor tests run one at a time: one of them takes a layer away on
/// purpose, and its escaping probes must not land while the other doctor
/// is checking that nothing escapes.
static DOCTOR: Mutex<()> = Mutex::new(());

fn codeloop(args: &[&str], dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_codeloop"))
        .args(args)
        .current_dir(dir)
        .env("CODELOOP_CONFIG", dir.join("no-config.toml"))
        .output()
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn exec_passes_arguments_streams_output_and_exits_with_the_programs_code() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("hello.py"),
        "import sys\nprint('args', sys.argv[1:])\nsys.exit(3)\n",
    )
    .unwrap();
    let out = codeloop(&["exec", "hello.py", "--", "x", "--y"], dir.path());
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(text(&out.stdout), "args ['x', '--y']\n");
    // How it ended and what it used, as every run of a session says.
    let err = text(&out.stderr);
    let line = err
        .lines()
        .find(|l| l.starts_with("codeloop: exit code 3 after "))
        .unwrap_or_else(|| panic!("{err}"));
    assert!(
        line.contains(" s · CPU ") && line.contains(" · peak "),
        "{line}"
    );
}

#[test]
fn exec_explains_a_failure_at_its_line() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("mean.py"),
        "def mean(xs):\n    total = sum(xs)\n    return total / len(xs)\n\nprint(mean([]))\n",
    )
    .unwrap();
    let out = codeloop(&["exec", "mean.py"], dir.path());
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.contains("Traceback (most recent call last)"), "{err}");
    let explained = err.split("codeloop: the failure is at ").nth(1).unwrap();
    assert_eq!(
        explained,
        "mean.py:3:12 in mean()\nZeroDivisionError: division by zero\n  1 | def mean(xs):\n  2 |     total = sum(xs)\n> 3 |     return total / len(xs)\n  4 | \n  5 | print(mean([]))\n"
    );
}

#[test]
fn exec_pins_a_syntax_error_and_names_a_limit_in_plain_words() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("bad.py"), "x = 1\ny = (2 +\n").unwrap();
    let out = codeloop(&["exec", "bad.py"], dir.path());
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.contains("the failure is at bad.py:2"), "{err}");
    assert!(err.contains("SyntaxError"), "{err}");

    std::fs::write(dir.path().join("spin.py"), "while True:\n    pass\n").unwrap();
    let out = codeloop(&["exec", "--timeout", "1", "spin.py"], dir.path());
    assert_eq!(out.status.code(), Some(137));
    let err = text(&out.stderr);
    assert!(
        err.contains("the program was stopped by the wall-clock timeout of 1 s"),
        "{err}"
    );
    // Busy, not waiting: it says how much CPU time it used.
    assert!(err.contains("timeout of 1 s (CPU time "), "{err}");
}

#[test]
fn exec_of_a_missing_file_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let out = codeloop(&["exec", "nowhere.py"], dir.path());
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("cannot read nowhere.py"));
}

#[test]
fn doctor_reports_every_layer_and_every_probe_contained() {
    let _one_at_a_time = DOCTOR.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let out = codeloop(&["doctor"], dir.path());
    let report = text(&out.stdout);
    for layer in [
        "hygiene",
        "rlimits",
        "uid",
        "landlock",
        "seccomp",
        "namespaces",
    ] {
        assert!(
            report.contains(&format!("active    {layer}")),
            "{layer} not active:\n{report}"
        );
    }
    for probe in [
        "fork bomb",
        "memory bomb",
        "CPU spin",
        "200 MB stdout flood",
        "disk fill",
        "write outside the working directory",
        "read a file in $HOME",
        "TCP connect to a loopback listener",
        "read the parent's environment",
    ] {
        assert!(
            report
                .lines()
                .any(|l| l.contains("contained") && l.contains(probe)),
            "{probe} not contained:\n{report}"
        );
    }
    // The memory bomb meets the limit runs get ([run] memory_mb, 1024 MiB).
    assert!(
        report
            .lines()
            .any(|l| l.contains("memory bomb") && l.contains("memory limit of 1024 MiB")),
        "{report}"
    );
    for harmless in ["threads", "multiprocessing", "sqlite", "temp files"] {
        assert!(
            report
                .lines()
                .any(|l| l.trim_start().starts_with("works") && l.contains(harmless)),
            "{harmless} broken:\n{report}"
        );
    }
    assert!(
        !report.contains("NOT CONTAINED") && !report.contains("BROKEN"),
        "{report}"
    );
    assert_eq!(out.status.code(), Some(0), "{report}");
}

#[test]
fn doctor_without_a_layer_says_which_probes_then_escape() {
    let _one_at_a_time = DOCTOR.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let out = codeloop(
        &["doctor", "--without", "seccomp", "--without", "landlock"],
        dir.path(),
    );
    let report = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{report}");
    assert!(
        report.contains("INACTIVE  landlock    turned off"),
        "{report}"
    );
    assert!(
        report
            .lines()
            .any(|l| l.contains("NOT CONTAINED") && l.contains("namespace and ptrace escape")),
        "{report}"
    );
    assert!(
        report.lines().any(|l| l.contains("NOT CONTAINED")
            && l.contains("lasting state: xattr, SysV IPC, memfd")
            && l.contains("made an extended attribute, a message queue")),
        "{report}"
    );
    let out = codeloop(&["doctor", "--without", "everything"], dir.path());
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("only landlock, seccomp and namespaces"));
}

#[test]
fn a_codeloop_installed_under_tmp_still_reaches_its_sandbox_helper() {
    // The sandbox mounts a private /tmp; the helper binary (codeloop itself)
    // must stay visible when it lives there, as in a checkout under /tmp.
    let home = tempfile::Builder::new()
        .prefix("codeloop-bin")
        .tempdir_in("/tmp")
        .unwrap();
    let bin = home.path().join("codeloop");
    copy_binary::copy_binary(std::path::Path::new(env!("CARGO_BIN_EXE_codeloop")), &bin);
    std::fs::write(home.path().join("hi.py"), "print('hi from /tmp')\n").unwrap();
    let out = Command::new(&bin)
        .args(["exec", "hi.py"])
        .current_dir(home.path())
        .env("CODELOOP_CONFIG", home.path().join("none.toml"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "hi from /tmp\n");
}

#[test]
fn a_renamed_codeloop_binary_is_still_its_own_sandbox_helper() {
    // A copy under another name (a packaged `codeloop-0.1`, a renamed
    // download) must not lose Landlock and seccomp for want of a helper.
    let dir = tempfile::tempdir().unwrap();
    let renamed = dir.path().join("cl-renamed");
    copy_binary::copy_binary(
        std::path::Path::new(env!("CARGO_BIN_EXE_codeloop")),
        &renamed,
    );
    let o = Command::new(&renamed)
        .args(["doctor", "--layers-only", "--sandbox", "reduced"])
        .args(["--without", "namespaces"])
        .current_dir(dir.path())
        .env("CODELOOP_CONFIG", dir.path().join("no-config.toml"))
        .env_remove("CODELOOP_SANDBOX_HELPER")
        .output()
        .unwrap();
    let report = text(&o.stdout) + &text(&o.stderr);
    for layer in ["landlock", "seccomp"] {
        let line = report
            .lines()
            .find(|l| l.split_whitespace().nth(1) == Some(layer))
            .unwrap_or_else(|| panic!("no {layer} line:\n{report}"));
        assert!(line.trim_start().starts_with("active"), "{report}");
    }
}

/// 6 MB of invalid UTF-8 comes out as replacement characters, three bytes
/// each: the 16 MiB output cap counts what comes out, not what went in.
#[test]
fn the_output_cap_counts_bytes_after_utf8_replacement() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("bad.py"),
        "import sys\nfor _ in range(6):\n    sys.stdout.buffer.write(b'\\xff' * 1_000_000)\n    sys.stdout.buffer.flush()\n",
    )
    .unwrap();
    let out = codeloop(&["exec", "bad.py"], dir.path());
    let err = text(&out.stderr);
    assert!(
        out.stdout.len() <= 16 << 20,
        "{} bytes came out\n{err}",
        out.stdout.len()
    );
    assert!(err.contains("output limit of 16 MiB"), "{err}");
}

/// A program's OSC 52 (clipboard), title, CSI 6n (a query the terminal
/// answers as input) and DCS never reach the user's terminal, even cut
/// between writes; `--raw` passes them on as written.
#[test]
fn exec_strips_control_sequences_unless_raw() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("esc.py"),
        "import sys, time\nsys.stdout.write('a\\x1b]52;c;cm0gLXJmIH4K\\x07b\\x1b]0;pwned\\x1b')\nsys.stdout.flush()\ntime.sleep(0.2)\nsys.stdout.write('\\\\c\\x1b[6nd\\x1bPq#0\\x1b\\\\e\\tf\\n')\nsys.stderr.write('err\\x1b]52;c;eA==\\x07or\\n')\n",
    )
    .unwrap();
    let out = codeloop(&["exec", "esc.py"], dir.path());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "abcde\tf\n");
    assert!(
        text(&out.stderr).starts_with("error\n"),
        "{}",
        text(&out.stderr)
    );
    let raw = codeloop(&["exec", "--raw", "esc.py"], dir.path());
    assert!(
        text(&raw.stdout).contains("\x1b]52;c;cm0gLXJmIH4K\x07")
            && text(&raw.stdout).contains("\x1b[6n"),
        "{:?}",
        text(&raw.stdout)
    );
}
