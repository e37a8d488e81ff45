//! The repair loop's repairs, scripted with real python3 in the real
//! sandbox: runtime values in the repair prompt, a test blamed and fixed by
//! the model (approved or rejected in step mode), a fresh start after two
//! failed repairs, and a node that redefines its dependency caught before it runs.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

/// The sandbox helper cargo built for these tests.
const HELPER: &str = env!("CARGO_BIN_EXE_codeloop-engine-child");

use std::sync::Arc;

use codeloop_engine::{self as engine, EngineHandle, EngineOptions, RepairPolicy};
use codeloop_llm::scripted::{Pacing, ScriptedModel, ScriptedReply};
use codeloop_session::*;
use codeloop_testkit::engine as engine_kit;
use codeloop_testkit::{messages_of, plan_json, prompt_of, py, reply};

fn start(replies: Vec<ScriptedReply>, options: EngineOptions) -> (tempfile::TempDir, EngineHandle) {
    start_task("a test task", replies, options)
}

fn start_task(
    task: &str,
    replies: Vec<ScriptedReply>,
    options: EngineOptions,
) -> (tempfile::TempDir, EngineHandle) {
    let dir = tempfile::tempdir().unwrap();
    let model = engine_kit::scripted(replies);
    let setup = engine_kit::setup(task, model, options, dir.path().join("session"), HELPER);
    (dir, engine::start(setup).unwrap())
}

/// Run to the end; in step mode, `on_pause` answers each pause.
async fn finish(
    replies: Vec<ScriptedReply>,
    options: EngineOptions,
    on_pause: impl Fn(&Step) -> Command,
) -> (State, FinalResult, Vec<Record>) {
    let (_dir, handle) = start(replies, options);
    engine_kit::finish(handle, |s| [on_pause(s)]).await
}

fn attempts(records: &[Record]) -> Vec<(String, u32, AttemptKind, bool)> {
    records
        .iter()
        .filter_map(|r| match &r.event {
            Event::Attempt(AttemptEvent {
                node,
                iteration,
                kind,
                runtime_values,
            }) => Some((node.clone(), *iteration, *kind, *runtime_values)),
            _ => None,
        })
        .collect()
}

const LEN_TESTS: &str = "def test_total():\n    assert total_len([\"ab\", \"c\"]) == 3\n";
const LEN_BUGGY: &str = "def total_len(words):\n    total = 0\n    for w in words:\n        total += len(w) + 1\n    return total\n";
const LEN_FIXED: &str = "def total_len(words):\n    total = 0\n    for w in words:\n        total += len(w)\n    return total\n";

fn len_script() -> Vec<ScriptedReply> {
    vec![
        reply("plan", &plan_json(&[("total_len", &[])])),
        reply("tests/total_len", &py(LEN_TESTS)),
        reply("code/total_len/1", &py(LEN_BUGGY)),
        reply(
            "repair/total_len/2",
            &format!(
                "Each word adds one too many.\nVerdict: code\n{}",
                py(LEN_FIXED)
            ),
        ),
    ]
}

