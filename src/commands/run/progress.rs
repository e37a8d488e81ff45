//! `run`'s progress: the tape's events as lines on stderr, one view of the
//! tape (`resume` borrows it). `Progress::line` sends each event to the
//! words of its family: the session's segments, notices and the model,
//! the plan and its tests, the code and what is said of it before it runs
//! (check, vote, review), the runs and the repairs they lead to, the end.
//! Counts and plurals come from `protocol::present`.

use std::io::IsTerminal;

use super::say;
use crate::protocol::present::{bytes, count};
use crate::session::review::{review_cost, summary as review_summary};
use crate::session::{
    AttemptKind, CodeSource, ConfigSummary, Event, FinalResult, Finding, FunctionSpec, InputFile,
    NodeStatus, NoticeLevel, Outcome, ProgramOutput, Record, ReviewFinding, ReviewVerdict, RunKind,
    RunRecord, Severity, State,
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
    /// does not print: each family of events to its own words.
    fn line(&self, record: &Record) -> Option<String> {
        let event = &record.event;
        match event {
            Event::SessionStarted { .. } | Event::Forked { .. } | Event::Resumed { .. } => {
                self.segment(event)
            }
            Event::Notice { .. } | Event::ModelError { .. } | Event::ModelRestart { .. } => {
                self.said(event)
            }
            Event::Plan { .. }
            | Event::PlanError { .. }
            | Event::Tests { .. }
            | Event::TestsChanged { .. } => self.planning(event),
            Event::Code { .. }
            | Event::Check { .. }
            | Event::Candidates { .. }
            | Event::Review { .. } => self.coding(event),
            Event::RunFinished { .. }
            | Event::Localized { .. }
            | Event::Attempt { .. }
            | Event::Reflection { .. }
            | Event::ProgramOutput { .. }
            | Event::Picture { .. } => self.running(event),
            Event::NodeStatus { node, status } => self.node_status(node, *status),
            Event::Finished { result } => Some(self.finished(result)),
            Event::ModelRequest { .. }
            | Event::ModelDelta { .. }
            | Event::ModelReasoning { .. }
            | Event::ModelContinued { .. }
            | Event::ModelReply { .. }
            | Event::RunStarted { .. }
            | Event::Output { .. }
            | Event::Paused { .. }
            | Event::Steer { .. }
            | Event::Program { .. } => None,
        }
    }

    /// The session and its segments: its start, a fork, a resume.
    fn segment(&self, event: &Event) -> Option<String> {
        Some(match event {
            Event::SessionStarted {
                session_id,
                config,
                task,
                inputs,
                ..
            } => self.started(session_id, config, task, inputs),
            Event::Forked {
                parent_id, at_seq, ..
            } => self.forked(parent_id, *at_seq),
            Event::Resumed {
                from_seq,
                after,
                config,
                ..
            } => self.resumed(*from_seq, after, config),
            _ => return None,
        })
    }

    /// What the engine and the model say: notices, a model's error, a
    /// reply that starts again.
    fn said(&self, event: &Event) -> Option<String> {
        Some(match event {
            Event::Notice { level, message } => self.notice(*level, message),
            Event::ModelError { message, .. } => {
                self.paint(RED, &format!("model error: {message}"))
            }
            Event::ModelRestart { reason, .. } => {
                format!("{MORE}the model's reply starts again: {reason}")
            }
            _ => return None,
        })
    }

    /// The plan and the tests.
    fn planning(&self, event: &Event) -> Option<String> {
        Some(match event {
            Event::Plan { specs } => plan(specs),
            Event::PlanError { message } => self.paint(RED, &format!("plan rejected: {message}")),
            Event::Tests { node, code, source } => tests(node, code, *source),
            Event::TestsChanged {
                node,
                iteration,
                reason,
                applied,
                rejected_because,
                ..
            } => self.tests_changed(node, *iteration, reason, *applied, rejected_because),
            _ => return None,
        })
    }

    /// The code, and what is said of it before it runs.
    fn coding(&self, event: &Event) -> Option<String> {
        Some(match event {
            Event::Code {
                node,
                iteration,
                source,
                ..
            } => format!("code    {node} #{iteration} ({source:?})"),
            Event::Check {
                node,
                iteration,
                findings,
            } if !findings.is_empty() => check(node, *iteration, findings),
            Event::Candidates { node, .. } => self.vote(node)?,
            Event::Review {
                node,
                iteration,
                verdict,
                findings,
                call_id,
            } => self.review(node, *iteration, *verdict, findings, *call_id),
            _ => return None,
        })
    }

    /// The runs, and the repairs they lead to.
    fn running(&self, event: &Event) -> Option<String> {
        Some(match event {
            Event::RunFinished { run_id, record } => self.run_finished(*run_id, record)?,
            Event::Localized { location, .. } => indented(&location.render()),
            Event::Attempt {
                node,
                iteration,
                kind,
                runtime_values,
            } => attempt(node, *iteration, *kind, *runtime_values),
            Event::Reflection {
                node,
                iteration,
                text,
            } => format!(
                "reflect {node} (after #{iteration}): {}",
                text.replace('\n', " ")
            ),
            Event::ProgramOutput { output } => self.program_output(output),
            Event::Picture { picture, .. } => {
                format!("picture {} kept as {}", picture.describe(), picture.path)
            }
            _ => return None,
        })
    }
}

