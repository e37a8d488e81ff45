//! The repair loop end to end on the scripted model with real python3 in the
//! real sandbox: assertions on the tape and on the state folded from it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

/// The sandbox helper cargo built for these tests.
const HELPER: &str = env!("CARGO_BIN_EXE_codeloop-engine-child");

use codeloop_engine::{self as engine, EngineHandle, EngineOptions};
use codeloop_llm::scripted::ScriptedReply;
use codeloop_protocol::*;
use codeloop_session::*;
use codeloop_testkit::engine as engine_kit;
use codeloop_testkit::{plan_json, py, reply};

struct Session {
    dir: tempfile::TempDir,
    handle: EngineHandle,
}

fn start(replies: Vec<ScriptedReply>, options: EngineOptions) -> Session {
    let dir = tempfile::tempdir().unwrap();
    let model = engine_kit::scripted(replies);
    let setup = engine_kit::setup(
        "a test task",
        model,
        options,
        dir.path().join("session"),
        HELPER,
    );
    let handle = engine::start(setup).unwrap();
    Session { dir, handle }
}

/// Drain the events until the session ends; the state as the engine's views saw it.
async fn finish(s: Session) -> (State, FinalResult, Vec<Record>, tempfile::TempDir) {
    let (state, result, records) = engine_kit::finish(s.handle, |_| Vec::new()).await;
    (state, result, records, s.dir)
}

const MEAN_BUGGY: &str = "def mean(xs):\n    if not xs:\n        return 0.0\n    total = sum(xs)\n    return total // len(xs)\n";
const MEAN_FIXED: &str = "def mean(xs):\n    if not xs:\n        return 0.0\n    total = sum(xs)\n    return total / len(xs)\n";
const MEAN_TESTS: &str = "def test_empty():\n    assert mean([]) == 0.0\n\ndef test_halves():\n    assert mean([1, 2]) == 1.5\n";

#[tokio::test]
async fn a_failure_is_localized_reflected_on_repaired_and_passes() {
    let s = start(
        vec![
            reply("plan", &plan_json(&[("mean", &[])])),
            reply("tests/mean", &py(MEAN_TESTS)),
            reply("code/mean/1", &py(MEAN_BUGGY)),
            reply(
                "repair/mean/2",
                &format!("Floor division truncates 3 // 2 to 1.\n{}", py(MEAN_FIXED)),
            ),
        ],
        EngineOptions::default(),
    );
    let (state, result, records, dir) = finish(s).await;
    assert!(result.passed, "{}", result.summary);
    assert_eq!(result.iterations, 1);
    let node = &state.nodes["mean"];
    assert_eq!(node.status, NodeStatus::Passed);
    assert_eq!(node.versions.len(), 2);
    assert_eq!(node.versions[1].code, MEAN_FIXED);

    // The failure of iteration 1, localized to the line that returned the wrong value.
    let failure = state
        .failures_of("mean")
        .find(|f| f.iteration == 1)
        .map(|f| f.location.clone())
        .expect("a localized failure");
    assert_eq!(failure.file, "mean.py");
    assert_eq!(failure.line, Some(5));
    assert_eq!(failure.test.as_deref(), Some("test_halves"));
    assert_eq!(failure.expected.as_deref(), Some("1.5"));
    assert_eq!(failure.actual.as_deref(), Some("1"));
    assert!(failure.in_node_code);

    // The reflection is the prose of the repair reply, and the repair prompt
    // carried the localized error.
    assert!(state.history.iter().any(|h| {
        state
            .reflection(h)
            .is_some_and(|r| r.whole && r.text == "Floor division truncates 3 // 2 to 1.")
    }));
    let repair_prompt = state
        .calls
        .values()
        .find(|c| matches!(c.purpose, Purpose::Reflect { .. }))
        .map(|c| c.messages.last().unwrap().content.clone())
        .unwrap();
    assert!(repair_prompt.contains("mean.py:5"), "{repair_prompt}");
    assert!(repair_prompt.contains("expected 1.5"), "{repair_prompt}");

    // Runs: iteration 1 failed, iteration 2 passed, then the program passed.
    let verdicts: Vec<(Option<String>, u32, bool)> = state
        .runs_in_order()
        .map(|(_, r)| {
            (
                r.node.clone(),
                r.iteration,
                r.record.as_ref().unwrap().passed,
            )
        })
        .collect();
    assert_eq!(
        verdicts,
        vec![
            (Some("mean".into()), 1, false),
            (Some("mean".into()), 2, true),
            (None, 0, true),
        ]
    );
    let program_run = state.runs_in_order().next_back().unwrap().1;
    assert!(
        program_run
            .text(Stream::Stdout)
            .contains("2 passed, 0 failed")
    );

    // The tape on disk holds exactly what the views saw, and folds to the same state.
    let tape = read_tape(&dir.path().join("session/tape.jsonl")).unwrap();
    assert_eq!(tape.truncated_tail, None);
    assert_eq!(tape.records, records);
    // Every iteration's code is also a file, and the program is exported.
    let v1 = std::fs::read_to_string(dir.path().join("session/code/mean/1.py")).unwrap();
    assert_eq!(v1, MEAN_BUGGY);
    let out = std::path::PathBuf::from(result.output_dir.unwrap());
    let program = std::fs::read_to_string(out.join("program.py")).unwrap();
    assert!(program.contains("return total / len(xs)"));
    assert!(out.join("test_mean.py").is_file() && out.join("report.md").is_file());
}

