//! What the person types is never lost to one keystroke, and what a run
//! printed can be read whole (issue 13: items 2, 7 and 11).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

use codeloop_testkit::tui_support;

use codeloop::tui::app::{Confirm, DemoEntry, Focus, Mode, StartRequest};
use codeloop::tui::{Action, App, Msg};
use crossterm::event::{Event as TermEvent, KeyCode, KeyEvent, KeyModifiers};
use tui_support::*;

fn welcome_with_demos() -> App {
    let mut i = info();
    i.demos = (1..=4)
        .map(|n| DemoEntry {
            name: format!("demo-{n}"),
            title: format!("demo {n}"),
            ..Default::default()
        })
        .collect();
    App::live(i, theme())
}

#[test]
fn a_demo_key_after_typing_a_task_asks_before_the_draft_is_dropped() {
    let mut app = welcome_with_demos();
    app.update(ch('i'));
    assert_eq!(app.focus(), Focus::Task);
    press(&mut app, "count words".chars().map(ch));
    app.update(key(KeyCode::Esc));
    assert_eq!(app.focus(), Focus::Welcome);
    // `2` would start a demo: it asks, and no keeps the draft.
    assert!(app.update(ch('2')).is_empty());
    assert_eq!(app.confirm(), Some(Confirm::DiscardDraft));
    let s = screen(&mut app, 80, 24);
    assert!(
        s.contains("y / n"),
        "the whole question shows at 80x24:\n{s}"
    );
    assert!(app.update(ch('n')).is_empty());
    assert_eq!(app.confirm(), None);
    assert_eq!(app.panes().task.text(), "count words");
    assert!(matches!(app.mode(), Mode::Live(l) if !l.started));
    // Yes starts the demo.
    app.update(ch('2'));
    let actions = app.update(ch('y'));
    assert_eq!(
        actions,
        vec![Action::Start(StartRequest::Demo {
            name: "demo-2".into(),
            step_mode: false,
        })]
    );
}

#[test]
fn without_a_draft_a_demo_starts_at_once() {
    let mut app = welcome_with_demos();
    let actions = app.update(ch('3'));
    assert!(
        matches!(&actions[..], [Action::Start(StartRequest::Demo { name, .. })] if name == "demo-3")
    );
    assert_eq!(app.confirm(), None);
}

#[test]
fn opening_resuming_or_forking_a_listed_session_asks_before_the_draft_is_dropped() {
    use codeloop::session::index::{SessionResult, SessionSummary};
    let mut i = info();
    i.sessions = vec![SessionSummary {
        id: "20261123-010000-a".into(),
        started_at: "2026-11-23T01:00:00Z".into(),
        task: "sum lines".into(),
        model: "demo:roman".into(),
        provider: "demo".into(),
        // Cancelled: a passed one has nothing to resume (R says so instead).
        result: SessionResult::Cancelled,
        iterations: 1,
        tokens: 960,
        parent: None,
        events: 30,
        dir: "/sessions/20261123-010000-a".into(),
    }];
    for (k, what) in [
        (KeyCode::Enter, "open"),
        (KeyCode::Char('r'), "replay"),
        (KeyCode::Char('R'), "resume"),
        (KeyCode::Char('F'), "fork"),
    ] {
        let mut app = App::live(i.clone(), theme());
        app.task_mut().insert_str("my own task");
        app.set_focus(Focus::Welcome);
        assert!(app.update(key(k)).is_empty(), "{what} asks first");
        assert_eq!(app.confirm(), Some(Confirm::DiscardDraft), "{what}");
        app.update(ch('n'));
        assert_eq!(app.panes().task.text(), "my own task", "{what}");
        app.update(key(k));
        let actions = app.update(ch('y'));
        assert_eq!(actions.len(), 1, "{what}: {actions:?}");
        let expected = match what {
            "open" | "replay" => {
                matches!(&actions[0], Action::Open { replay, .. } if *replay == (what == "replay"))
            }
            "resume" => matches!(&actions[0], Action::Start(StartRequest::Resume { .. })),
            _ => matches!(&actions[0], Action::Start(StartRequest::Fork { .. })),
        };
        assert!(expected, "{what}: {actions:?}");
    }
}

