"""Checkpoint and resume at superstep boundaries (Pregel style): a failure loses nothing.

Layout of a checkpoint directory::

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
is JSON checked against a fixed schema), file names are built from validated
numbers rather than taken from the manifest, and every value is checked
against the compiled program's variable types and this rank's graph part
before the run resumes.  Anything else is a G2PLError (exit status 2) that
names the file and what is wrong.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import os
import re
import shutil
import stat
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from g2pl.errors import G2PLError
from g2pl.npz_check import npz_headers
from g2pl.output_files import write_atomic

FORMAT = 2
_HEX64 = re.compile(r"[0-9a-f]{64}")
_MAX_JSON_BYTES = 64 * 2**20  # rank files hold scalars and counters only
_DTYPE_KIND = {"bool": "b", "int": "i", "vid": "i", "float": "f"}
_REQUEST_FIELDS = ("ids", "order", "send_counts", "received", "recv_counts")


def graph_digest(graph) -> str:
    """A hash of the graph's content (IDs, endpoints, weights, direction), independent of its file name."""
    h = hashlib.sha256()
    for arr in (graph.ids, graph.src, graph.dst, graph.weight):
        h.update(np.ascontiguousarray(arr).tobytes())
    h.update(b"directed" if graph.directed else b"undirected")
    return h.hexdigest()


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


class _Bad(Exception):
    """A checkpoint value that does not fit the schema (turned into a G2PLError naming the file)."""


def _int(x: Any, what: str, lo: int = 0) -> int:
    if isinstance(x, bool) or not isinstance(x, int) or not lo <= x < 2**63:
        raise _Bad(f"{what} must be an integer >= {lo}")
    return x


def _dict(x: Any, what: str) -> dict:
    if not isinstance(x, dict):
        raise _Bad(f"{what} must be a JSON object")
    return x


def _list(x: Any, what: str) -> list:
    if not isinstance(x, list):
        raise _Bad(f"{what} must be a JSON list")
    return x


# ---------------------------------------------------------------- values <-> JSON + arrays


def _encode_scalar(v: Any) -> dict:
    numpy = isinstance(v, np.generic)
    py = v.item() if numpy else v
    if isinstance(py, bool):
        return {"kind": "scalar", "type": "bool", "numpy": numpy, "value": py}
    if isinstance(py, int):
        return {"kind": "scalar", "type": "int", "numpy": numpy, "value": py}
    if isinstance(py, float):
        return {"kind": "scalar", "type": "float", "numpy": numpy, "value": py.hex()}
    raise TypeError(f"cannot checkpoint a value of type {type(v).__name__}")


def _decode_scalar(d: dict, elem: str) -> Any:
    ty, numpy, v = d.get("type"), d.get("numpy"), d.get("value")
    if not isinstance(numpy, bool):
        raise _Bad("`numpy` must be true or false")
    if ty == "bool" and isinstance(v, bool):
        return np.bool_(v) if numpy else v
    if ty == "int" and not isinstance(v, bool) and isinstance(v, int) and -(2**63) <= v < 2**63:
        return np.int64(v) if numpy else v
    if ty == "float" and isinstance(v, str) and len(v) < 64:
        try:
            f = float.fromhex(v)
        except ValueError:
            raise _Bad(f"{v!r} is not a hexadecimal float") from None
        return np.float64(f) if numpy else f
    raise _Bad(f"expected a scalar {elem} (type bool/int/float with a matching value)")


def encode_env(names: tuple[str, ...], values: tuple) -> tuple[dict, dict[str, np.ndarray]]:
    """(JSON descriptors, arrays by npz key) for the program's variables."""
    env: dict[str, dict] = {}
    arrays: dict[str, np.ndarray] = {}

    def put(arr: np.ndarray) -> str:
        key = f"a{len(arrays)}"
        arrays[key] = np.ascontiguousarray(arr)
        return key

    for name, v in zip(names, values):
        if v is None:
            env[name] = {"kind": "none"}
        elif isinstance(v, np.ndarray):
            env[name] = {"kind": "array", "key": put(v)}
        elif hasattr(v, "send_counts"):  # a pending remote request (engine.RemoteRequest)
            env[name] = {"kind": "request", "keys": {f: put(getattr(v, f)) for f in _REQUEST_FIELDS}}
        else:
            env[name] = _encode_scalar(v)
    return env, arrays


