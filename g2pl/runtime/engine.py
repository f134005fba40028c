"""The BSP runtime a generated module runs on (`rt` in generated code).

The driver owns the graph, the communicator, timing and statistics; the
generated module only calls the verbs below.  All arrays are *local*: the
vertices and edges this rank holds (all of them with one rank).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from g2pl.errors import G2PLRuntimeError
from g2pl.runtime import kernels as K
from g2pl.runtime.comm import SingleComm


class Adjacency:
    """One direction of the local adjacency (CSR rows = receiving vertices)."""

    def __init__(self, indptr: np.ndarray, nbr: np.ndarray, eid: np.ndarray, ids: np.ndarray) -> None:
        self.seg = K.Segments(indptr)
        self.nbr = nbr
        self.eid = eid
        self.owner = self.seg.owner
        self._ids = ids
        self._nbr_ids: np.ndarray | None = None
        self._self_ids: np.ndarray | None = None

    @property
    def entries(self) -> int:
        return len(self.nbr)

    @property
    def nbr_ids(self) -> np.ndarray:
        if self._nbr_ids is None:
            self._nbr_ids = self._ids[self.nbr]
        return self._nbr_ids

    @property
    def self_ids(self) -> np.ndarray:
        if self._self_ids is None:
            self._self_ids = self._ids[self.owner]
        return self._self_ids


@dataclass
class SuperstepStat:
    superstep: int
    state: int
    messages: int
    bytes: int
    record_bytes: int
    active: int
    time_s: float

    def as_dict(self) -> dict:
        return {
            "superstep": self.superstep, "state": self.state, "messages": self.messages, "bytes": self.bytes,
            "record_bytes": self.record_bytes, "active": self.active, "time_s": self.time_s,
        }


@dataclass
class Stats:
    per_superstep: list[SuperstepStat] = field(default_factory=list)
    ranks: int = 1
    backend: str = "numpy"
    time_s: float = 0.0
    load_time_s: float = 0.0
    graph: dict = field(default_factory=dict)
    opt_level: int = 0
    entry: str = ""

    @property
    def supersteps(self) -> int:
        return len(self.per_superstep)

    def as_dict(self) -> dict:
        return {
            "entry": self.entry,
            "supersteps": self.supersteps,
            "messages": int(sum(s.messages for s in self.per_superstep)),
            "bytes": int(sum(s.bytes for s in self.per_superstep)),
            "record_bytes": int(sum(s.record_bytes for s in self.per_superstep)),
            "ranks": self.ranks,
            "backend": self.backend,
            "opt_level": self.opt_level,
            "time_s": self.time_s,
            "load_time_s": self.load_time_s,
            "graph": self.graph,
            "per_superstep": [s.as_dict() for s in self.per_superstep],
        }


class Runtime:
    """Runtime verbs over one rank's part of a graph."""

    def __init__(self, graph, module, *, seed: int = 0, comm=None, max_supersteps: int | None = None) -> None:
        self.xp = np
        self.comm = comm or SingleComm()
        self.g = graph
        self.n = graph.n
        self.m = graph.m
        self.ids = graph.ids
        self.src = graph.src
        self.dst = graph.dst
        self.src_ids = graph.ids[graph.src]
        self.dst_ids = graph.ids[graph.dst]
        self.weight = graph.weight
        self.seed = int(seed)
        self.max_supersteps = max_supersteps
        self.record_bytes = int(getattr(module, "RECORD_BYTES", 0))
        need_in, need_out = getattr(module, "NAIVE_DIRECTIONS", (True, False))
        self._adj: dict[bool, Adjacency] = {}
        self._rand_counts = [0] * int(getattr(module, "RAND_SITES", 0))
        # naive (-O0) broadcast: every vertex sends one record along every adjacency entry it has
        if graph.directed:
            entries = (graph.m if need_in else 0) + (graph.m if need_out else 0)
        else:
            entries = 2 * graph.m
        self.naive_entries = entries if self.record_bytes > 0 else 0
        self.stats = Stats(ranks=self.comm.size)
        self._pending_msgs = 0
        self._pending_bytes = 0
        self._t_last = time.perf_counter()
        self._t_start = self._t_last

    # ------------------------------------------------------------ structure

    def adj(self, out: bool = False) -> Adjacency:
        out = bool(out) and self.g.directed
        a = self._adj.get(out)
        if a is None:
            g = self.g
            if out:
                a = Adjacency(g.out_indptr, g.out_nbr, g.out_eid, g.ids)
            else:
                a = Adjacency(g.in_indptr, g.in_nbr, g.in_eid, g.ids)
            self._adj[out] = a
        return a

    # ------------------------------------------------------------ conversions

    def scalar(self, x, elem: str):
        if isinstance(x, np.ndarray):
            x = x.item()
        if elem == "bool":
            return bool(x)
        if elem == "float":
            return float(x)
        return int(x)

    def _as(self, x, elem: str, size: int) -> np.ndarray:
        dt = K.DTYPES[elem]
        if isinstance(x, np.ndarray) and x.ndim == 1:
            if x.dtype != dt:
                x = self.to_int(x) if dt is np.int64 and x.dtype.kind == "f" else x.astype(dt)
            return x
        return np.full(size, x, dtype=dt)

    def as_v(self, x, elem: str) -> np.ndarray:
        return self._as(x, elem, self.n)

    def as_e(self, x, elem: str) -> np.ndarray:
        return self._as(x, elem, self.m)

    def to_int(self, x):
        a = np.asarray(x)
        if a.dtype.kind == "f":
            a = np.where(np.isnan(a), 0.0, np.clip(a, -9.2e18, 9.2e18))
            r = np.trunc(a).astype(np.int64)
        else:
            r = a.astype(np.int64)
        return r if r.ndim else int(r)

    def to_float(self, x):
        a = np.asarray(x).astype(np.float64)
        return a if a.ndim else float(a)

    def mod(self, a, b):
        with np.errstate(all="ignore"):
            r = np.remainder(a, b)
            r = np.where(np.asarray(b) == 0, 0, r)
        return r if np.ndim(r) else int(r)

    # ------------------------------------------------------------ neighbourhood aggregation

    def pull(self, arr: np.ndarray, adj: Adjacency) -> np.ndarray:
        """Message field: the sender's value on every adjacency entry."""
        return arr[adj.nbr]

    def at_receiver(self, arr: np.ndarray, adj: Adjacency) -> np.ndarray:
        return arr[adj.owner]

    def at_edge(self, arr: np.ndarray, adj: Adjacency) -> np.ndarray:
        return arr[adj.eid]

    def _entries(self, x, k: int) -> np.ndarray:
        if isinstance(x, np.ndarray) and x.ndim == 1:
            return x
        return np.full(k, x)

    def nbr_reduce(self, op: str, value, mask, adj: Adjacency, elem: str) -> np.ndarray:
        k = adj.entries
        v = self._entries(value, k)
        msk = None if mask is None else self._entries(mask, k).astype(bool, copy=False)
        ids = adj.nbr_ids if op in ("argmin", "argmax") else None
        return K.seg_reduce(adj.seg, op, v, msk, elem, ids)

    # ------------------------------------------------------------ global aggregation

    def global_reduce(self, op: str, value, mask, dom: str, elem: str):
        size = self.n if dom == "V" else self.m
        v = self._entries(value, size)
        msk = None if mask is None else self._entries(mask, size).astype(bool, copy=False)
        ids = self.ids if dom == "V" else None
        partial, combine = K.flat_reduce(op, v, msk, elem, ids)
        partial = self.comm.allreduce(partial, combine)
        return K.finish_reduce(op, partial, elem)

    # ------------------------------------------------------------ edges

    def endpoint(self, arr: np.ndarray, side: str) -> np.ndarray:
        return arr[self.src] if side == "src" else arr[self.dst]

    def mark_endpoints(self, mask, sides: tuple[str, ...]) -> np.ndarray:
        out = np.zeros(self.n, dtype=bool)
        sel = np.flatnonzero(self._entries(mask, self.m))
        if "src" in sides:
            out[self.src[sel]] = True
        if "dst" in sides:
            out[self.dst[sel]] = True
        return out

    # ------------------------------------------------------------ remote reads and writes

    def remote_request(self, ids: np.ndarray) -> np.ndarray:
        self._pending_msgs += int(np.count_nonzero(ids != -1))
        return ids

    def remote_reply(self, arr: np.ndarray, ids: np.ndarray, elem: str) -> np.ndarray:
        pos = self.g.id_to_index(ids)
        ok = pos >= 0
        self._pending_msgs += int(np.count_nonzero(ok))
        default = {"bool": False, "int": 0, "float": 0.0, "vid": -1}[elem]
        vals = arr[np.where(ok, pos, 0)] if len(arr) else np.full(len(ids), default)
        return np.where(ok, vals, default).astype(K.DTYPES[elem], copy=False)

    def remote_mark(self, ids, mask, dom: str) -> np.ndarray:
        size = self.n if dom == "V" else self.m
        ids = self._entries(ids, size)
        if mask is not None:
            ids = ids[np.flatnonzero(self._entries(mask, size))]
        ids = ids[ids != -1]
        self._pending_msgs += len(ids)
        pos = self.g.id_to_index(ids)
        out = np.zeros(self.n, dtype=bool)
        out[pos[pos >= 0]] = True
        return out

    # ------------------------------------------------------------ randomness

    def rand(self, site: int, dom: str, adj: Adjacency | None = None):
        count = self._rand_counts[site]
        self._rand_counts[site] = count + 1
        if dom == "S":
            return float(K.uniform(self.seed, site, count, np.array([0]))[0])
        if dom == "V":
            return K.uniform(self.seed, site, count, self.ids)
        if dom == "E":
            return K.uniform(self.seed, site, count, self.src_ids, self.dst_ids)
        assert adj is not None
        return K.uniform(self.seed, site, count, self.src_ids[adj.eid], self.dst_ids[adj.eid])

    # ------------------------------------------------------------ supersteps

    def end_superstep(self, state: int) -> None:
        """Close the current superstep (after its exchange): record stats, check limits."""
        msgs = self.naive_entries + self._pending_msgs
        rec_bytes = self.naive_entries * self.record_bytes + self._pending_msgs * 8
        now = time.perf_counter()
        self.stats.per_superstep.append(
            SuperstepStat(len(self.stats.per_superstep), state, int(msgs), 0 if self.comm.size == 1 else int(rec_bytes),
                          int(rec_bytes), self.n, now - self._t_last)
        )
        self._t_last = now
        self._pending_msgs = 0
        if self.max_supersteps is not None and len(self.stats.per_superstep) + 1 > self.max_supersteps:
            self.finish(None)
            raise G2PLRuntimeError(
                f"stopped after {self.max_supersteps} supersteps (--max-supersteps); the program had not finished"
            )

    def finish(self, state: int | None) -> None:
        """Record the last superstep (compute only, no exchange)."""
        now = time.perf_counter()
        self.stats.per_superstep.append(
            SuperstepStat(len(self.stats.per_superstep), -1 if state is None else state, 0, 0, 0, self.n, now - self._t_last)
        )
        self.stats.time_s = now - self._t_start
