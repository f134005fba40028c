#!/usr/bin/env python3
"""programs/mst.g2pl (Boruvka with keyed argmin) against SciPy's minimum_spanning_tree.

A Watts-Strogatz graph ws:N:K:P with uniform random weights in (0.001, 1.001] (the generators
give weight 1; the weights here make the forest unique).  Both compute the same minimum spanning
forest (total weight checked equal); the timings are interleaved (g2pl, scipy, g2pl, ...) and the
medians reported: g2pl's `time_s` (the run, graph already loaded) and SciPy's call on a CSR matrix
built beforehand.  Supersteps are compared with the number of halvings of the component count
(log2(n / components)), the O(log n) bound being at most 40 supersteps per halving.

    python bench/mst.py                       # ws:200000:10:0.1, 5 repetitions
    python bench/mst.py --n 20000 --reps 3    # quicker
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components, minimum_spanning_tree

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import g2pl  # noqa: E402
from g2pl.graph import build_graph  # noqa: E402
from g2pl.graph.generators import watts_strogatz_edges  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=200_000)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--p", type=float, default=0.1)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "mst_vs_scipy")
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    u, v = watts_strogatz_edges(args.n, args.k, args.p, rng)
    w = rng.random(len(u)) + 0.001
    g = build_graph(u, v, w, directed=False, name=f"ws:{args.n}:{args.k}:{args.p}+weights",
                    extra_ids=np.arange(args.n))
    A = sp.coo_matrix((g.weight, (g.src, g.dst)), shape=(g.n, g.n)).tocsr()
    comps = connected_components(A, directed=False)[0]
    prog = g2pl.compile_file(REPO / "programs" / "mst.g2pl")
    ours, theirs, res, ref = [], [], None, None
    for _ in range(args.reps):
        res = prog.run(g, {})
        ours.append(res.stats["time_s"])
        t0 = time.perf_counter()
        ref = minimum_spanning_tree(A)
        theirs.append(time.perf_counter() - t0)
    assert res is not None and ref is not None
    weight, want = float(res["weight"]), float(ref.sum())
    halvings = math.log2(g.n / comps)
    rec = {
        "graph": g.name, "n": int(g.n), "m": int(g.m), "components": int(comps), "reps": args.reps,
        "g2pl_time_s_median": statistics.median(ours), "scipy_time_s_median": statistics.median(theirs),
        "ratio": statistics.median(ours) / statistics.median(theirs), "g2pl_times": ours, "scipy_times": theirs,
        "supersteps": res.stats["supersteps"], "halvings": halvings,
        "supersteps_per_halving": res.stats["supersteps"] / max(halvings, 1.0),
        "weight": weight, "scipy_weight": want, "same_weight": math.isclose(weight, want, rel_tol=1e-12),
        "tree_edges": len(res.array("Tree", g).nonzero()[0]),
        "machine": f"{platform.node()} ({os.cpu_count()} CPUs)",
        "commit": subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                                 text=True).stdout.strip(),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    Path(f"{args.out}.json").write_text(json.dumps(rec, indent=1))
    md = (f"# mst.g2pl against scipy.sparse.csgraph.minimum_spanning_tree\n\n"
          f"{rec['graph']}: {rec['n']} vertices, {rec['m']} edges, {rec['components']} component(s); "
          f"machine {rec['machine']}, commit {rec['commit']}; {args.reps} interleaved repetitions, medians.\n\n"
          f"| | time s (median) | supersteps | supersteps per halving | total weight |\n|---|---:|---:|---:|---:|\n"
          f"| mst.g2pl (numpy, 1 rank) | {rec['g2pl_time_s_median']:.3f} | {rec['supersteps']} | "
          f"{rec['supersteps_per_halving']:.1f} | {weight:.6f} |\n"
          f"| scipy | {rec['scipy_time_s_median']:.3f} | | | {want:.6f} |\n\n"
          f"Ratio g2pl / scipy: {rec['ratio']:.1f}x; same weight: {rec['same_weight']}.\n")
    Path(f"{args.out}.md").write_text(md)
    print(md)
    return 0 if rec["same_weight"] else 1


if __name__ == "__main__":
    sys.exit(main())
