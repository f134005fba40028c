"""Hand-written NumPy/SciPy versions of programs/{bfs,pagerank,cc,sssp,matching}.g2pl.

These are the baselines `bench/compare.py` holds the compiled programs against:
the same algorithms, written directly on a `g2pl.Graph` the way a careful
NumPy programmer would (vectorized, no per-vertex Python loop, work
proportional to the active part of the graph where the algorithm allows it).
Every function takes the graph and internal vertex indices (0..n-1, ascending
original ID) and returns a NumPy array in internal vertex order (edge order for
matching), holding exactly what the compiled program returns:

* `bfs(g, root)` - levels (int64, -1 unreachable); direction-optimizing
  (Beamer et al.): top-down over frontier index arrays while the frontier's
  edges are few, bottom-up with early exit over a boolean frontier when many.
* `pagerank(g, iters, damping)` - `iters` power iterations as a SciPy CSR
  mat-vec loop, the rank of vertices without out-edges spread evenly.
* `cc(g)` - min original ID per component, by min-label hooking + pointer
  jumping, dropping edges whose endpoints already agree.
* `sssp(g, root)` - Bellman-Ford distances (inf unreachable), relaxing only
  the out-edges of vertices whose distance improved in the previous round.
* `matching(g)` - greedy maximal matching exactly as programs/matching.g2pl:
  each unmatched vertex proposes to its unmatched neighbour of least degree
  among unmatched vertices (ties to the smaller ID); mutual proposals match.

    python bench/handwritten.py --check [--graphs kron:12,ws:20000:10:0.3] [--seed 1]

asserts that every function gives the same answer as the compiled program
(`g2pl.compile(...).run(graph, ...)`; PageRank within 1e-12 relative).
"""

from __future__ import annotations

import sys

import harness
import numpy as np
import scipy.sparse as sp
from handwritten_cupy import power_iterations

ROOT = harness.ROOT

#: Beamer's direction-optimizing BFS switching parameters.
ALPHA = 15.0
BETA = 18.0


def _idx_dtype(limit: int) -> type:
    return np.int32 if limit < 2**31 - 1 else np.int64


