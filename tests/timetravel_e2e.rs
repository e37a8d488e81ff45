//! Time travel with the real binary in tmux (issue 11): F at an earlier
//! moment of an opened session forks it there and the workbench shows the
//! fork live; U in a live session rewinds its node onto a new branch, and
//! the branch left behind stays on disk and in the welcome screen's list
//! (which is read again when it shows). The tapes are checked afterwards.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use codeloop::session::{Event, ForkedEvent, NoticeEvent, Record, State, read_tape};
use codeloop_testkit::tmux_server;

struct Tmux {
    session: String,
    status: PathBuf,
}

impl Tmux {
    fn start(name: &str, dir: &Path, args: &[&str]) -> Option<Tmux> {
        let available = Command::new("tmux")
            .arg("-V")
            .output()
            .is_ok_and(|o| o.status.success());
        if !available {
            eprintln!("SKIPPED: tmux is not installed (scripts/test.sh installs it)");
            return None;
        }
        let session = format!("codeloop-tt-{name}-{}", std::process::id());
        let status = dir.join(format!("{session}.status"));
        let mut cmd = tmux_server::new_session(&session, (160, 48));
        cmd.args(["-c", &dir.to_string_lossy()]);
        for (k, v) in env(dir) {
            cmd.args(["-e", &format!("{k}={v}")]);
        }
        cmd.args(["-e", &format!("CODELOOP_E2E_STATUS={}", status.display())]);
        cmd.args([
            "sh",
            "-c",
            "\"$0\" \"$@\"; echo $? > \"$CODELOOP_E2E_STATUS\"; sleep 60",
            env!("CARGO_BIN_EXE_codeloop"),
        ])
        .args(args);
        assert!(cmd.status().expect("tmux runs").success());
        Some(Tmux { session, status })
    }

    fn keys(&self, keys: &[&str]) {
        for k in keys {
            Command::new("tmux")
                .args(["-L", &self.session, "send-keys", "-t", &self.session, k])
                .status()
                .expect("tmux runs");
            std::thread::sleep(Duration::from_millis(60));
        }
    }

    fn screen(&self) -> String {
        let out = Command::new("tmux")
            .args([
                "-L",
                &self.session,
                "capture-pane",
                "-p",
                "-t",
                &self.session,
            ])
            .output()
            .expect("tmux runs");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn wait_for(&self, text: &str, within: Duration) -> String {
        let start = Instant::now();
        loop {
            let s = self.screen();
            if s.contains(text) {
                return s;
            }
            assert!(
                start.elapsed() < within,
                "waited {within:?} for {text:?}; the screen shows:\n{s}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn quit(&self) {
        self.keys(&["q"]);
        let start = Instant::now();
        while !std::fs::read_to_string(&self.status).is_ok_and(|s| s.trim() == "0") {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "the workbench did not quit with status 0:\n{}",
                self.screen()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        tmux_server::stop(&self.session);
    }
}

fn env(dir: &Path) -> Vec<(&'static str, String)> {
    vec![
        ("CODELOOP_DATA_DIR", dir.join("data").display().to_string()),
        (
            "CODELOOP_CACHE_DIR",
            dir.join("cache").display().to_string(),
        ),
        (
            "CODELOOP_CONFIG",
            dir.join("none.toml").display().to_string(),
        ),
        ("CODELOOP_PROVIDER", "demo".into()),
    ]
}

fn codeloop(dir: &Path, args: &[&str]) -> std::process::Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_codeloop"));
    c.args(args).envs(env(dir)).env("NO_COLOR", "1");
    c.output().expect("codeloop runs")
}

/// `codeloop sessions --json`: (id, result, parent), newest first.
fn sessions(dir: &Path) -> Vec<(String, String, Option<String>)> {
    let out = codeloop(dir, &["sessions", "--json"]);
    assert!(out.status.success());
    let list: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    list.as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["id"].as_str().unwrap().to_string(),
                s["result"].as_str().unwrap().to_string(),
                s["parent"].as_str().map(str::to_string),
            )
        })
        .collect()
}

