"""Checkpoint and resume at superstep boundaries (Pregel style): a failure loses nothing.

Layout of a checkpoint directory::

    DIR/manifest.json        written last, atomically: which checkpoint is complete and what run it belongs to
    DIR/ss<K>/rank<R>.pkl    one file per rank: the program's variables, the state to enter, runtime counters

Every file is written to a temporary name and renamed, and the manifest is
replaced only after every rank's file of that checkpoint exists (a barrier),
so a process killed at any moment leaves either the previous or the new
checkpoint complete.  The manifest holds hashes of the program, the graph,
the arguments, the seed and the rank count; resuming a different run is
refused with a message that says what differs.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import shutil
from pathlib import Path
from typing import Any

import numpy as np

from g2pl.errors import G2PLError

FORMAT = 1


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


def _atomic_bytes(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


class Checkpointer:
    """Saves and restores one rank's state; rank 0 owns the manifest."""

    def __init__(self, directory: str | Path, every: int, identity: dict, comm, resume: bool) -> None:
        self.dir = Path(directory)
        self.every = max(1, int(every))
        self.identity = identity
        self.comm = comm
        self.resume_requested = resume
        self.saved: list[int] = []
        if comm.rank == 0:
            self.dir.mkdir(parents=True, exist_ok=True)

    # ---- manifest

    def manifest(self) -> dict | None:
        p = self.dir / "manifest.json"
        if not p.exists():
            return None
        try:
            return json.loads(p.read_text())
        except (OSError, ValueError) as e:
            raise G2PLError(f"the checkpoint manifest cannot be read ({e})", file=str(p)) from None

    def check_resumable(self) -> dict:
        """The manifest of a checkpoint of exactly this run, or a G2PLError saying what differs."""
        m = self.manifest()
        if m is None:
            raise G2PLError("no complete checkpoint here (manifest.json is missing)", file=str(self.dir))
        if m.get("format") != FORMAT:
            raise G2PLError("the checkpoint was written by another version of g2pl", file=str(self.dir))
        diff = [k for k, v in self.identity.items() if m.get("run", {}).get(k) != v]
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

    def save(self, superstep_count: int, state: int, env: dict[str, Any], runtime_state: dict) -> None:
        sub = self.dir / f"ss{superstep_count}"
        if self.comm.rank == 0:
            sub.mkdir(parents=True, exist_ok=True)
        self.comm.barrier()
        blob = pickle.dumps({"state": state, "env": env, "runtime": runtime_state, "superstep": superstep_count},
                            protocol=pickle.HIGHEST_PROTOCOL)
        _atomic_bytes(sub / f"rank{self.comm.rank}.pkl", blob)
        digest = hashlib.sha256(blob).hexdigest()
        digests = self.comm.allgather(digest)
        self.comm.barrier()  # every rank's file is complete before the manifest points at it
        if self.comm.rank == 0:
            manifest = {"format": FORMAT, "run": self.identity, "superstep": superstep_count,
                        "dir": sub.name, "files": {f"rank{r}.pkl": d for r, d in enumerate(digests)}}
            _atomic_bytes(self.dir / "manifest.json", json.dumps(manifest, indent=1).encode())
            for old in self.saved[:-1]:  # keep the newest two checkpoints
                shutil.rmtree(self.dir / f"ss{old}", ignore_errors=True)
        self.saved.append(superstep_count)
        self.comm.barrier()

    # ---- loading

    def load(self) -> dict:
        m = self.check_resumable()
        path = self.dir / m["dir"] / f"rank{self.comm.rank}.pkl"
        try:
            blob = path.read_bytes()
        except OSError as e:
            raise G2PLError(f"checkpoint file missing or unreadable ({e.strerror})", file=str(path)) from None
        if hashlib.sha256(blob).hexdigest() != m["files"].get(path.name):
            raise G2PLError("checkpoint file does not match its manifest (corrupted?)", file=str(path))
        data = pickle.loads(blob)  # noqa: S301 - our own file, verified against the manifest hash
        self.saved.append(data["superstep"])
        return data