/// The scripted session with `extra` more output lines in run 3 (sum_by_key).
fn review_with_long_output(extra: usize) -> App {
    use codeloop::protocol::Stream;
    use codeloop::session::{Event, OutputEvent, Record, RunFinishedEvent};
    let mut records = records();
    let at = records
        .iter()
        .position(|r| {
            matches!(
                r.event,
                Event::RunFinished(RunFinishedEvent { run_id: 3, .. })
            )
        })
        .unwrap();
    let text: String = (1..=extra).map(|i| format!("line {i:03}\n")).collect();
    records.insert(
        at,
        Record {
            seq: 0,
            t_ms: 0,
            event: Event::Output(OutputEvent {
                run_id: 3,
                stream: Stream::Stdout,
                text,
            }),
        },
    );
    for (i, r) in records.iter_mut().enumerate() {
        r.seq = i as u64;
    }
    let tape = codeloop::session::TapeContents {
        records,
        truncated_tail: None,
        skipped: Vec::new(),
    };
    let mut app = App::review(tape, info(), theme());
    app.select_node("sum_by_key".into());
    app.set_focus(Focus::Output);
    app
}

/// The rows of the output pane (right column, below the code) as text.
fn output_rows(screen: &str) -> Vec<String> {
    let lines: Vec<&str> = screen.lines().collect();
    let start = lines.iter().position(|l| l.contains(" Output ")).unwrap();
    lines[start + 1..]
        .iter()
        .take_while(|l| !l.contains('└') && !l.contains('┗'))
        .map(|l| {
            let right: String = l.chars().skip(31).collect();
            right
                .trim_matches(|c| c == '"' || c == '│' || c == '┃' || c == ' ')
                .to_string()
        })
        .collect()
}

#[test]
fn g_in_the_output_pane_shows_a_full_page_from_the_first_line() {
    let mut app = review_with_long_output(200);
    let _ = screen(&mut app, 80, 24);
    app.update(ch('g'));
    let s = screen(&mut app, 80, 24);
    let rows = output_rows(&s);
    assert!(
        rows[0].ends_with("test_totals ... ok"),
        "the first line first:\n{s}"
    );
    assert!(rows[1].ends_with("line 001"), "{s}");
    // The page is full: no blank row between the first line and the note.
    let body: Vec<&String> = rows
        .iter()
        .take_while(|r| !r.contains("above the tail"))
        .collect();
    assert!(body.len() >= 3, "{s}");
    assert!(
        body.iter().all(|r| !r.is_empty()),
        "no blank rows after g:\n{s}"
    );
    // j goes down one line at once (no dead keys below the top), G back to the tail.
    app.update(ch('j'));
    let rows = output_rows(&screen(&mut app, 80, 24));
    assert!(rows[0].ends_with("line 001"), "{rows:?}");
    app.update(ch('G'));
    let s = screen(&mut app, 80, 24);
    assert!(s.contains("line 200"), "{s}");
    assert_eq!(app.panes().output.back(), 0);
}

/// A review of the scripted session with its folder, and run 1's log on
/// disk: what the tape recorded, then `more` lines the tape did not keep.
fn review_with_log(dir: &std::path::Path, more: usize) -> (App, std::path::PathBuf) {
    use codeloop::session::{Event, OutputEvent, RunFinishedEvent};
    let recorded: String = records()
        .iter()
        .filter_map(|r| match &r.event {
            Event::Output(OutputEvent {
                run_id: 1, text, ..
            }) => Some(text.clone()),
            _ => None,
        })
        .collect();
    let mut log = recorded;
    for i in 1..=more {
        log.push_str(&format!("later line {i} of a long run\n"));
    }
    log.push_str("the needle at the very end\n");
    let path = dir.join("logs/run-1.log");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, log).unwrap();
    let mut i = info();
    i.session_dir = Some(dir.to_path_buf());
    let mut app = App::review(tape(), i, theme());
    // The moment run 1 ended: parse_line's last run is run 1.
    let after_run_1 = records()
        .iter()
        .position(|r| {
            matches!(
                r.event,
                Event::RunFinished(RunFinishedEvent { run_id: 1, .. })
            )
        })
        .unwrap();
    app.set_cursor(after_run_1 + 1);
    app.select_node("parse_line".into());
    app.set_focus(Focus::Output);
    (app, path)
}

