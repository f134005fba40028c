"""Partitioning a graph over ranks: each rank's `LocalGraph`.

Vertices are split into contiguous blocks of internal index (= ascending
original ID) balanced by vertices + adjacency entries, in the style of
Gemini's chunking.  A rank holds its *owned* vertices and every edge with an
owned endpoint (edges live at both endpoints, docs/language.md, "Execution model"); the other
endpoints are *ghosts*.  Vertex arrays are indexed 0..n-1 (owned); "ext"
arrays append the ghosts (n..n_ext-1) after a ghost exchange.  Each CSR row
keeps the global neighbour order, so per-vertex reductions add in the same
order whatever the number of ranks.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from g2pl.graph.graph import index_dtype
from g2pl.graph.lazy import LazyArrays
from g2pl.graph.sorts import bits_for
from g2pl.runtime import cpu_kernels
from g2pl.runtime.array_kernels import HostOps, expand_ranges

# Adjacency entries renumbered per chunk in `whole_by_degree`: bounds its temporaries.
_CHUNK = 1 << 20
# The compiled row pass saves about 3 ns an entry over the chunked NumPy one (the random reads of the
# gather and of the relabel dominate both), about 1/_COMPILED_SHARE of what cpu_kernels.AUTO_WORK
# assumes of a kernel's work, so its entries count as that fraction: in `auto` mode it loads numba
# itself only past ~5e8 entries, and otherwise runs where some other kernel has loaded it.
_COMPILED_SHARE = 32


@dataclass
class GraphCache:
    """What the runtime derives from a graph part once and keeps for every later run on it."""

    adjacency: dict = field(default_factory=dict)  # neighbours (in, out, all, set) -> Adjacency
    edge_index: Any = None  # adjacency.EdgeIndex: the edge lookups of edge tests
    reverse_edge: Any = None  # each local edge's reverse (-1: none), see Edges.reverse
    src_ids: np.ndarray | None = None  # original ID of each local edge's u endpoint
    dst_ids: np.ndarray | None = None
    weight_view: np.ndarray | None = None  # the weights (stride 0 when all equal)
    id_rank: np.ndarray | None = None  # rank of each ext vertex by original ID (packed argmin keys)
    rank_id: np.ndarray | None = None
    endpoint_bufs: dict = field(default_factory=dict)  # see edges.Edges.at_endpoint
    sparse_bufs: dict = field(default_factory=dict)  # see edges.Edges.sparse_buffer
    devices: dict = field(default_factory=dict)  # (array module, device) -> the device copy (GPU backends)

    def forget_values(self) -> None:
        """Drop what depends on a run's values (views for its sender sets, snapshots, buffers): every
        run starts as the first one does."""
        for a in self.adjacency.values():
            a.forget_views()
        self.endpoint_bufs.clear()
        self.sparse_bufs.clear()


def _take_weights(weight: np.ndarray, eidx: np.ndarray) -> np.ndarray:
    """The weights of edges `eidx`; a stride-0 view stays one (an unweighted graph's parts hold no
    per-edge weights, and pickle them as one value: graph/lazy.py)."""
    if weight.ndim == 1 and weight.strides == (0,) and len(weight):
        return np.broadcast_to(weight[:1], (len(eidx),))
    return weight[eidx]


@dataclass
class LocalGraph(LazyArrays):
    rank: int
    size: int
    n: int  # owned vertices
    m: int  # local edges (with an owned endpoint)
    n_ext: int  # owned + ghosts
    n_global: int
    m_global: int
    directed: bool
    ids: np.ndarray  # original IDs of owned vertices (ascending)
    ext_ids: np.ndarray  # original IDs of owned + ghost vertices
    src: np.ndarray  # ext index of each local edge's u endpoint
    dst: np.ndarray  # ext index of each local edge's v endpoint
    weight: np.ndarray
    edge_owned: np.ndarray  # bool per local edge: this rank counts it (its src is owned)
    in_indptr: np.ndarray
    in_nbr: np.ndarray  # ext index
    in_eid: np.ndarray  # local edge index
    out_indptr: np.ndarray
    out_nbr: np.ndarray
    out_eid: np.ndarray
    send_idx: np.ndarray  # owned vertices to send, grouped by destination rank
    send_counts: np.ndarray  # per destination rank
    recv_counts: np.ndarray  # ghosts per source rank (ghosts are grouped by owner)
    first_ids: np.ndarray  # per rank: smallest original ID it owns (owner lookup)
    lo: int  # first owned global index
    # -O0 transport: one record per adjacency entry whose sender is on another rank (the papers' naive code)
    nv_send_idx: np.ndarray | None = None  # owned sender of each outgoing record, grouped by destination
    nv_send_counts: np.ndarray | None = None
    nv_recv_ghost: np.ndarray | None = None  # ghost slot (0-based among ghosts) of each incoming record
    nv_recv_counts: np.ndarray | None = None
    # degree renumbering inside the block: owned vertex k has sorted position order[k] (None: ID order)
    order: np.ndarray | None = None
    sorted_ids: np.ndarray | None = None
    sorted_to_local: np.ndarray | None = None
    m_owned: int | None = None  # how many local edges this rank owns, when known without `edge_owned`
    cache: GraphCache = field(default_factory=GraphCache, repr=False, compare=False)

    def defer(self, name: str, build) -> None:
        """Leave the array `name` out until first read, then `build()` it (kept from then on): a one-rank
        degree view builds its edge endpoints only for programs that read edges."""
        self._lazy((name,), build)

    @property
    def n_ghosts(self) -> int:
        return self.n_ext - self.n

    #: the array module of the part's arrays (a device copy, cupy_backend.DevicePart, says cupy)
    xp = np

    def ends(self, side: str) -> np.ndarray:
        """Each local edge's `side` ("src" or "dst") endpoint (ext index)."""
        return self.src if side == "src" else self.dst

    def end_ids(self, side: str) -> np.ndarray:
        """Original ID of each local edge's `side` endpoint (computed on first use, kept in the cache)."""
        name = f"{side}_ids"
        got = getattr(self.cache, name)
        if got is None:
            got = self.ext_ids[self.ends(side)]
            setattr(self.cache, name, got)
        return got

    def id_to_local(self, orig: np.ndarray) -> np.ndarray:
        """Owned-vertex index of each original ID, -1 if this rank does not own it."""
        xp = self.xp
        orig = xp.asarray(orig, dtype=xp.int64)
        ids = self.ids if self.sorted_ids is None else self.sorted_ids
        if self.n == 0:
            return xp.full(orig.shape, -1, dtype=xp.int64)
        base = _dense_base(self)
        if base is not None:  # the owned IDs are base, base + 1, ...: no search
            pos = orig - base
            if self.sorted_to_local is None:
                return xp.where((pos >= 0) & (pos < self.n), pos, -1)
            # renumbered: one gather from sorted_to_local between two -1s, which IDs out of range clip to
            return _dense_local(self).take(pos + 1, mode="clip")
        pos = xp.minimum(xp.searchsorted(ids, orig), self.n - 1)
        ok = ids[pos] == orig
        if self.sorted_to_local is not None:
            pos = self.sorted_to_local[pos]
        return xp.where(ok, pos, -1)

    def in_id_order(self, arr: np.ndarray) -> np.ndarray:
        """An owned-vertex array rearranged into ascending original-ID order (undoes renumbering): a
        gather through `sorted_to_local`, `order`'s inverse (kron:20's degree view: 3.9 ms, where the
        scatter through `order` took 5.3)."""
        if self.order is None:
            return arr
        assert self.sorted_to_local is not None  # (every part builder sets both, or neither)
        return self.xp.take(arr, self.sorted_to_local)

    def owner_of(self, orig: np.ndarray) -> np.ndarray:
        """Rank that would own each original ID (by ID range)."""
        xp = self.xp
        return xp.maximum(xp.searchsorted(self.first_ids, xp.asarray(orig, dtype=xp.int64), side="right") - 1, 0)


