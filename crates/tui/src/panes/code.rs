//! The code pane: the selected node's code (or tests, or a diff against the
//! previous iteration, or the assembled program), highlighted off the UI
//! thread, with line numbers, the failing line marked and its error beside it.
//! While the model writes, its reply streams in: settled lines, then the live tail.
//!
//! The pane keeps the highlighted texts it was given (a small cache keyed by
//! the text) and asks for the text on screen when it has none: the request is
//! made in `prepare`, before a frame, never while drawing.

use std::collections::VecDeque;

use crossterm::event::KeyEvent;
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};

use super::code_lines::{
    Mark, diff_lines, earlier_failure_line, error_lines, numbered, numbered_covered, streaming,
};
use super::code_tabs;
use super::code_values::{failure_with_values, value_marks, values_status};
use super::{Ctx, Handled, Intent, Pane, Place, Screen, Scroll, page, scroll_keys};
use crate::highlight::{HighlightRequest, Highlighted, StyledLine, text_key};
use crate::keymap::{self, Binding, Key, Row};
use crate::theme::Theme;
use codeloop_protocol::Location;
use codeloop_session::state::NodeState;
use codeloop_session::story::words;
use codeloop_session::{NodeStatus, Purpose, State};

/// Lines below the scroll position highlighted first (more than a screen).
const FIRST_LINES: usize = 120;
/// Highlighted texts kept.
const HIGHLIGHT_CACHE: usize = 8;

/// What the code pane shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CodeTab {
    Code,
    Tests,
    /// The node's code against its previous iteration.
    Diff,
    /// The assembled program.
    Program,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CodeAct {
    Tab(CodeTab),
    Scroll(Scroll),
    /// Step through a failure's runtime values (forward or back).
    Values(bool),
    /// Scroll long lines sideways (right or left).
    Sideways(bool),
}

pub(crate) const KEYS: &[Binding<CodeAct>] = &[
    Binding {
        label: "t",
        does: "tests / code",
        short: "tests / code",
        keys: &[(Key::ch('t'), CodeAct::Tab(CodeTab::Tests))],
    },
    Binding {
        label: "d",
        does: "diff against the previous iteration",
        short: "diff against the previous iteration",
        keys: &[(Key::ch('d'), CodeAct::Tab(CodeTab::Diff))],
    },
    Binding {
        label: "p",
        does: "the assembled program",
        short: "the assembled program",
        keys: &[(Key::ch('p'), CodeAct::Tab(CodeTab::Program))],
    },
    Binding {
        label: "↑ ↓ PgUp PgDn",
        does: "scroll",
        short: "scroll",
        keys: scroll_keys!(CodeAct::Scroll),
    },
    Binding {
        label: "v / V",
        does: "step through the failure's runtime values (next / previous)",
        short: "step values",
        keys: &[
            (Key::ch('v'), CodeAct::Values(true)),
            (Key::ch('V'), CodeAct::Values(false)),
        ],
    },
    Binding {
        label: "< / >",
        does: "scroll long lines sideways (› marks a line that goes on)",
        short: "sideways",
        keys: &[
            (Key::ch('<'), CodeAct::Sideways(false)),
            (Key::ch('>'), CodeAct::Sideways(true)),
        ],
    },
];

pub struct CodePane {
    tab: CodeTab,
    scroll: usize,
    /// (text key, lines, all of them done).
    highlights: VecDeque<(u64, Vec<StyledLine>, bool)>,
    generation: u64,
    asked: Option<u64>,
    /// Highlighting results taken (stale ones are not counted).
    applied: u64,
    /// The runtime-values snapshot stepped to (None: the last, where the code failed).
    values_step: Option<usize>,
    /// Columns the lines are scrolled sideways.
    left: usize,
    /// The line the last frame opened at while not scrolled (a diff at its
    /// first change, code at its failing line): scrolling goes on from it.
    opened: std::cell::Cell<usize>,
}

impl Default for CodePane {
    fn default() -> Self {
        CodePane {
            tab: CodeTab::Code,
            scroll: 0,
            highlights: VecDeque::new(),
            generation: 0,
            asked: None,
            applied: 0,
            values_step: None,
            left: 0,
            opened: std::cell::Cell::new(0),
        }
    }
}

impl CodePane {
    pub(crate) fn help() -> Vec<Row> {
        keymap::rows(KEYS).collect()
    }

