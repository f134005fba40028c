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
is JSON checked against the fixed schema of checkpoint_schema.py), file names are built from validated
numbers rather than taken from the manifest, and every value is checked
against the compiled program's variable types and this rank's graph part
before the run resumes.  Anything else is a G2PLError (exit status 2) that
names the file and what is wrong.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import stat
import zipfile
from pathlib import Path

import numpy as np

from g2pl.errors import G2PLError
from g2pl.npz_check import npz_headers
from g2pl.output_files import write_atomic
from g2pl.runtime.checkpoint_schema import (
    FORMAT,
    Bad,
    Shapes,
    check_dict,
    check_int,
    decode_env,
    decode_runtime,
    encode_env,
    manifest_schema,
)

_MAX_JSON_BYTES = 64 * 2**20  # rank files hold scalars and counters only


def graph_digest(graph) -> str:
    """A hash of the graph's content (IDs, endpoints, weights, direction), independent of its file name."""
    h = hashlib.sha256()
    for arr, dt in ((graph.ids, np.int64), (graph.src, np.int64), (graph.dst, np.int64), (graph.weight, np.float64)):
        for lo in range(0, len(arr), 1 << 20):  # as int64/float64 whatever the index width; bounded temporaries
            h.update(np.ascontiguousarray(arr[lo:lo + (1 << 20)], dtype=dt).tobytes())
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
            return manifest_schema(json.loads(text))
        except (ValueError, RecursionError) as e:
            raise G2PLError(f"the checkpoint manifest is not valid JSON ({e})", file=str(p)) from None
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
        shapes = Shapes(lg.n, lg.n_ext, lg.m, lg.size)
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
            doc = check_dict(json.loads(blobs[f"rank{r}.json"]), "the file")
            if check_int(doc.get("superstep"), "`superstep`", 1) != m["superstep"]:
                raise Bad("`superstep` differs from the manifest's")
            state = check_int(doc.get("state"), "`state`")
            if state not in module.STATE_LINES:
                raise Bad(f"`state` {state} is not a state of the program")
            arrays = _load_npz(blobs[f"rank{r}.npz"], limit, self.dir / sub / f"rank{r}.npz")
            env = decode_env(doc.get("env"), arrays, tuple(module.VARIABLES), tuple(module.VARIABLE_TYPES), shapes)
            runtime = decode_runtime(doc.get("runtime"), module.RAND_SITES, set(module.STATE_LINES))
        except (ValueError, RecursionError) as e:
            raise G2PLError(f"checkpoint file is not valid JSON ({e})", file=str(path)) from None
        except Bad as e:
            raise G2PLError(f"checkpoint file is malformed: {e}", file=str(path)) from None
        if len(runtime["per_superstep"]) != m["superstep"]:
            raise G2PLError("checkpoint statistics do not cover its supersteps", file=str(path))
        self.saved.append(m["superstep"])
        return {"superstep": m["superstep"], "state": state, "env": env, "runtime": runtime}
