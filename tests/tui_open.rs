//! `codeloop open` of a long tape: read on a thread in batches, the first
//! frame from the first records ("loading N%"), the fold going on after it,
//! and the same session at the end as a tape read at once.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

use codeloop_testkit::tmux_server;
use codeloop_testkit::tui_support;

use codeloop::protocol::Stream;
use codeloop::session::{Event, OutputEvent, Record, RunStartedEvent, State, TapeError, read_tape};
use codeloop::tui::App;
use codeloop::tui::app::{Mode, Msg, Replay};
use codeloop::tui::loader::{self, BATCH, FIRST_BATCH, Loaded};
use crossterm::event::KeyCode;
use tui_support::*;

/// The scripted session with `extra` output records inside its first run,
/// numbered as a tape would number them.
fn long_records(extra: usize) -> Vec<Record> {
    let mut events = events();
    let run = events
        .iter()
        .position(|e| matches!(e, Event::RunStarted(_)))
        .unwrap();
    let run_id = match &events[run] {
        Event::RunStarted(RunStartedEvent { run_id, .. }) => *run_id,
        _ => unreachable!(),
    };
    let output = (0..extra).map(|i| {
        Event::Output(OutputEvent {
            run_id,
            stream: if i % 5 == 0 {
                Stream::Stderr
            } else {
                Stream::Stdout
            },
            text: format!("line {i} of a long run's output\n"),
        })
    });
    events.splice(run + 1..run + 1, output);
    events
        .into_iter()
        .enumerate()
        .map(|(i, event)| Record {
            seq: i as u64,
            t_ms: i as u64,
            event,
        })
        .collect()
}

fn tape_lines(records: &[Record]) -> Vec<String> {
    records
        .iter()
        .map(|r| serde_json::to_string(r).unwrap())
        .collect()
}

fn write(dir: &std::path::Path, lines: &[String]) -> std::path::PathBuf {
    let path = dir.join("tape.jsonl");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    path
}

/// Everything the reading thread sends, in order, applied to the app.
fn load_rest(app: &mut App, rest: &mut tokio::sync::mpsc::Receiver<Loaded>) -> usize {
    let mut batches = 0;
    while let Some(loaded) = rest.blocking_recv() {
        match loaded {
            Loaded::Records { records, progress } => {
                assert!(!records.is_empty() && records.len() <= BATCH);
                assert!(progress.read <= progress.total);
                app.load_records(records, progress);
                batches += 1;
            }
            Loaded::End(end) => {
                app.load_finished(end);
                break;
            }
        }
    }
    batches
}

#[test]
fn a_tape_opened_in_batches_folds_to_the_same_session_as_one_read_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let records = long_records(3 * BATCH);
    let path = write(dir.path(), &tape_lines(&records));

    let opening = loader::open(&path).unwrap();
    assert_eq!(opening.first, records[..FIRST_BATCH]);
    let (mut app, rest) = App::open(opening, info(), theme());
    let batches = load_rest(&mut app, &mut rest.expect("more to read"));
    assert!(batches >= 3, "{batches} batches");

    let whole = App::review(read_tape(&path).unwrap(), info(), theme());
    assert_eq!(app.records(), whole.records());
    assert_eq!(app.records(), records);
    assert_eq!(app.cursor(), records.len());
    assert_eq!(app.state(), whole.state());
    assert_eq!(app.state(), &State::from_records(&records));
    assert_eq!(app.info().loading, None);
    assert_eq!(app.info().unfinished, whole.info().unfinished);
    // The checkpoints were kept along the way: stepping back lands on the
    // state of that prefix.
    let mut app = app;
    for n in [records.len() - 1, 2 * BATCH + 7, FIRST_BATCH, 3] {
        app.set_cursor(n);
        assert_eq!(app.state(), &State::from_records(&records[..n]), "at {n}");
    }
}

#[test]
fn the_first_frame_shows_the_first_records_and_how_far_the_reading_got() {
    let dir = tempfile::tempdir().unwrap();
    // Without its last record (`finished`): a session that did not finish.
    let mut records = long_records(2 * BATCH);
    records.pop();
    let path = write(dir.path(), &tape_lines(&records));

    let opening = loader::open(&path).unwrap();
    let percent = opening.progress.percent();
    assert!(percent < 20, "{percent}%");
    let (mut app, rest) = App::open(opening, info(), theme());
    let first = screen(&mut app, 120, 30);
    assert!(
        first.contains(&format!(" REVIEW {FIRST_BATCH}/{FIRST_BATCH} ")),
        "{first}"
    );
    assert!(first.contains(&format!(" loading {percent}% ")), "{first}");
    // Whether it finished is not known before the end is read.
    assert!(!first.contains("did not finish"), "{first}");
    assert_eq!(app.state(), &State::from_records(&records[..FIRST_BATCH]));

    load_rest(&mut app, &mut rest.unwrap());
    let last = screen(&mut app, 120, 30);
    let total = records.len();
    assert!(
        last.contains(&format!(" REVIEW {total}/{total} ")),
        "{last}"
    );
    assert!(!last.contains("loading"), "{last}");
    assert!(last.contains("did not finish"), "{last}");
}

