"""Hand-written GPU versions of programs/bfs.g2pl and programs/pagerank.g2pl, over any array module.

The baselines `bench/gpu_bench.py` holds the CuPy backend against. Every function takes the
array module `xp` and a sparse module `sp` (with `csr_matrix`) through a `CSRGraph`, so the
*same* code runs on a GPU with `cupy` / `cupyx.scipy.sparse` and on a CPU with `numpy` /
`scipy.sparse` (tests/project/test_handwritten_cupy.py checks it there, without a GPU):

* `bfs(dg, root)` - levels (int64, -1 unreachable, as programs/bfs.g2pl); direction-optimizing
  (Beamer et al.): top-down push from the frontier's index array while the frontier's edges are
  few (`m_f > m_u / ALPHA` switches to bottom-up), bottom-up pull when many (`n_f < n / BETA`
  switches back). Bottom-up reads the in-lists of unvisited vertices in rounds of 1, 4, 16 ...
  entries (early exit: a vertex that found a parent in the frontier stops reading), the last
  round reading what is left.
* `pagerank(dg, iters, damping)` - `iters` iterations of
  PR = (1-d)/n + d * (A^T (PR / outdeg) + dangling / n), dangling = the rank of vertices without
  out-edges: a cuSPARSE (SciPy) float64 SpMV per iteration, no host sync inside the loop.

Only operations CuPy 14 has are used: no `ufunc.reduceat`, no `take(mode=)`, no
`unpackbits(count=)`, no `errstate`, no `repeat` with an array of counts (segment ids come from
`add.at` + `cumsum`), no ufunc `where=`; SpMV only on float64 data. Host syncs are limited to
per-level control values (sizes of the next frontier, Beamer's edge counts); `dg.syncs` counts
them (each `_host` call and each boolean compaction is one).

    python bench/handwritten_cupy.py [--graph kron:12] [--xp numpy|cupy]

runs both on one graph and prints the time and the number of host syncs.
"""

from __future__ import annotations

import sys

import harness
import numpy as np

#: Beamer's direction-optimizing BFS switching parameters (as bench/handwritten.py).
ALPHA = 15.0
BETA = 18.0
#: Bottom-up early exit: in-list entries read per candidate in the first round, growth per round,
#: and the number of bounded rounds before a last round reads every entry left.
BU_FIRST = 1
BU_GROWTH = 4
BU_ROUNDS = 4


def modules(name: str):
    """(xp, sp) for "numpy" (numpy, scipy.sparse) or "cupy" (cupy, cupyx.scipy.sparse)."""
    if name == "cupy":
        import cupy
        import cupyx.scipy.sparse as csp

        return cupy, csp
    import scipy.sparse as ssp

    return np, ssp


class CSRGraph:
    """A g2pl `Graph`'s CSR adjacency on the device of `xp` (uploaded once; `h2d_bytes` counted).

    Indices are int32 when every vertex index and adjacency position fits (halves the bytes the
    kernels read). For undirected graphs in- and out-lists are the same arrays, uploaded once.
    """

    def __init__(self, g, xp, sp) -> None:
        self.xp, self.sp = xp, sp
        self.n = int(g.n)
        self.m = int(g.m)
        self.nnz = int(len(g.in_nbr))
        self.idx = np.int32 if max(self.n, self.nnz) < 2**31 - 1 else np.int64
        self.h2d_bytes = 0
        self.syncs = 0
        self.in_ptr = self._up(g.in_indptr)
        self.in_nbr = self._up(g.in_nbr)
        same = g.out_indptr is g.in_indptr and g.out_nbr is g.in_nbr
        self.out_ptr = self.in_ptr if same else self._up(g.out_indptr)
        self.out_nbr = self.in_nbr if same else self._up(g.out_nbr)
        self.out_deg = xp.diff(self.out_ptr)
        self.in_deg = self.out_deg if same else xp.diff(self.in_ptr)
        self._A = None

    def _up(self, a: np.ndarray):
        h = np.ascontiguousarray(a, dtype=self.idx)
        self.h2d_bytes += h.nbytes
        return self.xp.asarray(h)

    def host(self, x) -> int:
        """One device->host read of a control value (counted)."""
        self.syncs += 1
        return int(x)

    def host_list(self, x) -> list:
        self.syncs += 1
        return [int(v) for v in x.tolist()]

    def compact(self, a, mask):
        """a[mask]: a boolean compaction needs the count on the host (one sync)."""
        self.syncs += 1
        return a[mask]

    def nonzero(self, mask):
        """Indices where `mask` holds (one sync: their number); index several arrays with it."""
        self.syncs += 1
        return self.xp.flatnonzero(mask)

    def matrix(self):
        """A float64 CSR matrix whose row v lists v's in-neighbours (y = A @ x sums x over them)."""
        if self._A is None:
            xp = self.xp
            data = xp.ones(self.nnz, dtype=xp.float64)
            self._A = self.sp.csr_matrix((data, self.in_nbr, self.in_ptr), shape=(self.n, self.n))
        return self._A


