//! What the model-call inspector shows, as lines: a call's facts (tag,
//! purpose, state, tokens, finish reason, time, restarts, continuations, an
//! edited prompt), its prompt message by message with their roles, its
//! reasoning apart, and its reply raw, as the model sent it (extraction keeps
//! only the code or the plan; everything is here). Also the prompt as the
//! editor shows it, and read back.

use codeloop_protocol::present::plural;
use ratatui::text::{Line, Span};

use super::wrap;

use crate::theme::Theme;
use codeloop_protocol::{ChatMessage, Role};
use codeloop_session::state::CallState;
use codeloop_session::{Purpose, State, Step};

/// What the inspector looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// A call on the tape.
    Call(u64),
    /// The call the engine is paused before, or making now.
    Current,
}

/// The calls in order, then the current one while the engine is paused
/// before a call (live).
pub(crate) fn targets(state: &State, live: bool) -> Vec<Target> {
    let mut all: Vec<Target> = state.calls.keys().map(|id| Target::Call(*id)).collect();
    if live && paused_before_call(state) {
        all.push(Target::Current);
    }
    all
}

/// The engine waits before a model call (its prompt written or not).
pub(crate) fn paused_before_call(state: &State) -> bool {
    matches!(
        state.paused,
        Some(Step::ModelCall { .. } | Step::Prompt { .. })
    )
}

/// The call a target shows, when it is one on the tape (`Current` while
/// nothing waits is the latest call).
pub(crate) fn call_of(state: &State, target: Target) -> Option<u64> {
    match target {
        Target::Call(id) => Some(id),
        Target::Current if paused_before_call(state) => None,
        Target::Current => state.calls.keys().next_back().copied(),
    }
}

/// Where the inspector opens: the call waiting (live), else the latest call
/// of the selected node (at the cursor: the selected iteration's), else the
/// latest call.
pub(crate) fn opening(state: &State, node: Option<&str>, live: bool) -> Option<Target> {
    if live && paused_before_call(state) {
        return Some(Target::Current);
    }
    let of_node = node.and_then(|n| {
        state
            .calls
            .iter()
            .rev()
            .find(|(_, c)| c.purpose.node() == Some(n))
            .map(|(id, _)| *id)
    });
    of_node
        .or_else(|| state.calls.keys().next_back().copied())
        .map(Target::Call)
}

/// "reflect on mean", "plan".
pub fn purpose_words(purpose: &Purpose) -> String {
    match purpose {
        Purpose::Plan => "plan".into(),
        Purpose::Tests { node } => format!("tests of {node}"),
        Purpose::Code { node } => format!("code of {node}"),
        Purpose::Reflect { node } => format!("reflection and repair of {node}"),
        Purpose::Repair { node } => format!("repair of {node}"),
        Purpose::Review { node } => format!("review of {node}"),
        Purpose::Inputs { node } => format!("inputs to vote on {node}'s candidates"),
    }
}

fn role_name(role: Role) -> &'static str {
    match role {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
    }
}

/// The title: which call of how many.
pub(crate) fn title(state: &State, target: Target) -> String {
    let total = state.calls.len();
    match (target, call_of(state, target)) {
        (Target::Current, None) => "the call the engine is paused before".into(),
        (_, Some(id)) => {
            let n = state
                .calls
                .keys()
                .position(|k| *k == id)
                .map_or(0, |i| i + 1);
            let tag = state.calls.get(&id).map_or("", |c| c.tag.as_str());
            format!("call {n} of {total} · {tag}")
        }
        (Target::Call(_), None) => String::new(),
    }
}

/// The lines for `target`, wrapped to `width`.
pub(crate) fn lines(state: &State, target: Target, t: &Theme, width: usize) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    match (target, call_of(state, target)) {
        (_, Some(id)) => match state.calls.get(&id) {
            Some(call) => call_lines(call, t, width, &mut out),
            None => out.push(Line::styled(
                "this call is not on the tape at the cursor",
                t.dim,
            )),
        },
        (Target::Current, None) => pending_lines(state, t, width, &mut out),
        (Target::Call(_), None) => {}
    }
    out
}

/// Facts ("tokens 298 in"), as many a line as fit in `width`.
fn facts(items: Vec<(&str, String)>, t: &Theme, width: usize, out: &mut Vec<Line<'static>>) {
    let mut spans: Vec<Span<'static>> = Vec::new();
    let mut used = 0;
    for (name, value) in items {
        let w = name.chars().count() + 1 + value.chars().count() + 3;
        if used > 0 && used + w > width {
            out.push(Line::from(std::mem::take(&mut spans)));
            used = 0;
        }
        spans.push(Span::styled(format!("{name} "), t.dim));
        spans.push(Span::styled(value, t.text));
        spans.push(Span::raw("   "));
        used += w;
    }
    if !spans.is_empty() {
        out.push(Line::from(spans));
    }
}

