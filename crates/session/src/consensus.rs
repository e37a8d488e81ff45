//! Functional consensus (`--candidates N`): a node's first code written N
//! times, each candidate run on the inputs of the node's tests, and the
//! candidate whose outputs agree with the most others kept (FunCoder's
//! result: consensus beats self-testing where the tests may be wrong).
//! `Event::Candidates` records them, their scores and the one chosen,
//! just before the chosen code's `Event::Code`.

use codeloop_protocol::present::{count, plural};
use serde::{Deserialize, Serialize};

/// One candidate implementation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Candidate {
    pub code: String,
    /// It loaded and defined the function (else it scores nothing).
    #[serde(default)]
    pub loaded: bool,
    /// Agreements: for each input, how many other candidates gave the same
    /// output (or raised the same exception), summed.
    #[serde(default)]
    pub score: u32,
    /// The model call that wrote it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<u64>,
}

/// A node's candidates, as the state keeps them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CandidatesInfo {
    /// The code version the chosen candidate became.
    pub iteration: u32,
    pub candidates: Vec<Candidate>,
    /// The inputs they were run on.
    pub inputs: u32,
    /// Of them, those the model proposed.
    pub proposed: u32,
    /// The index of the one chosen.
    pub chosen: usize,
    /// Why the choice fell back to the first candidate, when it did.
    pub(crate) note: Option<String>,
}

impl CandidatesInfo {
    /// The vote was held: each candidate's agreement means something (else
    /// the first was kept, for `note`, and none was run).
    pub fn voted(&self) -> bool {
        self.note.is_none()
    }

    /// `3 candidates on 4 inputs: #2 chosen (agreement 6 of 8)`; a vote
    /// not held: `not voted on (WHY): #1 kept`.
    pub fn summary(&self) -> String {
        let n = self.candidates.len();
        if let Some(note) = &self.note {
            return format!(
                "not voted on ({note}): #1 kept of {}",
                count(n, "candidate")
            );
        }
        let most = self.inputs * (n.saturating_sub(1) as u32);
        let chosen = self.candidates.get(self.chosen);
        let proposed = match self.proposed {
            0 => String::new(),
            p => format!(" ({p} proposed by the model)"),
        };
        let mut out = format!(
            "{n} candidates on {} input{}{proposed}: #{} chosen",
            self.inputs,
            plural(self.inputs),
            self.chosen + 1
        );
        if let Some(c) = chosen.filter(|_| most > 0) {
            out.push_str(&format!(" (agreement {} of {most})", c.score));
        }
        out
    }
}

/// The candidate to keep: the highest score among those that loaded, the
/// first of equals (the first is what the model wrote without consensus).
pub fn choose(candidates: &[Candidate]) -> usize {
    let mut best: Option<(usize, u32)> = None;
    for (i, c) in candidates.iter().enumerate().filter(|(_, c)| c.loaded) {
        if best.is_none_or(|(_, s)| c.score > s) {
            best = Some((i, c.score));
        }
    }
    best.map_or(0, |(i, _)| i)
}

/// The scores of candidates whose outputs on each input are `outputs[i][k]`
/// (None: the candidate did not load).
pub fn scores(outputs: &[Option<Vec<String>>]) -> Vec<u32> {
    outputs
        .iter()
        .enumerate()
        .map(|(i, mine)| {
            let Some(mine) = mine else { return 0 };
            outputs
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != i)
                .filter_map(|(_, o)| o.as_ref())
                .map(|other| mine.iter().zip(other).filter(|(a, b)| a == b).count() as u32)
                .sum()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outs(v: &[&str]) -> Option<Vec<String>> {
        Some(v.iter().map(|s| s.to_string()).collect())
    }

    #[test]
    fn the_candidate_agreeing_with_most_others_wins() {
        // #1 is alone on input 2; #2 and #3 agree on both.
        let s = scores(&[
            outs(&["3", "5"]),
            outs(&["3", "4"]),
            outs(&["3", "4"]),
            None,
        ]);
        assert_eq!(s, vec![2, 3, 3, 0]);
        let c: Vec<Candidate> = s
            .iter()
            .enumerate()
            .map(|(i, score)| Candidate {
                code: String::new(),
                loaded: i < 3,
                score: *score,
                call_id: None,
            })
            .collect();
        assert_eq!(choose(&c), 1);
    }

    #[test]
    fn with_nothing_to_go_by_the_first_is_kept() {
        let c = vec![
            Candidate {
                code: String::new(),
                loaded: false,
                score: 0,
                call_id: None,
            };
            2
        ];
        assert_eq!(choose(&c), 0);
    }

    #[test]
    fn a_vote_not_held_says_why_and_never_that_a_candidate_did_not_load() {
        let info = CandidatesInfo {
            iteration: 1,
            candidates: vec![Candidate {
                code: "def f(): pass".into(),
                loaded: false,
                score: 0,
                call_id: None,
            }],
            inputs: 0,
            proposed: 0,
            chosen: 0,
            note: Some("only one candidate was written".into()),
        };
        assert!(!info.voted());
        assert_eq!(
            info.summary(),
            "not voted on (only one candidate was written): #1 kept of 1 candidate"
        );
    }
}
