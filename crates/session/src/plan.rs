//! The plan as a graph: validation, topological order, parallel levels, impact.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use super::event::FunctionSpec;

/// Plans the engine asks for before it gives up on unusable ones and goes
/// on with the whole task as one function (the views say which try it
/// is): a model that gave two it could not use (a small one copies what
/// it gave before) will not give a third.
pub const PLAN_ATTEMPTS: u32 = 2;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    #[error("the plan is empty: it names no functions")]
    Empty,
    #[error("function `{0}` is planned twice")]
    Duplicate(String),
    #[error("`{0}` is not a valid Python function name")]
    BadName(String),
    #[error("`{node}` depends on `{missing}`, which is not in the plan")]
    UnknownDependency { node: String, missing: String },
    #[error("the dependencies form a cycle: {}", .0.join(" -> "))]
    Cycle(Vec<String>),
    #[error("`{0}` is not in the plan: only a planned function's spec can be edited")]
    NotPlanned(String),
    #[error("a spec edit cannot rename `{node}` to `{name}`")]
    Renamed { node: String, name: String },
}

/// The plan with `node`'s spec replaced by `spec`, validated like a new plan
/// (names, unknown dependencies, cycles). The fold applies an edited spec
/// only when this accepts it, and the engine reports why when it does not.
pub fn edit_spec(
    specs: &[FunctionSpec],
    node: &str,
    spec: &FunctionSpec,
) -> Result<Vec<FunctionSpec>, PlanError> {
    if !specs.iter().any(|s| s.name == node) {
        return Err(PlanError::NotPlanned(node.to_string()));
    }
    if spec.name != node {
        return Err(PlanError::Renamed {
            node: node.to_string(),
            name: spec.name.clone(),
        });
    }
    let edited: Vec<FunctionSpec> = specs
        .iter()
        .map(|s| {
            if s.name == node {
                spec.clone()
            } else {
                s.clone()
            }
        })
        .collect();
    Dag::new(edited.clone())?;
    Ok(edited)
}

/// A validated plan: names are unique, dependencies known, no cycles.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dag {
    specs: Vec<FunctionSpec>,
    /// name -> index in specs
    index: BTreeMap<String, usize>,
}

impl Dag {
    pub fn new(specs: Vec<FunctionSpec>) -> Result<Dag, PlanError> {
        if specs.is_empty() {
            return Err(PlanError::Empty);
        }
        let mut index = BTreeMap::new();
        for (i, s) in specs.iter().enumerate() {
            if !is_python_identifier(&s.name) {
                return Err(PlanError::BadName(s.name.clone()));
            }
            if index.insert(s.name.clone(), i).is_some() {
                return Err(PlanError::Duplicate(s.name.clone()));
            }
        }
        for s in &specs {
            for d in &s.depends_on {
                if !index.contains_key(d) {
                    return Err(PlanError::UnknownDependency {
                        node: s.name.clone(),
                        missing: d.clone(),
                    });
                }
            }
        }
        let dag = Dag { specs, index };
        if let Some(cycle) = dag.find_cycle() {
            return Err(PlanError::Cycle(cycle));
        }
        Ok(dag)
    }

    pub fn specs(&self) -> &[FunctionSpec] {
        &self.specs
    }

    pub(crate) fn get(&self, name: &str) -> Option<&FunctionSpec> {
        self.index.get(name).map(|&i| &self.specs[i])
    }

    /// Names grouped in levels: every node's dependencies are in earlier
    /// levels, so the nodes of one level can run in parallel. Within a level,
    /// plan order is kept.
    pub fn levels(&self) -> Vec<Vec<String>> {
        let mut level_of: BTreeMap<&str, usize> = BTreeMap::new();
        for name in self.topological_order() {
            let spec = &self.specs[self.index[&name]];
            let level = spec
                .depends_on
                .iter()
                .map(|d| level_of.get(d.as_str()).map(|l| l + 1).unwrap_or(0))
                .max()
                .unwrap_or(0);
            level_of.insert(&spec.name, level);
        }
        let depth = level_of.values().max().map(|m| m + 1).unwrap_or(0);
        let mut levels = vec![Vec::new(); depth];
        for s in &self.specs {
            levels[level_of[s.name.as_str()]].push(s.name.clone());
        }
        levels
    }

