//! The story of a tape: what each event says, and the timeline.

use super::*;
use crate::review::{ReviewFinding, ReviewVerdict, Severity};
use codeloop_protocol::{Location, Usage};

fn fold(events: &[Event]) -> (State, Vec<Record>) {
    let records: Vec<Record> = events
        .iter()
        .enumerate()
        .map(|(seq, event)| Record {
            seq: seq as u64,
            t_ms: seq as u64,
            event: event.clone(),
        })
        .collect();
    (State::from_records(&records), records)
}

/// What each event of `events` says, as `run` prints it: `label subject: text`.
fn told(events: &[Event]) -> Vec<String> {
    let mut state = State::default();
    let mut out = Vec::new();
    for (seq, event) in events.iter().enumerate() {
        let record = Record {
            seq: seq as u64,
            t_ms: 0,
            event: event.clone(),
        };
        state.apply(&record);
        if let Some(line) = tell(&state, &record) {
            out.push(format!("{} {}", line.what.label(), line.plain()));
        }
    }
    out
}

fn spec(name: &str) -> FunctionSpec {
    FunctionSpec {
        name: name.into(),
        purpose: "p".into(),
        inputs: "x: int".into(),
        output: "int".into(),
        depends_on: vec![],
        head: None,
    }
}

fn code(node: &str, iteration: u32, source: CodeSource) -> Event {
    Event::Code(CodeEvent {
        node: node.into(),
        iteration,
        code: format!("def {node}(x):\n    return x\n"),
        source,
        notes: Vec::new(),
    })
}

fn run(run_id: u64, node: Option<&str>, iteration: u32, passed: bool) -> [Event; 2] {
    [
        Event::RunStarted(RunStartedEvent {
            run_id,
            node: node.map(str::to_string),
            iteration,
            kind: if node.is_some() {
                RunKind::NodeTests
            } else {
                RunKind::Program
            },
        }),
        Event::RunFinished(RunFinishedEvent {
            run_id,
            record: RunRecord {
                passed,
                exit_code: Some(if passed { 0 } else { 1 }),
                signal: None,
                limit_hit: None,
                duration_ms: 7,
                dropped_bytes: 0,
                layers: vec![],
                tests_passed: Some(if passed { 2 } else { 1 }),
                tests_failed: Some(if passed { 0 } else { 1 }),
                failed_tests: Vec::new(),
                resources: None,
            },
        }),
    ]
}

fn localized(node: &str, iteration: u32, error_type: &str) -> Event {
    Event::Localized(LocalizedEvent {
        node: node.into(),
        iteration,
        location: Location {
            file: format!("{node}.py"),
            line: Some(2),
            function: Some(node.into()),
            error_type: error_type.into(),
            message: "wrong".into(),
            ..Location::default()
        },
    })
}

fn status(node: &str, status: NodeStatus) -> Event {
    Event::NodeStatus(NodeStatusEvent {
        node: node.into(),
        status,
    })
}

fn session() -> Vec<Event> {
    let mut events = vec![
        Event::Plan(PlanEvent {
            specs: vec![spec("f")],
        }),
        code("f", 1, CodeSource::Model),
    ];
    events.extend(run(1, Some("f"), 1, false));
    events.push(localized("f", 1, "ValueError"));
    events.push(Event::Attempt(AttemptEvent {
        node: "f".into(),
        iteration: 2,
        kind: AttemptKind::Repair,
        runtime_values: true,
    }));
    events.push(Event::Reflection(ReflectionEvent {
        node: "f".into(),
        iteration: 1,
        text: "Off by one.".into(),
    }));
    events.push(code("f", 2, CodeSource::Edit));
    events.push(Event::Review(ReviewEvent {
        node: "f".into(),
        iteration: 2,
        verdict: ReviewVerdict::Concerns,
        findings: vec![ReviewFinding {
            severity: Severity::Serious,
            line: Some(2),
            what: "returns x".into(),
        }],
        call_id: None,
    }));
    events.extend(run(2, Some("f"), 2, true));
    events
}

