"""The same algorithms with the libraries users would otherwise pick (for bench/compare.py).

Each library is a class built once per graph from a `g2pl.Graph` (the build
time is reported as `prepare_s` and not counted in any algorithm's time) with
one method per algorithm it offers. A method returns the library's own result
(what a user gets back); `answer(algo, raw)` turns it into the canonical array
of `bench/handwritten.py` (internal vertex order; -1 / inf for unreachable)
outside the timed region, so `compare.py` can check it against the compiled
program. Where the library computes something slightly different, `answer`
still converts it and the check says how it differs:

| library | bfs | pagerank | cc | sssp | matching |
|---|---|---|---|---|---|
| SciPy csgraph | `breadth_first_order` (order + predecessors; levels derived untimed) | - | `connected_components` | `dijkstra` | - |
| python-graphblas | push/pull `any_pair` level BFS | 20 iterations, `plus_second` mxv | FastSV (LAGraph) | Bellman-Ford `min_plus`, frontier | - |
| igraph | `Graph.bfs` | `Graph.pagerank` (PRPACK: solved exactly, not 20 iterations) | `connected_components` | `distances` (Dijkstra) | - (none for general graphs) |
| networkit | `distance.BFS` | `centrality.PageRank`, 20 iterations, sinks distributed | `ConnectedComponents` | `distance.Dijkstra` | `SuitorMatcher` (a different maximal matching) |
| NetworkX | `single_source_shortest_path_length` | `pagerank` (tol 1e-6) | `connected_components` | `single_source_dijkstra_path_length` | `maximal_matching` (a different one) |

python-graphblas and networkit run with 1 and 2 threads (`set_threads`);
set `OMP_WAIT_POLICY=passive` before importing them (compare.py does) so idle
OpenMP threads do not spin against the other runs.

NetworkX needs minutes and gigabytes on big graphs, so compare.py runs it in a
subprocess (`python bench/libraries.py networkx --graph SPEC ...`) with a time
limit; that subprocess writes its times and answers for the parent to check.

    python bench/libraries.py --check [--graphs kron:12,ws:20000:10:0.3]   # every library vs the compiled programs
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "passive")

import handwritten as H  # noqa: E402
import harness  # noqa: E402
import numpy as np  # noqa: E402

ALGOS = ("bfs", "pagerank", "cc", "sssp", "matching")


# --------------------------------------------------------------------------- canonical answers (untimed)


def levels_from_parents(parent: np.ndarray, root: int) -> np.ndarray:
    """BFS levels from a predecessor array (-1 / negative: unreachable) by pointer jumping."""
    n = parent.size
    anc = np.where(parent >= 0, parent, -1).astype(np.int64)
    reached = anc >= 0
    reached[root] = True
    anc[root] = -1
    depth = (anc >= 0).astype(np.int64)
    while True:
        up = anc >= 0
        if not up.any():
            break
        a = anc[up]
        depth[up] += depth[a]
        anc[up] = anc[a]
    out = np.full(n, -1, dtype=np.int64)
    out[reached] = depth[reached]
    return out


def min_id_labels(labels: np.ndarray, g) -> np.ndarray:
    """Any component labelling -> the smallest original ID of each vertex's component."""
    labels = np.asarray(labels, dtype=np.int64)
    _, comp = np.unique(labels, return_inverse=True)
    first = np.full(comp.max() + 1 if comp.size else 0, g.n, dtype=np.int64)
    np.minimum.at(first, comp, np.arange(g.n, dtype=np.int64))
    return g.ids[first[comp]]


