//! The keys, per pane and per mode: the help popup and the status-bar hints
//! are both read from here, so they cannot drift apart.

use super::app::{Focus, Mode};

pub type Key = (&'static str, &'static str);

pub fn global(mode: &Mode) -> Vec<Key> {
    let mut keys = vec![
        ("Tab / S-Tab", "next / previous pane (or click it)"),
        ("z", "zoom the focused pane (Esc back)"),
        ("?", "this help"),
        ("q / Ctrl-C", "quit"),
    ];
    match mode {
        Mode::Live(_) => keys.extend([
            (
                "s",
                "step mode on/off: pause before each model call and run",
            ),
            ("a", "approve the step the engine is paused before"),
            ("x", "skip that step"),
            (
                "e",
                "edit the selected node's code (its tests on the tests tab)",
            ),
            ("E", "edit the selected node's spec"),
            ("h", "add a hint for the node's next repair"),
            ("r", "re-run the selected node"),
            ("c", "cancel the session"),
            ("← / →", "step back / forward through what happened"),
            ("End", "back to live"),
        ]),
        Mode::Review => keys.extend(review_keys()),
        Mode::Replay(_) => {
            keys.extend([("space", "pause / resume"), ("+ / -", "faster / slower")]);
            keys.extend(review_keys());
        }
    }
    keys
}

fn review_keys() -> [Key; 5] {
    [
        ("← / →", "previous / next event"),
        ("[ / ]", "previous / next iteration"),
        ("f", "jump to the first failure"),
        ("Home / End", "first / last event"),
        ("", "every pane shows the session as it was at the cursor"),
    ]
}

pub fn pane(focus: Focus, mode: &Mode) -> Vec<Key> {
    match focus {
        Focus::Task => match mode {
            Mode::Live(l) if !l.started => vec![
                ("type", "the task, several lines"),
                ("Ctrl-S", "start the session"),
                ("Ctrl-O", "attach an input file"),
                ("Esc", "leave the editor"),
            ],
            _ => vec![("", "the task of this session (read-only)")],
        },
        Focus::Graph => {
            let mut keys = vec![
                ("↑ / ↓", "select a node (its code and output show)"),
                ("Enter", "go to its code"),
                ("u", "follow the engine's activity again"),
            ];
            if matches!(mode, Mode::Live(l) if !l.started) {
                keys.insert(0, ("1-9", "run a bundled demo"));
                keys.push(("i", "write your own task"));
            }
            keys
        }
        Focus::Code => vec![
            ("t", "tests / code"),
            ("d", "diff against the previous iteration"),
            ("p", "the assembled program"),
            ("↑ ↓ PgUp PgDn", "scroll"),
        ],
        Focus::Output => vec![
            (
                "↑ ↓ PgUp PgDn",
                "scroll (the tail is followed at the bottom)",
            ),
            ("G / g", "tail / top"),
            ("/", "search"),
            ("n / N", "next / previous match"),
        ],
        Focus::History => vec![("↑ ↓ PgUp PgDn", "scroll the timeline")],
    }
}
