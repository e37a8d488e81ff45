//! `codeloop bench` on a small HumanEval-format set with scripted replies:
//! one problem passes at once, one fails, is repaired, and passes.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

use std::ffi::OsStr;
use std::path::Path;
use std::process::{Command, Output};

use codeloop::session::{Event, ModelRequestEvent, read_tape};

use codeloop_testkit::cli::fixture;

/// `codeloop bench PROBLEMS ARGS` with its data in `dir` and no config
/// file, in oracle feedback: most of these replies are code only, and the
/// problems' tests are the node's.
fn bench(problems: &Path, args: &[&OsStr], dir: &Path) -> Output {
    bench_from("hidden", problems, args, dir)
}

/// The same with `feedback` (`--feedback own` or `hidden`).
fn bench_from(feedback: &str, problems: &Path, args: &[&OsStr], dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_codeloop"))
        .arg("bench")
        .arg(problems)
        .args(["--feedback", feedback])
        .args(args)
        .env("CODELOOP_DATA_DIR", dir.join("data"))
        .env("CODELOOP_CONFIG", dir.join("none.toml"))
        .output()
        .unwrap()
}

#[test]
fn bench_reports_first_try_and_after_repair_and_never_shows_the_tests() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("results.jsonl");
    let replies = fixture("bench_replies.jsonl");
    let output = bench(
        &fixture("bench_problems.jsonl"),
        &[
            "--scripted".as_ref(),
            replies.as_os_str(),
            "--out".as_ref(),
            out.as_os_str(),
        ],
        dir.path(),
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("pass@1 first try:    50.0% (1/2)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("pass@1 after repair: 100.0% (2/2)"),
        "{stdout}"
    );

    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[1]["task_id"], "T/1");
    assert_eq!(lines[1]["passed_first"], false);
    assert_eq!(lines[1]["passed_final"], true);
    assert_eq!(lines[1]["iterations"], 2);
    assert_eq!(lines[1]["first_failure"]["line"], 2);
    assert_eq!(lines[1]["first_failure"]["expected"], "2");
    assert_eq!(lines[1]["first_failure"]["actual"], "3");
    // The repair figures: the version that first passed, the attempts by kind.
    assert_eq!(lines[1]["passed_at"], 2);
    assert_eq!(lines[1]["repairs"], 1);
    assert_eq!(lines[1]["fresh_starts"], 0);
    assert_eq!(lines[1]["test_fixes"], 0);
    assert_eq!(lines[0]["passed_at"], 1);
    assert_eq!(lines[0]["repairs"], 0);
    assert!(
        stdout.contains("  after repair 1:    100.0% (2/2)\n"),
        "{stdout}"
    );
    assert!(stdout.contains("repairs: 1 ("), "{stdout}");
    // The share of prompts a prompt cache could reuse, per problem and overall:
    // T/0 made one call (nothing earlier to share), T/1's repair began as its
    // first call did.
    assert_eq!(lines[0]["prefix_chars"], 0);
    // What each problem's runs used.
    for line in &lines {
        assert!(line["runs"].as_u64().unwrap() >= 1, "{line}");
        assert!(
            line["resources"]["peak_rss_bytes"].as_u64().unwrap() > 0,
            "{line}"
        );
    }
    let (reused, total) = (
        lines[1]["prefix_chars"].as_u64().unwrap(),
        lines[1]["prompt_chars"].as_u64().unwrap(),
    );
    assert!(reused > 0 && reused < total, "{}", lines[1]);
    let all = total + lines[0]["prompt_chars"].as_u64().unwrap();
    let overall = 100.0 * reused as f64 / all as f64;
    assert!(
        stdout.contains(&format!(
            "prompt prefix reused: {overall:.0}% of {all} characters (an estimate"
        )),
        "{stdout}"
    );
    assert!(
        stderr.contains(&format!(
            "prompt prefix reused {:.0}%)",
            100.0 * reused as f64 / total as f64
        )),
        "{stderr}"
    );

    // The model saw the problem and the localized failure, never `check`.
    let tape = read_tape(std::path::Path::new(lines[1]["tape"].as_str().unwrap())).unwrap();
    let prompts: Vec<String> = tape
        .records
        .iter()
        .filter_map(|r| match &r.event {
            Event::ModelRequest(ModelRequestEvent { messages, .. }) => Some(
                messages
                    .iter()
                    .map(|m| m.content.clone())
                    .collect::<String>(),
            ),
            _ => None,
        })
        .collect();
    assert_eq!(prompts.len(), 2);
    assert!(prompts.iter().all(|p| !p.contains("def check")));
    assert!(prompts[1].contains("expected 2, got 3"), "{}", prompts[1]);
    // A benchmark's tests are never the model's to blame or change.
    assert!(!prompts[1].contains("Verdict"), "{}", prompts[1]);
}

