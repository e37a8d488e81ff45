//! A tape opened in the background. The first records are read before the
//! screen opens (so a tape of a newer format, or one with nothing readable,
//! is refused on stderr as before); the rest is read and parsed on a thread
//! and handed to the event loop in batches, which it folds between keys.
//! The first frame is drawn from the first batch, with "loading N%" in the
//! status bar, while the parse (this thread) and the fold (the UI's) go on
//! side by side.

use std::path::Path;

use tokio::sync::mpsc;

use codeloop_session::{Record, TapeContents, TapeEnd, TapeError, TapeStream};

/// Records read before the first frame: a screenful of session, quickly.
pub const FIRST_BATCH: usize = 1024;
/// Records in each later batch (the UI folds one between looks at the keyboard).
pub const BATCH: usize = 8192;
/// Records made room for at once, at most (a guess from the first batch).
pub(crate) const RESERVE_AT_MOST: usize = 4 << 20;
/// Batches read ahead of the fold at most.
const AHEAD: usize = 8;

/// How far the reading got.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Progress {
    pub read: u64,
    pub total: u64,
}

impl Progress {
    /// About how many more records the tape holds, from the bytes the
    /// `records` read so far took (at most `cap`).
    pub(crate) fn records_to_come(&self, records: usize, cap: usize) -> usize {
        if self.read == 0 {
            return 0;
        }
        let rest = self.total.saturating_sub(self.read) as u128;
        let estimate = rest * records as u128 / u128::from(self.read);
        usize::try_from(estimate).unwrap_or(cap).min(cap)
    }

    /// Percent read, 0 to 99 while reading (100 only once it is done).
    pub fn percent(&self) -> u8 {
        match self.total {
            0 => 0,
            total => (self.read.saturating_mul(100) / total).min(99) as u8,
        }
    }
}

/// What the reading thread sends.
#[derive(Debug)]
pub enum Loaded {
    Records {
        records: Vec<Record>,
        progress: Progress,
    },
    /// The end of the tape: what it held beside its records, or why the
    /// rest could not be read.
    End(Result<TapeEnd, String>),
}

/// A tape being opened.
#[derive(Debug)]
pub struct Opening {
    /// The records read before the screen opens.
    pub first: Vec<Record>,
    pub progress: Progress,
    /// The rest, still being read; None when `first` is the whole tape.
    pub rest: Option<mpsc::Receiver<Loaded>>,
    /// What the whole tape held beside its records, when `first` is all of it.
    pub(crate) end: Option<TapeEnd>,
}

impl Opening {
    /// A tape already read whole (a bundled demo's).
    pub fn whole(tape: TapeContents) -> Opening {
        let end = TapeEnd {
            finished: tape.finished(),
            truncated_tail: tape.truncated_tail,
            skipped: tape.skipped,
        };
        Opening {
            first: tape.records,
            progress: Progress::default(),
            rest: None,
            end: Some(end),
        }
    }
}

/// Start reading the tape at `path`: its first records now, the rest on a thread.
pub fn open(path: &Path) -> Result<Opening, TapeError> {
    let mut stream = TapeStream::open(path)?;
    let mut first = Vec::new();
    // Until a record is found: the errors of a tape that is not one come here.
    while first.is_empty() && !stream.at_end() {
        first = stream.batch(FIRST_BATCH)?;
    }
    let progress = progress(&stream);
    if stream.at_end() {
        let end = stream.finish()?;
        return Ok(Opening {
            first,
            progress,
            rest: None,
            end: Some(end),
        });
    }
    let (tx, rx) = mpsc::channel(AHEAD);
    let spawned = std::thread::Builder::new()
        .name("codeloop-tape".into())
        .spawn(move || read_rest(stream, &tx));
    if let Err(e) = spawned {
        return Err(TapeError::Read {
            path: path.to_path_buf(),
            source: e,
        });
    }
    Ok(Opening {
        first,
        progress,
        rest: Some(rx),
        end: None,
    })
}

fn progress(stream: &TapeStream) -> Progress {
    let (read, total) = stream.progress();
    Progress { read, total }
}

/// The reading thread: batches until the end; it stops early when the
/// receiver is gone (the workbench was closed).
fn read_rest(mut stream: TapeStream, tx: &mpsc::Sender<Loaded>) {
    loop {
        match stream.batch(BATCH) {
            Ok(records) if records.is_empty() && stream.at_end() => break,
            Ok(records) => {
                let progress = progress(&stream);
                if tx
                    .blocking_send(Loaded::Records { records, progress })
                    .is_err()
                {
                    return;
                }
            }
            Err(e) => {
                let _ = tx.blocking_send(Loaded::End(Err(e.to_string())));
                return;
            }
        }
    }
    let end = stream.finish().map_err(|e| e.to_string());
    let _ = tx.blocking_send(Loaded::End(end));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_says_how_far_and_guesses_what_is_left() {
        let p = Progress {
            read: 100,
            total: 1000,
        };
        assert_eq!(p.percent(), 10);
        assert_eq!(p.records_to_come(10, usize::MAX), 90);
        assert_eq!(p.records_to_come(10, 50), 50);
        let done = Progress {
            read: 1000,
            total: 1000,
        };
        assert_eq!(done.percent(), 99, "100 only once the reading ended");
        assert_eq!(done.records_to_come(10, usize::MAX), 0);
        assert_eq!(Progress::default().percent(), 0);
        assert_eq!(Progress::default().records_to_come(0, 9), 0);
    }
}
