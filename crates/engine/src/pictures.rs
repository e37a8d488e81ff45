//! The pictures a run leaves (a chart the program drew): each image file is
//! copied into the session's `pictures/` folder and recorded on the tape
//! (`Event::Picture`: its name, where it is kept, format, size and pixels).
//! A file named like an image whose bytes are none (a `.png` of text) is
//! not kept, nor one the same as the picture of its name kept last (each
//! test run and the program's run draw the same chart again); one that
//! cannot be written is a notice, never a failed run.

use codeloop_protocol::picture::{self, Picture};
use std::path::Path;

use codeloop_session::session_fs::{PRIVATE_FILE, read_inside, write_inside};
use codeloop_session::{Event, NoticeLevel, PictureEvent, TapeError};

use super::context::Core;

/// The folder of a session where pictures are kept.
const PICTURES_DIR: &str = codeloop_session::tape_check::PICTURES;

impl Core {
    /// Keep the images a run left: `run_id` None is the program's run
    /// through its entry point.
    pub(crate) async fn keep_pictures(
        &self,
        run_id: Option<u64>,
        images: Vec<(String, Vec<u8>)>,
    ) -> Result<(), TapeError> {
        for (name, bytes) in images {
            let Some((format, size)) = picture::sniff(&bytes) else {
                continue;
            };
            let last = self.read(|s| {
                s.pictures
                    .iter()
                    .rev()
                    .map(|p| &p.picture)
                    .find(|p| p.name == name)
                    .map(|p| (p.size_bytes, p.path.clone()))
            });
            let same = last.is_some_and(|(size, path)| {
                size == bytes.len() as u64
                    && read_inside(&self.dir, Path::new(&path), None)
                        .is_ok_and(|kept| kept == bytes)
            });
            if same {
                continue;
            }
            let prefix = match run_id {
                Some(id) => format!("run-{id}"),
                None => "program".to_string(),
            };
            let path = format!("{PICTURES_DIR}/{prefix}-{name}");
            let written = write_inside(&self.dir, Path::new(&path), &bytes, PRIVATE_FILE);
            if let Err(e) = written {
                self.notice(
                    NoticeLevel::Warning,
                    format!(
                        "the picture {name} could not be kept in {}: {e}",
                        self.dir.join(&path).display()
                    ),
                )
                .await?;
                continue;
            }
            self.record(Event::Picture(PictureEvent {
                run_id,
                picture: Picture {
                    name,
                    path,
                    format: format.to_string(),
                    size_bytes: bytes.len() as u64,
                    width: size.map(|s| s.0),
                    height: size.map(|s| s.1),
                },
            }))
            .await?;
        }
        Ok(())
    }
}
