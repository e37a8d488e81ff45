//! ARCHITECTURE.md stays one page that is true of the tree, mechanically:
//!
//! - at most `MOST_WORDS` words, counted as `wc -w` counts them (runs of
//!   non-whitespace);
//! - every backticked token that looks like a path names a file or folder
//!   of the repository, relative to its root;
//! - every backticked token shaped like a Rust identifier or path
//!   (`State`, `State::apply`, `layers!`, `is_blocking_kind()`) names words
//!   the source tree holds.
//!
//! What counts as a path (`path_like`): a code span, outside fenced blocks,
//! that contains a `/` or ends in one of `EXTENSIONS`. It is not checked
//! (`not_checked`, with the reason) when it
//! - holds whitespace: a command or a phrase (`cargo bench --bench tui`);
//! - is a URL (`://`) or starts with `/`, `~` or `$`: the host's files
//!   (`/dev/shm`), a home or a variable, not the tree's;
//! - holds `*`, `?`, `{`, `}`, `[` or `]`: a glob or a pattern (`prompts/*.md`);
//! - holds `(`, `)`, `"`, `'`, `<`, `>`, `=`, `#`, `,`, `;` or `::`: code, not a
//!   path (`env!("CARGO_BIN_EXE_codeloop")`, `page.html#seq=N`);
//! - holds a placeholder, one of `PLACEHOLDERS` as a whole word
//!   (`crates/tui/src/panes/NAME.rs`, `SESSION/tape.jsonl`: a file of a
//!   session folder is written under `SESSION/`, never as a bare name).
//!
//! A path ending in `/` must be a folder; any other, a file or a folder.
//! Keep a path on one line: a span broken over two holds a space, and is
//! read as a phrase.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// The page's length at most: about ten minutes' reading.
const MOST_WORDS: usize = 5_000;

/// A token ending in one of these is a file name, with or without a `/`.
const EXTENSIONS: &[&str] = &[
    "rs", "py", "md", "toml", "sh", "json", "jsonl", "js", "css", "html", "svg", "snap", "lock",
    "txt", "yml", "yaml", "gz",
];

/// Words that stand for a name the reader fills in.
const PLACEHOLDERS: &[&str] = &[
    "NAME", "N", "K", "SEQ", "SESSION", "FAMILY", "CRATE", "FILE", "PATH", "DIR", "ID",
];

/// Where the identifiers are looked for, and in which files.
const SOURCE_DIRS: &[&str] = &["crates", "src", "tests", "benches", "prompts", "scripts"];
const SOURCE_EXTENSIONS: &[&str] = &["rs", "py", "toml", "sh", "js", "css", "md"];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn page() -> String {
    let path = root().join("ARCHITECTURE.md");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Words as `wc -w` counts them.
fn words(text: &str) -> usize {
    text.split_whitespace().count()
}

/// The code spans of a Markdown text, outside fenced code blocks: a run
/// of backticks up to the next run of as many, within one paragraph; a
/// line break inside is a space, and one space each side is stripped when
/// both are there (CommonMark's rule).
fn code_spans(doc: &str) -> Vec<String> {
    let mut prose = String::new();
    let mut fenced = false;
    for line in doc.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced {
            prose.push_str(line);
        }
        prose.push('\n');
    }
    let bytes = prose.as_bytes();
    let run_at = |i: usize| bytes[i..].iter().take_while(|b| **b == b'`').count();
    let mut spans = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'`' {
            i += 1;
            continue;
        }
        let open = run_at(i);
        let mut j = i + open;
        let mut close = None;
        while j < bytes.len() {
            if bytes[j] == b'`' {
                let run = run_at(j);
                if run == open {
                    close = Some(j);
                    break;
                }
                j += run;
            } else {
                j += 1;
            }
        }
        match close {
            Some(j) if !prose[i + open..j].contains("\n\n") => {
                let inner = prose[i + open..j].replace('\n', " ");
                let inner = match inner.strip_prefix(' ').and_then(|s| s.strip_suffix(' ')) {
                    Some(trimmed) if !trimmed.trim().is_empty() => trimmed.to_string(),
                    _ => inner,
                };
                spans.push(inner);
                i = j + open;
            }
            _ => i += open,
        }
    }
    spans
}

fn path_like(token: &str) -> bool {
    token.contains('/')
        || token
            .rsplit_once('.')
            .is_some_and(|(stem, ext)| !stem.is_empty() && EXTENSIONS.contains(&ext))
}

/// Why a path-like token is not looked for in the tree, if it is not.
fn not_checked(token: &str) -> Option<&'static str> {
    if token.chars().any(char::is_whitespace) {
        return Some("a command or a phrase");
    }
    if token.contains("://") {
        return Some("a URL");
    }
    if token.starts_with(['/', '~', '$']) {
        return Some("the host's, a home's or a variable's, not the tree's");
    }
    if token.contains(['*', '?', '{', '}', '[', ']']) {
        return Some("a pattern");
    }
    if token.contains(['(', ')', '"', '\'', '<', '>', '=', '#', ',', ';']) || token.contains("::") {
        return Some("code");
    }
    let placeholder = token
        .split(|c: char| !c.is_ascii_alphanumeric())
        .any(|w| PLACEHOLDERS.contains(&w));
    if placeholder {
        return Some("a placeholder");
    }
    None
}

