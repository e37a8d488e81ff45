//! Ringing the terminal when the engine waits for the person or a session
//! ends: BEL everywhere, and a desktop notification (OSC 9 or OSC 777) where
//! the terminal is known to show one. The bytes are written by the event loop
//! through the terminal backend, never from render.

use codeloop_session::story::{self, What};
use codeloop_session::{Record, State};

/// Which desktop-notification escape the terminal understands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Desktop {
    /// BEL only.
    None,
    /// `ESC ] 9 ; text BEL` (iTerm2, WezTerm, Ghostty, Windows Terminal, kitty).
    Osc9,
    /// `ESC ] 777 ; notify ; title ; text BEL` (urxvt, foot, VTE terminals).
    Osc777,
}

impl Desktop {
    /// From `TERM_PROGRAM` and `TERM`. Inside tmux or screen the OSC would not
    /// reach the outer terminal: BEL alone, which tmux passes on as an alert.
    pub fn detect(term_program: Option<&str>, term: Option<&str>, vte: bool) -> Desktop {
        let term = term.unwrap_or("");
        if term.starts_with("tmux") || term.starts_with("screen") {
            return Desktop::None;
        }
        match term_program.unwrap_or("") {
            "iTerm.app" | "WezTerm" | "ghostty" => return Desktop::Osc9,
            _ => {}
        }
        if term.contains("kitty") || term.contains("ghostty") || term.contains("wezterm") {
            Desktop::Osc9
        } else if term.starts_with("rxvt") || term.starts_with("foot") || vte {
            Desktop::Osc777
        } else {
            Desktop::None
        }
    }

    /// From this process's environment.
    pub(crate) fn from_env() -> Desktop {
        let var = |k: &str| std::env::var(k).ok();
        Desktop::detect(
            var("TERM_PROGRAM").as_deref(),
            var("TERM").as_deref(),
            var("VTE_VERSION").is_some(),
        )
    }

    /// The bytes that ring the terminal with `text`.
    pub fn escape(self, text: &str) -> String {
        // Control characters in the text would end the sequence early.
        let text: String = text
            .chars()
            .map(|c| if c.is_control() || c == ';' { ' ' } else { c })
            .collect();
        match self {
            Desktop::None => "\x07".to_string(),
            Desktop::Osc9 => format!("\x07\x1b]9;codeloop: {text}\x07"),
            Desktop::Osc777 => format!("\x07\x1b]777;notify;codeloop;{text}\x07"),
        }
    }
}

/// What a live record rings the terminal with: the story's line of a
/// pause (the engine waits for the person) or of the session's end; None
/// for any other (`state` has the record folded in).
pub(crate) fn notice_for(state: &State, record: &Record) -> Option<String> {
    let line = story::tell(state, record)?;
    if matches!(line.what, What::Paused) {
        Some(line.text)
    } else if matches!(line.what, What::Finished(_)) {
        Some(format!("session ended: {}", line.text))
    } else {
        None
    }
}

/// What opening a tape says first when it did not finish or was damaged.
pub(crate) fn opening_note(unfinished: bool, damage: Option<&str>) -> Option<String> {
    match (unfinished, damage) {
        (false, None) => None,
        (true, None) => Some(
            "this session did not finish (killed, crashed, or still running): shown up to its last event".into(),
        ),
        (false, Some(damage)) => Some(format!("tape damage: {damage}")),
        (true, Some(damage)) => Some(format!("did not finish; tape damage: {damage}")),
    }
}

/// The OSC 52 sequence that puts `text` on the clipboard of the terminal the
/// person sits at (over ssh too). Inside tmux it goes twice: as it is (tmux
/// takes it with `set-clipboard on`) and in a DCS passthrough (to the outer
/// terminal with `allow-passthrough on`).
pub fn osc52(text: &str) -> String {
    osc52_for(text, std::env::var_os("TMUX").is_some())
}

/// [`osc52`] for a terminal inside tmux or not.
pub fn osc52_for(text: &str, inside_tmux: bool) -> String {
    let osc = format!("\x1b]52;c;{}\x07", base64(text.as_bytes()));
    if inside_tmux {
        format!("{osc}\x1bPtmux;{}\x1b\\", osc.replace('\x1b', "\x1b\x1b"))
    } else {
        osc
    }
}

fn base64(bytes: &[u8]) -> String {
    const ABC: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ABC[(n >> (18 - 6 * i) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}
