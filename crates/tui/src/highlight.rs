//! Syntax highlighting off the UI thread. One worker thread; a new request
//! replaces any waiting one (latest wins), a running job gives up as soon as a
//! newer request arrives, and results carry the generation they were asked
//! with, so the app drops stale ones. The worker remembers the text it did
//! last with syntect's state every few lines (`incremental`): a new version
//! is re-highlighted from its first changed line only, and the first screen
//! of a text done from its start is sent ahead of the rest.

use std::sync::{Arc, Condvar, Mutex};

use ratatui::style::{Color, Modifier, Style};
use syntect::highlighting::{FontStyle, ThemeSet};
use syntect::parsing::SyntaxSet;
use tokio::sync::mpsc;

mod incremental;

pub(crate) use incremental::Document;
pub use incremental::Work;

/// Lines longer than this are not highlighted (minified code would stall the worker).
const MAX_LINE_BYTES: usize = 4096;

/// Ask for `code` highlighted with the syntect theme `theme`.
#[derive(Debug, Clone, PartialEq)]
pub struct HighlightRequest {
    pub generation: u64,
    /// Identifies the text (a hash), so the app can cache the result.
    pub key: u64,
    pub code: String,
    pub theme: String,
    /// Lines to send as soon as they are done when the text is highlighted
    /// from its start (what the screen shows first).
    pub first: usize,
}

/// One highlighted line: spans of text with their style. Shared, so the
/// worker hands over a whole text's lines (kept for the next edit) by
/// counting references, not by copying every span.
pub(crate) type StyledLine = Arc<[(Style, String)]>;

#[derive(Debug, Clone, PartialEq)]
pub struct Highlighted {
    pub(crate) generation: u64,
    pub(crate) key: u64,
    pub(crate) lines: Vec<StyledLine>,
    /// False for the first lines sent ahead of the rest.
    pub(crate) complete: bool,
}

#[derive(Default)]
struct Slot {
    next: Option<HighlightRequest>,
    closed: bool,
}

/// The handle the event loop keeps; dropping it stops the worker.
pub(crate) struct Highlighter {
    slot: Arc<(Mutex<Slot>, Condvar)>,
}

impl Highlighter {
    /// Start the worker; results arrive on `results` (bounded by the caller).
    pub(crate) fn spawn(results: mpsc::Sender<Highlighted>) -> std::io::Result<Highlighter> {
        let slot = Arc::new((Mutex::new(Slot::default()), Condvar::new()));
        let worker_slot = Arc::clone(&slot);
        std::thread::Builder::new()
            .name("codeloop-highlight".into())
            .spawn(move || worker(worker_slot, results))?;
        Ok(Highlighter { slot })
    }

    /// Replace whatever is waiting with this request.
    pub(crate) fn request(&self, request: HighlightRequest) {
        let (lock, cvar) = &*self.slot;
        if let Ok(mut slot) = lock.lock() {
            slot.next = Some(request);
            cvar.notify_one();
        }
    }
}

impl Drop for Highlighter {
    fn drop(&mut self) {
        let (lock, cvar) = &*self.slot;
        if let Ok(mut slot) = lock.lock() {
            slot.closed = true;
            cvar.notify_one();
        }
    }
}

fn worker(slot: Arc<(Mutex<Slot>, Condvar)>, results: mpsc::Sender<Highlighted>) {
    // Loading the syntax definitions takes tens of milliseconds: do it here,
    // not before the first frame.
    let mut engine = Engine::new();
    let (lock, cvar) = &*slot;
    loop {
        let request = {
            let Ok(mut guard) = lock.lock() else { return };
            loop {
                if guard.closed {
                    return;
                }
                if let Some(r) = guard.next.take() {
                    break r;
                }
                guard = match cvar.wait(guard) {
                    Ok(g) => g,
                    Err(_) => return,
                };
            }
        };
        let superseded = || {
            lock.lock()
                .map(|s| s.next.is_some() || s.closed)
                .unwrap_or(true)
        };
        let mut gone = false;
        let early = |lines: &[StyledLine]| {
            let first = Highlighted {
                generation: request.generation,
                key: request.key,
                lines: lines.to_vec(),
                complete: false,
            };
            gone |= results.blocking_send(first).is_err();
        };
        if let Some(lines) = engine.highlight(&request, early, superseded) {
            let done = Highlighted {
                generation: request.generation,
                key: request.key,
                lines: lines.to_vec(),
                complete: true,
            };
            gone |= results.blocking_send(done).is_err();
        }
        if gone {
            return;
        }
    }
}

