//! Keys as data. Every table row is one line of the `?` help: the keys as
//! the help names them, what they do in words, a short form for the footer,
//! and the keys themselves, each with what it does (`A`: the act of the
//! component that owns the table). Dispatch, the footer hints and the help
//! read the same rows, so they cannot drift apart.
//!
//! The tables of the workbench as a whole (moving through the tape, replay,
//! steering the engine) are here; each pane keeps its own table beside the
//! code that acts on it.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// A key as a binding names it: the code, and whether Control is held.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Key {
    pub(crate) code: KeyCode,
    pub(crate) ctrl: bool,
}

impl Key {
    pub(crate) const fn code(code: KeyCode) -> Key {
        Key { code, ctrl: false }
    }
    pub(crate) const fn ch(c: char) -> Key {
        Key::code(KeyCode::Char(c))
    }
    pub(crate) const fn ctrl(c: char) -> Key {
        Key {
            code: KeyCode::Char(c),
            ctrl: true,
        }
    }

    /// The key's name as a hint shows it.
    pub(crate) fn name(&self) -> String {
        let base = match self.code {
            KeyCode::Char(' ') => "space".to_string(),
            KeyCode::Char(c) => c.to_string(),
            KeyCode::Tab => "Tab".into(),
            KeyCode::BackTab => "S-Tab".into(),
            KeyCode::Esc => "Esc".into(),
            KeyCode::Enter => "Enter".into(),
            KeyCode::Left => "←".into(),
            KeyCode::Right => "→".into(),
            KeyCode::Up => "↑".into(),
            KeyCode::Down => "↓".into(),
            KeyCode::Home => "Home".into(),
            KeyCode::End => "End".into(),
            KeyCode::PageUp => "PgUp".into(),
            KeyCode::PageDown => "PgDn".into(),
            other => format!("{other:?}"),
        };
        if self.ctrl {
            format!("Ctrl-{}", base.to_uppercase())
        } else {
            base
        }
    }

    /// The key as pressed (a command palette replays a row's first key).
    pub(crate) fn event(&self) -> KeyEvent {
        let mods = if self.ctrl {
            KeyModifiers::CONTROL
        } else {
            KeyModifiers::NONE
        };
        KeyEvent::new(self.code, mods)
    }

    /// Whether a pressed key is this one (Shift is part of the character).
    pub(crate) fn matches(&self, key: &KeyEvent) -> bool {
        self.code == key.code && self.ctrl == key.modifiers.contains(KeyModifiers::CONTROL)
    }
}

/// One row of a table: one line of the help.
#[derive(Debug, Clone, Copy)]
pub struct Binding<A: 'static> {
    /// The keys as the help and the footer name them (`"↑ / ↓"`).
    pub(crate) label: &'static str,
    /// What they do, in words (the help).
    pub(crate) does: &'static str,
    /// The same in a few words (the footer; empty: not offered there).
    pub(crate) short: &'static str,
    /// The keys and what each does (empty: a note in the help, no key).
    pub(crate) keys: &'static [(Key, A)],
}

/// A help line, whatever the table's act type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Row {
    pub label: &'static str,
    pub does: &'static str,
    pub(crate) short: &'static str,
    /// The row's first key (the palette presses it), if it has keys.
    pub(crate) key: Option<Key>,
}

impl<A> Binding<A> {
    pub(crate) fn row(&self) -> Row {
        Row {
            label: self.label,
            does: self.does,
            short: self.short,
            key: self.keys.first().map(|(k, _)| *k),
        }
    }
}

/// The act bound to `key` in `table`.
pub(crate) fn lookup<A: Copy>(table: &[Binding<A>], key: &KeyEvent) -> Option<A> {
    table
        .iter()
        .flat_map(|b| b.keys.iter())
        .find(|(k, _)| k.matches(key))
        .map(|(_, a)| *a)
}

/// The help lines of a table.
pub fn rows<A>(table: &[Binding<A>]) -> impl Iterator<Item = Row> + '_ {
    table.iter().map(Binding::row)
}

/// The label of the row that binds `act` (for hints that name one key).
pub(crate) fn label_of<A: PartialEq>(table: &[Binding<A>], act: &A) -> Option<&'static str> {
    table
        .iter()
        .find(|b| b.keys.iter().any(|(_, a)| a == act))
        .map(|b| b.label)
}

/// "Ctrl-S send · Esc discard": a table as a one-line hint.
pub(crate) fn hint_line<A>(table: &[Binding<A>]) -> String {
    table
        .iter()
        .filter(|b| !b.short.is_empty())
        .map(|b| format!("{} {}", b.label, b.short))
        .collect::<Vec<_>>()
        .join(" · ")
}

