//! `run`'s progress: the tape's events as lines on stderr, one view of the
//! tape (`resume` borrows it). `Progress::line` gives each event its words,
//! one arm an event, by family: the session's segments, notices and the model,
//! the plan and its tests, the code and what is said of it before it runs
//! (check, vote, review), the runs and the repairs they lead to, the end.
//! Counts and plurals come from `protocol::present`.

use std::io::IsTerminal;

use super::say;
use crate::protocol::present::{bytes, count};
use crate::session::review::{review_cost, summary as review_summary};
use crate::session::{
    AttemptEvent, CheckEvent, Event, FinalResult, ForkedEvent, FunctionSpec, NodeStatus,
    NodeStatusEvent, NoticeEvent, NoticeLevel, Outcome, ProgramOutput, Record, ResumedEvent,
    ReviewEvent, ReviewVerdict, RunFinishedEvent, RunKind, SessionStartedEvent, Severity, State,
    TestsChangedEvent, TestsEvent,
};

/// The colours a line is painted in on a terminal (SGR codes).
const RED: &str = "31";
const GREEN: &str = "32";
const YELLOW: &str = "33";

/// The indent of a line that continues the one before it.
const MORE: &str = "        ";

/// Progress lines on stderr, one view of the tape.
pub(crate) struct Progress {
    state: State,
    description: String,
    color: bool,
}

impl Progress {
    pub(crate) fn new(description: &str) -> Progress {
        Progress {
            state: State::default(),
            description: description.to_string(),
            color: std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none(),
        }
    }

    fn paint(&self, code: &str, text: &str) -> String {
        if self.color {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }

    pub(crate) fn show(&mut self, record: &Record) {
        self.state.apply(record);
        if let Some(text) = self.line(record) {
            say(&text);
        }
    }

    /// Fold a record in without a line (a resumed session's history).
    pub(crate) fn absorb(&mut self, record: &Record) {
        self.state.apply(record);
    }

    /// The words of one event, folded already, or None for an event `run`
    /// does not print: one arm an event, in families.
    fn line(&self, record: &Record) -> Option<String> {
        Some(match &record.event {
            // The session and its segments.
            Event::SessionStarted(e) => self.started(e),
            Event::Forked(e) => self.forked(e),
            Event::Resumed(e) => self.resumed(e),
            // What the engine and the model say.
            Event::Notice(e) => self.notice(e),
            Event::ModelError(e) => self.paint(RED, &format!("model error: {}", e.message)),
            Event::ModelRestart(e) => {
                format!("{MORE}the model's reply starts again: {}", e.reason)
            }
            // The plan and the tests.
            Event::Plan(e) => plan(&e.specs),
            Event::PlanError(e) => self.paint(RED, &format!("plan rejected: {}", e.message)),
            Event::Tests(e) => tests(e),
            Event::TestsChanged(e) => self.tests_changed(e),
            // The code, and what is said of it before it runs.
            Event::Code(e) => format!("code    {} #{} ({:?})", e.node, e.iteration, e.source),
            Event::Check(e) => check(e)?,
            Event::Candidates(e) => self.vote(&e.node)?,
            Event::Review(e) => self.review(e),
            // The runs, and the repairs they lead to.
            Event::RunFinished(e) => self.run_finished(e)?,
            Event::Localized(e) => indented(&e.location.render()),
            Event::Attempt(e) => attempt(e),
            Event::Reflection(e) => format!(
                "reflect {} (after #{}): {}",
                e.node,
                e.iteration,
                e.text.replace('\n', " ")
            ),
            Event::ProgramOutput(e) => self.program_output(&e.output),
            Event::Picture(e) => {
                format!(
                    "picture {} kept as {}",
                    e.picture.describe(),
                    e.picture.path
                )
            }
            // The end.
            Event::NodeStatus(e) => self.node_status(e)?,
            Event::Finished(e) => self.finished(&e.result),
            Event::ModelRequest(_)
            | Event::ModelDelta(_)
            | Event::ModelReasoning(_)
            | Event::ModelContinued(_)
            | Event::ModelReply(_)
            | Event::RunStarted(_)
            | Event::Output(_)
            | Event::Paused(_)
            | Event::Steer(_)
            | Event::Program(_) => return None,
        })
    }
}

/// The session and its segments: where it starts, where a fork or a resume
/// goes on from; notices.
impl Progress {
    fn started(&self, e: &SessionStartedEvent) -> String {
        let SessionStartedEvent {
            session_id,
            config,
            task,
            inputs,
            ..
        } = e;
        let layers = if config.sandbox_layers.is_empty() {
            "none active (run `codeloop doctor`)".to_string()
        } else {
            config.sandbox_layers.join(", ")
        };
        let python = config
            .python
            .as_ref()
            .map(|p| {
                format!(
                    "\n  python:  {} (Python {}, {})",
                    p.interpreter,
                    p.version,
                    count(p.packages.len() + p.more, "third-party package")
                )
            })
            .unwrap_or_default();
        let mut out = format!(
            "codeloop: session {session_id}\n  model:   {}\n  sandbox: {layers}{python}\n  task:    {}",
            self.description,
            task.trim()
        );
        for f in inputs {
            out.push_str(&format!(
                "\n  input:   {} ({}): {}",
                f.name,
                bytes(f.size_bytes),
                f.summary()
            ));
        }
        out
    }

