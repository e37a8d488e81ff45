//! `codeloop export`: the Markdown report, the program and its tests, and the
//! HTML page opened in a real browser (headless Chromium from Debian).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

mod sessions_support;

use std::path::{Path, PathBuf};
use std::process::Command;

use codeloop_testkit::cdp;
use sessions_support::{codeloop_in, demos, stderr, stdout};

fn export(args: &[&str], cwd: &Path) -> String {
    let rec = demos("export_html");
    let out = codeloop_in(&rec.data_dir, cwd, args);
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    stdout(&out).trim().to_string()
}

#[test]
fn markdown_of_a_finished_and_of_an_unfinished_session() {
    let rec = demos("export_html");
    let work = tempfile::tempdir().unwrap();
    let roman = rec.by_demo("roman");
    let path = export(&["export", &roman.id], work.path());
    assert_eq!(
        path,
        format!("codeloop-{}.md", roman.id),
        "the default path is printed"
    );
    let md = std::fs::read_to_string(work.path().join(&path)).unwrap();
    for needle in [
        "# codeloop report",
        "Convert integers (1 to 3999) to Roman numerals",
        "Result: passed: all 2 functions pass their tests",
        "- `roman_to_int(s: str) -> int`: The integer value of a Roman numeral",
        "## roman_to_int (passed, 3 iterations)",
        "- failure #1: AssertionError at roman_to_int.py:8: expected 1994, got 2216",
        "- reflection #1: Subtractive pairs",
        "Passing code (#3):",
        "Tests of the assembled program: passed, 7 tests",
        "def int_to_roman(n):",
    ] {
        assert!(md.contains(needle), "{needle}\n---\n{md}");
    }

    // A session killed after its first failure exports what it has.
    let cut = work.path().join("cut");
    std::fs::create_dir_all(&cut).unwrap();
    let tape = std::fs::read_to_string(roman.dir.join("tape.jsonl")).unwrap();
    let upto: String = tape
        .lines()
        .take_while(|l| !l.contains("\"type\":\"reflection\""))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(cut.join("tape.jsonl"), upto).unwrap();
    let out = work.path().join("cut.md");
    export(
        &["export", cut.to_str().unwrap(), "-o", out.to_str().unwrap()],
        work.path(),
    );
    let md = std::fs::read_to_string(out).unwrap();
    assert!(
        md.contains("Result: did not finish: the tape ends after"),
        "{md}"
    );
    assert!(
        md.contains("- failure #1: AssertionError at roman_to_int.py:8"),
        "{md}"
    );
    assert!(md.contains("No program was assembled."), "{md}");
}

fn python() -> PathBuf {
    let out = Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .expect("python3 runs");
    PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
}

#[test]
fn the_program_and_its_tests_as_a_folder_and_as_one_runnable_file() {
    let rec = demos("export_html");
    let work = tempfile::tempdir().unwrap();
    let roman = rec.by_demo("roman");
    let path = export(&["export", &roman.id, "--format", "py"], work.path());
    assert_eq!(path, format!("codeloop-{}", roman.id));
    let dir = work.path().join(&path);
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    assert_eq!(
        files,
        ["program.py", "test_int_to_roman.py", "test_roman_to_int.py"]
    );
    let program = std::fs::read_to_string(dir.join("program.py")).unwrap();
    assert!(program.contains("def roman_to_int(s):"), "{program}");
    let tests = std::fs::read_to_string(dir.join("test_roman_to_int.py")).unwrap();
    assert!(tests.starts_with("from program import *"), "{tests}");
    assert!(tests.contains("def test_subtractive():"), "{tests}");

    // One file runs every test of every node with plain Python.
    let single = work.path().join("roman.py");
    export(
        &[
            "export",
            &roman.id,
            "--format",
            "py",
            "-o",
            single.to_str().unwrap(),
        ],
        work.path(),
    );
    let run = Command::new(python()).arg(&single).output().unwrap();
    let out = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(out.contains("PASS roman_to_int: test_subtractive"), "{out}");
    assert!(out.contains("PASS int_to_roman: test_basic"), "{out}");
    assert_eq!(out.lines().last(), Some("7 passed, 0 failed"), "{out}");

    // The session given one iteration still has its failing code: the file says so.
    let failed = &rec.sessions[4];
    export(
        &["export", &failed.id, "--format", "py", "-o", "failed.py"],
        work.path(),
    );
    let run = Command::new(python())
        .arg(work.path().join("failed.py"))
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&run.stdout);
    assert_eq!(run.status.code(), Some(1), "{out}");
    assert!(out.contains("FAIL roman_to_int: test_subtractive"), "{out}");
}

