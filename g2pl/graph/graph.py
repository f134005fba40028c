"""The in-memory graph every backend starts from, and building it from raw edge arrays.

Input files and generators produce edges as pairs of *original* vertex IDs.
`build_graph` turns them into a canonical `Graph`: vertices relabelled to
0..n-1 in ascending original-ID order (so results can always be mapped back
to the IDs the user wrote), self-loops dropped and duplicate edges merged
(both counted, because the language forbids doing either silently), edges sorted
by (src, dst), and CSR adjacency in both directions.

Everything is vectorized NumPy: graphs of tens of millions of edges must
build in a few seconds, so there is no Python loop over edges or vertices.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from g2pl.errors import G2PLError

#: Vertex IDs must be below this (the runtime may use spare high bits / -1 sentinels).
MAX_VERTEX_ID = 1 << 62

# Largest n for which the (a * n + b) edge key fits in int64.
_MAX_N_FOR_PAIR_KEY = 3_037_000_499


@dataclass(eq=False, repr=False)
class Graph:
    """A relabelled, deduplicated graph with CSR adjacency (see module docstring).

    Undirected edges are stored once, with `src` the endpoint of smaller original
    ID; the adjacency (`in_*`, which for undirected graphs are the very same
    arrays as `out_*`) lists each such edge in both endpoints' rows. For directed
    graphs `in_*` lists in-neighbours (the `nvals` of the language: values flow
    along edge direction) and `out_*` out-neighbours.
    """

    n: int
    m: int
    directed: bool
    ids: np.ndarray
    src: np.ndarray
    dst: np.ndarray
    weight: np.ndarray
    in_indptr: np.ndarray
    in_nbr: np.ndarray
    in_eid: np.ndarray
    out_indptr: np.ndarray
    out_nbr: np.ndarray
    out_eid: np.ndarray
    weighted: bool
    name: str
    info: dict[str, Any] = field(default_factory=dict)

    def id_to_index(self, orig_ids: Any) -> np.ndarray:
        """Internal index of each original ID (-1 where it is not a vertex); vectorized."""
        q = np.asarray(orig_ids)
        if q.dtype.kind == "f":
            with np.errstate(invalid="ignore"):
                ok = np.isfinite(q) & (q == np.floor(q)) & (np.abs(q) < MAX_VERTEX_ID)
            qi = np.where(ok, q, -1).astype(np.int64)
        elif q.dtype.kind not in "iu":
            raise TypeError(f"id_to_index needs integer IDs, got dtype {q.dtype}")
        else:
            if q.dtype.kind == "u":
                big = q > np.iinfo(np.int64).max
                qi = np.where(big, -1, q).astype(np.int64)
            else:
                qi = q.astype(np.int64, copy=False)
            ok = np.ones(q.shape, dtype=bool)
        if self.n == 0:
            return np.full(q.shape, -1, dtype=np.int64)
        pos = np.searchsorted(self.ids, qi)
        posc = np.minimum(pos, self.n - 1)
        found = ok & (self.ids[posc] == qi)
        return np.where(found, posc, -1).astype(np.int64, copy=False)

    def summary(self) -> str:
        """One line for users: sizes plus the self-loop / duplicate counts (never silent)."""
        loops = int(self.info.get("self_loops_dropped", 0))
        dups = int(self.info.get("duplicates_merged", 0))
        kind = "directed" if self.directed else "undirected"
        if self.weighted:
            kind += ", weighted"
        return (
            f"{self.name}: {_plural(self.n, 'vertex', 'vertices')}, {_plural(self.m, 'edge', 'edges')} "
            f"({kind}), {_plural(loops, 'self-loop', 'self-loops')} dropped, "
            f"{_plural(dups, 'duplicate', 'duplicates')} merged"
        )

    def __repr__(self) -> str:
        return f"<Graph {self.summary()}>"

    # ---- interop (g2pl/interop.py)

    @classmethod
    def from_edges(cls, src: Any, dst: Any, weight: Any = None, directed: bool = False, name: str = "edges",
                   ids: Any = None) -> Graph:
        """A graph from arrays/lists of original vertex IDs (one entry per edge); see `g2pl.interop`."""
        from g2pl.interop import from_edges

        return from_edges(src, dst, weight, directed=directed, name=name, ids=ids)

    @classmethod
    def from_networkx(cls, G: Any, weight: str | None = "weight", name: str | None = None) -> Graph:
        """A graph from a networkx graph with non-negative int nodes; see `g2pl.interop`."""
        from g2pl.interop import from_networkx

        return from_networkx(G, weight=weight, name=name)

    @classmethod
    def from_scipy(cls, matrix: Any, directed: bool = False, name: str = "scipy") -> Graph:
        """A graph from a (sparse) adjacency matrix, indices = vertex IDs; see `g2pl.interop`."""
        from g2pl.interop import from_scipy

        return from_scipy(matrix, directed=directed, name=name)


def _plural(k: int, one: str, many: str) -> str:
    return f"{k} {one if k == 1 else many}"


def _as_id_array(a: Any, what: str, name: str) -> np.ndarray:
    """Validate an array of original vertex IDs and return it as 1-D int64."""
    arr = np.asarray(a)
    if arr.ndim != 1:
        raise G2PLError(f"{what} must be a 1-D array of vertex IDs, got shape {arr.shape}", file=name)
    if arr.size == 0:
        return np.zeros(0, dtype=np.int64)
    if arr.dtype.kind not in "iu":
        raise G2PLError(f"{what} must hold integer vertex IDs, got dtype {arr.dtype}", file=name)
    if arr.dtype.kind == "i":
        lo = int(arr.min())
        if lo < 0:
            i = int(np.argmax(arr < 0))
            raise G2PLError(f"{what}[{i}] = {int(arr[i])} is a negative vertex ID", file=name)
    hi = int(arr.max())
    if hi >= MAX_VERTEX_ID:
        i = int(np.argmax(arr >= MAX_VERTEX_ID))
        raise G2PLError(
            f"{what}[{i}] = {int(arr[i])} is too large (vertex IDs must be below 2^62)", file=name
        )
    return arr.astype(np.int64, copy=False)


def _relabel(s: np.ndarray, d: np.ndarray, extra: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Map original IDs to 0..n-1 in ascending order; returns (ids, s_idx, d_idx)."""
    total = s.size + d.size + extra.size
    if total == 0:
        return np.zeros(0, np.int64), s, d
    hi = max(int(a.max()) for a in (s, d, extra) if a.size)
    if hi + 1 <= 2 * total + (1 << 24):
        # Dense-enough IDs: a presence mask is O(E + maxid) and far faster than sorting.
        present = np.zeros(hi + 1, dtype=bool)
        for a in (s, d, extra):
            present[a] = True
        ids = np.flatnonzero(present).astype(np.int64, copy=False)
        if ids.size == hi + 1:
            return ids, s, d  # IDs are exactly 0..n-1: identity relabelling.
        remap = np.cumsum(present, dtype=np.int32 if ids.size < (1 << 31) else np.int64)
        remap -= 1
        return ids, remap[s].astype(np.int64), remap[d].astype(np.int64)
    # Sparse IDs: one argsort of all endpoints, ranks scattered back.
    allv = np.concatenate([s, d, extra])
    order = np.argsort(allv)
    sv = allv[order]
    first = np.empty(sv.size, dtype=bool)
    first[0] = True
    np.not_equal(sv[1:], sv[:-1], out=first[1:])
    ids = sv[first]
    rank = np.cumsum(first, dtype=np.int64)
    rank -= 1
    idx = np.empty(allv.size, dtype=np.int64)
    idx[order] = rank
    return ids, idx[: s.size], idx[s.size : s.size + d.size]