#[tokio::test]
async fn a_plan_with_a_cycle_is_reported_and_asked_again() {
    let s = start(
        vec![
            reply("plan", &plan_json(&[("a", &["b"]), ("b", &["a"])])),
            reply("plan/2", &plan_json(&[("a", &[])])),
            reply("tests/a", &py("def test_a():\n    assert a() == 1\n")),
            reply("code/a/1", &py("def a():\n    return 1\n")),
        ],
        EngineOptions::default(),
    );
    let (state, result, records, _dir) = finish(s).await;
    assert!(result.passed, "{}", result.summary);
    let error = records
        .iter()
        .find_map(|r| match &r.event {
            Event::PlanError(PlanErrorEvent { message }) => Some(message.clone()),
            _ => None,
        })
        .unwrap();
    assert!(error.contains("cycle"), "{error}");
    let second = state
        .calls
        .values()
        .filter(|c| c.purpose == Purpose::Plan)
        .nth(1)
        .unwrap();
    assert!(second.messages.last().unwrap().content.contains("cycle"));
}

#[tokio::test]
async fn a_reply_without_code_is_asked_again_and_a_failing_node_blocks_its_dependents() {
    let s = start(
        vec![
            reply("plan", &plan_json(&[("base", &[]), ("top", &["base"])])),
            reply("tests/base", &py("def test_b():\n    assert base() == 2\n")),
            reply("tests/top", &py("def test_t():\n    assert top() == 3\n")),
            reply("code/base/1", "I am not sure how to do that."),
            reply("code/base/1/retry", &py("def base():\n    return 1\n")),
            reply("repair/base/2", &py("def base():\n    return 0\n")),
        ],
        EngineOptions {
            max_iterations: 2,
            ..EngineOptions::default()
        },
    );
    let (state, result, records, _dir) = finish(s).await;
    assert!(!result.passed);
    assert_eq!(state.nodes["base"].status, NodeStatus::GaveUp);
    assert_eq!(state.nodes["base"].versions.len(), 2);
    assert_eq!(state.nodes["top"].status, NodeStatus::Blocked);
    assert!(
        state.nodes["top"].versions.is_empty(),
        "a blocked node is never written"
    );
    assert!(records.iter().any(|r| matches!(&r.event,
        Event::Notice(NoticeEvent { message, .. }) if message.contains("had no code in it"))));
    assert!(
        result.summary.contains("1 of 2") || result.summary.contains("0 of 2"),
        "{}",
        result.summary
    );
}

