"""The BSP runtime a generated module runs on (`rt` in generated code).

The driver owns the graph, the communicator, timing and statistics; the
generated module only calls the verbs below.  Vertex arrays hold this rank's
*owned* vertices, edge arrays its *local* edges (those with an owned
endpoint); a ghost exchange extends a vertex array with the values of the
ghost vertices ("ext" arrays).  With one rank nothing is exchanged.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as _sp  # imported here, not in the first superstep that needs a CSR product

from g2pl.compiler.ir import DEFAULTS, ELEM_SIZE  # one definition for the compiler and the runtime
from g2pl.errors import RunStopped
from g2pl.runtime import alloc
from g2pl.runtime import kernels as K
from g2pl.runtime.checkpoint_schema import encode_runtime
from g2pl.runtime.comm import SingleComm
from g2pl.runtime.partition import LocalGraph, whole


@dataclass
class Push:
    """Adjacency entries of the active senders only: receiver, sender (ext index) and edge of each."""

    recv: np.ndarray
    send: np.ndarray
    eid: np.ndarray


class Adjacency:
    """One direction of the local adjacency: CSR rows = owned receiving vertices, nbr in ext index."""

    def __init__(self, indptr: np.ndarray, nbr: np.ndarray, eid: np.ndarray, ext_ids: np.ndarray,
                 reverse: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None) -> None:
        self.seg = K.Segments(indptr)
        self.nbr = nbr
        self.eid = eid
        self._ext_ids = ext_ids
        self._nbr_ids: np.ndarray | None = None
        self._self_ids: np.ndarray | None = None
        self._indptr = indptr
        self._n_ext = len(ext_ids)
        self._mats: dict[str, object] = {}
        self._reverse = reverse  # (indptr over senders, receivers, edges) when the graph already has it
        self._views: list[tuple[np.ndarray, Adjacency]] = []  # (sender mask, its restricted view), newest last

    def sender_counts(self) -> np.ndarray:
        """Adjacency entries per (ext) sender: the records it sends in one exchange."""
        if getattr(self, "_sender_counts", None) is None:
            self._sender_counts = np.diff(self.transpose()[0])
        return self._sender_counts

    def transpose(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(indptr over ext senders, receivers, edges): each sender's entries, for pushing.

        One rank: the other CSR direction of the graph is exactly this.  Several
        ranks: built once in linear time (CSR -> CSC) including ghost senders.
        """
        if self._reverse is None:
            t = _sp.csr_matrix((self.eid + 1, self.nbr, self._indptr), shape=(self.seg.n, self._n_ext)).tocsc()
            self._reverse = (t.indptr.astype(np.int64), t.indices.astype(np.int64), t.data.astype(np.int64) - 1)
        return self._reverse

    def matrix(self, kind: str):
        """The adjacency as a SciPy CSR matrix (rows: receivers, columns: ext senders)."""
        if kind not in self._mats:
            dt = np.float64 if kind == "f" else np.int64
            self._mats[kind] = _sp.csr_matrix((np.ones(len(self.nbr), dtype=dt), self.nbr, self._indptr),
                                             shape=(self.seg.n, self._n_ext))
        return self._mats[kind]

    #: restricted views kept per adjacency (each: a sender mask and its entries)
    VIEWS_KEPT = 2

    def restricted(self, msk: np.ndarray, work: int, frac: float) -> tuple[Adjacency, bool] | None:
        """A smaller adjacency holding every entry whose sender has `msk` (rows and CSR order kept), and
        whether its entries still need the mask; None when the full adjacency (with the mask) is best.

        A reduction over a view gives the same result as the masked reduction over all entries (the
        left-out entries are neutral; sums start from +0.0, so even float sums are bit-identical).  The
        last few views are kept with the sender masks they were made for: a sender set that is a subset
        of one (it shrinks from superstep to superstep, or repeats) uses that view, with the mask while
        its senders still have more than `frac` of the view's entries, else a new view filtered from it
        (cost proportional to the old view: views are made only when the work has shrunk by 1/frac).
        From all entries, a view is made when `work` (the senders' entries) is at most `frac` of them.
        """
        base, bk = self, -1
        for k, (cm, view) in enumerate(self._views):
            if view.entries < base.entries and len(cm) == len(msk) and not np.any(msk > cm):
                base, bk = view, k
        if base is not self:
            self._views.append(self._views.pop(bk))  # most recently used last
            if base.entries == work:  # the same entries: no mask needed
                return base, False
            if work > frac * base.entries:
                return base, True
        elif work > frac * self.entries:
            return None
        keep = np.flatnonzero(msk[base.nbr])
        owner = base.owner[keep]  # rows of the kept entries (ascending): the view's row structure
        indptr = np.zeros(self.seg.n + 1, dtype=np.int64)
        np.cumsum(np.bincount(owner, minlength=self.seg.n), out=indptr[1:])
        view = Adjacency(indptr, base.nbr[keep], None, self._ext_ids)  # a view has no edge ids (unused)
        view.seg._owner = owner
        self._views.append((msk.copy(), view))
        del self._views[:-self.VIEWS_KEPT]
        return view, False

    @property
    def owner(self) -> np.ndarray:
        return self.seg.owner

    @property
    def entries(self) -> int:
        return len(self.nbr)

    @property
    def nbr_ids(self) -> np.ndarray:
        if self._nbr_ids is None:
            self._nbr_ids = self._ext_ids[self.nbr]
        return self._nbr_ids

    @property
    def self_ids(self) -> np.ndarray:
        if self._self_ids is None:
            self._self_ids = self._ext_ids[self.owner]
        return self._self_ids


@dataclass
class RemoteRequest:
    """State between the request and the reply superstep of a remote read."""

    ids: np.ndarray  # requested original IDs, per requesting element
    order: np.ndarray  # requesting elements sorted by owner rank
    send_counts: np.ndarray
    received: np.ndarray  # IDs other ranks asked this rank for
    recv_counts: np.ndarray


@dataclass
class SuperstepStat:
    superstep: int
    state: int
    messages: int
    bytes: int
    record_bytes: int
    active: int
    time_s: float
    comm_s: float = 0.0

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
    per_rank: list[dict] = field(default_factory=list)
    directions: dict = field(default_factory=lambda: {"push": 0, "pull": 0})
    # edgeset: edge sets computed over every edge / re-checked only on their previous members
    edge_sets: dict = field(default_factory=lambda: {"full": 0, "shrunk": 0})

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
            "per_rank": self.per_rank,
            "directions": self.directions,
            "edge_sets": self.edge_sets,
            "per_superstep": [s.as_dict() for s in self.per_superstep],
        }


def _fault_injection(var: str = "G2PL_FAIL_AT") -> tuple[int, int] | None:
    """Testing hooks: G2PL_FAIL_AT=RANK:SUPERSTEP makes that rank raise when that superstep ends;
    G2PL_KILL_AT=RANK:SUPERSTEP makes it die by SIGKILL there."""
    spec = os.environ.get(var)
    if not spec:
        return None
    r, s = spec.split(":")
    return int(r), int(s)