    fn forked(&self, e: &ForkedEvent) -> String {
        format!(
            "codeloop: session {}, forked from session {} at record {}",
            self.state.session_id, e.parent_id, e.at_seq
        )
    }

    fn resumed(&self, e: &ResumedEvent) -> String {
        format!(
            "codeloop: session {} resumed after record {} ({})\n  model:   {}\n  limit:   {} a function",
            self.state.session_id,
            e.from_seq,
            e.after,
            self.description,
            count(e.config.max_iterations, "iteration")
        )
    }

    fn notice(&self, e: &NoticeEvent) -> String {
        let message = &e.message;
        match e.level {
            NoticeLevel::Info => format!("  note: {message}"),
            NoticeLevel::Warning => self.paint(YELLOW, &format!("  warning: {message}")),
            NoticeLevel::Error => self.paint(RED, &format!("  error: {message}")),
        }
    }
}

/// The plan: its functions, their signatures and what each uses.
fn plan(specs: &[FunctionSpec]) -> String {
    let mut out = format!("plan: {}", count(specs.len(), "function"));
    for spec in specs {
        let output = if spec.output.is_empty() {
            "?"
        } else {
            &spec.output
        };
        out.push_str(&format!("\n  {}({}) -> {output}", spec.name, spec.inputs));
        if !spec.depends_on.is_empty() {
            out.push_str(&format!("   uses {}", spec.depends_on.join(", ")));
        }
    }
    out
}

/// A function's tests: how many test functions, written by whom.
fn tests(e: &TestsEvent) -> String {
    let n = e
        .code
        .lines()
        .filter(|l| l.trim_start().starts_with("def test"))
        .count();
    format!(
        "tests   {}: {} ({:?})",
        e.node,
        count(n, "test function"),
        e.source
    )
}

impl Progress {
    /// Tests the model proposed to change, and whether they were.
    fn tests_changed(&self, e: &TestsChangedEvent) -> String {
        let TestsChangedEvent {
            node,
            iteration,
            reason,
            applied,
            rejected_because,
            ..
        } = e;
        let verdict = match (applied, rejected_because) {
            (true, _) => "applied".to_string(),
            (false, Some(why)) => format!("rejected: {why}"),
            (false, None) => "rejected".to_string(),
        };
        self.paint(
            YELLOW,
            &format!(
                "tests   {node} changed by the model (after #{iteration}, {verdict}): {}",
                reason.replace('\n', " ")
            ),
        )
    }
}

/// What the static check found in a code version.
/// Nothing when it found nothing.
fn check(e: &CheckEvent) -> Option<String> {
    if e.findings.is_empty() {
        return None;
    }
    let items: Vec<String> = e
        .findings
        .iter()
        .map(|f| match f.line {
            Some(l) => format!("{} (line {l}): {}", f.kind, f.message),
            None => format!("{}: {}", f.kind, f.message),
        })
        .collect();
    Some(format!(
        "check   {} #{}: {}",
        e.node,
        e.iteration,
        items.join("; ")
    ))
}

/// The code before it runs: the vote among candidates, the review.
impl Progress {
    fn vote(&self, node: &str) -> Option<String> {
        let info = self.state.nodes.get(node)?.candidates.as_ref()?;
        if !info.voted() {
            return Some(format!(
                "vote    {node} #{}: {}",
                info.iteration,
                info.summary()
            ));
        }
        let scores: Vec<String> = info
            .candidates
            .iter()
            .enumerate()
            .map(|(i, c)| match c.loaded {
                true => format!("#{} {}", i + 1, c.score),
                false => format!("#{} did not load", i + 1),
            })
            .collect();
        Some(format!(
            "vote    {node} #{}: {} [{}]",
            info.iteration,
            info.summary(),
            scores.join(", ")
        ))
    }