class _Shapes:
    """What this rank's arrays must look like: vertex arrays n (or n + ghosts) long, edge arrays m."""

    def __init__(self, n: int, n_ext: int, m: int, ranks: int) -> None:
        self.n, self.n_ext, self.m, self.ranks = n, n_ext, m, ranks

    def check(self, arr: np.ndarray, kind: str, elem: str) -> None:
        if arr.ndim != 1:
            raise _Bad(f"expected a 1-D array, got shape {arr.shape}")
        if arr.dtype.kind != _DTYPE_KIND[elem]:
            raise _Bad(f"expected {elem} values, got dtype {arr.dtype}")
        lengths = (self.n, self.n_ext) if kind == "vertex" else (self.m,)
        if len(arr) not in lengths:
            want = " or ".join(map(str, sorted(set(lengths))))
            raise _Bad(f"expected {want} {kind} values on this rank, got {len(arr)}")

    def check_request(self, parts: dict[str, np.ndarray]) -> None:
        for f, a in parts.items():
            if a.ndim != 1 or a.dtype != np.int64:
                raise _Bad(f"request field `{f}` must be a 1-D int64 array")
        ids, order, sc, rec, rc = (parts[f] for f in _REQUEST_FIELDS)
        if len(sc) != self.ranks or len(rc) != self.ranks or (sc < 0).any() or (rc < 0).any():
            raise _Bad(f"request counts must be {self.ranks} non-negative numbers")
        if int(sc.sum()) != len(order) or int(rc.sum()) != len(rec) or len(order) > len(ids):
            raise _Bad("request counts do not add up to its arrays")
        if len(order) and (order.min() < 0 or order.max() >= len(ids)):
            raise _Bad("request order points outside its IDs")


def decode_env(env: Any, arrays: dict[str, np.ndarray], names: tuple[str, ...],
               types: tuple[tuple[str, str], ...], shapes: _Shapes) -> dict[str, Any]:
    """The variables of a checkpoint, each checked against its compiled (kind, element type)."""
    env = _dict(env, "`env`")
    if sorted(env) != sorted(names):
        raise _Bad("its variables are not the program's (" + ", ".join(sorted(set(env) ^ set(names))) + ")")
    used: set[str] = set()

    def take(key: Any) -> np.ndarray:
        if not isinstance(key, str) or key not in arrays or key in used:
            raise _Bad(f"array {key!r} is missing from the .npz file (or used twice)")
        used.add(key)
        return arrays[key]

    out: dict[str, Any] = {}
    for name, (kind, elem) in zip(names, types):
        d = _dict(env[name], f"variable `{name}`")
        try:
            if d.get("kind") == "none":
                out[name] = None
            elif kind == "scalar" and d.get("kind") == "scalar":
                out[name] = _decode_scalar(d, elem)
            elif kind in ("vertex", "edge") and d.get("kind") == "array":
                arr = take(d.get("key"))
                shapes.check(arr, kind, elem)
                out[name] = arr
            elif kind == "request" and d.get("kind") == "request":
                keys = _dict(d.get("keys"), "`keys`")
                if sorted(keys) != sorted(_REQUEST_FIELDS):
                    raise _Bad(f"a request has the fields {', '.join(_REQUEST_FIELDS)}")
                parts = {f: take(keys[f]) for f in _REQUEST_FIELDS}
                shapes.check_request(parts)
                out[name] = parts
            else:
                raise _Bad(f"expected a {kind} value, found {d.get('kind')!r}")
        except _Bad as e:
            raise _Bad(f"variable `{name}`: {e}") from None
    return out


# ---------------------------------------------------------------- runtime counters


