//! A conservative reading of Python without Python: a tokenizer (strings,
//! f-strings, brackets, comments, continuation lines, indentation) and checks
//! that only reject what no Python parser accepts: two names in a row (prose),
//! unclosed strings and brackets, characters Python has no use for (`?`, `!`,
//! backticks), a line ending in a colon that opens no block, a bad indent.
//! It decides where code starts and stops in a reply without fences; it is not
//! the static check (that runs the real parser, `exec::check`).

/// A token, without its position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Tok {
    Name(String),
    Number,
    /// A string literal with its quotes and prefix.
    Str(String),
    Op(&'static str),
}

/// One logical line: its tokens, the physical lines it spans and its indent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Logical {
    first_line: usize,
    pub(super) last_line: usize,
    pub(super) indent: usize,
    pub(super) tokens: Vec<Tok>,
}

/// The logical lines of a source, and the first thing that cannot be Python.
/// Lexing goes on past an error, so the lines serve even broken code.
pub(super) struct Lexed {
    pub(super) lines: Vec<Logical>,
    pub(super) error: Option<String>,
}

const KEYWORDS: [&str; 32] = [
    "and", "as", "assert", "async", "await", "break", "class", "continue", "def", "del", "elif",
    "else", "except", "finally", "for", "from", "global", "if", "import", "in", "is", "lambda",
    "nonlocal", "not", "or", "pass", "raise", "return", "try", "while", "with", "yield",
];
const COMPOUND: [&str; 14] = [
    "if", "elif", "else", "for", "while", "try", "except", "finally", "with", "def", "class",
    "async", "match", "case",
];
const OPS3: [&str; 5] = ["**=", "//=", ">>=", "<<=", "..."];
const OPS2: [&str; 19] = [
    "->", ":=", "==", "!=", "<=", ">=", "**", "//", "<<", ">>", "+=", "-=", "*=", "/=", "%=", "&=",
    "|=", "^=", "@=",
];
const OPS1: [&str; 22] = [
    "+", "-", "*", "/", "%", "@", "&", "|", "^", "~", "<", ">", "(", ")", "[", "]", "{", "}", ",",
    ":", ".", ";",
];
const OP_EQ: &str = "=";

pub(super) fn is_keyword(name: &str) -> bool {
    KEYWORDS.contains(&name)
}

struct Lexer {
    chars: Vec<char>,
    i: usize,
    line: usize,
    brackets: Vec<char>,
    error: Option<String>,
}

impl Lexer {
    fn fail(&mut self, what: String) {
        if self.error.is_none() {
            self.error = Some(format!("line {}: {what}", self.line + 1));
        }
    }

    fn peek(&self, k: usize) -> Option<char> {
        self.chars.get(self.i + k).copied()
    }

    /// Past a string whose opening quote is at `self.i`.
    fn string(&mut self, fstring: bool) {
        let Some(quote) = self.peek(0) else { return };
        let triple = self.peek(1) == Some(quote) && self.peek(2) == Some(quote);
        self.i += if triple { 3 } else { 1 };
        loop {
            let Some(c) = self.peek(0) else {
                self.fail("a string is never closed".into());
                return;
            };
            match c {
                '\\' => {
                    if self.peek(1) == Some('\n') {
                        self.line += 1;
                    }
                    self.i += 2;
                }
                '\n' if !triple => {
                    self.fail("a string is not closed on its line".into());
                    return;
                }
                '\n' => {
                    self.line += 1;
                    self.i += 1;
                }
                '{' if fstring && self.peek(1) == Some('{') => self.i += 2,
                '{' if fstring => self.replacement_field(),
                _ if c == quote => {
                    if !triple {
                        self.i += 1;
                        return;
                    }
                    if self.peek(1) == Some(quote) && self.peek(2) == Some(quote) {
                        self.i += 3;
                        return;
                    }
                    self.i += 1;
                }
                _ => self.i += 1,
            }
        }
    }

