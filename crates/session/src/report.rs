//! What a session came to, read from its state: the Markdown report, and the
//! few facts every export shows (the result in words, the program's run).
//!
//! Pure functions of a `State`, so any session exports, finished or not.

use super::event::{NodeStatus, RunKind, RunRecord};
use super::state::{HistoryEntry, NodeState, RunPicture, RunState, State};
use codeloop_protocol::present::{count, plural};

/// The run of the assembled program, the latest one that ended.
pub fn program_run(state: &State) -> Option<(&RunState, &RunRecord)> {
    state
        .runs_in_order()
        .rev()
        .map(|(_, r)| r)
        .filter(|r| r.kind == RunKind::Program)
        .find_map(|r| r.record.as_ref().map(|rec| (r, rec)))
}

/// `3 passed, 1 failed`, or how the run ended when the harness did not count.
pub fn test_counts(record: &RunRecord) -> String {
    match (record.tests_passed, record.tests_failed) {
        (Some(p), Some(f)) => format!("{p} passed, {f} failed"),
        _ => match &record.limit_hit {
            Some(limit) => format!("stopped: {limit}"),
            None if record.passed => "passed".to_string(),
            None => match record.exit_code {
                Some(code) => format!("failed (exit code {code})"),
                None => "failed".to_string(),
            },
        },
    }
}

/// The session's outcome in one line: the result and, when it finished, why.
pub fn outcome_line(state: &State) -> String {
    super::outcome::line(state)
}

/// `name(inputs) -> output`
pub fn signature(node: &NodeState) -> String {
    let spec = &node.spec;
    let mut s = format!("{}({})", spec.name, spec.inputs);
    if !spec.output.is_empty() {
        s.push_str(&format!(" -> {}", spec.output));
    }
    s
}

/// The session as a Markdown report: the task, the plan, each function with
/// its failures, reflections and final code, and the assembled program.
/// People `cat` it: every control sequence a model, a program or a file
/// name put in it is stripped (`codeloop_protocol::sanitize`).
pub fn markdown(s: &State) -> String {
    let mut out = String::from("# codeloop report\n\n");
    summary_lines(s, &mut out);
    task_and_plan(s, &mut out);
    for n in s.nodes_in_order() {
        node_section(s, n, &mut out);
    }
    program_section(s, &mut out);
    pictures_section(s, &mut out);
    codeloop_protocol::sanitize::for_terminal(&out)
}

/// The session in a few lines: its id, start, model, result, tokens, reviews and runs.
fn summary_lines(s: &State, out: &mut String) {
    if !s.session_id.is_empty() {
        out.push_str(&format!("Session: {}  \n", s.session_id));
    }
    if !s.started_at.is_empty() {
        out.push_str(&format!("Started: {}  \n", s.started_at));
    }
    out.push_str(&format!(
        "Model: {} ({}, {})  \n",
        s.config.model_shown(),
        s.config.provider,
        s.config.endpoint
    ));
    out.push_str(&format!(
        "Result: {}  \nRepair iterations: {}; tokens: {} ({})",
        outcome_line(s),
        s.repair_iterations(),
        s.usage.total(),
        s.usage.words()
    ));
    let (reviews, review_tokens) = super::review::review_cost(s);
    if reviews > 0 {
        out.push_str(&format!(
            "  \nReviews before running: {}, {review_tokens} tokens (counted above)",
            count(reviews, "call")
        ));
    }
    if let Some(total) = super::figures::total_line(s) {
        out.push_str(&format!("  \nRuns: {total}"));
    }
    out.push_str("\n\n");
}

/// The task, each input file as the prompts had it, and the plan (or why
/// it could not be used).
fn task_and_plan(s: &State, out: &mut String) {
    out.push_str(&format!("## Task\n\n{}\n\n", s.task.trim_end()));
    for f in &s.inputs {
        // A section per input: what it is, as the prompts had it.
        out.push_str(&format!(
            "## Input: {}\n\n{}  \nRead from `{}`\n\n```\n{}\n```\n\n",
            f.name,
            f.summary(),
            f.source_path,
            f.described()
        ));
    }
    if let Some(e) = &s.plan_error {
        out.push_str(&format!("The plan could not be used: {e}\n\n"));
    }
    if !s.specs.is_empty() {
        out.push_str("## Plan\n\n");
        for n in s.nodes_in_order() {
            out.push_str(&format!("- `{}`: {}", signature(n), n.spec.purpose));
            if !n.spec.depends_on.is_empty() {
                out.push_str(&format!(" (uses {})", n.spec.depends_on.join(", ")));
            }
            out.push('\n');
        }
        out.push('\n');
    }
}

