"""CPU comparison: compiled G2PL programs vs hand-written NumPy/SciPy vs graph libraries.

For every graph (generated once, seeded, with `g2pl.load_graph`) and every
algorithm of programs/{bfs,pagerank,cc,sssp,matching}.g2pl this times

* the compiled program on 1 rank through the Python API (`prog.run(graph, args)`,
  reporting `res.stats["time_s"]`, which excludes loading and partitioning the
  graph and converting the result) and on N > 1 ranks through the command line
  (`g2pl run --np N --stats`, the stats' `time_s`);
* the hand-written NumPy/SciPy version (bench/handwritten.py), wall time of the call;
* SciPy csgraph, python-graphblas (1 and 2 threads), igraph, networkit (1 and 2
  threads) where they offer the algorithm (bench/libraries.py), wall time of
  the algorithm call only: building the library's graph is reported apart;
* NetworkX once per graph, in a subprocess with a time limit, on graphs of at
  most --nx-max-edges edges (it needs minutes and gigabytes beyond that).

All runs of one graph are interleaved (repeat r runs every implementation of
every algorithm once, in an order rotated per repeat) because the machine is
shared and noisy; the report gives medians. Every implementation's first
answer is checked against the compiled program's (exactly; PageRank within
1e-12 relative; libraries that compute something legitimately different, such
as a converged PageRank or another maximal matching, say how it differs).

It also runs greedy maximal matching on --matching-graph in one process end to
end (`g2pl run`, np=1) and reports the stats' `time_s` and the peak memory
(ru_maxrss) of that process.

    python bench/compare.py [--graphs kron:16,kron:18,kron:20,ws:1000000:20:0.5] [--repeat 5] [--quick] [--np 1,2]
    python bench/compare.py --baseline REV [--graphs kron:18,kron:20] [--repeat 7]   (old vs new: bench/baseline.py)

Output: a table on stdout and bench/results/compare.{json,md,png}
(compare_quick.* with --quick), each naming the machine and git commit.
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "passive")  # before graphblas / networkit load OpenMP

import handwritten as H  # noqa: E402
import harness  # noqa: E402
import libraries as LIB  # noqa: E402
import numpy as np  # noqa: E402

BENCH, ROOT = harness.BENCH, harness.ROOT
GRAPHS = "kron:16,kron:18,kron:20,ws:1000000:20:0.5"
QUICK_GRAPHS = "kron:12,ws:20000:10:0.3"
ALGOS = ("bfs", "pagerank", "cc", "sssp", "matching")
TITLES = {"bfs": "BFS", "pagerank": "PageRank (20 it.)", "cc": "CC", "sssp": "SSSP", "matching": "Matching"}
ITERS, DAMPING = 20, 0.85
HAND = "hand-written"
NX = "networkx"
#: the modules whose versions a report lists
VERSIONS = ("numpy", "scipy", "graphblas", "igraph", "networkit", "networkx", "mpi4py")


def compiled_name(np_: int) -> str:
    return f"g2pl np={np_}"


# --------------------------------------------------------------------------- runners


class Compiled:
    """The compiled program on one rank, in this process."""

    def __init__(self, progs: dict) -> None:
        self.progs = progs

    def run(self, algo: str, g, root: int) -> tuple[float, object, dict]:
        res = self.progs[algo].run(g, H.program_args(algo, g, root, ITERS, DAMPING))
        return float(res.stats["time_s"]), res, res.stats


def cli_run(algo: str, spec: str, seed: int, g, root: int, np_: int, want_output: bool,
            timeout: float) -> tuple[float, object, dict]:
    """`g2pl run --np N --stats` in a subprocess; the stats' time_s (and the answer when asked)."""
    with tempfile.TemporaryDirectory() as d:
        stats = Path(d) / "stats.json"
        out = Path(d) / "out.json"
        cmd = harness.g2pl_command() + ["run", str(ROOT / H.PROGRAMS[algo]), "--graph", spec, "--seed",
                                        str(seed), "--np", str(np_), "--stats", str(stats), "--quiet"]
        for k, v in H.program_args(algo, g, root, ITERS, DAMPING).items():
            cmd += ["--arg", f"{k}={v}"]
        if want_output:
            cmd += ["--output", str(out)]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=str(ROOT))
        if r.returncode != 0:
            raise RuntimeError(f"exit {r.returncode}: {(r.stderr or r.stdout).strip()[-400:]}")
        s = json.loads(stats.read_text())
        res = None
        if want_output:
            import g2pl

            o = json.loads(out.read_text())
            res = g2pl.Result(o["entry"], o["values"], s)
        return float(s["time_s"]), res, s