def _expand(indptr: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Positions of all adjacency entries of `rows` (row after row) and each row's count."""
    starts = indptr[rows]
    counts = indptr[rows + 1] - starts
    total = int(counts.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64), counts
    offs = np.cumsum(counts)
    offs -= counts
    pos = np.arange(total, dtype=np.int64)
    pos += np.repeat(starts - offs, counts)
    return pos, counts


def _dedup(v: np.ndarray, scratch: np.ndarray) -> np.ndarray:
    """Distinct values of `v` (any order) in O(len(v)) with an n-sized scratch array (no sort).

    Whichever of several equal values' positions NumPy writes last, exactly one
    position reads its own index back.
    """
    k = np.arange(v.size, dtype=scratch.dtype)
    scratch[v] = k
    return v[scratch[v] == k]


# --------------------------------------------------------------------------- BFS


def _bottom_up(in_ptr: np.ndarray, in_nbr: np.ndarray, cand: np.ndarray, fbits: np.ndarray) -> np.ndarray:
    """Vertices of `cand` with an in-neighbour in the frontier bitmap `fbits`, with early exit.

    Round r checks the next 2^r in-neighbours of every candidate still looking,
    so a candidate stops reading its list as soon as it finds a parent.
    """
    pos = in_ptr[cand]
    end = in_ptr[cand + 1]
    keep = pos < end
    cand, pos, end = cand[keep], pos[keep], end[keep]
    found = []
    w = 1
    while cand.size:
        if w == 1:
            hit = fbits[in_nbr[pos]]
            pos = pos + 1
        else:
            cnt = np.minimum(end - pos, w)
            offs = np.cumsum(cnt)
            offs -= cnt
            idx = np.arange(int(offs[-1] + cnt[-1]), dtype=np.int64)
            idx += np.repeat(pos - offs, cnt)
            hit = np.logical_or.reduceat(fbits[in_nbr[idx]], offs)
            pos = pos + cnt
        found.append(cand[hit])
        rest = ~hit
        rest &= pos < end
        cand, pos, end = cand[rest], pos[rest], end[rest]
        w *= 2
    return np.concatenate(found) if found else np.zeros(0, dtype=np.int64)


def bfs(g, root: int) -> np.ndarray:
    """BFS levels from internal vertex `root` along edge direction (-1: unreachable)."""
    n = g.n
    out_ptr, out_nbr = g.out_indptr, g.out_nbr
    in_ptr, in_nbr = g.in_indptr, g.in_nbr
    out_deg = np.diff(out_ptr)
    in_deg = out_deg if in_ptr is out_ptr else np.diff(in_ptr)
    level = np.full(n, -1, dtype=np.int64)
    level[root] = 0
    scratch = np.empty(n, dtype=_idx_dtype(len(out_nbr) + 1))
    frontier = np.array([root], dtype=np.int64)
    m_unexplored = int(in_ptr[-1]) - int(in_deg[root])  # edges a bottom-up step would still have to read
    top_down = True
    d = 0
    while frontier.size:
        d += 1
        n_f = frontier.size
        if top_down:
            m_f = int(out_deg[frontier].sum())
            if m_f > m_unexplored / ALPHA:
                top_down = False
        elif n_f < n / BETA:
            top_down = True
        if top_down:
            pos, _ = _expand(out_ptr, frontier)
            nb = out_nbr[pos]
            nb = nb[level[nb] < 0]
            nxt = _dedup(nb, scratch)
        else:
            fbits = level == d - 1
            cand = np.flatnonzero(level < 0)
            nxt = _bottom_up(in_ptr, in_nbr, cand, fbits)
        level[nxt] = d
        m_unexplored -= int(in_deg[nxt].sum())
        if not top_down and nxt.size < n_f and nxt.size < n / BETA:
            top_down = True  # shrinking and small again
        frontier = nxt
    return level


# --------------------------------------------------------------------------- PageRank


def pagerank(g, iters: int = 20, damping: float = 0.85) -> np.ndarray:
    """`iters` iterations of PR = (1-d)/n + d * (A^T (PR / outdeg) + dangling / n), as programs/pagerank.g2pl."""
    n = g.n
    nnz = len(g.in_nbr)
    it = _idx_dtype(max(n, nnz) + 1)
    # Row v lists v's in-neighbours: y = A @ x sums x over in-neighbours (values flow along edges).
    A = sp.csr_array((np.ones(nnz), g.in_nbr.astype(it), g.in_indptr.astype(it)), shape=(n, n))
    outdeg = np.diff(g.out_indptr)
    has_out = outdeg > 0
    inv = np.zeros(n)
    np.divide(1.0, outdeg, out=inv, where=has_out)
    return power_iterations(np, A, inv, np.flatnonzero(~has_out), iters, damping)


# --------------------------------------------------------------------------- connected components


def cc(g) -> np.ndarray:
    """Smallest original ID in each vertex's (weakly) connected component."""
    n = g.n
    it = _idx_dtype(n)
    L = np.arange(n, dtype=it)
    u = g.src.astype(it)
    v = g.dst.astype(it)
    while u.size:
        lu = L[u]
        lv = L[v]
        keep = lu != lv
        if not keep.any():
            break
        u, v, lu, lv = u[keep], v[keep], lu[keep], lv[keep]
        # Hook: every label (a root after the jumps below) takes the smallest label it touches.
        np.minimum.at(L, np.maximum(lu, lv), np.minimum(lu, lv))
        # Pointer jumping until every vertex points at a root (L[L] == L).
        while True:
            LL = L[L]
            if np.array_equal(LL, L):
                break
            L = LL
    return g.ids[L]


# --------------------------------------------------------------------------- SSSP


def sssp(g, root: int) -> np.ndarray:
    """Bellman-Ford distances from internal vertex `root` over `g.weight`, frontier by frontier."""
    n = g.n
    out_ptr, out_nbr, out_eid, w = g.out_indptr, g.out_nbr, g.out_eid, g.weight
    dist = np.full(n, np.inf)
    dist[root] = 0.0
    scratch = np.empty(n, dtype=_idx_dtype(len(out_nbr) + 1))
    frontier = np.array([root], dtype=np.int64)
    while frontier.size:
        pos, counts = _expand(out_ptr, frontier)
        tgt = out_nbr[pos]
        c = np.repeat(dist[frontier], counts)
        c += w[out_eid[pos]]
        better = c < dist[tgt]
        tgt, c = tgt[better], c[better]
        # Every target left improves this round (synchronously: candidates were read before any write).
        np.minimum.at(dist, tgt, c)
        frontier = _dedup(tgt, scratch)
    return dist


# --------------------------------------------------------------------------- greedy maximal matching


def matching(g) -> np.ndarray:
    """Edges (in edge order, as a bool mask) of the greedy maximal matching of programs/matching.g2pl."""
    n, m = g.n, g.m
    it = _idx_dtype(n)
    # Adjacency entries (row v, in-neighbour u) with both ends unmatched; rows stay in CSR order.
    deg = np.diff(g.in_indptr)
    row = np.repeat(np.arange(n, dtype=it), deg)
    col = g.in_nbr.astype(it)
    unmatched = np.ones(n, dtype=bool)
    M = np.zeros(m, dtype=bool)
    ekey = None
    while row.size:
        deg = np.bincount(row, minlength=n)  # degree among unmatched vertices
        rows = np.flatnonzero(deg)
        starts = np.cumsum(deg[rows])
        starts -= deg[rows]
        # Proposal of v: the in-neighbour u minimizing (deg(u), u); ties -> smaller ID = smaller index.
        key = deg[col]
        key *= n
        key += col
        cand = np.full(n, -1, dtype=np.int64)
        cand[rows] = np.minimum.reduceat(key, starts) % n
        c = cand[rows]
        mutual = cand[c] == rows
        if not mutual.any():
            break
        vs, us = rows[mutual], c[mutual]  # both directions of every matched pair are listed
        if ekey is None:
            ekey = g.src.astype(np.int64) * n + g.dst  # edges are sorted by (src, dst); int64: src may be int32
        if g.directed:
            q = np.sort(us * n + vs)  # edge u -> v: the proposal u of v is an in-neighbour of v
        else:
            low = vs < us  # undirected edges are stored once as (min, max); vs ascending -> sorted keys
            q = vs[low] * n + us[low]
        M[np.searchsorted(ekey, q)] = True  # sorted queries: NumPy's binary search reuses its bounds
        unmatched[vs] = False
        keep = unmatched[row]
        keep &= unmatched[col]
        row, col = row[keep], col[keep]
    return M


ALGORITHMS = {"bfs": bfs, "pagerank": pagerank, "cc": cc, "sssp": sssp, "matching": matching}

#: program file, arguments, name of the returned value
PROGRAMS = {
    "bfs": "programs/bfs.g2pl",
    "pagerank": "programs/pagerank.g2pl",
    "cc": "programs/cc.g2pl",
    "sssp": "programs/sssp.g2pl",
    "matching": "programs/matching.g2pl",
}


def pick_root(g, seed: int = 1) -> int:
    """A reproducible random root with at least one out-edge (internal index)."""
    ok = np.flatnonzero(np.diff(g.out_indptr) > 0)
    if ok.size == 0:
        return 0
    return int(ok[np.random.default_rng(seed).integers(ok.size)])


def program_args(algo: str, g, root: int, iters: int = 20, damping: float = 0.85) -> dict:
    if algo in ("bfs", "sssp"):
        return {"root": int(g.ids[root])}
    if algo.startswith("pagerank"):  # (pagerank.g2pl, pagerank32.g2pl)
        return {"iters": iters, "damping": damping}
    return {}


def run_handwritten(algo: str, g, root: int, iters: int = 20, damping: float = 0.85) -> np.ndarray:
    if algo in ("bfs", "sssp"):
        return ALGORITHMS[algo](g, root)
    if algo == "pagerank":
        return pagerank(g, iters, damping)
    return ALGORITHMS[algo](g)


def compiled_answer(res, g) -> np.ndarray:
    """The compiled program's (only) returned value as an array in internal vertex / edge order."""
    return res.array(res.values[0]["name"], g)


def same_answer(algo: str, ours: np.ndarray, ref: np.ndarray, rtol: float = 1e-12) -> tuple[bool, str]:
    """Whether two answers agree: exactly, PageRank within `rtol` relative (summation order differs)."""
    if ours.shape != ref.shape:
        return False, f"shape {ours.shape} vs {ref.shape}"
    if algo == "pagerank":
        err = float(np.max(np.abs(ours - ref) / np.maximum(np.abs(ref), 1e-300))) if ref.size else 0.0
        return err <= rtol, f"max relative difference {err:.2e}"
    ok = bool(np.array_equal(ours, ref))  # inf == inf for unreachable SSSP distances
    bad = int(np.count_nonzero(ours != ref))
    return ok, "identical" if ok else f"{bad} of {ref.size} entries differ"


def check(graphs: list[str], seed: int, directed: bool = False) -> int:
    import g2pl

    failures = 0
    progs = {a: g2pl.compile_file(ROOT / p) for a, p in PROGRAMS.items()}
    for spec in graphs:
        for dr in ([False, True] if directed else [False]):
            g = g2pl.load_graph(spec, seed=seed, directed=dr)
            root = pick_root(g, seed)
            for algo, prog in progs.items():
                if algo in ("matching", "cc") and dr:
                    continue  # both are meant for undirected graphs (cc.g2pl only follows in-edges)
                res = prog.run(g, program_args(algo, g, root))
                ref = compiled_answer(res, g)
                t, ours = harness.timed(run_handwritten, algo, g, root)
                ok, msg = same_answer(algo, ours, ref)
                failures += not ok
                kind = "directed" if dr else "undirected"
                print(f"{'OK  ' if ok else 'FAIL'} {spec} ({kind}) {algo:9s} {msg}; compiled {res.stats['time_s']:.3f} s, "
                      f"hand-written {t:.3f} s", flush=True)
    return 1 if failures else 0


def main() -> int:
    ap = harness.parser(__doc__, out=False, seed=1)
    ap.add_argument("--check", action="store_true", help="compare every function with the compiled program")
    ap.add_argument("--graphs", default="kron:12,ws:20000:10:0.3,er:3000:6000")
    ap.add_argument("--directed", action="store_true", help="also check BFS, PageRank, CC, SSSP on directed graphs")
    a = ap.parse_args()
    if not a.check:
        ap.print_help()
        return 0
    return check(a.graphs.split(","), a.seed, a.directed)


if __name__ == "__main__":
    sys.exit(main())