    pub fn tab(&self) -> CodeTab {
        self.tab
    }

    /// Highlighting requests made so far (each replaces the one before).
    pub(crate) fn highlight_requests(&self) -> u64 {
        self.generation
    }

    pub(crate) fn highlights_applied(&self) -> u64 {
        self.applied
    }

    /// The first line shown of a text `height` rows high whose failing line
    /// is `failing`: where it was scrolled to, else its top, unless the
    /// failing line would be below the rows the code has beside the notes
    /// under it (a third of the pane): then with it a third of the way down.
    fn open_at(&self, failing: Option<usize>, height: usize) -> usize {
        match failing {
            _ if self.scroll != 0 => self.scroll,
            Some(line) if line + 2 > height * 2 / 3 => line.saturating_sub(height / 4),
            _ => 0,
        }
    }

    /// Another node was chosen: back to its top (and off the program).
    fn select(&mut self, changed: bool) {
        if changed {
            self.scroll = 0;
            self.values_step = None;
            self.left = 0;
        }
        if self.tab == CodeTab::Program {
            self.tab = CodeTab::Code;
        }
    }

    fn key(
        &mut self,
        key: KeyEvent,
        state: &State,
        selected: Option<&str>,
        height: u16,
    ) -> Handled<Intent> {
        let Some(act) = keymap::lookup(KEYS, &key) else {
            return Handled::NotMine;
        };
        let lines = code_text(self.tab, state, selected)
            .map(|t| t.lines().count())
            .unwrap_or(0);
        let last = lines.saturating_sub(1);
        // Not scrolled yet, the view opened where it had to (a failing
        // line below the pane's rows): scrolling goes on from there.
        if self.scroll == 0 && matches!(act, CodeAct::Scroll(_)) {
            self.scroll = self.opened.get();
        }
        match act {
            CodeAct::Tab(tab) => {
                self.tab = if self.tab == tab { CodeTab::Code } else { tab };
                self.scroll = 0;
                self.left = 0;
            }
            CodeAct::Scroll(Scroll::Down) => self.scroll = (self.scroll + 1).min(last),
            CodeAct::Scroll(Scroll::Up) => self.scroll = self.scroll.saturating_sub(1),
            CodeAct::Scroll(Scroll::PageDown) => {
                self.scroll = (self.scroll + page(height)).min(last)
            }
            CodeAct::Scroll(Scroll::PageUp) => {
                self.scroll = self.scroll.saturating_sub(page(height))
            }
            CodeAct::Values(forward) => {
                let count = selected
                    .and_then(|s| state.nodes.get(s))
                    .and_then(|n| failure_with_values(state, n))
                    .map_or(0, |e| e.values.len());
                if count == 0 || self.tab != CodeTab::Code {
                    return Handled::NotMine;
                }
                self.values_step = super::code_values::step(count, self.values_step, forward);
            }
            CodeAct::Sideways(right) => {
                let widest = code_text(self.tab, state, selected)
                    .and_then(|t| t.lines().map(|l| l.chars().count()).max())
                    .unwrap_or(0);
                self.left = super::hscroll::step(self.left, right, widest);
            }
        }
        Handled::Done
    }

    /// The mouse wheel (three lines a notch).
    fn wheel(&mut self, up: bool) {
        self.scroll = if up {
            self.scroll.saturating_sub(3)
        } else {
            self.scroll + 3
        };
    }

    /// The highlighted lines of `text`, if the worker has done them.
    pub(crate) fn highlighted(&self, text: &str) -> Option<&[StyledLine]> {
        let key = text_key(text);
        self.highlights
            .iter()
            .find(|(k, _, _)| *k == key)
            .map(|(_, l, _)| l.as_slice())
    }

    /// Take a highlighting result. Latest wins: an older generation is stale
    /// unless it is for the text on screen right now (then it is still useful).
    pub(crate) fn take_highlight(
        &mut self,
        h: Highlighted,
        state: &State,
        selected: Option<&str>,
    ) -> bool {
        let current = code_text(self.tab, state, selected).map(|t| text_key(&t));
        if h.generation != self.generation && Some(h.key) != current {
            return false;
        }
        if !h.complete
            && self
                .highlights
                .iter()
                .any(|(k, _, complete)| *k == h.key && *complete)
        {
            return false;
        }
        self.highlights.retain(|(k, _, _)| *k != h.key);
        self.highlights.push_back((h.key, h.lines, h.complete));
        while self.highlights.len() > HIGHLIGHT_CACHE {
            self.highlights.pop_front();
        }
        if self.asked == Some(h.key) && h.complete {
            self.asked = None;
        }
        self.applied += 1;
        true
    }