# --------------------------------------------------------------------------- one graph


def bench_graph(spec: str, a, progs: dict, libs: dict, log) -> dict:
    import g2pl

    t0 = time.perf_counter()
    g = g2pl.load_graph(spec, seed=a.seed)
    load_s = time.perf_counter() - t0
    root = H.pick_root(g, a.seed)
    log(f"\n== {spec}: n={g.n} m={g.m} (loaded in {load_s:.1f} s), root {int(g.ids[root])} "
        f"(degree {int(g.out_indptr[root + 1] - g.out_indptr[root])})")
    out: dict = {"graph": spec, "n": g.n, "m": g.m, "root": int(g.ids[root]), "load_s": load_s,
                 "loadavg_start": os.getloadavg()[0],
                 "prepare_s": {}, "times": {}, "check": {}, "notes": {}, "errors": {}, "supersteps": {}}
    compiled = Compiled(progs)

    # Library graphs, built once (not timed as part of any algorithm).
    built = {}
    for name, cls in libs.items():
        try:
            dt, obj = harness.timed(cls, g)
            built[name] = obj
            out["prepare_s"][name] = dt
            log(f"   {name}: graph built in {dt:.2f} s")
        except Exception as e:  # noqa: BLE001 - a library failing is recorded, not fatal
            out["errors"][f"{name} (build)"] = [f"{type(e).__name__}: {e}"]
            log(f"   {name}: build FAILED {e}")

    # The runs of one repeat: (implementation, algorithm) -> thunk returning (seconds, answer-or-None).
    impls: list[tuple[str, str]] = []
    for algo in a.algos:
        for np_ in a.np:
            impls.append((compiled_name(np_), algo))
        impls.append((HAND, algo))
        for name, lib in built.items():
            if algo in lib.algos:
                for t in lib.threads:
                    impls.append((f"{name} {t}t" if len(lib.threads) > 1 else name, algo))
    refs: dict[str, np.ndarray] = {}
    early: dict[str, list] = {}

    def run_one(impl: str, algo: str, first: bool) -> tuple[float, np.ndarray | None, dict | None]:
        if impl.startswith("g2pl np="):
            np_ = int(impl.split("=")[1])
            if np_ == 1:
                t, res, st = compiled.run(algo, g, root)
            else:
                t, res, st = cli_run(algo, spec, a.seed, g, root, np_, first, a.timeout)
            ans = H.compiled_answer(res, g) if (first and res is not None) else None
            return t, ans, st
        if impl == HAND:
            t, ans = harness.timed(H.run_handwritten, algo, g, root, ITERS, DAMPING)
            return t, ans, None
        name, _, th = impl.partition(" ")
        lib = built[name]
        lib.set_threads(int(th[:-1]) if th else 1)
        t, raw = harness.timed(LIB.call, lib, algo, root, ITERS, DAMPING)
        return t, (lib.answer(algo, raw) if first else None), None

    def check(impl: str, algo: str, ans: np.ndarray) -> None:
        ref = refs.get(algo)
        if ref is None:
            return
        name = impl.split(" ")[0]
        exact = not (name in built and algo in built[name].inexact)
        try:
            # Hand-written and compiled: the same sums in the same grouping (1e-12); libraries: 1e-9.
            rtol = 1e-12 if (impl == HAND or impl.startswith("g2pl")) else 1e-9
            ok, msg = LIB.compare_answer(algo, ans, ref, g, exact=exact, rtol=rtol)
        except Exception as e:  # noqa: BLE001
            ok, msg = False, f"check failed: {type(e).__name__}: {e}"
        out["check"].setdefault(algo, {})[impl] = {"ok": bool(ok), "msg": msg}
        if not ok:
            log(f"   CHECK FAILED {impl} {algo}: {msg}")

    times = out["times"]
    for r in range(a.repeat):
        for algo in a.algos:
            group = [i for i in impls if i[1] == algo]
            order = harness.rotated(group, r)
            # The compiled np=1 run gives the reference answer: on the first repeat run it first.
            if r == 0:
                order.sort(key=lambda x: x[0] != compiled_name(1))
            done = set()
            for impl, _ in order:
                gc.collect()
                # The answer is taken (and checked) on the first run that succeeds.
                first = impl not in out["check"].get(algo, {}) and not (impl == compiled_name(1) and algo in refs)
                try:
                    t, ans, st = run_one(impl, algo, first)
                except Exception as e:  # noqa: BLE001 - recorded per run; later repeats still try
                    msg = f"{type(e).__name__}: {str(e).strip()[-300:]}"
                    out["errors"].setdefault(f"{impl}/{algo}", []).append(f"repeat {r + 1}: {msg}")
                    log(f"   {impl} {algo}: FAILED {msg}")
                    continue
                done.add(impl)
                times.setdefault(algo, {}).setdefault(impl, []).append(t)
                if st is not None:
                    out["supersteps"].setdefault(algo, {})[impl] = st.get("supersteps")
                if ans is not None:
                    if impl == compiled_name(1):
                        refs[algo] = ans
                        for i, x in early.pop(algo, []):
                            check(i, algo, x)
                    elif algo in refs:
                        check(impl, algo, ans)
                    else:
                        early.setdefault(algo, []).append((impl, ans))  # checked once the reference exists
                del ans
            row = "  ".join(f"{i}={times[algo][i][-1]:.3f}" for i, _ in group if i in done)
            log(f"   [{r + 1}/{a.repeat}] {algo}: {row}")
    for name, lib in built.items():
        for algo in lib.algos:
            if algo in lib.notes:
                out["notes"][f"{name}/{algo}"] = lib.notes[algo]
    built.clear()
    gc.collect()

    # NetworkX: once, in a subprocess with a time limit, on graphs that are not too big.
    if "networkx" in a.libs:
        if g.m > a.nx_max_edges:
            out["notes"]["networkx"] = f"not run: {g.m} edges > --nx-max-edges {a.nx_max_edges}"
            log(f"   networkx: skipped ({g.m} edges > {a.nx_max_edges})")
        else:
            run_networkx(spec, a, g, root, refs, out, log)
    out["median"] = {algo: harness.medians(d) for algo, d in times.items()}
    out["loadavg_end"] = os.getloadavg()[0]
    return out


