//! A prompt with no recorded answer: which call asked it, and how it differs
//! from the nearest prompt the script recorded (a short unified-style diff of
//! the first lines that differ).

use std::collections::HashMap;

use codeloop_protocol::{ChatMessage, Role};

/// Changed lines shown on each side of the diff.
const SHOWN: usize = 4;
/// A shown line is cut to this many characters.
const WIDTH: usize = 160;

/// The message of a miss: the call named by its tag (kind/node/iteration),
/// the nearest recorded prompt (the same tag's first), and the diff.
pub(super) fn miss(
    tag: &str,
    asked: &[ChatMessage],
    recorded: &[(String, Vec<ChatMessage>)],
) -> String {
    let call = describe_call(tag);
    let same_tag: Vec<&(String, Vec<ChatMessage>)> =
        recorded.iter().filter(|(t, _)| t == tag).collect();
    let candidates = if same_tag.is_empty() {
        recorded.iter().collect()
    } else {
        same_tag
    };
    let asked_lines = lines(asked);
    let nearest = candidates
        .into_iter()
        .map(|(t, prompt)| {
            let theirs = lines(prompt);
            (shared_lines(&asked_lines, &theirs), t, theirs)
        })
        // The first of the best: `max_by_key` keeps the last, so reverse.
        .rev()
        .max_by_key(|(shared, _, _)| *shared);
    let Some((_, nearest_tag, theirs)) = nearest else {
        return format!("{call}: the script records no prompts to compare it with");
    };
    format!(
        "{call} asked a prompt the script did not record; the nearest recorded one (\"{nearest_tag}\") differs:\n{}",
        diff(&theirs, &asked_lines)
    )
}

/// `code/parse/2` → `call "code/parse/2" (code, node `parse`, iteration 2)`.
fn describe_call(tag: &str) -> String {
    let mut parts = tag.split('/');
    let kind = parts.next().unwrap_or_default();
    let mut said = vec![if kind.is_empty() { "untagged" } else { kind }.to_string()];
    if let Some(node) = parts.next() {
        said.push(format!("node `{node}`"));
    }
    if let Some(rest) = parts.next() {
        said.push(format!("iteration {rest}"));
    }
    format!("the call \"{tag}\" ({})", said.join(", "))
}

/// Whether two prompts are the same but for their runtime values: the
/// fenced blocks made only of values-trace lines (`line 5: n=6, steps=53200231`).
/// Those are facts of one run, and a run stopped by its wall clock stops at
/// a different moment each time, so a tape replayed as a script would miss
/// on them although the code, the tests, the failure and the hints are the
/// same. Anything else that differs (a hint, an edited test) still misses.
pub(super) fn same_but_values(a: &[ChatMessage], b: &[ChatMessage]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| {
            x.role == y.role && without_values(&x.content) == without_values(&y.content)
        })
}

/// `text` with the inner lines of every fenced block that holds only
/// values-trace lines (and blank ones) left out.
fn without_values(text: &str) -> Vec<&str> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::with_capacity(lines.len());
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        out.push(line);
        i += 1;
        if !line.trim_start().starts_with("```") {
            continue;
        }
        let Some(close) = lines[i..]
            .iter()
            .position(|l| l.trim_start().starts_with("```"))
        else {
            continue;
        };
        let inner = &lines[i..i + close];
        let values_only = inner.iter().any(|l| is_trace_line(l))
            && inner
                .iter()
                .all(|l| is_trace_line(l) || l.trim().is_empty());
        if !values_only {
            out.extend_from_slice(inner);
        }
        out.push(lines[i + close]);
        i += close + 1;
    }
    out
}

/// `line 7: …` or `line 7 (depth 2): …`, as `Location::values_trace` writes them.
fn is_trace_line(line: &str) -> bool {
    let Some(rest) = line.strip_prefix("line ") else {
        return false;
    };
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return false;
    }
    let rest = &rest[digits..];
    let rest = match rest.strip_prefix(" (depth ") {
        Some(depth) => {
            let d = depth.bytes().take_while(u8::is_ascii_digit).count();
            match depth[d..].strip_prefix(')') {
                Some(after) if d > 0 => after,
                _ => return false,
            }
        }
        None => rest,
    };
    rest.starts_with(": ")
}