fn tape(dir: &Path, id: &str) -> Vec<Record> {
    read_tape(&dir.join("data/sessions").join(id).join("tape.jsonl"))
        .unwrap()
        .records
}

/// The fork's tape: the parent's records up to `at` (the first under the
/// fork's own id), then `Forked` naming the parent and the point.
fn assert_forked_from(fork: &[Record], parent: &[Record], parent_id: &str, at: u64) {
    let n = parent.iter().position(|r| r.seq == at).unwrap() + 1;
    assert_eq!(
        fork[1..n],
        parent[1..n],
        "the history up to #{at} is the parent's"
    );
    match &fork[n].event {
        Event::Forked(ForkedEvent {
            parent_id: p,
            at_seq,
            ..
        }) => assert_eq!((p.as_str(), *at_seq), (parent_id, at)),
        other => panic!("record {n} is {other:?}, not the fork's"),
    }
}

/// Press F (and y) until the fork starts: `codeloop open` chooses the model
/// and probes the sandbox in the background, and says so if asked too early.
fn fork_here(t: &Tmux) {
    for _ in 0..50 {
        t.keys(&["F"]);
        t.wait_for("Fork here?", Duration::from_secs(5));
        t.keys(&["y"]);
        let start = Instant::now();
        loop {
            let s = t.screen();
            if s.contains(" LIVE ") || s.contains(" ✓ PASSED ") {
                return;
            }
            if s.contains("press F again") {
                t.keys(&["Escape"]);
                break;
            }
            assert!(start.elapsed() < Duration::from_secs(10), "{s}");
            std::thread::sleep(Duration::from_millis(100));
        }
        std::thread::sleep(Duration::from_millis(300));
    }
    panic!("the fork never started:\n{}", t.screen());
}

#[test]
fn f_at_an_earlier_moment_forks_there_live_and_both_sessions_open() {
    let dir = tempfile::tempdir().unwrap();
    let first = codeloop(dir.path(), &["run", "--demo", "roman", "--pace", "0"]);
    assert!(first.status.success(), "{first:?}");
    let [(parent_id, _, None)] = &sessions(dir.path())[..] else {
        panic!("one session")
    };
    let parent = tape(dir.path(), parent_id);

    let Some(t) = Tmux::start("fork", dir.path(), &["open", parent_id]) else {
        return;
    };
    t.wait_for(" REVIEW ", Duration::from_secs(20));
    // To the first failure: roman_to_int's iteration 1, long before the end.
    t.keys(&["f"]);
    t.wait_for("✗ roman_to_int failed", Duration::from_secs(5));
    fork_here(&t);
    let s = t.wait_for(" ✓ PASSED ", Duration::from_secs(120));
    assert!(s.contains(&format!("fork of {parent_id} at #")), "{s}");
    assert!(s.contains("✓ roman_to_int passed"), "{s}");
    t.quit();

    let listed = sessions(dir.path());
    assert_eq!(listed.len(), 2, "{listed:?}");
    let (fork_id, result, Some(lineage)) = &listed[0] else {
        panic!("the newest is the fork: {listed:?}")
    };
    assert_eq!(result, "passed");
    let (named, at) = lineage.split_once('@').unwrap();
    assert_eq!(named, parent_id);
    let at: u64 = at.parse().unwrap();
    assert!(at < parent.last().unwrap().seq, "forked before the end");
    let fork = tape(dir.path(), fork_id);
    assert_forked_from(&fork, &parent, parent_id, at);
    // It diverges: its own segment, with the model it went on with said.
    assert!(fork.iter().any(|r| matches!(
        &r.event,
        Event::Notice(NoticeEvent { message, .. }) if message.contains("going on with")
    )));
    assert_ne!(fork.len(), parent.len() + 1);
    assert_eq!(
        tape(dir.path(), parent_id),
        parent,
        "the parent is as it was"
    );
    // Both open (and export) on their own.
    for id in [parent_id, fork_id] {
        let md = dir.path().join(format!("{id}.md"));
        let out = codeloop(
            dir.path(),
            &["export", id, "--format", "md", "-o", md.to_str().unwrap()],
        );
        assert!(out.status.success(), "{id}: {out:?}");
        assert!(
            std::fs::read_to_string(&md)
                .unwrap()
                .contains("roman_to_int")
        );
        assert!(
            State::from_records(&tape(dir.path(), id))
                .finished
                .is_some()
        );
    }
}