    /// Past `{expr}` inside an f-string (which may hold strings of its own).
    fn replacement_field(&mut self) {
        let mut depth = 0usize;
        while let Some(c) = self.peek(0) {
            match c {
                '{' | '[' | '(' => depth += 1,
                '}' | ']' | ')' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 && c == '}' {
                        self.i += 1;
                        return;
                    }
                }
                '\'' | '"' => {
                    self.string(false);
                    continue;
                }
                '\n' => self.line += 1,
                _ => {}
            }
            self.i += 1;
        }
    }

    /// The indent of the line that starts at `self.i` (a tab to the next
    /// multiple of 8), past it.
    fn indent(&mut self) -> usize {
        let mut width = 0;
        while let Some(c) = self.peek(0).filter(|c| matches!(c, ' ' | '\t' | '\x0c')) {
            width = if c == '\t' {
                (width / 8 + 1) * 8
            } else {
                width + 1
            };
            self.i += 1;
        }
        width
    }

    /// Past a comment, to the end of its line.
    fn comment(&mut self) {
        while self.peek(0).is_some_and(|c| c != '\n') {
            self.i += 1;
        }
    }

    /// Past a backslash at `self.i`: true when it joins the next line to
    /// this one; else it is an error, and only it is passed.
    fn backslash(&mut self) -> bool {
        let skip = match (self.peek(1), self.peek(2)) {
            (Some('\n'), _) => 2,
            (Some('\r'), Some('\n')) => 3,
            _ => 0,
        };
        if skip == 0 {
            self.fail("a backslash outside a string".into());
            self.i += 1;
            return false;
        }
        self.i += skip;
        self.line += 1;
        true
    }

    /// Past a number (digits, a point, an exponent and its sign, a suffix).
    fn number(&mut self) {
        while let Some(d) = self.peek(0) {
            if d.is_alphanumeric() || d == '_' || d == '.' {
                self.i += 1;
                if matches!(d, 'e' | 'E') && matches!(self.peek(0), Some('+' | '-')) {
                    self.i += 1;
                }
            } else {
                break;
            }
        }
    }

    /// A name at `self.i`, or a string with its prefix (`rb"..."`, `f'...'`).
    fn name_or_string(&mut self) -> Tok {
        let from = self.i;
        while self
            .peek(0)
            .is_some_and(|d| d.is_alphanumeric() || d == '_')
        {
            self.i += 1;
        }
        let name: String = self.chars[from..self.i].iter().collect();
        let lower = name.to_ascii_lowercase();
        let prefix = lower.len() <= 2 && lower.chars().all(|p| "rbuft".contains(p));
        if prefix && matches!(self.peek(0), Some('\'' | '"')) {
            self.string(lower.contains('f') || lower.contains('t'));
            Tok::Str(
                self.chars[from..self.i.min(self.chars.len())]
                    .iter()
                    .collect(),
            )
        } else {
            Tok::Name(name)
        }
    }

    fn op(&mut self) -> Option<&'static str> {
        let rest: String = self.chars[self.i..].iter().take(3).collect();
        let found = OPS3
            .iter()
            .chain(OPS2.iter())
            .chain(OPS1.iter())
            .chain(std::iter::once(&OP_EQ))
            .find(|op| rest.starts_with(**op))
            .copied()?;
        self.i += found.chars().count();
        Some(found)
    }
}

/// The tokens of `src`, as logical lines.
pub(super) fn lex(src: &str) -> Lexed {
    let mut lx = Lexer {
        chars: src.chars().collect(),
        i: 0,
        line: 0,
        brackets: Vec::new(),
        error: None,
    };
    let mut lines: Vec<Logical> = Vec::new();
    let mut at_line_start = true;
    let mut continued = false;
    while lx.i < lx.chars.len() {
        if at_line_start {
            at_line_start = false;
            if lx.brackets.is_empty() && !continued {
                let width = lx.indent();
                if !matches!(lx.peek(0), None | Some('\n' | '\r' | '#')) {
                    lines.push(Logical {
                        first_line: lx.line,
                        last_line: lx.line,
                        indent: width,
                        tokens: Vec::new(),
                    });
                }
            }
            continued = false;
            continue;
        }
        let start_line = lx.line;
        let tok = match lx.next() {
            Next::Token(tok) => tok,
            Next::Nothing => continue,
            Next::LineEnd { joined } => {
                at_line_start = true;
                continued |= joined;
                continue;
            }
        };
        if lines.is_empty() {
            lines.push(Logical {
                first_line: start_line,
                last_line: start_line,
                indent: 0,
                tokens: Vec::new(),
            });
        }
        if let Some(last) = lines.last_mut() {
            last.tokens.push(tok);
            last.last_line = lx.line;
        }
    }
    if !lx.brackets.is_empty() {
        lx.fail("a bracket is never closed".into());
    }
    if continued {
        lx.fail("the last line ends with a backslash".into());
    }
    Lexed {
        lines,
        error: lx.error,
    }
}

/// What the lexer found at its position.
enum Next {
    Token(Tok),
    /// Blanks, a comment, or what is not Python (an error).
    Nothing,
    /// The end of a physical line; `joined` when a backslash joins the
    /// next one to it.
    LineEnd {
        joined: bool,
    },
}