/// Each backticked path of `doc` that `root` does not hold, said with
/// what to do.
fn missing_paths(doc: &str, root: &Path) -> Vec<String> {
    let mut missing = Vec::new();
    for token in code_spans(doc) {
        if !path_like(&token) || not_checked(&token).is_some() {
            continue;
        }
        let path = root.join(&token);
        let exists = if token.ends_with('/') {
            path.is_dir()
        } else {
            path.exists()
        };
        if !exists {
            missing.push(token);
        }
    }
    missing
}

/// A Rust identifier or path: `a`, `A::b`, `&Core`, `f()`, `layers!`.
fn identifier_segments(token: &str) -> Option<Vec<&str>> {
    let token = token.strip_prefix('&').unwrap_or(token);
    let token = token
        .strip_suffix("()")
        .or_else(|| token.strip_suffix('!'))
        .unwrap_or(token);
    let segments: Vec<&str> = token.split("::").collect();
    let is_ident = |s: &str| {
        let mut chars = s.chars();
        chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
    };
    segments.iter().all(|s| is_ident(s)).then_some(segments)
}

/// Every word (`[A-Za-z0-9_]+`) of the source tree's files, but this one.
fn source_words(root: &Path) -> HashSet<String> {
    fn walk(dir: &Path, this: &Path, words: &mut HashSet<String>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                if path.file_name().is_some_and(|n| n != "target") {
                    walk(&path, this, words);
                }
            } else if kind.is_file()
                && path != this
                && path
                    .extension()
                    .and_then(|e| e.to_str())
                    .is_some_and(|e| SOURCE_EXTENSIONS.contains(&e))
                && let Ok(text) = std::fs::read_to_string(&path)
            {
                for w in text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
                    if !w.is_empty() {
                        words.insert(w.to_string());
                    }
                }
            }
        }
    }
    let this = root.join("tests").join("architecture_doc.rs");
    let mut words = HashSet::new();
    for dir in SOURCE_DIRS {
        walk(&root.join(dir), &this, &mut words);
    }
    for file in ["Cargo.toml", "clippy.toml"] {
        if let Ok(text) = std::fs::read_to_string(root.join(file)) {
            words.extend(
                text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .filter(|w| !w.is_empty())
                    .map(str::to_string),
            );
        }
    }
    words
}

/// Each backticked identifier of `doc` with a segment no source file holds.
fn unknown_identifiers(doc: &str, words: &HashSet<String>) -> Vec<String> {
    code_spans(doc)
        .into_iter()
        .filter(|token| {
            identifier_segments(token)
                .is_some_and(|segments| segments.iter().any(|s| !words.contains(*s)))
        })
        .collect()
}

#[test]
fn the_page_is_at_most_five_thousand_words() {
    let n = words(&page());
    assert!(
        n <= MOST_WORDS,
        "ARCHITECTURE.md is {n} words, more than {MOST_WORDS}: say less, leave the detail to the module docs it points to, and put figures in BENCHMARKS.md"
    );
}

#[test]
fn every_backticked_path_is_in_the_tree() {
    let missing = missing_paths(&page(), &root());
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md names paths the tree does not hold (relative to the repository's root): {missing:?}; write the path as it is from the root, or, for a name the reader fills in or a session's file, a placeholder (NAME, N, SESSION/...; see this test's doc)"
    );
}

#[test]
fn every_backticked_identifier_is_in_the_code() {
    let unknown = unknown_identifiers(&page(), &source_words(&root()));
    assert!(
        unknown.is_empty(),
        "ARCHITECTURE.md names identifiers no source file holds: {unknown:?}; name them as the code does now, or drop them"
    );
}

#[test]
fn the_rules_catch_a_planted_bad_path_and_let_the_rest_be() {
    let doc = "\
The node is `crates/engine/src/node.rs`, the bench `src/commands/bench/`,
the top `Cargo.toml`; planted: `crates/engine/src/no_such_file.rs`, a folder
that is a file `Cargo.toml/`, `src/commands/no_such/` and a bare
`report.md`.
Not paths of the tree: `crates/tui/src/panes/NAME.rs`, `SESSION/out/report.md`,
`logs/run-N.log`, `prompts/*.md`, `~/x/y.rs`, `/dev/shm`, `https://a.b/c.md`,
`cargo bench --bench tui`, `env!(\"CARGO_BIN_EXE_x/y\")`, `a::b/c.rs`.

```
not/a/span.rs `inside/a/fence.rs`
```
";
    let missing = missing_paths(doc, &root());
    assert_eq!(
        missing,
        [
            "crates/engine/src/no_such_file.rs",
            "Cargo.toml/",
            "src/commands/no_such/",
            "report.md",
        ]
    );
    assert_eq!(words("one two\nthree\t four  "), 4);
}

#[test]
fn the_rules_catch_a_planted_unknown_identifier() {
    let words: HashSet<String> = ["State", "apply", "layers", "Core", "is_blocking_kind"]
        .iter()
        .map(|w| w.to_string())
        .collect();
    let doc = "`State::apply`, `layers!`, `&Core`, `is_blocking_kind()`, `State::folded`, `Gone`, `cargo test`, `[loop]`, `--review`";
    assert_eq!(unknown_identifiers(doc, &words), ["State::folded", "Gone"]);
}
