//! The pictures the session's programs drew (`I`): the latest of each image
//! file a run left, one at a time, drawn with the terminal's own graphics
//! where it has them (kitty, sixel, iTerm2: `graphics/`), else with
//! half-blocks (`picture.rs`), with its name, format, size in pixels and
//! where the session keeps it. Where a picture cannot be drawn (an SVG, a
//! file gone), its path is shown instead. ← / → another picture, Esc closes.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph, Wrap};

use super::{Handled, popup_area};
use crate::graphics::shown::{self, Shown};
use crate::graphics::{Graphics, Protocol};
use crate::picture::{self, Pixels};
use crate::theme::Theme;
use codeloop_protocol::picture::Picture;
use codeloop_session::State;
use codeloop_session::state::RunPicture;

/// One picture to show: what the tape says of it and where its file is.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Entry {
    pub(crate) picture: Picture,
    /// Which run drew it, in words ("run 7", "the program's run").
    pub(crate) from: String,
    pub(crate) file: PathBuf,
}

/// The latest picture of each name, in the order the names first came.
pub(crate) fn entries(state: &State, session_dir: &Path) -> Vec<Entry> {
    let mut out: Vec<Entry> = Vec::new();
    for RunPicture { run_id, picture: p } in &state.pictures {
        let entry = Entry {
            picture: p.clone(),
            from: match run_id {
                Some(id) => format!("run {id}"),
                None => "the program's run".into(),
            },
            file: session_dir.join(&p.path),
        };
        match out.iter_mut().find(|e| e.picture.name == p.name) {
            Some(e) => *e = entry,
            None => out.push(entry),
        }
    }
    out
}

/// What the person meant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PicturesIntent {
    Close,
    /// Decode this file (off the UI thread).
    Load(PathBuf),
}

pub struct PictureView {
    entries: Vec<Entry>,
    selected: usize,
    /// The selected picture decoded, or why it cannot be drawn; None while
    /// it is being read.
    decoded: Option<Result<Arc<Pixels>, String>>,
    /// How this terminal draws pictures.
    graphics: Graphics,
    /// The decoded picture encoded for the body it was last prepared for
    /// (None inside: half-blocks there).
    shown: Option<(Rect, Option<Shown>)>,
}

impl PictureView {
    /// The view of `entries` (at least one), the latest selected (what the
    /// program drew last, usually what it was asked for; ← goes back to
    /// earlier ones): load `selected_file()` next.
    pub(crate) fn new(entries: Vec<Entry>) -> PictureView {
        PictureView {
            selected: entries.len().saturating_sub(1),
            entries,
            decoded: None,
            graphics: Graphics::default(),
            shown: None,
        }
    }

    /// Draw with `graphics` (half-blocks unless told).
    pub(crate) fn with_graphics(mut self, graphics: Graphics) -> PictureView {
        self.graphics = graphics;
        self
    }

    /// Encode the picture for the body it will be drawn in on `screen`,
    /// where the protocol is not half-blocks and the picture or the size
    /// changed (before a frame: render only draws).
    pub(crate) fn prepare(&mut self, screen: Rect, background: [u8; 3]) {
        if self.graphics.protocol == Protocol::Halfblocks {
            return;
        }
        let Some(Ok(px)) = &self.decoded else {
            self.shown = None;
            return;
        };
        let Some(body) = body_of(screen) else {
            self.shown = None;
            return;
        };
        if self.shown.as_ref().is_some_and(|(b, _)| *b == body) {
            return;
        }
        self.shown = Some((body, shown::encode(px, body, &self.graphics, background)));
    }

    /// The picture as drawn with a protocol, if it is (tests).
    pub fn shown(&self) -> Option<&Shown> {
        self.shown.as_ref().and_then(|(_, s)| s.as_ref())
    }

    pub(crate) fn selected_file(&self) -> Option<&Path> {
        self.entries.get(self.selected).map(|e| e.file.as_path())
    }

    /// A file was decoded: the view takes it if it is still the one shown.
    pub(crate) fn loaded(&mut self, file: &Path, result: Result<Arc<Pixels>, String>) {
        if self.selected_file() == Some(file) {
            self.decoded = Some(result);
            self.shown = None;
        }
    }

