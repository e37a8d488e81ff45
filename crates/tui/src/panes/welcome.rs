//! The welcome screen, in the workflow's place before a session starts:
//! the model a new session starts on, the bundled demos, the recent
//! sessions (`sessions.rs`, whose selection it owns), the sandbox and the
//! keys where there is room.

use crossterm::event::KeyEvent;
use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::graph::{self, GraphAct};
use super::sessions::SessionList;
use super::{Ctx, Handled, Intent, Pane, Place, Screen, wrap};
use crate::keymap::{self, Binding, Row};

/// A bundled demo as the welcome screen lists it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DemoEntry {
    pub name: String,
    pub title: String,
    /// The demo's own plan (its replies answer these functions): `P`
    /// after its plan was skipped starts from it.
    pub plan: Vec<codeloop_session::FunctionSpec>,
}

/// What the welcome screen shows in the graph's place.
pub(crate) struct Welcome<'a> {
    pub(crate) model_label: &'a str,
    pub(crate) demos: &'a [DemoEntry],
    /// The recent sessions' lines, drawn under the demos.
    pub(crate) sessions: Vec<Line<'static>>,
    /// Which of `sessions` is the selected one (the list has the keys), so
    /// a welcome taller than its pane scrolls to show it.
    pub(crate) selected_session: Option<usize>,
    /// The sandbox new sessions run in, in a few words.
    pub(crate) sandbox: String,
    /// What the keys of the welcome screen do, shown where there is room.
    pub(crate) keys: Vec<Row>,
}

/// Its keys: the demos first, then the workflow's node keys, which it
/// takes in the workflow's place (there are no nodes yet: they do nothing).
pub const KEYS: &[Binding<GraphAct>] = &[Binding {
    label: "1-5",
    does: "run a bundled demo",
    short: "run a bundled demo",
    keys: graph::DEMO_KEYS,
}];

/// The graph's node keys, which mean nothing here: taken, so they do not
/// fall through to the app, and not offered.
const QUIET: [Binding<GraphAct>; 3] = graph::NODES;

#[derive(Debug, Default)]
pub struct WelcomePane {
    sessions: SessionList,
}

impl WelcomePane {
    /// What it shows, from the context.
    fn welcome<'a>(&self, ctx: &Ctx<'a>) -> Welcome<'a> {
        let around = ctx.around;
        let sandbox = match (around.sandbox_warning, around.sandbox_layers) {
            (Some(warning), _) => warning.to_string(),
            (None, []) => "being probed…".to_string(),
            (None, layers) => format!("{} (full)", layers.join(" + ")),
        };
        let mut keys: Vec<Row> = keymap::rows(keymap::WELCOME).collect();
        keys.extend(keymap::rows(&KEYS[..1]));
        keys.extend(
            keymap::STEER
                .iter()
                .filter(|b| {
                    b.keys
                        .iter()
                        .any(|(_, a)| *a == keymap::GlobalAct::Steer(keymap::SteerAct::StepMode))
                })
                .map(Binding::row),
        );
        keys.extend(keymap::rows(keymap::COMMON));
        Welcome {
            model_label: around.model_label,
            demos: around.demos,
            sessions: self.sessions.lines(ctx, around.sessions),
            selected_session: self.sessions.selected_line(ctx, around.sessions),
            sandbox,
            keys,
        }
    }
}

