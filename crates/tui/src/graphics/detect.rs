//! Which protocol, from the setting, the environment and, where those do
//! not tell, the terminal's answers: pure functions of what they are
//! given (the environment is read once into an `Env`), so each rule is
//! tested with the environment of the terminal it is about.

use super::query::Answers;
use super::{Graphics, Protocol, Setting};

/// The variables the choice reads, read once.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Env {
    pub(crate) term: Option<String>,
    pub(crate) term_program: Option<String>,
    pub(crate) lc_terminal: Option<String>,
    pub(crate) kitty_window_id: bool,
    pub(crate) iterm_session_id: bool,
    /// `WEZTERM_EXECUTABLE` or `WEZTERM_PANE`.
    pub(crate) wezterm: bool,
    pub(crate) konsole_version: Option<String>,
    /// `TMUX` (the socket of the tmux this runs in).
    pub(crate) tmux: bool,
    /// `STY` (GNU screen's session).
    pub(crate) screen: bool,
    /// `NO_COLOR`, set and not empty.
    pub(crate) no_color: bool,
}

impl Env {
    /// The environment as `get` tells it (tests give a map).
    pub(crate) fn from_vars(get: impl Fn(&str) -> Option<String>) -> Env {
        let set = |name: &str| get(name).is_some_and(|v| !v.is_empty());
        let text = |name: &str| get(name).filter(|v| !v.is_empty());
        Env {
            term: text("TERM"),
            term_program: text("TERM_PROGRAM"),
            lc_terminal: text("LC_TERMINAL"),
            kitty_window_id: set("KITTY_WINDOW_ID"),
            iterm_session_id: set("ITERM_SESSION_ID"),
            wezterm: set("WEZTERM_EXECUTABLE") || set("WEZTERM_PANE"),
            konsole_version: text("KONSOLE_VERSION"),
            tmux: set("TMUX"),
            screen: set("STY"),
            no_color: set("NO_COLOR"),
        }
    }

    /// This process's environment.
    pub(crate) fn from_process() -> Env {
        Env::from_vars(|name| std::env::var(name).ok())
    }

    fn term(&self) -> &str {
        self.term.as_deref().unwrap_or("")
    }

    fn program(&self) -> &str {
        self.term_program.as_deref().unwrap_or("")
    }

    /// Inside tmux: `TMUX`, or a `TERM` or `TERM_PROGRAM` that says so.
    pub(crate) fn in_tmux(&self) -> bool {
        self.tmux || self.term().starts_with("tmux") || self.program() == "tmux"
    }

    /// Inside GNU screen (and not tmux, whose TERM may also be screen-*).
    fn in_screen(&self) -> bool {
        !self.in_tmux() && (self.screen || self.term().starts_with("screen"))
    }

    /// The terminal outside a multiplexer, where its variables tell it
    /// (they are inherited, so they may be stale: only trusted where tmux
    /// passes images on at all).
    fn outer(&self) -> Option<(Protocol, &'static str)> {
        if self.kitty_window_id {
            return Some((Protocol::Kitty, "KITTY_WINDOW_ID is set"));
        }
        if self.iterm_session_id || self.lc_terminal.as_deref() == Some("iTerm2") {
            return Some((Protocol::Iterm2, "iTerm2's variables are set"));
        }
        if self.wezterm {
            return Some((Protocol::Iterm2, "WezTerm's variables are set"));
        }
        None
    }

