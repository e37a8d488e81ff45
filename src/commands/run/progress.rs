//! `run`'s progress: the story of the tape (`session::story`) as lines on
//! stderr, one view of it (`resume` borrows it). Each event's line is the
//! story's (`story::tell`); this file only lays it out: a tag column, the
//! lines under it indented, a colour by its level on a terminal.

use std::io::IsTerminal;

use super::say;
use crate::session::story::{self, Level, Line, What};
use crate::session::{Record, State};

/// The colours a line is painted in on a terminal (SGR codes).
const RED: &str = "31";
const GREEN: &str = "32";
const YELLOW: &str = "33";

/// The indent of a line that continues the one before it.
const MORE: &str = "        ";

/// Progress lines on stderr, one view of the tape.
pub(crate) struct Progress {
    state: State,
    description: String,
    color: bool,
}

impl Progress {
    pub(crate) fn new(description: &str) -> Progress {
        Progress {
            state: State::default(),
            description: description.to_string(),
            color: std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none(),
        }
    }

    fn paint(&self, level: Level, text: &str) -> String {
        let code = match level {
            Level::Good => GREEN,
            Level::Warning => YELLOW,
            Level::Bad => RED,
            Level::Plain | Level::Quiet => return text.to_string(),
        };
        if self.color {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }

    pub(crate) fn show(&mut self, record: &Record) {
        self.state.apply(record);
        if let Some(text) = story::tell(&self.state, record).and_then(|l| self.render(&l)) {
            say(&text);
        }
    }

    /// Fold a record in without a line (a resumed session's history).
    pub(crate) fn absorb(&mut self, record: &Record) {
        self.state.apply(record);
    }

    /// A story line as `run` prints it, or None for one it leaves to the
    /// workbench (a pause: `run` never steps).
    fn render(&self, line: &Line) -> Option<String> {
        let head = match &line.what {
            // The session's start, a fork, a resume: its id, and under it
            // the model this process runs with, then the story's lines.
            What::Session if line.more.is_empty() => format!("codeloop: {}", line.text),
            What::Session => format!("codeloop: {}\n  model:   {}", line.text, self.description),
            What::Paused => return None,
            What::Notice(_) => format!("  {}: {}", line.what.label(), line.text),
            What::ModelRestart => format!("{MORE}{}", line.text),
            What::Status(_) => format!("{} {}", line.text, line.node.as_deref().unwrap_or("")),
            // The outcome's word in capitals, as on the workbench's badge.
            What::Finished(outcome) => {
                let label = format!("{}: ", outcome.label());
                let rest = line.text.strip_prefix(&label).unwrap_or(&line.text);
                format!("result: {}: {rest}", outcome.label().to_uppercase())
            }
            What::Plan | What::ModelError => format!("{}: {}", line.what.label(), line.text),
            What::PlanError => format!("{} {}", line.what.label(), line.text),
            What::Tests
            | What::TestChange { .. }
            | What::Code { .. }
            | What::Check { .. }
            | What::Vote { .. }
            | What::Review { .. }
            | What::Run { .. }
            | What::Failure { .. }
            | What::Attempt { .. }
            | What::Decision { .. }
            | What::Reflection { .. }
            | What::ProgramOutput
            | What::Picture
            | What::Steer { .. } => {
                let text = match line.subject() {
                    Some(subject) => format!("{subject}: {}", line.text),
                    None => line.text.clone(),
                };
                format!("{:<7} {}", line.what.label(), text.replace('\n', " "))
            }
        };
        let mut out = self.paint(line.level, &head);
        // Figures beside it; what a program's run as a program said after
        // what it printed.
        let detail = line.detail.as_deref();
        if let (Some(d), false) = (detail, matches!(line.what, What::ProgramOutput)) {
            out.push_str(&format!(" ({d})"));
        }
        let indent = match &line.what {
            What::Session | What::Plan | What::Finished(_) => "  ",
            What::ProgramOutput => "",
            _ => MORE,
        };
        for more in &line.more {
            out.push_str(&format!("\n{indent}{more}"));
        }
        if let (Some(d), true) = (detail, matches!(line.what, What::ProgramOutput)) {
            out.push_str(&format!(
                "\n{}",
                self.paint(line.level, &format!("{MORE}{d}"))
            ));
        }
        Some(out)
    }
}
