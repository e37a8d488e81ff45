//! A test that may be wrong, made a state the person sees: a repair's
//! reflection that blames the test (its verdict line where the tests may
//! not change, or its words: "therefore, the test was wrong") is said in a
//! notice, and in step mode the engine pauses before the repaired code
//! runs (`Step::SuspectTest`), so the tests can be edited first. Which of
//! code or test is repaired stays the repair policy's; this only never
//! lets the doubt pass silently.

use super::context::{Core, Stop};
use super::steering::GateAnswer;
use super::testfix::{self, Verdict};
use codeloop_session::story::words;
use codeloop_session::{NoticeLevel, Step};

/// Words of a reflection that say the test, not the code, is wrong.
const BLAMES: [&str; 14] = [
    "test was wrong",
    "test is wrong",
    "tests are wrong",
    "tests were wrong",
    "test is incorrect",
    "test was incorrect",
    "tests are incorrect",
    "test itself is wrong",
    "test case is wrong",
    "test expects the wrong",
    "expected value in the test is wrong",
    "assertion is wrong",
    "test is mistaken",
    "the test has a mistake",
];

/// Why the reflection (`prose`, its verdict line included) doubts the
/// test, unless the model's fix of the test is asked for already
/// (`may_fix_tests` with a tests verdict: `testfix` takes it).
pub(crate) fn doubt(prose: &str, may_fix_tests: bool) -> Option<String> {
    let verdict = testfix::verdict(prose) == Verdict::Tests;
    if verdict && may_fix_tests {
        return None;
    }
    let said = testfix::without_verdict(prose);
    let sentence = said
        .split_inclusive(['.', '!', '?', '\n'])
        .map(str::trim)
        .find(|s| {
            let lower = s.to_lowercase();
            BLAMES.iter().any(|b| lower.contains(b))
        });
    match (sentence, verdict) {
        (Some(s), _) => Some(format!("its reflection says \"{}\"", shorten(s))),
        (None, true) => Some("its reflection's verdict blames the test".into()),
        (None, false) => None,
    }
}

fn shorten(text: &str) -> String {
    let kept: String = text.chars().take(160).collect();
    if kept.len() < text.len() {
        format!("{kept}…")
    } else {
        kept
    }
}

impl Core {
    /// The test of `name` may be wrong, for `why`: said, and in step mode
    /// a pause before the repaired code of `iteration`'s failure runs.
    pub(crate) async fn doubt_test(
        &self,
        name: &str,
        iteration: u32,
        why: String,
    ) -> Result<(), Stop> {
        self.notice(
            NoticeLevel::Warning,
            format!(
                "{}; the repaired code runs against it unless you edit the tests (in step mode the engine waits)",
                words::suspect_test(name, &why)
            ),
        )
        .await?;
        match self
            .gate(Step::SuspectTest {
                node: name.to_string(),
                iteration,
                why,
                set_aside: None,
            })
            .await
        {
            GateAnswer::Go | GateAnswer::Skip => Ok(()),
            GateAnswer::Cancel => Err(Stop::Cancelled),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::doubt;

    #[test]
    fn a_reflection_that_blames_the_test_is_a_doubt() {
        let said =
            "The code returns 'MCMXCIX' for 1999, which is right. Therefore, the test was wrong.";
        assert_eq!(
            doubt(said, false).as_deref(),
            Some("its reflection says \"Therefore, the test was wrong.\"")
        );
        assert!(doubt("Subtractive pairs were added. Fix the loop.", false).is_none());
        // A verdict the model's fix answers is testfix's.
        assert!(doubt("The test is wrong.\nVerdict: test", true).is_none());
        assert_eq!(
            doubt("Hmm.\nVerdict: test", false).as_deref(),
            Some("its reflection's verdict blames the test")
        );
    }
}