    /// What the environment alone says of the terminal itself.
    fn direct(&self) -> Option<(Protocol, String)> {
        let term = self.term();
        let program = self.program();
        if self.kitty_window_id || term == "xterm-kitty" {
            return Some((Protocol::Kitty, "kitty (KITTY_WINDOW_ID or TERM)".into()));
        }
        if program.eq_ignore_ascii_case("ghostty") || term == "xterm-ghostty" {
            return Some((Protocol::Kitty, "Ghostty draws kitty graphics".into()));
        }
        if self.wezterm || program == "WezTerm" {
            // WezTerm's kitty support has no Unicode placeholders.
            return Some((Protocol::Iterm2, "WezTerm draws iTerm2 images".into()));
        }
        if program == "iTerm.app" || self.lc_terminal.as_deref() == Some("iTerm2") {
            return Some((Protocol::Iterm2, "iTerm2 (TERM_PROGRAM)".into()));
        }
        if program == "mintty" {
            return Some((Protocol::Iterm2, "mintty draws iTerm2 images".into()));
        }
        if let Some(v) = &self.konsole_version {
            // Konsole's sixel and kitty support misdraw, and its iTerm2
            // images are not proven here: asked for by name only.
            return Some((
                Protocol::Halfblocks,
                format!(
                    "Konsole ({v}) misdraws images; set graphics = \"sixel\" or \"iterm2\" to try one"
                ),
            ));
        }
        if term.starts_with("foot") {
            return Some((Protocol::Sixel, "foot draws sixel".into()));
        }
        if term == "mlterm" {
            return Some((Protocol::Sixel, "mlterm draws sixel".into()));
        }
        if term == "linux" {
            return Some((
                Protocol::Halfblocks,
                "the Linux console draws no images".into(),
            ));
        }
        if program == "Apple_Terminal" {
            return Some((Protocol::Halfblocks, "Terminal.app draws no images".into()));
        }
        if program == "vscode" {
            return Some((
                Protocol::Halfblocks,
                "VS Code's terminal draws images only when set to; set graphics = \"iterm2\" if it is".into(),
            ));
        }
        None
    }
}

/// The first step: a protocol with its reason, one the setting forces,
/// or ask the terminal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Choice {
    Use(Protocol, String),
    Forced(Protocol, String),
    Ask,
}

/// What the setting and the environment say. `passthrough`: inside tmux,
/// whether its `allow-passthrough` is on (None: not known).
pub(crate) fn choose(setting: Setting, env: &Env, passthrough: Option<bool>) -> Choice {
    if let Some(forced) = setting.forced() {
        return Choice::Forced(
            forced,
            format!(
                "graphics = \"{}\" (the config, CODELOOP_GRAPHICS or --graphics)",
                setting.name()
            ),
        );
    }
    let term = env.term();
    if term.is_empty() || term == "dumb" {
        return Choice::Use(
            Protocol::Halfblocks,
            "TERM is unset or dumb: no graphics".into(),
        );
    }
    if env.no_color {
        return Choice::Use(
            Protocol::Halfblocks,
            "NO_COLOR is set: a plain terminal".into(),
        );
    }
    if env.in_tmux() {
        return match (passthrough, env.outer()) {
            (Some(true), Some((p, why))) => Choice::Use(
                p,
                format!("inside tmux with allow-passthrough on, and {why}"),
            ),
            (Some(true), None) => Choice::Use(
                Protocol::Halfblocks,
                "inside tmux: the terminal outside it is not known; set graphics = \"kitty\", \"sixel\" or \"iterm2\" to force one".into(),
            ),
            _ => Choice::Use(
                Protocol::Halfblocks,
                "inside tmux, which passes images on only with `set -g allow-passthrough on`".into(),
            ),
        };
    }
    if env.in_screen() {
        return Choice::Use(
            Protocol::Halfblocks,
            "inside GNU screen, which passes no images on".into(),
        );
    }
    match env.direct() {
        Some((p, why)) => Choice::Use(p, why),
        None => Choice::Ask,
    }
}

