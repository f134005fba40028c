"""g2pl against the GAP Benchmark Suite (and SciPy for MST): every row of one table, in one interleaved run.

Rows (S = `--scale`, default 20; `--quick`: 14):

* **API kernels, one thread**: BFS, PageRank (20 iterations; pagerank.g2pl in float, and
  pagerank32.g2pl, whose shares are single-precision as pr_spmv's are) and connected components through
  `prog.run` on `kron:S`, against GAPBS `bfs`, `pr_spmv` and `cc_sv` reading the very same graph (written
  as a GAPBS `.sg`; api_kernels.py's functions): `prog.run`'s wall time against GAPBS's `Trial Time`,
  and one trial's CPU time. CC runs the fastest shipped program (api_kernels.CC_PROGRAM).
* **`g2pl run` end to end**: `g2pl run programs/bfs.g2pl --graph kron:S --output out.npz`, and with
  `--output out.json`, against `bfs -g S -n 1` (GAPBS generating its own Kronecker graph of the same
  scale), both on one thread (`G2PL_THREADS=1`, `OMP_NUM_THREADS=1`): each process's wall time and
  peak RSS (`wait4`).
* **Triangles**: programs/triangles.g2pl on `kron:T` (`--tc-scale`, default 16) against `tc -g T -n 1`
  (each its own Kronecker graph of that scale; the counts differ and are both reported).
* **MST**: programs/mst.g2pl against SciPy's `minimum_spanning_tree` on `ws:200000:10:0.1` and
  `kron:18` (`--mst-graphs`), each with uniform random weights in (0.001, 1.001] (bench/mst.py's
  graphs); the total weights are checked equal.
* **Two cores**: BFS, both PageRanks and CC with `g2pl run --np 2` (its `time_s`, from `--stats`; the
  process's wall time beside it) against GAPBS with `OMP_NUM_THREADS=2` on the same `.sg`.

Every row runs once per repeat, the order rotated each repeat (harness.interleave), so all sides see
the same load; the report gives medians. Answers are checked: BFS levels and CC labels against SciPy,
PageRank against a NumPy power iteration, MST weights against SciPy, the two-rank runs' supersteps
against one rank's.

GAPBS comes from `--gapbs DIR` (a build with the binaries `bfs`, `pr_spmv`, `cc_sv`, `tc`), or is
built here: a `git clone` of https://github.com/sbeamer/gapbs at the pinned commit GAPBS_COMMIT into
`--cache DIR` (default `~/.cache/g2pl/gapbs-COMMIT`), then `make` (g++ -O3 -fopenmp, GAPBS's own
Makefile); a later run finds the build there.

    python bench/gapbs.py [--gapbs DIR] [--scale 20] [--repeat 3] [--quick]

Output: OUT/gapbs.{md,json} (gapbs_quick.* with --quick).
"""

from __future__ import annotations

import json
import math
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import api_kernels as AK
import harness
import numpy as np
import scipy.sparse as sp
from handwritten import pick_root
from scipy.sparse.csgraph import connected_components, minimum_spanning_tree, shortest_path

import g2pl
from g2pl.graph import build_graph
from g2pl.graph.generators import watts_strogatz_edges

GAPBS_URL = "https://github.com/sbeamer/gapbs"
GAPBS_COMMIT = "b5e3e19c2845f22fb338f4a4bc4b1ccee861d026"  # "[docs] fix typos in README", May 2024
BINARIES = ("bfs", "pr_spmv", "cc_sv", "tc")
#: g2pl algorithm -> GAPBS binary; pagerank32.g2pl rounds each share to single precision, as pr_spmv keeps them
KERNELS = {"bfs": "bfs", "pagerank": "pr_spmv", "pagerank32": "pr_spmv", "cc": "cc_sv"}
TITLES = {"bfs": "BFS", "pagerank": "PageRank (20 it.)", "pagerank32": "PageRank, single-precision shares (20 it.)",
          "cc": "CC"}


# --------------------------------------------------------------------------- GAPBS


