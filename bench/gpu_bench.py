"""GPU benchmark: compiled programs on the CuPy backend against hand-written CuPy (and the NumPy backend).

For each graph of `--graphs` (default kron:24; loaded once per graph, in the order given) and each
algorithm of `--algos` (bfs, pagerank (20 iterations, damping 0.85), pagerank32, cc, sssp), one row per
implementation, in this order:

* `compiled cupy`: `g2pl.compile_file(programs/ALGO.g2pl).run(graph, args, backend="cupy")`, one
  warm-up run (kernels compiled, graph uploaded), then `--repeat` timed runs, the median of the
  stats' `time_s`;
* `hand-written cupy` (bfs and pagerank): bench/handwritten_cupy.py, graph uploaded beforehand, one
  warm-up, then `--repeat` timed runs;
* `compiled numpy` (unless `--no-numpy`): the NumPy backend, the reference the others are checked
  against; `--numpy-repeat` runs (no warm-up when that is 1).

Equal work on both sides: the compiled `time_s` runs from the first superstep to the answer computed
on the device (the clock stops after a device synchronization; on one rank the runtime copies the
answer to the host after that), so the hand-written time is also taken from a synchronized start to
its answer computed and synchronized on the device (`time.perf_counter`), its copy to the host after;
its CUDA-event time of the same span is reported beside it.

Checks: against the NumPy backend's answer where it ran; with `--no-numpy` (large graphs) the
compiled and the hand-written CuPy answers check each other (BFS levels exactly; PageRank within
1e-9 relative: float64 sums in another order). A mismatch or an implementation that raised makes the
exit status 1; a graph or row skipped for the time budget, 3.

Per row: median time, rate (BFS: GTEPS as Graph500 counts them - undirected edges with an endpoint
in the reached component, each once, over the time; PageRank: G edges/s per iteration, m / (time /
20)), device peak memory (the stats' device.peak_bytes, else the CuPy memory pool's high-water),
host syncs, host->device and device->host bytes.

After loading, the graph is partitioned on the host for one rank as a compiled run's loading does
(kept with the graph), so the first compiled run only uploads it; `--wait-file PATH` then waits for
PATH to exist before the first device work (gpu_check.sh runs the GPU tests meanwhile).

Budget (`--time-budget` seconds from the start of this process): checked before loading a graph
(against an estimate of its load and partition time, from timing kron:16), before each row and
before each timed run; what does not fit is skipped and noted (`--fallback SPEC`: a smaller graph run
once in place of one that does not fit). Compiled runs get the time left as their `time_limit`. Each
row is written to `--out DIR`/gpu_bench.{json,md} as soon as it exists (`--append` adds to the files
there); the JSON's `running` names the step in progress, so a run killed from outside says where it was.

    python bench/gpu_bench.py --out bench/results/gpu                # on a machine with a GPU
    python bench/gpu_bench.py --dry-run --out /tmp/gb               # no GPU: kron:10, numpy only

`--dry-run` exercises the plumbing without a GPU: a tiny graph, the NumPy backend, and the
hand-written code run with numpy/scipy.sparse in place of cupy/cupyx (its answers still checked).
`--standin` runs the CuPy code paths (backend cupy, hand-written on cupy/cupyx, CUDA events, the
memory pool) over tests/strict_cupy, a strict NumPy stand-in for CuPy 14: plumbing only.
Without `--dry-run`, a missing CuPy or CUDA device is an exit-2 refusal saying so.
"""

from __future__ import annotations

import faulthandler
import json
import os
import signal
import sys
import time
from pathlib import Path

import harness
import numpy as np

ROOT = harness.ROOT

ITERS = 20
DAMPING = 0.85
PROGRAMS = {a: ROOT / "programs" / f"{a}.g2pl" for a in ("bfs", "pagerank", "pagerank32", "cc", "sssp")}
HANDWRITTEN = ("bfs", "pagerank")
NAMES = {"bfs": "BFS", "pagerank": f"PageRank ({ITERS} it.)", "pagerank32": f"PageRank, single-precision shares ({ITERS} it.)",
         "cc": "CC", "sssp": "SSSP"}
MIB = float(1 << 20)
#: A compiled run stops itself after this many supersteps (none of these programs needs 200 on a kron graph).
MAX_SUPERSTEPS = 1000
#: Seconds a row needs at least (a warm-up and one timed run) when nothing is known about it yet.
MIN_ROW_S = 5.0
#: Calibration graph of the load-time estimate: load(kron:S) ~ t(kron:16) * 2^(S-16) * S/16.
CALIBRATION = 16


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


