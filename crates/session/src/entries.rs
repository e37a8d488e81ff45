//! The session-wide parts of the state, each named: the prompt the person
//! edited, the notices, the assembled program, the pictures runs left and
//! where each resumed segment began.

use super::event::{NoticeLevel, Purpose};
use codeloop_protocol::ChatMessage;
use codeloop_protocol::picture::Picture;

/// The prompt as the person edited it (`Command::EditPrompt`), for the
/// call about to be made.
#[derive(Debug, Clone, PartialEq)]
pub struct PromptEdit {
    /// The purpose of the call it is for (a parallel call does not take it).
    pub purpose: Purpose,
    /// The messages to send instead of the written prompt.
    pub messages: Vec<ChatMessage>,
}

/// A notice the engine gave (`Event::Notice`).
#[derive(Debug, Clone, PartialEq)]
pub struct Notice {
    pub level: NoticeLevel,
    pub message: String,
}

/// The assembled program (`Event::Program`): its code and its tests.
#[derive(Debug, Clone, PartialEq)]
pub struct Program {
    pub code: String,
    pub tests: String,
}

/// A picture a run left (`Event::Picture`), with the run that left it.
#[derive(Debug, Clone, PartialEq)]
pub struct RunPicture {
    /// None: the program's run through its entry point.
    pub run_id: Option<u64>,
    pub picture: Picture,
}

/// Where a resumed segment began (`Event::Resumed`).
#[derive(Debug, Clone, PartialEq)]
pub struct Resume {
    /// The `Resumed` record's seq.
    pub seq: u64,
    /// How the segment before it ended.
    pub after: String,
}
