//! `codeloop resume` end to end: the real binary, SIGKILLed mid-session while
//! it waits for a model reply from an OpenAI-compatible server on loopback,
//! then resumed on the model its tape names. The server counts the requests:
//! the resumed session makes exactly the calls it still needed.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use codeloop::session::{Event, ModelRequestEvent, State, read_tape};

use codeloop_testkit::prompt_server;
use prompt_server::PromptServer;

const PLAN: &str = "```json\n{\"functions\": [{\"name\": \"clamp\", \"purpose\": \"Limit x to the range lo..hi\", \"inputs\": \"x: int, lo: int, hi: int\", \"output\": \"int\", \"depends_on\": []}]}\n```";
const TESTS: &str = "```python\ndef test_inside():\n    assert clamp(5, 0, 10) == 5\n\ndef test_above():\n    assert clamp(15, 0, 10) == 10\n```";
const BUGGY: &str =
    "```python\ndef clamp(x, lo, hi):\n    if x < lo:\n        return lo\n    return x\n```";
const FIXED: &str = "The upper bound was never applied.\n```python\ndef clamp(x, lo, hi):\n    return max(lo, min(x, hi))\n```";

fn reply_for(prompt: &str) -> &'static str {
    if prompt.contains("failed its tests") {
        FIXED
    } else if prompt.contains("Write this function") {
        BUGGY
    } else if prompt.contains("Write tests for this function") {
        TESTS
    } else {
        PLAN
    }
}

fn codeloop(home: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_codeloop"));
    c.env("CODELOOP_DATA_DIR", home.join("data"))
        .env("CODELOOP_CACHE_DIR", home.join("cache"))
        .env("CODELOOP_CONFIG", home.join("none.toml"))
        .env("OPENAI_API_KEY", "sk-loopback")
        .env("NO_COLOR", "1");
    c
}

