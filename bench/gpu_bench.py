"""GPU benchmark: compiled programs on the NumPy vs the CuPy backend, and compiled-CuPy vs hand-written CuPy.

For each graph of `--graphs` (default kron:20, kron:22, kron:24; loaded once per graph) and each
algorithm of `--algos` (bfs, pagerank (20 iterations, damping 0.85), cc, sssp):

* the compiled program (`g2pl.compile_file(...).run(graph, args, backend=...)`) on backend numpy
  and on backend cupy: one warm-up run, then `--repeat` timed runs (numpy: `--numpy-repeat`,
  no warm-up when that is 1), the median of the stats' `time_s`;
* for bfs and pagerank, the hand-written CuPy versions of bench/handwritten_cupy.py (graph
  uploaded once; one warm-up, then `--repeat` runs timed with `cupy.cuda.Event`).

Per row: median time, rate (BFS: GTEPS as Graph500 counts them - undirected edges with an
endpoint in the reached component, each once, over the time; PageRank: G edges/s per
iteration, m / (time / 20)), device peak memory (the stats' device.peak_bytes, else the CuPy
memory pool's high-water), host syncs, host->device and device->host bytes ("n/a" where the
backend's stats do not say). Every CuPy answer is checked against the NumPy backend's (ints
exactly, floats within 1e-9 relative); a mismatch is marked in the table and makes the exit
status 1 (so does an implementation that raised). Output: `--out DIR`/gpu_bench.{json,md},
rewritten after every graph.

    python bench/gpu_bench.py --out bench/results/gpu                # on a machine with a GPU
    python bench/gpu_bench.py --dry-run --out /tmp/gb               # no GPU: kron:10, numpy only

`--dry-run` exercises the plumbing without a GPU: a tiny graph, the NumPy backend, and the
hand-written code run with numpy/scipy.sparse in place of cupy/cupyx (its answers still checked).
`--standin` runs the CuPy code paths (backend cupy, hand-written on cupy/cupyx, CUDA events, the
memory pool) over tests/strict_cupy, a strict NumPy stand-in for CuPy 14: plumbing only.
Without `--dry-run`, a missing CuPy or CUDA device is an exit-2 refusal saying so.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

ITERS = 20
DAMPING = 0.85
PROGRAMS = {a: ROOT / "programs" / f"{a}.g2pl" for a in ("bfs", "pagerank", "cc", "sssp")}
HANDWRITTEN = ("bfs", "pagerank")
NAMES = {"bfs": "BFS", "pagerank": f"PageRank ({ITERS} it.)", "cc": "CC", "sssp": "SSSP"}
MIB = float(1 << 20)


# --------------------------------------------------------------------------- environment


def refuse(msg: str) -> None:
    """Exit 2 with `msg` on stderr (a missing prerequisite, not a failed measurement)."""
    print(msg, file=sys.stderr, flush=True)
    sys.exit(2)


def need_gpu():
    """cupy with a usable CUDA device, or an exit-2 refusal naming what is missing."""
    try:
        import cupy
        import cupyx.scipy.sparse  # noqa: F401
    except Exception as e:  # ImportError, or a CUDA library that fails to load
        refuse(f"gpu_bench: CuPy is not usable here ({type(e).__name__}: {e}).\n"
                 "Install CuPy for the machine's CUDA (pip install -e '.[gpu-cuda13]' or '.[gpu]'), "
                 "or run with --dry-run to test this script without a GPU.")
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as e:
        refuse(f"gpu_bench: CuPy finds no CUDA device ({type(e).__name__}: {e}); "
                 "run on a machine with an NVIDIA GPU, or with --dry-run.")
    if count < 1:
        refuse("gpu_bench: CuPy finds no CUDA device; run on a machine with an NVIDIA GPU, or with --dry-run.")
    return cupy


def need_g2pl():
    try:
        import lark  # noqa: F401

        import g2pl
    except ImportError as e:
        refuse(f"gpu_bench: cannot import g2pl ({e}). It needs lark, jinja2, numpy and scipy; on a machine "
                 "without network carry their wheels (see bench/README.md, 'GPU check').")
    return g2pl


def git_commit() -> str:
    try:
        r = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                           text=True, timeout=10)
        dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return r.stdout.strip() + (" (+ uncommitted changes)" if dirty else "") if r.returncode == 0 else "n/a"
    except Exception:
        return "n/a"


def machine(cupy) -> dict:
    info = {"python": platform.python_version(), "numpy": np.__version__, "platform": platform.platform(),
            "nproc": os.cpu_count(), "commit": git_commit()}
    try:
        import scipy

        info["scipy"] = scipy.__version__
    except ImportError:
        pass
    if cupy is not None:
        info["cupy"] = getattr(cupy, "__version__", "n/a") + (" (stand-in)" if getattr(cupy, "_STANDIN", False) else "")
        try:
            props = cupy.cuda.runtime.getDeviceProperties(0)
            name = props["name"]
            info["gpu"] = name.decode() if isinstance(name, bytes) else str(name)
            info["gpu_memory_bytes"] = int(props.get("totalGlobalMem", 0))
            info["cuda_runtime"] = cupy.cuda.runtime.runtimeGetVersion()
            info["cuda_driver"] = cupy.cuda.runtime.driverGetVersion()
        except Exception as e:
            info["gpu"] = f"n/a ({e})"
    return info


# --------------------------------------------------------------------------- measuring


def dig(d, *keys):
    """d[k0][k1]... or None where any level is missing (stats keys are read defensively)."""
    for k in keys:
        if not isinstance(d, dict) or k not in d:
            return None
        d = d[k]
    return d


def compare(got: np.ndarray, want: np.ndarray) -> str:
    """'ok', or what differs: ints/bools exactly, floats within 1e-9 relative (inf == inf)."""
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        return f"MISMATCH: shape {got.shape} vs {want.shape}"
    if want.dtype.kind == "f" or got.dtype.kind == "f":
        g, w = got.astype(np.float64), want.astype(np.float64)
        fin = np.isfinite(w)
        if not np.array_equal(np.isfinite(g), fin) or not np.array_equal(g[~fin], w[~fin]):
            return f"MISMATCH: {int(np.count_nonzero(np.isfinite(g) != fin))} non-finite entries differ"
        if not fin.any():
            return "ok"
        rel = np.abs(g[fin] - w[fin]) / np.maximum(np.abs(w[fin]), 1e-300)
        worst = float(rel.max())
        return "ok" if worst <= 1e-9 else f"MISMATCH: max relative difference {worst:.2e}"
    bad = int(np.count_nonzero(got != want))
    return "ok" if bad == 0 else f"MISMATCH: {bad} of {want.size} entries differ"


class Pool:
    """The CuPy memory pool's high-water over a block of work (None without CuPy)."""

    def __init__(self, cupy) -> None:
        self.pool = cupy.get_default_memory_pool() if cupy is not None else None

    def start(self) -> None:
        self.base = 0
        if self.pool is not None:
            self.pool.free_all_blocks()
            self.base = int(self.pool.used_bytes())  # arrays still alive from before

    def total(self) -> int | None:
        return int(self.pool.total_bytes()) if self.pool is not None else None

    def high_water(self) -> int | None:
        # The pool keeps every block it got from the driver until free_all_blocks(), so its total
        # after the runs is the most that was held at once since start() (plus fragmentation).
        return int(self.pool.total_bytes()) - self.base if self.pool is not None else None