def _dense_base(lg: LocalGraph) -> int | None:
    """The first owned ID if a host part's owned IDs (in ID order) are one contiguous range (generated
    graphs), else None; worked out once per part (device parts search: no extra device reads)."""
    c = lg.cache
    if "dense_base" not in c.__dict__:
        # renumbered: the IDs in ascending order (sorted_to_local maps their positions to local indices)
        ids = lg.ids if lg.sorted_to_local is None else lg.sorted_ids
        base = None
        if (isinstance(ids, np.ndarray) and isinstance(lg.sorted_to_local, (np.ndarray, type(None))) and lg.n > 0
                and int(ids[-1]) - int(ids[0]) == lg.n - 1):
            base = int(ids[0])
        c.__dict__["dense_base"] = base
    return c.__dict__["dense_base"]


def _dense_local(lg: LocalGraph) -> np.ndarray:
    """A renumbered part's `sorted_to_local` with a -1 before and after it (made once per part)."""
    c = lg.cache
    if "dense_local" not in c.__dict__:
        pad = np.full(1, -1, dtype=np.int64)
        c.__dict__["dense_local"] = np.concatenate([pad, np.asarray(lg.sorted_to_local, dtype=np.int64), pad])
    return c.__dict__["dense_local"]


def _degrees(graph, lo: int = 0, hi: int | None = None) -> np.ndarray:
    """Adjacency entries of vertices lo..hi-1 (in + out on directed graphs)."""
    hi = graph.n if hi is None else hi
    deg = np.diff(graph.in_indptr[lo:hi + 1])
    if graph.directed:
        deg = deg + np.diff(graph.out_indptr[lo:hi + 1])
    return deg


