//! Time travel on the real engine (scripted model, real python3 in the real
//! sandbox): a session stopped on its iteration limit resumed on its own
//! tape, a fork at an earlier iteration with an edited node, a rewind of a
//! live session, the task edited live, and a finished session that has
//! nothing to continue. The scripted model of a continued segment holds only
//! the replies it may still need: any call asked twice has no reply and
//! fails the test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

/// The sandbox helper cargo built for these tests.
const HELPER: &str = env!("CARGO_BIN_EXE_codeloop-engine-child");

use std::path::{Path, PathBuf};

use codeloop_engine::{self as engine, ContinueSetup, EngineHandle, EngineOptions, RepairPolicy};
use codeloop_llm::scripted::ScriptedReply;
use codeloop_session::*;
use codeloop_testkit::engine as engine_kit;
use codeloop_testkit::{py, reply};

fn plan_json(functions: &[(&str, &str)]) -> String {
    let items: Vec<String> = functions
        .iter()
        .map(|(name, purpose)| {
            format!(
                "{{\"name\": \"{name}\", \"purpose\": \"{purpose}\", \"inputs\": \"x\", \"output\": \"y\", \"depends_on\": []}}"
            )
        })
        .collect();
    format!("```json\n{{\"functions\": [{}]}}\n```", items.join(", "))
}

const MEAN_BUGGY: &str = "def mean(xs):\n    if not xs:\n        return 0.0\n    total = sum(xs)\n    return total // len(xs)\n";
const MEAN_FIXED: &str = "def mean(xs):\n    if not xs:\n        return 0.0\n    total = sum(xs)\n    return total / len(xs)\n";
const MEAN_BY_HAND: &str = "def mean(xs):\n    return sum(xs) / len(xs) if xs else 0.0\n";
const MEAN_TESTS: &str = "def test_empty():\n    assert mean([]) == 0.0\n\ndef test_halves():\n    assert mean([1, 2]) == 1.5\n";

fn start(dir: &Path, replies: Vec<ScriptedReply>, options: EngineOptions) -> EngineHandle {
    let model = engine_kit::scripted(replies);
    let setup = engine_kit::setup(
        "the mean of a list",
        model,
        options,
        dir.to_path_buf(),
        HELPER,
    );
    engine::start(setup).unwrap()
}

fn with(
    replies: Vec<ScriptedReply>,
    options: EngineOptions,
    commands: Vec<Command>,
) -> ContinueSetup {
    ContinueSetup {
        model: engine_kit::scripted(replies),
        sandbox: codeloop_testkit::sandbox(HELPER),
        options,
        prompt_overrides: None,
        commands,
    }
}

/// Drain a session's views; its records and result.
async fn drain(mut handle: EngineHandle) -> (Vec<Record>, FinalResult) {
    let mut records = Vec::new();
    while let Some(r) = handle.events.recv().await {
        records.push(r);
    }
    let result = handle.done.await.unwrap().unwrap();
    (records, result)
}

fn tape(dir: &Path) -> PathBuf {
    dir.join("tape.jsonl")
}

/// The tape on disk folded, after checking it reads whole.
fn fold(dir: &Path) -> (Vec<Record>, State) {
    let contents = read_tape(&tape(dir)).unwrap();
    assert_eq!(contents.truncated_tail, None);
    let state = State::from_records(&contents.records);
    (contents.records, state)
}

fn requests(records: &[Record]) -> Vec<&str> {
    records
        .iter()
        .filter_map(|r| match &r.event {
            Event::ModelRequest(ModelRequestEvent { tag, .. }) => Some(tag.as_str()),
            _ => None,
        })
        .collect()
}

/// Node runs as (iteration, passed), in order.
fn node_runs(state: &State, node: &str) -> Vec<(u32, bool)> {
    state
        .runs_in_order()
        .map(|(_, r)| r)
        .filter(|r| r.node.as_deref() == Some(node))
        .map(|r| (r.iteration, r.record.as_ref().is_some_and(|x| x.passed)))
        .collect()
}

