"""Checkpoint and resume at superstep boundaries (Pregel style): a failure loses nothing.

Layout of a checkpoint directory::

    DIR/lock.json              locked by the run using the directory (who: pid, host, start time)
    DIR/manifest.json          written last, atomically: which checkpoint is complete, what run it is
    DIR/ss<K>/rank<R>.json     one per rank: state to enter, scalars, runtime counters (plain JSON)
    DIR/ss<K>/rank<R>.npz      one per rank: the vertex and edge arrays (plain .npy members)

Every file is written to a temporary name and renamed, and the manifest is
replaced only after every rank's files of that checkpoint exist (a barrier),
so a process killed at any moment leaves either the previous or the new
checkpoint complete.  The manifest holds hashes of the program, the graph,
the arguments, the seed and the rank count; resuming a different run is
refused with a message that says what differs.

A checkpoint directory may come from someone else (a shared cluster file
system), so reading one never runs code and never leaves the directory: no
pickle anywhere (arrays are loaded with `allow_pickle=False`, everything else
is JSON checked against the fixed schema of checkpoint_schema.py), file names are built from validated
numbers rather than taken from the manifest, and every value is checked
against the compiled program's variable types and this rank's graph part
before the run resumes.  Anything else is a G2PLError (exit status 2) that
names the file and what is wrong.

One run at a time: rank 0 holds an exclusive lock (flock) on DIR/lock.json
from before the graph is scattered until the run ends (`hold_directory`), so
a second run on the same directory, whose cleanup of old checkpoints would
delete the first one's, is refused at once.  The kernel drops the lock when
the process dies, so a killed run never leaves the directory locked; the
other ranks of a run write only their own files, under rank 0's lock.

Nothing in the directory is ever opened unless it is what it should be:
files are read through real directories only (every component opened with
O_NOFOLLOW relative to the one before, so no link is followed and none can
be swapped in), after an lstat says they are regular files (a FIFO would
block, a device could act on being opened), non-blocking, and with a size
cap; files are written to a new exclusively created name and renamed over
the old entry, which is never opened.  So no read or write can block, and
--time-limit always fires.  Planted entries where checkpoint files go (a
link, FIFO or directory as manifest.json, a link as ss<K>) are refused
before the run starts.  Errors one rank meets are raised on every rank
(`_agree`), so no rank waits for ever in a collective for one that stopped.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import io
import json
import os
import re
import secrets
import shutil
import socket
import stat
import time
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from g2pl.errors import G2PLError, G2PLRuntimeError
from g2pl.io.npz_check import npz_headers
from g2pl.runtime.checkpoint_schema import (
    FORMAT,
    Bad,
    Shapes,
    assigned_on_entry,
    check_dict,
    check_int,
    decode_env,
    decode_runtime,
    encode_env,
    manifest_schema,
)

_MAX_JSON_BYTES = 64 * 2**20  # rank files hold scalars and counters only


def graph_digest(graph) -> str:
    """A hash of the graph's content (IDs, endpoints, weights, direction), independent of its file name
    and of how the graph is split among ranks (`content_sums` of every vertex and edge)."""
    step = 1 << 20
    totals = [0, 0]
    ids = np.asarray(graph.ids, dtype=np.int64)
    for lo in range(0, max(graph.n, graph.m), step):  # bounded temporaries
        sums = content_sums(ids[lo:lo + step], ids[graph.src[lo:lo + step]], ids[graph.dst[lo:lo + step]],
                            graph.weight[lo:lo + step])
        totals = [t + x for t, x in zip(totals, sums, strict=True)]
    return content_digest(totals, graph.n, graph.m, graph.directed)


def content_sums(vertex_ids, u_ids, v_ids, weights) -> tuple[int, int]:
    """Sums of a hash per vertex (its ID) and per edge (its endpoints' IDs and weight): order-free, so
    the parts of a graph on any number of ranks add up to the whole graph's sums."""
    with np.errstate(over="ignore"):
        hv = _mix(np.asarray(vertex_ids).astype(np.uint64) + np.uint64(1))
        w = np.ascontiguousarray(weights, dtype=np.float64).view(np.uint64)
        he = _mix(_mix(np.asarray(u_ids).astype(np.uint64)) ^ (np.asarray(v_ids).astype(np.uint64)
                                                                 * np.uint64(0x9E3779B97F4A7C15))) ^ _mix(w)
        return int(hv.sum(dtype=np.uint64)), int(he.sum(dtype=np.uint64))


def content_digest(sums, n: int, m: int, directed: bool) -> str:
    """The digest of a graph from its `content_sums` (summed over its parts)."""
    total = [int(x) % (1 << 64) for x in sums]
    return hashlib.sha256(repr((total, int(n), int(m), bool(directed))).encode()).hexdigest()


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finalizer (wrap-around intended)."""
    x = x ^ (x >> np.uint64(30))
    x = x * np.uint64(0xBF58476D1CE4E5B9)
    x = x ^ (x >> np.uint64(27))
    x = x * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def run_identity(source: str, entry: str, graph_hash: str, args: dict, seed: int, ranks: int, opt: int,
                 disable: tuple[str, ...]) -> dict:
    return {
        "program": hashlib.sha256(source.encode()).hexdigest(),
        "entry": entry,
        "graph": graph_hash,
        "args": hashlib.sha256(json.dumps(args, sort_keys=True, default=str).encode()).hexdigest(),
        "seed": int(seed),
        "ranks": int(ranks),
        "opt": int(opt),
        "disable": sorted(disable),
    }


# ---------------------------------------------------------------- files

MANIFEST = "manifest.json"
LOCK = "lock.json"
_SUB = re.compile(r"ss[0-9]+")
_RANK_FILE = re.compile(r"rank[0-9]+\.(json|npz)")
_MEMBER = re.compile(r"a[0-9]{1,9}\.npy")
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_O_DIR = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _O_CLOEXEC
_O_READ = os.O_RDONLY | _O_NOFOLLOW | _O_NONBLOCK | _O_CLOEXEC
_KINDS = ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISDIR, "a directory"), (stat.S_ISREG, "a regular file"),
          (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"))


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "a special file")


def _lstat_at(dfd: int, name: str) -> os.stat_result | None:
    try:
        return os.lstat(name, dir_fd=dfd)
    except FileNotFoundError:
        return None


def _open_root(directory: Path) -> int:
    """The checkpoint directory itself (the path the user named may be a link: it is theirs)."""
    try:
        return os.open(directory, _O_DIR | _O_NONBLOCK)
    except OSError as e:
        raise G2PLError(f"cannot open the checkpoint directory ({e.strerror})", file=str(directory)) from None


def _open_sub(root_fd: int, name: str, directory: Path) -> int:
    """The subdirectory `name` of the checkpoint directory: a real directory, never a link."""
    try:
        return os.open(name, _O_DIR | _O_NOFOLLOW | _O_NONBLOCK, dir_fd=root_fd)
    except OSError as e:
        st = _lstat_at(root_fd, name)
        what = "missing" if st is None else _kind(st.st_mode)
        raise G2PLError(f"{name} in the checkpoint directory is not a plain directory ({what}, "
                        f"{e.strerror}); refusing to write through it", file=str(directory)) from None


def _link_error(root: Path, rel: str, dfd: int, name: str) -> G2PLError:
    try:
        target = os.readlink(name, dir_fd=dfd)
    except OSError:
        target = "?"
    real_root = os.path.realpath(root)
    inside = os.path.commonpath([real_root, os.path.realpath(root / rel)]) == real_root
    where = "lies outside the checkpoint directory" if not inside else "is a link inside the checkpoint directory"
    return G2PLError(f"checkpoint file {where}: {rel} is a symbolic link (to {target[:200]!r}); checkpoints "
                     "are read through real files and directories only", file=str(root / rel))


def _read_confined(root: Path, rel: str, limit: int) -> bytes:
    """The bytes of root/rel, at most `limit`: a regular file reached through real directories of
    `root`.  Each component is lstat-ed, then opened relative to the one before with O_NOFOLLOW (no
    link followed, none swapped in between) and O_NONBLOCK, and must be the file lstat saw: nothing
    that could block (a FIFO) or act on being opened (a device) is ever opened."""
    path = root / rel
    parts = rel.split("/")
    fd = _open_root(root)
    try:
        for i, name in enumerate(parts):
            last = i == len(parts) - 1
            shown = "/".join(parts[:i + 1])
            st = _lstat_at(fd, name)
            if st is None:
                raise G2PLError(f"checkpoint file missing ({shown} does not exist)", file=str(path))
            if stat.S_ISLNK(st.st_mode):
                raise _link_error(root, shown, fd, name)
            if not (stat.S_ISREG if last else stat.S_ISDIR)(st.st_mode):
                want = "a regular file" if last else "a directory"
                raise G2PLError(f"checkpoint file {shown} is {_kind(st.st_mode)}, not {want}", file=str(path))
            try:
                nfd = os.open(name, _O_READ if last else _O_DIR | _O_NOFOLLOW | _O_NONBLOCK, dir_fd=fd)
            except OSError as e:
                raise G2PLError(f"checkpoint file unreadable ({shown}: {e.strerror})", file=str(path)) from None
            os.close(fd)
            fd = nfd
            now = os.fstat(fd)
            if (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
                raise G2PLError(f"checkpoint file {shown} changed while it was opened", file=str(path))
        if os.fstat(fd).st_size > limit:
            raise G2PLError(f"checkpoint file is larger than the {limit} bytes this run can hold", file=str(path))
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as e:
        raise G2PLError(f"checkpoint file unreadable ({e.strerror})", file=str(path)) from None
    finally:
        os.close(fd)
    if size > limit:
        raise G2PLError(f"checkpoint file is larger than the {limit} bytes this run can hold", file=str(path))
    return b"".join(chunks)


def _write_at(dfd: int, name: str, blob: bytes, path: Path) -> None:
    """Replace the entry `name` of directory `dfd` with a regular file holding `blob`, whole or not at
    all: written to a new, exclusively created name (O_EXCL|O_NOFOLLOW: nothing planted is opened),
    synced, and renamed over `name`, which is never opened (a FIFO or link there is replaced, not
    written through).  An OS error is a G2PLRuntimeError (exit 1) naming `path`, nothing left behind."""
    tmp = f".{name}.{secrets.token_hex(6)}.tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_CLOEXEC, 0o666, dir_fd=dfd)
    except OSError as e:
        raise G2PLRuntimeError(f"cannot write the file: {e.strerror}", file=str(path)) from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(blob)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
    except BaseException as e:
        try:
            os.unlink(tmp, dir_fd=dfd)
        except OSError:
            pass
        if isinstance(e, OSError) and e.errno in (errno.EISDIR, errno.ENOTEMPTY, errno.EEXIST):
            raise G2PLError(f"{path.name} is a directory in the checkpoint directory; refusing to replace it",
                            file=str(path)) from None
        if isinstance(e, OSError):
            raise G2PLRuntimeError(f"cannot write the file: {e.strerror}", file=str(path)) from None
        raise
    try:
        os.fsync(dfd)  # the rename itself is durable before the manifest points at the file
    except OSError:
        pass


def _load_npz(blob: bytes, limit: int, path: Path) -> dict[str, np.ndarray]:
    """Arrays of an .npz held in memory, as `np.savez` writes them: stored (uncompressed) members
    a<K>.npy, each a plain array of numbers or bools (no pickle); sizes checked from the zip
    directory and the .npy headers before any data is read.  Exact dtypes are decode_env's check."""
    try:
        with zipfile.ZipFile(io.BytesIO(blob)) as zf:
            infos = zf.infolist()
            names = [i.filename for i in infos]
            for info in infos:
                if not _MEMBER.fullmatch(info.filename) or names.count(info.filename) > 1:
                    raise G2PLError(f"unexpected member {info.filename[:60]!r} (a checkpoint holds arrays "
                                    "a0.npy, a1.npy, ... once each)", file=str(path))
                if info.file_size > limit:  # also bounds what reading a compressed member's header inflates
                    raise G2PLError(f"member {info.filename!r} is larger than this rank's graph part allows "
                                    f"({limit} bytes)", file=str(path))
            heads = npz_headers(zf)
            total = sum(h.nbytes for h in heads.values())
            if total > limit:
                raise G2PLError(f"checkpoint arrays would take {total} bytes, more than this rank's "
                                f"graph part allows ({limit})", file=str(path))
            out = {}
            for key, h in heads.items():
                info = zf.getinfo(h.member)
                if info.compress_type != zipfile.ZIP_STORED or info.flag_bits & 0x1:
                    raise G2PLError(f"member {info.filename!r} is compressed or encrypted; checkpoint "
                                    "arrays are stored as they are", file=str(path))
                if h.dtype.kind not in "biuf":  # no object arrays (pickle); exact dtypes: decode_env
                    raise G2PLError(f"array {key!r} has dtype {h.dtype}; only numbers and bools are accepted",
                                    file=str(path))
                with zf.open(h.member) as f:
                    out[key] = np.lib.format.read_array(f, allow_pickle=False)
            return out
    except G2PLError:
        raise
    except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile, zipfile.LargeZipFile, RuntimeError,
            OverflowError, MemoryError, TypeError, SyntaxError, IndexError) as e:
        raise G2PLError(f"not a valid checkpoint array file ({type(e).__name__}: {str(e)[:200]})",
                        file=str(path)) from None