fn call_lines(call: &CallState, t: &Theme, width: usize, out: &mut Vec<Line<'static>>) {
    facts(call_facts(call), t, width, out);
    for n in call_notes(call) {
        note(&format!("• {n}"), t.warning, width, out);
    }
    messages_lines("prompt", &call.messages, t, width, out);
    heading(
        &format!("reasoning ({} characters)", call.reasoning.chars().count()),
        t,
        out,
    );
    if call.reasoning.is_empty() {
        out.push(Line::styled(
            "  none (the model gave no reasoning apart)",
            t.dim,
        ));
    } else {
        body(&call.reasoning, t.dim, width, false, out);
    }
    heading(
        &format!(
            "reply, raw as the model sent it ({} characters)",
            call.reply.chars().count()
        ),
        t,
        out,
    );
    body(&call.reply, t.text, width, false, out);
    if !call.done {
        out.push(Line::styled("  ▍ the model is writing…", t.running));
    }
}

/// A call's facts: what it is for, its state, when, its tokens, its finish.
fn call_facts(call: &CallState) -> Vec<(&'static str, String)> {
    let state_words = match (&call.error, call.done) {
        (Some(e), _) => format!("failed: {e}"),
        (None, true) => match call.duration_ms {
            Some(ms) => format!("done in {}", seconds(ms)),
            None => "done".into(),
        },
        (None, false) => "streaming…".into(),
    };
    let mut items = vec![
        ("for", purpose_words(&call.purpose)),
        ("state", state_words),
        ("asked at", seconds(call.started_ms)),
    ];
    let tokens = match call.usage {
        Some(u) => format!(
            "{}{}",
            u.words(),
            if call.usage_estimated {
                " (estimated: the model does not report them)"
            } else {
                " (reported by the model)"
            }
        ),
        None => "not reported yet".into(),
    };
    items.push(("tokens", tokens));
    let finish = match (&call.finish_reason, call.done) {
        (Some(r), _) => r.clone(),
        (None, true) => "stop".into(),
        (None, false) => "-".into(),
    };
    items.push(("finish", finish));
    items
}

/// What happened to a call on its way: the person's edit, restarts,
/// continuations.
fn call_notes(call: &CallState) -> Vec<String> {
    let mut notes = Vec::new();
    if call.edited {
        notes.push("the prompt was edited by you before it was sent".to_string());
    }
    if !call.restarts.is_empty() {
        notes.push(format!(
            "the reply started again {}× ({})",
            call.restarts.len(),
            call.restarts.join("; ")
        ));
    }
    if call.continuations > 0 {
        notes.push(format!(
            "cut off at the token limit and continued {}×",
            call.continuations
        ));
    }
    notes
}

fn pending_lines(state: &State, t: &Theme, width: usize, out: &mut Vec<Line<'static>>) {
    match &state.paused {
        Some(Step::Prompt {
            purpose,
            tag,
            messages,
        }) => {
            let items = vec![("for", purpose_words(purpose)), ("tag", tag.clone())];
            facts(items, t, width, out);
            note(
                "not sent yet: e edits it · a sends it · x skips the call",
                t.warning,
                width,
                out,
            );
            match &state.prompt_edit {
                Some(codeloop_session::state::PromptEdit {
                    messages: edited, ..
                }) => {
                    out.push(Line::styled(
                        "• edited by you: this is what a sends",
                        t.warning,
                    ));
                    messages_lines("prompt (edited)", edited, t, width, out);
                }
                None => messages_lines("prompt", messages, t, width, out),
            }
        }
        Some(Step::ModelCall { purpose, again }) => {
            let mut shown = vec![("for", purpose_words(purpose))];
            if let Some(why) = again {
                shown.push(("asked again", why.clone()));
            }
            facts(shown, t, width, out);
            note(
                "the engine is paused before this call; its prompt is written once it goes on. A reply cut off at the token limit is continued within this call, without another pause; any other call (asked again, or the other way) pauses on its own.",
                t.text,
                width,
                out,
            );
            note(
                "e writes it and shows it here, paused again before it is sent (then e edits it) · a approves without looking",
                t.warning,
                width,
                out,
            );
        }
        Some(
            Step::Run { .. }
            | Step::TestFix { .. }
            | Step::Review { .. }
            | Step::SuspectTest { .. },
        )
        | None => out.push(Line::styled("no model call waits", t.dim)),
    }
}

fn heading(text: &str, t: &Theme, out: &mut Vec<Line<'static>>) {
    out.push(Line::raw(""));
    out.push(Line::styled(format!("── {text} ──"), t.title));
}

/// Text as it was sent, control sequences stripped, each line wrapped at
/// the width with its indentation kept (prompts and replies hold code).
/// In a prompt (`reflow`), prose the template broke into short lines is
/// wrapped as one paragraph, so it is not broken twice (ragged: a long
/// line, then a short one); a reply may be bare code, and is kept.
fn body(
    text: &str,
    style: ratatui::style::Style,
    width: usize,
    reflow: bool,
    out: &mut Vec<Line<'static>>,
) {
    let width = width.saturating_sub(2);
    let text = crate::sanitize::sanitize(text);
    let lines = if reflow {
        paragraphs(&text)
    } else {
        text.split('\n').map(str::to_string).collect()
    };
    for line in lines {
        let rest = line.trim_start_matches(' ');
        let indent = (line.len() - rest.len()).min(width / 2);
        for piece in wrap(rest, width.saturating_sub(indent)) {
            out.push(Line::styled(
                format!("  {}{piece}", " ".repeat(indent)),
                style,
            ));
        }
    }
}

