//! The workflow graph: the planned functions by level (a node's dependencies
//! are on earlier levels), each with its live state and iteration count. On
//! the welcome screen, the bundled demos in its place. It owns the selection:
//! the node the code and output panes show, and whether the person pinned it
//! or it follows the engine.

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::{Ctx, Handled, status_style, status_symbol, wrap};
use crate::keymap::{self, Binding, Key, Row};
use codeloop_session::outcome::{self, Outcome};
use codeloop_session::{Dag, NodeStatus, State};

/// A bundled demo as the welcome screen lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct DemoEntry {
    pub name: String,
    pub title: String,
}

/// What the welcome screen shows in the graph's place.
pub struct Welcome<'a> {
    pub model_label: &'a str,
    pub demos: &'a [DemoEntry],
    /// The recent sessions' lines, drawn under the demos.
    pub sessions: Vec<Line<'static>>,
    /// Which of `sessions` is the selected one (the list has the keys), so
    /// a welcome taller than its pane scrolls to show it.
    pub selected_session: Option<usize>,
    /// The sandbox new sessions run in, in a few words.
    pub sandbox: String,
    /// What the keys of the welcome screen do, shown where there is room.
    pub keys: Vec<Row>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GraphAct {
    Demo(usize),
    Up,
    Down,
    OpenCode,
    Follow,
}

/// What the person meant in the graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GraphIntent {
    /// A node was chosen (`changed`: another one than before).
    Selected {
        changed: bool,
    },
    OpenCode,
    /// Follow the engine's activity again.
    Follow,
    /// Run the bundled demo at this index.
    Demo(usize),
}

const DEMO_KEYS: &[(Key, GraphAct)] = &[
    (Key::ch('1'), GraphAct::Demo(0)),
    (Key::ch('2'), GraphAct::Demo(1)),
    (Key::ch('3'), GraphAct::Demo(2)),
    (Key::ch('4'), GraphAct::Demo(3)),
    (Key::ch('5'), GraphAct::Demo(4)),
    (Key::ch('6'), GraphAct::Demo(5)),
    (Key::ch('7'), GraphAct::Demo(6)),
    (Key::ch('8'), GraphAct::Demo(7)),
    (Key::ch('9'), GraphAct::Demo(8)),
];

const NODES: [Binding<GraphAct>; 3] = [
    Binding {
        label: "↑ / ↓",
        does: "select a node (its code and output show)",
        short: "select a node",
        keys: &[
            (Key::code(KeyCode::Up), GraphAct::Up),
            (Key::ch('k'), GraphAct::Up),
            (Key::code(KeyCode::Down), GraphAct::Down),
            (Key::ch('j'), GraphAct::Down),
        ],
    },
    Binding {
        label: "Enter",
        does: "go to its code",
        short: "go to its code",
        keys: &[(Key::code(KeyCode::Enter), GraphAct::OpenCode)],
    },
    Binding {
        label: "l",
        does: "follow the engine's activity again (live)",
        short: "follow the engine again",
        keys: &[(Key::ch('l'), GraphAct::Follow)],
    },
];

/// During and after a session.
pub const SESSION: &[Binding<GraphAct>] = &NODES;

/// On the welcome screen: the demos first.
pub const WELCOME: &[Binding<GraphAct>] = &[
    Binding {
        label: "1-5",
        does: "run a bundled demo",
        short: "run a bundled demo",
        keys: DEMO_KEYS,
    },
    NODES[0],
    NODES[1],
    NODES[2],
];

/// One row of the graph pane.
#[derive(Debug, Clone, PartialEq)]
pub enum RowKind {
    Level(usize),
    Node(String),
}

#[derive(Debug, Default)]
pub struct GraphPane {
    selected: Option<String>,
    /// The person chose a node: stop following the engine's activity.
    pinned: bool,
}

