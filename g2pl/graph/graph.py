"""The in-memory graph every backend starts from, and building it from raw edge arrays.

Input files and generators produce edges as pairs of *original* vertex IDs.
`build_graph` turns them into a canonical `Graph`: vertices relabelled to
0..n-1 in ascending original-ID order (so results can always be mapped back
to the IDs the user wrote), self-loops dropped and duplicate edges merged
(both counted, because the language forbids doing either silently), edges sorted
by (src, dst), and CSR adjacency in both directions.

`Graph.from_edges`, `Graph.from_networkx` and `Graph.from_scipy` (the functions
at the end) build one from NumPy arrays, a networkx graph or a SciPy matrix.

Everything is vectorized NumPy: graphs of tens of millions of edges must
build in a few seconds, so there is no Python loop over edges or vertices.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from g2pl.errors import G2PLError
from g2pl.graph.lazy import LazyArrays

#: Vertex IDs must be below this (the runtime may use spare high bits / -1 sentinels).
MAX_VERTEX_ID = 1 << 62

# Largest n for which the (a * n + b) edge key fits in int64.
_MAX_N_FOR_PAIR_KEY = 3_037_000_499

#: Vertex and edge indices are int32 below this count (tests lower it to exercise the int64 path).
INDEX32_LIMIT = 1 << 31

# Chunk length of the chunked passes below: temporaries stay a few tens of MB at any graph size.
_CHUNK = 1 << 20


def index_dtype(count: int) -> np.dtype:
    """The narrowest index type for positions 0..count-1: int32 when it fits (half of int64's memory)."""
    return np.dtype(np.int32) if count < INDEX32_LIMIT else np.dtype(np.int64)


@dataclass(eq=False, repr=False)
class Graph(LazyArrays):
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

    def hand_over(self, names: tuple[str, ...], rebuild: Callable[[], np.ndarray]) -> None:
        """Drop the array held under `names` (one array may have several: an undirected graph's in_nbr
        is its out_nbr); `rebuild()` makes it again on the next access.

        Why: a one-rank degree-ordered view (runtime.partition.whole_by_degree) holds the same edges
        renumbered; keeping both copies would double the memory of every run on a large graph.
        """
        release = self.__dict__.get("_release")  # a memory-mapped graph (.g2g) lets the pages go
        if release is not None:
            for k in names:
                release(k)
        self._lazy(names, rebuild)

    def __getstate__(self) -> dict[str, Any]:
        state = super().__getstate__()
        state.pop("_release", None)
        return state

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

    # ---- graphs from NumPy arrays, networkx and SciPy (the functions at the end of this module)

    @classmethod
    def from_edges(cls, src: Any, dst: Any, weight: Any = None, directed: bool = False, name: str = "edges",
                   ids: Any = None) -> Graph:
        """A graph from arrays/lists of original vertex IDs (one entry per edge); see `from_edges`."""
        return from_edges(src, dst, weight, directed=directed, name=name, ids=ids)

    @classmethod
    def from_networkx(cls, G: Any, weight: str | None = "weight", name: str | None = None) -> Graph:
        """A graph from a networkx graph with non-negative int nodes; see `from_networkx`."""
        return from_networkx(G, weight=weight, name=name)

    @classmethod
    def from_scipy(cls, matrix: Any, directed: bool = False, name: str = "scipy") -> Graph:
        """A graph from a (sparse) adjacency matrix, indices = vertex IDs; see `from_scipy`."""
        return from_scipy(matrix, directed=directed, name=name)


def _plural(k: int, one: str, many: str) -> str:
    return f"{k} {one if k == 1 else many}"


def _as_id_array(a: Any, what: str, name: str) -> np.ndarray:
    """Validate an array of original vertex IDs: 1-D int32 or int64 (int32 input is not widened)."""
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
    if arr.dtype == np.int32 or arr.dtype == np.int64:
        return arr
    return arr.astype(np.int32 if hi < INDEX32_LIMIT else np.int64)


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
        remap = np.cumsum(present, dtype=index_dtype(ids.size))
        del present
        remap -= 1
        return ids, remap[s], remap[d]
    # Sparse IDs: one argsort of all endpoints, ranks scattered back.
    allv = np.concatenate([s.astype(np.int64, copy=False), d.astype(np.int64, copy=False), extra])
    order = np.argsort(allv)
    sv = allv[order]
    del allv
    first = np.empty(sv.size, dtype=bool)
    first[0] = True
    np.not_equal(sv[1:], sv[:-1], out=first[1:])
    ids = sv[first]
    del sv
    rank = np.cumsum(first, dtype=np.int64)
    rank -= 1
    idx = np.empty(rank.size, dtype=index_dtype(ids.size))
    idx[order] = rank
    return ids, idx[: s.size], idx[s.size : s.size + d.size]


def _compact(key: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """`key[keep]` written over `key` itself, chunk by chunk, and the buffer shrunk: no second copy."""
    w = 0
    for lo in range(0, key.size, _CHUNK):
        sel = key[lo : lo + _CHUNK][keep[lo : lo + _CHUNK]]
        key[w : w + sel.size] = sel
        w += sel.size
    del sel
    key.resize(w, refcheck=False)  # realloc in place; nothing else refers to this buffer
    return key


def _dedup(pair: list, w: np.ndarray | None, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Sort edges by (a, b), merging duplicates and keeping the smallest weight.

    Edges become one int64 key a * n + b, sorted in place (NumPy's SIMD sort of
    plain integers is faster here than any counting pass in NumPy), compacted in
    place, and split back in chunks into index arrays of the narrowest type: the
    peak is the key array plus the two inputs, never several int64 copies.
    `pair` is [a, b], emptied here so that the inputs are freed once keyed.
    """
    a, b = pair
    pair.clear()
    vt = index_dtype(n)
    if a.size == 0:
        return a.astype(vt), b.astype(vt), w
    if n > _MAX_N_FOR_PAIR_KEY:  # never in practice: lexicographic sort
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
    key = np.empty(a.size, dtype=np.int64)
    for lo in range(0, a.size, _CHUNK):
        k = key[lo : lo + _CHUNK]
        np.multiply(a[lo : lo + _CHUNK], n, out=k, dtype=np.int64)
        k += b[lo : lo + _CHUNK]
    del a, b
    if w is None:
        key.sort()
    elif not bool(np.all(key[1:] >= key[:-1])):
        order = np.argsort(key)  # stability not needed: each group keeps its minimum
        key = key[order]
        w = w[order]
        del order
    first = np.empty(key.size, dtype=bool)
    first[0] = True
    np.not_equal(key[1:], key[:-1], out=first[1:])
    if w is not None:
        w = np.minimum.reduceat(w, np.flatnonzero(first))
    key = _compact(key, first)
    del first
    src = np.empty(key.size, dtype=vt)
    dst = np.empty(key.size, dtype=vt)
    for lo in range(0, key.size, _CHUNK):
        q, r = np.divmod(key[lo : lo + _CHUNK], n)
        src[lo : lo + _CHUNK] = q
        dst[lo : lo + _CHUNK] = r
    return src, dst, w


def _order_by_dst(src: np.ndarray, dst: np.ndarray, n: int) -> np.ndarray:
    """Edge ids sorted by (dst, src), given edges already sorted by (src, dst); narrowest index type.

    Within one dst, edge id order is src order, so sorting the unique key
    dst * m + eid (a fast SIMD sort of plain int64) is enough; no stable argsort.
    """
    m = src.size
    et = index_dtype(m)
    if m == 0:
        return np.zeros(0, dtype=et)
    if n * m >= (1 << 62):
        return np.argsort(dst, kind="stable").astype(et)
    key = np.empty(m, dtype=np.int64)
    for lo in range(0, m, _CHUNK):
        k = key[lo : lo + _CHUNK]
        np.multiply(dst[lo : lo + _CHUNK], m, out=k, dtype=np.int64)
        k += np.arange(lo, lo + k.size, dtype=np.int64)
    key.sort()
    out = np.empty(m, dtype=et)
    for lo in range(0, m, _CHUNK):
        out[lo : lo + _CHUNK] = key[lo : lo + _CHUNK] % m
    return out


def _indptr(deg: np.ndarray) -> np.ndarray:
    out = np.zeros(deg.size + 1, dtype=np.int64)
    np.cumsum(deg, out=out[1:])
    return out


def _csr(src: np.ndarray, dst: np.ndarray, n: int, directed: bool) -> tuple[np.ndarray, ...]:
    """CSR arrays (in_indptr, in_nbr, in_eid, out_indptr, out_nbr, out_eid).

    Row pointers are int64; neighbours have src's type and edge ids the narrowest
    type for m. The out-neighbours of a directed graph are `dst` itself (edges are
    sorted by source), so that array is shared, not copied.
    """
    m = src.size
    et = index_dtype(m)
    deg_out = np.bincount(src, minlength=n)
    deg_in = np.bincount(dst, minlength=n)
    by_dst = _order_by_dst(src, dst, n)
    if directed:
        in_nbr = np.empty(m, dtype=src.dtype)
        for lo in range(0, m, _CHUNK):
            in_nbr[lo : lo + _CHUNK] = src[by_dst[lo : lo + _CHUNK]]
        return _indptr(deg_in), in_nbr, by_dst, _indptr(deg_out), dst, np.arange(m, dtype=et)
    # Undirected (src < dst): row r = [edges with dst == r, by src] + [edges with src == r, by dst];
    # the first block's neighbours are < r and the second's > r, so each row comes out sorted. Both
    # blocks are filled in order (by_dst is in dst order, the edges in src order), so a chunk of rows
    # takes the next entries of each through a boolean mask: sequential stores, no scatter.
    indptr = _indptr(deg_in + deg_out)
    nbr = np.empty(2 * m, dtype=src.dtype)
    eids = np.empty(2 * m, dtype=et)
    pattern = np.tile(np.array([True, False]), min(n, _CHUNK))
    taken_in = taken_out = 0
    r0 = 0
    while r0 < n:  # rows [r0, r1) hold about _CHUNK entries (at least one row)
        r1 = max(r0 + 1, min(n, int(np.searchsorted(indptr, indptr[r0] + _CHUNK, side="right")) - 1, r0 + _CHUNK))
        lens = np.empty(2 * (r1 - r0), dtype=np.int64)
        lens[0::2] = deg_in[r0:r1]
        lens[1::2] = deg_out[r0:r1]
        first = np.repeat(pattern[: lens.size], lens)
        lo, hi = int(indptr[r0]), int(indptr[r1])
        k = int(np.count_nonzero(first))
        e = by_dst[taken_in : taken_in + k]
        seg_n, seg_e = nbr[lo:hi], eids[lo:hi]
        seg_n[first] = src[e]
        seg_e[first] = e
        np.logical_not(first, out=first)
        c = hi - lo - k
        seg_n[first] = dst[taken_out : taken_out + c]
        seg_e[first] = np.arange(taken_out, taken_out + c, dtype=et)
        taken_in += k
        taken_out += c
        r0 = r1
    return indptr, nbr, eids, indptr, nbr, eids


def _check_weights(weight: Any, size: int, name: str) -> np.ndarray:
    w = np.asarray(weight)
    if w.ndim != 1 or w.size != size:
        raise G2PLError(
            f"weight must be a 1-D array with one value per edge ({size}), got shape {w.shape}",
            file=name,
        )
    if w.size and w.dtype.kind not in "iuf":
        raise G2PLError(f"weight must be numeric, got dtype {w.dtype}", file=name)
    w = w.astype(np.float64)
    bad = ~np.isfinite(w) | (w < 0)
    if bool(bad.any()):
        i = int(np.argmax(bad))
        raise G2PLError(f"weight[{i}] = {float(w[i])!r} is not a finite non-negative number", file=name)
    return w


def unit_weights(m: int) -> np.ndarray:
    """The weights of an unweighted graph: a read-only stride-0 view of one 1.0 (no m-sized array)."""
    return np.broadcast_to(np.ones(1, dtype=np.float64), (m,))


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
    return build_graph_from([src_ids, dst_ids], weight, directed=directed, name=name, extra_ids=extra_ids,
                            info=info, owned=False)


def build_graph_from(
    edges: list,
    weight: Any = None,
    *,
    directed: bool,
    name: str,
    extra_ids: Any = None,
    info: dict[str, Any] | None = None,
    owned: bool = True,
) -> Graph:
    """`build_graph` taking the [src, dst] arrays in a list it empties: a caller that drops its own
    references (a generator, a loader) lets each input array be freed as soon as it is consumed.
    With `owned`, the arrays are the caller's to give away and may be overwritten."""
    s = _as_id_array(edges[0], "src", name)
    d = _as_id_array(edges[1], "dst", name)
    own_d = owned or d is not edges[1]  # may `d` be overwritten?
    edges.clear()
    if s.size != d.size:
        raise G2PLError(f"src and dst have different lengths ({s.size} and {d.size})", file=name)
    extra = np.zeros(0, np.int64) if extra_ids is None else _as_id_array(extra_ids, "ids", name)
    w = None if weight is None else _check_weights(weight, s.size, name)

    n_input = int(s.size)
    ids, s, d = _relabel(s, d, extra)
    n = int(ids.size)
    if n == 0:
        raise G2PLError("the graph has no vertices", file=name)
    vt = index_dtype(n)
    if s.dtype != vt:  # e.g. int64 IDs parsed from text: narrowed now, before the edge-sized passes
        s = s.astype(vt)
    if d.dtype != vt:
        d, own_d = d.astype(vt), True

    keep = s != d
    loops = n_input - int(np.count_nonzero(keep))
    if loops:
        s = s[keep]
        d, own_d = d[keep], True
        if w is not None:
            w = w[keep]
    del keep
    if not directed:
        lo = np.minimum(s, d)
        if own_d:
            np.maximum(s, d, out=d)
        else:
            d = np.maximum(s, d)
        s = lo
        del lo
    pair = [s, d]
    del s, d
    a, b, w = _dedup(pair, w, n)
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
        weight=unit_weights(m) if w is None else w,
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


# --------------------------------------------------------------------------- graphs from other libraries


def from_edges(src: Any, dst: Any, weight: Any = None, directed: bool = False, name: str = "edges",
               ids: Any = None) -> Graph:
    """A `Graph` from two arrays (or lists) of original vertex IDs, one entry per edge.

    `weight` is an optional array of non-negative weights (one per edge);
    `ids` optionally lists extra vertices that exist even if isolated.
    Self-loops are dropped and duplicates merged (smallest weight kept), and
    counted in `graph.info`, exactly as for files.
    """
    s = _id_list(src)
    d = _id_list(dst)
    w = None if weight is None else np.asarray(weight)
    extra = None if ids is None else _id_list(ids)
    return build_graph(s, d, w, directed=directed, name=name, extra_ids=extra, info={"format": "arrays"})


def _id_list(a: Any) -> np.ndarray:
    arr = np.asarray(a)
    if arr.size == 0 and arr.ndim == 1:
        return np.zeros(0, dtype=np.int64)  # [] is float64 to NumPy; an empty edge list is fine
    return arr


def from_networkx(G: Any, weight: str | None = "weight", name: str | None = None) -> Graph:
    """A `Graph` from a networkx graph whose nodes are non-negative integers (the original IDs).

    Every node becomes a vertex (isolated ones too); the graph is directed iff
    `G.is_directed()`. Edge weights come from the `weight` attribute when every
    edge has it (pass `weight=None` to ignore weights); otherwise the graph is
    unweighted. Multigraph parallel edges are merged like duplicate edges.
    """
    label = name or (str(G.graph.get("name")) if G.graph.get("name") else "networkx")
    nodes = list(G.nodes)
    bad = [x for x in nodes if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, np.integer)) or x < 0]
    if bad:
        raise G2PLError(
            f"networkx node {bad[0]!r} is not a non-negative integer; G2PL vertex IDs are non-negative ints "
            "(relabel first, e.g. nx.convert_node_labels_to_integers(G, label_attribute='label'))",
            file=label,
        )
    if not nodes:
        raise G2PLError("the networkx graph has no nodes", file=label)
    edges = list(G.edges(data=weight, default=None)) if weight else list(G.edges())
    m = len(edges)
    src = np.fromiter((e[0] for e in edges), dtype=np.int64, count=m)
    dst = np.fromiter((e[1] for e in edges), dtype=np.int64, count=m)
    w = None
    if weight and m and all(e[2] is not None for e in edges):
        try:
            w = np.asarray([float(e[2]) for e in edges], dtype=np.float64)
        except (TypeError, ValueError):
            raise G2PLError(f"edge attribute `{weight}` must be numeric to be used as a weight", file=label) from None
    ids = np.asarray(nodes, dtype=np.int64)
    return build_graph(src, dst, w, directed=bool(G.is_directed()), name=label, extra_ids=ids,
                       info={"format": "networkx"})


def from_scipy(matrix: Any, directed: bool = False, name: str = "scipy") -> Graph:
    """A `Graph` from a (sparse) adjacency matrix: entry (i, j) = edge i -> j with weight A[i, j].

    Every row and column index 0..max(rows, cols)-1 is a vertex ID (isolated
    ones too). Stored entries are edges (an explicitly stored 0 is an edge of
    weight 0); a bool matrix gives an unweighted graph. For an undirected graph
    a symmetric matrix stores each edge twice; only the upper triangle is used
    then, so nothing is counted as a duplicate.
    """
    import scipy.sparse as sp

    if not sp.issparse(matrix):
        arr = np.asarray(matrix)
        if arr.ndim != 2:
            raise G2PLError(f"expected a 2-D (sparse) matrix, got shape {arr.shape}", file=name)
        matrix = sp.coo_array(arr)
    coo = sp.coo_array(matrix)
    nv = max(coo.shape)
    if nv == 0:
        raise G2PLError(f"the matrix is {coo.shape[0]} x {coo.shape[1]}, so the graph has no vertices", file=name)
    row = np.asarray(coo.row, dtype=np.int64)
    col = np.asarray(coo.col, dtype=np.int64)
    data = np.asarray(coo.data)
    weighted = data.dtype.kind != "b"
    if not directed and coo.shape[0] == coo.shape[1] and coo.nnz:
        csr = sp.csr_array(matrix)
        if (csr != csr.T).nnz == 0:
            keep = row <= col
            row, col, data = row[keep], col[keep], data[keep]
    return build_graph(row, col, data if weighted else None, directed=directed, name=name,
                       extra_ids=np.arange(nv, dtype=np.int64), info={"format": "scipy"})
