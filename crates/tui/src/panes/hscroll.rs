//! Lines wider than their pane: a horizontal offset and a mark where text
//! goes on past the edge (`›` at the right, `‹` at the left when scrolled),
//! so a clipped line never looks whole. The code pane and the log pager use
//! it; a gutter (line numbers, marks) is kept in place and never scrolled.

use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthChar;

/// The right-edge mark of a line that goes on.
pub(crate) const MORE_RIGHT: &str = "›";
/// The left-edge mark of a line scrolled sideways.
pub(crate) const MORE_LEFT: &str = "‹";

/// Columns a horizontal scroll key moves.
pub(crate) const STEP: usize = 8;

/// `line` as it fits `width` columns: its first `gutter` spans stay; the
/// rest is shifted `left` columns and cut at the edge, with marks where
/// text is hidden. The line's own style is kept.
pub(crate) fn clip_line<'a>(line: Line<'a>, gutter: usize, left: usize, width: usize) -> Line<'a> {
    let style = line.style;
    let mut spans = line.spans;
    let body = spans.split_off(gutter.min(spans.len()));
    let gutter_w: usize = spans.iter().map(|s| s.width()).sum();
    let room = width.saturating_sub(gutter_w);
    let total: usize = body.iter().map(|s| s.width()).sum();
    if left == 0 && total <= room {
        spans.extend(body);
        return Line::from(spans).style(style);
    }
    let more_right = total > left + room;
    // Room for the text between the marks (no left mark on an empty line).
    let start = if left > 0 && total > 0 { left + 1 } else { 0 };
    // No room at all (a pane narrower than its gutter): nothing of the text.
    let end = (left + room).saturating_sub(usize::from(more_right));
    let mut col = 0usize;
    let mut out: Vec<Span<'a>> = Vec::new();
    if left > 0 && room > 0 && total > 0 {
        let s = body.first().map(|s| s.style).unwrap_or_default();
        out.push(Span::styled(MORE_LEFT, s));
    }
    let mut last_style = None;
    for span in body {
        let mut kept = String::new();
        for c in span.content.chars() {
            let w = c.width().unwrap_or(0);
            if col >= start && col + w <= end {
                kept.push(c);
            } else if col < start && col + w > start && col + w <= end {
                // A wide character cut by the left edge: a space in its place.
                kept.push(' ');
            }
            col += w;
        }
        last_style = Some(span.style);
        if !kept.is_empty() {
            out.push(Span::styled(kept, span.style));
        }
    }
    if more_right && room > 0 {
        out.push(Span::styled(MORE_RIGHT, last_style.unwrap_or_default()));
    }
    spans.extend(out);
    Line::from(spans).style(style)
}

/// The code pane's lines clipped to `width`: a numbered line (several
/// spans) keeps its first span, the gutter with the line number and the
/// failure's sign, in place; a line of one span (a diff, a message) scrolls whole.
pub(crate) fn clip_lines<'a>(lines: Vec<Line<'a>>, left: usize, width: usize) -> Vec<Line<'a>> {
    lines
        .into_iter()
        .map(|l| {
            let gutter = usize::from(l.spans.len() > 1);
            clip_line(l, gutter, left, width)
        })
        .collect()
}

/// The offset after one sideways step, for text whose widest line is `widest`.
pub(crate) fn step(left: usize, right: bool, widest: usize) -> usize {
    if right {
        (left + STEP).min(widest.saturating_sub(STEP).next_multiple_of(STEP))
    } else {
        left.saturating_sub(STEP)
    }
}

/// `text` cut into rows of `width` columns, every character kept
/// (indentation too: output is not prose).
pub(crate) fn hard_wrap(text: &str, width: usize) -> Vec<String> {
    let width = width.max(1);
    let mut rows = vec![String::new()];
    let mut col = 0;
    for c in text.chars() {
        let w = c.width().unwrap_or(0);
        if col + w > width && col > 0 {
            rows.push(String::new());
            col = 0;
        }
        if let Some(row) = rows.last_mut() {
            row.push(c);
        }
        col += w;
    }
    rows
}

/// The widest line's text past the gutter, for how far `→` may go.
pub(crate) fn max_left(widest: usize, room: usize) -> usize {
    widest.saturating_sub(room.saturating_sub(2))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(l: &Line) -> String {
        l.spans.iter().map(|s| s.content.as_ref()).collect()
    }

    #[test]
    fn a_pane_narrower_than_the_gutter_shows_the_gutter_only() {
        // Seen live: a streaming code line while the pane was 0 columns wide.
        for width in 0..4 {
            for left in [0, 1, 9] {
                let line = Line::from(vec![Span::raw(" 12 "), Span::raw("total = 0")]);
                let clipped = clip_line(line, 1, left, width);
                assert!(text(&clipped).starts_with(" 12 "), "{width} {left}");
            }
        }
    }

    #[test]
    fn hard_wrap_keeps_every_character() {
        assert_eq!(hard_wrap("  ab cdef", 4), ["  ab", " cde", "f"]);
        assert_eq!(hard_wrap("", 4), [""]);
    }

    #[test]
    fn a_line_that_fits_is_left_alone() {
        let l = clip_line(
            Line::from(vec![Span::raw(" 1 "), Span::raw("abc")]),
            1,
            0,
            10,
        );
        assert_eq!(text(&l), " 1 abc");
    }

    #[test]
    fn a_clipped_line_is_marked_at_the_edge_and_scrolls_with_its_gutter_kept() {
        let line = || Line::from(vec![Span::raw(" 1 "), Span::raw("abcdefghij")]);
        let l = clip_line(line(), 1, 0, 8);
        assert_eq!(text(&l), " 1 abcd›");
        let l = clip_line(line(), 1, 3, 8);
        assert_eq!(text(&l), " 1 ‹efg›");
        let l = clip_line(line(), 1, 6, 8);
        assert_eq!(text(&l), " 1 ‹hij");
        // An empty line scrolled sideways hides nothing: no mark.
        let l = clip_line(Line::from(vec![Span::raw(" 2 "), Span::raw("")]), 1, 6, 8);
        assert_eq!(text(&l), " 2 ");
    }
}
