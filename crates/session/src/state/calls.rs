//! The fold of model calls: a request, its streamed reply and reasoning, how it ended.
//!
//! A call's reply is kept here only: what a node is streaming and a
//! reflection's text are read from it (`state/derived.rs`).

use super::*;

impl State {
    /// A call begins; a reflection's begins its history entry.
    pub(super) fn fold_request(&mut self, record: &Record) {
        let Event::ModelRequest {
            call_id,
            purpose,
            messages,
            tag,
        } = &record.event
        else {
            return;
        };
        if let Purpose::Reflect { node } = purpose {
            let iteration = self.nodes.get(node).map(|n| n.iteration()).unwrap_or(0);
            self.history.push(HistoryEntry::Reflection {
                node: node.clone(),
                iteration,
                call_id: Some(*call_id),
                recorded: None,
            });
        }
        let mut call =
            CallState::asked(purpose.clone(), messages.clone(), tag.clone(), record.t_ms);
        // The edit holds for this call and its retries.
        call.edited = self
            .prompt_edit
            .as_ref()
            .is_some_and(|e| e.purpose == *purpose);
        self.calls.insert(*call_id, call);
        self.prompt_review = None;
    }

    /// The reply as it streams: its pieces, its reasoning, a restart
    /// (what came before is void), a continuation after a cut.
    pub(super) fn fold_stream(&mut self, event: &Event) {
        match event {
            Event::ModelDelta { call_id, text } => {
                if let Some(call) = self.calls.get_mut(call_id) {
                    call.reply.push_str(text);
                }
            }
            Event::ModelReasoning { call_id, text } => {
                if let Some(call) = self.calls.get_mut(call_id) {
                    call.reasoning.push_str(text);
                }
            }
            Event::ModelRestart { call_id, reason } => {
                if let Some(call) = self.calls.get_mut(call_id) {
                    call.restarts.push(reason.clone());
                    call.reply.clear();
                    call.reasoning.clear();
                }
            }
            Event::ModelContinued { call_id } => {
                if let Some(call) = self.calls.get_mut(call_id) {
                    call.continuations += 1;
                }
            }
            _ => {}
        }
    }

    /// How a call ended: its whole reply, or an error; either way its usage.
    pub(super) fn fold_call_end(&mut self, event: &Event) {
        match event {
            Event::ModelReply {
                call_id,
                text,
                usage,
                reasoning,
                finish_reason,
                usage_estimated,
                duration_ms,
                structured,
            } => {
                self.model_ms += duration_ms;
                if let Some(call) = self.calls.get_mut(call_id) {
                    call.reply = text.clone();
                    call.done = true;
                    call.usage = *usage;
                    call.reasoning = reasoning.clone();
                    call.finish_reason = finish_reason.clone();
                    call.usage_estimated = *usage_estimated;
                    call.duration_ms = Some(*duration_ms);
                    call.structured = structured.clone();
                }
                if let Some(u) = usage {
                    self.usage = self.usage + *u;
                }
            }
            Event::ModelError {
                call_id,
                message,
                usage,
            } => {
                if let Some(u) = usage {
                    self.usage = self.usage + *u;
                }
                if let Some(call) = self.calls.get_mut(call_id) {
                    call.done = true;
                    call.error = Some(message.clone());
                    call.usage = *usage;
                }
            }
            _ => {}
        }
    }
}
