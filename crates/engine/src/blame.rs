//! Code-or-test blame: a test the model wrote can be wrong, and then no
//! repair of right code passes it. When versions written apart (the first
//! try, fresh starts) fail one of the model's tests alone, the same way,
//! the test is blamed (`suspect_test`):
//! the decision sets it aside (`Next::SetAsideTest`), leaving it in the
//! tests as a comment that says why (`set_aside`), and the first of those
//! versions is judged again without it.

use super::context::{Core, Stop};
use super::decide::Bounds;
use super::examples::EXAMPLES_TEST;
use super::steering::GateAnswer;
use codeloop_session::{
    AttemptKind, CodeEvent, CodeSource, Event, State, Step, TestsEvent, VersionScore,
};

/// A test of the model's blamed instead of the code (`Next::SetAsideTest`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Suspect {
    /// The test function's name.
    pub(crate) test: String,
    /// The node's tests with it set aside: its definition left as a comment
    /// that says why.
    pub(crate) tests: String,
    /// The first of the versions that failed it (its place in
    /// `NodeState::versions`): put back to be judged again.
    pub(crate) version: usize,
    /// Why, in words.
    pub(crate) reason: String,
}

/// Code-or-test blame: a test of the model's that the latest
/// `suspect_test_after` versions written apart (the first try and fresh
/// starts: none a repair of another) each failed alone, the same way (the
/// same error, the same value), every other test of the node passing.
/// Samples that agree with each other against a test are likelier right
/// than it (a repair that keeps a value proves less: it may only have
/// failed to fix it, so repairs are not counted). Never the task's
/// examples, tests given with the task or the person's tests (the model's
/// own only); never a test that is all there is.
pub(crate) fn suspect_test(s: &State, name: &str, bounds: &Bounds) -> Option<Suspect> {
    let n = bounds.policy.suspect_test_after as usize;
    let node = s.nodes.get(name)?;
    if n == 0 || !bounds.blame_tests || bounds.tests_given || !node.tests_by_model {
        return None;
    }
    let tests = node.tests.as_deref()?;
    let apart = |v: &VersionScore| {
        let version = &node.versions[v.version];
        let it = version.iteration;
        version.source.from_a_reply()
            && version.source != CodeSource::Best
            && (it == 1
                || node
                    .attempts
                    .iter()
                    .any(|a| a.iteration == it && a.kind == AttemptKind::FreshStart))
    };
    let scores: Vec<VersionScore> = s
        .version_scores(name)
        .into_iter()
        .filter(|v| apart(v))
        .collect();
    let window = scores.get(scores.len().checked_sub(n)?..)?;
    // Decided when the latest of them fails: the current version.
    if window.last()?.version != node.versions.len().checked_sub(1)? {
        return None;
    }
    let [test] = window[0].failed.as_slice() else {
        return None;
    };
    if test == EXAMPLES_TEST
        || window
            .iter()
            .any(|v| v.failed != [test.clone()] || v.total < 2 || v.passed + 1 != v.total)
    {
        return None;
    }
    // How each failed it, from its localized failure.
    let how = |v: &VersionScore| {
        let iteration = node.versions[v.version].iteration;
        s.failures_of(name)
            .rev()
            .find(|f| f.iteration == iteration)
            .map(|f| &f.location)
            .filter(|l| l.test.as_deref() == Some(test.as_str()))
            .map(|l| {
                (
                    l.error_type.clone(),
                    clip(l.actual.as_deref().unwrap_or(&l.message)),
                    l.expected.as_deref().map(clip),
                )
            })
    };
    let first = how(&window[0])?;
    if window[1..].iter().any(|v| how(v).as_ref() != Some(&first)) {
        return None;
    }
    let set_aside = set_aside(tests, test, &why_words(test, &first))?;
    let versions: Vec<String> = window
        .iter()
        .map(|v| node.versions[v.version].iteration.to_string())
        .collect();
    let gave = match &first.2 {
        Some(expected) => format!("gave {} where it expects {expected}", first.1),
        None => format!("failed it with {}: {}", first.0, first.1),
    };
    let reason = format!(
        "the test may be wrong: {} {} (written apart) {gave}, and every other test passes ({} of {}): `{test}` is set aside (kept in the tests as a comment) and version {} is judged again without it",
        if versions.len() == 1 {
            "version"
        } else {
            "versions"
        },
        join_and(&versions),
        window[0].passed,
        window[0].total,
        versions[0],
    );
    Some(Suspect {
        test: test.clone(),
        tests: set_aside,
        version: window[0].version,
        reason,
    })
}

/// The comment a set-aside test is left under.
fn why_words(test: &str, how: &(String, String, Option<String>)) -> String {
    match &how.2 {
        Some(expected) => format!(
            "codeloop set `{test}` aside as suspect: versions written apart gave {} where it expects {expected}, every other test passing",
            how.1
        ),
        None => format!(
            "codeloop set `{test}` aside as suspect: versions written apart failed it with {}: {}, every other test passing",
            how.0, how.1
        ),
    }
}