/// The roman session exported as HTML, with a task full of markup.
fn roman_page(work: &Path) -> (PathBuf, String) {
    let rec = demos("export_html");
    let roman = rec.by_demo("roman");
    let tape = std::fs::read_to_string(roman.dir.join("tape.jsonl")).unwrap();
    let first = tape.lines().next().unwrap();
    let mut started: serde_json::Value = serde_json::from_str(first).unwrap();
    let task = started["task"].as_str().unwrap().to_string();
    started["task"] = format!("{task} <script>alert('x')</script> & \"quoted\"").into();
    let dir = work.join("markup");
    std::fs::create_dir_all(&dir).unwrap();
    let rest: String = tape.lines().skip(1).map(|l| format!("{l}\n")).collect();
    std::fs::write(dir.join("tape.jsonl"), format!("{started}\n{rest}")).unwrap();
    let page = work.join("roman.html");
    export(
        &[
            "export",
            dir.to_str().unwrap(),
            "--format",
            "html",
            "-o",
            page.to_str().unwrap(),
        ],
        work,
    );
    let html = std::fs::read_to_string(&page).unwrap();
    (page, html)
}

#[test]
fn the_page_escapes_the_tape_and_refers_to_nothing_outside_itself() {
    let work = tempfile::tempdir().unwrap();
    let (_, html) = roman_page(work.path());
    assert!(
        html.contains("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;quoted&quot;")
    );
    assert!(!html.to_lowercase().contains("<script"), "no script at all");
    assert!(!html.contains("http://") && !html.contains("https://"));
    assert!(!html.contains("src=") && !html.contains("@import") && !html.contains("url(h"));
    for (i, _) in html.match_indices("href=\"") {
        assert_eq!(
            &html[i + 6..i + 7],
            "#",
            "links stay in the page: {}",
            &html[i..i + 40]
        );
    }
    assert!(html.contains("Content-Security-Policy\" content=\"default-src 'none'"));
}

/// Chromium, headless, with every name resolving to nothing, on a page;
/// `extra` adds its own flags. Returns stdout.
fn open_in_chromium(browser: &Path, page: &Path, extra: &[String]) -> String {
    let profile = tempfile::tempdir().unwrap();
    let out = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--host-resolver-rules=MAP * ~NOTFOUND",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(extra)
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("chromium runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// URLs the page itself asked for, from Chromium's network log. The
/// browser's own background requests carry no origin; a page's do.
fn page_requests(net_log: &Path) -> Vec<String> {
    let log: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(net_log).unwrap()).unwrap();
    log["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| {
            let p = &e["params"];
            let url = p["url"].as_str()?;
            let initiator = p["initiator"].as_str()?;
            (initiator != "not an origin" && !url.starts_with("file:")).then(|| url.to_string())
        })
        .collect()
}