impl Pane for WelcomePane {
    /// In the workflow's place, under its name.
    fn title(&self) -> &'static str {
        "Workflow"
    }

    fn place(&self, ctx: &Ctx, _columns: [Rect; 2]) -> Option<Place> {
        match ctx.screen {
            Screen::Welcome => Place::right(Constraint::Fill(1)),
            Screen::BeforePlan | Screen::Session => None,
        }
    }

    fn keymap(&self, ctx: &Ctx) -> Vec<Row> {
        let mut rows = Vec::new();
        if !ctx.around.sessions.is_empty() {
            rows.extend(SessionList::help());
        }
        rows.extend(keymap::rows(KEYS));
        rows
    }

    /// The session list's keys first, then the demos'.
    fn on_key(&mut self, key: KeyEvent, ctx: &Ctx) -> Handled<Intent> {
        match self.sessions.on_key(key, ctx.around.sessions) {
            Handled::Intent(intent) => return Handled::Intent(Intent::Session(intent)),
            Handled::Done => return Handled::Done,
            Handled::NotMine => {}
        }
        match keymap::lookup(KEYS, &key).or_else(|| keymap::lookup(&QUIET, &key)) {
            Some(GraphAct::Demo(i)) => Handled::Intent(Intent::Demo(i)),
            Some(GraphAct::Up | GraphAct::Down | GraphAct::OpenCode | GraphAct::Follow) => {
                Handled::Done
            }
            None => Handled::NotMine,
        }
    }

    fn render(&self, ctx: &Ctx, area: Rect, frame: &mut Frame) {
        render_welcome(ctx, &self.welcome(ctx), area, frame);
    }
}

/// `line` in one row `width` wide: its span `cut` (a task, a title) is
/// cut short with an ellipsis so what follows it still shows (a few words
/// of it at least; then the line's end is cut).
fn one_row(line: &Line<'static>, width: usize, cut: usize) -> Line<'static> {
    use unicode_width::UnicodeWidthChar;
    if line.width() <= width || cut >= line.spans.len() {
        return line.clone();
    }
    let others: usize = line
        .spans
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != cut)
        .map(|(_, s)| s.width())
        .sum();
    let keep = |text: &str, mut left: usize| -> String {
        let mut kept = String::new();
        for c in text.chars() {
            let w = c.width().unwrap_or(0);
            if w > left {
                break;
            }
            left -= w;
            kept.push(c);
        }
        kept
    };
    // A few words of it stay; if the rest is still too wide, its end is cut.
    let mut spans = line.spans.clone();
    let room = match width.saturating_sub(others + 1) {
        room if room >= 12 => room,
        _ => 24,
    };
    let kept = keep(&spans[cut].content, room);
    spans[cut].content = format!("{}…", kept.trim_end()).into();
    let cut_line = Line::from(spans.clone());
    if cut_line.width() <= width {
        return cut_line.style(line.style);
    }
    let mut left = width.saturating_sub(1);
    let mut ended = Vec::new();
    for span in spans {
        let kept = keep(&span.content, left);
        left = left.saturating_sub(unicode_width::UnicodeWidthStr::width(kept.as_str()));
        let whole = kept.len() == span.content.len();
        ended.push(Span::styled(kept, span.style));
        if !whole {
            ended.push(Span::raw("…"));
            break;
        }
    }
    Line::from(ended).style(line.style)
}

/// The welcome's lines, and which of them is the selected session. A
/// session is one row; `compact` puts each demo on one row too (a pane
/// too low for the whole welcome keeps every demo and the list in view).
fn welcome_lines<'a>(
    ctx: &Ctx<'a>,
    w: &Welcome,
    area: Rect,
    compact: bool,
) -> (Vec<Line<'a>>, Option<usize>) {
    let t = ctx.theme;
    let mut lines = vec![Line::styled(format!("Model: {}", w.model_label), t.dim)];
    if w.demos.is_empty() {
        lines.push(Line::styled("No bundled demos in this build.", t.dim));
    } else {
        lines.push(Line::styled(
            "Run a demo (a real failure, caught by a real run, repaired):",
            t.text,
        ));
        let width = usize::from(area.width.saturating_sub(2));
        for (i, d) in w.demos.iter().enumerate().take(9) {
            let mut row = vec![
                Span::styled(format!("  {}  ", i + 1), t.accent),
                Span::styled(d.name.clone(), t.title),
            ];
            if compact {
                row.push(Span::styled(format!("  {}", d.title), t.dim));
                lines.push(one_row(&Line::from(row), width, 2));
                continue;
            }
            lines.push(Line::from(row));
            for piece in wrap(&d.title, width.saturating_sub(5)) {
                lines.push(Line::styled(format!("     {piece}"), t.text));
            }
        }
    }
    let mut selected = None;
    if !w.sessions.is_empty() {
        lines.push(Line::raw(""));
        selected = w.selected_session.map(|i| lines.len() + i);
        let width = usize::from(area.width.saturating_sub(2));
        for (i, l) in w.sessions.iter().enumerate() {
            // The heading wraps; each session is one row.
            lines.push(if i == 0 {
                l.clone()
            } else {
                one_row(l, width, 2)
            });
        }
    }
    lines.push(Line::raw(""));
    lines.push(Line::styled(
        "Or press i, write a task in the Task pane, and Ctrl-S.",
        t.dim,
    ));
    (lines, selected)
}

