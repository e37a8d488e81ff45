//! The loop's decision after a node's version failed: one pure function of
//! the folded state, the failure and the bounds the session runs under
//! (`next`), and its answer as data (`Next`, with the reason in words). The
//! engine records each answer on the tape (`Event::Decision`) before it
//! acts on it, so History, `run` and the exports tell why each step came;
//! a resumed session reads the same state and the same policy, and decides
//! as the original would have.
//!
//! In order: a version changed while it ran runs again; a version worse
//! than the best before it is rolled back; tests that do not load are asked
//! for again (once, and never the person's or the task's); a run codeloop
//! could not judge, or a node with no tests, is given up (a repair would
//! only guess); a node at its iteration limit is given up; otherwise the
//! next version is asked for, of the kind the policy names
//! (`attempt_kind`).

use super::blame;
use super::examples::EXAMPLES_TEST;
use super::execute;
use super::runs;
use super::tag::Tag;
use codeloop_protocol::Location;
use codeloop_protocol::failure::FailureKind;
use codeloop_protocol::present::plural;
use codeloop_sandbox::harness::tests_file_name;
use codeloop_session::{
    AttemptKind, CodeSource, GiveUpWhy, Next, RepairPolicy, State, VersionScore,
};

/// What a decision reads besides the state: the session's bounds.
pub(crate) struct Bounds<'a> {
    pub(crate) policy: &'a RepairPolicy,
    /// Code versions a node may have at most.
    pub(crate) max_iterations: u32,
    /// The node's tests came with the task (a given plan's): never rewritten.
    pub(crate) tests_given: bool,
    /// A test may be blamed (`blame::suspect_test`); off once the person
    /// kept the test it would set aside.
    pub(crate) blame_tests: bool,
}

/// A decision: the step, and why.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Decision {
    pub(crate) next: Next,
    pub(crate) reason: String,
}

impl Decision {
    /// A fresh start after an unusable reply, and why.
    pub(crate) fn fresh_start(reason: impl Into<String>) -> Decision {
        Decision::new(
            Next::Attempt {
                kind: AttemptKind::FreshStart,
            },
            reason,
        )
    }

    pub(crate) fn new(next: Next, reason: impl Into<String>) -> Decision {
        Decision {
            next,
            reason: reason.into(),
        }
    }
}

/// What follows the failure of `name`'s version `iteration` (localized at
/// `location`, already on the tape when there is one). Reads nothing but
/// its arguments.
pub(crate) fn next(
    s: &State,
    name: &str,
    iteration: u32,
    location: Option<&Location>,
    bounds: &Bounds,
) -> Decision {
    let Some(node) = s.nodes.get(name) else {
        return Decision::new(
            Next::GiveUp {
                why: GiveUpWhy::NotJudged,
            },
            "the plan has no such function",
        );
    };
    if node.iteration() != iteration {
        return Decision::new(
            Next::Rerun,
            format!(
                "version {iteration} was replaced while it ran: version {} runs",
                node.iteration()
            ),
        );
    }
    if let Some(best) = worse_than_best(s, name) {
        return Decision::new(Next::RollBack { to: best.iteration }, best.note);
    }
    let tests_broken =
        location.is_some_and(|l| l.file == tests_file_name(name) && l.test.is_none());
    let retag = Tag::Tests {
        node: name.to_string(),
        again: true,
    };
    let tests_rewritten = retag.latest_call(s).is_some();
    if tests_broken && !tests_rewritten && !bounds.tests_given {
        return Decision::new(
            Next::RewriteTests,
            "its tests do not load, and no change of the code can fix that",
        );
    }
    if location.is_some_and(runs::codeloops_own) {
        return Decision::new(
            Next::GiveUp {
                why: GiveUpWhy::NotJudged,
            },
            "it was not judged: codeloop could not run its tests (its own error, not the code's), so no repair is asked for: its failure says what went wrong",
        );
    }
    if node.tests.is_none() && location.is_some_and(|l| l.kind() == FailureKind::NoTestRan) {
        return Decision::new(
            Next::GiveUp {
                why: GiveUpWhy::NoTests,
            },
            "it has no tests, so no repair is asked for: write its tests in the Code pane and run it again, or name the function and state an example in the task (`a function f(x) that …: f(2) == 4`): the example becomes a test",
        );
    }
    if let Some(suspect) = blame::suspect_test(s, name, bounds) {
        return Decision::new(Next::SetAsideTest, suspect.reason);
    }
    if iteration >= bounds.max_iterations {
        let kept = kept_at_give_up(s, name).map_or(String::new(), |b| format!("; {}", b.note));
        return Decision::new(
            Next::GiveUp {
                why: GiveUpWhy::Limit,
            },
            format!(
                "still fails after {iteration} iteration{} (the limit){kept}",
                plural(iteration)
            ),
        );
    }
    let (kind, reason) = attempt_kind(s, name, bounds.policy);
    Decision::new(Next::Attempt { kind }, reason)
}

