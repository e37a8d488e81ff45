//! What the assembled program does run as a program (`python program.py`):
//! `main()` when the plan has one; else the plan's last function, on what
//! the task gives it: the task's own examples of it, the input file for a
//! function of one parameter named as a path (`path`, `csv_file`, ...), or
//! no arguments for one that takes none. A
//! program of functions only printed nothing (issue 42: a words task's
//! `out/program.py`); one the task gives nothing to call with stays as it is.

use super::examples;
use super::runs::ENTRY;
use codeloop_session::{Dag, State};

/// The line that opens the program's entry point.
pub(crate) const ENTRY_MARK: &str = "# --- entry point ---";

/// The entry point's block, if the program has one to call.
pub(crate) fn block(state: &State, dag: &Dag) -> Option<String> {
    let calls = calls(state, dag);
    if calls.is_empty() {
        return None;
    }
    let mut out = format!("\n{ENTRY_MARK}\nif __name__ == \"__main__\":\n");
    for call in calls {
        out.push_str(&format!(
            "    _result = {call}\n    if _result is not None:\n        print(_result)\n"
        ));
    }
    Some(out)
}

/// The calls the entry point makes, in order.
fn calls(state: &State, dag: &Dag) -> Vec<String> {
    if state.nodes.contains_key(ENTRY) {
        return vec![format!("{ENTRY}()")];
    }
    let order = dag.topological_order();
    // The last function nothing else uses: what the task asked for.
    let Some(last) = order.iter().rev().find(|name| {
        !state
            .specs
            .iter()
            .any(|s| s.depends_on.iter().any(|d| d == *name))
    }) else {
        return Vec::new();
    };
    let examples = examples::from_task(&state.task, last);
    if !examples.is_empty() {
        return examples.iter().map(|e| e.call().to_string()).collect();
    }
    let Some(required) = state
        .nodes
        .get(last)
        .and_then(|n| n.code())
        .and_then(|code| required_params(code, last))
    else {
        return Vec::new();
    };
    match (required.as_slice(), state.inputs.first()) {
        ([], _) => vec![format!("{last}()")],
        ([param], Some(file)) if names_a_path(param) => {
            vec![format!("{last}({:?})", file.name)]
        }
        _ => Vec::new(),
    }
}

/// A parameter named for a file's path: `path`, `filename`, `csv_file`.
fn names_a_path(param: &str) -> bool {
    let name = param
        .split(':')
        .next()
        .unwrap_or(param)
        .trim()
        .to_ascii_lowercase();
    ["path", "file", "filename", "fname"].contains(&name.as_str())
        || ["_path", "_file", "_filename"]
            .iter()
            .any(|end| name.ends_with(end))
}

/// The parameters `name`'s `def` in `code` requires (no default, not
/// `*args` or `**kwargs`); None when the code does not define it on one line.
fn required_params(code: &str, name: &str) -> Option<Vec<String>> {
    let open = format!("def {name}(");
    let line = code.lines().find(|l| l.trim_start().starts_with(&open))?;
    let params = &line[line.find(&open)? + open.len()..];
    let params = &params[..params.rfind(')')?];
    let mut depth = 0i32;
    let mut parts = vec![String::new()];
    for c in params.chars() {
        match c {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(String::new());
                continue;
            }
            _ => {}
        }
        if let Some(last) = parts.last_mut() {
            last.push(c);
        }
    }
    Some(
        parts
            .iter()
            .map(|p| p.trim())
            .take_while(|p| *p != "*")
            .filter(|p| !p.is_empty() && *p != "/" && !p.starts_with('*') && !p.contains('='))
            .map(str::to_string)
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::{names_a_path, required_params};

    fn count(code: &str) -> Option<usize> {
        required_params(code, "f").map(|p| p.len())
    }

    #[test]
    fn the_parameters_a_def_requires_are_counted() {
        assert_eq!(count("def f():\n    pass"), Some(0));
        assert_eq!(count("def f(path):\n"), Some(1));
        assert_eq!(
            count("def f(text: str, n: int = 3, *rest, key=None, **kw) -> dict[str, int]:\n"),
            Some(1)
        );
        assert_eq!(count("def f(a: tuple[int, int], b):\n"), Some(2));
        assert_eq!(count("x = 1\n"), None);
    }

    #[test]
    fn only_a_parameter_named_for_a_path_is_given_the_input_file() {
        for yes in ["path", "csv_path: str", "file", "input_file", "filename"] {
            assert!(names_a_path(yes), "{yes}");
        }
        for no in ["s", "text: str", "n", "numbers", "profile"] {
            assert!(!names_a_path(no), "{no}");
        }
    }
}