#[tokio::test]
async fn a_session_stopped_on_its_iteration_limit_resumes_on_its_tape_with_more_iterations() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("session");
    let first = start(
        &dir,
        vec![
            reply("plan", &plan_json(&[("mean", "the mean")])),
            reply("tests/mean", &py(MEAN_TESTS)),
            reply("code/mean/1", &py(MEAN_BUGGY)),
        ],
        EngineOptions {
            max_iterations: 1,
            ..EngineOptions::default()
        },
    );
    let (before, result) = drain(first).await;
    assert!(!result.passed, "{}", result.summary);
    let stopped = State::from_records(&before);
    assert_eq!(stopped.nodes["mean"].status, NodeStatus::GaveUp);

    // The same limit again by default, since a function gave up at it.
    let options = engine::segment_options(&stopped, EngineOptions::default(), None, None);
    assert_eq!(options.max_iterations, 2);
    assert_eq!(options.token_budget, 0, "no budget configured: none");
    // Asked for: N more iterations, and a budget that counts from what was used.
    let used = stopped.usage.prompt_tokens + stopped.usage.completion_tokens;
    assert!(used > 0);
    let asked = engine::segment_options(&stopped, EngineOptions::default(), Some(3), Some(500));
    assert_eq!(asked.max_iterations, 4);
    assert_eq!(asked.token_budget, used + 500);
    let resumed = engine::resume(
        &tape(&dir),
        with(
            vec![reply("repair/mean/2", &py(MEAN_FIXED))],
            options,
            vec![],
        ),
    )
    .unwrap();
    let (seen, result) = drain(resumed).await;
    assert!(result.passed, "{}", result.summary);

    // One history on one tape: the views saw it all, the tape holds it all.
    let (records, state) = fold(&dir);
    assert_eq!(seen, records);
    assert_eq!(&records[..before.len()], &before[..]);
    let Event::Resumed(ResumedEvent {
        from_seq, config, ..
    }) = &records[before.len()].event
    else {
        panic!(
            "the segment opens with `resumed`: {:?}",
            records[before.len()]
        );
    };
    assert_eq!(*from_seq, before.last().unwrap().seq);
    assert_eq!(config.max_iterations, 2);
    assert_eq!(state.resumes.len(), 1);
    assert!(
        state.resumes[0].after.contains("gave up"),
        "{:?}",
        state.resumes
    );
    let seqs: Vec<u64> = records.iter().map(|r| r.seq).collect();
    assert_eq!(seqs, (0..records.len() as u64).collect::<Vec<_>>());

    // Nothing asked twice, nothing run twice: iteration 1 ran once, its
    // verdict carried over to the repair.
    assert_eq!(
        requests(&records),
        vec!["plan", "tests/mean", "code/mean/1", "repair/mean/2"]
    );
    assert_eq!(node_runs(&state, "mean"), vec![(1, false), (2, true)]);
    assert_eq!(state.nodes["mean"].code(), Some(MEAN_FIXED));
    assert!(state.finished.as_ref().unwrap().passed);

    // Passed now: there is nothing to continue.
    let again = engine::resume(&tape(&dir), with(vec![], EngineOptions::default(), vec![]));
    let Err(e) = again else {
        panic!("a passed session was resumed");
    };
    assert!(e.to_string().contains("nothing to continue"), "{e}");
    assert_eq!(read_tape(&tape(&dir)).unwrap().records.len(), records.len());
}