fn join_and(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// A value or message on one line, at most 80 characters.
fn clip(text: &str) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let kept: String = line.chars().take(80).collect();
    if kept.len() < line.len() {
        format!("{kept}…")
    } else {
        kept
    }
}

/// `tests` with the top-level test function `test` left as a comment
/// under `why`; None when there is no such function.
pub(crate) fn set_aside(tests: &str, test: &str, why: &str) -> Option<String> {
    let lines: Vec<&str> = tests.lines().collect();
    let head = format!("def {test}(");
    let def = lines.iter().position(|l| l.starts_with(&head))?;
    // Its decorators go with it.
    let start = (0..def)
        .rev()
        .take_while(|&i| lines[i].starts_with('@'))
        .last()
        .unwrap_or(def);
    let end = (def + 1..lines.len())
        .find(|&i| {
            let l = lines[i];
            !l.trim().is_empty() && !l.starts_with([' ', '\t', '#', ')', ']', '}'])
        })
        .unwrap_or(lines.len());
    // Blank lines before the next definition stay outside the comment.
    let end = (def + 1..end)
        .rev()
        .find(|&i| !lines[i].trim().is_empty())
        .map_or(end, |i| i + 1);
    let mut out: Vec<String> = lines[..start].iter().map(|l| l.to_string()).collect();
    out.push(format!("# {why}"));
    out.extend(
        lines[start..end]
            .iter()
            .map(|l| format!("# {l}").trim_end().to_string()),
    );
    out.extend(lines[end..].iter().map(|l| l.to_string()));
    let mut text = out.join("\n");
    if tests.ends_with('\n') {
        text.push('\n');
    }
    Some(text)
}

/// How a set-aside went.
pub(crate) enum Answer {
    /// The test is set aside (or the person's edit is taken instead): the
    /// node runs again.
    Done,
    /// The person kept the test (skip at the pause).
    Kept,
}

impl Core {
    /// The decision `Next::SetAsideTest` carried out: in step mode a pause
    /// first (approve sets the test aside, skip keeps it, an edit of the
    /// tests or code meanwhile is taken instead); then the first version
    /// that failed it alone put back, and the tests without it.
    pub(crate) async fn set_aside_test(
        &self,
        name: &str,
        iteration: u32,
        suspect: Suspect,
    ) -> Result<Answer, Stop> {
        let before = self.read(|s| {
            s.nodes
                .get(name)
                .map(|n| (n.tests.clone(), n.versions.len()))
        });
        let answer = self
            .gate(Step::SuspectTest {
                node: name.to_string(),
                iteration,
                why: suspect.reason.clone(),
                set_aside: Some(suspect.test.clone()),
            })
            .await;
        match answer {
            GateAnswer::Go => {}
            GateAnswer::Skip => return Ok(Answer::Kept),
            GateAnswer::Cancel => return Err(Stop::Cancelled),
        }
        let node = name.to_string();
        self.tape
            .append_with(move |s| {
                let Some(n) = s.nodes.get(&node) else {
                    return (Vec::new(), ());
                };
                // Changed while it waited: the person's change is what runs.
                if Some((n.tests.clone(), n.versions.len())) != before {
                    return (Vec::new(), ());
                }
                let mut events = Vec::new();
                let current = n.versions.len() - 1;
                if suspect.version != current {
                    let kept = &n.versions[suspect.version];
                    events.push(Event::Code(CodeEvent {
                        node: node.clone(),
                        iteration: n.iteration(),
                        code: kept.code.clone(),
                        source: CodeSource::Best,
                        notes: vec![format!(
                            "version {} is put back: the first that failed only `{}`, set aside",
                            kept.iteration, suspect.test
                        )],
                    }));
                }
                events.push(Event::Tests(TestsEvent {
                    node,
                    code: suspect.tests,
                    source: CodeSource::Mended,
                }));
                (events, ())
            })
            .await?;
        Ok(Answer::Done)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::decide::tests::{attempt, code, tape_with};
    use crate::decide::{self, Bounds};
    use codeloop_session::{Next, RepairPolicy};
    use serde_json::{Value, json};

    const TESTS: &str =
        "def test_f():\n    assert f(2) == 4\n\n\ndef test_g():\n    assert f(3) == 6\n";

    /// Version `iteration`'s run (`run_id`): `failed` of two tests failed,
    /// and the first localized, giving `actual`.
    fn ran(run_id: u32, iteration: u32, failed: &[&str], actual: &str) -> Vec<Value> {
        let n = failed.len() as u32;
        vec![
            json!({"type":"run_started","run_id":run_id,"node":"f","iteration":iteration,"kind":"node_tests"}),
            json!({"type":"run_finished","run_id":run_id,"record":{"passed":false,"exit_code":1,"signal":null,
                   "limit_hit":null,"duration_ms":5,"dropped_bytes":0,"layers":[],"tests_passed":2 - n,"tests_failed":n,
                   "failed_tests":failed}}),
            json!({"type":"localized","node":"f","iteration":iteration,"location":{"file":"test_f.py","line":5,"column":null,
                   "function":failed[0],"error_type":"AssertionError","message":format!("assert {actual} == 6"),
                   "test":failed[0],"expected":"6","actual":actual,"in_node_code":false}}),
        ]
    }

    /// Versions one a `(code source, attempt kind, failed tests, actual)`
    /// (the first try's kind unused), each failing as it says.
    pub(crate) fn versions(tests_source: &str, runs: &[(&str, &str, &[&str], &str)]) -> State {
        let mut events = Vec::new();
        for (k, (source, kind, failed, actual)) in runs.iter().enumerate() {
            let it = k as u32 + 1;
            if it > 1 {
                events.push(attempt(it, kind));
            }
            let mut version = code(it, source);
            version["code"] = json!(format!("def f(x):\n    return {it}\n"));
            events.push(version);
            events.extend(ran(it, it, failed, actual));
        }
        tape_with(TESTS, tests_source, &events)
    }

    fn bounds(policy: &RepairPolicy) -> Bounds<'_> {
        Bounds {
            policy,
            max_iterations: 4,
            tests_given: false,
            blame_tests: true,
        }
    }

