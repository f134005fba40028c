"""Kernels through the Python API against the GAP Benchmark Suite (C++, one thread), on the same graph.

For BFS, PageRank (20 iterations) and connected components (`cc`: CC_PROGRAM, the fastest shipped
program on kron:20, cc.g2pl; cc_sv.g2pl, pjcc.g2pl and wcc.g2pl as `cc_sv`, `pjcc`, `wcc` with --algos)
this measures what a user of `prog.run(graph, args)` waits for, split into

* `load`: `g2pl.load_graph(SPEC)` (once), `compile`: `g2pl.compile_file` (median);
* `wall`: the `prog.run(...)` call on the loaded graph, of which `time_s` is the run itself
  (the stats' clock: supersteps up to and including collecting the returned values),
  `setup` the stats' `load_time_s` (partition cache, runtime set-up) and `rest` everything else
  (argument checks, statistics, building the `Result`);
* `array`: `res.array(name)` after the run, and `json`: `res.output()`, the JSON shapes of
  `--output` (made only when asked for; before commit f419034 every run paid for it inside `wall`).

GAPBS reads the very same graph: the script writes g2pl's CSR (internal indices 0..n-1, which are
the original IDs for a generated graph) as a GAPBS serialized graph `.sg` and runs each binary
with `-f G.sg -n 1` under `OMP_NUM_THREADS=1`, taking its `Trial Time` (the kernel alone); BFS
uses the same root (`-r`), PageRank `-i 20 -t 1e-30` (exactly 20 iterations). The binaries found
in the `--gapbs` directory are used: `bfs`, `pr` (Gauss-Seidel) and `pr_spmv` (the same
Jacobi iteration as pagerank.g2pl), `cc` (Afforest) and `cc_sv` (Shiloach-Vishkin).

Everything is interleaved (each repeat runs every implementation once, in an order rotated per
repeat) and the report gives medians, because the machine is shared and noisy. It gives CPU times
too (`prog.run` in this process; one GAPBS trial as the CPU time of a run with TRIALS + 1 trials
less that of a run with one), which time-slicing among other processes disturbs far less.

    python bench/api_kernels.py [--graph kron:20] [--repeat 5] [--gapbs DIR] [--quick]

Output: bench/results/api_kernels.{md,json} (api_kernels_quick.* with --quick).
"""

from __future__ import annotations

import resource
import sys
import tempfile
import time
from pathlib import Path

import harness
import numpy as np
from handwritten import pick_root

import g2pl

ROOT = harness.ROOT

ITERS, DAMPING = 20, 0.85
TRIALS = 3  # GAPBS trials in the run whose CPU time, less a one-trial run's, gives one trial's
#: the fastest shipped connected-components program on kron:20 (one thread), the `cc` row's: label
#: propagation from the highest-degree vertex (3 full pulls, then a filtered one and pushes), measured
#: ahead of cc.g2pl (min-label propagation: 4 full pulls) and cc_sv.g2pl (3 full pulls, more per-vertex work)
CC_PROGRAM = "cc_hub"
PROGRAMS = {"bfs": "bfs", "pagerank": "pagerank", "pagerank32": "pagerank32", "cc": CC_PROGRAM, "cc_sv": "cc_sv", "pjcc": "pjcc", "wcc": "wcc"}
#: the GAPBS binaries compared with each program (those present are run)
GAPBS = {"bfs": ["bfs"], "pagerank": ["pr_spmv", "pr"], "pagerank32": ["pr_spmv", "pr"], "cc": ["cc_sv", "cc"], "cc_sv": ["cc_sv", "cc"], "pjcc": [],
         "wcc": []}
TITLES = {"bfs": "BFS", "pagerank": "PageRank (20 it.)", "pagerank32": "PageRank, single-precision shares (20 it.)", "cc": f"CC ({CC_PROGRAM}.g2pl)", "cc_sv": "CC (hook + shortcut)",
          "pjcc": "CC (pointer jumping)",
          "wcc": "WCC"}