# ---------------------------------------------------------------- one run at a time


def _pack(err: G2PLError | None) -> tuple | None:
    return None if err is None else (isinstance(err, G2PLRuntimeError), err.message, err.file)


def _agree(comm, err: G2PLError | None, value=None) -> list:
    """Every rank's `value`, or, if any rank failed (`err`), the first failing rank's error raised on
    every rank: a rank that stopped alone would leave the others waiting in a collective for ever."""
    if comm.size == 1:
        if err is not None:
            raise err
        return [value]
    got = comm.allgather((_pack(err), value))
    for packed, _v in got:
        if packed is not None:
            if err is not None and packed == _pack(err):
                raise err
            runtime, message, file = packed
            kind: type[G2PLError] = G2PLRuntimeError if runtime else G2PLError
            raise kind(message, file=file)
    return [v for _p, v in got]


def _holder(fd: int) -> str:
    """Who holds the lock, as the holder wrote it into the lock file (best effort)."""
    try:
        info = json.loads(os.pread(fd, 4096, 0))
        pid, host, since = info["pid"], info["host"], info["since"]
        if isinstance(pid, int) and isinstance(host, str) and isinstance(since, str):
            return f" (pid {pid} on {host[:64]}, since {since[:32]})"
    except (OSError, ValueError, TypeError, KeyError, RecursionError):
        pass
    return ""


