//! A session's lineage: the tree of the sessions it belongs to (its
//! forebears up to the first, and every fork made from any of them that
//! the sessions folder holds), where each fork was made (at which record,
//! and what that record was), and how each branch ended. The HTML export
//! draws it as a section with a page per branch; the workbench as a list
//! to move between branches (`b`).
//!
//! Like `index.rs` and `tape.rs`, this module reads files: each branch's
//! tape, once, bounded ([`MOST`] branches).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use codeloop_protocol::present::plural;

use crate::index::{self, SessionSummary};
use crate::story;
use crate::{Record, State, read_tape};

/// The most branches a lineage shows (and writes pages for).
pub const MOST: usize = 64;

/// One session of the lineage.
#[derive(Debug, Clone)]
pub struct Branch {
    pub id: String,
    /// The session it was forked from, and the parent's record it starts after.
    pub parent: Option<(String, u64)>,
    /// What that record was, in words ("total_len #1: its failure localized").
    pub fork_point: Option<String>,
    /// None when its tape could not be read (then it has no page).
    pub state: Option<State>,
    /// Where its tape is.
    pub tape: Option<PathBuf>,
    /// Why its tape could not be read.
    pub unread: Option<String>,
}

/// The tree: branches in order (each after its parent), with their depth.
#[derive(Debug, Clone)]
pub struct Lineage {
    pub branches: Vec<(usize, Branch)>,
    /// Branches left out past [`MOST`].
    pub left_out: usize,
}

/// The lineage of the session folded into `state` from `records` (read
/// from `tape`): None when it is no fork and has none.
pub fn collect(
    state: &State,
    records: &[Record],
    tape: Option<&Path>,
    sessions: &[SessionSummary],
) -> Option<Lineage> {
    let id = state.session_id.clone();
    let parent_of = parents(state, sessions);
    let has_forks = parent_of.values().any(|(p, _)| *p == id);
    if state.parent.is_none() && !has_forks {
        return None;
    }
    let by_id: BTreeMap<&str, &SessionSummary> =
        sessions.iter().map(|s| (s.id.as_str(), s)).collect();
    let (order, left_out) = tree_order(&root_of(&id, &parent_of), &parent_of, &by_id);
    let branches = order
        .into_iter()
        .map(|(depth, bid)| {
            let branch = if bid == id {
                Branch {
                    parent: parent_of.get(&bid).cloned(),
                    fork_point: None,
                    state: Some(state.clone()),
                    tape: tape.map(Path::to_path_buf),
                    unread: None,
                    id: bid,
                }
            } else {
                // When the index does not hold the parent: its folder beside
                // this session's, by the parent's id. Never the path the
                // tape names (`parent_tape`): a tape handed over could name
                // any tape of the reader's, whose page would go beside this
                // one's for others to read.
                let tape = by_id.get(bid.as_str()).map(|s| s.tape()).or_else(|| {
                    let beside = tape?.parent()?.parent()?;
                    state
                        .parent
                        .as_ref()
                        .filter(|p| p.session_id == bid)
                        .and_then(|p| crate::session_fs::plain_name(&p.session_id).ok())
                        .map(|id| beside.join(id).join("tape.jsonl"))
                        .filter(|t| t.is_file())
                });
                let parent = parent_of.get(&bid).cloned();
                read_branch(bid, parent, tape)
            };
            (depth, branch)
        })
        .collect::<Vec<_>>();
    let mut lineage = Lineage { branches, left_out };
    fork_points(&mut lineage, records, state);
    Some(lineage)
}

/// A session's parent and the record it forked at.
type Parents = BTreeMap<String, (String, u64)>;

/// Every session's parent, as the index knows it, and this one's own.
fn parents(state: &State, sessions: &[SessionSummary]) -> Parents {
    let mut parent_of: Parents = sessions
        .iter()
        .filter_map(|s| {
            let (p, at) = s.parent.as_deref()?.rsplit_once('@')?;
            Some((s.id.clone(), (p.to_string(), at.parse().ok()?)))
        })
        .collect();
    if let Some(p) = &state.parent {
        parent_of.insert(state.session_id.clone(), (p.session_id.clone(), p.at_seq));
    }
    parent_of
}

/// Up to the first forebear (a cycle, which no fork makes, stops the walk).
fn root_of(id: &str, parent_of: &Parents) -> String {
    let mut root = id.to_string();
    let mut seen = BTreeSet::from([root.clone()]);
    while let Some((p, _)) = parent_of.get(&root) {
        if !seen.insert(p.clone()) {
            break;
        }
        root = p.clone();
    }
    root
}