def rate(algo: str, t: float | None, m_reached: int, m: int) -> float | None:
    if not t or t <= 0:
        return None
    if algo == "bfs":
        return m_reached / t / 1e9  # GTEPS
    if algo == "pagerank":
        return m / (t / ITERS) / 1e9  # G edges / s per iteration
    return None


def run_compiled(prog, g, args: dict, backend: str, warmup: bool, repeat: int, seed: int, pool: Pool,
                 cupy) -> tuple[dict, object]:
    """Median `time_s` of `repeat` runs (after one warm-up when asked) and the last result."""
    pool.start()
    if warmup:
        prog.run(g, args=args, backend=backend, seed=seed)
    times, res = [], None
    for _ in range(repeat):
        res = prog.run(g, args=args, backend=backend, seed=seed)
        times.append(float(res.stats["time_s"]))
    st = res.stats
    steps = st.get("per_superstep") or []
    step_t = [s.get("time_s") for s in steps if isinstance(s, dict) and s.get("time_s") is not None]
    row = {"time_s": statistics.median(times), "times_s": times,
           "supersteps": st.get("supersteps", len(steps) or None),
           "superstep_time_sum_s": float(sum(step_t)) if step_t else None,
           "backend_reported": st.get("backend"),
           "peak_bytes": dig(st, "device", "peak_bytes"),
           "pool_high_water_bytes": pool.high_water() if backend == "cupy" else None,
           "pool_total_bytes": pool.total() if backend == "cupy" else None,
           "syncs": dig(st, "device", "syncs"), "h2d_bytes": dig(st, "device", "h2d_bytes"),
           "d2h_bytes": dig(st, "device", "d2h_bytes"), "device_name": dig(st, "device", "name")}
    return row, res


