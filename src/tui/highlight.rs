//! Syntax highlighting off the UI thread. One worker thread; a new request
//! replaces any waiting one (latest wins), a running job gives up as soon as a
//! newer request arrives, and results carry the generation they were asked
//! with, so the app drops stale ones.

use std::sync::{Arc, Condvar, Mutex};

use ratatui::style::{Color, Modifier, Style};
use syntect::easy::HighlightLines;
use syntect::highlighting::{FontStyle, ThemeSet};
use syntect::parsing::SyntaxSet;
use tokio::sync::mpsc;

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
}

/// One highlighted line: spans of text with their style.
pub type StyledLine = Vec<(Style, String)>;

#[derive(Debug, Clone, PartialEq)]
pub struct Highlighted {
    pub generation: u64,
    pub key: u64,
    pub lines: Vec<StyledLine>,
}

#[derive(Default)]
struct Slot {
    next: Option<HighlightRequest>,
    closed: bool,
}

/// The handle the event loop keeps; dropping it stops the worker.
pub struct Highlighter {
    slot: Arc<(Mutex<Slot>, Condvar)>,
}

impl Highlighter {
    /// Start the worker; results arrive on `results` (bounded by the caller).
    pub fn spawn(results: mpsc::Sender<Highlighted>) -> std::io::Result<Highlighter> {
        let slot = Arc::new((Mutex::new(Slot::default()), Condvar::new()));
        let worker_slot = Arc::clone(&slot);
        std::thread::Builder::new()
            .name("codeloop-highlight".into())
            .spawn(move || worker(worker_slot, results))?;
        Ok(Highlighter { slot })
    }

    /// Replace whatever is waiting with this request.
    pub fn request(&self, request: HighlightRequest) {
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
    let syntaxes = SyntaxSet::load_defaults_newlines();
    let themes = ThemeSet::load_defaults();
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
        if let Some(lines) = highlight_python(&syntaxes, &themes, &request, superseded) {
            let done = Highlighted {
                generation: request.generation,
                key: request.key,
                lines,
            };
            if results.blocking_send(done).is_err() {
                return;
            }
        }
    }
}

/// Highlight synchronously (the worker's job; also used by tests and the bench).
/// Returns None if `superseded` says a newer request is waiting.
pub fn highlight_python(
    syntaxes: &SyntaxSet,
    themes: &ThemeSet,
    request: &HighlightRequest,
    superseded: impl Fn() -> bool,
) -> Option<Vec<StyledLine>> {
    let syntax = syntaxes
        .find_syntax_by_extension("py")
        .unwrap_or_else(|| syntaxes.find_syntax_plain_text());
    let theme = themes
        .themes
        .get(&request.theme)
        .or_else(|| themes.themes.values().next())?;
    let mut h = HighlightLines::new(syntax, theme);
    let mut out = Vec::new();
    for (i, line) in syntect::util::LinesWithEndings::from(&request.code).enumerate() {
        if i % 256 == 0 && i > 0 && superseded() {
            return None;
        }
        if line.len() > MAX_LINE_BYTES {
            out.push(vec![(Style::new(), trim_newline(line).to_string())]);
            continue;
        }
        let spans = match h.highlight_line(line, syntaxes) {
            Ok(s) => s,
            Err(_) => vec![(syntect::highlighting::Style::default(), line)],
        };
        out.push(
            spans
                .into_iter()
                .map(|(s, t)| (convert(s), trim_newline(t).to_string()))
                .filter(|(_, t)| !t.is_empty())
                .collect(),
        );
    }
    Some(out)
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
pub fn text_key(text: &str) -> u64 {
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
