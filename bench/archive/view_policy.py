"""The two runtime changes made for min-label CC, off (old) and on (new), side by side in one process.

Two runtime changes, both switchable at run time: restricted views made on a second sighting, and
gathers with `np.take(mode="wrap")` instead of "clip" (`kernels.TAKE_MODE`, bench/archive/take_mode.py).

`Adjacency.restricted` used to make a view of the senders' entries as soon as they were at most half
of all entries; now a sender set gets a view from all entries only when it is within one seen before
(`Adjacency._first_sighting`), the first time one masked pass over all entries being cheaper than
making the view.  The old rule is the new one with `_first_sighting` always false, so the sides run in
the same process on the same loaded graph: the programs interleaved, the order of the sides rotated
per repeat, medians of wall and CPU time (`time.process_time()`) of `prog.run`; every run's returned
arrays must be equal to the first's.

    python bench/archive/view_policy.py [--graph kron:20] [--repeat 7] [--algos cc,wcc,sssp,bfs]

Output: bench/results/view_policy.{md,json}.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: the harness

import harness  # noqa: E402
from handwritten import pick_root  # noqa: E402

import g2pl  # noqa: E402
from g2pl.runtime import kernels  # noqa: E402
from g2pl.runtime.adjacency import Adjacency  # noqa: E402

ROOT = harness.ROOT

NEW_RULE = Adjacency._first_sighting


def set_rule(side: str) -> None:
    """old: eager views, "clip"; views: the new view rule, "clip"; new: both changes."""
    Adjacency._first_sighting = NEW_RULE if side != "old" else (lambda self, msk, reused: False)
    kernels.TAKE_MODE = "wrap" if side == "new" else "clip"


def args_for(algo: str, g) -> dict:
    if algo in ("bfs", "sssp", "bfs_parent", "widest"):
        return {"root": int(g.ids[pick_root(g)])}
    if algo == "pagerank":
        return {"iters": 20, "damping": 0.85}
    if algo == "kcore":
        return {"k": 8}
    return {}


def main() -> None:
    ap = harness.parser(__doc__, repeat=7)
    ap.add_argument("--graph", default="kron:20")
    ap.add_argument("--algos", default="cc,wcc,sssp,bfs")
    a = ap.parse_args()
    g = g2pl.load_graph(a.graph)
    algos = a.algos.split(",")
    progs = {x: g2pl.compile_file(ROOT / "programs" / f"{x}.g2pl") for x in algos}
    sides = ("old", "views", "new")
    runs: dict = {(x, s): [] for x in algos for s in sides}
    ref: dict = {}
    for rep in range(a.repeat + 1):  # the first repeat warms the caches and is not counted
        for x in algos:
            for side in harness.rotated(sides, rep):
                set_rule(side)
                c0, t0 = time.process_time(), time.perf_counter()
                res = progs[x].run(g, args_for(x, g))
                wall, cpu = time.perf_counter() - t0, time.process_time() - c0
                got = {r.name: res.array(r.name) for r in res.returned}
                if x not in ref:
                    ref[x] = got
                assert all(np.array_equal(got[k], ref[x][k]) for k in got), (x, side)
                if rep:
                    runs[(x, side)].append({"wall": wall, "cpu": cpu})
    set_rule("new")
    med = {k: {m: harness.median(v, m) for m in ("wall", "cpu")} for k, v in runs.items()}
    mach, commit = harness.machine(), harness.git_commit()
    lines = [f"# CC changes off (old), views on a second sighting (views), and also take \"wrap\" (new): {a.graph}", "",
             f"Medians of {a.repeat} interleaved repeats in one process, same answers checked. "
             f"Machine: {mach.get('cpu', '?')}, {mach.get('nproc', '?')} cores (shared with other work); "
             f"commit {commit}.", "",
             "| program | old wall | new wall | new/old | old CPU | views CPU | new CPU | views/old | new/old |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for x in algos:
        o, v, n = med[(x, "old")], med[(x, "views")], med[(x, "new")]
        lines.append(f"| {x} | {o['wall']:.4f} | {n['wall']:.4f} | {n['wall'] / o['wall']:.2f} | {o['cpu']:.4f} | "
                     f"{v['cpu']:.4f} | {n['cpu']:.4f} | {v['cpu'] / o['cpu']:.2f} | {n['cpu'] / o['cpu']:.2f} |")
    harness.write_report(a.out, "view_policy", "\n".join(lines) + "\n", {
        "graph": a.graph, "machine": mach, "commit": commit, "median": {f"{x}/{s}": v for (x, s), v in med.items()},
        "runs": {f"{x}/{s}": v for (x, s), v in runs.items()}})
    print("\n".join(lines))


if __name__ == "__main__":
    main()