/// The kind of the attempt after `name`'s latest failure, and why. With
/// fresh starts: a repair, until the policy's `fresh_after` code versions
/// since the last fresh start (the first try and the repairs) have failed;
/// then a fresh start (at once when the model's reply was no function that
/// reads). Without: a repair, another approach when the last two failures
/// are the same.
pub(crate) fn attempt_kind(s: &State, name: &str, policy: &RepairPolicy) -> (AttemptKind, String) {
    let failures: Vec<(u32, &Location)> = s
        .failures_of(name)
        .map(|f| (f.iteration, &f.location))
        .collect();
    let latest = failures.last().map_or(0, |(it, _)| *it);
    // The model's reply was no function (mends could not make one): ask
    // again rather than show it its own broken reply. A person's edit is
    // repaired as ever.
    let from_model = s
        .nodes
        .get(name)
        .and_then(|n| n.versions.last())
        .is_some_and(|v| v.source != CodeSource::Edit);
    if policy.fresh_start
        && from_model
        && let Some(l) = execute::blocking_failure(s, name).filter(execute::unreadable)
    {
        return (
            AttemptKind::FreshStart,
            format!(
                "version {latest} was no function ({}: {}): asked again, not repaired",
                l.error_type, l.message
            ),
        );
    }
    if policy.fresh_start {
        let since = s
            .nodes
            .get(name)
            .and_then(|n| {
                n.attempts
                    .iter()
                    .rev()
                    .find(|a| a.kind == AttemptKind::FreshStart)
            })
            .map(|a| a.iteration);
        let mut failed: Vec<u32> = failures
            .iter()
            .map(|(it, _)| *it)
            .filter(|it| *it >= since.unwrap_or(1))
            .collect();
        failed.dedup();
        let from = match since {
            Some(it) => format!("since the fresh start of version {it}"),
            None => "since the first try".to_string(),
        };
        let n = failed.len();
        let after = policy.fresh_after as usize;
        return if n >= after {
            (
                AttemptKind::FreshStart,
                format!(
                    "{} failed {from} (fresh_after = {after})",
                    count_versions(n)
                ),
            )
        } else {
            (
                AttemptKind::Repair,
                format!(
                    "{} failed {from}; a fresh start after {after}",
                    count_versions(n)
                ),
            )
        };
    }
    let signature = |l: &Location| (l.error_type.clone(), l.line, l.test.clone());
    match failures.as_slice() {
        [.., (_, a), (_, b)] if signature(a) == signature(b) => (
            AttemptKind::DifferentApproach,
            match b.line {
                Some(line) => format!(
                    "the same failure twice ({} at line {line}): another approach",
                    b.error_type
                ),
                None => format!(
                    "the same failure twice ({}): another approach",
                    b.error_type
                ),
            },
        ),
        _ => (
            AttemptKind::Repair,
            format!("version {latest} failed (fresh starts off)"),
        ),
    }
}

fn count_versions(n: usize) -> String {
    match n {
        1 => "1 version".to_string(),
        n => format!("{n} versions"),
    }
}