def _segments(xp, cnt, total: int, dtype):
    """For counts `cnt` summing to `total`: each position's segment and the segment's first position.

    (What `repeat(arange(len(cnt)), cnt)` gives, without `repeat` of an array of counts.)
    """
    ends = xp.cumsum(cnt, dtype=dtype)
    # Segment i ends where i + 1 starts; empty segments stack up. int32: CUDA's atomicAdd has no int64.
    mark = xp.zeros(total + 1, dtype=np.int32)
    xp.add.at(mark, ends[:-1], 1)
    seg = xp.cumsum(mark[:total], dtype=dtype)
    return seg, ends - cnt


def _expand(dg: CSRGraph, ptr, rows):
    """Adjacency positions of all entries of `rows` (row after row); one sync for their number."""
    xp = dg.xp
    if rows.size == 0:
        return xp.zeros(0, dtype=dg.idx)
    starts = ptr[rows]
    cnt = ptr[rows + 1] - starts
    total = dg.host(cnt.sum())
    if total == 0:
        return xp.zeros(0, dtype=dg.idx)
    pos_t = np.int32 if total < 2**31 - 1 and dg.idx == np.int32 else np.int64
    seg, first = _segments(xp, cnt, total, pos_t)
    pos = xp.arange(total, dtype=pos_t)
    pos += (starts.astype(pos_t) - first)[seg]
    return pos


def _bottom_up(dg: CSRGraph, cand, fbits):
    """Vertices of `cand` with an in-neighbour in the frontier bitmap `fbits` (early exit by rounds)."""
    xp = dg.xp
    pos = dg.in_ptr[cand]
    end = dg.in_ptr[cand + 1]
    sel = dg.nonzero(pos < end)
    cand, pos, end = cand[sel], pos[sel], end[sel]
    found = []
    w = BU_FIRST
    for r in range(BU_ROUNDS + 1):
        k = cand.size
        if k == 0:
            break
        cnt = end - pos
        if r < BU_ROUNDS:
            cnt = xp.minimum(cnt, w)
        total = dg.host(cnt.sum())
        pt = np.int32 if total < 2**31 - 1 and dg.idx == np.int32 else np.int64
        seg, first = _segments(xp, cnt, total, pt)
        idx = xp.arange(total, dtype=pt)
        idx += (pos.astype(pt) - first)[seg]
        hit_edge = fbits[dg.in_nbr[idx]]
        hitx = xp.zeros(k + 1, dtype=bool)
        hitx[xp.where(hit_edge, seg, k)] = True  # every write stores True: duplicates are harmless
        hit = hitx[:k]
        found.append(dg.compact(cand, hit))
        if r == BU_ROUNDS:
            break
        pos = pos + cnt
        rest = ~hit
        rest &= pos < end
        sel = dg.nonzero(rest)
        cand, pos, end = cand[sel], pos[sel], end[sel]
        w *= BU_GROWTH
    if not found:
        return xp.zeros(0, dtype=dg.idx)
    return xp.concatenate(found) if len(found) > 1 else found[0]