#[tokio::test]
async fn the_repair_prompt_carries_the_runtime_values_at_the_failing_line() {
    let (state, result, records) =
        finish(len_script(), EngineOptions::default(), |_| Command::Approve).await;
    assert!(result.passed, "{}", result.summary);
    let location = records
        .iter()
        .find_map(|r| match &r.event {
            Event::Localized(LocalizedEvent { location, .. }) => Some(location.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(location.line, Some(5), "{location:?}");
    let at_return = location
        .values
        .iter()
        .rev()
        .find(|s| s.line == 5)
        .unwrap_or_else(|| panic!("no snapshot at the return line: {:?}", location.values));
    assert!(
        at_return
            .vars
            .contains(&("total".to_string(), "5".to_string())),
        "{at_return:?}"
    );
    let prompt = prompt_of(&records, "repair/total_len/2");
    let trace = location.values_trace();
    assert!(prompt.contains(&trace), "{trace}\n---\n{prompt}");
    assert!(prompt.contains("total=5"), "{prompt}");
    assert_eq!(
        attempts(&records),
        vec![("total_len".into(), 2, AttemptKind::Repair, true)]
    );
    assert_eq!(
        state.nodes["total_len"].attempt_kind(2),
        Some(AttemptKind::Repair)
    );
    // The verdict line the prompt asked for is read, not shown.
    let reflection = records
        .iter()
        .find_map(|r| match &r.event {
            Event::Reflection(ReflectionEvent { text, .. }) => Some(text.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(reflection, "Each word adds one too many.");
}

#[tokio::test]
async fn without_runtime_values_the_prompt_has_the_failure_only() {
    let options = EngineOptions {
        policy: RepairPolicy {
            runtime_values: false,
            ..RepairPolicy::default()
        },
        ..EngineOptions::default()
    };
    let (_, result, records) = finish(len_script(), options, |_| Command::Approve).await;
    assert!(result.passed, "{}", result.summary);
    let prompt = prompt_of(&records, "repair/total_len/2");
    assert!(prompt.contains("total_len.py:5"), "{prompt}");
    assert!(
        !prompt.contains("values of the local variables"),
        "{prompt}"
    );
    assert!(!prompt.contains("total=5"), "{prompt}");
    assert_eq!(
        attempts(&records),
        vec![("total_len".into(), 2, AttemptKind::Repair, false)]
    );
}

const DOUBLE_WRONG_TESTS: &str = "def test_small():\n    assert double(1) == 2\n\ndef test_three():\n    assert double(3) == 7\n";
const DOUBLE_FIXED_TESTS: &str = "def test_small():\n    assert double(1) == 2\n\ndef test_three():\n    assert double(3) == 6\n";
const DOUBLE: &str = "def double(x):\n    return x * 2\n";

fn double_script(extra: Vec<ScriptedReply>) -> Vec<ScriptedReply> {
    let mut replies = vec![
        reply("plan", &plan_json(&[("double", &[])])),
        reply("tests/double", &py(DOUBLE_WRONG_TESTS)),
        reply("code/double/1", &py(DOUBLE)),
        reply(
            "repair/double/2",
            &format!(
                "Three doubled is 6, the test expects 7: the test is wrong.\n**Verdict: test**\n{}",
                py(DOUBLE_FIXED_TESTS)
            ),
        ),
    ];
    replies.extend(extra);
    replies
}

fn step_mode() -> EngineOptions {
    EngineOptions {
        step_mode: true,
        ..EngineOptions::default()
    }
}

#[tokio::test]
async fn a_test_the_reflection_blames_is_fixed_once_the_person_approves() {
    let (state, result, records) =
        finish(double_script(vec![]), step_mode(), |_| Command::Approve).await;
    assert!(result.passed, "{}", result.summary);
    // The fix waited at the gate, with the old and the new tests.
    assert!(records.iter().any(|r| matches!(&r.event,
        Event::Paused(PausedEvent { step: Step::TestFix { node, old, new, .. } })
            if node == "double" && old == DOUBLE_WRONG_TESTS && new == DOUBLE_FIXED_TESTS)));
    let change = records
        .iter()
        .find_map(|r| match &r.event {
            Event::TestsChanged(TestsChangedEvent {
                applied,
                reason,
                iteration,
                ..
            }) => Some((*applied, reason.clone(), *iteration)),
            _ => None,
        })
        .unwrap();
    assert!(change.0, "applied");
    assert!(change.1.contains("the test is wrong"), "{}", change.1);
    assert_eq!(change.2, 1);
    let node = &state.nodes["double"];
    assert_eq!(node.tests.as_deref(), Some(DOUBLE_FIXED_TESTS));
    assert_eq!(node.versions.len(), 1, "the code was never changed");
    assert_eq!(node.applied_test_fixes(), 1);
    // The same code ran again against the fixed tests and passed.
    let runs: Vec<(u32, bool)> = state
        .runs_in_order()
        .map(|(_, r)| r)
        .filter(|r| r.node.is_some())
        .map(|r| (r.iteration, r.record.as_ref().unwrap().passed))
        .collect();
    assert_eq!(runs, vec![(1, false), (1, true)]);
}

#[tokio::test]
async fn a_rejected_test_fix_leaves_the_tests_and_asks_for_the_code() {
    let patched = "def double(x):\n    return 7 if x == 3 else x * 2\n";
    let extra = vec![reply(
        "repair/double/2",
        &format!("Then the code must give 7 for 3.\n{}", py(patched)),
    )];
    let (state, result, records) = finish(double_script(extra), step_mode(), |step| match step {
        Step::TestFix { .. } => Command::Skip,
        _ => Command::Approve,
    })
    .await;
    assert!(result.passed, "{}", result.summary);
    assert!(records.iter().any(|r| matches!(&r.event,
        Event::TestsChanged(TestsChangedEvent { applied: false, rejected_because: Some(why), .. }) if why.contains("rejected"))));
    let node = &state.nodes["double"];
    assert_eq!(node.tests.as_deref(), Some(DOUBLE_WRONG_TESTS));
    assert_eq!(node.versions.len(), 2);
    assert_eq!(node.versions[1].code, patched);
    let second = records
        .iter()
        .filter_map(|r| match &r.event {
            Event::ModelRequest(ModelRequestEvent { tag, messages, .. })
                if tag == "repair/double/2" =>
            {
                Some(messages.last().unwrap().content.clone())
            }
            _ => None,
        })
        .nth(1)
        .unwrap();
    assert!(second.contains("was not accepted"), "{second}");
    assert!(!second.contains("Verdict: test"), "{second}");
}

#[tokio::test]
async fn a_fix_that_drops_an_assertion_is_rejected_without_asking() {
    let dropped = "def test_small():\n    assert double(1) == 2\n";
    let replies = vec![
        reply("plan", &plan_json(&[("double", &[])])),
        reply("tests/double", &py(DOUBLE_WRONG_TESTS)),
        reply("code/double/1", &py(DOUBLE)),
        reply(
            "repair/double/2",
            &format!("The third test is wrong.\nVerdict: test\n{}", py(dropped)),
        ),
        reply("repair/double/2", &py(DOUBLE)),
    ];
    let options = EngineOptions {
        max_iterations: 2,
        ..EngineOptions::default()
    };
    let (state, result, records) = finish(replies, options, |_| Command::Approve).await;
    assert!(!result.passed);
    assert!(records.iter().any(|r| matches!(&r.event,
        Event::TestsChanged(TestsChangedEvent { applied: false, rejected_because: Some(why), .. }) if why.contains("removes"))));
    assert_eq!(
        state.nodes["double"].tests.as_deref(),
        Some(DOUBLE_WRONG_TESTS)
    );
}

#[tokio::test]
async fn after_two_failed_repairs_the_next_attempt_starts_fresh_without_the_old_code() {
    let wrong = |n: u32| format!("def inc(x):\n    return x + {}  # WRONG{n}\n", n + 1);
    let replies = vec![
        reply("plan", &plan_json(&[("inc", &[])])),
        reply(
            "tests/inc",
            &py("def test_inc():\n    assert inc(1) == 2\n"),
        ),
        reply("code/inc/1", &py(&wrong(1))),
        reply("repair/inc/2", &py(&wrong(2))),
        reply("repair/inc/3", &py(&wrong(3))),
        reply("fresh/inc/4", &py("def inc(x):\n    return x + 1\n")),
    ];
    let (state, result, records) =
        finish(replies, EngineOptions::default(), |_| Command::Approve).await;
    assert!(result.passed, "{}", result.summary);
    let kinds: Vec<(u32, AttemptKind)> = attempts(&records)
        .into_iter()
        .map(|(_, it, k, _)| (it, k))
        .collect();
    assert_eq!(
        kinds,
        vec![
            (2, AttemptKind::Repair),
            (3, AttemptKind::Repair),
            (4, AttemptKind::FreshStart)
        ]
    );
    let fresh = prompt_of(&records, "fresh/inc/4");
    assert!(!fresh.contains("WRONG"), "{fresh}");
    assert!(fresh.contains("assert inc(1) == 2"), "the tests: {fresh}");
    for it in 1..=3 {
        assert!(fresh.contains(&format!("iteration {it}: ")), "{fresh}");
    }
    assert!(fresh.contains("expected 2"), "{fresh}");
    assert_eq!(
        state.nodes["inc"].attempt_kind(4),
        Some(AttemptKind::FreshStart)
    );
}

#[tokio::test]
async fn without_fresh_starts_a_repeated_failure_asks_for_another_approach() {
    let wrong = "def inc(x):\n    return x\n";
    let replies = vec![
        reply("plan", &plan_json(&[("inc", &[])])),
        reply(
            "tests/inc",
            &py("def test_inc():\n    assert inc(1) == 2\n"),
        ),
        reply("code/inc/1", &py(wrong)),
        reply("repair/inc/2", &py(wrong)),
        reply("repair/inc/3", &py(wrong)),
    ];
    let options = EngineOptions {
        policy: RepairPolicy {
            fresh_start: false,
            ..RepairPolicy::default()
        },
        max_iterations: 4,
        ..EngineOptions::default()
    };
    let extra = reply("repair/inc/4", &py("def inc(x):\n    return x + 1\n"));
    let mut replies = replies;
    replies.push(extra);
    let (_, result, records) = finish(replies, options, |_| Command::Approve).await;
    assert!(result.passed, "{}", result.summary);
    let kinds: Vec<AttemptKind> = attempts(&records).into_iter().map(|a| a.2).collect();
    assert_eq!(
        kinds,
        vec![
            AttemptKind::Repair,
            AttemptKind::DifferentApproach,
            AttemptKind::DifferentApproach
        ]
    );
    assert!(prompt_of(&records, "repair/inc/4").contains("different approach"));
}

#[tokio::test]
async fn a_node_that_redefines_its_dependency_is_caught_before_it_runs_and_repaired() {
    let replies = vec![
        reply("plan", &plan_json(&[("base", &[]), ("top", &["base"])])),
        reply("tests/base", &py("def test_b():\n    assert base() == 2\n")),
        reply("tests/top", &py("def test_t():\n    assert top() == 3\n")),
        reply("code/base/1", &py("def base():\n    return 2\n")),
        reply(
            "code/top/1",
            &py("def base():\n    return 2\n\ndef top():\n    return base() + 1\n"),
        ),
        reply(
            "repair/top/2",
            &format!(
                "I copied base in; call it instead.\n{}",
                py("def top():\n    return base() + 1\n")
            ),
        ),
    ];
    let (state, result, records) =
        finish(replies, EngineOptions::default(), |_| Command::Approve).await;
    assert!(result.passed, "{}", result.summary);
    let check = records
        .iter()
        .find_map(|r| match &r.event {
            Event::Check(CheckEvent {
                node,
                iteration: 1,
                findings,
            }) if node == "top" => Some(findings.clone()),
            _ => None,
        })
        .unwrap();
    assert!(
        check
            .iter()
            .any(|f| f.kind == "redefinition" && f.line == Some(1) && f.message.contains("'base'")),
        "{check:?}"
    );
    let location = records
        .iter()
        .find_map(|r| match &r.event {
            Event::Localized(LocalizedEvent { node, location, .. }) if node == "top" => {
                Some(location.clone())
            }
            _ => None,
        })
        .unwrap();
    assert_eq!(location.error_type, "Redefinition");
    assert_eq!(location.file, "top.py");
    // Iteration 1 of top never ran.
    assert!(
        !state
            .runs
            .values()
            .any(|r| r.node.as_deref() == Some("top") && r.iteration == 1)
    );
    assert!(prompt_of(&records, "repair/top/2").contains("Redefinition"));
    assert!(
        state
            .runs
            .values()
            .any(|r| r.node.as_deref() == Some("top") && r.iteration == 2)
    );
}

#[tokio::test]
async fn an_assembled_program_that_fails_is_localized_to_a_node_repaired_and_run_again() {
    // Each node passes alone; assembled, b's SCALE replaces a's.
    let replies = vec![
        reply("plan", &plan_json(&[("a", &[]), ("b", &[])])),
        reply("tests/a", &py("def test_a():\n    assert a(3) == 6\n")),
        reply("tests/b", &py("def test_b():\n    assert b(1) == 11\n")),
        reply(
            "code/a/1",
            &py("SCALE = 2\n\ndef a(x):\n    return x * SCALE\n"),
        ),
        reply(
            "code/b/1",
            &py("SCALE = 10\n\ndef b(x):\n    return x + SCALE\n"),
        ),
        reply(
            "repair/a/2",
            &format!(
                "b's SCALE replaces mine in the program; keep the factor local.\n{}",
                py("def a(x):\n    return x * 2\n")
            ),
        ),
    ];
    let options = EngineOptions {
        workers: 1,
        ..EngineOptions::default()
    };
    let (state, result, records) = finish(replies, options, |_| Command::Approve).await;
    assert!(result.passed, "{}", result.summary);
    let program_runs: Vec<bool> = state
        .runs_in_order()
        .map(|(_, r)| r)
        .filter(|r| r.node.is_none())
        .map(|r| r.record.as_ref().unwrap().passed)
        .collect();
    assert_eq!(program_runs, vec![false, true]);
    let (node, location) = records
        .iter()
        .find_map(|r| match &r.event {
            Event::Localized(LocalizedEvent { node, location, .. }) => {
                Some((node.clone(), location.clone()))
            }
            _ => None,
        })
        .unwrap();
    assert_eq!(node, "a");
    assert_eq!(location.file, "program.py");
    assert!(prompt_of(&records, "repair/a/2").contains("program.py"));
    assert_eq!(state.nodes["a"].versions.len(), 2);
    // The failed program is on the tape, and never called a pass.
    assert!(
        state
            .notices
            .iter()
            .any(|n| n.message.contains("failed in `a`"))
    );
}

#[tokio::test]
async fn a_program_that_still_fails_is_never_summarized_as_passing() {
    let replies = vec![
        reply("plan", &plan_json(&[("a", &[]), ("b", &[])])),
        reply("tests/a", &py("def test_a():\n    assert a(3) == 6\n")),
        reply("tests/b", &py("def test_b():\n    assert b(1) == 11\n")),
        reply(
            "code/a/1",
            &py("SCALE = 2\n\ndef a(x):\n    return x * SCALE\n"),
        ),
        reply(
            "code/b/1",
            &py("SCALE = 10\n\ndef b(x):\n    return x + SCALE\n"),
        ),
    ];
    let options = EngineOptions {
        workers: 1,
        max_iterations: 1,
        ..EngineOptions::default()
    };
    let (_, result, _) = finish(replies, options, |_| Command::Approve).await;
    assert!(!result.passed);
    assert!(
        result
            .summary
            .starts_with("every function passes its own tests, but the program does not; the assembled program failed: AssertionError"),
        "{}",
        result.summary
    );
    assert!(!result.summary.contains("all "), "{}", result.summary);
}

#[tokio::test]
async fn the_entry_point_runs_and_its_output_is_on_the_tape_and_in_the_report() {
    let replies = vec![
        reply("plan", &plan_json(&[("total", &[]), ("main", &["total"])])),
        reply(
            "tests/total",
            &py("def test_total():\n    assert total([1, 2]) == 3\n"),
        ),
        reply(
            "tests/main",
            &py("def test_main():\n    assert main() == 6\n"),
        ),
        reply("code/total/1", &py("def total(xs):\n    return sum(xs)\n")),
        reply(
            "code/main/1",
            &py("def main():\n    return total([1, 2, 3])\n"),
        ),
    ];
    let (dir, mut handle) = start(replies, EngineOptions::default());
    let mut records = Vec::new();
    while let Some(r) = handle.events.recv().await {
        records.push(r);
    }
    let result = handle.done.await.unwrap().unwrap();
    assert!(result.passed, "{}", result.summary);
    assert!(
        result.summary.ends_with("; it printed: 6"),
        "{}",
        result.summary
    );
    let output = records
        .iter()
        .find_map(|r| match &r.event {
            Event::ProgramOutput(ProgramOutputEvent { output }) => Some(output.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(output.stdout, "6\n");
    assert!(output.succeeded());
    let state = State::from_records(&records);
    assert_eq!(state.program_output, Some(output));
    let out = std::path::PathBuf::from(result.output_dir.unwrap());
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        report.contains("The program (main) printed:\n\n```\n6\n```"),
        "{report}"
    );
    let program = std::fs::read_to_string(out.join("program.py")).unwrap();
    assert!(
        program.contains("if __name__ == \"__main__\":"),
        "{program}"
    );
    drop(dir);
}

#[tokio::test]
async fn a_test_that_contradicts_the_tasks_example_is_corrected_before_the_code_runs() {
    let replies = vec![
        reply("plan", &plan_json(&[("double", &[])])),
        reply("tests/double", &py(DOUBLE_WRONG_TESTS)),
        reply("code/double/1", &py(DOUBLE)),
    ];
    let (_dir, mut handle) = start_task(
        "Double a number, e.g. double(3) == 6.",
        replies,
        EngineOptions::default(),
    );
    let mut records = Vec::new();
    while let Some(r) = handle.events.recv().await {
        records.push(r);
    }
    let result = handle.done.await.unwrap().unwrap();
    assert!(result.passed, "{}", result.summary);
    let state = State::from_records(&records);
    let tests = state.nodes["double"].tests.clone().unwrap();
    assert!(tests.contains("assert double(3) == 6\n"), "{tests}");
    assert!(!tests.contains("== 7"), "{tests}");
    assert!(tests.contains("def test_task_examples():"), "{tests}");
    assert!(
        state
            .notices
            .iter()
            .any(|n| n.message.contains("contradicted the task's own examples"))
    );
    // The code was never blamed: one version, and its first run passed.
    assert_eq!(state.nodes["double"].versions.len(), 1);
    assert_eq!(state.runs.values().filter(|r| r.node.is_some()).count(), 1);
}

#[tokio::test]
async fn a_helper_another_node_defines_is_a_redefinition_too() {
    let replies = vec![
        reply("plan", &plan_json(&[("a", &[]), ("b", &[])])),
        reply("tests/a", &py("def test_a():\n    assert a(2) == 4\n")),
        reply("tests/b", &py("def test_b():\n    assert b(2) == 3\n")),
        reply(
            "code/a/1",
            &py("def _step(x):\n    return x * 2\n\ndef a(x):\n    return _step(x)\n"),
        ),
        reply(
            "code/b/1",
            &py("def _step(x):\n    return x + 1\n\ndef b(x):\n    return _step(x)\n"),
        ),
        reply(
            "repair/b/2",
            &py("def _inc(x):\n    return x + 1\n\ndef b(x):\n    return _inc(x)\n"),
        ),
    ];
    let options = EngineOptions {
        workers: 1,
        ..EngineOptions::default()
    };
    let (state, result, records) = finish(replies, options, |_| Command::Approve).await;
    assert!(result.passed, "{}", result.summary);
    let location = records
        .iter()
        .find_map(|r| match &r.event {
            Event::Localized(LocalizedEvent { node, location, .. }) if node == "b" => {
                Some(location.clone())
            }
            _ => None,
        })
        .unwrap();
    assert_eq!(location.error_type, "Redefinition");
    assert!(
        location
            .message
            .contains("'_step', which the function 'a' defines too"),
        "{}",
        location.message
    );
    assert_eq!(state.nodes["b"].versions.len(), 2);
}

/// A scripted model whose context window is known (as a server would tell it).
struct Windowed {
    inner: ScriptedModel,
    window: u64,
}

impl codeloop_llm::ChatModel for Windowed {
    fn stream<'a>(
        &'a self,
        request: codeloop_llm::ChatRequest,
        deltas: tokio::sync::mpsc::Sender<codeloop_llm::Delta>,
    ) -> codeloop_llm::ChatFuture<'a> {
        self.inner.stream(request, deltas)
    }
    fn context_window<'a>(&'a self) -> codeloop_llm::ContextFuture<'a> {
        let tokens = self.window;
        Box::pin(async move {
            Some(codeloop_llm::ContextWindow {
                tokens,
                source: "the test".into(),
            })
        })
    }
    fn provider(&self) -> &str {
        self.inner.provider()
    }
    fn model_name(&self) -> &str {
        self.inner.model_name()
    }
    fn endpoint(&self) -> &str {
        self.inner.endpoint()
    }
}

#[tokio::test]
async fn a_repair_prompt_too_big_for_the_context_window_leaves_out_the_oldest_failures_and_says_so()
{
    let wrong = |n: u32| format!("def inc(x):\n    return x + {}  # WRONG{n}\n", n + 1);
    let replies = || {
        vec![
            reply("plan", &plan_json(&[("inc", &[])])),
            reply(
                "tests/inc",
                &py("def test_inc():\n    assert inc(1) == 2\n"),
            ),
            reply("code/inc/1", &py(&wrong(1))),
            reply("repair/inc/2", &py(&wrong(2))),
            reply("repair/inc/3", &py("def inc(x):\n    return x + 1\n")),
        ]
    };
    let run = |window: Option<u64>| async move {
        let dir = tempfile::tempdir().unwrap();
        let inner = ScriptedModel::from_replies("test-script", replies(), Pacing::instant());
        let model: Arc<dyn codeloop_llm::ChatModel> = match window {
            Some(window) => Arc::new(Windowed { inner, window }),
            None => Arc::new(inner),
        };
        // The code call shown the model's tests: the conversation this
        // test follows begins with the tests call.
        let options = EngineOptions {
            policy: RepairPolicy {
                first_code_sees_model_tests: true,
                ..RepairPolicy::default()
            },
            ..EngineOptions::default()
        };
        let setup = engine_kit::setup(
            "a test task",
            model,
            options,
            dir.path().join("session"),
            HELPER,
        );
        let handle = engine::start(setup).unwrap();
        let (_, result, records) = engine_kit::finish(handle, |_| Vec::new()).await;
        (result, records)
    };
    let estimate = |messages: &[codeloop_llm::ChatMessage]| {
        codeloop_llm::tokens::estimate_prompt_tokens(messages)
    };
    // The largest window a prompt of `tokens` does not fit (one token more
    // and it would).
    let just_short = |tokens: u64| {
        let fits = |w: u64| codeloop_llm::tokens::fits(tokens, (w / 4).min(2048), w);
        (tokens..tokens * 4).rfind(|w| !fits(*w)).unwrap()
    };
    let notices = |records: &[Record]| -> Vec<String> {
        records
            .iter()
            .filter_map(|r| match &r.event {
                Event::Notice(NoticeEvent { message, .. }) => Some(message.clone()),
                _ => None,
            })
            .collect()
    };
    // With no window known, each repair goes on with the conversation that
    // wrote the code: the request before it as it was sent, the reply as it
    // came, then the failure.
    let (result, records) = run(None).await;
    assert!(result.passed, "{}", result.summary);
    let code = messages_of(&records, "code/inc/1");
    let first = messages_of(&records, "repair/inc/2");
    let second = messages_of(&records, "repair/inc/3");
    // The code call itself went on from the one that wrote the tests.
    let tests = messages_of(&records, "tests/inc");
    assert_eq!(code.len(), 4);
    assert_eq!(code[..2], tests[..]);
    assert!(
        code[3]
            .content
            .starts_with("Write this function, `inc`, so that it passes these tests.")
    );
    let n = code.len();
    assert_eq!(first.len(), n + 2);
    assert_eq!(first[..n], code[..]);
    assert_eq!(
        first[n],
        codeloop_llm::ChatMessage::assistant(py(&wrong(1))),
        "the reply as it came"
    );
    assert_eq!(second.len(), n + 4);
    assert_eq!(second[..n + 2], first[..]);
    assert_eq!(second[n + 2].content, py(&wrong(2)));
    let turn = &second[n + 3].content;
    assert!(turn.contains("iteration 2) failed its tests"), "{turn}");
    assert!(
        !turn.contains("iteration 1: "),
        "iteration 1 is told in its own turn: {turn}"
    );
    assert!(
        first[n + 1]
            .content
            .contains("iteration 1) failed its tests")
    );

    // A window the conversation does not fit: the repair begins again from
    // the code prompt, the failing code as the model's turn, and lists
    // iteration 1's failure in a line.
    let window = just_short(estimate(&second));
    let (result, records) = run(Some(window)).await;
    assert!(result.passed, "{}", result.summary);
    let again = messages_of(&records, "repair/inc/3");
    assert_eq!(again.len(), 4, "{again:?}");
    assert_eq!(again[0], code[0]);
    assert!(
        again[1]
            .content
            .contains("Write this function, `inc`, so that it passes its tests."),
        "the node's code prompt, whole: {}",
        again[1].content
    );
    assert!(
        again[2].content.contains("WRONG2"),
        "the failing code stays"
    );
    assert!(
        again[3].content.contains("iteration 1: "),
        "{}",
        again[3].content
    );
    assert!(
        notices(&records).iter().any(|m| m.contains(&format!(
            "the repair prompt for `inc` did not fit the model's context window ({window} tokens): left out the earlier turns of the conversation"
        ))),
        "{:?}",
        notices(&records)
    );

    // Smaller still: the oldest failure goes too, never the failing code.
    let window = just_short(estimate(&again));
    let (result, records) = run(Some(window)).await;
    assert!(result.passed, "{}", result.summary);
    let trimmed = prompt_of(&records, "repair/inc/3");
    assert!(!trimmed.contains("iteration 1: "), "{trimmed}");
    assert!(
        messages_of(&records, "repair/inc/3")[2]
            .content
            .contains("WRONG2"),
        "the failing code stays"
    );
    assert!(
        notices(&records).iter().any(|m| m.contains(&format!(
            "the repair prompt for `inc` did not fit the model's context window ({window} tokens): left out the earlier turns of the conversation and the 1 oldest failure"
        ))),
        "{:?}",
        notices(&records)
    );
}

/// The notices of `records`, in order.
fn notices(records: &[Record]) -> Vec<String> {
    records
        .iter()
        .filter_map(|r| match &r.event {
            Event::Notice(NoticeEvent { message, .. }) => Some(message.clone()),
            _ => None,
        })
        .collect()
}

/// The loop's decisions on the tape: each step, and why.
fn decisions(records: &[Record]) -> Vec<(Next, String)> {
    records
        .iter()
        .filter_map(|r| match &r.event {
            Event::Decision(d) => Some((d.next, d.reason.clone())),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn each_step_after_a_failure_is_a_decision_on_the_tape_that_history_tells_with_its_reason() {
    let (state, result, records) =
        finish(len_script(), EngineOptions::default(), |_| Command::Approve).await;
    assert!(result.passed, "{}", result.summary);
    assert_eq!(
        decisions(&records),
        vec![(
            Next::Attempt {
                kind: AttemptKind::Repair
            },
            "1 version failed since the first try; a fresh start after 3".to_string()
        )]
    );
    // The decision comes after the failure it answers, before the attempt.
    let order: Vec<&str> = records
        .iter()
        .map(|r| r.event.kind())
        .filter(|k| ["localized", "decision", "attempt"].contains(k))
        .collect();
    assert_eq!(order, ["localized", "decision", "attempt"]);
    let told: Vec<String> = story::timeline(&state).iter().map(|l| l.plain()).collect();
    assert!(
        told.contains(
            &"total_len #1: repair: 1 version failed since the first try; a fresh start after 3"
                .to_string()
        ),
        "{told:#?}"
    );
}

#[tokio::test]
async fn a_repair_whose_model_call_failed_gives_the_node_up_instead_of_starting_fresh() {
    // No reply for the repair: the call fails (as a server that keeps
    // failing does after its retries), and no other call follows.
    let mut replies = len_script();
    replies.pop();
    let (state, result, records) =
        finish(replies, EngineOptions::default(), |_| Command::Approve).await;
    assert!(!result.passed, "{}", result.summary);
    assert_eq!(state.nodes["total_len"].status, NodeStatus::GaveUp);
    let asked: Vec<&str> = records
        .iter()
        .filter_map(|r| match &r.event {
            Event::ModelRequest(e) => Some(e.tag.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(
        asked,
        [
            "plan",
            "tests/total_len",
            "code/total_len/1",
            "repair/total_len/2"
        ]
    );
    assert!(
        !decisions(&records).iter().any(|(next, _)| *next
            == Next::Attempt {
                kind: AttemptKind::FreshStart
            }),
        "{:?}",
        decisions(&records)
    );
    assert!(
        notices(&records)
            .iter()
            .any(|n| n.starts_with("model call failed")),
        "{:?}",
        notices(&records)
    );
}

#[tokio::test]
async fn a_repair_that_writes_the_failing_code_again_is_not_run_and_a_fresh_start_follows() {
    // Only its docstring is wrapped anew: the same code.
    let wrong = "def inc(x):\n    \"\"\"Add one to x, the number\n    given.\"\"\"\n    return x\n";
    let again = "def inc(x):\n    \"\"\"Add one to x,\n    the number given.\"\"\"\n\n    return x  # one more\n";
    let replies = vec![
        reply("plan", &plan_json(&[("inc", &[])])),
        reply(
            "tests/inc",
            &py("def test_inc():\n    assert inc(1) == 2\n"),
        ),
        reply("code/inc/1", &py(wrong)),
        reply("repair/inc/2", &py(again)),
        reply("fresh/inc/2", &py("def inc(x):\n    return x - 1\n")),
        // The fresh start's code is new: it is repaired as any.
        reply("repair/inc/3", &py("def inc(x):\n    return x + 1\n")),
    ];
    let (state, result, records) =
        finish(replies, EngineOptions::default(), |_| Command::Approve).await;
    assert!(result.passed, "{}", result.summary);
    let kinds: Vec<(u32, AttemptKind)> = attempts(&records)
        .into_iter()
        .map(|(_, it, k, _)| (it, k))
        .collect();
    assert_eq!(
        kinds,
        vec![
            (2, AttemptKind::Repair),
            (2, AttemptKind::FreshStart),
            (3, AttemptKind::Repair)
        ]
    );
    // The repeat was never a version of its own, and never ran.
    let versions: Vec<&str> = state.nodes["inc"]
        .versions
        .iter()
        .map(|v| v.code.as_str())
        .collect();
    assert_eq!(versions.len(), 3, "{versions:?}");
    assert!(
        !versions.iter().any(|v| v.contains("one more")),
        "{versions:?}"
    );
    // The loop's decision says why the fresh start came.
    let said = decisions(&records);
    assert!(
        said.iter().any(|(next, why)| *next
            == Next::Attempt {
                kind: AttemptKind::FreshStart
            }
            && why.contains("wrote version 1 again")),
        "{said:?}"
    );
    // The fresh start shows the failure, not the failing code.
    let fresh = prompt_of(&records, "fresh/inc/2");
    assert!(!fresh.contains("return x\n"), "{fresh}");
    assert!(fresh.contains("iteration 1: "), "{fresh}");
}

#[tokio::test]
async fn a_fresh_start_that_writes_a_failed_version_again_is_asked_again_not_run() {
    let wrong = "def inc(x):\n    return x\n";
    let replies = vec![
        reply("plan", &plan_json(&[("inc", &[])])),
        reply(
            "tests/inc",
            &py("def test_inc():\n    assert inc(1) == 2\n"),
        ),
        reply("code/inc/1", &py(wrong)),
        reply("repair/inc/2", &py("def inc(x):\n    return x * 2 - 1\n")),
        reply("repair/inc/3", &py("def inc(x):\n    return x + 2\n")),
        // Three failed since the start: a fresh start, which writes version
        // 1 again twice, then something new.
        reply("fresh/inc/4", &py(wrong)),
        reply("fresh/inc/4/2", &py("def inc(x):\n  return x\n")),
        reply("fresh/inc/4/3", &py("def inc(x):\n    return x + 1\n")),
    ];
    let (state, result, records) =
        finish(replies, EngineOptions::default(), |_| Command::Approve).await;
    assert!(result.passed, "{}", result.summary);
    assert_eq!(
        state.nodes["inc"].versions.len(),
        4,
        "{:?}",
        notices(&records)
    );
    let tags: Vec<String> = records
        .iter()
        .filter_map(|r| match &r.event {
            Event::ModelRequest(ModelRequestEvent { tag, .. }) => Some(tag.clone()),
            _ => None,
        })
        .collect();
    assert!(
        tags.ends_with(&[
            "fresh/inc/4".to_string(),
            "fresh/inc/4/2".to_string(),
            "fresh/inc/4/3".to_string()
        ]),
        "{tags:?}"
    );
    let said = notices(&records);
    assert!(
        said.iter()
            .any(|n| n.contains("wrote version 1 again") && n.contains("asking again (2 of 3)")),
        "{said:?}"
    );
}

#[tokio::test]
async fn a_first_reply_with_no_function_in_it_is_followed_by_a_fresh_start_not_given_up() {
    // SmolLM2 on HumanEval/1 and /13: the first code reply held no function
    // that could be used (no code; cut off at its limit), and the node was
    // given up before its first version.
    let replies = vec![
        reply("plan", &plan_json(&[("inc", &[])])),
        reply(
            "tests/inc",
            &py("def test_inc():\n    assert inc(1) == 2\n"),
        ),
        reply("code/inc/1", "I will write it now."),
        reply("code/inc/1/retry", "Here it is, as you asked."),
        reply("fresh/inc/1", &py("def inc(x):\n    return x + 1\n")),
    ];
    let (state, result, records) =
        finish(replies, EngineOptions::default(), |_| Command::Approve).await;
    assert!(result.passed, "{}", result.summary);
    assert_eq!(state.nodes["inc"].versions.len(), 1);
    let kinds: Vec<(u32, AttemptKind)> = attempts(&records)
        .into_iter()
        .map(|(_, it, k, _)| (it, k))
        .collect();
    assert_eq!(kinds, vec![(1, AttemptKind::FreshStart)]);
    assert_eq!(
        decisions(&records),
        vec![(
            Next::Attempt {
                kind: AttemptKind::FreshStart
            },
            "the first reply held no function that could be used".to_string()
        )]
    );
    let fresh = prompt_of(&records, "fresh/inc/1");
    assert!(
        fresh.contains("The last reply held no whole function that could be used"),
        "{fresh}"
    );
    assert!(!fresh.contains("Earlier versions"), "{fresh}");
}

#[tokio::test]
async fn the_first_code_is_written_without_the_models_own_tests_unless_the_policy_shows_them() {
    let asked = |records: &[Record]| {
        messages_of(records, "code/total_len/1")
            .iter()
            .map(|m| m.content.clone())
            .collect::<Vec<_>>()
            .join("\n")
    };
    // Shown the model's tests (as sessions before today's default were),
    // the code call goes on from the tests' conversation.
    let shown = EngineOptions {
        policy: RepairPolicy {
            first_code_sees_model_tests: true,
            ..RepairPolicy::default()
        },
        ..EngineOptions::default()
    };
    let (_, _, records) = finish(len_script(), shown, |_| Command::Approve).await;
    assert!(
        asked(&records).contains("total_len([\"ab\", \"c\"]) == 3"),
        "{}",
        asked(&records)
    );
    // By default the first code is kept from the model's tests and sees
    // the task alone; the tests still judge it (the buggy first version
    // fails, the repair shows the failing test and passes).
    let (state, result, records) =
        finish(len_script(), EngineOptions::default(), |_| Command::Approve).await;
    let prompt = asked(&records);
    assert!(!prompt.contains("total_len([\"ab\", \"c\"])"), "{prompt}");
    assert!(!prompt.contains("these tests"), "{prompt}");
    assert!(result.passed, "{}", result.summary);
    assert_eq!(state.nodes["total_len"].versions.len(), 2);
    assert!(prompt_of(&records, "repair/total_len/2").contains("total_len"));
}
