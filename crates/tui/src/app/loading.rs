//! Reviewing or replaying a tape while it is still being read
//! (`tui::loader`): the records come in batches; in review the cursor
//! follows the end unless the person moved it, in a replay the clock moves
//! it and waits at the end of what is read; the status bar says how far
//! the reading got, and what the whole tape held (did it finish, what could
//! not be read) is said once it is known, as `App::review` says it for a
//! tape read at once.

use tokio::sync::mpsc;

use super::*;
use crate::loader::{Loaded, Opening, Progress, RESERVE_AT_MOST};
use codeloop_session::TapeEnd;

impl App {
    /// Review a tape being opened: its first records now; the receiver
    /// (for the event loop) brings the rest, if there is more.
    pub fn open(
        opening: Opening,
        info: Info,
        theme: Theme,
    ) -> (App, Option<mpsc::Receiver<Loaded>>) {
        let mut app = App::blank(Mode::Review, info, theme);
        app.session.info.loading = None;
        if opening.rest.is_some() {
            app.session.info.loading = Some(opening.progress.percent());
            let first = opening.first.len();
            app.session
                .timeline
                .reserve(first + opening.progress.records_to_come(first, RESERVE_AT_MOST));
        }
        app.load_records(opening.first, opening.progress);
        if let Some(end) = &opening.end {
            app.tape_read(end);
        }
        (app, opening.rest)
    }

    /// Play a tape being opened back from its start: the first records
    /// now, the rest (the receiver, for the event loop) while it plays.
    pub fn open_replay(
        opening: Opening,
        info: Info,
        theme: Theme,
        clock: Replay,
    ) -> (App, Option<mpsc::Receiver<Loaded>>) {
        let (mut app, rest) = App::open(opening, info, theme);
        app.session.mode = Mode::Replay(clock);
        app.set_cursor(0);
        (app, rest)
    }

    /// More records of the tape being read: appended, and in review folded
    /// if the cursor was at the end (a replay's clock moves on its own).
    pub fn load_records(&mut self, records: Vec<Record>, progress: Progress) {
        let follow = self.at_end() && matches!(self.session.mode, Mode::Review);
        for r in records {
            self.session.timeline.push(r);
        }
        if follow {
            self.set_cursor(self.session.timeline.records().len());
        }
        if self.session.info.loading.is_some() {
            self.session.info.loading = Some(progress.percent());
        }
        self.dirty = true;
    }

    /// The tape was read to its end (or could not be read further).
    pub fn load_finished(&mut self, end: Result<TapeEnd, String>) {
        self.session.info.loading = None;
        // A replay that waited at the end of what was read is done.
        if let Mode::Replay(clock) = &mut self.session.mode
            && clock.playing
            && self.session.timeline.at_end()
        {
            clock.pause();
            self.say_replay_finished();
        }
        match end {
            Ok(end) => self.tape_read(&end),
            Err(e) => {
                self.flash = Some((
                    NoticeLevel::Error,
                    format!("the rest of the tape could not be read: {e}"),
                ));
            }
        }
        self.dirty = true;
    }

    /// Say what the whole tape held: a session that did not finish, a
    /// last line cut off, lines that could not be read.
    pub(super) fn tape_read(&mut self, end: &TapeEnd) {
        self.session.info.truncated_line = end.truncated_tail.map(|(line, _)| line);
        self.session.info.unfinished = !end.finished;
        // The cut-off last line has its own note; the report names the skipped ones.
        self.session.info.damage = (!end.skipped.is_empty())
            .then(|| end.damage_report())
            .flatten();
        let opening = crate::notify::opening_note(
            self.session.info.unfinished,
            self.session.info.damage.as_deref(),
        );
        if let Some(text) = opening {
            self.flash = Some((NoticeLevel::Warning, text));
        }
        self.dirty = true;
    }
}
