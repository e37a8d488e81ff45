//! A node in the page: what the code pane shows of it at a moment (its
//! status, its code versions and the diff between the last two, its
//! tests, the failure marked on its line, the runtime values, its review
//! and check), what it is, and the change counts the history gives a
//! version.

use serde::Serialize;

use super::Views;
use crate::commands::export::graph;
use crate::commands::export::html::status_class;
use crate::commands::export::player::store::Val;
use crate::session::story::words;
use crate::session::{NodeStatus, Purpose, State};

/// What the code pane shows of a node at a moment.
#[derive(Serialize)]
struct NodeView {
    /// The status's class and word, and the graph's line under the name.
    st: &'static str,
    sl: &'static str,
    sub: String,
    it: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    src: Option<&'static str>,
    /// The latest code (text id), the one before it and its iteration, and
    /// the diff between them (a text of `=`, `-`, `+`, one a line).
    #[serde(skip_serializing_if = "Option::is_none")]
    c: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    p: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pit: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    d: Option<u32>,
    /// The tests.
    #[serde(skip_serializing_if = "Option::is_none")]
    t: Option<u32>,
    /// The failure of the version shown.
    #[serde(skip_serializing_if = "Option::is_none")]
    f: Option<FailView>,
    /// A failure of an earlier version, named only.
    #[serde(skip_serializing_if = "Option::is_none")]
    e: Option<String>,
    /// The runtime values along the failing path (text id).
    #[serde(skip_serializing_if = "Option::is_none")]
    v: Option<u32>,
    /// The run the output pane shows.
    #[serde(skip_serializing_if = "Option::is_none")]
    run: Option<u64>,
    /// The review of the version shown, the check's findings.
    #[serde(skip_serializing_if = "Option::is_none")]
    rev: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    chk: Vec<String>,
    /// The model is reflecting on the failure now.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    why: bool,
}

/// What a node is: its signature and purpose.
#[derive(Serialize)]
struct Spec {
    sig: String,
    what: String,
}

/// A failure as the code pane marks it.
#[derive(Serialize)]
struct FailView {
    /// In one line, for people (`Location::headline`).
    h: String,
    /// Beside its line: `ErrorType: message`.
    w: String,
    /// Its 0-based line in the code, and in the tests (a failure in them).
    #[serde(skip_serializing_if = "Option::is_none")]
    cl: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tl: Option<usize>,
    /// The test, what it expected and what it got.
    #[serde(skip_serializing_if = "String::is_empty")]
    more: String,
}

impl Views {
    /// A node's view, its stream and its reflection.
    pub(super) fn node(&mut self, state: &State, name: &str) {
        let view = self.node_view(state, name);
        let planned = view.is_some();
        self.store.set(&format!("n/{name}"), view);
        // What it is: `name(inputs) -> output` and its purpose.
        let spec = state
            .nodes
            .get(name)
            .map(|n| Spec {
                sig: words::signature(&n.spec),
                what: n.spec.purpose.clone(),
            })
            .map(|s| self.store.shared(&s));
        self.store.set(&format!("i/{name}"), spec);
        if planned {
            self.streaming(state, name);
            self.reflection(state, name);
        } else {
            self.store.set(&format!("s/{name}"), None);
            self.store.set(&format!("w/{name}"), None);
            self.store.set(&format!("i/{name}"), None);
        }
    }