def run_networkx(spec: str, a, g, root: int, refs: dict, out: dict, log) -> None:
    with tempfile.TemporaryDirectory() as d:
        npz = Path(d) / "nx.npz"
        cmd = [sys.executable, str(BENCH / "libraries.py"), "networkx", "--graph", spec, "--seed", str(a.seed),
               "--root", str(root), "--algos", ",".join(a.algos), "--out", str(npz)]
        log(f"   networkx: running once (limit {a.nx_timeout:.0f} s)")
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=a.nx_timeout, cwd=str(ROOT))
            stdout, err = r.stdout, (None if r.returncode == 0 else f"exit {r.returncode}: {r.stderr.strip()[-300:]}")
        except subprocess.TimeoutExpired as e:
            stdout = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
            err = f"time limit of {a.nx_timeout:.0f} s reached"
        for line in stdout.splitlines():
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            out["times"].setdefault(rec["algo"], {})[NX] = [rec["time_s"]]
            log(f"   networkx {rec['algo']}: {rec['time_s']:.3f} s")
        if err:
            out["errors"][NX] = [err]
            log(f"   networkx: {err}")
        out["notes"]["networkx"] = "one run (no repeats), in a subprocess"
        out["notes"]["networkx/pagerank"] = "nx.pagerank to tol 1e-6 (not a fixed 20 iterations)"
        out["notes"]["networkx/matching"] = "nx.maximal_matching: a maximal matching, not the same one"
        if npz.exists():
            z = np.load(npz)
            for algo in z.files:
                if algo in refs:
                    ok, msg = LIB.compare_answer(algo, z[algo], refs[algo], g,
                                                 exact=algo not in ("pagerank", "matching"))
                    out["check"].setdefault(algo, {})[NX] = {"ok": bool(ok), "msg": msg}