def _lock(root_fd: int, directory: Path) -> int:
    """An fd holding the exclusive lock of the checkpoint directory (closing it unlocks), or G2PLError."""
    st = _lstat_at(root_fd, LOCK)
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise G2PLError(f"{LOCK} in the checkpoint directory is {_kind(st.st_mode)}, not a regular file; "
                        "remove it or choose another directory", file=str(directory))
    flags = _O_NOFOLLOW | _O_NONBLOCK | _O_CLOEXEC
    try:
        try:
            fd = os.open(LOCK, os.O_RDWR | os.O_CREAT | flags, 0o666, dir_fd=root_fd)
        except PermissionError as e:  # another user's lock file: locking it needs no write access
            try:
                fd = os.open(LOCK, os.O_RDONLY | flags, dir_fd=root_fd)
            except OSError:
                raise e from None
    except OSError as e:
        raise G2PLError(f"cannot lock the checkpoint directory ({LOCK}: {e.strerror})",
                        file=str(directory)) from None
    try:
        now = os.fstat(fd)
        if not stat.S_ISREG(now.st_mode) or now.st_nlink != 1:  # (a hard link would be written through)
            raise G2PLError(f"{LOCK} in the checkpoint directory is not a plain regular file"
                            f"{' (it has other hard links)' if now.st_nlink != 1 else ''}; remove it",
                            file=str(directory))
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise G2PLError(f"the checkpoint directory is in use: another run holds its lock{_holder(fd)}; "
                            "wait for that run to end or choose another directory", file=str(directory)) from None
        except OSError as e:
            raise G2PLError(f"cannot lock the checkpoint directory ({e.strerror})", file=str(directory)) from None
        try:  # who holds it, for the message a second run prints (the lock itself is the flock)
            info = {"pid": os.getpid(), "host": socket.gethostname(),
                    "since": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps(info).encode(), 0)
        except OSError:
            pass
    except BaseException:
        os.close(fd)
        raise
    return fd


