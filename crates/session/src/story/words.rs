//! Each fact of the tape in its one wording: where code came from, how a
//! run ended, a test change's fate, a candidate of a vote, a command, what
//! the engine is paused before. The story's lines are made of these, and
//! a view that says one of these facts outside a line says it with these.

use codeloop_protocol::present::count;

use crate::consensus::CandidatesInfo;
use crate::event::{
    CodeSource, Command, DecisionEvent, Finding, FunctionSpec, Purpose, RunRecord, Step,
};
use crate::repairs::TestChange;

/// Where a code version (or a node's tests) came from.
pub fn source(source: CodeSource) -> &'static str {
    match source {
        CodeSource::Model => "by the model",
        CodeSource::Edit => "edited by hand",
        CodeSource::Cache => "from the cache",
        CodeSource::Given => "given with the task",
        CodeSource::PlanReply => "by the model, in its plan reply",
        CodeSource::Mended => "mended by codeloop",
        CodeSource::Best => "the best so far, put back by codeloop",
    }
}

/// `name(inputs) -> output`, or `name(inputs)` with no output named.
pub fn signature(spec: &FunctionSpec) -> String {
    let mut s = format!("{}({})", spec.name, spec.inputs);
    if !spec.output.is_empty() {
        s.push_str(&format!(" -> {}", spec.output));
    }
    s
}

/// How a run ended: `passed, 3 tests`, `failed 1 of 3 tests: test_b`
/// (the names where the run recorded them, two at most),
/// `failed: exit code 1`, `stopped: wall-clock timeout of 10 s`; with
/// `cancelled`, a run that did not pass was stopped by the person's cancel.
pub fn run_result(record: &RunRecord, cancelled: bool) -> String {
    let tests = match (record.tests_passed, record.tests_failed) {
        (Some(p), Some(0)) => Some(count(p, "test")),
        (Some(p), Some(f)) => Some(format!("{f} of {}", count(p + f, "test"))),
        _ => None,
    };
    if record.passed {
        // A pass with tests counted as failed (a recorded run's counts
        // that disagree with its verdict) says they failed.
        return match (tests, record.tests_failed) {
            (Some(t), Some(f)) if f > 0 => format!("passed, {t} failed"),
            (Some(t), _) => format!("passed, {t}"),
            (None, _) => "passed".to_string(),
        };
    }
    if let Some(limit) = &record.limit_hit {
        return format!("stopped: {limit}");
    }
    if cancelled {
        return "cancelled".to_string();
    }
    let names = match record.failed_tests.as_slice() {
        [] => String::new(),
        [a] => format!(": {a}"),
        [a, b] => format!(": {a}, {b}"),
        [a, b, rest @ ..] => format!(": {a}, {b} and {} more", rest.len()),
    };
    match (tests, record.exit_code, record.signal) {
        (Some(t), _, _) => format!("failed {t}{names}"),
        (None, Some(code), _) => format!("failed: exit code {code}"),
        (None, None, Some(signal)) => format!("failed: signal {signal}"),
        (None, None, None) => "failed".to_string(),
    }
}

/// What a run took: `12 ms, CPU 10 ms · peak 9.8 MiB`.
pub fn run_figures(record: &RunRecord) -> String {
    match record.resources {
        Some(r) => format!("{} ms, {}", record.duration_ms, r.short()),
        None => format!("{} ms", record.duration_ms),
    }
}

/// What the static check found: `syntax (line 3): invalid syntax`.
pub fn finding(f: &Finding) -> String {
    match f.line {
        Some(l) => format!("{} (line {l}): {}", f.kind, f.message),
        None => format!("{}: {}", f.kind, f.message),
    }
}

/// What became of a test change the model proposed.
pub fn test_change_fate(change: &TestChange) -> String {
    match (change.applied, &change.rejected_because) {
        (true, _) => "applied".to_string(),
        (false, Some(why)) => format!("rejected: {why}"),
        (false, None) => "rejected".to_string(),
    }
}

/// One candidate of a vote: `#2 agreement 5, chosen`, `#3 did not load`.
pub fn candidate(info: &CandidatesInfo, index: usize) -> String {
    let Some(c) = info.candidates.get(index) else {
        return format!("#{}", index + 1);
    };
    match (c.loaded, index == info.chosen) {
        // No vote was held (one candidate, or none could be compared).
        _ if !info.voted() && index == info.chosen => format!("#{} kept", index + 1),
        _ if !info.voted() => format!("#{} not run", index + 1),
        (false, _) => format!("#{} did not load", index + 1),
        (true, true) => format!("#{} agreement {}, chosen", index + 1, c.score),
        (true, false) => format!("#{} agreement {}", index + 1, c.score),
    }
}

/// A command of the person's, in a few words.
pub fn command(command: &Command) -> String {
    match command {
        Command::SetStepMode { on: true } => "step mode on".into(),
        Command::SetStepMode { on: false } => "step mode off".into(),
        Command::Approve => "approved".into(),
        Command::Skip => "skipped".into(),
        Command::EditTask { .. } => "task edited".into(),
        Command::EditSpec { node, .. } => format!("spec of {node} edited"),
        Command::EditCode { node, code } => {
            format!(
                "code of {node} edited ({})",
                codeloop_protocol::present::count(code.lines().count(), "line")
            )
        }
        Command::EditTests { node, .. } => format!("tests of {node} edited"),
        Command::Hint { node, text } => format!("hint for {node}: {text}"),
        Command::RerunNode { node } => format!("re-run {node}"),
        Command::Cancel => "cancelled".into(),
        Command::ReviewPrompt => "show the prompt before it is sent".into(),
        Command::EditPrompt { messages } => format!(
            "prompt edited ({})",
            codeloop_protocol::present::count(
                messages
                    .iter()
                    .map(|m| m.content.lines().count())
                    .sum::<usize>(),
                "line"
            )
        ),
    }
}

