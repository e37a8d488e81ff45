//! The graph's place before there is a plan: the plan as the model writes
//! it (the functions named so far, read from the reply as it streams, then
//! the reply's last lines arriving, the way code streams into the code
//! pane), which attempt this is, and, when the model gave no usable plan,
//! what happened and what the person can do next, with the keys.

use codeloop_protocol::present::plural;
use ratatui::text::Line;

use super::code_lines::streaming;
use super::wrap;
use crate::keymap::{self, GlobalAct, SteerAct};
use crate::sanitize::sanitize;
use crate::theme::Theme;
use codeloop_session::state::CallState;
use codeloop_session::{Command, Outcome, Purpose, State};

/// Plans the engine asks for before it gives up.
pub(crate) use codeloop_session::PLAN_ATTEMPTS;

/// Which attempt a plan call is: its tag is `plan`, then `plan/2`, `plan/3`.
fn attempt_of(call: &CallState) -> u32 {
    call.tag
        .rsplit_once('/')
        .and_then(|(_, n)| n.parse().ok())
        .unwrap_or(1)
}

/// What the graph pane shows while the state has no plan, `width` wide
/// and at most `height` lines.
pub(crate) fn before_plan_lines<'a>(
    t: &Theme,
    s: &State,
    width: usize,
    height: usize,
) -> Vec<Line<'a>> {
    let planning = s
        .calls
        .values()
        .rev()
        .find(|c| c.purpose == Purpose::Plan && !c.done);
    let mut lines = Vec::new();
    match (planning, &s.plan_error) {
        (Some(c), _) if attempt_of(c) > 1 => {
            let head = format!(
                "asking again ({} of {PLAN_ATTEMPTS}): the last reply held no plan codeloop can use",
                attempt_of(c)
            );
            lines.extend(
                wrap(&head, width)
                    .into_iter()
                    .map(|l| Line::styled(l, t.warning)),
            );
            let room = height.saturating_sub(lines.len());
            lines.extend(planning_lines(t, &c.reply, width, room));
        }
        (Some(c), _) => lines = planning_lines(t, &c.reply, width, height),
        (None, _) if Outcome::of(s) == Outcome::NoPlan => lines = no_plan_lines(t, s, width),
        (None, Some(e)) => {
            let text = format!("the model's reply held no plan codeloop can use: {e}");
            lines.extend(
                wrap(&text, width)
                    .into_iter()
                    .map(|l| Line::styled(l, t.warning)),
            );
        }
        (None, None) => lines.push(Line::styled("waiting for the plan…", t.dim)),
    }
    lines
}

/// The session ended without a plan: what happened, in the person's words,
/// and what they can do, each with its key.
fn no_plan_lines<'a>(t: &Theme, s: &State, width: usize) -> Vec<Line<'a>> {
    let calls: Vec<&CallState> = s
        .calls
        .values()
        .filter(|c| c.purpose == Purpose::Plan)
        .collect();
    let asked = calls.len();
    let what = match (calls.last(), &s.plan_error) {
        (None, _) if s.steers.contains(&Command::Skip) => {
            "✗ No plan: you skipped the planning call.".to_string()
        }
        (None, _) => "✗ No plan: the planning call was not made.".to_string(),
        (Some(c), _) if c.error.is_some() => format!(
            "✗ No plan: the model call for it failed: {}",
            c.error.as_deref().unwrap_or_default()
        ),
        (Some(_), _) => format!(
            "✗ No plan: the model was asked {asked} time{} and no reply held a plan codeloop can use (a JSON list of functions).",
            plural(asked)
        ),
    };
    let mut lines: Vec<Line> = wrap(&what, width)
        .into_iter()
        .map(|l| Line::styled(l, t.error))
        .collect();
    if let Some(e) = &s.plan_error {
        for l in wrap(&format!("What codeloop told the model last: {e}"), width) {
            lines.push(Line::styled(l, t.dim));
        }
    }
    lines.push(Line::raw(""));
    lines.push(Line::styled("What you can do:", t.title));
    let steer = |act| keymap::label_of(keymap::STEER, &GlobalAct::Steer(act));
    let offers = [
        (
            keymap::label_of(keymap::INSPECT, &GlobalAct::Inspect),
            "read the model's replies and the prompt it was sent",
        ),
        (
            steer(SteerAct::WritePlan),
            "write the plan yourself: the model then writes only the tests and code",
        ),
        (
            steer(SteerAct::NewSession),
            "a new session from this task, to edit and send again (s there: step mode, to see and edit the plan prompt before it goes)",
        ),
        (
            keymap::label_of(keymap::COMMON, &GlobalAct::Palette),
            "another model profile for the next session: a larger model plans better (README: Use your own model)",
        ),
    ];
    for (key, does) in offers {
        let Some(key) = key else { continue };
        let key_w = key.chars().count() + 2;
        let text = wrap(does, width.saturating_sub(key_w));
        for (i, piece) in text.into_iter().enumerate() {
            let lead = if i == 0 {
                format!("{key}  ")
            } else {
                " ".repeat(key_w)
            };
            lines.push(Line::from(vec![
                ratatui::text::Span::styled(lead, t.accent),
                ratatui::text::Span::styled(piece, t.text),
            ]));
        }
    }
    lines
}