/// The choice made whole: the terminal's answers where it was asked, and
/// the cell size (`window`: from the window size in pixels, else the
/// terminal's answer). A protocol but half-blocks needs a cell size: an
/// unforced choice without one is half-blocks; a forced one guesses 8×16.
pub(crate) fn settle(
    first: Choice,
    env: &Env,
    window: Option<(u16, u16)>,
    answers: Option<&Answers>,
) -> Graphics {
    let cell = window.or_else(|| answers.and_then(|a| a.cell));
    let tmux = env.in_tmux();
    let (protocol, why, forced) = match first {
        Choice::Use(p, why) => (p, why, false),
        Choice::Forced(p, why) => (p, why, true),
        Choice::Ask => match answers {
            None => (
                Protocol::Halfblocks,
                format!(
                    "the terminal did not answer the graphics query within {} ms",
                    super::query::TIMEOUT.as_millis()
                ),
                false,
            ),
            Some(a) if a.kitty => (
                Protocol::Kitty,
                "the terminal answered the kitty graphics query".into(),
                false,
            ),
            Some(a) if a.sixel => (
                Protocol::Sixel,
                "the terminal's device attributes include sixel (4)".into(),
                false,
            ),
            Some(_) => (
                Protocol::Halfblocks,
                "the terminal answered neither the kitty query nor with sixel in its device attributes".into(),
                false,
            ),
        },
    };
    if protocol == Protocol::Halfblocks {
        return Graphics::halfblocks(why);
    }
    match cell {
        Some(cell) => Graphics {
            protocol,
            cell: Some(cell),
            tmux,
            why,
        },
        None if forced => Graphics {
            protocol,
            cell: Some((8, 16)),
            tmux,
            why: format!("{why}; the terminal does not tell its cell size, so it is guessed"),
        },
        None => Graphics::halfblocks(format!(
            "{why}, but the terminal does not tell its cell size in pixels"
        )),
    }
}

