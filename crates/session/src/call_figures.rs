//! Each model call's figures, read from a tape: its prompt tokens, its time
//! to first token, and whether its reply was used. `bench` prints them per
//! problem and over a set.
//!
//! The time to first token is from the request's record (`t_ms`) to the
//! call's first streamed piece (`model_delta` or `model_reasoning`), so it
//! holds the server's queue and its prompt evaluation: on a CPU, most of it.
//! The engine writes pieces in batches of up to 50 ms, so it is that coarse.
//!
//! A reply is *used* when what it was asked for follows it on the tape,
//! before the next request about the same node (a plan for the plan, tests,
//! a code version, an applied test fix, a review, the inputs a vote ran
//! on: what the event says it `uses`, in its facts), or a review names the
//! call, or a vote took it as a candidate that loaded
//! (or was chosen). Every other call was wasted: its reply looped and was
//! stopped, was cut at the token limit, failed, or came whole and was not
//! used (no code in it, or refused by a guard).

use serde::{Deserialize, Serialize};

use super::event::{CandidatesEvent, Event, ModelRequestEvent, Purpose, Record, ReviewEvent};

/// Why a call's reply was not used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Waste {
    /// It fell into a loop and was stopped while it streamed.
    Looped,
    /// Cut off at the model's token limit (after any continuations).
    Cut,
    /// The call failed (the server, the connection) or was cancelled.
    Failed,
    /// It came whole and nothing came of it: no code in it, or a guard
    /// refused what it held.
    Unused,
}

impl Waste {
    pub fn label(self) -> &'static str {
        match self {
            Waste::Looped => "stopped (looping)",
            Waste::Cut => "cut",
            Waste::Failed => "failed",
            Waste::Unused => "unusable or refused",
        }
    }
}

/// One model call's figures.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallFigure {
    pub call_id: u64,
    /// The request's tag ("code/add/1", "repair/add/2").
    pub tag: String,
    /// As the server reported them (or estimated: see the reply's
    /// `usage_estimated`); `None` when the call ended with no usage at all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_tokens: Option<u64>,
    /// Of `prompt_tokens`, those the server took from its cache, when it said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_tokens: Option<u64>,
    /// From the request to its first streamed piece, milliseconds; `None`
    /// when nothing streamed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_token_ms: Option<u64>,
    /// From the request to the call's end, milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_ms: Option<u64>,
    /// Why its reply was not used; `None`: it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waste: Option<Waste>,
}

/// How a call ended, where on the tape.
struct End {
    at: usize,
    t_ms: u64,
    error: Option<String>,
    cut: bool,
}

/// The figures of every call on `records`, in the order they were asked.
/// `looped` tells a failed call's message that says its reply was stopped
/// for looping (the words are the model layer's, which this crate does not
/// know).
pub fn call_figures(records: &[Record], looped: impl Fn(&str) -> bool) -> Vec<CallFigure> {
    let mut out = Vec::new();
    for (at, record) in records.iter().enumerate() {
        let Event::ModelRequest(ModelRequestEvent {
            call_id,
            purpose,
            tag,
            ..
        }) = &record.event
        else {
            continue;
        };
        let call_id = *call_id;
        let mut figure = CallFigure {
            call_id,
            tag: tag.clone(),
            prompt_tokens: None,
            completion_tokens: None,
            cached_tokens: None,
            first_token_ms: None,
            total_ms: None,
            waste: Some(Waste::Failed),
        };
        let mut end: Option<End> = None;
        for (i, later) in records.iter().enumerate().skip(at + 1) {
            let facts = later.event.facts();
            if facts.about.call != Some(call_id) {
                continue;
            }
            if facts.streamed {
                // Its first piece, of the reply or of reasoning.
                if figure.first_token_ms.is_none() {
                    figure.first_token_ms = Some(later.t_ms.saturating_sub(record.t_ms));
                }
                continue;
            }
            // How it ended: its reply or its error (a restart or a
            // continuation goes on).
            let (usage, error, cut) = if let Event::ModelReply(e) = &later.event {
                (&e.usage, None, e.finish_reason.as_deref() == Some("length"))
            } else if let Event::ModelError(e) = &later.event {
                (&e.usage, Some(e.message.clone()), false)
            } else {
                continue;
            };
            if let Some(u) = usage {
                figure.prompt_tokens = Some(u.prompt_tokens);
                figure.completion_tokens = Some(u.completion_tokens);
                figure.cached_tokens = u.cached_tokens;
            }
            end = Some(End {
                at: i,
                t_ms: later.t_ms,
                error,
                cut,
            });
            break;
        }
        if let Some(end) = end {
            figure.total_ms = Some(end.t_ms.saturating_sub(record.t_ms));
            figure.waste = match &end.error {
                Some(message) if looped(message) => Some(Waste::Looped),
                Some(_) => Some(Waste::Failed),
                None if used(records, call_id, purpose, end.at) => None,
                None if end.cut => Some(Waste::Cut),
                None => Some(Waste::Unused),
            };
        }
        out.push(figure);
    }
    out
}

