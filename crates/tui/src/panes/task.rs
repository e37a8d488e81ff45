//! The task: an editor before a session starts, the task as recorded after.

use codeloop_protocol::present::bytes;
use std::path::PathBuf;

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui_textarea::TextArea;

use super::{Ctx, Handled, Intent, Pane, Place, Screen};
use crate::keymap::{self, Binding, Key, Row};

/// What the person meant in the task editor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TaskIntent {
    Submit,
    Attach,
    Leave,
    /// Show the attached files' descriptions.
    Describe,
}

/// The editor's keys (before a session starts).
pub(crate) const EDITING: &[Binding<TaskIntent>] = &[
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
pub(crate) const PLACEHOLDER: &str = "Describe what the program should do, in a few lines. Ctrl-S starts; Ctrl-O attaches an input file.";

/// After the start: the attached files' descriptions.
pub(crate) const RECORDED: &[Binding<TaskIntent>] = &[
    Binding {
        label: "",
        does: "the task of this session (read-only)",
        short: "",
        keys: &[],
    },
    Binding {
        label: "d",
        does: "describe the attached files (what the prompts say of them)",
        short: "describe files",
        keys: &[(Key::ch('d'), TaskIntent::Describe)],
    },
];

pub struct TaskPane {
    editor: TextArea<'static>,
    /// Files being described, attached once their description comes.
    pending: Vec<PathBuf>,
    attached: Vec<PathBuf>,
    /// Each attached file's one-line summary (described when attached).
    summaries: Vec<String>,
    sizes: Vec<u64>,
}

impl Default for TaskPane {
    fn default() -> Self {
        let mut editor = TextArea::default();
        editor.set_wrap_mode(ratatui_textarea::WrapMode::WordOrGlyph);
        TaskPane {
            editor,
            pending: Vec::new(),
            attached: Vec::new(),
            summaries: Vec::new(),
            sizes: Vec::new(),
        }
    }
}

impl TaskPane {
    pub(crate) fn keymap(editable: bool) -> &'static [Binding<TaskIntent>] {
        if editable { EDITING } else { RECORDED }
    }

    pub(crate) fn help(editable: bool) -> Vec<Row> {
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

    /// Files being described (attached once their description comes).
    pub fn pending(&self) -> &[PathBuf] {
        &self.pending
    }

    /// A file is being described in the background.
    pub(crate) fn describing(&mut self, path: PathBuf) {
        self.pending.push(path);
    }

    /// A file's description came back refused: it is no longer waited for.
    pub(crate) fn not_described(&mut self, path: &std::path::Path) {
        if let Some(i) = self.pending.iter().position(|p| p == path) {
            self.pending.remove(i);
        }
    }

    /// Attach a file once described: refused with why and what to do when
    /// no run could hold it with the files already attached (`room`: a
    /// run's disk quota, `Info::input_room`; None checks nothing).
    pub fn attach_described(
        &mut self,
        path: PathBuf,
        file: &codeloop_session::InputFile,
        room: Option<u64>,
    ) -> Result<String, codeloop_inputs::Refusal> {
        self.not_described(&path);
        if let Some(quota) = room {
            let others = self.sizes.iter().sum();
            codeloop_inputs::check_room(&path, file.size_bytes, others, quota)?;
        }
        let summary = crate::sanitize::sanitize(&file.summary());
        self.attached.push(path);
        self.summaries.push(summary.clone());
        self.sizes.push(file.size_bytes);
        Ok(summary)
    }

    /// Keys once the session started (the task is read-only).
    fn on_recorded_key(&self, key: KeyEvent) -> Handled<Intent> {
        match keymap::lookup(RECORDED, &key) {
            Some(TaskIntent::Describe) => Handled::Intent(Intent::DescribeInputs),
            Some(TaskIntent::Submit | TaskIntent::Attach | TaskIntent::Leave) | None => {
                Handled::NotMine
            }
        }
    }

    /// Keys while the task can be edited: its table, pane movement for the
    /// app, and everything else typed into the text.
    fn on_editing_key(&mut self, key: KeyEvent) -> Handled<Intent> {
        if let Some(intent) = keymap::lookup(EDITING, &key) {
            return Handled::Intent(match intent {
                TaskIntent::Submit => Intent::SubmitTask,
                TaskIntent::Attach => Intent::Attach,
                // To the welcome beside it.
                TaskIntent::Leave => Intent::Focus(super::Focus::Welcome),
                TaskIntent::Describe => Intent::DescribeInputs,
            });
        }
        if matches!(key.code, KeyCode::Tab | KeyCode::BackTab) {
            return Handled::NotMine;
        }
        super::line_edit::textarea_key(&mut self.editor, key);
        Handled::Done
    }
}

/// The task's height over the workflow: its lines wrapped in `width`
/// columns (the column's), between 3 and 7 rows with its borders, 9 where
/// files are attached (named in one line where each on its own would not fit).
fn task_height(state: &codeloop_session::State, width: u16) -> u16 {
    let width = usize::from(width.saturating_sub(2)).max(1);
    let task = super::wrap(&state.task, width).len();
    let most = if state.inputs.is_empty() { 7 } else { 9 };
    let each = input_rows(&state.inputs, width);
    let lines = if task + each + 2 <= most {
        task + each
    } else {
        task + named_in_one(
            &state
                .inputs
                .iter()
                .map(|f| f.name.as_str())
                .collect::<Vec<_>>(),
            width,
        )
        .len()
    };
    (lines as u16 + 2).clamp(3, most as u16)
}

impl Pane for TaskPane {
    fn title(&self) -> &'static str {
        "Task"
    }

    /// Top left: the whole column on the welcome screen, else its lines.
    fn place(&self, ctx: &Ctx, columns: [Rect; 2]) -> Option<Place> {
        match ctx.screen {
            Screen::Welcome => Place::left(Constraint::Fill(1)),
            Screen::BeforePlan | Screen::Session => {
                Place::left(Constraint::Length(task_height(ctx.state, columns[0].width)))
            }
        }
    }

    fn keymap(&self, ctx: &Ctx) -> Vec<Row> {
        TaskPane::help(ctx.screen == Screen::Welcome)
    }

    /// Editable before a session starts, read-only after.
    fn on_key(&mut self, key: KeyEvent, ctx: &Ctx) -> Handled<Intent> {
        if ctx.screen == Screen::Welcome {
            self.on_editing_key(key)
        } else {
            self.on_recorded_key(key)
        }
    }

    fn render(&self, ctx: &Ctx, area: Rect, frame: &mut Frame) {
        self.draw(ctx, ctx.screen == Screen::Welcome, area, frame);
    }
}

