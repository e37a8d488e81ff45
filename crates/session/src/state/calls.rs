//! The fold of model calls: a request, its streamed reply and reasoning, how it ended.
//!
//! A call's reply is kept here only: what a node is streaming and a
//! reflection's text are read from it (`state/derived.rs`).

use super::*;

impl State {
    /// A call begins (at `t_ms`); a reflection's begins its history entry.
    pub(super) fn fold_request(&mut self, e: &ModelRequestEvent, t_ms: u64) {
        if let Purpose::Reflect { node } = &e.purpose {
            let iteration = self.nodes.get(node).map(|n| n.iteration()).unwrap_or(0);
            self.history.push(HistoryEntry::Reflection {
                node: node.clone(),
                iteration,
                call_id: Some(e.call_id),
                recorded: None,
            });
        }
        let mut call = CallState::asked(e.purpose.clone(), e.messages.clone(), e.tag.clone(), t_ms);
        // The edit holds for this call and its retries.
        call.edited = self
            .prompt_edit
            .as_ref()
            .is_some_and(|edit| edit.purpose == e.purpose);
        self.calls.insert(e.call_id, call);
        self.prompt_review = None;
    }

    /// A piece of the reply as it streams.
    pub(super) fn fold_delta(&mut self, e: &ModelDeltaEvent) {
        if let Some(call) = self.calls.get_mut(&e.call_id) {
            call.reply.push_str(&e.text);
        }
    }

    /// A piece of the reasoning as it streams.
    pub(super) fn fold_reasoning(&mut self, e: &ModelReasoningEvent) {
        if let Some(call) = self.calls.get_mut(&e.call_id) {
            call.reasoning.push_str(&e.text);
        }
    }

    /// A restart: what streamed before is void.
    pub(super) fn fold_restart(&mut self, e: &ModelRestartEvent) {
        if let Some(call) = self.calls.get_mut(&e.call_id) {
            call.restarts.push(e.reason.clone());
            call.reply.clear();
            call.reasoning.clear();
        }
    }

    /// A continuation after a cut: what streams next extends the reply.
    pub(super) fn fold_continued(&mut self, e: &ModelContinuedEvent) {
        if let Some(call) = self.calls.get_mut(&e.call_id) {
            call.continuations += 1;
        }
    }

    /// The whole reply, and its usage.
    pub(super) fn fold_reply(&mut self, e: &ModelReplyEvent) {
        self.model_ms += e.duration_ms;
        if let Some(call) = self.calls.get_mut(&e.call_id) {
            call.reply = e.text.clone();
            call.done = true;
            call.usage = e.usage;
            call.reasoning = e.reasoning.clone();
            call.finish_reason = e.finish_reason.clone();
            call.usage_estimated = e.usage_estimated;
            call.duration_ms = Some(e.duration_ms);
            call.structured = e.structured.clone();
            call.stopped = e.stopped.clone();
            call.prefilled = e.prefilled.clone();
        }
        if let Some(u) = e.usage {
            self.usage = self.usage + u;
        }
    }

    /// A call failed for good; what it spent all the same.
    pub(super) fn fold_model_error(&mut self, e: &ModelErrorEvent) {
        if let Some(u) = e.usage {
            self.usage = self.usage + u;
        }
        if let Some(call) = self.calls.get_mut(&e.call_id) {
            call.done = true;
            call.error = Some(e.message.clone());
            call.usage = e.usage;
        }
    }
}