/// `hint_line` of as many of the table's first rows as fit in `width`
/// columns (a popup's bottom border on a small terminal).
pub(crate) fn hint_line_within<A>(table: &[Binding<A>], width: usize) -> String {
    let mut line = String::new();
    for b in table.iter().filter(|b| !b.short.is_empty()) {
        let hint = format!("{} {}", b.label, b.short);
        let longer = if line.is_empty() {
            hint
        } else {
            format!("{line} · {hint}")
        };
        if longer.chars().count() > width && !line.is_empty() {
            break;
        }
        line = longer;
    }
    line
}

/// "Tab pane · z zoom": each act named by the first key bound to it and the
/// short words of its row.
pub(crate) fn act_hints<A: PartialEq>(
    table: &[Binding<A>],
    acts: &[A],
) -> Vec<(String, &'static str)> {
    acts.iter()
        .filter_map(|act| {
            table.iter().find_map(|b| {
                b.keys
                    .iter()
                    .find(|(_, a)| a == act)
                    .map(|(k, _)| (k.name(), b.short))
            })
        })
        .collect()
}

/// The workbench's acts the footer always offers.
pub(crate) const FOOTER: [GlobalAct; 4] = [
    GlobalAct::NextPane,
    GlobalAct::Zoom,
    GlobalAct::Help,
    GlobalAct::Quit,
];

/// What the workbench as a whole does with a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum GlobalAct {
    Quit,
    Help,
    /// The command palette.
    Palette,
    NextPane,
    PrevPane,
    Zoom,
    Unzoom,
    /// Before a session: to the task editor.
    WriteTask,
    /// Moving the cursor through the tape.
    Tape(TapeMove),
    /// Replay only.
    Replay(ReplayAct),
    /// Live only: a steering command, or a new session.
    Steer(SteerAct),
    /// Copy the selected code, or the session folder, to the clipboard.
    Copy,
    /// Going on from another moment: fork here, rewind.
    Travel(TravelAct),
    /// The model-call inspector.
    Inspect,
    /// The pictures the programs drew.
    Pictures,
    /// The session's lineage.
    Lineage,
}