def _check_entries(root_fd: int, directory: Path) -> None:
    """Refuse, before the run starts, anything planted where checkpoint files go: manifest.json must
    be a regular file, each ss<K> a real directory and its rank files regular files."""
    def refuse(name: str, st: os.stat_result, want: str) -> G2PLError:
        what = _kind(st.st_mode)
        if stat.S_ISLNK(st.st_mode):
            real_root = os.path.realpath(directory)
            outside = os.path.commonpath([real_root, os.path.realpath(directory / name)]) != real_root
            try:
                what += f" (to {os.readlink(name, dir_fd=root_fd)[:200]!r}"
                what += ", which lies outside the checkpoint directory)" if outside else ")"
            except OSError:
                pass
        return G2PLError(f"{name} in the checkpoint directory is {what}, not {want}; refusing to read or "
                         "write through it (remove it or choose another directory)", file=str(directory))

    with os.scandir(root_fd) as entries:
        names = [e.name for e in entries]
    for name in names:
        st = _lstat_at(root_fd, name)
        if st is None:
            continue
        if name == MANIFEST and not stat.S_ISREG(st.st_mode):
            raise refuse(name, st, "a regular file")
        if not _SUB.fullmatch(name):
            continue
        if not stat.S_ISDIR(st.st_mode):
            raise refuse(name, st, "a plain directory")
        sub_fd = _open_sub(root_fd, name, directory)
        try:
            with os.scandir(sub_fd) as entries:
                inner = [e.name for e in entries if _RANK_FILE.fullmatch(e.name)]
            for f in inner:
                fst = _lstat_at(sub_fd, f)
                if fst is not None and not stat.S_ISREG(fst.st_mode):
                    raise refuse(f"{name}/{f}", fst, "a regular file")
        finally:
            os.close(sub_fd)


