//! The tape's shape is held by the tapes themselves: every tape in the
//! repository (the demos, the fixtures, any other `*.jsonl` tape) reads
//! back line by line, and each record written again is the line it was
//! read from, as a JSON value and byte for byte. `fixtures/every_event.jsonl`
//! holds every event, every step and every command at least once, written
//! by the code before the events carried payload structs; a new variant
//! fails here until it has a line there.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use codeloop_session::{Command, Event, Record, Step};

/// The repository's root (this crate is `crates/session`).
fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every `*.jsonl` file under `dir` whose first line is a record (the
/// scripted models' replies files are JSON lines too, but not tapes).
fn tapes_under(dir: &Path, found: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        if path.is_dir() {
            if name != "target" && name != ".git" {
                tapes_under(&path, found);
            }
        } else if name.to_string_lossy().ends_with(".jsonl") && is_tape(&path) {
            found.push(path);
        }
    }
}

fn is_tape(path: &Path) -> bool {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let Some(first) = text.lines().find(|l| !l.trim().is_empty()) else {
        return false;
    };
    serde_json::from_str::<serde_json::Value>(first)
        .is_ok_and(|v| v.get("seq").is_some() && v.get("t_ms").is_some() && v.get("type").is_some())
}

/// The tags serde knows for `T`, read from its error for a tag it does not
/// ("unknown variant `?`, expected one of `a`, `b`, ...").
fn tags_of<T: serde::de::DeserializeOwned + std::fmt::Debug>(tag: &str) -> BTreeSet<String> {
    let err = serde_json::from_str::<T>(&format!(r#"{{"{tag}":"?"}}"#)).unwrap_err();
    let message = err.to_string();
    let list = message
        .split_once("expected one of ")
        .unwrap_or_else(|| panic!("no list of variants in: {message}"))
        .1;
    list.split(", ")
        .map(|t| t.split('`').nth(1).unwrap_or_default().to_string())
        .filter(|t| !t.is_empty())
        .collect()
}

#[test]
fn every_tape_in_the_repository_reads_back_and_writes_the_same_lines() {
    let root = repository();
    let mut tapes = Vec::new();
    tapes_under(&root, &mut tapes);
    tapes.sort();
    let shown: Vec<String> = tapes
        .iter()
        .map(|p| p.strip_prefix(&root).unwrap_or(p).display().to_string())
        .collect();
    let demos = shown
        .iter()
        .filter(|p| p.starts_with("assets/demos/"))
        .count();
    assert!(demos >= 5, "the demos' tapes: {shown:?}");
    assert!(
        shown.contains(&"crates/session/tests/fixtures/every_event.jsonl".to_string()),
        "{shown:?}"
    );

    let (mut events, mut steps, mut commands) = (BTreeSet::new(), BTreeSet::new(), BTreeSet::new());
    let mut lines = 0;
    for (path, shown) in tapes.iter().zip(&shown) {
        let text = std::fs::read_to_string(path).unwrap();
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let at = format!("{shown}:{}", i + 1);
            let value: serde_json::Value = serde_json::from_str(line).unwrap();
            let record: Record =
                serde_json::from_str(line).unwrap_or_else(|e| panic!("{at}: not a record: {e}"));
            assert_eq!(serde_json::to_value(&record).unwrap(), value, "{at}");
            assert_eq!(serde_json::to_string(&record).unwrap(), line, "{at}");
            events.insert(record.event.kind().to_string());
            if let Event::Paused(e) = &record.event {
                steps.insert(value["step"]["kind"].as_str().unwrap().to_string());
                let step: Step = serde_json::from_value(value["step"].clone()).unwrap();
                assert_eq!(step, e.step, "{at}");
            }
            if let Event::Steer(e) = &record.event {
                commands.insert(value["command"]["cmd"].as_str().unwrap().to_string());
                let command: Command = serde_json::from_value(value["command"].clone()).unwrap();
                assert_eq!(command, e.command, "{at}");
            }
            lines += 1;
        }
    }
    assert!(lines > 1000, "{lines} lines in {shown:?}");
    assert_eq!(
        events,
        tags_of::<Event>("type"),
        "events with no line on any tape"
    );
    assert_eq!(
        steps,
        tags_of::<Step>("kind"),
        "steps with no line on any tape"
    );
    assert_eq!(
        commands,
        tags_of::<Command>("cmd"),
        "commands with no line on any tape"
    );
}

#[test]
fn the_kind_of_an_event_is_the_tag_the_tape_writes() {
    let text = std::fs::read_to_string(
        repository().join("crates/session/tests/fixtures/every_event.jsonl"),
    )
    .unwrap();
    for line in text.lines() {
        let value: serde_json::Value = serde_json::from_str(line).unwrap();
        let record: Record = serde_json::from_str(line).unwrap();
        assert_eq!(Some(record.event.kind()), value["type"].as_str(), "{line}");
    }
}
