//! The command palette (`:` or Ctrl-P): every action of the workbench's
//! tables in this mode, by what it does in words, filtered fuzzily as the
//! person types. Enter replays the chosen row's key, so the palette can do
//! nothing the keys cannot, and names each action as the help does.
//! Beside the keys' actions: the theme, and the choices for the next
//! session (model profile, workers, the cache) and the export, whose values
//! are a second list.

use codeloop_protocol::present::count;
use crossterm::event::{KeyCode, KeyEvent};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph};

use super::{Handled, popup_area};
use crate::keymap::{Binding, Key};
use crate::theme::Theme;

/// One action: what it does, and how.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub does: String,
    pub(crate) act: PaletteAct,
}

/// What an entry does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PaletteAct {
    /// What this key does in the workbench's tables.
    Key(Key),
    /// What this key does in the focused pane's table.
    PaneKey(Key),
    /// Switch to this built-in theme (no key does this).
    Theme(&'static str),
    /// Open the second list: the values of this choice.
    Values(ValueKind),
    /// The `[models.NAME]` profile of the next session.
    Profile(String),
    /// Ask which model server found on this machine the next session uses.
    Servers,
    /// The parallel nodes of the next session.
    Workers(usize),
    /// Use the cache of solved tasks for the next task, or not.
    Cache(bool),
    /// Write the open session in this format.
    Export(ExportFormat),
}

/// A choice whose values are a second list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueKind {
    Profile,
    Workers,
    Export,
}

impl ValueKind {
    fn title(self) -> &'static str {
        match self {
            ValueKind::Profile => "model profile for the next session",
            ValueKind::Workers => "workers (parallel nodes) for the next session",
            ValueKind::Export => "export the session as",
        }
    }
}

/// What an export writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportFormat {
    Md,
    Html,
    Py,
}

impl ExportFormat {
    pub(crate) fn words(self) -> &'static str {
        match self {
            ExportFormat::Md => "Markdown report (.md)",
            ExportFormat::Html => "HTML page: graph, diffs, failures (.html)",
            ExportFormat::Py => "program and tests, runnable (.py)",
        }
    }
}

/// Worker counts offered.
pub(crate) const WORKER_CHOICES: [usize; 6] = [1, 2, 3, 4, 6, 8];

/// What the palette offers beside the keys, as things stand.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Offers {
    /// Several model servers answer on this machine: one is to be chosen.
    pub(crate) servers: bool,
    /// The config's `[models.NAME]` profiles.
    pub(crate) profiles: Vec<String>,
    /// The cache is off for the next task.
    pub(crate) no_cache: bool,
    /// There is a session to export.
    pub(crate) export: bool,
    /// The bundled demos' names, in key order.
    pub(crate) demos: Vec<String>,
}

/// What the person chose.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PaletteIntent {
    Run(PaletteAct),
    Close,
}

#[derive(Debug, Clone, Default)]
pub struct Palette {
    entries: Vec<Entry>,
    query: String,
    selected: usize,
    offers: Offers,
    /// The second list, when one is open: its choice, and the first list
    /// with its query to go back to.
    values: Option<(ValueKind, Vec<Entry>, String)>,
}

impl Palette {
    /// From tables' rows (one entry per key of a row that has keys), then
    /// the actions no key does.
    pub(crate) fn new<A>(tables: &[&[Binding<A>]]) -> Palette {
        let mut entries: Vec<Entry> = named_keys(tables)
            .into_iter()
            .map(|(does, key)| Entry {
                does: does.to_string(),
                act: PaletteAct::Key(key),
            })
            .collect();
        entries.extend(crate::theme::Theme::built_in().map(|name| Entry {
            does: format!("theme: {name}"),
            act: PaletteAct::Theme(name),
        }));
        Palette {
            entries,
            query: String::new(),
            selected: 0,
            offers: Offers::default(),
            values: None,
        }
    }

