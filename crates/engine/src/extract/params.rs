//! A plan's `inputs` checked as a parameter list before they become a
//! signature: a small model wrote `"inputs": "read_rows('sales.csv')"`, and
//! the code prompt then asked for `def read_rows(read_rows('sales.csv'))`.
//! What can be mended is (a call around the list, a file named where a
//! parameter goes, words for none), with a note; what cannot is the plan's
//! error, said to the model when the plan is asked again.

use codeloop_session::FunctionSpec;

/// The specs with their inputs mended where they needed it, and a note for
/// each mend; or what is wrong with the first that cannot be mended.
pub(crate) fn check(specs: Vec<FunctionSpec>) -> Result<(Vec<FunctionSpec>, Vec<String>), String> {
    let mut notes = Vec::new();
    let mut out = Vec::with_capacity(specs.len());
    for mut spec in specs {
        match mend(&spec.inputs) {
            Ok(mended) if mended != spec.inputs.trim() => {
                notes.push(format!(
                    "the inputs of `{}` were not a parameter list (`{}`): mended to `{}`",
                    spec.name,
                    spec.inputs.trim(),
                    mended
                ));
                spec.inputs = mended;
            }
            Ok(_) => {}
            Err(why) => {
                return Err(format!(
                    "the inputs of `{}`, `{}`, are not a parameter list ({why}): write them as Python parameters, `name: type, ...`, or \"\" for none",
                    spec.name,
                    spec.inputs.trim()
                ));
            }
        }
        out.push(spec);
    }
    Ok((out, notes))
}

/// `inputs` as a parameter list: as it is when it is one, mended when it
/// can be, else why not.
fn mend(inputs: &str) -> Result<String, String> {
    let text = inputs.trim();
    let lower = text.to_ascii_lowercase();
    if text.is_empty()
        || ["none", "nothing", "no inputs", "-", "()", "n/a"].contains(&lower.as_str())
    {
        return Ok(String::new());
    }
    // A call around the list: `read_rows('sales.csv')`, `(a, b)`.
    let inner = unwrap_call(text).unwrap_or(text);
    let mut params = Vec::new();
    let mut paths = 0;
    for part in split_top(inner) {
        let part = part.trim();
        if part.is_empty() {
            continue;
        }
        if is_param(part) {
            params.push(part.to_string());
        } else if is_string_literal(part) {
            // A file named where its parameter goes: the parameter, with
            // the file as its default.
            paths += 1;
            let name = if paths == 1 {
                "path".to_string()
            } else {
                format!("path_{paths}")
            };
            params.push(format!("{name}: str = {part}"));
        } else {
            return Err(format!("`{part}` is not a parameter"));
        }
    }
    Ok(params.join(", "))
}

/// The arguments of `name(...)` (or of a bare `(...)`) that is the whole text.
fn unwrap_call(text: &str) -> Option<&str> {
    let open = text.find('(')?;
    let head = &text[..open];
    if !(head.is_empty() || is_identifier(head.trim())) || !text.ends_with(')') {
        return None;
    }
    let inner = &text[open + 1..text.len() - 1];
    // The brackets must be one pair: `f(a)(b)` is no call around a list.
    let mut depth = 0i32;
    for c in inner.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            _ => {}
        }
        if depth < 0 {
            return None;
        }
    }
    Some(inner)
}

/// The parts of a list split at its top-level commas (not inside brackets
/// or quotes).
fn split_top(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut quote, mut start) = (0i32, None::<char>, 0);
    for (i, c) in text.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, '(' | '[' | '{') => depth += 1,
            (None, ')' | ']' | '}') => depth -= 1,
            (None, ',') if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

/// `name`, `name: type`, `name=default`, `name: type = default`, `*args`,
/// `**kwargs`, or the bare `*` and `/` markers.
fn is_param(part: &str) -> bool {
    if part == "*" || part == "/" {
        return true;
    }
    let bare = part.trim_start_matches('*');
    let (head, default) = match bare.split_once('=') {
        Some((h, d)) => (h, Some(d.trim())),
        None => (bare, None),
    };
    let (name, annotation) = match head.split_once(':') {
        Some((n, a)) => (n.trim(), Some(a.trim())),
        None => (head.trim(), None),
    };
    // A type has no spaces but in a union or between a generic's parts:
    // `the number of rows` is words, not a type.
    let a_type =
        |a: &str| !a.is_empty() && (!a.contains(' ') || a.contains('|') || a.contains(','));
    is_identifier(name) && annotation.is_none_or(a_type) && default.is_none_or(|d| !d.is_empty())
}

fn is_identifier(name: &str) -> bool {
    const KEYWORDS: [&str; 6] = ["def", "return", "class", "lambda", "import", "None"];
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_alphabetic() || c == '_')
        && chars.all(|c| c.is_alphanumeric() || c == '_')
        && !KEYWORDS.contains(&name)
}

fn is_string_literal(part: &str) -> bool {
    part.len() >= 2
        && ((part.starts_with('\'') && part.ends_with('\''))
            || (part.starts_with('"') && part.ends_with('"')))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_parameter_list_is_kept_as_it_is() {
        for ok in [
            "text: str, n: int",
            "xs",
            "a, b",
            "rows: list[tuple[str, float]], path: str",
            "x: int = 3, *args, key: str | None = None, **kw",
            "d: dict[str, int]",
        ] {
            assert_eq!(mend(ok).as_deref(), Ok(ok), "{ok}");
        }
    }

    #[test]
    fn what_can_be_mended_is_and_what_cannot_is_said() {
        assert_eq!(
            mend("read_rows('sales.csv')").as_deref(),
            Ok("path: str = 'sales.csv'")
        );
        assert_eq!(
            mend("(text: str, n: int)").as_deref(),
            Ok("text: str, n: int")
        );
        assert_eq!(mend("none").as_deref(), Ok(""));
        assert_eq!(mend("").as_deref(), Ok(""));
        assert!(mend("what the task gives").is_err());
        assert!(mend("a list of numbers").is_err());
        assert!(mend("42").is_err());
    }

    #[test]
    fn a_plan_with_inputs_that_cannot_be_mended_is_refused_with_what_to_write() {
        let spec = |inputs: &str| FunctionSpec {
            name: "read_rows".into(),
            purpose: "read".into(),
            inputs: inputs.into(),
            output: "dict".into(),
            depends_on: vec![],
            head: None,
        };
        let (specs, notes) = check(vec![spec("read_rows('sales.csv')")]).unwrap();
        assert_eq!(specs[0].inputs, "path: str = 'sales.csv'");
        assert_eq!(notes.len(), 1, "{notes:?}");
        let err = check(vec![spec("the rows of the file")]).unwrap_err();
        assert!(
            err.contains("`read_rows`") && err.contains("name: type"),
            "{err}"
        );
    }
}
