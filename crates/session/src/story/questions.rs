//! The tape's questions, asked by the views and the engine alike: the
//! failures shown beside a node's iteration, the run of an iteration, the
//! program's run, where a rewind of a node goes, the tokens used so far
//! while replies stream. (The run a view shows is `State::run_to_show`,
//! the node an event shows the engine at work on `moments::active_node`.)

use codeloop_protocol::tokens::{estimate_prompt_tokens, estimate_tokens};

use crate::event::*;
use crate::state::{Failure, RunState, State};

impl State {
    /// The latest finished run of a node's code version `iteration`.
    pub fn iteration_run(&self, node: &str, iteration: u32) -> Option<(&RunState, &RunRecord)> {
        self.runs_in_order()
            .rev()
            .map(|(_, r)| r)
            .filter(|r| r.node.as_deref() == Some(node) && r.iteration == iteration)
            .find_map(|r| r.record.as_ref().map(|rec| (r, rec)))
    }

    /// The failures shown beside a node's code version `iteration`: those
    /// of its latest finished run (a version run again, in a fork with new
    /// tests, shows the new run's, not the run's before), or all of the
    /// version's when it never ran (a review sent it to a repair).
    pub fn shown_failures(&self, node: &str, iteration: u32) -> Vec<&Failure> {
        let shown = self
            .runs_in_order()
            .rev()
            .find(|(_, r)| {
                r.node.as_deref() == Some(node) && r.iteration == iteration && r.record.is_some()
            })
            .map(|(id, _)| id);
        self.failures_of(node)
            .filter(|f| f.iteration == iteration)
            .filter(|f| shown.is_none_or(|id| f.run == Some(id)))
            .collect()
    }

    /// The run of the assembled program, the latest one that ended.
    pub fn program_run(&self) -> Option<(&RunState, &RunRecord)> {
        self.runs_in_order()
            .rev()
            .map(|(_, r)| r)
            .filter(|r| r.kind == RunKind::Program)
            .find_map(|r| r.record.as_ref().map(|rec| (r, rec)))
    }

    /// Tokens the session used, counting as replies stream: the usage of
    /// each finished call, and an estimate of each call still streaming
    /// (its prompt and what it wrote so far), which its real usage replaces.
    pub fn tokens_so_far(&self) -> u64 {
        let streaming: u64 = self
            .calls
            .values()
            .filter(|c| !c.done && c.usage.is_none())
            .map(|c| {
                estimate_prompt_tokens(&c.messages)
                    + estimate_tokens(&c.reply)
                    + estimate_tokens(&c.reasoning)
            })
            .sum();
        self.usage.total() + streaming
    }
}

/// Where to fork to take `node` back to its previous iteration: the end of
/// the run of that iteration (its verdict, and its failure localized), so
/// the repair that followed is asked again. For a node at its first
/// iteration, the record before the call that wrote it.
pub fn rewind_point(records: &[Record], node: &str) -> Result<u64, String> {
    let state = State::from_records(records);
    let Some(n) = state.nodes.get(node) else {
        return Err("there is no such function in the plan".into());
    };
    let current = n.iteration();
    if current == 0 {
        return Err("it has no code yet: there is no earlier iteration".into());
    }
    let is_current_code =
        |r: &Record| matches!(&r.event, Event::Code(e) if e.node == node && e.iteration == current);
    let Some(made) = records.iter().position(is_current_code) else {
        return Err("its code is not on the tape".into());
    };
    let before = &records[..made];
    if current >= 2 {
        let ran = before.iter().rposition(|r| {
            let Event::RunFinished(e) = &r.event else {
                return false;
            };
            state.runs.get(&e.run_id).is_some_and(|run| {
                run.node.as_deref() == Some(node) && run.iteration == current - 1
            })
        });
        if let Some(ran) = ran {
            let localized = |r: &&Record| matches!(&r.event, Event::Localized(e) if e.node == node && e.iteration == current - 1);
            let end = before[ran..].iter().rev().find(localized).map(|r| r.seq);
            return Ok(end.unwrap_or(before[ran].seq));
        }
    }
    // No run of the previous iteration: go back to before the call (or the
    // edit) that made the current one.
    let asked = before.iter().rposition(|r| {
        matches!(&r.event, Event::ModelRequest(e)
            if e.purpose.node() == Some(node)
                && !matches!(e.purpose, Purpose::Tests { .. }))
    });
    let start = asked.unwrap_or(made);
    match start.checked_sub(1) {
        Some(i) => Ok(records[i].seq),
        None => Err("it was made by the session's first record".into()),
    }
}
