//! Input files in the workbench (issue 20): the attach prompt refuses at
//! once what no run could read, keeping the typed path and saying why; a
//! file is described off the UI thread (in a child process: issue 33) and
//! attached when its description comes back (its one-line summary under
//! the task); one that could not be described is attached all the same,
//! with why and what to do. Once a session started, the Task pane shows
//! each file's summary and `d` shows the descriptions the prompts were
//! given.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

use codeloop_testkit::tui_support;

use codeloop_session::*;
use codeloop_tui::app::{AttachFrom, Focus};
use codeloop_tui::{Action, App, Msg};
use crossterm::event::KeyCode;
use tui_support::*;

fn typed(app: &mut App, text: &str) {
    for c in text.chars() {
        app.update(ch(c));
    }
}

#[test]
fn the_attach_prompt_describes_a_file_and_refuses_a_folder_keeping_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data.csv");
    std::fs::write(&data, "name,qty\napple,3\npear,5\nfig,1\n").unwrap();
    let mut app = App::live(info(), theme());
    app.update(ctrl('o'));
    let folder = dir.path().display().to_string();
    typed(&mut app, &folder);
    app.update(key(KeyCode::Enter));
    let editor = app.editor().expect("the prompt stays open");
    assert_eq!(editor.textarea().lines().join(""), folder);
    let note = editor.note().unwrap().to_string();
    assert!(note.contains("is a folder, not a file"), "{note}");
    assert!(note.contains("attach the files in it"), "{note}");
    assert!(app.panes().task.attached().is_empty());
    app.update(key(KeyCode::Esc));
    app.update(ctrl('o'));
    typed(&mut app, &data.display().to_string());
    let actions = app.update(key(KeyCode::Enter));
    // Asked of the event loop, off the UI thread; nothing attached yet, and
    // a start waits for it.
    assert!(
        actions
            .iter()
            .any(|a| matches!(a, Action::DescribeInput { path, .. } if *path == data)),
        "{actions:?}"
    );
    assert!(app.panes().task.attached().is_empty());
    assert_eq!(app.panes().task.pending(), std::slice::from_ref(&data));
    let s = screen(&mut app, 100, 30);
    assert!(s.contains("attaching data.csv: being described…"), "{s}");
    app.task_mut().insert_str("Sum the qty column.");
    let started = app.update(ctrl('s'));
    assert!(!started.iter().any(|a| matches!(a, Action::Start(_))));
    assert!(app.flash().unwrap().1.contains("is still being described"));
    assert_eq!(describe_asked(&mut app, actions), 1);
    assert_eq!(app.panes().task.attached(), std::slice::from_ref(&data));
    let flash = &app.flash().unwrap().1;
    assert!(
        flash.ends_with("data.csv: CSV (comma), 2 columns, 3 rows"),
        "{flash}"
    );
    let s = screen(&mut app, 100, 30);
    assert!(s.contains("attached data.csv: CSV (comma), 2"), "{s}");
    assert!(s.contains("columns, 3 rows"), "wrapped, not cut:\n{s}");
}

#[test]
fn a_file_that_could_not_be_described_is_attached_with_why_and_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("odd.xlsx");
    std::fs::write(&data, "PK\x03\x04").unwrap();
    let mut app = App::live(info(), theme());
    app.update(ctrl('o'));
    typed(&mut app, &data.display().to_string());
    app.update(key(KeyCode::Enter));
    let why = "describing it needed more memory than the 256 MiB allowed";
    app.update(Msg::InputDescribed {
        path: data.clone(),
        from: AttachFrom::Prompt(data.display().to_string()),
        result: Ok(InputFile {
            name: "odd.xlsx".into(),
            source_path: data.display().to_string(),
            size_bytes: 4,
            preview: String::new(),
            description: Some(codeloop_inputs::InputDescription::undescribed(
                "odd.xlsx".into(),
                4,
                why.into(),
            )),
        }),
    });
    assert_eq!(app.panes().task.attached(), std::slice::from_ref(&data));
    let (level, flash) = app.flash().unwrap();
    assert_eq!(*level, NoticeLevel::Warning);
    assert!(
        flash.contains(&format!("could not describe this file: {why}")),
        "{flash}"
    );
    assert!(
        flash.contains("attached and copied into every run all the same"),
        "{flash}"
    );
    let s = screen(&mut app, 100, 30);
    assert!(s.contains("attached odd.xlsx: could not be"), "{s}");
}