#[tokio::test]
async fn step_mode_pauses_and_an_edit_made_while_paused_is_what_runs() {
    let mut s = start(
        vec![
            reply("plan", &plan_json(&[("mean", &[])])),
            reply("tests/mean", &py(MEAN_TESTS)),
            reply("code/mean/1", &py(MEAN_BUGGY)),
        ],
        EngineOptions {
            step_mode: true,
            ..EngineOptions::default()
        },
    );
    let mut records = Vec::new();
    let mut edited = false;
    while let Some(r) = s.handle.events.recv().await {
        if let Event::Paused(PausedEvent { step }) = &r.event {
            match step {
                Step::Run {
                    node: Some(n),
                    iteration: 1,
                } if n == "mean" && !edited => {
                    edited = true;
                    s.handle
                        .commands
                        .send(Command::EditCode {
                            node: "mean".into(),
                            code: MEAN_FIXED.into(),
                        })
                        .await
                        .unwrap();
                    s.handle.commands.send(Command::Approve).await.unwrap();
                }
                _ => s.handle.commands.send(Command::Approve).await.unwrap(),
            }
        }
        records.push(r);
    }
    let result = s.handle.done.await.unwrap().unwrap();
    assert!(result.passed, "{}", result.summary);
    let state = State::from_records(&records);
    let node = &state.nodes["mean"];
    assert_eq!(node.versions.len(), 2);
    assert_eq!(node.versions[1].source, CodeSource::Edit);
    // The only node run was of the edited version, and it passed.
    let node_runs: Vec<_> = state
        .runs
        .values()
        .filter(|r| r.node.is_some())
        .map(|r| (r.iteration, r.record.as_ref().unwrap().passed))
        .collect();
    assert_eq!(node_runs, vec![(2, true)]);
    let pauses = records
        .iter()
        .filter(|r| matches!(r.event, Event::Paused(_)))
        .count();
    // plan, tests, code, the run of #1 (edited), the run of #2, and the program needs no pause.
    assert!(pauses >= 4, "{pauses} pauses");
    assert!(state.steers.contains(&Command::EditCode {
        node: "mean".into(),
        code: MEAN_FIXED.into()
    }));
}

#[tokio::test]
async fn cancel_stops_the_session_and_keeps_what_was_done() {
    let mut s = start(
        vec![
            reply("plan", &plan_json(&[("mean", &[])])),
            reply("tests/mean", &py(MEAN_TESTS)),
            reply("code/mean/1", &py(MEAN_BUGGY)),
        ],
        EngineOptions {
            step_mode: true,
            ..EngineOptions::default()
        },
    );
    let mut records = Vec::new();
    while let Some(r) = s.handle.events.recv().await {
        if let Event::Paused(PausedEvent { step }) = &r.event {
            let cmd = if matches!(step, Step::Run { .. }) {
                Command::Cancel
            } else {
                Command::Approve
            };
            s.handle.commands.send(cmd).await.unwrap();
        }
        records.push(r);
    }
    let result = s.handle.done.await.unwrap().unwrap();
    assert!(!result.passed);
    assert!(
        result.summary.starts_with("cancelled"),
        "{}",
        result.summary
    );
    let state = State::from_records(&records);
    assert_eq!(state.nodes["mean"].versions.len(), 1);
    assert!(state.runs.is_empty());
    assert!(state.finished.is_some());
}

