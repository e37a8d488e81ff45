//! Honest verdicts: codeloop's own (the tests the loop worked from) beside
//! the hidden tests' (which judged it afterwards), per problem and over a
//! set, with the false passes (own tests passed, hidden failed) and false
//! fails listed; and the resampling baseline's, at equal tokens.

use serde::{Deserialize, Serialize};

use super::judge::Feedback;
use super::results::{BenchResult, Status};

/// One problem's verdicts in own-test feedback.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Verdicts {
    /// codeloop's own verdict (the node's tests: the docstring's examples
    /// and the model's tests) on the first try, and at the session's end.
    pub(crate) own_first: bool,
    pub(crate) own_final: bool,
    /// The hidden tests' verdict on each code version, oldest first (the
    /// last is the code the session ended with).
    pub(crate) hidden: Vec<bool>,
}

impl Verdicts {
    pub(crate) fn hidden_first(&self) -> bool {
        self.hidden.first() == Some(&true)
    }

    pub(crate) fn hidden_final(&self) -> bool {
        self.hidden.last() == Some(&true)
    }

    /// Own tests passed the code the session ended with; the hidden failed it.
    pub(crate) fn false_pass(&self) -> bool {
        self.own_final && !self.hidden_final()
    }

    /// Own tests failed it; the hidden passed it.
    pub(crate) fn false_fail(&self) -> bool {
        !self.own_final && self.hidden_final()
    }

    /// `own pass, hidden FAIL` for a progress line.
    pub(crate) fn words(&self) -> String {
        let word = |b: bool| if b { "pass" } else { "FAIL" };
        let mark = if self.false_pass() {
            " (FALSE PASS)"
        } else if self.false_fail() {
            " (false fail)"
        } else {
            ""
        };
        format!(
            "own {}, hidden {}{mark}",
            word(self.own_final),
            word(self.hidden_final())
        )
    }
}

/// One sample of the resampling baseline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct SampleVerdict {
    /// Passed the tests the loop started from (own verdict).
    pub(crate) own: bool,
    pub(crate) hidden: bool,
    /// Its tokens, prompt and completion (the first: the loop's first try's).
    pub(crate) tokens: u64,
}

/// The resampling baseline on one problem: independent first tries, the
/// first that passes its own tests kept (the first try when none does),
/// drawn until its tokens reach the loop's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Resampled {
    pub(crate) temperature: f32,
    /// The first sample is the loop's own first try (shared, not drawn again).
    pub(crate) samples: Vec<SampleVerdict>,
    /// The loop's tokens on the problem: what the samples were drawn up to.
    pub(crate) budget: u64,
}

impl Resampled {
    pub(crate) fn tokens(&self) -> u64 {
        self.samples.iter().map(|s| s.tokens).sum()
    }

    /// The sample it delivers: the first that passed its own tests, else the first.
    pub(crate) fn kept(&self) -> Option<&SampleVerdict> {
        self.samples
            .iter()
            .find(|s| s.own)
            .or_else(|| self.samples.first())
    }

    pub(crate) fn passed(&self) -> bool {
        self.kept().is_some_and(|s| s.hidden)
    }

    /// Whether any sample passed the hidden tests (an oracle's pick: an
    /// upper bound, not a result).
    pub(crate) fn any_hidden(&self) -> bool {
        self.samples.iter().any(|s| s.hidden)
    }
}

/// The verdict lines of a set: which feedback, the false passes and fails,
/// and the resampling baseline beside the loop. Empty for results written
/// before any of it.
pub(crate) fn lines(results: &[BenchResult]) -> String {
    let measured: Vec<&BenchResult> = results.iter().filter(|r| r.measured()).collect();
    let mut out = String::new();
    let feedbacks: Vec<Feedback> = {
        let mut f: Vec<Feedback> = measured.iter().map(|r| r.feedback).collect();
        f.dedup();
        f
    };
    match feedbacks.as_slice() {
        [one] => out.push_str(&format!("feedback: {}\n", one.label())),
        [] => {}
        _ => out.push_str(
            "feedback: MIXED (own tests and oracle): these figures mean nothing together\n",
        ),
    }
    let judged: Vec<(&str, &Verdicts)> = measured
        .iter()
        .filter_map(|r| r.verdicts.as_ref().map(|v| (r.task_id.as_str(), v)))
        .collect();
    if !judged.is_empty() {
        let n = judged.len();
        let ids = |f: fn(&Verdicts) -> bool| {
            judged
                .iter()
                .filter(|(_, v)| f(v))
                .map(|(id, _)| *id)
                .collect::<Vec<_>>()
        };
        let first_false = ids(|v| v.own_first && !v.hidden_first()).len();
        let passes = ids(Verdicts::false_pass);
        let fails = ids(Verdicts::false_fail);
        let own_final = ids(|v| v.own_final).len();
        out.push_str(&format!(
            "own verdict: {own_final}/{n} passed their own tests at the end; false passes {} ({:.1}% of problems; own tests passed, hidden failed){}; false fails {}{}; at the first try {first_false} false pass{}\n",
            passes.len(),
            100.0 * passes.len() as f64 / n as f64,
            listed(&passes),
            fails.len(),
            listed(&fails),
            if first_false == 1 { "" } else { "es" },
        ));
    }
    let resampled: Vec<(&BenchResult, &Resampled)> = measured
        .iter()
        .filter_map(|r| r.resample.as_ref().map(|s| (*r, s)))
        .collect();
    if let Some((_, first)) = resampled.first() {
        let n = resampled.len();
        let passed = resampled.iter().filter(|(_, s)| s.passed()).count();
        let any = resampled.iter().filter(|(_, s)| s.any_hidden()).count();
        let loop_passed = resampled.iter().filter(|(r, _)| r.passed_final).count();
        let first_try = resampled.iter().filter(|(r, _)| r.passed_first).count();
        let tokens: u64 = resampled.iter().map(|(_, s)| s.tokens()).sum();
        let budget: u64 = resampled.iter().map(|(_, s)| s.budget).sum();
        let samples: usize = resampled.iter().map(|(_, s)| s.samples.len()).sum();
        out.push_str(&format!(
            "at equal tokens, by the hidden tests: first try {first_try}/{n}, the loop {loop_passed}/{n} ({budget} tokens), resampling at temperature {} {passed}/{n} ({tokens} tokens, {samples} samples; any sample passed: {any}/{n})\n",
            first.temperature
        ));
    }
    out
}