/// The worker's highlighter: the syntaxes, the themes, and the text it did
/// last (so a new version of it is re-highlighted only where it changed).
pub struct Engine {
    syntaxes: SyntaxSet,
    themes: ThemeSet,
    doc: Document,
}

impl Engine {
    /// Loading the syntax definitions takes tens of milliseconds.
    pub fn new() -> Engine {
        Engine {
            syntaxes: SyntaxSet::load_defaults_newlines(),
            themes: ThemeSet::load_defaults(),
            doc: Document::default(),
        }
    }

    /// Highlight `request.code`, from where it differs from the text done
    /// before. `early` gets the first `request.first` lines when the text is
    /// done from its start. None if `superseded` says a newer request waits
    /// (the text done before is kept).
    pub fn highlight(
        &mut self,
        request: &HighlightRequest,
        early: impl FnMut(&[StyledLine]),
        superseded: impl Fn() -> bool,
    ) -> Option<&[StyledLine]> {
        let syntax = self
            .syntaxes
            .find_syntax_by_extension("py")
            .unwrap_or_else(|| self.syntaxes.find_syntax_plain_text());
        let (name, theme) = match self.themes.themes.get_key_value(&request.theme) {
            Some(found) => found,
            None => self.themes.themes.iter().next()?,
        };
        self.doc.update(
            &self.syntaxes,
            syntax,
            name,
            theme,
            &request.code,
            request.first,
            early,
            superseded,
        )?;
        Some(self.doc.lines())
    }

    /// Forget the text done before (the next request is highlighted whole).
    pub fn forget(&mut self) {
        self.doc = Document::default();
    }
}

impl Default for Engine {
    fn default() -> Self {
        Engine::new()
    }
}

fn trim_newline(s: &str) -> &str {
    s.trim_end_matches(['\n', '\r'])
}

fn convert(s: syntect::highlighting::Style) -> Style {
    let mut style = Style::new().fg(Color::Rgb(s.foreground.r, s.foreground.g, s.foreground.b));
    if s.font_style.contains(FontStyle::BOLD) {
        style = style.add_modifier(Modifier::BOLD);
    }
    if s.font_style.contains(FontStyle::ITALIC) {
        style = style.add_modifier(Modifier::ITALIC);
    }
    style
}

/// The cache key of a text.
pub(crate) fn text_key(text: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    text.hash(&mut h);
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_worker_answers_the_latest_request() {
        let (tx, mut rx) = mpsc::channel(4);
        let h = Highlighter::spawn(tx).unwrap();
        for generation in 1..=3 {
            h.request(HighlightRequest {
                generation,
                key: generation,
                code: "def f(x):\n    return x + 1\n".into(),
                theme: "base16-ocean.dark".into(),
                first: 100,
            });
        }
        let got = tokio::time::timeout(std::time::Duration::from_secs(20), rx.recv())
            .await
            .unwrap()
            .unwrap();
        // Requests 1 and 2 were replaced while the worker loaded its syntaxes
        // (or dropped as superseded); 3 always arrives, and last.
        let mut last = got;
        while let Ok(Some(more)) =
            tokio::time::timeout(std::time::Duration::from_millis(200), rx.recv()).await
        {
            last = more;
        }
        assert_eq!(last.generation, 3);
        assert_eq!(last.lines.len(), 2);
        let def = &last.lines[0][0];
        assert_eq!(def.1, "def");
        assert!(def.0.fg.is_some());
    }
}