/// The best version before the latest, when the latest passes fewer of
/// the node's tests than it.
pub(crate) struct Best {
    /// Its iteration (a version put back keeps the number of the one it
    /// replaced, so this alone does not name it).
    pub(crate) iteration: u32,
    /// Its code.
    pub(crate) code: String,
    /// What the tape says of it.
    pub(crate) note: String,
}

/// The best version so far, when the latest the model wrote passes fewer
/// of the node's tests than it. Never worse: that version is put back and
/// goes on from there.
pub(crate) fn worse_than_best(s: &State, name: &str) -> Option<Best> {
    let n = s.nodes.get(name)?;
    let current = n.versions.len().checked_sub(1)?;
    let latest = &n.versions[current];
    if !matches!(
        latest.source,
        CodeSource::Model | CodeSource::Mended | CodeSource::PlanReply
    ) {
        return None; // the person's edit, or codeloop's own choice: kept
    }
    let scores = s.version_scores(name);
    let now = scores.iter().find(|x| x.version == current);
    // The task's examples are facts: a version that fails them is worse
    // than one that passes them, whatever else either passes.
    let examples = |x: &VersionScore| !x.failed.iter().any(|t| t == EXAMPLES_TEST);
    let key = |x: &VersionScore| (examples(x), x.passed);
    // `max_by_key` gives the last of equals: the latest.
    let best = scores
        .iter()
        .filter(|x| x.version < current)
        .max_by_key(|x| key(x))?;
    if now.is_some_and(|x| key(x) >= key(best)) || (now.is_none() && best.passed == 0) {
        return None;
    }
    let passed = now.map_or(0, |x| x.passed);
    let total = best.total.max(now.map_or(0, |x| x.total));
    let note = match now {
        Some(x) if examples(best) && !examples(x) => format!(
            "version {} fails the task's examples, which version {} passes: version {} is kept and goes on",
            latest.iteration, best.iteration, best.iteration
        ),
        _ => {
            let ran = match now {
                Some(_) => format!("passed {passed} of {total} tests"),
                None => "could not run".to_string(),
            };
            format!(
                "version {} {ran}, fewer than version {}'s {} of {}: version {} is kept and goes on",
                latest.iteration, best.iteration, best.passed, best.total, best.iteration
            )
        }
    };
    Some(Best {
        iteration: best.iteration,
        code: n.versions[best.version].code.clone(),
        note,
    })
}

/// The version a node given up at its limit ends with, when it is not its
/// latest: the one that passed the most of its tests (the task's examples
/// first), the earliest of equals. A repair that gained nothing on the
/// tests is no better evidence than the version it repaired, and the first
/// try, written from the task alone, is the model's likeliest answer (what
/// resampling keeps when no sample passes). The person's edit is kept, and
/// nothing is put back when no version passed a test.
pub(crate) fn kept_at_give_up(s: &State, name: &str) -> Option<Best> {
    let n = s.nodes.get(name)?;
    let current = n.versions.len().checked_sub(1)?;
    if !n.versions[current].source.from_a_reply() {
        return None;
    }
    let scores = s.version_scores(name);
    let key = |x: &VersionScore| (!x.failed.iter().any(|t| t == EXAMPLES_TEST), x.passed);
    let mut best: Option<&VersionScore> = None;
    for x in &scores {
        if best.is_none_or(|b| key(x) > key(b)) {
            best = Some(x);
        }
    }
    let best = best?;
    // No version passed anything: none is evidence for another.
    if best.passed == 0
        || best.version == current
        || n.versions[best.version].code == n.versions[current].code
    {
        return None;
    }
    Some(Best {
        iteration: best.iteration,
        code: n.versions[best.version].code.clone(),
        note: format!(
            "version {} is kept: it passed the most of the tests ({} of {}; the earliest of equals)",
            best.iteration, best.passed, best.total
        ),
    })
}

#[cfg(test)]
pub(crate) mod tests {
    //! The decision over folded tapes: one row a behaviour of the loop.

