//! The log pager: a run's whole output log (`logs/run-N.log`), not only the
//! tail the output pane keeps in memory. Opened from the output pane; the
//! file is read off the UI thread (`log_reader`), so it shows "reading…"
//! until the text arrives. Search (`/`, `n`/`N`), the first stderr line,
//! wrap or horizontal scroll, line numbers.

use std::path::PathBuf;
use std::sync::Arc;

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph};

use super::hscroll::{STEP, clip_line, hard_wrap, max_left};
use super::output::{SEARCH_INPUT, Say, search_input_key};
use super::{Handled, Scroll, page, scroll_keys, wrap};
use crate::keymap::{self, Binding, Key, Row};
use crate::log_reader::{LogText, stderr_lines};
use crate::theme::Theme;
use codeloop_protocol::present::bytes;
use codeloop_session::NoticeLevel;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PagerAct {
    Scroll(Scroll),
    Top,
    Bottom,
    Search,
    NextMatch,
    PrevMatch,
    FirstStderr,
    Wrap,
    Left,
    Right,
    Reload,
    Close,
}

pub(crate) const KEYS: &[Binding<PagerAct>] = &[
    Binding {
        label: "↑ ↓ PgUp PgDn",
        does: "scroll",
        short: "scroll",
        keys: scroll_keys!(PagerAct::Scroll),
    },
    Binding {
        label: "g / G",
        does: "top / bottom",
        short: "top / bottom",
        keys: &[
            (Key::ch('g'), PagerAct::Top),
            (Key::code(KeyCode::Home), PagerAct::Top),
            (Key::ch('G'), PagerAct::Bottom),
            (Key::code(KeyCode::End), PagerAct::Bottom),
        ],
    },
    Binding {
        label: "/ n N",
        does: "search, next / previous match",
        short: "search",
        keys: &[
            (Key::ch('/'), PagerAct::Search),
            (Key::ch('n'), PagerAct::NextMatch),
            (Key::ch('N'), PagerAct::PrevMatch),
        ],
    },
    Binding {
        label: "e",
        does: "the first stderr line",
        short: "first stderr",
        keys: &[(Key::ch('e'), PagerAct::FirstStderr)],
    },
    Binding {
        label: "w",
        does: "wrap long lines on / off",
        short: "wrap",
        keys: &[(Key::ch('w'), PagerAct::Wrap)],
    },
    Binding {
        label: "← → h l",
        does: "scroll sideways (wrap off)",
        short: "sideways",
        keys: &[
            (Key::code(KeyCode::Left), PagerAct::Left),
            (Key::ch('h'), PagerAct::Left),
            (Key::code(KeyCode::Right), PagerAct::Right),
            (Key::ch('l'), PagerAct::Right),
        ],
    },
    Binding {
        label: "r",
        does: "read the log again (a run still printing)",
        short: "",
        keys: &[(Key::ch('r'), PagerAct::Reload)],
    },
    Binding {
        label: "q / Esc",
        does: "close the log",
        short: "close",
        keys: &[
            (Key::ch('q'), PagerAct::Close),
            (Key::code(KeyCode::Esc), PagerAct::Close),
        ],
    },
];

/// What the person meant in the pager.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum PagerIntent {
    Close,
    /// Read the file again (the app asks the event loop).
    Reload,
    Say(Say),
}