def machine(cupy) -> dict:
    """harness.machine(), the commit, and the GPU: CuPy, the device's name and memory, CUDA's versions."""
    info = {**harness.machine(), "commit": harness.git_commit()}
    if cupy is not None:
        info["versions"]["cupy"] = (getattr(cupy, "__version__", "n/a")
                                    + (" (stand-in)" if getattr(cupy, "_STANDIN", False) else ""))
        try:
            props = cupy.cuda.runtime.getDeviceProperties(0)
            name = props["name"]
            info["gpu"] = name.decode() if isinstance(name, bytes) else str(name)
            info["gpu_memory_bytes"] = int(props.get("totalGlobalMem", 0))
            info["cuda_runtime"] = cupy.cuda.runtime.runtimeGetVersion()
            info["cuda_driver"] = cupy.cuda.runtime.driverGetVersion()
        except Exception as e:
            info["gpu"] = f"n/a ({type(e).__name__})"
    return info


# --------------------------------------------------------------------------- budget


class Clock:
    """This process's time budget: seconds since the start, seconds left, whether a cost fits."""

    def __init__(self, budget: float | None) -> None:
        self.t0 = time.perf_counter()
        self.budget = budget

    def elapsed(self) -> float:
        return time.perf_counter() - self.t0

    def left(self) -> float:
        return float("inf") if not self.budget else self.budget - self.elapsed()

    def fits(self, cost: float) -> bool:
        return cost <= self.left()

    def run_limit(self) -> float | None:
        """A compiled run's `time_limit`: what is left of the budget (None without one)."""
        return None if not self.budget else max(1.0, self.left())


def load_estimate(spec: str, cal: dict | None) -> float | None:
    """Seconds to load `spec` (kron:S only) and partition it on the host: per_unit * 2^S * S for the load,
    times (1 + the partitioning's share), both from the calibration."""
    s = harness.kron_scale(spec)
    if s is None or cal is None:
        return None
    return cal["per_unit"] * 2.0**s * s * (1.0 + cal["partition"])


def partition_on_host(g) -> float | None:
    """Partition `g` for one rank, as a compiled run's loading does first (kept with the graph, so the first
    run only uploads it): host work done while the tests hold the device. Seconds, None if not possible."""
    try:
        from g2pl.runtime.comm import SingleComm
        from g2pl.runtime.driver import renumbering, scatter_graph
    except ImportError:
        return None
    t0 = time.perf_counter()
    scatter_graph(SingleComm(), g, renumbering(g, "auto"))
    return time.perf_counter() - t0


def calibrate(seed: int) -> dict:
    """Load and partition times of kron:16 (a fraction of a second) for the estimates of larger graphs:
    seconds per 2^S * S unit of loading, and partitioning's time over loading's."""
    import g2pl

    partition_on_host(g2pl.load_graph("kron:4", seed=seed))  # the imports, not timed
    t0 = time.perf_counter()
    g = g2pl.load_graph(f"kron:{CALIBRATION}", seed=seed)
    load = time.perf_counter() - t0
    part = partition_on_host(g) or 0.0
    return {"load_s": load, "per_unit": load / (2.0**CALIBRATION * CALIBRATION), "partition": part / load}


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
        self.base = 0

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


class Counts:
    """Counters the CPU rehearsal (bench/gpu_rehearsal.py) puts on the stand-in for its GPU time model:
    bytes and number of device arrays allocated, and the kernel sites met so far. None elsewhere."""

    def __init__(self, cupy) -> None:
        self.fn = getattr(cupy, "_rehearsal_counts", None) if cupy is not None else None

    def snap(self) -> dict | None:
        return self.fn() if callable(self.fn) else None

    @staticmethod
    def delta(a: dict | None, b: dict | None) -> dict | None:
        if a is None or b is None:
            return None
        return {k: b[k] - a[k] for k in a if isinstance(a[k], (int, float))}


def rate(algo: str, t: float | None, m_reached: int, m: int) -> float | None:
    if not t or t <= 0:
        return None
    if algo == "bfs":
        return m_reached / t / 1e9  # GTEPS
    if algo.startswith("pagerank"):
        return m / (t / ITERS) / 1e9  # G edges / s per iteration
    return None


