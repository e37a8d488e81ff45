//! `codeloop export --format html` of a session in a tree of forks: its
//! page shows the lineage (the first session, each fork under the one it
//! was forked from, where, how each ended) and links the pages of the
//! others, which it writes beside it. Forks are made by `codeloop resume
//! --at`, the sessions scripted (`tests/fixtures/lineage_*.jsonl`); the
//! page is loaded in headless Chromium where one is installed.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

/// The binary cargo built for these tests.
const CODELOOP: &str = env!("CARGO_BIN_EXE_codeloop");

use std::path::Path;
use std::process::Command;

use codeloop_testkit::cli::{codeloop_in, fixture};

/// Run `cmd`; the id of the session it made (`codeloop: session ID`).
fn session_of(mut cmd: Command) -> String {
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    stderr
        .lines()
        .find_map(|l| l.strip_prefix("codeloop: session "))
        .and_then(|rest| rest.split([',', ' ']).next())
        .unwrap_or_else(|| panic!("no session id in {stderr}"))
        .to_string()
}

/// The seq of the first record of `kind` on the session's tape.
fn seq_of(dir: &Path, id: &str, kind: &str) -> u64 {
    let tape =
        std::fs::read_to_string(dir.join("data/sessions").join(id).join("tape.jsonl")).unwrap();
    tape.lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|r| r["type"] == kind)
        .unwrap_or_else(|| panic!("no {kind} on {id}'s tape"))["seq"]
        .as_u64()
        .unwrap()
}

fn export(dir: &Path, id: &str, to: &Path) -> String {
    let out = codeloop_in(CODELOOP, dir)
        .args(["export", id, "--format", "html", "-o"])
        .arg(to)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn lineage_of(page: &str) -> &str {
    let start = page
        .find("<section id=\"lineage\">")
        .unwrap_or_else(|| panic!("no lineage: {page}"));
    let end = start + page[start..].find("</section>").unwrap();
    &page[start..end]
}

#[test]
fn a_fork_of_a_fork_shows_its_tree_and_links_every_branch() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut run = codeloop_in(CODELOOP, d);
    run.args(["run", "the total length of a list of words", "--no-cache"])
        .args([
            "--scripted",
            fixture("lineage_replies.jsonl").to_str().unwrap(),
        ]);
    let a = session_of(run);
    // B: forked from A after its first failure was localized, repaired anew.
    let at_a = seq_of(d, &a, "localized");
    let mut fork = codeloop_in(CODELOOP, d);
    fork.args(["resume", &a, "--at", &at_a.to_string()]).args([
        "--scripted",
        fixture("lineage_fork_replies.jsonl").to_str().unwrap(),
    ]);
    let b = session_of(fork);
    // C: forked from B when its plan was made, going on with B's replies.
    let at_b = seq_of(d, &b, "plan");
    let b_tape = d.join("data/sessions").join(&b).join("tape.jsonl");
    let mut fork = codeloop_in(CODELOOP, d);
    fork.args(["resume", &b, "--at", &at_b.to_string(), "--scripted"])
        .arg(&b_tape);
    let c = session_of(fork);

    let pages = d.join("pages");
    let printed = export(d, &b, &pages.join("b.html"));
    // The page asked for, and the others' beside it.
    let a_page = pages.join(format!("codeloop-{a}.html"));
    let c_page = pages.join(format!("codeloop-{c}.html"));
    assert!(printed.contains("b.html"), "{printed}");
    assert!(a_page.is_file() && c_page.is_file(), "{printed}");

    let page_b = std::fs::read_to_string(pages.join("b.html")).unwrap();
    let tree = lineage_of(&page_b);
    // In tree order: A first, B under it (this page), C under B.
    let (pa, pb, pc) = (
        tree.find(&a).unwrap(),
        tree.find(&format!("<b>{b}</b>")).unwrap(),
        tree.find(&format!("<a href=\"codeloop-{c}.html\">{c}</a>"))
            .unwrap(),
    );
    assert!(pa < pb && pb < pc, "{tree}");
    assert!(
        tree.contains(&format!("<a href=\"codeloop-{a}.html\">{a}</a>")),
        "{tree}"
    );
    assert!(tree.contains("class=\"depth-1 current\""), "{tree}");
    assert!(tree.contains("class=\"depth-2\""), "{tree}");
    assert!(
        tree.contains(&format!(
            "forked from {a} after record {at_a} (total_len #1: AssertionError at total_len.py:5: expected 3, got 5; 1 code version by then)"
        )),
        "{tree}"
    );
    assert!(
        tree.contains(&format!(
            "forked from {b} after record {at_b} (plan: 1 function; 0 code versions by then)"
        )),
        "{tree}"
    );
    assert_eq!(
        tree.matches("<span class=\"badge passed\">passed</span>")
            .count(),
        3,
        "{tree}"
    );
    // A's page links back to the page asked for by its name.
    let page_a = std::fs::read_to_string(&a_page).unwrap();
    assert!(
        lineage_of(&page_a).contains(&format!("<a href=\"b.html\">{b}</a>")),
        "{page_a}"
    );
    assert!(
        lineage_of(&page_a).contains(&format!("<b>{a}</b>")),
        "{page_a}"
    );

    // A session with no forks and no parent has no lineage.
    let mut run = codeloop_in(CODELOOP, d);
    run.args(["run", "the total length of a list of words", "--no-cache"])
        .args([
            "--scripted",
            fixture("lineage_replies.jsonl").to_str().unwrap(),
        ]);
    let lone = session_of(run);
    export(d, &lone, &pages.join("lone.html"));
    let lone_page = std::fs::read_to_string(pages.join("lone.html")).unwrap();
    assert!(!lone_page.contains("id=\"lineage\""));

    // Loaded in a real browser, offline: the DOM holds the tree and its links.
    let Some(chromium) = ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find(|b| {
            Command::new(b)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        })
    else {
        eprintln!("no chromium: the page is checked as text only");
        return;
    };
    let out = Command::new(chromium)
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--dump-dom"])
        .arg(format!("file://{}", pages.join("b.html").display()))
        .output()
        .unwrap();
    let dom = String::from_utf8_lossy(&out.stdout);
    assert!(dom.contains("<section id=\"lineage\">"), "{dom}");
    assert!(
        dom.contains(&format!("href=\"codeloop-{c}.html\"")),
        "{dom}"
    );
}