/// The assembled program: its tests' result, its code, and what it printed
/// run as a program.
fn program_section(s: &State, out: &mut String) {
    out.push_str("## Program\n\n");
    match &s.program {
        Some(program) => {
            match program_run(s) {
                Some((_, record)) => out.push_str(&format!(
                    "Tests of the assembled program: {}{}\n\n",
                    test_counts(record),
                    record
                        .resources
                        .map(|r| format!(" ({})", r.short()))
                        .unwrap_or_default()
                )),
                None => out.push_str("The assembled program was not run.\n\n"),
            }
            out.push_str(&fenced("python", &program.code));
        }
        None => out.push_str("No program was assembled.\n\n"),
    }
    if let Some(o) = &s.program_output {
        out.push_str(&format!(
            "Output of the program (`main`):\n\n{}",
            fenced("", &o.stdout)
        ));
        if !o.succeeded() {
            let why = o
                .limit_hit
                .clone()
                .unwrap_or_else(|| o.stderr.trim().to_string());
            out.push_str(&format!("Run as a program it failed: {why}\n\n"));
        }
    }
}

/// The pictures the programs drew, each with where the session keeps it.
fn pictures_section(s: &State, out: &mut String) {
    if s.pictures.is_empty() {
        return;
    }
    out.push_str("## Pictures\n\nKept in the session's folder:\n\n");
    for RunPicture { run_id, picture: p } in &s.pictures {
        let from = match run_id {
            Some(id) => format!("run {id}"),
            None => "the program's run".to_string(),
        };
        out.push_str(&format!("- {}, from {from}: `{}`\n", p.describe(), p.path));
    }
    out.push('\n');
}

fn node_section(s: &State, n: &NodeState, out: &mut String) {
    let iterations = n.iteration();
    out.push_str(&format!(
        "## {} ({}, {} iteration{})\n\n{}\n\n",
        n.spec.name,
        n.status.label(),
        iterations,
        plural(iterations),
        n.spec.purpose
    ));
    if let Some(f) = super::figures::per_node(s)
        .into_iter()
        .find(|f| f.node.as_deref() == Some(n.spec.name.as_str()))
    {
        out.push_str(&format!(
            "Runs: {} ({} measured)\n\n",
            f.total.short(),
            f.runs
        ));
    }
    node_story(s, n, out);
    if let Some(code) = n.code() {
        let label = match n.status {
            NodeStatus::Passed => "Passing code",
            _ => "Latest code",
        };
        out.push_str(&format!("{label} (iteration {iterations}):\n\n"));
        out.push_str(&fenced("python", code));
    }
}

/// What happened to a node, as a list: the vote its first code won, its
/// failures, the reviews before running and the reflections.
fn node_story(s: &State, n: &NodeState, out: &mut String) {
    let mut any = false;
    if let Some(c) = &n.candidates {
        out.push_str(&format!(
            "- iteration {} chosen by a vote: {}\n",
            c.iteration,
            c.summary()
        ));
        any = true;
    }
    for h in &s.history {
        match h {
            HistoryEntry::Failure {
                node,
                iteration,
                location,
            } if *node == n.spec.name => {
                out.push_str(&format!("- iteration {iteration} failed: {location}\n"));
                any = true;
            }
            HistoryEntry::Review {
                node,
                iteration,
                verdict,
                findings,
            } if *node == n.spec.name => {
                out.push_str(&format!(
                    "- review of iteration {iteration} before it ran: {}\n",
                    super::review::summary(*verdict, findings)
                ));
                for f in findings {
                    out.push_str(&format!("  - {}\n", f.line_text().replace('\n', " ")));
                }
                any = true;
            }
            HistoryEntry::Reflection {
                node, iteration, ..
            } if *node == n.spec.name => {
                let text = s.reflection(h).map_or("", |r| r.text);
                out.push_str(&format!(
                    "- reflection on iteration {iteration}: {}\n",
                    text.trim().replace('\n', " ")
                ));
                any = true;
            }
            _ => {}
        }
    }
    if any {
        out.push('\n');
    }
}

/// A code block (of `lang`, or plain text) whose fence no line of the text can close.
fn fenced(lang: &str, code: &str) -> String {
    let mut fence = "```".to_string();
    while code.contains(&fence) {
        fence.push('`');
    }
    format!("{fence}{lang}\n{}\n{fence}\n\n", code.trim_end())
}
