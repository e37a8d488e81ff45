//! `o`: the selected code or tests in the person's own editor. The terminal
//! is handed over while it runs (the alternate screen left, raw mode off,
//! terminal events no longer read) and taken back after; the edit comes back
//! to the app as text, which it sends as an edit command.
//!
//! The editor is `$VISUAL`, else `$EDITOR`, else `vi`, run through `sh -c`
//! so a value with arguments (`code --wait`) works as it does for git.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use crossterm::event::{Event as TermEvent, EventStream};
use futures_util::{Stream, StreamExt};

use super::panes::editor::EditTarget;

/// What `o` asks the event loop to do.
#[derive(Debug, Clone, PartialEq)]
pub struct ExternalEdit {
    pub target: EditTarget,
    /// The text as the app has it (what "unchanged" is measured against).
    pub text: String,
}

/// How an editor session ended.
#[derive(Debug, Clone, PartialEq)]
pub enum EditorOutcome {
    /// Saved with changes.
    Edited(String),
    /// Closed without a change: nothing is sent.
    Unchanged,
    /// It could not start or it failed; `text` is what the file held after,
    /// when that differs from what it started with (so nothing is lost).
    Failed {
        message: String,
        text: Option<String>,
    },
}

/// Runs the editor with the terminal handed over (the event loop awaits it).
pub(crate) type EditorHook =
    Box<dyn FnMut(String) -> Pin<Box<dyn Future<Output = EditorOutcome> + Send>> + Send>;

/// The editor command: `$VISUAL`, then `$EDITOR`, then `vi`.
pub(crate) fn editor_command(visual: Option<String>, editor: Option<String>) -> String {
    [visual, editor]
        .into_iter()
        .flatten()
        .map(|s| s.trim().to_string())
        .find(|s| !s.is_empty())
        .unwrap_or_else(|| "vi".to_string())
}

/// Edit `text` in `command` (a shell command; the file's path is appended),
/// in a temporary `.py` file. The terminal must already be handed over.
pub(crate) async fn edit_text(command: &str, text: &str) -> EditorOutcome {
    let file = match tempfile::Builder::new()
        .prefix("codeloop-edit-")
        .suffix(".py")
        .tempfile()
    {
        Ok(f) => f,
        Err(e) => {
            return EditorOutcome::Failed {
                message: format!("cannot create a file to edit in ({e}); check TMPDIR"),
                text: None,
            };
        }
    };
    if let Err(e) = std::fs::write(file.path(), text) {
        return EditorOutcome::Failed {
            message: format!("cannot write {} ({e})", file.path().display()),
            text: None,
        };
    }
    let status = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{command} \"$1\""))
        .arg("codeloop-editor")
        .arg(file.path())
        .status()
        .await;
    let after = std::fs::read_to_string(file.path());
    let changed = |after: &Result<String, std::io::Error>| match after {
        Ok(t) if t != text => Some(t.clone()),
        _ => None,
    };
    match status {
        Err(e) => EditorOutcome::Failed {
            message: format!("cannot start the editor `{command}` ({e}); set $VISUAL or $EDITOR"),
            text: None,
        },
        Ok(s) if !s.success() => EditorOutcome::Failed {
            message: format!(
                "the editor `{command}` failed ({s}); set $VISUAL or $EDITOR to one that works"
            ),
            text: changed(&after),
        },
        Ok(_) => match after {
            Ok(t) if t == text => EditorOutcome::Unchanged,
            Ok(t) => EditorOutcome::Edited(t),
            Err(e) => EditorOutcome::Failed {
                message: format!(
                    "cannot read back {} after the editor ({e})",
                    file.path().display()
                ),
                text: None,
            },
        },
    }
}

/// The terminal's events, in a slot the editor hook empties while the
/// editor runs: dropping crossterm's stream stops its reading thread, so
/// the editor gets every key.
#[derive(Clone, Default)]
pub struct InputSlot(Arc<Mutex<Option<EventStream>>>);

impl InputSlot {
    pub fn new() -> InputSlot {
        InputSlot(Arc::new(Mutex::new(Some(EventStream::new()))))
    }
    fn set(&self, stream: Option<EventStream>) {
        if let Ok(mut slot) = self.0.lock() {
            *slot = stream;
        }
    }
}

impl Stream for InputSlot {
    type Item = std::io::Result<TermEvent>;
    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        match self.0.lock() {
            Ok(mut slot) => match slot.as_mut() {
                Some(stream) => stream.poll_next_unpin(cx),
                // Emptied only while the loop awaits the editor: nobody polls then.
                None => Poll::Pending,
            },
            Err(_) => Poll::Ready(Some(Err(std::io::Error::other(
                "the terminal input was lost (a thread panicked)",
            )))),
        }
    }
}

/// The hook the real terminal uses: stop reading events, leave the screen,
/// run the editor, take the screen back, read events again.
pub fn terminal_hook(input: InputSlot) -> EditorHook {
    Box::new(move |text| {
        let input = input.clone();
        Box::pin(async move {
            let command =
                editor_command(std::env::var("VISUAL").ok(), std::env::var("EDITOR").ok());
            input.set(None);
            super::terminal::restore();
            let outcome = edit_text(&command, &text).await;
            let back = super::terminal::resume();
            input.set(Some(EventStream::new()));
            match back {
                Ok(()) => outcome,
                Err(e) => EditorOutcome::Failed {
                    message: format!("cannot take the terminal back after the editor ({e})"),
                    text: match outcome {
                        EditorOutcome::Edited(t) => Some(t),
                        EditorOutcome::Failed { text, .. } => text,
                        EditorOutcome::Unchanged => None,
                    },
                },
            }
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn visual_comes_before_editor_and_vi_is_the_last_resort() {
        let s = |v: &str| Some(v.to_string());
        assert_eq!(editor_command(s("nano"), s("vim")), "nano");
        assert_eq!(editor_command(s(" "), s("vim")), "vim");
        assert_eq!(editor_command(None, None), "vi");
    }

    #[tokio::test]
    async fn an_editor_that_rewrites_the_file_returns_the_new_text() {
        let out = edit_text("sed -i s/1/2/", "x = 1\n").await;
        assert_eq!(out, EditorOutcome::Edited("x = 2\n".into()));
    }

    #[tokio::test]
    async fn an_editor_that_changes_nothing_sends_nothing() {
        assert_eq!(edit_text("true", "x = 1\n").await, EditorOutcome::Unchanged);
    }

    #[tokio::test]
    async fn an_editor_that_fails_keeps_what_it_wrote() {
        let out = edit_text("sh -c 'sed -i s/1/3/ \"$0\"; exit 2'", "x = 1\n").await;
        match out {
            EditorOutcome::Failed { message, text } => {
                assert!(message.contains("failed"), "{message}");
                assert_eq!(text.as_deref(), Some("x = 3\n"));
            }
            other => panic!("{other:?}"),
        }
        match edit_text("no-such-editor-here", "x\n").await {
            EditorOutcome::Failed { message, text } => {
                assert!(message.contains("no-such-editor-here"), "{message}");
                assert_eq!(text, None);
            }
            other => panic!("{other:?}"),
        }
    }
}