def bfs(dg: CSRGraph, root: int, trace: list | None = None):
    """BFS levels from internal vertex `root` along edge direction (int64, -1: unreachable).

    `trace`, if given, gets one ("td" | "bu", frontier size) per level.
    """
    xp = dg.xp
    n = dg.n
    level = xp.full(n, -1, dtype=xp.int32)
    if n == 0:
        return level.astype(xp.int64)
    level[root] = 0
    scratch = xp.empty(n, dtype=np.int64 if dg.nnz >= 2**31 - 1 else np.int32)
    frontier = xp.full(1, root, dtype=dg.idx)
    unvisited = None  # candidate list of the bottom-up steps, shrunk lazily
    m_f, in_root = dg.host_list(xp.stack([dg.out_deg[root], dg.in_deg[root]]))
    m_u = dg.nnz - in_root  # in-list entries a bottom-up step would still have to read
    top_down = True
    d = 0
    n_f = 1
    while n_f:
        d += 1
        if top_down:
            if m_f > m_u / ALPHA:
                top_down = False
        elif n_f < n / BETA:
            top_down = True
        if top_down:
            pos = _expand(dg, dg.out_ptr, frontier)
            nb = dg.out_nbr[pos]
            fresh = level[nb] < 0
            scratch[nb] = xp.arange(nb.size, dtype=scratch.dtype)
            fresh &= scratch[nb] == xp.arange(nb.size, dtype=scratch.dtype)  # one copy of each vertex
            nxt = dg.compact(nb, fresh)
        else:
            fbits = xp.zeros(n, dtype=bool)
            fbits[frontier] = True
            if unvisited is None:
                unvisited = dg.nonzero(level < 0).astype(dg.idx, copy=False)
            else:
                unvisited = dg.compact(unvisited, level[unvisited] < 0)
            nxt = _bottom_up(dg, unvisited, fbits)
        level[nxt] = d
        if trace is not None:
            trace.append(("td" if top_down else "bu", int(nxt.size)))
        n_next = int(nxt.size)  # known on the host since the compaction
        if n_next:
            m_f, in_next = dg.host_list(xp.stack([dg.out_deg[nxt].sum(), dg.in_deg[nxt].sum()]))
            m_u -= in_next
        if not top_down and n_next < n_f and n_next < n / BETA:
            top_down = True  # shrinking and small again
        frontier, n_f = nxt, n_next
    return level.astype(xp.int64)


def pagerank(dg: CSRGraph, iters: int = 20, damping: float = 0.85):
    """`iters` iterations of PR = (1-d)/n + d * (A^T (PR / outdeg) + dangling / n), as programs/pagerank.g2pl."""
    xp = dg.xp
    n = dg.n
    if n == 0:
        return xp.zeros(0, dtype=xp.float64)
    A = dg.matrix()
    outdeg = dg.out_deg
    has_out = outdeg > 0
    inv = xp.where(has_out, 1.0 / xp.maximum(outdeg, 1).astype(xp.float64), 0.0)
    return power_iterations(xp, A, inv, dg.nonzero(~has_out), iters, damping)


def power_iterations(xp, A, inv, dangling_idx, iters: int, damping: float):
    """The iterations of both hand-written PageRanks (this one and bench/handwritten.py's, on NumPy):
    `iters` times PR = (1-d)/n + d * (A @ (PR * inv) + the rank at `dangling_idx` / n), from PR = 1/n; `A`
    holds each vertex's in-neighbours in its row, `inv` is 1 / out-degree (0 without out-edges)."""
    n = A.shape[0]
    pr = xp.full(n, 1.0 / n, dtype=xp.float64)
    x = xp.empty(n, dtype=xp.float64)
    base = (1.0 - damping) / n
    for _ in range(iters):
        dangling = pr[dangling_idx].sum()  # stays on the device (0-d array under CuPy)
        xp.multiply(pr, inv, out=x)
        y = A @ x
        y += dangling / n
        y *= damping
        y += base
        pr = y
    return pr


def to_host(a) -> np.ndarray:
    """A NumPy copy of a device (or host) array."""
    get = getattr(a, "get", None)
    return get() if callable(get) else np.asarray(a)


def main() -> int:
    ap = harness.parser(__doc__, out=False, seed=1)
    ap.add_argument("--graph", default="kron:12")
    ap.add_argument("--xp", default="numpy", choices=["numpy", "cupy"])
    a = ap.parse_args()
    import g2pl

    xp, sp = modules(a.xp)
    g = g2pl.load_graph(a.graph, seed=a.seed)
    dg = CSRGraph(g, xp, sp)
    ok = np.flatnonzero(np.diff(g.out_indptr) > 0)
    root = int(ok[np.random.default_rng(a.seed).integers(ok.size)]) if ok.size else 0
    for name, fn in (("bfs", lambda: bfs(dg, root)), ("pagerank", lambda: pagerank(dg))):
        s0 = dg.syncs
        t, out = harness.timed(lambda fn=fn: to_host(fn()))
        print(f"{a.graph} {name}: {t:.4f} s, {dg.syncs - s0} host syncs, checksum {float(out.sum()):.6g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