def block_bounds(graph, size: int) -> np.ndarray:
    """Block boundaries (size+1 global indices) balancing vertices + adjacency entries per rank."""
    n = graph.n
    w = np.cumsum(1 + _degrees(graph).astype(np.int64))
    total = int(w[-1]) if n else 0
    targets = (np.arange(1, size, dtype=np.float64) * total / size)
    cuts = np.searchsorted(w, targets, side="left") + 1
    bounds = np.concatenate([[0], np.minimum(cuts, n), [n]]).astype(np.int64)
    return np.maximum.accumulate(bounds)


def _degree_order(graph, lo: int, hi: int) -> np.ndarray:
    """Block-local order: highest degree first, ties by original ID (locality for hubs).

    One sort of unique int64 keys (top degree - degree) << bits | position, decoded in place: the
    position rides in the key, so no stable sort is needed (NumPy's SIMD quicksort, about a third of
    `lexsort`'s time at kron:20); `lexsort` only where the two do not fit in 63 bits."""
    deg = _degrees(graph, lo, hi)
    if not len(deg):
        return np.zeros(0, dtype=np.int64)
    top, bits = int(deg.max()), bits_for(len(deg))
    if bits_for(top + 1) + bits > 63:
        return np.lexsort((np.arange(len(deg)), -deg)).astype(np.int64)
    key = np.subtract(top, deg, dtype=np.int64)
    key <<= bits
    key |= np.arange(len(deg), dtype=np.int64)
    key.sort()
    key &= (1 << bits) - 1
    return key


