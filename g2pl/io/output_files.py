"""Writing output files safely: checked before any work, replaced atomically, never through a link.

Every file g2pl writes (`--output`, `--stats`, `-o`, `--plot`, `--dot`, `--svg`,
checkpoint files) goes through `write_atomic`: the data goes to a temporary file
created exclusively (O_EXCL, so a planted file or link of that name is never
opened) in the target's own directory, is flushed to disk, and is renamed over
the target, so a reader sees the old file or the whole new one and a failure
leaves neither a partial target nor a temporary behind.  Targets that are not
regular files are never replaced: a device, FIFO or socket (`/dev/null`,
`/dev/stdout`) is written directly; a symbolic link to a regular file is
refused, as a link planted where a result goes would otherwise redirect it.
(A `.g2g` graph from `g2pl convert` is the exception: it is written by seeking
and loaded from disk, so a device or FIFO is refused there; see
`g2pl.graph.binary.regular_output_problem`.)

`check_outputs` runs before a command compiles or loads anything: an empty
name, a directory, a missing or read-only parent, a link, two outputs naming
one file, or an output that is one of the command's inputs (the program, the
graph file) is refused with exit status 2 instead of being found out (or
silently overwriting an input) after the work.
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from g2pl.errors import G2PLError, G2PLRuntimeError


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _special(path: Path) -> bool:
    """True when `path` is (or links to) an existing device, FIFO or socket: written in place."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


def output_problem(path: Path) -> str | None:
    """Why `path` cannot be an output file, or None."""
    if path.is_symlink():
        if _special(path):
            return None  # /dev/stdout and the like: written through, nothing is replaced
        return f"is a symbolic link (to {os.readlink(path)!r}); name the file itself"
    if path.is_dir():
        return "is a directory; expected a file name"
    if _special(path):
        return None
    parent = path.parent
    if not parent.is_dir():
        return f"the directory {str(parent)!r} does not exist"
    if not os.access(parent, os.W_OK | os.X_OK):
        return f"the directory {str(parent)!r} is not writable"
    return None


def _same(a: Path, b: Path) -> bool:
    """Whether two paths name one file (hard links and links included), existing or not."""
    try:
        if a.exists() and b.exists():
            return os.path.samefile(a, b)
    except OSError:
        pass
    return os.path.realpath(a) == os.path.realpath(b)


def check_outputs(outputs: Iterable[tuple[str, str | Path | None]], inputs: Iterable[str | Path | None] = (),
                  tool: str = "g2pl") -> None:
    """Refuse (G2PLError, exit 2) unusable output paths before any work.

    `outputs`: (flag, path) pairs; None is "not given" and `-` is standard output (both skipped).
    `inputs`: files the command reads, which no output may overwrite.
    """
    named = [(flag, p) for flag, p in outputs if p is not None and str(p) != "-"]
    for flag, p in named:
        if str(p) == "":  # Path("") would be "."
            raise G2PLError(f"{flag}: an empty file name", file=tool)
    given = [(flag, Path(p)) for flag, p in named]
    for flag, p in given:
        why = output_problem(p)
        if why is not None:
            raise G2PLError(f"{flag} {p}: {why}", file=tool)
    ins = [Path(p) for p in inputs if p is not None and str(p) != ""]
    for flag, p in given:
        if _special(p):
            continue
        for src in ins:
            if _same(p, src):
                raise G2PLError(f"{flag} {str(p)!r} is an input of this command ({src}); "
                                "choose another output file", file=tool)
    for i, (flag, p) in enumerate(given):
        for flag2, q in given[i + 1:]:
            if not _special(p) and _same(p, q):
                raise G2PLError(f"{flag} and {flag2} name the same file {str(p)!r}; give each its own",
                                file=tool)


def write_atomic(path: str | Path, data: str | bytes) -> None:
    """Write `data` to `path` whole or not at all (see the module docstring).

    An OS error (disk full, permissions) is a G2PLRuntimeError (exit 1) naming the file, with
    no temporary or partial file left behind.
    """
    if str(path) == "":
        raise G2PLError("an empty output file name")
    path = Path(path)
    blob = data.encode() if isinstance(data, str) else data
    why = output_problem(path)
    if why is not None:
        raise G2PLError(why, file=str(path))
    if _special(path):
        try:
            with open(path, "wb") as f:
                f.write(blob)
        except OSError as e:
            raise _write_error(path, e) from None
        return
    with atomic_file(path) as f:
        f.write(blob)


def _write_error(path: Path, e: OSError) -> G2PLRuntimeError:
    return G2PLRuntimeError(f"cannot write the file: {e.strerror or e}", file=str(path))


@contextmanager
def atomic_file(path: Path) -> Iterator[BinaryIO]:
    """A new binary file that replaces `path` whole when the block ends (synced, with the umask's
    permissions), or leaves nothing behind if it fails: an OS error becomes a G2PLRuntimeError naming
    `path`. Used by every output written in place of a file (results, stats, .g2g graphs)."""
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as e:
        raise _write_error(path, e) from None
    try:
        with os.fdopen(fd, "wb") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(e, OSError):
            raise _write_error(path, e) from None
        raise