def _acquire(directory: Path, resume: bool) -> int:
    """Rank 0's part of `hold_directory`: the directory checked (created for --checkpoint), locked and
    free of planted entries; returns the lock's fd."""
    check_directory(directory, resume)
    if not resume:
        try:
            directory.mkdir(exist_ok=True)
        except OSError as e:
            raise G2PLError(f"cannot create the checkpoint directory ({e.strerror})", file=str(directory)) from None
    root_fd = _open_root(directory)
    try:
        lock_fd = _lock(root_fd, directory)
        try:
            _check_entries(root_fd, directory)
        except BaseException:
            os.close(lock_fd)
            raise
    except OSError as e:
        raise G2PLError(f"cannot read the checkpoint directory ({e.strerror})", file=str(directory)) from None
    finally:
        os.close(root_fd)
    return lock_fd


@contextmanager
def hold_directory(checkpoint: dict | None, comm) -> Iterator[None]:
    """Hold the checkpoint directory of a run (`checkpoint`: the driver's {"dir", "resume", ...}, or
    None) for as long as the block runs: locked by rank 0 only, as a run's ranks share it; refused
    on every rank alike (exit 2) if another run holds it or something is planted in it."""
    if checkpoint is None:
        yield
        return
    fd, err = None, None
    if comm.rank == 0:
        try:
            fd = _acquire(Path(checkpoint["dir"]), bool(checkpoint["resume"]))
        except G2PLError as e:
            err = e
    try:
        _agree(comm, err)
        yield
    finally:
        if fd is not None:
            os.close(fd)  # unlocks (as the process's exit would)


