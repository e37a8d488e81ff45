//! The tape in memory and the cursor over it: the records, the state folded
//! up to the cursor, copies of the state along the way (checkpoints), the
//! jumps (an event, an iteration, the first failure, either end), and the
//! replay clock. Pure: no terminal, no I/O, and no clock of its own. The time
//! is always passed in, so a test advances it instead of sleeping.

use std::time::{Duration, Instant};

use codeloop_session::{Event, Record, State, moments};

/// Output text held in memory beyond which the oldest output is elided
/// (the tape on disk keeps it all). Keeps a flood from growing memory.
pub const OUTPUT_MEMORY_BUDGET: usize = 8 << 20;
/// A copy of the state is kept every this many records, so stepping back
/// through a long tape refolds from the nearest copy, not from the start.
pub(crate) const CHECKPOINT_EVERY: usize = 4096;
/// Copies kept at most (thinned out evenly beyond this).
const MAX_CHECKPOINTS: usize = 32;
/// A replay shortens pauses longer than this (the person was away), so a
/// recording of a step-mode session does not stand still for minutes.
pub const REPLAY_MAX_GAP_MS: u64 = 2_000;
/// Records a replay applies at most in one tick (a tick never stalls the UI).
const MAX_PER_TICK: usize = 10_000;

/// Where a jump went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Jump {
    Moved,
    /// Nothing there: the cursor stayed.
    NoneThere,
}

#[derive(Debug, Default)]
pub struct Timeline {
    records: Vec<Record>,
    /// Records folded into `state`.
    cursor: usize,
    state: State,
    /// (records folded, state) saved along the tape, in order.
    checkpoints: Vec<(usize, State)>,
    /// The node the engine touched last at the cursor.
    active: Option<String>,
    /// Output bytes held in `records`; the oldest is elided past the budget.
    output_held: usize,
    elide_from: usize,
    elided_output: bool,
    /// The state folded through every record, kept while the cursor is in
    /// the past of a tape it followed to the end (a live session reviewed):
    /// what the session is now, wherever the cursor is.
    head: Option<Box<State>>,
}

impl Timeline {
    pub fn records(&self) -> &[Record] {
        &self.records
    }
    pub(crate) fn cursor(&self) -> usize {
        self.cursor
    }
    /// The state folded up to the cursor.
    pub(crate) fn state(&self) -> &State {
        &self.state
    }
    /// The cursor is behind the last record (not reviewing the past).
    pub(crate) fn at_end(&self) -> bool {
        self.cursor >= self.records.len()
    }
    /// The state of the whole tape, wherever the cursor is, when it is
    /// known: at the end, or in the past of a tape the cursor followed to
    /// its end (a tape opened for review and never at its end: None).
    pub fn head(&self) -> Option<&State> {
        if self.at_end() {
            Some(&self.state)
        } else {
            self.head.as_deref()
        }
    }
    /// The node the engine was busy with at the cursor.
    pub(crate) fn active(&self) -> Option<&str> {
        self.active.as_deref()
    }
    /// Older output was dropped from memory (the tape on disk keeps it).
    pub fn elided_output(&self) -> bool {
        self.elided_output
    }

    /// Make room for `additional` more records at once (a tape being read
    /// says about how many it holds), so the list is not copied as it grows.
    pub(crate) fn reserve(&mut self, additional: usize) {
        self.records.reserve(additional);
    }

    /// Add a record at the end (the cursor stays where it is).
    pub fn push(&mut self, r: Record) {
        if let Event::Output(e) = &r.event {
            self.output_held += e.text.len();
        }
        if let Some(head) = &mut self.head {
            head.apply(&r);
        }
        self.records.push(r);
        if self.output_held > OUTPUT_MEMORY_BUDGET {
            self.elide_output();
        }
    }