def edge_mask(g, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Bool mask over edges (edge order) of the internal pairs (u, v); undirected pairs in either order."""
    u = np.asarray(u, dtype=np.int64)
    v = np.asarray(v, dtype=np.int64)
    if not g.directed:
        u, v = np.minimum(u, v), np.maximum(u, v)
    key = g.src.astype(np.int64) * g.n + g.dst  # (int64: src may be int32)
    q = u * g.n + v
    pos = np.searchsorted(key, q)
    ok = (pos < key.size) & (key[np.minimum(pos, key.size - 1)] == q)
    if not ok.all():
        raise ValueError("matching holds a pair that is not an edge")
    out = np.zeros(g.m, dtype=bool)
    out[pos] = True
    return out


def matching_report(g, M: np.ndarray, ref: np.ndarray | None = None) -> tuple[bool, str]:
    """Is M a maximal matching of g (undirected)? Also its size vs the compiled one's."""
    u, v = g.src[M], g.dst[M]
    cnt = np.bincount(np.concatenate([u, v]), minlength=g.n)
    is_matching = bool((cnt <= 1).all())
    covered = cnt > 0
    maximal = bool((covered[g.src] | covered[g.dst]).all())
    msg = f"{'valid' if is_matching else 'NOT a matching'}, {'maximal' if maximal else 'NOT maximal'}, |M|={int(M.sum())}"
    if ref is not None:
        msg += f" (compiled |M|={int(ref.sum())})"
    return is_matching and maximal, msg


def compare_answer(algo: str, ours: np.ndarray, ref: np.ndarray, g, exact: bool = True,
                   rtol: float = 1e-9) -> tuple[bool, str]:
    """Check a library's canonical answer against the compiled one.

    `exact=False` (a library that computes a different but legitimate answer:
    converged PageRank, another maximal matching) reports the difference and
    counts as OK when it is of the expected kind.
    """
    if algo == "matching":
        ok, msg = matching_report(g, ours, ref)
        if exact and not np.array_equal(ours, ref):
            return False, msg + ", differs from compiled"
        return ok, ("identical; " if np.array_equal(ours, ref) else "") + msg
    if algo == "pagerank" and not exact:
        err = float(np.max(np.abs(ours - ref))) if ref.size else 0.0
        return ours.shape == ref.shape, f"not the same computation: max |diff| {err:.1e}, sum {ours.sum():.4f}"
    # Libraries group the PageRank sums differently (e.g. damping folded into 1/outdeg): 1e-9 relative.
    return H.same_answer(algo, ours, ref, rtol=rtol)


# --------------------------------------------------------------------------- libraries


class Library:
    name = ""
    threads: tuple[int, ...] = (1,)
    algos: tuple[str, ...] = ()
    #: algorithms whose result legitimately differs from the compiled program's
    inexact: tuple[str, ...] = ()
    notes: dict[str, str] = {}

    def __init__(self, g) -> None:
        self.g = g

    def set_threads(self, t: int) -> None:
        pass

    def answer(self, algo: str, raw) -> np.ndarray:
        return np.asarray(raw)


class SciPyLib(Library):
    name = "scipy"
    algos = ("bfs", "cc", "sssp")
    notes = {"bfs": "breadth_first_order: visit order + predecessors (levels derived untimed)"}

    def __init__(self, g) -> None:
        import scipy.sparse as sp

        super().__init__(g)
        self.cs = __import__("scipy.sparse.csgraph", fromlist=["csgraph"])
        n = g.n
        # Row u lists u's out-neighbours, weight per adjacency entry.
        self.A = sp.csr_array((g.weight[g.out_eid], g.out_nbr, g.out_indptr), shape=(n, n))

    def bfs(self, root):
        return self.cs.breadth_first_order(self.A, root, directed=self.g.directed, return_predecessors=True)

    def cc(self):
        return self.cs.connected_components(self.A, directed=self.g.directed, connection="weak")

    def sssp(self, root):
        return self.cs.dijkstra(self.A, directed=self.g.directed, indices=root)

    def answer(self, algo, raw):
        if algo == "bfs":
            order, pred = raw
            pred = pred.astype(np.int64)
            pred[pred < 0] = -1
            return levels_from_parents(pred, int(order[0]))
        if algo == "cc":
            return min_id_labels(raw[1], self.g)
        return np.asarray(raw, dtype=np.float64)


class GraphBLASLib(Library):
    name = "graphblas"
    threads = (1, 2)
    algos = ("bfs", "pagerank", "cc", "sssp")
    notes = {"cc": "FastSV (LAGraph) written with python-graphblas ops",
             "bfs": "level BFS, push (vxm) / pull (mxv) by frontier size"}

    def __init__(self, g) -> None:
        import graphblas as gb

        super().__init__(g)
        self.gb = gb
        n = g.n
        # A[u, v] = w(u -> v); for undirected graphs symmetric (the shared adjacency).
        self.A = gb.Matrix.ss.import_csr(nrows=n, ncols=n, indptr=g.out_indptr, col_indices=g.out_nbr,
                                         values=g.weight[g.out_eid], sorted_cols=True)
        self.AT = self.A if not g.directed else gb.Matrix.ss.import_csr(
            nrows=n, ncols=n, indptr=g.in_indptr, col_indices=g.in_nbr, values=g.weight[g.in_eid], sorted_cols=True)
        # Structure only (iso bool) for BFS, CC and PageRank.
        self.B = gb.Matrix.ss.import_csr(nrows=n, ncols=n, indptr=g.out_indptr, col_indices=g.out_nbr,
                                         values=True, is_iso=True, sorted_cols=True, dtype=bool)
        self.BT = self.B if not g.directed else gb.Matrix.ss.import_csr(
            nrows=n, ncols=n, indptr=g.in_indptr, col_indices=g.in_nbr, values=True, is_iso=True,
            sorted_cols=True, dtype=bool)
        self.S = self.B if not g.directed else self.B.ewise_add(self.BT, self.gb.binary.lor).new()
        self.outdeg = np.diff(g.out_indptr)

    def set_threads(self, t):
        self.gb.ss.config["nthreads"] = t

    def bfs(self, root):
        gb = self.gb
        n = self.g.n
        any_pair = gb.semiring.any_pair[bool]
        v = gb.Vector(np.int64, n)
        q = gb.Vector(bool, n)
        q[root] = True
        d = 0
        nvisited = 0
        avg = max(self.B.nvals / max(n, 1), 1.0)
        while True:
            v(q.S) << d
            nq = q.nvals
            nvisited += nq
            d += 1
            # Pull (each unvisited vertex reads its in-neighbours) while the frontier's edges are many.
            if nq * avg > (n - nvisited) * avg / 15:
                q(~v.S, replace=True) << any_pair(self.BT @ q)
            else:
                q(~v.S, replace=True) << any_pair(q @ self.B)
            if q.nvals == 0:
                return v

    def pagerank(self, iters, damping):
        gb = self.gb
        n = self.g.n
        has_out = self.outdeg > 0
        idx = np.flatnonzero(has_out)
        scale = gb.Vector.from_coo(idx, damping / self.outdeg[idx], size=n)  # damping folded in
        dmask = gb.Vector.from_coo(np.flatnonzero(~has_out), 1.0, size=n, dtype=float)
        r = gb.Vector.from_dense(np.full(n, 1.0 / n))
        w = gb.Vector(float, n)
        plus_second = gb.semiring.plus_second[float]
        plus_times = gb.semiring.plus_times[float]
        for _ in range(iters):
            dangling = plus_times(r @ dmask).new().get(0.0)  # rank held by vertices without out-edges
            w << r.ewise_mult(scale, gb.binary.times)
            r[:] << (1.0 - damping) / n + damping * dangling / n
            r(gb.binary.plus) << plus_second(self.BT @ w)  # pull: row v of A^T sums w over in-neighbours
        return r

    def cc(self):
        """FastSV (Zhang, Azad, Hu 2020) as in LAGraph: stochastic + aggressive hooking, shortcutting."""
        gb = self.gb
        n = self.g.n
        ar = np.arange(n, dtype=np.int64)
        f = gb.Vector.from_coo(ar, ar, size=n)
        gp = f.dup()
        mngp = gb.Vector(np.int64, n)
        min_second = gb.semiring.min_second[np.int64]
        fi = ar
        while True:
            mngp << min_second(self.S @ gp)
            f(gb.binary.min)[fi] << mngp  # stochastic hooking: parent of v takes min(mngp[v])
            f(gb.binary.min) << mngp  # aggressive hooking
            f(gb.binary.min) << gp  # shortcutting
            fi = f.to_dense()
            gp_new = f[fi].new()
            changed = gp_new.ewise_mult(gp, gb.binary.ne).reduce(gb.monoid.lor).get(False)
            gp = gp_new
            if not changed:
                return f

    def sssp(self, root):
        gb = self.gb
        n = self.g.n
        min_plus = gb.semiring.min_plus[float]
        dist = gb.Vector(float, n)
        dist[root] = 0.0
        front = dist.dup()
        while front.nvals:
            cand = min_plus(front @ self.A).new()
            better = cand.ewise_mult(dist, gb.binary.lt).new()
            front = gb.Vector(float, n)
            front(~dist.S) << cand  # newly reached
            front(better.V) << cand  # improved
            dist(gb.binary.min) << cand
        return dist

    def answer(self, algo, raw):
        if algo == "bfs":
            return raw.to_dense(fill_value=-1).astype(np.int64)
        if algo == "pagerank":
            return raw.to_dense(fill_value=0.0)
        if algo == "cc":
            return self.g.ids[raw.to_dense()]
        return raw.to_dense(fill_value=np.inf)


class IGraphLib(Library):
    name = "igraph"
    algos = ("bfs", "pagerank", "cc", "sssp")
    inexact = ("pagerank",)
    notes = {"pagerank": "PRPACK: solved to convergence, not 20 iterations", "matching": "no maximal matching for general graphs"}

    def __init__(self, g) -> None:
        import igraph

        super().__init__(g)
        self.G = igraph.Graph(n=g.n, edges=np.column_stack([g.src, g.dst]), directed=g.directed)
        self.G.es["weight"] = g.weight
        self.mode = "out"

    def bfs(self, root):
        return self.G.bfs(root, mode=self.mode)

    def pagerank(self, iters, damping):
        return self.G.pagerank(damping=damping, directed=self.g.directed)

    def cc(self):
        return self.G.connected_components(mode="weak")

    def sssp(self, root):
        return self.G.distances(source=root, weights="weight", mode=self.mode)

    def answer(self, algo, raw):
        g = self.g
        if algo == "bfs":
            vids, layers, _ = raw
            out = np.full(g.n, -1, dtype=np.int64)
            vids = np.asarray(vids, dtype=np.int64)
            layers = np.asarray(layers, dtype=np.int64)
            out[vids] = np.repeat(np.arange(layers.size - 1), np.diff(layers))
            return out
        if algo == "pagerank":
            return np.asarray(raw, dtype=np.float64)
        if algo == "cc":
            return min_id_labels(np.asarray(raw.membership), g)
        return np.asarray(raw[0], dtype=np.float64)


class NetworKitLib(Library):
    name = "networkit"
    threads = (1, 2)
    algos = ("bfs", "pagerank", "cc", "sssp", "matching")
    inexact = ("pagerank", "matching")
    notes = {"matching": "SuitorMatcher: a maximal matching, not the same one",
             "pagerank": "20 iterations, but the rank of isolated vertices is not redistributed "
                             "(sums to < 1 on graphs with isolated vertices, e.g. kron)"}

    def __init__(self, g) -> None:
        import networkit as nk

        super().__init__(g)
        self.nk = nk
        self.G = nk.graph.GraphFromCoo((g.weight, (g.src, g.dst)), n=g.n, weighted=True, directed=g.directed)
        self.G.indexEdges()

    def set_threads(self, t):
        self.nk.setNumberOfThreads(t)

    def bfs(self, root):
        b = self.nk.distance.BFS(self.G, root, storePaths=False)
        b.run()
        return b.getDistances()

    def pagerank(self, iters, damping):
        nk = self.nk
        sinks = nk.centrality.SinkHandling
        pr = nk.centrality.PageRank(self.G, damp=damping, tol=1e-300,
                                    distributeSinks=getattr(sinks, "DISTRIBUTE_SINKS", None) or sinks.DistributeSinks)
        pr.maxIterations = iters
        pr.run()
        return pr.scores()

    def cc(self):
        c = self.nk.components.ConnectedComponents(self.G)
        c.run()
        return c.getPartition().getVector()

    def sssp(self, root):
        d = self.nk.distance.Dijkstra(self.G, root, storePaths=False)
        d.run()
        return d.getDistances()

    def matching(self):
        m = self.nk.matching.SuitorMatcher(self.G, sortSuitor=False)
        m.run()
        return m.getMatching().getVector()

    def answer(self, algo, raw):
        g = self.g
        if algo in ("bfs", "sssp"):
            d = np.asarray(raw, dtype=np.float64)
            far = d >= np.finfo(np.float64).max / 2
            if algo == "bfs":
                out = np.full(g.n, -1, dtype=np.int64)
                out[~far] = d[~far].astype(np.int64)
                return out
            d[far] = np.inf
            return d
        if algo == "pagerank":
            return np.asarray(raw, dtype=np.float64)
        if algo == "cc":
            return min_id_labels(np.asarray(raw), g)
        mate = np.asarray(raw, dtype=np.uint64)  # unmatched: 2^64 - 1
        v = np.flatnonzero(mate < g.n)
        mate = mate.astype(np.int64)
        v = v[v < mate[v]]
        return edge_mask(g, v, mate[v])


LIBRARIES = {"scipy": SciPyLib, "graphblas": GraphBLASLib, "igraph": IGraphLib, "networkit": NetworKitLib}


def available() -> tuple[dict, dict]:
    """({name: class} importable here, {name: why not} for the others)."""
    ok, missing = {}, {}
    mods = {"scipy": "scipy.sparse.csgraph", "graphblas": "graphblas", "igraph": "igraph", "networkit": "networkit"}
    for name, cls in LIBRARIES.items():
        try:
            __import__(mods[name])
            ok[name] = cls
        except Exception as e:  # noqa: BLE001 - any import failure means "not available"
            missing[name] = f"{type(e).__name__}: {e}"
    return ok, missing


def call(lib: Library, algo: str, root: int, iters: int = 20, damping: float = 0.85):
    if algo in ("bfs", "sssp"):
        return getattr(lib, algo)(root)
    if algo == "pagerank":
        return lib.pagerank(iters, damping)
    return getattr(lib, algo)()


# --------------------------------------------------------------------------- NetworkX (subprocess)


def networkx_run(spec: str, seed: int, root: int, algos: list[str], out: Path, directed: bool = False) -> dict:
    """Build the NetworkX graph and run each algorithm once; answers go to `out`.npz, times returned."""
    import networkx as nx

    import g2pl

    g = g2pl.load_graph(spec, seed=seed, directed=directed)

    def build():
        G = nx.DiGraph() if g.directed else nx.Graph()
        G.add_nodes_from(g.ids.tolist())
        G.add_weighted_edges_from(zip(g.ids[g.src].tolist(), g.ids[g.dst].tolist(), g.weight.tolist()))
        return G

    prepare_s, G = harness.timed(build)
    times = {"prepare_s": prepare_s}
    rid = int(g.ids[root])
    pos = {int(x): i for i, x in enumerate(g.ids.tolist())}
    calls = {"bfs": lambda: nx.single_source_shortest_path_length(G, rid),
             "pagerank": lambda: nx.pagerank(G, alpha=0.85),
             "cc": lambda: list(nx.weakly_connected_components(G) if g.directed else nx.connected_components(G)),
             "sssp": lambda: nx.single_source_dijkstra_path_length(G, rid, weight="weight"),
             "matching": lambda: nx.maximal_matching(G)}
    answers = {}
    for algo in algos:
        times[algo], raw = harness.timed(calls[algo])
        if algo in ("bfs", "sssp"):
            a = np.full(g.n, -1 if algo == "bfs" else np.inf, dtype=np.int64 if algo == "bfs" else np.float64)
            a[[pos[k] for k in raw]] = list(raw.values())
        elif algo == "pagerank":
            a = np.array([raw[int(x)] for x in g.ids.tolist()])
        elif algo == "cc":
            a = np.empty(g.n, dtype=np.int64)
            for c in raw:
                ix = [pos[k] for k in c]
                a[ix] = min(c)
        else:
            pairs = np.array([(pos[u], pos[v]) for u, v in raw], dtype=np.int64).reshape(-1, 2)
            a = edge_mask(g, pairs[:, 0], pairs[:, 1])
        answers[algo] = a
        print(json.dumps({"algo": algo, "time_s": times[algo]}), flush=True)
    np.savez(out, **answers)
    return times


# --------------------------------------------------------------------------- --check


def check(graphs: list[str], seed: int) -> int:
    import g2pl

    libs, missing = available()
    for name, why in missing.items():
        print(f"SKIP {name}: {why}")
    progs = {a: g2pl.compile_file(H.ROOT / p) for a, p in H.PROGRAMS.items()}
    bad = 0
    for spec in graphs:
        g = g2pl.load_graph(spec, seed=seed)
        root = H.pick_root(g, seed)
        refs = {a: H.compiled_answer(p.run(g, H.program_args(a, g, root)), g) for a, p in progs.items()}
        for name, cls in libs.items():
            lib = cls(g)
            for t in cls.threads:
                lib.set_threads(t)
                for algo in cls.algos:
                    ans = lib.answer(algo, call(lib, algo, root))
                    ok, msg = compare_answer(algo, ans, refs[algo], g, exact=algo not in cls.inexact)
                    bad += not ok
                    print(f"{'OK  ' if ok else 'FAIL'} {spec} {name}/{t}t {algo:9s} {msg}", flush=True)
        with tempfile.TemporaryDirectory() as d:
            out = Path(d) / "nx.npz"
            networkx_run(spec, seed, root, list(ALGOS), out)
            z = np.load(out)
            for algo in ALGOS:
                ok, msg = compare_answer(algo, z[algo], refs[algo], g, exact=algo not in ("pagerank", "matching"))
                bad += not ok
                print(f"{'OK  ' if ok else 'FAIL'} {spec} networkx {algo:9s} {msg}", flush=True)
    return 1 if bad else 0


def main() -> int:
    ap = harness.parser(__doc__, out=False, seed=1)
    sub = ap.add_subparsers(dest="cmd")
    nxp = sub.add_parser("networkx", help="(used by compare.py) time NetworkX once on one graph")
    nxp.add_argument("--graph", required=True)
    nxp.add_argument("--seed", type=int, default=1)
    nxp.add_argument("--root", type=int, required=True, help="internal vertex index")
    nxp.add_argument("--algos", default=",".join(ALGOS))
    nxp.add_argument("--out", required=True, help="answers (.npz)")
    ap.add_argument("--check", action="store_true", help="compare every library with the compiled programs")
    ap.add_argument("--graphs", default="kron:12,ws:20000:10:0.3")
    a = ap.parse_args()
    if a.cmd == "networkx":
        networkx_run(a.graph, a.seed, a.root, a.algos.split(","), Path(a.out))
        return 0
    if a.check:
        return check(a.graphs.split(","), a.seed)
    ap.print_help()
    return 0


if __name__ == "__main__":
    sys.exit(main())
