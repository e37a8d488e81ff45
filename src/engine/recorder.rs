//! The one place events are born: appended to the tape, folded into the
//! engine's `State`, handed to the views, and (for code and tests) written
//! into the session folder as plain files a person can open.

use std::path::{Path, PathBuf};

use tokio::sync::mpsc;

use crate::session::{Event, Record, State, TapeError, TapeWriter};

pub struct Recorder {
    tape: TapeWriter,
    state: State,
    views: mpsc::Sender<Record>,
    views_open: bool,
    dir: PathBuf,
}

impl Recorder {
    pub fn create(dir: &Path, views: mpsc::Sender<Record>) -> Result<Recorder, TapeError> {
        let tape = TapeWriter::create(&dir.join("tape.jsonl"))?;
        Ok(Recorder {
            tape,
            state: State::default(),
            views,
            views_open: true,
            dir: dir.to_path_buf(),
        })
    }

    pub fn state(&self) -> &State {
        &self.state
    }

    pub async fn append(&mut self, event: Event) -> Result<Record, TapeError> {
        self.write_side_file(&event);
        let record = self.tape.append(event)?;
        self.state.apply(&record);
        if self.views_open && self.views.send(record.clone()).await.is_err() {
            // The view went away (a headless run that stopped listening):
            // the tape keeps everything.
            self.views_open = false;
        }
        Ok(record)
    }

    pub fn flush(&mut self) -> Result<(), TapeError> {
        self.tape.flush()
    }

    /// Code and tests also land as files: code/NODE/N.py, tests/NODE.py.
    /// Best effort: the tape, not these copies, is the record.
    fn write_side_file(&self, event: &Event) {
        let (path, text) = match event {
            Event::Code {
                node,
                iteration,
                code,
                ..
            } => (
                self.dir
                    .join("code")
                    .join(node)
                    .join(format!("{iteration}.py")),
                code,
            ),
            Event::Tests { node, code, .. } => {
                (self.dir.join("tests").join(format!("test_{node}.py")), code)
            }
            _ => return,
        };
        if let Some(parent) = path.parent() {
            let _ = std::fs::create_dir_all(parent);
        }
        let _ = std::fs::write(path, text);
    }
}