    /// Drop the text of the oldest output records until within budget.
    /// The state (already folded) keeps its own bounded copy; only stepping
    /// back before this point shows less output than the tape on disk.
    fn elide_output(&mut self) {
        let target = OUTPUT_MEMORY_BUDGET / 2;
        while self.output_held > target && self.elide_from < self.records.len() {
            if let Event::Output(e) = &mut self.records[self.elide_from].event {
                self.output_held -= e.text.len();
                e.text = String::new();
                self.elided_output = true;
            }
            self.elide_from += 1;
        }
    }

    /// Fold to `n` records: forward by applying, backward by refolding from
    /// the nearest checkpoint.
    pub fn set_cursor(&mut self, n: usize) {
        let n = n.min(self.records.len());
        if n == self.records.len()
            && let Some(head) = self.head.take()
        {
            self.state = *head;
            self.cursor = n;
            self.active = moments::active_at(&self.records[..n]).map(str::to_string);
            return;
        }
        let refold = n < self.cursor;
        if refold && self.at_end() {
            // Refolding replaces the state: keep it whole as the head.
            self.head = Some(Box::new(std::mem::take(&mut self.state)));
        }
        if refold {
            match self.checkpoints.iter().rev().find(|(at, _)| *at <= n) {
                Some((at, state)) => {
                    self.state = state.clone();
                    self.cursor = *at;
                }
                None => {
                    self.state = State::default();
                    self.cursor = 0;
                }
            }
        }
        for i in self.cursor..n {
            let r = &self.records[i];
            self.state.apply(r);
            if let Some(node) = moments::active_node(&r.event) {
                self.active = Some(node.to_string());
            }
            let at = i + 1;
            if at % CHECKPOINT_EVERY == 0 && self.checkpoints.last().is_none_or(|(c, _)| *c < at) {
                self.checkpoints.push((at, self.state.clone()));
                if self.checkpoints.len() > MAX_CHECKPOINTS {
                    // Thin out evenly: keep every other one.
                    let mut keep = false;
                    self.checkpoints.retain(|_| {
                        keep = !keep;
                        keep
                    });
                }
            }
        }
        if refold || self.cursor == 0 {
            // Refolded: find the node active at the cursor.
            self.active = moments::active_at(&self.records[..n]).map(str::to_string);
        }
        self.cursor = n;
    }

    /// One event back or forward.
    pub(crate) fn step(&mut self, forward: bool) {
        let n = if forward {
            self.cursor + 1
        } else {
            self.cursor.saturating_sub(1)
        };
        self.set_cursor(n);
    }

    /// To the next/previous new code version (an iteration of some node).
    pub(crate) fn jump_iteration(&mut self, forward: bool) -> Jump {
        self.go(moments::iteration_from(&self.records, self.cursor, forward))
    }

    /// To the first failed run, with the localization that follows it.
    pub(crate) fn jump_first_failure(&mut self) -> Jump {
        self.go(moments::first_failure(&self.records))
    }

    fn go(&mut self, target: Option<usize>) -> Jump {
        match target {
            Some(n) => {
                self.set_cursor(n);
                Jump::Moved
            }
            None => Jump::NoneThere,
        }
    }

    /// The record of a finished run, wherever it is on the tape.
    pub(crate) fn recorded_run(&self, run_id: u64) -> Option<codeloop_session::RunRecord> {
        self.records.iter().find_map(|r| {
            let Event::RunFinished(e) = &r.event else {
                return None;
            };
            (e.run_id == run_id).then(|| e.record.clone())
        })
    }

    /// The gap before the record at `at` as a replay plays it, at `speed`.
    fn gap(&self, from: usize, to: usize, speed: f64) -> Duration {
        let ms = match (self.records.get(from), self.records.get(to)) {
            (Some(a), Some(b)) => b.t_ms.saturating_sub(a.t_ms).min(REPLAY_MAX_GAP_MS),
            _ => 0,
        };
        Duration::from_secs_f64(ms as f64 / 1000.0 / speed)
    }
}

