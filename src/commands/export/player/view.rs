//! The view at each moment of the tape, from the real fold: after each
//! record is applied to the `State`, the slots of the view it changed are
//! computed from that state and written to the store as the record's
//! frame. What a slot holds is what the workbench's panes read from the
//! same state: each node's status and code (the version shown, the diff
//! against the one before, the failing line by `Location::line_in`), the
//! reply streaming in, the run it shows (`State::run_to_show`) and its
//! output, the reflection, the runtime values, the history.
//!
//! Only what a record can change is computed again (`scope`): a streamed
//! piece of a reply touches its call's node, a piece of output its run,
//! an event about a node that node, and the rest everything. A test
//! builds every tape in the repository both ways, this and everything at
//! every record, and compares the pages.
//!
//! A node's slots are `view/node.rs`'s, a run's title and output
//! (kept within a budget) `view/output.rs`'s; the replies streaming, the
//! plan, the badge and the history are here.

use std::collections::HashMap;

use serde::Serialize;

mod node;
mod output;

#[cfg(test)]
pub(super) use output::OUTPUT_KEPT;
use output::Output;

use super::history::History;
use super::store::{Store, Val};
use crate::commands::export::graph;
use crate::session::state::HistoryEntry;
use crate::session::story::{self, Level, What};
use crate::session::{Event, Outcome, Purpose, Record, State, moments};

/// A prefix's flags: a reply still streaming; a text whole.
pub(super) const STREAMING: u8 = 1;

/// What a record can change.
enum Scope {
    /// A model call's reply grew: its node's stream and reflection.
    Stream(u64),
    /// A run's output grew.
    Output(u64),
    /// An event about one node (and a call's or a run's, when it has one).
    Node {
        node: Option<String>,
        call: Option<u64>,
        run: Option<u64>,
    },
    /// Anything else: every slot.
    All,
}

/// The node a record is about, and its call or run: what it can change
/// (the event's `About`; a call's or a run's node is the state's).
fn scope(event: &Event, state: &State) -> Scope {
    let facts = event.facts();
    let about = facts.about;
    if facts.streamed {
        // A piece of a reply or of its reasoning (not shown, nor counted
        // here), or of a run's output.
        if let Some(call) = about.call {
            return Scope::Stream(call);
        }
        if let Some(run) = about.run {
            return Scope::Output(run);
        }
    }
    if about.is_session() {
        return Scope::All;
    }
    let node = about
        .node
        .map(str::to_string)
        .or_else(|| {
            about
                .call
                .and_then(|id| state.calls.get(&id)?.purpose.node().map(str::to_string))
        })
        .or_else(|| about.run.and_then(|id| state.runs.get(&id)?.node.clone()));
    Scope::Node {
        node,
        call: about.call,
        run: about.run,
    }
}

/// A reply copied into the page as it streams.
struct Reply {
    text: u32,
    /// Bytes of the reply copied (or cut).
    bytes: usize,
}

#[derive(Serialize)]
struct PlanView {
    svg: u32,
    names: Vec<String>,
}

#[derive(Serialize)]
struct Badge {
    cls: &'static str,
    label: &'static str,
    #[serde(skip_serializing_if = "String::is_empty")]
    line: String,
}

#[derive(Serialize)]
struct ProgramView {
    c: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    run: Option<u64>,
}

/// Builds each record's frame from the state after it.
pub(super) struct Views {
    pub(super) store: Store,
    /// Every slot at every record (the reference the fast way is tested against).
    full: bool,
    active: Option<String>,
    replies: HashMap<u64, Reply>,
    outputs: HashMap<u64, Output>,
    /// Raw output bytes of each run in all.
    totals: HashMap<u64, u64>,
    /// Raw bytes a run's output keeps at each end, within the budget.
    pub(super) kept: u64,
    code_ids: HashMap<(String, usize), u32>,
    diffs: HashMap<(u32, u32), u32>,
    plan: Option<(Vec<crate::session::FunctionSpec>, Val)>,
    history: History,
}

impl Views {
    /// Views of `records` (read ahead for what each run prints in all).
    pub(super) fn new(records: &[Record], full: bool) -> Views {
        let mut totals: HashMap<u64, u64> = HashMap::new();
        for r in records {
            if let Event::Output(e) = &r.event {
                *totals.entry(e.run_id).or_default() += e.text.len() as u64;
            }
        }
        let kept = output::kept(&totals);
        Views {
            store: Store::new(),
            full,
            active: None,
            replies: HashMap::new(),
            outputs: HashMap::new(),
            totals,
            kept,
            code_ids: HashMap::new(),
            diffs: HashMap::new(),
            plan: None,
            history: History::default(),
        }
    }