/// The tree from `root` depth first, each session with its depth, children
/// in the order they were started; at most `MOST`, and how many were left out.
fn tree_order(
    root: &str,
    parent_of: &Parents,
    by_id: &BTreeMap<&str, &SessionSummary>,
) -> (Vec<(usize, String)>, usize) {
    let mut children: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (child, (p, _)) in parent_of {
        children.entry(p.as_str()).or_default().push(child.as_str());
    }
    for kids in children.values_mut() {
        kids.sort_by_key(|k| {
            by_id
                .get(k)
                .map(|s| s.started_at.clone())
                .unwrap_or_default()
        });
    }
    let mut order: Vec<(usize, String)> = Vec::new();
    let mut stack = vec![(0usize, root.to_string())];
    let mut visited = BTreeSet::new();
    let mut left_out = 0;
    while let Some((depth, node)) = stack.pop() {
        if !visited.insert(node.clone()) {
            continue;
        }
        if order.len() >= MOST {
            left_out += 1;
            continue;
        }
        order.push((depth, node.clone()));
        if let Some(kids) = children.get(node.as_str()) {
            for k in kids.iter().rev() {
                stack.push((depth + 1, k.to_string()));
            }
        }
    }
    (order, left_out)
}

fn read_branch(id: String, parent: Option<(String, u64)>, tape: Option<PathBuf>) -> Branch {
    let (state, unread) = match &tape {
        Some(path) => match read_tape(path) {
            Ok(contents) => (Some(State::from_records(&contents.records)), None),
            Err(e) => (None, Some(e.to_string())),
        },
        None => (None, Some("its tape is not in the sessions folder".into())),
    };
    Branch {
        id,
        parent,
        fork_point: None,
        state,
        tape,
        unread,
    }
}

/// Each fork's point, read from its own tape: a fork's tape holds its
/// parent's records up to the fork, numbers kept.
fn fork_points(lineage: &mut Lineage, current_records: &[Record], current: &State) {
    for (_, b) in &mut lineage.branches {
        let Some((_, at)) = b.parent else { continue };
        b.fork_point = if b.id == current.session_id {
            Some(describe_point(current_records, at))
        } else {
            b.tape
                .as_deref()
                .and_then(|t| read_tape(t).ok())
                .map(|c| describe_point(&c.records, at))
        };
    }
}

/// The most characters of the story's line a fork point quotes.
const POINT_CHARS: usize = 80;

/// The record numbered `at` in words, with what the session had then: the
/// story's last line by then (`story::tell`; a record that says nothing of
/// its own, a request or a streamed piece, reads as the fact before it),
/// its first line, cut at `POINT_CHARS`.
pub fn describe_point(records: &[Record], at: u64) -> String {
    let mut state = State::default();
    let mut folded = 0;
    let mut told = None;
    for r in records.iter().take_while(|r| r.seq <= at) {
        state.apply(r);
        folded += 1;
        told = story::tell(&state, r).or(told);
    }
    if folded == 0 {
        return format!("record {at}");
    }
    let what = match told {
        Some(line) => {
            let text = line.text.lines().next().unwrap_or_default();
            let said = match line.subject() {
                Some(subject) => format!("{subject}: {text}"),
                None => format!("{}: {text}", line.what.label()),
            };
            match said.char_indices().nth(POINT_CHARS) {
                Some((cut, _)) => format!("{}…", &said[..cut]),
                None => said,
            }
        }
        None => "the session's start".to_string(),
    };
    let versions: u32 = state.nodes.values().map(|n| n.iteration()).sum();
    format!(
        "record {at} ({what}; {versions} code version{} by then)",
        plural(versions)
    )
}

/// The lineage of the session whose tape is at `tape`, with the sessions
/// of the folder it is in: None when it is no fork and has none. Reads the
/// tape, the folder's index and each branch's tape: not for a frame.
pub fn of_tape(tape: &Path) -> Result<Option<Lineage>, String> {
    let contents = read_tape(tape).map_err(|e| e.to_string())?;
    let state = State::from_records(&contents.records);
    let sessions = tape
        .parent()
        .and_then(Path::parent)
        .and_then(|dir| index::list(dir).ok())
        .map(|l| l.sessions)
        .unwrap_or_default();
    Ok(collect(&state, &contents.records, Some(tape), &sessions))
}
