//! Ctrl-C, SIGTERM and SIGHUP during `codeloop run` and `codeloop bench`:
//! the session records the cancel and its `finished` event, codeloop says
//! where the tape is, exits with 128 + the signal, and no process of the run
//! (bubblewrap, the helper, Python) is left behind. The real binary, on a run
//! that would otherwise hang for 30 s.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use codeloop::session::{Command as Steer, Event, FinishedEvent, SteerEvent, read_tape};

/// Every process below `root`, from /proc: (pid, command name).
fn descendants(root: u32) -> Vec<(u32, String)> {
    let mut parent_of: HashMap<u32, (u32, String)> = HashMap::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // "pid (comm) state ppid ...": comm may hold spaces and parentheses.
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            continue;
        };
        let comm = stat[open + 1..close].to_string();
        let ppid = stat[close + 2..]
            .split(' ')
            .nth(1)
            .and_then(|p| p.parse().ok())
            .unwrap_or(0);
        parent_of.insert(pid, (ppid, comm));
    }
    let mut out = Vec::new();
    let mut frontier = vec![root];
    while let Some(p) = frontier.pop() {
        for (pid, (ppid, comm)) in &parent_of {
            if *ppid == p {
                out.push((*pid, comm.clone()));
                frontier.push(*pid);
            }
        }
    }
    out
}

/// A process that exists and is not a zombie waiting to be reaped.
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rfind(')')
            .and_then(|i| stat[i + 2..].chars().next())
            .is_some_and(|state| state != 'Z'),
        Err(_) => false,
    }
}

fn wait_for(what: &str, mut ready: impl FnMut() -> bool) {
    // A guard against a hang, not a timing assertion.
    let deadline = Instant::now() + Duration::from_secs(60);
    while !ready() {
        assert!(Instant::now() < deadline, "gave up waiting: {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The one tape under `dir` (searched two levels deep).
fn find_tape(dir: &Path) -> Option<PathBuf> {
    let mut stack = vec![(dir.to_path_buf(), 0)];
    while let Some((d, depth)) = stack.pop() {
        for e in std::fs::read_dir(&d).ok()?.flatten() {
            let p = e.path();
            if p.file_name().is_some_and(|n| n == "tape.jsonl") {
                return Some(p);
            }
            if p.is_dir() && depth < 4 {
                stack.push((p, depth + 1));
            }
        }
    }
    None
}

/// Start `command`, wait until its run's Python is up, send `signal`, and
/// check what it left: the tape, the message, the exit code, no process.
fn stop_mid_run(mut command: Command, data: &Path, signal: i32) -> (String, PathBuf) {
    let child: Child = command
        .env("CODELOOP_DATA_DIR", data)
        .env("CODELOOP_CONFIG", data.join("none.toml"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut tape = None;
    wait_for("the run to start", || {
        tape = find_tape(data);
        tape.as_ref().is_some_and(|t| {
            std::fs::read_to_string(t).is_ok_and(|s| s.contains("\"type\":\"run_started\""))
        })
    });
    let tape = tape.unwrap();
    let mut procs = Vec::new();
    wait_for("the run's Python to start", || {
        procs = descendants(child.id());
        procs.iter().any(|(_, comm)| comm.starts_with("python"))
    });
    let pid = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
    let sig = rustix::process::Signal::from_named_raw(signal).unwrap();
    rustix::process::kill_process(pid, sig).unwrap();
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert_eq!(
        output.status.code(),
        Some(128 + signal),
        "{stdout}\n{stderr}"
    );
    // The sandbox's inner processes die by the kernel's hand (parent-death
    // signal, the pid namespace's end) a moment after codeloop reaped the
    // outer one: give them that moment, then none may be left.
    let deadline = Instant::now() + Duration::from_secs(10);
    let left = loop {
        let left: Vec<&(u32, String)> = procs.iter().filter(|(pid, _)| alive(*pid)).collect();
        if left.is_empty() || Instant::now() > deadline {
            break left;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(left.is_empty(), "left running: {left:?} (of {procs:?})");

    let records = read_tape(&tape).unwrap().records;
    assert!(
        records.iter().any(|r| matches!(
            &r.event,
            Event::Steer(SteerEvent {
                command: Steer::Cancel
            })
        )),
        "no cancel on the tape"
    );
    match &records.last().unwrap().event {
        Event::Finished(FinishedEvent { result }) => {
            assert!(!result.passed);
            assert!(
                result.summary.starts_with("cancelled"),
                "{}",
                result.summary
            );
        }
        other => panic!("the tape ends with {other:?}, not finished"),
    }
    (format!("{stdout}\n{stderr}"), tape)
}

const SIGNALS: [i32; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

#[test]
fn a_signal_during_run_cancels_records_the_end_and_leaves_no_process() {
    for signal in SIGNALS {
        let dir = tempfile::tempdir().unwrap();
        let mut command = Command::new(env!("CARGO_BIN_EXE_codeloop"));
        // The collatz demo's first code never returns.
        command.args(["run", "--demo", "collatz", "--pace", "0", "--timeout", "30"]);
        let (output, tape) = stop_mid_run(command, dir.path(), signal);
        assert!(
            output.contains(&format!("tape: {}", tape.display())),
            "{output}"
        );
        assert!(output.contains("cancelling the session"), "{output}");
        // How to go on from where it stopped (issue 21).
        let id = tape
            .parent()
            .unwrap()
            .file_name()
            .unwrap()
            .to_string_lossy();
        assert!(
            output.contains(&format!("go on: codeloop resume {id}")),
            "{output}"
        );
        // The word the badge and the report give, not "FAILED".
        assert!(output.contains("result: CANCELLED: "), "{output}");
        assert!(!output.contains("FAILED"), "{output}");
    }
}

#[test]
fn a_signal_during_bench_cancels_every_session_and_scores_none_of_them() {
    for signal in SIGNALS {
        let dir = tempfile::tempdir().unwrap();
        let problems = dir.path().join("problems.jsonl");
        let replies = dir.path().join("replies.jsonl");
        let results = dir.path().join("results.jsonl");
        std::fs::write(
            &problems,
            "{\"task_id\": \"T/0\", \"prompt\": \"def spin(x):\\n\", \"test\": \"def check(candidate):\\n    assert candidate(1) == 1\\n\", \"entry_point\": \"spin\"}\n",
        )
        .unwrap();
        std::fs::write(
            &replies,
            "{\"tag\": \"code/spin/1\", \"text\": \"```python\\ndef spin(x):\\n    while True:\\n        pass\\n```\"}\n",
        )
        .unwrap();
        let mut command = Command::new(env!("CARGO_BIN_EXE_codeloop"));
        command
            .arg("bench")
            .arg(&problems)
            .args(["--feedback", "hidden"])
            .arg("--scripted")
            .arg(&replies)
            .args(["--timeout", "30", "--out"])
            .arg(&results);
        let (output, _) = stop_mid_run(command, &dir.path().join("data"), signal);
        assert!(
            output.contains("pass@1: no problem was measured"),
            "{output}"
        );
        assert!(
            output.contains("cancelled: 1 problem not measured"),
            "{output}"
        );
        assert!(output.contains("sessions (tapes): "), "{output}");
        let line: serde_json::Value =
            serde_json::from_str(std::fs::read_to_string(&results).unwrap().trim()).unwrap();
        assert_eq!(line["status"], "cancelled");
    }
}
