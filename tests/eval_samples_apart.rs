//! Each eval sample starts from nothing (issue 41): a sample that finds a
//! mark an earlier sample left (an extended attribute on its directory, a
//! SysV message queue, shared memory segment or semaphore set, a POSIX
//! message queue) would have learned the check's answers across samples.
//! Here each such sample answers right only when it finds one, and leaves
//! one otherwise: every one of them fails, forked and `--fresh-process`,
//! as root and as an ordinary user, and nothing is left in this IPC
//! namespace (the host's: the reduced sandbox's samples would leave their
//! segments there, memory held after the sample ended).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

use codeloop_testkit::eval_cases::{Case, Verdicts, as_ordinary_user, double, verdicts};
use codeloop_testkit::lasting_state::{LASTING_STATE_PY, left_in_this_ipc_namespace};

const CHANNELS: [&str; 5] = ["xattr", "msg", "shm", "sem", "mq"];
/// Samples of each channel: on two workers, later ones run on a server
/// where an earlier one ran.
const COPIES: usize = 4;

/// (name, completion) of each sample.
fn learners() -> Vec<(String, String)> {
    CHANNELS
        .iter()
        .flat_map(|ch| {
            (0..COPIES).map(move |i| {
                (
                    format!("{ch} #{i}"),
                    format!(
                        "    return _answer(x)\n{LASTING_STATE_PY}\n\ndef _answer(x):\n    if seen('{ch}'):\n        return 2 * x\n    leave('{ch}')\n    return 0\n"
                    ),
                )
            })
        })
        .collect()
}

fn cases(learners: &[(String, String)]) -> Vec<Case<'_>> {
    learners
        .iter()
        .map(|(n, c)| (n.as_str(), "t/0", c.as_str()))
        .collect()
}

fn none_learned(mode: &str, got: &Verdicts) {
    assert_eq!(got.len(), CHANNELS.len() * COPIES, "{mode}");
    for (name, passed, result) in got {
        assert!(!passed, "{mode}: {name} learned across samples ({result})");
        assert!(result.starts_with("failed"), "{mode}: {name}: {result}");
    }
    assert_eq!(
        left_in_this_ipc_namespace(),
        Vec::<&str>::new(),
        "{mode}: left in this IPC namespace"
    );
}

#[tokio::test]
async fn no_sample_learns_from_the_one_before_in_fork_servers() {
    let learners = learners();
    none_learned(
        "forked",
        &verdicts(&[double()], &cases(&learners), true).await,
    );
}

#[tokio::test]
async fn no_sample_learns_from_the_one_before_in_fresh_interpreters() {
    let learners = learners();
    none_learned(
        "fresh",
        &verdicts(&[double()], &cases(&learners), false).await,
    );
}

/// `codeloop eval` as an ordinary user (the full sandbox where the user
/// gets one, else the reduced one, whose IPC namespace is the host's),
/// forked and `--fresh-process`.
#[test]
fn no_sample_learns_from_the_one_before_for_an_ordinary_user() {
    let learners = learners();
    let Some(modes) = as_ordinary_user(
        "apart-user",
        std::path::Path::new(env!("CARGO_BIN_EXE_codeloop")),
        &[double()],
        &cases(&learners),
    ) else {
        return;
    };
    for (mode, got) in modes {
        none_learned(mode, &got);
    }
}
