//! The code pane's tabs in its title (`[code] [t tests] [d diff] [p program]`):
//! drawn there, and clickable, since they look it. One list says both what
//! is drawn and where a click lands.

use ratatui::text::Span;

use super::code::CodeTab;
use crate::theme::Theme;

/// Each tab and its label, in title order.
const TABS: [(CodeTab, &str); 4] = [
    (CodeTab::Code, "code"),
    (CodeTab::Tests, "t tests"),
    (CodeTab::Diff, "d diff"),
    (CodeTab::Program, "p program"),
];

/// The tabs as title spans, the one shown selected.
pub(crate) fn tab_spans(t: &Theme, shown: CodeTab) -> Vec<Span<'static>> {
    let mut spans = Vec::new();
    for (tab, label) in TABS {
        let style = if shown == tab { t.selection } else { t.dim };
        spans.push(Span::styled(format!("[{label}]"), style));
        spans.push(Span::raw(" "));
    }
    spans
}

/// The tab under column `x` of a title whose tabs begin at column `start`
/// (columns counted from the title's first one).
pub(crate) fn tab_at(start: usize, x: usize) -> Option<CodeTab> {
    let mut at = start;
    for (tab, label) in TABS {
        let width = label.chars().count() + 2;
        if (at..at + width).contains(&x) {
            return Some(tab);
        }
        at += width + 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_click_lands_on_the_tab_drawn_there() {
        let t = Theme::no_color();
        let text: String = tab_spans(&t, CodeTab::Code)
            .iter()
            .map(|s| s.content.to_string())
            .collect();
        assert_eq!(text, "[code] [t tests] [d diff] [p program] ");
        let start = 5;
        for (i, _) in text.char_indices() {
            let tab = tab_at(start, start + i);
            let expected = match &text[..=i] {
                s if s.len() <= 6 => Some(CodeTab::Code),
                s if s.len() == 7 => None,
                s if s.len() <= 16 => Some(CodeTab::Tests),
                s if s.len() == 17 => None,
                s if s.len() <= 25 => Some(CodeTab::Diff),
                s if s.len() == 26 => None,
                s if s.len() <= 37 => Some(CodeTab::Program),
                _ => None,
            };
            assert_eq!(tab, expected, "column {i} of {text:?}");
        }
        assert_eq!(tab_at(start, 4), None);
    }
}