    /// Before a frame: ask for the text on screen to be highlighted, if it
    /// is not yet and has not been asked for.
    pub(crate) fn ask_highlight(
        &mut self,
        state: &State,
        selected: Option<&str>,
        syntax: Option<&str>,
    ) -> Option<HighlightRequest> {
        let syntax = syntax?;
        if self.tab == CodeTab::Diff {
            return None;
        }
        let streaming = selected
            .filter(|s| state.nodes.contains_key(*s))
            .and_then(|s| state.streaming(s))
            .is_some();
        if streaming && self.tab == CodeTab::Code {
            return None;
        }
        let text = code_text(self.tab, state, selected)?;
        let key = text_key(&text);
        let done = self
            .highlights
            .iter()
            .any(|(k, _, complete)| *k == key && *complete);
        if done || self.asked == Some(key) {
            return None;
        }
        self.generation += 1;
        self.asked = Some(key);
        Some(HighlightRequest {
            generation: self.generation,
            key,
            code: text,
            theme: syntax.to_string(),
            first: self.scroll + FIRST_LINES,
        })
    }

    fn draw(&self, ctx: &Ctx, area: Rect, frame: &mut Frame) {
        let outer_inner_height = usize::from(area.height.saturating_sub(2));
        let view = self.view(ctx, outer_inner_height);
        let mut title_line = ctx.title("Code", view.detail);
        title_line
            .spans
            .extend(code_tabs::tab_spans(ctx.theme, self.tab));
        let outer = ctx.block(title_line);
        let inner = outer.inner(area);
        frame.render_widget(outer, area);
        // Rows the footer's lines take once wrapped at the pane's width.
        let width = usize::from(inner.width.max(1));
        let rows: usize = view
            .footer
            .iter()
            .map(|l| l.width().max(1).div_ceil(width))
            .sum();
        let footer_h = (rows as u16).min(inner.height / 3);
        let [main, foot] =
            Layout::vertical([Constraint::Fill(1), Constraint::Length(footer_h)]).areas(inner);
        // A diff opens on its first change when it would be below the
        // rows the body has (under the notes of a low pane).
        let opening = match (view.opening, view.first_change) {
            (Some(at), _) => at,
            (None, Some(first)) if self.scroll == 0 && first + 2 > usize::from(main.height) => {
                first.saturating_sub(2)
            }
            _ => self.scroll,
        };
        let scroll = opening.min(view.body.len().saturating_sub(1));
        self.opened.set(if self.scroll == 0 { scroll } else { 0 });
        let body = super::hscroll::clip_lines(view.body, self.left, usize::from(main.width));
        frame.render_widget(Paragraph::new(body).scroll((scroll as u16, 0)), main);
        if footer_h > 0 {
            frame.render_widget(Paragraph::new(view.footer).wrap(Wrap { trim: false }), foot);
        }
    }

    /// The tab a click at `pos` chose, if it fell on one in the title of
    /// the pane drawn at `area`.
    pub(crate) fn tab_at(
        &self,
        ctx: &Ctx,
        area: Rect,
        pos: ratatui::layout::Position,
    ) -> Option<CodeTab> {
        if pos.y != area.y || pos.x <= area.x {
            return None;
        }
        let height = usize::from(area.height.saturating_sub(2));
        let title = ctx.title("Code", self.view(ctx, height).detail);
        // The title begins after the border's corner.
        code_tabs::tab_at(title.width(), usize::from(pos.x - area.x - 1))
    }

    /// Show `tab` (a click on it).
    pub(crate) fn show_tab(&mut self, tab: CodeTab) {
        if self.tab != tab {
            self.tab = tab;
            self.scroll = 0;
        }
    }