#[tokio::test]
async fn a_hint_reaches_the_repair_prompt_and_rerun_runs_a_node_again() {
    let mut s = start(
        vec![
            reply("plan", &plan_json(&[("mean", &[])])),
            reply("tests/mean", &py(MEAN_TESTS)),
            reply("code/mean/1", &py(MEAN_BUGGY)),
            reply("repair/mean/2", &py(MEAN_FIXED)),
        ],
        EngineOptions {
            step_mode: true,
            keep_alive: true,
            ..EngineOptions::default()
        },
    );
    let mut records = Vec::new();
    let mut finished = 0;
    while let Some(r) = s.handle.events.recv().await {
        match &r.event {
            Event::Paused(PausedEvent {
                step:
                    Step::ModelCall {
                        purpose: Purpose::Reflect { .. },
                        ..
                    },
            }) => {
                s.handle
                    .commands
                    .send(Command::Hint {
                        node: "mean".into(),
                        text: "use true division".into(),
                    })
                    .await
                    .unwrap();
                s.handle
                    .commands
                    .send(Command::SetStepMode { on: false })
                    .await
                    .unwrap();
            }
            Event::Paused(_) => s.handle.commands.send(Command::Approve).await.unwrap(),
            Event::Finished(_) => {
                finished += 1;
                if finished == 1 {
                    s.handle
                        .commands
                        .send(Command::RerunNode {
                            node: "mean".into(),
                        })
                        .await
                        .unwrap();
                } else {
                    s.handle.commands.send(Command::Cancel).await.unwrap();
                }
            }
            _ => {}
        }
        records.push(r);
    }
    let result = s.handle.done.await.unwrap().unwrap();
    assert!(result.passed, "{}", result.summary);
    let state = State::from_records(&records);
    let prompt = state
        .calls
        .values()
        .find(|c| matches!(c.purpose, Purpose::Reflect { .. }))
        .map(|c| c.messages.last().unwrap().content.clone())
        .unwrap();
    assert!(prompt.contains("use true division"), "{prompt}");
    // After the first finish, the re-run ran the node's tests once more (iteration 2) and the program again.
    let mean_runs = state
        .runs
        .values()
        .filter(|r| r.node.as_deref() == Some("mean") && r.iteration == 2)
        .count();
    assert_eq!(mean_runs, 2);
    assert_eq!(finished, 2);
    // The cancel that let the idle engine go, after the session passed,
    // is not on the tape (issue 21): it still reads as passed.
    assert!(
        matches!(records.last().unwrap().event, Event::Finished(_)),
        "{:?}",
        records.last().unwrap().event
    );
    assert_eq!(
        codeloop_session::Outcome::of(&state),
        codeloop_session::Outcome::Passed
    );
}

/// Two independent nodes whose tests each take a while.
fn two_slow_nodes() -> Vec<ScriptedReply> {
    let mut replies = vec![reply("plan", &plan_json(&[("a", &[]), ("b", &[])]))];
    for n in ["a", "b"] {
        replies.push(reply(
            &format!("tests/{n}"),
            &py(&format!(
                "import time\n\ndef test_{n}():\n    time.sleep(0.4)\n    assert {n}() == 1\n"
            )),
        ));
        replies.push(reply(
            &format!("code/{n}/1"),
            &py(&format!("def {n}():\n    return 1\n")),
        ));
    }
    replies
}

/// The largest number of node runs in flight at once, read off the tape.
fn max_parallel_runs(records: &[Record]) -> usize {
    let (mut now, mut max) = (0usize, 0usize);
    let mut node_runs = std::collections::BTreeSet::new();
    for r in records {
        match &r.event {
            Event::RunStarted(RunStartedEvent {
                run_id,
                node: Some(_),
                ..
            }) => {
                node_runs.insert(*run_id);
                now += 1;
                max = max.max(now);
            }
            Event::RunFinished(RunFinishedEvent { run_id, .. }) if node_runs.contains(run_id) => {
                now -= 1
            }
            _ => {}
        }
    }
    max
}