    use super::*;
    use codeloop_protocol::failure::NO_TEST_RAN;
    use codeloop_session::Record;
    use serde_json::{Value, json};

    /// A node `f` planned, with tests (`tests`: their source) and the
    /// events after, folded as the tape would be.
    fn tape(tests: &str, after: &[Value]) -> State {
        tape_with("def test_f():\n    assert f(2) == 4\n", tests, after)
    }

    /// The same with the tests' code (`code`) given.
    pub(crate) fn tape_with(code: &str, tests: &str, after: &[Value]) -> State {
        let mut lines = vec![
            json!({"type":"session_started","version":1,"session_id":"s","started_at":"t","task":"t","inputs":[],
                   "config":{"provider":"demo","model":"m","endpoint":"","max_iterations":4,"workers":1,"timeout_secs":10}}),
            json!({"type":"plan","specs":[{"name":"f","purpose":"double","inputs":"x: int","output":"int","depends_on":[]}]}),
            json!({"type":"tests","node":"f","code":code,"source":tests}),
        ];
        lines.extend(after.iter().cloned());
        let records: Vec<Record> = lines
            .into_iter()
            .enumerate()
            .map(|(i, mut v)| {
                v["seq"] = json!(i);
                v["t_ms"] = json!(i);
                serde_json::from_value(v).unwrap()
            })
            .collect();
        State::from_records(&records)
    }

    pub(crate) fn code(iteration: u32, source: &str) -> Value {
        json!({"type":"code","node":"f","iteration":iteration,"code":"def f(x):\n    return x\n","source":source})
    }

    fn failed(iteration: u32, error: &str, line: u32) -> Value {
        json!({"type":"localized","node":"f","iteration":iteration,"location":location(error, line, "f.py", Some("test_f"))})
    }

    fn location(error: &str, line: u32, file: &str, test: Option<&str>) -> Value {
        json!({"file":file,"line":line,"column":null,"function":"f","error_type":error,
               "message":"assert 2 == 4","test":test,"in_node_code":true})
    }

    pub(crate) fn attempt(iteration: u32, kind: &str) -> Value {
        json!({"type":"attempt","node":"f","iteration":iteration,"kind":kind,"runtime_values":false})
    }

    fn loc(v: Value) -> Location {
        serde_json::from_value(v).unwrap()
    }

    /// The decision after version `iteration` failed at its latest
    /// localized failure (or at `at`).
    fn decide(s: &State, iteration: u32, at: Option<Location>, policy: &RepairPolicy) -> Decision {
        let at = at.or_else(|| s.last_failure("f").map(|f| f.location.clone()));
        next(
            s,
            "f",
            iteration,
            at.as_ref(),
            &Bounds {
                policy,
                max_iterations: 4,
                tests_given: false,
                blame_tests: true,
            },
        )
    }

    fn attempt_of(kind: AttemptKind) -> Next {
        Next::Attempt { kind }
    }

    /// The tape of versions that each failed: the first try, then one a
    /// `(attempt kind, error, line)`, each written by the model.
    fn failing(first: (&str, u32), after: &[(&str, &str, u32)]) -> State {
        let mut events = vec![code(1, "model"), failed(1, first.0, first.1)];
        for (k, (kind, error, line)) in after.iter().enumerate() {
            let it = k as u32 + 2;
            events.extend([
                attempt(it, kind),
                code(it, "model"),
                failed(it, error, *line),
            ]);
        }
        tape("model", &events)
    }

