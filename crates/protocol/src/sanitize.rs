//! Program output and model text are untrusted: before they reach a
//! terminal every control sequence goes (CSI, OSC, DCS, SOS/PM/APC, other
//! escapes, C0 except `\n` and `\t`, DEL, C1), so they cannot move the
//! cursor, change the title, set the clipboard (OSC 52), or make the
//! terminal answer with input (CSI 6n). The workbench's panes and every
//! command that prints such text use this one filter.

/// Tab stops are expanded so a tab cannot push text past the pane's edge
/// differently from how ratatui measures it.
const TAB_WIDTH: usize = 4;

/// What becomes of a tab.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tabs {
    /// Spaces to the next stop (a pane measures its own columns).
    Expand,
    /// Kept (a terminal has its own stops).
    Keep,
}

/// Where the filter is within a control sequence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Text,
    /// After ESC.
    Escape,
    /// After ESC and intermediates (0x20..=0x2F), before the final byte.
    EscapeIntermediate,
    /// Parameters and intermediates of a CSI, before its final byte.
    Csi,
    /// An OSC, DCS, SOS, PM or APC string, ended by BEL or ST.
    Str,
    /// ESC inside such a string (ST is ESC \).
    StrEscape,
}

/// A filter for text that arrives in pieces: a sequence cut between two
/// pieces is still removed whole.
#[derive(Debug, Clone)]
pub struct Sanitizer {
    state: State,
    column: usize,
    tabs: Tabs,
}

impl Sanitizer {
    pub fn new(tabs: Tabs) -> Sanitizer {
        Sanitizer {
            state: State::Text,
            column: 0,
            tabs,
        }
    }

    /// The next piece, its control sequences removed.
    pub fn push(&mut self, text: &str) -> String {
        let mut out = String::with_capacity(text.len());
        for c in text.chars() {
            self.state = match self.state {
                State::Text => self.text(c, &mut out),
                State::Escape => match c {
                    '[' => State::Csi,
                    ']' | 'P' | 'X' | '^' | '_' => State::Str,
                    '\u{20}'..='\u{2f}' => State::EscapeIntermediate,
                    // The final byte of the escape.
                    _ => State::Text,
                },
                State::EscapeIntermediate => match c {
                    '\u{20}'..='\u{2f}' => State::EscapeIntermediate,
                    _ => State::Text,
                },
                // A control character inside a CSI aborts it (as terminals do).
                State::Csi if ('\u{40}'..='\u{7e}').contains(&c) || c.is_control() => State::Text,
                State::Csi => State::Csi,
                State::Str => match c {
                    '\u{7}' | '\u{9c}' => State::Text,
                    '\u{1b}' => State::StrEscape,
                    _ => State::Str,
                },
                State::StrEscape if c == '\\' => State::Text,
                // ESC ended the string; what follows is text again.
                State::StrEscape => self.text(c, &mut out),
            };
        }
        out
    }

    fn text(&mut self, c: char, out: &mut String) -> State {
        match c {
            '\n' => {
                out.push('\n');
                self.column = 0;
            }
            '\t' => {
                let n = TAB_WIDTH - self.column % TAB_WIDTH;
                match self.tabs {
                    Tabs::Expand => out.extend(std::iter::repeat_n(' ', n)),
                    Tabs::Keep => out.push('\t'),
                }
                self.column += n;
            }
            '\u{1b}' => return State::Escape,
            '\u{9b}' => return State::Csi,
            '\u{90}' | '\u{9d}' | '\u{98}' | '\u{9e}' | '\u{9f}' => return State::Str,
            c if c.is_control() => {}
            c => {
                out.push(c);
                self.column += unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
            }
        }
        State::Text
    }
}

/// Strip control sequences from `text`; tabs become spaces, `\n` stays.
pub fn sanitize(text: &str) -> String {
    Sanitizer::new(Tabs::Expand).push(text)
}

/// Strip control sequences from `text` bound for a terminal; tabs and
/// `\n` stay.
pub fn for_terminal(text: &str) -> String {
    Sanitizer::new(Tabs::Keep).push(text)
}

/// JSON as serde_json writes it, with DEL and the C1 controls (U+0080 to
/// U+009F, U+009B being a CSI to many terminals) escaped as `\u007f` ...
/// `\u009f`: serde_json escapes only C0. Outside strings serde's JSON is
/// ASCII, so each such character is inside a string and its escape means
/// the same character to any JSON reader.
pub fn for_json(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        if c == '\u{7f}' || ('\u{80}'..='\u{9f}').contains(&c) {
            out.push_str(&format!("\\u{:04x}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_escapes_c1_and_del_and_reads_back_the_same() {
        let text = "a\u{9b}31mb\u{7f}c\u{85}é\u{a0}";
        let json = serde_json::to_string(&text).unwrap();
        assert!(
            json.contains('\u{9b}'),
            "serde_json alone passes C1 through"
        );
        let escaped = for_json(&json);
        assert_eq!(escaped, "\"a\\u009b31mb\\u007fc\\u0085é\u{a0}\"");
        assert!(escaped.chars().all(|c| !c.is_control()));
        let back: String = serde_json::from_str(&escaped).unwrap();
        assert_eq!(back, text);
    }

    #[test]
    fn plain_text_and_newlines_pass() {
        assert_eq!(sanitize("hello\nworld\n"), "hello\nworld\n");
    }

    #[test]
    fn cursor_moves_colours_and_clears_are_removed() {
        assert_eq!(
            sanitize("a\x1b[2J\x1b[H\x1b[31mred\x1b[0m\x1b[10;20Hb"),
            "aredb"
        );
    }

    #[test]
    fn title_changes_and_terminal_queries_are_removed() {
        // OSC 0 (title) ended by BEL and by ST; DCS; a device-status query.
        assert_eq!(
            sanitize("x\x1b]0;pwned\x07y\x1b]2;t\x1b\\z\x1bPq#0\x1b\\w\x1b[6n!"),
            "xyzw!"
        );
    }

    #[test]
    fn c0_and_c1_controls_go_tabs_expand() {
        assert_eq!(sanitize("a\rb\x08c\x07d\x00e\u{9b}31mf\x7f"), "abcdef");
        assert_eq!(sanitize("a\tb"), "a   b");
        assert_eq!(sanitize("\x1bcreset\x1b7saved"), "resetsaved");
    }

    #[test]
    fn an_unterminated_sequence_swallows_only_itself() {
        assert_eq!(sanitize("ok\x1b[31"), "ok");
        assert_eq!(sanitize("ok\x1b]0;never ends"), "ok");
    }

    #[test]
    fn a_sequence_cut_between_pieces_goes_whole() {
        let mut s = Sanitizer::new(Tabs::Keep);
        let pieces = [
            "a\x1b",
            "]52;c;aGk=",
            "\x1b",
            "\\b\x1b[",
            "6",
            "nc\x1b(",
            "Bd\te",
        ];
        let out: String = pieces.iter().map(|p| s.push(p)).collect();
        assert_eq!(out, "abcd\te");
    }

    #[test]
    fn an_escape_ending_a_string_leaves_what_follows() {
        assert_eq!(for_terminal("x\x1b]0;t\x1bAy"), "xAy");
    }
}
