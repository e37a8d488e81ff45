//! What views read that the fold keeps in one place only: the reply
//! streaming for a node and a reflection's text are its model call's
//! (`State::calls`); the runs in order are `State::runs` by id; a node's
//! failures and reviews are kept once each, in `State::failures` and
//! `State::reviews`, and the node names them by their places there.
//!
//! Architecture Invariant: a fact is kept once. A node, the history and
//! the engine reach a failure, a review or a command through its place in
//! the one list that holds it (`failures_of`, `reviews_of`), never through
//! a copy; the engine asks these, never the history's entries.

use super::*;
use codeloop_protocol::Location;

/// A reflection as it reads now (`State::reflection`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReflectionText<'a> {
    /// What the engine recorded, else what its call's reply holds so far.
    pub text: &'a str,
    /// Its call is open: the model is writing it now.
    pub streaming: bool,
    /// Whole: the engine recorded it, or its call's reply came. Not whole
    /// while it streams, or once cut off (the call failed, or the session
    /// stopped before the reply came).
    pub whole: bool,
}

impl CallState {
    /// Its reply came: it ended, and not in an error (a call that failed,
    /// or that a resume closed, has one).
    pub fn replied(&self) -> bool {
        self.done && self.error.is_none()
    }
}

impl State {
    /// The run a view of the output shows: the selected node's last run,
    /// the program's while the program is shown, else the last run of all.
    pub fn run_to_show(&self, selected: Option<&str>, program: bool) -> Option<u64> {
        if program {
            return self
                .runs_in_order()
                .rev()
                .find(|(_, r)| r.kind == RunKind::Program)
                .map(|(id, _)| id);
        }
        match selected.and_then(|s| self.nodes.get(s)) {
            Some(node) => node.last_run,
            None => self.runs_in_order().next_back().map(|(id, _)| id),
        }
    }

    /// The reply being streamed for `node` right now: the text so far of
    /// its open model call (a node has one at a time), empty until the
    /// first piece comes and again after a restart. None when no call for
    /// it is open.
    pub fn streaming(&self, node: &str) -> Option<&str> {
        self.calls
            .values()
            .rev()
            .find(|c| !c.done && c.purpose.node() == Some(node))
            .map(|c| c.reply.as_str())
    }

    /// A reflection's text and whether it is still coming; None for an
    /// entry that is not a reflection.
    pub fn reflection<'a>(&'a self, entry: &'a HistoryEntry) -> Option<ReflectionText<'a>> {
        let HistoryEntry::Reflection {
            call_id, recorded, ..
        } = entry
        else {
            return None;
        };
        let call = call_id.and_then(|id| self.calls.get(&id));
        Some(match (recorded, call) {
            (Some(text), _) => ReflectionText {
                text,
                streaming: false,
                whole: true,
            },
            (None, Some(call)) => ReflectionText {
                text: &call.reply,
                streaming: !call.done,
                whole: call.replied(),
            },
            (None, None) => ReflectionText {
                text: "",
                streaming: false,
                whole: false,
            },
        })
    }

    /// The runs in the order they started, with their ids (ids count up
    /// in start order).
    pub fn runs_in_order(&self) -> impl DoubleEndedIterator<Item = (u64, &RunState)> {
        self.runs.iter().map(|(id, run)| (*id, run))
    }

