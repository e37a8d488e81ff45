//! The plan drawn as inline SVG: one column per dependency depth, a node's
//! dependencies to its left, arrows from a function to the ones that use it.

use crate::protocol::present::plural;
use std::collections::BTreeMap;
use std::fmt::Write;

use super::html::{esc, status_class};
use crate::session::state::NodeState;
use crate::session::{Dag, FunctionSpec, State};

const BOX_H: usize = 46;
const GAP_X: usize = 56;
const GAP_Y: usize = 18;
const PAD: usize = 12;
/// Roughly the width of one character of the name (14 px monospace) and of
/// the line under it (11 px), in pixels.
const NAME_CHAR_W: usize = 9;
const SUB_CHAR_W: usize = 7;

/// Where each node's box is.
struct Layout {
    boxes: BTreeMap<String, (usize, usize)>,
    box_w: usize,
    width: usize,
    height: usize,
}

/// The line under a node's name: `passed · 3 iterations`.
pub(crate) fn sub_label(node: &NodeState) -> String {
    let iterations = node.iteration();
    format!(
        "{} · {iterations} iteration{}",
        node.status.label(),
        plural(iterations)
    )
}

/// `labels` holds each node's name and the line under it, by name.
fn layout(levels: &[Vec<String>], labels: &BTreeMap<String, String>) -> Layout {
    let longest = levels
        .iter()
        .flatten()
        .map(|n| {
            let sub = labels.get(n).map(|s| s.chars().count()).unwrap_or(0);
            (n.chars().count() * NAME_CHAR_W).max(sub * SUB_CHAR_W)
        })
        .max()
        .unwrap_or(0);
    let box_w = (longest + 2 * PAD).clamp(140, 360);
    let rows = levels.iter().map(Vec::len).max().unwrap_or(0);
    let height = rows * BOX_H + rows.saturating_sub(1) * GAP_Y + 2 * PAD;
    let mut boxes = BTreeMap::new();
    for (col, level) in levels.iter().enumerate() {
        // Each column is centred vertically.
        let used = level.len() * BOX_H + level.len().saturating_sub(1) * GAP_Y;
        let top = (height - used) / 2;
        for (row, name) in level.iter().enumerate() {
            let x = PAD + col * (box_w + GAP_X);
            let y = top + row * (BOX_H + GAP_Y);
            boxes.insert(name.clone(), (x, y));
        }
    }
    let width = levels.len() * box_w + levels.len().saturating_sub(1) * GAP_X + 2 * PAD;
    Layout {
        boxes,
        box_w,
        width,
        height,
    }
}

/// How one node's box looks: its status class, the line under its name,
/// and where a click on it goes (None: the box is no link).
pub(crate) struct Look {
    pub(crate) class: &'static str,
    pub(crate) sub: String,
    pub(crate) href: Option<String>,
}

/// The plan graph, or None when there is no valid plan to draw.
pub(crate) fn svg(state: &State) -> Option<String> {
    draw(&state.specs, |name| {
        state.nodes.get(name).map(|node| Look {
            class: status_class(node.status),
            sub: sub_label(node),
            href: Some(format!("#node-{}", esc(name))),
        })
    })
}

/// The plan `specs` drawn for the player: each box pending, marked with
/// `data-node`, its look set by the page at each moment. Laid out for
/// the longest line under a name the page writes.
pub(crate) fn player_svg(specs: &[FunctionSpec]) -> Option<String> {
    draw(specs, |_| {
        Some(Look {
            class: "pending",
            sub: "generating · 10 iterations".to_string(),
            href: None,
        })
    })
}

/// The graph of `specs`, each node drawn as `look` says (a node it gives
/// no look is left out).
fn draw(specs: &[FunctionSpec], look: impl Fn(&str) -> Option<Look>) -> Option<String> {
    let dag = Dag::new(specs.to_vec()).ok()?;
    let looks: BTreeMap<String, Look> = dag
        .specs()
        .iter()
        .filter_map(|s| look(&s.name).map(|l| (s.name.clone(), l)))
        .collect();
    let labels: BTreeMap<String, String> = looks
        .iter()
        .map(|(name, l)| (name.clone(), l.sub.clone()))
        .collect();
    let l = layout(&dag.levels(), &labels);
    let mut out = String::new();
    let _ = write!(
        out,
        r#"<svg class="graph" role="img" aria-label="plan graph" width="{w}" height="{h}" viewBox="0 0 {w} {h}">"#,
        w = l.width,
        h = l.height
    );
    out.push_str(
        r#"<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" class="arrowhead"/></marker></defs>"#,
    );
    for spec in dag.specs() {
        let Some(&(tx, ty)) = l.boxes.get(&spec.name) else {
            continue;
        };
        for dep in &spec.depends_on {
            let Some(&(fx, fy)) = l.boxes.get(dep) else {
                continue;
            };
            let (x1, y1) = (fx + l.box_w, fy + BOX_H / 2);
            let (x2, y2) = (tx, ty + BOX_H / 2);
            let mid = (x1 + x2) / 2;
            let _ = write!(
                out,
                r#"<path class="edge" d="M{x1},{y1} C{mid},{y1} {mid},{y2} {x2},{y2}" marker-end="url(#arrow)"/>"#
            );
        }
    }
    for spec in dag.specs() {
        let (Some(&(x, y)), Some(look)) = (l.boxes.get(&spec.name), looks.get(&spec.name)) else {
            continue;
        };
        let node = format!(
            r#"<g class="node {class}" data-node="{name}"><title>{purpose}</title><rect x="{x}" y="{y}" width="{w}" height="{BOX_H}" rx="6"/><text x="{tx}" y="{ny}" class="name">{name}</text><text x="{tx}" y="{sy}" class="sub">{sub}</text></g>"#,
            class = look.class,
            purpose = esc(&spec.purpose),
            w = l.box_w,
            tx = x + PAD,
            ny = y + 19,
            sy = y + 36,
            name = esc(&spec.name),
            sub = esc(&look.sub),
        );
        match &look.href {
            Some(href) => {
                let _ = write!(out, r#"<a href="{href}">{node}</a>"#);
            }
            None => out.push_str(&node),
        }
    }
    out.push_str("</svg>");
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dependencies_sit_left_of_their_users() {
        let levels = vec![
            vec!["a".to_string(), "b".to_string()],
            vec!["c".to_string()],
        ];
        let l = layout(&levels, &BTreeMap::new());
        assert!(l.boxes["a"].0 < l.boxes["c"].0);
        assert_eq!(l.boxes["a"].0, l.boxes["b"].0);
        assert!(l.boxes["a"].1 < l.boxes["b"].1);
        assert!(l.boxes["c"].1 > l.boxes["a"].1 && l.boxes["c"].1 < l.boxes["b"].1);
        assert_eq!(l.width, 2 * l.box_w + GAP_X + 2 * PAD);
    }
}