/// Read the log as the event loop would, and hand it back.
fn deliver(app: &mut App, actions: Vec<Action>) {
    for a in actions {
        if let Action::ReadLog(path) = a {
            let result = codeloop::tui::log_reader::read_log(&path).map(std::sync::Arc::new);
            app.update(Msg::LogRead { path, result });
        }
    }
}

#[test]
fn the_pager_reads_a_runs_whole_log_searches_it_and_finds_the_first_stderr_line() {
    let dir = tempfile::tempdir().unwrap();
    // About 3.5 MB: far more than the output pane keeps.
    let (mut app, path) = review_with_log(dir.path(), 120_000);
    let _ = screen(&mut app, 160, 48);
    let actions = app.update(ch('L'));
    assert_eq!(actions, vec![Action::ReadLog(path.clone())]);
    // Until the text arrives the pager says so (the read is not done in the key).
    let s = screen(&mut app, 160, 48);
    assert!(s.contains("reading the log…"), "{s}");
    deliver(&mut app, actions);
    let s = screen(&mut app, 160, 48);
    assert!(s.contains("120006 lines"), "{s}");
    assert!(
        s.contains(" 1   test_simple ... ok"),
        "line numbers beside the lines:\n{s}"
    );
    // The first stderr line, marked as stderr.
    app.update(ch('e'));
    let s = screen(&mut app, 160, 48);
    assert!(s.contains(" 3 ┃ Traceback (most recent call last):"), "{s}");
    // Search the whole log, not the kept tail.
    press(&mut app, "/NEEDLE".chars().map(ch));
    app.update(key(KeyCode::Enter));
    let s = screen(&mut app, 160, 48);
    assert!(s.contains("120006   the needle at the very end"), "{s}");
    assert!(s.contains("/NEEDLE at line 120006"), "{s}");
    // g / G: top and bottom; q closes.
    app.update(ch('g'));
    assert_eq!(app.pager().unwrap().top(), 0);
    app.update(ch('q'));
    assert!(app.pager().is_none());
    assert_eq!(app.focus(), Focus::Output);
}

#[test]
fn the_pager_scrolls_long_lines_sideways_with_marks_or_wraps_them() {
    let dir = tempfile::tempdir().unwrap();
    let (mut app, path) = review_with_log(dir.path(), 0);
    let long = format!("start {} end\n", "x".repeat(200));
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str(&long);
    std::fs::write(&path, text).unwrap();
    let actions = app.update(key(KeyCode::Enter));
    deliver(&mut app, actions);
    let s = screen(&mut app, 80, 24);
    let row = s.lines().find(|l| l.contains("start xxx")).unwrap();
    assert!(
        row.contains("x›"),
        "a clipped line is marked at the edge:\n{s}"
    );
    assert!(!s.contains("x end"), "{s}");
    for _ in 0..30 {
        app.update(key(KeyCode::Right));
    }
    let s = screen(&mut app, 80, 24);
    assert!(s.contains("x end"), "→ shows the rest:\n{s}");
    assert!(s.contains("‹x"), "and marks what is off to the left:\n{s}");
    app.update(ch('w'));
    let s = screen(&mut app, 80, 24);
    assert!(
        s.contains("start xxx") && s.contains("x end"),
        "wrapped whole:\n{s}"
    );
}

#[test]
fn while_the_pager_is_open_the_status_bar_names_it_and_its_keys() {
    let dir = tempfile::tempdir().unwrap();
    let (mut app, _) = review_with_log(dir.path(), 0);
    let before = screen(&mut app, 80, 24);
    let hints = |s: &str| s.lines().last().unwrap().trim_matches('"').to_string();
    assert!(hints(&before).starts_with(" Output "), "{before}");
    let actions = app.update(key(KeyCode::Enter));
    deliver(&mut app, actions);
    for (w, h) in [(80, 24), (160, 48)] {
        let s = screen(&mut app, w, h);
        let line = hints(&s);
        assert_eq!(
            line.trim_end(),
            " Log / n N search · e first stderr · w wrap · ← → h l sideways · q / Esc close",
            "at {w}x{h}:\n{s}"
        );
    }
    app.update(ch('q'));
    let after = screen(&mut app, 80, 24);
    assert!(hints(&after).starts_with(" Output "), "{after}");
}