/// A loopback server that lists a model and refuses every chat request with
/// HTTP 401, as a hosted API does for a bad key. Serves until the test ends.
fn bad_key_server() -> String {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for mut socket in listener.incoming().flatten() {
            let mut head = Vec::new();
            let mut buf = [0u8; 4096];
            // Read the head and whatever body came with it; the answer does not depend on it.
            while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                match socket.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => head.extend_from_slice(&buf[..n]),
                }
            }
            let text = String::from_utf8_lossy(&head);
            let (status, body) = if text.starts_with("GET /v1/models") {
                ("200 OK", r#"{"object":"list","data":[{"id":"m"}]}"#)
            } else {
                (
                    "401 Unauthorized",
                    r#"{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}"#,
                )
            };
            let _ = socket.write_all(
                format!(
                    "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                )
                .as_bytes(),
            );
        }
    });
    url
}

#[test]
fn problems_whose_model_calls_failed_are_errors_apart_from_the_score() {
    let dir = tempfile::tempdir().unwrap();
    let bench_to = |extra: &[&str], out: &Path| {
        let mut args: Vec<&OsStr> = extra.iter().map(OsStr::new).collect();
        args.extend([OsStr::new("--out"), out.as_os_str()]);
        bench(&fixture("bench_problems.jsonl"), &args, dir.path())
    };

    // A bad key: every problem is an error, none is scored, exit 1.
    let out = dir.path().join("bad_key.jsonl");
    let output = bench_to(&["--base-url", &bad_key_server(), "--model", "m"], &out);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(
        stdout.starts_with("pass@1: no problem was measured\nerrors: 2 problems not measured, left out of pass@1:\n  T/0: model call failed: "),
        "{stdout}"
    );
    assert!(stdout.contains("HTTP 401"), "{stdout}");
    assert!(
        stderr.contains("T/0              ERROR, not scored: model call failed"),
        "{stderr}"
    );
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    assert!(lines.iter().all(|l| l["status"] == "error"));
    assert!(
        lines[0]["error"].as_str().unwrap().contains("401"),
        "{}",
        lines[0]
    );

    // One problem answered, one whose call failed: the score is over the one measured.
    let replies = dir.path().join("replies.jsonl");
    let first_only: String = std::fs::read_to_string(fixture("bench_replies.jsonl"))
        .unwrap()
        .lines()
        .filter(|l| l.contains("code/total/"))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&replies, first_only).unwrap();
    let out = dir.path().join("half.jsonl");
    let output = bench_to(&["--scripted", replies.to_str().unwrap()], &out);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.starts_with(
            "feedback: ORACLE feedback (hidden tests shown to the repairs)\npass@1 first try:    100.0% (1/1)\npass@1 after repair: 100.0% (1/1)\nerrors: 1 problem not measured, left out of pass@1:\n  T/1: model call failed: the scripted model has no reply left"
        ),
        "{stdout}"
    );
}