class Runtime:
    """Runtime verbs over one rank's part of a graph."""

    def __init__(self, lg: LocalGraph, module, *, seed: int = 0, comm=None, max_supersteps: int | None = None,
                 progress=None) -> None:
        self.xp = np
        alloc.tune()  # freed temporaries stay in the process between supersteps
        self.progress = progress  # optional callback(stats, final: bool) after every superstep
        self.comm = comm or SingleComm()
        if not isinstance(lg, LocalGraph):  # a whole Graph: the one-rank view of it
            lg = whole(lg)
        self.lg = lg
        self.n = lg.n
        self.m = lg.m
        self.ids = lg.ids
        self.src = lg.src
        self.dst = lg.dst
        self.ext_ids = lg.ext_ids
        self.weight = _weight_view(lg)
        self.seed = int(seed)
        self.max_supersteps = max_supersteps
        self.prune = bool(getattr(module, "PRUNE", False))  # records only where needed, counted per exchange
        self.pack = bool(getattr(module, "PACK", False))  # per-superstep layouts instead of the program record
        self.record_fields: list[tuple[str, str]] = list(getattr(module, "RECORD_FIELDS", []))
        self.record_bytes = 0 if self.pack else int(getattr(module, "RECORD_BYTES", 0))
        self._offsets: dict[str, int] = {}
        off = 0
        for name, elem in self.record_fields:
            self._offsets[name] = off
            off += ELEM_SIZE[elem]
        need_in, need_out = getattr(module, "NAIVE_DIRECTIONS", (True, False))
        self._directions = (bool(need_in), bool(need_out))
        self._rand_counts = [0] * int(getattr(module, "RAND_SITES", 0))
        # naive (-O0) broadcast: every vertex sends one record along every adjacency entry it has
        if lg.directed:
            entries = (len(lg.in_nbr) if need_in else 0) + (len(lg.out_nbr) if need_out else 0)
        else:
            entries = len(lg.in_nbr)
        self._naive_broadcast = bool(getattr(module, "RECORD_BYTES", 0)) and not self.prune
        self.naive_entries = entries if self._naive_broadcast else 0
        self.stats = Stats(ranks=self.comm.size)
        self._pending_msgs = 0
        self._aggs: list[tuple[str, str, str, np.ndarray]] = []
        self._agg_results: list = []
        self._exchanged = False
        self._comm_s = 0.0
        self._active: int | None = None  # vertices that sent in this superstep (pruned exchanges)
        self._work_memo: tuple | None = None  # see _send_work
        self._members: list[tuple[np.ndarray, int, np.ndarray | None]] = []  # see _remember_members
        self._within: dict[int, tuple[list[np.ndarray], np.ndarray]] = {}  # see edges_within
        self._fail_at = _fault_injection()
        self._kill_at = _fault_injection("G2PL_KILL_AT")
        self._push_state: dict[int, bool] = {}
        self._t_last = time.perf_counter()
        self._t_start = self._t_last

    # ------------------------------------------------------------ structure

    def prepare(self) -> None:
        """Build this rank's adjacency structures the program reads (both CSR directions of the local
        part, as one rank has them from the graph) before the run's clock starts: part of loading the
        graph, like building the CSR itself, and done on every rank at once.

        What an earlier run on this graph part left that depends on its values (restricted views for
        its sender sets, endpoint snapshots, sparse buffers) is dropped: every run starts as the first
        one does, so repeated runs time what a fresh `g2pl run` does."""
        lg = self.lg
        for a in getattr(lg, "_adj_cache", {}).values():
            a._views.clear()
        lg.__dict__.pop("_endpoint_bufs", None)
        lg.__dict__.pop("_sparse_bufs", None)
        if lg.size > 1:
            need_in, need_out = self._directions
            for out in {False: [False], True: [d for d, need in ((False, need_in), (True, need_out)) if need]}[
                    bool(self.lg.directed)]:
                self.adj(out).transpose()
            # MPI sets up its transport between two ranks on their first exchange: one byte per mirror
            # now, so that cost is part of loading, not of the first superstep
            counted = (self.comm.bytes_sent, self.comm.bytes_received)
            self.comm.alltoallv(np.zeros(int(lg.send_counts.sum()), dtype=np.uint8), lg.send_counts, lg.recv_counts)
            self.comm.bytes_sent, self.comm.bytes_received = counted  # not program traffic
        self.comm.barrier()  # every rank has its part ready: the clock starts on all ranks together
        self._t_start = self._t_last = time.perf_counter()

    @property
    def src_ids(self) -> np.ndarray:
        """Original ID of each local edge's u endpoint (computed on first use, kept on the graph part)."""
        if getattr(self.lg, "_src_ids", None) is None:
            self.lg._src_ids = self.lg.ext_ids[self.lg.src]
        return self.lg._src_ids

    @property
    def dst_ids(self) -> np.ndarray:
        if getattr(self.lg, "_dst_ids", None) is None:
            self.lg._dst_ids = self.lg.ext_ids[self.lg.dst]
        return self.lg._dst_ids

    def adj(self, out: bool = False) -> Adjacency:
        out = bool(out) and self.lg.directed
        if not hasattr(self.lg, "_adj_cache"):  # kept on the graph part: later runs reuse matrices
            self.lg._adj_cache = {}
        a = self.lg._adj_cache.get(out)
        if a is None:
            lg = self.lg
            csr = {True: (lg.out_indptr, lg.out_nbr, lg.out_eid), False: (lg.in_indptr, lg.in_nbr, lg.in_eid)}
            reverse = csr[not out] if lg.n_ext == lg.n else None  # one rank: the other direction is the transpose
            a = Adjacency(*csr[out], lg.ext_ids, reverse)
            self.lg._adj_cache[out] = a
        return a

    # ------------------------------------------------------------ conversions

    def scalar(self, x, elem: str):
        if isinstance(x, np.ndarray):
            x = x.item()
        if elem == "bool":
            return bool(x)
        if elem == "float":
            return float(x)
        return _int64(x)

    def _as(self, x, elem: str, size: int) -> np.ndarray:
        dt = K.DTYPES[elem]
        if isinstance(x, np.ndarray) and x.ndim == 1:
            if x.dtype != dt:
                x = self.to_int(x) if dt is np.int64 and x.dtype.kind == "f" else x.astype(dt)
            return x
        return np.full(size, x, dtype=dt)

    def as_v(self, x, elem: str) -> np.ndarray:
        return self._as(x, elem, self.n)

    def members_if_few(self, mask) -> np.ndarray | None:
        """Indices where the bool array `mask` holds when they are under 1/8 of it, else None: then
        `mask && rest` evaluates `rest` at those elements only (`bools_at`)."""
        if not isinstance(mask, np.ndarray) or mask.ndim != 1:
            return None
        return self._members_if_few(mask)

    def bools_at(self, idx: np.ndarray, vals, dom: str) -> np.ndarray:
        """A bool V/E array: `vals` at `idx`, false elsewhere."""
        out = np.zeros(self.n if dom == "V" else self.m, dtype=bool)
        out[idx] = vals
        if np.ndim(vals):
            self._remember_members(out, idx[np.asarray(vals, dtype=bool)])
        return out

    #: bool arrays whose member count (and index list, when listed) the runtime knows, by identity
    MEMBERS_KEPT = 4

    def _remember_members(self, arr: np.ndarray, idx: np.ndarray | None, count: int | None = None) -> None:
        """Remember that `arr` (a bool array, never written once made: program values are immutable)
        holds exactly at `idx` (or at `count` elements, not listed), so later lists cost nothing."""
        self._members = [x for x in self._members if x[0] is not arr][-(self.MEMBERS_KEPT - 1):]
        self._members.append((arr, len(idx) if idx is not None else count, idx))

    def _known(self, arr) -> tuple[int | None, np.ndarray | None]:
        """(member count, index list) remembered for `arr`: None where not known."""
        for a, count, idx in self._members:
            if a is arr:
                return count, idx
        return None, None

    def _members_if_few(self, mask: np.ndarray) -> np.ndarray | None:
        """Indices where the bool array `mask` holds when they are at most 1/8 of it, else None;
        counted and listed once per array (every caller asks the same of one array)."""
        count, idx = self._known(mask)
        if count is None:
            count = int(np.count_nonzero(mask))
        if count * 8 > len(mask):
            if idx is None:
                self._remember_members(mask, None, count)
            return None
        if idx is None:
            idx = np.flatnonzero(mask)
            self._remember_members(mask, idx)
        return idx

    def edges_within(self, parts: tuple, site: int) -> np.ndarray:
        """Bool per local edge: the edge's endpoint is in the set for every (ext bool vertex array,
        side) of `parts` (the edgeset pass).  Such sets usually only shrink from round to round, and
        then so does the answer: when every array is a subset of what it was at this site's previous
        call, only the previous answer's edges are checked again (when they are few); otherwise every
        edge is."""
        ne = self.lg.n_ext
        arrs = [self._entries(x, ne).astype(bool, copy=False) for x, _side in parts]
        ends = [self.src if side == "src" else self.dst for _x, side in parts]
        prev = self._within.get(site)
        # re-checking a listed edge costs several gathers: worth it while they are a few of all edges
        if (prev is not None and len(prev[1]) * 4 < self.m
                and all(not np.any(a > s) for a, s in zip(arrs, prev[0]))):
            cand = prev[1]
            keep = np.ones(len(cand), dtype=bool)
            for a, e in zip(arrs, ends):
                keep &= a[e[cand]]
            members = cand[keep]
            out = np.zeros(self.m, dtype=bool)
            out[members] = True
            self.stats.edge_sets["shrunk"] += 1
        else:
            self.stats.edge_sets["full"] += 1
            if all(a.all() for a in arrs):  # every vertex is in every set (as sets usually start)
                out, members = np.ones(self.m, dtype=bool), None
            else:
                out = arrs[0][ends[0]]
                for a, e in zip(arrs[1:], ends[1:]):
                    out &= a[e]
                members = np.flatnonzero(out) if np.count_nonzero(out) * 4 < self.m else None
        if members is None:  # too many to list: the next call checks every edge
            self._within.pop(site, None)
        else:
            self._within[site] = ([a.copy() for a in arrs], members)
            self._remember_members(out, members)
        return out

    def as_e(self, x, elem: str) -> np.ndarray:
        return self._as(x, elem, self.m)

    def take(self, arr: np.ndarray, idx: np.ndarray) -> np.ndarray:
        """`arr[idx]`; a constant array (the stride-0 weights of an unweighted graph) gives a stride-0
        view of the same shape instead of a gather (4.7 ms per 7.6M entries at kron:18)."""
        if arr.ndim == 1 and arr.strides[0] == 0 and len(arr):
            return np.broadcast_to(arr[:1], np.shape(idx))
        return arr[idx]

    def where(self, cond, a, b):
        """`cond ? a : b` elementwise (without per-element branches, see kernels.select)."""
        return K.select(cond, a, b)

    def to_int(self, x):
        """`int(x)`: see K.float_to_int (floats); bools and vids as they are.  Scalars stay np.int64."""
        a = np.asarray(x)
        r = K.float_to_int(a) if a.dtype.kind == "f" else a.astype(np.int64)
        return r if r.ndim else r[()]

    def to_float(self, x):
        a = np.asarray(x).astype(np.float64)
        return a if a.ndim else float(a)

    def mod(self, a, b):
        with np.errstate(all="ignore"):
            r = np.remainder(a, b)
            r = np.where(np.asarray(b) == 0, 0, r)
        return r if np.ndim(r) else np.int64(r)

    def _entries(self, x, k: int) -> np.ndarray:
        if isinstance(x, np.ndarray) and x.ndim == 1:
            return x
        return np.full(k, x)

    # ------------------------------------------------------------ ghost exchange

    def exchange_fields(self, arrays: tuple, names: tuple[str, ...], send=None) -> list[np.ndarray]:
        """Ext arrays (owned values followed by ghost values) of vertex arrays: one record per mirror.

        -O0 (no pack): the record is the program's whole record (all message
        fields, unused ones zero), as the papers' naive code sends.  With pack:
        only these fields, bools as bits.  With `send` (prune): only mirrors
        whose sender condition holds send, after a presence bitmap; the
        presence (ext) array is returned last.
        """
        self._exchanged = True
        lg = self.lg
        arrays = tuple(self._entries(a, self.n) for a in arrays)
        sendm = None if send is None else self._entries(send, self.n).astype(bool, copy=False)
        if lg.size == 1:
            return list(arrays) + ([sendm] if sendm is not None else [])
        t0 = time.perf_counter()
        if self.pack:
            out = self._exchange_packed(arrays, sendm)
        elif not self.prune and lg.nv_send_idx is not None:
            out = self._exchange_per_entry(arrays, names)
        else:
            out = self._exchange_records(arrays, names, sendm)
        self._comm_s += time.perf_counter() - t0
        return out

    def _exchange_per_entry(self, arrays, names) -> list[np.ndarray]:
        """-O0/-O1 transport: one whole program record per cross-rank adjacency entry (Pregel's naive
        messages); the receiver keeps one value per ghost."""
        lg = self.lg
        layout, rb = self._layout(arrays, names)
        buf = _pack_records(arrays, layout, rb, lg.nv_send_idx)
        recv, _ = self.comm.alltoallv(buf.reshape(-1).view(f"V{rb}"), lg.nv_send_counts, lg.nv_recv_counts)
        rbytes = recv.view(np.uint8).reshape(-1, rb)
        out = []
        for a, (off, e) in zip(arrays, layout):
            ghosts = np.zeros(lg.n_ghosts, dtype=K.DTYPES[e])
            ghosts[lg.nv_recv_ghost] = _unpack_field(rbytes, off, e)
            out.append(np.concatenate([a.astype(K.DTYPES[e], copy=False), ghosts]))
        return out

    def _layout(self, arrays, names) -> tuple[list[tuple[int, str]], int]:
        """(offset, element type) of each field in a record, and the record size: the program's whole
        record when one is defined (-O0 style), else just these fields back to back."""
        elems = [_elem_of(a) for a in arrays]
        if self.record_bytes:
            return [(self._offsets.get(nm, 0), e) for nm, e in zip(names, elems)], max(self.record_bytes, 1)
        layout, rb = [], 0
        for e in elems:
            layout.append((rb, e))
            rb += ELEM_SIZE[e]
        return layout, max(rb, 1)

    def _senders(self, sendm) -> tuple[np.ndarray, np.ndarray, tuple | None]:
        """Mirrors that send (all, or those whose sender condition holds), counts per destination, and
        the presence bitmaps (None when everyone sends)."""
        lg = self.lg
        if sendm is None:
            return lg.send_idx, lg.send_counts, None
        sel = sendm[lg.send_idx]
        bits = _packbits_segments(sel, lg.send_counts)
        return lg.send_idx[sel], _segment_counts(sel, lg.send_counts), bits

    def _exchange_records(self, arrays, names, sendm) -> list[np.ndarray]:
        """Fixed-size records (the program's record at -O0), optionally only from present mirrors."""
        lg = self.lg
        layout, rb = self._layout(arrays, names)
        idx, counts, bits = self._senders(sendm)
        buf = _pack_records(arrays, layout, rb, idx)
        present = None
        if bits is not None:
            present = self._recv_presence(bits)
            recv, _ = self.comm.alltoallv(buf.reshape(-1).view(f"V{rb}"), counts)
        else:
            recv, _ = self.comm.alltoallv(buf.reshape(-1).view(f"V{rb}"), counts, lg.recv_counts)
        rbytes = recv.view(np.uint8).reshape(-1, rb)
        out = [self._ext(a, _unpack_field(rbytes, off, e), present, e) for a, (off, e) in zip(arrays, layout)]
        if sendm is not None:
            out.append(np.concatenate([sendm, present]))
        return out

    def _exchange_packed(self, arrays, sendm) -> list[np.ndarray]:
        """Only the needed fields: bool fields bit-packed, others as values, per destination rank."""
        lg = self.lg
        idx, counts, bits = self._senders(sendm)
        present = self._recv_presence(bits) if bits is not None else None
        n_recv = int(lg.recv_counts.sum()) if present is None else int(np.count_nonzero(present))
        out = []
        for a in arrays:
            e = _elem_of(a)
            vals = a[idx]
            if e == "bool":
                packed = _packbits_segments(vals, counts)
                recv, rc = self.comm.alltoallv(packed[0], packed[1])
                got = _unpackbits_segments(recv, rc, self._recv_value_counts(present))
            else:
                recv, _ = self.comm.alltoallv(vals.astype(K.DTYPES[e]), counts, self._recv_value_counts(present))
                got = recv
            assert len(got) == n_recv
            out.append(self._ext(a, got, present, e))
        if sendm is not None:
            out.append(np.concatenate([sendm, present]))
        return out

    def _recv_presence(self, bits: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
        """Presence of each ghost (in ghost order), from the senders' bitmaps."""
        recv, rc = self.comm.alltoallv(bits[0], bits[1])
        present = _unpackbits_segments(recv, rc, self.lg.recv_counts)
        self._present_counts = _segment_counts(present, self.lg.recv_counts)
        return present

    def _recv_value_counts(self, present: np.ndarray | None) -> np.ndarray:
        return self.lg.recv_counts if present is None else self._present_counts

    def _ext(self, a: np.ndarray, ghost_vals: np.ndarray, present: np.ndarray | None, e: str) -> np.ndarray:
        dt = K.DTYPES[e]
        if present is None:
            ghosts = ghost_vals
        else:
            ghosts = np.zeros(self.lg.n_ghosts, dtype=dt)
            ghosts[np.flatnonzero(present)] = ghost_vals
        return np.concatenate([a.astype(dt, copy=False), ghosts.astype(dt, copy=False)])

    def count_messages(self, adj: Adjacency | None, present=None, edges=None) -> None:
        """Records sent in this exchange (prune): along adjacency entries whose sender sends, or
        2 per local edge owned here where `edges` holds (endpoint exchanges)."""
        if adj is None:
            owned = self.lg.edge_owned
            if edges is None:
                k = self.m if self.lg.size == 1 else int(np.count_nonzero(owned))
            elif self.lg.size == 1:  # every local edge is owned
                k = int(np.count_nonzero(self._entries(edges, self.m)))
            else:
                k = int(np.count_nonzero(self._entries(edges, self.m) & owned))
            self._pending_msgs += 2 * k
            return
        if present is None:
            self._pending_msgs += adj.entries
            return
        senders, _lens, work = self._send_work(adj, present)
        self._pending_msgs += work
        owned = int(np.searchsorted(senders, self.n))  # senders are ascending: owned ones come first
        self._active = owned if self._active is None else max(self._active, owned)

    def _send_work(self, adj: Adjacency, present) -> tuple[np.ndarray, np.ndarray, int]:
        """(senders, their entry counts, total entries) of the ext senders where `present` holds.

        Message counting, the push/pull choice and the early-exit pull's budget all need
        it for the same array in one superstep: computed once (remembered by identity
        until the superstep ends; the arrays are not written in between)."""
        memo = self._work_memo
        if memo is not None and memo[0] is adj and memo[1] is present:
            return memo[2]
        senders = np.flatnonzero(self._entries(present, self.lg.n_ext))
        lens = adj.sender_counts()[senders]
        got = (senders, lens, int(lens.sum()))
        self._work_memo = (adj, present, got)
        return got

    # ------------------------------------------------------------ neighbourhood aggregation

    def nbr_reduce(self, op: str, value, mask, adj: Adjacency, elem: str, entries=None) -> np.ndarray:
        """Aggregate per-entry values (over `entries` only when pushing)."""
        self._exchanged = True
        if entries is not None:
            k = len(entries.recv)
            v = self._entries(value, k)
            msk = None if mask is None else self._entries(mask, k).astype(bool, copy=False)
            ids = self.ext_ids[entries.send] if op in ("argmin", "argmax") else None
            return K.scatter_reduce(op, entries.recv, v, msk, self.n, elem, ids)
        k = adj.entries
        v = self._entries(value, k)
        msk = None if mask is None else self._entries(mask, k).astype(bool, copy=False)
        ids = adj.nbr_ids if op in ("argmin", "argmax") else None
        return K.seg_reduce(adj.seg, op, v, msk, elem, ids)

    def entry_index(self, adj: Adjacency, name: str, entries: Push | None) -> np.ndarray:
        """Sender (nbr), receiver (owner) or edge (eid) of every entry processed (all, or the pushed ones)."""
        if entries is None:
            return getattr(adj, name)
        return {"nbr": entries.send, "owner": entries.recv, "eid": entries.eid}[name]

    # Beamer/Ligra rule: push while the active senders' entries are few; hysteresis keeps a choice
    # until the work crosses the other threshold.
    PUSH_BELOW = 1 / 20
    PULL_ABOVE = 1 / 12
    # pulling per entry (head evaluated on every adjacency entry) costs several gathers per entry
    PUSH_BELOW_PER_ENTRY = 1 / 2
    PULL_ABOVE_PER_ENTRY = 2 / 3

    def active_entries(self, adj: Adjacency, present, site: int, per_entry: bool = False) -> Push | None:
        """Entries to process: None (pull: every entry) or those of the active senders (push)."""
        if present is None:
            return None
        senders, lens, work = self._send_work(adj, present)
        work += len(senders)
        indptr, recv, eid = adj.transpose()
        pushing = self._push_state.get(site, False)
        if per_entry:
            frac = self.PULL_ABOVE_PER_ENTRY if pushing else self.PUSH_BELOW_PER_ENTRY
        else:
            frac = self.PULL_ABOVE if pushing else self.PUSH_BELOW
        limit = frac * max(adj.entries, 1)
        pushing = work < limit
        self._push_state[site] = pushing
        self.stats.directions["push" if pushing else "pull"] += 1
        if not pushing:
            return None
        pos = K.expand_ranges(indptr[senders], lens)
        return Push(recv[pos], np.repeat(senders, lens), eid[pos])

    #: pull over a restricted view of the adjacency (see Adjacency.restricted) when the senders' entries
    #: are at most this fraction of all entries
    RESTRICT_BELOW = 1 / 2

    def nbr_combine(self, op: str, value, mask, adj: Adjacency, elem: str, entries=None, recv=None) -> np.ndarray:
        """Aggregate message values computed per sender (`value`, `mask` over ext vertices).

        Sums, counts and or/and are CSR mat-vec products (rows in neighbour
        order, so the result does not depend on the number of ranks); the
        others gather the values onto adjacency entries and reduce segments.
        When only some senders send, the pull runs over just their entries
        (a restricted view of the adjacency, kept while the sender set shrinks).
        `recv` (bool per vertex, or a scalar): only these receivers use the
        result, so an or/and pull skips the others (their result is unspecified).
        """
        self._exchanged = True
        ne = self.lg.n_ext
        v = self._entries(value, ne)
        msk = None if mask is None else self._entries(mask, ne).astype(bool, copy=False)
        if entries is not None:  # push: only the active senders' entries
            snd = entries.send
            ids = self.ext_ids[snd] if op in ("argmin", "argmax") else None
            return K.scatter_reduce(op, entries.recv, v[snd], None if msk is None else msk[snd], self.n, elem, ids)
        if op in ("or", "and"):
            if np.ndim(value) == 0 and msk is not None:  # a constant: the senders are the mask itself
                x = msk if bool(value) == (op == "or") else np.zeros(ne, dtype=bool)
            else:
                hit = v.astype(bool) if op == "or" else ~v.astype(bool)
                x = hit if msk is None else hit & msk
            rows = None  # every receiver
            if recv is not None and np.ndim(recv):
                rows = np.flatnonzero(recv)
            elif recv is not None and not recv:  # a scalar false: no receiver uses the result
                rows = np.zeros(0, dtype=np.int64)
            found = self._any_in(adj, x, rows)
            return found if op == "or" else ~found
        if msk is not None and adj.entries:
            work = self._send_work(adj, msk)[2]
            if work == adj.entries:  # every entry's sender sends: no mask
                msk = None
            else:
                got = adj.restricted(msk, work, self.RESTRICT_BELOW)
                if got is not None:
                    adj, masked = got
                    msk = msk if masked else None  # no mask: every entry of the view is sent
        if op == "count" or op == "sum" and elem == "int" and isinstance(value, (int, np.integer)):
            # counts (times a constant: int64 wrap-around as a sum); with a mask, one float mat-vec
            # (exact below 2**53 entries per row) is the fastest way to count
            if msk is None:
                cnt = adj.seg.counts.astype(np.int64)
            else:
                cnt = np.rint(adj.matrix("f") @ msk.astype(np.float64)).astype(np.int64)
            return cnt if op == "count" else cnt * np.int64(value)
        if op in ("count", "avg", "sum"):
            kind = "f" if (op == "avg" or v.dtype.kind == "f") else "i"
            dt = np.float64 if kind == "f" else np.int64
            xs = v.astype(dt, copy=False)
            if msk is not None:
                xs = K.select(msk, xs, dt(0))
            total = adj.matrix(kind) @ xs
            if op == "sum":
                return total.astype(K.DTYPES[elem], copy=False)
            cnt = adj.seg.counts if msk is None else adj.matrix("i") @ msk.astype(np.int64)
            with np.errstate(all="ignore"):
                return np.where(cnt == 0, np.nan, total / np.maximum(cnt, 1))
        if op in ("min", "max") and elem in ("int", "float", "vid") and v.dtype.kind in "iuf":
            return self._pull_minmax(op, v, msk, adj, elem)
        if op in ("argmin", "argmax") and v.dtype.kind in "iub":
            packed = self._packed_arg(op, v, msk, adj)
            if packed is not None:
                return packed
        ids = adj.nbr_ids if op in ("argmin", "argmax") else None
        return K.seg_reduce(adj.seg, op, v[adj.nbr], None if msk is None else msk[adj.nbr], elem, ids)

    def _any_in(self, adj: Adjacency, x: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
        """Per receiver: does any sender along its entries have `x`?  Pulled with early exit (only over
        `rows` when given: the others stay False); when the rows still unresolved after the first rounds
        hold more entries than the senders with `x` have, those senders push instead (same answer at
        every receiver, less work)."""
        if not adj.entries:
            return np.zeros(self.n, dtype=bool)
        senders, lens, work = self._send_work(adj, x)
        found = K.any_pull(adj.seg, adj.nbr, x, budget=work, rows=rows)
        if found is not None:
            return found
        indptr, recv, _eid = adj.transpose()
        out = np.zeros(self.n, dtype=bool)
        out[recv[K.expand_ranges(indptr[senders], lens)]] = True
        return out

    def _pull_minmax(self, op: str, v: np.ndarray, msk, adj: Adjacency, elem: str) -> np.ndarray:
        """min/max pulled in one gather: senders outside the mask carry the identity, so every entry
        can be reduced as it is; only rows left at the identity are checked for being empty."""
        dt = np.dtype(K.DTYPES[elem])
        vv = v.astype(dt, copy=False)
        ident = K.identity(op, dt)
        ufunc = np.minimum if op == "min" else np.maximum
        i32 = np.iinfo(np.int32)
        if dt.kind == "i" and len(vv) and adj.entries > len(vv) and i32.min < vv.min() and vv.max() < i32.max:
            # values strictly inside int32: gather and reduce half the bytes; the int32 identity
            # cannot be a value, so it maps back to the int64 one exactly
            ident32 = i32.max if op == "min" else i32.min
            v32 = vv.astype(np.int32)
            if msk is not None:
                v32 = K.select(msk, v32, np.int32(ident32))
            r32 = adj.seg.gather_reduce(ufunc, v32, adj.nbr, ident32)
            r = r32.astype(np.int64)
            r[r32 == ident32] = ident
        else:
            if msk is not None:
                vv = K.select(msk, vv, dt.type(ident))
            r = adj.seg.gather_reduce(ufunc, vv, adj.nbr, ident)
        empty_val = K.empty_value(op, elem)
        if empty_val != ident:  # vid: an empty row is -1, not the identity
            rows = np.flatnonzero(r == ident)
            if len(rows):
                if msk is None:
                    empty = adj.seg.counts[rows] == 0
                else:
                    starts = adj.seg.indptr[rows]
                    lens = adj.seg.indptr[rows + 1] - starts
                    sent = msk[adj.nbr[K.expand_ranges(starts, lens)]]
                    nz = np.flatnonzero(lens)
                    empty = np.ones(len(rows), dtype=bool)
                    if len(nz):
                        empty[nz] = np.add.reduceat(sent.astype(np.int64), (np.cumsum(lens) - lens)[nz]) == 0
                r[rows[empty]] = empty_val
        return r

    def _packed_arg(self, op: str, v: np.ndarray, msk, adj: Adjacency) -> np.ndarray | None:
        """argmin/argmax of small integers in one pass: each sender's (value, ID rank) packed into one
        int64 key, so the smallest key is the best value with ties to the smaller original ID."""
        ne = self.lg.n_ext
        if ne >= 2**31 or len(v) == 0:
            return None
        lo, hi = int(v.min()), int(v.max())
        if hi - lo >= 2**31:
            return None
        lg = self.lg
        if getattr(lg, "_id_rank", None) is None:  # rank of each ext vertex by original ID (kept on the graph)
            order = np.argsort(lg.ext_ids, kind="stable")
            lg._id_rank = np.empty(ne, dtype=np.int64)
            lg._id_rank[order] = np.arange(ne, dtype=np.int64)
            lg._rank_id = lg.ext_ids[order]
        val = (v.astype(np.int64) - lo) if op == "argmin" else (hi - v.astype(np.int64))
        out = np.full(self.n, -1, dtype=np.int64)
        if (hi - lo + 1) * ne < 2**31 - 1:  # the keys fit in int32: val * ne + rank, half the bytes to move
            key32 = (val * ne + lg._id_rank).astype(np.int32)
            none32 = np.iinfo(np.int32).max  # larger than every key
            if msk is not None:
                key32 = K.select(msk, key32, np.int32(none32))
            best32 = adj.seg.gather_reduce(np.minimum, key32, adj.nbr, none32)
            found = np.flatnonzero(best32 != none32)
            out[found] = lg._rank_id[best32[found].astype(np.int64) % ne]
            return out
        key = (val << 32) | lg._id_rank
        if msk is not None:
            key = K.select(msk, key, K.INT64_MAX)
        best = adj.seg.gather_reduce(np.minimum, key, adj.nbr, K.INT64_MAX)
        found = best != K.INT64_MAX
        out[found] = lg._rank_id[best[found] & 0xFFFFFFFF]
        return out

    # ------------------------------------------------------------ global aggregation (aggregators)

    def aggregate(self, op: str, value, mask, dom: str, elem: str) -> int:
        """Contribute this rank's partial; the value is available after `end_superstep` via `result`."""
        size = self.n if dom == "V" else self.m
        v = self._entries(value, size)
        msk = None if mask is None else self._entries(mask, size).astype(bool, copy=False)
        if dom == "E" and self.lg.size > 1:  # every edge is counted once, by the rank owning its u endpoint
            msk = self.lg.edge_owned if msk is None else (msk & self.lg.edge_owned)
        ids = self.ids if dom == "V" else None
        vk = K.value_kind(op, v, elem)
        self._aggs.append((op, elem, vk, K.partial(op, v, msk, elem, ids, vk)))
        return len(self._aggs) - 1

    def result(self, handle: int):
        r = self._agg_results[handle]
        return _int64(r) if isinstance(r, int) and not isinstance(r, bool) else r

    def _reduce_aggregators(self) -> None:
        if not self._aggs:
            self._agg_results = []
            return
        t0 = time.perf_counter()
        layout = tuple((op, vk) for op, _e, vk, _p in self._aggs)
        buf = np.concatenate([p for *_x, p in self._aggs]).astype(np.int64)
        res = self.comm.allreduce_partials(buf, layout)
        self._agg_results = [K.finish(op, e, vk, res[2 * j:2 * j + 2]) for j, (op, e, vk, _p) in enumerate(self._aggs)]
        self._aggs = []
        self._comm_s += time.perf_counter() - t0

    # ------------------------------------------------------------ edges

    def endpoints(self, arrays: tuple[np.ndarray, ...], names: tuple[str, ...]) -> list[np.ndarray]:
        """Ext arrays for reading vertex values at local edges' endpoints (`ext[rt.src]`, `ext[rt.dst]`)."""
        return self.exchange_fields(arrays, names)

    def at_endpoint(self, ext: np.ndarray, side: str, need=None) -> np.ndarray:
        """Vertex values (ext array) at each local edge's `side` endpoint; with `need`, only where the
        values will be used (elsewhere zeros), gathering just those edges when they are few."""
        ends = self.src if side == "src" else self.dst
        if need is not None:
            idx = self._needed_edges(need)
            if idx is not None:
                out = self._sparse_buffer(("at_endpoint", side), self.m, ext.dtype, idx)
                out[idx] = ext[ends[idx]]
                return out
        if self.lg.size == 1 and isinstance(ext, np.ndarray) and ext.ndim == 1 and len(ext) == self.n:
            return self._endpoint_update(ext, side, ends)
        return ext[ends]

    def _endpoint_update(self, ext: np.ndarray, side: str, ends: np.ndarray) -> np.ndarray:
        """`ext[ends]` (one rank), updated from an earlier answer: programs usually read the same vertex
        array at edge endpoints every round while only a few vertices change.  Two (snapshot, answer)
        buffers are kept per side; one the program no longer holds is brought up to date by
        re-gathering only the edges at the vertices whose value changed (bitwise) since its snapshot."""
        lg = self.lg
        bufs = lg.__dict__.setdefault("_endpoint_bufs", {})
        slots = bufs.setdefault((side, ext.dtype.str), [])
        for k in range(len(slots)):
            if sys.getrefcount(slots[k][1]) != _FREE_REFS:
                continue
            snap, out = slots[k]
            a, b = _bits_view(ext), _bits_view(snap)
            changed = np.flatnonzero(a != b)
            # edges at a changed vertex: its out-CSR (src) / in-CSR (dst) row lists them (undirected:
            # every incident edge, a superset)
            indptr, eid = (lg.out_indptr, lg.out_eid) if side == "src" else (lg.in_indptr, lg.in_eid)
            starts = indptr[changed]
            lens = indptr[changed + 1] - starts
            if int(lens.sum()) * 16 < self.m:  # scattered re-gathers cost several times a sequential one
                e = eid[K.expand_ranges(starts, lens)]
                out[e] = ext[ends[e]]
            else:
                np.take(ext, ends, out=out, mode="clip")  # (valid indices; "clip" writes `out` directly)
            snap[changed] = ext[changed]
            slots[k] = (snap, out)
            return out
        out = ext[ends]
        if len(slots) < 2:
            slots.append((ext.copy(), out))
        return out

    def _sparse_buffer(self, key, size: int, dtype, idx: np.ndarray) -> np.ndarray:
        """A zero array of `size` about to be written at `idx` only: one of two buffers kept per `key`
        when the program no longer holds it (only its previously written entries are cleared), else a
        new one.  Saves zeroing (and faulting in) a full-length array every superstep."""
        bufs = self.lg.__dict__.setdefault("_sparse_bufs", {})
        slots = bufs.setdefault((key, size, np.dtype(dtype).str), [])
        for k in range(len(slots)):
            if sys.getrefcount(slots[k][0]) == _FREE_REFS:  # nothing but this list holds it
                buf, prev = slots[k]
                buf[prev] = 0
                slots[k] = (buf, idx)
                return buf
        buf = np.zeros(size, dtype=dtype)
        if len(slots) < 2:
            slots.append((buf, idx))
        return buf

    def _needed_edges(self, need) -> np.ndarray | None:
        """Indices of the edges where `need` holds when they are few (at most 1/8), else None (one
        superstep usually reads several endpoints under the same `need`: see _members_if_few)."""
        if np.ndim(need) == 0:  # a constant (a scalar or 0-d array): every edge, or none
            return None if need else np.zeros(0, dtype=np.int64)
        return self._members_if_few(need)

    def mark_endpoints(self, mask, sides: tuple[str, ...]) -> np.ndarray:
        out = np.zeros(self.n, dtype=bool)
        sel = self._known(mask)[1]
        if sel is None:
            sel = np.flatnonzero(self._entries(mask, self.m))
        for side in sides:
            ends = (self.src if side == "src" else self.dst)[sel]
            out[ends[ends < self.n]] = True  # ghost endpoints are marked by the rank that owns them
        return out

    # ------------------------------------------------------------ remote reads and writes

    def _route(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Send requested IDs (not -1) to their owners: (order, send_counts, received IDs, recv_counts)."""
        valid = np.flatnonzero(ids != -1)
        owners = self.lg.owner_of(ids[valid]) if len(valid) else np.zeros(0, np.int64)
        order = valid[np.argsort(owners, kind="stable")]
        send_counts = np.bincount(owners, minlength=self.comm.size).astype(np.int64)
        t0 = time.perf_counter()
        received, recv_counts = self.comm.alltoallv(ids[order].astype(np.int64), send_counts)
        self._comm_s += time.perf_counter() - t0
        return order, send_counts, received, recv_counts

    def remote_request(self, ids: np.ndarray) -> RemoteRequest:
        self._exchanged = True
        ids = np.asarray(ids, dtype=np.int64)
        order, sc, received, rc = self._route(ids)
        self._pending_msgs += len(order)
        return RemoteRequest(ids, order, sc, received, rc)

    def remote_reply(self, arr: np.ndarray, rq: RemoteRequest, elem: str) -> np.ndarray:
        self._exchanged = True
        default = DEFAULTS[elem]
        dt = K.DTYPES[elem]
        pos = self.lg.id_to_local(rq.received)
        ok = pos >= 0
        vals = np.where(ok, arr[np.where(ok, pos, 0)] if len(arr) else default, default).astype(dt)
        self._pending_msgs += int(np.count_nonzero(ok))
        t0 = time.perf_counter()
        back, _ = self.comm.alltoallv(vals, rq.recv_counts, rq.send_counts)
        self._comm_s += time.perf_counter() - t0
        out = np.full(len(rq.ids), default, dtype=dt)
        out[rq.order] = back
        return out

    def remote_mark(self, ids, mask, dom: str) -> np.ndarray:
        self._exchanged = True
        size = self.n if dom == "V" else self.m
        ids = self._entries(ids, size).astype(np.int64)
        if mask is not None:
            ids = ids[np.flatnonzero(self._entries(mask, size))]
        if dom == "E" and self.lg.size > 1:  # each edge sends once, from the rank owning its u endpoint
            keep = self.lg.edge_owned if mask is None else self.lg.edge_owned[np.flatnonzero(self._entries(mask, size))]
            ids = ids[keep]
        _order, _sc, received, _rc = self._route(ids)
        self._pending_msgs += int(np.count_nonzero(ids != -1))
        pos = self.lg.id_to_local(received)
        out = np.zeros(self.n, dtype=bool)
        out[pos[pos >= 0]] = True
        return out

    # ------------------------------------------------------------ randomness

    def rand(self, site: int, dom: str, adj: Adjacency | None = None, entries=None):
        count = self._rand_counts[site]
        self._rand_counts[site] = count + 1
        if dom == "S":
            return float(K.uniform(self.seed, site, count, np.array([0]))[0])
        if dom == "V":
            return K.uniform(self.seed, site, count, self.ids)
        if dom == "E":
            return K.uniform(self.seed, site, count, self.src_ids, self.dst_ids)
        assert adj is not None
        eid = adj.eid if entries is None else entries.eid
        return K.uniform(self.seed, site, count, self.src_ids[eid], self.dst_ids[eid])

    # ------------------------------------------------------------ supersteps

    def end_superstep(self, state: int) -> None:
        """Close the current superstep: combine aggregators (one Allreduce), record stats, check limits."""
        # decided from the program alone (never from this rank's share of the graph): every rank must
        # make the same collective calls, or they wait for each other forever
        if self._naive_broadcast and not self._exchanged and self.lg.size > 1:
            self.exchange_fields((), ())  # without prune every superstep sends its record to every mirror
        self._reduce_aggregators()
        self._work_memo = None
        msgs = self.naive_entries + self._pending_msgs
        rec_bytes = self.naive_entries * self.record_bytes + self._pending_msgs * 8
        now = time.perf_counter()
        i = len(self.stats.per_superstep)
        active = self.n if self._active is None else self._active
        self.stats.per_superstep.append(SuperstepStat(
            i, state, int(msgs), int(self.comm.bytes_sent), int(rec_bytes), int(active), now - self._t_last,
            self._comm_s))
        self._active = None
        self.comm.bytes_sent = 0
        self._t_last = now
        self._pending_msgs = 0
        self._exchanged = False
        self._comm_s = 0.0
        if self.progress is not None:
            self.progress(self.stats, False)
        if self._fail_at is not None and self._fail_at == (self.comm.rank, i):
            raise RuntimeError(f"injected failure on rank {self.comm.rank} at superstep {i} (G2PL_FAIL_AT)")
        if self._kill_at is not None and self._kill_at == (self.comm.rank, i):
            os.kill(os.getpid(), signal.SIGKILL)  # testing hook G2PL_KILL_AT: a crash at a chosen superstep
        limit = getattr(self, "time_limit", None)
        if limit is not None and self.comm.allreduce_partials(
                np.array([int(now - self._t_start > limit), 0], dtype=np.int64), (("or", "i"),))[0]:
            partial = self._partial()
            self.stats.time_s = now - self._t_start  # the supersteps run so far, no final one
            raise RunStopped(f"stopped after {now - self._t_start:.1f} s (--time-limit {limit:g}); "
                             f"the program had not finished ({partial})", reason="time-limit")
        if self.max_supersteps is not None and len(self.stats.per_superstep) + 1 > self.max_supersteps:
            partial = self._partial()
            self.stats.time_s = now - self._t_start  # the supersteps run so far, no final one
            raise RunStopped(
                f"stopped after {self.max_supersteps} supersteps (--max-supersteps); the program had not "
                f"finished ({partial})", reason="max-supersteps"
            )

    def _partial(self) -> str:
        """This rank's statistics so far, for the messages of runs stopped by a limit."""
        st = self.stats
        return (f"partial stats: {st.supersteps} supersteps, {sum(s.messages for s in st.per_superstep)} "
                f"messages, {sum(s.time_s for s in st.per_superstep):.2f} s")

    def finish(self) -> None:
        """Record the last superstep (compute only, no exchange)."""
        now = time.perf_counter()
        self.stats.per_superstep.append(SuperstepStat(len(self.stats.per_superstep), -1, 0, 0, 0, self.n,
                                                      now - self._t_last))
        self.stats.time_s = now - self._t_start
        if self.progress is not None:
            self.progress(self.stats, True)

    # ------------------------------------------------------------ checkpoints

    def attach_checkpointer(self, ckpt) -> None:
        """Save every K supersteps (and, with resume, start from the saved state)."""
        self._ckpt = ckpt

    def resume(self) -> dict | None:
        ckpt = getattr(self, "_ckpt", None)
        if ckpt is None or not ckpt.resume_requested:
            return None
        data = ckpt.load(self.lg)  # checked against the program and this rank's part (exit 2 if not)
        r = data["runtime"]
        self.stats.per_superstep = [SuperstepStat(*row) for row in r["per_superstep"]]
        self._rand_counts = list(r["rand_counts"])
        self._push_state = dict(r["push_state"])
        self.stats.directions = dict(r["directions"])
        self.stats.edge_sets = dict(r["edge_sets"])
        self._ckpt_seen = len(self.stats.per_superstep)
        return data

    def restored(self, data: dict, names: tuple[str, ...]) -> tuple[int, tuple]:
        env = data["env"]
        values = (env[n] for n in names)  # pending remote requests come back as their arrays
        return data["state"], tuple(RemoteRequest(**v) if isinstance(v, dict) else v for v in values)

    def checkpoint_due(self) -> bool:
        ckpt = getattr(self, "_ckpt", None)
        if ckpt is None:
            return False
        count = len(self.stats.per_superstep)
        if count == getattr(self, "_ckpt_seen", 0):
            return False  # no barrier since the last check
        self._ckpt_seen = count
        return ckpt.due(count)

    def checkpoint(self, state: int, names: tuple[str, ...], values: tuple) -> None:
        runtime_state = encode_runtime(self.stats.per_superstep, self._rand_counts, self._push_state,
                                       self.stats.directions, self.stats.edge_sets)
        self._ckpt.save(len(self.stats.per_superstep), state, names, values, runtime_state)

    # ------------------------------------------------------------ results

    def collect(self, kind: str, elem: str, value):
        """A returned value, whole, on rank 0 (None on other ranks); scalars are the same everywhere."""
        if kind == "scalar":
            return value
        arr = self.as_v(value, elem) if kind == "vertex" else self.as_e(value, elem)
        if kind == "vertex":
            arr = self.lg.in_id_order(arr)
        if self.lg.size == 1:
            # a writable, contiguous array (not the read-only stride-0 view of constant weights)
            return arr if arr.flags.writeable and arr.strides[0] == arr.itemsize else arr.copy()
        if kind == "edge":
            arr = arr[self.lg.edge_owned]
        return self.comm.gather_array(arr)


def _weight_view(lg: LocalGraph) -> np.ndarray:
    """The edge weights; when they are all the same (an unweighted graph: all 1.0), a read-only
    stride-0 view of the one value, so gathering weights along adjacency entries reads one cache line
    instead of a scattered array.  Worked out once per graph part."""
    w = getattr(lg, "_weight_view", None)
    if w is None:
        w = lg.weight
        if len(w) and w.dtype == np.float64 and w.flags.c_contiguous:
            bits = w.view(np.int64)
            if bool(np.all(bits == bits[0])):  # bitwise: -0.0 and NaN payloads stay as they are
                w = np.broadcast_to(w[:1], w.shape)
        lg._weight_view = w
    return w


def _bits_view(a: np.ndarray) -> np.ndarray:
    """The array as unsigned integers of its item size (bitwise comparison: -0.0 != 0.0, NaN == NaN)."""
    return a.view(f"u{a.dtype.itemsize}") if a.dtype.kind == "f" else a


def _free_refs() -> int:
    """What sys.getrefcount reports for an array held only by a (buffer, index) tuple in a list."""
    slots = [(np.zeros(1), None)]
    return sys.getrefcount(slots[0][0])


_FREE_REFS = _free_refs()


def _pack_records(arrays, layout, rb: int, idx: np.ndarray) -> np.ndarray:
    """Rows of `rb` bytes, one per sending vertex in `idx`, each field's bytes at its offset."""
    buf = np.zeros((len(idx), rb), dtype=np.uint8)
    for a, (off, e) in zip(arrays, layout):
        sz = ELEM_SIZE[e]
        buf[:, off:off + sz] = np.ascontiguousarray(a[idx].astype(K.DTYPES[e])).view(np.uint8).reshape(-1, sz)
    return buf


def _unpack_field(rbytes: np.ndarray, off: int, e: str) -> np.ndarray:
    return np.ascontiguousarray(rbytes[:, off:off + ELEM_SIZE[e]]).view(K.DTYPES[e]).reshape(-1)


def _segment_counts(sel: np.ndarray, seg_counts: np.ndarray) -> np.ndarray:
    """How many selected entries fall in each consecutive segment (one per rank: a count per segment
    costs a few microseconds where a prefix sum over all of `sel` cost 80 at 120K mirrors)."""
    ends = np.cumsum(seg_counts).tolist()
    starts = [0] + ends[:-1]
    return np.array([np.count_nonzero(sel[a:b]) for a, b in zip(starts, ends)], dtype=np.int64)


def _packbits_segments(vals: np.ndarray, seg_counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Bit-pack bools separately per destination segment; returns (bytes, byte counts per segment)."""
    chunks, counts, a = [], [], 0
    for c in seg_counts.tolist():
        p = np.packbits(vals[a:a + c].astype(bool))
        chunks.append(p)
        counts.append(len(p))
        a += c
    return (np.concatenate(chunks) if chunks else np.zeros(0, np.uint8)), np.array(counts, dtype=np.int64)


def _unpackbits_segments(data: np.ndarray, byte_counts: np.ndarray, bit_counts: np.ndarray) -> np.ndarray:
    out, a = [], 0
    for nb, nbits in zip(byte_counts.tolist(), bit_counts.tolist()):
        out.append(np.unpackbits(data[a:a + nb].view(np.uint8), count=nbits).astype(bool))
        a += nb
    return np.concatenate(out) if out else np.zeros(0, bool)


def _int64(x) -> np.int64:
    """A scalar int with int64 wrap-around (the language's `int` is 64-bit everywhere)."""
    return np.int64(((int(x) + 2**63) % 2**64) - 2**63)


def _elem_of(a: np.ndarray) -> str:
    k = a.dtype.kind
    return "bool" if k == "b" else "float" if k == "f" else "int"
