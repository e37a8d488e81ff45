//! Choosing the code of a reply: the block that defines the wanted function,
//! the helpers and imports it uses from other blocks, never an example call,
//! a `>>>` session or an `if __name__ == "__main__":` block. Without fences,
//! the longest run of lines that parses, with the prose around it cut off.

use std::collections::BTreeSet;

use super::fences::{Fenced, fenced_blocks, is_python};
use super::pyparse::{Logical, Tok, is_keyword, lex, statement};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Import,
    Def,
    Assign,
    MainGuard,
    Other,
}

/// One top-level statement (with its body, decorators and the comments and
/// blank lines before it).
#[derive(Debug, Clone)]
pub(super) struct Item {
    pub(super) kind: Kind,
    pub(super) text: String,
    pub(super) binds: Vec<String>,
    pub(super) refs: BTreeSet<String>,
    /// A bare `print(...)` call.
    prints: bool,
}

/// A block of code as top-level items.
pub(super) struct Block {
    pub(super) items: Vec<Item>,
}

impl Block {
    pub(super) fn binds(&self, name: &str) -> bool {
        self.items.iter().any(|i| {
            matches!(i.kind, Kind::Def | Kind::Assign) && i.binds.iter().any(|b| b == name)
        })
    }

    fn defines_something(&self) -> bool {
        self.items.iter().any(|i| i.kind == Kind::Def)
    }

    fn len(&self) -> usize {
        self.items.iter().map(|i| i.text.len()).sum()
    }
}

/// Lines with their common indentation removed.
fn dedent(lines: &[&str]) -> String {
    let common = lines
        .iter()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start_matches([' ', '\t']).len())
        .min()
        .unwrap_or(0);
    let mut out = String::new();
    for l in lines {
        out.push_str(l.get(common..).unwrap_or("").trim_end_matches('\r'));
        out.push('\n');
    }
    out
}

pub(super) fn block(code: &str) -> Block {
    let physical: Vec<&str> = code.lines().collect();
    let lexed = lex(code);
    // Top-level statements; decorators join the definition below them.
    let mut groups: Vec<Vec<&Logical>> = Vec::new();
    let mut decorated = false;
    for line in &lexed.lines {
        let top = line.indent == 0;
        match groups.last_mut() {
            Some(g) if !top || decorated => g.push(line),
            _ => groups.push(vec![line]),
        }
        decorated = top && line.tokens.first() == Some(&Tok::Op("@")) || (!top && decorated);
    }
    let mut items = Vec::new();
    let mut from = 0;
    for (k, group) in groups.iter().enumerate() {
        let end = match (groups.get(k + 1), group.last()) {
            // The blank lines and comments before the next statement go with it.
            (Some(_), Some(last)) => last.last_line + 1,
            _ => physical.len(),
        };
        let end = end.max(from);
        let text = physical[from.min(physical.len())..end.min(physical.len())].join("\n");
        from = end;
        items.push(item(group, text));
    }
    Block { items }
}

fn item(group: &[&Logical], text: String) -> Item {
    let header = group
        .iter()
        .find(|l| l.tokens.first() != Some(&Tok::Op("@")))
        .map(|l| l.tokens.as_slice())
        .unwrap_or(&[]);
    let mut refs = BTreeSet::new();
    for line in group {
        let mut after_dot = false;
        for t in &line.tokens {
            if let Tok::Name(n) = t
                && !after_dot
                && !is_keyword(n)
            {
                refs.insert(n.clone());
            }
            after_dot = *t == Tok::Op(".");
        }
    }
    let name_at = |k: usize| match header.get(k) {
        Some(Tok::Name(n)) => vec![n.clone()],
        _ => Vec::new(),
    };
    let word = |k: usize, w: &str| matches!(header.get(k), Some(Tok::Name(n)) if n == w);
    let (kind, binds) = if word(0, "def") || word(0, "class") {
        (Kind::Def, name_at(1))
    } else if word(0, "async") && word(1, "def") {
        (Kind::Def, name_at(2))
    } else if word(0, "import") || word(0, "from") {
        (Kind::Import, imported(header))
    } else if word(0, "if") && is_main_guard(header) {
        (Kind::MainGuard, Vec::new())
    } else if let Some(names) = assigned(header) {
        (Kind::Assign, names)
    } else {
        (Kind::Other, Vec::new())
    };
    for b in &binds {
        if kind == Kind::Def || kind == Kind::Import {
            refs.remove(b);
        }
    }
    let prints = word(0, "print") && header.get(1) == Some(&Tok::Op("("));
    Item {
        kind,
        text,
        binds,
        refs,
        prints,
    }
}

