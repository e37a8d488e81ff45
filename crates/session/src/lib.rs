//! The session: its events, the tape they are written to, and the state they fold into.
//!
//! This module knows nothing of models, processes or terminals.
#![warn(unreachable_pub)]

pub mod call_figures;
pub mod consensus;
mod entries;
mod event;
pub mod figures;
mod handle;
pub mod index;
pub mod lineage;
pub mod moments;
pub mod outcome;
mod parts;
mod pause;
mod plan;
pub mod policy;
pub mod prefix;
mod repairs;
pub mod report;
pub mod review;
mod segments;
pub mod session_fs;
pub mod state;
mod steering;
pub mod story;
mod tape;
pub mod tape_check;
mod tape_read;

pub use call_figures::{CallFigure, Waste};
pub use consensus::{Candidate, CandidatesInfo};
pub use event::*;
pub use handle::EngineHandle;
pub use outcome::Outcome;
pub use plan::{Dag, PLAN_ATTEMPTS, PlanError, edit_spec};
pub use policy::RepairPolicy;
pub use prefix::PrefixReuse;
pub use repairs::VersionScore;
pub use review::{ReviewFinding, ReviewInfo, ReviewVerdict, Severity};
pub use state::State;
pub use tape::{SkippedLine, TapeContents, TapeError, TapeWriter, parse_tape, read_tape};
pub use tape_read::{TapeEnd, TapeStream};