/// A prompt as lines: each message opens with its role.
fn lines(messages: &[ChatMessage]) -> Vec<String> {
    let mut out = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        let role = match m.role {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
        };
        out.push(format!("[message {} · {role}]", i + 1));
        out.extend(m.content.lines().map(str::to_string));
    }
    out
}

/// How many lines the two have in common, counted with repeats.
fn shared_lines(a: &[String], b: &[String]) -> usize {
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for line in b {
        *counts.entry(line.as_str()).or_default() += 1;
    }
    a.iter()
        .filter(|line| match counts.get_mut(line.as_str()) {
            Some(n) if *n > 0 => {
                *n -= 1;
                true
            }
            _ => false,
        })
        .count()
}

/// The first differing lines of `recorded` (-) and `asked` (+), after the
/// common beginning, with one line of context and a hunk header.
fn diff(recorded: &[String], asked: &[String]) -> String {
    let start = recorded
        .iter()
        .zip(asked)
        .take_while(|(a, b)| a == b)
        .count();
    let room = recorded.len().min(asked.len()) - start;
    let end = recorded
        .iter()
        .rev()
        .zip(asked.iter().rev())
        .take(room)
        .take_while(|(a, b)| a == b)
        .count();
    let old = &recorded[start..recorded.len() - end];
    let new = &asked[start..asked.len() - end];
    let mut out = vec![
        "--- recorded".to_string(),
        "+++ asked".to_string(),
        format!(
            "@@ -{},{} +{},{} @@",
            start + 1,
            old.len(),
            start + 1,
            new.len()
        ),
    ];
    if let Some(before) = start.checked_sub(1).and_then(|i| recorded.get(i)) {
        out.push(format!(" {}", cut(before)));
    }
    for (sign, side) in [('-', old), ('+', new)] {
        out.extend(side.iter().take(SHOWN).map(|l| format!("{sign}{}", cut(l))));
        if side.len() > SHOWN {
            out.push(format!("{sign}… {} more lines", side.len() - SHOWN));
        }
    }
    out.join("\n")
}

fn cut(line: &str) -> String {
    match line.char_indices().nth(WIDTH) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(text: &str) -> Vec<ChatMessage> {
        vec![ChatMessage::system("be brief"), ChatMessage::user(text)]
    }

    #[test]
    fn prompts_differing_only_in_their_runtime_values_are_the_same() {
        let values = |trace: &str, hint: &str| {
            user(&format!(
                "The code:\n```python\nwhile n != 1:\n    steps += 1\n```\nThe failure:\n```\ntimed out\n```\nValues:\n```\n{trace}\n```\nHints:\n- {hint}"
            ))
        };
        let recorded = values("line 5: n=6, steps=53200231", "mind the loop");
        assert!(same_but_values(
            &recorded,
            &values(
                "line 5: n=6, steps=56138512\nline 6 (depth 1): no change\n",
                "mind the loop"
            )
        ));
        // A different hint is a different prompt, values or not.
        assert!(!same_but_values(
            &recorded,
            &values("line 5: n=6, steps=53200231", "use a set")
        ));
        // A block with anything but trace lines is compared line by line.
        assert!(!same_but_values(
            &values("line 5: n=6\nassert f(3) == 6", "h"),
            &values("line 5: n=6\nassert f(3) == 7", "h")
        ));
        assert!(is_trace_line("line 12 (depth 3): x=1"));
        assert!(!is_trace_line("line x: y"));
        assert!(!is_trace_line("line 3 (depth ): y"));
    }

    #[test]
    fn the_diff_shows_the_first_differing_lines() {
        let recorded = vec![
            ("code/f/1".to_string(), user("a\nb\nc\nd")),
            ("plan".to_string(), user("nothing alike\nsecond")),
        ];
        let said = miss("code/f/1", &user("a\nB\nc\nd"), &recorded);
        assert!(
            said.contains("the call \"code/f/1\" (code, node `f`, iteration 1)"),
            "{said}"
        );
        assert!(said.contains("@@ -5,1 +5,1 @@\n a\n-b\n+B"), "{said}");
        // Nearest across tags when the tag is new.
        let said = miss("code/f/2", &user("nothing alike!\nsecond"), &recorded);
        assert!(said.contains("(\"plan\")"), "{said}");
        assert!(said.contains("-nothing alike\n+nothing alike!"), "{said}");
    }
}