impl GraphPane {
    pub fn keymap(welcome: bool) -> &'static [Binding<GraphAct>] {
        if welcome { WELCOME } else { SESSION }
    }

    pub fn help(welcome: bool) -> Vec<Row> {
        keymap::rows(Self::keymap(welcome)).collect()
    }

    pub fn selected(&self) -> Option<&str> {
        self.selected.as_deref()
    }

    pub fn pinned(&self) -> bool {
        self.pinned
    }

    /// Choose a node (the person did): it stays chosen while the engine moves on.
    pub fn select(&mut self, name: String) -> GraphIntent {
        let changed = self.selected.as_deref() != Some(&name);
        self.selected = Some(name);
        self.pinned = true;
        GraphIntent::Selected { changed }
    }

    /// The cursor moved: show the engine's node unless the person chose one.
    pub fn follow(&mut self, active: Option<&str>) {
        if !self.pinned || self.selected.is_none() {
            self.selected = active.map(str::to_string);
        }
    }

    /// Follow the engine again.
    pub fn unpin(&mut self, active: Option<&str>) {
        self.pinned = false;
        self.selected = active.map(str::to_string);
    }

    pub fn on_key(&mut self, key: KeyEvent, state: &State, welcome: bool) -> Handled<GraphIntent> {
        let Some(act) = keymap::lookup(Self::keymap(welcome), &key) else {
            return Handled::NotMine;
        };
        let names: Vec<String> = state
            .nodes_in_order()
            .map(|n| n.spec.name.clone())
            .collect();
        let pos = self
            .selected
            .as_ref()
            .and_then(|s| names.iter().position(|n| n == s));
        let pick = match act {
            GraphAct::Demo(i) => return Handled::Intent(GraphIntent::Demo(i)),
            GraphAct::OpenCode => return Handled::Intent(GraphIntent::OpenCode),
            GraphAct::Follow => return Handled::Intent(GraphIntent::Follow),
            GraphAct::Down => pos
                .map(|p| (p + 1).min(names.len().saturating_sub(1)))
                .unwrap_or(0),
            GraphAct::Up => pos.map(|p| p.saturating_sub(1)).unwrap_or(0),
        };
        match names.get(pick) {
            Some(name) => Handled::Intent(self.select(name.clone())),
            None => Handled::Done,
        }
    }

    /// A click on `row` (0 = the first line inside the frame).
    pub fn on_click(&mut self, state: &State, row: usize, pane_height: u16) -> Option<GraphIntent> {
        let skip = self.scroll(state, pane_height);
        match rows(state).into_iter().nth(row + skip)? {
            RowKind::Node(n) => Some(self.select(n)),
            RowKind::Level(_) => None,
        }
    }

    /// Rows scrolled off the top so the selected node stays in view.
    fn scroll(&self, state: &State, pane_height: u16) -> usize {
        let height = usize::from(pane_height.saturating_sub(2));
        let selected = rows(state)
            .iter()
            .position(
                |r| matches!(r, RowKind::Node(n) if self.selected.as_deref() == Some(n.as_str())),
            )
            .unwrap_or(0);
        selected.saturating_sub(height.saturating_sub(1))
    }

    pub fn render(&self, ctx: &Ctx, welcome: Option<&Welcome>, area: Rect, frame: &mut Frame) {
        let t = ctx.theme;
        let s = ctx.state;
        let mut detail = String::new();
        if let Some(w) = welcome {
            render_welcome(ctx, w, area, frame);
            return;
        }
        let mut lines: Vec<Line>;
        if s.specs.is_empty() {
            let width = usize::from(area.width.saturating_sub(2));
            let height = usize::from(area.height.saturating_sub(2));
            lines = super::plan_stream::before_plan_lines(t, s, width, height);
        } else {
            let passed = s
                .nodes
                .values()
                .filter(|n| n.status == NodeStatus::Passed)
                .count();
            detail = format!("{passed}/{} passed", s.nodes.len());
            lines = self.node_lines(ctx, usize::from(area.width.saturating_sub(2)));
            let outcome = Outcome::of(s);
            if let Some(f) = s.finished.as_ref().filter(|_| outcome.ended()) {
                lines.push(Line::raw(""));
                let text = format!("{} {}", outcome.symbol(), outcome::line(s));
                let width = usize::from(area.width.saturating_sub(2));
                let style = super::outcome_style(t, outcome);
                for piece in wrap(&text, width) {
                    lines.push(Line::styled(piece, style));
                }
                // Where the results are: the session folder, then its files.
                let program = format!("{}.py", codeloop_engine::runs::PROGRAM);
                let out = f.output_dir.as_deref().map(std::path::Path::new);
                let (base, out) = match (ctx.session_dir, out) {
                    (Some(base), Some(out)) => {
                        (Some(base), out.strip_prefix(base).ok().or(Some(out)))
                    }
                    (base, out) => (base, out),
                };
                let mut files: Vec<String> = Vec::new();
                if let Some(out) = out {
                    for name in [program.as_str(), "test_*.py", "report.md"] {
                        files.push(out.join(name).display().to_string());
                    }
                }
                if let Some(base) = base {
                    files.push("tape.jsonl".into());
                    for piece in wrap(&format!("in {}:", base.display()), width) {
                        lines.push(Line::styled(piece, t.dim));
                    }
                }
                if !files.is_empty() {
                    for piece in wrap(&files.join(" · "), width) {
                        lines.push(Line::styled(piece, t.text));
                    }
                }
            }
        }
        let scroll = self.scroll(s, area.height);
        let p = Paragraph::new(lines).scroll((scroll as u16, 0));
        frame.render_widget(p.block(ctx.block(ctx.title("Workflow", detail))), area);
    }

    /// The node rows, `width` columns wide inside the frame.
    fn node_lines<'a>(&self, ctx: &Ctx<'a>, width: usize) -> Vec<Line<'a>> {
        let t = ctx.theme;
        let s = ctx.state;
        let name_w = s
            .specs
            .iter()
            .map(|sp| sp.name.len())
            .max()
            .unwrap_or(4)
            .min(28);
        let mut lines = Vec::new();
        for row in rows(s) {
            match row {
                RowKind::Level(i) => lines.push(Line::styled(format!("level {}", i + 1), t.dim)),
                RowKind::Node(name) => {
                    let Some(n) = s.nodes.get(&name) else {
                        continue;
                    };
                    let selected = self.selected.as_deref() == Some(name.as_str());
                    let st = status_style(t, n.status);
                    let differs = n
                        .last_run
                        .and_then(|id| ctx.reruns.get(&id))
                        .is_some_and(|m| m.differs());
                    let status = Span::styled(format!(" {:<10}", n.status.label()), st);
                    let iteration = Span::styled(
                        match n.iteration() {
                            0 => "     ".to_string(),
                            i => format!(" it {i:<2}"),
                        },
                        t.dim,
                    );
                    // Where the row is cut (80 columns), the iteration comes
                    // before the status word (its symbol says it too).
                    let (second, third) = if 4 + name_w + 11 + 5 > width {
                        (iteration, status)
                    } else {
                        (status, iteration)
                    };
                    let mut spans = vec![
                        Span::raw(if selected { "›" } else { " " }),
                        Span::styled(format!(" {} ", status_symbol(n.status)), st),
                        Span::styled(
                            format!("{name:<name_w$}"),
                            if selected { t.title } else { t.text },
                        ),
                        second,
                        third,
                    ];
                    if differs {
                        spans.push(Span::styled(" ≠live", t.warning));
                    }
                    // Its first code was voted on (`--candidates N`).
                    if let Some(c) = &n.candidates {
                        spans.push(Span::styled(
                            format!(" vote {}→#{}", c.candidates.len(), c.chosen + 1),
                            t.accent,
                        ));
                    }
                    if !n.spec.depends_on.is_empty() {
                        spans.push(Span::styled(
                            format!(" ← {}", n.spec.depends_on.join(", ")),
                            t.dim,
                        ));
                    }
                    let mut line = Line::from(spans);
                    if selected {
                        line = line.style(t.selection);
                    }
                    lines.push(line);
                }
            }
        }
        lines
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

/// The rows in drawing order (shared with mouse hit tests).
pub fn rows(state: &State) -> Vec<RowKind> {
    let specs = &state.specs;
    if specs.is_empty() {
        return Vec::new();
    }
    let levels = match Dag::new(specs.clone()) {
        Ok(dag) => dag.levels(),
        Err(_) => vec![specs.iter().map(|s| s.name.clone()).collect()],
    };
    let mut rows = Vec::new();
    for (i, level) in levels.into_iter().enumerate() {
        rows.push(RowKind::Level(i));
        rows.extend(level.into_iter().map(RowKind::Node));
    }
    rows
}
