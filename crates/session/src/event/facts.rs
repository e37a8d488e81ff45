//! What an event says of itself beyond its fields, answered once beside
//! its payload (`impl Payload for NameEvent` in the family's file): its
//! tag, what it is about, whether it is a streamed piece, how it changes a
//! pause, what an edited prompt asked for that it delivers, what a call's
//! reply was made into. The rules that read these (the tape's flush, the
//! fold's pause and prompt edit, the node a cursor follows, a reply used,
//! the browser player's scope) hold no match over
//! events, so a new event answers them all in one place, and `Facts` has
//! no default: its author names every field.

use super::{Purpose, Step};

/// An event's payload: the facts every consumer asks of it.
pub trait Payload {
    fn facts(&self) -> Facts<'_>;
}

/// The facts of one event. Built with every field named (there is no
/// `Default`): a new event's author answers each.
#[derive(Debug, Clone, Copy)]
pub struct Facts<'a> {
    /// The tag the tape writes (`"type"`): snake_case of the variant's name.
    pub kind: &'static str,
    /// The node, model call and run whose view it changes.
    pub about: About<'a>,
    /// A streamed piece of a reply, of reasoning or of a run's output: the
    /// tape writer flushes these in batches (a crash loses at most the
    /// pieces of the step under way), and a view appends them to their
    /// call's or run's text. Everything else ends a step.
    pub streamed: bool,
    /// How it changes whether the engine is paused (`pause_after`).
    pub pause: PauseChange<'a>,
    /// What a call's edited prompt asked for that it delivers, which spends
    /// the edit (`State::spend_prompt_edit`).
    pub delivers: Delivers<'a>,
    /// What a call asked for that it is made of, which counts the call's
    /// reply used when it follows the reply before the next request about
    /// its node (`call_figures`): code from a reply, tests the model
    /// wrote, a test fix applied, inputs proposed for a vote.
    pub uses: Delivers<'a>,
}

/// The node, model call and run an event changes the view of: none of
/// them for the session's own events (the plan, a pause, a notice, the
/// end), which can change anything.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct About<'a> {
    pub node: Option<&'a str>,
    pub call: Option<u64>,
    pub run: Option<u64>,
    /// It shows the engine at work on `node` (a node blocked by another's
    /// failure is not).
    pub at_work: bool,
}

impl<'a> About<'a> {
    /// The session as a whole.
    pub const SESSION: About<'static> = About {
        node: None,
        call: None,
        run: None,
        at_work: false,
    };

    /// A node, the engine at work on it.
    pub fn node(node: &'a str) -> About<'a> {
        About {
            node: Some(node),
            ..About::SESSION
        }
        .working()
    }

    /// A model call (its node is its purpose's, in the state).
    pub fn call(call_id: u64) -> About<'a> {
        About {
            call: Some(call_id),
            ..About::SESSION
        }
    }

    /// A run (its node is the run's, in the state).
    pub fn run(run_id: u64) -> About<'a> {
        About {
            run: Some(run_id),
            ..About::SESSION
        }
    }

    fn working(self) -> About<'a> {
        About {
            at_work: true,
            ..self
        }
    }

    /// The node it shows the engine at work on.
    pub fn node_at_work(&self) -> Option<&'a str> {
        self.node.filter(|_| self.at_work)
    }

    /// About the session as a whole, no node, call or run of its own.
    pub fn is_session(&self) -> bool {
        self.node.is_none() && self.call.is_none() && self.run.is_none()
    }
}

/// How an event changes whether the engine is paused.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PauseChange<'a> {
    /// No change.
    Keeps,
    /// The engine pauses before this step.
    Before(&'a Step),
    /// The pause is over: approved, skipped or cancelled, or the session
    /// ended or went on anew.
    Ends,
    /// A step began: it ends a pause before this very step, and no other
    /// (nodes work in parallel: one approved starts its run just after the
    /// next one paused).
    Begins(Begun<'a>),
}

/// A step that began.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Begun<'a> {
    Call(&'a Purpose),
    Run {
        node: Option<&'a str>,
        iteration: u32,
    },
}

impl Begun<'_> {
    /// Whether `step` is the step paused before that this one begins.
    pub fn is(&self, step: &Step) -> bool {
        match (step, self) {
            (Step::ModelCall { purpose, .. } | Step::Prompt { purpose, .. }, Begun::Call(p)) => {
                purpose == *p
            }
            (
                Step::Run { node, iteration },
                Begun::Run {
                    node: n,
                    iteration: i,
                },
            ) => node.as_deref() == *n && iteration == i,
            (
                Step::ModelCall { .. }
                | Step::Prompt { .. }
                | Step::Run { .. }
                | Step::TestFix { .. }
                | Step::SuspectTest { .. }
                | Step::Review { .. },
                Begun::Call(_) | Begun::Run { .. },
            ) => false,
        }
    }
}

/// What a model call asked for that an event delivers.
#[derive(Debug, Clone, Copy)]
pub enum Delivers<'a> {
    Nothing,
    /// All that was asked (the session ended).
    All,
    /// What a call about `node` asks, for the purposes `asked_by` accepts.
    Asked {
        node: Option<&'a str>,
        asked_by: fn(&Purpose) -> bool,
    },
}

impl<'a> Delivers<'a> {
    /// What a call about `node` asks, for the purposes `asked_by` accepts.
    pub fn asked(node: &'a str, asked_by: fn(&Purpose) -> bool) -> Delivers<'a> {
        Delivers::Asked {
            node: Some(node),
            asked_by,
        }
    }

    /// Whether it delivers what a call made for `purpose` asked.
    pub fn answers(&self, purpose: &Purpose) -> bool {
        match self {
            Delivers::Nothing => false,
            Delivers::All => true,
            Delivers::Asked { node, asked_by } => asked_by(purpose) && purpose.node() == *node,
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::event::*;

    fn status(status: NodeStatus) -> Event {
        Event::NodeStatus(NodeStatusEvent {
            node: "f".into(),
            status,
        })
    }

    #[test]
    fn a_node_blocked_by_another_is_not_at_work() {
        assert_eq!(
            status(NodeStatus::Failed).facts().about.node_at_work(),
            Some("f")
        );
        let blocked_event = status(NodeStatus::Blocked);
        let blocked = blocked_event.facts().about;
        assert_eq!(blocked.node_at_work(), None);
        assert_eq!(blocked.node, Some("f"), "its view changes all the same");
    }

    #[test]
    fn a_code_version_delivers_its_node_s_code_or_repair_and_nothing_else() {
        let code = Event::Code(CodeEvent {
            node: "f".into(),
            iteration: 2,
            code: String::new(),
            source: CodeSource::Model,
            notes: Vec::new(),
        });
        let delivers = code.facts().delivers;
        let node = || "f".to_string();
        assert!(delivers.answers(&Purpose::Repair { node: node() }));
        assert!(delivers.answers(&Purpose::Code { node: node() }));
        assert!(!delivers.answers(&Purpose::Reflect { node: node() }));
        assert!(!delivers.answers(&Purpose::Code { node: "g".into() }));
        assert!(!delivers.answers(&Purpose::Plan));
    }

    #[test]
    fn streamed_pieces_are_replies_reasoning_and_output_alone() {
        let piece = Event::ModelReasoning(ModelReasoningEvent {
            call_id: 3,
            text: "hm".into(),
        });
        assert!(piece.facts().streamed);
        assert_eq!(piece.facts().about.call, Some(3));
        let reply = Event::ModelContinued(ModelContinuedEvent { call_id: 3 });
        assert!(!reply.facts().streamed);
    }
}