    /// A row of the table: what it holds, the tape, the version that
    /// failed, where (None: its latest localized failure), the policy, and
    /// the decision.
    type Row<'a> = (
        &'a str,
        &'a State,
        u32,
        Option<Location>,
        &'a RepairPolicy,
        Next,
    );

    #[test]
    fn every_step_after_a_failure_is_the_policys() {
        let on = RepairPolicy::default();
        let off = RepairPolicy {
            fresh_start: false,
            ..RepairPolicy::default()
        };
        let two = RepairPolicy {
            fresh_after: 2,
            ..RepairPolicy::default()
        };
        let first = failing(("AssertionError", 2), &[]);
        let second = failing(("AssertionError", 2), &[("repair", "AssertionError", 2)]);
        let third = failing(
            ("AssertionError", 2),
            &[("repair", "AssertionError", 2), ("repair", "TypeError", 3)],
        );
        let after_fresh = failing(
            ("AssertionError", 2),
            &[("fresh_start", "AssertionError", 2)],
        );
        let at_limit = tape(
            "model",
            &[
                code(1, "model"),
                code(4, "model"),
                failed(4, "AssertionError", 2),
            ],
        );
        let rows: Vec<Row> = vec![
            (
                "a first failure is repaired",
                &first,
                1,
                None,
                &on,
                attempt_of(AttemptKind::Repair),
            ),
            (
                "two failed versions, fresh_after 3: repaired",
                &second,
                2,
                None,
                &on,
                attempt_of(AttemptKind::Repair),
            ),
            (
                "three failed versions: a fresh start",
                &third,
                3,
                None,
                &on,
                attempt_of(AttemptKind::FreshStart),
            ),
            (
                "fresh_after 2: a fresh start after two",
                &second,
                2,
                None,
                &two,
                attempt_of(AttemptKind::FreshStart),
            ),
            (
                "counted again from the last fresh start",
                &after_fresh,
                2,
                None,
                &on,
                attempt_of(AttemptKind::Repair),
            ),
            (
                "fresh starts off: the same failure twice asks for another approach",
                &second,
                2,
                None,
                &off,
                attempt_of(AttemptKind::DifferentApproach),
            ),
            (
                "fresh starts off: a new failure is repaired",
                &third,
                3,
                None,
                &off,
                attempt_of(AttemptKind::Repair),
            ),
            (
                "replaced while it ran: the new version runs",
                &second,
                1,
                None,
                &on,
                Next::Rerun,
            ),
            (
                "at the limit: given up",
                &at_limit,
                4,
                None,
                &on,
                Next::GiveUp {
                    why: GiveUpWhy::Limit,
                },
            ),
            (
                "codeloop's own error: not judged, given up",
                &first,
                1,
                Some(loc(location("HarnessError", 0, "f.py", None))),
                &on,
                Next::GiveUp {
                    why: GiveUpWhy::NotJudged,
                },
            ),
            (
                "the sandbox's error: not judged",
                &first,
                1,
                Some(loc(location("SandboxError", 0, "f.py", None))),
                &on,
                Next::GiveUp {
                    why: GiveUpWhy::NotJudged,
                },
            ),
            (
                "tests that do not load are asked for again",
                &first,
                1,
                Some(loc(location("SyntaxError", 1, "test_f.py", None))),
                &on,
                Next::RewriteTests,
            ),
        ];
        for (why, state, iteration, at, policy, expected) in rows {
            let got = decide(state, iteration, at, policy);
            assert_eq!(got.next, expected, "{why}: {}", got.reason);
            assert!(!got.reason.is_empty(), "{why}");
        }
    }

    fn ran(run_id: u32, iteration: u32, passed: u32, failed: u32) -> [Value; 2] {
        [
            json!({"type":"run_started","run_id":run_id,"node":"f","iteration":iteration,"kind":"node_tests"}),
            json!({"type":"run_finished","run_id":run_id,"record":{"passed":false,"exit_code":1,"signal":null,
                   "limit_hit":null,"duration_ms":5,"dropped_bytes":0,"layers":[],"tests_passed":passed,"tests_failed":failed}}),
        ]
    }

    #[test]
    fn a_version_that_fails_the_tasks_examples_is_worse_than_one_that_fails_a_model_test() {
        use crate::blame::tests::versions;
        let policy = RepairPolicy::default();
        // Both pass 1 of 2: the first fails a test of the model's, the
        // repair the task's examples.
        let s = versions(
            "model",
            &[
                ("model", "", &["test_g"], "9"),
                ("model", "repair", &[EXAMPLES_TEST], "9"),
            ],
        );
        let d = decide(&s, 2, None, &policy);
        assert_eq!(d.next, Next::RollBack { to: 1 }, "{}", d.reason);
        assert_eq!(
            d.reason,
            "version 2 fails the task's examples, which version 1 passes: version 1 is kept and goes on"
        );
        // The other way round, the repair is no worse: it goes on.
        let s = versions(
            "model",
            &[
                ("model", "", &[EXAMPLES_TEST], "9"),
                ("model", "repair", &["test_g"], "9"),
            ],
        );
        let d = decide(&s, 2, None, &policy);
        assert!(
            matches!(d.next, Next::Attempt { .. }),
            "{:?} {}",
            d.next,
            d.reason
        );
    }

    #[test]
    fn a_node_given_up_at_its_limit_ends_with_its_best_version_the_earliest_of_equals() {
        use crate::blame::tests::versions;
        let policy = RepairPolicy::default();
        let g: &[&str] = &["test_g"];
        let at_limit = |s: &State| {
            let at = s.last_failure("f").map(|f| f.location.clone());
            next(
                s,
                "f",
                4,
                at.as_ref(),
                &Bounds {
                    policy: &policy,
                    max_iterations: 4,
                    tests_given: false,
                    blame_tests: true,
                },
            )
        };
        let (m, r) = ("model", "repair");
        let s = versions(
            "model",
            &[
                (m, "", g, "9"),
                (m, r, g, "8"),
                (m, r, g, "7"),
                (m, r, g, "6"),
            ],
        );
        let d = at_limit(&s);
        assert_eq!(
            d.next,
            Next::GiveUp {
                why: GiveUpWhy::Limit
            }
        );
        assert_eq!(
            d.reason,
            "still fails after 4 iterations (the limit); version 1 is kept: it passed the most of the tests (1 of 2; the earliest of equals)"
        );
        assert_eq!(kept_at_give_up(&s, "f").map(|b| b.iteration), Some(1));
        // A later version that passed more is the one kept.
        let s = versions(
            "model",
            &[
                (m, "", &["test_f", "test_g"], "9"),
                (m, r, g, "8"),
                (m, r, &["test_f", "test_g"], "7"),
                (m, r, &["test_f", "test_g"], "6"),
            ],
        );
        assert_eq!(kept_at_give_up(&s, "f").map(|b| b.iteration), Some(2));
        // The latest best already, or the person's own: nothing put back.
        let s = versions(
            "model",
            &[(m, "", &["test_f", "test_g"], "9"), (m, r, g, "8")],
        );
        assert_eq!(kept_at_give_up(&s, "f").map(|b| b.iteration), None);
        let s = versions("model", &[(m, "", g, "9"), ("edit", r, g, "8")]);
        assert_eq!(kept_at_give_up(&s, "f").map(|b| b.iteration), None);
    }

    #[test]
    fn a_version_worse_than_the_best_is_rolled_back_unless_the_person_wrote_it() {
        let policy = RepairPolicy::default();
        let events = |source: &str| {
            let mut v = vec![code(1, "model")];
            v.extend(ran(1, 1, 3, 1));
            v.push(failed(1, "AssertionError", 2));
            v.push(attempt(2, "repair"));
            v.push(code(2, source));
            v.extend(ran(2, 2, 1, 3));
            v.push(failed(2, "AssertionError", 2));
            v
        };
        let worse = decide(&tape("model", &events("model")), 2, None, &policy);
        assert_eq!(worse.next, Next::RollBack { to: 1 }, "{}", worse.reason);
        assert!(
            worse
                .reason
                .contains("version 2 passed 1 of 4 tests, fewer than version 1's 3 of 4"),
            "{}",
            worse.reason
        );
        let edit = decide(&tape("model", &events("edit")), 2, None, &policy);
        assert_eq!(
            edit.next,
            attempt_of(AttemptKind::Repair),
            "{}",
            edit.reason
        );
    }

    #[test]
    fn the_version_put_back_is_the_best_one_though_it_shares_its_iteration() {
        // A version put back keeps the number of the one it replaced: the
        // code rolled back to is the best's, not that number's first.
        let with = |iteration: u32, source: &str, body: &str| {
            json!({"type":"code","node":"f","iteration":iteration,"source":source,
                   "code":format!("def f(x):\n    return {body}\n")})
        };
        let mut events = vec![with(1, "model", "x * 2")];
        events.extend(ran(1, 1, 3, 1));
        events.push(with(2, "model", "x - 9"));
        events.extend(ran(2, 2, 1, 3));
        events.push(with(2, "best", "x * 2"));
        events.extend(ran(3, 2, 3, 1));
        events.push(with(3, "model", "x + 9"));
        events.extend(ran(4, 3, 0, 4));
        let s = tape("model", &events);
        let best = worse_than_best(&s, "f").unwrap();
        assert_eq!(best.iteration, 2);
        assert!(best.code.contains("x * 2"), "{}", best.code);
    }

    #[test]
    fn the_reasons_say_what_the_policy_counted() {
        let on = RepairPolicy::default();
        let third = failing(
            ("AssertionError", 2),
            &[
                ("repair", "AssertionError", 2),
                ("repair", "AssertionError", 2),
            ],
        );
        let d = decide(&third, 3, None, &on);
        assert_eq!(
            d.reason,
            "3 versions failed since the first try (fresh_after = 3)"
        );
        let first = failing(("AssertionError", 2), &[]);
        assert_eq!(
            decide(&first, 1, None, &on).reason,
            "1 version failed since the first try; a fresh start after 3"
        );
    }

    #[test]
    fn tests_are_rewritten_once_and_never_the_given_ones() {
        let broken = Some(loc(location("SyntaxError", 1, "test_f.py", None)));
        let policy = RepairPolicy::default();
        let first = failing(("AssertionError", 2), &[]);
        let given = next(
            &first,
            "f",
            1,
            broken.as_ref(),
            &Bounds {
                policy: &policy,
                max_iterations: 4,
                tests_given: true,
                blame_tests: true,
            },
        );
        assert_ne!(given.next, Next::RewriteTests, "{}", given.reason);
        // Asked for again once already (a tests/f/2 call on the tape).
        let asked = tape(
            "model",
            &[
                code(1, "model"),
                json!({"type":"model_request","call_id":1,"purpose":{"kind":"tests","node":"f"},"tag":"tests/f/2","messages":[]}),
            ],
        );
        let again = decide(&asked, 1, broken, &policy);
        assert_ne!(again.next, Next::RewriteTests, "{}", again.reason);
    }

    #[test]
    fn a_node_with_no_tests_is_given_up_not_repaired() {
        let policy = RepairPolicy::default();
        let mut s = tape("model", &[code(1, "model")]);
        if let Some(n) = s.nodes.get_mut("f") {
            n.tests = None;
        }
        let mut none_ran = loc(location("RunError", 0, "f.py", None));
        none_ran.message = format!("{NO_TEST_RAN}: it has no tests");
        let d = decide(&s, 1, Some(none_ran), &policy);
        assert_eq!(
            d.next,
            Next::GiveUp {
                why: GiveUpWhy::NoTests
            },
            "{}",
            d.reason
        );
    }

    #[test]
    fn an_unreadable_reply_is_asked_afresh_but_a_persons_edit_is_repaired() {
        let policy = RepairPolicy::default();
        let check = json!({"type":"check","node":"f","iteration":1,
            "findings":[{"kind":"syntax","line":2,"message":"invalid syntax"}]});
        let model = tape(
            "model",
            &[code(1, "model"), check.clone(), failed(1, "SyntaxError", 2)],
        );
        assert_eq!(
            decide(&model, 1, None, &policy).next,
            attempt_of(AttemptKind::FreshStart)
        );
        let edited = tape(
            "model",
            &[code(1, "edit"), check, failed(1, "SyntaxError", 2)],
        );
        assert_eq!(
            decide(&edited, 1, None, &policy).next,
            attempt_of(AttemptKind::Repair)
        );
    }
}
