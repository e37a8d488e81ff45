//! The output pane: a run's stdout and stderr as they arrive (stderr marked
//! with a bar and its own colour), control sequences stripped, following the
//! tail unless scrolled up, searchable. Memory holds the newest output; the
//! session's log on disk holds all of it.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::super::app::{App, Focus};
use super::task::human_bytes;
use super::{block, title};
use crate::protocol::Stream;

pub fn render(app: &App, area: Rect, frame: &mut Frame) {
    let t = &app.theme;
    let run = app
        .output
        .run_id
        .and_then(|id| app.state.runs.get(&id).map(|r| (id, r)));
    let mut detail = String::new();
    let mut status: Option<Span> = None;
    if let Some((id, r)) = run {
        detail = match &r.node {
            Some(n) => format!("run {id} · {n} it {}", r.iteration),
            None => format!("run {id} · program"),
        };
        status = Some(match &r.record {
            None => Span::styled("running ", t.running),
            Some(rec) if rec.passed => Span::styled(
                format!("passed{} ", tests_note(rec.tests_passed, rec.tests_failed)),
                t.ok,
            ),
            Some(rec) => Span::styled(
                format!(
                    "failed{}{} ",
                    match (&rec.limit_hit, rec.exit_code, rec.signal) {
                        (Some(l), _, _) => format!(": {l}"),
                        (None, Some(c), _) => format!(" (exit {c})"),
                        (None, None, Some(s)) => format!(" (signal {s})"),
                        (None, None, None) => String::new(),
                    },
                    tests_note(rec.tests_passed, rec.tests_failed)
                ),
                t.error,
            ),
        });
    }
    let mut title_line = title(app, "Output", detail);
    if let Some(s) = status {
        title_line.spans.push(s);
    }
    if let Some((_, mark)) = run.and_then(|(id, _)| app.reruns.get(&id).map(|m| (id, m))) {
        title_line.spans.push(if mark.differs() {
            Span::styled(format!("≠ live re-run: {} ", live_outcome(mark)), t.warning)
        } else {
            Span::styled("= live re-run agrees ", t.ok)
        });
    }
    let outer = block(app, Focus::Output, title_line);
    let inner = outer.inner(area);
    frame.render_widget(outer, area);

    let lines = &app.output.lines;
    let dropped = run.map(|(_, r)| r.dropped_bytes).unwrap_or(0);
    let notes_h = u16::from(dropped > 0 || app.output_back > 0)
        + u16::from(app.search_input.is_some() || app.search.is_some());
    let [body, notes] =
        Layout::vertical([Constraint::Fill(1), Constraint::Length(notes_h)]).areas(inner);

    if run.is_none() {
        frame.render_widget(Paragraph::new(Line::styled("no run yet", t.dim)), body);
    } else {
        let height = usize::from(body.height);
        let end = lines.len().saturating_sub(app.output_back);
        let start = end.saturating_sub(height);
        let query = app.search.as_ref().map(|q| q.to_lowercase());
        let visible: Vec<Line> = lines[start..end]
            .iter()
            .map(|(stream, text)| {
                let (bar, style) = match stream {
                    Stream::Stdout => (Span::raw("  "), t.text),
                    Stream::Stderr => (Span::styled("┃ ", t.stderr), t.stderr),
                };
                let mut spans = vec![bar];
                match &query {
                    Some(q) if !q.is_empty() && text.to_lowercase().contains(q.as_str()) => {
                        spans.push(Span::styled(text.clone(), t.search_match));
                    }
                    _ => spans.push(Span::styled(text.clone(), style)),
                }
                Line::from(spans)
            })
            .collect();
        let empty = visible.is_empty();
        frame.render_widget(Paragraph::new(visible), body);
        if empty {
            frame.render_widget(Paragraph::new(Line::styled("(no output)", t.dim)), body);
        }
    }

    let mut note_lines = Vec::new();
    if dropped > 0 || app.output_back > 0 {
        let mut spans = Vec::new();
        if app.output_back > 0 {
            spans.push(Span::styled(
                format!("↑ {} lines above the tail · G follows ", app.output_back),
                t.accent,
            ));
        }
        if dropped > 0 {
            let place = match (&app.info.session_dir, app.output.run_id) {
                (Some(dir), Some(id)) => dir
                    .join("logs")
                    .join(format!("run-{id}.log"))
                    .display()
                    .to_string(),
                _ => "the session's log on disk".to_string(),
            };
            spans.push(Span::styled(
                format!(
                    "{} older output: all of it is in {place}",
                    human_bytes(dropped)
                ),
                t.dim,
            ));
        }
        note_lines.push(Line::from(spans));
    }
    if let Some(input) = &app.search_input {
        note_lines.push(Line::from(vec![
            Span::styled("/", t.accent),
            Span::styled(input.clone(), t.text),
            Span::styled("▌ Enter search · Esc cancel", t.dim),
        ]));
    } else if let Some(q) = &app.search {
        let hits = lines
            .iter()
            .filter(|(_, l)| l.to_lowercase().contains(&q.to_lowercase()))
            .count();
        note_lines.push(Line::styled(
            format!("/{q}: {hits} matching lines · n next · N previous"),
            t.dim,
        ));
    }
    frame.render_widget(Paragraph::new(note_lines), notes);
}

fn tests_note(passed: Option<u32>, failed: Option<u32>) -> String {
    match (passed, failed) {
        (Some(p), Some(f)) => format!(" · tests {p} passed, {f} failed"),
        (Some(p), None) => format!(" · {p} tests passed"),
        _ => String::new(),
    }
}

fn live_outcome(mark: &super::super::app::RerunMark) -> String {
    match &mark.live {
        Ok(r) => format!(
            "recorded {}, now {}{}",
            if mark.recorded.passed {
                "passed"
            } else {
                "failed"
            },
            if r.passed { "passed" } else { "failed" },
            r.exit_code
                .map(|c| format!(" (exit {c})"))
                .unwrap_or_default()
        ),
        Err(e) => format!("could not re-run: {e}"),
    }
}
