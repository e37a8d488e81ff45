//! Program output is untrusted: before it reaches the terminal every control
//! sequence goes (CSI, OSC, DCS, SOS/PM/APC, other escapes, C0 except `\n` and
//! `\t`, DEL, C1), so a program cannot move the cursor, change the title, or
//! make the terminal answer with input.

/// Tab stops are expanded so a tab cannot push text past the pane's edge
/// differently from how ratatui measures it.
const TAB_WIDTH: usize = 4;

/// Strip control sequences from `text`; tabs become spaces, `\n` stays.
pub fn sanitize(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    let mut column = 0usize;
    while let Some(c) = chars.next() {
        match c {
            '\n' => {
                out.push('\n');
                column = 0;
            }
            '\t' => {
                let n = TAB_WIDTH - column % TAB_WIDTH;
                out.extend(std::iter::repeat_n(' ', n));
                column += n;
            }
            '\u{1b}' => match chars.next() {
                // CSI: parameters and intermediates, then one final byte.
                Some('[') => skip_csi(&mut chars),
                // OSC, DCS, SOS, PM, APC: a string ended by BEL or ST (ESC \).
                Some(']' | 'P' | 'X' | '^' | '_') => skip_string(&mut chars),
                // Other escapes: ESC, intermediates (0x20..=0x2F), one final byte.
                Some(mut next) => {
                    while ('\u{20}'..='\u{2f}').contains(&next) {
                        match chars.next() {
                            Some(n) => next = n,
                            None => break,
                        }
                    }
                }
                None => {}
            },
            '\u{9b}' => skip_csi(&mut chars),
            '\u{90}' | '\u{9d}' | '\u{98}' | '\u{9e}' | '\u{9f}' => skip_string(&mut chars),
            c if c.is_control() => {}
            c => {
                out.push(c);
                column += unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
            }
        }
    }
    out
}

fn skip_csi(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    for c in chars.by_ref() {
        if ('\u{40}'..='\u{7e}').contains(&c) {
            return;
        }
        // A control character inside a CSI aborts it (as terminals do).
        if c.is_control() {
            return;
        }
    }
}

fn skip_string(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    while let Some(c) = chars.next() {
        match c {
            '\u{7}' | '\u{9c}' => return,
            '\u{1b}' => {
                if chars.peek() == Some(&'\\') {
                    chars.next();
                }
                return;
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::sanitize;

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
}