    /// With the focused pane's actions, one entry a row (by its first
    /// key), the pane named after the words ("go to its code (Workflow)")
    /// so a query matches what an action does before where it is.
    pub(crate) fn with_pane(mut self, pane: &str, rows: &[crate::keymap::Row]) -> Palette {
        self.entries.extend(
            rows.iter()
                .filter(|r| !r.does.is_empty())
                .filter_map(|r| r.key.map(|k| (r.does, k)))
                .map(|(does, key)| Entry {
                    does: format!("{does} ({pane})"),
                    act: PaletteAct::PaneKey(key),
                }),
        );
        self
    }

    /// With the choices for the next session and the export.
    pub(crate) fn with_offers(mut self, offers: Offers) -> Palette {
        self.offer_demos(&offers.demos);
        if offers.servers {
            self.entries.push(Entry {
                does: "model server for the next session (several answer here)…".into(),
                act: PaletteAct::Servers,
            });
        }
        self.entries.extend([
            Entry {
                does: "model profile for the next session…".into(),
                act: PaletteAct::Values(ValueKind::Profile),
            },
            Entry {
                does: "workers (parallel nodes) for the next session…".into(),
                act: PaletteAct::Values(ValueKind::Workers),
            },
            if offers.no_cache {
                Entry {
                    does: "cache: use it again for the next task (now bypassed)".into(),
                    act: PaletteAct::Cache(true),
                }
            } else {
                Entry {
                    does: "cache: don't use it for the next task (ask the model afresh)".into(),
                    act: PaletteAct::Cache(false),
                }
            },
        ]);
        if offers.export {
            self.entries.push(Entry {
                does: "export the session (md, html, py)…".into(),
                act: PaletteAct::Values(ValueKind::Export),
            });
        }
        self.offers = offers;
        self
    }

    /// A digit key runs the bundled demo of that number (the keys' tables
    /// name 1 to 9, the focused pane's first): one entry for each demo
    /// there is, by its name, where the digit keys' entries were.
    fn offer_demos(&mut self, demos: &[String]) {
        let digit = |e: &Entry| match &e.act {
            PaletteAct::Key(k) | PaletteAct::PaneKey(k) => {
                matches!(k.code, KeyCode::Char('1'..='9'))
            }
            _ => false,
        };
        let template = self
            .entries
            .iter()
            .filter(|e| digit(e))
            .max_by_key(|e| matches!(e.act, PaletteAct::PaneKey(_)))
            .cloned();
        let at = self.entries.iter().position(digit).unwrap_or(0);
        self.entries.retain(|e| !digit(e));
        let Some(template) = template else { return };
        let named = demos.iter().zip('1'..='9').map(|(name, c)| Entry {
            does: format!("{}: {c} {name}", template.does),
            act: match template.act {
                PaletteAct::PaneKey(_) => PaletteAct::PaneKey(Key::ch(c)),
                _ => PaletteAct::Key(Key::ch(c)),
            },
        });
        let rest = self.entries.split_off(at.min(self.entries.len()));
        self.entries.extend(named);
        self.entries.extend(rest);
    }

    /// The values of a choice.
    fn values_of(&self, kind: ValueKind) -> Vec<Entry> {
        match kind {
            ValueKind::Profile => self
                .offers
                .profiles
                .iter()
                .map(|p| Entry {
                    does: p.clone(),
                    act: PaletteAct::Profile(p.clone()),
                })
                .collect(),
            ValueKind::Workers => WORKER_CHOICES
                .iter()
                .map(|n| Entry {
                    does: count(*n, "worker"),
                    act: PaletteAct::Workers(*n),
                })
                .collect(),
            ValueKind::Export => [ExportFormat::Md, ExportFormat::Html, ExportFormat::Py]
                .into_iter()
                .map(|f| Entry {
                    does: f.words().to_string(),
                    act: PaletteAct::Export(f),
                })
                .collect(),
        }
    }

    /// The choice whose values are shown, if a second list is open.
    pub fn choosing(&self) -> Option<ValueKind> {
        self.values.as_ref().map(|(k, _, _)| *k)
    }