    /// The frame of `record`, just applied to `state`.
    pub(super) fn frame(&mut self, state: &State, record: &Record) {
        if let Some(node) = moments::active_node(&record.event) {
            self.active = Some(node.to_string());
        }
        let scope = if self.full {
            Scope::All
        } else {
            scope(&record.event, state)
        };
        // A plan given again may drop a node: every history line that
        // names it (a version's change counts) is rendered again.
        let replanned = matches!(record.event, Event::Plan(_));
        match scope {
            Scope::Stream(call) => self.stream(state, call),
            Scope::Output(run) => self.output(state, run),
            Scope::Node { node, call, run } => {
                self.globals(state);
                if let Some(node) = node {
                    self.node(state, &node);
                }
                if let Some(call) = call {
                    self.stream(state, call);
                }
                if let Some(run) = run {
                    self.run(state, run);
                    self.output(state, run);
                }
                self.history(state, None);
            }
            Scope::All => {
                self.globals(state);
                for stale in self.store.held("n/") {
                    let name = &stale[2..];
                    if !state.nodes.contains_key(name) {
                        for slot in ["n/", "i/", "s/", "w/"] {
                            self.store.set(&format!("{slot}{name}"), None);
                        }
                    }
                }
                let names: Vec<String> = state.nodes.keys().cloned().collect();
                for name in &names {
                    self.node(state, name);
                }
                let runs: Vec<u64> = state.runs.keys().copied().collect();
                for run in runs {
                    self.run(state, run);
                    self.output(state, run);
                }
                if replanned {
                    self.history_again(state);
                } else {
                    self.history(state, None);
                }
            }
        }
        self.store.end_frame();
    }

    /// A call's reply changed: its node's stream and reflection, the plan
    /// streaming in, the history's reflection.
    fn stream(&mut self, state: &State, call: u64) {
        let Some(c) = state.calls.get(&call) else {
            return;
        };
        // A node the plan does not have (yet) shows nothing.
        if c.purpose
            .node()
            .is_some_and(|n| !state.nodes.contains_key(n))
        {
            return;
        }
        match &c.purpose {
            Purpose::Plan => self.plan_stream(state),
            Purpose::Reflect { node } => {
                let node = node.clone();
                self.streaming(state, &node);
                self.reflection(state, &node);
                self.history(state, Some(call));
            }
            Purpose::Tests { node }
            | Purpose::Code { node }
            | Purpose::Repair { node }
            | Purpose::Review { node }
            | Purpose::Inputs { node } => {
                let node = node.clone();
                self.streaming(state, &node);
            }
        }
    }

    /// The prefix of a call's reply as it is now, copied into its text.
    fn reply(&mut self, call: u64, reply: &str, flag: u8) -> Val {
        let fresh = match self.replies.get(&call) {
            Some(r) => {
                let kept = self.store.text_of(r.text);
                !(reply.len() >= r.bytes
                    && reply.is_char_boundary(r.bytes)
                    && reply.as_bytes().starts_with(kept.as_bytes()))
            }
            None => true,
        };
        if fresh {
            let text = self.store.grow_new();
            self.replies.insert(call, Reply { text, bytes: 0 });
        }
        let (text, from) = match self.replies.get(&call) {
            Some(r) => (r.text, r.bytes),
            None => return Val::Shared(0),
        };
        let (len, cut) = self.store.append(text, &reply[from..]);
        if let Some(r) = self.replies.get_mut(&call) {
            r.bytes = reply.len();
        }
        Val::Prefix {
            text,
            len,
            more: u64::from(cut),
            flag,
        }
    }

    /// What the model is writing for `node` now (not its reflection,
    /// which shows apart), as the code pane streams it.
    fn streaming(&mut self, state: &State, node: &str) {
        let open = state
            .calls
            .iter()
            .rev()
            .find(|(_, c)| !c.done && c.purpose.node() == Some(node));
        let value = match open {
            Some((_, c)) if matches!(c.purpose, Purpose::Reflect { .. }) => None,
            Some((&id, c)) => Some(self.reply(id, &c.reply, STREAMING)),
            None => None,
        };
        self.store.set(&format!("s/{node}"), value);
    }