    fn node_view(&mut self, state: &State, name: &str) -> Option<Val> {
        let n = state.nodes.get(name)?;
        let k = n.versions.len();
        let c = k
            .checked_sub(1)
            .map(|i| self.code_text(name, i, &n.versions[i].code));
        let (p, pit) = match k.checked_sub(2) {
            Some(i) => (
                Some(self.code_text(name, i, &n.versions[i].code)),
                Some(n.versions[i].iteration),
            ),
            None => (None, None),
        };
        let d = match (p, c) {
            (Some(p), Some(c)) => Some(self.diff(p, c)),
            _ => None,
        };
        let failure = state
            .current_failure(name)
            .filter(|_| n.status != NodeStatus::Passed);
        let f = failure.map(|e| {
            let mut more = Vec::new();
            if let Some(test) = &e.test {
                more.push(format!("test {test}"));
            }
            if let Some(x) = &e.expected {
                more.push(format!("expected {x}"));
            }
            if let Some(x) = &e.actual {
                more.push(format!("got {x}"));
            }
            FailView {
                h: e.headline(),
                w: e.what().lines().next().unwrap_or_default().to_string(),
                cl: n.code().and_then(|code| e.line_in(code)),
                tl: n
                    .tests
                    .as_deref()
                    .filter(|_| !e.in_node_code)
                    .and_then(|tests| e.line_in(tests)),
                more: more.join(" · "),
            }
        });
        let e = state
            .earlier_failure(name)
            .filter(|_| n.status != NodeStatus::Passed)
            .map(|(found, e)| {
                let when = words::earlier_failure_when(found, n.iteration());
                format!("{} ({when}): {}", words::EARLIER_FAILURE, e.headline())
            });
        let v = state
            .current_failure(name)
            .filter(|e| !e.values.is_empty())
            .map(|e| e.values_trace());
        let v = v.map(|trace| self.store.text(&trace));
        let t = n.tests.clone().map(|tests| self.store.text(&tests));
        let why = state
            .calls
            .values()
            .any(|c| !c.done && matches!(&c.purpose, Purpose::Reflect { node } if node == name));
        let view = NodeView {
            st: status_class(n.status),
            sl: n.status.label(),
            sub: graph::sub_label(n),
            it: n.iteration(),
            src: n.versions.last().map(|v| words::source(v.source)),
            c,
            p,
            pit,
            d,
            t,
            f,
            e,
            v,
            run: state.run_to_show(Some(name), false),
            rev: state
                .current_review(name)
                .map(|r| format!("review: {}", r.summary())),
            chk: n
                .findings
                .iter()
                .take(2)
                .map(|f| format!("check: {}", words::finding(f)))
                .collect(),
            why,
        };
        Some(self.store.shared(&view))
    }

    /// The text id of a node's code version (versions never change).
    fn code_text(&mut self, node: &str, index: usize, code: &str) -> u32 {
        if let Some(&id) = self.code_ids.get(&(node.to_string(), index)) {
            return id;
        }
        let id = self.store.text(code);
        self.code_ids.insert((node.to_string(), index), id);
        id
    }

    /// The diff of two texts, a line's change a letter (`=`, `-`, `+`), as a text.
    fn diff(&mut self, old: u32, new: u32) -> u32 {
        if let Some(&id) = self.diffs.get(&(old, new)) {
            return id;
        }
        let tags: String =
            similar::TextDiff::from_lines(self.store.text_of(old), self.store.text_of(new))
                .iter_all_changes()
                .map(|c| match c.tag() {
                    similar::ChangeTag::Equal => '=',
                    similar::ChangeTag::Delete => '-',
                    similar::ChangeTag::Insert => '+',
                })
                .collect();
        let id = self.store.text(&tags);
        self.diffs.insert((old, new), id);
        id
    }

    /// Lines added and removed from a node's version before `iteration` to it.
    pub(super) fn change_counts(
        &mut self,
        state: &State,
        node: &str,
        iteration: u32,
    ) -> Option<(usize, usize)> {
        let n = state.nodes.get(node)?;
        let i = n.versions.iter().rposition(|v| v.iteration == iteration)?;
        let before = i.checked_sub(1)?;
        let old = self.code_text(node, before, &n.versions[before].code);
        let new = self.code_text(node, i, &n.versions[i].code);
        let tags = self.diff(old, new);
        let tags = self.store.text_of(tags);
        Some((tags.matches('+').count(), tags.matches('-').count()))
    }
}