#[tokio::test]
async fn tests_asked_for_again_once_are_not_asked_for_a_third_time_after_a_resume() {
    // The engine asks once more for tests that do not load. That it did is
    // on the tape (the call `tests/mean/2`), so a resumed session does not
    // ask again: it goes on to repair.
    const BROKEN: &str = "def test_a(:\n    assert mean([2]) == 2\n";
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("session");
    let first = start(
        &dir,
        vec![
            reply("plan", &plan_json(&[("mean", "the mean")])),
            reply("tests/mean", &py(BROKEN)),
            reply("code/mean/1", &py(MEAN_BUGGY)),
            reply("tests/mean/2", &py(BROKEN)),
        ],
        EngineOptions {
            max_iterations: 1,
            ..EngineOptions::default()
        },
    );
    let (_, result) = drain(first).await;
    assert!(!result.passed, "{}", result.summary);
    let (_, stopped) = fold(&dir);
    let options = engine::segment_options(&stopped, EngineOptions::default(), None, None);
    let resumed = engine::resume(
        &tape(&dir),
        with(
            vec![
                reply("repair/mean/2", &py(MEAN_FIXED)),
                reply("tests/mean/2", &py(MEAN_TESTS)),
            ],
            options,
            vec![],
        ),
    )
    .unwrap();
    let _ = drain(resumed).await;
    let (records, _) = fold(&dir);
    let asked = requests(&records);
    assert_eq!(
        asked.iter().filter(|t| **t == "tests/mean/2").count(),
        1,
        "{asked:?}"
    );
    assert!(asked.contains(&"repair/mean/2"), "{asked:?}");
}

#[tokio::test]
async fn a_session_cancelled_during_a_run_resumes_by_running_it_again_and_asks_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("session");
    let slow = format!("import time\ntime.sleep(4)\n\n{MEAN_FIXED}");
    let mut live = start(
        &dir,
        vec![
            reply("plan", &plan_json(&[("mean", "the mean")])),
            reply("tests/mean", &py(MEAN_TESTS)),
            reply("code/mean/1", &py(&slow)),
        ],
        EngineOptions::default(),
    );
    while let Some(r) = live.events.recv().await {
        if matches!(r.event, Event::RunStarted(_)) {
            live.commands.send(Command::Cancel).await.unwrap();
        }
    }
    let result = live.done.await.unwrap().unwrap();
    assert!(!result.passed);
    assert!(
        result.summary.starts_with("cancelled"),
        "{}",
        result.summary
    );
    let (before, cancelled) = fold(&dir);
    assert_eq!(node_runs(&cancelled, "mean"), vec![(1, false)]);

    let options = engine::segment_options(&cancelled, EngineOptions::default(), None, None);
    assert_eq!(
        options.max_iterations, 4,
        "not stopped on the limit: the same limit"
    );
    let resumed = engine::resume(&tape(&dir), with(vec![], options, vec![])).unwrap();
    let (_, result) = drain(resumed).await;
    assert!(result.passed, "{}", result.summary);
    let (records, state) = fold(&dir);
    assert!(
        state.resumes[0].after.starts_with("cancelled"),
        "{:?}",
        state.resumes
    );
    // The cancelled run is no verdict: the same code ran again, no call was made.
    assert_eq!(requests(&records[before.len()..]), Vec::<&str>::new());
    assert_eq!(node_runs(&state, "mean"), vec![(1, false), (1, true)]);
}

/// A parent session: mean fails at iteration 1, is repaired, passes at 2.
async fn parent(dir: &Path, options: EngineOptions) -> EngineHandle {
    start(
        dir,
        vec![
            reply("plan", &plan_json(&[("mean", "the mean")])),
            reply("tests/mean", &py(MEAN_TESTS)),
            reply("code/mean/1", &py(MEAN_BUGGY)),
            reply(
                "repair/mean/2",
                &format!("Floor division.\n{}", py(MEAN_FIXED)),
            ),
        ],
        options,
    )
}