    /// The node's latest reflection: streaming from its call, or whole.
    fn reflection(&mut self, state: &State, node: &str) {
        let entry = state
            .history
            .iter()
            .rev()
            .find(|h| matches!(h, HistoryEntry::Reflection { node: n, .. } if n == node));
        let value = entry.and_then(|h| self.reflection_val(state, h));
        self.store.set(&format!("w/{node}"), value);
    }

    /// A reflection's text as a prefix: of its call's reply while that is
    /// what it reads, else the recorded text whole.
    pub(super) fn reflection_val(&mut self, state: &State, entry: &HistoryEntry) -> Option<Val> {
        let text = state.reflection(entry)?;
        let HistoryEntry::Reflection {
            call_id, recorded, ..
        } = entry
        else {
            return None;
        };
        let flag = if text.streaming { STREAMING } else { 0 } | if text.whole { 2 } else { 0 };
        Some(match (recorded, call_id) {
            (None, Some(call)) => self.reply(*call, text.text, flag),
            _ => self.store.whole(text.text, flag),
        })
    }

    /// The plan as it streams in, before there is one.
    fn plan_stream(&mut self, state: &State) {
        let value = if state.specs.is_empty() {
            let last = state
                .calls
                .iter()
                .rev()
                .find(|(_, c)| c.purpose == Purpose::Plan);
            match last {
                Some((&id, c)) => {
                    let flag = if c.done { 0 } else { STREAMING };
                    Some(self.reply(id, &c.reply, flag))
                }
                None => None,
            }
        } else {
            None
        };
        self.store.set("plan_stream", value);
    }

    /// What the whole screen shows: the plan, the node the engine is on,
    /// the result, the tokens, the notices, the program.
    fn globals(&mut self, state: &State) {
        let plan = match &self.plan {
            Some((specs, val)) if *specs == state.specs => Some(*val),
            _ if state.specs.is_empty() => None,
            _ => graph::player_svg(&state.specs).map(|svg| {
                let svg = self.store.text(&svg);
                let names = crate::session::Dag::new(state.specs.clone())
                    .map(|d| d.levels().concat())
                    .unwrap_or_else(|_| state.specs.iter().map(|s| s.name.clone()).collect());
                let val = self.store.shared(&PlanView { svg, names });
                self.plan = Some((state.specs.clone(), val));
                val
            }),
        };
        self.store.set("plan", plan);
        let error = state
            .plan_error
            .as_ref()
            .map(|e| self.store.shared(&e.as_str()));
        self.store.set("plan_error", error);
        self.plan_stream(state);
        let active = self.active.as_ref().map(|a| self.store.shared(&a.as_str()));
        self.store.set("act", active);
        let outcome = Outcome::of(state);
        let badge = if state.finished.is_some() && outcome.ended() {
            Badge {
                cls: match outcome {
                    Outcome::Passed => "passed",
                    Outcome::NoPlan => "no-plan",
                    Outcome::Cancelled => "cancelled",
                    Outcome::Failed | Outcome::Working => "failed",
                },
                label: outcome.label(),
                line: crate::session::outcome::line(state),
            }
        } else {
            Badge {
                cls: "working",
                label: if state.events_applied == 0 {
                    "not started"
                } else {
                    outcome.label()
                },
                line: String::new(),
            }
        };
        let badge = self.store.shared(&badge);
        self.store.set("badge", Some(badge));
        let tokens = self.store.shared(&state.usage.total());
        self.store.set("tokens", Some(tokens));
        let notes: Vec<(&str, &str)> = state
            .notices
            .iter()
            .rev()
            .take(3)
            .rev()
            .map(|n| {
                let level = match n.level {
                    crate::session::NoticeLevel::Info => "info",
                    crate::session::NoticeLevel::Warning => "warning",
                    crate::session::NoticeLevel::Error => "error",
                };
                (level, n.message.as_str())
            })
            .collect();
        let notes = (!notes.is_empty()).then(|| self.store.shared(&notes));
        self.store.set("notes", notes);
        let program = state.program.as_ref().map(|p| p.code.clone());
        let program = program.map(|code| {
            let c = self.store.text(&code);
            let run = state.run_to_show(None, true);
            self.store.shared(&ProgramView { c, run })
        });
        self.store.set("prog", program);
    }

