//! One self-contained HTML page of a session, for a reviewer: the plan graph,
//! each function's iterations as diffs with the failure at its line and the
//! reflection beside it, the final program and its test results.
//!
//! Nothing is fetched: the style is inline, the graph is inline SVG, the
//! pictures a program drew are `data:` URIs, there is no script, and a
//! Content-Security-Policy forbids loading anything else. Every
//! piece of text from the tape is escaped.

use std::fmt::Write;
use std::path::Path;

use similar::{ChangeTag, TextDiff};

use super::graph;
use crate::protocol::{Location, Stream};
use crate::session::index::SessionResult;
use crate::session::outcome;
use crate::session::state::{CodeVersion, HistoryEntry, NodeState, Program, RunState};
use crate::session::story::{self, What, words};
use crate::session::{NodeStatus, Purpose, RunRecord, State};

const CSS: &str = concat!(include_str!("page.css"), include_str!("graph.css"));

/// Text made safe for HTML content and attribute values.
pub(crate) fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

/// The CSS class of a node's status.
pub(crate) fn status_class(status: NodeStatus) -> &'static str {
    match status {
        NodeStatus::Passed => "passed",
        NodeStatus::Failed => "failed",
        NodeStatus::GaveUp => "gave-up",
        NodeStatus::Blocked => "blocked",
        NodeStatus::Pending | NodeStatus::NotRun => "pending",
        NodeStatus::Skipped | NodeStatus::Cancelled => "blocked",
        NodeStatus::Generating | NodeStatus::Checking | NodeStatus::Running => "working",
    }
}

pub(super) fn result_class(result: SessionResult) -> &'static str {
    match result {
        SessionResult::Passed => "passed",
        SessionResult::Failed => "failed",
        SessionResult::NoPlan => "no-plan",
        SessionResult::Cancelled => "cancelled",
        SessionResult::DidNotFinish => "did-not-finish",
        SessionResult::Running => "running",
    }
}

/// How a page names the files of this machine (the tape, the inputs): by
/// their own names, for a page sent to others, or by their full paths
/// when asked (`export --full-paths`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Naming {
    #[default]
    Names,
    FullPaths,
}

impl Naming {
    /// `path` as the page names it.
    pub(crate) fn name(self, path: &str) -> String {
        match self {
            Naming::FullPaths => path.to_string(),
            Naming::Names => Path::new(path)
                .file_name()
                .map_or_else(|| path.to_string(), |n| n.to_string_lossy().into_owned()),
        }
    }
}

/// The whole page, `source` the tape it was read from, with `lineage` (a
/// section, `export/lineage.rs`, or nothing) after its header.
pub(crate) fn page_with(state: &State, source: &str, lineage: &str, naming: Naming) -> String {
    let title = state.task.lines().next().unwrap_or("session");
    let mut out = String::new();
    let _ = write!(
        out,
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>codeloop: {}</title>\n<style>\n{CSS}</style>\n</head>\n<body>\n<main>\n",
        esc(title)
    );
    header(state, &mut out);
    super::inputs::section(state, naming, &mut out);
    out.push_str(lineage);
    out.push_str("<section id=\"plan\">\n<h2>Plan</h2>\n");
    match (&state.plan_error, graph::svg(state)) {
        (_, Some(svg)) => out.push_str(&svg),
        (Some(e), None) => {
            let _ = write!(
                out,
                "<p class=\"none\">The plan could not be used: {}</p>",
                esc(e)
            );
        }
        (None, None) => out.push_str("<p class=\"none\">No plan was made.</p>"),
    }
    if state.specs.is_empty() {
        plan_replies(state, &mut out);
    }
    out.push_str("\n</section>\n");
    for node in state.nodes_in_order() {
        node_section(state, node, &mut out);
    }
    program_section(state, &mut out);
    out.push_str(&super::pictures::section(state, source));
    let from = match naming {
        Naming::FullPaths => esc(source),
        Naming::Names => format!("session {}", esc(&state.session_id)),
    };
    let _ = write!(
        out,
        "<footer>Exported by codeloop from {from} ({} events).</footer>\n</main>\n</body>\n</html>\n",
        state.events_applied
    );
    out
}