/// The replay clock: a tape played back in its own timing, faster or slower.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplayClock {
    pub speed: f64,
    pub playing: bool,
    /// Re-execute recorded runs and compare.
    pub(crate) live: bool,
    /// When the record at the cursor is due (set while playing).
    pub(crate) next_due: Option<Instant>,
}

/// What a replay tick did.
#[derive(Debug, Default)]
pub(crate) struct Tick {
    pub(crate) applied: usize,
    /// The replay reached the end of the tape (and stopped playing).
    pub(crate) finished: bool,
    /// Finished runs passed (replay --live): (run id, the state just after).
    pub(crate) finished_runs: Vec<(u64, State)>,
}

impl ReplayClock {
    pub fn new(speed: f64, playing: bool, live: bool) -> ReplayClock {
        ReplayClock {
            speed,
            playing,
            live,
            next_due: None,
        }
    }

    pub(crate) fn pause(&mut self) {
        self.playing = false;
        self.next_due = None;
    }

    /// Play or pause; playing at the end starts again from the start
    /// (at the end of what is read of a tape still being read, it waits
    /// for the rest instead).
    pub(crate) fn toggle(&mut self, timeline: &mut Timeline, more_coming: bool) {
        self.playing = !self.playing;
        self.next_due = None;
        if self.playing && timeline.at_end() && !more_coming {
            timeline.set_cursor(0);
        }
    }

    pub(crate) fn faster(&mut self) {
        self.speed = (self.speed * 2.0).min(64.0);
        self.next_due = None;
    }

    pub(crate) fn slower(&mut self) {
        self.speed = (self.speed / 2.0).max(0.125);
        self.next_due = None;
    }

    /// When the clock next needs a tick (None: not playing, or at the end).
    pub(crate) fn deadline(&mut self, timeline: &Timeline, now: Instant) -> Option<Instant> {
        if !self.playing || timeline.at_end() {
            return None;
        }
        let c = timeline.cursor();
        let speed = self.speed;
        let due = *self.next_due.get_or_insert_with(|| match c {
            0 => now,
            c => now + timeline.gap(c - 1, c, speed),
        });
        Some(due)
    }