#[test]
fn each_event_says_its_fact_in_the_one_wording() {
    assert_eq!(
        told(&session()),
        [
            "plan 1 function",
            "code f #1: by the model",
            "run f #1: failed 1 of 2 tests (7 ms)",
            "failure f #1: ValueError at f.py:2 in f: wrong",
            "attempt f #2: repair (with runtime values)",
            "reflection f #1: Off by one.",
            "code f #2: edited by hand, repair",
            "review f #2: concerns: 1 serious",
            "run f #2: passed, 2 tests (7 ms)",
        ]
    );
}

#[test]
fn the_timeline_tells_the_history_with_the_same_words() {
    let (state, _) = fold(&session());
    let lines: Vec<String> = timeline(&state).iter().map(Line::plain).collect();
    assert_eq!(
        lines,
        [
            "f #1: by the model",
            "f #1: failed 1 of 2 tests (7 ms)",
            "f #1: ValueError at f.py:2 in f: wrong",
            "f #1: Off by one.",
            "f #2: edited by hand, repair",
            "f #2: concerns: 1 serious",
            "f #2: passed, 2 tests (7 ms)",
        ]
    );
    let review = timeline(&state)
        .into_iter()
        .find(|l| matches!(l.what, What::Review { .. }));
    assert_eq!(
        review.map(|l| l.more),
        Some(vec!["serious, line 2: returns x".to_string()])
    );
}

#[test]
fn a_failure_is_kept_once_and_its_node_and_history_refer_to_it() {
    let (state, _) = fold(&session());
    assert_eq!(state.failures.len(), 1);
    let failures: Vec<(u32, Option<u64>)> = state
        .failures_of("f")
        .map(|f| (f.iteration, f.run))
        .collect();
    assert_eq!(failures, [(1, Some(1))]);
    assert!(
        state
            .history
            .iter()
            .any(|h| matches!(h, HistoryEntry::Failure { failure: 0 })),
        "the history names it by its place"
    );
    // The pass of #2 clears the node's last failure, not the failure.
    let mut events = session();
    events.push(status("f", NodeStatus::Passed));
    let (state, _) = fold(&events);
    assert!(state.last_failure("f").is_none());
    assert_eq!(state.failures_of("f").count(), 1);
    assert_eq!(state.reviews_of("f").count(), 1);
    assert_eq!(state.current_review("f").map(|r| r.iteration), Some(2));
}

#[test]
fn the_failures_shown_at_an_iteration_are_its_latest_runs() {
    let mut events = session();
    // #2 run again (new tests in a fork), failing: its failure is shown,
    // and nothing of the run before.
    events.extend(run(3, Some("f"), 2, false));
    events.push(localized("f", 2, "KeyError"));
    let (state, _) = fold(&events);
    let shown = |it| -> Vec<String> {
        state
            .shown_failures("f", it)
            .iter()
            .map(|f| f.location.error_type.clone())
            .collect()
    };
    assert_eq!(shown(1), ["ValueError"]);
    assert_eq!(shown(2), ["KeyError"]);
    assert_eq!(
        state.iteration_run("f", 2).map(|(r, _)| r.iteration),
        Some(2)
    );
    assert_eq!(state.run_to_show(Some("f"), false), Some(3));
    assert_eq!(state.run_to_show(None, true), None, "no program run");
}

#[test]
fn a_failure_of_code_whose_own_tests_passed_is_the_programs_and_counted_in_its_pass() {
    let mut events = vec![
        Event::Plan(PlanEvent {
            specs: vec![spec("f")],
        }),
        code("f", 1, CodeSource::Model),
    ];
    events.extend(run(1, Some("f"), 1, true));
    events.push(status("f", NodeStatus::Passed));
    events.extend(run(2, None, 0, false));
    events.push(status("f", NodeStatus::Failed));
    events.push(localized("f", 1, "AssertionError"));
    let (state, _) = fold(&events);
    assert_eq!(state.program_repairs(), 1);
    assert!(state.failures[0].in_program);
    // A node's own failing run is not the program's.
    let (state, _) = fold(&session());
    assert_eq!(state.program_repairs(), 0);
    // A new pass (after `Finished`) counts afresh.
    events.push(Event::Finished(FinishedEvent {
        result: FinalResult {
            passed: false,
            nodes_passed: 0,
            nodes_total: 1,
            iterations: 0,
            usage: Usage::default(),
            summary: "s".into(),
            output_dir: None,
        },
    }));
    let (state, _) = fold(&events);
    assert_eq!(state.program_repairs(), 0);
}

