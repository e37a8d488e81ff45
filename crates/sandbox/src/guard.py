# codeloop's import guard: the import policy (config [imports]) enforced
# inside the sandbox before the program's code runs. Installed by a short
# bootstrap (`python -c`) before a program's script, and in each child of a
# fork server before its job. A blocked module is refused three ways:
#
# - a meta-path finder first in sys.meta_path (a clear ImportError, also
#   for importlib.util.find_spec);
# - an audit hook, which no program can remove (sys.addaudithook has no
#   undo), on the "import" event (every import statement and __import__,
#   and every C extension loaded, whichever finder found it);
# - the same hook on the "open" and "exec" events: the files of a blocked
#   module (found at install without importing it, and known by their
#   device and inode, so no other name or link reaches them) cannot be
#   opened, and its code (a frozen module's too) cannot be run. A module
#   written in Python is loaded by reading its file, so importlib's
#   import_module, a loader or spec used by hand, a cleared sys.meta_path
#   or a finder of the program's own all end there.
#
# A module's name is read as the exact string it holds (str.__str__): a str
# subclass that answers the guard's questions differently is not believed,
# and a name that is not a string at all is refused. The hook's state is
# its own (the finder's is apart from it), it looks up no global name (the
# program runs in the same globals), and the introspection that could reach
# it (gc.get_objects, get_referrers, get_referents, sys._current_frames) is
# refused. Tracing is off inside audit hooks.
#
# This is a policy, not a wall: code can still reach objects already in
# memory (a library's reference to a module it imported before the guard),
# built-in functions of modules the policy allows (os, io), or native code
# through an allowed module; a file opened relative to a directory
# descriptor (os.open's dir_fd) is looked up by its name only. The sandbox
# (namespaces, seccomp, Landlock) is what holds a hostile program.
def _codeloop_import_guard(
    policy,
    _str=str,
    _bytes=bytes,
    _tuple=tuple,
    _len=len,
    _type=type,
    _frozenset=frozenset,
    _ImportError=ImportError,
    _PermissionError=PermissionError,
    _TypeError=TypeError,
    _OSError=OSError,
    _ValueError=ValueError,
    _repr=repr,
):
    import sys
    import os
    import importlib.machinery

    _stat = os.stat
    _listdir = os.listdir
    _str_str = _str.__str__
    _bytes_decode = _bytes.decode
    _code_type = _type((lambda: 0).__code__)
    block_entries = _tuple(_str_str(b) for b in policy.get("block", ()))
    allow_entries = _tuple(_str_str(a) for a in policy.get("allow", ()))

    def rules(block, allow):
        """`blocked(name)` for this policy: its state in cells of its own."""
        # A module's C half goes with it: blocking socket blocks _socket.
        halves = {"_posixsubprocess": "subprocess", "_ctypes": "ctypes"}

        def decide(name):
            # The longest entry naming the module or a package above it
            # decides; at equal length, allow wins. None: no entry names it.
            best_len, best = -1, None
            for entries, verdict in ((block, True), (allow, False)):
                for entry in entries:
                    if name == entry or name.startswith(entry + "."):
                        n = _len(entry)
                        if n > best_len or (n == best_len and not verdict):
                            best_len, best = n, verdict
            return best

        def blocked(name):
            top = name.split(".")[0]
            if top.startswith("_") and _len(top) > 1 and decide(name) is None:
                whole = halves.get(top, top[1:])
                if decide(whole):
                    return True
            return bool(decide(name))

        return blocked

    def exact(name):
        """The exact string a name holds; None when it is not a string."""
        try:
            return _str_str(name)
        except _TypeError:
            return None

    def refusal(name):
        return _ImportError(
            "import of %r is blocked by the import policy (config [imports])" % (name,),
            name=name,
        )

    finder_blocked = rules(block_entries, allow_entries)
    blocked = rules(block_entries, allow_entries)

    class ImportPolicyFinder:
        """Refuses the modules the import policy blocks."""

        @staticmethod
        def find_spec(name, path=None, target=None):
            plain = exact(name)
            if plain is None or finder_blocked(plain):
                raise refusal(plain if plain is not None else _repr(name))
            return None

    # The files of the blocked modules, by (device, inode): found on
    # sys.path without importing anything, packages walked (bounded).
    files = {}
    sources = {}

    def note(path, module):
        try:
            st = _stat(path)
        except _OSError:
            return
        files[(st.st_dev, st.st_ino)] = module
        sources[path] = module

    def walk(directory, package, depth):
        if depth > 8 or _len(files) > 20000:
            return
        try:
            names = _listdir(directory)
        except _OSError:
            return
        for entry in names:
            path = directory + "/" + entry
            if entry == "__pycache__":
                walk(path, package, depth + 1)
                continue
            stem = entry.split(".")[0]
            module = package if stem == "__init__" else package + "." + stem
            if "." not in entry and os.path.isdir(path):
                if blocked(module):
                    walk(path, module, depth + 1)
                continue
            if blocked(module) or (stem == "__init__" and blocked(package)):
                note(path, module)

    # A C half (_socket) is loaded by the interpreter, which raises the
    # "import" event for it: only modules read from files are looked up.
    tops = []
    for entry in block_entries:
        top = entry.split(".")[0]
        if top not in tops:
            tops.append(top)
    for top in tops:
        try:
            spec = importlib.machinery.PathFinder.find_spec(top)
        except Exception:
            spec = None
        if spec is None:
            continue
        if spec.submodule_search_locations:
            for location in spec.submodule_search_locations:
                walk(location, top, 0)
        elif spec.origin and blocked(top):
            origin = spec.origin
            note(origin, top)
            directory, base = os.path.split(origin)
            stem = base.split(".")[0]
            cache = directory + "/__pycache__"
            try:
                cached = _listdir(cache)
            except _OSError:
                cached = ()
            for name in cached:
                if name.split(".")[0] == stem:
                    note(cache + "/" + name, top)
    blocked_files = dict(files)
    blocked_sources = dict(sources)
    blocked_names = _frozenset(p.rsplit("/", 1)[-1] for p in sources)
    introspection = _frozenset(
        ("gc.get_objects", "gc.get_referrers", "gc.get_referents", "sys._current_frames")
    )

    def path_of(raw):
        """A path as the exact text it holds; None for a descriptor."""
        plain = exact(raw)
        if plain is not None:
            return plain
        try:
            return _bytes_decode(raw[:], "utf-8", "surrogateescape")
        except (_TypeError, _ValueError):
            return None

    def hook(event, args):
        if event == "import":
            name = exact(args[0]) if args else None
            if name is None:
                raise refusal(_repr(args[0]) if args else "?")
            if blocked(name):
                raise refusal(name)
        elif event == "open":
            path = path_of(args[0]) if args else None
            if path is None:
                return
            try:
                st = _stat(path)
            except (_OSError, _ValueError):
                st = None
            module = None
            if st is not None:
                module = blocked_files.get((st.st_dev, st.st_ino))
            elif not path.startswith("/") and path.rsplit("/", 1)[-1] in blocked_names:
                module = path
            if module is not None:
                raise _PermissionError(
                    13,
                    "reading %r is blocked by the import policy (config [imports]): it is the module %r"
                    % (path, module),
                )
        elif event == "exec":
            code = args[0] if args else None
            if _type(code) is _code_type:
                filename = exact(code.co_filename) or ""
                name = None
                if filename.startswith("<frozen ") and filename.endswith(">"):
                    name = filename[8:-1]
                    if not blocked(name):
                        name = None
                else:
                    name = blocked_sources.get(filename)
                if name is not None:
                    raise refusal(name)
        elif event in introspection:
            raise _PermissionError(
                13, "%s is refused while the import policy is enforced (config [imports])" % event
            )

    for name in list(sys.modules):
        plain = exact(name)
        if plain is not None and blocked(plain):
            del sys.modules[name]
    sys.meta_path.insert(0, ImportPolicyFinder)
    sys.addaudithook(hook)