    /// What the pane shows: the title's detail, the body, the notes under it.
    fn view<'a>(&self, ctx: &Ctx<'a>, height: usize) -> View<'a> {
        let t = ctx.theme;
        let mut v = View::default();
        let n = match (self.tab, ctx.selected_node()) {
            (CodeTab::Program, _) => return self.program_view(ctx, height),
            (_, None) => return no_node_view(ctx),
            (_, Some(n)) => n,
        };
        let name = &n.spec.name;
        v.detail = match n.versions.last() {
            Some(ver) => format!("{name} #{} ({})", ver.iteration, words::source(ver.source)),
            None => name.clone(),
        };
        // A failure is drawn on the lines of the version it was found in;
        // on a later version it is only named, under the code.
        let failure = ctx
            .state
            .current_failure(name)
            .filter(|_| n.status != NodeStatus::Passed);
        match self.tab {
            CodeTab::Code => {
                let reflection = ctx.state.calls.values().find(|c| {
                    !c.done && matches!(&c.purpose, Purpose::Reflect { node } if node == name)
                });
                let reflecting = reflection.is_some();
                if let Some(call) = reflection {
                    // Its words under the code, here: the History pane may be
                    // hidden (zoom), so the title never sends the eye there.
                    v.detail = format!("{name} · the model is reflecting on the failure");
                    v.reflection = Some(reflection_tail(&call.reply));
                }
                // A tests call streams under the tests tab, not here.
                let writing = ctx.state.streaming(name).filter(|_| !reflecting);
                if let Some(stream) = writing.filter(|_| !writing_tests(ctx.state, name)) {
                    v.detail = format!("{name} · the model is writing…");
                    v.body = streaming(t, stream);
                } else if let Some(code) = n.code() {
                    self.code_body(t, ctx.state, n, code, failure, height, &mut v);
                } else {
                    v.body
                        .push(Line::styled(format!("no code for {name} yet"), t.dim));
                }
            }
            CodeTab::Tests => match &n.tests {
                _ if writing_tests(ctx.state, name) => {
                    v.detail = format!("{name} · the model is writing its tests…");
                    v.body = streaming(t, ctx.state.streaming(name).unwrap_or_default());
                }
                Some(tests) => {
                    v.detail = format!("{name} · tests");
                    let marks: Vec<Mark> = failure
                        .filter(|e| !e.in_node_code)
                        .and_then(|e| e.line_in(tests).map(|l| Mark::failure(t, l, e)))
                        .into_iter()
                        .collect();
                    let first = self.open_at(marks.first().map(|m| m.line), height);
                    v.opening = Some(first);
                    v.body = numbered(t, tests, self.highlighted(tests), &marks, first, height);
                }
                None => v
                    .body
                    .push(Line::styled(format!("no tests for {name} yet"), t.dim)),
            },
            CodeTab::Diff => diff_body(t, n, &mut v),
            CodeTab::Program => {}
        }
        self.notes(t, ctx.state, n, failure, &mut v);
        v
    }

    /// The Program tab: the assembled program, once there is one.
    fn program_view<'a>(&self, ctx: &Ctx<'a>, height: usize) -> View<'a> {
        let t = ctx.theme;
        let mut v = View::default();
        match &ctx.state.program {
            Some(program) => {
                let code = &program.code;
                v.detail = "assembled program".into();
                v.body = numbered(t, code, self.highlighted(code), &[], self.scroll, height);
            }
            None => v.body.push(Line::styled(
                "no program yet: it is assembled when every node passes",
                t.dim,
            )),
        }
        v
    }

    /// A node's code with its marks: the runtime values beside their
    /// lines, the failure at its line, the review's findings, and the
    /// failing path's coverage in the gutter.
    #[allow(clippy::too_many_arguments)]
    fn code_body<'a>(
        &self,
        t: &'a Theme,
        s: &State,
        n: &NodeState,
        code: &str,
        failure: Option<&Location>,
        height: usize,
        v: &mut View<'a>,
    ) {
        let name = &n.spec.name;
        // The values first: beside the code, before the error's note.
        let mut marks: Vec<Mark> = Vec::new();
        if let Some(e) = failure_with_values(s, n) {
            marks = value_marks(t, code, &e.values, self.values_step);
            v.values = Some(values_status(
                &e.values,
                self.values_step,
                e.values_note.as_deref(),
            ));
        }
        let failing = failure.and_then(|e| e.line_in(code));
        marks.extend(failure.and_then(|e| e.line_in(code).map(|l| Mark::failure(t, l, e))));
        // The review's findings, on lines no failure or value marks.
        let review: Vec<Mark> = super::code_review::marks(t, s, n, code)
            .into_iter()
            .filter(|r| !marks.iter().any(|m| m.line == r.line))
            .collect();
        marks.extend(review);
        // Which lines of the function ran, in the gutter.
        let runs = super::code_coverage::failure_with_coverage(s, n)
            .and_then(|e| super::code_coverage::line_runs(code, name, e));
        if let Some(runs) = &runs {
            let legend = super::code_coverage::legend(runs);
            v.values = Some(match v.values.take() {
                Some(values) => format!("{values} · {legend}"),
                None => legend,
            });
        }
        let first = self.open_at(failing, height);
        v.opening = Some(first);
        v.body = numbered_covered(
            t,
            code,
            self.highlighted(code),
            &marks,
            first,
            height,
            runs.as_deref(),
        );
    }

    /// The notes under the code: the failure, an earlier one, the
    /// reflection streaming in, where the values are, and on the Code tab
    /// the vote, the review and the check's findings.
    fn notes<'a>(
        &self,
        t: &'a Theme,
        s: &State,
        n: &NodeState,
        failure: Option<&Location>,
        v: &mut View<'a>,
    ) {
        if let Some(e) = failure
            && self.tab != CodeTab::Diff
        {
            v.footer = error_lines(t, e);
        }
        if let Some((iteration, e)) = s
            .earlier_failure(&n.spec.name)
            .filter(|_| n.status != NodeStatus::Passed)
        {
            v.footer
                .push(earlier_failure_line(t, iteration, n.iteration(), e));
        }
        if let Some(words) = v.reflection.take() {
            v.footer.push(Line::from(vec![
                Span::styled("why: ", t.accent),
                Span::styled(words, t.text),
                Span::styled("▌", t.running),
            ]));
        }
        if let Some(status) = v.values.take() {
            v.footer.push(Line::styled(status, t.dim));
        }
        if self.tab == CodeTab::Code {
            v.footer.extend(super::code_review::candidates_line(t, n));
            v.footer.extend(super::code_review::footer(t, s, n, 3));
            for f in n.findings.iter().take(2) {
                v.footer.push(Line::styled(
                    format!("check: {}", codeloop_session::story::words::finding(f)),
                    t.warning,
                ));
            }
        }
    }
}