    /// The history's lines: the entries that may have changed rendered
    /// again (`call`: only the reflection of that call streaming).
    fn history(&mut self, state: &State, call: Option<u64>) {
        let stale = if self.full {
            (0..state.history.len()).collect()
        } else {
            self.history.stale(state, call)
        };
        self.render_history(state, stale);
    }

    /// Every history line rendered again.
    fn history_again(&mut self, state: &State) {
        self.render_history(state, (0..state.history.len()).collect());
    }

    /// The history entries `stale` rendered again, and what changed sent.
    fn render_history(&mut self, state: &State, stale: Vec<usize>) {
        for i in stale {
            let lines = self.entry_lines(state, i);
            let open = matches!(
                &state.history[i],
                HistoryEntry::Reflection { recorded: None, .. }
            );
            self.history.put(i, lines, open);
        }
        if let Some(change) = self.history.changes() {
            self.store.history(change);
        }
    }

    /// The lines of one history entry: `[class, text]` values, and a
    /// reflection's text as a prefix. The story's lines (`story::entry`),
    /// each given its glyph and class as the workbench's History does; the
    /// words are the story's.
    fn entry_lines(&mut self, state: &State, i: usize) -> Vec<Val> {
        let entry = &state.history[i];
        let line = |store: &mut Store, class: &str, text: String| store.shared(&(class, text));
        let mut out = Vec::new();
        for l in story::entry(state, entry) {
            match &l.what {
                What::Code { iteration, .. } => {
                    let mut text = format!("● {} {}", l.subject().unwrap_or_default(), l.text);
                    let node = l.node.as_deref().unwrap_or_default();
                    if let Some((a, r)) = self.change_counts(state, node, *iteration) {
                        text.push_str(&format!(" · changed +{a} -{r}"));
                    }
                    out.push(line(&mut self.store, "attempt", text));
                    for note in &l.more {
                        out.push(line(
                            &mut self.store,
                            "note",
                            format!("    codeloop: {note}"),
                        ));
                    }
                }
                What::Run { run_id, passed, .. } => {
                    let (glyph, class) = match l.level {
                        Level::Good => ("✓", "pass"),
                        Level::Warning | Level::Quiet => ("■", "note"),
                        Level::Plain | Level::Bad => ("✗", "fail"),
                    };
                    let mut text = format!(
                        "  {glyph} {}: {} · run {run_id}",
                        l.subject().unwrap_or_default(),
                        l.text
                    );
                    if let Some(figures) = &l.detail {
                        text.push_str(&format!(" · {figures}"));
                    }
                    let class = if *passed { "pass" } else { class };
                    out.push(line(&mut self.store, class, text));
                }
                What::Failure { .. } => out.push(line(
                    &mut self.store,
                    "fail",
                    format!("    failure: {}", l.text),
                )),
                What::Reflection { .. } => out.extend(self.reflection_val(state, entry)),
                What::TestChange { .. } => out.push(line(
                    &mut self.store,
                    "note",
                    format!("    ✎ tests {}", l.text),
                )),
                What::Review { .. } => {
                    let class = match l.level {
                        Level::Bad => "fail",
                        Level::Plain | Level::Good | Level::Quiet | Level::Warning => "review",
                    };
                    out.push(line(
                        &mut self.store,
                        class,
                        format!("  ◆ review {}", l.text),
                    ));
                    for finding in &l.more {
                        out.push(line(&mut self.store, "note", format!("    ◆ {finding}")));
                    }
                }
                What::Steer { .. } => {
                    out.push(line(&mut self.store, "you", format!("  ⚑ you: {}", l.text)))
                }
                // The loop's decision after a failure, and why.
                What::Decision { .. } => {
                    let class = match l.level {
                        Level::Bad => "fail",
                        Level::Plain | Level::Good | Level::Quiet | Level::Warning => "note",
                    };
                    out.push(line(&mut self.store, class, format!("    → {}", l.text)));
                }
                // Not in the history (`run` prints them).
                What::Session
                | What::Notice(_)
                | What::ModelError
                | What::ModelRestart
                | What::Plan
                | What::PlanError
                | What::Tests
                | What::Check { .. }
                | What::Vote { .. }
                | What::Attempt { .. }
                | What::ProgramOutput
                | What::Picture
                | What::Status(_)
                | What::Paused
                | What::Finished(_) => {}
            }
        }
        out
    }
}