    /// Apply every record that is due by `now`. At the end of a tape still
    /// being read (`more_coming`) the clock waits: the next record, when it
    /// comes, is due its gap after that moment, so playback never runs
    /// ahead of the reading nor hurries to catch up.
    pub(crate) fn tick(
        &mut self,
        timeline: &mut Timeline,
        now: Instant,
        more_coming: bool,
    ) -> Tick {
        let mut tick = Tick::default();
        while let Some(due) = self.deadline(timeline, now) {
            if due > now || tick.applied >= MAX_PER_TICK {
                break;
            }
            let before = timeline.cursor();
            timeline.set_cursor(before + 1);
            tick.applied += 1;
            // The next record is due relative to this one's due time.
            self.next_due = Some(due + timeline.gap(before, before + 1, self.speed));
            if self.live
                && let Event::RunFinished(e) = &timeline.records()[before].event
            {
                tick.finished_runs
                    .push((e.run_id, timeline.state().clone()));
            }
        }
        if timeline.at_end() && self.playing {
            if more_coming {
                self.next_due = None;
            } else {
                self.pause();
                tick.finished = true;
            }
        }
        tick
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use codeloop_session::{Event, NoticeEvent, NoticeLevel, Record};

    fn notices(gaps_ms: &[u64]) -> Timeline {
        let mut t = Timeline::default();
        let mut at = 0;
        for (i, gap) in gaps_ms.iter().enumerate() {
            at += gap;
            t.push(Record {
                seq: i as u64,
                t_ms: at,
                event: Event::Notice(NoticeEvent {
                    level: NoticeLevel::Info,
                    message: format!("n{i}"),
                }),
            });
        }
        t
    }

    #[test]
    fn the_replay_clock_keeps_the_tape_timing_at_its_speed_and_caps_long_gaps() {
        let mut t = notices(&[0, 100, 60_000, 10]);
        let mut clock = ReplayClock::new(2.0, true, false);
        let t0 = Instant::now();
        assert_eq!(clock.deadline(&t, t0), Some(t0), "the first record at once");
        assert_eq!(clock.tick(&mut t, t0, false).applied, 1);
        // 100 ms on the tape: 50 ms at double speed.
        let next = clock.deadline(&t, t0).unwrap();
        assert_eq!(next, t0 + Duration::from_millis(50));
        assert_eq!(
            clock
                .tick(&mut t, t0 + Duration::from_millis(49), false)
                .applied,
            0
        );
        assert_eq!(clock.tick(&mut t, next, false).applied, 1);
        // A minute away from the keyboard plays as the cap: 2 s at 2x = 1 s.
        assert_eq!(
            clock.deadline(&t, next),
            Some(next + Duration::from_millis(1000))
        );
        let tick = clock.tick(&mut t, next + Duration::from_secs(5), false);
        assert_eq!(tick.applied, 2);
        assert!(tick.finished && !clock.playing);
        assert_eq!(clock.deadline(&t, next), None);
    }

    #[test]
    fn a_paused_clock_asks_for_no_tick_and_space_at_the_end_starts_over() {
        let mut t = notices(&[0, 10]);
        t.set_cursor(2);
        let mut clock = ReplayClock::new(1.0, false, false);
        assert_eq!(clock.deadline(&t, Instant::now()), None);
        clock.toggle(&mut t, false);
        assert!(clock.playing);
        assert_eq!(t.cursor(), 0);
    }

    #[test]
    fn at_the_end_of_a_tape_still_being_read_the_clock_waits_for_the_rest() {
        let mut t = notices(&[0, 100]);
        let mut clock = ReplayClock::new(1.0, true, false);
        let t0 = Instant::now();
        let late = t0 + Duration::from_secs(60);
        assert_eq!(clock.tick(&mut t, t0, true).applied, 1);
        let tick = clock.tick(&mut t, late, true);
        assert_eq!(tick.applied, 1);
        assert!(!tick.finished && clock.playing, "waiting, not finished");
        assert_eq!(clock.deadline(&t, late), None, "nothing to play yet");
        // The rest arrives a while later: its first record is due its own
        // gap after that moment, not at once to catch up.
        t.push(Record {
            seq: 2,
            t_ms: 400,
            event: Event::Notice(NoticeEvent {
                level: NoticeLevel::Info,
                message: "n2".into(),
            }),
        });
        let arrived = late + Duration::from_secs(5);
        assert_eq!(
            clock.deadline(&t, arrived),
            Some(arrived + Duration::from_millis(300))
        );
        assert_eq!(clock.tick(&mut t, arrived, true).applied, 0);
        // Space at the end of what is read plays on; it does not start over.
        clock.pause();
        t.set_cursor(3);
        clock.toggle(&mut t, true);
        assert_eq!(t.cursor(), 3);
        let tick = clock.tick(&mut t, arrived + Duration::from_secs(1), false);
        assert!(tick.finished && !clock.playing, "the whole tape was read");
    }

    #[test]
    fn speed_doubles_and_halves_within_bounds() {
        let mut clock = ReplayClock::new(32.0, true, false);
        clock.faster();
        clock.faster();
        assert_eq!(clock.speed, 64.0);
        let mut clock = ReplayClock::new(0.25, true, false);
        clock.slower();
        clock.slower();
        assert_eq!(clock.speed, 0.125);
    }

    #[test]
    fn jumps_that_find_nothing_leave_the_cursor() {
        let mut t = notices(&[0, 10, 10]);
        t.set_cursor(1);
        assert_eq!(t.jump_iteration(true), Jump::NoneThere);
        assert_eq!(t.jump_first_failure(), Jump::NoneThere);
        assert_eq!(t.cursor(), 1);
        t.step(true);
        t.step(true);
        t.step(true);
        assert_eq!(t.cursor(), 3);
        assert!(t.at_end());
    }
}
