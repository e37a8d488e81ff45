"""codeloop's mechanical mends: what a small model gets wrong in the shape of
its code, not in its logic, fixed before anyone is asked to repair it.

`mend(source, want)` is called by the static check on code that cannot run
as it is (it does not parse, or it does not define `want`). It tries, in
order, fixes that need no judgement:

- tabs and spaces mixed in the indentation: tabs taken as 4 spaces (or 8);
- a block indented as a whole (copied out of prose): dedented;
- a stray indent on the first line only;
- a block's first line indented deeper than the lines after it (a model
  that went on from `def f():` and four spaces wrote ` return`, its token
  with its own space);
- a body left at the margin under its `def`: indented;
- top-level statements that do not parse (junk after the function, a
  sentence, half an example): dropped, keeping every statement that parses;
- the function defined under another name when it is the only one: named
  `want` too.

It returns the mended source and what was done, in words, or None when no
mend makes the code parse and define `want` (the code then goes to a repair
as it is). A mend never changes a statement that parses: it only moves
whole lines left or right, or drops whole top-level statements.
"""
import ast
import textwrap


def _parses(source):
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None


def _defined(tree):
    names = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.append(node.name)
        elif isinstance(node, ast.Assign):
            names.extend(t.id for t in node.targets if isinstance(t, ast.Name))
    return names


def _good(source, want):
    tree = _parses(source)
    return tree is not None and (want is None or want in _defined(tree))


def _lines(source):
    return source.split("\n")


def expand_tabs(source):
    """Leading tabs as spaces: 4 a tab, else 8 (whichever parses)."""
    if "\t" not in source:
        return []
    out = []
    for width in (4, 8):
        fixed = "\n".join(
            _expand_indent(line, width) for line in _lines(source)
        )
        out.append((fixed, "the indentation mixed tabs and spaces: each tab taken as %d spaces" % width))
    return out


def _expand_indent(line, width):
    body = line.lstrip(" \t")
    indent = line[: len(line) - len(body)]
    return indent.expandtabs(width) + body


def dedent(source):
    fixed = textwrap.dedent(source)
    if fixed == source:
        return []
    return [(fixed, "the whole block was indented: moved to the margin")]


def first_line(source):
    lines = _lines(source)
    k = next((i for i, l in enumerate(lines) if l.strip()), None)
    if k is None or lines[k] == lines[k].lstrip():
        return []
    lines[k] = lines[k].lstrip()
    return [("\n".join(lines), "the first line had a stray indent: removed")]


def _indent(line):
    return len(line) - len(line.lstrip(" "))


def block_first_line(source):
    """A block's first line indented deeper than the next line of the same
    block (deeper than the line that opens it, and not opening a block
    itself): moved to the next line's indent."""
    lines = _lines(source)
    changed = False
    filled = [i for i, l in enumerate(lines) if l.strip()]
    for a, b, c in zip(filled, filled[1:], filled[2:]):
        opener, first, then = lines[a], lines[b], lines[c]
        if not opener.rstrip().endswith(":") or first.rstrip().endswith(":"):
            continue
        if _indent(opener) < _indent(then) < _indent(first):
            lines[b] = " " * _indent(then) + first.lstrip(" ")
            changed = True
    if not changed:
        return []
    return [("\n".join(lines), "a block's first line was indented deeper than the lines after it: aligned with them")]


def body_at_margin(source):
    """`def f(x):` followed by its body at the margin: the margin lines
    after it, up to a blank line or the next definition or import, indented
    by 4."""
    out = []
    changed = False
    inside = False
    for line in _lines(source):
        stripped = line.strip()
        at_margin = line[:1] not in ("", " ", "\t")
        if at_margin and stripped.endswith(":") and stripped.startswith(DEFINITIONS):
            inside = True
        elif not stripped:
            inside = False
        elif inside and at_margin and not stripped.startswith(DEFINITIONS + STARTS):
            line = "    " + line
            changed = True
        elif at_margin:
            inside = False
        out.append(line)
    if not changed:
        return []
    return [("\n".join(out), "the body of a function was at the margin: indented under its def")]


DEFINITIONS = ("def ", "async def ", "class ")
STARTS = ("@", "import ", "from ")
# Parses the search for unparsable statements may try: it stops there, so a
# long reply of junk costs a bounded time.
PARSE_BUDGET = 2000


def _chunks(lines):
    """Indices where a top-level statement may start: a line at the margin
    that is not a comment and not a decorator's target already begun."""
    starts = []
    for i, line in enumerate(lines):
        if line[:1] not in ("", " ", "\t", "#", ")", "]", "}"):
            if starts and lines[starts[-1]].startswith("@") and i == starts[-1] + 1:
                continue  # the definition under a decorator goes with it
            starts.append(i)
    return starts


def drop_unparsable(source):
    """Top-level statements that do not parse dropped, each one found as the
    shortest run of lines from a margin line that parses; what is left
    must parse as a whole. Nothing when the search runs past its budget."""
    lines = _lines(source)
    starts = _chunks(lines)
    if not starts:
        return []
    kept = lines[: starts[0]] if _parses("\n".join(lines[: starts[0]])) else []
    dropped = []
    bounds = starts + [len(lines)]
    budget = PARSE_BUDGET
    k = 0
    while k < len(starts):
        taken = None
        for j in range(k + 1, len(bounds)):
            budget -= 1
            if budget < 0:
                return []
            if _parses("\n".join(lines[bounds[k]:bounds[j]])) is not None:
                taken = j
                break
        if taken is None:
            bad = lines[bounds[k]:bounds[k + 1]]
            dropped.append(next((l for l in bad if l.strip()), "").strip())
            k += 1
            continue
        kept.extend(lines[bounds[k]:bounds[taken]])
        k = taken
    if not dropped:
        return []
    fixed = "\n".join(kept).rstrip() + "\n"
    shown = "; ".join(repr(d[:60]) for d in dropped[:3])
    more = " and %d more" % (len(dropped) - 3) if len(dropped) > 3 else ""
    noun = "statement" if len(dropped) == 1 else "statements"
    return [(fixed, "dropped %d top-level %s that did not parse: %s%s" % (len(dropped), noun, shown, more))]


def named(source, want):
    """The only function the code defines, under another name: `want` made
    another name for it."""
    if want is None:
        return []
    tree = _parses(source)
    if tree is None or want in _defined(tree):
        return []
    funcs = [n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    if len(funcs) != 1:
        return []
    fixed = source.rstrip() + "\n\n\n%s = %s\n" % (want, funcs[0])
    return [(fixed, "the function was named `%s`: `%s` is made the same function" % (funcs[0], want))]


FIXES = (expand_tabs, dedent, first_line, block_first_line, body_at_margin, drop_unparsable)


def mend(source, want):
    """(mended source, [what was done]) or None; see the module's doc."""
    if _good(source, want):
        return None
    # Each fix is tried on what the fixes before it left, keeping a fix only
    # when it makes the code parse or leaves more of it parsing.
    current, done = source, []
    for fix in FIXES:
        for fixed, what in fix(current):
            if _parses(fixed) is not None or _progress(fixed) > _progress(current):
                current, done = fixed, done + [what]
                break
        if _good(current, want):
            return current, done
    if _parses(current) is not None:
        for fixed, what in named(current, want):
            if _good(fixed, want):
                return fixed, done + [what]
    return None


def _progress(source):
    """How far the source parses: the line of its first error (all lines
    when it parses)."""
    try:
        ast.parse(source)
    except SyntaxError as exc:
        return exc.lineno or 0
    except (ValueError, MemoryError, RecursionError):
        return 0
    return len(_lines(source)) + 1
