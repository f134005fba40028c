"""The compile cache of `g2pl run` and `g2plc`: a repeated command skips parsing and code generation.

An entry holds what a run needs of a compiled program, for every procedure: its parameters and its
generated module's text, exactly as the compiler wrote it.  Its key is a SHA-256 over everything
that decides that text: the program's text and file name (the module's docstring names it), -O, the
disabled passes, the g2pl version, and a hash of the compiler's own files (`compiler_fingerprint`),
so an edited or upgraded compiler never reuses what an older one wrote.  A compile error is never
stored: the command compiles again, and fails with the same message.

The cached text is executed, so an entry is used only if this user wrote it: the directory is made
0700 and is refused (with one warning, then everything compiles as without a cache) unless it is a
directory owned by the current user and writable by no one else; each entry must be a regular file
owned by the user, writable by no one else, and carry an HMAC-SHA256 under a per-user random secret
(`secret`, 0600, made on first use), which a file written by anyone else, or changed by a single
byte, fails (it is then ignored and rewritten).  Every file is opened relative to the checked
directory, without following links.  Entries are written to a temporary file and renamed into
place, so ranks of `--np N` that miss together race harmlessly; the least recently used beyond
`MAX_ENTRIES` entries or `MAX_BYTES` bytes are removed.

Where: `G2PL_CACHE_DIR`, else `$XDG_CACHE_HOME/g2pl`, else `$HOME/.cache/g2pl` (none of them set: no
cache).  `G2PL_NO_CACHE=1` or `--no-cache` turns it off.  The Python API (`g2pl.compile`) never uses it.
"""

from __future__ import annotations

import errno
import functools
import hashlib
import hmac
import json
import os
import stat
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import g2pl
from g2pl.api import Program, check_options, read_program_file
from g2pl.api import compile as compile_

if TYPE_CHECKING:
    from g2pl.compiler import ast as A
    from g2pl.compiler.pipeline import Compilation

#: the layout of an entry; part of every key, so a new layout never reads an old one
FORMAT = 1
ENV_DIR = "G2PL_CACHE_DIR"
ENV_OFF = "G2PL_NO_CACHE"
#: bounds of the whole cache (least recently used entries go first) and of one entry
MAX_ENTRIES = 256
MAX_BYTES = 64 * 2**20
MAX_ENTRY_BYTES = 16 * 2**20
SUFFIX = ".g2c"
SECRET = "secret"
_MAGIC = b"g2pl-compile-cache %d\n" % FORMAT
_TMP = ".tmp-"
#: a temporary file older than this was left by a process that died while writing it
_STALE_TMP_S = 3600.0

_PKG = Path(__file__).resolve().parent  # the g2pl package

Warn = Callable[[str], None]


class CachedParam(NamedTuple):
    """A parameter's type as the cache keeps it (what `g2pl.api.ParamType` asks of the compiler's `ir.Ty`)."""

    kind: str
    elem: str


class CachedProgram(Program):
    """A `Program` whose generated modules came from the cache: running it needs no compiler.

    What only the compiler has (the AST, IR, plan: `module`, `compilation`, `plan_text`, ...) is
    compiled from the same text on first use, so every `Program` method still answers alike."""

    def __init__(self, text: str, file: str, opt: int, disable: tuple[str, ...],
                 procedures: dict[str, tuple[list[tuple[str, CachedParam]], str]]) -> None:
        self._text, self._file = text, file
        self.opt, self.disable = opt, tuple(disable)
        self._procs = procedures
        self._modules = {}
        self._whole: Program | None = None

    def _compiled_program(self) -> Program:
        if self._whole is None:
            from g2pl.compiler.parser import parse

            self._whole = Program(parse(self._text, self._file), opt=self.opt, disable=self.disable)
        return self._whole

    @property
    def module(self) -> A.Module:  # type: ignore[override]  # read-only here: compiled on first use
        return self._compiled_program().module

    @property
    def file(self) -> str:
        return self._file

    @property
    def source(self) -> str:
        return self._text

    @property
    def procedures(self) -> list[str]:
        return list(self._procs)

    def compilation(self, entry: str | None = None) -> Compilation:
        return self._compiled_program().compilation(self.entry_name(entry))

    def python(self, entry: str | None = None) -> str:
        return self._procs[self.entry_name(entry)][1]

    def params(self, entry: str | None = None) -> Sequence[tuple[str, CachedParam]]:
        return self._procs[self.entry_name(entry)][0]