    pub(crate) fn on_key(&mut self, key: KeyEvent) -> Handled<PicturesIntent> {
        let n = self.entries.len();
        let step = match key.code {
            KeyCode::Esc | KeyCode::Char('q') | KeyCode::Char('I') => {
                return Handled::Intent(PicturesIntent::Close);
            }
            KeyCode::Right | KeyCode::Char('l') | KeyCode::Down | KeyCode::Char('j') => 1,
            KeyCode::Left | KeyCode::Char('h') | KeyCode::Up | KeyCode::Char('k') => n - 1,
            _ => return Handled::Done,
        };
        if n <= 1 {
            return Handled::Done;
        }
        self.selected = (self.selected + step) % n;
        self.decoded = None;
        self.shown = None;
        match self.selected_file() {
            Some(f) => Handled::Intent(PicturesIntent::Load(f.to_path_buf())),
            None => Handled::Done,
        }
    }

    pub(crate) fn render(&self, theme: &Theme, frame: &mut Frame) {
        let area = popup_area(frame.area(), 90, 90);
        frame.render_widget(Clear, area);
        let Some(entry) = self.entries.get(self.selected) else {
            return;
        };
        let title = format!(
            " Pictures {}/{} · {} ",
            self.selected + 1,
            self.entries.len(),
            entry.picture.describe()
        );
        let block = Block::bordered()
            .title(title)
            .border_style(theme.border_focused);
        let inner = block.inner(area);
        frame.render_widget(block, area);
        let Some(body) = body_of(frame.area()) else {
            return;
        };
        let footer = Rect {
            y: inner.y + inner.height - 2,
            height: 2,
            ..inner
        };
        let shown = match &self.shown {
            Some((b, Some(s))) if *b == body => Some(s),
            _ => None,
        };
        match (&self.decoded, shown) {
            (Some(Ok(_)), Some(s)) => s.render(frame),
            (Some(Ok(px)), None) => draw(px, body, theme, frame),
            (Some(Err(why)), _) => frame.render_widget(
                Paragraph::new(vec![
                    Line::styled(format!("Not drawn here: {why}."), theme.warning),
                    Line::raw(""),
                    Line::styled(entry.file.display().to_string(), theme.text),
                ])
                .wrap(Wrap { trim: false }),
                body,
            ),
            (None, _) => frame.render_widget(Line::styled("reading…", theme.dim), body),
        }
        let drawn = match shown {
            Some(s) => format!("drawn with {}", s.protocol.words()),
            None => "drawn with half-blocks (▀), two pixels a cell".to_string(),
        };
        let hints = if self.entries.len() > 1 {
            "← / → another picture · Esc close"
        } else {
            "Esc close"
        };
        frame.render_widget(
            Paragraph::new(vec![
                Line::from(vec![
                    Span::styled(format!("from {} · ", entry.from), theme.dim),
                    Span::styled(entry.file.display().to_string(), theme.text),
                ]),
                Line::styled(format!("{hints} · {drawn}"), theme.dim),
            ]),
            footer,
        );
    }
}

/// Where the picture goes on `screen`: the popup's inside, less the two
/// footer lines (None: too small for anything).
fn body_of(screen: Rect) -> Option<Rect> {
    let inner = Block::bordered().inner(popup_area(screen, 90, 90));
    if inner.height < 3 || inner.width < 4 {
        return None;
    }
    Some(Rect {
        height: inner.height - 2,
        ..inner
    })
}

/// The picture centred in `area`, two pixels a cell.
fn draw(px: &Pixels, area: Rect, theme: &Theme, frame: &mut Frame) {
    let background = match theme.background.bg {
        Some(Color::Rgb(r, g, b)) => [r, g, b],
        _ => [0, 0, 0],
    };
    let rows = picture::cells(px, area.width, area.height, background);
    let height = rows.len() as u16;
    let width = rows.first().map_or(0, |r| r.len() as u16);
    let x0 = area.x + area.width.saturating_sub(width) / 2;
    let y0 = area.y + area.height.saturating_sub(height) / 2;
    let buf = frame.buffer_mut();
    for (dy, row) in rows.iter().enumerate() {
        for (dx, (top, bottom)) in row.iter().enumerate() {
            if let Some(cell) = buf.cell_mut((x0 + dx as u16, y0 + dy as u16)) {
                cell.set_symbol("▀");
                cell.set_style(
                    Style::default()
                        .fg(Color::Rgb(top[0], top[1], top[2]))
                        .bg(Color::Rgb(bottom[0], bottom[1], bottom[2])),
                );
            }
        }
    }
}

impl super::popup::PopupView for PictureView {
    fn render(&self, cx: &super::popup::PopupCtx, frame: &mut Frame) {
        Self::render(self, cx.theme, frame);
    }
}
