//! Fenced blocks as CommonMark reads them: a run of three or more backticks or
//! tildes opens a block, a run of the same character at least as long closes
//! it. Opening fences indented by more than three spaces are accepted too (a
//! block inside a list item); a block never closed runs to the end.

/// A fenced block: its language (the info string's first word, lowercased,
/// `{.python}` read as `python`), its body, and the lines it spans.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Fenced {
    pub(super) lang: String,
    pub(super) body: String,
    /// Index of the opening fence line and one past the closing one.
    pub(super) lines: (usize, usize),
    /// Its closing fence came (a block never closed runs to the end).
    pub(super) closed: bool,
}

struct Fence {
    indent: usize,
    ch: char,
    len: usize,
}

/// An opening fence: indentation, character, length, info string.
fn opening(line: &str) -> Option<(Fence, &str)> {
    let rest = line.trim_start_matches(' ');
    let indent = line.len() - rest.len();
    let ch = rest.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let len = rest.chars().take_while(|c| *c == ch).count();
    if len < 3 {
        return None;
    }
    let info = &rest[len..];
    if ch == '`' && info.contains('`') {
        return None; // inline code such as ```x```, not a fence
    }
    Some((Fence { indent, ch, len }, info.trim()))
}

fn closes(line: &str, fence: &Fence) -> bool {
    let rest = line.trim_start_matches(' ');
    let indent = line.len() - rest.len();
    let len = rest.chars().take_while(|c| *c == fence.ch).count();
    // Up to three spaces, counted from the opening fence when it sits in a list.
    let most = if fence.indent <= 3 {
        3
    } else {
        fence.indent + 3
    };
    indent <= most && len >= fence.len && rest[len..].trim().is_empty()
}

/// The language named by an info string: `python`, `{.python}`, `py title="a.py"`.
fn language(info: &str) -> String {
    let word = info.split_whitespace().next().unwrap_or("");
    word.trim_matches(|c| c == '{' || c == '}')
        .trim_start_matches('.')
        .to_lowercase()
}

/// Whether a block's language is Python (or unnamed, which models use for code).
pub(super) fn is_python(lang: &str) -> bool {
    matches!(lang, "" | "python" | "py" | "python3" | "py3")
}

/// Every fenced block of `text`, in order.
pub(super) fn fenced_blocks(text: &str) -> Vec<Fenced> {
    let lines: Vec<&str> = text.lines().collect();
    let mut blocks = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let Some((fence, info)) = opening(lines[i]) else {
            i += 1;
            continue;
        };
        let start = i;
        let mut body = String::new();
        i += 1;
        while i < lines.len() && !closes(lines[i], &fence) {
            body.push_str(strip_indent(lines[i], fence.indent));
            body.push('\n');
            i += 1;
        }
        let closed = i < lines.len();
        // Past the closing fence (or at the end, for a block never closed).
        i = (i + 1).min(lines.len());
        blocks.push(Fenced {
            lang: language(info),
            body,
            lines: (start, i),
            closed,
        });
    }
    blocks
}

/// A content line without up to `n` leading spaces (the opening fence's indent).
fn strip_indent(line: &str, n: usize) -> &str {
    let spaces = line.len() - line.trim_start_matches(' ').len();
    &line[spaces.min(n)..]
}

/// Whether a line opens a fenced block.
pub(super) fn is_fence_line(line: &str) -> bool {
    opening(line).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tildes_long_fences_and_info_strings() {
        let text = "~~~{.python}\nx = 1\n~~~\n````py title=\"a.py\"\n```\ninner\n```\n````\n";
        let blocks = fenced_blocks(text);
        assert_eq!(
            blocks,
            vec![
                Fenced {
                    lang: "python".into(),
                    body: "x = 1\n".into(),
                    lines: (0, 3),
                    closed: true,
                },
                Fenced {
                    lang: "py".into(),
                    body: "```\ninner\n```\n".into(),
                    lines: (3, 8),
                    closed: true,
                },
            ]
        );
    }

    #[test]
    fn a_closing_fence_must_match_and_an_unclosed_block_runs_to_the_end() {
        let blocks = fenced_blocks("  ```Python\n  a\n  ~~~\n    ```\nb\n");
        assert_eq!(blocks.len(), 1);
        assert_eq!(blocks[0].lang, "python");
        assert_eq!(blocks[0].body, "a\n~~~\n  ```\nb\n");
        assert!(!blocks[0].closed);
        assert!(fenced_blocks("```a``` is inline").is_empty());
    }
}
