"""codeloop's static check: syntax, imports and the expected definitions, per
file, before anything runs. A syntax error, a missing or a repeated definition
means the code cannot run (the engine repairs it unrun); the rest are notes.
No security boundary: the sandbox is.

Reads _codeloop_check.json: [{"file": str, "defines": [str], "foreign": {name: node},
"mend": bool}...] (foreign: the functions other nodes define, with the node
that defines each, which this file must not define too: in the assembled
program one would replace the other; mend: code that cannot run as it is is
mended first, see _codeloop_mend.py, and the mended code is what is checked);
prints one JSON object: {"findings": [{"file", "kind", "line", "message"}...],
"mended": [{"file", "code", "mends": [str]}...]}.
A function of `defines` whose body is only its docstring (or `pass`, `...`)
is an "empty" finding: there is no code to run.
Reads _codeloop_policy.json, the import policy ({"allow", "block", "enforce"}):
a blocked import is a "blocked" finding where enforced (the code is repaired
unrun), else a "risky" note.
"""
import sys

# The working directory holds the code under test, under names that may be
# the standard library's own (a function called `tokenize` is tokenize.py):
# never import from it by accident.
if sys.path and not getattr(sys.flags, "safe_path", False):
    del sys.path[0]  # the script's own directory

import ast
import importlib.util
import json


def load_mend():
    spec = importlib.util.spec_from_file_location("_codeloop_mend", "_codeloop_mend.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module

RISKY = {
    "subprocess": "starts processes",
    "socket": "opens network sockets (there is no network in the sandbox)",
    "ctypes": "calls native code",
    "shutil": "can delete whole directory trees",
}
POLICY = {"allow": [], "block": sorted(RISKY), "enforce": False}


HALVES = {"_posixsubprocess": "subprocess", "_ctypes": "ctypes"}


def blocked(name):
    """As the sandbox's guard decides: a module's C half goes with it
    (blocking socket blocks _socket)."""
    top = name.split(".")[0]
    if top.startswith("_") and len(top) > 1 and decide(name) is None:
        if decide(HALVES.get(top, top[1:])):
            return True
    return bool(decide(name))


def decide(name):
    """The longest entry naming the module or a package above it decides;
    at equal length, allow wins. None: no entry names it."""
    best_len, best = -1, None
    for entries, verdict in ((POLICY["block"], True), (POLICY["allow"], False)):
        for entry in entries:
            if name == entry or name.startswith(entry + "."):
                if len(entry) > best_len or (len(entry) == best_len and not verdict):
                    best_len, best = len(entry), verdict
    return best


def is_empty(node):
    """A function whose body is only its docstring, `pass` or `...`."""
    for stmt in node.body:
        if isinstance(stmt, ast.Pass):
            continue
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and (
                isinstance(stmt.value.value, str) or stmt.value.value is Ellipsis):
            continue
        return False
    return True


def mended(entry):
    """The entry's code mended, when it asks for mends and its code needs
    one that helps: {"file", "code", "mends"}, written over the file."""
    if not entry.get("mend"):
        return None
    path = entry["file"]
    with open(path, encoding="utf-8") as fh:
        source = fh.read()
    defines = entry.get("defines", [])
    got = load_mend().mend(source, defines[0] if defines else None)
    if got is None:
        return None
    code, mends = got
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(code)
    return {"file": path, "code": code, "mends": mends}


def check(entry, local_modules):
    out = []
    path = entry["file"]

    def add(kind, line, message):
        out.append({"file": path, "kind": kind, "line": line, "message": message})

    with open(path, encoding="utf-8") as fh:
        source = fh.read()
    try:
        tree = ast.parse(source, path)
    except SyntaxError as exc:
        add("syntax", exc.lineno, "%s: %s" % (type(exc).__name__, exc.msg))
        return out
    defined = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defined.add(node.name)
        elif isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    defined.add(t.id)
    foreign = entry.get("foreign", {})
    for node in tree.body:
        names = []
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names = [node.name]
        elif isinstance(node, ast.Assign):
            names = [t.id for t in node.targets if isinstance(t, ast.Name)]
        for name in names:
            owner = foreign.get(name)
            if owner == name:
                add("redefinition", node.lineno,
                    "defines %r, which is another function of the plan (its own node): "
                    "call that one, do not define it here (in the assembled program "
                    "one would replace the other)" % name)
            elif owner is not None:
                add("redefinition", node.lineno,
                    "defines %r, which the function %r defines too: rename it (in the "
                    "assembled program one would replace the other)" % (name, owner))
    for name in entry.get("defines", []):
        if name not in defined:
            add("definition", None, "defines no top-level function named %r" % name)
    for node in tree.body:
        if (isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                and node.name in entry.get("defines", []) and is_empty(node)):
            add("empty", node.lineno,
                "%r has no code: its body is only its docstring (or pass); "
                "write the body that does what the docstring says" % node.name)
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        for full in names:
            top = full.split(".")[0]
            if top in local_modules:
                continue
            hit = next((m for m in (full, top) if blocked(m)), None)
            if hit is not None:
                why = RISKY.get(top)
                why = ", which " + why if why else ""
                if POLICY["enforce"]:
                    add("blocked", node.lineno,
                        "import of %r is blocked by the import policy (config [imports])%s: "
                        "do without it" % (hit, why))
                else:
                    add("risky", node.lineno,
                        "imports %s%s (the import policy lists it as blocked; not enforced)"
                        % (hit, why))
                continue
            try:
                found = importlib.util.find_spec(top) is not None
            except (ImportError, ValueError):
                found = False
            if not found:
                add("import", node.lineno, "module %r is not installed" % top)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if isinstance(node.func.value, ast.Name) and node.func.value.id == "os" and node.func.attr in ("system", "popen", "fork", "kill"):
                add("risky", node.lineno, "calls os.%s" % node.func.attr)
    return out


def main():
    try:
        with open("_codeloop_policy.json", encoding="utf-8") as fh:
            POLICY.update(json.load(fh))
    except FileNotFoundError:
        pass
    with open("_codeloop_check.json", encoding="utf-8") as fh:
        entries = json.load(fh)
    local = {e["file"][:-3] for e in entries if e["file"].endswith(".py")} | {"solution"}
    findings = []
    mends = []
    for entry in entries:
        m = mended(entry)
        if m is not None:
            mends.append(m)
        findings.extend(check(entry, local))
    json.dump({"findings": findings, "mended": mends}, sys.stdout)


main()