/// What the welcome adds where there is room: the sandbox and the keys.
fn welcome_more<'a>(ctx: &Ctx<'a>, w: &Welcome) -> Vec<Line<'a>> {
    let t = ctx.theme;
    let mut lines = vec![
        Line::raw(""),
        Line::from(vec![
            Span::styled("Sandbox: ", t.dim),
            Span::styled(w.sandbox.clone(), t.text),
        ]),
        Line::raw(""),
        Line::styled("Keys:", t.text),
    ];
    let label_w = w
        .keys
        .iter()
        .map(|r| r.label.chars().count())
        .max()
        .unwrap_or(0);
    for row in &w.keys {
        lines.push(Line::from(vec![
            Span::styled(format!("  {:<label_w$}  ", row.label), t.accent),
            Span::styled(row.does, t.text),
        ]));
    }
    lines
}

/// The welcome in the graph's place: the model a new session would start
/// on kept at the top, the rest scrolled to show the selected session
/// (80x24 has no room for the sessions under the demos).
fn render_welcome(ctx: &Ctx, w: &Welcome, area: Rect, frame: &mut Frame) {
    use ratatui::layout::{Constraint, Layout};
    use ratatui::widgets::Wrap;
    let block = ctx.block(ctx.title("Workflow", String::new()));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let width = usize::from(inner.width);
    let rows = |lines: &[Line]| lines.iter().map(|l| wrapped_rows(l, width)).sum::<usize>();
    let (mut lines, mut selected) = welcome_lines(ctx, w, area, false);
    if rows(&lines) > usize::from(inner.height) {
        (lines, selected) = welcome_lines(ctx, w, area, true);
    } else {
        // Room to spare (a large screen): the sandbox and what each key does.
        let more = welcome_more(ctx, w);
        if rows(&lines) + rows(&more) <= usize::from(inner.height) {
            lines.extend(more);
        }
    }
    let model = lines.remove(0);
    let model_rows = u16::try_from(wrapped_rows(&model, width)).unwrap_or(u16::MAX);
    let [top, rest] = Layout::vertical([
        Constraint::Length(model_rows.min(inner.height)),
        Constraint::Fill(1),
    ])
    .areas(inner);
    let wrapped = Wrap { trim: false };
    frame.render_widget(Paragraph::new(model).wrap(wrapped), top);
    let selected = selected.and_then(|i| i.checked_sub(1));
    let scroll = scroll_to_show(&lines, selected, width, usize::from(rest.height));
    let scroll = u16::try_from(scroll).unwrap_or(u16::MAX);
    frame.render_widget(
        Paragraph::new(lines).wrap(wrapped).scroll((scroll, 0)),
        rest,
    );
}

/// Rows a line takes `width` columns wide, counted as `wrap` breaks its
/// text, which is how the paragraph's word wrap breaks it.
fn wrapped_rows(line: &Line, width: usize) -> usize {
    let text: String = line.spans.iter().map(|s| s.content.as_ref()).collect();
    wrap(&text, width).len().max(1)
}

/// Rows to scroll wrapped `lines` by so the `selected` one (and the row
/// after it) shows in `visible` rows.
fn scroll_to_show(lines: &[Line], selected: Option<usize>, width: usize, visible: usize) -> usize {
    let Some(selected) = selected else {
        return 0;
    };
    let end: usize = lines
        .iter()
        .take(selected + 1)
        .map(|l| wrapped_rows(l, width))
        .sum();
    let total: usize = lines.iter().map(|l| wrapped_rows(l, width)).sum();
    (end + 1)
        .saturating_sub(visible)
        .min(total.saturating_sub(visible))
}
