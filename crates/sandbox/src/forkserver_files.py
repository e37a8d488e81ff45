# codeloop fork server: the files of a job (read back, measured, wiped).
# Put before forkserver.py in the server's one script. A job's tree may be
# as deep as its entry limit allows (thousands of levels): every walk here
# keeps its own stack, never the interpreter's, and stops at a bound.
import os, stat


def read_at_most(fd, n):
    chunks = []
    while n > 0:
        chunk = os.read(fd, min(n, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def read_kept(path, keep):
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return "", "", 0, 0
    try:
        size = os.fstat(fd).st_size
        if size <= 2 * keep:
            return read_at_most(fd, size).decode("utf-8", "replace"), "", 0, size
        head = read_at_most(fd, keep)
        os.lseek(fd, size - keep, os.SEEK_SET)
        tail = read_at_most(fd, keep)
        return head.decode("utf-8", "replace"), tail.decode("utf-8", "replace"), size - 2 * keep, size
    except OSError:
        return "", "", 0, 0
    finally:
        os.close(fd)


def read_collected(path):
    """A regular file the job left, up to 1 MiB, never through a symlink."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return read_at_most(fd, 1 << 20).decode("utf-8", "replace")
    except OSError:
        return None
    finally:
        os.close(fd)


# A walk reads a directory through a path relative to a directory it
# holds open; past this length it opens the directory as a new base, so
# no path it reads comes near the kernel's limit (4096 bytes), however
# deep the tree. Bases stay open while the walk has work beneath them.
REBASE_AT = 512
DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def dir_usage(path, most):
    """(bytes in files, entries) under path; the walk stops past `most`
    entries."""
    total = entries = 0
    try:
        root = os.open(path, DIRECTORY)
    except OSError:
        return 0, 0
    held = {root: 1}  # each base: the walk's items beneath it
    stack = [(root, ".")]

    def release(base):
        held[base] -= 1
        if not held[base]:
            del held[base]
            os.close(base)

    try:
        while stack:
            base, rel = stack.pop()
            try:
                fd = os.open(rel, DIRECTORY, dir_fd=base)
            except OSError:
                release(base)
                continue
            if len(rel) > REBASE_AT:
                release(base)
                base, rel, held[fd] = fd, ".", 1
                fd = os.dup(base)
            try:
                with os.scandir(fd) as listing:
                    for entry in listing:
                        entries += 1
                        if entries > most:
                            return total, entries
                        try:
                            if entry.is_dir(follow_symlinks=False):
                                held[base] += 1
                                stack.append((base, entry.name if rel == "." else rel + "/" + entry.name))
                            else:
                                st = entry.stat(follow_symlinks=False)
                                total += max(st.st_size, st.st_blocks * 512)
                        except OSError:
                            pass
            except OSError:
                pass
            finally:
                os.close(fd)
                release(base)
        return total, entries
    finally:
        for base in held:
            os.close(base)


# A removal moves a directory deeper than this (in levels or bytes) up to
# the top of the tree it removes first (the job's processes are gone:
# nothing else changes the tree), so every path it reads stays short.
MOVE_UP_LEVELS, MOVE_UP_BYTES = 32, 512


def at(call, rel, up, parent, *args):
    """`call(rel, *args)` relative to `up`; where the job took the
    permission it needs away, `parent` (relative to `up`) gets its modes
    back first."""
    try:
        return call(rel, *args, dir_fd=up)
    except PermissionError:
        os.chmod(parent, 0o700, dir_fd=up)
        return call(rel, *args, dir_fd=up)


def listed(rel, up):
    fd = at(os.open, rel, up, rel, DIRECTORY)
    try:
        with os.scandir(fd) as listing:
            return [(entry.name, entry.is_dir(follow_symlinks=False)) for entry in listing]
    finally:
        os.close(fd)


def rename(rel, to, dir_fd):
    os.rename(rel, to, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)


def exists(rel, up):
    try:
        os.lstat(rel, dir_fd=up)
        return True
    except FileNotFoundError:
        return False


def remove_tree(top):
    """Remove the directory `top` and everything beneath it, whatever its
    depth and modes; raise if something stays. Files go as the walk finds
    them, directories deepest first at its end."""
    up = os.open(os.path.dirname(top) or ".", DIRECTORY)
    name = os.path.basename(top)
    dirs, moved = [name], 0
    try:
        for d in dirs:  # grows as the walk goes
            for entry, is_dir in listed(d, up):
                rel = d + "/" + entry
                if not is_dir:
                    at(os.unlink, rel, up, d)
                elif rel.count("/") < MOVE_UP_LEVELS and len(rel) < MOVE_UP_BYTES:
                    dirs.append(rel)
                else:
                    if not moved:
                        os.chmod(name, 0o700, dir_fd=up)  # the moves' destination
                    short = None
                    while short is None or exists(short, up):
                        moved += 1
                        short = "%s/.codeloop-up-%d" % (name, moved)
                    at(rename, rel, up, d, short)
                    dirs.append(short)
        for d in reversed(dirs):
            at(os.rmdir, d, up, os.path.dirname(d) or ".")
    finally:
        os.close(up)


def wipe(path, keep=()):
    """Remove everything in `path` (but the names in `keep`), whatever
    modes a job left on it; raise if something stays."""
    try:
        try:
            listing = list(os.scandir(path))
        except PermissionError:
            os.chmod(path, 0o700, follow_symlinks=False)
            listing = list(os.scandir(path))
    except OSError:
        return
    for entry in listing:
        if entry.name in keep:
            continue
        if entry.is_dir(follow_symlinks=False):
            remove_tree(entry.path)
        else:
            os.unlink(entry.path)