/// The session and its segments: where it starts, where a fork or a resume
/// goes on from; notices.
impl Progress {
    fn started(
        &self,
        session_id: &str,
        config: &ConfigSummary,
        task: &str,
        inputs: &[InputFile],
    ) -> String {
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

    fn forked(&self, parent_id: &str, at_seq: u64) -> String {
        format!(
            "codeloop: session {}, forked from session {parent_id} at record {at_seq}",
            self.state.session_id
        )
    }

    fn resumed(&self, from_seq: u64, after: &str, config: &ConfigSummary) -> String {
        format!(
            "codeloop: session {} resumed after record {from_seq} ({after})\n  model:   {}\n  limit:   {} a function",
            self.state.session_id,
            self.description,
            count(config.max_iterations, "iteration")
        )
    }

    fn notice(&self, level: NoticeLevel, message: &str) -> String {
        match level {
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
fn tests(node: &str, code: &str, source: CodeSource) -> String {
    let n = code
        .lines()
        .filter(|l| l.trim_start().starts_with("def test"))
        .count();
    format!("tests   {node}: {} ({source:?})", count(n, "test function"))
}

impl Progress {
    /// Tests the model proposed to change, and whether they were.
    fn tests_changed(
        &self,
        node: &str,
        iteration: u32,
        reason: &str,
        applied: bool,
        rejected_because: &Option<String>,
    ) -> String {
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
fn check(node: &str, iteration: u32, findings: &[Finding]) -> String {
    let items: Vec<String> = findings
        .iter()
        .map(|f| match f.line {
            Some(l) => format!("{} (line {l}): {}", f.kind, f.message),
            None => format!("{}: {}", f.kind, f.message),
        })
        .collect();
    format!("check   {node} #{iteration}: {}", items.join("; "))
}

/// The code before it runs: the vote among candidates, the review.
impl Progress {
    fn vote(&self, node: &str) -> Option<String> {
        let info = self.state.nodes.get(node)?.candidates.as_ref()?;
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

    fn review(
        &self,
        node: &str,
        iteration: u32,
        verdict: ReviewVerdict,
        findings: &[ReviewFinding],
        call_id: Option<u64>,
    ) -> String {
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
    fn run_finished(&self, run_id: u64, record: &RunRecord) -> Option<String> {
        let run = self.state.runs.get(&run_id)?;
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
fn attempt(node: &str, iteration: u32, kind: AttemptKind, runtime_values: bool) -> String {
    format!(
        "attempt {node} #{iteration}: {}{}",
        kind.label(),
        if runtime_values {
            " (with runtime values)"
        } else {
            ""
        }
    )
}

/// The end: a function given up or blocked, the session's result.
impl Progress {
    fn node_status(&self, node: &str, status: NodeStatus) -> Option<String> {
        match status {
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