def run_handwritten(HC, dg, algo: str, root: int, repeat: int, cupy) -> tuple[dict, np.ndarray]:
    """Median time of `repeat` runs after one warm-up: CUDA events on a GPU, perf_counter on a CPU."""

    def call():
        return HC.bfs(dg, root) if algo == "bfs" else HC.pagerank(dg, ITERS, DAMPING)

    call()  # warm-up: kernels compiled, pool blocks allocated
    times, syncs, out = [], [], None
    for _ in range(repeat):
        s0 = dg.syncs
        if cupy is not None:
            start, end = cupy.cuda.Event(), cupy.cuda.Event()
            start.record()
            out = call()
            end.record()
            end.synchronize()
            times.append(cupy.cuda.get_elapsed_time(start, end) / 1e3)
        else:
            t0 = time.perf_counter()
            out = call()
            times.append(time.perf_counter() - t0)
        syncs.append(dg.syncs - s0)
    row = {"time_s": statistics.median(times), "times_s": times, "syncs": syncs[-1],
           "h2d_bytes": 0, "d2h_bytes": None, "upload_bytes": dg.h2d_bytes}
    return row, HC.to_host(out)


# --------------------------------------------------------------------------- one graph


def bench_graph(spec: str, a, progs: dict, cupy, log, t_start: float) -> dict:
    import handwritten as H
    import handwritten_cupy as HC

    import g2pl

    t0 = time.perf_counter()
    g = g2pl.load_graph(spec, seed=a.seed)
    load_s = time.perf_counter() - t0
    root = H.pick_root(g, a.seed)
    log(f"\n== {spec}: n={g.n:,} m={g.m:,} (loaded in {load_s:.1f} s), root {int(g.ids[root])}")
    out: dict = {"graph": spec, "n": g.n, "m": g.m, "root": int(g.ids[root]), "load_s": load_s, "rows": [],
                 "notes": []}
    pool = Pool(cupy)
    backends = ["numpy"] if a.dry_run else ["numpy", "cupy"]
    for algo in a.algos:
        if a.time_budget and time.perf_counter() - t_start > a.time_budget:
            out["notes"].append(f"{algo}: skipped, time budget of {a.time_budget:.0f} s spent")
            log(f"   {algo}: skipped (time budget)")
            continue
        args = H.program_args(algo, g, root, ITERS, DAMPING)
        ref = None
        m_reached = g.m
        for backend in backends:
            row = {"graph": spec, "algo": algo, "impl": f"compiled {backend}"}
            try:
                nrep = a.numpy_repeat if backend == "numpy" else a.repeat
                warm = backend == "cupy" or nrep > 1
                r, res = run_compiled(progs[algo], g, args, backend, warm, nrep, a.seed, pool, cupy)
                row.update(r)
                ans = res.array(res.values[0]["name"], g)
                if backend == "numpy":
                    ref = ans
                    row["check"] = "reference"
                    if algo == "bfs":
                        reached = ans >= 0
                        m_reached = int(np.count_nonzero(reached[g.src] | reached[g.dst]))
                else:
                    row["check"] = compare(ans, ref) if ref is not None else "n/a (no numpy answer)"
            except Exception as e:  # recorded, not raised: the other rows still run
                row["error"] = f"{type(e).__name__}: {e}"
                row["check"] = "ERROR"
            out["rows"].append(row)
            log(fmt_row(row))
        if algo in HANDWRITTEN and not a.no_handwritten:
            row = {"graph": spec, "algo": algo, "impl": "hand-written " + ("numpy" if a.dry_run else "cupy")}
            dg = None
            try:
                # Uploaded per algorithm so that the pool's high-water covers this algorithm alone.
                xp, sp = HC.modules("numpy" if a.dry_run else "cupy")
                pool.start()
                t1 = time.perf_counter()
                dg = HC.CSRGraph(g, xp, sp)
                if cupy is not None:
                    cupy.cuda.Device().synchronize()
                out["handwritten_upload_s"] = time.perf_counter() - t1
                out["handwritten_upload_bytes"] = dg.h2d_bytes
                r, ans = run_handwritten(HC, dg, algo, root, a.repeat, cupy)
                r["pool_high_water_bytes"] = pool.high_water()
                r["pool_total_bytes"] = pool.total()
                row.update(r)
                row["check"] = compare(ans, ref) if ref is not None else "n/a (no numpy answer)"
            except Exception as e:
                row["error"] = f"{type(e).__name__}: {e}"
                row["check"] = "ERROR"
            del dg
            pool.start()
            out["rows"].append(row)
            log(fmt_row(row))
        for row in out["rows"]:
            if row["algo"] == algo:
                row["rate"] = rate(algo, row.get("time_s"), m_reached, g.m)
        if algo == "bfs":
            out["bfs_edges_counted"] = m_reached
    return out


