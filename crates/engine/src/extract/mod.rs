//! Reading what the model wrote: the code of a reply (robust to reasoning
//! blocks, any fence, several blocks, missing fences and prose around the
//! code), the prose before it (the reflection), and the plan's JSON.
//!
//! Where code starts and stops without fences is decided by a parser given
//! as `parses`; `extract_code` uses [`looks_like_python`], a conservative
//! reading of Python in Rust, so extraction needs no process. A caller that
//! can run Python cheaply may pass `ast.parse` instead (`extract_code_with`).

mod code;
mod code_plan;
mod done;
mod fences;
pub(crate) mod params;
mod plan;
mod pyparse;
mod reasoning;

pub(crate) use code_plan::CodePlan;
pub use done::{Answer, Done};
pub(crate) use plan::{Vetted, vet as vet_plan};
pub use pyparse::looks_like_python;
pub use reasoning::strip_reasoning;

use codeloop_session::FunctionSpec;

/// The reply as `\n`-separated text without its reasoning.
fn answer_of(reply: &str) -> String {
    strip_reasoning(&reply.replace("\r\n", "\n")).0
}

/// The Python code in a reply: the block that defines `want` (the last one,
/// if several do), with the imports and helper definitions it uses from the
/// other blocks, without example calls and without its
/// `if __name__ == "__main__":` block. `>>>` sessions, other languages and
/// reasoning are never code. Without fences, the longest run of lines that
/// [`looks_like_python`]. None when the reply has no usable code.
pub fn extract_code(reply: &str, want: Option<&str>) -> Option<String> {
    extract_code_with(reply, want, &looks_like_python)
}

/// [`extract_code`] with the parser that decides where unfenced code starts
/// and stops: `parses(source)` says whether `source` is valid Python. It is
/// called only for replies without Python fences, at most about twice per
/// line of such a reply.
pub fn extract_code_with(
    reply: &str,
    want: Option<&str>,
    parses: &dyn Fn(&str) -> bool,
) -> Option<String> {
    code::select(&answer_of(reply), want, parses)
}

/// `code` without its top-level definitions (`def`, `class`) of any of
/// `names`, and how many it had: tests that define the function under test
/// test their own copy; without it they call the real one.
pub(crate) fn drop_definitions(code: &str, names: &[String]) -> (String, usize) {
    code::without_definitions(code, names)
}

/// The prose of a reply before its first code (fenced or not), without
/// reasoning: the reflection.
pub fn prose_before_code(reply: &str) -> String {
    let answer = answer_of(reply);
    let mut out = Vec::new();
    for line in answer.lines() {
        if fences::is_fence_line(line) || code::starts_code(line) {
            break;
        }
        out.push(line);
    }
    out.join("\n").trim().to_string()
}

/// The function specs of a plan reply: from a ```json block or from the
/// first `{` or `[` in the text that starts a plan (`{"functions": [...]}` or
/// a bare list of functions); comments and trailing commas are allowed.
/// The error says what is wrong: no plan at all, a plan cut off, a plan that
/// does not parse, or a function in it that is not valid.
pub fn extract_plan(reply: &str) -> Result<Vec<FunctionSpec>, String> {
    plan::plan(&answer_of(reply))
}

/// A plan reply that is code rather than a plan, as a plan: its top-level
/// functions with their signatures as specs, and each one's code.
pub(crate) fn plan_from_code(reply: &str) -> Option<CodePlan> {
    code_plan::plan_from_code(&answer_of(reply))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_block_defining_the_wanted_function_wins_with_the_helpers_it_uses() {
        let reply = "Here is a helper:\n```python\ndef helper():\n    return 1\n```\nAnd the function:\n```python\ndef f(x):\n    return helper() + x\n```\nDone.";
        assert_eq!(
            extract_code(reply, Some("f")).unwrap(),
            "def helper():\n    return 1\n\n\ndef f(x):\n    return helper() + x\n"
        );
    }

    #[test]
    fn no_fences_takes_the_code_after_the_prose() {
        let reply = "Sure! The fix:\n\nimport math\n\ndef f(x):\n    return math.sqrt(x)\n";
        assert_eq!(
            extract_code(reply, Some("f")).unwrap(),
            "import math\n\ndef f(x):\n    return math.sqrt(x)\n"
        );
        assert_eq!(extract_code("I cannot help with that.", Some("f")), None);
    }

    #[test]
    fn an_unclosed_block_is_kept_and_other_languages_are_not_code() {
        assert_eq!(
            extract_code("```python\ndef f():\n    return 1\n", None).unwrap(),
            "def f():\n    return 1\n"
        );
        assert_eq!(extract_code("```json\n{\"a\": 1}\n```", None), None);
    }

    #[test]
    fn the_reflection_is_the_prose_before_the_code() {
        let reply =
            "The loop stops one short.\nUse range(n + 1).\n```python\ndef f(n):\n    pass\n```";
        assert_eq!(
            prose_before_code(reply),
            "The loop stops one short.\nUse range(n + 1)."
        );
    }

    #[test]
    fn plans_parse_from_blocks_bare_json_and_lists() {
        let a = "```json\n{\"functions\": [{\"name\": \"a\", \"purpose\": \"p\", \"inputs\": [\"x: int\", \"y: int\"], \"output\": \"int\", \"depends_on\": []}]}\n```";
        let specs = extract_plan(a).unwrap();
        assert_eq!(specs[0].name, "a");
        assert_eq!(specs[0].inputs, "x: int, y: int");
        let b = "Plan: [{\"name\": \"b\", \"dependencies\": [\"a\"]}] ok";
        assert_eq!(
            extract_plan(b).unwrap()[0].depends_on,
            vec!["a".to_string()]
        );
        assert!(extract_plan("no plan here").is_err());
    }
}
