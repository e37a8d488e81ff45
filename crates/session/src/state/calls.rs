//! The fold of model calls: a request, its streamed reply and reasoning, how it ended.

use super::*;

impl State {
    pub(super) fn fold_calls(&mut self, record: &Record) {
        match &record.event {
            Event::ModelRequest {
                call_id,
                purpose,
                messages,
                tag,
            } => {
                if let Some(node) = purpose.node().and_then(|n| self.nodes.get_mut(n)) {
                    node.streaming = Some(String::new());
                }
                if let Purpose::Reflect { node } = purpose {
                    let iteration = self.nodes.get(node).map(|n| n.iteration()).unwrap_or(0);
                    self.history.push(HistoryEntry::Reflection {
                        node: node.clone(),
                        iteration,
                        call_id: Some(*call_id),
                        text: String::new(),
                        done: false,
                    });
                }
                self.calls.insert(
                    *call_id,
                    CallState {
                        purpose: purpose.clone(),
                        messages: messages.clone(),
                        reply: String::new(),
                        done: false,
                        error: None,
                        usage: None,
                        reasoning: String::new(),
                        finish_reason: None,
                        usage_estimated: false,
                        tag: tag.clone(),
                        // The edit holds for this call and its retries.
                        edited: self.prompt_edit.as_ref().is_some_and(|(p, _)| p == purpose),
                        started_ms: record.t_ms,
                        duration_ms: None,
                        restarts: Vec::new(),
                        continuations: 0,
                        structured: None,
                    },
                );
                self.prompt_review = None;
            }
            Event::ModelDelta { call_id, text } => {
                if let Some(call) = self.calls.get_mut(call_id) {
                    call.reply.push_str(text);
                    if let Some(node) = call.purpose.node().and_then(|n| self.nodes.get_mut(n)) {
                        node.streaming
                            .get_or_insert_with(String::new)
                            .push_str(text);
                    }
                }
                if let Some(HistoryEntry::Reflection { text: t, .. }) =
                    self.reflection_for_call(*call_id)
                {
                    t.push_str(text);
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
                    if let Some(node) = call.purpose.node().and_then(|n| self.nodes.get_mut(n)) {
                        node.streaming = None;
                    }
                }
                if let Some(HistoryEntry::Reflection { text: t, .. }) =
                    self.reflection_for_call(*call_id)
                {
                    t.clear();
                }
            }
            Event::ModelContinued { call_id } => {
                if let Some(call) = self.calls.get_mut(call_id) {
                    call.continuations += 1;
                }
            }
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
                    if let Some(node) = call.purpose.node().and_then(|n| self.nodes.get_mut(n)) {
                        node.streaming = None;
                    }
                }
                if let Some(u) = usage {
                    self.usage = self.usage + *u;
                }
                if let Some(HistoryEntry::Reflection { text: t, done, .. }) =
                    self.reflection_for_call(*call_id)
                {
                    *t = text.clone();
                    *done = true;
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
                    if let Some(node) = call.purpose.node().and_then(|n| self.nodes.get_mut(n)) {
                        node.streaming = None;
                    }
                }
            }
            _ => {}
        }
    }
}
