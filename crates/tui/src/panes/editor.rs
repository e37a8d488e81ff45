//! The editor popup: code, tests, a spec or a hint for the selected node, or
//! the path of a file to attach. It says when the person sends or discards;
//! the app turns the text into a command.

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::Line;
use ratatui::widgets::{Block, Clear};
use ratatui_textarea::TextArea;

use super::{Handled, popup_area};
use crate::keymap::{self, Binding, Key};
use crate::theme::Theme;

/// What an open editor edits.
#[derive(Debug, Clone, PartialEq)]
pub enum EditTarget {
    Code {
        node: String,
    },
    Tests {
        node: String,
    },
    Spec {
        node: String,
    },
    Hint {
        node: String,
    },
    /// A path to attach to the task.
    Attach,
    /// The session's task, in a live session (re-plans).
    Task,
    /// The prompt of the model call the engine is paused before.
    Prompt {
        tag: String,
    },
    /// The plan, written or edited by the person: a new session on the
    /// same task goes on from it.
    Plan,
}

impl EditTarget {
    pub(crate) fn title(&self) -> String {
        match self {
            EditTarget::Code { node } => format!("Edit code of {node}"),
            EditTarget::Tests { node } => format!("Edit tests of {node}"),
            EditTarget::Spec { node } => format!("Edit spec of {node}"),
            EditTarget::Hint { node } => format!("Hint for the next repair of {node}"),
            EditTarget::Attach => "Attach an input file (path)".into(),
            EditTarget::Task => {
                "Edit the task (the engine plans again; unchanged functions keep their work)".into()
            }
            EditTarget::Plan => {
                "The plan: a new session on this task goes on from it (the model writes tests and code)".into()
            }
            EditTarget::Prompt { tag } => {
                format!("Edit the prompt of {tag} (keep the ──── role ──── lines; Ctrl-S sends it)")
            }
        }
    }

    /// One line of text (Enter sends it).
    fn single_line(&self) -> bool {
        matches!(self, EditTarget::Attach)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EditorIntent {
    Send,
    Discard,
    /// Complete the path typed (the popup does it; the app never sees it).
    Complete,
    /// Select all the text, or clear it (the popup does it).
    SelectAll,
    Clear,
}

/// Editing several lines (other keys edit the text).
pub(crate) const MULTI_LINE: &[Binding<EditorIntent>] = &[
    Binding {
        label: "Ctrl-S",
        does: "send to the engine",
        short: "send to the engine",
        keys: &[(Key::ctrl('s'), EditorIntent::Send)],
    },
    Binding {
        label: "Esc",
        does: "discard",
        short: "discard",
        keys: &[(Key::code(KeyCode::Esc), EditorIntent::Discard)],
    },
    Binding {
        label: "Ctrl-A",
        does: "select all (what is typed or pasted replaces it)",
        short: "select all",
        keys: &[(Key::ctrl('a'), EditorIntent::SelectAll)],
    },
    Binding {
        label: "Ctrl-L",
        does: "clear the text (Ctrl-Z brings it back)",
        short: "clear",
        keys: &[(Key::ctrl('l'), EditorIntent::Clear)],
    },
];

/// A path to attach.
pub(crate) const SINGLE_LINE: &[Binding<EditorIntent>] = &[
    Binding {
        label: "Enter",
        does: "attach",
        short: "attach",
        keys: &[(Key::code(KeyCode::Enter), EditorIntent::Send)],
    },
    Binding {
        label: "Tab",
        does: "complete the path",
        short: "complete",
        keys: &[(Key::code(KeyCode::Tab), EditorIntent::Complete)],
    },
    Binding {
        label: "Esc",
        does: "discard",
        short: "discard",
        keys: &[(Key::code(KeyCode::Esc), EditorIntent::Discard)],
    },
];

pub struct EditorPopup {
    target: EditTarget,
    textarea: TextArea<'static>,
    /// Shown under a one-line prompt: why the path was refused, or the
    /// names a completion could go on with.
    note: Option<String>,
    candidates: Vec<String>,
}

impl EditorPopup {
    pub(crate) fn new(target: EditTarget, text: &str, theme: &Theme) -> EditorPopup {
        let lines: Vec<String> = if text.is_empty() {
            vec![String::new()]
        } else {
            text.lines().map(str::to_string).collect()
        };
        let mut textarea = TextArea::new(lines);
        if matches!(target, EditTarget::Hint { .. }) {
            textarea.set_wrap_mode(ratatui_textarea::WrapMode::WordOrGlyph);
        }
        if !matches!(target, EditTarget::Attach | EditTarget::Hint { .. }) {
            textarea.set_line_number_style(theme.dim);
        }
        textarea.set_cursor_line_style(Style::new());
        if target.single_line() {
            textarea.move_cursor(ratatui_textarea::CursorMove::End);
        }
        EditorPopup {
            target,
            textarea,
            note: None,
            candidates: Vec::new(),
        }
    }

    /// Say why the text was refused (the popup stays, with the text).
    pub(crate) fn with_error(mut self, message: String) -> EditorPopup {
        self.note = Some(message);
        self
    }

    /// What the prompt says under the text, if anything.
    pub fn note(&self) -> Option<&str> {
        self.note.as_deref()
    }

    fn complete(&mut self) {
        let typed = self.textarea.lines().join("");
        let done = super::path_complete::complete(&typed);
        self.note = done.note;
        self.candidates = done.candidates;
        self.textarea = TextArea::new(vec![done.text]);
        self.textarea.set_cursor_line_style(Style::new());
        self.textarea.move_cursor(ratatui_textarea::CursorMove::End);
    }

    fn keymap(&self) -> &'static [Binding<EditorIntent>] {
        if self.target.single_line() {
            SINGLE_LINE
        } else {
            MULTI_LINE
        }
    }

    pub fn target(&self) -> &EditTarget {
        &self.target
    }

    pub fn textarea(&self) -> &TextArea<'static> {
        &self.textarea
    }