#[test]
fn u_rewinds_onto_a_new_branch_and_the_one_left_behind_stays_listed() {
    let dir = tempfile::tempdir().unwrap();
    let Some(t) = Tmux::start("rewind", dir.path(), &[]) else {
        return;
    };
    t.wait_for("READY", Duration::from_secs(20));
    t.keys(&["3"]);
    let s = t.wait_for(" ✓ PASSED ", Duration::from_secs(120));
    assert!(s.contains("✓ roman_to_int passed"), "{s}");
    // The rewind names the selected node; make it roman_to_int.
    let mut asked = String::new();
    for key in ["k", "j", "k"] {
        t.keys(&["u"]);
        asked = t.wait_for("Rewind?", Duration::from_secs(5));
        if asked.contains("Rewind `roman_to_int`") {
            break;
        }
        t.keys(&["n", key]);
    }
    assert!(asked.contains("Rewind `roman_to_int`"), "{asked}");
    let [(old_id, _, None)] = &sessions(dir.path())[..] else {
        panic!("one session")
    };
    t.keys(&["y"]);
    let s = t.wait_for(&format!("fork of {old_id} at #"), Duration::from_secs(20));
    assert!(!s.contains("Rewind?"), "{s}");
    t.wait_for(" ✓ PASSED ", Duration::from_secs(120));
    // Back to the welcome screen (asked first): both branches are listed.
    t.keys(&["n"]);
    t.wait_for("Leave this session", Duration::from_secs(5));
    t.keys(&["y"]);
    let s = t.wait_for("Recent sessions", Duration::from_secs(5));
    // The new branch under the session it came from.
    let fork_line = s
        .lines()
        .find(|l| l.contains("fork at #"))
        .unwrap_or_default();
    assert!(fork_line.contains("└ "), "{s}");
    t.quit();

    let listed = sessions(dir.path());
    assert_eq!(listed.len(), 2, "{listed:?}");
    let (new_id, result, Some(lineage)) = &listed[0] else {
        panic!("the newest is the new branch: {listed:?}")
    };
    assert_eq!(result, "passed");
    // The branch left behind had finished: it keeps its result.
    assert_eq!(listed[1], (old_id.clone(), "passed".to_string(), None));
    let (named, at) = lineage.split_once('@').unwrap();
    assert_eq!(named, old_id);
    let old = tape(dir.path(), old_id);
    let at: u64 = at.parse().unwrap();
    assert_eq!(
        at,
        codeloop::engine::rewind_point(&old, "roman_to_int").unwrap()
    );
    assert_forked_from(&tape(dir.path(), new_id), &old, old_id, at);
}