def disabled(env: Mapping[str, str] | None = None) -> bool:
    """`G2PL_NO_CACHE` set to anything but empty or 0."""
    value = (os.environ if env is None else env).get(ENV_OFF, "").strip()
    return value not in ("", "0")


def cache_dir() -> Path | None:
    """`G2PL_CACHE_DIR`, else `$XDG_CACHE_HOME/g2pl` (an absolute one only, as the XDG rules say), else
    `$HOME/.cache/g2pl`; None (no cache) in an environment with none of them, such as a service's,
    rather than a directory guessed from the password database."""
    given = os.environ.get(ENV_DIR)
    if given:
        return Path(given).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg and os.path.isabs(xdg):
        return Path(xdg) / "g2pl"
    home = os.environ.get("HOME")
    return Path(home) / ".cache" / "g2pl" if home and os.path.isabs(home) else None


def _compiler_files() -> list[tuple[str, bytes]]:
    """(name, bytes) of every file whose text decides the generated code: the compiler package, the
    modules it imports from outside it, its grammar and its code template."""
    paths = sorted((_PKG / "compiler").rglob("*.py")) + [_PKG / n for n in ("contract.py", "errors.py", "io/numtext.py")]
    files = [(p.relative_to(_PKG).as_posix(), p.read_bytes()) for p in paths]
    for folder, name in (("grammar", "g2pl.lark"), ("templates", "module.py.j2")):
        # where the parser and the code generator find them: in the package when installed, beside it in a
        # source tree (an editable install maps the package's folder there), else where importlib says
        for path in (_PKG / folder / name, _PKG.parent / folder / name):
            if path.is_file():
                data = path.read_bytes()
                break
        else:
            from importlib import resources

            data = resources.files(f"g2pl.{folder}").joinpath(name).read_bytes()
        files.append((f"{folder}/{name}", data))
    return files


@functools.lru_cache(maxsize=1)
def compiler_fingerprint() -> str:
    """SHA-256 of the g2pl version, the compiler's files and the parser and template libraries' own
    files (their size and time: an upgrade changes them), computed once per process."""
    h = hashlib.sha256(f"g2pl {g2pl.__version__}\0".encode())
    for name, data in _compiler_files():
        h.update(f"{name}\0{len(data)}\0".encode())
        h.update(data)
    from importlib.util import find_spec

    for lib in ("lark", "jinja2"):
        spec = find_spec(lib)  # found, not imported
        origin = spec.origin if spec is not None else None
        st = os.stat(origin) if origin else None
        h.update(f"{lib} {origin} {st.st_size if st else 0} {st.st_mtime_ns if st else 0}\0".encode())
    return h.hexdigest()


def cache_key(text: str, file: str, opt: int, disable: Sequence[str]) -> str:
    """The entry's name: a SHA-256 over everything that decides the generated modules' text."""
    what = json.dumps([FORMAT, compiler_fingerprint(), file, opt, list(disable), text], ensure_ascii=True)
    return hashlib.sha256(what.encode()).hexdigest()