    pub fn textarea_mut(&mut self) -> &mut TextArea<'static> {
        &mut self.textarea
    }

    /// The text as edited, and what it is for.
    pub(crate) fn into_parts(self) -> (EditTarget, String) {
        let text = self.textarea.lines().join("\n");
        (self.target, text)
    }

    /// Its table, else the key edits the text.
    pub(crate) fn on_key(&mut self, key: KeyEvent) -> Handled<EditorIntent> {
        match keymap::lookup(self.keymap(), &key) {
            Some(EditorIntent::Complete) => {
                self.complete();
                return Handled::Done;
            }
            Some(EditorIntent::SelectAll) => {
                self.textarea.select_all();
                return Handled::Done;
            }
            Some(EditorIntent::Clear) => {
                super::line_edit::clear(&mut self.textarea);
                return Handled::Done;
            }
            Some(intent) => return Handled::Intent(intent),
            None => {}
        }
        if self.target.single_line() {
            // The note was about the text as it was.
            self.note = None;
            self.candidates.clear();
        }
        super::line_edit::textarea_key(&mut self.textarea, key);
        Handled::Done
    }

    pub(crate) fn paste(&mut self, text: &str) {
        self.textarea.insert_str(text);
    }

    pub(crate) fn render(&self, theme: &Theme, frame: &mut Frame) {
        let single = self.target.single_line();
        let area = popup_area(frame.area(), 80, if single { 10 } else { 75 });
        let extra = self.extra_lines(area.width.saturating_sub(2));
        let area = if single {
            let height = (3 + extra.len() as u16).min(frame.area().height.saturating_sub(area.y));
            Rect { height, ..area }
        } else {
            area
        };
        frame.render_widget(Clear, area);
        let block = Block::bordered()
            .border_style(theme.border_focused)
            .title(Line::styled(
                format!(" {} ", self.target.title()),
                theme.title,
            ))
            .title_bottom(Line::styled(
                format!(
                    " {} ",
                    keymap::hint_line_within(
                        self.keymap(),
                        usize::from(area.width.saturating_sub(4))
                    )
                ),
                theme.dim,
            ));
        let inner = block.inner(area);
        frame.render_widget(block, area);
        if !single {
            frame.render_widget(&self.textarea, inner);
            return;
        }
        let [text, below] = ratatui::layout::Layout::vertical([
            ratatui::layout::Constraint::Length(1),
            ratatui::layout::Constraint::Fill(1),
        ])
        .areas(inner);
        frame.render_widget(&self.textarea, text);
        let styled: Vec<Line> = extra
            .into_iter()
            .map(|(error, l)| Line::styled(l, if error { theme.error } else { theme.dim }))
            .collect();
        frame.render_widget(ratatui::widgets::Paragraph::new(styled), below);
    }

    /// The lines under a one-line prompt: the note (an error), then the
    /// candidates in columns, at most ten rows.
    fn extra_lines(&self, width: u16) -> Vec<(bool, String)> {
        let width = usize::from(width).max(8);
        let mut lines: Vec<(bool, String)> = self
            .note
            .iter()
            .flat_map(|n| super::wrap(n, width))
            .map(|l| (true, l))
            .collect();
        if !self.candidates.is_empty() {
            let col = self
                .candidates
                .iter()
                .map(|c| c.chars().count())
                .max()
                .unwrap_or(0)
                + 2;
            let per_row = (width / col.max(1)).max(1);
            for row in self.candidates.chunks(per_row).take(10) {
                let text: String = row.iter().map(|c| format!("{c:<col$}")).collect();
                lines.push((false, text.trim_end().to_string()));
            }
        }
        lines
    }
}

impl super::popup::PopupView for EditorPopup {
    fn render(&self, cx: &super::popup::PopupCtx, frame: &mut Frame) {
        Self::render(self, cx.theme, frame);
    }
}
