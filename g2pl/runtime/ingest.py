"""Distributed ingestion: every rank turns its share of the input edges into its graph part.

No rank ever holds the whole graph.  From the shares (g2pl.graph.share) the
ranks, with collective exchanges only:

1. drop self-loops and orient undirected edges (smaller ID first), locally;
2. send each edge to the rank that owns its source ID's *value range* (from
   the generator's N, or from splitters sampled from the IDs);
3. number the vertices: each range owner sorts its IDs, and an exclusive scan
   of the counts gives every ID its global index (ascending ID order, as
   `build_graph` numbers them);
4. merge duplicate edges at the source's range owner (the smallest weight
   kept); the ranges are in ID order, so the edges end up sorted by
   (src, dst) across the ranks, and a scan of the counts gives each edge its
   global index;
5. count degrees, and cut the vertex blocks exactly as `partition.block_bounds`
   cuts them (vertices + adjacency entries balanced), from scans of the
   per-rank weight sums;
6. send each edge to the owners of both endpoints, and build the part there:
   ghosts, adjacency rows in the global neighbour order, degree renumbering,
   send lists (one request/answer exchange, which also brings the ghosts' IDs).

The part is array for array the one `partition.partition` cuts from the whole
graph (tests compare them), so every program gives the same answers.  Peak
memory per rank: its share plus its part plus exchange buffers of the same
order.  Everything goes through the communicator (`alltoallv`, `allgather`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np

from g2pl.contract import Spec
from g2pl.errors import G2PLError, G2PLRuntimeError
from g2pl.graph.binary import binary_share
from g2pl.graph.generators import generate_share
from g2pl.graph.graph import Graph, _dedup, index_dtype
from g2pl.graph.loaders import (
    ReadOptions,
    edge_list_share,
    graphalytics_share,
    mtx_share,
    npz_share,
    parse_graph_spec,
)
from g2pl.graph.memory import available_memory, estimate_bytes, temporaries_returned
from g2pl.graph.share import EdgeShare, counts_at_owners, exscan, owner, send, send_back
from g2pl.runtime.array_kernels import HostOps, expand_ranges
from g2pl.runtime.checkpoint import content_digest, content_sums
from g2pl.runtime.partition import RENUMBERINGS, LocalGraph

#: entries placed per step when adjacency rows are filled (bounds the temporaries)
_CHUNK = 1 << 18

#: up to this many ranks, entries are grouped by destination with one mask per rank (no index arrays)
_MASKED_RANKS = 16

#: IDs sampled per rank to choose the value-range splitters when the ID range is unknown
_SAMPLES = 1024


@dataclass(eq=False)
class DistributedGraph:
    """A graph that exists only as its parts: this rank's `part` plus what every rank knows of the
    whole (sizes, counts, name).  It stands where a `Graph` stands for a run (`summary`, `n`, `m`,
    `directed`, `weighted`, `info`, `name`), but has no whole-graph arrays."""

    comm: Any
    part: LocalGraph
    n: int
    m: int
    directed: bool
    weighted: bool
    name: str
    renumber: str | None
    info: dict[str, Any] = field(default_factory=dict)
    load_s: float = 0.0  # seconds to read or generate the shares and build the parts (this rank)
    load_bytes: int = 0  # bytes this rank sent to others while loading

    def summary(self) -> str:
        """The one line `Graph.summary` gives (sizes, self-loops dropped, duplicates merged)."""
        return Graph.summary(cast(Graph, self))

    def __repr__(self) -> str:
        return f"<DistributedGraph {self.summary()} on {self.comm.size} ranks>"

    def id_to_index(self, orig_ids: Any) -> np.ndarray:
        """Global index of each original ID (-1 where it is not a vertex): collective, every rank asks
        the same IDs and every rank gets the answer."""
        q = np.asarray(orig_ids, dtype=np.int64)
        lg = self.part
        local = lg.id_to_local(q) if lg.n else np.full(q.shape, -1, dtype=np.int64)
        at = local if lg.order is None or not lg.n else lg.order[np.maximum(local, 0)]  # (no vertex: all -1)
        block_pos = np.where(local >= 0, at, -1)
        mine = np.where(local >= 0, lg.lo + block_pos, -1)
        return np.max(np.stack(self.comm.allgather(mine)), axis=0)

    def id_span(self) -> tuple[int, int] | None:
        """(smallest, largest) vertex ID; collective."""
        lg = self.part
        ends = self.comm.allgather((int(lg.ext_ids[:lg.n].min()), int(lg.ext_ids[:lg.n].max())) if lg.n else None)
        ends = [e for e in ends if e is not None]
        return (min(e[0] for e in ends), max(e[1] for e in ends)) if ends else None

    def digest(self) -> str:
        """A content hash for checkpoint identities (IDs, edges, weights, direction): the one
        `checkpoint.graph_digest` gives the whole graph, whatever the number of ranks (collective)."""
        lg = self.part
        eo = np.flatnonzero(np.asarray(lg.edge_owned))
        mine = content_sums(lg.ext_ids[:lg.n], lg.ext_ids[lg.src[eo]], lg.ext_ids[lg.dst[eo]],
                            np.asarray(lg.weight)[eo])
        parts = self.comm.allgather(mine)
        return content_digest([sum(p[i] for p in parts) for i in range(2)], self.n, self.m, self.directed)


# ---------------------------------------------------------------------------- collectives


# ---------------------------------------------------------------------------- the build


def build(comm, share: EdgeShare, renumber: str | None = "auto", *, entry_routes: bool = False
          ) -> DistributedGraph:
    """This rank's part of the graph whose shares the ranks hold (collective: every rank calls it).

    `renumber`: "auto", "degree", "none" or None, as for `partition.resolve_renumber` (decided here,
    from the distributed degrees).  `entry_routes`: also build the -O0 per-entry routes.  The share's
    arrays are taken (the share is left empty), so each is freed as soon as it is consumed.
    """
    if renumber not in (None, *RENUMBERINGS):
        raise ValueError(f"unknown renumbering {renumber!r}")
    rank = comm.rank
    directed = bool(share.directed)
    s, d, w, extra = share.src, share.dst, share.weight, share.extra
    empty = np.zeros(0, dtype=np.int64)
    share.src = share.dst = share.extra = empty  # taken: each array is freed once consumed here
    share.weight = None
    weighted = bool(comm.allgather(w is not None)[0])
    n_input = exscan(comm, len(s))[1]

    # 1. self-loops, orientation
    keep = s != d
    loops = exscan(comm, len(s) - int(np.count_nonzero(keep)))[1]
    if not bool(keep.all()):
        extra = np.concatenate([extra.astype(np.int64), s[~keep].astype(np.int64)])  # still vertices
        s, d = s[keep], d[keep]
        w = None if w is None else w[keep]
    del keep
    if not directed:
        s, d = np.minimum(s, d), np.maximum(s, d)

    # 2. value-range splitters of the IDs
    # (sampled from the sources: undirected sources are the smaller IDs, so even ranges of IDs
    # would give the lowest range most of the edges)
    dense_n = share.id_bound
    id_cuts = _splitters(comm, s, np.iinfo(np.int64).max if dense_n is None else int(dense_n))
    (s, d, w), _ = send(comm, owner(id_cuts, s), [s, d, w])

    # 3. vertex numbering: this rank's IDs (ascending) are global indices off .. off + len - 1
    if dense_n is not None:  # the vertices are exactly 0 .. N-1: an ID is its index
        off, n = int(id_cuts[rank]), int(dense_n)
        my_count = int(id_cuts[rank + 1]) - off
        my_ids = None
        vt = index_dtype(n)
        a, b = s.astype(vt, copy=False), d.astype(vt, copy=False)
    else:
        a, b, my_ids, off, n = _numbered(comm, s, d, extra, id_cuts)
        my_count = len(my_ids)
    del s, d, extra
    if n == 0:
        raise G2PLError("the graph has no vertices", file=share.name)

    # 4. duplicates merged at the source's range owner; edges sorted by (src, dst) across ranks
    pair = [a, b]
    del a, b  # _dedup frees each input once it is keyed
    a, b, w = _dedup(pair, w, n)
    eoff, m = exscan(comm, len(a))
    dups = n_input - loops - m

    # 5. degrees and the vertex blocks
    index_cuts = np.array(comm.allgather(off) + [n], dtype=np.int64)
    deg = np.bincount(a - off, minlength=my_count).astype(np.int64)
    deg += counts_at_owners(comm, b, index_cuts)
    isolated = exscan(comm, int(np.count_nonzero(deg == 0)))[1]
    renumber = _resolve(comm, renumber, deg, n)
    bounds = _block_bounds(comm, deg, n)
    del deg

    # the vertices' IDs move to their block owners; the edges to the owners of both endpoints
    lo, hi = int(bounds[rank]), int(bounds[rank + 1])
    if my_ids is None:
        own_ids = np.arange(lo, hi, dtype=np.int64)
    else:
        (own_ids,), _ = send(comm, owner(bounds, off + np.arange(my_count)), [my_ids])
    del my_ids
    edges = [a, b, w]
    del a, b, w
    part = _part(comm, edges, m, n, bounds, own_ids, directed, renumber, weighted, entry_routes)
    # a share of a built graph (a .g2g file) carries that graph's counts: its edges are clean already
    info = dict(input_edges=n_input, self_loops_dropped=loops, duplicates_merged=dups, isolated_vertices=isolated)
    info.update(share.info)
    return DistributedGraph(comm=comm, part=part, n=n, m=m, directed=directed, weighted=weighted,
                            name=share.name, renumber=renumber, info=info)


def _numbered(comm, s: np.ndarray, d: np.ndarray, extra: np.ndarray, id_cuts: np.ndarray):
    """(src and dst as global indices, this rank's vertex IDs, its first index, n) for IDs split among
    the ranks by value range: every ID goes to its range owner once, is numbered there, and its
    index comes back."""
    size = comm.size
    us, s_inv = np.unique(s, return_inverse=True)
    ud, d_inv = np.unique(d, return_inverse=True)
    (ud_at_owner,), ud_counts = send(comm, owner(id_cuts, ud), [ud])
    (extra_at_owner,), _ = send(comm, owner(id_cuts, extra), [extra])
    my_ids = np.unique(np.concatenate([us.astype(np.int64), ud_at_owner.astype(np.int64),
                                       extra_at_owner.astype(np.int64)]))
    off, n = exscan(comm, len(my_ids))
    vt = index_dtype(n)
    answer = off + np.searchsorted(my_ids, ud_at_owner)
    ud_index = send_back(comm, answer, ud_counts, np.bincount(owner(id_cuts, ud), minlength=size))
    a = (off + np.searchsorted(my_ids, us)).astype(vt)[s_inv]
    b = ud_index.astype(vt)[d_inv]
    return a, b, my_ids, off, n


def _splitters(comm, ids: np.ndarray, end: int) -> np.ndarray:
    """Value-range cuts (size + 1 values, from 0 to `end`) giving the ranks about as many of the `ids`
    each, from a sample of every rank's (every rank computes the same cuts)."""
    size = comm.size
    step = max(1, len(ids) // _SAMPLES)
    mine = np.sort(ids[::step].astype(np.int64))
    sample = np.sort(np.concatenate(comm.allgather(mine)))
    cuts = [0] + [int(sample[len(sample) * k // size]) if len(sample) else 0 for k in range(1, size)] + [end]
    return np.minimum(np.maximum.accumulate(np.array(cuts, dtype=np.int64)), end)


def _resolve(comm, renumber: str | None, deg: np.ndarray, n: int) -> str | None:
    """`partition.resolve_renumber` over the distributed degrees (std above mean: degree order)."""
    if renumber in (None, "none"):
        return None
    if renumber == "degree":
        return "degree"
    mean = sum(comm.allgather(float(deg.sum()))) / n
    var = sum(comm.allgather(float(((deg - mean) ** 2).sum()))) / n
    return "degree" if var ** 0.5 > mean else None


def _block_bounds(comm, deg: np.ndarray, n: int) -> np.ndarray:
    """`partition.block_bounds` from the degrees each rank holds (its consecutive vertex indices)."""
    size = comm.size
    wsum = np.cumsum(1 + deg)
    before, total = exscan(comm, int(wsum[-1]) if len(wsum) else 0)
    idx_off = exscan(comm, len(deg))[0]
    targets = np.arange(1, size, dtype=np.float64) * total / size
    cuts = np.full(size - 1, np.iinfo(np.int64).max, dtype=np.int64)
    if len(wsum):
        here = (targets > before) & (targets <= before + int(wsum[-1]))
        pos = np.searchsorted(wsum + before, targets, side="left")
        cuts = np.where(here, idx_off + pos + 1, cuts)
    cuts = np.min(np.stack(comm.allgather(cuts)), axis=0) if size > 1 else cuts
    bounds = np.concatenate([[0], np.minimum(cuts, n), [n]]).astype(np.int64)
    return np.maximum.accumulate(bounds)


def _part(comm, edges: list, m: int, n: int, bounds: np.ndarray, own_ids: np.ndarray, directed: bool,
          renumber: str | None, weighted: bool, entry_routes: bool) -> LocalGraph:
    """This rank's `LocalGraph` (as `partition.partition` cuts it) from the edges it merged
    ([src, dst, weight or None] as global indices, a list it empties: each is freed once sent)."""
    size, rank = comm.size, comm.rank
    lo, hi = int(bounds[rank]), int(bounds[rank + 1])
    nl = hi - lo
    a, b, w = _ship(comm, edges, bounds)
    ml = len(a)

    order = None
    if renumber == "degree":  # adjacency entries of each owned vertex (in + out): highest first
        rows_deg = np.zeros(nl, dtype=np.int64)
        for x in (a, b):
            for k0 in range(0, ml, _CHUNK):
                c = x[k0:k0 + _CHUNK]
                rows_deg += np.bincount(c[(c >= lo) & (c < hi)] - lo, minlength=nl)
        order = np.lexsort((np.arange(nl), -rows_deg)).astype(np.int64)
        del rows_deg
    to_local = np.arange(nl, dtype=np.int64)
    if order is not None:
        to_local[order] = np.arange(nl, dtype=np.int64)
    ghosts, slot_of = _ghosts(n, ml, lo, hi, a, b)
    for g in (a, b):  # global indices become ext indices, in place, a chunk at a time
        for k0 in range(0, ml, _CHUNK):
            c = g[k0:k0 + _CHUNK]
            own = (c >= lo) & (c < hi)
            ext = np.empty(len(c), dtype=c.dtype)  # ext indices < n_ext <= n: the same type fits
            ext[own] = to_local[c[own] - lo]
            ext[~own] = nl + slot_of(c[~own])
            c[:] = ext
    src, dst = a, b  # from here on an endpoint is owned iff its ext index is below nl
    del a, b
    edge_owned = src < nl
    it = index_dtype(max(ml, 1))
    if directed:  # in-rows: edges by destination, each row by source; out-rows: by source, by destination
        in_csr = _csr_fill(nl, [(dst, src)], it, (False,))
        out_csr = _csr_fill(nl, [(src, dst)], it, (True,))
    else:  # a row lists its smaller neighbours (edges where it is dst) before its larger ones
        in_csr = out_csr = _csr_fill(nl, [(dst, src), (src, dst)], it, (False, True))
    naive_senders = _in_block_order(in_csr, out_csr, directed, None if order is None else to_local) \
        if entry_routes else None

    # send lists: each rank asks the owners for its ghosts (sorted, so grouped by owner); the owners
    # answer with the ghosts' IDs
    gowner = owner(bounds, ghosts)
    recv_counts = np.bincount(gowner, minlength=size).astype(np.int64)
    (asked,), asked_counts = send(comm, gowner, [ghosts])
    ghost_ids = send_back(comm, own_ids[asked - lo], asked_counts, recv_counts)
    send_idx = to_local[asked - lo]
    del asked
    ids = own_ids if order is None else own_ids[order]
    first = comm.allgather(int(own_ids[0]) if nl else None)
    first_ids = np.full(size, np.iinfo(np.int64).max, dtype=np.int64)
    later = np.iinfo(np.int64).max  # an empty block starts where the next non-empty one does (as partition cuts)
    for r in range(size - 1, -1, -1):
        later = first[r] if first[r] is not None else later
        first_ids[r] = later
    extra: dict[str, Any] = {}
    if order is not None:
        extra = dict(order=order, sorted_ids=own_ids, sorted_to_local=to_local)
    lg = LocalGraph(
        rank=rank, size=size, n=nl, m=ml, n_ext=nl + len(ghosts), n_global=n, m_global=m, directed=directed,
        ids=ids, ext_ids=np.concatenate([ids, ghost_ids.astype(np.int64)]),
        src=src, dst=dst,
        weight=np.asarray(w, dtype=np.float64) if weighted else np.broadcast_to(np.ones(1), (ml,)),
        edge_owned=edge_owned,
        in_indptr=in_csr[0], in_nbr=in_csr[1], in_eid=in_csr[2],
        out_indptr=out_csr[0], out_nbr=out_csr[1], out_eid=out_csr[2],
        send_idx=send_idx.astype(np.int64), send_counts=asked_counts, recv_counts=recv_counts,
        first_ids=first_ids, lo=lo, **extra,
    )
    if naive_senders is not None:
        _entry_routes(comm, lg, naive_senders, ghosts, bounds, to_local)
    # the edge endpoints are in the adjacency already: kept out until a program reads edges (a BFS or
    # a PageRank never does), as a one-rank degree view keeps them (partition.whole_by_degree)
    lg.m_owned = int(np.count_nonzero(edge_owned))
    del src, dst, edge_owned
    lg.defer("src", lambda: _edge_ends_of(lg, "src"))
    lg.defer("dst", lambda: _edge_ends_of(lg, "dst"))
    lg.defer("edge_owned", lambda: lg.src < lg.n)
    return lg


def _edge_ends_of(lg: LocalGraph, side: str) -> np.ndarray:
    """Each local edge's `side` ("src" or "dst") endpoint (ext index), from the part's adjacency: every
    edge is in the row of each endpoint it owns.  Undirected: src is the endpoint of smaller ID."""
    out = np.empty(lg.m, dtype=lg.in_nbr.dtype)
    csrs = [(lg.out_indptr, lg.out_nbr, lg.out_eid, "src"), (lg.in_indptr, lg.in_nbr, lg.in_eid, "dst")] \
        if lg.directed else [(lg.in_indptr, lg.in_nbr, lg.in_eid, None)]
    for ptr, nbr, eid, row_side in csrs:
        k0, nl = 0, len(ptr) - 1
        while k0 < nl:
            k1 = min(max(int(np.searchsorted(ptr, ptr[k0] + _CHUNK, side="right")) - 1, k0 + 1), nl)
            a, b = int(ptr[k0]), int(ptr[k1])
            rows = np.repeat(np.arange(k0, k1, dtype=out.dtype), np.diff(ptr[k0:k1 + 1]))
            x = nbr[a:b]
            if row_side is None:  # undirected: the row is the edge's src when its ID is the smaller
                row_is = lg.ext_ids[rows] < lg.ext_ids[x]
                out[eid[a:b]] = np.where(row_is if side == "src" else ~row_is, rows, x)
            else:
                out[eid[a:b]] = rows if side == row_side else x
            k0 = k1
    return out


def _ship(comm, edges: list, bounds: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Every edge to its source's block owner, and to its destination's when that is another rank:
    this rank's edges, in global edge order (each rank's edges are a range of that order, and every
    rank sends in order), sent in rounds of a bounded number of edges.  Empties `edges`."""
    a, b, w = edges
    edges.clear()
    size = comm.size
    if size == 1:
        return a, b, w
    m = len(a)
    step = _CHUNK * 4

    def dests(k0: int) -> tuple[np.ndarray, np.ndarray]:
        oa, ob = owner(bounds, a[k0:k0 + step]), owner(bounds, b[k0:k0 + step])
        return oa, np.where(ob != oa, ob, -1).astype(oa.dtype)

    counts = np.zeros(size, dtype=np.int64)
    for k0 in range(0, m, step):
        oa, ob = dests(k0)
        counts += np.bincount(oa, minlength=size)
        counts += np.bincount(ob[ob >= 0], minlength=size)
    got = np.asarray(comm.alltoallv(counts, np.ones(size, dtype=np.int64))[0], dtype=np.int64)
    at = np.concatenate([[0], np.cumsum(got)])[:-1]  # where each source's edges go
    ml = int(got.sum())
    out_a, out_b = np.empty(ml, dtype=a.dtype), np.empty(ml, dtype=b.dtype)
    out_w = None if w is None else np.empty(ml, w.dtype)
    rounds = max(comm.allgather(-(-m // step)))
    for r in range(rounds):
        k0 = r * step
        oa, ob = dests(k0) if k0 < m else (np.zeros(0, np.int16), np.zeros(0, np.int16))
        sel = [(oa == q) | (ob == q) for q in range(size)] if size <= _MASKED_RANKS else None
        order = None
        if sel is None:  # each edge's two copies side by side, sorted by destination (-1: no copy)
            keys = np.empty(2 * len(oa), dtype=np.int64)
            keys[0::2], keys[1::2] = oa, ob
            order = _stable_order(keys + 1, size + 1)
        cnt = np.bincount(oa, minlength=size) + np.bincount(ob[ob >= 0], minlength=size)
        recv = None
        for x, dest in ((a, out_a), (b, out_b), (w, out_w)):
            if x is None or dest is None:
                continue
            piece = x[k0:k0 + step]
            if sel is not None:
                buf = np.concatenate([piece[s] for s in sel])
            else:
                both = np.repeat(piece, 2)[order]
                buf = both[len(both) - int(cnt.sum()):]  # the copies for no rank sort first
            data, recv = comm.alltoallv(buf, cnt, recv)
            starts = np.concatenate([[0], np.cumsum(recv)])
            for q in range(size):
                k = int(recv[q])
                dest[at[q]:at[q] + k] = data[starts[q]:starts[q] + k]
        if recv is not None:
            at = at + recv
    return out_a, out_b, out_w


def _ghosts(n: int, ml: int, lo: int, hi: int, *ends: np.ndarray):
    """(the ghosts: sorted global indices of the endpoints `ends` not owned here, a function giving
    each such endpoint's ghost slot).  A table over all n vertices when it is no bigger than the edges
    held here, else a sort and binary searches (many ranks, huge n)."""
    def outside(x: np.ndarray) -> np.ndarray:
        return x[(x < lo) | (x >= hi)]

    if n <= 4 * ml + 1024:
        mark = np.zeros(n, dtype=bool)
        for x in ends:
            for k0 in range(0, len(x), _CHUNK):
                mark[outside(x[k0:k0 + _CHUNK])] = True
        ghosts = np.flatnonzero(mark)
        del mark
        table = np.empty(n, dtype=index_dtype(max(len(ghosts), 1)))
        table[ghosts] = np.arange(len(ghosts), dtype=table.dtype)
        return ghosts, table.__getitem__
    ghosts = np.unique(np.concatenate([np.unique(outside(x)) for x in ends])).astype(np.int64)
    return ghosts, lambda g: np.searchsorted(ghosts, g)


def _stable_order(keys: np.ndarray, bound: int) -> np.ndarray:
    """The stable sorting order of non-negative `keys` < `bound`: one sort of plain int64 (key, position)
    pairs, faster than a stable argsort (as the whole-graph build sorts packed keys)."""
    k = len(keys)
    if k == 0:
        return np.zeros(0, dtype=np.int64)
    packed = keys.astype(np.int64) * k
    packed += np.arange(k, dtype=np.int64)
    packed.sort()
    packed %= k
    return packed


def _csr_fill(nl: int, blocks: list[tuple[np.ndarray, np.ndarray]], it: np.dtype, grouped_blocks: tuple[bool, ...]):
    """(indptr, neighbours, edge ids) of this rank's rows 0..nl-1 (local order) from blocks of
    (row end, neighbour end) ext-index arrays over its edges: edge e is an entry of row row_end[e] when
    that is owned (< nl), its neighbour nbr_end[e].  A row lists its entries of the first block, then
    of the next, each block's in edge order (the global order of every row).  A counting sort, filled a
    bounded chunk of edges at a time: no sort of all entries.  `grouped_blocks`: whether each block's
    rows come in runs already (rows by source: edges are in (src, dst) order)."""
    indptr = np.zeros(nl + 1, dtype=np.int64)
    for rows, _ in blocks:
        for k0 in range(0, len(rows), _CHUNK):
            c = rows[k0:k0 + _CHUNK]
            indptr[1:] += np.bincount(c[c < nl], minlength=nl)
    np.cumsum(indptr, out=indptr)
    total = int(indptr[-1])
    nbr = np.empty(total, dtype=blocks[0][1].dtype)
    eid = np.empty(total, dtype=it)
    fill = indptr[:-1].copy()  # the next free slot of each row
    for (rows, nb), grouped in zip(blocks, grouped_blocks, strict=True):
        for k0 in range(0, len(rows), _CHUNK):
            e = np.flatnonzero(rows[k0:k0 + _CHUNK] < nl)
            r = rows[k0:k0 + _CHUNK][e]
            if grouped:  # each row's entries are consecutive already (edges by source)
                rs, es = r, e
            else:
                o = np.argsort(r, kind="stable")  # this chunk's entries grouped by row, in edge order
                rs, es = r[o], e[o]
            first = np.empty(len(rs), dtype=bool)
            first[:1] = True
            np.not_equal(rs[1:], rs[:-1], out=first[1:])
            starts = np.flatnonzero(first)
            lens = np.diff(np.append(starts, len(rs)))
            pos = fill[rs]
            pos += np.arange(len(rs), dtype=np.int64)
            pos -= np.repeat(starts, lens)  # + the entry's rank within its row in this chunk
            ei = (es + k0).astype(it)
            nbr[pos] = nb[ei]
            eid[pos] = ei
            fill[rs[starts]] += lens  # each row once per chunk
    return indptr, nbr, eid


def _in_block_order(in_csr: tuple, out_csr: tuple, directed: bool, to_local: np.ndarray | None) -> np.ndarray:
    """Every entry's neighbour, rows in block (ID) order (block row k is local row to_local[k]):
    in-adjacency, then out-adjacency on directed graphs (what the -O0 routes are cut from)."""
    parts = [in_csr, out_csr] if directed else [in_csr]
    out = []
    for ptr, nbr, _ in parts:
        if to_local is None:
            out.append(nbr)
        else:
            out.append(nbr[expand_ranges(HostOps, ptr[:-1][to_local], np.diff(ptr)[to_local])])
    return np.concatenate(out) if len(out) > 1 else out[0]


def _entry_routes(comm, lg: LocalGraph, senders: np.ndarray, ghosts: np.ndarray, bounds: np.ndarray,
                  to_local: np.ndarray) -> None:
    """The -O0 transport's per-entry routes (as `partition._naive_transport`): one record per
    adjacency entry whose neighbour is on another rank.  `senders`: the ext neighbour of every entry of
    this rank's rows in global row order (in-adjacency, then out-adjacency on directed graphs)."""
    nl = lg.n
    slot = senders[senders >= nl].astype(np.int64) - nl
    remote = ghosts[slot]
    owners = owner(bounds, remote)
    order = np.argsort(owners, kind="stable")
    lg.nv_recv_ghost = slot[order]
    lg.nv_recv_counts = np.bincount(owners, minlength=comm.size).astype(np.int64)
    (asked,), counts = send(comm, owners[order], [remote[order]])
    lg.nv_send_idx = to_local[asked - lg.lo].astype(np.int64)
    lg.nv_send_counts = counts



# ---------------------------------------------------------------------------- shares of named graphs


def load(comm, spec: str, *, directed: bool | None = None, seed: int = 0, renumber: str | None = "auto",
         entry_routes: bool = False, read: ReadOptions | None = None) -> DistributedGraph:
    """The graph `spec` names (file or generator), built as parts (collective); `directed` and `read`
    as for `loaders.load_with`.

    Generators: each rank draws its own edge blocks.  Edge-list text files (and a `--vertices` file),
    Graphalytics .v and .e files, Matrix Market entry lines: each rank parses its own byte range.
    `.npz` files: each rank reads its slices of the edge and ID arrays.  `.g2g` files: each rank reads
    its slices of the edges and IDs and checks its block of adjacency rows against the edges
    (binary.binary_share).  No rank reads the whole file.  A failure on any rank is raised on every
    rank, the same error (the one a single process reading the file whole raises)."""
    t0 = time.perf_counter()
    gs = parse_graph_spec(spec)
    read = read or ReadOptions()
    read.check(gs)
    _check_fits(comm, gs)
    counted = (getattr(comm, "bytes_sent", 0), getattr(comm, "bytes_received", 0))
    with temporaries_returned():  # the build's big temporaries go back to the system when freed
        graph = _load(comm, gs, spec, directed, seed, renumber, entry_routes, read)
    graph.load_s = time.perf_counter() - t0
    graph.load_bytes = getattr(comm, "bytes_sent", 0) - counted[0]
    if hasattr(comm, "bytes_sent"):  # loading is not the program's traffic
        comm.bytes_sent, comm.bytes_received = counted
    return graph


def _load(comm, gs, spec: str, directed: bool | None, seed: int, renumber: str | None, entry_routes: bool,
          read: ReadOptions) -> DistributedGraph:
    if gs.kind == "generator":
        share = generate_share(spec, bool(directed), seed, comm)
    elif gs.format == "edgelist":
        share = edge_list_share(spec, bool(directed), comm.rank, comm.size, comm, vertices=read.vertices,
                                header=read.header)
    elif gs.format == "graphalytics":  # directed may be None: the properties file then says
        share = graphalytics_share(spec, directed, comm.rank, comm.size, comm, vertices=read.vertices)
    elif gs.format == "npz":
        share = npz_share(spec, bool(directed), comm.rank, comm.size, comm)
    elif gs.format == "binary":
        share = binary_share(spec, bool(directed), comm.rank, comm.size, comm)
    else:  # "mtx", the last of parse_graph_spec's formats
        share = mtx_share(spec, bool(directed), comm.rank, comm.size, comm, base=read.mtx_base)
    try:
        return build(comm, share, renumber, entry_routes=entry_routes)
    except MemoryError:
        raise G2PLRuntimeError(f"not enough memory on rank {comm.rank} to build its part of '{spec}'",
                               file=spec) from None


def entry_routes_needed(module) -> bool:
    """Whether a compiled module sends per adjacency entry (the -O0 transport), which needs the parts'
    per-entry routes: its naive broadcast, or an exchange left on the `entries` transport."""
    if getattr(module, "OPT_LEVEL", 2) == 0:
        return True
    return any(isinstance(v, Spec) and v.transport == "entries" and v.kind in ("nbr", "endpoint", "common")
               for v in vars(module).values())


def result_view(graph: DistributedGraph, edges: bool) -> Any:
    """On rank 0, what results are aligned with (vertex IDs ascending; with `edges`, each edge's
    endpoints as indices into them, in edge order); None on other ranks.  Collective."""
    comm, lg = graph.comm, graph.part
    ids = comm.gather_array(np.asarray(lg.in_id_order(lg.ids), dtype=np.int64))
    u = v = None
    if edges:
        owned = np.flatnonzero(np.asarray(lg.edge_owned))
        u = comm.gather_array(lg.ext_ids[lg.src[owned]].astype(np.int64))
        v = comm.gather_array(lg.ext_ids[lg.dst[owned]].astype(np.int64))
    if comm.rank != 0:
        return None
    view = GatheredGraph(n=graph.n, m=graph.m, directed=graph.directed, weighted=graph.weighted, name=graph.name,
                         info=graph.info, ids=ids)
    if edges and ids is not None and u is not None and v is not None:
        view.src, view.dst = np.searchsorted(ids, u), np.searchsorted(ids, v)
    return view


@dataclass(eq=False)
class GatheredGraph:
    """What rank 0 gathers of a distributed graph for its results: sizes, IDs, and edge endpoints
    when edge values are returned."""

    n: int
    m: int
    directed: bool
    weighted: bool
    name: str
    info: dict[str, Any]
    ids: np.ndarray
    src: np.ndarray | None = None
    dst: np.ndarray | None = None

    def summary(self) -> str:
        return Graph.summary(cast(Graph, self))


def _check_fits(comm, gs) -> None:
    """Refuse, on every rank alike, a graph whose share would not fit this machine's memory: the
    whole graph's estimate divided among the ranks, against the memory available to the ranks that
    share this machine."""
    need = estimate_bytes(gs) // max(comm.size, 1) * 2  # a share, its part and the exchange buffers
    have = available_memory()
    local = _ranks_on_this_machine(comm)
    bad = have is not None and need * local > have
    if any(comm.allgather(bad)):
        raise G2PLError(f"this graph needs about {need / 2**30:.1f} GiB on each of the {comm.size} ranks, "
                        f"more than this machine has for its ranks; use more ranks on more machines",
                        file=gs.spec)


def _ranks_on_this_machine(comm) -> int:
    c = getattr(comm, "c", None)
    if c is None:
        return 1
    from mpi4py import MPI

    local = c.Split_type(MPI.COMM_TYPE_SHARED)
    try:
        return int(local.Get_size())
    finally:
        local.Free()
