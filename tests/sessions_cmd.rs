//! `codeloop sessions` and how every command names a session: the real binary
//! over real sessions recorded by running the bundled demos.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

mod sessions_support;

use std::io::Write;

use codeloop::session::index::{self, IndexError, SessionResult, SessionSummary};
use codeloop::session::{State, read_tape};
use sessions_support::{codeloop, codeloop_in, copy_session, demos, record, stderr, stdout};

fn listed(data_dir: &std::path::Path) -> Vec<SessionSummary> {
    let out = codeloop(data_dir, &["sessions", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn the_list_is_newest_first_with_what_each_session_came_to() {
    let rec = demos("sessions_cmd");
    let list = listed(&rec.data_dir);
    let ids: Vec<&str> = list.iter().map(|s| s.id.as_str()).collect();
    let mut expected: Vec<&str> = rec.sessions.iter().map(|s| s.id.as_str()).collect();
    expected.reverse();
    assert_eq!(ids, expected, "newest first");
    for (summary, session) in list.iter().rev().zip(&rec.sessions) {
        // Each summary says what folding its whole tape says.
        let state =
            State::from_records(&read_tape(&session.dir.join("tape.jsonl")).unwrap().records);
        let finished = state.finished.as_ref().expect("the demo finished");
        assert_eq!(summary.task, state.task);
        assert_eq!(summary.model, format!("demo:{}", session.demo));
        assert_eq!(summary.iterations, finished.iterations);
        assert_eq!(summary.tokens, finished.usage.total());
        assert!(summary.tokens > 0);
        assert_eq!(summary.parent, None);
        assert_eq!(summary.dir, session.dir);
        let expected = if session.exit_code == 0 {
            SessionResult::Passed
        } else {
            SessionResult::Failed
        };
        assert_eq!(summary.result, expected, "{}", session.demo);
    }
    // The one roman run allowed a single iteration fails; the others pass.
    assert_eq!(list[0].result, SessionResult::Failed);
    assert_eq!(list[1].result, SessionResult::Passed);
    assert!(list[1].iterations >= 1, "roman is repaired");

    let out = codeloop(&rec.data_dir, &["sessions"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let table = stdout(&out);
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 1 + rec.sessions.len(), "{table}");
    for h in [
        "ID",
        "STARTED (UTC)",
        "TASK",
        "MODEL",
        "RESULT",
        "ITER",
        "TOKENS",
        "PARENT",
    ] {
        assert!(lines[0].contains(h), "{}", lines[0]);
    }
    for (line, summary) in lines[1..].iter().zip(&list) {
        assert!(line.starts_with(&summary.id), "{line}");
        assert!(line.contains(summary.result.label()), "{line}");
        assert!(line.contains(&summary.tokens.to_string()), "{line}");
        assert!(line.contains(&summary.started_at[..10]), "{line}");
        // COLUMNS=100: the task is cut so the line fits.
        assert!(
            unicode_width::UnicodeWidthStr::width(*line) <= 100,
            "{line}"
        );
    }
    assert!(lines[1].contains("Convert in"), "{}", lines[1]);
    assert!(lines[1].contains('…'), "a long task is cut: {}", lines[1]);
}

/// A tape with a damaged line is listed from the rest, and the listing
/// says what it skipped (from the cache too).
#[test]
fn the_list_says_what_it_skipped_of_a_damaged_tape() {
    let rec = demos("sessions_cmd");
    let data = tempfile::tempdir().unwrap();
    let dir = copy_session(&rec.by_demo("wordfreq").dir, data.path());
    let tape = dir.join("tape.jsonl");
    let text = std::fs::read_to_string(&tape).unwrap();
    let damaged: Vec<&str> = text
        .lines()
        .enumerate()
        .map(|(i, l)| if i == 3 { "{damaged" } else { l })
        .collect();
    std::fs::write(&tape, damaged.join("\n") + "\n").unwrap();
    for _ in 0..2 {
        let out = codeloop(data.path(), &["sessions"]);
        assert!(out.status.success(), "{}", stderr(&out));
        assert!(
            stderr(&out).contains("1 unreadable line skipped (line 4: "),
            "{}",
            stderr(&out)
        );
    }
}

#[test]
fn a_summary_is_kept_beside_the_tape_and_refolded_when_the_tape_changes() {
    let rec = demos("sessions_cmd");
    let data = tempfile::tempdir().unwrap();
    let dir = copy_session(&rec.by_demo("wordfreq").dir, data.path());
    let first = listed(data.path());
    assert_eq!(first.len(), 1);
    assert_eq!(first[0].result, SessionResult::Passed);
    let cache = dir.join(index::SUMMARY_FILE);
    assert!(cache.is_file(), "summary.json is written beside the tape");

    // While the tape is unchanged the cache is what is read.
    let text = std::fs::read_to_string(&cache).unwrap();
    assert!(text.contains(&first[0].task));
    std::fs::write(&cache, text.replace(&first[0].task, "READ FROM THE CACHE")).unwrap();
    assert_eq!(listed(data.path())[0].task, "READ FROM THE CACHE");

    // A tape that grows is folded again. A cancel after the session passed
    // changes nothing (issue 21: the workbench once wrote one on quitting).
    let tape = dir.join("tape.jsonl");
    let append = |line: String| {
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&tape)
            .unwrap();
        writeln!(f, "{line}").unwrap();
    };
    let next = read_tape(&tape).unwrap().records.len();
    append(format!(
        r#"{{"seq":{next},"t_ms":999999,"type":"steer","command":{{"cmd":"cancel"}}}}"#
    ));
    let after = listed(data.path());
    assert_eq!(after[0].task, first[0].task);
    assert_eq!(after[0].result, SessionResult::Passed);
    assert_eq!(after[0].events, first[0].events + 1);
    // Work after the end (a re-run) that the tape does not finish.
    append(format!(
        r#"{{"seq":{},"t_ms":999999,"type":"node_status","node":"top_words","status":"running"}}"#,
        next + 1
    ));
    let after = listed(data.path());
    assert_eq!(after[0].result, SessionResult::DidNotFinish);
    assert_eq!(after[0].events, first[0].events + 2);

    // A tape cut short (killed mid-session) did not finish.
    let cut = data.path().join("sessions").join("20000101-000000-0000");
    std::fs::create_dir_all(&cut).unwrap();
    let head: String = std::fs::read_to_string(&tape)
        .unwrap()
        .lines()
        .take(20)
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(cut.join("tape.jsonl"), head).unwrap();
    // And a folder whose tape is damaged is skipped with the reason.
    let bad = data.path().join("sessions").join("20000101-000000-0001");
    std::fs::create_dir_all(&bad).unwrap();
    std::fs::write(bad.join("tape.jsonl"), "not json\n{}\n").unwrap();
    let out = codeloop(data.path(), &["sessions", "--json"]);
    assert!(out.status.success());
    let list: Vec<SessionSummary> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(list.len(), 2);
    assert_eq!(list[1].result, SessionResult::DidNotFinish);
    assert_eq!(list[1].events, 20);
    assert!(
        stderr(&out).contains("skipped") && stderr(&out).contains("20000101-000000-0001"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_session_is_named_by_id_unique_prefix_last_folder_or_tape() {
    let rec = demos("sessions_cmd");
    let sessions_dir = rec.sessions_dir();
    let ids: Vec<&str> = rec.sessions.iter().map(|s| s.id.as_str()).collect();
    for s in &rec.sessions {
        let tape = s.dir.join("tape.jsonl");
        // The shortest prefix no other id shares.
        let prefix = (1..=s.id.len())
            .map(|n| &s.id[..n])
            .find(|p| ids.iter().filter(|id| id.starts_with(p)).count() == 1)
            .unwrap();
        for arg in [
            s.id.clone(),
            prefix.to_string(),
            s.dir.display().to_string(),
            tape.display().to_string(),
        ] {
            assert_eq!(
                index::resolve(&sessions_dir, &arg).unwrap(),
                Some(tape.clone()),
                "{arg}"
            );
        }
    }
    let newest = rec.sessions.last().unwrap();
    assert_eq!(
        index::resolve(&sessions_dir, "last").unwrap(),
        Some(newest.dir.join("tape.jsonl"))
    );
    assert_eq!(
        index::resolve(&sessions_dir, "nothing-like-it").unwrap(),
        None
    );

    // Through the binary: `export last` and `export PREFIX` export those sessions.
    let work = tempfile::tempdir().unwrap();
    let out = codeloop_in(&rec.data_dir, work.path(), &["export", "last"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let path = stdout(&out).trim().to_string();
    assert_eq!(path, format!("codeloop-{}.md", newest.id));
    let md = std::fs::read_to_string(work.path().join(&path)).unwrap();
    assert!(md.contains(&format!("Session: {}", newest.id)), "{md}");
    let wordfreq = rec.by_demo("wordfreq");
    let out = codeloop_in(
        &rec.data_dir,
        work.path(),
        &[
            "export",
            &wordfreq.id[..wordfreq.id.len() - 1],
            "-o",
            "w.md",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let md = std::fs::read_to_string(work.path().join("w.md")).unwrap();
    assert!(md.contains("Count the words"), "{md}");
}

#[test]
fn an_ambiguous_prefix_lists_the_candidates_and_a_missing_one_says_what_exists() {
    let rec = demos("sessions_cmd");
    let common = &rec.sessions[0].id[..4];
    let out = codeloop(&rec.data_dir, &["export", common]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains(&format!(
            "`{common}` matches {} sessions",
            rec.sessions.len()
        )),
        "{err}"
    );
    for s in &rec.sessions {
        assert!(err.contains(&s.id), "{err}");
    }
    match index::resolve(&rec.sessions_dir(), common) {
        Err(IndexError::Ambiguous { candidates, .. }) => {
            assert_eq!(candidates.len(), rec.sessions.len())
        }
        other => panic!("{other:?}"),
    }

    for cmd in ["export", "open", "replay"] {
        let out = codeloop(&rec.data_dir, &[cmd, "zzz-no-such-session"]);
        assert_eq!(out.status.code(), Some(2), "{cmd}");
        let err = stderr(&out);
        assert!(
            err.contains("`zzz-no-such-session` is neither"),
            "{cmd}: {err}"
        );
        assert!(err.contains("codeloop sessions"), "{cmd}: {err}");
        assert!(
            err.contains(&rec.sessions.last().unwrap().id),
            "{cmd}: {err}"
        );
        assert!(err.contains("roman"), "the demos are named too: {err}");
    }
}

#[test]
fn no_sessions_yet_is_an_empty_list_and_no_last() {
    let data = tempfile::tempdir().unwrap();
    let out = codeloop(data.path(), &["sessions", "--json"]);
    assert!(out.status.success());
    assert_eq!(stdout(&out).trim(), "[]");
    let out = codeloop(data.path(), &["sessions"]);
    assert!(out.status.success());
    assert_eq!(stdout(&out), "");
    assert!(stderr(&out).contains("no sessions yet"), "{}", stderr(&out));
    let out = codeloop(data.path(), &["export", "last"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("there is no last session"),
        "{}",
        stderr(&out)
    );
    // An empty folder given by path is not a session.
    let empty = data.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let out = codeloop(data.path(), &["export", empty.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("without a tape.jsonl"),
        "{}",
        stderr(&out)
    );
    // One recorded session is `last`.
    let rec = record(data.path(), &[("wordfreq", &[])]);
    assert_eq!(
        index::resolve(&rec.sessions_dir(), "last").unwrap(),
        Some(rec.sessions[0].dir.join("tape.jsonl"))
    );
}