/// No node selected: where its code will show, or how to select one.
fn no_node_view<'a>(ctx: &Ctx<'a>) -> View<'a> {
    let mut v = View::default();
    v.body.push(Line::styled(
        if ctx.state.specs.is_empty() {
            "the selected node's code shows here"
        } else {
            "select a node in the Workflow pane (↑/↓)"
        },
        ctx.theme.dim,
    ));
    v
}

/// The Diff tab: the last two versions compared, opening on the first change.
fn diff_body<'a>(t: &'a Theme, n: &NodeState, v: &mut View<'a>) {
    let k = n.versions.len();
    if k < 2 {
        v.body.push(Line::styled(
            "only one iteration so far: nothing to compare",
            t.dim,
        ));
        return;
    }
    let (old, new) = (&n.versions[k - 2], &n.versions[k - 1]);
    v.detail = format!(
        "{} · iteration {} → {}",
        n.spec.name, old.iteration, new.iteration
    );
    v.body = diff_lines(t, &old.code, &new.code);
    v.first_change = v.body.iter().position(|l| {
        l.spans
            .first()
            .is_some_and(|s| s.content.starts_with(['+', '-']))
    });
}

#[derive(Default)]
struct View<'a> {
    detail: String,
    /// Where the runtime-values stepping is, under the code.
    values: Option<String>,
    /// The reflection streaming in, its last words.
    reflection: Option<String>,
    body: Vec<Line<'a>>,
    footer: Vec<Line<'a>>,
    /// The diff's first changed line: where a diff not scrolled opens.
    first_change: Option<usize>,
    /// Where code or tests not scrolled open: at their failing line when
    /// it would be below the rows the pane has.
    opening: Option<usize>,
}

/// The last words of a reflection as it streams, on one line.
fn reflection_tail(text: &str) -> String {
    const KEEP: usize = 160;
    let clean = crate::sanitize::sanitize(text);
    let joined = clean.split_whitespace().collect::<Vec<_>>().join(" ");
    let count = joined.chars().count();
    match count.checked_sub(KEEP) {
        Some(skip) if skip > 0 => format!("…{}", joined.chars().skip(skip).collect::<String>()),
        _ => joined,
    }
}