fn the_session(home: &Path) -> PathBuf {
    let sessions: Vec<PathBuf> = std::fs::read_dir(home.join("data/sessions"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(sessions.len(), 1, "{sessions:?}");
    sessions[0].clone()
}

fn tags(records: &[codeloop::session::Record]) -> Vec<String> {
    records
        .iter()
        .filter_map(|r| match &r.event {
            Event::ModelRequest(ModelRequestEvent { tag, .. }) => Some(tag.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn a_session_killed_while_waiting_for_the_model_resumes_with_exactly_the_calls_it_still_needs() {
    let server = PromptServer::start(reply_for);
    let base_url = server.base_url.clone();
    // The repair request is never answered: the run is killed waiting for it.
    let held = server.hold(|prompt| reply_for(prompt) == FIXED);
    let home = tempfile::tempdir().unwrap();
    let mut child = codeloop(home.path())
        .args(["run", "Clamp an integer into a range", "--no-cache"])
        .args(["--base-url", &base_url])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Wait for the repair request; the run must not end before it comes.
    loop {
        if held.try_recv().is_ok() {
            break;
        }
        if let Some(status) = child.try_wait().unwrap() {
            panic!("the run ended ({status}) before it asked for the repair");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    assert_eq!(server.posts().len(), 4, "plan, tests, code, repair");

    let session = the_session(home.path());
    let killed = read_tape(&session.join("tape.jsonl")).unwrap().records;
    let state = State::from_records(&killed);
    assert!(state.finished.is_none(), "killed before its end");
    assert_eq!(
        tags(&killed),
        ["plan", "tests/clamp", "code/clamp/1", "repair/clamp/2"]
    );

    // Resumed on the model its tape names (no model flag given).
    server.release();
    let out = codeloop(home.path())
        .arg("resume")
        .arg(&session)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("resumed after record"), "{stderr}");
    assert!(stderr.contains("loopback-coder"), "{stderr}");
    assert!(stderr.contains("run     clamp #2: passed"), "{stderr}");
    assert!(
        !stderr.contains("run     clamp #1"),
        "iteration 1 ran once: {stderr}"
    );
    assert!(stderr.contains("result: PASSED"), "{stderr}");
    // Exactly one more call: the repair that had no reply.
    assert_eq!(server.posts().len(), 5);

    // One tape, one history: the killed part, then the resumed segment.
    let records = read_tape(&session.join("tape.jsonl")).unwrap().records;
    assert_eq!(&records[..killed.len()], &killed[..]);
    assert_eq!(records[killed.len()].event.kind(), "resumed");
    let state = State::from_records(&records);
    assert_eq!(
        tags(&records),
        [
            "plan",
            "tests/clamp",
            "code/clamp/1",
            "repair/clamp/2",
            "repair/clamp/2"
        ]
    );
    let runs: Vec<(Option<String>, u32)> = state
        .runs_in_order()
        .map(|(_, r)| (r.node.clone(), r.iteration))
        .collect();
    assert_eq!(
        runs,
        [
            (Some("clamp".into()), 1),
            (Some("clamp".into()), 2),
            (None, 0)
        ]
    );
    assert!(state.finished.as_ref().unwrap().passed);

    // Finished and passed: nothing to continue, and the tape is left alone.
    let again = codeloop(home.path())
        .arg("resume")
        .arg(session.join("tape.jsonl"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert_eq!(again.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("nothing to continue"), "{stderr}");
    assert_eq!(
        read_tape(&session.join("tape.jsonl")).unwrap().records,
        records
    );
    assert_eq!(server.posts().len(), 5);
}

#[test]
fn resume_at_a_record_forks_a_new_session_with_a_hint_and_leaves_the_parent_as_it_was() {
    let home = tempfile::tempdir().unwrap();
    let first = codeloop(home.path())
        .args(["run", "--demo", "roman", "--pace", "0", "--no-cache"])
        .output()
        .unwrap();
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let parent = the_session(home.path());
    let parent_records = read_tape(&parent.join("tape.jsonl")).unwrap().records;
    // Fork where roman_to_int's first iteration had failed.
    let at = codeloop::engine::rewind_point(&parent_records, "roman_to_int").unwrap();
    // A function the session does not have is refused before anything starts.
    let wrong = codeloop(home.path())
        .arg("resume")
        .arg(&parent)
        .args(["--at", &at.to_string(), "--hint", "nope=anything"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&wrong.stderr);
    assert_eq!(wrong.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("no function `nope`"), "{stderr}");

    let fork = codeloop(home.path())
        .arg("resume")
        .arg(&parent)
        .args(["--at", &at.to_string(), "--pace", "0"])
        .args([
            "--hint",
            "roman_to_int=subtract a smaller numeral before a larger one",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&fork.stderr);
    assert!(fork.status.success(), "{stderr}");
    assert!(stderr.contains("forked from session"), "{stderr}");
    let sessions: Vec<PathBuf> = std::fs::read_dir(home.path().join("data/sessions"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| *p != parent)
        .collect();
    assert_eq!(sessions.len(), 1);
    let records = read_tape(&sessions[0].join("tape.jsonl")).unwrap().records;
    let state = State::from_records(&records);
    let lineage = state.parent.as_ref().unwrap();
    assert_eq!(lineage.at_seq, at);
    assert_eq!(
        Some(lineage.session_id.as_str()),
        parent.file_name().and_then(|n| n.to_str())
    );
    assert_eq!(
        state.nodes["roman_to_int"].hints,
        ["subtract a smaller numeral before a larger one"]
    );
    assert!(state.finished.as_ref().unwrap().passed);
    // The parent is untouched.
    assert_eq!(
        read_tape(&parent.join("tape.jsonl")).unwrap().records,
        parent_records
    );
}

/// A session that finished and failed with every failing function at its
/// limit, resumed with no more iterations: nothing would change, so nothing
/// runs; the message says why and what to do instead (fork, or more
/// iterations), the exit code is 2, and the tape is left alone. With more
/// iterations (the default after a give-up at the limit) it goes on.
#[test]
fn resume_of_a_session_with_nothing_left_to_do_says_why_and_what_to_do() {
    let home = tempfile::tempdir().unwrap();
    let first = codeloop(home.path())
        .args(["run", "--demo", "roman", "--pace", "0", "--no-cache"])
        .args(["--max-iterations", "1"])
        .output()
        .unwrap();
    assert_eq!(
        first.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let session = the_session(home.path());
    let id = session.file_name().unwrap().to_string_lossy().into_owned();
    let before = read_tape(&session.join("tape.jsonl")).unwrap().records;

    let refused = codeloop(home.path())
        .args(["resume", &id, "--max-iterations", "0"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{stderr}");
    for said in [
        "finished and failed",
        "every failing function is at the iteration limit (1)",
        "nothing to continue",
        &format!("codeloop resume {id} --at SEQ"),
        "press F",
    ] {
        assert!(stderr.contains(said), "{said:?} missing from: {stderr}");
    }
    assert_eq!(
        read_tape(&session.join("tape.jsonl")).unwrap().records,
        before
    );

    // The default gives a function that gave up at the limit as many again:
    // the repair is asked (the demo needs a third to pass, so it fails at 2).
    let again = codeloop(home.path())
        .args(["resume", &id])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert_eq!(again.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("limit:   2 iterations a function"),
        "{stderr}"
    );
    assert!(stderr.contains("roman_to_int #2"), "{stderr}");
}

#[test]
fn every_command_taking_a_session_says_an_id_names_one() {
    for command in ["resume", "open", "export", "replay"] {
        let out = Command::new(env!("CARGO_BIN_EXE_codeloop"))
            .args([command, "--help"])
            .output()
            .unwrap();
        let help = String::from_utf8_lossy(&out.stdout);
        assert!(
            help.contains("an id, a unique prefix of one, `last`"),
            "{command}:\n{help}"
        );
    }
}

/// The session folder at `from` as it is handed over: copied to `to`.
fn hand_over(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    std::fs::copy(from.join("tape.jsonl"), to.join("tape.jsonl")).unwrap();
}

/// The headers of every request `server` has seen that carry `key`.
fn keyed(server: &PromptServer, key: &str) -> Vec<String> {
    server
        .exchanges()
        .into_iter()
        .flat_map(|e| e.headers)
        .filter(|h| h.contains(key))
        .collect()
}

/// A session folder handed over names the server its author ran it on
/// (their own, on this machine). Resuming it, forking it, or naming only
/// another model on it sends that server nothing the reader has: no
/// request at all, so neither their API key nor a prompt; the refusal names
/// the server and how to choose it. Named with --base-url it is the
/// reader's choice: used, with their key, and remembered, so the next
/// resume of a tape naming it goes on there unasked.
#[test]
fn a_handed_over_tape_sends_the_readers_key_to_no_server_it_names() {
    let server = PromptServer::start(reply_for);
    let url = server.base_url.clone();
    let author = tempfile::tempdir().unwrap();
    let made = codeloop(author.path())
        .env_remove("OPENAI_API_KEY")
        .args(["run", "Clamp an integer into a range", "--no-cache"])
        .args(["--base-url", &url])
        .output()
        .unwrap();
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let session = the_session(author.path());
    let before = server.exchanges().len();

    let reader = tempfile::tempdir().unwrap();
    let handed = reader.path().join("handed");
    hand_over(&session, &handed);
    let key = "sk-reader-secret-4711";
    let reader_runs = |args: &[&str]| {
        codeloop(reader.path())
            .env("OPENAI_API_KEY", key)
            .arg("resume")
            .arg(&handed)
            .args(args)
            .output()
            .unwrap()
    };
    for args in [&["--at", "1"][..], &[], &["--model", "loopback-coder"]] {
        let out = reader_runs(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        for said in [
            &format!("the model server at {url}, which its tape names"),
            &format!("--base-url {url}"),
        ] {
            assert!(stderr.contains(said.as_str()), "{said:?} not in: {stderr}");
        }
        assert_eq!(server.exchanges().len(), before, "{args:?}: asked");
        assert!(keyed(&server, key).is_empty());
    }
    let forks = std::fs::read_dir(reader.path().join("data/sessions"))
        .map(|d| d.count())
        .unwrap_or(0);
    assert_eq!(forks, 0, "no fork made");

    // Named: the reader's choice, their key with it.
    let out = reader_runs(&["--at", "1", "--base-url", &url]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        !keyed(&server, key).is_empty(),
        "the key goes where it was sent"
    );
    let named = server.exchanges().len();
    // And remembered: the same server a tape names is the reader's now.
    let out = reader_runs(&["--at", "1"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(server.exchanges().len() > named);
}

/// The same as an ordinary user: a tape root handed over names root's
/// server; the user's resume sends it nothing of theirs.
#[test]
fn as_an_ordinary_user_a_handed_over_tape_sends_no_key_to_the_server_it_names() {
    use codeloop_testkit::ordinary_user::{USER, ordinary_user};
    let Some((_turn, _python, dir, bin)) =
        ordinary_user("resume-key", Path::new(env!("CARGO_BIN_EXE_codeloop")))
    else {
        return;
    };
    let server = PromptServer::start(reply_for);
    let url = server.base_url.clone();
    let author = tempfile::tempdir().unwrap();
    let made = codeloop(author.path())
        .args(["run", "Clamp an integer into a range", "--no-cache"])
        .args(["--base-url", &url])
        .output()
        .unwrap();
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let session = the_session(author.path());
    let before = server.exchanges().len();
    let home = dir.path().join("home");
    let handed = home.join("handed");
    hand_over(&session, &handed);
    Command::new("chown")
        .args(["-R", USER])
        .arg(&home)
        .status()
        .unwrap();
    let key = "sk-user-secret-0815";
    let out = Command::new("runuser")
        .args(["-u", USER, "--", "env"])
        .arg(format!("CODELOOP_DATA_DIR={}", home.join("data").display()))
        .arg(format!(
            "CODELOOP_CACHE_DIR={}",
            home.join("cache").display()
        ))
        .arg(format!(
            "CODELOOP_CONFIG={}",
            home.join("none.toml").display()
        ))
        .arg(format!("OPENAI_API_KEY={key}"))
        .arg(&bin)
        .args(["resume", handed.to_str().unwrap(), "--at", "1"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(&format!("--base-url {url}")), "{stderr}");
    assert_eq!(server.exchanges().len(), before, "asked");
    assert!(keyed(&server, key).is_empty());
}