/// With no plan, what the model replied when asked for one: the page of
/// such a session shows why there is none.
fn plan_replies(state: &State, out: &mut String) {
    let calls = state.calls.values().filter(|c| c.purpose == Purpose::Plan);
    for call in calls {
        let said = match &call.error {
            Some(e) => format!("the call failed: {}", esc(e)),
            None => format!("{} characters", call.reply.chars().count()),
        };
        let _ = writeln!(
            out,
            "<details><summary>The model's reply to {} ({said})</summary><pre>{}</pre></details>",
            esc(&call.tag),
            esc(&call.reply)
        );
    }
}

fn header(state: &State, out: &mut String) {
    let result = SessionResult::of(state);
    let _ = write!(
        out,
        "<header>\n<h1>codeloop session {}</h1>\n<div class=\"task\">{}</div>\n<dl class=\"facts\">\n\
         <dt>Result</dt><dd><span class=\"badge {}\">{}</span> {}</dd>\n\
         <dt>Model</dt><dd>{} <span class=\"none\">({}, {})</span></dd>\n\
         <dt>Started</dt><dd>{}</dd>\n\
         <dt>Repairs</dt><dd>{}</dd>\n\
         <dt>Tokens</dt><dd>{} ({}){}</dd>\n\
         <dt>Sandbox</dt><dd>{}</dd>\n{}</dl>\n</header>\n",
        esc(&state.session_id),
        esc(state.task.trim_end()),
        result_class(result),
        result.label(),
        esc(&outcome::line(state)),
        esc(state.config.model_shown()),
        esc(&state.config.provider),
        esc(&state.config.endpoint),
        esc(&state.started_at),
        state.repair_iterations(),
        state.usage.total(),
        esc(&state.usage.words()),
        esc(&story::reviews_cost(state)),
        esc(&state.config.sandbox_layers.join(", ")),
        resources_facts(state),
    );
}

/// The runs' figures among the header's facts: the session's, and each
/// node's (and the program's).
fn resources_facts(state: &State) -> String {
    let Some(total) = crate::session::figures::total_line(state) else {
        return String::new();
    };
    let each: Vec<String> = crate::session::figures::per_node(state)
        .iter()
        .map(|f| format!("<li>{}</li>", esc(&f.line())))
        .collect();
    format!(
        "<dt>Runs</dt><dd>{}<ul class=\"figures\">{}</ul></dd>\n",
        esc(&total),
        each.concat()
    )
}

fn node_section(state: &State, node: &NodeState, out: &mut String) {
    let name = &node.spec.name;
    let _ = write!(
        out,
        "<section class=\"node\" id=\"node-{id}\">\n<h2>{id} <span class=\"badge {class}\">{status}</span></h2>\n\
         <p class=\"spec\"><code>{sig}</code>: {purpose}</p>\n",
        id = esc(name),
        class = status_class(node.status),
        status = node.status.label(),
        sig = esc(&words::signature(&node.spec)),
        purpose = esc(&node.spec.purpose),
    );
    if let Some(tests) = &node.tests {
        let _ = writeln!(
            out,
            "<details><summary>Its tests ({} lines)</summary>{}</details>",
            tests.lines().count(),
            listing(None, tests, None)
        );
    }
    out.push_str(&super::steering::block(state, name, 0));
    if node.versions.is_empty() {
        out.push_str("<p class=\"none\">No code was written for this function.</p>\n");
    }
    for (i, version) in node.versions.iter().enumerate() {
        let previous = i.checked_sub(1).map(|p| &node.versions[p]);
        iteration_block(state, node, previous, version, out);
    }
    out.push_str("</section>\n");
}

/// A failure: where and what, the values along its path, the lines that ran.
fn failure_block(location: &Location, code: &str, name: &str, out: &mut String) {
    // The story's words: the failure in one line, the code around it.
    let detail = location.detail();
    let _ = writeln!(
        out,
        "<div class=\"failure\"><h4>Failure</h4><p>{}</p>{}</div>",
        esc(&location.headline()),
        if detail.is_empty() {
            String::new()
        } else {
            format!("<pre>{}</pre>", esc(detail.trim_end()))
        }
    );
    out.push_str(&values_block(location));
    out.push_str(&super::coverage::block(location, code, name));
}

