//! A review before running (`review = true`): one model call reads a
//! node's code against the task, its spec and its tests, after the static
//! check and before the run, and says what looks wrong. Advisory: its
//! verdict is an `Event::Review` on the tape; a serious finding may send the
//! code to a repair without a run (`review_repairs`), as the failure
//! `Location` of `review_failure` with `error_type` [`REVIEW_ERROR`].

use serde::{Deserialize, Serialize};

use codeloop_protocol::Location;

/// The `error_type` of a failure that is a review's serious finding, not a run's.
pub const REVIEW_ERROR: &str = "Review";

/// What the review thinks of the code as a whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReviewVerdict {
    /// Nothing found that would make it fail.
    Ok,
    /// Something looks wrong: the findings say what.
    Concerns,
}

impl ReviewVerdict {
    pub(crate) fn label(self) -> &'static str {
        match self {
            ReviewVerdict::Ok => "ok",
            ReviewVerdict::Concerns => "concerns",
        }
    }
}

/// How bad a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// A style point or an unlikely edge case: the code runs as it is.
    Minor,
    /// The code would fail a test or the task (wrong result, a runtime
    /// error foreseen, an edge case the task names).
    Serious,
}

impl Severity {
    pub(crate) fn label(self) -> &'static str {
        match self {
            Severity::Minor => "minor",
            Severity::Serious => "serious",
        }
    }
}

/// One thing the review found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReviewFinding {
    pub severity: Severity,
    /// The line of the node's code it is about, when it names one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    /// What looks wrong, in a sentence.
    pub what: String,
}

impl ReviewFinding {
    /// One line: `serious, line 7: off by one`.
    pub fn line_text(&self) -> String {
        match self.line {
            Some(l) => format!("{}, line {l}: {}", self.severity.label(), self.what),
            None => format!("{}: {}", self.severity.label(), self.what),
        }
    }
}

/// A node's review of one code version, as the state keeps it (once, in
/// `State::reviews`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReviewInfo {
    pub node: String,
    /// The code version reviewed.
    pub iteration: u32,
    pub verdict: ReviewVerdict,
    pub findings: Vec<ReviewFinding>,
    /// The model call that made it.
    pub(crate) call_id: Option<u64>,
}

impl ReviewInfo {
    /// Whether any finding is serious.
    pub fn serious(&self) -> bool {
        self.findings
            .iter()
            .any(|f| f.severity == Severity::Serious)
    }

    /// The review in one line: `ok`, `concerns: 1 serious, 2 minor`.
    pub fn summary(&self) -> String {
        summary(self.verdict, &self.findings)
    }
}

/// A verdict and its findings in one line: `ok`, `concerns: 1 serious, 2 minor`.
pub fn summary(verdict: ReviewVerdict, findings: &[ReviewFinding]) -> String {
    let serious = findings
        .iter()
        .filter(|f| f.severity == Severity::Serious)
        .count();
    let minor = findings.len() - serious;
    let mut parts = Vec::new();
    if serious > 0 {
        parts.push(format!("{serious} serious"));
    }
    if minor > 0 {
        parts.push(format!("{minor} minor"));
    }
    if parts.is_empty() {
        verdict.label().to_string()
    } else {
        format!("{}: {}", verdict.label(), parts.join(", "))
    }
}

/// What the session's reviews cost: the review calls made and the tokens
/// they used (prompt + completion, a failed call's too).
pub fn review_cost(state: &super::state::State) -> (u32, u64) {
    state
        .calls
        .values()
        .filter(|c| matches!(c.purpose, super::event::Purpose::Review { .. }))
        .fold((0, 0), |(n, t), c| {
            (
                n + 1,
                t + c.usage.map_or(0, |u| u.prompt_tokens + u.completion_tokens),
            )
        })
}

/// The failure a review's serious findings stand for when they send the
/// code to a repair without a run: at the first serious finding's line of
/// `file` (the node's code), every serious finding in its message.
pub fn review_failure(file: &str, findings: &[ReviewFinding]) -> Option<Location> {
    let serious: Vec<&ReviewFinding> = findings
        .iter()
        .filter(|f| f.severity == Severity::Serious)
        .collect();
    let first = serious.first()?;
    let message = serious
        .iter()
        .map(|f| match f.line {
            Some(l) => format!("line {l}: {}", f.what),
            None => f.what.clone(),
        })
        .collect::<Vec<_>>()
        .join("; ");
    Some(Location {
        file: file.to_string(),
        line: first.line,
        column: None,
        function: None,
        error_type: REVIEW_ERROR.to_string(),
        message: format!("the review before running: {message}"),
        in_node_code: true,
        ..Location::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finding(severity: Severity, line: Option<u32>, what: &str) -> ReviewFinding {
        ReviewFinding {
            severity,
            line,
            what: what.into(),
        }
    }

    #[test]
    fn summaries_count_by_severity() {
        assert_eq!(summary(ReviewVerdict::Ok, &[]), "ok");
        let f = [
            finding(Severity::Serious, Some(3), "off by one"),
            finding(Severity::Minor, None, "name"),
            finding(Severity::Minor, None, "style"),
        ];
        assert_eq!(
            summary(ReviewVerdict::Concerns, &f),
            "concerns: 1 serious, 2 minor"
        );
        assert_eq!(f[0].line_text(), "serious, line 3: off by one");
    }

    #[test]
    fn only_serious_findings_make_a_failure() {
        assert!(review_failure("f.py", &[finding(Severity::Minor, Some(1), "x")]).is_none());
        let l = review_failure(
            "f.py",
            &[
                finding(Severity::Minor, Some(1), "x"),
                finding(Severity::Serious, Some(4), "returns None"),
                finding(Severity::Serious, None, "ignores empty input"),
            ],
        )
        .unwrap();
        assert_eq!(l.line, Some(4));
        assert_eq!(l.error_type, REVIEW_ERROR);
        assert_eq!(
            l.message,
            "the review before running: line 4: returns None; ignores empty input"
        );
    }
}
