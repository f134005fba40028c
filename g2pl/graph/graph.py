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

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from g2pl.errors import G2PLError
from g2pl.graph.lazy import LazyArrays
from g2pl.graph.sorts import TargetKeys, by_target, row_pointers, sort_unique_pairs

#: Vertex IDs must be below this (the runtime may use spare high bits / -1 sentinels).
MAX_VERTEX_ID = 1 << 62

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
    def from_scipy(cls, matrix: Any, directed: bool | None = None, name: str = "scipy") -> Graph:
        """A graph from a (sparse) adjacency matrix, indices = vertex IDs; directed unless symmetric
        (when not said); see `from_scipy`."""
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
    k = extra.size
    if k > hi and int(extra[0]) == 0 and bool(np.all(np.diff(extra) == 1)):
        return np.arange(k, dtype=np.int64), s, d  # `extra` is 0..k-1 (generators): identity, no pass
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


def _dedup(pair: list, w: np.ndarray | None, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Sort edges by (a, b), merging duplicates and keeping the smallest weight (`sorts.sort_unique_pairs`;
    a self-loop is kept like any edge: the caller has dropped and counted them). `pair` is [a, b],
    emptied here, in the narrowest index type for n."""
    vt = index_dtype(n)
    pair[:] = [x.astype(vt, copy=False) for x in pair]
    a, b, w, _ = sort_unique_pairs(pair, n, w, drop_loops=False, chunk=_CHUNK)
    return a, b, w


def _csr(src: np.ndarray, dst: np.ndarray, n: int, directed: bool) -> tuple[np.ndarray, ...]:
    """CSR arrays (in_indptr, in_nbr, in_eid, out_indptr, out_nbr, out_eid) of edges sorted by (src, dst)."""
    return _adjacency([src, dst], n, directed)[2:]


def _adjacency(edges: list, n: int, directed: bool) -> tuple[np.ndarray, ...]:
    """(src, dst, in_indptr, in_nbr, in_eid, out_indptr, out_nbr, out_eid) of the edges [src, dst]
    sorted by (src, dst) (the list is emptied).

    Row pointers are int64; neighbours have src's type and edge ids the narrowest
    type for m. The out-neighbours of a directed graph are `dst` itself (edges are
    sorted by source), so that array is shared, not copied. The in-direction takes
    the edges in (dst, src) order from one sort of packed keys (`sorts.TargetKeys`, or
    `sorts.by_target` for graphs too large to pack source, id and destination in 64 bits).
    """
    src, dst = edges
    edges.clear()
    m = src.size
    vt, et = src.dtype, index_dtype(m)
    sptr = row_pointers(src, n)
    dptr = row_pointers(dst, n)
    keyed: TargetKeys | None = None
    by_dst = np.zeros(0, dtype=et)
    dropped = TargetKeys.fits(n, m)
    if dropped:  # sources and ids decode from the keys: `src` is made again at the end
        keyed = TargetKeys(src, dst, n, _CHUNK)
        del src
    else:
        by_dst = by_target(dst, n, et, _CHUNK)

    def lower(a: int, b: int) -> tuple[np.ndarray, np.ndarray]:
        """(sources, edge ids) of the edges a..b-1 in (dst, src) order."""
        if keyed is not None:
            return keyed.sources(a, b), keyed.eids(a, b, et)
        e = by_dst[a:b]
        return src[e], e

    def edge_sources() -> np.ndarray:
        """`src`, made again from the row pointers when it was let go (after the keys are gone)."""
        return np.repeat(np.arange(n, dtype=vt), np.diff(sptr)) if dropped else src

    if directed:
        in_nbr = np.empty(m, dtype=vt)
        in_eid = np.empty(m, dtype=et) if keyed is not None else by_dst
        for lo in range(0, m, _CHUNK):
            hi = min(lo + _CHUNK, m)
            in_nbr[lo:hi], in_eid[lo:hi] = lower(lo, hi)
        keyed = None
        return edge_sources(), dst, dptr, in_nbr, in_eid, sptr, dst, np.arange(m, dtype=et)
    # Undirected (src < dst): row r = [edges with dst == r, by src] + [edges with src == r, by dst];
    # the first block's neighbours are < r and the second's > r, so each row comes out sorted. Both
    # blocks are filled in order (`lower` reads the edges in dst order, `dst` is in src order), so a
    # chunk of rows takes the next entries of each through a boolean mask: sequential stores.
    indptr = sptr + dptr
    del dptr  # the edges by destination before row r: indptr[r] - sptr[r]
    nbr = np.empty(2 * m, dtype=vt)
    eids = np.empty(2 * m, dtype=et)
    pattern = np.tile(np.array([True, False]), min(n, _CHUNK))
    for r0, r1, lo, hi in _row_chunks(indptr, max(1, _CHUNK // 2)):  # half: decoded keys are 3x wider
        lens = np.empty(2 * (r1 - r0), dtype=np.int64)
        np.subtract(sptr[r0 + 1 : r1 + 1], sptr[r0:r1], out=lens[1::2])
        np.subtract(indptr[r0 + 1 : r1 + 1], indptr[r0:r1], out=lens[0::2])
        lens[0::2] -= lens[1::2]
        first = np.repeat(pattern[: lens.size], lens)
        seg_n, seg_e = nbr[lo:hi], eids[lo:hi]
        seg_n[first], seg_e[first] = lower(lo - int(sptr[r0]), hi - int(sptr[r1]))
        np.logical_not(first, out=first)
        a, b = int(sptr[r0]), int(sptr[r1])
        seg_n[first] = dst[a:b]
        seg_e[first] = np.arange(a, b, dtype=et)
    keyed = None
    return edge_sources(), dst, indptr, nbr, eids, indptr, nbr, eids


def _row_chunks(ptr: np.ndarray, step: int) -> Iterator[tuple[int, int, int, int]]:
    """(r0, r1, ptr[r0], ptr[r1]) for runs of at most `step` rows holding about `step` entries (at least
    one row)."""
    n, r0 = ptr.size - 1, 0
    while r0 < n:
        r1 = max(r0 + 1, min(n, int(np.searchsorted(ptr, ptr[r0] + step, side="right")) - 1, r0 + step))
        yield r0, r1, int(ptr[r0]), int(ptr[r1])
        r0 = r1


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
    The arrays are only read, never overwritten, whether `owned` (the caller's to give away) or not."""
    s = _as_id_array(edges[0], "src", name)
    d = _as_id_array(edges[1], "dst", name)
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
        d = d.astype(vt)

    pair = [s, d]
    del s, d
    a, b, w, loops = sort_unique_pairs(pair, n, w, undirected=not directed, chunk=_CHUNK)
    m = int(a.size)
    dups = n_input - loops - m

    pair = [a, b]
    del a, b
    a, b, in_indptr, in_nbr, in_eid, out_indptr, out_nbr, out_eid = _adjacency(pair, n, directed)
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


def from_scipy(matrix: Any, directed: bool | None = None, name: str = "scipy") -> Graph:
    """A `Graph` from a (sparse) adjacency matrix: entry (i, j) = edge i -> j with weight A[i, j].

    Every row and column index 0..max(rows, cols)-1 is a vertex ID (isolated
    ones too). Stored entries are edges (an explicitly stored 0 is an edge of
    weight 0); a bool matrix gives an unweighted graph.

    `directed=None` (the default) decides from the matrix: a symmetric one (the
    same entries stored, with the same values, on both sides of the diagonal) is
    undirected, any other directed.  An undirected graph needs a symmetric
    matrix: `directed=False` with any other is an error, never a silent
    symmetrisation (which of A[i, j] and A[j, i] would be the weight?).  A
    symmetric matrix stores each undirected edge twice; only the upper triangle
    is read, so nothing is counted as a duplicate.
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
    if directed is not True:
        why = _asymmetry(coo)
        if why is not None and directed is False:
            raise G2PLError(f"directed=False needs a symmetric matrix, and this one is not: {why}; pass "
                            "directed=True (or leave directed out), or symmetrise it first, e.g. A.maximum(A.T)",
                            file=name)
        if why is None:
            keep = row <= col
            row, col, data = row[keep], col[keep], data[keep]
        directed = why is not None
    return build_graph(row, col, data if weighted else None, directed=directed, name=name,
                       extra_ids=np.arange(nv, dtype=np.int64), info={"format": "scipy"})


def _asymmetry(coo: Any) -> str | None:
    """Why a sparse matrix is not symmetric (its first entry, row-major, without its mirror), or None
    when it is: square, the same entries stored on both sides of the diagonal (explicit zeros
    count: they are edges), with equal values."""
    import scipy.sparse as sp

    if coo.shape[0] != coo.shape[1]:
        return f"it is {coo.shape[0]} x {coo.shape[1]}, not square"
    if coo.nnz == 0:
        return None
    a = sp.csr_array(coo)  # duplicate entries summed, as SciPy reads them
    a.sort_indices()
    t = sp.csr_array(a.T)
    t.sort_indices()
    r = np.repeat(np.arange(a.shape[0]), np.diff(a.indptr))
    rt = np.repeat(np.arange(t.shape[0]), np.diff(t.indptr))
    n = a.shape[0]
    ka, kt = r * n + a.indices, rt * n + t.indices  # each ascending: rows, then sorted columns
    if ka.size == kt.size and np.array_equal(ka, kt):
        diff = a.data != t.data
        if not bool(diff.any()):
            return None
        k = int(np.argmax(diff))
        i, j = int(r[k]), int(a.indices[k])
        return f"A[{i}, {j}] = {a.data[k].item()!r} but A[{j}, {i}] = {t.data[k].item()!r}"
    missing = np.setdiff1d(ka, kt, assume_unique=True)
    k = int(missing[0]) if missing.size else int(np.setdiff1d(kt, ka, assume_unique=True)[0])
    i, j = divmod(k, n)
    return f"A[{i}, {j}] is stored but A[{j}, {i}] is not"