#[test]
fn a_missing_log_is_said_in_the_pager() {
    let dir = tempfile::tempdir().unwrap();
    let (mut app, path) = review_with_log(dir.path(), 0);
    std::fs::remove_file(&path).unwrap();
    let actions = app.update(ch('L'));
    deliver(&mut app, actions);
    let s = screen(&mut app, 80, 24);
    assert!(s.contains("cannot read the output log"), "{s}");
}

#[test]
fn tab_completes_the_attach_path_and_a_bad_path_keeps_the_prompt_open() {
    let dir = tempfile::tempdir().unwrap();
    for f in ["weather.csv", "weather-2025.csv", "notes.txt"] {
        std::fs::write(dir.path().join(f), "city,temp\n").unwrap();
    }
    let d = dir.path().display().to_string();
    let mut app = App::live(info(), theme());
    assert_eq!(app.focus(), Focus::Task);
    app.update(Msg::Term(TermEvent::Key(KeyEvent::new(
        KeyCode::Char('o'),
        KeyModifiers::CONTROL,
    ))));
    press(&mut app, format!("{d}/we").chars().map(ch));
    app.update(key(KeyCode::Tab));
    let typed = |app: &App| app.editor().unwrap().textarea().lines().join("");
    assert_eq!(
        typed(&app),
        format!("{d}/weather"),
        "Tab completes, no spaces"
    );
    let s = screen(&mut app, 100, 30);
    assert!(
        s.contains("weather-2025.csv  weather.csv"),
        "the candidates:\n{s}"
    );
    press(&mut app, "-2".chars().map(ch));
    app.update(key(KeyCode::Tab));
    assert_eq!(typed(&app), format!("{d}/weather-2025.csv"));
    // A wrong path: the prompt stays with the path and says why.
    press(&mut app, "x".chars().map(ch));
    assert!(app.update(key(KeyCode::Enter)).is_empty());
    let editor = app.editor().expect("the prompt is still open");
    assert_eq!(typed(&app), format!("{d}/weather-2025.csvx"));
    assert!(editor.note().unwrap().contains("does not exist"));
    let s = screen(&mut app, 100, 30);
    assert!(s.contains("weather-2025.csvx does not exist"), "{s}");
    app.update(key(KeyCode::Backspace));
    let asked = app.update(key(KeyCode::Enter));
    assert!(app.editor().is_none());
    assert_eq!(describe_asked(&mut app, asked), 1);
    assert_eq!(
        app.panes().task.attached(),
        vec![dir.path().join("weather-2025.csv")]
    );
}

/// The welcome screen as a person with nothing configured sees it: the
/// bundled demos, the demo model's long label.
fn first_welcome() -> App {
    let mut i = info();
    i.model_label = "demo model: authored replies, offline (demo \"wordfreq\": Top words: a wrong tie order, pinned to the line that returned it)".into();
    i.demos = codeloop::demos::all()
        .iter()
        .map(|d| DemoEntry {
            name: d.name.to_string(),
            title: d.title.to_string(),
            ..Default::default()
        })
        .collect();
    App::live(i, theme())
}

#[test]
fn the_welcome_shows_every_demo_and_the_whole_placeholder_at_80x24_and_100x30() {
    let demos: Vec<String> = codeloop::demos::all()
        .iter()
        .map(|d| d.name.to_string())
        .collect();
    assert!(demos.len() >= 4);
    for (w, h) in [(80, 24), (100, 30)] {
        let mut app = first_welcome();
        let s = screen(&mut app, w, h);
        for (i, name) in demos.iter().enumerate().take(4) {
            assert!(
                s.contains(&format!("{}  {name}", i + 1)),
                "{w}x{h}: demo {name} is shown\n{s}"
            );
        }
        // The way to start is whole, wrapped to the pane (its last words shown).
        assert!(s.contains("Ctrl-S starts;"), "{w}x{h}\n{s}");
        assert!(s.contains("input file."), "{w}x{h}\n{s}");
        // Tab goes between the panes on screen (the task and the welcome) only.
        assert_eq!(app.focus(), Focus::Welcome);
        app.update(key(KeyCode::Tab));
        assert_eq!(app.focus(), Focus::Task, "{w}x{h}");
        app.update(key(KeyCode::Tab));
        assert_eq!(app.focus(), Focus::Welcome, "{w}x{h}");
    }
}