/// The lines the graph pane shows while the plan streams in, at most
/// `height`, the reply wrapped at `width` (a small model often answers in
/// long lines of prose).
pub(crate) fn planning_lines<'a>(
    t: &Theme,
    reply: &str,
    width: usize,
    height: usize,
) -> Vec<Line<'a>> {
    let names = named_so_far(reply);
    let mut lines = vec![Line::styled(
        format!(
            "planning… {} function{} so far ({} characters)",
            names.len(),
            plural(names.len()),
            reply.len()
        ),
        t.dim,
    )];
    for name in &names {
        lines.push(Line::styled(format!("  · {}", sanitize(name)), t.text));
    }
    let room = height.saturating_sub(lines.len() + 1);
    if room > 0 {
        lines.push(Line::raw(""));
        let tail = wrapped_stream(t, reply, width);
        let skip = tail.len().saturating_sub(room - 1);
        lines.extend(tail.into_iter().skip(skip));
    }
    lines.truncate(height.max(1));
    lines
}

/// A streaming reply as lines no wider than `width`: the settled lines,
/// then the line being written, dim, with the cursor after it.
fn wrapped_stream<'a>(t: &Theme, reply: &str, width: usize) -> Vec<Line<'a>> {
    let mut lines = Vec::new();
    for line in streaming(t, reply) {
        // A line that fits keeps its indentation and styles as it is.
        if line.width() <= width {
            lines.push(line);
            continue;
        }
        let style = line.spans.first().map(|s| s.style).unwrap_or(t.text);
        let text: String = line.spans.iter().map(|s| s.content.as_ref()).collect();
        // The cursor (▌) is part of the last line's text: it ends the last piece.
        for piece in wrap(&text, width) {
            lines.push(Line::styled(piece, style));
        }
    }
    lines
}

/// The functions the reply has named so far: each complete `"name": "…"`.
pub(crate) fn named_so_far(reply: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = reply;
    while let Some(i) = rest.find("\"name\"") {
        rest = &rest[i + "\"name\"".len()..];
        let after = rest.trim_start();
        let Some(after) = after.strip_prefix(':') else {
            continue;
        };
        let Some(value) = after.trim_start().strip_prefix('"') else {
            continue;
        };
        match value.find('"') {
            Some(end) => {
                names.push(value[..end].to_string());
                rest = &value[end + 1..];
            }
            // Still being written.
            None => break,
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_attempt_is_read_from_the_call_tag() {
        let mut call = CallState::asked(Purpose::Plan, vec![], "plan".into(), 0);
        assert_eq!(attempt_of(&call), 1);
        call.tag = "replan/3".into();
        assert_eq!(attempt_of(&call), 3);
    }

    #[test]
    fn names_appear_once_complete() {
        let reply = "```json\n{\"functions\": [{\"name\": \"tokenize\", \"purpose\": \"x\"}, {\"name\" : \"top_wo";
        assert_eq!(named_so_far(reply), vec!["tokenize"]);
        let lines = planning_lines(&Theme::no_color(), reply, 200, 10);
        let text: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
        assert_eq!(
            text[0],
            format!("planning… 1 function so far ({} characters)", reply.len())
        );
        assert_eq!(text[1], "  · tokenize");
        assert!(text.last().unwrap().contains("top_wo"), "{text:?}");
        assert!(planning_lines(&Theme::no_color(), reply, 200, 2).len() <= 2);
        // Prose in one long line wraps, its end in view.
        let prose = "word ".repeat(40);
        let lines = planning_lines(&Theme::no_color(), &prose, 30, 8);
        assert!(lines.iter().skip(1).all(|l| l.width() <= 30), "{lines:?}");
        assert!(
            lines.last().unwrap().to_string().contains("word"),
            "{lines:?}"
        );
    }
}