def timed_runs(run, warmup: bool, repeat: int, clock: Clock, row: dict, counts: Counts) -> list:
    """Call `run()` (returns (seconds, result)) once untimed when `warmup`, then up to `repeat` times while
    the budget allows another; fills row's times and returns the results of the timed runs."""
    walls, times, results = [], [], []
    c0 = counts.snap()
    if warmup:
        t0 = time.perf_counter()
        t, res = run()
        walls.append(time.perf_counter() - t0)
        row["warmup_s"], row["warmup_wall_s"] = t, walls[-1]
        results.append(res)
    c1 = counts.snap()
    for i in range(repeat):
        # the next run takes about as long as the last timed one; a warm-up also compiled the kernels
        last = walls[-1] * (0.5 if warmup and len(walls) == 1 else 1.0) if walls else 0.0
        if walls and not clock.fits(1.2 * last + 0.5):
            row.setdefault("notes", []).append(f"{i} of {repeat} timed runs: time budget")
            break
        t0 = time.perf_counter()
        t, res = run()
        walls.append(time.perf_counter() - t0)
        times.append(t)
        results.append(res)
        if i == 0 and c1 is not None:
            row["standin_counts"] = {"cold": Counts.delta(c0, c1), "run": Counts.delta(c1, counts.snap())}
    if not times:  # only the warm-up fitted: its time, marked (it includes compiling the kernels)
        times = [row["warmup_s"]]
        row["cold"] = True
        row.setdefault("notes", []).append("time of the warm-up run only (includes compiling kernels)")
    row.update(time_s=harness.median(times), times_s=times, wall_s=walls)
    return results


def run_compiled(prog, g, args: dict, backend: str, warmup: bool, repeat: int, seed: int, pool: Pool,
                 clock: Clock, counts: Counts) -> tuple[dict, np.ndarray]:
    """A compiled program's row: median `time_s` of the timed runs, its stats, and the answer."""
    pool.start()
    row: dict = {}

    def run():
        res = prog.run(g, args=args, backend=backend, seed=seed, max_supersteps=MAX_SUPERSTEPS,
                       time_limit=clock.run_limit())
        if "first_load_s" not in row:  # the first run partitions and uploads the graph (not in time_s)
            row["first_load_s"] = res.stats.get("load_time_s")
            row["upload_bytes"] = dig(res.stats, "device", "h2d_bytes")
        return float(res.stats["time_s"]), res

    res = timed_runs(run, warmup, repeat, clock, row, counts)[-1]
    st = res.stats
    steps = st.get("per_superstep") or []
    row.update({"supersteps": st.get("supersteps", len(steps) or None),
                "backend_reported": st.get("backend"),
                "peak_bytes": dig(st, "device", "peak_bytes"),
                "pool_high_water_bytes": pool.high_water() if backend == "cupy" else None,
                "pool_total_bytes": pool.total() if backend == "cupy" else None,
                "syncs": dig(st, "device", "syncs"), "h2d_bytes": dig(st, "device", "h2d_bytes"),
                "d2h_bytes": dig(st, "device", "d2h_bytes"), "device_name": dig(st, "device", "name")})
    return row, res.array(res.values[0]["name"], g)


def run_handwritten(HC, g, algo: str, root: int, repeat: int, xp_name: str, cupy, pool: Pool, clock: Clock,
                    counts: Counts) -> tuple[dict, np.ndarray]:
    """A hand-written row: graph uploaded, one warm-up, then timed runs from a synchronized start to the
    answer computed on the device (as the compiled `time_s`), copied to the host after the clock stops;
    CUDA events time the same span on the device."""
    xp, sp = HC.modules(xp_name)
    pool.start()
    t1 = time.perf_counter()
    dg = HC.CSRGraph(g, xp, sp)
    if cupy is not None:
        cupy.cuda.Device().synchronize()
    row: dict = {"upload_s": time.perf_counter() - t1, "upload_bytes": dg.h2d_bytes}
    device_s: list[float] = []

    def call():
        return HC.bfs(dg, root) if algo == "bfs" else HC.pagerank(dg, ITERS, DAMPING)

    def run():
        if cupy is not None:
            cupy.cuda.Device().synchronize()
            start, end = cupy.cuda.Event(), cupy.cuda.Event()
        s0 = dg.syncs
        t0 = time.perf_counter()
        if cupy is not None:
            start.record()
        out = call()
        if cupy is not None:
            end.record()
            end.synchronize()
        t = time.perf_counter() - t0
        host = HC.to_host(out)
        if cupy is not None:
            device_s.append(cupy.cuda.get_elapsed_time(start, end) / 1e3)
        return t, (host, dg.syncs - s0)

    results = timed_runs(run, True, repeat, clock, row, counts)  # the graph's device copy goes on return
    host, syncs = results[-1]
    timed = device_s[-len(row["times_s"]):] if device_s and not row.get("cold") else device_s[:1]
    # syncs: the control reads, and the answer's copy (the backend's stats count its collect as one too)
    row.update({"device_s": harness.median(timed) if timed else None, "syncs": syncs + 1, "h2d_bytes": 0,
                "d2h_bytes": int(host.nbytes), "pool_high_water_bytes": pool.high_water(),
                "pool_total_bytes": pool.total()})
    return row, host


