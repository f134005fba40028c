#!/usr/bin/env python3
"""The Graph500 BFS benchmark procedure on `kron:SCALE` with programs/bfs_parent.g2pl.

As the Graph500 specification (v3, kernel 2) asks: the Kronecker graph is generated and built
once (construction time), 64 search keys are sampled among the vertices with at least one edge,
every BFS parent tree is validated with the five checks (a tree reaching the root without cycles;
tree edges joining consecutive levels; every graph edge joining levels at most one apart or two
unreached vertices; the tree spanning the root's component; every tree edge a graph edge), and
the traversed edges per second (TEPS: undirected edges of the root's component / the BFS time,
`time_s` of the run's statistics) are summarized by their harmonic mean and quartiles.

Each configuration (backend x rank count) runs the 64 searches in one job: one rank in this
process, several under `mpiexec -n N` (this script with `--worker`), graph loaded once.  The CuPy
backend runs only where CuPy finds a CUDA device, and is skipped with a note otherwise.

    python bench/graph500.py --scale 16 --np 1 2            # -> bench/results/graph500_kron16.{md,json}
    python bench/graph500.py --quick                        # smoke test: kron:10, 8 roots
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import harness
import numpy as np

import g2pl
from g2pl.runtime.launch import find_mpiexec

REPO = harness.ROOT

PROGRAM = REPO / "programs" / "bfs_parent.g2pl"


# ---------------------------------------------------------------- validation (Graph500's five checks)


def levels_from_parents(parent: np.ndarray, root: int) -> np.ndarray | None:
    """BFS level of each vertex from its parent chain (-1: unreached); None if a reached vertex's
    chain does not end at the root (a cycle, or a parent that is unreached)."""
    n = len(parent)
    level = np.full(n, -1, dtype=np.int64)
    level[root] = 0
    todo = np.flatnonzero((parent >= 0) & (np.arange(n) != root))
    while len(todo):
        ok = level[parent[todo]] >= 0
        if not ok.any():
            return None
        done = todo[ok]
        level[done] = level[parent[done]] + 1
        todo = todo[~ok]
    return level


def validate(g, parent: np.ndarray, root: int) -> list[str]:
    """The checks a BFS parent tree (internal indices, -1 unreached) fails on graph `g`."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    bad = []
    n = g.n
    if parent[root] != root:
        bad.append("the root is not its own parent")
    level = levels_from_parents(parent, root)
    if level is None:
        return bad + ["1: a parent chain does not reach the root (a cycle or an unreached parent)"]
    child = np.flatnonzero((parent >= 0) & (np.arange(n) != root))
    if np.any(level[child] != level[parent[child]] + 1):
        bad.append("2: a tree edge does not join consecutive levels")
    a, b = g.src, g.dst
    ra, rb = level[a] >= 0, level[b] >= 0
    if np.any(ra != rb) or np.any(np.abs(level[a] - level[b])[ra & rb] > 1):
        bad.append("3: a graph edge leaves the tree or spans more than one level")
    A = coo_matrix((np.ones(len(a)), (a, b)), shape=(n, n))
    _nc, comp = connected_components(A, directed=False)
    if not np.array_equal(level >= 0, comp == comp[root]):
        bad.append("4: the tree does not span the root's component")
    codes = np.sort(np.minimum(a, b).astype(np.int64) * n + np.maximum(a, b))
    p = parent[child]
    want = np.minimum(p, child).astype(np.int64) * n + np.maximum(p, child)
    pos = np.minimum(np.searchsorted(codes, want), len(codes) - 1)
    if len(want) and not np.array_equal(codes[pos], want):
        bad.append("5: a tree edge is not a graph edge")
    return bad


def traversed_edges(g, parent: np.ndarray) -> int:
    """Undirected edges with both endpoints in the tree (the root's component)."""
    reached = parent >= 0
    return int(np.count_nonzero(reached[g.src] & reached[g.dst]))


# ---------------------------------------------------------------- one configuration (one job)


