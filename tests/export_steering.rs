//! The exports show the person (issue 42): a session steered by hand (a
//! hint, a spec edited and a prompt edited before roman_to_int's first
//! repair, its tests replaced after it) exports each act at its place in
//! the node's iterations: the Markdown report, the HTML page and the
//! browser's player, as the workbench's History shows them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

const HINT: &str = "subtract when a smaller numeral comes before a larger one";

/// The roman demo's tape with the person's acts put in, its records
/// numbered again; the tape's path.
fn steered_tape(dir: &Path) -> PathBuf {
    let demo = Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/demos/roman/tape.jsonl");
    let text = std::fs::read_to_string(demo).unwrap();
    let mut records: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let plan = records.iter().find(|r| r["type"] == "plan").unwrap();
    let mut spec = plan["specs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "roman_to_int")
        .unwrap()
        .clone();
    spec["purpose"] = json!("The integer value of a Roman numeral, upper case only");
    let steer = |command: Value| json!({"type": "steer", "command": command});
    let first_repair = records
        .iter()
        .position(|r| r["type"] == "model_request" && r["tag"] == "repair/roman_to_int/2")
        .unwrap();
    let before_repair = vec![
        steer(json!({"cmd": "hint", "node": "roman_to_int", "text": HINT})),
        steer(json!({"cmd": "edit_spec", "node": "roman_to_int", "spec": spec})),
        json!({"type": "paused", "step": {"kind": "prompt",
            "purpose": {"kind": "reflect", "node": "roman_to_int"},
            "tag": "repair/roman_to_int/2",
            "messages": [{"role": "user", "content": "Repair it."}]}}),
        steer(json!({"cmd": "edit_prompt", "messages": [
            {"role": "user", "content": "Repair it: subtract the smaller numeral."}]})),
        steer(json!({"cmd": "approve"})),
    ];
    records.splice(first_repair..first_repair, before_repair);
    let second_version = records
        .iter()
        .position(|r| r["type"] == "code" && r["node"] == "roman_to_int" && r["iteration"] == 2)
        .unwrap();
    records.insert(
        second_version + 1,
        steer(json!({"cmd": "edit_tests", "node": "roman_to_int",
            "code": "def test_roman_to_int():\n    assert roman_to_int('MCMXCIV') == 1994\n"})),
    );
    let mut out = String::new();
    for (seq, r) in records.iter_mut().enumerate() {
        r["seq"] = json!(seq);
        if r.get("t_ms").is_none() {
            r["t_ms"] = json!(0);
        }
        out.push_str(&serde_json::to_string(r).unwrap());
        out.push('\n');
    }
    let session = dir.join("steered");
    std::fs::create_dir_all(&session).unwrap();
    let tape = session.join("tape.jsonl");
    std::fs::write(&tape, out).unwrap();
    tape
}

fn export(tape: &Path, dir: &Path, args: &[&str], name: &str) -> String {
    let path = dir.join(name);
    let out = Command::new(env!("CARGO_BIN_EXE_codeloop"))
        .arg("export")
        .arg(tape)
        .args(args)
        .arg("-o")
        .arg(&path)
        .env("CODELOOP_DATA_DIR", dir)
        .env("CODELOOP_CONFIG", dir.join("no-config.toml"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::read_to_string(path).unwrap()
}

#[test]
fn the_report_tells_each_steering_act_at_its_place_in_the_nodes_story() {
    let dir = tempfile::tempdir().unwrap();
    let tape = steered_tape(dir.path());
    let md = export(&tape, dir.path(), &[], "s.md");
    let section = &md[md.find("## roman_to_int").unwrap()..];
    let section = &section[..section[3..].find("\n## ").map_or(section.len(), |e| e + 3)];
    let acts = [
        "- failure #1: AssertionError at roman_to_int.py:8",
        &format!("- you (at #1): hint for roman_to_int: {HINT}"),
        "- you (at #1): spec of roman_to_int edited",
        "- you (at #1): prompt of repair/roman_to_int/2 edited (1 line)",
        "- reflection #1: Subtractive pairs",
        "- you (at #2): tests of roman_to_int edited",
    ];
    let mut from = 0;
    for act in acts {
        let at = section[from..]
            .find(act)
            .unwrap_or_else(|| panic!("{act:?} in its place\n---\n{section}"));
        from += at + act.len();
    }
    // Approving is stepping on, not an act of its own.
    assert!(!section.contains("you (at #1): approved"), "{section}");
}

#[test]
fn the_html_page_and_the_player_show_each_steering_act() {
    let dir = tempfile::tempdir().unwrap();
    let tape = steered_tape(dir.path());
    let page = export(&tape, dir.path(), &["--format", "html"], "s.html");
    let node = &page[page.find("id=\"node-roman_to_int\"").unwrap()..];
    let first = &node[node.find("id=\"node-roman_to_int-1\"").unwrap()..];
    let first = &first[..first.find("id=\"node-roman_to_int-2\"").unwrap()];
    assert!(first.contains("<h4>You, at #1</h4>"), "{first}");
    for act in [
        format!("⚑ you: hint for roman_to_int: {HINT}"),
        "⚑ you: spec of roman_to_int edited".into(),
        "⚑ you: prompt of repair/roman_to_int/2 edited (1 line)".into(),
    ] {
        assert!(first.contains(&act), "{act}\n---\n{first}");
    }
    let second = &node[node.find("id=\"node-roman_to_int-2\"").unwrap()..];
    let second = &second[..second.find("id=\"node-roman_to_int-3\"").unwrap()];
    assert!(
        second.contains("<h4>You, at #2</h4><ul><li>⚑ you: tests of roman_to_int edited</li>"),
        "{second}"
    );

    let player = export(
        &tape,
        dir.path(),
        &["--format", "html", "--player"],
        "p.html",
    );
    for act in [
        format!("⚑ you: hint for roman_to_int: {HINT}"),
        "⚑ you: prompt of repair/roman_to_int/2 edited (1 line)".into(),
        "⚑ you: tests of roman_to_int edited".into(),
    ] {
        assert!(player.contains(&act), "{act} in the player's data");
    }
}