/// One iteration: its code (as a diff from the one before) with the failure
/// marked at its line, and beside it the run, the failure, the values and
/// the reflection that led to the next iteration.
fn iteration_block(
    state: &State,
    node: &NodeState,
    previous: Option<&CodeVersion>,
    version: &CodeVersion,
    out: &mut String,
) {
    let name = &node.spec.name;
    let it = version.iteration;
    let failures: Vec<&Location> = state
        .shown_failures(name, it)
        .into_iter()
        .map(|f| &f.location)
        .collect();
    let own_file = format!("{name}.py");
    let mark = failures
        .iter()
        .find(|l| l.file == own_file)
        .and_then(|l| l.line.map(|line| (line, l.what())));
    let source = words::source(version.source);
    let what = match previous {
        Some(p) => format!("changes from #{}", p.iteration),
        None => "first version".to_string(),
    };
    let _ = write!(
        out,
        "<div class=\"iteration\" id=\"node-{id}-{it}\">\n<div><h3>{id} #{it} <span class=\"none\">{source}, {what}</span></h3>{}</div>\n<aside>\n",
        listing(previous.map(|p| p.code.as_str()), &version.code, mark),
        id = esc(name),
    );
    out.push_str(&super::consensus::block(node, it));
    out.push_str(&super::review::block(state, name, it));
    match state.iteration_run(name, it) {
        Some((run, record)) => run_block(run, record, out),
        None => out.push_str("<div><p class=\"none\">Not run.</p></div>\n"),
    }
    for location in &failures {
        failure_block(location, &version.code, name, out);
    }
    // What the person did at this iteration, before the repair that
    // reflected on it.
    out.push_str(&super::steering::block(state, name, it));
    // The story's reflections on this iteration's failures.
    let told = state
        .history
        .iter()
        .filter(|h| {
            matches!(h, HistoryEntry::Reflection { node: n, iteration, .. }
                if n == name && *iteration == it)
        })
        .flat_map(|h| story::entry(state, h))
        .filter(|l| matches!(l.what, What::Reflection { .. }));
    for line in told {
        let cut = matches!(line.what, What::Reflection { whole: false, .. });
        let _ = writeln!(
            out,
            "<div class=\"reflection\"><h4>Reflection</h4><p>{}</p>{}</div>",
            esc(&line.text),
            if cut {
                "<p class=\"none\">(the reply was cut off here)</p>"
            } else {
                ""
            }
        );
    }
    // What the loop decided after this version failed, and why.
    let decided = state
        .history
        .iter()
        .filter(|h| {
            matches!(h, HistoryEntry::Decision { decision }
                if state.decisions.get(*decision).is_some_and(|d| d.node == *name && d.iteration == it))
        })
        .flat_map(|h| story::entry(state, h));
    for line in decided {
        let _ = writeln!(
            out,
            "<div class=\"decision\"><h4>Next</h4><p>{}</p></div>",
            esc(&line.text)
        );
    }
    out.push_str("</aside>\n</div>\n");
}

/// The runtime values along the failing path, beside the failure: the
/// trace the repair prompt was given (`Location::values_trace`).
fn values_block(location: &Location) -> String {
    let trace = location.values_trace();
    let body = if trace.trim().is_empty() {
        "<p class=\"none\">no values recorded</p>".to_string()
    } else {
        format!("<pre>{}</pre>", esc(trace.trim_end()))
    };
    format!("<div class=\"values\"><h4>Runtime values</h4>{body}</div>\n")
}

/// A run's outcome and its per-test lines (`PASS name` / `FAIL name: why`).
fn run_block(run: &RunState, record: &RunRecord, out: &mut String) {
    let class = if record.passed { "passed" } else { "failed" };
    let _ = writeln!(
        out,
        "<div><h4>Tests</h4><p class=\"run {class}\">{}</p><p class=\"figures\">{}</p>{}</div>",
        esc(&words::run_result(record, run.cancelled)),
        esc(&words::run_figures(record)),
        results_list(run)
    );
}