def _row_take(indptr: np.ndarray, order: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(new indptr, entry positions) of a CSR with rows taken in `order` (each row's entries keep
    their order)."""
    lens = np.diff(indptr)[order]
    new_ptr = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
    return new_ptr, expand_ranges(HostOps, indptr[:-1][order], lens)


def _reorder_rows(indptr: np.ndarray, nbr: np.ndarray, eid: np.ndarray, order: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """CSR with rows taken in `order` (each row's entries keep their order)."""
    new_ptr, take = _row_take(indptr, order)
    return new_ptr, nbr[take], eid[take]


def _rows_taken(old_ptr: np.ndarray, new_ptr: np.ndarray, order: np.ndarray, arr: np.ndarray,
                table: np.ndarray | None = None) -> np.ndarray:
    """`arr`'s CSR entries with rows taken in `order` (entries keep their order within a row), mapped
    through `table` if given.

    Compiled (cpu_kernels.take_rows: one pass, no position array) where numba is loaded or the
    adjacency repays loading it; else a bounded chunk of rows at a time into reused buffers: the
    entry positions (`_row_positions`), then one `take` per step written straight into place."""
    out = np.empty(int(new_ptr[-1]), dtype=arr.dtype if table is None else table.dtype)
    if cpu_kernels.use(len(out) // _COMPILED_SHARE):
        cpu_kernels.take_rows(old_ptr, new_ptr, order, arr, table, out)
        return out
    cap = min(len(out), _CHUNK)
    pos_buf = np.empty(cap, dtype=np.int64)
    val_buf = np.empty(cap if table is not None else 0, dtype=arr.dtype)
    n, k0 = len(order), 0
    while k0 < n:
        k1 = int(np.searchsorted(new_ptr, new_ptr[k0] + _CHUNK, side="right")) - 1
        k1 = min(max(k1, k0 + 1), n)
        a, b = int(new_ptr[k0]), int(new_ptr[k1])
        if a < b:
            big = b - a > cap  # one row longer than a chunk: buffers of its own
            pos = _row_positions(old_ptr[order[k0:k1]], np.diff(new_ptr[k0:k1 + 1]),
                                 np.empty(b - a, dtype=np.int64) if big else pos_buf[:b - a])
            # mode="clip": positions are in range by construction, and "raise" would buffer `out`
            if table is None:
                np.take(arr, pos, out=out[a:b], mode="clip")
            else:
                vals = np.take(arr, pos, out=np.empty(b - a, dtype=arr.dtype) if big else val_buf[:b - a],
                               mode="clip")
                np.take(table, vals, out=out[a:b], mode="clip")
        k0 = k1
    return out


def _row_positions(starts: np.ndarray, lens: np.ndarray, out: np.ndarray) -> np.ndarray:
    """`out` (int64, sum(lens) entries) filled with the concatenation of arange(s, s + l) for each (s, l):
    ones, each row's first entry set to its jump from the previous row's last, and a running sum in
    place (two passes over `out`; `expand_ranges` makes three, and two temporaries of its length)."""
    nz = lens > 0
    s, ln = starts[nz], lens[nz]
    first = np.cumsum(ln) - ln
    jump = s.astype(np.int64)
    jump[1:] -= s[:-1] + ln[:-1] - 1
    out.fill(1)
    out[first] = jump
    return np.cumsum(out, out=out)


def whole_by_degree(graph) -> LocalGraph:
    """`partition(graph, 1, "degree")[0]` without the per-rank index maps: one rank owns every vertex
    and keeps every edge index, so only the vertex order changes (half the time at kron:20).

    The degree-ordered arrays replace the graph's ID-ordered ones rather than adding to them: each
    graph array is dropped as soon as its renumbered copy exists (`Graph.hand_over`), so the peak is
    the graph plus one edge-sized array, and the ID-order arrays are rebuilt from this view if
    something asks for them later (edge results, a multi-rank partition, a run without renumbering).
    """
    n, m = graph.n, graph.m
    order = _degree_order(graph, 0, n)
    local = np.empty(n, dtype=index_dtype(n))  # global index -> local (sorted) index
    local[order] = np.arange(n, dtype=local.dtype)

    vt = graph.src.dtype
    # src/dst: neither the graph's (ID order) nor the view's (local order) are kept; each is rebuilt
    # from the view's adjacency when first read (edge values, edge results, checkpoints), so a
    # program without edge values holds the adjacency alone.  The graph's go first: a lower peak.
    ends: list[tuple] = []  # the view's adjacency that has the edge ends, once it exists
    for name in ("src", "dst"):
        graph.hand_over((name,), lambda name=name: _edge_ends(ends[0], order, graph.directed, name,
                                                              order.astype(vt)))

    def move(names: tuple[str, ...], make, rebuild):
        """Make one view array from the graph's, then let the graph drop its own."""
        arr = make()
        graph.hand_over(names, rebuild)
        return arr

    def csr(indptr, nbr_names, eid_names):
        new_ptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.diff(indptr)[order], out=new_ptr[1:])
        view: dict[str, np.ndarray] = {}
        # view rows are graph rows `order`; graph row g is view row local[g], view vertex k is order[k]
        view["nbr"] = move(nbr_names, lambda: _rows_taken(indptr, new_ptr, order, getattr(graph, nbr_names[0]),
                                                          local),
                           lambda: _rows_taken(new_ptr, indptr, local, view["nbr"], order.astype(vt)))
        view["eid"] = move(eid_names, lambda: _rows_taken(indptr, new_ptr, order, getattr(graph, eid_names[0])),
                           lambda: _rows_taken(new_ptr, indptr, local, view["eid"]))
        return new_ptr, view["nbr"], view["eid"]

    if graph.directed:
        in_csr = csr(graph.in_indptr, ("in_nbr",), ("in_eid",))
        out_csr = csr(graph.out_indptr, ("out_nbr",), ("out_eid",))
    else:  # one adjacency under both names
        in_csr = out_csr = csr(graph.in_indptr, ("in_nbr", "out_nbr"), ("in_eid", "out_eid"))
    ends.append(out_csr if graph.directed else in_csr)
    ids = graph.ids[order]
    none, zero = np.zeros(0, dtype=np.int64), np.zeros(1, dtype=np.int64)
    lg = LocalGraph(
        rank=0, size=1, n=n, m=m, n_ext=n, n_global=n, m_global=m, directed=graph.directed, ids=ids,
        ext_ids=ids, src=none, dst=none, weight=graph.weight,  # src, dst: deferred below
        edge_owned=np.broadcast_to(np.ones(1, dtype=bool), (m,)),
        in_indptr=in_csr[0], in_nbr=in_csr[1], in_eid=in_csr[2],
        out_indptr=out_csr[0], out_nbr=out_csr[1], out_eid=out_csr[2],
        send_idx=none, send_counts=zero, recv_counts=zero.copy(),
        first_ids=np.array([graph.ids[0] if n else np.iinfo(np.int64).max], dtype=np.int64), lo=0,
        nv_send_idx=none, nv_send_counts=zero.copy(), nv_recv_ghost=none, nv_recv_counts=zero.copy(),
        order=order, sorted_ids=graph.ids, sorted_to_local=local.astype(np.int64),
    )
    for name in ("src", "dst"):
        lg.defer(name, lambda name=name: _edge_ends(ends[0], order, graph.directed, name))
    return lg


def _edge_ends(csr: tuple, order: np.ndarray, directed: bool, side: str, table: np.ndarray | None = None):
    """Each edge's `side` endpoint (src or dst) from a degree view's adjacency, in view numbering or,
    through `table`, in the graph's.  Directed: `csr` is the out-adjacency (row = src, neighbour = dst).
    Undirected: every edge is in two rows; src is the endpoint of smaller ID (smaller global index)."""
    ptr, nbr, eid = csr
    m = len(eid) if directed else len(eid) // 2
    out = np.empty(m, dtype=nbr.dtype if table is None else table.dtype)
    n, k0 = len(ptr) - 1, 0
    while k0 < n:
        k1 = min(max(int(np.searchsorted(ptr, ptr[k0] + _CHUNK, side="right")) - 1, k0 + 1), n)
        a, b = int(ptr[k0]), int(ptr[k1])
        lens = np.diff(ptr[k0:k1 + 1])
        x, e = nbr[a:b], eid[a:b]
        if directed:
            val = np.repeat(np.arange(k0, k1, dtype=nbr.dtype), lens) if side == "src" else x
        else:  # the row is the edge's src where its global index is the smaller (rows' own: no gather)
            mine = np.repeat(order[k0:k1], lens) < order.take(x)
            e = e[mine]
            val = np.repeat(np.arange(k0, k1, dtype=nbr.dtype), lens)[mine] if side == "src" else x[mine]
        out[e] = val if table is None else table.take(val)
        k0 = k1
    return out


RENUMBERINGS = ("auto", "none", "degree")


def resolve_renumber(graph, renumber: str | None) -> str | None:
    """The renumbering a run uses: "degree" or None (vertices in ID order).

    "auto" (the default) orders by degree only when degrees are skewed
    (standard deviation above the mean, as in Kronecker and other power-law
    graphs): the hubs then share cache lines and neighbour gathers hit cache
    (at kron:18, PageRank 15% and BFS 25% faster).  On graphs with even
    degrees (Watts-Strogatz, Erdos-Renyi, meshes) the ID order is kept, since
    it is often already local and degree sorting would scatter it.
    """
    if renumber in (None, "none"):
        return None
    if renumber == "degree":
        return "degree"
    if renumber != "auto":
        raise ValueError(f"unknown renumbering {renumber!r}")
    deg = _degrees(graph)
    return "degree" if len(deg) and float(deg.std()) > float(deg.mean()) else None


def partition(graph, size: int, renumber: str | None = None) -> list[LocalGraph]:
    """Split `graph` into `size` LocalGraphs (done once, on one rank, then scattered).

    O(n + m) per rank with index maps (no sorting, no hashing).  With
    `renumber="degree"`, each block's vertices are ordered by degree.
    """
    bounds = block_bounds(graph, size)
    n, m = graph.n, graph.m
    first_ids = np.array([graph.ids[b] if b < n else np.iinfo(np.int64).max for b in bounds[:-1]], dtype=np.int64)
    owner_of_index = np.repeat(np.arange(size, dtype=np.int64), np.diff(bounds))
    src_owner, dst_owner = owner_of_index[graph.src], owner_of_index[graph.dst]
    parts: list[dict] = []
    ghost_lists = []
    vmap = np.full(n, -1, dtype=index_dtype(n))  # global vertex index -> ext index (reset per rank)
    emap = np.full(m, -1, dtype=index_dtype(m))  # global edge index -> local edge index
    for r in range(size):
        lo, hi = int(bounds[r]), int(bounds[r + 1])
        nl = hi - lo
        order = _degree_order(graph, lo, hi) if renumber == "degree" else None
        s_in, d_in = src_owner == r, dst_owner == r
        eidx = np.flatnonzero(s_in | d_in)
        src_g, dst_g = graph.src[eidx], graph.dst[eidx]
        mark = np.zeros(n, dtype=bool)
        mark[src_g] = True
        mark[dst_g] = True
        mark[lo:hi] = False
        ghosts = np.flatnonzero(mark)  # sorted, so grouped by owner rank
        if order is None:
            vmap[lo:hi] = np.arange(nl)
        else:
            vmap[lo + order] = np.arange(nl)
        vmap[ghosts] = nl + np.arange(len(ghosts))
        emap[eidx] = np.arange(len(eidx))

        def csr(indptr, nbr, eid, lo=lo, hi=hi) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
            a, b = indptr[lo], indptr[hi]
            return (indptr[lo:hi + 1] - a).astype(np.int64), vmap[nbr[a:b]], emap[eid[a:b]]

        in_csr = csr(graph.in_indptr, graph.in_nbr, graph.in_eid)
        out_csr = csr(graph.out_indptr, graph.out_nbr, graph.out_eid) if graph.directed else in_csr
        own_ids = graph.ids[lo:hi]
        extra = {}
        if order is not None:
            in_csr = _reorder_rows(*in_csr, order)
            out_csr = _reorder_rows(*out_csr, order) if graph.directed else in_csr
            inv = np.empty(nl, dtype=np.int64)
            inv[order] = np.arange(nl)
            extra = dict(order=order, sorted_ids=own_ids, sorted_to_local=inv)
            own_ids = own_ids[order]
        ghost_lists.append(ghosts)
        parts.append(dict(
            rank=r, size=size, n=nl, m=len(eidx), n_ext=nl + len(ghosts), n_global=n,
            m_global=m, directed=graph.directed, ids=own_ids,
            ext_ids=np.concatenate([own_ids, graph.ids[ghosts]]),
            src=vmap[src_g], dst=vmap[dst_g],
            weight=_take_weights(graph.weight, eidx),
            edge_owned=s_in[eidx],
            in_indptr=in_csr[0], in_nbr=in_csr[1], in_eid=in_csr[2],
            out_indptr=out_csr[0], out_nbr=out_csr[1], out_eid=out_csr[2],
            recv_counts=np.bincount(owner_of_index[ghosts], minlength=size).astype(np.int64),
            first_ids=first_ids, lo=lo, **extra,
        ))
        vmap[lo:hi] = -1
        vmap[ghosts] = -1
        emap[eidx] = -1
    _naive_transport(graph, bounds, parts, owner_of_index)
    for r in range(size):  # naive routes name owned vertices by block position: map through the renumbering
        to_local = parts[r].get("sorted_to_local")
        if to_local is not None:
            parts[r]["nv_send_idx"] = to_local[parts[r]["nv_send_idx"]]
    # send lists: rank r sends to rank q the owned vertices that q holds as ghosts, in q's ghost order
    for r in range(size):
        lo, hi = int(bounds[r]), int(bounds[r + 1])
        chunks = [g[(g >= lo) & (g < hi)] - lo for g in ghost_lists]
        to_local = parts[r].get("sorted_to_local")
        if to_local is not None:
            chunks = [to_local[c] for c in chunks]
        parts[r]["send_idx"] = np.concatenate(chunks).astype(np.int64)
        parts[r]["send_counts"] = np.array([len(c) for c in chunks], dtype=np.int64)
    return [LocalGraph(**p) for p in parts]


def _naive_transport(graph, bounds, parts: list[dict], owner_of_index: np.ndarray) -> None:
    """Per-adjacency-entry record routes for the -O0 transport (both directions on directed graphs)."""
    size = len(parts)
    sends: list[list[np.ndarray]] = [[np.zeros(0, np.int64)] * size for _ in range(size)]
    for q in range(size):
        lo, hi = int(bounds[q]), int(bounds[q + 1])
        csrs = [(graph.in_indptr, graph.in_nbr)]
        if graph.directed:
            csrs.append((graph.out_indptr, graph.out_nbr))
        senders = np.concatenate([nbr[ip[lo]:ip[hi]] for ip, nbr in csrs])
        remote = senders[(senders < lo) | (senders >= hi)]
        owners = owner_of_index[remote]
        order = np.argsort(owners, kind="stable")
        remote, owners = remote[order], owners[order]
        nl = hi - lo
        ghost_idx = np.searchsorted(graph.ids, parts[q]["ext_ids"][nl:])  # ghosts: sorted global indices
        recv_ghosts = np.searchsorted(ghost_idx, remote)
        recv_counts = np.bincount(owners, minlength=size).astype(np.int64)
        parts[q]["nv_recv_ghost"] = recv_ghosts.astype(np.int64)
        parts[q]["nv_recv_counts"] = recv_counts
        starts = np.concatenate([[0], np.cumsum(recv_counts)])
        for r in range(size):
            sends[r][q] = remote[starts[r]:starts[r + 1]] - int(bounds[r])
    for r in range(size):
        parts[r]["nv_send_idx"] = np.concatenate(sends[r]).astype(np.int64)
        parts[r]["nv_send_counts"] = np.array([len(x) for x in sends[r]], dtype=np.int64)


def whole(graph) -> LocalGraph:
    """The one-rank view: everything owned, no ghosts (shares the graph's arrays, no copies)."""
    empty = np.zeros(0, dtype=np.int64)
    return LocalGraph(
        rank=0, size=1, n=graph.n, m=graph.m, n_ext=graph.n, n_global=graph.n, m_global=graph.m,
        directed=graph.directed, ids=graph.ids, ext_ids=graph.ids, src=graph.src, dst=graph.dst,
        weight=graph.weight, edge_owned=np.ones(graph.m, dtype=bool),
        in_indptr=graph.in_indptr, in_nbr=graph.in_nbr, in_eid=graph.in_eid,
        out_indptr=graph.out_indptr, out_nbr=graph.out_nbr, out_eid=graph.out_eid,
        send_idx=empty, send_counts=np.zeros(1, np.int64), recv_counts=np.zeros(1, np.int64),
        first_ids=np.array([graph.ids[0] if graph.n else 0], dtype=np.int64), lo=0,
    )