#[tokio::test]
async fn independent_nodes_run_in_parallel_within_the_worker_bound() {
    let s = start(
        two_slow_nodes(),
        EngineOptions {
            workers: 2,
            ..EngineOptions::default()
        },
    );
    let (_, result, records, _dir) = finish(s).await;
    assert!(result.passed, "{}", result.summary);
    assert_eq!(max_parallel_runs(&records), 2);

    let s = start(
        two_slow_nodes(),
        EngineOptions {
            workers: 1,
            ..EngineOptions::default()
        },
    );
    let (_, result, records, _dir) = finish(s).await;
    assert!(result.passed, "{}", result.summary);
    assert_eq!(max_parallel_runs(&records), 1);
}

#[tokio::test]
async fn a_spent_token_budget_stops_model_calls_with_a_notice() {
    let mut replies = vec![
        reply("plan", &plan_json(&[("mean", &[])])),
        reply("tests/mean", &py(MEAN_TESTS)),
    ];
    replies[0].usage = Some(codeloop_protocol::Usage::new(400, 100));
    let s = start(
        replies,
        EngineOptions {
            token_budget: 500,
            ..EngineOptions::default()
        },
    );
    let (state, result, records, _dir) = finish(s).await;
    assert!(!result.passed);
    assert_eq!(state.nodes["mean"].status, NodeStatus::GaveUp);
    assert_eq!(state.calls.len(), 1, "only the plan was asked for");
    assert!(records.iter().any(|r| matches!(&r.event,
        Event::Notice(NoticeEvent { message, .. }) if message.contains("token budget (500 tokens) is spent"))));
}

#[tokio::test]
async fn tests_that_do_not_load_are_asked_for_again_not_blamed_on_the_code() {
    let s = start(
        vec![
            reply("plan", &plan_json(&[("mean", &[])])),
            reply(
                "tests/mean",
                &py("def test_a(:\n    assert mean([2]) == 2\n"),
            ),
            reply("code/mean/1", &py(MEAN_FIXED)),
            reply("tests/mean/2", &py(MEAN_TESTS)),
        ],
        EngineOptions::default(),
    );
    let (state, result, _, _dir) = finish(s).await;
    assert!(result.passed, "{}", result.summary);
    let node = &state.nodes["mean"];
    assert_eq!(node.versions.len(), 1, "the code was never changed");
    assert_eq!(node.tests.as_deref(), Some(MEAN_TESTS));
    let failure = state.failures[0].location.clone();
    assert_eq!(
        (failure.file.as_str(), failure.error_type.as_str()),
        ("test_mean.py", "SyntaxError")
    );
    assert!(!failure.in_node_code);
}

fn spec(name: &str, purpose: &str, deps: &[&str]) -> FunctionSpec {
    FunctionSpec {
        name: name.into(),
        purpose: purpose.into(),
        inputs: "x".into(),
        output: "y".into(),
        depends_on: deps.iter().map(|d| d.to_string()).collect(),
        head: None,
    }
}