    /// A node's localized failures, oldest first (since its spec last
    /// changed: a node planned afresh starts with none).
    pub fn failures_of<'a>(
        &'a self,
        node: &str,
    ) -> impl DoubleEndedIterator<Item = &'a Failure> + 'a {
        let places = self.nodes.get(node).map_or(&[][..], |n| &n.failures);
        places.iter().filter_map(|i| self.failures.get(*i))
    }

    /// A node's latest failure, until it passes.
    pub fn last_failure(&self, node: &str) -> Option<&Failure> {
        let n = self.nodes.get(node)?;
        self.failures.get(n.last_failure?)
    }

    /// A node's latest failure, if it was found in the code and tests the
    /// node has now (only then can it be drawn on a line of them).
    pub fn current_failure(&self, node: &str) -> Option<&Location> {
        let n = self.nodes.get(node)?;
        self.last_failure(node)
            .filter(|f| f.found == n.version())
            .map(|f| &f.location)
    }

    /// A node's latest failure when it was found in an earlier version of
    /// its code or tests: the previous iteration's failure, with the
    /// iteration it was found in. Not drawn on a line (the lines have
    /// changed).
    pub fn earlier_failure(&self, node: &str) -> Option<(u32, &Location)> {
        let n = self.nodes.get(node)?;
        self.last_failure(node)
            .filter(|f| f.found != n.version())
            .map(|f| (f.found.iteration, &f.location))
    }

    /// Failures the assembled program's runs found in a node whose own
    /// tests passed, in the pass under way (since the last `Finished`):
    /// the rounds of repair the program has had.
    pub fn program_repairs(&self) -> u32 {
        let pass = self.failures.get(self.failures_at_finish..).unwrap_or(&[]);
        pass.iter().filter(|f| f.in_program).count() as u32
    }

    /// A node's reviews before running, oldest first.
    pub fn reviews_of<'a>(
        &'a self,
        node: &str,
    ) -> impl DoubleEndedIterator<Item = &'a ReviewInfo> + 'a {
        let places = self.nodes.get(node).map_or(&[][..], |n| &n.reviews);
        places.iter().filter_map(|i| self.reviews.get(*i))
    }

    /// The (latest) review of a node's code version `iteration`.
    pub fn review_of(&self, node: &str, iteration: u32) -> Option<&ReviewInfo> {
        self.reviews_of(node)
            .rev()
            .find(|r| r.iteration == iteration)
    }

    /// The review of a node's current code, if it was reviewed.
    pub fn current_review(&self, node: &str) -> Option<&ReviewInfo> {
        let n = self.nodes.get(node)?;
        self.reviews_of(node)
            .next_back()
            .filter(|r| r.iteration == n.iteration())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use codeloop_protocol::Usage;

    /// The state after `events`, one record each.
    fn fold(events: &[Event]) -> State {
        let records: Vec<Record> = events
            .iter()
            .enumerate()
            .map(|(seq, event)| Record {
                seq: seq as u64,
                t_ms: seq as u64,
                event: event.clone(),
            })
            .collect();
        State::from_records(&records)
    }

    fn plan() -> Event {
        let spec = |name: &str| FunctionSpec {
            name: name.into(),
            purpose: "p".into(),
            inputs: String::new(),
            output: String::new(),
            depends_on: vec![],
            head: None,
        };
        Event::Plan(PlanEvent {
            specs: vec![spec("f"), spec("g")],
        })
    }

    fn request(call_id: u64, purpose: Purpose) -> Event {
        Event::ModelRequest(ModelRequestEvent {
            call_id,
            purpose,
            tag: format!("call/{call_id}"),
            messages: vec![],
        })
    }

    fn code(node: &str) -> Purpose {
        Purpose::Code { node: node.into() }
    }

    fn reflect(node: &str) -> Purpose {
        Purpose::Reflect { node: node.into() }
    }

    fn delta(call_id: u64, text: &str) -> Event {
        Event::ModelDelta(ModelDeltaEvent {
            call_id,
            text: text.into(),
        })
    }

    fn restart(call_id: u64) -> Event {
        Event::ModelRestart(ModelRestartEvent {
            call_id,
            reason: "the stream broke".into(),
        })
    }

    fn reply(call_id: u64, text: &str) -> Event {
        Event::ModelReply(ModelReplyEvent {
            call_id,
            text: text.into(),
            usage: Some(Usage::new(10, 5)),
            reasoning: String::new(),
            finish_reason: None,
            usage_estimated: false,
            duration_ms: 100,
            structured: None,
            prefilled: None,
            stopped: None,
        })
    }

    fn resumed() -> Event {
        Event::Resumed(ResumedEvent {
            from_seq: 0,
            after: "killed".into(),
            config: ConfigSummary::default(),
            token_budget: 0,
            started_at: String::new(),
        })
    }

    /// What `streaming` says of `node` after each prefix of `events`.
    fn streamed(events: &[Event], node: &str) -> Vec<Option<String>> {
        (1..=events.len())
            .map(|n| fold(&events[..n]).streaming(node).map(str::to_string))
            .collect()
    }

    #[test]
    fn a_node_streams_its_open_calls_reply_which_a_restart_clears_and_the_reply_ends() {
        let events = [
            plan(),
            request(1, code("f")),
            delta(1, "def f("),
            delta(1, "):"),
            restart(1),
            delta(1, "def f2"),
            reply(1, "def f2(): pass"),
        ];
        let some = |s: &str| Some(s.to_string());
        assert_eq!(
            streamed(&events, "f"),
            [
                None,
                some(""),
                some("def f("),
                some("def f():"),
                some(""),
                some("def f2"),
                None
            ]
        );
        // Another node's call is not this node's stream.
        assert_eq!(streamed(&events, "g"), vec![None; 7]);
    }

    #[test]
    fn a_call_that_fails_or_a_resume_closes_ends_the_stream() {
        let opening = vec![plan(), request(1, code("f")), delta(1, "def")];
        assert_eq!(fold(&opening).streaming("f"), Some("def"));
        let failed = Event::ModelError(ModelErrorEvent {
            call_id: 1,
            message: "the server went away".into(),
            usage: None,
        });
        assert_eq!(
            fold(&[opening.clone(), vec![failed]].concat()).streaming("f"),
            None
        );
        assert_eq!(
            fold(&[opening.clone(), vec![resumed()]].concat()).streaming("f"),
            None
        );
        // The next call after a closed one streams again, from nothing.
        let next = vec![resumed(), request(2, code("f")), delta(2, "x")];
        assert_eq!(fold(&[opening, next].concat()).streaming("f"), Some("x"));
    }

    /// The one reflection of the history after `events`: its text, whether
    /// it is streaming, whether it is whole.
    fn reflection_after(events: &[Event]) -> (String, bool, bool) {
        let state = fold(events);
        let texts: Vec<_> = state
            .history
            .iter()
            .filter_map(|h| state.reflection(h))
            .map(|r| (r.text.to_string(), r.streaming, r.whole))
            .collect();
        assert_eq!(texts.len(), 1, "one reflection: {texts:?}");
        texts[0].clone()
    }

    #[test]
    fn a_reflections_text_follows_its_call_through_delta_restart_and_reply() {
        let reply_text = "It adds.\n```python\ndef f(): pass\n```";
        let recorded = Event::Reflection(ReflectionEvent {
            node: "f".into(),
            iteration: 0,
            text: "It adds.".into(),
        });
        let events = [
            plan(),
            request(1, reflect("f")),
            delta(1, "It "),
            delta(1, "adds"),
            restart(1),
            delta(1, "It"),
            reply(1, reply_text),
            recorded,
        ];
        let seen: Vec<(String, bool, bool)> = (2..=events.len())
            .map(|n| reflection_after(&events[..n]))
            .collect();
        let at = |text: &str, streaming, whole| (text.to_string(), streaming, whole);
        assert_eq!(
            seen,
            [
                at("", true, false),
                at("It ", true, false),
                at("It adds", true, false),
                at("", true, false),
                at("It", true, false),
                // The reply whole, then the prose the engine recorded from it.
                at(reply_text, false, true),
                at("It adds.", false, true),
            ]
        );
    }

    #[test]
    fn a_reflection_cut_off_is_neither_streaming_nor_whole() {
        let opening = vec![plan(), request(1, reflect("f")), delta(1, "It adds")];
        let failed = Event::ModelError(ModelErrorEvent {
            call_id: 1,
            message: "the server went away".into(),
            usage: None,
        });
        let cut = |tail: Event| reflection_after(&[opening.clone(), vec![tail]].concat());
        assert_eq!(cut(failed), ("It adds".to_string(), false, false));
        assert_eq!(cut(resumed()), ("It adds".to_string(), false, false));
    }

    #[test]
    fn a_reflection_recorded_without_a_call_keeps_its_own_text() {
        let events = [
            plan(),
            Event::Reflection(ReflectionEvent {
                node: "f".into(),
                iteration: 1,
                text: "Off by one.".into(),
            }),
        ];
        assert_eq!(
            reflection_after(&events),
            ("Off by one.".to_string(), false, true)
        );
    }

    #[test]
    fn runs_in_order_are_the_runs_as_they_started() {
        let started = |run_id: u64, node: Option<&str>| {
            Event::RunStarted(RunStartedEvent {
                run_id,
                node: node.map(str::to_string),
                iteration: 1,
                kind: RunKind::NodeTests,
            })
        };
        let state = fold(&[
            plan(),
            started(1, Some("f")),
            started(2, Some("g")),
            started(3, None),
        ]);
        let order: Vec<(u64, Option<&str>)> = state
            .runs_in_order()
            .map(|(id, r)| (id, r.node.as_deref()))
            .collect();
        assert_eq!(order, [(1, Some("f")), (2, Some("g")), (3, None)]);
        assert_eq!(state.runs_in_order().next_back().map(|(id, _)| id), Some(3));
    }
}