def decode_runtime(r: Any, rand_sites: int, states: set[int]) -> dict:
    """The runtime's counters (statistics so far, rand() call counts, push/pull choices), checked."""
    r = _dict(r, "`runtime`")
    rows = []
    for i, row in enumerate(_list(r.get("per_superstep"), "`per_superstep`")):
        row = _list(row, "a `per_superstep` row")
        if len(row) != 8:
            raise _Bad("a `per_superstep` row has 8 numbers")
        ss, state, msgs, nbytes, rbytes, active = (_int(x, "a superstep counter", -1) for x in row[:6])
        if ss != i or (state not in states and state != -1):
            raise _Bad(f"`per_superstep` row {i} is out of order or names an unknown state")
        t, c = row[6:]
        if not all(isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in (t, c)):
            raise _Bad("superstep times must be finite numbers")
        rows.append((ss, state, msgs, nbytes, rbytes, active, float(t), float(c)))
    rand = [_int(x, "a rand() counter") for x in _list(r.get("rand_counts"), "`rand_counts`")]
    if len(rand) != rand_sites:
        raise _Bad(f"`rand_counts` must have {rand_sites} entries")
    push = {}
    for pair in _list(r.get("push_state"), "`push_state`"):
        pair = _list(pair, "a `push_state` entry")
        if len(pair) != 2 or not isinstance(pair[1], bool):
            raise _Bad("a `push_state` entry is [site, true|false]")
        push[_int(pair[0], "a site number")] = pair[1]
    counters = {}
    for key, fields in (("directions", ("push", "pull")), ("edge_sets", ("full", "shrunk"))):
        d = _dict(r.get(key), f"`{key}`")
        if sorted(d) != sorted(fields):
            raise _Bad(f"`{key}` has the counters {', '.join(fields)}")
        counters[key] = {f: _int(d[f], f"`{key}.{f}`") for f in fields}
    return {"per_superstep": rows, "rand_counts": rand, "push_state": push, **counters}


def encode_runtime(per_superstep: list, rand_counts: list, push_state: dict, directions: dict,
                   edge_sets: dict) -> dict:
    return {
        "per_superstep": [[s.superstep, s.state, s.messages, s.bytes, s.record_bytes, s.active, s.time_s,
                           s.comm_s] for s in per_superstep],
        "rand_counts": [int(x) for x in rand_counts],
        "push_state": [[int(k), bool(v)] for k, v in sorted(push_state.items())],
        "directions": {k: int(v) for k, v in directions.items()},
        "edge_sets": {k: int(v) for k, v in edge_sets.items()},
    }


# ---------------------------------------------------------------- files


def _read_confined(root: Path, rel: str, limit: int) -> bytes:
    """The bytes of root/rel: a regular file inside `root` (no link leads out), at most `limit` bytes."""
    path = root / rel
    real_root = os.path.realpath(root)
    if os.path.commonpath([real_root, os.path.realpath(path)]) != real_root:
        raise G2PLError("checkpoint file lies outside the checkpoint directory", file=str(path))
    try:  # no link followed at the last step; a FIFO would block a plain open
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError as e:
        raise G2PLError(f"checkpoint file missing or unreadable ({e.strerror})", file=str(path)) from None
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise G2PLError("checkpoint file is not a regular file", file=str(path))
        data = f.read(limit + 1)
    if len(data) > limit:
        raise G2PLError(f"checkpoint file is larger than the {limit} bytes this run can hold", file=str(path))
    return data


def _load_npz(blob: bytes, limit: int, path: Path) -> dict[str, np.ndarray]:
    """Arrays of an .npz held in memory: plain numeric .npy members only, sizes checked before reading."""
    try:
        with zipfile.ZipFile(io.BytesIO(blob)) as zf:
            heads = npz_headers(zf)
            total = sum(h.nbytes for h in heads.values())
            if total > limit:
                raise G2PLError(f"checkpoint arrays would take {total} bytes, more than this rank's "
                                f"graph part allows ({limit})", file=str(path))
            out = {}
            for key, h in heads.items():
                if h.dtype.kind not in "biuf":
                    raise G2PLError(f"array {key!r} has dtype {h.dtype}; only numbers and bools are accepted",
                                    file=str(path))
                with zf.open(h.member) as f:
                    out[key] = np.lib.format.read_array(f, allow_pickle=False)
            return out
    except G2PLError:
        raise
    except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile) as e:
        raise G2PLError(f"not a valid checkpoint array file ({e})", file=str(path)) from None