#[test]
fn stepping_back_while_it_loads_keeps_the_cursor_where_the_person_put_it() {
    let dir = tempfile::tempdir().unwrap();
    let records = long_records(2 * BATCH);
    let path = write(dir.path(), &tape_lines(&records));
    let opening = loader::open(&path).unwrap();
    let (mut app, rest) = App::open(opening, info(), theme());
    app.set_cursor(10);
    load_rest(&mut app, &mut rest.unwrap());
    assert_eq!(app.cursor(), 10);
    assert_eq!(app.records().len(), records.len());
    assert_eq!(app.state(), &State::from_records(&records[..10]));
}

#[test]
fn an_unreadable_line_in_a_later_batch_is_reported_once_the_tape_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let records = long_records(2 * BATCH);
    let mut lines = tape_lines(&records);
    let bad = FIRST_BATCH + BATCH + 100;
    lines[bad - 1] = "{\"seq\": 1, \"garbage".into();
    let path = write(dir.path(), &lines);

    let (mut app, rest) = App::open(loader::open(&path).unwrap(), info(), theme());
    assert_eq!(app.info().damage, None, "not known yet");
    load_rest(&mut app, &mut rest.unwrap());
    let mut kept = records.clone();
    kept.remove(bad - 1);
    assert_eq!(app.records(), kept);
    let damage = app.info().damage.clone().unwrap();
    assert!(
        damage.starts_with(&format!("1 unreadable line skipped (line {bad}: ")),
        "{damage}"
    );
    // The same words as a tape read at once.
    let whole = read_tape(&path).unwrap();
    assert_eq!(Some(damage), whole.damage_report());
    let s = screen(&mut app, 160, 40);
    assert!(s.contains("tape damage"), "{s}");
}

#[test]
fn a_tape_that_is_not_one_is_refused_before_the_screen_opens() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tape.jsonl");
    std::fs::write(&path, "not json\nnor this\n".repeat(2000)).unwrap();
    match loader::open(&path) {
        Err(TapeError::Corrupt { line: 1, .. }) => {}
        other => panic!("expected a corrupt-tape error, got {other:?}"),
    }
    // A newer format is refused on its first line, the rest unread.
    let mut lines = tape_lines(&long_records(2 * BATCH));
    let mut first: serde_json::Value = serde_json::from_str(&lines[0]).unwrap();
    first["version"] = 99.into();
    lines[0] = first.to_string();
    let path = write(dir.path(), &lines);
    match loader::open(&path) {
        Err(TapeError::NewerVersion { found: 99, .. }) => {}
        other => panic!("expected a newer-version error, got {other:?}"),
    }
}

#[test]
fn a_short_tape_is_read_whole_before_the_screen_opens() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_tape(dir.path());
    let opening = loader::open(&path).unwrap();
    assert!(opening.rest.is_none());
    let (mut app, rest) = App::open(opening, info(), theme());
    assert!(rest.is_none());
    assert_eq!(app.info().loading, None);
    assert_eq!(app.records(), records());
    assert!(!screen(&mut app, 120, 30).contains("loading"));
}

/// Tick a replay until its clock asks for no more (it waits or ended),
/// the time moving a minute a tick; returns the time reached.
fn play_out(app: &mut App, mut now: std::time::Instant) -> std::time::Instant {
    while app.replay_deadline(now).is_some() {
        now += std::time::Duration::from_secs(60);
        app.update(Msg::Tick(now));
    }
    now
}

fn playing(app: &App) -> bool {
    matches!(app.mode(), Mode::Replay(clock) if clock.playing)
}