/// The text the code pane shows on `tab`, if any (None: nothing yet).
pub(crate) fn code_text(tab: CodeTab, state: &State, selected: Option<&str>) -> Option<String> {
    if tab == CodeTab::Program {
        return state.program.as_ref().map(|p| p.code.clone());
    }
    let node = state.nodes.get(selected?)?;
    match tab {
        CodeTab::Code | CodeTab::Diff => node.code().map(str::to_string),
        CodeTab::Tests => node.tests.clone(),
        CodeTab::Program => None,
    }
}

impl Pane for CodePane {
    fn title(&self) -> &'static str {
        "Code"
    }

    /// Top right, once there is a plan.
    fn place(&self, ctx: &Ctx, _columns: [Rect; 2]) -> Option<Place> {
        match ctx.screen {
            Screen::Session => Place::right(Constraint::Percentage(60)),
            Screen::Welcome | Screen::BeforePlan => None,
        }
    }

    fn keymap(&self, _ctx: &Ctx) -> Vec<Row> {
        CodePane::help()
    }

    fn on_key(&mut self, key: KeyEvent, ctx: &Ctx) -> Handled<Intent> {
        self.key(key, ctx.state, ctx.selected, ctx.rows)
    }

    fn on_wheel(&mut self, up: bool) -> bool {
        self.wheel(up);
        true
    }

    /// A click on a tab of its title shows that tab.
    fn on_click(
        &mut self,
        ctx: &Ctx,
        area: Rect,
        pos: ratatui::layout::Position,
    ) -> Handled<Intent> {
        match self.tab_at(ctx, area, pos) {
            Some(tab) => {
                self.show_tab(tab);
                Handled::Done
            }
            None => Handled::NotMine,
        }
    }

    fn on_select(&mut self, changed: bool) {
        self.select(changed);
    }

    /// Asks for the text on screen to be highlighted.
    fn prepare(&mut self, ctx: &Ctx, _area: Rect) -> Option<HighlightRequest> {
        self.ask_highlight(ctx.state, ctx.selected, ctx.theme.syntax.as_deref())
    }

    fn render(&self, ctx: &Ctx, area: Rect, frame: &mut Frame) {
        self.draw(ctx, area, frame);
    }
}

/// The model is writing `name`'s tests now (its open call is a tests call):
/// they stream under the tests tab.
fn writing_tests(s: &State, name: &str) -> bool {
    s.calls
        .values()
        .rev()
        .find(|c| !c.done && c.purpose.node() == Some(name))
        .is_some_and(|c| matches!(c.purpose, Purpose::Tests { .. }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn program(text: &str) -> State {
        State {
            program: Some(codeloop_session::state::Program {
                code: text.to_string(),
                tests: String::new(),
            }),
            ..State::default()
        }
    }

    fn result(request: &HighlightRequest, lines: usize, complete: bool) -> Highlighted {
        Highlighted {
            generation: request.generation,
            key: request.key,
            lines: vec![[(ratatui::style::Style::new(), "x".into())].into(); lines],
            complete,
        }
    }

    #[test]
    fn the_first_lines_sent_ahead_show_until_the_rest_comes_and_are_asked_again_if_it_never_does() {
        let mut pane = CodePane {
            tab: CodeTab::Program,
            ..CodePane::default()
        };
        let a = program("a = 1\nb = 2\nc = 3\n");
        let ask = pane.ask_highlight(&a, None, Some("t")).unwrap();
        assert_eq!(ask.first, FIRST_LINES);
        assert!(pane.take_highlight(result(&ask, 1, false), &a, None));
        assert_eq!(
            pane.highlighted("a = 1\nb = 2\nc = 3\n").map(<[_]>::len),
            Some(1)
        );
        // The rest is on its way: not asked again.
        assert!(pane.ask_highlight(&a, None, Some("t")).is_none());
        // Another text is shown before the rest came: the job was superseded.
        let b = program("other\n");
        assert!(pane.ask_highlight(&b, None, Some("t")).is_some());
        // Back to the first text: only its first lines are known, so it is asked again.
        let again = pane.ask_highlight(&a, None, Some("t")).unwrap();
        assert!(pane.take_highlight(result(&again, 3, true), &a, None));
        assert_eq!(
            pane.highlighted("a = 1\nb = 2\nc = 3\n").map(<[_]>::len),
            Some(3)
        );
        // A late partial result does not replace the whole one.
        assert!(!pane.take_highlight(result(&again, 1, false), &a, None));
        assert!(pane.ask_highlight(&a, None, Some("t")).is_none());
    }
}