# --------------------------------------------------------------------------- matching end to end


def matching_end_to_end(spec: str, a, log) -> dict:
    """`g2pl run programs/matching.g2pl` (one process) on `spec`: time_s, wall, peak RSS per run."""
    runs = []
    for _ in range(a.matching_runs):
        with tempfile.TemporaryDirectory() as d:
            stats = Path(d) / "stats.json"
            cmd = harness.g2pl_command() + ["run", str(ROOT / "programs" / "matching.g2pl"), "--graph", spec,
                                            "--seed", str(a.seed), "--stats", str(stats), "--quiet"]
            r = harness.run_child(cmd)
            if r["rc"] != 0:
                log(f"   matching end to end FAILED: {r['out'].strip()[-300:]}")
                return {"graph": spec, "error": r["out"].strip()[-300:], "cmd": r["cmd"]}
            s = json.loads(stats.read_text())
            rss = r["peak_rss"] / 2**20
            runs.append({"time_s": s["time_s"], "load_time_s": s.get("load_time_s"), "wall_s": r["wall_s"],
                         "loadavg": os.getloadavg()[0], "max_rss_mib": rss, "supersteps": s["supersteps"]})
            log(f"   matching {spec}: time_s {s['time_s']:.2f} s, process wall {r['wall_s']:.2f} s, "
                f"peak RSS {rss:.0f} MiB")
    shown = f"g2pl run programs/matching.g2pl --graph {spec} --seed {a.seed} --stats STATS.json --quiet"
    return {"graph": spec, "cmd": shown, "runs": runs,
            "time_s": harness.median(runs, "time_s"), "wall_s": harness.median(runs, "wall_s"),
            "max_rss_mib": max(r["max_rss_mib"] for r in runs)}


# --------------------------------------------------------------------------- ratios, targets, report


def ratios(res: dict, nps: list[int]) -> dict:
    c1 = compiled_name(1)
    c2 = compiled_name(max(nps)) if max(nps) > 1 else None
    out = {"compiled_over_handwritten": {}, "compiled_np2_over_graphblas_2t": {}, "networkx_over_compiled": {},
           "networkx_over_compiled_np2": {}}
    for gr in res["graphs"]:
        med = gr["median"]
        spec = gr["graph"]
        d = {}
        for algo, m in med.items():
            if c1 in m and HAND in m:
                d[algo] = m[c1] / m[HAND]
        out["compiled_over_handwritten"][spec] = d
        if c2:
            d = {}
            for algo in ("bfs", "pagerank", "cc"):
                m = med.get(algo, {})
                if c2 in m and "graphblas 2t" in m:
                    d[algo] = m[c2] / m["graphblas 2t"]
            if d:
                d["geomean"] = harness.geomean(list(d.values()))
            out["compiled_np2_over_graphblas_2t"][spec] = d
        for key, c in (("networkx_over_compiled", c1), ("networkx_over_compiled_np2", c2)):
            d = {algo: m[NX] / m[c] for algo, m in med.items() if c and NX in m and c in m}
            if d:
                out[key][spec] = d
    return out