impl Lexer {
    /// What starts at `self.i`, past it.
    fn next(&mut self) -> Next {
        let c = self.chars[self.i];
        let tok = match c {
            '\n' => {
                self.line += 1;
                self.i += 1;
                return Next::LineEnd { joined: false };
            }
            ' ' | '\t' | '\r' | '\x0c' => {
                self.i += 1;
                return Next::Nothing;
            }
            '#' => {
                self.comment();
                return Next::Nothing;
            }
            '\\' => {
                return if self.backslash() {
                    Next::LineEnd { joined: true }
                } else {
                    Next::Nothing
                };
            }
            '\'' | '"' => {
                let from = self.i;
                self.string(false);
                Tok::Str(
                    self.chars[from..self.i.min(self.chars.len())]
                        .iter()
                        .collect(),
                )
            }
            c if c.is_ascii_digit()
                || (c == '.' && self.peek(1).is_some_and(|d| d.is_ascii_digit())) =>
            {
                self.number();
                Tok::Number
            }
            c if c.is_alphabetic() || c == '_' => self.name_or_string(),
            _ => match self.op() {
                Some(op) => {
                    bracket(self, op);
                    Tok::Op(op)
                }
                None => {
                    self.fail(format!("{c:?} is not Python"));
                    self.i += 1;
                    return Next::Nothing;
                }
            },
        };
        Next::Token(tok)
    }
}

fn bracket(lx: &mut Lexer, op: &str) {
    match op {
        "(" | "[" | "{" => lx.brackets.extend(op.chars()),
        ")" | "]" | "}" => {
            let want = match op {
                ")" => '(',
                "]" => '[',
                _ => '{',
            };
            if lx.brackets.pop() != Some(want) {
                lx.fail(format!("{op} closes nothing that was opened"));
            }
        }
        _ => {}
    }
}

/// Whether `src` could be Python: no check here fails on code `ast.parse`
/// accepts (as far as the tests show), and prose fails one almost always.
pub fn looks_like_python(src: &str) -> bool {
    check(src).is_ok()
}

/// Why `src` cannot be Python, if a check finds a reason.
pub(super) fn check(src: &str) -> Result<(), String> {
    let lexed = lex(src);
    if let Some(e) = lexed.error {
        return Err(e);
    }
    // Each open block's indent, and the keyword of the last statement in it.
    let mut levels: Vec<(usize, &str)> = vec![(0, "")];
    let mut expect_body = false;
    for line in &lexed.lines {
        let top = levels.last().map_or(0, |l| l.0);
        let at = line.first_line + 1;
        if line.indent > top {
            if !expect_body {
                return Err(format!("line {at}: unexpected indent"));
            }
            levels.push((line.indent, ""));
        } else {
            if expect_body {
                return Err(format!("line {at}: a block has no body"));
            }
            while levels.last().is_some_and(|l| l.0 > line.indent) {
                if let Some((_, last)) = levels.pop() {
                    clause_follows(last, "").map_err(|e| format!("line {at}: {e}"))?;
                }
            }
            if levels.last().map(|l| l.0) != Some(line.indent) {
                return Err(format!("line {at}: the indent matches no outer block"));
            }
        }
        expect_body = statement(&line.tokens).map_err(|e| format!("line {at}: {e}"))?;
        let keyword = match line.tokens.first() {
            Some(Tok::Name(n)) if COMPOUND.contains(&n.as_str()) => n.as_str(),
            _ => "",
        };
        if let Some(level) = levels.last_mut() {
            clause_follows(level.1, keyword).map_err(|e| format!("line {at}: {e}"))?;
            level.1 = keyword;
        }
    }
    if expect_body {
        return Err("the last block has no body".into());
    }
    for (_, last) in levels {
        clause_follows(last, "")?;
    }
    Ok(())
}

/// Whether a statement starting with `next` may follow one starting with
/// `prev` in the same block: `elif`, `else`, `except` and `finally` need the
/// statement they continue, and a `try` needs its `except` or `finally`.
fn clause_follows(prev: &str, next: &str) -> Result<(), String> {
    let ok = match next {
        "elif" => matches!(prev, "if" | "elif"),
        "else" => matches!(prev, "if" | "elif" | "for" | "while" | "try" | "except"),
        "except" => matches!(prev, "try" | "except"),
        "finally" => matches!(prev, "try" | "except" | "else"),
        _ => prev != "try",
    };
    if ok {
        Ok(())
    } else if prev == "try" {
        Err("a try without except or finally".into())
    } else {
        Err(format!("{next} continues no statement"))
    }
}

fn is_name(t: &Tok) -> bool {
    matches!(t, Tok::Name(n) if !is_keyword(n))
}

