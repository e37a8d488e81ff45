//! The one place events are born. A single writer, on its own thread, owns
//! the tape file: it decides each event on the state it will fold into,
//! appends it (flushed line by line at every step), folds it into the
//! session's `State`, hands it to the views, and writes code and tests into
//! the session folder as plain files a person can open. The engine's tasks
//! reach it through a bounded channel and wait for the `Record` back, so no
//! file I/O happens on the async executor and no lock is held across an
//! `.await`; they read the folded state through a short read lock.
//!
//! Architecture Invariant: this thread is the tape's one writer; every
//! other task asks it, so events are ordered, and folded, as written.

use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError, RwLock};

use tokio::sync::{mpsc, oneshot};

use codeloop_session::session_fs::{PRIVATE_FILE, plain_name, write_inside};
use codeloop_session::{Event, Record, State, TapeError, TapeWriter};

/// Appends waiting for the writer before an appender waits.
const WRITE_QUEUE: usize = 64;

/// Decides the events to append from the state they will fold into.
type Decide = Box<dyn FnOnce(&State) -> Vec<Event> + Send>;

enum Request {
    Append {
        decide: Decide,
        reply: oneshot::Sender<Result<Vec<Record>, TapeError>>,
    },
    Flush {
        reply: oneshot::Sender<Result<(), TapeError>>,
    },
}

/// The engine's handle on the tape: append events, read the folded state.
pub(crate) struct Recorder {
    requests: mpsc::Sender<Request>,
    state: Arc<RwLock<State>>,
    path: PathBuf,
}

impl Recorder {
    /// Create the tape in `dir` and start its writer; every record goes to `views` too.
    pub(crate) fn create(dir: &Path, views: mpsc::Sender<Record>) -> Result<Recorder, TapeError> {
        let tape = TapeWriter::create(&dir.join("tape.jsonl"))?;
        Recorder::start(dir, tape, Vec::new(), views)
    }

    /// Start the writer of `tape` (in `dir`), whose records so far are
    /// `history`: the state starts folded from them, and the views get them
    /// first, so a continued session shows its whole history.
    pub(crate) fn start(
        dir: &Path,
        tape: TapeWriter,
        history: Vec<Record>,
        views: mpsc::Sender<Record>,
    ) -> Result<Recorder, TapeError> {
        let path = tape.path().to_path_buf();
        let state = Arc::new(RwLock::new(State::from_records(&history)));
        let (requests, inbox) = mpsc::channel(WRITE_QUEUE);
        let writer = Writer {
            tape,
            state: state.clone(),
            views: Some(views),
            dir: dir.to_path_buf(),
        };
        std::thread::Builder::new()
            .name("tape-writer".into())
            .spawn(move || writer.serve(history, inbox))
            .map_err(|source| TapeError::Open {
                path: path.clone(),
                source,
            })?;
        Ok(Recorder {
            requests,
            state,
            path,
        })
    }

    /// Read the state folded from every event appended so far.
    pub(crate) fn read<T>(&self, f: impl FnOnce(&State) -> T) -> T {
        let state = self.state.read().unwrap_or_else(PoisonError::into_inner);
        f(&state)
    }

    /// Append one event; its record once it is on the tape and folded.
    pub(crate) async fn append(&self, event: Event) -> Result<Record, TapeError> {
        let (mut records, ()) = self.append_with(move |_| (vec![event], ())).await?;
        records.pop().ok_or_else(|| self.stopped())
    }

    /// Append the events `decide` picks from the state as it is when the
    /// writer gets to them, with nothing appended in between: ids counted
    /// from the state, a notice given once, a status recorded only when it
    /// changes. Returns their records and what `decide` said besides.
    pub(crate) async fn append_with<T: Send + 'static>(
        &self,
        decide: impl FnOnce(&State) -> (Vec<Event>, T) + Send + 'static,
    ) -> Result<(Vec<Record>, T), TapeError> {
        let (said_tx, said_rx) = oneshot::channel();
        let decide: Decide = Box::new(move |state| {
            let (events, said) = decide(state);
            let _ = said_tx.send(said);
            events
        });
        let (reply, records) = oneshot::channel();
        self.requests
            .send(Request::Append { decide, reply })
            .await
            .map_err(|_| self.stopped())?;
        let records = records.await.map_err(|_| self.stopped())??;
        let said = said_rx.await.map_err(|_| self.stopped())?;
        Ok((records, said))
    }

    /// Wait until everything appended so far is in the file.
    pub(crate) async fn flush(&self) -> Result<(), TapeError> {
        let (reply, done) = oneshot::channel();
        self.requests
            .send(Request::Flush { reply })
            .await
            .map_err(|_| self.stopped())?;
        done.await.map_err(|_| self.stopped())?
    }

    fn stopped(&self) -> TapeError {
        TapeError::Write {
            path: self.path.clone(),
            source: std::io::Error::other(
                "the tape writer stopped; what was appended before is on the tape",
            ),
        }
    }
}

/// The writer's side: the only owner of the tape file and the only one who folds.
struct Writer {
    tape: TapeWriter,
    state: Arc<RwLock<State>>,
    /// None once the views stopped listening (a headless run that went away):
    /// the tape keeps everything.
    views: Option<mpsc::Sender<Record>>,
    dir: PathBuf,
}

impl Writer {
    /// Serve requests until every `Recorder` is gone.
    fn serve(mut self, history: Vec<Record>, mut inbox: mpsc::Receiver<Request>) {
        for record in history {
            self.show(record);
        }
        while let Some(request) = inbox.blocking_recv() {
            match request {
                Request::Append { decide, reply } => {
                    let events = {
                        let state = self.state.read().unwrap_or_else(PoisonError::into_inner);
                        decide(&state)
                    };
                    let records = events
                        .into_iter()
                        .map(|event| self.write(event))
                        .collect::<Result<Vec<_>, _>>();
                    let _ = reply.send(records);
                }
                Request::Flush { reply } => {
                    let _ = reply.send(self.tape.flush());
                }
            }
        }
    }

    fn write(&mut self, event: Event) -> Result<Record, TapeError> {
        write_side_file(&self.dir, &event);
        let record = self.tape.append(event)?;
        self.state
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .apply(&record);
        self.show(record.clone());
        Ok(record)
    }

    /// Hand a record to the views. A slow view holds the writer (and so the
    /// engine) back, as before: the views see every record, in order.
    fn show(&mut self, record: Record) {
        if let Some(views) = &self.views
            && views.blocking_send(record).is_err()
        {
            self.views = None;
        }
    }
}

/// Code and tests also land as files in the session folder `dir`:
/// code/NODE/N.py, tests/test_NODE.py. Best effort: the tape, not these
/// copies, is the record.
/// The node's name is one plain name or nothing is written (the tape was
/// checked when read; this is the second look), and nothing is written
/// through a link (`session_fs::write_inside`).
pub(crate) fn write_side_file(dir: &Path, event: &Event) {
    let (rel, text) = if let Event::Code(e) = event {
        let file = format!("{}.py", e.iteration);
        let Ok(node) = plain_name(&e.node) else {
            return;
        };
        (Path::new("code").join(node).join(file), &e.code)
    } else if let Event::Tests(e) = event {
        let file = format!("test_{}.py", e.node);
        let Ok(file) = plain_name(&file) else { return };
        (Path::new("tests").join(file), &e.code)
    } else {
        return;
    };
    let _ = write_inside(dir, &rel, text.as_bytes(), PRIVATE_FILE);
}