def gapbs_build(cache: Path) -> Path:
    """A GAPBS build at GAPBS_COMMIT in `cache` (cloned and made on first use)."""
    if all((cache / b).exists() for b in BINARIES):
        return cache
    if shutil.which("git") is None or shutil.which("make") is None:
        raise SystemExit("bench/gapbs.py: building GAPBS needs git, make and g++ (or pass --gapbs DIR)")
    if not (cache / ".git").exists():
        cache.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "clone", "--quiet", GAPBS_URL, str(cache)], check=True)
    subprocess.run(["git", "-C", str(cache), "checkout", "--quiet", GAPBS_COMMIT], check=True)
    subprocess.run(["make", "-C", str(cache), "-j", str(os.cpu_count() or 1), *BINARIES], check=True,
                   stdout=subprocess.DEVNULL)
    return cache


def gapbs_threads(binary: Path, args: list[str], threads: int, timeout: float) -> float:
    """One GAPBS trial's `Trial Time` on `threads` OpenMP threads."""
    out = subprocess.run([str(binary), *args, "-n", "1"], capture_output=True, text=True, timeout=timeout,
                         env=dict(os.environ, OMP_NUM_THREADS=str(threads)), check=True).stdout
    found = harness.TRIAL_TIME.findall(out)
    if not found:
        raise RuntimeError(f"no 'Trial Time' from {binary.name}")
    return float(found[0])


def gapbs_args(algo: str, sg: Path, root: int) -> list[str]:
    args = ["-f", str(sg)]
    if algo == "bfs":
        args += ["-r", str(root)]
    if algo.startswith("pagerank"):
        args += ["-i", str(AK.ITERS), "-t", "1e-30"]
    return args


# --------------------------------------------------------------------------- answers


def check_answer(algo: str, g, res, root: int) -> bool:
    """The run's answer against SciPy (BFS levels, CC labels) or a NumPy power iteration (PageRank)."""
    A = sp.csr_matrix((np.ones(len(g.out_nbr)), g.out_nbr, g.out_indptr), shape=(g.n, g.n))
    got = np.asarray(res.array(res.kinds()[0][0]))
    if algo == "bfs":
        d = shortest_path(A, unweighted=True, indices=root, directed=bool(g.directed))
        want = np.where(np.isinf(d), -1, d).astype(np.int64)
        return bool(np.array_equal(got, want))
    if algo == "cc":
        k, lab = connected_components(A, directed=bool(g.directed), connection="weak")
        least = np.full(k, np.iinfo(np.int64).max)
        np.minimum.at(least, lab, np.asarray(g.ids))
        return bool(np.array_equal(got, least[lab]))
    deg = np.diff(g.out_indptr).astype(np.float64)
    pr = np.full(g.n, 1.0 / g.n)
    for _ in range(AK.ITERS):
        dangling = pr[deg == 0].sum()
        contrib = np.divide(pr, deg, out=np.zeros(g.n), where=deg > 0)
        if algo == "pagerank32":  # the shares rounded to single precision, as the program does
            contrib = contrib.astype(np.float32).astype(np.float64)
        pr = (1 - AK.DAMPING) / g.n + AK.DAMPING * (A.T @ contrib + dangling / g.n)
    return bool(np.allclose(got, pr, rtol=1e-9, atol=1e-15))


def mst_graph(spec: str, seed: int):
    """bench/mst.py's weighted graph: ws:N:K:P or kron:S with uniform random weights in (0.001, 1.001]."""
    rng = np.random.default_rng(seed)
    if spec.startswith("ws:"):
        _, n, k, p = spec.split(":")
        u, v = watts_strogatz_edges(int(n), int(k), float(p), seed)
        ids = np.arange(int(n))
    else:
        g0 = g2pl.load_graph(spec, seed=seed)
        u, v, ids = g0.ids[g0.src], g0.ids[g0.dst], g0.ids
    w = rng.random(len(u)) + 0.001
    g = build_graph(u, v, w, directed=False, name=f"{spec}+weights", extra_ids=ids)
    return g, sp.coo_matrix((g.weight, (g.src, g.dst)), shape=(g.n, g.n)).tocsr()


# --------------------------------------------------------------------------- the run