def check_directory(path: str | Path, resume: bool, flag: str = "") -> None:
    """A checkpoint directory argument: for --resume one that exists (never created), for
    --checkpoint a directory or a new name in an existing one. G2PLError (exit 2) otherwise."""
    p = Path(path)
    what = f"{flag} {str(path)!r}: " if flag else ""
    if str(path) == "":
        raise G2PLError(f"{flag}: an empty directory name", file="g2pl run" if flag else None)
    if p.exists() and not p.is_dir():
        raise G2PLError(f"{what}the checkpoint path is not a directory", file="g2pl run" if flag else str(p))
    if resume and not p.is_dir():
        raise G2PLError(f"{what}no such checkpoint directory", file="g2pl run" if flag else str(p))
    if not resume and not p.exists() and not p.parent.is_dir():
        raise G2PLError(f"{what}the directory {str(p.parent)!r} does not exist", file="g2pl run" if flag else str(p))


class Checkpointer:
    """Saves and restores one rank's state; rank 0 owns the manifest."""

    def __init__(self, directory: str | Path, every: int, identity: dict, comm, resume: bool, module) -> None:
        self.module = module  # the compiled program: its variables' types and states check a resumed state
        self.dir = Path(directory)
        self.every = max(1, int(every))
        self.identity = identity
        self.comm = comm
        self.resume_requested = resume
        self.saved: list[int] = []
        err = None
        try:
            check_directory(self.dir, resume)
            if comm.rank == 0 and not resume:  # (made already when the driver holds the directory)
                try:
                    self.dir.mkdir(parents=True, exist_ok=True)
                except OSError as e:
                    raise G2PLError(f"cannot create the checkpoint directory ({e.strerror})",
                                    file=str(self.dir)) from None
        except G2PLError as e:
            err = e
        _agree(comm, err)

    # ---- manifest

    def manifest(self) -> dict | None:
        p = self.dir / MANIFEST
        try:
            p.lstat()
        except FileNotFoundError:
            return None
        except OSError as e:
            raise G2PLError(f"cannot read the checkpoint directory ({e.strerror})", file=str(self.dir)) from None
        text = _read_confined(self.dir, MANIFEST, 2**20)
        try:
            return manifest_schema(json.loads(text))
        except (ValueError, RecursionError) as e:
            raise G2PLError(f"the checkpoint manifest is not valid JSON ({str(e)[:200]})", file=str(p)) from None
        except Bad as e:
            raise G2PLError(f"the checkpoint manifest is malformed: {e}", file=str(p)) from None

    def check_resumable(self) -> dict:
        """The manifest of a checkpoint of exactly this run, or a G2PLError saying what differs."""
        m = self.manifest()
        if m is None:
            raise G2PLError("no complete checkpoint here (manifest.json is missing)", file=str(self.dir))
        diff = [k for k, v in self.identity.items() if m["run"].get(k) != v]
        if diff:
            raise G2PLError(
                "the checkpoint belongs to a different run: " + ", ".join(diff)
                + (" differ " if len(diff) > 1 else " differs ")
                + "(program, graph, arguments, seed, rank count and optimization level must all match)",
                file=str(self.dir))
        return m

    # ---- saving

    def due(self, superstep_count: int) -> bool:
        return superstep_count > 0 and superstep_count % self.every == 0 and superstep_count not in self.saved

    def _make_sub(self, name: str) -> None:
        """Rank 0: DIR/<name> made (or kept) as a real directory: a link planted there is refused."""
        root_fd = _open_root(self.dir)
        try:
            try:
                os.mkdir(name, dir_fd=root_fd)
            except FileExistsError:
                pass
            except OSError as e:
                raise G2PLRuntimeError(f"cannot create {name} in the checkpoint directory ({e.strerror})",
                                       file=str(self.dir)) from None
            os.close(_open_sub(root_fd, name, self.dir))
        finally:
            os.close(root_fd)

    def save(self, superstep_count: int, state: int, names: tuple[str, ...], values: tuple, runtime: dict) -> None:
        comm, sub = self.comm, f"ss{superstep_count}"
        err = None
        if comm.rank == 0:
            try:
                self._make_sub(sub)
            except G2PLError as e:
                err = e
        _agree(comm, err)  # the directory exists before any rank writes into it
        env, arrays = encode_env(names, values)
        buf = io.BytesIO()
        np.savez(buf, **arrays)  # type: ignore[arg-type]  # NumPy's stubs match a **dict to `allow_pickle: bool`
        doc = json.dumps({"superstep": superstep_count, "state": int(state), "env": env, "runtime": runtime},
                         allow_nan=False).encode()
        mine, err = {}, None
        try:
            root_fd = _open_root(self.dir)
            try:
                sub_fd = _open_sub(root_fd, sub, self.dir)
            finally:
                os.close(root_fd)
            try:
                for name, blob in ((f"rank{comm.rank}.json", doc), (f"rank{comm.rank}.npz", buf.getvalue())):
                    _write_at(sub_fd, name, blob, self.dir / sub / name)
                    mine[name] = hashlib.sha256(blob).hexdigest()
            finally:
                os.close(sub_fd)
        except G2PLError as e:
            err = e
        digests = _agree(comm, err, mine)  # every rank's files are complete before the manifest points at them
        err = None
        if comm.rank == 0:
            try:
                files = {k: v for d in digests for k, v in d.items()}
                manifest = {"format": FORMAT, "run": self.identity, "superstep": superstep_count, "files": files}
                root_fd = _open_root(self.dir)
                try:
                    _write_at(root_fd, MANIFEST, json.dumps(manifest, indent=1).encode(), self.dir / MANIFEST)
                finally:
                    os.close(root_fd)
                for old in self.saved[:-1]:  # keep the newest two checkpoints (this run's own: it holds the lock)
                    shutil.rmtree(self.dir / f"ss{old}", ignore_errors=True)
            except G2PLError as e:
                err = e
        self.saved = [*self.saved[-1:], superstep_count]  # the two on disk: bounded however long the run
        _agree(comm, err)

    # ---- loading

    def load(self, lg) -> dict:
        """This rank's saved state, checked against the compiled module and the graph part `lg`:
        {"superstep", "state", "env": {name: value}, "runtime": counters}.  Collective: what must be
        the same on every rank (the state, scalars, which variables are set, rand() counters, the
        counts of pending remote requests) is compared across ranks, and any rank's error is raised
        on every rank."""
        data, err = None, None
        try:
            data = self._load(lg)
        except G2PLError as e:
            err = e
        views = _agree(self.comm, err, None if data is None else _replicated(data))
        assert data is not None  # _agree raised every rank's error
        _check_ranks(views)
        self.saved.append(data["superstep"])
        return data

    def _load(self, lg) -> dict:
        module = self.module
        m = self.check_resumable()
        sub = f"ss{m['superstep']}"
        r = self.comm.rank
        shapes = Shapes(lg.n, lg.n_ext, lg.m, lg.size, _request_kinds(module))
        # every array is at most one value per vertex or edge of the whole graph: a bound on what
        # a checkpoint of this run can hold, so a crafted one cannot make this rank allocate more
        limit = 8 * (lg.n_global + lg.m_global + lg.n_ext + lg.m + 1024) * (len(module.VARIABLES) * 5 + 1)
        blobs = {}
        for name, cap in ((f"rank{r}.json", _MAX_JSON_BYTES), (f"rank{r}.npz", limit + 2**20)):
            blob = _read_confined(self.dir, f"{sub}/{name}", cap)
            if hashlib.sha256(blob).hexdigest() != m["files"].get(name):
                raise G2PLError("checkpoint file does not match its manifest (corrupted?)",
                                file=str(self.dir / sub / name))
            blobs[name] = blob
        path = self.dir / sub / f"rank{r}.json"
        try:
            doc = json.loads(blobs[f"rank{r}.json"])
        except (ValueError, RecursionError) as e:
            raise G2PLError(f"checkpoint file is not valid JSON ({str(e)[:200]})", file=str(path)) from None
        try:
            doc = check_dict(doc, "the file")
            if check_int(doc.get("superstep"), "`superstep`", 1) != m["superstep"]:
                raise Bad("`superstep` differs from the manifest's")
            state = check_int(doc.get("state"), "`state`")
            if state not in module.STATE_LINES:
                raise Bad(f"`state` {state} is not a state of the program")
            arrays = _load_npz(blobs[f"rank{r}.npz"], limit, self.dir / sub / f"rank{r}.npz")
            names = tuple(module.VARIABLES)
            transitions, sets = getattr(module, "TRANSITIONS", None), getattr(module, "STATE_SETS", None)
            assigned = None if transitions is None or sets is None else \
                assigned_on_entry(names, transitions, sets, state)
            env = decode_env(doc.get("env"), arrays, names, tuple(module.VARIABLE_TYPES), shapes, assigned, state)
            runtime = decode_runtime(doc.get("runtime"), module.RAND_SITES, set(module.STATE_LINES))
        except RecursionError:
            raise G2PLError("checkpoint file is malformed: nested too deeply", file=str(path)) from None
        except Bad as e:
            raise G2PLError(f"checkpoint file is malformed: {e}", file=str(path)) from None
        if len(runtime["per_superstep"]) + runtime["left_out"][0] != m["superstep"]:
            raise G2PLError("checkpoint statistics do not cover its supersteps", file=str(path))
        return {"superstep": m["superstep"], "state": state, "env": env, "runtime": runtime, "path": str(path)}


