//! A fix of a node's tests, when the reflection blames them: the verdict read
//! from the reflection, the rules a fix must keep (no assertion removed
//! without a replacement, one fix per node), and the step-mode gate, where
//! approving applies the fix and skipping rejects it.

use super::context::{Core, Stop};
use super::steering::GateAnswer;
use codeloop_session::{Command, Event, NoticeLevel, State, Step, TestsChangedEvent};

/// Whether the reflection says the code or the test is wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    Code,
    Tests,
}

/// The verdict a reflection states: its last line of the form
/// `Verdict: test` (any case, markdown marks or a trailing period allowed,
/// `tests`, `the test` too). The code, when it states none.
pub(crate) fn verdict(reflection: &str) -> Verdict {
    reflection
        .lines()
        .rev()
        .find_map(verdict_line)
        .unwrap_or(Verdict::Code)
}

/// The reflection as people read it: its verdict lines left out (the
/// prompt asks for one; it is read, not shown).
pub(crate) fn without_verdict(reflection: &str) -> String {
    reflection
        .lines()
        .filter(|line| verdict_line(line).is_none())
        .collect::<Vec<_>>()
        .join("\n")
        .trim()
        .to_string()
}

/// The verdict `line` states, if it is a verdict line.
fn verdict_line(line: &str) -> Option<Verdict> {
    let clean: String = line
        .chars()
        .filter(|c| !matches!(c, '*' | '_' | '`' | '#' | '>'))
        .collect::<String>()
        .trim()
        .to_lowercase();
    let rest = clean.strip_prefix("verdict")?;
    let word = rest
        .trim_start_matches([':', '=', '-', ' '])
        .trim_start_matches("the ")
        .split(|c: char| !c.is_alphabetic())
        .next()
        .unwrap_or("");
    match word {
        "test" | "tests" => Some(Verdict::Tests),
        "code" => Some(Verdict::Code),
        _ => None,
    }
}

/// Whether the model may still fix `name`'s tests: they are its own (not
/// given, not the person's edit), and it has not fixed them yet (one
/// model fix of a node's tests per iteration budget).
pub(crate) fn may_fix_tests(s: &State, name: &str) -> bool {
    let Some(n) = s.nodes.get(name) else {
        return false;
    };
    let edited = s
        .steers
        .iter()
        .any(|c| matches!(c, Command::EditTests { node, .. } if node == name));
    n.tests.is_some() && !edited && n.applied_test_fixes() == 0
}

/// The name of the first test function in `tests`.
pub(crate) fn first_test_name(tests: &str) -> Option<String> {
    tests.lines().find_map(|l| {
        let rest = l.strip_prefix("def ")?;
        let name = rest.split('(').next()?.trim();
        name.starts_with("test").then(|| name.to_string())
    })
}

/// Test functions and assertions in a test file, counted by line.
fn counts(tests: &str) -> (usize, usize) {
    let mut functions = 0;
    let mut asserts = 0;
    for line in tests.lines() {
        let t = line.trim_start();
        if t.starts_with("def test") {
            functions += 1;
        }
        if t.starts_with("assert ") || t.starts_with("assert(") || t.contains("pytest.raises(") {
            asserts += 1;
        }
    }
    (functions, asserts)
}

/// Why `new` may not replace `old`, if it may not: it drops a test
/// function or an assertion without putting another in its place.
fn removes_assertions(old: &str, new: &str) -> Option<String> {
    if let Some(block) = super::examples::examples_block(old)
        && super::examples::examples_block(new) != Some(block)
    {
        return Some("it changes the task's own examples, which are ground truth".into());
    }
    let (old_f, old_a) = counts(old);
    let (new_f, new_a) = counts(new);
    if new_f < old_f {
        return Some(format!(
            "it removes test functions ({old_f} before, {new_f} after)"
        ));
    }
    if new_a < old_a {
        return Some(format!(
            "it removes assertions without replacing them ({old_a} before, {new_a} after)"
        ));
    }
    None
}

impl Core {
    /// Propose the model's new tests for `name`: checked, then (step mode)
    /// put to the person. Records `TestsChanged`; None when applied, else why not.
    pub(crate) async fn test_fix(
        &self,
        name: &str,
        iteration: u32,
        new: String,
        reason: String,
    ) -> Result<Option<String>, Stop> {
        let old = self
            .read(|s| s.nodes.get(name).and_then(|n| n.tests.clone()))
            .unwrap_or_default();
        let mut rejected = if new.trim() == old.trim() {
            Some("the proposed tests are the old ones".to_string())
        } else {
            removes_assertions(&old, &new)
        };
        if rejected.is_none() {
            let step = Step::TestFix {
                node: name.to_string(),
                iteration,
                old: old.clone(),
                new: new.clone(),
                reason: reason.clone(),
            };
            match self.gate(step).await {
                GateAnswer::Go => {}
                GateAnswer::Skip => rejected = Some("the person rejected it".into()),
                GateAnswer::Cancel => return Err(Stop::Cancelled),
            }
        }
        if let Some(why) = &rejected {
            self.notice(
                NoticeLevel::Info,
                format!("the model's change of the tests of `{name}` was rejected: {why}"),
            )
            .await?;
        }
        self.record(Event::TestsChanged(TestsChangedEvent {
            node: name.to_string(),
            iteration,
            old,
            new,
            reason,
            applied: rejected.is_none(),
            rejected_because: rejected.clone(),
        }))
        .await?;
        Ok(rejected)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_verdict_is_read_from_its_line_and_defaults_to_the_code() {
        assert_eq!(
            verdict("The test expects 7.\nVerdict: test"),
            Verdict::Tests
        );
        assert_eq!(verdict("**Verdict:** Tests."), Verdict::Tests);
        assert_eq!(verdict("verdict - the test is wrong"), Verdict::Tests);
        assert_eq!(verdict("Verdict: code"), Verdict::Code);
        assert_eq!(verdict("The test is wrong, I think."), Verdict::Code);
        assert_eq!(verdict("Verdict: test\nVerdict: code"), Verdict::Code);
        assert_eq!(
            without_verdict("The loop stops one short.\n\n**Verdict:** code"),
            "The loop stops one short."
        );
        assert_eq!(
            without_verdict("A verdict is not for me to give."),
            "A verdict is not for me to give."
        );
    }

    #[test]
    fn a_fix_may_replace_assertions_but_not_drop_them() {
        assert_eq!(
            first_test_name("import m\n\ndef test_a():\n    pass\n").as_deref(),
            Some("test_a")
        );
        let old = "def test_a():\n    assert f(1) == 2\n    assert f(2) == 4\n\ndef test_b():\n    assert f(0) == 0\n";
        let fixed = old.replace("== 4", "== 3");
        assert_eq!(removes_assertions(old, &fixed), None);
        let dropped =
            "def test_a():\n    assert f(1) == 2\n\ndef test_b():\n    assert f(0) == 0\n";
        assert!(
            removes_assertions(old, dropped)
                .unwrap()
                .contains("3 before, 2 after")
        );
        let fewer =
            "def test_a():\n    assert f(1) == 2\n    assert f(2) == 3\n    assert f(0) == 0\n";
        assert!(
            removes_assertions(old, fewer)
                .unwrap()
                .contains("test functions")
        );
    }
}