impl TaskPane {
    fn draw(&self, ctx: &Ctx, editable: bool, area: Rect, frame: &mut Frame) {
        if editable {
            self.draw_editor(ctx, area, frame);
        } else {
            draw_recorded(ctx, area, frame);
        }
    }

    /// The task being written: the editor (its placeholder beside the
    /// cursor while empty), the attached files under it.
    fn draw_editor(&self, ctx: &Ctx, area: Rect, frame: &mut Frame) {
        let t = ctx.theme;
        let detail = if ctx.focused {
            "Ctrl-S start · Ctrl-O attach".to_string()
        } else {
            "i or Tab to write".to_string()
        };
        let outer = ctx.block(ctx.title("Task", detail));
        let inner = outer.inner(area);
        frame.render_widget(outer, area);
        let width = usize::from(inner.width.max(1));
        let listed: Vec<(&str, String, String)> = self
            .attached
            .iter()
            .zip(&self.summaries)
            .map(|(p, summary)| ("attached ", file_name(p), format!(": {summary}")))
            .chain(
                self.pending
                    .iter()
                    .map(|p| ("attaching ", file_name(p), ": being described…".to_string())),
            )
            .collect();
        let attached = attached_lines(t, &listed, width, usize::from(inner.height / 2));
        let shown = attached.len() as u16;
        let [edit, files] =
            Layout::vertical([Constraint::Fill(1), Constraint::Length(shown)]).areas(inner);
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
        frame.render_widget(Paragraph::new(attached), files);
    }
}