fn results_list(run: &RunState) -> String {
    let stdout = run.text(Stream::Stdout);
    let items: Vec<String> = stdout
        .lines()
        .filter_map(|line| {
            if let Some(rest) = line.strip_prefix("PASS ") {
                Some(format!("<li class=\"pass\">{}</li>", esc(rest)))
            } else {
                line.strip_prefix("FAIL ")
                    .map(|rest| format!("<li class=\"fail\">{}</li>", esc(rest)))
            }
        })
        .collect();
    if items.is_empty() {
        return String::new();
    }
    format!("<ul class=\"results\">{}</ul>", items.concat())
}

/// Code with line numbers; with `old`, a diff in full context (removed lines
/// struck through, added ones marked). `mark` puts a failure at its line of
/// the new code.
pub(crate) fn listing(old: Option<&str>, new: &str, mark: Option<(u32, String)>) -> String {
    let is_diff = old.is_some();
    let mut out = String::from("<table class=\"listing mono\">");
    let mut row = |tag: ChangeTag, old_no: Option<usize>, new_no: Option<usize>, text: &str| {
        let text = text.trim_end_matches(['\n', '\r']);
        let (class, sign) = match tag {
            ChangeTag::Equal => ("", " "),
            ChangeTag::Delete => ("del", "-"),
            ChangeTag::Insert => ("add", "+"),
        };
        let marked = mark
            .as_ref()
            .filter(|(line, _)| new_no.is_some_and(|n| n + 1 == *line as usize));
        let class = if marked.is_some() { "fail-line" } else { class };
        let num = |n: Option<usize>| n.map(|n| (n + 1).to_string()).unwrap_or_default();
        // A diff numbers both sides; plain code only its own lines.
        let numbers = if is_diff {
            format!(
                "<td class=\"no\">{}</td><td class=\"no\">{}</td><td class=\"sign\">{sign}</td>",
                num(old_no),
                num(new_no)
            )
        } else {
            format!("<td class=\"no\">{}</td>", num(new_no))
        };
        let _ = write!(
            out,
            "<tr class=\"{class}\">{numbers}<td class=\"text\">{}{}</td></tr>",
            esc(text),
            marked
                .map(|(_, what)| format!(
                    "<span class=\"fail-note\">^ failed here: {}</span>",
                    esc(what)
                ))
                .unwrap_or_default()
        );
    };
    match old {
        Some(old) => {
            let diff = TextDiff::from_lines(old, new);
            for change in diff.iter_all_changes() {
                row(
                    change.tag(),
                    change.old_index(),
                    change.new_index(),
                    change.value(),
                );
            }
        }
        None => {
            for (i, line) in new.lines().enumerate() {
                row(ChangeTag::Equal, None, Some(i), line);
            }
        }
    }
    out.push_str("</table>");
    out
}

fn program_section(state: &State, out: &mut String) {
    out.push_str("<section class=\"program\" id=\"program\">\n<h2>The program</h2>\n");
    let Some(Program { code, .. }) = &state.program else {
        let _ = write!(
            out,
            "<p class=\"none\">No program was assembled ({}).</p>\n</section>\n",
            esc(&outcome::line(state))
        );
        return;
    };
    match state.program_run() {
        Some((run, record)) => {
            let class = if record.passed { "passed" } else { "failed" };
            let _ = write!(
                out,
                "<h3>Its tests: <span class=\"run {class}\">{}</span></h3>{}",
                esc(&words::run_result(record, run.cancelled)),
                results_list(run)
            );
            let stderr = run.text(Stream::Stderr);
            if !record.passed && !stderr.trim().is_empty() {
                let _ = write!(
                    out,
                    "<details><summary>Its error output</summary><pre>{}</pre></details>",
                    esc(&stderr)
                );
            }
        }
        None => out.push_str("<p class=\"none\">The assembled program was not run.</p>"),
    }
    out.push_str(&listing(None, code, None));
    out.push_str("\n</section>\n");
}
