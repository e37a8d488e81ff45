//! The plan as the model writes it, in the graph's place: the functions
//! named so far (read from the reply as it streams), then the reply's last
//! lines arriving, the way code streams into the code pane.

use ratatui::text::Line;

use super::code_lines::streaming;
use crate::sanitize::sanitize;
use crate::theme::Theme;

/// The lines the graph pane shows while the plan streams in, at most `height`.
pub fn planning_lines<'a>(t: &Theme, reply: &str, height: usize) -> Vec<Line<'a>> {
    let names = named_so_far(reply);
    let mut lines = vec![Line::styled(
        format!(
            "planning… {} function{} so far ({} characters)",
            names.len(),
            if names.len() == 1 { "" } else { "s" },
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
        let tail = streaming(t, reply);
        let skip = tail.len().saturating_sub(room - 1);
        lines.extend(tail.into_iter().skip(skip));
    }
    lines.truncate(height.max(1));
    lines
}

/// The functions the reply has named so far: each complete `"name": "…"`.
pub fn named_so_far(reply: &str) -> Vec<String> {
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
    fn names_appear_once_complete() {
        let reply = "```json\n{\"functions\": [{\"name\": \"tokenize\", \"purpose\": \"x\"}, {\"name\" : \"top_wo";
        assert_eq!(named_so_far(reply), vec!["tokenize"]);
        let lines = planning_lines(&Theme::no_color(), reply, 10);
        let text: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
        assert_eq!(
            text[0],
            format!("planning… 1 function so far ({} characters)", reply.len())
        );
        assert_eq!(text[1], "  · tokenize");
        assert!(text.last().unwrap().contains("top_wo"), "{text:?}");
        assert!(planning_lines(&Theme::no_color(), reply, 2).len() <= 2);
    }
}
