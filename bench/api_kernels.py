"""Kernels through the Python API against the GAP Benchmark Suite (C++, one thread), on the same graph.

For BFS, PageRank (20 iterations) and connected components (cc.g2pl; pjcc.g2pl and wcc.g2pl
with --algos) this measures what a user of `prog.run(graph, args)` waits for, split into

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
in the `--gapbs` directories are used: `bfs`, `pr` (Gauss-Seidel) and `pr_spmv` (the same
Jacobi iteration as pagerank.g2pl), `cc` (Afforest) and `cc_sv` (Shiloach-Vishkin).

Everything is interleaved (each repeat runs every implementation once, in an order rotated per
repeat) and the report gives medians, because the machine is shared and noisy. It gives CPU times
too (`prog.run` in this process; one GAPBS trial as the CPU time of a run with TRIALS + 1 trials
less that of a run with one), which time-slicing among other processes disturbs far less.

    python bench/api_kernels.py [--graph kron:20] [--repeat 5] [--gapbs /work/gapbs] [--quick]

Output: bench/results/api_kernels.{md,json} (api_kernels_quick.* with --quick).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(BENCH))

from compare import git_commit, machine  # noqa: E402
from handwritten import pick_root  # noqa: E402

import g2pl  # noqa: E402

ITERS, DAMPING = 20, 0.85
TRIALS = 3  # GAPBS trials in the run whose CPU time, less a one-trial run's, gives one trial's
PROGRAMS = {"bfs": "bfs", "pagerank": "pagerank", "cc": "cc", "pjcc": "pjcc", "wcc": "wcc"}
#: the GAPBS binaries compared with each program (those present are run)
GAPBS = {"bfs": ["bfs"], "pagerank": ["pr_spmv", "pr"], "cc": ["cc_sv", "cc"], "pjcc": [], "wcc": []}
TITLES = {"bfs": "BFS", "pagerank": "PageRank (20 it.)", "cc": "CC (min-label)", "pjcc": "CC (pointer jumping)",
          "wcc": "WCC"}
TRIAL = re.compile(r"Trial Time:\s+([0-9.eE+-]+)")


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
    c0 = _children_cpu()
    wall = _gapbs_once(binary, sg, algo, root, timeout, 1)
    c1 = _children_cpu()
    _gapbs_once(binary, sg, algo, root, timeout, trials + 1)
    c2 = _children_cpu()
    return {"wall": wall, "cpu": max((c2 - c1) - (c1 - c0), 0.0) / trials}


def _gapbs_once(binary: Path, sg: Path, algo: str, root: int, timeout: float, trials: int) -> float:
    cmd = [str(binary), "-f", str(sg), "-n", str(trials)]
    if algo == "bfs":
        cmd += ["-r", str(root)]
    if algo == "pagerank":
        cmd += ["-i", str(ITERS), "-t", "1e-30"]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout, check=True).stdout
    times = TRIAL.findall(out)
    if not times:
        raise RuntimeError(f"no 'Trial Time' in the output of {' '.join(cmd)}")
    return float(times[0])


def program_args(algo: str, g, root: int) -> dict:
    if algo == "bfs":
        return {"root": int(g.ids[root])}
    if algo == "pagerank":
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
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--graph", default="kron:20")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--algos", default="bfs,pagerank,cc")
    ap.add_argument("--gapbs", action="append", default=None,
                    help="a directory with GAPBS binaries (repeatable; default /work/gapbs when it exists)")
    ap.add_argument("--timeout", type=float, default=600.0)
    ap.add_argument("--quick", action="store_true", help="kron:14, 2 repeats: a smoke test")
    ap.add_argument("--out", default=str(BENCH / "results"))
    a = ap.parse_args(argv)
    if a.quick:
        a.graph, a.repeat = "kron:14", 2
    algos = [x for x in a.algos.split(",") if x]
    dirs = [Path(d) for d in (a.gapbs or ["/work/gapbs"])]

    t0 = time.perf_counter()
    g = g2pl.load_graph(a.graph, seed=a.seed)
    load_s = time.perf_counter() - t0
    root = pick_root(g, a.seed)
    progs, compile_s = {}, {}
    for algo in algos:
        ts = []
        for _ in range(3):
            t = time.perf_counter()
            progs[algo] = g2pl.compile_file(ROOT / "programs" / f"{PROGRAMS[algo]}.g2pl")
            ts.append(time.perf_counter() - t)
        compile_s[algo] = statistics.median(ts)
    bins = {algo: [(b, d / b) for b in GAPBS[algo] for d in dirs if (d / b).exists()][:2] for algo in algos}
    for algo in algos:  # the first found per name
        seen, keep = set(), []
        for b, p in bins[algo]:
            if b not in seen:
                seen.add(b)
                keep.append((b, p))
        bins[algo] = keep
    print(f"{a.graph}: n={g.n:,} m={g.m:,}, loaded in {load_s:.1f} s; root {int(g.ids[root])}", file=sys.stderr)

    api: dict = {algo: [] for algo in algos}
    gap: dict = {(algo, b): [] for algo in algos for b, _p in bins[algo]}
    with tempfile.TemporaryDirectory() as tmp:
        sg = Path(tmp) / "g.sg"
        if any(bins.values()):
            write_sg(g, sg)
        jobs = [("api", algo, None) for algo in algos] + [("gapbs", algo, (b, p)) for algo in algos
                                                          for b, p in bins[algo]]
        for algo in algos:  # warm-up: the first run builds the graph part and caches
            progs[algo].run(g, program_args(algo, g, root))
        for r in range(a.repeat):
            k = r % len(jobs)
            for kind, algo, b in jobs[k:] + jobs[:k]:
                if kind == "api":
                    api[algo].append(api_run(progs[algo], g, program_args(algo, g, root)))
                else:
                    gap[(algo, b[0])].append(gapbs_run(b[1], sg, algo, root, a.timeout, TRIALS))
            print(f"repeat {r + 1}/{a.repeat} done", file=sys.stderr)

    def med(rows: list[dict], key: str) -> float:
        return statistics.median(x[key] for x in rows)

    result = {"graph": a.graph, "n": int(g.n), "m": int(g.m), "root": int(g.ids[root]), "load_s": load_s,
              "repeat": a.repeat, "machine": machine(), "commit": git_commit(), "rows": []}
    for algo in algos:
        row = {"algo": algo, "program": f"programs/{PROGRAMS[algo]}.g2pl", "compile_s": compile_s[algo],
               "supersteps": api[algo][0]["supersteps"],
               **{k: med(api[algo], k) for k in ("wall", "cpu", "time_s", "setup", "rest", "array", "json")},
               "gapbs": {b: med(gap[(algo, b)], "wall") for b, _p in bins[algo]},
               "gapbs_cpu": {b: med(gap[(algo, b)], "cpu") for b, _p in bins[algo]},
               "runs": api[algo], "gapbs_runs": {b: gap[(algo, b)] for b, _p in bins[algo]}}
        result["rows"].append(row)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = "api_kernels_quick" if a.quick else "api_kernels"
    (out / f"{stem}.json").write_text(json.dumps(result, indent=1))
    md = report(result)
    (out / f"{stem}.md").write_text(md)
    print(md)
    return 0


def report(res: dict) -> str:
    m = res["machine"]
    L = [f"# Kernels through the Python API vs GAPBS (one thread): {res['graph']}", "",
         f"n = {res['n']:,}, m = {res['m']:,}, BFS root {res['root']}; `load_graph` {res['load_s']:.1f} s. "
         f"Medians of {res['repeat']} interleaved repeats. Machine: {m['cpu']}, {m['nproc']} cores, "
         f"{m['memory']} (shared with other work); commit {res['commit']}.", "",
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
