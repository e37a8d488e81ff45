//! The command palette (`:` or Ctrl-P): every action of the workbench's
//! tables in this mode, by what it does in words, filtered fuzzily as the
//! person types. Enter replays the chosen row's key, so the palette can do
//! nothing the keys cannot, and names each action as the help does.

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph};

use super::{Handled, popup_area};
use crate::tui::keymap::{Binding, Key};
use crate::tui::theme::Theme;

/// One action: what it does, and how.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub does: String,
    pub act: PaletteAct,
}

/// What an entry does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PaletteAct {
    /// What this key does in the workbench's tables.
    Key(Key),
    /// Switch to this built-in theme (no key does this).
    Theme(&'static str),
}

/// What the person chose.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PaletteIntent {
    Run(PaletteAct),
    Close,
}

#[derive(Debug, Clone, Default)]
pub struct Palette {
    entries: Vec<Entry>,
    query: String,
    selected: usize,
}

impl Palette {
    /// From tables' rows (one entry per key of a row that has keys), then
    /// the actions no key does.
    pub fn new<A>(tables: &[&[Binding<A>]]) -> Palette {
        let mut entries: Vec<Entry> = tables
            .iter()
            .flat_map(|t| t.iter())
            .filter(|b| !b.does.is_empty())
            .flat_map(|b| b.keys.iter().map(|(k, _)| (b.does, *k)))
            .fold(Vec::<(&str, Key)>::new(), |mut acc, (does, key)| {
                // A Control key only when its row has no other (q, not Ctrl-C).
                if !(key.ctrl && acc.iter().any(|(d, _)| *d == does)) {
                    acc.push((does, key));
                }
                acc
            })
            .into_iter()
            .map(|(does, key)| Entry {
                does: does.to_string(),
                act: PaletteAct::Key(key),
            })
            .collect();
        entries.extend(crate::tui::theme::Theme::built_in().map(|name| Entry {
            does: format!("theme: {name}"),
            act: PaletteAct::Theme(name),
        }));
        Palette {
            entries,
            query: String::new(),
            selected: 0,
        }
    }

    pub fn query(&self) -> &str {
        &self.query
    }

    /// The entries that match the query, best first.
    pub fn matches(&self) -> Vec<&Entry> {
        let mut scored: Vec<(usize, usize, &Entry)> = self
            .entries
            .iter()
            .enumerate()
            .filter_map(|(i, e)| fuzzy_score(&self.query, &e.does).map(|s| (s, i, e)))
            .collect();
        scored.sort_by_key(|(s, i, _)| (*s, *i));
        scored.into_iter().map(|(_, _, e)| e).collect()
    }

    pub fn on_key(&mut self, key: KeyEvent) -> Handled<PaletteIntent> {
        match key.code {
            KeyCode::Esc => Handled::Intent(PaletteIntent::Close),
            KeyCode::Enter => match self.matches().get(self.selected) {
                Some(e) => Handled::Intent(PaletteIntent::Run(e.act)),
                None => Handled::Done,
            },
            KeyCode::Up => {
                self.selected = self.selected.saturating_sub(1);
                Handled::Done
            }
            KeyCode::Down => {
                let n = self.matches().len();
                self.selected = (self.selected + 1).min(n.saturating_sub(1));
                Handled::Done
            }
            KeyCode::Backspace => {
                self.query.pop();
                self.selected = 0;
                Handled::Done
            }
            KeyCode::Char(c) => {
                self.query.push(c);
                self.selected = 0;
                Handled::Done
            }
            _ => Handled::Done,
        }
    }

    pub fn render(&self, theme: &Theme, frame: &mut Frame) {
        let t = theme;
        let area = popup_area(frame.area(), 70, 70);
        let rows = usize::from(area.height.saturating_sub(3));
        let matches = self.matches();
        let first = self.selected.saturating_sub(rows.saturating_sub(1));
        let mut lines = vec![Line::from(vec![
            Span::styled(": ", t.accent),
            Span::styled(self.query.clone(), t.text),
            Span::styled("▏", t.accent),
        ])];
        if matches.is_empty() {
            lines.push(Line::styled("  no action matches", t.dim));
        }
        for (i, e) in matches.iter().enumerate().skip(first).take(rows) {
            let style = if i == self.selected {
                t.selection
            } else {
                t.text
            };
            let key = match e.act {
                PaletteAct::Key(k) => k.name(),
                PaletteAct::Theme(_) => String::new(),
            };
            lines.push(Line::from(vec![
                Span::styled(if i == self.selected { "› " } else { "  " }, t.accent),
                Span::styled(e.does.clone(), style),
                Span::styled(format!("  {key}"), t.dim),
            ]));
        }
        let area = Rect {
            height: (lines.len() as u16 + 2).min(area.height),
            ..area
        };
        frame.render_widget(Clear, area);
        frame.render_widget(
            Paragraph::new(lines).block(
                Block::bordered()
                    .border_style(t.border_focused)
                    .title(Line::styled(" Actions ", t.title))
                    .title_bottom(Line::styled(" ↑/↓ choose · Enter do · Esc close ", t.dim)),
            ),
            area,
        );
    }
}

/// A fuzzy match: the query's characters in order in `text` (case-folded);
/// lower is better (the span the match covers, then where it starts).
pub fn fuzzy_score(query: &str, text: &str) -> Option<usize> {
    let text: Vec<char> = text.to_lowercase().chars().collect();
    let query: Vec<char> = query
        .to_lowercase()
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    if query.is_empty() {
        return Some(0);
    }
    // The tightest window over every start: texts are short.
    (0..text.len())
        .filter(|&s| text[s] == query[0])
        .filter_map(|s| {
            let mut q = 0;
            for (i, c) in text.iter().enumerate().skip(s) {
                if *c == query[q] {
                    q += 1;
                    if q == query.len() {
                        return Some((i + 1 - s) * 100 + s);
                    }
                }
            }
            None
        })
        .min()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn characters_in_order_match_and_tighter_matches_come_first() {
        assert!(fuzzy_score("zm", "zoom the focused pane").is_some());
        assert!(fuzzy_score("mz", "zoom the focused pane").is_none());
        let tight = fuzzy_score("quit", "quit").unwrap();
        let loose = fuzzy_score("quit", "q u i t").unwrap();
        assert!(tight < loose);
        assert_eq!(fuzzy_score("", "anything"), Some(0));
    }
}