def _dedup(
    a: np.ndarray, b: np.ndarray, w: np.ndarray | None, n: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Sort edges by (a, b), merging duplicates and keeping the smallest weight."""
    if a.size == 0:
        return a, b, w
    if n <= _MAX_N_FOR_PAIR_KEY:
        key = a * n + b
        if w is None:
            key.sort()
        elif not bool(np.all(key[1:] >= key[:-1])):
            order = np.argsort(key)  # stability not needed: each group keeps its minimum
            key = key[order]
            w = w[order]
        first = np.empty(key.size, dtype=bool)
        first[0] = True
        np.not_equal(key[1:], key[:-1], out=first[1:])
        starts = np.flatnonzero(first)
        if w is not None:
            w = np.minimum.reduceat(w, starts)
        key = key[starts]
        a = key // n
        b = key - a * n
        return a, b, w
    # n too large for a single int64 key (never in practice): lexicographic sort.
    order = np.lexsort((b, a))
    a, b = a[order], b[order]
    w = None if w is None else w[order]
    first = np.empty(a.size, dtype=bool)
    first[0] = True
    first[1:] = (a[1:] != a[:-1]) | (b[1:] != b[:-1])
    starts = np.flatnonzero(first)
    if w is not None:
        w = np.minimum.reduceat(w, starts)
    return a[starts], b[starts], w


def _order_by_dst(src: np.ndarray, dst: np.ndarray, n: int) -> np.ndarray:
    """Edge ids sorted by (dst, src), given edges already sorted by (src, dst).

    Within one dst, edge id order is src order, so sorting the unique key
    dst * m + eid (a fast SIMD sort of plain int64) is enough; no stable argsort.
    """
    m = src.size
    eid = np.arange(m, dtype=np.int64)
    if m == 0:
        return eid
    if n * m < (1 << 62):
        key = dst * m + eid
        key.sort()
        return key % m
    return np.argsort(dst, kind="stable").astype(np.int64, copy=False)


def _csr(src: np.ndarray, dst: np.ndarray, n: int, directed: bool) -> tuple[np.ndarray, ...]:
    """CSR arrays (in_indptr, in_nbr, in_eid, out_indptr, out_nbr, out_eid)."""
    m = src.size
    deg_out = np.bincount(src, minlength=n).astype(np.int64, copy=False)
    deg_in = np.bincount(dst, minlength=n).astype(np.int64, copy=False)
    by_dst = _order_by_dst(src, dst, n)
    eid = np.arange(m, dtype=np.int64)
    if directed:
        out_indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(deg_out, out=out_indptr[1:])
        in_indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(deg_in, out=in_indptr[1:])
        in_nbr = src[by_dst]
        return in_indptr, in_nbr, by_dst, out_indptr, dst.copy(), eid
    # Undirected (src < dst): row r = [edges with dst == r, by src] + [edges with src == r, by dst];
    # the first block's neighbours are < r and the second's > r, so each row comes out sorted.
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(deg_in + deg_out, out=indptr[1:])
    cout_excl = np.concatenate(([0], np.cumsum(deg_out)[:-1]))
    cin_incl = np.cumsum(deg_in)
    nbr = np.empty(2 * m, dtype=np.int64)
    eids = np.empty(2 * m, dtype=np.int64)
    pos_low = eid + cout_excl[dst[by_dst]]
    nbr[pos_low] = src[by_dst]
    eids[pos_low] = by_dst
    pos_high = eid + cin_incl[src]
    nbr[pos_high] = dst
    eids[pos_high] = eid
    return indptr, nbr, eids, indptr, nbr, eids


def build_graph(
    src_ids: Any,
    dst_ids: Any,
    weight: Any = None,
    *,
    directed: bool,
    name: str,
    extra_ids: Any = None,
    info: dict[str, Any] | None = None,
) -> Graph:
    """Build a canonical `Graph` from arrays of ORIGINAL vertex IDs (one entry per input edge).

    `extra_ids` are vertices that exist even when isolated (generators, .mtx).
    Every ID that appears is a vertex, including endpoints of dropped self-loops.
    Self-loops are dropped and duplicates merged keeping the smallest weight; for
    undirected graphs (a, b) and (b, a) are duplicates. Both are counted in `info`.
    Bad arrays raise `G2PLError` naming `name` (never a raw NumPy error).
    """
    s = _as_id_array(src_ids, "src", name)
    d = _as_id_array(dst_ids, "dst", name)
    if s.size != d.size:
        raise G2PLError(f"src and dst have different lengths ({s.size} and {d.size})", file=name)
    extra = np.zeros(0, np.int64) if extra_ids is None else _as_id_array(extra_ids, "ids", name)
    w: np.ndarray | None = None
    if weight is not None:
        w = np.asarray(weight)
        if w.ndim != 1 or w.size != s.size:
            raise G2PLError(
                f"weight must be a 1-D array with one value per edge ({s.size}), got shape {w.shape}",
                file=name,
            )
        if w.size and w.dtype.kind not in "iuf":
            raise G2PLError(f"weight must be numeric, got dtype {w.dtype}", file=name)
        w = w.astype(np.float64)
        bad = ~np.isfinite(w) | (w < 0)
        if bool(bad.any()):
            i = int(np.argmax(bad))
            raise G2PLError(f"weight[{i}] = {float(w[i])!r} is not a finite non-negative number", file=name)

    n_input = int(s.size)
    ids, si, di = _relabel(s, d, extra)
    n = int(ids.size)
    if n == 0:
        raise G2PLError("the graph has no vertices", file=name)

    keep = si != di
    loops = n_input - int(np.count_nonzero(keep))
    if loops:
        si, di = si[keep], di[keep]
        if w is not None:
            w = w[keep]
    if directed:
        a, b = si, di
    else:
        a, b = np.minimum(si, di), np.maximum(si, di)
    a, b, w = _dedup(a, b, w, n)
    m = int(a.size)
    dups = n_input - loops - m

    in_indptr, in_nbr, in_eid, out_indptr, out_nbr, out_eid = _csr(a, b, n, directed)
    deg = np.diff(in_indptr) + (np.diff(out_indptr) if directed else 0)
    full_info: dict[str, Any] = dict(info or {})
    full_info.update(
        input_edges=n_input,
        self_loops_dropped=loops,
        duplicates_merged=dups,
        isolated_vertices=int(np.count_nonzero(deg == 0)),
    )
    return Graph(
        n=n,
        m=m,
        directed=bool(directed),
        ids=ids,
        src=a,
        dst=b,
        weight=np.ones(m, dtype=np.float64) if w is None else w,
        in_indptr=in_indptr,
        in_nbr=in_nbr,
        in_eid=in_eid,
        out_indptr=out_indptr,
        out_nbr=out_nbr,
        out_eid=out_eid,
        weighted=weight is not None,
        name=name,
        info=full_info,
    )