#[derive(Debug, Clone, PartialEq)]
enum Content {
    Reading,
    Failed(String),
    Ready {
        text: Arc<LogText>,
        /// Lines the tape says came from stderr.
        stderr: Vec<bool>,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct Pager {
    /// "run 3 · parse_line it 2".
    title: String,
    path: PathBuf,
    /// Byte ranges of stderr output the tape saw (`log_reader::stderr_ranges`).
    stderr_ranges: Vec<(u64, u64)>,
    content: Content,
    /// The first line shown.
    top: usize,
    /// Columns scrolled sideways (wrap off).
    left: usize,
    wrap: bool,
    search: Option<String>,
    input: Option<String>,
    /// The line the last search landed on.
    hit: Option<usize>,
}

impl Pager {
    /// A pager waiting for the log at `path` to be read.
    pub(crate) fn open(title: String, path: PathBuf, stderr_ranges: Vec<(u64, u64)>) -> Pager {
        Pager {
            title,
            path,
            stderr_ranges,
            content: Content::Reading,
            top: 0,
            left: 0,
            wrap: false,
            search: None,
            input: None,
            hit: None,
        }
    }

    /// The keys the status bar names while the pager is open.
    pub(crate) fn status_rows() -> Vec<Row> {
        super::status_rows(KEYS, |a| matches!(a, PagerAct::Scroll(_) | PagerAct::Top))
    }

    pub(crate) fn path(&self) -> &std::path::Path {
        &self.path
    }

    /// The line numbers shown first (0-based), for tests.
    pub fn top(&self) -> usize {
        self.top
    }

    /// The log arrived (or could not be read).
    pub(crate) fn loaded(&mut self, result: Result<Arc<LogText>, String>) {
        self.content = match result {
            Ok(text) => {
                let stderr = stderr_lines(&text, &self.stderr_ranges);
                self.top = self.top.min(text.lines.len().saturating_sub(1));
                Content::Ready { text, stderr }
            }
            Err(e) => Content::Failed(e),
        };
    }

    fn lines(&self) -> &[String] {
        match &self.content {
            Content::Ready { text, .. } => &text.lines,
            Content::Reading | Content::Failed(_) => &[],
        }
    }

    /// Rows of text on a screen `height` rows high (status bar, borders, footer).
    fn rows(height: u16) -> usize {
        usize::from(height.saturating_sub(5)).max(1)
    }

    pub(crate) fn on_key(&mut self, key: KeyEvent, screen: Rect) -> Handled<PagerIntent> {
        if self.input.is_some() {
            if let Some(q) = search_input_key(&mut self.input, &key) {
                self.search = (!q.is_empty()).then_some(q);
                return self.find(true, true, screen.height);
            }
            return Handled::Done;
        }
        // Every other key stays in the pager (it covers the workbench).
        let Some(act) = keymap::lookup(KEYS, &key) else {
            return Handled::Done;
        };
        let rows = Self::rows(screen.height);
        let last = self.lines().len().saturating_sub(rows);
        match act {
            PagerAct::Scroll(Scroll::Up) => self.top = self.top.saturating_sub(1),
            PagerAct::Scroll(Scroll::Down) => self.top = (self.top + 1).min(last),
            PagerAct::Scroll(Scroll::PageUp) => {
                self.top = self.top.saturating_sub(rows.max(page(screen.height)))
            }
            PagerAct::Scroll(Scroll::PageDown) => {
                self.top = (self.top + rows.max(page(screen.height))).min(last)
            }
            PagerAct::Top => self.top = 0,
            PagerAct::Bottom => self.top = last,
            PagerAct::Search => self.input = Some(String::new()),
            PagerAct::NextMatch => return self.find(true, false, screen.height),
            PagerAct::PrevMatch => return self.find(false, false, screen.height),
            PagerAct::FirstStderr => return self.first_stderr(),
            PagerAct::Wrap => {
                self.wrap = !self.wrap;
                self.left = 0;
            }
            PagerAct::Left => self.left = self.left.saturating_sub(STEP),
            PagerAct::Right if !self.wrap => {
                let widest = self.lines().iter().map(|l| l.chars().count()).max();
                let room =
                    usize::from(screen.width.saturating_sub(2)).saturating_sub(self.gutter_width());
                self.left = (self.left + STEP).min(max_left(widest.unwrap_or(0), room));
            }
            PagerAct::Right => {}
            PagerAct::Reload => return Handled::Intent(PagerIntent::Reload),
            PagerAct::Close => return Handled::Intent(PagerIntent::Close),
        }
        Handled::Done
    }

    fn first_stderr(&mut self) -> Handled<PagerIntent> {
        let Content::Ready { stderr, .. } = &self.content else {
            return Handled::Done;
        };
        match stderr.iter().position(|e| *e) {
            Some(i) => {
                self.top = i.saturating_sub(2);
                self.hit = Some(i);
                Handled::Done
            }
            None => Handled::Intent(PagerIntent::Say(Say(
                NoticeLevel::Info,
                "no stderr in the output the tape recorded (search with / for the rest)".into(),
            ))),
        }
    }

    /// Move to the next (or previous) line holding the search.
    fn find(&mut self, forward: bool, fresh: bool, height: u16) -> Handled<PagerIntent> {
        let Some(q) = self.search.clone() else {
            return Handled::Intent(PagerIntent::Say(Say(
                NoticeLevel::Info,
                "no search: press / to search".into(),
            )));
        };
        let lines = self.lines();
        let n = lines.len();
        if n == 0 {
            return Handled::Done;
        }
        let from = match (self.hit, fresh) {
            (Some(h), false) => h,
            _ => self.top.wrapping_sub(1).min(n - 1),
        };
        let hit = |i: &usize| contains_ignore_case(&lines[*i], &q);
        let found = if forward {
            (from + 1..n).chain(0..=from.min(n - 1)).find(hit)
        } else {
            (0..from).rev().chain((from..n).rev()).find(hit)
        };
        match found {
            Some(i) => {
                self.hit = Some(i);
                let rows = Self::rows(height);
                if i < self.top || i >= self.top + rows {
                    self.top = i.saturating_sub(rows / 3).min(n.saturating_sub(rows));
                }
                Handled::Done
            }
            None => Handled::Intent(PagerIntent::Say(Say(
                NoticeLevel::Info,
                format!("`{q}` is not in the log"),
            ))),
        }
    }

    fn gutter_width(&self) -> usize {
        self.lines().len().max(1).to_string().len() + 3
    }

    pub(crate) fn render(&self, theme: &Theme, frame: &mut Frame) {
        let t = theme;
        let full = frame.area();
        // The status bar stays below.
        let area = Rect {
            height: full.height.saturating_sub(2),
            ..full
        };
        frame.render_widget(Clear, area);
        let block = self.block(t);
        let inner = block.inner(area);
        frame.render_widget(block, area);
        let [body, foot] =
            Layout::vertical([Constraint::Fill(1), Constraint::Length(1)]).areas(inner);
        let (text, stderr) = match &self.content {
            Content::Reading => {
                frame.render_widget(
                    Paragraph::new(Line::styled("reading the log…", t.dim)),
                    body,
                );
                return;
            }
            Content::Failed(e) => {
                frame.render_widget(
                    Paragraph::new(
                        wrap(e, usize::from(body.width))
                            .into_iter()
                            .map(|l| Line::styled(l, t.error))
                            .collect::<Vec<_>>(),
                    ),
                    body,
                );
                return;
            }
            Content::Ready { text, stderr } => (text, stderr),
        };
        frame.render_widget(Paragraph::new(self.log_rows(t, text, stderr, body)), body);
        frame.render_widget(Paragraph::new(self.footer(t, text)), foot);
    }

    /// The frame: which run's log, its size, its path at the bottom.
    fn block<'a>(&self, t: &Theme) -> Block<'a> {
        let size = match &self.content {
            Content::Ready { text, .. } => {
                format!(" · {} lines · {}", text.lines.len(), bytes(text.bytes))
            }
            Content::Reading | Content::Failed(_) => String::new(),
        };
        Block::bordered()
            .border_style(t.border_focused)
            .title(Line::from(vec![
                Span::styled(" Log ", t.title),
                Span::styled(format!("{}{size} ", self.title), t.dim),
            ]))
            .title_bottom(Line::styled(format!(" {} ", self.path.display()), t.dim))
    }

    /// The log's rows that fit `body` from `top`: each line numbered,
    /// stderr marked, the search's matches lit, wrapped or cut at the edge.
    fn log_rows<'a>(
        &self,
        t: &Theme,
        text: &LogText,
        stderr: &[bool],
        body: Rect,
    ) -> Vec<Line<'a>> {
        let width = usize::from(body.width);
        let digits = text.lines.len().max(1).to_string().len();
        let query = self.search.as_deref();
        let mut rows: Vec<Line> = Vec::new();
        for (i, line) in text.lines.iter().enumerate().skip(self.top) {
            if rows.len() >= usize::from(body.height) {
                break;
            }
            let err = stderr.get(i).copied().unwrap_or(false);
            let matched = query.is_some_and(|q| contains_ignore_case(line, q));
            let style = match (matched, err) {
                (true, _) => t.search_match,
                (false, true) => t.stderr,
                (false, false) => t.text,
            };
            let number = Span::styled(
                format!("{:>digits$} ", i + 1),
                if self.hit == Some(i) { t.accent } else { t.dim },
            );
            let bar = if err {
                Span::styled("┃ ", t.stderr)
            } else {
                Span::raw("  ")
            };
            if self.wrap {
                let room = width.saturating_sub(digits + 3).max(1);
                for (k, piece) in hard_wrap(line, room).into_iter().enumerate() {
                    let gutter = if k == 0 {
                        number.clone()
                    } else {
                        Span::raw(" ".repeat(digits + 1))
                    };
                    rows.push(Line::from(vec![
                        gutter,
                        bar.clone(),
                        Span::styled(piece, style),
                    ]));
                }
            } else {
                let l = Line::from(vec![number, bar, Span::styled(line.clone(), style)]);
                rows.push(clip_line(l, 2, self.left, width));
            }
        }
        rows.truncate(usize::from(body.height));
        rows
    }

