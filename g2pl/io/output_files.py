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
silently overwriting an input) after the work; `check_output_dir` does the same for `--output-dir`,
whose files (`index.json`, `part-NNNNN.json` or `.npz`, `.csv`, `.parquet`) are each written as above.
"""

from __future__ import annotations

import os
import re
import stat
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO, cast

from g2pl.errors import G2PLError, G2PLRuntimeError
from g2pl.io.writeback import Writeback


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
    return _parent_problem(path, "")


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


#: what `--output-dir DIR` writes into DIR (g2pl.results.streamed): one part per rank (in one of
#: the output formats: the extension says which), and the index
INDEX_NAME = "index.json"
PART_NAME = "part-{:05d}.{}"
_PART_RE = re.compile(r"part-([0-9]{5,})\.(json|npz|csv|parquet)")


def part_name(rank: int, fmt: str = "json") -> str:
    return PART_NAME.format(rank, fmt)


def part_rank(name: str) -> int | None:
    """The rank whose part a file called `name` is (None: not a part's name)."""
    m = _PART_RE.fullmatch(name)
    return int(m.group(1)) if m else None


def is_output_dir_file(name: str) -> bool:
    """Whether a file called `name` inside an output directory is one that `--output-dir` writes."""
    return name == INDEX_NAME or _PART_RE.fullmatch(name) is not None


def output_dir_problem(path: Path) -> str | None:
    """Why `path` cannot be an output directory (made if missing, its own files replaced), or None.

    As for output files, a symbolic link is refused (a link planted where results go would send them
    elsewhere), and so is an index or part file in it that is a link or not a regular file."""
    if path.is_symlink():
        return f"is a symbolic link (to {os.readlink(path)!r}); name the directory itself"
    if not path.exists():
        return _parent_problem(path, f" (to make {path.name!r} in it)")
    if not path.is_dir():
        return "exists and is not a directory; expected a directory (made if missing)"
    if not os.access(path, os.W_OK | os.X_OK):
        return "is not writable"
    try:
        with os.scandir(path) as entries:
            for e in entries:
                if not is_output_dir_file(e.name):
                    continue
                if e.is_symlink():
                    return f"holds {e.name!r}, a symbolic link, where a result file goes; remove it"
                if not e.is_file():
                    return f"holds {e.name!r}, which is not a regular file, where a result file goes; remove it"
    except OSError as e:
        return f"cannot be read: {e.strerror or e}"
    return None


def check_output_dir(flag: str, path: str | Path | None, files: Iterable[tuple[str, str | Path | None]] = (),
                     tool: str = "g2pl") -> None:
    """Refuse (G2PLError, exit 2) an unusable output directory before any work: see
    `output_dir_problem`; also a directory where a result file would replace one of `files` (the
    command's inputs and other outputs, as (what, path) pairs; None: not given)."""
    if path is None:
        return
    if str(path) == "":
        raise G2PLError(f"{flag}: an empty directory name", file=tool)
    if str(path) == "-":
        raise G2PLError(f"{flag} -: standard output cannot hold one file per rank; name a directory", file=tool)
    d = Path(path)
    why = output_dir_problem(d)
    if why is not None:
        raise G2PLError(f"{flag} {d}: {why}", file=tool)
    for what, f in files:
        if f is None or str(f) in ("", "-"):
            continue
        p = Path(f)
        if _same(p, d):
            raise G2PLError(f"{flag} {str(d)!r} is the {what} of this command; choose another directory", file=tool)
        if is_output_dir_file(p.name) and _same(p.parent, d):
            raise G2PLError(f"{flag} {str(d)!r} would replace {str(p)!r}, the {what} of this command; "
                            "choose another directory", file=tool)


def write_atomic(path: str | Path, data: str | bytes) -> None:
    """Write `data` to `path` whole or not at all (see the module docstring).

    An OS error (disk full, permissions) is a G2PLRuntimeError (exit 1) naming the file, with
    no temporary or partial file left behind.
    """
    blob = data.encode() if isinstance(data, str) else data
    with output_file(path) as f:
        f.write(blob)


@contextmanager
def output_file(path: str | Path) -> Iterator[BinaryIO]:
    """`path` open for writing piece by piece, as `write_atomic` writes it: a regular file replaced
    whole when the block ends (nothing left behind if it fails), a device or FIFO written in place;
    a link or directory refused.  For outputs too large to hold in memory before writing."""
    if str(path) == "":
        raise G2PLError("an empty output file name")
    path = Path(path)
    why = output_problem(path)
    if why is not None:
        raise G2PLError(why, file=str(path))
    if _special(path):
        try:
            with open(path, "wb") as f:
                yield f
        except OSError as e:
            raise _write_error(path, e) from None
        return
    with atomic_file(path) as f:
        yield f


def _write_error(path: Path, e: OSError) -> G2PLRuntimeError:
    return G2PLRuntimeError(f"cannot write the file: {e.strerror or e}", file=str(path))


@contextmanager
def atomic_file(path: Path) -> Iterator[BinaryIO]:
    """A new binary file that replaces `path` whole when the block ends (synced, with the umask's
    permissions), or leaves nothing behind if it fails: an OS error becomes a G2PLRuntimeError naming
    `path`. Used by every output written in place of a file (results, stats, .g2g graphs).  Its pages
    go to the disk as it is written (g2pl.io.writeback), so the final sync waits for the last few only."""
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as e:
        raise _write_error(path, e) from None
    try:
        with os.fdopen(fd, "wb") as f:
            yield cast(BinaryIO, Writeback(f))  # (a file: every other attribute is f's)
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


def _parent_problem(path: Path, purpose: str) -> str | None:
    """Why `path` cannot be created in its directory (missing, or not writable), or None."""
    parent = path.parent
    if not parent.is_dir():
        return f"the directory {str(parent)!r} does not exist"
    if not os.access(parent, os.W_OK | os.X_OK):
        return f"the directory {str(parent)!r} is not writable{purpose}"
    return None
