//! Pictures drawn with the terminal's own graphics: the kitty graphics
//! protocol, sixel or iTerm2 inline images, with half-blocks (`picture.rs`)
//! where none of them can be used.
//!
//! Which one is chosen once, before the workbench's first frame
//! (`detect`): `[ui] graphics` (or `--graphics`, `CODELOOP_GRAPHICS`) may
//! name one; `auto` reads the environment (`detect.rs`: kitty's
//! `KITTY_WINDOW_ID`, iTerm2's `TERM_PROGRAM`, WezTerm's variables, tmux,
//! a dumb `TERM`, ...) and, where that does not tell, asks the terminal
//! (`query.rs`: the kitty graphics query, the cell size and the primary
//! device attributes, whose `4` is sixel; answered within
//! `query::TIMEOUT` or taken as no). Inside tmux pictures stay
//! half-blocks unless its `allow-passthrough` is on and the terminal
//! outside is known. Every choice carries its reason, which `codeloop
//! doctor` prints.
//!
//! The escapes themselves are ratatui-image's (`shown.rs`): the picture,
//! fitted into the pane at the terminal's cell size, is written into the
//! first cell and the other cells are skipped (sixel, iTerm2) or hold
//! kitty's Unicode placeholders, so the frame's diff erases it when the
//! pane closes and redraws it when the picture or the size changes.

pub(crate) mod detect;
pub(crate) mod query;
pub(crate) mod shown;

use std::fmt;
use std::str::FromStr;

pub use detect::Env;

/// What `[ui] graphics` asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Setting {
    /// Detect it (the default).
    #[default]
    Auto,
    Kitty,
    Sixel,
    Iterm2,
    Halfblocks,
}

impl Setting {
    /// The values the key and the flag take.
    pub const NAMES: [&'static str; 5] = ["auto", "kitty", "sixel", "iterm2", "halfblocks"];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Setting::Auto => "auto",
            Setting::Kitty => "kitty",
            Setting::Sixel => "sixel",
            Setting::Iterm2 => "iterm2",
            Setting::Halfblocks => "halfblocks",
        }
    }

    /// The protocol a setting forces (None: `auto`).
    pub(crate) fn forced(self) -> Option<Protocol> {
        match self {
            Setting::Auto => None,
            Setting::Kitty => Some(Protocol::Kitty),
            Setting::Sixel => Some(Protocol::Sixel),
            Setting::Iterm2 => Some(Protocol::Iterm2),
            Setting::Halfblocks => Some(Protocol::Halfblocks),
        }
    }
}

impl FromStr for Setting {
    type Err = String;

    fn from_str(s: &str) -> Result<Setting, String> {
        Ok(match s.trim() {
            "auto" => Setting::Auto,
            "kitty" => Setting::Kitty,
            "sixel" => Setting::Sixel,
            "iterm2" => Setting::Iterm2,
            "halfblocks" => Setting::Halfblocks,
            other => {
                return Err(format!(
                    "{other:?} is no graphics protocol: it is \"auto\", \"kitty\", \"sixel\", \"iterm2\" or \"halfblocks\""
                ));
            }
        })
    }
}

/// How pictures are drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Protocol {
    /// Unicode half-blocks, two pixels a cell (`picture.rs`).
    #[default]
    Halfblocks,
    /// The kitty graphics protocol (APC `_G`), with Unicode placeholders.
    Kitty,
    /// DEC sixel (DCS `q`).
    Sixel,
    /// iTerm2's inline images (OSC 1337 `File=inline=1`).
    Iterm2,
}

impl Protocol {
    /// In words, for the pictures view's footer and `doctor`.
    pub fn words(self) -> &'static str {
        match self {
            Protocol::Halfblocks => "half-blocks (▀), two pixels a cell",
            Protocol::Kitty => "kitty graphics",
            Protocol::Sixel => "sixel",
            Protocol::Iterm2 => "iTerm2 inline images",
        }
    }
}

/// The choice made, with what it needs to draw and why it was made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Graphics {
    pub protocol: Protocol,
    /// A cell's size in pixels (width, height): how many pixels a picture
    /// may take in a pane. Needed by every protocol but half-blocks.
    pub cell: Option<(u16, u16)>,
    /// The escapes go through tmux's passthrough (`ESC P tmux; ... ESC \`).
    pub tmux: bool,
    /// Why, in words ("KITTY_WINDOW_ID is set: kitty").
    pub why: String,
}

impl Default for Graphics {
    /// Half-blocks: what a view that never asked (tests, snapshots) draws.
    fn default() -> Graphics {
        Graphics::halfblocks("not detected")
    }
}

impl Graphics {
    pub(crate) fn halfblocks(why: impl Into<String>) -> Graphics {
        Graphics {
            protocol: Protocol::Halfblocks,
            cell: None,
            tmux: false,
            why: why.into(),
        }
    }

    /// The cell size to draw with, where the protocol needs one.
    pub(crate) fn cell_size(&self) -> Option<(u16, u16)> {
        match self.protocol {
            Protocol::Halfblocks => None,
            _ => self.cell,
        }
    }
}

impl fmt::Display for Graphics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.protocol.words(), self.why)?;
        if let (Some((w, h)), true) = (self.cell, self.protocol != Protocol::Halfblocks) {
            write!(f, " (cells of {w}×{h} pixels)")?;
        }
        Ok(())
    }
}

/// Choose how pictures are drawn in the terminal this process runs in:
/// the setting, the environment, and where they do not tell, the
/// terminal's answer to a query (only when standard input and output are
/// a terminal; the terminal is put in raw mode for it if it is not).
/// Never waits longer than `query::TIMEOUT`.
pub fn detect(setting: Setting) -> Graphics {
    let env = Env::from_process();
    let tty = query::is_terminal();
    let window = query::window_cell_size();
    let passthrough = if env.in_tmux() {
        detect::tmux_passthrough()
    } else {
        None
    };
    let first = match detect::choose(setting, &env, passthrough) {
        detect::Choice::Ask if !tty => detect::Choice::Use(
            Protocol::Halfblocks,
            "standard input or output is not a terminal, so it was not asked".into(),
        ),
        first => first,
    };
    let needs_cell = match &first {
        detect::Choice::Ask => true,
        detect::Choice::Use(p, _) | detect::Choice::Forced(p, _) => {
            *p != Protocol::Halfblocks && window.is_none()
        }
    };
    let answers = if tty && needs_cell {
        query::ask(query::TIMEOUT)
    } else {
        None
    };
    detect::settle(first, &env, window, answers.as_ref())
}

#[cfg(test)]
mod tests;