def targets(res: dict) -> list[dict]:
    rat = res["ratios"]
    rows = []
    ch = {s: d for s, d in rat["compiled_over_handwritten"].items() if s in ("kron:18", "kron:20")}
    vals = [(v, f"{a} @ {s}") for s, d in ch.items() for a, v in d.items()]
    if vals:
        worst = max(vals)
        rows.append({"target": "compiled / hand-written <= 1.10 on every algorithm at kron:18 and kron:20",
                     "met": all(v <= 1.10 for v, _ in vals),
                     "value": f"worst {worst[0]:.2f} ({worst[1]}); best {min(vals)[0]:.2f} ({min(vals)[1]})"})
    gm = {s: d["geomean"] for s, d in rat["compiled_np2_over_graphblas_2t"].items() if "geomean" in d}
    if gm:
        rows.append({"target": "compiled 2 ranks / graphblas 2 threads, geometric mean over BFS, PageRank, CC <= 1.0",
                     "met": all(v <= 1.0 for v in gm.values()),
                     "value": ", ".join(f"{s}: {v:.2f}" for s, v in gm.items())})
    for key, target in (("networkx_over_compiled", "NetworkX / compiled >= 100x"),
                        ("networkx_over_compiled_np2", "(the same with the compiled program on 2 ranks)")):
        nx = [(v, f"{a} @ {s}") for s, d in rat.get(key, {}).items() for a, v in d.items()]
        if nx:
            lo, hi = min(nx), max(nx)
            rows.append({"target": target, "met": all(v >= 100 for v, _ in nx),
                         "value": f"lowest {lo[0]:.1f}x ({lo[1]}); highest {hi[0]:.1f}x ({hi[1]})"})
    mt = res.get("matching_end_to_end")
    if mt and "time_s" in mt:
        rows.append({"target": f"matching {mt['graph']} <= 5 s (one process, stats time_s)",
                     "met": mt["time_s"] <= 5.0,
                     "value": f"{mt['time_s']:.2f} s (process wall {mt['wall_s']:.2f} s incl. graph generation, "
                              f"peak RSS {mt['max_rss_mib']:.0f} MiB)"})
    return rows


def fmt(t: float | None) -> str:
    if t is None:
        return "-"
    if t >= 100:
        return f"{t:.0f}"
    if t >= 1:
        return f"{t:.2f}"
    return f"{t:.3f}"