    fn footer<'a>(&self, t: &Theme, text: &LogText) -> Line<'a> {
        if let Some(input) = &self.input {
            return Line::from(vec![
                Span::styled("/", t.accent),
                Span::styled(input.clone(), t.text),
                Span::styled(format!("▌ {}", keymap::hint_line(SEARCH_INPUT)), t.dim),
            ]);
        }
        let mut spans = vec![Span::styled(
            format!(
                "line {} of {}{}{} ",
                (self.top + 1).min(text.lines.len()),
                text.lines.len(),
                if self.wrap { " · wrap" } else { "" },
                if self.left > 0 {
                    format!(" · col {}", self.left + 1)
                } else {
                    String::new()
                },
            ),
            t.accent,
        )];
        if let (Some(q), Some(h)) = (&self.search, self.hit) {
            spans.push(Span::styled(format!("· /{q} at line {} ", h + 1), t.text));
        }
        if text.unread > 0 {
            spans.push(Span::styled(
                format!("· the last {} are not shown ", bytes(text.unread)),
                t.warning,
            ));
        }
        spans.push(Span::styled(
            format!("· {}", keymap::hint_line(KEYS)),
            t.dim,
        ));
        Line::from(spans)
    }
}

/// Case-insensitive `contains`, without allocating for an ASCII query.
fn contains_ignore_case(text: &str, query: &str) -> bool {
    if query.is_ascii() {
        let (t, q) = (text.as_bytes(), query.as_bytes());
        q.is_empty() || t.windows(q.len()).any(|w| w.eq_ignore_ascii_case(q))
    } else {
        text.to_lowercase().contains(&query.to_lowercase())
    }
}

impl super::popup::PopupView for Pager {
    fn render(&self, cx: &super::popup::PopupCtx, frame: &mut Frame) {
        Self::render(self, cx.theme, frame);
    }
    fn footer(&self) -> Option<(&'static str, Vec<Row>)> {
        Some(("Log", Self::status_rows()))
    }
}