#[test]
fn compare_prints_two_results_files_side_by_side() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("values.jsonl");
    let b = dir.path().join("plain.jsonl");
    // The first line of each is in the format before the repair figures.
    std::fs::write(
        &a,
        concat!(
            r#"{"task_id":"T/0","status":"passed","passed_first":true,"passed_final":true,"iterations":1,"first_failure":null,"summary":""}"#,
            "\n",
            r#"{"task_id":"T/1","status":"passed","passed_first":false,"passed_final":true,"iterations":2,"passed_at":2,"prompt_tokens":100,"completion_tokens":20,"model_ms":1500,"repairs":1,"repairs_with_values":1}"#,
            "\n"
        ),
    )
    .unwrap();
    std::fs::write(
        &b,
        concat!(
            r#"{"task_id":"T/0","status":"passed","passed_first":true,"passed_final":true,"iterations":1,"first_failure":null,"summary":""}"#,
            "\n",
            r#"{"task_id":"T/1","status":"failed","passed_first":false,"passed_final":false,"iterations":4,"prompt_tokens":300,"completion_tokens":60,"model_ms":4000,"repairs":3,"fresh_starts":1}"#,
            "\n"
        ),
    )
    .unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_codeloop"))
        .args(["bench", "--compare"])
        .arg(&a)
        .arg(&b)
        .env("CODELOOP_DATA_DIR", dir.path().join("data"))
        .env("CODELOOP_CONFIG", dir.path().join("none.toml"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let rows: Vec<Vec<&str>> = stdout
        .lines()
        .map(|l| {
            l.split("  ")
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .collect()
        })
        .collect();
    let row = |name: &str| {
        rows.iter()
            .find(|r| r.first() == Some(&name))
            .unwrap_or_else(|| panic!("no row {name}: {stdout}"))
            .clone()
    };
    assert_eq!(
        row("pass@1 first try"),
        ["pass@1 first try", "50.0% (1/2)", "50.0% (1/2)"]
    );
    assert_eq!(
        row("pass@1 after repair 1"),
        ["pass@1 after repair 1", "100.0% (2/2)", "50.0% (1/2)", "*"]
    );
    assert_eq!(
        row("pass@1 final"),
        ["pass@1 final", "100.0% (2/2)", "50.0% (1/2)", "*"]
    );
    assert_eq!(row("tokens"), ["tokens", "120", "360", "*"]);
    assert_eq!(row("model time"), ["model time", "1.5 s", "4.0 s", "*"]);
    assert_eq!(
        row("with runtime values"),
        ["with runtime values", "1", "0", "*"]
    );
    assert_eq!(row("fresh starts"), ["fresh starts", "0", "1", "*"]);
    assert!(
        stdout
            .contains("problems that differ (1):\n  T/1: pass at version 2 | FAIL (4 versions)\n"),
        "{stdout}"
    );
}

/// Each call's figures, per problem and over the set, from scripted
/// replies: the first reply to T/0 has no code and is asked once more (a
/// wasted call); T/1 fails, is repaired and passes. The times to first
/// token are scripted (instant), so only their presence is asserted.
#[test]
fn bench_keeps_each_calls_figures_and_the_wasted_ones() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("results.jsonl");
    let page = dir.path().join("bench.html");
    let replies = dir.path().join("replies.jsonl");
    let lines = [
        serde_json::json!({"tag": "code/total/1", "text": "I would add them up with a loop.",
            "usage": {"prompt_tokens": 200, "completion_tokens": 9}}),
        serde_json::json!({"tag": "code/total/1/retry",
            "text": "```python\ndef total(xs: List[int]) -> int:\n    return sum(xs)\n```",
            "usage": {"prompt_tokens": 240, "completion_tokens": 20}}),
        serde_json::json!({"tag": "code/middle/1",
            "text": "```python\ndef middle(xs):\n    return xs[len(xs) // 2 + 1]\n```",
            "usage": {"prompt_tokens": 180, "completion_tokens": 21}}),
        serde_json::json!({"tag": "repair/middle/2",
            "text": "Off by one.\n```python\ndef middle(xs):\n    return xs[len(xs) // 2]\n```",
            "usage": {"prompt_tokens": 400, "completion_tokens": 25}}),
    ];
    std::fs::write(
        &replies,
        lines.iter().map(|l| format!("{l}\n")).collect::<String>(),
    )
    .unwrap();
    let output = bench(
        &fixture("bench_problems.jsonl"),
        &[
            "--scripted".as_ref(),
            replies.as_os_str(),
            "--workers".as_ref(),
            "1".as_ref(),
            "--out".as_ref(),
            out.as_os_str(),
            "--html".as_ref(),
            page.as_os_str(),
        ],
        dir.path(),
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    let results: Vec<serde_json::Value> = std::fs::read_to_string(&out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let (t0, t1) = (&results[0], &results[1]);
    // T/0: the reply with no code was not used; the one asked again was.
    let calls = t0["per_call"].as_array().unwrap();
    assert_eq!(calls.len(), 2, "{t0}");
    assert_eq!(calls[0]["tag"], "code/total/1");
    assert_eq!(calls[0]["waste"], "unused");
    assert_eq!(calls[0]["prompt_tokens"], 200);
    assert_eq!(calls[1]["tag"], "code/total/1/retry");
    assert!(calls[1].get("waste").is_none(), "{t0}");
    assert_eq!(calls[1]["prompt_tokens"], 240);
    assert_eq!(t0["wasted_calls"], 1);
    assert_eq!(
        (
            t0["prompt_tokens"].as_u64(),
            t0["completion_tokens"].as_u64()
        ),
        (Some(440), Some(29))
    );
    for call in calls {
        assert!(call["first_token_ms"].is_u64(), "{call}");
    }
    assert!(t0["first_token_median_ms"].is_u64() && t0["first_token_p90_ms"].is_u64());
    // T/1: two calls, both used: the first code, then its repair.
    assert_eq!(t1["wasted_calls"], 0);
    let tags: Vec<&str> = t1["per_call"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["tag"].as_str().unwrap())
        .collect();
    assert_eq!(tags, ["code/middle/1", "repair/middle/2"]);
    // The prefix across problems: T/0 had nothing before it; T/1's first
    // request begins as T/0's did (the system prompt, the instructions).
    assert_eq!(t0["first_request_shared_chars"], 0);
    assert!(t0["first_request_chars"].as_u64().unwrap() > 0);
    let (shared, of) = (
        t1["first_request_shared_chars"].as_u64().unwrap(),
        t1["first_request_chars"].as_u64().unwrap(),
    );
    assert!(shared > 100 && shared < of, "{t1}");
    // The summary says it over the set, and each problem's line its own.
    assert!(
        stdout.contains("calls: 4, 1 wasted (1 unusable or refused)\n"),
        "{stdout}"
    );
    assert!(
        stdout.contains("; prompt tokens per call: median 200, most 400\n"),
        "{stdout}"
    );
    let across = 100.0 * shared as f64 / (of + t0["first_request_chars"].as_u64().unwrap()) as f64;
    assert!(
        stdout.contains(&format!("prompt prefix across problems: {across:.0}% of ")),
        "{stdout}"
    );
    assert!(
        stderr.contains(") · 2 calls, 1 wasted, first token "),
        "{stderr}"
    );
    // The page shows them beside the chart.
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        html.contains("<tr><th>wasted calls</th><td>1 wasted (1 unusable or refused)</td></tr>"),
        "{html}"
    );
    assert!(
        html.contains("<tr><th>tokens in</th><td>1020</td></tr>"),
        "{html}"
    );
    // And each call of each problem, with why a reply was not used.
    assert!(
        html.contains("code/total/1: 200 tokens, ")
            && html.contains(" (unusable or refused)<br>code/total/1/retry: 240 tokens, "),
        "{html}"
    );
}

/// Problems start in their order, one worker or several: a server's cache
/// then sees them as the results file lists them (the prefix shared across
/// problems is counted in that order). With one worker, each ends before
/// the next starts, so their progress lines come in that order too.
#[test]
fn problems_start_in_their_order() {
    let dir = tempfile::tempdir().unwrap();
    let problems = dir.path().join("problems.jsonl");
    let replies = dir.path().join("replies.jsonl");
    let names: Vec<String> = (0..6).map(|k| format!("same_{k}")).collect();
    let mut problem_lines = String::new();
    let mut reply_lines = String::new();
    for (k, name) in names.iter().enumerate() {
        problem_lines.push_str(&format!(
            "{}\n",
            serde_json::json!({
                "task_id": format!("T/{k}"),
                "prompt": format!("def {name}(x):\n    \"\"\"Return x.\"\"\"\n"),
                "test": "def check(candidate):\n    assert candidate(1) == 1\n",
                "entry_point": name,
            })
        ));
        reply_lines.push_str(&format!(
            "{}\n",
            serde_json::json!({
                "tag": format!("code/{name}/1"),
                "text": format!("```python\ndef {name}(x):\n    return x\n```"),
            })
        ));
    }
    std::fs::write(&problems, problem_lines).unwrap();
    std::fs::write(&replies, reply_lines).unwrap();
    let out = dir.path().join("results.jsonl");
    let output = bench(
        &problems,
        &[
            "--scripted".as_ref(),
            replies.as_os_str(),
            "--workers".as_ref(),
            "1".as_ref(),
            "--out".as_ref(),
            out.as_os_str(),
        ],
        dir.path(),
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let order: Vec<&str> = stderr
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("T/"))
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    assert_eq!(order, ["0", "1", "2", "3", "4", "5"], "{stderr}");
}

/// Own-test feedback (the default): the loop works from the docstring's
/// example and the model's own tests; the problems' hidden `check` never
/// reaches the engine (not in a prompt, not on a tape) and judges every
/// version afterwards. T/0's code passes its own tests and fails the hidden
/// ones (a false pass, counted and listed); T/1 is repaired from its own
/// failing test and passes both.
#[test]
fn own_feedback_repairs_from_its_own_tests_and_the_hidden_ones_only_judge() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("results.jsonl");
    let replies = dir.path().join("replies.jsonl");
    let reply = |tag: &str, text: &str| serde_json::json!({"tag": tag, "text": text}).to_string();
    std::fs::write(
        &replies,
        [
            reply(
                "tests/total",
                "```python\ndef test_total():\n    assert total([3]) == 3\n```",
            ),
            reply(
                "code/total/1",
                "```python\ndef total(xs: List[int]) -> int:\n    return 3 if xs == [1, 2] else xs[0]\n```",
            ),
            reply(
                "tests/middle",
                "```python\ndef test_middle():\n    assert middle([1, 2, 3]) == 2\n```",
            ),
            reply(
                "code/middle/1",
                "```python\ndef middle(xs):\n    return xs[len(xs) // 2 + 1]\n```",
            ),
            reply(
                "repair/middle/2",
                "Off by one.\n```python\ndef middle(xs):\n    return xs[len(xs) // 2]\n```",
            ),
        ]
        .join("\n"),
    )
    .unwrap();
    let output = bench_from(
        "own",
        &fixture("bench_problems.jsonl"),
        &[
            "--scripted".as_ref(),
            replies.as_os_str(),
            "--out".as_ref(),
            out.as_os_str(),
        ],
        dir.path(),
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("feedback: own tests (hidden tests only judge)"),
        "{stderr}"
    );
    assert!(
        stdout.contains("feedback: own tests (hidden tests only judge)\n"),
        "{stdout}"
    );
    assert!(
        stdout.contains("false passes 1 (50.0% of problems; own tests passed, hidden failed) (T/0); false fails 0"),
        "{stdout}"
    );
    assert!(
        stdout.contains("pass@1 after repair: 50.0% (1/2)"),
        "{stdout}"
    );
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0]["feedback"], "own");
    assert_eq!(lines[0]["status"], "failed");
    assert_eq!(
        lines[0]["verdicts"],
        serde_json::json!({"own_first": true, "own_final": true, "hidden": [false]})
    );
    assert_eq!(lines[1]["status"], "passed");
    assert_eq!(
        lines[1]["verdicts"],
        serde_json::json!({"own_first": false, "own_final": true, "hidden": [false, true]})
    );
    assert_eq!(lines[1]["passed_at"], 2);
    // The hidden tests are nowhere the engine writes: no prompt, no tape.
    for line in &lines {
        let tape = std::fs::read_to_string(line["tape"].as_str().unwrap()).unwrap();
        assert!(!tape.contains("candidate("), "{tape}");
        assert!(
            tape.contains("\"kind\":\"tests\"") || tape.contains("test_"),
            "{tape}"
        );
    }
}

