//! A model call's tag: what the call is for, as its request on the tape
//! says it (`plan`, `tests/NAME`, `code/NAME/1`, `repair/NAME/3`, ...), and
//! what a scripted model answers by. Every tag the engine writes is a
//! `Tag` formatted, and every tag it reads back (to find the call that
//! wrote something) is parsed into one, so the two cannot drift apart.

use std::fmt;

use codeloop_session::State;

/// The suffix of a call asked once more because its reply had no code.
const RETRY: &str = "retry";

/// What a model call is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Tag {
    /// The plan, asked for the `attempt`-th time: `plan`, `plan/2`, ...
    Plan { attempt: u32 },
    /// The plan of the edited task: `replan`, `replan/2`, ...
    Replan { attempt: u32 },
    /// A node's tests: `tests/NAME`; asked again because they did not
    /// load: `tests/NAME/2`.
    Tests { node: String, again: bool },
    /// A node's code at `iteration` (the engine asks for the first only):
    /// `code/NAME/1`; under consensus, candidate K ≥ 2: `code/NAME/1/cK`
    /// (candidate 1 is the first, `code/NAME/1`).
    Code {
        node: String,
        iteration: u32,
        candidate: u32,
    },
    /// The repair that writes `iteration`: `repair/NAME/N`.
    Repair { node: String, iteration: u32 },
    /// The fresh start that writes `iteration`: `fresh/NAME/N`; asked
    /// again because a reply repeated a version already tried (`repeat.rs`):
    /// `fresh/NAME/N/K` for the K-th ask, K ≥ 2.
    Fresh {
        node: String,
        iteration: u32,
        ask: u32,
    },
    /// The review of `iteration` before it runs: `review/NAME/N`.
    Review { node: String, iteration: u32 },
    /// The calls that tell a node's candidates apart: `inputs/NAME`.
    Inputs { node: String },
    /// The reflection on `iteration`'s failure as a call of its own, as
    /// older tapes have it: `reflect/NAME/N` (a repair reflects in its own
    /// call now).
    Reflect { node: String, iteration: u32 },
    /// A call asked once more because its reply had no code: `TAG/retry`.
    Retry(Box<Tag>),
}

impl Tag {
    /// The first code of `node` (candidate 1).
    pub(crate) fn first_code(node: &str) -> Tag {
        Tag::Code {
            node: node.to_string(),
            iteration: 1,
            candidate: 1,
        }
    }

    /// The same call asked once more (`TAG/retry`).
    pub(crate) fn retry(self) -> Tag {
        Tag::Retry(Box::new(self))
    }

    /// The call this is, asked again or not.
    pub(crate) fn without_retry(&self) -> &Tag {
        match self {
            Tag::Retry(tag) => tag.without_retry(),
            tag => tag,
        }
    }

    /// The tag `text` says, or `None` when it is not one the engine writes
    /// (or wrote).
    pub(crate) fn parse(text: &str) -> Option<Tag> {
        if let Some(base) = text.strip_suffix(RETRY).and_then(|t| t.strip_suffix('/')) {
            return Some(Tag::parse(base)?.retry());
        }
        let parts: Vec<&str> = text.split('/').collect();
        let node = |n: &&str| (!n.is_empty()).then(|| n.to_string());
        let tag = match parts.as_slice() {
            ["plan"] => Tag::Plan { attempt: 1 },
            ["plan", n] => Tag::Plan {
                attempt: number(n).filter(|a| *a >= 2)?,
            },
            ["replan"] => Tag::Replan { attempt: 1 },
            ["replan", n] => Tag::Replan {
                attempt: number(n).filter(|a| *a >= 2)?,
            },
            ["tests", name] => Tag::Tests {
                node: node(name)?,
                again: false,
            },
            ["tests", name, "2"] => Tag::Tests {
                node: node(name)?,
                again: true,
            },
            ["code", name, n] => Tag::Code {
                node: node(name)?,
                iteration: number(n)?,
                candidate: 1,
            },
            ["code", name, n, k] => Tag::Code {
                node: node(name)?,
                iteration: number(n)?,
                candidate: k.strip_prefix('c').and_then(number).filter(|k| *k >= 2)?,
            },
            ["repair", name, n] => Tag::Repair {
                node: node(name)?,
                iteration: number(n)?,
            },
            ["fresh", name, n] => Tag::Fresh {
                node: node(name)?,
                iteration: number(n)?,
                ask: 1,
            },
            ["fresh", name, n, k] => Tag::Fresh {
                node: node(name)?,
                iteration: number(n)?,
                ask: number(k).filter(|k| *k >= 2)?,
            },
            ["review", name, n] => Tag::Review {
                node: node(name)?,
                iteration: number(n)?,
            },
            ["reflect", name, n] => Tag::Reflect {
                node: node(name)?,
                iteration: number(n)?,
            },
            ["inputs", name] => Tag::Inputs { node: node(name)? },
            _ => return None,
        };
        Some(tag)
    }