/// A node's latest failure when it was found in an earlier version of its
/// code or tests than the one shown (never drawn on a line of it).
pub const EARLIER_FAILURE: &str = "previous iteration's failure";

/// When that failure was found: `iteration 1, now 2`, or `before the
/// tests changed, iteration 2` when only the tests are newer.
pub fn earlier_failure_when(found: u32, now: u32) -> String {
    if found == now {
        format!("before the tests changed, iteration {found}")
    } else {
        format!("iteration {found}, now {now}")
    }
}

/// The mark at the end of a reflection recorded cut where it began to
/// repeat itself (the engine's `looped`): the rest was the same again.
pub const REFLECTION_CUT: &str =
    "[cut here: the rest repeated itself, and is not given to the next repair]";

/// A test that may be wrong, in one wording: `the test of f may be wrong: why`.
pub fn suspect_test(node: &str, why: &str) -> String {
    format!("the test of {node} may be wrong: {why}")
}

/// A skip that answered the review's pause.
pub const REVIEW_SKIP: &str = "sent the code to a repair, unrun";

/// What the engine is paused before.
pub fn step(step: &Step) -> String {
    match step {
        Step::ModelCall { purpose, again } => {
            let call = match purpose {
                Purpose::Plan => "the planning call".into(),
                Purpose::Tests { node } => format!("writing tests for {node}"),
                Purpose::Code { node } => format!("writing code for {node}"),
                Purpose::Reflect { node } => format!("reflecting on {node}"),
                Purpose::Repair { node } => format!("repairing {node}"),
                Purpose::Review { node } => format!("reviewing the code of {node}"),
                Purpose::Inputs { node } => format!("proposing inputs for {node}'s candidates"),
            };
            match again {
                Some(why) => format!("{call}, asked again ({why})"),
                None => call,
            }
        }
        Step::Run {
            node: Some(n),
            iteration,
        } => format!("running {n} #{iteration}"),
        Step::Run { node: None, .. } => {
            "running the program (against every function's tests, then from its entry point)".into()
        }
        Step::TestFix { node, .. } => format!("changing the tests of {node} (the model's fix)"),
        Step::SuspectTest {
            node,
            set_aside: Some(test),
            ..
        } => format!(
            "setting `{test}` of {node} aside: the test may be wrong (approve: set it aside; skip: keep it; or edit the tests)"
        ),
        Step::SuspectTest { node, .. } => {
            format!("running {node}'s repair: the test may be wrong")
        }
        Step::Prompt { tag, .. } => format!("sending the prompt of {tag}"),
        Step::Review { node, iteration } => {
            format!("running {node} #{iteration}, reviewed (x: repair it unrun)")
        }
    }
}

/// A decision of the loop's in words: its step, then why
/// ("fresh start: 3 versions failed since the first try (fresh_after = 3)").
pub fn decision(e: &DecisionEvent) -> String {
    format!("{}: {}", e.next.label(), e.reason)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(passed: bool, counts: Option<(u32, u32)>) -> RunRecord {
        RunRecord {
            passed,
            exit_code: Some(if passed { 0 } else { 1 }),
            signal: None,
            limit_hit: None,
            duration_ms: 12,
            dropped_bytes: 0,
            layers: vec![],
            tests_passed: counts.map(|c| c.0),
            tests_failed: counts.map(|c| c.1),
            failed_tests: Vec::new(),
            resources: None,
        }
    }

    #[test]
    fn a_run_ends_in_one_wording() {
        assert_eq!(
            run_result(&record(true, Some((3, 0))), false),
            "passed, 3 tests"
        );
        assert_eq!(
            run_result(&record(false, Some((2, 1))), false),
            "failed 1 of 3 tests"
        );
        let named = |names: &[&str]| RunRecord {
            failed_tests: names.iter().map(|n| n.to_string()).collect(),
            ..record(false, Some((5, names.len() as u32)))
        };
        assert_eq!(
            run_result(&named(&["test_task_examples"]), false),
            "failed 1 of 6 tests: test_task_examples"
        );
        assert_eq!(
            run_result(&named(&["test_a", "test_b", "test_c", "test_d"]), false),
            "failed 4 of 9 tests: test_a, test_b and 2 more"
        );
        assert_eq!(
            run_result(&record(false, None), false),
            "failed: exit code 1"
        );
        assert_eq!(run_result(&record(false, None), true), "cancelled");
        let stopped = RunRecord {
            limit_hit: Some("wall-clock timeout of 10 s".into()),
            ..record(false, None)
        };
        assert_eq!(
            run_result(&stopped, true),
            "stopped: wall-clock timeout of 10 s"
        );
        assert_eq!(
            run_result(&record(true, Some((2, 1))), false),
            "passed, 1 of 3 tests failed"
        );
        assert_eq!(run_figures(&record(true, None)), "12 ms");
    }
}