class Store:
    """One cache directory, checked before use; every failure to use it is a miss (nothing is raised)."""

    def __init__(self, root: Path, warn: Warn | None = None) -> None:
        self.root = root
        self.warn = warn
        self._fd: int | None = None
        self._secret: bytes | None = None
        self._refused = False

    # ---- the directory and the secret

    def _refuse(self, why: str) -> None:
        self._refused = True
        if self.warn is not None:
            self.warn(f"not using the compile cache {self.root}: {why}")

    def _dir(self) -> int | None:
        """A descriptor of the checked directory (made 0700 when missing), or None."""
        if self._fd is not None or self._refused:
            return self._fd
        try:
            try:
                os.mkdir(self.root, 0o700)
            except FileNotFoundError:
                os.makedirs(self.root.parent, exist_ok=True)
                os.mkdir(self.root, 0o700)
        except FileExistsError:
            pass
        except OSError:
            return None  # cannot be made (read-only home...): no cache, nothing to warn about
        try:
            fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY)
        except OSError:
            return None
        why = _foreign(os.fstat(fd), "directory", stat.S_ISDIR)
        if why is not None:
            os.close(fd)
            self._refuse(f"it {why}")
            return None
        self._fd = fd
        return fd

    def _key(self) -> bytes | None:
        """The per-user secret that signs every entry (32 random bytes, made on first use)."""
        fd = self._dir()
        if fd is None or self._secret is not None or self._refused:
            return self._secret
        for _ in range(2):
            try:
                data = _read_own(fd, SECRET, 64, private=True)
            except FileNotFoundError:
                if not self._make_secret(fd):
                    return None
                continue
            except _Foreign as exc:
                self._refuse(f"its {SECRET} file {exc}")
                return None
            except OSError:
                return None
            if len(data) != 32:
                self._refuse(f"its {SECRET} file is damaged (remove it)")
                return None
            self._secret = data
            return data
        return None

    def _make_secret(self, fd: int) -> bool:
        """Write a new secret beside the entries: whole (a temporary file linked into place), and the
        first process's only when several make one at once."""
        tmp = _tmp_name()
        try:
            out = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600, dir_fd=fd)
            try:
                os.write(out, os.urandom(32))
            finally:
                os.close(out)
            try:
                os.link(tmp, SECRET, src_dir_fd=fd, dst_dir_fd=fd, follow_symlinks=False)
            except FileExistsError:
                pass  # another process made it first: use that one
            except OSError as exc:
                if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP):
                    raise
                os.rename(tmp, SECRET, src_dir_fd=fd, dst_dir_fd=fd)  # a file system without links
            return True
        except OSError:
            return False
        finally:
            _unlink(fd, tmp)

    # ---- entries

    def get(self, key: str) -> bytes | None:
        """The payload stored under `key`, if this user's secret signs it; else None."""
        secret = self._key()
        if secret is None or self._fd is None:
            return None
        try:
            data = _read_own(self._fd, key + SUFFIX, MAX_ENTRY_BYTES, private=False, touch=True)
        except (OSError, _Foreign):
            return None
        head, sep, rest = data.partition(b"\n")
        mac, sep2, payload = rest.partition(b"\n")
        if head + b"\n" != _MAGIC or not sep or not sep2 or not hmac.compare_digest(mac, _sign(secret, key, payload)):
            return None
        return payload

    def put(self, key: str, payload: bytes) -> None:
        """Store `payload` under `key` (atomically), then evict beyond the bounds."""
        secret = self._key()
        if secret is None or self._fd is None:
            return
        data = _MAGIC + _sign(secret, key, payload) + b"\n" + payload
        if len(data) > MAX_ENTRY_BYTES:
            return
        fd, tmp = self._fd, _tmp_name()
        try:
            out = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600, dir_fd=fd)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(out, view):]
            finally:
                os.close(out)
            os.replace(tmp, key + SUFFIX, src_dir_fd=fd, dst_dir_fd=fd)
        except OSError:
            _unlink(fd, tmp)
            return
        self.evict()

    def evict(self, max_entries: int = MAX_ENTRIES, max_bytes: int = MAX_BYTES) -> None:
        """Remove the least recently used entries beyond the bounds, and temporary files left behind."""
        fd = self._dir()
        if fd is None:
            return
        import time

        now = time.time()
        entries = []
        try:
            names = os.listdir(fd)
        except OSError:
            return
        for name in names:
            try:
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except OSError:
                continue
            if name.startswith(_TMP) and now - st.st_mtime > _STALE_TMP_S:
                _unlink(fd, name)
            elif name.endswith(SUFFIX):
                entries.append((st.st_mtime, name, st.st_size))
        entries.sort()
        total = sum(size for _, _, size in entries)
        for count, (_, name, size) in zip(range(len(entries), 0, -1), entries):
            if count <= max_entries and total <= max_bytes:
                break
            _unlink(fd, name)
            total -= size

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


class _Foreign(Exception):
    """A file of the cache someone else could have written."""


def _foreign(st: os.stat_result, what: str, is_kind: Callable[[int], bool]) -> str | None:
    """Why a file with this status cannot be trusted (None if it can)."""
    if not is_kind(st.st_mode):
        return f"is not a {what}"
    if st.st_uid != os.geteuid():
        return f"is owned by user {st.st_uid}, not by this user ({os.geteuid()})"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return "is writable by group or others"
    return None