# --------------------------------------------------------------------------- one graph


class GraphBench:
    """The rows of one graph, checked and rated as they come, saved after each one."""

    def __init__(self, spec: str, a, res: dict, save) -> None:
        self.spec, self.a, self.res, self.save = spec, a, res, save
        self.answers: dict[tuple[str, str], np.ndarray] = {}
        self.m_reached: int | None = None
        self.out: dict = {"graph": spec, "label": a.label, "n": 0, "m": 0, "root": -1, "load_s": 0.0, "rows": [],
                          "notes": [],
                          "reference": "numpy" if not a.no_numpy else "cross (compiled cupy vs hand-written)",
                          "repeat": a.repeat, "numpy_repeat": a.numpy_repeat}
        res["graphs"].append(self.out)

    def note(self, msg: str, log) -> None:
        self.out["notes"].append(msg)
        log(f"   note: {msg}")
        self.save()

    def add(self, row: dict, answer: np.ndarray | None, g) -> None:
        if answer is not None:
            self.answers[(row["algo"], row["impl"])] = answer
            if row["algo"] == "bfs" and self.m_reached is None:
                reached = answer >= 0
                self.m_reached = int(np.count_nonzero(reached[g.src] | reached[g.dst]))
                self.out["bfs_edges_counted"] = self.m_reached
        self.out["rows"].append(row)
        self.settle(row["algo"], g, final=False)
        self.res["running"] = None
        self.save()

    def settle(self, algo: str, g, final: bool) -> None:
        """Checks and rates of `algo`'s rows from the answers so far: against the NumPy backend's answer
        where there is one, else each CuPy answer against the other implementation's."""
        rows = [r for r in self.out["rows"] if r["algo"] == algo]
        have = [impl for (al, impl) in self.answers if al == algo]
        ref = "compiled numpy" if "compiled numpy" in have else None
        for r in rows:
            r["rate"] = rate(algo, r.get("time_s"), self.m_reached or g.m, g.m) if "error" not in r else None
            if "error" in r:
                r["check"] = "ERROR"
                continue
            impl = r["impl"]
            if ref is not None and impl == ref:
                r["check"], r["checked_against"] = "reference", None
                continue
            other = ref or next((i for i in have if i != impl), None)
            if other is not None and impl in have:
                r["check"] = compare(self.answers[(algo, impl)], self.answers[(algo, other)])
                r["checked_against"] = other
            else:
                r["check"] = "unchecked (no other answer)" if final else "pending"

    def fits(self, clock: Clock, cal: dict | None, log) -> bool:
        """Whether loading (and partitioning) the graph and one row fit in the budget; noted when not."""
        est = load_estimate(self.spec, cal)
        if est is None or clock.fits(est + 2 * MIN_ROW_S):
            return True
        self.out["skipped"] = True
        self.note(f"skipped: loading and partitioning need about {est:.0f} s (estimated), {clock.left():.0f} s "
                  "of the time budget left", log)
        return False

    def run(self, progs: dict, cupy, clock: Clock, cal: dict | None, log) -> None:
        import handwritten as H
        import handwritten_cupy as HC

        import g2pl

        a = self.a
        est = load_estimate(self.spec, cal)
        self.res["running"] = f"{self.spec}: loading (estimated {est:.0f} s)" if est else f"{self.spec}: loading"
        self.save()
        t0 = time.perf_counter()
        g = g2pl.load_graph(self.spec, seed=a.seed)
        load_s = time.perf_counter() - t0
        root = H.pick_root(g, a.seed)
        self.out.update(n=int(g.n), m=int(g.m), root=int(g.ids[root]), load_s=load_s)
        if not a.dry_run:
            self.res["running"] = f"{self.spec}: partitioning on the host"
            self.save()
            self.out["partition_s"] = partition_on_host(g)
        self.out["load_estimate_s"] = est
        part = self.out.get("partition_s")
        log(f"\n== {self.spec}: n={g.n:,} m={g.m:,} (loaded in {load_s:.1f} s"
            + (f", partitioned in {part:.1f} s" if part is not None else "")
            + (f"; estimated {est:.1f} s for both" if est is not None else "") + f"), root {int(g.ids[root])}")
        self.res["running"] = None
        self.save()
        wait_for(a, clock, self.res, log)
        pool = Pool(cupy)
        counts = Counts(cupy)
        gpu = "numpy" if a.dry_run else "cupy"
        known: dict[str, float] = {}  # algo -> the longest timed run seen (the next row's estimate)
        for algo in a.algos:
            # the GPU rows first (the NumPy reference is the slow one); a dry run has the reference only
            impls = ["compiled numpy"] if a.dry_run else ["compiled cupy"]
            if algo in HANDWRITTEN and not a.no_handwritten:
                impls.append(f"hand-written {gpu}")
            if not a.no_numpy and not a.dry_run:
                impls.append("compiled numpy")
            args = H.program_args(algo, g, root, ITERS, DAMPING)
            for impl in impls:
                nrep = a.numpy_repeat if impl == "compiled numpy" else a.repeat
                need = MIN_ROW_S + (nrep + 1) * known.get(algo, 0.0)
                row = {"graph": self.spec, "algo": algo, "impl": impl}
                if not clock.fits(need):
                    self.note(f"{algo} {impl}: skipped, needs about {need:.0f} s, {clock.left():.0f} s of the "
                              "time budget left", log)
                    continue
                self.res["running"] = f"{self.spec} {algo} {impl}"
                self.save()
                ans = None
                try:
                    if impl.startswith("compiled"):
                        backend = impl.split()[1]
                        r, ans = run_compiled(progs[algo], g, args, backend, backend == "cupy" or nrep > 1, nrep,
                                              a.seed, pool, clock, counts)
                    else:
                        r, ans = run_handwritten(HC, g, algo, root, a.repeat, gpu, cupy, pool, clock, counts)
                    row.update(r)
                    walls = r["wall_s"][1:] if "warmup_s" in r and len(r["wall_s"]) > 1 else r["wall_s"]
                    known[algo] = max(known.get(algo, 0.0), *walls)
                except Exception as e:  # recorded, not raised: the other rows still run
                    row["error"] = f"{type(e).__name__}: {e}"
                    pool.start()
                self.add(row, ans, g)
                log(fmt_row(row))
            self.settle(algo, g, final=True)
            self.save()
            for r in self.out["rows"]:
                if r["algo"] == algo and r.get("check", "").startswith(("MISMATCH", "unchecked")):
                    log(f"   {algo} {r['impl']}: {r['check']}")