TIME = Path("/usr/bin/time")
MAXRSS = re.compile(r"^G2PL_MAXRSS_KB (\d+)$", re.M)


def cli_run(cmd: list[str], timeout: float, stats: Path | None = None, env: dict | None = None) -> dict:
    """A process (`g2pl run`, a GAPBS binary): wall, peak RSS, and with `stats` its time_s and supersteps.

    The peak RSS is /usr/bin/time's (GNU `%M`) where it is installed: `wait4` on a child forked from this
    process counts this process's own pages, mapped in the child until it execs, in the child's peak."""
    timed = TIME.exists()
    got = harness.run_child([str(TIME), "-f", "G2PL_MAXRSS_KB %M", *cmd] if timed else cmd, timeout, env=env)
    found = MAXRSS.findall(got["out"]) if timed else []
    peak = int(found[-1]) * 1024 if found else got["peak_rss"]
    row = {"wall": got["wall_s"], "peak_rss": peak, "rc": got["rc"], "cmd": shlex.join(cmd)}
    if got["rc"] != 0:
        row["error"] = got["out"][-2000:]
    elif stats is not None:
        st = json.loads(stats.read_text())
        row.update(time_s=st["time_s"], supersteps=st["supersteps"])
    return row


def main(argv: list[str] | None = None) -> int:
    ap = harness.parser(__doc__, quick="kron:14, triangles kron:12, MST ws:20000:10:0.1 and kron:12, 2 repeats",
                        repeat=3, seed=1)
    ap.add_argument("--scale", type=int, default=20, help="kron:SCALE for the kernel, CLI and two-core rows")
    ap.add_argument("--tc-scale", type=int, default=16)
    ap.add_argument("--mst-graphs", default="ws:200000:10:0.1,kron:18")
    ap.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "g2pl" / f"gapbs-{GAPBS_COMMIT[:12]}",
                    help="where GAPBS is cloned and built when --gapbs is not given")
    ap.add_argument("--timeout", type=float, default=900.0)
    harness.add_gapbs(ap)
    a = ap.parse_args(argv)
    # the one-thread rows are one thread on both sides: g2pl's compiled kernels too (this process and the
    # `g2pl run` children inherit it); the two-core rows are ranks (`--np 2`), one thread each
    os.environ["G2PL_THREADS"] = "1"
    if a.quick:
        a.scale, a.tc_scale, a.mst_graphs, a.repeat = 14, 12, "ws:20000:10:0.1,kron:12", 2
    gdir = Path(a.gapbs) if a.gapbs else gapbs_build(a.cache)
    spec = f"kron:{a.scale}"
    g = g2pl.load_graph(spec, seed=a.seed)
    root = pick_root(g, a.seed)
    root_id = int(g.ids[root])
    progs = {algo: g2pl.compile_file(harness.ROOT / "programs" / f"{AK.PROGRAMS[algo]}.g2pl")
             for algo in ("bfs", "pagerank", "pagerank32")}
    progs["cc"] = g2pl.compile_file(harness.ROOT / "programs" / f"{AK.CC_PROGRAM}.g2pl")
    prog_name = {**{k: AK.PROGRAMS[k] for k in ("bfs", "pagerank", "pagerank32")}, "cc": AK.CC_PROGRAM}
    tri = g2pl.compile_file(harness.ROOT / "programs" / "triangles.g2pl")
    mst = g2pl.compile_file(harness.ROOT / "programs" / "mst.g2pl")
    tc_graph = g2pl.load_graph(f"kron:{a.tc_scale}", seed=0)
    msts = {s: mst_graph(s, a.seed) for s in a.mst_graphs.split(",") if s}
    g2pl_cmd = harness.g2pl_command()
    checks: dict[str, bool] = {}
    last: dict = {}

    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        sg = tmp / "g.sg"
        AK.write_sg(g, sg)
        jobs: dict = {}
        for algo in KERNELS:
            args = AK.program_args(algo, g, root)
            jobs[("api", algo)] = lambda algo=algo, args=args: AK.api_run(progs[algo], g, args)
            jobs[("gapbs1", algo)] = lambda algo=algo: AK.gapbs_run(gdir / KERNELS[algo], sg, algo, root_id,
                                                                     a.timeout, AK.TRIALS)
            stats = tmp / f"np2_{algo}.json"
            cmd = [*g2pl_cmd, "run", str(harness.ROOT / "programs" / f"{prog_name[algo]}.g2pl"), "--graph", spec,
                   "--seed", str(a.seed), "--np", "2", "--quiet", "--stats", str(stats)]
            for k, v in args.items():
                cmd += ["--arg", f"{k}={v}"]
            jobs[("np2", algo)] = lambda cmd=cmd, stats=stats: cli_run(cmd, a.timeout, stats)
            jobs[("gapbs2", algo)] = lambda algo=algo: gapbs_threads(gdir / KERNELS[algo],
                                                                     gapbs_args(algo, sg, root_id), 2, a.timeout)
        for fmt in ("npz", "json"):
            cmd = [*g2pl_cmd, "run", str(harness.ROOT / "programs" / "bfs.g2pl"), "--graph", spec, "--seed",
                   str(a.seed), "--arg", f"root={root_id}", "--quiet", "--output", str(tmp / f"out.{fmt}")]
            jobs[("cli", fmt)] = lambda cmd=cmd: cli_run(cmd, a.timeout)
        # one thread, as `g2pl run` runs here (G2PL_THREADS=1): GAPBS's generator and build are OpenMP too
        jobs[("cli", "gapbs")] = lambda: cli_run([str(gdir / "bfs"), "-g", str(a.scale), "-n", "1"], a.timeout,
                                                 env=dict(os.environ, OMP_NUM_THREADS="1"))

        def tri_run() -> float:
            last["tc"] = tri.run(tc_graph)
            return last["tc"].stats["time_s"]

        jobs[("tc", "g2pl")] = tri_run
        jobs[("tc", "gapbs")] = lambda: gapbs_threads(gdir / "tc", ["-g", str(a.tc_scale)], 1, a.timeout)
        for s, (mg, A) in msts.items():
            def mst_run(s=s, mg=mg) -> float:
                last[("mst", s)] = mst.run(mg, {})
                return last[("mst", s)].stats["time_s"]

            def scipy_run(s=s, A=A) -> float:
                t, last[("mst_ref", s)] = harness.timed(minimum_spanning_tree, A)
                return t

            jobs[("mst", s, "g2pl")] = mst_run
            jobs[("mst", s, "scipy")] = scipy_run
        for algo in KERNELS:  # warm-up: the first run builds the graph part's caches (and loads kernels)
            progs[algo].run(g, AK.program_args(algo, g, root))
        m = harness.machine()
        runs = harness.interleave(jobs, a.repeat)

    for algo in KERNELS:
        checks[f"{algo} answer"] = check_answer(algo, g, progs[algo].run(g, AK.program_args(algo, g, root)), root)
        one = runs[("api", algo)][0]["supersteps"]
        checks[f"{algo} --np 2 supersteps"] = all(r.get("supersteps") == one for r in runs[("np2", algo)])
    checks["g2pl run --output (both formats) succeeded"] = all(r["rc"] == 0 for f in ("npz", "json")
                                                               for r in runs[("cli", f)])
    for s in msts:
        w, want = float(last[("mst", s)]["weight"]), float(last[("mst_ref", s)].sum())
        checks[f"MST {s} weight"] = math.isclose(w, want, rel_tol=1e-12)
    res = {"scale": a.scale, "graph": spec, "n": int(g.n), "m": int(g.m), "root": root_id, "repeat": a.repeat,
           "gapbs": str(gdir), "gapbs_commit": GAPBS_COMMIT, "machine": m, "commit": harness.git_commit(),
           "command": harness.command(__file__, argv), "kernels": harness.kernels_mode(),
           "cc_program": AK.CC_PROGRAM, "tc_scale": a.tc_scale, "triangles": int(last["tc"]["total"]),
           "checks": checks, "runs": {" ".join(map(str, k)): v for k, v in runs.items()}}
    md = report(res, runs, msts)
    harness.write_report(a.out, harness.stem("gapbs", a.quick), md, res)
    print(md)
    return 0 if all(checks.values()) else 1