/// The attached files (what is said before the name, the name, what
/// follows it) in at most `room` rows of
/// `width`: each on its own lines where they all fit, else all of them
/// named in one line ("attached 8 files: a.csv, b.csv, …"), so none is
/// left out unsaid.
fn attached_lines(
    t: &crate::theme::Theme,
    files: &[(&str, String, String)],
    width: usize,
    room: usize,
) -> Vec<Line<'static>> {
    let each: Vec<Vec<String>> = files
        .iter()
        .map(|(what, name, detail)| super::wrap(&format!("{what}{name}{detail}"), width))
        .collect();
    if each.iter().map(Vec::len).sum::<usize>() <= room {
        return files
            .iter()
            .zip(each)
            .flat_map(|((what, name, _), rows)| {
                rows.into_iter().enumerate().map(move |(i, row)| match i {
                    // The name in its colour on the first row.
                    0 => match row.strip_prefix(&format!("{what}{name}")) {
                        Some(rest) => Line::from(vec![
                            Span::styled(what.to_string(), t.dim),
                            Span::styled(name.clone(), t.accent),
                            Span::styled(rest.to_string(), t.dim),
                        ]),
                        None => Line::styled(row, t.dim),
                    },
                    _ => Line::styled(row, t.dim),
                })
            })
            .collect();
    }
    let names: Vec<&str> = files.iter().map(|(_, n, _)| n.as_str()).collect();
    let mut rows = named_in_one(&names, width);
    if rows.len() > room.max(1) {
        rows.truncate(room.max(1));
        if let Some(last) = rows.last_mut() {
            let keep = width.saturating_sub(1);
            *last = last.chars().take(keep).collect::<String>() + "…";
        }
    }
    rows.into_iter().map(|r| Line::styled(r, t.dim)).collect()
}

/// A path's file name, as shown (control characters removed).
fn file_name(p: &std::path::Path) -> String {
    let name = p
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    crate::sanitize::sanitize(&name)
}

/// The session's task, as the tape has it, with its input files (all of
/// them named, in one line where each on its own would not fit).
fn draw_recorded(ctx: &Ctx, area: Rect, frame: &mut Frame) {
    let t = ctx.theme;
    let s = ctx.state;
    let width = usize::from(area.width.saturating_sub(2)).max(1);
    let height = usize::from(area.height.saturating_sub(2));
    let files: Vec<(&str, String, String)> = s
        .inputs
        .iter()
        .map(|f| {
            (
                "attached ",
                crate::sanitize::sanitize(&f.name),
                input_detail(f),
            )
        })
        .collect();
    let task = if s.task.is_empty() {
        vec![Line::styled("starting…", t.dim)]
    } else {
        super::wrap(&s.task, width)
            .into_iter()
            .map(|l| Line::styled(l, t.text))
            .collect()
    };
    // The files get the rows the task leaves (one at least), and the task
    // is cut to leave them theirs.
    let room = height
        .saturating_sub(task.len())
        .max(usize::from(!files.is_empty()));
    let attached = attached_lines(t, &files, width, room);
    let mut lines: Vec<Line> = task
        .into_iter()
        .take(height.saturating_sub(attached.len()).max(1))
        .collect();
    lines.extend(attached);
    let detail = if s.inputs.is_empty() {
        String::new()
    } else if ctx.focused {
        "d describe files".to_string()
    } else {
        String::new()
    };
    let p = Paragraph::new(lines).block(ctx.block(ctx.title("Task", detail)));
    frame.render_widget(p, area);
}

/// The attached files named in one line: "attached 8 files: a.csv, …",
/// wrapped in `width`.
fn named_in_one(names: &[&str], width: usize) -> Vec<String> {
    let text = format!(
        "attached {}: {}",
        codeloop_protocol::present::count(names.len(), "file"),
        names.join(", ")
    );
    super::wrap(&text, width)
}

/// What follows an attached file's name: its size and, where the session
/// described it, its one-line summary.
pub(crate) fn input_detail(f: &codeloop_session::InputFile) -> String {
    match &f.description {
        // A summary may hold the file's own words (a sheet's name): no
        // control sequence reaches the terminal.
        Some(d) => {
            crate::sanitize::sanitize(&format!(" ({}): {}", bytes(f.size_bytes), d.summary()))
        }
        None => format!(" ({})", bytes(f.size_bytes)),
    }
}

/// The rows the attached files take in a pane `width` wide.
pub(crate) fn input_rows(inputs: &[codeloop_session::InputFile], width: usize) -> usize {
    inputs
        .iter()
        .map(|f| super::wrap(&format!("attached {}{}", f.name, input_detail(f)), width).len())
        .sum()
}