fn is_main_guard(header: &[Tok]) -> bool {
    header.iter().any(|t| *t == Tok::Name("__name__".into()))
        && header
            .iter()
            .any(|t| matches!(t, Tok::Str(s) if s.contains("__main__")))
}

/// The names an import binds: `import a.b as c` binds c, `import a.b` binds a,
/// `from m import x as y, z` binds y and z.
fn imported(header: &[Tok]) -> Vec<String> {
    let from = matches!(header.first(), Some(Tok::Name(n)) if n == "from");
    let start = header
        .iter()
        .position(|t| *t == Tok::Name("import".into()))
        .map_or(header.len(), |p| p + 1);
    let mut names = Vec::new();
    for part in header[start..].split(|t| *t == Tok::Op(",")) {
        let part: Vec<&Tok> = part
            .iter()
            .filter(|t| !matches!(t, Tok::Op("(" | ")")))
            .collect();
        let alias = part
            .iter()
            .position(|t| **t == Tok::Name("as".into()))
            .and_then(|p| part.get(p + 1));
        let bound = match (alias, from) {
            (Some(a), _) => Some(*a),
            (None, true) => part.last().copied(),
            (None, false) => part.first().copied(),
        };
        if let Some(Tok::Name(n)) = bound {
            names.push(n.clone());
        }
    }
    names
}

/// The names a top-level assignment binds (`A = ...`, `A, B = ...`, `A: int = ...`).
fn assigned(header: &[Tok]) -> Option<Vec<String>> {
    let eq = header.iter().position(|t| *t == Tok::Op("="))?;
    let target = &header[..eq];
    let target = match target.iter().position(|t| *t == Tok::Op(":")) {
        Some(colon) => &target[..colon],
        None => target,
    };
    let mut names = Vec::new();
    for t in target {
        match t {
            Tok::Name(n) if !is_keyword(n) => names.push(n.clone()),
            Tok::Op("," | "(" | ")" | "[" | "]" | "*") => {}
            _ => return None,
        }
    }
    (!names.is_empty()).then_some(names)
}

/// Whether a block is a `>>>` session rather than code.
fn is_doctest(body: &str) -> bool {
    body.lines()
        .find(|l| !l.trim().is_empty())
        .is_some_and(|l| l.trim_start().starts_with(">>>"))
}

/// A line that starts a definition or an import, and reads as one.
pub(super) fn starts_code(line: &str) -> bool {
    let t = line.trim_start();
    let keyword = ["def ", "async def ", "class ", "import ", "from ", "@"]
        .iter()
        .any(|p| t.starts_with(p));
    // Prose that starts with "from" or "import" does not read as a statement.
    keyword && reads_as_statement(t)
}

/// Whether one line, on its own, reads as the start of a Python statement.
fn reads_as_statement(line: &str) -> bool {
    let lexed = lex(line.trim_start());
    let tokens: Vec<Tok> = lexed.lines.into_iter().flat_map(|l| l.tokens).collect();
    statement(&tokens).is_ok()
}