    fn review(&self, e: &ReviewEvent) -> String {
        let ReviewEvent {
            node,
            iteration,
            verdict,
            findings,
            call_id,
        } = e;
        let verdict = *verdict;
        let tokens = call_id
            .and_then(|id| self.state.calls.get(&id))
            .and_then(|c| c.usage)
            .map(|u| format!(" ({} tokens)", u.prompt_tokens + u.completion_tokens))
            .unwrap_or_default();
        let head = format!(
            "review  {node} #{iteration}: {}{tokens}",
            review_summary(verdict, findings)
        );
        let serious = findings.iter().any(|f| f.severity == Severity::Serious);
        let mut out = match (verdict, serious) {
            (_, true) => self.paint(RED, &head),
            (ReviewVerdict::Concerns, false) => self.paint(YELLOW, &head),
            (ReviewVerdict::Ok, false) => head,
        };
        for f in findings {
            out.push_str(&format!("\n{MORE}{}", f.line_text().replace('\n', " ")));
        }
        out
    }
}

/// The runs: a run's verdict and figures, the program's own output.
impl Progress {
    fn run_finished(&self, e: &RunFinishedEvent) -> Option<String> {
        let record = &e.record;
        let run = self.state.runs.get(&e.run_id)?;
        let who = match (&run.kind, &run.node) {
            (RunKind::Program, _) | (_, None) => "program".to_string(),
            (RunKind::NodeTests, Some(n)) => format!("{n} #{}", run.iteration),
        };
        let counts = match (record.tests_passed, record.tests_failed) {
            (Some(p), Some(0)) => count(p, "test"),
            (Some(p), Some(f)) => format!("{f} of {} failed", p + f),
            _ => String::new(),
        };
        let verdict = if record.passed {
            self.paint(GREEN, "passed")
        } else if self.state.cancelled {
            // Stopped by the cancel, not failed.
            self.paint(YELLOW, "cancelled")
        } else {
            self.paint(RED, "FAILED")
        };
        let mut line = format!(
            "run     {who}: {verdict} ({counts}{}{} ms{})",
            if counts.is_empty() { "" } else { ", " },
            record.duration_ms,
            record
                .resources
                .map(|r| format!(", {}", r.short()))
                .unwrap_or_default()
        );
        if let Some(limit) = &record.limit_hit {
            line.push_str(&format!(" - stopped: {limit}"));
        }
        Some(line)
    }

    fn program_output(&self, output: &ProgramOutput) -> String {
        let mut out = format!(
            "output  the program (main) printed:\n{}",
            output.stdout.trim_end()
        );
        if !output.succeeded() {
            let why = output
                .limit_hit
                .clone()
                .unwrap_or_else(|| output.stderr.trim().to_string());
            out.push_str(&self.paint(RED, &format!("\n{MORE}and failed: {why}")));
        }
        out
    }
}

/// Lines under the one before, indented (a failure's place and context).
fn indented(text: &str) -> String {
    text.lines()
        .map(|l| format!("{MORE}{l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// What the next code version of a function will be after a failure.
fn attempt(e: &AttemptEvent) -> String {
    format!(
        "attempt {} #{}: {}{}",
        e.node,
        e.iteration,
        e.kind.label(),
        if e.runtime_values {
            " (with runtime values)"
        } else {
            ""
        }
    )
}

/// The end: a function given up or blocked, the session's result.
impl Progress {
    fn node_status(&self, e: &NodeStatusEvent) -> Option<String> {
        let node = &e.node;
        match e.status {
            NodeStatus::Blocked => Some(self.paint(YELLOW, &format!("blocked {node}"))),
            NodeStatus::GaveUp => Some(self.paint(RED, &format!("gave up {node}"))),
            _ => None,
        }
    }

    fn finished(&self, result: &FinalResult) -> String {
        let s = &self.state;
        // The same word the workbench's badge and the report give.
        let outcome = Outcome::of(s);
        let verdict = match outcome {
            Outcome::Passed => self.paint(GREEN, "PASSED"),
            Outcome::Cancelled => self.paint(YELLOW, "CANCELLED"),
            Outcome::Failed | Outcome::NoPlan | Outcome::Working => {
                self.paint(RED, &outcome.label().to_uppercase())
            }
        };
        let label = format!("{}: ", outcome.label());
        let summary = result
            .summary
            .strip_prefix(&label)
            .unwrap_or(&result.summary);
        let mut out = format!(
            "result: {verdict}: {}\n  repairs: {}, tokens: {}",
            summary,
            result.iterations,
            result.usage.words()
        );
        let (reviews, review_tokens) = review_cost(s);
        if reviews > 0 {
            out.push_str(&format!(
                " (of them {review_tokens} in {} before running)",
                count(reviews, "review")
            ));
        }
        if let Some(total) = crate::session::figures::total_line(s) {
            out.push_str(&format!("\n  resources: {total}"));
            for node in crate::session::figures::per_node(s) {
                out.push_str(&format!("\n    {}", node.line()));
            }
        }
        if let Some(dir) = &result.output_dir {
            out.push_str(&format!("\n  output: {dir}"));
        }
        out
    }
}