#[test]
fn a_replay_starts_from_the_first_records_and_waits_at_the_end_of_what_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let records = long_records(2 * BATCH);
    let path = write(dir.path(), &tape_lines(&records));
    let opening = loader::open(&path).unwrap();
    let percent = opening.progress.percent();
    let clock = Replay::new(64.0, true, false);
    let (mut app, rest) = App::open_replay(opening, info(), theme(), clock);
    let mut rest = rest.expect("more to read");
    let first = screen(&mut app, 120, 30);
    assert!(
        first.contains(&format!(" REPLAY ▶ ×64 0/{FIRST_BATCH} ")),
        "{first}"
    );
    assert!(first.contains(&format!(" loading {percent}% ")), "{first}");

    // Played to the end of what is read: it waits there, still playing.
    let now = play_out(&mut app, std::time::Instant::now());
    assert_eq!(app.cursor(), FIRST_BATCH);
    assert!(playing(&app), "waiting for the rest, not finished");
    let waiting = screen(&mut app, 120, 30);
    assert!(waiting.contains(" loading "), "{waiting}");
    assert!(!waiting.contains("replay finished"), "{waiting}");

    // A batch arrives: the cursor stays where the clock put it, and the
    // clock goes on from there, one gap after the batch came.
    let Some(Loaded::Records {
        records: batch,
        progress,
    }) = rest.blocking_recv()
    else {
        panic!("a batch");
    };
    let more = batch.len();
    app.load_records(batch, progress);
    assert_eq!(
        app.cursor(),
        FIRST_BATCH,
        "the clock moves it, not the reading"
    );
    assert!(app.replay_deadline(now).is_some_and(|due| due > now));
    let now = play_out(&mut app, now);
    assert_eq!(app.cursor(), FIRST_BATCH + more);
    assert!(playing(&app));
    assert_eq!(
        app.state(),
        &State::from_records(&records[..FIRST_BATCH + more])
    );

    // The rest, read while it waits; the end of the reading ends the replay.
    let mut now = now;
    while let Some(loaded) = rest.blocking_recv() {
        match loaded {
            Loaded::Records { records, progress } => {
                app.load_records(records, progress);
                now = play_out(&mut app, now);
                assert!(app.at_end() && playing(&app));
            }
            Loaded::End(end) => {
                app.load_finished(end);
                break;
            }
        }
    }
    assert_eq!(app.cursor(), records.len());
    assert!(!playing(&app));
    let last = screen(&mut app, 120, 30);
    let total = records.len();
    assert!(
        last.contains(&format!(" REPLAY ⏸ ×64 {total}/{total} ")),
        "{last}"
    );
    assert!(last.contains("replay finished"), "{last}");
    assert!(!last.contains("loading"), "{last}");
}

#[test]
fn space_at_the_end_of_what_is_read_plays_on_instead_of_starting_over() {
    let dir = tempfile::tempdir().unwrap();
    let records = long_records(2 * BATCH);
    let path = write(dir.path(), &tape_lines(&records));
    let clock = Replay::new(1.0, false, false);
    let (mut app, _rest) = App::open_replay(loader::open(&path).unwrap(), info(), theme(), clock);
    app.update(key(KeyCode::End));
    assert_eq!(app.cursor(), FIRST_BATCH);
    app.update(key(KeyCode::Char(' ')));
    assert!(playing(&app));
    assert_eq!(app.cursor(), FIRST_BATCH, "not back to the start");
}

/// The real binary in tmux: a long tape with a damaged line opens, is read
/// to its end in the background, says what it could not read, and steps.
#[test]
fn the_real_binary_opens_a_long_damaged_tape_and_reads_it_to_the_end() {
    use std::process::Command;
    use std::time::{Duration, Instant};
    if !Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        eprintln!("SKIPPED: tmux is not installed (scripts/test.sh installs it)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let records = long_records(3 * BATCH);
    let mut lines = tape_lines(&records);
    let bad = 2 * BATCH;
    lines[bad - 1] = "{\"seq\": 1, \"garbage".into();
    let path = write(dir.path(), &lines);
    let total = records.len() - 1;

    let session = format!("codeloop-open-{}", std::process::id());
    let tmux = |args: &[&str]| {
        let out = Command::new("tmux")
            .args(["-L", &session])
            .args(args)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let started = tmux_server::new_session(&session, (160, 48))
        .args(["-e", &format!("CODELOOP_DATA_DIR={}", dir.path().display())])
        .args([env!("CARGO_BIN_EXE_codeloop"), "open"])
        .arg(&path)
        .status()
        .unwrap();
    assert!(started.success());
    // The session ends with the test, however it ends.
    struct Kill(String);
    impl Drop for Kill {
        fn drop(&mut self) {
            tmux_server::stop(&self.0);
        }
    }
    let _kill = Kill(session.clone());
    let wait_for = |text: &str| {
        let start = Instant::now();
        loop {
            let s = tmux(&["capture-pane", "-p", "-t", &session]);
            if s.contains(text) {
                return s;
            }
            if start.elapsed() > Duration::from_secs(60) {
                panic!("waited for {text:?}; the screen shows:\n{s}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    let s = wait_for(&format!(" REVIEW {total}/{total} "));
    let s = if s.contains("tape damage") {
        s
    } else {
        wait_for("tape damage")
    };
    assert!(s.contains(&format!("line {bad}")), "{s}");
    assert!(!s.contains("loading"), "{s}");
    tmux(&["send-keys", "-t", &session, "Left"]);
    wait_for(&format!(" REVIEW {}/{total} ", total - 1));
}