def _manifest_schema(m: Any) -> dict:
    m = _dict(m, "the manifest")
    if m.get("format") != FORMAT:
        raise _Bad("written by another version of g2pl (or not a g2pl checkpoint)")
    _dict(m.get("run"), "`run`")
    _int(m.get("superstep"), "`superstep`", 1)
    files = _dict(m.get("files"), "`files`")
    for k, v in files.items():
        if not re.fullmatch(r"rank[0-9]+\.(json|npz)", k) or not isinstance(v, str) or not _HEX64.fullmatch(v):
            raise _Bad("`files` maps rank<R>.json / rank<R>.npz to sha256 hex digests")
    return m


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
        check_directory(self.dir, resume)
        if comm.rank == 0 and not resume:
            try:
                self.dir.mkdir(parents=True, exist_ok=True)
            except OSError as e:
                raise G2PLError(f"cannot create the checkpoint directory ({e.strerror})", file=str(self.dir)) from None

    # ---- manifest

    def manifest(self) -> dict | None:
        p = self.dir / "manifest.json"
        if not p.exists() and not p.is_symlink():
            return None
        text = _read_confined(self.dir, "manifest.json", 2**20)
        try:
            return _manifest_schema(json.loads(text))
        except (ValueError, RecursionError) as e:
            raise G2PLError(f"the checkpoint manifest is not valid JSON ({e})", file=str(p)) from None
        except _Bad as e:
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

    def save(self, superstep_count: int, state: int, names: tuple[str, ...], values: tuple, runtime: dict) -> None:
        sub = self.dir / f"ss{superstep_count}"
        if self.comm.rank == 0:
            if sub.is_symlink() or (sub.exists() and not sub.is_dir()):  # planted: never written through
                raise G2PLError(f"{sub.name} in the checkpoint directory is not a plain directory; "
                                "refusing to write through it", file=str(self.dir))
            sub.mkdir(parents=True, exist_ok=True)
        self.comm.barrier()
        env, arrays = encode_env(names, values)
        buf = io.BytesIO()
        np.savez(buf, **arrays)
        doc = json.dumps({"superstep": superstep_count, "state": int(state), "env": env, "runtime": runtime},
                         allow_nan=False).encode()
        mine = {}
        for name, blob in ((f"rank{self.comm.rank}.json", doc), (f"rank{self.comm.rank}.npz", buf.getvalue())):
            write_atomic(sub / name, blob)
            mine[name] = hashlib.sha256(blob).hexdigest()
        digests = self.comm.allgather(mine)
        self.comm.barrier()  # every rank's files are complete before the manifest points at them
        if self.comm.rank == 0:
            files = {k: v for d in digests for k, v in d.items()}
            manifest = {"format": FORMAT, "run": self.identity, "superstep": superstep_count, "files": files}
            write_atomic(self.dir / "manifest.json", json.dumps(manifest, indent=1))
            for old in self.saved[:-1]:  # keep the newest two checkpoints
                shutil.rmtree(self.dir / f"ss{old}", ignore_errors=True)
        self.saved.append(superstep_count)
        self.comm.barrier()

    # ---- loading

    def load(self, lg) -> dict:
        """This rank's saved state, checked against the compiled module and the graph part `lg`:
        {"superstep", "state", "env": {name: value}, "runtime": counters}."""
        module = self.module
        m = self.check_resumable()
        sub = f"ss{m['superstep']}"
        r = self.comm.rank
        shapes = _Shapes(lg.n, lg.n_ext, lg.m, lg.size)
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
            doc = _dict(json.loads(blobs[f"rank{r}.json"]), "the file")
            if _int(doc.get("superstep"), "`superstep`", 1) != m["superstep"]:
                raise _Bad("`superstep` differs from the manifest's")
            state = _int(doc.get("state"), "`state`")
            if state not in module.STATE_LINES:
                raise _Bad(f"`state` {state} is not a state of the program")
            arrays = _load_npz(blobs[f"rank{r}.npz"], limit, self.dir / sub / f"rank{r}.npz")
            env = decode_env(doc.get("env"), arrays, tuple(module.VARIABLES), tuple(module.VARIABLE_TYPES), shapes)
            runtime = decode_runtime(doc.get("runtime"), module.RAND_SITES, set(module.STATE_LINES))
        except (ValueError, RecursionError) as e:
            raise G2PLError(f"checkpoint file is not valid JSON ({e})", file=str(path)) from None
        except _Bad as e:
            raise G2PLError(f"checkpoint file is malformed: {e}", file=str(path)) from None
        if len(runtime["per_superstep"]) != m["superstep"]:
            raise G2PLError("checkpoint statistics do not cover its supersteps", file=str(path))
        self.saved.append(m["superstep"])
        return {"superstep": m["superstep"], "state": state, "env": env, "runtime": runtime}