/// Whether the reply of `call_id` (asked for `purpose`, ended at record
/// `end`) was used: see the module's doc.
fn used(records: &[Record], call_id: u64, purpose: &Purpose, end: usize) -> bool {
    let node = purpose.node();
    // A vote took it as a candidate, or a review names it: wherever that is.
    let named = records.iter().any(|r| {
        if let Event::Candidates(CandidatesEvent {
            candidates, chosen, ..
        }) = &r.event
        {
            return candidates
                .iter()
                .enumerate()
                .any(|(i, c)| c.call_id == Some(call_id) && (c.loaded || i == *chosen));
        }
        matches!(&r.event, Event::Review(ReviewEvent { call_id: c, .. }) if *c == Some(call_id))
    });
    if named {
        return true;
    }
    // Else what it was asked for, before the next request about its node.
    for r in &records[end + 1..] {
        if let Event::ModelRequest(ModelRequestEvent { purpose: p, .. }) = &r.event
            && p.node() == node
        {
            return false;
        }
        if r.event.facts().uses.answers(purpose) {
            return true;
        }
    }
    false
}

/// The `p`th percentile (0 to 100) of `values` by the nearest rank: the
/// smallest value with at least p% of them at or below it. `None` when
/// there are none.
pub fn percentile(values: &[u64], p: u32) -> Option<u64> {
    let mut sorted = values.to_vec();
    sorted.sort_unstable();
    let n = sorted.len();
    if n == 0 {
        return None;
    }
    let rank = (p.min(100) as usize * n).div_ceil(100).max(1);
    sorted.get(rank - 1).copied()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::consensus::Candidate;
    use crate::event::{
        CodeEvent, CodeSource, ModelDeltaEvent, ModelErrorEvent, ModelReasoningEvent,
        ModelReplyEvent, PlanEvent, TestsChangedEvent, TestsEvent,
    };
    use codeloop_protocol::Usage;

    fn request(call_id: u64, purpose: Purpose, tag: &str) -> Event {
        Event::ModelRequest(ModelRequestEvent {
            call_id,
            purpose,
            tag: tag.into(),
            messages: vec![],
        })
    }

    fn delta(call_id: u64) -> Event {
        Event::ModelDelta(ModelDeltaEvent {
            call_id,
            text: "x".into(),
        })
    }

    fn reply(call_id: u64, prompt: u64, finish_reason: Option<&str>) -> Event {
        Event::ModelReply(ModelReplyEvent {
            call_id,
            text: "x".into(),
            usage: Some(Usage::new(prompt, 7)),
            duration_ms: 0,
            reasoning: String::new(),
            finish_reason: finish_reason.map(str::to_string),
            usage_estimated: false,
            structured: None,
            stopped: None,
            prefilled: None,
        })
    }

    fn code(node: &str, iteration: u32) -> Event {
        Event::Code(CodeEvent {
            node: node.into(),
            iteration,
            code: "def f(): pass".into(),
            source: CodeSource::Model,
            notes: Vec::new(),
        })
    }

    fn tests_changed(applied: bool) -> Event {
        Event::TestsChanged(TestsChangedEvent {
            node: "f".into(),
            iteration: 1,
            old: String::new(),
            new: String::new(),
            reason: String::new(),
            applied,
            rejected_because: (!applied).then(|| "drops assertions".into()),
        })
    }

    fn code_of(node: &str) -> Purpose {
        Purpose::Code { node: node.into() }
    }

    /// Records at the given times, numbered in order.
    fn tape(events: Vec<(u64, Event)>) -> Vec<Record> {
        events
            .into_iter()
            .enumerate()
            .map(|(seq, (t_ms, event))| Record {
                seq: seq as u64,
                t_ms,
                event,
            })
            .collect()
    }

    fn never(_: &str) -> bool {
        false
    }

    #[test]
    fn time_to_first_token_is_from_the_request_to_its_first_piece() {
        let records = tape(vec![
            (100, request(1, code_of("f"), "code/f/1")),
            (
                1_600,
                Event::ModelReasoning(ModelReasoningEvent {
                    call_id: 1,
                    text: "hm".into(),
                }),
            ),
            (2_000, delta(1)),
            (2_500, reply(1, 420, None)),
            (2_600, code("f", 1)),
        ]);
        let figures = call_figures(&records, never);
        assert_eq!(
            figures,
            vec![CallFigure {
                call_id: 1,
                tag: "code/f/1".into(),
                prompt_tokens: Some(420),
                completion_tokens: Some(7),
                cached_tokens: None,
                first_token_ms: Some(1_500),
                total_ms: Some(2_400),
                waste: None,
            }]
        );
    }

    #[test]
    fn a_reply_with_nothing_after_it_before_the_next_ask_is_wasted_and_says_why() {
        let records = tape(vec![
            // No code in it: asked once more, which gave code.
            (0, request(1, code_of("f"), "code/f/1")),
            (10, delta(1)),
            (20, reply(1, 100, None)),
            (30, request(2, code_of("f"), "code/f/1/retry")),
            (40, delta(2)),
            (50, reply(2, 130, None)),
            (60, code("f", 1)),
            // A repair that looped, one cut at the limit, one that failed.
            (
                70,
                request(3, Purpose::Reflect { node: "f".into() }, "repair/f/2"),
            ),
            (80, delta(3)),
            (
                90,
                Event::ModelError(ModelErrorEvent {
                    call_id: 3,
                    message: "the reply repeats itself: ...".into(),
                    usage: Some(Usage::new(300, 2_000)),
                }),
            ),
            (
                100,
                request(4, Purpose::Reflect { node: "f".into() }, "repair/f/2"),
            ),
            (110, delta(4)),
            (120, reply(4, 300, Some("length"))),
            (
                130,
                request(5, Purpose::Reflect { node: "f".into() }, "repair/f/2"),
            ),
            (
                140,
                Event::ModelError(ModelErrorEvent {
                    call_id: 5,
                    message: "HTTP 500".into(),
                    usage: None,
                }),
            ),
            // Another node's code, while this one asks: not this call's product.
            (150, request(6, code_of("g"), "code/g/1")),
            (160, reply(6, 90, None)),
            (170, request(7, code_of("f"), "fresh/f/2")),
            (175, reply(7, 90, None)),
            (180, code("g", 1)),
        ]);
        let figures = call_figures(&records, |m| m.starts_with("the reply repeats itself"));
        let wastes: Vec<Option<Waste>> = figures.iter().map(|f| f.waste).collect();
        assert_eq!(
            wastes,
            vec![
                Some(Waste::Unused),
                None,
                Some(Waste::Looped),
                Some(Waste::Cut),
                Some(Waste::Failed),
                None,
                Some(Waste::Unused),
            ]
        );
        assert_eq!(figures[2].prompt_tokens, Some(300));
        assert_eq!(figures[4].first_token_ms, None);
        assert_eq!(figures[4].prompt_tokens, None);
    }

    #[test]
    fn tests_plans_reviews_test_fixes_and_votes_count_as_used() {
        let f = || "f".to_string();
        let records = tape(vec![
            (0, request(1, Purpose::Plan, "plan")),
            (1, reply(1, 10, None)),
            (2, Event::Plan(PlanEvent { specs: vec![] })),
            (3, request(2, Purpose::Tests { node: f() }, "tests/f")),
            (4, reply(2, 10, None)),
            (
                5,
                Event::Tests(TestsEvent {
                    node: f(),
                    code: "def test_f(): pass".into(),
                    source: CodeSource::Model,
                }),
            ),
            // Two candidates (the second never loaded), the inputs, the vote.
            (6, request(3, code_of("f"), "code/f/1")),
            (7, reply(3, 10, None)),
            (8, request(4, code_of("f"), "code/f/1/c2")),
            (9, reply(4, 10, None)),
            (10, request(5, Purpose::Inputs { node: f() }, "inputs/f")),
            (11, reply(5, 10, None)),
            (
                12,
                Event::Candidates(CandidatesEvent {
                    node: f(),
                    iteration: 1,
                    candidates: vec![
                        Candidate {
                            code: "a".into(),
                            loaded: true,
                            score: 1,
                            call_id: Some(3),
                        },
                        Candidate {
                            code: "b".into(),
                            loaded: false,
                            score: 0,
                            call_id: Some(4),
                        },
                    ],
                    inputs: 3,
                    proposed: 1,
                    chosen: 0,
                    note: None,
                }),
            ),
            (13, code("f", 1)),
            (14, request(6, Purpose::Review { node: f() }, "review/f/1")),
            (15, reply(6, 10, None)),
            (
                16,
                Event::Review(ReviewEvent {
                    node: f(),
                    iteration: 1,
                    verdict: crate::review::ReviewVerdict::Ok,
                    findings: vec![],
                    call_id: Some(6),
                }),
            ),
            // A test fix refused, then one applied.
            (17, request(7, Purpose::Reflect { node: f() }, "repair/f/2")),
            (18, reply(7, 10, None)),
            (19, tests_changed(false)),
            (20, request(8, Purpose::Reflect { node: f() }, "repair/f/2")),
            (21, reply(8, 10, None)),
            (22, tests_changed(true)),
        ]);
        let wastes: Vec<(String, Option<Waste>)> = call_figures(&records, never)
            .into_iter()
            .map(|f| (f.tag, f.waste))
            .collect();
        let unused = Some(Waste::Unused);
        assert_eq!(
            wastes,
            vec![
                ("plan".into(), None),
                ("tests/f".into(), None),
                ("code/f/1".into(), None),
                ("code/f/1/c2".into(), unused),
                ("inputs/f".into(), None),
                ("review/f/1".into(), None),
                ("repair/f/2".into(), unused),
                ("repair/f/2".into(), None),
            ]
        );
    }

    #[test]
    fn a_call_the_tape_never_ended_failed() {
        let records = tape(vec![
            (0, request(1, code_of("f"), "code/f/1")),
            (5, delta(1)),
        ]);
        let figures = call_figures(&records, never);
        assert_eq!(figures[0].waste, Some(Waste::Failed));
        assert_eq!(figures[0].first_token_ms, Some(5));
        assert_eq!(figures[0].total_ms, None);
    }

    #[test]
    fn percentiles_by_the_nearest_rank() {
        let v = [5, 1, 4, 2, 3, 10, 9, 8, 7, 6];
        assert_eq!(percentile(&v, 50), Some(5));
        assert_eq!(percentile(&v, 90), Some(9));
        assert_eq!(percentile(&v, 100), Some(10));
        assert_eq!(percentile(&v, 0), Some(1));
        assert_eq!(percentile(&[7], 90), Some(7));
        assert_eq!(percentile(&[], 50), None);
    }
}