def wait_for(a, clock: Clock, res: dict, log) -> None:
    """Wait (once) for `--wait-file` before the first device work, as long as the budget allows."""
    if not a.wait_file or a._waited:
        return
    a._waited = True
    t0 = time.perf_counter()
    res["running"] = f"waiting for {a.wait_file}"
    while not os.path.exists(a.wait_file) and clock.left() > MIN_ROW_S:
        time.sleep(0.2)
    waited = time.perf_counter() - t0
    res["runs"][-1]["waited_s"] = waited
    res["running"] = None
    log(f"   waited {waited:.1f} s for {a.wait_file}" + ("" if os.path.exists(a.wait_file) else " (not there)"))


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
    dev = f" (device {f_time(row['device_s'])})" if row.get("device_s") is not None else ""
    return (f"   {row['algo']:9s} {row['impl']:22s} {f_time(row.get('time_s')):>10s}{dev}  syncs "
            f"{f_num(row.get('syncs'), '')}  peak {f_bytes(peak(row))} MiB  check {row.get('check')}")


def rate_unit(algo: str) -> str:
    return {"bfs": "GTEPS", "pagerank": "GE/s/it", "pagerank32": "GE/s/it"}.get(algo, "")


def report(res: dict) -> str:
    m = res["machine"]
    L = ["# GPU benchmark: compiled G2PL (CuPy backend) against hand-written CuPy and the NumPy backend", ""]
    L.append(f"Machine: GPU {m.get('gpu', 'n/a')}; {harness.describe(m)}; CUDA runtime "
             f"{m.get('cuda_runtime', 'n/a')}, driver {m.get('cuda_driver', 'n/a')}.  ")
    L.append(f"g2pl commit {m.get('commit')}; seed {res['seed']}.  ")
    for run in res["runs"]:
        tot = f", {run['total_s']:.0f} s" if run.get("total_s") is not None else ", not finished"
        wait = f", waited {run['waited_s']:.0f} s for the tests" if run.get("waited_s") else ""
        bud = f" (budget {run['time_budget']:.0f} s)" if run.get("time_budget") else ""
        L.append(f"Run {run['started']}{tot}{bud}{wait}: `{run['command']}`  ")
    if res["dry_run"]:
        L.append("**DRY RUN**: NumPy only, hand-written code on numpy/scipy.  ")
    if res.get("standin"):
        L.append("**STAND-IN**: `cupy` is tests/strict_cupy (NumPy underneath): a plumbing test, the times "
                 "say nothing about a GPU.  ")
    if res.get("running"):
        L.append(f"**Interrupted** while: {res['running']}.  ")
    L.append("")
    L.append("Time: median of the timed runs after one warm-up (NumPy backend: no warm-up when run once). "
             "Both sides time the same work, from the start to the answer in host memory: compiled, "
             "`stats['time_s']` of `prog.run(graph, args, backend=...)` (the supersteps and the copy of the "
             "returned array to the host; partitioning and uploading the graph are loading, not timed); "
             "hand-written (bench/handwritten_cupy.py, graph uploaded beforehand), `perf_counter` from a "
             "synchronized start to its answer copied to the host. *Device only*: CUDA events around the "
             "hand-written call, without that copy. Rate: BFS in GTEPS (Graph500: edges with an endpoint in "
             "the reached component, each once), PageRank in G edges/s per iteration (m / (time / 20)). "
             "h2d: per timed run (+ the graph's upload before them). Peak: the stats' `device.peak_bytes`, else the CuPy pool's high-water over the runs beyond what "
             "it held before them (marked `p`). Check: against the NumPy backend's answer where it ran, else "
             "compiled CuPy and hand-written CuPy against each other (ints exact, floats 1e-9 relative).")
    for gr in res["graphs"]:
        load = f"loaded in {gr['load_s']:.1f} s" if not gr.get("skipped") else "not loaded"
        if gr.get("partition_s") is not None:
            load += f", partitioned in {gr['partition_s']:.1f} s"
        if gr.get("fallback_for"):
            load += f"; in place of {gr['fallback_for']}, which did not fit"
        L += ["", f"## {gr['graph']} (n = {gr['n']:,}, m = {gr['m']:,}, root {gr['root']}; {load}; "
                  f"checked against: {gr.get('reference', 'numpy')})", ""]
        if gr["rows"]:
            L.append("| algorithm | implementation | time (median) | device only | rate | peak MiB | syncs | "
                     "h2d MiB | d2h MiB | supersteps | runs | check |")
            L.append("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
        for r in gr["rows"]:
            if "error" in r:
                L.append(f"| {NAMES[r['algo']]} | {r['impl']} | ERROR | | | | | | | | | "
                         f"{r['error'][:160].replace('|', '/')} |")
                continue
            pk = f_bytes(peak(r)) + (" p" if r.get("peak_bytes") is None and peak(r) is not None else "")
            rt = f"{f_num(r.get('rate'))} {rate_unit(r['algo'])}" if r.get("rate") is not None else "-"
            h2d_s = f_bytes(r.get("h2d_bytes"))
            if r.get("upload_bytes"):
                h2d_s += f" (+{f_bytes(r['upload_bytes'])} upload)"
            chk = r.get("check", "n/a")
            if r.get("checked_against"):
                chk += f" (vs {r['checked_against']})"
            chk = f"**{chk}**" if chk.startswith(("MISMATCH", "ERROR")) else chk
            runs = f"{len(r.get('times_s', []))}" + (" cold" if r.get("cold") else "")
            L.append(f"| {NAMES[r['algo']]} | {r['impl']} | {f_time(r.get('time_s'))} | "
                     f"{f_time(r.get('device_s')) if r.get('device_s') is not None else '-'} | {rt} | {pk} | "
                     f"{f_num(r.get('syncs'), '')} | {h2d_s} | {f_bytes(r.get('d2h_bytes'))} | "
                     f"{f_num(r.get('supersteps'), '')} | {runs} | {chk} |")
        for r in gr["rows"]:
            for note in r.get("notes", []):
                L.append(f"\nNote: {NAMES[r['algo']]} {r['impl']}: {note}")
        for note in gr.get("notes", []):
            L.append(f"\nNote: {note}")
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


def summarize(path: Path, label: str | None) -> list[str]:
    """One line per row (and per note) of the graphs of `path` (a gpu_bench.json) run with `label`."""
    res = json.loads(path.read_text())
    out = []
    for gr in res["graphs"]:
        if label is not None and gr.get("label", "") != label:
            continue
        head = f"  {gr['graph']} (n={gr['n']:,}, m={gr['m']:,}"
        out.append(head + (", not loaded)" if gr.get("skipped") else f", loaded in {gr['load_s']:.1f} s)"))
        for r in gr["rows"]:
            if "error" in r:
                out.append(f"    {r['algo']} {r['impl']}: ERROR {r['error'][:200]}")
                continue
            rt = f", {r['rate']:.3g} {rate_unit(r['algo'])}" if r.get("rate") is not None else ""
            dev = f" (device {f_time(r['device_s'])})" if r.get("device_s") is not None else ""
            chk = r.get("check", "n/a") + (f" (vs {r['checked_against']})" if r.get("checked_against") else "")
            out.append(f"    {r['algo']} {r['impl']}: {f_time(r.get('time_s'))}{dev} "
                       f"({len(r.get('times_s', []))} runs{', cold' if r.get('cold') else ''}){rt}, peak "
                       f"{f_bytes(peak(r))} MiB, syncs {f_num(r.get('syncs'), '')}, h2d {f_bytes(r.get('h2d_bytes'))} "
                       f"MiB, d2h {f_bytes(r.get('d2h_bytes'))} MiB, check {chk}")
        for r in gr["rows"]:
            out += [f"    note: {r['algo']} {r['impl']}: {n}" for n in r.get("notes", [])]
        out += [f"    note: {n}" for n in gr.get("notes", [])]
    if res.get("running"):
        out.append(f"  INTERRUPTED while: {res['running']}")
    return out


def failures(res: dict) -> list[str]:
    out = list(res.get("graph_failures", []))
    for gr in res["graphs"]:
        for r in gr["rows"]:
            chk = r.get("check", "")
            if chk.startswith(("MISMATCH", "ERROR")):
                out.append(f"{gr['graph']} {r['algo']} {r['impl']}: {r.get('error') or chk}")
    return out


# --------------------------------------------------------------------------- main


def main() -> int:
    ap = harness.parser(__doc__, out=False, seed=1)
    ap.add_argument("--graphs", default=None, help="comma-separated graph specs, in order (default kron:24; "
                    "kron:10 with --dry-run or --standin)")
    ap.add_argument("--algos", default="bfs,pagerank,cc,sssp")
    ap.add_argument("--repeat", type=int, default=None, help="timed runs per CuPy implementation (default 3; "
                    "1 with --dry-run)")
    ap.add_argument("--numpy-repeat", type=int, default=None, help="timed runs of the NumPy backend (default: "
                    "--repeat; 1 skips its warm-up)")
    ap.add_argument("--no-numpy", action="store_true", help="no NumPy backend: the CuPy answers check each other "
                    "(for graphs where the NumPy backend takes minutes)")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "gpu_bench"))
    ap.add_argument("--append", action="store_true", help="add to the gpu_bench.json/.md already in --out")
    ap.add_argument("--dry-run", action="store_true", help="no GPU: tiny graph, numpy backend only")
    ap.add_argument("--no-handwritten", action="store_true", help="skip bench/handwritten_cupy.py")
    ap.add_argument("--time-budget", type=float, default=None,
                    help="seconds for this process: graphs, rows and runs that would not fit are skipped (and noted)")
    ap.add_argument("--fallback", default=None, help="a smaller graph to run (once) in place of one of --graphs "
                    "whose loading would not fit in the time budget")
    ap.add_argument("--wait-file", default=None, help="before the first device work, wait until this file exists")
    ap.add_argument("--label", default="", help="a name for this run's graphs (gpu_check.sh: bench, refs)")
    ap.add_argument("--summarize", metavar="JSON", default=None,
                    help="print one line per row of a gpu_bench.json (of --label's graphs when given) and exit")
    ap.add_argument("--standin", action="store_true",
                    help="no GPU: the CuPy code paths over tests/strict_cupy (a strict NumPy stand-in for CuPy "
                         "14); tests the plumbing, the times mean nothing")
    a = ap.parse_args()
    if a.summarize:
        try:
            print("\n".join(summarize(Path(a.summarize), a.label or None)))
        except (OSError, ValueError, KeyError) as e:
            print(f"  no rows: {a.summarize}: {type(e).__name__}: {e}")
            return 1
        return 0
    small = a.dry_run or a.standin
    a.graphs = [x for x in (a.graphs or ("kron:10" if small else "kron:24")).split(",") if x]
    a.algos = [x for x in a.algos.split(",") if x]
    for x in a.algos:
        if x not in PROGRAMS:
            ap.error(f"unknown algorithm {x!r}; expected some of {', '.join(PROGRAMS)}")
    a.repeat = a.repeat or (1 if small else 3)
    a.numpy_repeat = a.numpy_repeat or a.repeat
    a._waited = False
    if a.dry_run and a.standin:
        ap.error("--dry-run and --standin exclude each other")
    if a.dry_run and a.no_numpy:
        ap.error("--dry-run runs the NumPy backend only: --no-numpy would leave nothing")
    # A kill from outside (the step's `timeout`) or a hang shows where it was.
    faulthandler.enable()
    if hasattr(signal, "SIGTERM"):
        faulthandler.register(signal.SIGTERM, chain=True)
    if a.time_budget:
        faulthandler.dump_traceback_later(a.time_budget + 20, exit=False)
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
    clock = Clock(a.time_budget)
    cupy = None if a.dry_run else need_gpu()
    a.standin = a.standin or bool(getattr(cupy, "_STANDIN", False))  # also when a caller installed it
    g2pl = need_g2pl()
    out_dir = Path(a.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    log = harness.log

    run = {"command": " ".join([Path(sys.executable).name, *sys.argv]), "started":
           time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), "label": a.label, "time_budget": a.time_budget,
           "total_s": None}
    res = None
    if a.append and (out_dir / "gpu_bench.json").exists():
        try:
            res = json.loads((out_dir / "gpu_bench.json").read_text())
            res["runs"].append(run)
        except Exception as e:  # a file cut short by a kill: start afresh, saying so
            log(f"gpu_bench: cannot append to {out_dir / 'gpu_bench.json'} ({type(e).__name__}: {e}); new file")
            res = None
    if res is None:
        res = {"machine": machine(cupy), "seed": a.seed, "dry_run": a.dry_run, "standin": a.standin,
               "runs": [run], "graphs": [], "graph_failures": [], "failures": [], "running": None}
    log(f"gpu_bench: {res['machine'].get('gpu', 'no GPU (dry run)')}; graphs {','.join(a.graphs)}; "
        f"algos {','.join(a.algos)}; " + ("no NumPy reference; " if a.no_numpy else "") + f"out {out_dir}"
        + (f"; budget {a.time_budget:.0f} s" if a.time_budget else ""))

    def save() -> None:
        res["failures"] = failures(res)
        harness.write_report(out_dir, "gpu_bench", report(res), res)  # never a half-written file, even when killed

    save()
    progs = {x: g2pl.compile_file(PROGRAMS[x]) for x in a.algos}
    cal = None
    if a.time_budget and any((harness.kron_scale(s) or 0) > CALIBRATION + 1 for s in [*a.graphs, a.fallback or ""]):
        cal = calibrate(a.seed)
        res["runs"][-1]["calibration"] = cal
        log(f"load-time estimate: kron:{CALIBRATION} loaded in {cal['load_s']:.2f} s, partitioned in "
            f"{cal['partition'] * cal['load_s']:.2f} s; " + ", ".join(
                f"{s} ~{load_estimate(s, cal):.0f} s" for s in [*a.graphs, a.fallback or ""] if harness.kron_scale(s)))
    fallback = a.fallback
    for spec in a.graphs:
        gb = GraphBench(spec, a, res, save)
        if not gb.fits(clock, cal, log):
            if not fallback:
                continue
            log(f"   {spec} does not fit: {fallback} instead")
            gb = GraphBench(fallback, a, res, save)
            gb.out["fallback_for"] = spec
            fallback = None
            if not gb.fits(clock, cal, log):
                continue
        try:
            gb.run(progs, cupy, clock, cal, log)
        except Exception as e:  # e.g. out of memory generating the graph
            gb.out["notes"].append(f"graph failed: {type(e).__name__}: {e}")
            res["graph_failures"].append(f"{spec}: {type(e).__name__}: {e}")
            log(f"== {spec}: FAILED {type(e).__name__}: {e}")
        res["running"] = None
        save()
    run["total_s"] = clock.elapsed()
    save()
    log(f"\nwrote {out_dir / 'gpu_bench.md'} and {out_dir / 'gpu_bench.json'} ({run['total_s']:.0f} s); "
        f"{len(res['failures'])} failure(s)")
    for f in res["failures"]:
        log(f"FAILED: {f}")
    skipped = [g["graph"] for g in res["graphs"] if g.get("skipped") and g.get("label", "") == a.label]
    skipped += [f"{g['graph']}: {n}" for g in res["graphs"] if g.get("label", "") == a.label for n in g["notes"]
                if ": skipped," in n]
    if skipped and not res["failures"]:
        log(f"INCOMPLETE (exit 3): skipped for the time budget: {'; '.join(skipped)}")
    return 1 if res["failures"] else 3 if skipped else 0


if __name__ == "__main__":
    sys.exit(main())