#[tokio::test]
async fn a_fork_at_an_earlier_iteration_with_an_edited_node_diverges_and_both_sessions_open() {
    let tmp = tempfile::tempdir().unwrap();
    let parent_dir = tmp.path().join("parent");
    let (_, result) = drain(parent(&parent_dir, EngineOptions::default()).await).await;
    assert!(result.passed, "{}", result.summary);
    let (parent_records, parent_state) = fold(&parent_dir);

    // Fork where iteration 1 had failed, and write iteration 2 by hand.
    let at = engine::rewind_point(&parent_records, "mean").unwrap();
    let at_record = parent_records.iter().find(|r| r.seq == at).unwrap();
    assert!(
        matches!(
            &at_record.event,
            Event::Localized(LocalizedEvent { iteration: 1, .. })
        ),
        "{at_record:?}"
    );
    let fork_dir = tmp.path().join("fork");
    let edit = Command::EditCode {
        node: "mean".into(),
        code: MEAN_BY_HAND.into(),
    };
    let forked = engine::fork(
        &tape(&parent_dir),
        at,
        &fork_dir,
        with(vec![], EngineOptions::default(), vec![edit]),
    )
    .unwrap();
    let (_, result) = drain(forked).await;
    assert!(result.passed, "{}", result.summary);

    // The fork opens on its own: the parent's records up to `at` (under the
    // fork's name), then `forked`, then its own segment.
    let (fork_records, fork_state) = fold(&fork_dir);
    let copied = at as usize + 1;
    assert_eq!(&fork_records[1..copied], &parent_records[1..copied]);
    let Event::SessionStarted(SessionStartedEvent { session_id, .. }) = &fork_records[0].event
    else {
        panic!("{:?}", fork_records[0]);
    };
    assert_eq!(session_id, "fork");
    assert_eq!(fork_state.session_id, "fork");
    let parent_ref = fork_state.parent.as_ref().unwrap();
    assert_eq!(parent_ref.session_id, "parent");
    assert_eq!(parent_ref.at_seq, at);
    assert_eq!(fork_state.resumes.len(), 1);
    assert_eq!(fork_records[copied].event.kind(), "forked");
    assert_eq!(fork_records[copied + 1].event.kind(), "resumed");

    // They diverge at iteration 2: the model's repair there, the hand edit here,
    // which ran without any model call.
    let parent_mean = &parent_state.nodes["mean"];
    let fork_mean = &fork_state.nodes["mean"];
    assert_eq!(parent_mean.versions[1].source, CodeSource::Model);
    assert_eq!(parent_mean.code(), Some(MEAN_FIXED));
    assert_eq!(fork_mean.versions[1].source, CodeSource::Edit);
    assert_eq!(fork_mean.code(), Some(MEAN_BY_HAND));
    assert_eq!(requests(&fork_records[copied..]), Vec::<&str>::new());
    assert_eq!(node_runs(&fork_state, "mean"), vec![(1, false), (2, true)]);
    assert_eq!(
        std::fs::read_to_string(fork_dir.join("code/mean/2.py")).unwrap(),
        MEAN_BY_HAND
    );
    // The parent is as it was.
    assert_eq!(fold(&parent_dir).0, parent_records);
}

#[tokio::test]
async fn rewind_stops_the_live_session_and_asks_the_repair_again_with_a_hint() {
    let tmp = tempfile::tempdir().unwrap();
    let parent_dir = tmp.path().join("live");
    let mut live = parent(
        &parent_dir,
        EngineOptions {
            keep_alive: true,
            ..EngineOptions::default()
        },
    )
    .await;
    // Wait until it has finished its work (it stays alive, idle).
    while let Some(r) = live.events.recv().await {
        if matches!(r.event, Event::Finished(_)) {
            break;
        }
    }
    let hint = Command::Hint {
        node: "mean".into(),
        text: "use true division".into(),
    };
    let fork_dir = tmp.path().join("rewound");
    let rewound = engine::rewind(
        live,
        "mean",
        &fork_dir,
        with(
            vec![reply("repair/mean/2", &py(MEAN_FIXED))],
            EngineOptions::default(),
            vec![hint],
        ),
    )
    .await
    .unwrap();
    let (_, result) = drain(rewound).await;
    assert!(result.passed, "{}", result.summary);

    // The branch left behind, on disk, resumable. It had finished, so it
    // keeps its result: no cancel is written to a finished tape (issue 21).
    let (left_records, left) = fold(&parent_dir);
    assert!(
        matches!(left_records.last().unwrap().event, Event::Finished(_)),
        "{:?}",
        left_records.last().unwrap().event
    );
    assert!(!left.steers.contains(&Command::Cancel));
    assert_ne!(
        codeloop_session::Outcome::of(&left),
        codeloop_session::Outcome::Cancelled
    );
    assert_eq!(left.nodes["mean"].iteration(), 2);
    // The rewound session asked the repair of iteration 2 again, with the hint.
    let (records, state) = fold(&fork_dir);
    let at = state.parent.as_ref().unwrap().at_seq as usize;
    assert_eq!(requests(&records[at + 1..]), vec!["repair/mean/2"]);
    let repair = state
        .calls
        .values()
        .rfind(|c| matches!(c.purpose, Purpose::Reflect { .. }))
        .unwrap();
    assert!(
        repair
            .messages
            .last()
            .unwrap()
            .content
            .contains("use true division"),
        "{}",
        repair.messages.last().unwrap().content
    );
    assert_eq!(node_runs(&state, "mean"), vec![(1, false), (2, true)]);
    assert!(engine::rewind_point(&records[..1], "mean").is_err());
}