/// ` (HumanEval/3, HumanEval/7)`, or nothing.
fn listed(ids: &[&str]) -> String {
    if ids.is_empty() {
        String::new()
    } else {
        format!(" ({})", ids.join(", "))
    }
}

/// The status a problem's hidden verdict gives it.
pub(crate) fn status_of(hidden_final: bool) -> Status {
    if hidden_final {
        Status::Passed
    } else {
        Status::Failed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn judged(id: &str, own_final: bool, hidden: &[bool]) -> BenchResult {
        let v = Verdicts {
            own_first: own_final,
            own_final,
            hidden: hidden.to_vec(),
        };
        BenchResult {
            status: status_of(v.hidden_final()),
            passed_first: v.hidden_first(),
            passed_final: v.hidden_final(),
            iterations: hidden.len() as u32,
            feedback: Feedback::Own,
            verdicts: Some(v),
            ..BenchResult::not_started(id.into())
        }
    }

    #[test]
    fn false_passes_and_fails_are_counted_and_listed() {
        let results = vec![
            judged("T/0", true, &[true]),
            judged("T/1", true, &[false, false]),
            judged("T/2", false, &[false, true]),
            judged("T/3", false, &[false]),
        ];
        assert_eq!(
            lines(&results),
            "feedback: own tests (hidden tests only judge)\n\
             own verdict: 2/4 passed their own tests at the end; false passes 1 (25.0% of problems; own tests passed, hidden failed) (T/1); false fails 1 (T/2); at the first try 1 false pass\n"
        );
        assert_eq!(
            results[1].verdicts.as_ref().unwrap().words(),
            "own pass, hidden FAIL (FALSE PASS)"
        );
        // By round, the version the loop stood at is what counts: T/2's
        // first try failed, its second passed.
        assert!(!results[2].passed_within(0) && results[2].passed_within(1));
        // A hidden pass its own tests failed is followed by versions; the
        // one it delivers decides later rounds.
        let mut later = judged("T/4", false, &[true, false]);
        later.passed_at = Some(1);
        assert!(later.passed_within(0) && !later.passed_within(1) && !later.passed_within(5));
    }

    #[test]
    fn resampling_keeps_the_first_sample_its_own_tests_pass() {
        let s = |own, hidden, tokens| SampleVerdict {
            own,
            hidden,
            tokens,
        };
        let r = Resampled {
            temperature: 0.8,
            samples: vec![
                s(false, false, 500),
                s(true, false, 300),
                s(true, true, 300),
            ],
            budget: 1000,
        };
        assert_eq!(r.tokens(), 1100);
        assert!(
            !r.passed(),
            "the first own pass is kept, and it fails the hidden tests"
        );
        assert!(r.any_hidden());
        let none = Resampled {
            samples: vec![s(false, true, 500), s(false, false, 300)],
            ..r
        };
        assert!(none.passed(), "no own pass: the first try is kept");
    }

    #[test]
    fn old_results_read_as_oracle_and_mixed_sets_are_said() {
        let old: BenchResult = serde_json::from_str(
            r#"{"task_id":"T/0","status":"passed","passed_first":true,"passed_final":true,"iterations":1}"#,
        )
        .unwrap();
        assert_eq!(old.feedback, Feedback::Hidden);
        assert!(lines(std::slice::from_ref(&old)).starts_with("feedback: ORACLE"));
        let mixed = vec![old, judged("T/1", true, &[true])];
        assert!(lines(&mixed).starts_with("feedback: MIXED"));
    }
}