#[test]
fn the_page_in_headless_chromium_shows_the_graph_the_diffs_and_the_results() {
    let Some(browser) = cdp::chromium() else {
        println!(
            "SKIPPED: no chromium on this machine (scripts/test.sh installs Debian's `chromium`)"
        );
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let (page, _) = roman_page(work.path());
    let net_log = work.path().join("net.json");
    let dom = open_in_chromium(
        &browser,
        &page,
        &[
            "--dump-dom".to_string(),
            format!("--log-net-log={}", net_log.display()),
        ],
    );
    // The plan graph: one box a node, linked to its section.
    assert!(dom.contains("<svg class=\"graph\""), "{dom}");
    for node in ["int_to_roman", "roman_to_int"] {
        assert!(
            dom.contains(&format!("<a href=\"#node-{node}\">")),
            "{node}"
        );
        assert!(
            dom.contains(&format!("<section class=\"node\" id=\"node-{node}\">")),
            "{node}"
        );
    }
    assert!(dom.contains("passed · 3 iterations"), "{dom}");
    // Iteration 2 of roman_to_int as a diff from iteration 1: a removed line, an added one.
    assert!(
        dom.contains("roman_to_int #2 <span class=\"none\">by the model, changes from #1"),
        "{dom}"
    );
    assert!(dom.contains(
        "<tr class=\"del\"><td class=\"no\">7</td><td class=\"no\"></td><td class=\"sign\">-</td><td class=\"text\">        total += VALUES[ch]</td></tr>"
    ), "{dom}");
    assert!(dom.contains(
        "<tr class=\"add\"><td class=\"no\"></td><td class=\"no\">8</td><td class=\"sign\">+</td><td class=\"text\">        if i + 1 &lt; len(s) and value &lt; VALUES[s[i + 1]]:</td></tr>"
    ), "{dom}");
    // The first failure at its line: line 8 of iteration 1, `return total`.
    assert!(dom.contains(
        "<tr class=\"fail-line\"><td class=\"no\">8</td><td class=\"text\">    return total<span class=\"fail-note\">^ failed here: AssertionError: expected 1994, got 2216</span></td></tr>"
    ), "{dom}");
    assert!(dom.contains("<h4>Reflection</h4><p>Subtractive pairs such as CM and IV"));
    assert!(dom.contains("<h4>Runtime values</h4>"));
    // The values the failing run recorded, beside its failure (iteration 1's
    // wrong sum at `return total`), escaped: the quotes of the repr stay text.
    assert!(
        dom.contains(
            "<h4>Runtime values</h4><pre>line 7: s='MCMXCIV', total=2211, ch='V'\nline 8: total=2216</pre>"
        ),
        "{dom}"
    );
    assert!(!dom.contains("not recorded by this version"));
    // The final program and its test results.
    assert!(
        dom.contains("<h3>Its tests: <span class=\"run passed\">passed, 7 tests</span></h3>"),
        "{dom}"
    );
    assert!(dom.contains("<li class=\"pass\">test_roman_to_int.py::test_subtractive</li>"));
    // The task's markup stayed text.
    assert!(
        dom.contains("&lt;script&gt;alert('x')&lt;/script&gt;"),
        "{dom}"
    );
    assert!(!dom.contains("<script"));
    // And the page asked the network for nothing.
    assert_eq!(page_requests(&net_log), Vec::<String>::new());

    // The check above sees a page's request: a page with an image elsewhere is caught.
    let control = work.path().join("control.html");
    std::fs::write(
        &control,
        "<!doctype html><p>x</p><img src=\"http://example.invalid/x.png\">",
    )
    .unwrap();
    let control_log = work.path().join("control.json");
    open_in_chromium(
        &browser,
        &control,
        &[
            "--dump-dom".to_string(),
            format!("--log-net-log={}", control_log.display()),
        ],
    );
    assert_eq!(
        page_requests(&control_log),
        ["http://example.invalid/x.png"]
    );

    // A screenshot, kept where a person can look at it.
    let shot = Path::new(env!("CARGO_TARGET_TMPDIR")).join("export_html.png");
    let _ = std::fs::remove_file(&shot);
    open_in_chromium(
        &browser,
        &page,
        &[
            "--window-size=1280,2400".to_string(),
            format!("--screenshot={}", shot.display()),
        ],
    );
    let png = std::fs::read(&shot).unwrap();
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 20_000,
        "{} bytes",
        png.len()
    );
}

/// Damaged lines of a tape are named when it is exported, and a tape cut
/// inside its first line is called cut, not empty.
#[test]
fn export_says_what_it_skipped_of_a_damaged_tape() {
    let rec = demos("export_html");
    let work = tempfile::tempdir().unwrap();
    let roman = rec.by_demo("roman");
    let tape = std::fs::read_to_string(roman.dir.join("tape.jsonl")).unwrap();
    let damaged = work.path().join("damaged");
    std::fs::create_dir_all(&damaged).unwrap();
    let lines: Vec<String> = tape
        .lines()
        .enumerate()
        .map(|(i, l)| {
            if i == 2 {
                "{not an event".to_string()
            } else {
                l.to_string()
            }
        })
        .collect();
    std::fs::write(damaged.join("tape.jsonl"), lines.join("\n") + "\n").unwrap();
    let out = codeloop_in(
        &rec.data_dir,
        work.path(),
        &["export", damaged.to_str().unwrap(), "-o", "d.md"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("1 unreadable line skipped (line 3: "),
        "{}",
        stderr(&out)
    );

    let cut = work.path().join("cut40");
    std::fs::create_dir_all(&cut).unwrap();
    std::fs::write(cut.join("tape.jsonl"), &tape.as_bytes()[..40]).unwrap();
    let out = codeloop_in(
        &rec.data_dir,
        work.path(),
        &["export", cut.to_str().unwrap(), "-o", "c.md"],
    );
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("was cut off after 40 bytes") && !stderr(&out).contains("empty"),
        "{}",
        stderr(&out)
    );
}