/// The runs of code in text without fences: from each line that starts a
/// definition or an import, the longest run of lines that parses, grown
/// backwards over the lines before it that still parse with it.
fn unfenced_chunks(lines: &[&str], parses: &dyn Fn(&str) -> bool) -> Vec<String> {
    let mut chunks = Vec::new();
    let mut from = 0;
    while let Some(anchor) = (from..lines.len()).find(|&i| starts_code(lines[i])) {
        let ends = (anchor + 1..=lines.len()).rev();
        let end = ends
            .filter(|&e| !lines[e - 1].trim().is_empty())
            .find(|&e| parses(&dedent(&lines[anchor..e])));
        let Some(end) = end else {
            // Code that does not parse at all: taken up to the first paragraph
            // of prose, so the static check can tell the model what is wrong.
            let prose = (anchor + 1..lines.len()).find(|&i| {
                lines[i - 1].trim().is_empty()
                    && !lines[i].starts_with([' ', '\t'])
                    && !lines[i].trim().is_empty()
                    && !reads_as_statement(lines[i])
            });
            chunks.push(dedent(&lines[anchor..prose.unwrap_or(lines.len())]));
            break;
        };
        let start = (from..anchor)
            .filter(|&s| !lines[s].trim().is_empty())
            .find(|&s| parses(&dedent(&lines[s..end])))
            .unwrap_or(anchor);
        chunks.push(dedent(&lines[start..end]));
        from = end;
    }
    chunks
}

/// The candidate blocks of a reply (reasoning already removed): its Python
/// fenced blocks, or, with none, the runs of code outside any fence.
fn candidates(answer: &str, parses: &dyn Fn(&str) -> bool) -> Vec<String> {
    let fenced = fenced_blocks(answer);
    let python: Vec<&Fenced> = fenced
        .iter()
        .filter(|b| is_python(&b.lang) && !b.body.trim().is_empty())
        .collect();
    if !python.is_empty() {
        return python.into_iter().map(|b| b.body.clone()).collect();
    }
    let lines: Vec<&str> = answer.lines().collect();
    let mut chunks = Vec::new();
    let mut from = 0;
    // Text between other languages' fences, one stretch at a time.
    for b in fenced
        .iter()
        .map(|b| b.lines)
        .chain([(lines.len(), lines.len())])
    {
        chunks.extend(unfenced_chunks(&lines[from..b.0.max(from)], parses));
        from = b.1;
    }
    chunks
}

/// The code of a reply; see the module's doc.
pub(super) fn select(
    answer: &str,
    want: Option<&str>,
    parses: &dyn Fn(&str) -> bool,
) -> Option<String> {
    let blocks: Vec<Block> = candidates(answer, parses)
        .iter()
        .filter(|b| !is_doctest(b))
        .map(|b| block(b))
        .collect();
    let chosen = want
        .and_then(|name| blocks.iter().rposition(|b| b.binds(name)))
        .or_else(|| longest(&blocks, Block::defines_something))
        .or_else(|| want.is_none().then(|| longest(&blocks, |_| true)).flatten())?;
    let main = kept_items(&blocks[chosen], want);
    let mut bound: BTreeSet<String> = main.iter().flat_map(|i| i.binds.clone()).collect();
    // What the chosen code defines: an assignment elsewhere that uses it is
    // an example (`result = f(3)`), not a constant, whatever its name.
    let main_defs = bound.clone();
    let mut needed: BTreeSet<String> = main.iter().flat_map(|i| i.refs.clone()).collect();
    // Helpers and imports from the other blocks, by name, until none is missing.
    let mut taken: Vec<(usize, usize)> = Vec::new();
    loop {
        let mut grew = false;
        for (b, block) in blocks.iter().enumerate().rev() {
            if b == chosen {
                continue;
            }
            for (k, it) in block.items.iter().enumerate() {
                let constant = it.kind == Kind::Assign && it.refs.is_disjoint(&main_defs);
                let useful = (matches!(it.kind, Kind::Import | Kind::Def) || constant)
                    && it
                        .binds
                        .iter()
                        .any(|n| needed.contains(n) && !bound.contains(n));
                if useful && !taken.contains(&(b, k)) {
                    taken.push((b, k));
                    bound.extend(it.binds.iter().cloned());
                    needed.extend(it.refs.iter().cloned());
                    grew = true;
                }
            }
        }
        if !grew {
            break;
        }
    }
    taken.sort();
    let item_at = |&(b, k): &(usize, usize)| &blocks[b].items[k];
    let imports: Vec<&str> = taken
        .iter()
        .map(item_at)
        .filter(|i| i.kind == Kind::Import)
        .map(|i| i.text.trim())
        .collect();
    let mut parts: Vec<String> = Vec::new();
    if !imports.is_empty() {
        parts.push(imports.join("\n"));
    }
    parts.extend(
        taken
            .iter()
            .map(item_at)
            .filter(|i| i.kind != Kind::Import)
            .map(|i| i.text.trim().to_string()),
    );
    let own: String = main
        .iter()
        .map(|i| i.text.as_str())
        .collect::<Vec<_>>()
        .join("\n");
    parts.push(own.trim_matches('\n').to_string());
    let code = parts
        .into_iter()
        .filter(|p| !p.trim().is_empty())
        .collect::<Vec<_>>()
        .join("\n\n\n");
    (!code.trim().is_empty()).then(|| code.trim_end().to_string() + "\n")
}

