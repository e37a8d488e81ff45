//! The task: an editor before a session starts, the task as recorded after.

use std::path::PathBuf;

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};
use ratatui_textarea::TextArea;

use super::{Ctx, Handled};
use crate::keymap::{self, Binding, Key, Row};

/// What the person meant in the task editor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskIntent {
    Submit,
    Attach,
    Leave,
}

/// The editor's keys (before a session starts).
pub const EDITING: &[Binding<TaskIntent>] = &[
    Binding {
        label: "type",
        does: "the task, several lines",
        short: "the task, several lines",
        keys: &[],
    },
    Binding {
        label: "Ctrl-S",
        does: "start the session",
        short: "start",
        keys: &[(Key::ctrl('s'), TaskIntent::Submit)],
    },
    Binding {
        label: "Ctrl-O",
        does: "attach an input file",
        short: "attach",
        keys: &[(Key::ctrl('o'), TaskIntent::Attach)],
    },
    Binding {
        label: "Esc",
        does: "leave the editor",
        short: "leave the editor",
        keys: &[(Key::code(KeyCode::Esc), TaskIntent::Leave)],
    },
];

/// What the empty editor says (wrapped to the pane, never cut off).
pub const PLACEHOLDER: &str = "Describe what the program should do, in a few lines. Ctrl-S starts; Ctrl-O attaches an input file.";

/// After the start: nothing to press.
pub const RECORDED: &[Binding<TaskIntent>] = &[Binding {
    label: "",
    does: "the task of this session (read-only)",
    short: "",
    keys: &[],
}];

pub struct TaskPane {
    editor: TextArea<'static>,
    attached: Vec<PathBuf>,
}

impl Default for TaskPane {
    fn default() -> Self {
        let mut editor = TextArea::default();
        editor.set_wrap_mode(ratatui_textarea::WrapMode::WordOrGlyph);
        TaskPane {
            editor,
            attached: Vec::new(),
        }
    }
}

impl TaskPane {
    pub fn keymap(editable: bool) -> &'static [Binding<TaskIntent>] {
        if editable { EDITING } else { RECORDED }
    }

    pub fn help(editable: bool) -> Vec<Row> {
        keymap::rows(Self::keymap(editable)).collect()
    }

    /// The text as typed.
    pub fn text(&self) -> String {
        self.editor.lines().join("\n")
    }

    /// Add text at the cursor (a paste, or a task given on the command line).
    pub fn insert_str(&mut self, text: &str) {
        self.editor.insert_str(text);
    }

    pub fn lines(&self) -> &[String] {
        self.editor.lines()
    }

    pub fn attached(&self) -> &[PathBuf] {
        &self.attached
    }

    pub fn attach(&mut self, path: PathBuf) {
        self.attached.push(path);
    }

    /// Keys while the task can be edited: its table, pane movement for the
    /// app, and everything else typed into the text.
    pub fn on_key(&mut self, key: KeyEvent) -> Handled<TaskIntent> {
        if let Some(intent) = keymap::lookup(EDITING, &key) {
            return Handled::Intent(intent);
        }
        if matches!(key.code, KeyCode::Tab | KeyCode::BackTab) {
            return Handled::NotMine;
        }
        super::line_edit::textarea_key(&mut self.editor, key);
        Handled::Done
    }

    pub fn render(&self, ctx: &Ctx, editable: bool, area: Rect, frame: &mut Frame) {
        let t = ctx.theme;
        if editable {
            let detail = if ctx.focused {
                "Ctrl-S start · Ctrl-O attach".to_string()
            } else {
                "i or Tab to write".to_string()
            };
            let outer = ctx.block(ctx.title("Task", detail));
            let inner = outer.inner(area);
            frame.render_widget(outer, area);
            let [edit, files] = Layout::vertical([
                Constraint::Fill(1),
                Constraint::Length(u16::from(!self.attached.is_empty())),
            ])
            .areas(inner);
            frame.render_widget(&self.editor, edit);
            if self.text().is_empty() {
                // Beside the cursor, wrapped: the editor's own placeholder is one line.
                let hint = Rect {
                    x: edit.x + 1,
                    width: edit.width.saturating_sub(1),
                    ..edit
                };
                let lines: Vec<Line> = super::wrap(PLACEHOLDER, usize::from(hint.width))
                    .into_iter()
                    .map(|l| Line::styled(l, t.dim))
                    .collect();
                frame.render_widget(Paragraph::new(lines), hint);
            }
            if !self.attached.is_empty() {
                let names: Vec<String> = self
                    .attached
                    .iter()
                    .map(|p| {
                        p.file_name()
                            .map(|n| n.to_string_lossy().into_owned())
                            .unwrap_or_default()
                    })
                    .collect();
                frame.render_widget(
                    Paragraph::new(Line::styled(
                        format!("attached: {}", names.join(", ")),
                        t.dim,
                    )),
                    files,
                );
            }
            return;
        }
        let s = ctx.state;
        let mut lines: Vec<Line> = s
            .task
            .lines()
            .map(|l| Line::styled(l.to_string(), t.text))
            .collect();
        if s.task.is_empty() {
            lines.push(Line::styled("starting…", t.dim));
        }
        for f in &s.inputs {
            lines.push(Line::from(vec![
                Span::styled("attached ", t.dim),
                Span::styled(f.name.clone(), t.accent),
                Span::styled(format!(" ({})", human_bytes(f.size_bytes)), t.dim),
            ]));
        }
        let p = Paragraph::new(lines)
            .wrap(Wrap { trim: false })
            .block(ctx.block(ctx.title("Task", String::new())));
        frame.render_widget(p, area);
    }
}

pub fn human_bytes(n: u64) -> String {
    match n {
        n if n >= 1 << 20 => format!("{:.1} MB", n as f64 / (1u64 << 20) as f64),
        n if n >= 1 << 10 => format!("{:.1} KB", n as f64 / 1024.0),
        n => format!("{n} B"),
    }
}