/// A session whose model gave no usable plan: the page shows what it
/// replied, not only that there is no plan (issue 21).
#[test]
fn the_page_of_a_session_with_no_plan_shows_the_models_replies() {
    use codeloop::protocol::Usage;
    use codeloop::session::*;
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("noplan");
    std::fs::create_dir_all(&dir).unwrap();
    let events = vec![
        Event::SessionStarted(SessionStartedEvent {
            version: TAPE_VERSION,
            session_id: "noplan".into(),
            started_at: "2026-11-25T01:00:00Z".into(),
            task: "Count the words.".into(),
            inputs: vec![],
            config: ConfigSummary::default(),
        }),
        Event::ModelRequest(ModelRequestEvent {
            call_id: 1,
            purpose: Purpose::Plan,
            tag: "plan".into(),
            messages: vec![],
        }),
        Event::ModelReply(ModelReplyEvent {
            call_id: 1,
            text: "I would split the text on whitespace.".into(),
            usage: Some(Usage::default()),
            duration_ms: 1,
            reasoning: String::new(),
            finish_reason: None,
            usage_estimated: false,
            structured: None,
            prefilled: None,
            stopped: None,
        }),
        Event::PlanError(PlanErrorEvent {
            message: "the reply holds no JSON plan".into(),
        }),
        Event::Finished(FinishedEvent {
            result: FinalResult {
                passed: false,
                nodes_passed: 0,
                nodes_total: 0,
                iterations: 0,
                usage: Usage::default(),
                summary: "no usable plan: the model was asked 1 time".into(),
                output_dir: None,
            },
        }),
    ];
    let tape: String = events
        .into_iter()
        .enumerate()
        .map(|(i, event)| {
            let r = Record {
                seq: i as u64,
                t_ms: i as u64,
                event,
            };
            serde_json::to_string(&r).unwrap() + "\n"
        })
        .collect();
    std::fs::write(dir.join("tape.jsonl"), tape).unwrap();
    let page = work.path().join("noplan.html");
    let out = codeloop_in(
        work.path(),
        work.path(),
        &[
            "export",
            dir.to_str().unwrap(),
            "--format",
            "html",
            "-o",
            page.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        html.contains("I would split the text on whitespace."),
        "{html}"
    );
    assert!(html.contains("The model's reply to plan"), "{html}");
    assert!(html.contains("badge no-plan"), "{html}");
}

/// An iteration run again (a fork whose tests were changed, then passed):
/// the page shows that run's results, without the failure of the run
/// before beside them (issue 21).
#[test]
fn an_iteration_run_again_shows_its_last_run_without_the_failure_before() {
    use codeloop::protocol::{Location, Usage};
    use codeloop::session::*;
    let run = |passed: bool| RunRecord {
        passed,
        exit_code: Some(i32::from(!passed)),
        signal: None,
        limit_hit: None,
        duration_ms: 5,
        dropped_bytes: 0,
        layers: vec![],
        tests_passed: Some(u32::from(passed)),
        tests_failed: Some(u32::from(!passed)),
        failed_tests: Vec::new(),
        resources: None,
    };
    let spec = FunctionSpec {
        name: "double".into(),
        purpose: "twice x".into(),
        inputs: "x: int".into(),
        output: "int".into(),
        depends_on: vec![],
        head: None,
    };
    let events = vec![
        Event::SessionStarted(SessionStartedEvent {
            version: TAPE_VERSION,
            session_id: "rerun".into(),
            started_at: "2026-11-25T01:00:00Z".into(),
            task: "Double a number.".into(),
            inputs: vec![],
            config: ConfigSummary::default(),
        }),
        Event::Plan(PlanEvent { specs: vec![spec] }),
        Event::Code(CodeEvent {
            node: "double".into(),
            iteration: 1,
            code: "def double(x):\n    return x * 2\n".into(),
            source: CodeSource::Model,
            notes: Vec::new(),
        }),
        Event::RunStarted(RunStartedEvent {
            run_id: 1,
            node: Some("double".into()),
            iteration: 1,
            kind: RunKind::NodeTests,
        }),
        Event::RunFinished(RunFinishedEvent {
            run_id: 1,
            record: run(false),
        }),
        Event::Localized(LocalizedEvent {
            node: "double".into(),
            iteration: 1,
            location: Location {
                file: "test_double.py".into(),
                error_type: "AssertionError".into(),
                message: "THE OLD TESTS' FAILURE".into(),
                ..Default::default()
            },
        }),
        Event::RunStarted(RunStartedEvent {
            run_id: 2,
            node: Some("double".into()),
            iteration: 1,
            kind: RunKind::NodeTests,
        }),
        Event::RunFinished(RunFinishedEvent {
            run_id: 2,
            record: run(true),
        }),
        Event::Finished(FinishedEvent {
            result: FinalResult {
                passed: true,
                nodes_passed: 1,
                nodes_total: 1,
                iterations: 0,
                usage: Usage::default(),
                summary: "the function passes its tests".into(),
                output_dir: None,
            },
        }),
    ];
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("rerun");
    std::fs::create_dir_all(&dir).unwrap();
    let tape: String = events
        .into_iter()
        .enumerate()
        .map(|(i, event)| {
            let r = Record {
                seq: i as u64,
                t_ms: i as u64,
                event,
            };
            serde_json::to_string(&r).unwrap() + "\n"
        })
        .collect();
    std::fs::write(dir.join("tape.jsonl"), tape).unwrap();
    let page = work.path().join("rerun.html");
    let out = codeloop_in(
        work.path(),
        work.path(),
        &[
            "export",
            dir.to_str().unwrap(),
            "--format",
            "html",
            "-o",
            page.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        !html.contains("THE OLD TESTS&#39; FAILURE") && !html.contains("THE OLD TESTS"),
        "{html}"
    );
}