#[test]
fn a_long_code_line_is_marked_where_it_is_cut_and_scrolls_sideways_with_its_number_and_marker() {
    use codeloop::session::{CodeEvent, Event, TapeContents};
    let long = "    key, value = line.split(\"=\")  # the separator is the first equals sign; a blank line has none, so this unpacks one value";
    let mut records = records();
    for r in &mut records {
        if let Event::Code(CodeEvent {
            iteration: 1,
            node,
            code,
            ..
        }) = &mut r.event
            && node == "parse_line"
        {
            *code = PARSE_V1.replace("    key, value = line.split(\"=\")", long);
        }
    }
    let tape = TapeContents {
        records,
        truncated_tail: None,
        skipped: Vec::new(),
    };
    let mut app = App::review(tape, info(), theme());
    app.set_cursor(records_len_until(|e| matches!(e, Event::Localized(_))));
    app.select_node("parse_line".into());
    app.set_focus(Focus::Code);
    let row = |s: &str| {
        s.lines()
            .find(|l| l.contains("▶2 "))
            .unwrap_or_else(|| panic!("the failing line keeps its marker and number:\n{s}"))
            .to_string()
    };
    let s = screen(&mut app, 80, 24);
    assert!(row(&s).contains("›┃"), "a cut line ends with ›:\n{s}");
    assert!(s.contains(" 1 def parse_line(line):"), "{s}");
    for _ in 0..12 {
        app.update(ch('>'));
    }
    let s = screen(&mut app, 80, 24);
    let r = row(&s);
    assert!(
        r.contains("▶2 ‹"),
        "the gutter stays, ‹ marks what is off to the left:\n{s}"
    );
    assert!(
        r.contains("unpacks one value"),
        "> shows the rest of the line:\n{s}"
    );
    for _ in 0..12 {
        app.update(ch('<'));
    }
    let s = screen(&mut app, 80, 24);
    assert!(row(&s).contains("▶2     key, value"), "< comes back:\n{s}");
}

fn records_len_until(pred: impl Fn(&codeloop::session::Event) -> bool) -> usize {
    records().iter().position(|r| pred(&r.event)).unwrap() + 1
}

#[test]
fn n_or_the_palette_asks_before_leaving_an_ended_session() {
    let mut app = App::live(info(), theme());
    app.task_mut().insert_str("sum key=value lines");
    app.update(Msg::Term(TermEvent::Key(KeyEvent::new(
        KeyCode::Char('s'),
        KeyModifiers::CONTROL,
    ))));
    for r in records() {
        app.update(Msg::Record(r));
    }
    // (In the Output pane n is the next search match.)
    for focus in [Focus::Graph, Focus::Code, Focus::History] {
        app.set_focus(focus);
        app.update(ch('n'));
        assert_eq!(app.confirm(), Some(Confirm::LeaveSession), "{focus:?}");
        app.update(ch('n'));
        assert!(
            matches!(app.mode(), Mode::Live(l) if l.started),
            "{focus:?}"
        );
    }
    // The palette's "new session" is the same act, and asks the same.
    app.update(ch(':'));
    press(&mut app, "new session".chars().map(ch));
    app.update(key(KeyCode::Enter));
    assert_eq!(app.confirm(), Some(Confirm::LeaveSession));
    app.update(key(KeyCode::Enter));
    assert!(matches!(app.mode(), Mode::Live(l) if !l.started));
}

#[test]
fn quitting_with_a_typed_task_asks_first_and_ctrl_c_twice_quits() {
    let mut app = welcome_with_demos();
    app.task_mut().insert_str("a task not started");
    app.set_focus(Focus::Welcome);
    assert!(app.update(ch('q')).is_empty());
    assert_eq!(app.confirm(), Some(Confirm::DiscardDraft));
    app.update(ch('n'));
    assert!(!app.quitting());
    assert_eq!(app.panes().task.text(), "a task not started");
    app.update(ch('q'));
    assert_eq!(app.update(ch('y')), vec![Action::Quit]);
    let mut app = welcome_with_demos();
    app.task_mut().insert_str("a task not started");
    let ctrl_c = || {
        Msg::Term(TermEvent::Key(KeyEvent::new(
            KeyCode::Char('c'),
            KeyModifiers::CONTROL,
        )))
    };
    assert!(app.update(ctrl_c()).is_empty());
    assert_eq!(app.update(ctrl_c()), vec![Action::Quit]);
}
