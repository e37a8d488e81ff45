//! The code pane: the selected node's code (or tests, or a diff against the
//! previous iteration, or the assembled program), highlighted off the UI
//! thread, with line numbers, the failing line marked and its error beside it.
//! While the model writes, its reply streams in: settled lines, then the live tail.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};

use super::super::app::{App, CodeTab, Focus, source_label};
use super::{block, title};
use crate::protocol::Location;

pub fn render(app: &App, area: Rect, frame: &mut Frame) {
    let t = &app.theme;
    let node = app.selected.as_ref().and_then(|s| app.state.nodes.get(s));
    let tabs = tab_line(app);
    let mut detail = String::new();
    let mut body: Vec<Line> = Vec::new();
    let mut footer: Vec<Line> = Vec::new();

    match (app.code_tab, node) {
        (CodeTab::Program, _) => match &app.state.program {
            Some((code, _)) => {
                detail = "assembled program".into();
                body = numbered(app, code, None);
            }
            None => body.push(Line::styled(
                "no program yet: it is assembled when every node passes",
                t.dim,
            )),
        },
        (_, None) => body.push(Line::styled(
            if app.state.specs.is_empty() {
                "the selected node's code shows here"
            } else {
                "select a node in the Workflow pane (↑/↓)"
            },
            t.dim,
        )),
        (tab, Some(n)) => {
            let name = &n.spec.name;
            match n.versions.last() {
                Some(v) => {
                    detail = format!(
                        "{name} · iteration {} ({})",
                        v.iteration,
                        source_label(v.source)
                    )
                }
                None => detail = name.clone(),
            }
            match tab {
                CodeTab::Code => {
                    let reflecting = app.state.calls.values().any(|c| {
                        !c.done
                            && matches!(&c.purpose, crate::session::Purpose::Reflect { node } if node == name)
                    });
                    if reflecting {
                        detail = format!("{name} · the model is reflecting (History pane)");
                    }
                    if let Some(stream) = n.streaming.as_ref().filter(|_| !reflecting) {
                        detail = format!("{name} · the model is writing…");
                        body = streaming(app, stream);
                    } else if let Some(code) = n.code() {
                        let marked = n
                            .last_error
                            .as_ref()
                            .filter(|_| n.status != crate::session::NodeStatus::Passed)
                            .and_then(|e| failing_line(code, e).map(|l| (l, e)));
                        body = numbered(app, code, marked);
                    } else {
                        body.push(Line::styled(format!("no code for {name} yet"), t.dim));
                    }
                }
                CodeTab::Tests => match &n.tests {
                    Some(tests) => {
                        detail = format!("{name} · tests");
                        let marked = n
                            .last_error
                            .as_ref()
                            .filter(|e| !e.in_node_code)
                            .and_then(|e| failing_line(tests, e).map(|l| (l, e)));
                        body = numbered(app, tests, marked);
                    }
                    None => body.push(Line::styled(format!("no tests for {name} yet"), t.dim)),
                },
                CodeTab::Diff => {
                    let k = n.versions.len();
                    if k < 2 {
                        body.push(Line::styled(
                            "only one iteration so far: nothing to compare",
                            t.dim,
                        ));
                    } else {
                        let (old, new) = (&n.versions[k - 2], &n.versions[k - 1]);
                        detail =
                            format!("{name} · iteration {} → {}", old.iteration, new.iteration);
                        body = diff_lines(app, &old.code, &new.code);
                    }
                }
                CodeTab::Program => {}
            }
            if let Some(e) = &n.last_error
                && n.status != crate::session::NodeStatus::Passed
                && tab != CodeTab::Diff
            {
                footer = error_lines(app, e);
            }
            if !n.findings.is_empty() && tab == CodeTab::Code {
                for f in n.findings.iter().take(2) {
                    footer.push(Line::styled(
                        format!(
                            "check: {}{}: {}",
                            f.kind,
                            f.line.map(|l| format!(" line {l}")).unwrap_or_default(),
                            f.message
                        ),
                        t.warning,
                    ));
                }
            }
        }
    }

    let mut title_line = title(app, "Code", detail);
    title_line.spans.extend(tabs.spans);
    let outer = block(app, Focus::Code, title_line);
    let inner = outer.inner(area);
    frame.render_widget(outer, area);
    let footer_h = (footer.len() as u16).min(inner.height / 3);
    let [main, foot] =
        Layout::vertical([Constraint::Fill(1), Constraint::Length(footer_h)]).areas(inner);
    let scroll = app.code_scroll.min(body.len().saturating_sub(1));
    frame.render_widget(Paragraph::new(body).scroll((scroll as u16, 0)), main);
    if footer_h > 0 {
        frame.render_widget(Paragraph::new(footer).wrap(Wrap { trim: false }), foot);
    }
}

fn tab_line(app: &App) -> Line<'static> {
    let t = &app.theme;
    let mut spans = Vec::new();
    for (tab, label) in [
        (CodeTab::Code, "code"),
        (CodeTab::Tests, "t tests"),
        (CodeTab::Diff, "d diff"),
        (CodeTab::Program, "p program"),
    ] {
        let style = if app.code_tab == tab {
            t.selection
        } else {
            t.dim
        };
        spans.push(Span::styled(format!("[{label}]"), style));
        spans.push(Span::raw(" "));
    }
    Line::from(spans)
}