def _request_kinds(module) -> tuple[str, ...]:
    """The domains (vertex, edge) the program's remote reads request from: how long a pending
    request's IDs are (both where the module does not say)."""
    doms = {getattr(v, "dom", "") for v in vars(module).values() if getattr(v, "kind", None) == "remote_read"}
    kinds = tuple(k for d, k in (("V", "vertex"), ("E", "edge")) if d in doms)
    return kinds or ("vertex", "edge")


def _scalar_key(v) -> tuple:
    if isinstance(v, float):
        return ("float", v.hex())
    return (type(v).__name__, int(v))


def _replicated(data: dict) -> dict:
    """What of a rank's loaded state every rank of the run holds alike (and the counts that pair ranks)."""
    env = data["env"]
    return {
        "path": data["path"],
        "the state to enter": data["state"],
        "the unset variables": sorted(k for k, v in env.items() if v is None),
        "the scalar variables": {k: _scalar_key(v) for k, v in env.items()
                                 if v is not None and not isinstance(v, (dict, np.ndarray))},
        "the rand() counters": data["runtime"]["rand_counts"],
        "requests": {k: (v["send_counts"].tolist(), v["recv_counts"].tolist()) for k, v in env.items()
                     if isinstance(v, dict)},
    }


def _check_ranks(views: list[dict]) -> None:
    """Refuse (on every rank alike: every rank sees all views) rank files that disagree: ranks that
    took different branches or exchanged different counts would wait for each other for ever."""
    first = views[0]
    for v in views[1:]:
        for what in ("the state to enter", "the unset variables", "the scalar variables", "the rand() counters"):
            if v[what] != first[what]:
                raise G2PLError(f"checkpoint file disagrees with rank 0's about {what} (the same on every rank "
                                "of a run)", file=v["path"])
    for name in first["requests"]:
        for r, v in enumerate(views):
            for s, w in enumerate(views):
                expects, sends = v["requests"][name][1][s], w["requests"][name][0][r]
                if expects != sends:
                    raise G2PLError(f"checkpoint file is malformed: variable `{name}`: the pending request expects "
                                    f"{expects} IDs from rank {s}, which sends {sends}", file=v["path"])