    /// Dependencies before dependents; ties in plan order (Kahn's algorithm).
    pub fn topological_order(&self) -> Vec<String> {
        let mut indegree: Vec<usize> = self.specs.iter().map(|s| s.depends_on.len()).collect();
        let mut ready: VecDeque<usize> = (0..self.specs.len())
            .filter(|&i| indegree[i] == 0)
            .collect();
        let mut order = Vec::with_capacity(self.specs.len());
        while let Some(i) = ready.pop_front() {
            order.push(self.specs[i].name.clone());
            for (j, s) in self.specs.iter().enumerate() {
                let uses = s
                    .depends_on
                    .iter()
                    .filter(|d| **d == self.specs[i].name)
                    .count();
                if uses > 0 {
                    indegree[j] -= uses;
                    if indegree[j] == 0 {
                        ready.push_back(j);
                    }
                }
            }
        }
        order
    }

    /// Every node that depends on `name`, directly or not (not `name` itself),
    /// in topological order: what a failure of `name` blocks.
    pub fn impact(&self, name: &str) -> Vec<String> {
        let mut hit: BTreeSet<String> = BTreeSet::new();
        let mut queue = VecDeque::from([name.to_string()]);
        while let Some(n) = queue.pop_front() {
            for s in &self.specs {
                if s.depends_on.contains(&n) && hit.insert(s.name.clone()) {
                    queue.push_back(s.name.clone());
                }
            }
        }
        self.topological_order()
            .into_iter()
            .filter(|n| hit.contains(n))
            .collect()
    }

    /// All transitive dependencies of `name`, dependencies first.
    pub fn dependencies(&self, name: &str) -> Vec<String> {
        let mut hit: BTreeSet<String> = BTreeSet::new();
        let mut queue = VecDeque::from([name.to_string()]);
        while let Some(n) = queue.pop_front() {
            if let Some(s) = self.get(&n) {
                for d in &s.depends_on {
                    if hit.insert(d.clone()) {
                        queue.push_back(d.clone());
                    }
                }
            }
        }
        self.topological_order()
            .into_iter()
            .filter(|n| hit.contains(n))
            .collect()
    }

    fn find_cycle(&self) -> Option<Vec<String>> {
        // 0 = unvisited, 1 = on the stack, 2 = done
        let mut mark = vec![0u8; self.specs.len()];
        let mut stack: Vec<usize> = Vec::new();
        for start in 0..self.specs.len() {
            if let Some(c) = self.visit(start, &mut mark, &mut stack) {
                return Some(c);
            }
        }
        None
    }

    fn visit(&self, i: usize, mark: &mut [u8], stack: &mut Vec<usize>) -> Option<Vec<String>> {
        match mark[i] {
            2 => return None,
            1 => {
                let from = stack.iter().position(|&j| j == i).unwrap_or(0);
                let mut cycle: Vec<String> = stack[from..]
                    .iter()
                    .map(|&j| self.specs[j].name.clone())
                    .collect();
                cycle.push(self.specs[i].name.clone());
                return Some(cycle);
            }
            _ => {}
        }
        mark[i] = 1;
        stack.push(i);
        for d in &self.specs[i].depends_on {
            if let Some(c) = self.visit(self.index[d], mark, stack) {
                return Some(c);
            }
        }
        stack.pop();
        mark[i] = 2;
        None
    }
}

/// Python's reserved words: valid identifiers by their characters, refused as names.
const PYTHON_KEYWORDS: [&str; 35] = [
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue",
    "def", "del", "elif", "else", "except", "finally", "for", "from", "global", "if", "import",
    "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while",
    "with", "yield",
];

/// A name Python accepts as an identifier (PEP 3131: XID_Start or `_`, then
/// XID_Continue), so `zähle_wörter` is a function name and `2x` or `def` are not.
pub(crate) fn is_python_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c == '_' || unicode_ident::is_xid_start(c))
        && chars.all(unicode_ident::is_xid_continue)
        && !PYTHON_KEYWORDS.contains(&name)
}