/// Numbered lines, highlighted when the worker has done them, the failing line marked.
fn numbered<'a>(app: &'a App, code: &str, marked: Option<(usize, &Location)>) -> Vec<Line<'a>> {
    let t = &app.theme;
    let count = code.lines().count().max(1);
    let width = count.to_string().len();
    let highlighted = app.highlighted(code);
    // Only the lines that can be on screen are built: a long file costs no
    // more per frame than a short one.
    let first = app.code_scroll.min(count.saturating_sub(1));
    let visible = first..first + usize::from(app.screen.height);
    code.lines()
        .enumerate()
        .map(|(i, text)| {
            if !visible.contains(&i) {
                return Line::default();
            }
            let is_marked = marked.is_some_and(|(l, _)| l == i);
            let gutter = format!("{}{:>width$} ", if is_marked { "▶" } else { " " }, i + 1);
            let mut spans = vec![Span::styled(
                gutter,
                if is_marked { t.error } else { t.dim },
            )];
            match highlighted.and_then(|h| h.get(i)) {
                Some(styled) => spans.extend(
                    styled
                        .iter()
                        .map(|(s, text)| Span::styled(text.replace('\t', "    "), *s)),
                ),
                None => spans.push(Span::styled(text.replace('\t', "    "), t.text)),
            }
            if let Some((_, e)) = marked.filter(|_| is_marked) {
                spans.push(Span::styled(
                    format!("  ◀ {}: {}", e.error_type, first_line(&e.message)),
                    t.error,
                ));
            }
            let line = Line::from(spans);
            if is_marked {
                line.style(t.marker)
            } else {
                line
            }
        })
        .collect()
}

/// The reply as it streams: complete lines settled, the unfinished one dim.
fn streaming<'a>(app: &'a App, text: &str) -> Vec<Line<'a>> {
    let t = &app.theme;
    let (settled, tail) = match text.rfind('\n') {
        Some(i) => (&text[..i], &text[i + 1..]),
        None => ("", text),
    };
    let clean = super::super::sanitize::sanitize;
    let mut lines: Vec<Line> = if settled.is_empty() {
        Vec::new()
    } else {
        clean(settled)
            .lines()
            .map(|l| Line::styled(l.to_string(), t.text))
            .collect()
    };
    lines.push(Line::from(vec![
        Span::styled(clean(tail), t.dim),
        Span::styled("▌", t.running),
    ]));
    lines
}

fn diff_lines<'a>(app: &'a App, old: &str, new: &str) -> Vec<Line<'a>> {
    let t = &app.theme;
    let diff = similar::TextDiff::from_lines(old, new);
    let mut lines = Vec::new();
    for change in diff.iter_all_changes() {
        let (sign, style) = match change.tag() {
            similar::ChangeTag::Delete => ("-", t.removed),
            similar::ChangeTag::Insert => ("+", t.added),
            similar::ChangeTag::Equal => (" ", t.dim),
        };
        let text = change
            .value()
            .trim_end_matches(['\n', '\r'])
            .replace('\t', "    ");
        lines.push(Line::styled(format!("{sign} {text}"), style));
    }
    lines
}

/// The localized error, in a few lines under the code.
pub fn error_lines<'a>(app: &'a App, e: &Location) -> Vec<Line<'a>> {
    let t = &app.theme;
    let mut place = e.place();
    if let Some(f) = &e.function {
        place.push_str(&format!(" in {f}"));
    }
    let mut lines = vec![Line::from(vec![
        Span::styled(format!("✗ {}", e.error_type), t.error),
        Span::styled(format!(" at {place}"), t.dim),
        Span::styled(format!(": {}", first_line(&e.message)), t.text),
    ])];
    let mut detail = Vec::new();
    if let Some(test) = &e.test {
        detail.push(format!("test {test}"));
    }
    if let Some(x) = &e.expected {
        detail.push(format!("expected {x}"));
    }
    if let Some(x) = &e.actual {
        detail.push(format!("got {x}"));
    }
    if !detail.is_empty() {
        lines.push(Line::styled(format!("  {}", detail.join(" · ")), t.text));
    }
    lines
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or("")
}

/// The 0-based line of `code` the error points at. The location's line number
/// is in the file the program ran (which may hold more than this node), so the
/// line is found by its text from the context, nearest to the number; failing
/// that, the number itself when it is in the node's own code.
pub fn failing_line(code: &str, e: &Location) -> Option<usize> {
    let line = e.line? as usize;
    let lines: Vec<&str> = code.lines().collect();
    if let Some((_, text)) = e.context.iter().find(|(n, _)| *n as usize == line) {
        let want = text.trim();
        if !want.is_empty() {
            let best = lines
                .iter()
                .enumerate()
                .filter(|(_, l)| l.trim() == want)
                .min_by_key(|(i, _)| (*i as i64 - (line as i64 - 1)).unsigned_abs())
                .map(|(i, _)| i);
            if best.is_some() {
                return best;
            }
        }
    }
    (e.in_node_code && line >= 1 && line <= lines.len()).then(|| line - 1)
}

/// Used by the history pane for "what changed" counts.
pub fn change_counts(old: &str, new: &str) -> (usize, usize) {
    let diff = similar::TextDiff::from_lines(old, new);
    let mut added = 0;
    let mut removed = 0;
    for c in diff.iter_all_changes() {
        match c.tag() {
            similar::ChangeTag::Insert => added += 1,
            similar::ChangeTag::Delete => removed += 1,
            similar::ChangeTag::Equal => {}
        }
    }
    (added, removed)
}