/// Going on from another moment (`app/timetravel.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TravelAct {
    /// Fork the reviewed session at the tape cursor.
    ForkHere,
    /// Take the live session's selected node back to its previous iteration.
    Rewind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TapeMove {
    Back,
    Forward,
    PrevIteration,
    NextIteration,
    FirstFailure,
    Start,
    End,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReplayAct {
    PlayPause,
    Faster,
    Slower,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SteerAct {
    StepMode,
    Approve,
    Skip,
    EditCode,
    EditSpec,
    /// The selected code or tests in $EDITOR.
    OpenEditor,
    Hint,
    Rerun,
    Cancel,
    NewSession,
    /// Write or edit the plan: a new session goes on from it.
    WritePlan,
    /// Once the session ended: leave it for bundled demo N (0-based).
    Demo(usize),
}

type G = Binding<GlobalAct>;

/// Everywhere, in every mode.
pub(crate) const COMMON: &[G] = &[
    Binding {
        label: "Tab / S-Tab",
        does: "next / previous pane (or click it)",
        short: "pane",
        keys: &[
            (Key::code(KeyCode::Tab), GlobalAct::NextPane),
            (Key::code(KeyCode::BackTab), GlobalAct::PrevPane),
        ],
    },
    Binding {
        label: "z",
        does: "zoom the focused pane (Esc back)",
        short: "zoom",
        keys: &[
            (Key::ch('z'), GlobalAct::Zoom),
            (Key::code(KeyCode::Esc), GlobalAct::Unzoom),
        ],
    },
    Binding {
        label: "?",
        does: "this help",
        short: "help",
        keys: &[(Key::ch('?'), GlobalAct::Help)],
    },
    Binding {
        label: ": / Ctrl-P",
        does: "command palette: every action by name",
        short: "",
        keys: &[
            (Key::ch(':'), GlobalAct::Palette),
            (Key::ctrl('p'), GlobalAct::Palette),
        ],
    },
    Binding {
        label: "q / Ctrl-C",
        does: "quit",
        short: "quit",
        keys: &[
            (Key::ch('q'), GlobalAct::Quit),
            (Key::ctrl('c'), GlobalAct::Quit),
        ],
    },
];

/// Once there is a session: where things are.
pub(crate) const WHERE: &[G] = &[Binding {
    label: "y",
    does: "copy the selected node's code (or the session folder) to the clipboard (OSC 52: works over ssh and in tmux)",
    short: "copy",
    keys: &[(Key::ch('y'), GlobalAct::Copy)],
}];

/// Once there is a session: its model calls.
pub(crate) const INSPECT: &[G] = &[Binding {
    label: "m",
    does: "inspect the model calls: prompt, raw reply, reasoning, tokens, time ([ / ] between calls; e edits a prompt not yet sent)",
    short: "model calls",
    keys: &[(Key::ch('m'), GlobalAct::Inspect)],
}];

/// Once there is a session: its lineage, to move between its branches.
pub(crate) const LINEAGE: &[G] = &[Binding {
    label: "b",
    does: "the session's lineage: the session it was forked from, its forks (Enter opens one)",
    short: "lineage",
    keys: &[(Key::ch('b'), GlobalAct::Lineage)],
}];

/// Once there is a session: the pictures its programs drew.
pub(crate) const PICTURES: &[G] = &[Binding {
    label: "I",
    does: "the pictures the programs drew, in half-blocks (← / → between them)",
    short: "pictures",
    keys: &[(Key::ch('I'), GlobalAct::Pictures)],
}];

/// Before a session starts.
pub(crate) const WELCOME: &[G] = &[Binding {
    label: "i",
    does: "write your own task",
    short: "write a task",
    keys: &[(Key::ch('i'), GlobalAct::WriteTask)],
}];

/// Steering a live session (in review and replay these keys say "read-only").
pub(crate) const STEER: &[G] = &[
    Binding {
        label: "s",
        does: "step mode on/off: pause before each model call and run",
        short: "step mode on/off",
        keys: &[(Key::ch('s'), GlobalAct::Steer(SteerAct::StepMode))],
    },
    Binding {
        label: "a",
        does: "approve the step the engine is paused before",
        short: "approve",
        keys: &[(Key::ch('a'), GlobalAct::Steer(SteerAct::Approve))],
    },
    Binding {
        label: "x",
        does: "skip that step",
        short: "skip",
        keys: &[(Key::ch('x'), GlobalAct::Steer(SteerAct::Skip))],
    },
    Binding {
        label: "e",
        does: "edit the selected node's code (its tests on the tests tab); paused before a model call, its prompt",
        short: "edit code",
        keys: &[(Key::ch('e'), GlobalAct::Steer(SteerAct::EditCode))],
    },
    Binding {
        label: "E",
        does: "edit the selected node's spec",
        short: "edit spec",
        keys: &[(Key::ch('E'), GlobalAct::Steer(SteerAct::EditSpec))],
    },
    Binding {
        label: "o",
        does: "open the selected code (its tests on the tests tab) in $VISUAL / $EDITOR",
        short: "open in $EDITOR",
        keys: &[(Key::ch('o'), GlobalAct::Steer(SteerAct::OpenEditor))],
    },
    Binding {
        label: "h",
        does: "add a hint for the node's next repair",
        short: "hint",
        keys: &[(Key::ch('h'), GlobalAct::Steer(SteerAct::Hint))],
    },
    Binding {
        label: "r",
        does: "re-run the selected node",
        short: "re-run",
        keys: &[(Key::ch('r'), GlobalAct::Steer(SteerAct::Rerun))],
    },
    Binding {
        label: "c",
        does: "cancel the session",
        short: "cancel",
        keys: &[(Key::ch('c'), GlobalAct::Steer(SteerAct::Cancel))],
    },
    Binding {
        label: "n",
        does: "a new session, once this one ended (a failed one's task and files come with it; in the Output pane and the pager, n is the next match)",
        short: "new session",
        keys: &[(Key::ch('n'), GlobalAct::Steer(SteerAct::NewSession))],
    },
    Binding {
        label: "P",
        does: "write or edit the plan yourself, once the session ended: a new session on this task goes on from it",
        short: "write the plan",
        keys: &[(Key::ch('P'), GlobalAct::Steer(SteerAct::WritePlan))],
    },
    Binding {
        label: "1-5",
        does: "once the session ended: leave it for a bundled demo (asks first)",
        short: "",
        keys: &[
            (Key::ch('1'), GlobalAct::Steer(SteerAct::Demo(0))),
            (Key::ch('2'), GlobalAct::Steer(SteerAct::Demo(1))),
            (Key::ch('3'), GlobalAct::Steer(SteerAct::Demo(2))),
            (Key::ch('4'), GlobalAct::Steer(SteerAct::Demo(3))),
            (Key::ch('5'), GlobalAct::Steer(SteerAct::Demo(4))),
            (Key::ch('6'), GlobalAct::Steer(SteerAct::Demo(5))),
            (Key::ch('7'), GlobalAct::Steer(SteerAct::Demo(6))),
            (Key::ch('8'), GlobalAct::Steer(SteerAct::Demo(7))),
            (Key::ch('9'), GlobalAct::Steer(SteerAct::Demo(8))),
        ],
    },
];

/// The steering acts offered while the engine is paused before a step.
pub(crate) const FORK_HERE: &[G] = &[Binding {
    label: "F",
    does: "fork here: a new session goes on live from the cursor (asks first)",
    short: "fork here",
    keys: &[(Key::ch('F'), GlobalAct::Travel(TravelAct::ForkHere))],
}];

pub(crate) const REWIND: &[G] = &[Binding {
    label: "u",
    does: "rewind the selected node to its previous iteration, on a new branch (asks first)",
    short: "rewind",
    keys: &[(Key::ch('u'), GlobalAct::Travel(TravelAct::Rewind))],
}];

pub(crate) const WHILE_PAUSED: [GlobalAct; 6] = [
    GlobalAct::Steer(SteerAct::Approve),
    GlobalAct::Steer(SteerAct::Skip),
    GlobalAct::Steer(SteerAct::EditCode),
    GlobalAct::Steer(SteerAct::Hint),
    GlobalAct::Steer(SteerAct::Rerun),
    GlobalAct::Steer(SteerAct::StepMode),
];

/// `[`/`]`, the same in a live session's past, review and replay.
const ITERATION_STEP: G = Binding {
    label: "[ / ]",
    does: "previous / next iteration",
    short: "iteration",
    keys: &[
        (Key::ch('['), GlobalAct::Tape(TapeMove::PrevIteration)),
        (Key::ch(']'), GlobalAct::Tape(TapeMove::NextIteration)),
    ],
};

/// `f`, the same in a live session's past, review and replay.
const FIRST_FAILURE: G = Binding {
    label: "f",
    does: "jump to the first failure",
    short: "first failure",
    keys: &[(Key::ch('f'), GlobalAct::Tape(TapeMove::FirstFailure))],
};

/// Moving through the past of a live session.
pub(crate) const LIVE_TAPE: &[G] = &[
    Binding {
        label: "← / →",
        does: "step back / forward through what happened",
        short: "step",
        keys: &[
            (Key::code(KeyCode::Left), GlobalAct::Tape(TapeMove::Back)),
            (
                Key::code(KeyCode::Right),
                GlobalAct::Tape(TapeMove::Forward),
            ),
        ],
    },
    ITERATION_STEP,
    FIRST_FAILURE,
    Binding {
        label: "Home / End",
        does: "first event / back to live",
        short: "first / live",
        keys: &[
            (Key::code(KeyCode::Home), GlobalAct::Tape(TapeMove::Start)),
            (Key::code(KeyCode::End), GlobalAct::Tape(TapeMove::End)),
        ],
    },
];

/// Moving through a recorded tape (review and replay).
pub(crate) const REVIEW_TAPE: &[G] = &[
    Binding {
        label: "← / →",
        does: "previous / next event",
        short: "event",
        keys: &[
            (Key::code(KeyCode::Left), GlobalAct::Tape(TapeMove::Back)),
            (
                Key::code(KeyCode::Right),
                GlobalAct::Tape(TapeMove::Forward),
            ),
        ],
    },
    ITERATION_STEP,
    FIRST_FAILURE,
    Binding {
        label: "Home / End",
        does: "first / last event",
        short: "first / last",
        keys: &[
            (Key::code(KeyCode::Home), GlobalAct::Tape(TapeMove::Start)),
            (Key::code(KeyCode::End), GlobalAct::Tape(TapeMove::End)),
        ],
    },
    Binding {
        label: "",
        does: "every pane shows the session as it was at the cursor",
        short: "",
        keys: &[],
    },
];

pub(crate) const REPLAY: &[G] = &[
    Binding {
        label: "space",
        does: "pause / resume",
        short: "pause",
        keys: &[(Key::ch(' '), GlobalAct::Replay(ReplayAct::PlayPause))],
    },
    Binding {
        label: "+ / -",
        does: "faster / slower",
        short: "speed",
        keys: &[
            (Key::ch('+'), GlobalAct::Replay(ReplayAct::Faster)),
            (Key::ch('='), GlobalAct::Replay(ReplayAct::Faster)),
            (Key::ch('-'), GlobalAct::Replay(ReplayAct::Slower)),
        ],
    },
];

/// Which of the workbench's tables apply: by how it was opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ModeKind {
    /// The live workbench before a session starts.
    Welcome,
    Live,
    Review,
    Replay,
}

/// The workbench's tables in a mode, in the order the help lists them.
pub(crate) fn global(mode: ModeKind) -> Vec<&'static [G]> {
    match mode {
        ModeKind::Welcome => vec![COMMON, WELCOME, STEER, LIVE_TAPE],
        ModeKind::Live => vec![
            COMMON, STEER, LIVE_TAPE, WHERE, INSPECT, PICTURES, REWIND, FORK_HERE, LINEAGE,
        ],
        ModeKind::Review => vec![
            COMMON,
            REVIEW_TAPE,
            WHERE,
            INSPECT,
            PICTURES,
            FORK_HERE,
            LINEAGE,
        ],
        ModeKind::Replay => vec![
            COMMON,
            REPLAY,
            REVIEW_TAPE,
            WHERE,
            INSPECT,
            PICTURES,
            FORK_HERE,
            LINEAGE,
        ],
    }
}