#[test]
fn a_node_planned_afresh_starts_without_failures_and_the_history_keeps_them() {
    let mut events = session();
    let changed = FunctionSpec {
        purpose: "another".into(),
        ..spec("f")
    };
    events.push(Event::Plan(PlanEvent {
        specs: vec![changed],
    }));
    let (state, _) = fold(&events);
    assert_eq!(state.failures_of("f").count(), 0);
    assert!(state.current_review("f").is_none());
    let failures = timeline(&state)
        .iter()
        .filter(|l| matches!(l.what, What::Failure { .. }))
        .count();
    assert_eq!(failures, 1, "the history still tells it");
}

#[test]
fn a_fork_point_is_said_by_the_story_s_last_line_by_then() {
    let mut events: Vec<Event> = session().into_iter().take(5).collect();
    events.push(Event::ModelRequest(ModelRequestEvent {
        call_id: 1,
        purpose: Purpose::Reflect { node: "f".into() },
        tag: "reflect/f/1".into(),
        messages: Vec::new(),
    }));
    events.push(Event::ModelDelta(ModelDeltaEvent {
        call_id: 1,
        text: "The loop".into(),
    }));
    events.push(Event::Reflection(ReflectionEvent {
        node: "f".into(),
        iteration: 1,
        text: format!("{}\nand more", "x".repeat(100)),
    }));
    let (_, records) = fold(&events);
    let point = |at| crate::lineage::describe_point(&records, at);
    // A request and a streamed piece say nothing: the failure before them.
    let failure = "f #1: ValueError at f.py:2 in f: wrong";
    assert_eq!(
        point(4),
        format!("record 4 ({failure}; 1 code version by then)")
    );
    assert_eq!(point(6), point(4).replace("record 4", "record 6"));
    // A long line, cut; its first line only.
    let cut = format!("f #1: {}…", "x".repeat(74));
    assert_eq!(
        point(7),
        format!("record 7 ({cut}; 1 code version by then)")
    );
    assert_eq!(
        point(0),
        "record 0 (plan: 1 function; 0 code versions by then)"
    );
}

#[test]
fn a_reflection_that_says_nothing_has_no_line() {
    // A small model's repair that wrote only code: History showed an empty
    // "reflection:" after it.
    let mut events = session();
    for e in events.iter_mut() {
        if let Event::Reflection(r) = e {
            r.text = "  \n".into();
        }
    }
    assert!(
        !told(&events).iter().any(|l| l.starts_with("reflection")),
        "{:?}",
        told(&events)
    );
    let (state, _) = fold(&events);
    let lines: Vec<String> = timeline(&state).iter().map(Line::plain).collect();
    assert!(!lines.iter().any(|l| l.trim_end() == "f #1:"), "{lines:?}");
    assert_eq!(lines.len(), timeline(&fold(&session()).0).len() - 1);
}

#[test]
fn the_start_tells_the_policy_it_recorded_and_an_old_tape_none() {
    let mut e = SessionStartedEvent {
        version: 1,
        session_id: "s".into(),
        started_at: String::new(),
        task: "t".into(),
        inputs: vec![],
        config: ConfigSummary::default(),
    };
    assert!(
        !lines::started(&e)
            .more
            .iter()
            .any(|m| m.starts_with("policy:"))
    );
    e.config.policy = Some(crate::RepairPolicy {
        fresh_after: 5,
        ..Default::default()
    });
    let more = lines::started(&e).more;
    assert!(
        more.contains(&"policy:  fresh start after 5 failed versions, 2 program repairs, runtime values on, no review, a model test set aside when 2 versions written apart fail it alike".to_string()),
        "{more:?}"
    );
}

#[test]
fn a_version_put_back_is_told_without_the_attempt_kind_of_the_one_it_replaced() {
    let mut events = session();
    events.push(code("f", 2, CodeSource::Best));
    let told = told(&events);
    assert_eq!(
        told.last().map(String::as_str),
        Some("code f #2: the best so far, put back by codeloop"),
        "{told:?}"
    );
    assert!(told.contains(&"code f #2: edited by hand, repair".to_string()));
}