def worker(cfg: dict) -> dict | None:
    """Construction, key sampling and the searches of one configuration; rank 0 returns the record."""
    comm = None
    if cfg["np"] > 1:
        from g2pl.runtime.mpi import MPIComm

        comm = MPIComm()
    rank = 0 if comm is None else comm.rank
    prog = g2pl.compile_file(PROGRAM)
    g, roots, construction = None, None, None
    if rank == 0:
        t0 = time.perf_counter()
        g = g2pl.load_graph(f"kron:{cfg['scale']}", seed=cfg["seed"])
        construction = time.perf_counter() - t0
        deg = np.bincount(g.src, minlength=g.n) + np.bincount(g.dst, minlength=g.n)
        rng = np.random.default_rng(cfg["seed"])
        keys = rng.choice(np.flatnonzero(deg > 0), size=min(cfg["roots"], int(np.count_nonzero(deg))), replace=False)
        roots = [int(g.ids[k]) for k in keys]
    if comm is not None:
        roots = comm.bcast(roots)
    runs = []
    for root in roots:
        res = prog.run(g if rank == 0 else None, {"root": root}, comm=comm, backend=cfg["backend"], seed=cfg["seed"])
        if rank != 0:
            continue
        parent_ids = res.array("Parent", g)
        parent = np.where(parent_ids >= 0, g.id_to_index(np.maximum(parent_ids, 0)), -1)
        r = int(g.id_to_index([root])[0])
        failed = validate(g, parent, r)
        edges = traversed_edges(g, parent)
        t = res.stats["time_s"]
        runs.append({"root": root, "time_s": t, "edges": edges, "teps": edges / t if t > 0 else float("inf"),
                     "supersteps": res.stats["supersteps"], "setup_s": res.stats.get("load_time_s"),
                     "valid": not failed, "failed": failed})
    if rank != 0:
        return None
    teps = [x["teps"] for x in runs]
    q = np.quantile(teps, [0, 0.25, 0.5, 0.75, 1.0]).tolist()
    hmean = len(teps) / sum(1 / x for x in teps)
    giant = [x["teps"] for x in runs if x["edges"] >= 0.5 * g.m]  # roots in the giant component
    hgiant = len(giant) / sum(1 / x for x in giant) if giant else float("nan")
    return {
        "backend": cfg["backend"], "np": cfg["np"], "scale": cfg["scale"], "seed": cfg["seed"],
        "n": int(g.n), "m": int(g.m), "construction_s": construction,
        "setup_s_median": harness.median(x["setup_s"] for x in runs if x["setup_s"] is not None),
        "roots": len(runs), "valid": sum(x["valid"] for x in runs),
        "teps_harmonic_mean": hmean, "giant_roots": len(giant), "teps_harmonic_mean_giant": hgiant, "teps_min": q[0], "teps_q1": q[1], "teps_median": q[2], "teps_q3": q[3],
        "teps_max": q[4], "time_s_median": harness.median(runs, "time_s"),
        "supersteps_median": harness.median(runs, "supersteps"), "runs": runs,
    }


def run_config(cfg: dict) -> dict:
    """One configuration: in this process (one rank) or as an MPI job; a failure is recorded."""
    if cfg["np"] == 1:
        return worker(cfg)
    mpiexec = find_mpiexec()
    if mpiexec is None:
        return {**cfg, "skipped": "mpiexec not found (pip install '.[mpi]')"}
    with tempfile.TemporaryDirectory() as d:
        spec, out = Path(d) / "cfg.json", Path(d) / "out.json"
        spec.write_text(json.dumps({**cfg, "out": str(out)}))
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        r = subprocess.run([mpiexec, "-n", str(cfg["np"]), sys.executable, __file__, "--worker", str(spec)],
                           env=env, capture_output=True, text=True, timeout=cfg["timeout"])
        if r.returncode != 0 or not out.exists():
            return {**cfg, "failed": (r.stderr or r.stdout)[-2000:]}
        return json.loads(out.read_text())