    /// Open the second list of `kind`.
    fn open_values(&mut self, kind: ValueKind) {
        let values = self.values_of(kind);
        let first = std::mem::replace(&mut self.entries, values);
        let query = std::mem::take(&mut self.query);
        self.values = Some((kind, first, query));
        self.selected = 0;
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

    pub(crate) fn on_key(&mut self, key: KeyEvent) -> Handled<PaletteIntent> {
        match key.code {
            // From a second list, back to the first.
            KeyCode::Esc => match self.values.take() {
                Some((_, first, query)) => {
                    self.entries = first;
                    self.query = query;
                    self.selected = 0;
                    Handled::Done
                }
                None => Handled::Intent(PaletteIntent::Close),
            },
            KeyCode::Enter => match self.matches().get(self.selected).map(|e| e.act.clone()) {
                Some(PaletteAct::Values(kind)) => {
                    self.open_values(kind);
                    Handled::Done
                }
                Some(act) => Handled::Intent(PaletteIntent::Run(act)),
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
            _ => {
                if super::line_edit::edit_line(&mut self.query, &key) {
                    self.selected = 0;
                }
                Handled::Done
            }
        }
    }

    pub(crate) fn render(&self, theme: &Theme, frame: &mut Frame) {
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
            let none = match self.choosing() {
                Some(ValueKind::Profile) if self.offers.profiles.is_empty() => {
                    "the config has no [models.NAME] profiles: add one to its config.toml (`codeloop config` shows where it is; the README's Use your own model has an example)"
                }
                Some(_) => "no value matches",
                None => "no action matches",
            };
            // Wrapped, so a narrow screen shows all of it.
            let width = usize::from(area.width.saturating_sub(4));
            for piece in super::wrap(none, width) {
                lines.push(Line::styled(format!("  {piece}"), t.dim));
            }
        }
        for (i, e) in matches.iter().enumerate().skip(first).take(rows) {
            let style = if i == self.selected {
                t.selection
            } else {
                t.text
            };
            let key = match &e.act {
                PaletteAct::Key(k) | PaletteAct::PaneKey(k) => k.name(),
                PaletteAct::Theme(_)
                | PaletteAct::Values(_)
                | PaletteAct::Profile(_)
                | PaletteAct::Servers
                | PaletteAct::Workers(_)
                | PaletteAct::Cache(_)
                | PaletteAct::Export(_) => String::new(),
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
                    .title(Line::styled(
                        match self.choosing() {
                            Some(kind) => format!(" Actions › {} ", kind.title()),
                            None => " Actions ".to_string(),
                        },
                        t.title,
                    ))
                    .title_bottom(Line::styled(
                        if self.choosing().is_some() {
                            " ↑/↓ choose · Enter set · Esc back "
                        } else {
                            " ↑/↓ choose · Enter do · Esc close "
                        },
                        t.dim,
                    )),
            ),
            area,
        );
    }
}

/// Each row's words with its keys, one entry a key (a Control key only
/// when its row has no other: q, not Ctrl-C; rows without words left out).
fn named_keys<A>(tables: &[&[Binding<A>]]) -> Vec<(&'static str, Key)> {
    tables
        .iter()
        .flat_map(|t| t.iter())
        .filter(|b| !b.does.is_empty())
        .flat_map(|b| b.keys.iter().map(|(k, _)| (b.does, *k)))
        .fold(Vec::new(), |mut acc, (does, key)| {
            if !(key.ctrl && acc.iter().any(|(d, _)| *d == does)) {
                acc.push((does, key));
            }
            acc
        })
}

/// A fuzzy match: the query's characters in order in `text` (case-folded);
/// lower is better (the span the match covers, then where it starts).
pub(crate) fn fuzzy_score(query: &str, text: &str) -> Option<usize> {
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

impl super::popup::PopupView for Palette {
    fn render(&self, cx: &super::popup::PopupCtx, frame: &mut Frame) {
        Self::render(self, cx.theme, frame);
    }
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