def write_sg(g, path: Path) -> None:
    """g2pl's out-CSR as a GAPBS `.sg` (bool directed, int64 entries, int64 nodes, int64 offsets,
    int32 neighbours; a directed graph also its in-CSR)."""
    if g.n >= 2**31:
        raise SystemExit("GAPBS .sg files hold 32-bit vertex IDs")
    with open(path, "wb") as f:
        f.write(np.bool_(g.directed).tobytes())
        f.write(np.int64(len(g.out_nbr)).tobytes())
        f.write(np.int64(g.n).tobytes())
        for indptr, nbr in [(g.out_indptr, g.out_nbr)] + ([(g.in_indptr, g.in_nbr)] if g.directed else []):
            f.write(np.asarray(indptr, dtype=np.int64).tobytes())
            f.write(np.asarray(nbr, dtype=np.int32).tobytes())


def _children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def gapbs_run(binary: Path, sg: Path, algo: str, root: int, timeout: float, trials: int = 1) -> dict:
    """{"wall": the last trial's `Trial Time`, "cpu": (CPU time of a run with `trials` + 1 trials - CPU
    time of a run with 1) / trials: one trial's CPU time, loading the graph cancelled out}."""
    cmd = [str(binary), "-f", str(sg)]
    if algo == "bfs":
        cmd += ["-r", str(root)]
    if algo.startswith("pagerank"):
        cmd += ["-i", str(ITERS), "-t", "1e-30"]
    c0 = _children_cpu()
    wall, _ = harness.gapbs([*cmd, "-n", "1"], timeout)
    c1 = _children_cpu()
    harness.gapbs([*cmd, "-n", str(trials + 1)], timeout)
    c2 = _children_cpu()
    return {"wall": wall, "cpu": max((c2 - c1) - (c1 - c0), 0.0) / trials}


def program_args(algo: str, g, root: int) -> dict:
    if algo == "bfs":
        return {"root": int(g.ids[root])}
    if algo.startswith("pagerank"):
        return {"iters": ITERS, "damping": DAMPING}
    return {}


def api_run(prog, g, args: dict) -> dict:
    c0 = time.process_time()
    t0 = time.perf_counter()
    res = prog.run(g, args)
    wall = time.perf_counter() - t0
    cpu = time.process_time() - c0
    name = res.kinds()[0][0]
    t1 = time.perf_counter()
    res.array(name)
    t2 = time.perf_counter()
    res.output()
    t3 = time.perf_counter()
    st = res.stats
    return {"wall": wall, "cpu": cpu, "time_s": st["time_s"], "setup": st["load_time_s"],
            "rest": wall - st["time_s"] - st["load_time_s"], "array": t2 - t1, "json": t3 - t2,
            "supersteps": st["supersteps"]}


