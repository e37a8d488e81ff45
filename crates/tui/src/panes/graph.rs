//! The workflow graph: the planned functions by level (a node's dependencies
//! are on earlier levels), each with its live state and iteration count
//! (before a plan, `plan_stream.rs` in its place; before a session, the
//! welcome pane, `welcome.rs`). It owns the selection:
//! the node the code and output panes show, and whether the person pinned it
//! or it follows the engine.

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use ratatui::layout::{Constraint, Position};

use super::{Ctx, Handled, Intent, Pane, Place, Screen, status_style, status_symbol, wrap};
use crate::keymap::{self, Binding, Key, Row};
use codeloop_session::outcome::{self, Outcome};
use codeloop_session::{Dag, NodeStatus, State};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GraphAct {
    Demo(usize),
    Up,
    Down,
    OpenCode,
    Follow,
}

pub(crate) const DEMO_KEYS: &[(Key, GraphAct)] = &[
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

pub(crate) const NODES: [Binding<GraphAct>; 3] = [
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
pub(crate) const SESSION: &[Binding<GraphAct>] = &NODES;

/// One row of the graph pane.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum RowKind {
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
    pub(crate) fn selected(&self) -> Option<&str> {
        self.selected.as_deref()
    }

    pub fn pinned(&self) -> bool {
        self.pinned
    }

    /// Choose a node (the person did): it stays chosen while the engine moves on.
    pub(crate) fn select(&mut self, name: String) -> Intent {
        let changed = self.selected.as_deref() != Some(&name);
        self.selected = Some(name);
        self.pinned = true;
        Intent::Selected { changed }
    }

    /// The cursor moved: show the engine's node unless the person chose one.
    pub(crate) fn follow(&mut self, active: Option<&str>) {
        if !self.pinned || self.selected.is_none() {
            self.selected = active.map(str::to_string);
        }
    }

    /// Follow the engine again.
    pub(crate) fn unpin(&mut self, active: Option<&str>) {
        self.pinned = false;
        self.selected = active.map(str::to_string);
    }

    /// A click on `row` (0 = the first line inside the frame).
    pub(crate) fn on_click_row(
        &mut self,
        state: &State,
        row: usize,
        pane_height: u16,
    ) -> Option<Intent> {
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

    fn draw(&self, ctx: &Ctx, area: Rect, frame: &mut Frame) {
        let t = ctx.theme;
        let s = ctx.state;
        let mut detail = String::new();
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
                let program = format!("{}.py", codeloop_session::PROGRAM);
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
                    // The engine waits before this node's step: it is
                    // paused, whatever it was doing before.
                    let paused = s.paused.as_ref().and_then(|p| p.node()) == Some(name.as_str());
                    let st = if paused {
                        t.warning
                    } else {
                        status_style(t, n.status)
                    };
                    let differs = n
                        .last_run
                        .and_then(|id| ctx.reruns.get(&id))
                        .is_some_and(|m| m.differs());
                    let label = if paused { "paused" } else { n.status.label() };
                    let status = Span::styled(format!(" {label:<10}"), st);
                    let iteration = Span::styled(
                        match n.iteration() {
                            0 => "     ".to_string(),
                            i => format!(" it {i:<2}"),
                        },
                        t.dim,
                    );
                    // Where the row is short (80 columns), the iteration comes
                    // before the status word (its symbol says it too), which
                    // is left out rather than cut.
                    let (second, third) = if 4 + name_w + 11 + 5 > width {
                        // The marker (1), the symbol (3), the name, the
                        // iteration (6), then a space and the word.
                        let room = width.saturating_sub(1 + 3 + name_w + 6);
                        let status = if room > label.chars().count() {
                            status
                        } else {
                            Span::raw("")
                        };
                        (iteration, status)
                    } else {
                        (status, iteration)
                    };
                    let mut spans = vec![
                        Span::raw(if selected { "›" } else { " " }),
                        Span::styled(
                            format!(
                                " {} ",
                                if paused {
                                    "⏸"
                                } else {
                                    status_symbol(n.status)
                                }
                            ),
                            st,
                        ),
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

impl Pane for GraphPane {
    fn title(&self) -> &'static str {
        "Workflow"
    }

    /// Under the task; before a plan, in the code's place.
    fn place(&self, ctx: &Ctx, _columns: [Rect; 2]) -> Option<Place> {
        match ctx.screen {
            Screen::Welcome => None,
            Screen::BeforePlan => Place::right(Constraint::Fill(1)),
            Screen::Session => Place::left(Constraint::Fill(2)),
        }
    }

    fn keymap(&self, _ctx: &Ctx) -> Vec<Row> {
        keymap::rows(SESSION).collect()
    }

    fn on_key(&mut self, key: KeyEvent, ctx: &Ctx) -> Handled<Intent> {
        let Some(act) = keymap::lookup(SESSION, &key) else {
            return Handled::NotMine;
        };
        let names: Vec<String> = ctx
            .state
            .nodes_in_order()
            .map(|n| n.spec.name.clone())
            .collect();
        let pos = self
            .selected
            .as_ref()
            .and_then(|s| names.iter().position(|n| n == s));
        let pick = match act {
            // The demos are the welcome's keys.
            GraphAct::Demo(_) => return Handled::NotMine,
            GraphAct::OpenCode => return Handled::Intent(Intent::Focus(super::Focus::Code)),
            GraphAct::Follow => return Handled::Intent(Intent::Follow),
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

    /// A click on a node's row selects it.
    fn on_click(&mut self, ctx: &Ctx, area: Rect, pos: Position) -> Handled<Intent> {
        let row = usize::from(pos.y.saturating_sub(area.y + 1));
        match self.on_click_row(ctx.state, row, area.height) {
            Some(intent) => Handled::Intent(intent),
            None => Handled::NotMine,
        }
    }

    fn render(&self, ctx: &Ctx, area: Rect, frame: &mut Frame) {
        self.draw(ctx, area, frame);
    }
}

/// The rows in drawing order (shared with mouse hit tests).
pub(crate) fn rows(state: &State) -> Vec<RowKind> {
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