#[tokio::test]
async fn an_edited_task_is_planned_again_and_unchanged_nodes_keep_their_tests_and_code() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("session");
    const TWICE: &str = "def twice(x):\n    return 2 * x\n";
    const TWICE_TESTS: &str = "def test_twice():\n    assert twice(2) == 4\n";
    const HALF: &str = "def half(x):\n    return x / 2\n";
    const HALF_TESTS: &str = "def test_half():\n    assert half(3) == 1.5\n";
    let mut live = start(
        &dir,
        vec![
            reply(
                "plan",
                &plan_json(&[("mean", "the mean"), ("twice", "double x")]),
            ),
            reply("tests/mean", &py(MEAN_TESTS)),
            reply("code/mean/1", &py(MEAN_FIXED)),
            reply("tests/twice", &py(TWICE_TESTS)),
            reply("code/twice/1", &py(TWICE)),
            // The edited task: mean stays, twice changes its purpose, half is new.
            reply(
                "replan",
                &plan_json(&[
                    ("mean", "the mean"),
                    ("twice", "double x, for ints"),
                    ("half", "half of x"),
                ]),
            ),
            reply("tests/twice", &py(TWICE_TESTS)),
            reply("code/twice/1", &py(TWICE)),
            reply("tests/half", &py(HALF_TESTS)),
            reply("code/half/1", &py(HALF)),
        ],
        EngineOptions {
            keep_alive: true,
            ..EngineOptions::default()
        },
    );
    let mut records = Vec::new();
    let mut finished = 0;
    while let Some(r) = live.events.recv().await {
        if matches!(r.event, Event::Finished(_)) {
            finished += 1;
            let next = if finished == 1 {
                Command::EditTask {
                    task: "the mean, double and half".into(),
                }
            } else {
                Command::Cancel
            };
            live.commands.send(next).await.unwrap();
        }
        records.push(r);
    }
    let result = live.done.await.unwrap().unwrap();
    assert_eq!(finished, 2);
    let edited = records
        .iter()
        .position(|r| {
            matches!(
                r.event,
                Event::Steer(SteerEvent {
                    command: Command::EditTask { .. }
                })
            )
        })
        .unwrap();
    // After the edit: the plan, then only the changed and the new node are
    // asked for (the two in parallel, in either order).
    let asked = requests(&records[edited..]);
    assert_eq!(asked[0], "replan");
    let mut rest = asked[1..].to_vec();
    rest.sort();
    assert_eq!(
        rest,
        vec!["code/half/1", "code/twice/1", "tests/half", "tests/twice"]
    );
    let state = State::from_records(&records);
    assert!(!state.replan);
    assert_eq!(state.task, "the mean, double and half");
    let mean = &state.nodes["mean"];
    assert_eq!(mean.versions.len(), 1);
    assert_eq!(mean.tests.as_deref(), Some(MEAN_TESTS));
    assert_eq!(mean.status, NodeStatus::Passed);
    // mean kept its passing code and was not run again.
    assert_eq!(node_runs(&state, "mean"), vec![(1, true)]);
    assert_eq!(node_runs(&state, "twice"), vec![(1, true), (1, true)]);
    assert_eq!(node_runs(&state, "half"), vec![(1, true)]);
    assert_eq!(result.nodes_total, 3);
    assert_eq!(result.nodes_passed, 3);
}