# --------------------------------------------------------------------------- report


def f_time(t) -> str:
    if t is None:
        return "n/a"
    return f"{t * 1e3:.2f} ms" if t < 1 else f"{t:.3f} s"


def f_bytes(b) -> str:
    return "n/a" if b is None else f"{b / MIB:,.2f}"


def f_num(x, spec: str = ".3g") -> str:
    return "n/a" if x is None else format(x, spec)


def peak(row: dict):
    p = row.get("peak_bytes")
    return p if p is not None else row.get("pool_high_water_bytes")


def fmt_row(row: dict) -> str:
    if "error" in row:
        return f"   {row['algo']:9s} {row['impl']:22s} ERROR {row['error'][:300]}"
    return (f"   {row['algo']:9s} {row['impl']:22s} {f_time(row.get('time_s')):>10s}  syncs {f_num(row.get('syncs'), '')}"
            f"  peak {f_bytes(peak(row))} MiB  check {row.get('check')}")


def rate_unit(algo: str) -> str:
    return {"bfs": "GTEPS", "pagerank": "GE/s/it"}.get(algo, "")


def report(res: dict) -> str:
    m = res["machine"]
    L = ["# GPU benchmark: compiled G2PL (NumPy vs CuPy backend) and hand-written CuPy", ""]
    L.append(f"Machine: GPU {m.get('gpu', 'n/a')}, {m.get('nproc')} CPU cores; {m.get('platform')}.  ")
    L.append(f"Versions: python {m.get('python')}, numpy {m.get('numpy')}, scipy {m.get('scipy', 'n/a')}, "
             f"cupy {m.get('cupy', 'n/a')}, CUDA runtime {m.get('cuda_runtime', 'n/a')}, "
             f"driver {m.get('cuda_driver', 'n/a')}.  ")
    L.append(f"g2pl commit {m.get('commit')}, {res['started']}; seed {res['seed']}; "
             f"median of {res['repeat']} timed runs after one warm-up (NumPy backend: {res['numpy_repeat']} "
             f"run(s){', no warm-up' if res['numpy_repeat'] == 1 else ''}).  ")
    L.append(f"Command: `{res['command']}`" + ("  \n**DRY RUN**: NumPy only, hand-written code on numpy/scipy."
                                              if res["dry_run"] else ""))
    if res.get("standin"):
        L[-1] += ("  \n**STAND-IN**: `cupy` is tests/strict_cupy (NumPy underneath): a plumbing test, the times "
                   "say nothing about a GPU.")
    L.append("")
    L.append("Compiled: `stats['time_s']` of `prog.run(graph, args, backend=...)`. Hand-written: "
             "bench/handwritten_cupy.py, timed with CUDA events (graph uploaded beforehand). Rate: BFS in "
             "GTEPS (Graph500: edges with an endpoint in the reached component, each once), PageRank in G "
             "edges/s per iteration (m / (time / 20)). Peak: the stats' `device.peak_bytes`, else the CuPy "
             "pool's high-water over the runs beyond what it held before them (marked `p`; a graph a backend "
             "cached on the device for an earlier algorithm is not counted again; the JSON has the pool's "
             "total too). Check: against the NumPy backend's answer (ints exact, floats "
             "1e-9 relative).")
    for gr in res["graphs"]:
        L += ["", f"## {gr['graph']} (n = {gr['n']:,}, m = {gr['m']:,}, root {gr['root']}; "
                  f"loaded in {gr['load_s']:.1f} s)", ""]
        L.append("| algorithm | implementation | time (median) | rate | peak MiB | syncs | h2d MiB | d2h MiB "
                 "| supersteps | check |")
        L.append("|---|---|---:|---:|---:|---:|---:|---:|---:|---|")
        for r in gr["rows"]:
            if "error" in r:
                L.append(f"| {NAMES[r['algo']]} | {r['impl']} | ERROR | | | | | | | "
                         f"{r['error'][:160].replace('|', '/')} |")
                continue
            pk = f_bytes(peak(r)) + (" p" if r.get("peak_bytes") is None and peak(r) is not None else "")
            rt = f"{f_num(r.get('rate'))} {rate_unit(r['algo'])}" if r.get("rate") is not None else "-"
            h2d = r.get("h2d_bytes")
            if r["impl"].startswith("hand-written"):
                h2d_s = f"0 (+{f_bytes(r.get('upload_bytes'))} upload)"
            else:
                h2d_s = f_bytes(h2d)
            chk = r.get("check", "n/a")
            chk = f"**{chk}**" if chk.startswith(("MISMATCH", "ERROR")) else chk
            L.append(f"| {NAMES[r['algo']]} | {r['impl']} | {f_time(r.get('time_s'))} | {rt} | {pk} | "
                     f"{f_num(r.get('syncs'), '')} | {h2d_s} | {f_bytes(r.get('d2h_bytes'))} | "
                     f"{f_num(r.get('supersteps'), '')} | {chk} |")
        for note in gr.get("notes", []):
            L.append(f"\nNote: {note}")
    # ratios
    L += ["", "## Ratios", "", "| graph | algorithm | numpy / cupy backend (speed-up) | compiled cupy / hand-written "
          "(lower is better) |", "|---|---|---:|---:|"]
    for gr in res["graphs"]:
        by = {(r["algo"], r["impl"]): r.get("time_s") for r in gr["rows"] if "error" not in r}
        for algo in dict.fromkeys(r["algo"] for r in gr["rows"]):
            tn, tc = by.get((algo, "compiled numpy")), by.get((algo, "compiled cupy"))
            th = by.get((algo, "hand-written cupy"))
            sp_ = f"{tn / tc:.1f}x" if tn and tc else "n/a"
            hw = f"{tc / th:.2f}" if tc and th else "n/a"
            L.append(f"| {gr['graph']} | {NAMES[algo]} | {sp_} | {hw} |")
    bad = res.get("failures", [])
    L += ["", f"Failures: {len(bad)}" + ("" if not bad else ": " + "; ".join(bad))]
    return "\n".join(L) + "\n"