#[tokio::test]
async fn a_bad_spec_edit_is_refused_on_the_tape_and_the_session_goes_on_with_the_old_spec() {
    let mut s = start(
        vec![
            reply("plan", &plan_json(&[("a", &[]), ("b", &["a"])])),
            reply("tests/a", &py("def test_a():\n    assert a() == 1\n")),
            reply("code/a/1", &py("def a():\n    return 1\n")),
            reply("tests/b", &py("def test_b():\n    assert b() == 2\n")),
            reply("code/b/1", &py("def b():\n    return a() + 1\n")),
        ],
        EngineOptions {
            step_mode: true,
            ..EngineOptions::default()
        },
    );
    let edits = [
        // A cycle: b already depends on a.
        ("a", spec("a", "a", &["b"])),
        // A dependency that is not in the plan.
        ("b", spec("b", "b", &["missing"])),
        // A rename (to a name that is not even a Python identifier).
        ("a", spec("1a", "a", &[])),
        // A node that is not in the plan.
        ("zzz", spec("zzz", "z", &[])),
        // And one good edit, made while paused, that the next call reads.
        ("a", spec("a", "return one, edited", &[])),
    ];
    let mut records = Vec::new();
    let mut edited = false;
    while let Some(r) = s.handle.events.recv().await {
        if let Event::Paused(PausedEvent { step }) = &r.event {
            if matches!(step, Step::ModelCall { purpose: Purpose::Tests { node }, .. } if node == "a")
                && !edited
            {
                edited = true;
                for (node, spec) in &edits {
                    s.handle
                        .commands
                        .send(Command::EditSpec {
                            node: node.to_string(),
                            spec: spec.clone(),
                        })
                        .await
                        .unwrap();
                }
                s.handle
                    .commands
                    .send(Command::SetStepMode { on: false })
                    .await
                    .unwrap();
            } else {
                s.handle.commands.send(Command::Approve).await.unwrap();
            }
        }
        records.push(r);
    }
    let result = s.handle.done.await.unwrap().unwrap();
    assert!(edited);
    assert!(result.passed, "{}", result.summary);

    // Each bad edit is a plan error and an error notice on the tape, in the order sent.
    let refused: Vec<String> = records
        .iter()
        .filter_map(|r| match &r.event {
            Event::PlanError(PlanErrorEvent { message }) => Some(message.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(refused.len(), 4, "{refused:?}");
    assert!(
        refused[0].contains("`a`") && refused[0].contains("cycle"),
        "{}",
        refused[0]
    );
    assert!(
        refused[1].contains("`missing`, which is not in the plan"),
        "{}",
        refused[1]
    );
    assert!(
        refused[2].contains("cannot rename `a` to `1a`"),
        "{}",
        refused[2]
    );
    assert!(
        refused[3].contains("`zzz` is not in the plan"),
        "{}",
        refused[3]
    );
    let notices = records
        .iter()
        .filter(|r| matches!(&r.event,
            Event::Notice(NoticeEvent { level: NoticeLevel::Error, message })
                if message.contains("is refused") && message.contains("goes on with the spec it had")))
        .count();
    assert_eq!(notices, 4);

    // The plan is the old one but for the good edit, and the call after it read it.
    let state = State::from_records(&records);
    assert_eq!(
        state.specs,
        vec![spec("a", "return one, edited", &[]), spec("b", "b", &["a"])]
    );
    assert_eq!(state.nodes["a"].spec, state.specs[0]);
    let tests_prompt = state
        .calls
        .values()
        .find(|c| c.purpose == Purpose::Tests { node: "a".into() })
        .map(|c| c.messages.last().unwrap().content.clone())
        .unwrap();
    assert!(
        tests_prompt.contains("purpose: return one, edited"),
        "{tests_prompt}"
    );
    assert_eq!(state.nodes["b"].status, NodeStatus::Passed);
    // Every edit, refused or not, is on the tape as the person's command.
    let spec_edits = state
        .steers
        .iter()
        .filter(|c| matches!(c, Command::EditSpec { .. }))
        .count();
    assert_eq!(spec_edits, 5);
}

#[tokio::test]
async fn code_edited_after_the_session_finished_runs_again_once_and_the_session_finishes_again() {
    let mut s = start(
        vec![
            reply("plan", &plan_json(&[("mean", &[])])),
            reply("tests/mean", &py(MEAN_TESTS)),
            reply("code/mean/1", &py(MEAN_BUGGY)),
        ],
        EngineOptions {
            max_iterations: 1,
            keep_alive: true,
            ..EngineOptions::default()
        },
    );
    let mut records = Vec::new();
    let mut results = Vec::new();
    while let Some(r) = s.handle.events.recv().await {
        if let Event::Finished(FinishedEvent { result }) = &r.event {
            results.push(result.clone());
            let next = if results.len() == 1 {
                Command::EditCode {
                    node: "mean".into(),
                    code: MEAN_FIXED.into(),
                }
            } else {
                Command::Cancel
            };
            s.handle.commands.send(next).await.unwrap();
        }
        records.push(r);
    }
    let result = s.handle.done.await.unwrap().unwrap();
    assert_eq!(results.len(), 2, "{results:?}");
    assert!(!results[0].passed, "{}", results[0].summary);
    assert!(results[1].passed && result.passed, "{}", result.summary);
    let state = State::from_records(&records);
    let node = &state.nodes["mean"];
    assert_eq!(node.versions[1].source, CodeSource::Edit);
    assert!(
        !node.queued,
        "the pass that ran the edit took it off the queue"
    );
    let node_runs: Vec<(u32, bool)> = state
        .runs_in_order()
        .map(|(_, r)| r)
        .filter(|r| r.node.is_some())
        .map(|r| (r.iteration, r.record.as_ref().unwrap().passed))
        .collect();
    assert_eq!(node_runs, vec![(1, false), (2, true)]);
}

#[tokio::test]
async fn a_spent_budget_is_noticed_once_however_many_nodes_it_stops() {
    let mut replies = vec![reply(
        "plan",
        &plan_json(&[("a", &[]), ("b", &[]), ("c", &[])]),
    )];
    replies[0].usage = Some(codeloop_protocol::Usage::new(400, 100));
    let s = start(
        replies,
        EngineOptions {
            token_budget: 500,
            workers: 3,
            ..EngineOptions::default()
        },
    );
    let (state, result, records, _dir) = finish(s).await;
    assert!(!result.passed);
    assert!(state.nodes.values().all(|n| n.status == NodeStatus::GaveUp));
    let budget_notices = records
        .iter()
        .filter(|r| {
            matches!(&r.event,
            Event::Notice(NoticeEvent { message, .. }) if message.contains("token budget (500 tokens) is spent"))
        })
        .count();
    assert_eq!(budget_notices, 1);
}

/// A run that prints line by line (the sandbox runs Python unbuffered,
/// `-u`) reaches the reader in pieces of a few lines each: a million-line
/// flood came as 93,324 output records, each a record the tape, the
/// workbench's timeline and every reader hold (`cargo bench --bench tui`:
/// 62.5 MB at the flood's peak). Gathered, a run's output is a few records
/// a second, every line kept in its order.
#[tokio::test]
async fn a_run_printing_line_by_line_goes_on_the_tape_in_few_records_nothing_lost() {
    const LINES: usize = 50_000;
    let tests = format!(
        "def test_loud():\n    for i in range({LINES}):\n        print(f'line {{i}}')\n    assert loud() == 1\n"
    );
    let s = start(
        vec![
            reply("plan", &plan_json(&[("loud", &[])])),
            reply("tests/loud", &py(&tests)),
            reply("code/loud/1", &py("def loud():\n    return 1\n")),
        ],
        EngineOptions::default(),
    );
    let (_, result, records, _dir) = finish(s).await;
    assert!(result.passed, "{}", result.summary);
    // The function's run (the program's runs the same tests again).
    let run_id = records
        .iter()
        .find_map(|r| match &r.event {
            Event::RunStarted(e) if e.kind == RunKind::NodeTests => Some(e.run_id),
            _ => None,
        })
        .unwrap();
    let outputs: Vec<&OutputEvent> = records
        .iter()
        .filter_map(|r| match &r.event {
            Event::Output(e) if e.run_id == run_id && e.stream == Stream::Stdout => Some(e),
            _ => None,
        })
        .collect();
    let text: String = outputs.iter().map(|e| e.text.as_str()).collect();
    let lines: Vec<&str> = text.lines().filter(|l| l.starts_with("line ")).collect();
    assert_eq!(lines.len(), LINES, "every line on the tape");
    assert!(
        lines
            .iter()
            .enumerate()
            .all(|(i, l)| *l == format!("line {i}")),
        "in their order"
    );
    assert!(
        outputs.len() < 100,
        "{} output records for {LINES} lines",
        outputs.len()
    );
}
