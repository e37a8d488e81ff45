//! Entering and leaving the terminal: raw mode, the alternate screen, mouse
//! capture and bracketed paste. The terminal is restored on quit, on error
//! (the guard's drop) and on panic (the hook).

use std::io::{self, IsTerminal, Stdout};

use crossterm::event::{
    DisableBracketedPaste, DisableMouseCapture, EnableBracketedPaste, EnableMouseCapture,
};
use crossterm::execute;
use crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;

pub(crate) type Term = Terminal<CrosstermBackend<Stdout>>;

#[derive(Debug, thiserror::Error)]
pub enum TerminalError {
    #[error(
        "the workbench needs a terminal, and {0} is not one; for scripts use `codeloop run` (headless)"
    )]
    NotATerminal(&'static str),
    #[error("cannot set up the terminal: {0}")]
    Setup(#[from] io::Error),
}

/// Restores the terminal when dropped.
pub struct TerminalGuard {
    _private: (),
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        restore();
    }
}

/// Take over the terminal. Keep the guard alive as long as the app runs.
pub fn enter() -> Result<(Term, TerminalGuard), TerminalError> {
    if !io::stdout().is_terminal() {
        return Err(TerminalError::NotATerminal("standard output"));
    }
    if !io::stdin().is_terminal() {
        return Err(TerminalError::NotATerminal("standard input"));
    }
    install_panic_hook();
    enable_raw_mode()?;
    let guard = TerminalGuard { _private: () };
    execute!(
        io::stdout(),
        EnterAlternateScreen,
        EnableMouseCapture,
        EnableBracketedPaste
    )?;
    let terminal = Terminal::new(CrosstermBackend::new(io::stdout()))?;
    Ok((terminal, guard))
}

/// Put the terminal back as it was (safe to call more than once).
pub(crate) fn restore() {
    let _ = execute!(
        io::stdout(),
        DisableBracketedPaste,
        DisableMouseCapture,
        LeaveAlternateScreen,
        crossterm::cursor::Show
    );
    let _ = disable_raw_mode();
}

/// Take the terminal back after handing it over (an external editor ran).
pub(crate) fn resume() -> io::Result<()> {
    enable_raw_mode()?;
    execute!(
        io::stdout(),
        EnterAlternateScreen,
        crossterm::terminal::Clear(crossterm::terminal::ClearType::All),
        EnableMouseCapture,
        EnableBracketedPaste
    )
}

/// On panic: restore the terminal first, so the message is readable.
fn install_panic_hook() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        restore();
        previous(info);
    }));
}