/// Where, in an unfinished `code`, the definition of `want` is whole and
/// the code has gone on with a top-level statement it does not need (an
/// example, another function, a `__main__` block): the byte offset where
/// that statement (with the blank lines before it) begins. A helper the
/// function calls is needed; so is anything before it.
pub(super) fn whole_then_more(code: &str, want: &str) -> Option<usize> {
    let parsed = block(code);
    let k = parsed
        .items
        .iter()
        .position(|i| i.kind == Kind::Def && i.binds.iter().any(|b| b == want))?;
    // A body, not only the `def` line.
    let def = &parsed.items[k];
    if def.text.trim().lines().count() < 2 {
        return None;
    }
    let mut needed: BTreeSet<String> = def.refs.clone();
    let mut at: usize = parsed.items[..=k].iter().map(|i| i.text.len() + 1).sum();
    for item in &parsed.items[k + 1..] {
        // The last line may be the start of one not whole yet.
        if item.text.trim().is_empty() {
            return None;
        }
        let helper = matches!(item.kind, Kind::Def | Kind::Import | Kind::Assign)
            && item.binds.iter().any(|b| needed.contains(b));
        if !helper {
            return Some(at);
        }
        needed.extend(item.refs.iter().cloned());
        at += item.text.len() + 1;
    }
    None
}

/// `code` without its top-level definitions of `names`, and how many went.
pub(super) fn without_definitions(code: &str, names: &[String]) -> (String, usize) {
    let parsed = block(code);
    let mut dropped = 0;
    let mut kept: Vec<&str> = Vec::new();
    for item in &parsed.items {
        if item.kind == Kind::Def && item.binds.iter().any(|b| names.contains(b)) {
            dropped += 1;
        } else {
            kept.push(&item.text);
        }
    }
    if dropped == 0 {
        return (code.to_string(), 0);
    }
    let mut text = kept.join("\n");
    if !text.ends_with('\n') {
        text.push('\n');
    }
    (text, dropped)
}

fn longest(blocks: &[Block], keep: impl Fn(&Block) -> bool) -> Option<usize> {
    blocks
        .iter()
        .enumerate()
        .filter(|(_, b)| keep(b) && b.len() > 0)
        .max_by_key(|(k, b)| (b.len(), std::cmp::Reverse(*k)))
        .map(|(k, _)| k)
}

/// The items of the chosen block that stay: not the `__main__` block, and,
/// after the wanted function is defined, no statement that calls it (an
/// example) nor any that uses what such a statement made, nor a bare print.
fn kept_items<'a>(block: &'a Block, want: Option<&str>) -> Vec<&'a Item> {
    let mut kept = Vec::new();
    let mut example_names: BTreeSet<&'a str> = BTreeSet::new();
    let mut defined = false;
    for it in &block.items {
        let rebinds_want = want.is_some_and(|w| it.binds.iter().any(|b| b == w));
        let example = defined
            && !rebinds_want
            && matches!(it.kind, Kind::Other | Kind::Assign)
            && (it.prints
                || want.is_some_and(|w| it.refs.contains(w))
                || it.refs.iter().any(|r| example_names.contains(r.as_str())));
        if example {
            example_names.extend(it.binds.iter().map(String::as_str));
            continue;
        }
        if it.kind == Kind::MainGuard {
            continue;
        }
        if want.is_some_and(|w| it.binds.iter().any(|b| b == w)) {
            defined = true;
        }
        kept.push(it);
    }
    kept
}