/// The results file is written beside the problems by default, in a
/// folder that may be shared: a link planted at its name (to a file of
/// the person's) or a FIFO is refused, never followed, emptied nor waited
/// on; so is a link at the page's name (`--html`). What it writes is private.
#[test]
fn bench_writes_no_results_nor_page_through_a_link_or_fifo_planted_there() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let shared = dir.path().join("shared");
    std::fs::create_dir(&shared).unwrap();
    let problems = shared.join("set.jsonl");
    std::fs::copy(fixture("bench_problems.jsonl"), &problems).unwrap();
    let mine = dir.path().join("mine");
    std::fs::write(&mine, "mine").unwrap();
    let results = shared.join("set_bench.jsonl");
    std::os::unix::fs::symlink(&mine, &results).unwrap();
    let replies = fixture("bench_replies.jsonl");
    let scripted = ["--scripted".as_ref(), replies.as_os_str()];
    let out = bench(&problems, &scripted, dir.path());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("is a symbolic link"), "{stderr}");
    assert_eq!(std::fs::read_to_string(&mine).unwrap(), "mine");

    std::fs::remove_file(&results).unwrap();
    assert!(
        Command::new("mkfifo")
            .arg(&results)
            .status()
            .unwrap()
            .success()
    );
    let out = bench(&problems, &scripted, dir.path());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("FIFO"), "{stderr}");

    std::fs::remove_file(&results).unwrap();
    let page = shared.join("page.html");
    std::os::unix::fs::symlink(&mine, &page).unwrap();
    let out = bench(
        &problems,
        &[
            scripted[0],
            scripted[1],
            "--html".as_ref(),
            page.as_os_str(),
        ],
        dir.path(),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("is a symbolic link"), "{stderr}");
    assert_eq!(std::fs::read_to_string(&mine).unwrap(), "mine");
    let mode = std::fs::metadata(&results).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "the results are private");
}
