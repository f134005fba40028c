"""BFS, PageRank (20 iterations; pagerank.g2pl and pagerank32.g2pl) and CC through `prog.run` on one rank with 1 and 2 kernel threads,
against GAPBS with OMP_NUM_THREADS=1 and 2, on the same graph.

The compiled row kernels (kernels.row_reduce: the sums of PageRank, the min pulls of CC; the early-exit
pull of BFS) share their rows among `G2PL_THREADS` threads; this script sets G2PL_THREADS in this process
before each `prog.run` (cpu_kernels.threads reads it on every call) and runs with G2PL_NUMBA=1.  GAPBS
reads the very same graph (api_kernels.write_sg) with `bfs`, `pr_spmv` and `cc_sv` (api_kernels.GAPBS's
first binary), `-n 1`, its `Trial Time`.  Each repeat runs every row once, the order rotated
(harness.interleave); the report gives the best and the median, and checks that the returned arrays
have the same bits on 1 and 2 threads.

    python bench/two_cores.py [--graph kron:20] [--repeat 5] [--gapbs DIR] [--quick]

Output: bench/results/two_cores.{md,json} (two_cores_quick.* with --quick).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import api_kernels as AK
import harness
import numpy as np
from handwritten import pick_root

import g2pl

ALGOS = ("bfs", "pagerank", "pagerank32", "cc")
THREADS = (1, 2)


def gapbs_trial(binary: Path, sg: Path, algo: str, root: int, threads: int, timeout: float) -> float:
    """One GAPBS trial's `Trial Time` on `threads` OpenMP threads."""
    cmd = [str(binary), "-f", str(sg), "-n", "1"]
    if algo == "bfs":
        cmd += ["-r", str(root)]
    if algo.startswith("pagerank"):
        cmd += ["-i", str(AK.ITERS), "-t", "1e-30"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=True,
                         env=dict(os.environ, OMP_NUM_THREADS=str(threads))).stdout
    found = harness.TRIAL_TIME.findall(out)
    if not found:
        raise RuntimeError(f"no 'Trial Time' from {binary.name}")
    return float(found[0])


def api_trial(prog: g2pl.Program, g, args: dict, threads: int) -> dict:
    """api_kernels.api_run (wall and CPU time of `prog.run`, the run's `time_s`) with G2PL_THREADS=`threads`."""
    os.environ["G2PL_THREADS"] = str(threads)
    return AK.api_run(prog, g, args)


def bits(prog: g2pl.Program, g, args: dict, threads: int) -> bytes:
    """The bytes of the first returned array of a run with G2PL_THREADS=`threads`."""
    os.environ["G2PL_THREADS"] = str(threads)
    r = prog.run(g, args)
    return np.ascontiguousarray(r.array(r.kinds()[0][0], g)).tobytes()


def main(argv: list[str] | None = None) -> int:
    ap = harness.parser(__doc__, quick="kron:14, 2 repeats", repeat=5, seed=1)
    ap.add_argument("--graph", default="kron:20")
    harness.add_gapbs(ap)
    ap.add_argument("--timeout", type=float, default=600.0)
    a = ap.parse_args(argv)
    if a.quick:
        a.graph, a.repeat = "kron:14", 2
    os.environ["G2PL_NUMBA"] = "1"
    load_s, g = harness.timed(g2pl.load_graph, a.graph, seed=a.seed)
    root = pick_root(g, a.seed)
    progs = {algo: g2pl.compile_file(AK.ROOT / "programs" / f"{AK.PROGRAMS[algo]}.g2pl") for algo in ALGOS}
    args = {algo: AK.program_args(algo, g, root) for algo in ALGOS}
    bins = {algo: a.gapbs / AK.GAPBS[algo][0] for algo in ALGOS if a.gapbs and (a.gapbs / AK.GAPBS[algo][0]).exists()}
    print(f"{a.graph}: n={g.n:,} m={g.m:,}, loaded in {load_s:.1f} s", file=sys.stderr)

    same = {algo: len({bits(progs[algo], g, args[algo], t) for t in THREADS}) == 1 for algo in ALGOS}  # (warm-up too)
    jobs = {}
    for algo in ALGOS:
        for t in THREADS:
            jobs[("g2pl", algo, t)] = lambda algo=algo, t=t: api_trial(progs[algo], g, args[algo], t)
    with tempfile.TemporaryDirectory() as tmp:
        sg = Path(tmp) / "g.sg"
        if bins:
            AK.write_sg(g, sg)
        for algo, b in bins.items():
            for t in THREADS:
                jobs[("gapbs", algo, t)] = lambda algo=algo, b=b, t=t: {
                    "wall": gapbs_trial(b, sg, algo, int(root), t, a.timeout)}
        runs = harness.interleave(jobs, a.repeat)
    os.environ.pop("G2PL_THREADS", None)

    result = {"graph": a.graph, "n": int(g.n), "m": int(g.m), "root": int(g.ids[root]), "repeat": a.repeat,
              "machine": harness.machine(("numpy", "scipy", "numba")), "commit": harness.git_commit(),
              "command": harness.command(__file__, argv), "same_bits": same,
              "runs": {"/".join(map(str, k)): v for k, v in runs.items()}}
    md = report(result, runs, bins)
    harness.write_report(a.out, harness.stem("two_cores", a.quick), md, result)
    print(md)
    return 0 if all(same.values()) else 1


def report(res: dict, runs: dict, bins: dict) -> str:
    m = res["machine"]
    L = [f"# One rank, 1 and 2 kernel threads, against GAPBS: {res['graph']}", "",
         f"n = {res['n']:,}, m = {res['m']:,}, BFS root {res['root']}. Best / median of {res['repeat']} "
         f"interleaved repeats. Machine: {harness.describe(m)}, load average {m['loadavg']:.1f} at the start; "
         f"commit {res['commit']}. g2pl: `prog.run` wall time, G2PL_NUMBA=1.", "",
         "| kernel | g2pl 1 thread | g2pl 2 threads | 2 / 1 | GAPBS 1 thread | GAPBS 2 threads "
         "| g2pl 2 / GAPBS 2 |", "|---|---:|---:|---:|---|---|---:|"]
    for algo in ALGOS:
        g1, g2 = runs[("g2pl", algo, 1)], runs[("g2pl", algo, 2)]
        b1, m1 = harness.best(g1, "wall"), harness.median(g1, "wall")
        b2, m2 = harness.best(g2, "wall"), harness.median(g2, "wall")
        cell = ["-", "-", "-"]
        if algo in bins:
            x1, x2 = runs[("gapbs", algo, 1)], runs[("gapbs", algo, 2)]
            n = bins[algo].name
            gb2, gm2 = harness.best(x2, "wall"), harness.median(x2, "wall")
            cell = [f"{n} {harness.best(x1, 'wall'):.4f} / {harness.median(x1, 'wall'):.4f}",
                    f"{n} {gb2:.4f} / {gm2:.4f}", f"{b2 / gb2:.2f}x / {m2 / gm2:.2f}x"]
        L.append(f"| {AK.TITLES[algo]} | {b1:.4f} / {m1:.4f} | {b2:.4f} / {m2:.4f} | {b2 / b1:.2f} / {m2 / m1:.2f} "
                 f"| {cell[0]} | {cell[1]} | {cell[2]} |")
    L += ["", "Times in seconds, best / median. Same bits on 1 and 2 threads: " +
          ", ".join(f"{k} {'yes' if v else 'NO'}" for k, v in res["same_bits"].items()) + ".", "",
          f"Command: `{res['command']}`"]
    return "\n".join(L) + "\n"


if __name__ == "__main__":
    sys.exit(main())
