//! A line of the story: what it tells (`What`, with the values it refers
//! to), its node, its `Level`, its words; and what it is about
//! (`Line::subject`).

use crate::event::{AttemptKind, CodeSource, NodeStatus, NoticeLevel};
use crate::outcome::Outcome;

/// How a line reads: the tone a view gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Plain,
    /// Something passed.
    Good,
    /// Said in passing (a note, a restart).
    Quiet,
    Warning,
    /// Something failed.
    Bad,
}

/// What a line tells, with the values it refers to.
#[derive(Debug, Clone, PartialEq)]
pub enum What {
    /// The session started, was forked, or resumed.
    Session,
    Notice(NoticeLevel),
    ModelError,
    ModelRestart,
    Plan,
    PlanError,
    Tests,
    /// A change of a node's tests the model proposed after `iteration`
    /// failed (its place in the node's `test_changes`).
    TestChange {
        iteration: u32,
        change: usize,
    },
    Code {
        iteration: u32,
        source: CodeSource,
        kind: Option<AttemptKind>,
    },
    Check {
        iteration: u32,
    },
    Vote {
        iteration: u32,
    },
    /// A review (its place in `State::reviews`).
    Review {
        iteration: u32,
        review: usize,
    },
    Run {
        run_id: u64,
        iteration: u32,
        passed: bool,
    },
    /// A failure (its place in `State::failures`).
    Failure {
        iteration: u32,
        failure: usize,
    },
    Attempt {
        iteration: u32,
        kind: AttemptKind,
    },
    /// What the loop decided after `iteration` failed (its place in
    /// `State::decisions`).
    Decision {
        iteration: u32,
        decision: usize,
    },
    Reflection {
        iteration: u32,
        /// The model is writing it now.
        streaming: bool,
        /// Whole: not cut off.
        whole: bool,
    },
    ProgramOutput,
    Picture,
    Status(NodeStatus),
    /// A command of the person's (its place in `State::steers`).
    Steer {
        steer: usize,
        review_skip: bool,
        /// The iteration of its node when it came (0: before any code).
        iteration: u32,
    },
    Paused,
    Finished(Outcome),
}

impl What {
    /// The kind of fact, in a word (`run`'s tag column, a heading).
    pub fn label(&self) -> &'static str {
        match self {
            What::Session => "session",
            What::Notice(NoticeLevel::Info) => "note",
            What::Notice(NoticeLevel::Warning) => "warning",
            What::Notice(NoticeLevel::Error) => "error",
            What::ModelError => "model error",
            What::ModelRestart => "model",
            What::Plan | What::PlanError => "plan",
            What::Tests | What::TestChange { .. } => "tests",
            What::Code { .. } => "code",
            What::Check { .. } => "check",
            What::Vote { .. } => "vote",
            What::Review { .. } => "review",
            What::Run { .. } => "run",
            What::Failure { .. } => "failure",
            What::Attempt { .. } => "attempt",
            What::Decision { .. } => "next",
            What::Reflection { .. } => "reflection",
            What::ProgramOutput => "output",
            What::Picture => "picture",
            What::Status(s) => s.label(),
            What::Steer { .. } => "you",
            What::Paused => "paused",
            What::Finished(_) => "result",
        }
    }

    /// The code version it is about.
    pub fn iteration(&self) -> Option<u32> {
        match self {
            What::TestChange { iteration, .. }
            | What::Code { iteration, .. }
            | What::Check { iteration }
            | What::Vote { iteration }
            | What::Review { iteration, .. }
            | What::Failure { iteration, .. }
            | What::Attempt { iteration, .. }
            | What::Reflection { iteration, .. } => Some(*iteration),
            What::Run { iteration, .. } | What::Decision { iteration, .. } => {
                Some(*iteration).filter(|i| *i > 0)
            }
            What::Session
            | What::Notice(_)
            | What::ModelError
            | What::ModelRestart
            | What::Plan
            | What::PlanError
            | What::Tests
            | What::ProgramOutput
            | What::Picture
            | What::Status(_)
            | What::Steer { .. }
            | What::Paused
            | What::Finished(_) => None,
        }
    }
}

/// One line of the story.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    pub what: What,
    /// The node it is about (none: the session's, or the program's).
    pub node: Option<String>,
    pub level: Level,
    /// The fact in words, without its subject (`Line::subject`).
    pub text: String,
    /// Figures beside it (what a run took, what a review cost).
    pub detail: Option<String>,
    /// Lines under it: a failure's code, a review's findings, a plan's
    /// functions.
    pub more: Vec<String>,
}

impl Line {
    pub(super) fn new(
        what: What,
        node: Option<&str>,
        level: Level,
        text: impl Into<String>,
    ) -> Line {
        Line {
            what,
            node: node.map(str::to_string),
            level,
            text: text.into(),
            detail: None,
            more: Vec::new(),
        }
    }

    pub(super) fn detail(mut self, detail: Option<String>) -> Line {
        self.detail = detail;
        self
    }

    pub(super) fn more(mut self, more: Vec<String>) -> Line {
        self.more = more;
        self
    }

    /// What it is about: `clamp #2`, `clamp`, `the program` (a run of the
    /// assembled program); none for the session's own lines.
    pub fn subject(&self) -> Option<String> {
        match (&self.node, self.what.iteration(), &self.what) {
            (Some(n), Some(i), _) => Some(format!("{n} #{i}")),
            (Some(n), None, _) => Some(n.clone()),
            (None, _, What::Run { .. }) => Some("the program".into()),
            (None, _, _) => None,
        }
    }

    /// The line as one string: `subject: text (detail)`.
    pub fn plain(&self) -> String {
        let mut out = match self.subject() {
            Some(s) => format!("{s}: {}", self.text),
            None => self.text.clone(),
        };
        if let Some(d) = &self.detail {
            out.push_str(&format!(" ({d})"));
        }
        out
    }
}