    #[test]
    fn a_model_test_versions_written_apart_fail_alone_alike_is_blamed_and_nothing_else_is() {
        let policy = RepairPolicy::default();
        let g: &[&str] = &["test_g"];
        let f = "fresh_start";
        let (m, r) = ("model", "repair");
        // The first try, a repair that failed otherwise, a fresh start alike.
        let alike = versions(
            "model",
            &[(m, "", g, "9"), (m, r, &["test_f"], "1"), (m, f, g, "9")],
        );
        let got = suspect_test(&alike, "f", &bounds(&policy)).expect("blamed");
        assert_eq!(got.test, "test_g");
        assert_eq!(got.version, 0, "the first of them is judged again");
        assert!(
            got.reason.starts_with(
                "the test may be wrong: versions 1 and 3 (written apart) gave 9 where it expects 6, and every other test passes (1 of 2)"
            ),
            "{}",
            got.reason
        );
        assert!(
            got.tests
                .contains("# def test_g():\n#     assert f(3) == 6"),
            "{}",
            got.tests
        );
        assert!(
            got.tests
                .starts_with("def test_f():\n    assert f(2) == 4\n"),
            "{}",
            got.tests
        );
        let at = alike.last_failure("f").map(|f| f.location.clone());
        let decided = decide::next(&alike, "f", 3, at.as_ref(), &bounds(&policy));
        assert_eq!(decided.next, Next::SetAsideTest, "{}", decided.reason);

        let none = |s: &State, policy: &RepairPolicy, why: &str| {
            assert_eq!(suspect_test(s, "f", &bounds(policy)), None, "{why}");
        };
        let off = RepairPolicy {
            suspect_test_after: 0,
            ..RepairPolicy::default()
        };
        none(&alike, &off, "the policy blames no test");
        let three = RepairPolicy {
            suspect_test_after: 3,
            ..RepairPolicy::default()
        };
        none(&alike, &three, "two versions are fewer than three");
        none(
            &versions("model", &[(m, "", g, "9"), (m, r, g, "9")]),
            &policy,
            "a repair that kept the value may only have failed to fix it",
        );
        none(
            &versions("model", &[(m, "", g, "9"), (m, f, g, "7")]),
            &policy,
            "the samples disagree",
        );
        let both: &[&str] = &["test_f", "test_g"];
        none(
            &versions("model", &[(m, "", both, "9"), (m, f, both, "9")]),
            &policy,
            "two tests fail: not one test's fault",
        );
        none(
            &versions("model", &[(m, "", g, "9"), ("edit", f, g, "9")]),
            &policy,
            "the person's code",
        );
        none(
            &versions("edit", &[(m, "", g, "9"), (m, f, g, "9")]),
            &policy,
            "the person's tests",
        );
        none(
            &versions("given", &[(m, "", g, "9"), (m, f, g, "9")]),
            &policy,
            "tests given with the task",
        );
        let examples: &[&str] = &["test_task_examples"];
        none(
            &versions("model", &[(m, "", examples, "9"), (m, f, examples, "9")]),
            &policy,
            "the task's examples are facts",
        );
        let mut kept = bounds(&policy);
        kept.blame_tests = false;
        assert_eq!(suspect_test(&alike, "f", &kept), None, "the person kept it");
    }

    #[test]
    fn a_test_is_set_aside_as_a_comment_with_its_decorators_and_nothing_else_changes() {
        let tests = "import pytest\n\n@pytest.mark.slow\ndef test_a():\n    xs = [\n        1]\n    assert f(xs) == 2\n\n\ndef test_b():\n    assert f([]) == 0\n";
        let got = set_aside(tests, "test_a", "why").unwrap();
        assert_eq!(
            got,
            "import pytest\n\n# why\n# @pytest.mark.slow\n# def test_a():\n#     xs = [\n#         1]\n#     assert f(xs) == 2\n\n\ndef test_b():\n    assert f([]) == 0\n"
        );
        assert_eq!(set_aside(tests, "test_c", "why"), None);
        let last = set_aside(tests, "test_b", "why").unwrap();
        assert!(
            last.ends_with("# why\n# def test_b():\n#     assert f([]) == 0\n"),
            "{last}"
        );
    }
}