fn is_word(t: &Tok, w: &str) -> bool {
    matches!(t, Tok::Name(n) if n == w)
}

/// A token that can end an operand, and one that can begin one.
fn ends_operand(t: &Tok) -> bool {
    is_name(t)
        || matches!(
            t,
            Tok::Number | Tok::Str(_) | Tok::Op(")" | "]" | "}" | "...")
        )
}

fn begins_operand(t: &Tok) -> bool {
    is_name(t) || matches!(t, Tok::Number | Tok::Str(_) | Tok::Op("..."))
}

/// Checks one logical line; says whether it opens a block.
pub(super) fn statement(tokens: &[Tok]) -> Result<bool, String> {
    let Some(first) = tokens.first() else {
        return Ok(false);
    };
    let last = tokens.last().unwrap_or(first);
    let import = is_word(first, "from") || is_word(first, "import");
    match first {
        Tok::Op(op) if !matches!(*op, "(" | "[" | "{" | "-" | "+" | "~" | "*" | "@" | "...") => {
            return Err(format!("a statement cannot start with {op}"));
        }
        Tok::Name(n) if matches!(n.as_str(), "and" | "or" | "in" | "is" | "as") => {
            return Err(format!("a statement cannot start with {n}"));
        }
        _ => {}
    }
    let soft = matches!(first, Tok::Name(n) if matches!(n.as_str(), "match" | "case" | "type"));
    for (k, pair) in tokens.windows(2).enumerate() {
        let (a, b) = (&pair[0], &pair[1]);
        let strings = matches!((a, b), (Tok::Str(_), Tok::Str(_)));
        if ends_operand(a) && begins_operand(b) && !strings && !(k == 0 && soft) {
            return Err("two operands in a row (prose, not code)".into());
        }
        if *a == Tok::Op(".") && !import && !matches!(b, Tok::Name(_)) {
            return Err("a dot not followed by a name".into());
        }
    }
    // `from m import *` is the one line that may end with an operator.
    let may_end =
        |op: &str| matches!(op, ")" | "]" | "}" | "," | ":" | "..." | ";") || import && op == "*";
    match last {
        Tok::Op(op) if !may_end(op) => {
            return Err(format!("the line ends with {op}"));
        }
        Tok::Name(n)
            if is_keyword(n)
                && !matches!(
                    n.as_str(),
                    "pass" | "break" | "continue" | "return" | "yield" | "raise"
                ) =>
        {
            return Err(format!("the line ends with {n}"));
        }
        _ => {}
    }
    let compound = matches!(first, Tok::Name(n) if COMPOUND.contains(&n.as_str()));
    let opens = *last == Tok::Op(":");
    if opens && !compound {
        return Err("a line ending in a colon that opens no block".into());
    }
    if is_word(first, "def") || is_word(first, "class") {
        let named = tokens.get(1).is_some_and(is_name);
        let next = tokens.get(2);
        let ok = if is_word(first, "def") {
            next == Some(&Tok::Op("("))
        } else {
            matches!(next, Some(Tok::Op("(" | ":")))
        };
        if !named || !ok {
            return Err("a def or class without a name and its parameters".into());
        }
    }
    if compound && !soft && !tokens.contains(&Tok::Op(":")) {
        return Err("a block header without a colon".into());
    }
    Ok(opens)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_passes() {
        for code in [
            "import math\n\ndef f(x: int) -> float:\n    \"\"\"Doc.\n\n    >>> f(1)\n    \"\"\"\n    return math.sqrt(x)\n",
            "class A(B):\n    def g(self):\n        return {'a': [1, 2,\n   3]}[\"a\"]\n",
            "x = f'{a!r:>{w}} {{b}}'\nif x: pass\nelse:\n    y = 1e-3 + .5j\n",
            "from . import a\nfrom x import *\nmatch p:\n    case _:\n        pass\n",
            "s = r'\\d' \\\n    'more'\n@dec\nasync def h():\n    await z\n",
        ] {
            assert_eq!(check(code), Ok(()), "{code}");
        }
    }

    #[test]
    fn prose_fails() {
        for prose in [
            "Here's the fixed code:",
            "This function uses a dictionary.",
            "Explanation:",
            "**Explanation**",
            "1. Iterate over the list",
            "- `f(x)` returns the sum",
            "Let me know if you have questions!",
            "Done.",
            "def f(x):\n    return x\nThe function above returns x.",
            "def f(x):\n  return x\n    y = 1",
            "if x:\n",
            "except ValueError:\n    pass\n",
            "try:\n    x = 1\ny = 2\n",
            "x = 1\nelse:\n    pass\n",
        ] {
            assert!(check(prose).is_err(), "{prose}");
        }
    }
}