    /// The id of the latest call of `s` with this tag.
    pub(crate) fn latest_call(&self, s: &State) -> Option<u64> {
        let tag = self.to_string();
        s.calls
            .iter()
            .rev()
            .find(|(_, c)| c.tag == tag)
            .map(|(id, _)| *id)
    }
}

/// A number as a tag writes it (no sign, no leading zero), so that a tag
/// parsed is written back the same.
fn number(text: &str) -> Option<u32> {
    let n: u32 = text.parse().ok()?;
    (n.to_string() == text).then_some(n)
}

impl fmt::Display for Tag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Tag::Plan { attempt: 1 } => write!(f, "plan"),
            Tag::Plan { attempt } => write!(f, "plan/{attempt}"),
            Tag::Replan { attempt: 1 } => write!(f, "replan"),
            Tag::Replan { attempt } => write!(f, "replan/{attempt}"),
            Tag::Tests { node, again: false } => write!(f, "tests/{node}"),
            Tag::Tests { node, again: true } => write!(f, "tests/{node}/2"),
            Tag::Code {
                node,
                iteration,
                candidate: 1,
            } => write!(f, "code/{node}/{iteration}"),
            Tag::Code {
                node,
                iteration,
                candidate,
            } => write!(f, "code/{node}/{iteration}/c{candidate}"),
            Tag::Repair { node, iteration } => write!(f, "repair/{node}/{iteration}"),
            Tag::Fresh {
                node,
                iteration,
                ask: 1,
            } => write!(f, "fresh/{node}/{iteration}"),
            Tag::Fresh {
                node,
                iteration,
                ask,
            } => write!(f, "fresh/{node}/{iteration}/{ask}"),
            Tag::Review { node, iteration } => write!(f, "review/{node}/{iteration}"),
            Tag::Reflect { node, iteration } => write!(f, "reflect/{node}/{iteration}"),
            Tag::Inputs { node } => write!(f, "inputs/{node}"),
            Tag::Retry(tag) => write!(f, "{tag}/{RETRY}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(name: &str) -> String {
        name.to_string()
    }

    #[test]
    fn each_tag_is_written_as_the_tapes_have_it_and_read_back() {
        let tags = [
            (Tag::Plan { attempt: 1 }, "plan"),
            (Tag::Plan { attempt: 3 }, "plan/3"),
            (Tag::Replan { attempt: 1 }, "replan"),
            (Tag::Replan { attempt: 2 }, "replan/2"),
            (
                Tag::Tests {
                    node: node("f"),
                    again: false,
                },
                "tests/f",
            ),
            (
                Tag::Tests {
                    node: node("f"),
                    again: true,
                },
                "tests/f/2",
            ),
            (Tag::first_code("parse_line"), "code/parse_line/1"),
            (
                Tag::Code {
                    node: node("f"),
                    iteration: 1,
                    candidate: 3,
                },
                "code/f/1/c3",
            ),
            (
                Tag::Code {
                    node: node("f"),
                    iteration: 2,
                    candidate: 1,
                },
                "code/f/2",
            ),
            (
                Tag::Repair {
                    node: node("f"),
                    iteration: 3,
                },
                "repair/f/3",
            ),
            (
                Tag::Fresh {
                    node: node("f"),
                    iteration: 4,
                    ask: 1,
                },
                "fresh/f/4",
            ),
            (
                Tag::Fresh {
                    node: node("f"),
                    iteration: 4,
                    ask: 2,
                },
                "fresh/f/4/2",
            ),
            (
                Tag::Review {
                    node: node("f"),
                    iteration: 1,
                },
                "review/f/1",
            ),
            (
                Tag::Reflect {
                    node: node("f"),
                    iteration: 1,
                },
                "reflect/f/1",
            ),
            (Tag::Inputs { node: node("f") }, "inputs/f"),
            (Tag::first_code("f").retry(), "code/f/1/retry"),
            (
                Tag::Repair {
                    node: node("f"),
                    iteration: 2,
                }
                .retry(),
                "repair/f/2/retry",
            ),
        ];
        for (tag, text) in tags {
            assert_eq!(tag.to_string(), text);
            assert_eq!(Tag::parse(text), Some(tag), "{text}");
        }
    }

    #[test]
    fn what_is_no_tag_of_the_engine_is_not_read_as_one() {
        for text in [
            "",
            "plan/1",
            "plan/x",
            "replan/02",
            "tests/",
            "tests/f/3",
            "code/f",
            "code/f/1/c1",
            "code/f/1/x2",
            "code/f/+1",
            "repair/f",
            "repair/f/2/3",
            "fresh/f/2/1",
            "fresh/f/2/x",
            "review//1",
            "inputs/f/1",
            "continue",
            "code/f/1/continue",
            "retry",
            "/retry",
        ] {
            assert_eq!(Tag::parse(text), None, "{text}");
        }
    }

    #[test]
    fn a_retry_is_of_the_call_it_asks_again() {
        let tag = Tag::parse("fresh/f/4/retry").unwrap();
        assert_eq!(
            tag.without_retry(),
            &Tag::Fresh {
                node: node("f"),
                iteration: 4,
                ask: 1,
            }
        );
        assert_eq!(
            Tag::parse("tests/f").unwrap().without_retry(),
            &Tag::Tests {
                node: node("f"),
                again: false
            }
        );
    }

    /// Every tag on the recorded tapes and scripted replies the project
    /// ships (the demos', the tests' fixtures) is read, and written back the same.
    #[test]
    fn the_tags_of_the_recorded_tapes_are_read_and_written_back() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let mut files = Vec::new();
        for dir in ["assets/demos", "tests/fixtures"] {
            let mut stack = vec![root.join(dir)];
            while let Some(dir) = stack.pop() {
                for entry in std::fs::read_dir(&dir).unwrap() {
                    let path = entry.unwrap().path();
                    if path.is_dir() {
                        stack.push(path);
                    } else if path.extension().is_some_and(|e| e == "jsonl") {
                        files.push(path);
                    }
                }
            }
        }
        let mut seen = 0;
        for file in &files {
            for line in std::fs::read_to_string(file).unwrap().lines() {
                let Ok(value) = serde_json::from_str::<serde_json::Value>(line) else {
                    continue;
                };
                let tag = value.get("tag").and_then(serde_json::Value::as_str);
                if let Some(text) = tag {
                    let tag = Tag::parse(text);
                    assert!(tag.is_some(), "{}: {text}", file.display());
                    assert_eq!(tag.map(|t| t.to_string()).as_deref(), Some(text));
                    seen += 1;
                }
            }
        }
        assert!(seen > 100, "only {seen} tags found in {files:?}");
    }
}