/// The act of `key` in the workbench's tables of `mode`.
pub(crate) fn lookup_global(mode: ModeKind, key: &KeyEvent) -> Option<GlobalAct> {
    global(mode).into_iter().find_map(|t| lookup(t, key))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn press(code: KeyCode, mods: KeyModifiers) -> KeyEvent {
        KeyEvent::new(code, mods)
    }

    #[test]
    fn a_key_is_found_in_the_tables_of_its_mode_only() {
        let space = press(KeyCode::Char(' '), KeyModifiers::NONE);
        assert_eq!(
            lookup_global(ModeKind::Replay, &space),
            Some(GlobalAct::Replay(ReplayAct::PlayPause))
        );
        assert_eq!(lookup_global(ModeKind::Review, &space), None);
        let a = press(KeyCode::Char('a'), KeyModifiers::NONE);
        assert_eq!(
            lookup_global(ModeKind::Live, &a),
            Some(GlobalAct::Steer(SteerAct::Approve))
        );
        assert_eq!(lookup_global(ModeKind::Review, &a), None);
    }

    #[test]
    fn control_is_part_of_the_key() {
        let ctrl_c = press(KeyCode::Char('c'), KeyModifiers::CONTROL);
        let c = press(KeyCode::Char('c'), KeyModifiers::NONE);
        assert_eq!(lookup(COMMON, &ctrl_c), Some(GlobalAct::Quit));
        assert_eq!(lookup(COMMON, &c), None);
        assert_eq!(lookup(STEER, &c), Some(GlobalAct::Steer(SteerAct::Cancel)));
        // Shift comes with the character itself.
        let big_e = press(KeyCode::Char('E'), KeyModifiers::SHIFT);
        assert_eq!(
            lookup(STEER, &big_e),
            Some(GlobalAct::Steer(SteerAct::EditSpec))
        );
    }

    #[test]
    fn every_bound_key_pressed_finds_its_own_act() {
        for mode in [
            ModeKind::Welcome,
            ModeKind::Live,
            ModeKind::Review,
            ModeKind::Replay,
        ] {
            for table in global(mode) {
                for (k, act) in table.iter().flat_map(|b| b.keys.iter()) {
                    assert_eq!(lookup_global(mode, &k.event()), Some(*act), "{k:?}");
                }
            }
        }
    }

    #[test]
    fn no_key_is_bound_twice_in_one_mode() {
        for mode in [
            ModeKind::Welcome,
            ModeKind::Live,
            ModeKind::Review,
            ModeKind::Replay,
        ] {
            let keys: Vec<Key> = global(mode)
                .into_iter()
                .flat_map(|t| t.iter().flat_map(|b| b.keys.iter().map(|(k, _)| *k)))
                .collect();
            for (i, k) in keys.iter().enumerate() {
                assert!(!keys[i + 1..].contains(k), "{k:?} bound twice in {mode:?}");
            }
        }
    }

    #[test]
    fn a_hint_line_names_each_key_with_its_short_words() {
        assert_eq!(hint_line(REPLAY), "space pause · + / - speed".to_string());
        let footer: Vec<String> = act_hints(COMMON, &FOOTER)
            .into_iter()
            .map(|(k, s)| format!("{k} {s}"))
            .collect();
        assert_eq!(footer.join(" · "), "Tab pane · z zoom · ? help · q quit");
        assert_eq!(
            label_of(STEER, &GlobalAct::Steer(SteerAct::Skip)),
            Some("x")
        );
    }
}