def report(res: dict) -> str:
    a = res["args"]
    mc = res["machine"]
    L = []
    L.append(f"# CPU comparison: compiled G2PL vs hand-written NumPy/SciPy vs libraries{' (quick)' if a['quick'] else ''}")
    L.append("")
    L.append(f"Machine: {harness.describe(mc)}.  ")
    commit = res["commit"] + (f" (at the end: {res['commit_end']})" if res.get("commit_end", res["commit"]) != res["commit"] else "")
    L.append(f"g2pl commit {commit}, {res['date']}; seed {a['seed']}, median of {a['repeat']} interleaved runs "
             f"(NetworkX: one run).  ")
    L.append(f"Command: `{res['command']}`")
    L.append("")
    L.append("Times in seconds (median). `g2pl np=1`: `prog.run(graph, args)`, `stats['time_s']` (no graph "
             "loading/partitioning, no result conversion; with the default `renumber=\"auto\"`, which orders "
             "the vertices of skewed-degree graphs such as kron by degree while partitioning); "
             "`g2pl np=N`: `g2pl run --np N --stats`, `time_s`; "
             "others: the algorithm call only (library graph built beforehand). "
             "A mark after a time: `*` the answer differs in kind (see notes), `!` the check against the compiled "
             "answer FAILED.")
    if res.get("malloc_tuned"):
        L.append("")
        L.append("Every implementation in the benchmark process runs with the glibc allocator setting g2pl applies "
                 "when it runs a program (`g2pl/runtime/alloc.py`: freed large blocks stay in the process), "
                 "set before the first measurement, so no side gets it and the other not.")
    for gr in res["graphs"]:
        L.append("")
        L.append(f"## {gr['graph']} (n = {gr['n']:,}, m = {gr['m']:,}, root {gr['root']})")
        L.append("")
        if "loadavg_start" in gr:
            L.append(f"1-minute load average (machine-wide, {res['machine']['nproc']} cores) at the start / end of "
                     f"this graph: {gr['loadavg_start']:.1f} / {gr['loadavg_end']:.1f}.")
            L.append("")
        impls: list[str] = []
        for algo in ALGOS:
            for i in gr["median"].get(algo, {}):
                if i not in impls:
                    impls.append(i)
        L.append("| algorithm | " + " | ".join(impls) + " |")
        L.append("|---|" + "---:|" * len(impls))
        for algo in ALGOS:
            if algo not in gr["median"]:
                continue
            cells = []
            for i in impls:
                t = gr["median"][algo].get(i)
                c = gr["check"].get(algo, {}).get(i)
                mark = ""
                if c is not None and not c["ok"]:
                    mark = " !"
                elif c is not None and not c["msg"].startswith(("identical", "max relative")):
                    mark = " *"
                cells.append(fmt(t) + mark if t is not None else "-")
            L.append(f"| {TITLES[algo]} | " + " | ".join(cells) + " |")
        if gr["prepare_s"]:
            L.append("")
            L.append("Library graph build (not in the times above): " +
                     ", ".join(f"{k} {v:.2f} s" for k, v in gr["prepare_s"].items()) +
                     f"; g2pl.load_graph {gr['load_s']:.2f} s.")
        if gr["errors"]:
            L.append("")
            L.append("Failed runs (not in the medians):")
            L.append("")
            for k, v in gr["errors"].items():
                L.append(f"* {k}: {len(v)} failed run(s); first: {v[0].splitlines()[-1][:200]}")
    rat = res["ratios"]
    L.append("")
    L.append("## Ratios")
    L.append("")
    L.append("compiled (np=1) / hand-written, per algorithm (lower is better for g2pl; target <= 1.10):")
    L.append("")
    L.append("| graph | " + " | ".join(TITLES[x] for x in ALGOS) + " |")
    L.append("|---|" + "---:|" * len(ALGOS))
    for s, d in rat["compiled_over_handwritten"].items():
        L.append(f"| {s} | " + " | ".join(f"{d[x]:.2f}" if x in d else "-" for x in ALGOS) + " |")
    if rat["compiled_np2_over_graphblas_2t"]:
        L.append("")
        L.append("compiled (2 ranks) / python-graphblas (2 threads) (target: geometric mean <= 1.0):")
        L.append("")
        L.append("| graph | BFS | PageRank | CC | geometric mean |")
        L.append("|---|---:|---:|---:|---:|")
        for s, d in rat["compiled_np2_over_graphblas_2t"].items():
            L.append(f"| {s} | " + " | ".join(f"{d[x]:.2f}" if x in d else "-"
                                               for x in ("bfs", "pagerank", "cc", "geomean")) + " |")
    for key, which in (("networkx_over_compiled", "np=1"), ("networkx_over_compiled_np2", "2 ranks")):
        if not rat.get(key):
            continue
        L.append("")
        L.append(f"NetworkX / compiled ({which}) (target >= 100x; NetworkX: one run):")
        L.append("")
        L.append("| graph | " + " | ".join(TITLES[x] for x in ALGOS) + " |")
        L.append("|---|" + "---:|" * len(ALGOS))
        for s, d in rat[key].items():
            L.append(f"| {s} | " + " | ".join(f"{d[x]:.1f}x" if x in d else "-" for x in ALGOS) + " |")
    mt = res.get("matching_end_to_end")
    if mt:
        L.append("")
        L.append(f"## Matching on {mt['graph']}, one process, end to end")
        L.append("")
        if "error" in mt:
            L.append(f"FAILED: {mt['error']}")
        else:
            L.append("| run | stats time_s | load_time_s | process wall (incl. generation) | peak RSS | supersteps "
                     "| load average |")
            L.append("|---:|---:|---:|---:|---:|---:|---:|")
            for k, r in enumerate(mt["runs"], 1):
                la = f"{r['loadavg']:.1f}" if "loadavg" in r else "-"
                L.append(f"| {k} | {r['time_s']:.2f} | {r['load_time_s']:.2f} | {r['wall_s']:.2f} | "
                         f"{r['max_rss_mib']:.0f} MiB | {r['supersteps']} | {la} |")
            L.append("")
            L.append(f"Command: `{mt['cmd']}`")
    L.append("")
    L.append("## Targets")
    L.append("")
    L.append("| target | met | measured |")
    L.append("|---|---|---|")
    for t in res["targets"]:
        L.append(f"| {t['target']} | {'yes' if t['met'] else '**no**'} | {t['value']} |")
    notes = {}
    for gr in res["graphs"]:
        for k, v in gr["notes"].items():
            if not v.startswith("not run"):
                notes.setdefault(k, v)
            else:
                notes[f"{k} @ {gr['graph']}"] = v
    checks = []
    for gr in res["graphs"]:
        for algo, d in gr["check"].items():
            for i, c in d.items():
                if not c["ok"] or not c["msg"].startswith(("identical", "max relative")):
                    checks.append(f"{gr['graph']} {i} {algo}: {c['msg']}{'' if c['ok'] else ' (FAILED)'}")
    if notes or checks or res.get("missing_libraries"):
        L.append("")
        L.append("## Notes")
        L.append("")
        for k, v in notes.items():
            L.append(f"* {k}: {v}")
        for k, v in res.get("missing_libraries", {}).items():
            L.append(f"* {k}: not available ({v})")
        for c in checks:
            L.append(f"* check: {c}")
    return "\n".join(L) + "\n"