/// Whether tmux passes escapes on (`allow-passthrough` on or all), asked
/// of the tmux this runs in; None where it cannot be asked.
pub(crate) fn tmux_passthrough() -> Option<bool> {
    let out = std::process::Command::new("tmux")
        .args(["show-options", "-gqv", "allow-passthrough"])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let value = String::from_utf8_lossy(&out.stdout).trim().to_string();
    Some(value == "on" || value == "all")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(vars: &[(&str, &str)]) -> Env {
        Env::from_vars(|name| {
            vars.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.to_string())
        })
    }

    fn pick(setting: Setting, vars: &[(&str, &str)], answers: Option<&Answers>) -> Graphics {
        let e = env(vars);
        settle(choose(setting, &e, None), &e, Some((9, 18)), answers)
    }

    #[test]
    fn the_environment_of_each_terminal_chooses_its_protocol() {
        let cases: &[(&[(&str, &str)], Protocol)] = &[
            (
                &[("TERM", "xterm-kitty"), ("KITTY_WINDOW_ID", "1")],
                Protocol::Kitty,
            ),
            (
                &[("TERM", "xterm-ghostty"), ("TERM_PROGRAM", "ghostty")],
                Protocol::Kitty,
            ),
            (
                &[("TERM", "xterm-256color"), ("TERM_PROGRAM", "iTerm.app")],
                Protocol::Iterm2,
            ),
            (
                &[("TERM", "xterm-256color"), ("LC_TERMINAL", "iTerm2")],
                Protocol::Iterm2,
            ),
            (
                &[
                    ("TERM", "xterm-256color"),
                    ("TERM_PROGRAM", "WezTerm"),
                    ("WEZTERM_EXECUTABLE", "/usr/bin/wezterm-gui"),
                ],
                Protocol::Iterm2,
            ),
            (&[("TERM", "foot")], Protocol::Sixel),
            (
                &[("TERM", "xterm-256color"), ("KONSOLE_VERSION", "230805")],
                Protocol::Halfblocks,
            ),
            (
                &[
                    ("TERM", "xterm-256color"),
                    ("TERM_PROGRAM", "Apple_Terminal"),
                ],
                Protocol::Halfblocks,
            ),
            (
                &[("TERM", "dumb"), ("KITTY_WINDOW_ID", "1")],
                Protocol::Halfblocks,
            ),
            (&[("KITTY_WINDOW_ID", "1")], Protocol::Halfblocks),
            (&[("TERM", "linux")], Protocol::Halfblocks),
            (
                &[("TERM", "xterm-kitty"), ("NO_COLOR", "1")],
                Protocol::Halfblocks,
            ),
        ];
        for (vars, want) in cases {
            let g = pick(Setting::Auto, vars, None);
            assert_eq!(g.protocol, *want, "{vars:?}: {g}");
            assert!(!g.why.is_empty());
        }
    }

    #[test]
    fn inside_tmux_pictures_stay_half_blocks_unless_passthrough_is_on_and_the_outside_known() {
        let vars = [
            ("TERM", "tmux-256color"),
            ("TMUX", "/tmp/tmux-0/default,1,0"),
            ("KITTY_WINDOW_ID", "3"),
        ];
        let e = env(&vars);
        for passthrough in [None, Some(false)] {
            let g = settle(
                choose(Setting::Auto, &e, passthrough),
                &e,
                Some((8, 16)),
                None,
            );
            assert_eq!(g.protocol, Protocol::Halfblocks, "{g}");
            assert!(g.why.contains("tmux"), "{g}");
        }
        let g = settle(
            choose(Setting::Auto, &e, Some(true)),
            &e,
            Some((8, 16)),
            None,
        );
        assert_eq!((g.protocol, g.tmux), (Protocol::Kitty, true), "{g}");
        // No outer terminal known: half-blocks even with passthrough.
        let e = env(&[("TERM", "screen-256color"), ("TMUX", "x")]);
        let g = settle(
            choose(Setting::Auto, &e, Some(true)),
            &e,
            Some((8, 16)),
            None,
        );
        assert_eq!(g.protocol, Protocol::Halfblocks);
        // GNU screen: never.
        let e = env(&[
            ("TERM", "screen"),
            ("STY", "1.pts"),
            ("KITTY_WINDOW_ID", "1"),
        ]);
        assert_eq!(
            settle(choose(Setting::Auto, &e, None), &e, Some((8, 16)), None).protocol,
            Protocol::Halfblocks
        );
    }

    #[test]
    fn the_setting_wins_over_the_environment() {
        let kitty = [("TERM", "xterm-kitty"), ("KITTY_WINDOW_ID", "1")];
        assert_eq!(
            pick(Setting::Halfblocks, &kitty, None).protocol,
            Protocol::Halfblocks
        );
        let g = pick(Setting::Sixel, &kitty, None);
        assert_eq!(g.protocol, Protocol::Sixel);
        assert!(g.why.contains("graphics = \"sixel\""), "{g}");
        // Forced inside tmux: through its passthrough.
        let e = env(&[("TERM", "tmux-256color"), ("TMUX", "x")]);
        let g = settle(choose(Setting::Iterm2, &e, Some(false)), &e, None, None);
        assert_eq!((g.protocol, g.tmux), (Protocol::Iterm2, true));
        assert_eq!(g.cell, Some((8, 16)), "a forced protocol guesses a cell");
    }

    #[test]
    fn an_unknown_terminal_is_asked_and_its_answers_decide() {
        let vars = [("TERM", "xterm-256color")];
        assert_eq!(choose(Setting::Auto, &env(&vars), None), Choice::Ask);
        let kitty = Answers {
            kitty: true,
            sixel: true,
            cell: Some((10, 20)),
            complete: true,
        };
        let e = env(&vars);
        let g = settle(Choice::Ask, &e, None, Some(&kitty));
        assert_eq!((g.protocol, g.cell), (Protocol::Kitty, Some((10, 20))));
        let sixel = Answers {
            kitty: false,
            ..kitty.clone()
        };
        assert_eq!(
            pick(Setting::Auto, &vars, Some(&sixel)).protocol,
            Protocol::Sixel
        );
        let none = Answers {
            kitty: false,
            sixel: false,
            ..kitty.clone()
        };
        assert_eq!(
            pick(Setting::Auto, &vars, Some(&none)).protocol,
            Protocol::Halfblocks
        );
        let silent = pick(Setting::Auto, &vars, None);
        assert_eq!(silent.protocol, Protocol::Halfblocks);
        assert!(silent.why.contains("did not answer"), "{silent}");
    }

    #[test]
    fn without_a_cell_size_an_unforced_protocol_is_half_blocks() {
        let e = env(&[("TERM", "xterm-kitty")]);
        let g = settle(choose(Setting::Auto, &e, None), &e, None, None);
        assert_eq!(g.protocol, Protocol::Halfblocks);
        assert!(g.why.contains("cell size"), "{g}");
    }

    #[test]
    fn a_setting_is_read_from_its_name_and_a_wrong_one_is_refused_with_the_names() {
        for name in Setting::NAMES {
            assert_eq!(name.parse::<Setting>().unwrap().name(), name);
        }
        let err = "sixels".parse::<Setting>().unwrap_err();
        assert!(
            err.contains("\"sixels\"") && err.contains("halfblocks"),
            "{err}"
        );
    }
}