# --------------------------------------------------------------------------- main


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--graphs", default=None, help="comma-separated graph specs (default kron:20,kron:22,kron:24;"
                    " kron:10 with --dry-run)")
    ap.add_argument("--algos", default="bfs,pagerank,cc,sssp")
    ap.add_argument("--repeat", type=int, default=None, help="timed runs per CuPy implementation (default 3; "
                    "1 with --dry-run)")
    ap.add_argument("--numpy-repeat", type=int, default=None, help="timed runs of the NumPy backend (default: "
                    "--repeat; 1 skips its warm-up)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "gpu_bench"))
    ap.add_argument("--dry-run", action="store_true", help="no GPU: tiny graph, numpy backend only")
    ap.add_argument("--no-handwritten", action="store_true", help="skip bench/handwritten_cupy.py")
    ap.add_argument("--time-budget", type=float, default=None,
                    help="seconds; algorithms not started by then are skipped (and noted)")
    ap.add_argument("--standin", action="store_true",
                    help="no GPU: the CuPy code paths over tests/strict_cupy (a strict NumPy stand-in for CuPy "
                         "14); tests the plumbing, the times mean nothing")
    a = ap.parse_args()
    small = a.dry_run or a.standin
    a.graphs = (a.graphs or ("kron:10" if small else "kron:20,kron:22,kron:24")).split(",")
    a.algos = [x for x in a.algos.split(",") if x]
    for x in a.algos:
        if x not in PROGRAMS:
            ap.error(f"unknown algorithm {x!r}; expected some of {', '.join(PROGRAMS)}")
    a.repeat = a.repeat or (1 if small else 3)
    a.numpy_repeat = a.numpy_repeat or a.repeat
    if a.dry_run and a.standin:
        ap.error("--dry-run and --standin exclude each other")
    if a.standin:
        import importlib.util

        path = ROOT / "tests" / "strict_cupy" / "activate.py"
        if not path.exists():
            refuse(f"gpu_bench: --standin needs {path}")
        spec = importlib.util.spec_from_file_location("g2pl_strict_cupy_activate", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        with mod.standin():
            return bench(a)
    return bench(a)


def bench(a) -> int:
    cupy = None if a.dry_run else need_gpu()
    g2pl = need_g2pl()
    out_dir = Path(a.out)
    out_dir.mkdir(parents=True, exist_ok=True)

    def log(msg: str) -> None:
        print(msg, flush=True)

    t_start = time.perf_counter()
    res = {"command": " ".join([Path(sys.executable).name, *sys.argv]), "started":
           time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), "machine": machine(cupy),
           "seed": a.seed, "repeat": a.repeat, "numpy_repeat": a.numpy_repeat, "dry_run": a.dry_run,
           "standin": a.standin,
           "graphs": [], "failures": []}
    log(f"gpu_bench: {res['machine'].get('gpu', 'no GPU (dry run)')}; graphs {','.join(a.graphs)}; "
        f"algos {','.join(a.algos)}; out {out_dir}")
    progs = {x: g2pl.compile_file(PROGRAMS[x]) for x in a.algos}

    def save() -> None:
        (out_dir / "gpu_bench.json").write_text(json.dumps(res, indent=1, default=str))
        (out_dir / "gpu_bench.md").write_text(report(res))

    for spec in a.graphs:
        try:
            gr = bench_graph(spec, a, progs, cupy, log, t_start)
        except Exception as e:  # e.g. out of memory generating the graph
            gr = {"graph": spec, "n": 0, "m": 0, "root": -1, "load_s": 0.0, "rows": [],
                  "notes": [f"graph failed: {type(e).__name__}: {e}"]}
            res["failures"].append(f"{spec}: {type(e).__name__}: {e}")
            log(f"== {spec}: FAILED {type(e).__name__}: {e}")
        for r in gr["rows"]:
            chk = r.get("check", "")
            if chk.startswith(("MISMATCH", "ERROR")):
                res["failures"].append(f"{spec} {r['algo']} {r['impl']}: {r.get('error') or chk}")
        res["graphs"].append(gr)
        save()
    res["total_s"] = time.perf_counter() - t_start
    save()
    log(f"\nwrote {out_dir / 'gpu_bench.md'} and {out_dir / 'gpu_bench.json'} ({res['total_s']:.0f} s); "
        f"{len(res['failures'])} failure(s)")
    for f in res["failures"]:
        log(f"FAILED: {f}")
    return 1 if res["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
