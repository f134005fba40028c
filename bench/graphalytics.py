"""LDBC Graphalytics' six kernels (programs/graphalytics/) by Graphalytics' benchmark procedure.

How: for each graph — Graph500 Kronecker `kron:S` (undirected, as Graphalytics' graph500-S) and a
Datagen-like graph (undirected, power-law degrees with community locality and sparse vertex IDs,
the shape of Graphalytics' datagen-* graphs) — the graph is written in Graphalytics' format
(NAME.v, NAME.e with integer weights 1..255 as the third column) and every side runs BFS, PR (10
iterations, damping 0.85), WCC, CDLP (10 iterations), LCC and SSSP, as Graphalytics' graph
properties set them, from a vertex of the largest component. Per kernel and side:

* load time: reading NAME.v / NAME.e and building the side's graph (g2pl: `g2pl.load_graph` of
  NAME.e, or the arrays through `Graph.from_edges` where that loader does not read NAME.e; the
  first run's partition and adjacency set-up counts here too; python-graphblas: the same parse,
  the CSR arrays of `Graph.from_edges` and its matrices imported from them);
* makespan: the whole job in one process — load, compile (g2pl), processing, and writing the
  output as Graphalytics does (`vertex value` per line);
* processing time T_proc: the kernel alone (g2pl: `res.stats["time_s"]`, the supersteps), the
  median of `--repeat` interleaved runs after one warm-up run of each side;
* EVPS = (|V| + |E|) / T_proc, Graphalytics' edges-and-vertices per second.

Sides: g2pl (one rank, one thread: G2PL_THREADS=1), python-graphblas (SuiteSparse:GraphBLAS, one thread; the kernels written
as LDBC's GraphBLAS implementation of Graphalytics does: BFS, PR, WCC (FastSV) and SSSP from
bench/libraries.py, CDLP by sorting each row's neighbour labels, LCC as masked `plus_pair` S @ A),
NetworkX where it has the kernel and the graph has at most `--networkx-max-edges` edges, and the
GAP Benchmark Suite on one thread (`--gapbs DIR`: `bfs`, `pr_spmv`/`pr`, `cc`, `sssp`, `tc`; tc
counts triangles, the numerator of undirected LCC, so it is listed in the LCC row for reference).
g2pl's answers are checked against python-graphblas's with Graphalytics' validation rules (exact:
BFS, CDLP; equivalence: WCC; epsilon 1e-4: PR, LCC, SSSP).

    python bench/graphalytics.py [--graphs kron:16,...,kron:22,datagen:1000000:20] [--kernels bfs,...] [--gapbs DIR]
    python bench/graphalytics.py --quick       # kron:10 and datagen:2000:10, 1 timed run each
    python bench/graphalytics.py --graphs kron:20 --kernels cdlp,sssp   # some kernels only

Output: OUT/graphalytics.{md,json} (graphalytics_quick.* with --quick).
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_WAIT_POLICY", "passive")

import harness  # noqa: E402
import numpy as np  # noqa: E402

import g2pl  # noqa: E402
from g2pl.graph.graph import Graph, from_edges  # noqa: E402

KERNELS = ("bfs", "pr", "wcc", "cdlp", "lcc", "sssp")
ITERATIONS = 10  # PR and CDLP, as in Graphalytics' graph500-* and datagen-* properties
DAMPING = 0.85
RULE = {"bfs": "exact", "cdlp": "exact", "wcc": "equivalence", "pr": "epsilon", "lcc": "epsilon",
        "sssp": "epsilon"}
UNREACHED = 2**63 - 1
GAPBS = {"bfs": ["bfs"], "pr": ["pr_spmv", "pr"], "wcc": ["cc"], "cdlp": [], "lcc": ["tc"], "sssp": ["sssp"]}


# --------------------------------------------------------------------------- graphs


def datagen_like(n: int, degree: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(ids, src, dst) of an undirected graph shaped like LDBC Datagen's: power-law expected degrees
    (Chung-Lu, exponent 2.5, mean about `degree`), 80% of each vertex's edges inside its community
    (a block of consecutive vertices, sizes ~ 100), and sparse, shuffled vertex IDs."""
    rng = np.random.default_rng(seed)
    weight = (1.0 - rng.random(n)) ** (-1.0 / 1.5)  # Pareto, tail exponent 2.5 for the degrees
    weight *= degree / weight.mean()
    m = int(n * degree / 2)
    p = weight / weight.sum()
    src = rng.choice(n, size=m, p=p)
    far = rng.choice(n, size=m, p=p)
    block = 100
    near = np.clip((src // block) * block + rng.integers(0, block, size=m), 0, n - 1)
    dst = np.where(rng.random(m) < 0.8, near, far)
    ids = np.sort(rng.choice(np.int64(n) * 20, size=n, replace=False))
    perm = rng.permutation(n)
    return ids, ids[perm[src]], ids[perm[dst]]


def make_graph(spec: str, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(ids, src, dst, weight) of `spec`: a g2pl generator or `datagen:N:DEGREE`; each edge once,
    no self-loops, integer weights 1..255 (GAPBS's range, exact in every side's arithmetic)."""
    if spec.startswith("datagen:"):
        n, degree = (int(x) for x in spec.split(":")[1:3])
        ids, s, d = datagen_like(n, degree, seed)
        g = from_edges(s, d, directed=False, ids=ids)  # self-loops dropped, duplicates merged
    else:
        g = g2pl.load_graph(spec, seed=seed)
    w = np.random.default_rng(seed + 1).integers(1, 256, size=g.m).astype(np.float64)
    return g.ids, g.ids[g.src], g.ids[g.dst], w


def write_graphalytics(base: Path, ids: np.ndarray, src: np.ndarray, dst: np.ndarray, w: np.ndarray) -> None:
    """NAME.v, NAME.e and NAME.properties in Graphalytics' format (undirected, one line per edge)."""
    np.savetxt(base.with_suffix(".v"), ids, fmt="%d")
    with open(base.with_suffix(".e"), "w") as f:
        np.savetxt(f, np.column_stack([src, dst, w.astype(np.int64)]), fmt="%d")
    name = base.name
    base.with_suffix(".properties").write_text(
        f"graph.{name}.vertex-file = {name}.v\ngraph.{name}.edge-file = {name}.e\n"
        f"graph.{name}.meta.vertices = {ids.size}\ngraph.{name}.meta.edges = {src.size}\n"
        f"graph.{name}.directed = false\ngraph.{name}.edge-properties.names = weight\n"
        f"graph.{name}.edge-properties.types = real\n")


def read_graphalytics(base: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(ids, src, dst, weight) read back from NAME.v / NAME.e."""
    ids = np.loadtxt(base.with_suffix(".v"), dtype=np.int64, ndmin=1)
    e = np.loadtxt(base.with_suffix(".e"), dtype=np.float64, ndmin=2)
    return ids, e[:, 0].astype(np.int64), e[:, 1].astype(np.int64), e[:, 2]


def g2pl_load(base: Path) -> Graph:
    """g2pl's own loader for NAME.e (with NAME.v beside it) where it reads it, else the arrays."""
    try:
        g = g2pl.load_graph(str(base.with_suffix(".e")))
        if g.n == np.loadtxt(base.with_suffix(".v"), dtype=np.int64, ndmin=1).size:
            return g
    except g2pl.G2PLError:
        pass
    ids, s, d, w = read_graphalytics(base)
    return from_edges(s, d, w, directed=False, ids=ids, name=base.name)


def write_output(path: Path, ids: np.ndarray, values: np.ndarray) -> None:
    """A Graphalytics output file: `vertex value` per line."""
    fmt = "%d %d" if values.dtype.kind in "iub" else "%d %.15e"
    np.savetxt(path, np.column_stack([ids, values]).astype(object), fmt=fmt)


# --------------------------------------------------------------------------- python-graphblas


def graphblas_side(g: Graph) -> Any:
    """bench/libraries.py's GraphBLASLib (BFS, PR, FastSV, SSSP) with CDLP and LCC added."""
    import libraries

    class Graphalytics(libraries.GraphBLASLib):
        def cdlp(self, iterations: int) -> np.ndarray:
            """Each round: the labels of every vertex's neighbours as a matrix row (out- and, on a
            directed graph, in-neighbours: a reciprocal neighbour counts twice), sorted; the most
            frequent label per row, ties to the smallest."""
            gb, n = self.gb, self.g.n
            label = np.asarray(self.g.ids, dtype=np.int64)
            mats = [self.B] + ([self.BT] if self.g.directed else [])
            for _ in range(iterations):
                D = gb.Matrix.from_coo(np.arange(n), np.arange(n), label, nrows=n, ncols=n)
                rows, vals = [], []
                for M in mats:
                    r, _c, v = gb.semiring.any_second[np.int64](M @ D).new().to_coo()
                    rows.append(r)
                    vals.append(v)
                r, v = np.concatenate(rows), np.concatenate(vals)
                order = np.lexsort((v, r))
                r, v = r[order], v[order]
                if r.size == 0:
                    break
                start = np.flatnonzero(np.r_[True, (r[1:] != r[:-1]) | (v[1:] != v[:-1])])
                count = np.diff(np.r_[start, r.size])
                gr, gv = r[start], v[start]
                best = np.lexsort((gv, -count, gr))  # per row: most frequent first, then smallest label
                first = best[np.r_[True, gr[best][1:] != gr[best][:-1]]]
                label = label.copy()
                label[gr[first]] = gv[first]
            return label

        def lcc(self) -> np.ndarray:
            """N(v) = in- and out-neighbours (S = A or A^T); the directed edges among them, counted
            as row sums of S @ A masked by S (plus_pair), over |N(v)|(|N(v)| - 1)."""
            gb = self.gb
            C = gb.semiring.plus_pair[np.int64](self.S @ self.B).new(mask=self.S.S)
            num = C.reduce_rowwise(gb.monoid.plus).new().to_dense(fill_value=0).astype(np.float64)
            deg = self.S.reduce_rowwise(gb.agg.count).new().to_dense(fill_value=0).astype(np.float64)
            with np.errstate(divide="ignore", invalid="ignore"):
                return np.where(deg >= 2, num / (deg * (deg - 1)), 0.0)

    return Graphalytics(g)


def graphblas_run(lib: Any, kernel: str, root: int) -> Callable[[], Any]:
    return {"bfs": lambda: lib.bfs(root), "pr": lambda: lib.pagerank(ITERATIONS, DAMPING), "wcc": lib.cc,
            "cdlp": lambda: lib.cdlp(ITERATIONS), "lcc": lib.lcc, "sssp": lambda: lib.sssp(root)}[kernel]


def graphblas_answer(lib: Any, kernel: str, raw: Any) -> np.ndarray:
    """The answer in Graphalytics' terms, aligned with g2pl's vertex order (ascending IDs)."""
    if kernel == "bfs":
        return raw.to_dense(fill_value=UNREACHED).astype(np.int64)
    if kernel == "pr":
        return raw.to_dense(fill_value=0.0)
    if kernel == "wcc":
        return raw.to_dense()
    if kernel == "sssp":
        return raw.to_dense(fill_value=np.inf)
    return np.asarray(raw)


# --------------------------------------------------------------------------- NetworkX and GAPBS


def networkx_run(G: Any, kernel: str, root: int) -> Callable[[], Any] | None:
    """NetworkX's own function for the kernel, where it computes the same thing (no fixed-iteration
    PageRank, no synchronous CDLP); LCC is `clustering` (the Graphalytics value on undirected graphs)."""
    import networkx as nx

    return {"bfs": lambda: nx.single_source_shortest_path_length(G, root),
            "wcc": lambda: list(nx.connected_components(G)),
            "lcc": lambda: nx.clustering(G),
            "sssp": lambda: nx.single_source_dijkstra_path_length(G, root)}.get(kernel)


def write_gapbs(folder: Path, g: Graph) -> tuple[Path, Path]:
    """The graph for GAPBS in internal vertex numbers: a `.sg` (bench/api_kernels.py's writer) and,
    for sssp, a `.wel` weighted edge list (read with `-s`, symmetrized)."""
    from api_kernels import write_sg

    sg, wel = folder / "g.sg", folder / "g.wel"
    write_sg(g, sg)
    np.savetxt(wel, np.column_stack([g.src, g.dst, g.weight.astype(np.int64)]), fmt="%d")
    return sg, wel


def gapbs_run(binary: Path, kernel: str, sg: Path, wel: Path, root: int, timeout: float) -> float:
    """One GAPBS trial on one thread: its `Trial Time`."""
    cmd = [str(binary), "-f", str(wel), "-s"] if kernel == "sssp" else [str(binary), "-f", str(sg)]
    if kernel in ("bfs", "sssp"):
        cmd += ["-r", str(root)]
    if kernel == "pr":
        cmd += ["-i", str(ITERATIONS), "-t", "1e-30"]
    t, _ = harness.gapbs([*cmd, "-n", "1"], timeout)
    return t


# --------------------------------------------------------------------------- validation


def violations(rule: str, expected: np.ndarray, actual: np.ndarray) -> int:
    """How many vertices fail Graphalytics' `rule` (arrays aligned by vertex)."""
    if rule == "exact":
        return int(np.count_nonzero(expected != actual))
    if rule == "epsilon":
        e, a = expected.astype(np.float64), actual.astype(np.float64)
        inf = np.isinf(e) | np.isinf(a)
        with np.errstate(invalid="ignore"):
            ok = np.where(inf, (e == np.inf) & (a == np.inf), np.abs(e - a) <= 1e-4 * e)
        return int(np.count_nonzero(~ok))
    # equivalence: the pairs (expected class, actual class) must be a bijection
    pairs = np.unique(np.column_stack([expected, actual]), axis=0)
    bad_e = np.unique(pairs[:, 0], return_counts=True)
    bad_a = np.unique(pairs[:, 1], return_counts=True)
    bad = np.isin(expected, bad_e[0][bad_e[1] > 1]) | np.isin(actual, bad_a[0][bad_a[1] > 1])
    return int(np.count_nonzero(bad))


# --------------------------------------------------------------------------- one graph


def bench_graph(spec: str, a: Any, folder: Path) -> list[dict[str, Any]]:
    ids, src, dst, w = make_graph(spec, a.seed)
    base = folder / spec.replace(":", "-")
    write_graphalytics(base, ids, src, dst, w)
    size = ids.size + src.size
    harness.log(f"{spec}: |V| = {ids.size:,}, |E| = {src.size:,}")

    progs = {k: g2pl.compile_file(harness.ROOT / "programs" / "graphalytics" / f"{k}.g2pl") for k in KERNELS}
    load_s, g = harness.timed(g2pl_load, base)
    deg = np.diff(g.out_indptr)
    root = int(np.argmax(deg))  # the vertex of highest degree: one of the largest component
    args = {"bfs": {"root": int(g.ids[root])}, "sssp": {"root": int(g.ids[root])},
            "pr": {"iterations": ITERATIONS, "damping": DAMPING}, "cdlp": {"iterations": ITERATIONS},
            "wcc": {}, "lcc": {}}
    setup_s, _ = harness.timed(progs["wcc"].run, g, {})  # the first run builds the partition and adjacency
    graphblas_side(from_edges([1], [2])).lcc()  # start-up (imports, library set-up) is no part of loading

    def graphblas_load() -> Any:
        vids, s, d, wt = read_graphalytics(base)
        return graphblas_side(from_edges(s, d, wt, directed=False, ids=vids))

    gb_load_s, lib = harness.timed(graphblas_load)
    lib.set_threads(1)
    G = None
    if src.size <= a.networkx_max_edges:
        import networkx as nx

        G = nx.Graph()
        G.add_nodes_from(range(g.n))
        G.add_weighted_edges_from(zip(g.src.tolist(), g.dst.tolist(), g.weight.tolist()))
    sg = wel = None
    if a.gapbs and any((a.gapbs / b).exists() for bs in GAPBS.values() for b in bs):
        sg, wel = write_gapbs(folder, g)

    rows = []
    last: dict[str, Any] = {}  # each side's latest answer, checked after the runs
    for kernel in a.kernels.split(","):
        last.clear()

        def ours(kernel: str = kernel) -> float:
            last["g2pl"] = progs[kernel].run(g, args[kernel])
            return float(last["g2pl"].stats["time_s"])

        def theirs(kernel: str = kernel) -> float:
            t, last["graphblas"] = harness.timed(graphblas_run(lib, kernel, root))
            return t

        jobs: dict[str, Callable[[], float]] = {"g2pl": ours, "graphblas": theirs}
        nx_fn = networkx_run(G, kernel, root) if G is not None else None
        if nx_fn is not None:
            jobs["networkx"] = lambda fn=nx_fn: harness.timed(fn)[0]
        gap_bin = next((a.gapbs / b for b in GAPBS[kernel] if a.gapbs and (a.gapbs / b).exists()), None)
        if gap_bin is not None and sg is not None:
            jobs["gapbs"] = lambda b=gap_bin, k=kernel: gapbs_run(b, k, sg, wel, root, a.timeout)
        runs = harness.interleave(jobs, a.repeat, warmup=1)  # a first run of each side is not kept
        med = harness.medians(runs)

        res = last["g2pl"]
        ours_v = np.asarray(res.array(res.kinds()[0][0]))
        theirs_v = graphblas_answer(lib, kernel, last["graphblas"])
        bad = violations(RULE[kernel], theirs_v, ours_v)
        out = folder / f"{base.name}-{kernel.upper()}"
        compile_s, _ = harness.timed(g2pl.compile_file, harness.ROOT / "programs" / "graphalytics" / f"{kernel}.g2pl")
        out_s, _ = harness.timed(write_output, out, g.ids, ours_v)
        gb_out_s, _ = harness.timed(write_output, out, g.ids, theirs_v)
        rows.append({
            "graph": spec, "kernel": kernel, "vertices": int(ids.size), "edges": int(src.size),
            "supersteps": int(res.stats["supersteps"]), "rule": RULE[kernel], "violations": bad,
            "g2pl": {"load_s": load_s + setup_s, "compile_s": compile_s, "proc_s": med["g2pl"],
                     "makespan_s": load_s + setup_s + compile_s + med["g2pl"] + out_s,
                     "evps": size / med["g2pl"] if med["g2pl"] > 0 else math.inf},
            "graphblas": {"load_s": gb_load_s, "proc_s": med["graphblas"],
                          "makespan_s": gb_load_s + med["graphblas"] + gb_out_s,
                          "evps": size / med["graphblas"] if med["graphblas"] > 0 else math.inf},
            "networkx": {"proc_s": med.get("networkx")}, "gapbs": {"proc_s": med.get("gapbs"),
                                                                   "binary": gap_bin.name if gap_bin else None},
            "runs": runs})
        harness.log(f"  {kernel}: g2pl {med['g2pl']:.4f} s, graphblas {med['graphblas']:.4f} s, "
                    f"{bad} violations")
    return rows


# --------------------------------------------------------------------------- report


def _s(x: float | None) -> str:
    return "-" if x is None else f"{x:.4f}"


def _evps(x: float | None) -> str:
    return "-" if x is None else f"{x / 1e6:.2f}M"


def render(res: dict[str, Any]) -> str:
    lines = [
        "# LDBC Graphalytics kernels: g2pl, python-graphblas, NetworkX, GAPBS", "",
        f"Machine: {harness.describe(res['machine'])}; commit {res['commit']}; {res['date']}.",
        f"Command: `{res['command']}`. Medians of {res['repeat']} interleaved run(s) after one "
        "warm-up run of each; one rank / one thread.", "",
        "Load: reading NAME.v/NAME.e and building the side's graph (g2pl: with its first run's set-up). "
        "Makespan: load + compile (g2pl) + T_proc + writing the output file. "
        "EVPS = (|V| + |E|) / T_proc. Valid: g2pl's answer against python-graphblas's by Graphalytics' rule "
        "(violating vertices).", "",
        "| graph | kernel | V+E | supersteps | g2pl load s | g2pl makespan s | g2pl T_proc s | g2pl EVPS "
        "| graphblas load s | graphblas T_proc s | graphblas EVPS | NetworkX T_proc s | GAPBS T_proc s | valid |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in res["rows"]:
        o, b = r["g2pl"], r["graphblas"]
        gap = r["gapbs"]["proc_s"]
        gap_s = "-" if gap is None else f"{gap:.4f} ({r['gapbs']['binary']})"
        valid = f"{r['rule']}: ok" if r["violations"] == 0 else f"{r['rule']}: {r['violations']} bad"
        lines.append(f"| {r['graph']} | {r['kernel']} | {r['vertices'] + r['edges']:,} | {r['supersteps']} "
                     f"| {_s(o['load_s'])} | {_s(o['makespan_s'])} | {_s(o['proc_s'])} | {_evps(o['evps'])} "
                     f"| {_s(b['load_s'])} | {_s(b['proc_s'])} | {_evps(b['evps'])} "
                     f"| {_s(r['networkx']['proc_s'])} | {gap_s} | {valid} |")
    lines += ["", "GAPBS `tc` counts triangles (the numerator of undirected LCC), not LCC; GAPBS `pr` "
              "does not spread the rank of dangling vertices; both are listed for reference. "
              "NetworkX has no fixed-iteration PageRank and no synchronous CDLP.", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = harness.parser(__doc__, quick="kron:10 and datagen:2000:10, 1 timed run after a warm-up", repeat=3, seed=1)
    harness.add_gapbs(ap)
    ap.add_argument("--graphs", default="kron:16,kron:18,kron:20,kron:22,datagen:1000000:20",
                    help="comma-separated: g2pl generator specs and datagen:N:DEGREE")
    ap.add_argument("--kernels", default=",".join(KERNELS),
                    help=f"comma-separated, of {', '.join(KERNELS)} (each graph's sides stay loaded for all of them)")
    ap.add_argument("--networkx-max-edges", type=int, default=2_000_000,
                    help="run NetworkX only on graphs with at most this many edges")
    ap.add_argument("--timeout", type=float, default=1800.0, help="per GAPBS run, seconds")
    a = ap.parse_args(argv)
    if unknown := set(a.kernels.split(",")) - set(KERNELS):
        ap.error(f"unknown kernel(s) {', '.join(sorted(unknown))}; the kernels are {', '.join(KERNELS)}")
    if a.quick:
        a.graphs, a.repeat = "kron:10,datagen:2000:10", 1
    os.environ["G2PL_THREADS"] = "1"  # one thread, as python-graphblas and GAPBS run here
    m = harness.machine(("numpy", "scipy", "graphblas", "networkx"))
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for spec in a.graphs.split(","):
            try:
                rows += bench_graph(spec.strip(), a, Path(tmp))
            except (subprocess.SubprocessError, MemoryError) as e:
                harness.log(f"{spec}: failed: {e}")
    res = {"machine": m, "commit": harness.git_commit(), "command": harness.command(__file__, argv),
           "date": harness.now(), "repeat": a.repeat, "rows": rows}
    md = render(res)
    harness.write_report(a.out, harness.stem("graphalytics", a.quick), md, res)
    print(md)
    return 0 if rows and all(r["violations"] == 0 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
