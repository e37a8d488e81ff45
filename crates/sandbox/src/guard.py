# codeloop's import guard: the import policy (config [imports]) enforced
# inside the sandbox before the program's code runs. Installed by a short
# bootstrap (`python -c`) before a program's script, and in each child of a
# fork server before its job. A blocked module is refused in two ways: a
# meta-path finder first in sys.meta_path (a clear ImportError, also for
# importlib.util.find_spec), and an audit hook on the "import" event, which
# no program can remove (sys.addaudithook has no undo), so taking the finder
# out of sys.meta_path does not let the import through. Blocked modules the
# interpreter had already loaded are dropped from sys.modules, so importing
# them again goes through both.
#
# This is a policy, not a wall: code can still reach objects already in
# memory (a library's reference to a module it imported before the guard),
# built-in functions of modules the policy allows (os, io), or native code
# through an allowed module. The sandbox (namespaces, seccomp, Landlock) is
# what holds a hostile program.
def _codeloop_import_guard(policy):
    import sys

    block = tuple(policy.get("block", ()))
    allow = tuple(policy.get("allow", ()))

    # A module's C half goes with it: blocking socket blocks _socket.
    halves = {"_posixsubprocess": "subprocess", "_ctypes": "ctypes"}

    def blocked(name):
        top = name.split(".")[0]
        if top.startswith("_") and len(top) > 1 and decide(name) is None:
            whole = halves.get(top, top[1:])
            if decide(whole):
                return True
        return bool(decide(name))

    def decide(name):
        # The longest entry naming the module or a package above it decides;
        # at equal length, allow wins. None: no entry names it.
        best_len, best = -1, None
        for entries, verdict in ((block, True), (allow, False)):
            for entry in entries:
                if name == entry or name.startswith(entry + "."):
                    if len(entry) > best_len or (len(entry) == best_len and not verdict):
                        best_len, best = len(entry), verdict
        return best

    def refusal(name):
        return ImportError(
            "import of %r is blocked by the import policy (config [imports])" % name,
            name=name,
        )

    class ImportPolicyFinder:
        """Refuses the modules the import policy blocks."""

        @staticmethod
        def find_spec(name, path=None, target=None):
            if blocked(name):
                raise refusal(name)
            return None

    def hook(event, args):
        if event == "import" and args and isinstance(args[0], str) and blocked(args[0]):
            raise refusal(args[0])

    for name in list(sys.modules):
        if blocked(name):
            del sys.modules[name]
    sys.meta_path.insert(0, ImportPolicyFinder)
    sys.addaudithook(hook)