def _med(xs: list, key: str | None = None) -> float:
    return harness.median(xs, key) if xs else math.nan


def report(res: dict, runs: dict, msts: dict) -> str:
    m = res["machine"]
    mb = 2**20
    L = [f"# g2pl against GAPBS ({res['graph']}), one and two threads", "",
         f"n = {res['n']:,}, m = {res['m']:,}; BFS root {res['root']}. GAPBS {res['gapbs_commit'][:12]} "
         f"({res['gapbs']}). Medians of {res['repeat']} interleaved repeats. Machine: {harness.describe(m)}, "
         f"load average {m['loadavg']:.1f} at the start; commit {res['commit']}; compiled kernels: "
         f"{res['kernels']}. CC: programs/{res['cc_program']}.g2pl.", "",
         "| row | g2pl | GAPBS / SciPy | ratio |", "|---|---|---|---:|"]
    for algo in KERNELS:
        api, gap = runs[("api", algo)], runs[("gapbs1", algo)]
        w, gw = _med(api, "wall"), _med(gap, "wall")
        c, gc = _med(api, "cpu"), _med(gap, "cpu")
        L.append(f"| {TITLES[algo]}, 1 thread (`prog.run`) | {w:.4f} s (CPU {c:.4f}) | {KERNELS[algo]} {gw:.4f} s "
                 f"(CPU {gc:.4f}) | {w / gw:.2f}x (CPU {c / gc:.2f}x) |")
    gcli = runs[("cli", "gapbs")]
    for fmt in ("npz", "json"):
        r = runs[("cli", fmt)]
        L.append(f"| `g2pl run programs/bfs.g2pl --graph {res['graph']} --output out.{fmt}` | {_med(r, 'wall'):.2f} s, "
                 f"{_med(r, 'peak_rss') / mb:.0f} MiB | `bfs -g {res['scale']} -n 1` (1 thread) {_med(gcli, 'wall'):.2f} s, "
                 f"{_med(gcli, 'peak_rss') / mb:.0f} MiB | {_med(r, 'wall') / _med(gcli, 'wall'):.2f}x |")
    t, gt = _med(runs[("tc", "g2pl")]), _med(runs[("tc", "gapbs")])
    L.append(f"| triangles kron:{res['tc_scale']} (`time_s`) | {t:.4f} s ({res['triangles']:,} triangles) | "
             f"`tc -g {res['tc_scale']}` {gt:.4f} s | {t / gt:.2f}x |")
    for s in msts:
        t, st = _med(runs[("mst", s, "g2pl")]), _med(runs[("mst", s, "scipy")])
        L.append(f"| MST {s}, random weights (`time_s`) | {t:.4f} s | SciPy `minimum_spanning_tree` {st:.4f} s | "
                 f"{t / st:.2f}x |")
    for algo in KERNELS:
        r, gap = runs[("np2", algo)], runs[("gapbs2", algo)]
        ok = [x for x in r if "time_s" in x]
        ts, gt = _med(ok, "time_s"), _med(gap)
        L.append(f"| {TITLES[algo]}, 2 cores (`g2pl run --np 2`: `time_s`; process wall) | {ts:.4f} s; "
                 f"{_med(r, 'wall'):.2f} s | {KERNELS[algo]} OMP_NUM_THREADS=2 {gt:.4f} s | {ts / gt:.2f}x |")
    L += ["", "Checks: " + "; ".join(f"{k}: {'ok' if v else 'FAILED'}" for k, v in res["checks"].items()) + ".", "",
          "GAPBS times are its `Trial Time` (the kernel alone; CPU: one trial as the difference between runs "
          f"with {AK.TRIALS + 1} trials and 1). `prog.run` rows: the call's wall time on the loaded graph. "
          "End-to-end rows: the whole process (start-up, generating the graph, the run, writing the output) "
          "against GAPBS generating its own graph of the same scale, one thread each.", "", f"Command: `{res['command']}`"]
    return "\n".join(L) + "\n"


if __name__ == "__main__":
    sys.exit(main())