/// A prompt line at least this long was broken by the template's hard
/// wrap (the templates wrap near 80 columns).
const HARD_WRAPPED: usize = 60;

/// The lines of `text` with each run of hard-wrapped prose lines joined
/// into one (code fences, indented lines, lists, headings and short lines
/// are kept as they are).
fn paragraphs(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut fenced = false;
    let mut joinable = false;
    for line in text.split('\n') {
        let fence = line.trim_start().starts_with("```");
        if fence {
            fenced = !fenced;
        }
        let prose = !fenced
            && !fence
            && line.chars().next().is_some_and(|c| c.is_alphanumeric())
            && !line.starts_with(|c: char| c.is_ascii_digit() && line.contains(". "));
        match out.last_mut() {
            Some(last) if prose && joinable => {
                last.push(' ');
                last.push_str(line);
            }
            _ => out.push(line.to_string()),
        }
        // Only a long line was broken by the template's hard wrap; a short
        // one ends where its author ended it.
        joinable = prose && line.chars().count() >= HARD_WRAPPED;
    }
    out
}

/// A note in words, wrapped.
fn note(text: &str, style: ratatui::style::Style, width: usize, out: &mut Vec<Line<'static>>) {
    for l in wrap(text, width) {
        out.push(Line::styled(l, style));
    }
}

fn messages_lines(
    what: &str,
    messages: &[ChatMessage],
    t: &Theme,
    width: usize,
    out: &mut Vec<Line<'static>>,
) {
    heading(
        &format!(
            "{what}: {} message{}",
            messages.len(),
            plural(messages.len())
        ),
        t,
        out,
    );
    for m in messages {
        out.push(Line::styled(format!("[{}]", role_name(m.role)), t.accent));
        body(&m.content, t.text, width, true, out);
    }
}

fn seconds(ms: u64) -> String {
    format!("{:.1} s", ms as f64 / 1000.0)
}

/// The line that opens each message in the editor.
fn marker(role: Role) -> String {
    format!("──── {} ────", role_name(role))
}

/// A prompt as the editor shows it: each message under a line naming its role.
pub fn prompt_text(messages: &[ChatMessage]) -> String {
    messages
        .iter()
        .map(|m| format!("{}\n{}", marker(m.role), m.content))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The editor's text back into messages; an error says which line to fix.
pub(crate) fn parse_prompt(text: &str) -> Result<Vec<ChatMessage>, String> {
    let mut parts: Vec<(Role, Vec<&str>)> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let role = [Role::System, Role::User, Role::Assistant]
            .into_iter()
            .find(|r| line.trim_end() == marker(*r));
        match (role, parts.last_mut()) {
            (Some(role), _) => parts.push((role, Vec::new())),
            (None, Some((_, lines))) => lines.push(line),
            (None, None) if line.trim().is_empty() => {}
            (None, None) => {
                return Err(format!(
                    "line {}: the prompt must begin with a role line such as `{}`",
                    i + 1,
                    marker(Role::System)
                ));
            }
        }
    }
    if !parts.iter().any(|(r, _)| *r == Role::User) {
        return Err(format!(
            "the prompt has no user message: keep a `{}` line above it",
            marker(Role::User)
        ));
    }
    Ok(parts
        .into_iter()
        .map(|(role, lines)| ChatMessage {
            role,
            content: lines.join("\n"),
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prose_broken_by_the_template_is_wrapped_once_and_code_is_kept() {
        let text = "Split the task into a few small Python functions, each of them\ntestable on its own.\n\nRules:\n- one\n- two\n```python\ndef f(x):\n    return x\n```\nThe end.\nA short line.";
        assert_eq!(
            paragraphs(text),
            [
                "Split the task into a few small Python functions, each of them testable on its own.",
                "",
                "Rules:",
                "- one",
                "- two",
                "```python",
                "def f(x):",
                "    return x",
                "```",
                "The end.",
                "A short line.",
            ]
        );
    }

    #[test]
    fn a_prompt_reads_back_as_it_was_written() {
        let messages = vec![
            ChatMessage::system("You write Python.\n\nBe brief."),
            ChatMessage::user("Write add(a, b).\n"),
        ];
        let text = prompt_text(&messages);
        let back = parse_prompt(&text).unwrap();
        assert_eq!(back[0], messages[0]);
        assert_eq!(back[1].content.trim_end(), "Write add(a, b).");
    }

    #[test]
    fn a_prompt_without_roles_or_a_user_message_is_refused_with_the_line() {
        let e = parse_prompt("hello\n").unwrap_err();
        assert!(e.starts_with("line 1:"), "{e}");
        let e = parse_prompt(&prompt_text(&[ChatMessage::system("x")])).unwrap_err();
        assert!(e.contains("no user message"), "{e}");
    }
}