def _read_own(fd: int, name: str, limit: int, private: bool, touch: bool = False) -> bytes:
    """The bytes of a regular file `name` in the directory `fd`, owned by this user and writable by no
    one else (`private`: readable by no one else either); _Foreign otherwise.  `touch` marks it used."""
    f = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=fd)
    try:
        st = os.fstat(f)
        why = _foreign(st, "regular file", stat.S_ISREG)
        if why is None and private and st.st_mode & 0o077:
            why = "is readable by group or others"
        if why is not None:
            raise _Foreign(why)
        if st.st_size > limit:
            raise _Foreign("is too large")
        chunks, left = [], st.st_size + 1
        while left > 0:
            chunk = os.read(f, left)
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        if touch and os.utime in os.supports_fd:
            try:
                os.utime(f)  # least recently used go first
            except OSError:
                pass
        return b"".join(chunks)
    finally:
        os.close(f)


def _sign(secret: bytes, key: str, payload: bytes) -> bytes:
    """HMAC-SHA256 of an entry under its key (an entry renamed to another key fails it too)."""
    return hmac.new(secret, key.encode() + b"\n" + payload, hashlib.sha256).hexdigest().encode()


def _tmp_name() -> str:
    return f"{_TMP}{os.getpid()}-{os.urandom(6).hex()}"


def _unlink(fd: int, name: str) -> None:
    try:
        os.unlink(name, dir_fd=fd)
    except OSError:
        pass


# ---- programs


def _payload(key: str, prog: Program) -> bytes:
    procs = []
    for name in prog.procedures:
        params = [[p, str(t.kind), str(t.elem)] for p, t in prog.params(name)]
        procs.append({"name": name, "params": params, "python": prog.python(name)})
    return json.dumps({"format": FORMAT, "key": key, "procedures": procs}).encode()


def _program(key: str, payload: bytes, text: str, file: str, opt: int, disable: tuple[str, ...]) -> Program | None:
    """The CachedProgram an entry describes; None if it is not one this module wrote."""
    try:
        data = json.loads(payload)
        if data["format"] != FORMAT or data["key"] != key or not data["procedures"]:
            return None
        procs: dict[str, tuple[list[tuple[str, CachedParam]], str]] = {}
        for p in data["procedures"]:
            params = [(str(n), CachedParam(str(k), str(e))) for n, k, e in p["params"]]
            if not isinstance(p["python"], str) or not isinstance(p["name"], str):
                return None
            procs[p["name"]] = (params, p["python"])
    except (ValueError, KeyError, TypeError):
        return None
    return CachedProgram(text, file, opt, disable, procs)


def compile_program(path: str | os.PathLike, opt: int = 2, disable: Sequence[str] = (), verify: bool = False,
                    use_cache: bool = True, warn: Warn | None = None) -> Program:
    """`g2pl.compile(Path(path), opt=..., disable=..., verify=...)`, through the cache unless `use_cache` is
    false or `G2PL_NO_CACHE` is set.  `--verify` always compiles (it checks the compiler), and stores
    what it compiled.  `warn` hears why a cache directory is refused."""
    disable = tuple(disable)
    root = cache_dir() if use_cache and not disabled() else None
    if root is None:
        return compile_(Path(path), opt=opt, disable=disable, verify=verify)
    check_options(opt, disable)
    text, file = read_program_file(path)
    try:
        key = cache_key(text, file, opt, disable)
    except OSError:  # the compiler's files cannot all be read: nothing to key an entry on
        return compile_(Path(path), opt=opt, disable=disable, verify=verify)
    store = Store(root, warn)
    try:
        if not verify:
            payload = store.get(key)
            if payload is not None:
                prog = _program(key, payload, text, file, opt, disable)
                if prog is not None:
                    return prog
        from g2pl.compiler.parser import parse

        prog = Program(parse(text, file), opt=opt, disable=disable, verify=verify)  # errors raise: nothing stored
        store.put(key, _payload(key, prog))
        return prog
    finally:
        store.close()


def warn_on_stderr(message: str) -> None:
    print(f"g2pl: warning: {message}", file=sys.stderr)
