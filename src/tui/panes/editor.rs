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
use crate::tui::keymap::{self, Binding, Key, Row};
use crate::tui::theme::Theme;

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
}

impl EditTarget {
    pub fn title(&self) -> String {
        match self {
            EditTarget::Code { node } => format!("Edit code of {node}"),
            EditTarget::Tests { node } => format!("Edit tests of {node}"),
            EditTarget::Spec { node } => format!("Edit spec of {node}"),
            EditTarget::Hint { node } => format!("Hint for the next repair of {node}"),
            EditTarget::Attach => "Attach an input file (path)".into(),
            EditTarget::Task => {
                "Edit the task (the engine plans again; unchanged functions keep their work)".into()
            }
            EditTarget::Prompt { tag } => {
                format!("Edit the prompt of {tag} (keep the ──── role ──── lines; a sends it)")
            }
        }
    }

    /// One line of text (Enter sends it).
    fn single_line(&self) -> bool {
        matches!(self, EditTarget::Attach)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EditorIntent {
    Send,
    Discard,
}

/// Editing several lines (other keys edit the text).
pub const MULTI_LINE: &[Binding<EditorIntent>] = &[
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
];

/// A path to attach.
pub const SINGLE_LINE: &[Binding<EditorIntent>] = &[
    Binding {
        label: "Enter",
        does: "attach",
        short: "attach",
        keys: &[(Key::code(KeyCode::Enter), EditorIntent::Send)],
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
}

impl EditorPopup {
    pub fn new(target: EditTarget, text: &str, theme: &Theme) -> EditorPopup {
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
        EditorPopup { target, textarea }
    }

    fn keymap(&self) -> &'static [Binding<EditorIntent>] {
        if self.target.single_line() {
            SINGLE_LINE
        } else {
            MULTI_LINE
        }
    }

    pub fn help(&self) -> Vec<Row> {
        keymap::rows(self.keymap()).collect()
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
    pub fn into_parts(self) -> (EditTarget, String) {
        let text = self.textarea.lines().join("\n");
        (self.target, text)
    }

    /// Its table, else the key edits the text.
    pub fn on_key(&mut self, key: KeyEvent) -> Handled<EditorIntent> {
        if let Some(intent) = keymap::lookup(self.keymap(), &key) {
            return Handled::Intent(intent);
        }
        self.textarea.input(key);
        Handled::Done
    }

    pub fn paste(&mut self, text: &str) {
        self.textarea.insert_str(text);
    }

    pub fn render(&self, theme: &Theme, frame: &mut Frame) {
        let single = self.target.single_line();
        let area = popup_area(frame.area(), 80, if single { 10 } else { 75 });
        let area = if single {
            Rect { height: 3, ..area }
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
                format!(" {} ", keymap::hint_line(self.keymap())),
                theme.dim,
            ));
        let inner = block.inner(area);
        frame.render_widget(block, area);
        frame.render_widget(&self.textarea, inner);
    }
}