/// `codeloop open` of a session whose model cannot be had any more (its
/// replies file is gone): F forks on the session's tape as a scripted
/// model, which answers each call by its prompt, and the fork's tape says so.
#[test]
fn a_fork_whose_model_is_gone_goes_on_with_its_tape_as_the_script() {
    let dir = tempfile::tempdir().unwrap();
    let demo = Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/demos/roman");
    let replies = dir.path().join("replies.jsonl");
    std::fs::copy(demo.join("replies.jsonl"), &replies).unwrap();
    let task = std::fs::read_to_string(demo.join("task.txt")).unwrap();
    let first = codeloop(
        dir.path(),
        &["run", "--scripted", replies.to_str().unwrap(), task.trim()],
    );
    assert!(first.status.success(), "{first:?}");
    std::fs::remove_file(&replies).unwrap();
    let [(parent_id, _, None)] = &sessions(dir.path())[..] else {
        panic!("one session")
    };

    let Some(t) = Tmux::start("script", dir.path(), &["open", parent_id]) else {
        return;
    };
    t.wait_for(" REVIEW ", Duration::from_secs(20));
    t.keys(&["f"]);
    t.wait_for("✗ roman_to_int failed", Duration::from_secs(5));
    fork_here(&t);
    let s = t.wait_for(" ✓ PASSED ", Duration::from_secs(120));
    assert!(s.contains("✓ roman_to_int passed"), "{s}");
    t.quit();

    let listed = sessions(dir.path());
    let (fork_id, result, Some(_)) = &listed[0] else {
        panic!("the newest is the fork: {listed:?}")
    };
    assert_eq!(result, "passed");
    let said: Vec<String> = tape(dir.path(), fork_id)
        .into_iter()
        .filter_map(|r| match r.event {
            Event::Notice(NoticeEvent { message, .. }) => Some(message),
            _ => None,
        })
        .collect();
    assert!(
        said.iter().any(|m| m.contains("replies.jsonl")
            && m.contains("going on with its tape as a scripted model")),
        "{said:?}"
    );
}

#[test]
fn b_shows_the_lineage_where_the_person_is_and_enter_moves_between_branches() {
    let dir = tempfile::tempdir().unwrap();
    let first = codeloop(dir.path(), &["run", "--demo", "roman", "--pace", "0"]);
    assert!(first.status.success(), "{first:?}");
    let [(parent_id, _, None)] = &sessions(dir.path())[..] else {
        panic!("one session")
    };
    // A fork after roman_to_int's first failure was localized.
    let at = tape(dir.path(), parent_id)
        .iter()
        .find(|r| matches!(r.event, Event::Localized(_)))
        .unwrap()
        .seq;
    let fork = codeloop(
        dir.path(),
        &["resume", parent_id, "--at", &at.to_string(), "--pace", "0"],
    );
    assert!(fork.status.success(), "{fork:?}");
    let listed = sessions(dir.path());
    let (fork_id, _, Some(_)) = &listed[0] else {
        panic!("the newest is the fork: {listed:?}")
    };

    // The welcome's list: the fork under the session it came from.
    let Some(t) = Tmux::start("lineage", dir.path(), &[]) else {
        return;
    };
    let s = t.wait_for("Recent sessions", Duration::from_secs(20));
    assert!(
        s.contains("└ ✓ ") && s.contains(&format!("fork at #{at}")),
        "{s}"
    );
    // b on the listed fork: its lineage, the fork chosen.
    t.keys(&["Escape", "Down", "b"]);
    let s = t.wait_for("Lineage: 2 sessions", Duration::from_secs(10));
    assert!(
        s.contains(parent_id.as_str()) && s.contains(fork_id.as_str()),
        "{s}"
    );
    assert!(
        s.contains(&format!("forked from {parent_id} after record {at}")),
        "{s}"
    );
    // Enter on the parent: it opens; b there marks it on screen.
    t.keys(&["Up", "Enter"]);
    t.wait_for(" REVIEW ", Duration::from_secs(10));
    t.keys(&["b"]);
    let s = t.wait_for("(on screen)", Duration::from_secs(10));
    let marked = s.lines().find(|l| l.contains("(on screen)")).unwrap();
    assert!(marked.contains(parent_id.as_str()), "{s}");
    // Down and Enter: the fork, reviewed.
    t.keys(&["Down", "Enter"]);
    let s = t.wait_for(
        &format!("fork of {parent_id} at #{at}"),
        Duration::from_secs(10),
    );
    assert!(s.contains(" REVIEW "), "{s}");
    // q goes back to the list it all began from.
    t.keys(&["q"]);
    t.wait_for("Recent sessions", Duration::from_secs(10));
    t.quit();
}
