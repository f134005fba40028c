#!/usr/bin/env python3
"""programs/mst.g2pl (Boruvka with keyed argmin) against SciPy's minimum_spanning_tree.

A Watts-Strogatz graph ws:N:K:P (`--graph ws`, the default) or a Kronecker graph kron:S (`--graph
kron:S`) with uniform random weights in (0.001, 1.001] (the generators give weight 1; the weights here
make the forest unique).  Both compute the same minimum spanning
forest (total weight checked equal); the timings are interleaved (g2pl, scipy, scipy, g2pl, ...) and
the medians reported: g2pl's `time_s` (the run, graph already loaded) and SciPy's call on a CSR
matrix built beforehand.  Supersteps are compared with the number of halvings of the component count
(log2(n / components)), the O(log n) bound being at most 40 supersteps per halving.

    python bench/mst.py                       # ws:200000:10:0.1, 5 repetitions
    python bench/mst.py --graph kron:18       # kron:18 with random weights
    python bench/mst.py --quick               # ws:20000:10:0.1, 3 repetitions

The compiled kernels (numba, g2pl/runtime/cpu_kernels.py) run as G2PL_NUMBA says (the report records
it): unset, only for work large enough; 1, always; 0, never.

Output: OUT/mst_vs_scipy.{md,json} (mst_vs_scipy_quick.* with --quick; NAME from --name).
"""

from __future__ import annotations

import math
import sys

import harness
import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components, minimum_spanning_tree

import g2pl
from g2pl.graph import build_graph
from g2pl.graph.generators import watts_strogatz_edges


def main(argv: list[str] | None = None) -> int:
    ap = harness.parser(__doc__, quick="ws:20000:10:0.1, 3 repetitions", repeat=5, seed=1)
    ap.add_argument("--n", type=int, default=200_000)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--p", type=float, default=0.1)
    ap.add_argument("--graph", default="ws", help="ws (ws:N:K:P from --n, --k, --p) or kron:S")
    ap.add_argument("--name", default="mst_vs_scipy", help="report name (OUT/NAME.md)")
    args = ap.parse_args(argv)
    if args.quick:
        args.n, args.repeat = 20_000, 3
    rng = np.random.default_rng(args.seed)
    if args.graph == "ws":
        u, v = watts_strogatz_edges(args.n, args.k, args.p, args.seed)
        ids, name = np.arange(args.n), f"ws:{args.n}:{args.k}:{args.p}"
    else:
        g0 = g2pl.load_graph(args.graph, seed=args.seed)
        u, v, ids, name = g0.ids[g0.src], g0.ids[g0.dst], g0.ids, args.graph
    w = rng.random(len(u)) + 0.001
    g = build_graph(u, v, w, directed=False, name=f"{name}+weights", extra_ids=ids)
    A = sp.coo_matrix((g.weight, (g.src, g.dst)), shape=(g.n, g.n)).tocsr()
    comps = connected_components(A, directed=False)[0]
    prog = g2pl.compile_file(harness.ROOT / "programs" / "mst.g2pl")
    last = {}

    def ours() -> float:
        last["res"] = prog.run(g, {})
        return last["res"].stats["time_s"]

    def theirs() -> float:
        t, last["ref"] = harness.timed(minimum_spanning_tree, A)
        return t

    runs = harness.interleave({"g2pl": ours, "scipy": theirs}, args.repeat)
    res, ref = last["res"], last["ref"]
    weight, want = float(res["weight"]), float(ref.sum())
    halvings = math.log2(g.n / comps)
    med = harness.medians(runs)
    m = harness.machine()
    rec = {
        "graph": g.name, "n": int(g.n), "m": int(g.m), "components": int(comps), "reps": args.repeat,
        "g2pl_time_s_median": med["g2pl"], "scipy_time_s_median": med["scipy"],
        "ratio": med["g2pl"] / med["scipy"], "g2pl_times": runs["g2pl"], "scipy_times": runs["scipy"],
        "supersteps": res.stats["supersteps"], "halvings": halvings,
        "supersteps_per_halving": res.stats["supersteps"] / max(halvings, 1.0),
        "weight": weight, "scipy_weight": want, "same_weight": math.isclose(weight, want, rel_tol=1e-12),
        "tree_edges": len(res.array("Tree", g).nonzero()[0]),
        "machine": m, "commit": harness.git_commit(), "command": harness.command(__file__, argv),
        "kernels": harness.kernels_mode(),
    }
    md = (f"# mst.g2pl against scipy.sparse.csgraph.minimum_spanning_tree\n\n"
          f"{rec['graph']}: {rec['n']} vertices, {rec['m']} edges, {rec['components']} component(s); "
          f"machine {harness.describe(m)}, load average {m['loadavg']:.1f}; commit {rec['commit']}; "
          f"{args.repeat} interleaved repetitions, medians; compiled kernels: {rec['kernels']}.\n\n"
          f"| | time s (median) | supersteps | supersteps per halving | total weight |\n|---|---:|---:|---:|---:|\n"
          f"| mst.g2pl (numpy, 1 rank) | {rec['g2pl_time_s_median']:.3f} | {rec['supersteps']} | "
          f"{rec['supersteps_per_halving']:.1f} | {weight:.6f} |\n"
          f"| scipy | {rec['scipy_time_s_median']:.3f} | | | {want:.6f} |\n\n"
          f"Ratio g2pl / scipy: {rec['ratio']:.1f}x; same weight: {rec['same_weight']}.\n\n"
          f"Command: `{rec['command']}`\n")
    harness.write_report(args.out, harness.stem(args.name, args.quick), md, rec)
    print(md)
    return 0 if rec["same_weight"] else 1


if __name__ == "__main__":
    sys.exit(main())
