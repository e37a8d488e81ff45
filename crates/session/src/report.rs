//! What a session came to, read from its state: the Markdown report, which
//! renders the story's lines (`story.rs`) as Markdown.
//!
//! Pure functions of a `State`, so any session exports, finished or not.

use super::event::NodeStatus;
use super::outcome;
use super::state::{NodeState, RunPicture, State};
use super::story::{self, What, words};
use codeloop_protocol::present::count;

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
        "Result: {}  \nRepairs: {}; tokens: {} ({}){}",
        outcome::line(s),
        s.repair_iterations(),
        s.usage.total(),
        s.usage.words(),
        story::reviews_cost(s)
    ));
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
            out.push_str(&format!(
                "- `{}`: {}",
                words::signature(&n.spec),
                n.spec.purpose
            ));
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
            match s.program_run() {
                Some((run, record)) => out.push_str(&format!(
                    "Tests of the assembled program: {} ({})\n\n",
                    words::run_result(record, run.cancelled),
                    words::run_figures(record)
                )),
                None => out.push_str("The assembled program was not run.\n\n"),
            }
            out.push_str(&fenced("python", &program.code));
        }
        None => out.push_str("No program was assembled.\n\n"),
    }
    if let Some(o) = &s.program_output {
        let told = story::program_output(o);
        out.push_str(&format!(
            "{}\n\n{}",
            capital(&told.text),
            fenced("", &told.more.join("\n"))
        ));
        if let Some(failed) = &told.detail {
            out.push_str(&format!("{}\n\n", capital(failed)));
        }
    }
}

/// The pictures the programs drew, each with where the session keeps it.
fn pictures_section(s: &State, out: &mut String) {
    if s.pictures.is_empty() {
        return;
    }
    out.push_str("## Pictures\n\n");
    for RunPicture { run_id, picture } in &s.pictures {
        // The story's line, its path as code (a name's `_` is no emphasis).
        let text = story::picture(*run_id, picture).text;
        let path = format!("`{}`", picture.path);
        out.push_str(&format!("- {}\n", text.replace(&picture.path, &path)));
    }
    out.push('\n');
}

fn node_section(s: &State, n: &NodeState, out: &mut String) {
    let iterations = n.iteration();
    out.push_str(&format!(
        "## {} ({}, {})\n\n{}\n\n",
        n.spec.name,
        n.status.label(),
        count(iterations, "iteration"),
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
        out.push_str(&format!("{label} (#{iterations}):\n\n"));
        out.push_str(&fenced("python", code));
    }
}

/// What happened to a node, as a list: the story's lines of it (the vote
/// its first code won, its failures, the reviews, the reflections).
fn node_story(s: &State, n: &NodeState, out: &mut String) {
    let lines = story::node_lines(s, &n.spec.name);
    for line in &lines {
        let at = match line.what {
            What::Steer { iteration: 0, .. } => " (before any code)".to_string(),
            What::Steer { iteration, .. } => format!(" (at #{iteration})"),
            _ => line
                .what
                .iteration()
                .map(|i| format!(" #{i}"))
                .unwrap_or_default(),
        };
        out.push_str(&format!(
            "- {}{at}: {}\n",
            line.what.label(),
            line.text.replace('\n', " ")
        ));
        // A review's findings under it (a failure's code is the code's).
        let findings = matches!(line.what, What::Review { .. });
        for more in line.more.iter().filter(|_| findings) {
            out.push_str(&format!("  - {more}\n"));
        }
    }
    if !lines.is_empty() {
        out.push('\n');
    }
}

/// A story line's words opening a sentence.
fn capital(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(c) => c.to_uppercase().chain(chars).collect(),
        None => String::new(),
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