def main(argv: list[str] | None = None) -> int:
    ap = harness.parser(__doc__, quick="kron:14, 2 repeats", repeat=5, seed=1)
    ap.add_argument("--graph", default="kron:20")
    ap.add_argument("--algos", default="bfs,pagerank,cc")
    harness.add_gapbs(ap)
    ap.add_argument("--timeout", type=float, default=600.0)
    a = ap.parse_args(argv)
    if a.quick:
        a.graph, a.repeat = "kron:14", 2
    algos = [x for x in a.algos.split(",") if x]

    load_s, g = harness.timed(g2pl.load_graph, a.graph, seed=a.seed)
    root = pick_root(g, a.seed)
    progs, compile_s = {}, {}
    for algo in algos:
        path = ROOT / "programs" / f"{PROGRAMS[algo]}.g2pl"
        ts = [harness.timed(g2pl.compile_file, path) for _ in range(3)]
        progs[algo], compile_s[algo] = ts[-1][1], harness.median(t for t, _ in ts)
    bins = {algo: [(b, a.gapbs / b) for b in GAPBS[algo] if a.gapbs and (a.gapbs / b).exists()] for algo in algos}
    print(f"{a.graph}: n={g.n:,} m={g.m:,}, loaded in {load_s:.1f} s; root {int(g.ids[root])}", file=sys.stderr)

    jobs = {}
    for algo in algos:
        jobs[("api", algo)] = lambda algo=algo: api_run(progs[algo], g, program_args(algo, g, root))
    with tempfile.TemporaryDirectory() as tmp:
        sg = Path(tmp) / "g.sg"
        if any(bins.values()):
            write_sg(g, sg)
        for algo in algos:
            for b, p in bins[algo]:
                jobs[(algo, b)] = lambda algo=algo, p=p: gapbs_run(p, sg, algo, root, a.timeout, TRIALS)
        for algo in algos:  # warm-up: the first run builds the graph part and caches
            progs[algo].run(g, program_args(algo, g, root))
        runs = harness.interleave(jobs, a.repeat)

    result = {"graph": a.graph, "n": int(g.n), "m": int(g.m), "root": int(g.ids[root]), "load_s": load_s,
              "repeat": a.repeat, "machine": harness.machine(), "commit": harness.git_commit(),
              "command": harness.command(__file__, argv), "rows": []}
    for algo in algos:
        api, gap = runs[("api", algo)], {b: runs[(algo, b)] for b, _p in bins[algo]}
        row = {"algo": algo, "program": f"programs/{PROGRAMS[algo]}.g2pl", "compile_s": compile_s[algo],
               "supersteps": api[0]["supersteps"],
               **{k: harness.median(api, k) for k in ("wall", "cpu", "time_s", "setup", "rest", "array", "json")},
               "gapbs": {b: harness.median(x, "wall") for b, x in gap.items()},
               "gapbs_cpu": {b: harness.median(x, "cpu") for b, x in gap.items()},
               "runs": api, "gapbs_runs": gap}
        result["rows"].append(row)
    md = report(result)
    harness.write_report(a.out, harness.stem("api_kernels", a.quick), md, result)
    print(md)
    return 0


def report(res: dict) -> str:
    m = res["machine"]
    L = [f"# Kernels through the Python API vs GAPBS (one thread): {res['graph']}", "",
         f"n = {res['n']:,}, m = {res['m']:,}, BFS root {res['root']}; `load_graph` {res['load_s']:.1f} s. "
         f"Medians of {res['repeat']} interleaved repeats. Machine: {harness.describe(m)}; "
         f"commit {res['commit']}.", "",
         "Wall-clock times (s):", "",
         "| kernel | supersteps | `prog.run` wall | run `time_s` | setup | rest | `array()` | `output()` JSON "
         "| GAPBS | wall / GAPBS |",
         "|---|---:|---:|---:|---:|---:|---:|---:|---|---|"]
    for r in res["rows"]:
        gap = ", ".join(f"{b} {t:.4f}" for b, t in r["gapbs"].items()) or "-"
        ratio = ", ".join(f"{r['wall'] / t:.2f}x {b}" for b, t in r["gapbs"].items() if t > 0) or "-"
        L.append(f"| {TITLES[r['algo']]} | {r['supersteps']} | {r['wall']:.4f} | {r['time_s']:.4f} | {r['setup']:.4f} "
                 f"| {r['rest']:.4f} | {r['array'] * 1e6:.0f} us | {r['json']:.3f} | {gap} | {ratio} |")
    L += ["", "CPU times (s; less disturbed by other work on a shared machine than wall times): "
          "`prog.run` in this process; a GAPBS trial as the difference between a run with "
          f"{TRIALS + 1} trials and one with 1, divided by {TRIALS}:", "",
          "| kernel | `prog.run` CPU | GAPBS CPU | CPU / GAPBS |", "|---|---:|---|---|"]
    for r in res["rows"]:
        gap = ", ".join(f"{b} {t:.4f}" for b, t in r["gapbs_cpu"].items()) or "-"
        ratio = ", ".join(f"{r['cpu'] / t:.2f}x {b}" for b, t in r["gapbs_cpu"].items() if t > 0) or "-"
        L.append(f"| {TITLES[r['algo']]} | {r['cpu']:.4f} | {gap} | {ratio} |")
    L += ["", "`wall` = `time_s` + setup + rest. Compile times: " +
          ", ".join(f"{r['algo']} {r['compile_s'] * 1e3:.0f} ms" for r in res["rows"]) + "."]
    return "\n".join(L) + "\n"


if __name__ == "__main__":
    sys.exit(main())