#[test]
fn a_started_session_shows_each_file_summary_and_d_its_description() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("sales.csv");
    std::fs::write(&data, "day,amount\n2024-01-02,3.5\n2024-01-03,4\n").unwrap();
    let description = codeloop_inputs::describe(&data).unwrap();
    let mut app = App::live(info(), theme());
    app.task_mut().insert_str("Total sales per day.");
    app.update(ctrl('s'));
    app.update(Msg::Record(Record {
        seq: 0,
        t_ms: 0,
        event: Event::SessionStarted(SessionStartedEvent {
            version: TAPE_VERSION,
            session_id: "s-inputs".into(),
            started_at: "2026-11-25T01:00:00Z".into(),
            task: "Total sales per day.".into(),
            inputs: vec![InputFile {
                name: "sales.csv".into(),
                source_path: data.display().to_string(),
                size_bytes: description.size_bytes,
                preview: String::new(),
                description: Some(description),
            }],
            config: ConfigSummary::default(),
        }),
    }));
    app.set_focus(Focus::Task);
    let s = screen(&mut app, 120, 30);
    assert!(
        s.contains("attached sales.csv (39 B): CSV (comma), 2"),
        "{s}"
    );
    assert!(s.contains("columns, 2 rows"), "the pane grew for it:\n{s}");
    assert!(s.contains("d describe files"), "{s}");
    app.update(ch('d'));
    let m = app.message().expect("the descriptions");
    assert_eq!(m.title, "Attached files");
    assert!(
        m.text.contains("- day: date, e.g. 2024-01-02, 2024-01-03"),
        "{}",
        m.text
    );
    assert!(m.text.contains("- amount: float"), "{}", m.text);
    let s = screen(&mut app, 120, 30);
    assert!(s.contains("- day: date, e.g. 2024-01-02"), "{s}");
}

#[test]
fn every_one_of_eight_attached_files_is_named_before_and_after_the_start() {
    let names: Vec<String> = (1..=8).map(|i| format!("part{i}.csv")).collect();
    let dir = tempfile::tempdir().unwrap();
    let paths: Vec<std::path::PathBuf> = names
        .iter()
        .map(|n| {
            let p = dir.path().join(n);
            std::fs::write(&p, "a,b\n1,2\n").unwrap();
            p
        })
        .collect();
    let inputs: Vec<InputFile> = paths
        .iter()
        .zip(&names)
        .map(|(p, n)| InputFile {
            name: n.clone(),
            source_path: p.display().to_string(),
            size_bytes: 8,
            preview: String::new(),
            description: codeloop_inputs::describe(p).ok(),
        })
        .collect();
    // Attached, before the start.
    let mut app = App::live(info(), theme());
    for (p, file) in paths.iter().zip(&inputs) {
        app.task_mut()
            .attach_described(p.clone(), file, None)
            .unwrap();
    }
    for (w, h) in [(80, 24), (160, 48)] {
        let s = screen(&mut app, w, h);
        for n in &names {
            assert!(s.contains(n.as_str()), "{n} at {w}x{h}:\n{s}");
        }
    }
    // Once the session started.
    app.task_mut()
        .insert_str("Sum column b of every part, then add the sums together.");
    app.update(ctrl('s'));
    app.update(Msg::Record(Record {
        seq: 0,
        t_ms: 0,
        event: Event::SessionStarted(SessionStartedEvent {
            version: TAPE_VERSION,
            session_id: "s-eight".into(),
            started_at: "2026-11-25T01:00:00Z".into(),
            task: "Sum column b of every part, then add the sums together.".into(),
            inputs,
            config: ConfigSummary::default(),
        }),
    }));
    for (w, h) in [(80, 24), (160, 48)] {
        let s = screen(&mut app, w, h);
        for n in &names {
            assert!(s.contains(n.as_str()), "{n} at {w}x{h}:\n{s}");
        }
        assert!(s.contains("Sum column b"), "{s}");
    }
}