def have_cupy() -> str | None:
    """None if the CuPy backend can run here, else why not."""
    try:
        from g2pl.runtime.cupy_backend import import_cupy

        import_cupy()
        return None
    except Exception as exc:  # noqa: BLE001 - any reason means: skip it, saying why
        return "skipped: " + str(exc).splitlines()[0].split("error: ", 1)[-1].split(": pip", 1)[0]


def report(results: list[dict], args, commit: str) -> str:
    lines = [f"# Graph500 BFS (kernel 2) on kron:{args.scale} with programs/bfs_parent.g2pl", "",
             f"Machine: {harness.describe(harness.machine())}; commit {commit}; seed {args.seed}.  ",
             f"Command: `{harness.command(__file__)}`", "",
             "TEPS: undirected edges of the root's component per second of BFS time (`time_s`: the run, "
             "not the graph's distribution to the ranks, which `setup` is). Graph500 samples the roots among "
             "all vertices with an edge, so a root in a small component (a few edges, still several "
             "supersteps) pulls the harmonic mean down; the last column is over the roots of the giant "
             "component (at least half the edges).", "",
             "| backend | np | roots valid | construction s | setup s (median) | BFS s (median) | supersteps (median) "
             "| TEPS harmonic mean | min | Q1 | median | Q3 | max | giant-component roots: TEPS harmonic mean |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        if "skipped" in r or "failed" in r:
            why = r.get("skipped") or "failed: " + r["failed"].strip().splitlines()[-1]
            lines.append(f"| {r['backend']} | {r['np']} | {why} |" + " |" * 11)
            continue
        lines.append(
            f"| {r['backend']} | {r['np']} | {r['valid']}/{r['roots']} | {r['construction_s']:.2f} | "
            f"{r['setup_s_median']:.3f} | {r['time_s_median']:.4f} | {r['supersteps_median']:g} | "
            f"{r['teps_harmonic_mean']:.3g} | {r['teps_min']:.3g} | {r['teps_q1']:.3g} | {r['teps_median']:.3g} | "
            f"{r['teps_q3']:.3g} | {r['teps_max']:.3g} | {r['teps_harmonic_mean_giant']:.3g} ({r['giant_roots']} roots) |")
    n = next((r for r in results if "n" in r), None)
    if n is not None:
        lines += ["", f"Graph: {n['n']} vertices, {n['m']} undirected edges after dropping self-loops and "
                  "merging duplicates."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = harness.parser(__doc__, quick="kron:10, 8 roots", seed=1)
    ap.add_argument("--scale", type=int, default=16)
    ap.add_argument("--roots", type=int, default=64)
    ap.add_argument("--np", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--backends", nargs="+", default=["numpy", "cupy"])
    ap.add_argument("--timeout", type=int, default=3600, help="seconds per configuration")
    ap.add_argument("--worker", type=Path, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker is not None:  # a rank of an MPI job
        cfg = json.loads(args.worker.read_text())
        rec = worker(cfg)
        if rec is not None:
            Path(cfg["out"]).write_text(json.dumps(rec))
        return 0
    if args.quick:
        args.scale, args.roots = 10, 8
    commit = harness.git_commit()
    results = []
    for backend in args.backends:
        why = have_cupy() if backend == "cupy" else None
        for n in args.np:
            cfg = {"backend": backend, "np": n, "scale": args.scale, "roots": args.roots, "seed": args.seed,
                   "timeout": args.timeout}
            rec = {**cfg, "skipped": why} if why else run_config(cfg)
            results.append(rec)
            print(json.dumps({k: v for k, v in rec.items() if k != "runs"}), flush=True)
    text = report(results, args, commit)
    paths = harness.write_report(args.out, harness.stem(f"graph500_kron{args.scale}", args.quick), text,
                                 {"commit": commit, "machine": harness.machine(), "results": results})
    print(text)
    print(f"wrote {paths[0]} and {paths[1]}")
    bad = [r for r in results if "failed" in r or r.get("valid", r.get("roots")) != r.get("roots")]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