def plot(res: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    algos = [x for x in ALGOS if any(x in gr["median"] for gr in res["graphs"])]
    ncols = min(3, len(algos) + 1)
    nrows = -(-(len(algos) + 1) // ncols)  # one spare panel for the legend
    fig, axes = plt.subplots(nrows, ncols, figsize=(5.2 * ncols, 4.2 * nrows), squeeze=False)
    panels = list(axes.flat)
    impls: list[str] = []
    for gr in res["graphs"]:
        for d in gr["median"].values():
            for i in d:
                if i not in impls:
                    impls.append(i)
    colors = {i: plt.get_cmap("tab20")(k % 20) for k, i in enumerate(impls)}
    graphs = [gr["graph"] for gr in res["graphs"]]
    for ax, algo in zip(panels, algos):
        present = [i for i in impls if any(i in gr["median"].get(algo, {}) for gr in res["graphs"])]
        width = 0.8 / max(len(present), 1)
        for k, i in enumerate(present):
            xs, ys = [], []
            for gi, gr in enumerate(res["graphs"]):
                t = gr["median"].get(algo, {}).get(i)
                if t is not None and t > 0:
                    xs.append(gi + (k - (len(present) - 1) / 2) * width)
                    ys.append(t)
            ax.bar(xs, ys, width=width, color=colors[i], label=i,
                   edgecolor="black" if i.startswith("g2pl") else None, linewidth=0.8)
        ax.set_yscale("log")
        ax.set_xticks(range(len(graphs)))
        ax.set_xticklabels(graphs, rotation=30, ha="right", fontsize=8)
        ax.set_title(TITLES[algo])
        ax.set_ylabel("seconds (median, log scale)")
        ax.grid(axis="y", which="both", alpha=0.3)
    for ax in panels[len(algos):]:
        ax.axis("off")
    handles = [plt.Rectangle((0, 0), 1, 1, facecolor=colors[i], edgecolor="black" if i.startswith("g2pl") else "none")
               for i in impls]
    panels[len(algos)].legend(handles, impls, loc="center", fontsize=10, title="implementation")
    fig.suptitle(f"g2pl vs hand-written vs libraries: {res['machine']['nproc']} cores, {res['machine']['cpu']}, "
                 f"commit {res['commit']} (median seconds, log scale)", fontsize=11)
    fig.tight_layout(rect=(0, 0, 1, 0.96))
    fig.savefig(path, dpi=110)
    plt.close(fig)


# --------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    ap = harness.parser(__doc__, quick=f"{QUICK_GRAPHS}, 2 repeats", seed=1)
    ap.add_argument("--graphs", default=None, help=f"comma-separated graph specs (default {GRAPHS})")
    ap.add_argument("--repeat", type=int, default=None, help="interleaved runs per implementation (default 5; 2 with --quick)")
    ap.add_argument("--np", default="1,2", help="rank counts for the compiled programs (1: Python API; >1: CLI)")
    ap.add_argument("--algos", default=",".join(ALGOS))
    ap.add_argument("--libs", default="scipy,graphblas,igraph,networkit,networkx")
    ap.add_argument("--nx-max-edges", type=int, default=5_000_000, help="run NetworkX only on graphs this small")
    ap.add_argument("--nx-timeout", type=float, default=1800.0, help="seconds for all NetworkX runs on one graph")
    ap.add_argument("--timeout", type=float, default=1800.0, help="seconds per `g2pl run --np N` run")
    ap.add_argument("--matching-graph", default=None, help="graph for the end-to-end matching run ('' to skip; "
                    "default ws:1000000:20:0.5, ws:20000:20:0.5 with --quick)")
    ap.add_argument("--matching-runs", type=int, default=3)
    ap.add_argument("--baseline", metavar="REV", default=None,
                    help="instead: the compiled programs of this checkout against those of git revision REV, "
                         "interleaved (bench/baseline.py; default graphs kron:18,kron:20, 7 repeats)")
    a = ap.parse_args(argv)
    if a.baseline is not None:
        import baseline

        return baseline.compare(a.baseline, (a.graphs or "kron:18,kron:20").split(","), a.repeat or 7, a.out)
    a.graphs = (a.graphs or (QUICK_GRAPHS if a.quick else GRAPHS)).split(",")
    a.repeat = a.repeat or (2 if a.quick else 5)
    a.np = sorted({int(x) for x in a.np.split(",")})
    a.algos = [x for x in a.algos.split(",") if x]
    bad = [x for x in a.algos if x not in ALGOS]
    if bad:
        ap.error(f"unknown algorithm(s) {bad}; expected {ALGOS}")
    a.libs = [x for x in a.libs.split(",") if x]
    if a.matching_graph is None:
        a.matching_graph = "ws:20000:20:0.5" if a.quick else "ws:1000000:20:0.5"
    stem = harness.stem("compare", a.quick)
    log = harness.log

    import g2pl

    available, missing = LIB.available()
    libs = {k: v for k, v in available.items() if k in a.libs}
    missing = {k: v for k, v in missing.items() if k in a.libs}
    if "networkx" in a.libs:
        try:
            import networkx  # noqa: F401
        except ImportError as e:
            missing["networkx"] = str(e)
            a.libs.remove("networkx")
    for k, v in missing.items():
        log(f"library {k} not available: {v}")
    from g2pl.graph import alloc

    malloc_tuned = alloc.tune()  # process-wide: in effect for the libraries and the hand-written code too
    progs = {algo: g2pl.compile_file(ROOT / H.PROGRAMS[algo]) for algo in a.algos}
    res = {"command": harness.command(__file__, argv), "commit": harness.git_commit(),
           "date": harness.now(), "machine": harness.machine(VERSIONS),
           "args": {"graphs": a.graphs, "repeat": a.repeat, "np": a.np, "algos": a.algos, "libs": a.libs,
                    "seed": a.seed, "quick": a.quick, "nx_max_edges": a.nx_max_edges},
           "missing_libraries": missing, "malloc_tuned": malloc_tuned, "graphs": []}
    log(f"machine: {res['machine']['nproc']} cores, {res['machine']['cpu']}; commit {res['commit']}")
    t_all = time.perf_counter()

    def save() -> None:
        res["ratios"] = ratios(res, a.np)
        res["targets"] = targets(res)
        harness.write_report(a.out, stem, report(res), res)

    for spec in a.graphs:
        res["graphs"].append(bench_graph(spec, a, progs, libs, log))
        save()  # partial results survive an interrupted run
    if a.matching_graph and "matching" in a.algos:
        log(f"\n== matching end to end on {a.matching_graph} ({a.matching_runs} runs)")
        res["matching_end_to_end"] = matching_end_to_end(a.matching_graph, a, log)
    res["total_s"] = time.perf_counter() - t_all
    res["commit_end"] = harness.git_commit()  # others may commit while this runs: both ends are recorded
    save()
    try:
        plot(res, a.out / f"{stem}.png")
    except Exception as e:  # noqa: BLE001 - the plot is a convenience
        log(f"plot failed: {type(e).__name__}: {e}")
    print("\n" + report(res))
    log(f"wrote {a.out / stem}.json, .md, .png in {res['total_s'] / 60:.1f} min")
    failed = any(not c["ok"] for gr in res["graphs"] for d in gr["check"].values() for c in d.values())
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