#[test]
fn a_tape_cut_off_mid_line_is_reopened_clean_for_a_new_segment() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("tape.jsonl");
    {
        let mut w = TapeWriter::create(&path).unwrap();
        w.append(Event::PlanError(PlanErrorEvent {
            message: "one".into(),
        }))
        .unwrap();
        w.append(Event::PlanError(PlanErrorEvent {
            message: "two".into(),
        }))
        .unwrap();
    }
    let mut bytes = std::fs::read(&path).unwrap();
    bytes.extend_from_slice(b"{\"seq\":2,\"t_ms\":5,\"type\":\"plan_e");
    std::fs::write(&path, &bytes).unwrap();
    let contents = read_tape(&path).unwrap();
    assert!(contents.truncated_tail.is_some());
    {
        let mut w = TapeWriter::reopen(&path, &contents).unwrap();
        let r = w
            .append(Event::PlanError(PlanErrorEvent {
                message: "three".into(),
            }))
            .unwrap();
        assert_eq!(r.seq, 2);
    }
    let after = read_tape(&path).unwrap();
    assert_eq!(after.truncated_tail, None);
    assert_eq!(after.records.len(), 3);

    // A tape a live writer holds is not opened by a second one.
    let live = TapeWriter::reopen(&path, &after).unwrap();
    assert!(matches!(
        TapeWriter::reopen(&path, &after),
        Err(TapeError::Busy { .. })
    ));
    drop(live);
    assert!(TapeWriter::reopen(&path, &after).is_ok());
}

/// A session run without fresh starts resumes without them, whatever the
/// resuming caller's defaults: the policy is the tape's. Its fourth
/// version, three having failed, is a repair (`repair/mean/4`), not a
/// fresh start; the script has no `fresh/mean/4`, so a fresh start fails
/// the test.
#[tokio::test]
async fn a_session_without_fresh_starts_resumes_without_them() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("session");
    let policy = RepairPolicy {
        fresh_start: false,
        ..RepairPolicy::default()
    };
    let first = start(
        &dir,
        vec![
            reply("plan", &plan_json(&[("mean", "the mean")])),
            reply("tests/mean", &py(MEAN_TESTS)),
            reply("code/mean/1", &py(MEAN_BUGGY)),
            reply(
                "repair/mean/2",
                &py("def mean(xs):\n    return sum(xs) // max(len(xs), 1)\n"),
            ),
            reply("repair/mean/3", &py("def mean(xs):\n    return 0.0\n")),
        ],
        EngineOptions {
            max_iterations: 3,
            policy: policy.clone(),
            ..EngineOptions::default()
        },
    );
    let (before, result) = drain(first).await;
    assert!(!result.passed, "{}", result.summary);
    let stopped = State::from_records(&before);
    assert_eq!(
        stopped.config.policy,
        Some(policy.clone()),
        "recorded whole at the start"
    );
    assert_eq!(stopped.nodes["mean"].status, NodeStatus::GaveUp);

    let options = engine::segment_options(&stopped, EngineOptions::default(), Some(1), None);
    assert!(!options.policy.fresh_start);
    let resumed = engine::resume(
        &tape(&dir),
        with(
            vec![reply("repair/mean/4", &py(MEAN_FIXED))],
            options,
            vec![],
        ),
    )
    .unwrap();
    let (_, result) = drain(resumed).await;
    assert!(result.passed, "{}", result.summary);
    let (records, state) = fold(&dir);
    // A repair (of the best version, which the give-up kept), never the
    // fresh start today's default would have made after three failures.
    let last = state.nodes["mean"].attempts.last().map(|a| a.kind);
    assert!(
        matches!(
            last,
            Some(AttemptKind::Repair | AttemptKind::DifferentApproach)
        ),
        "{last:?} {:?}",
        requests(&records)
    );
}
