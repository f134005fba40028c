"""CPU rehearsal of bench/gpu_check.sh: the whole script, end to end, on the strict CuPy stand-in.

    python bench/gpu_rehearsal.py [--out DIR] [--graph kron:10] [--ref-graph kron:8] [--tests-k EXPR] [--no-rest]

runs `bash bench/gpu_check.sh DIR` with G2PL_GPU_REHEARSAL=1 and small graphs: every Python command the
script runs on the device goes through `python bench/gpu_rehearsal.py exec ...`, which installs
tests/strict_cupy as `cupy` (activate.py's `standin()`: the stand-in is never put on sys.path, a real
CuPy stays importable) and runs the command in-process; the 2-rank step finds the stand-in on its
ranks' PYTHONPATH. The stand-in counts what a GPU would do (device arrays allocated and their bytes,
raw-kernel launches, source lines that allocate - one or more kernels each - and raw CUDA modules),
and the rehearsal then prints the time each step would take on a real GPU at the script's default
sizes, from a simple model whose assumptions it prints. The CPU times of the rehearsal itself say
nothing about a GPU.

`exec -m MODULE ARGS` / `exec -c CODE ARGS` / `exec SCRIPT ARGS` is the in-process runner (as `python`
would run them); with G2PL_REHEARSAL_COUNTS=FILE it appends the process's counts to FILE as a JSON line.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import runpy
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import harness

ROOT = harness.ROOT
STANDIN = ROOT / "tests" / "strict_cupy"
SCRIPT = ROOT / "bench" / "gpu_check.sh"
FILES = ("summary.txt", "env.txt", "tests.log", "bench.log", "gpu_bench.md", "gpu_bench.json", "np2.log",
         "np2_stats.json")

# ---- the GPU model's assumptions (printed with the prediction)
HBM = 3.0e12        # B/s of device memory (H100 SXM: 3.35 TB/s, H200: 4.8 TB/s)
TRAFFIC = 3.0       # bytes moved per byte allocated (each result written once, its operands read about twice)
OP_S = 12e-6        # s per device operation (kernel launch + CuPy's Python around it)
SYNC_S = 15e-6      # s per device->host synchronization
PCIE = 12e9         # B/s host<->device (pageable memory)
COMPILE_S = 0.15    # s of NVRTC per new allocating source line (cold kernel cache)
MODULE_S = 2.0      # s of NVRTC per raw CUDA module
START_S = 4.0       # s to start a Python process, import g2pl and CuPy, compile the programs
DEPS_S = 10.0       # deps step: pip install of the carried wheels
ENV_S = 8.0         # env step: nvidia-smi, CuPy import, pip freeze
MPI_S = 3.0         # s to start mpiexec with 2 ranks


# --------------------------------------------------------------------------- exec: one command on the stand-in


def _standin():
    """tests/strict_cupy/activate.py's `standin` (imported by path: the folder never goes on sys.path)."""
    spec = importlib.util.spec_from_file_location("g2pl_rehearsal_strict_cupy_activate", STANDIN / "activate.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.standin


class Counter:
    """What the process asked of the device, counted on the stand-in (`cupy._rehearsal_counts()`)."""

    def __init__(self, cupy) -> None:
        self.cupy = cupy
        self.c = {"alloc_bytes": 0, "allocs": 0, "launches": 0}
        self.sites: set[str] = set()
        self.modules: set[str] = set()
        self.installed = self._install()
        cupy._rehearsal_counts = self.counts

    def _site(self, frame) -> None:
        here = str(STANDIN)
        while frame is not None and frame.f_code.co_filename.startswith(here):
            frame = frame.f_back
        if frame is not None:
            name = frame.f_code.co_filename
            rel = os.path.relpath(name, ROOT) if name.startswith(str(ROOT)) else name
            self.sites.add(f"{rel}:{frame.f_lineno}")

    def _install(self) -> bool:
        """Wrap the stand-in's allocation and raw-kernel entry points (False where they are not there)."""
        try:
            pool = self.cupy.get_default_memory_pool()
            alloc = pool._alloc
        except AttributeError:
            return False

        def counted_alloc(n: int) -> None:
            self.c["alloc_bytes"] += int(n)
            self.c["allocs"] += 1
            self._site(sys._getframe(1))
            alloc(n)

        pool._alloc = counted_alloc
        raw = sys.modules.get("cupy._raw")
        if raw is not None and hasattr(raw, "_build") and hasattr(raw, "RawKernel"):
            build, call = raw._build, raw.RawKernel.__call__

            def counted_build(code, defines):
                self.modules.add(hashlib.sha256(code.encode()).hexdigest()[:12])
                return build(code, defines)

            def counted_call(kernel, *args, **kw):
                self.c["launches"] += 1
                self._site(sys._getframe(1))
                return call(kernel, *args, **kw)

            raw._build = counted_build
            raw.RawKernel.__call__ = counted_call
        return True

    def counts(self) -> dict:
        syncs = getattr(self.cupy, "_standin_syncs", lambda: 0)()
        return {**self.c, "sites": len(self.sites), "modules": len(self.modules), "syncs": syncs}

    def dump(self, argv: list[str], wall: float, code) -> None:
        path = os.environ.get("G2PL_REHEARSAL_COUNTS")
        if not path:
            return
        rec = {"argv": argv, "wall_s": wall, "exit": code, "counted": self.installed, **self.counts(),
               "site_list": sorted(self.sites), "module_list": sorted(self.modules)}
        with open(path, "a") as f:
            f.write(json.dumps(rec) + "\n")


def run_target(argv: list[str]) -> None:
    """Run `argv` as `python ARGV...` would, in this process."""
    if not argv:
        raise SystemExit("gpu_rehearsal exec: expected -m MODULE, -c CODE or SCRIPT")
    if argv[0] == "-m":
        sys.argv = [argv[1], *argv[2:]]
        sys.path[0] = os.getcwd()
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
    elif argv[0] == "-c":
        sys.argv = ["-c", *argv[2:]]
        sys.path[0] = os.getcwd()
        exec(compile(argv[1], "<string>", "exec"), {"__name__": "__main__"})  # noqa: S102 - the script's own code
    else:
        sys.argv = list(argv)
        sys.path[0] = str(Path(argv[0]).resolve().parent)
        runpy.run_path(argv[0], run_name="__main__")


def exec_main(argv: list[str]) -> int:
    with _standin()() as cupy:
        counter = Counter(cupy)
        t0 = time.perf_counter()
        code: int | str | None = 0
        try:
            run_target(argv)
        except SystemExit as e:
            code = e.code
        finally:
            counter.dump(argv, time.perf_counter() - t0, code)
    if code is None or isinstance(code, int):
        return code or 0
    print(code, file=sys.stderr)
    return 1


# --------------------------------------------------------------------------- the model


def script_defaults() -> dict[str, str]:
    """The knobs' defaults as gpu_check.sh sets them (`: "${NAME:=VALUE}"`)."""
    return dict(re.findall(r'^: "\$\{(G2PL_\w+):=([^}]*)\}"', SCRIPT.read_text(), flags=re.M))


def kron_edges(s: int) -> float:
    """Edges of kron:S: Graph500's edge factor 16, about 5% duplicates dropped."""
    return 2.0**s * 16 * 0.95


def calibrate(scale: int = 16) -> dict:
    """This CPU at kron:SCALE: the load time (seconds per 2^S * S, as gpu_bench.py estimates loads), the host
    partitioning for one rank over the load time, and each program's NumPy-backend time."""
    import handwritten as H

    import g2pl

    g2pl.load_graph("kron:4", seed=1)  # the imports, not timed
    t0 = time.perf_counter()
    g = g2pl.load_graph(f"kron:{scale}", seed=1)
    load = time.perf_counter() - t0
    root = H.pick_root(g, 1)
    cal = {"scale": scale, "load_s": load, "per_unit": load / (2.0**scale * scale), "m": int(g.m), "numpy_s": {},
           "partition": 0.0}
    for algo in ("bfs", "pagerank", "cc", "sssp"):
        res = g2pl.compile_file(ROOT / "programs" / f"{algo}.g2pl").run(
            g, args=H.program_args(algo, g, root, 20, 0.85), seed=1)
        cal["numpy_s"][algo] = float(res.stats["time_s"])
        cal["partition"] = max(cal["partition"], float(res.stats.get("load_time_s") or 0.0) / load)
    return cal


def summary_steps(path: Path) -> dict[str, tuple[str, int]]:
    """step name -> (rc, seconds) from summary.txt's end-of-step lines."""
    out = {}
    for line in path.read_text().splitlines() if path.exists() else []:
        m = re.match(r"^(\S+)\s+rc=(\S+)\s+(\d+)s", line)
        if m:
            out[m.group(1)] = (m.group(2), int(m.group(3)))
    return out


def processes(path: Path) -> dict[str, dict]:
    """The exec'd processes' counts by step: tests, tests-rest, bench, refs."""
    out: dict[str, dict] = {}
    for line in path.read_text().splitlines() if path.exists() else []:
        rec = json.loads(line)
        argv = rec["argv"]
        if argv[:2] == ["-m", "pytest"]:
            name = "tests-rest" if any(a.startswith("not (") for a in argv) else "tests"
        elif any(a.endswith("gpu_bench.py") for a in argv):
            name = argv[argv.index("--label") + 1] if "--label" in argv else "bench"
        else:
            name = "other"
        out[name] = rec
    return out


class Model:
    """Predicted seconds on a GPU, from the rehearsal's counts scaled to the script's default graphs."""

    def __init__(self, cal: dict, procs: dict[str, dict]) -> None:
        self.cal = cal
        self.procs = procs

    def load(self, spec: str, partition: bool = False) -> float:
        """Seconds to load kron:S here (and, with `partition`, to partition it for one rank)."""
        s = harness.kron_scale(spec)
        t = self.cal["per_unit"] * 2.0**s * s if s is not None else 0.0
        return t * (1.0 + self.cal["partition"]) if partition else t

    def cold(self, step: str, before: tuple[str, ...]) -> tuple[float, int, int]:
        """NVRTC seconds of the kernels `step` meets first (not already met by the steps in `before`)."""
        rec = self.procs.get(step)
        if rec is None:
            return 0.0, 0, 0
        seen_sites = set().union(*(self.procs[b]["site_list"] for b in before if b in self.procs))
        seen_mods = set().union(*(self.procs[b]["module_list"] for b in before if b in self.procs))
        sites = len(set(rec["site_list"]) - seen_sites)
        mods = len(set(rec["module_list"]) - seen_mods)
        return sites * COMPILE_S + mods * MODULE_S, sites, mods

    def row(self, r: dict, spec: str, scale: float, repeat: int, cold_share: float) -> float:
        """One row at `scale` times the rehearsal graph's edges: cold compile share + upload + runs (the
        graph is partitioned on the host before the rows: gpu_bench.py does it while the tests run)."""
        if r["impl"] == "compiled numpy":  # a CPU job on the GPU machine too: this CPU's kron:16 time, scaled
            s = harness.kron_scale(spec)
            edges = kron_edges(s) if s is not None else self.cal["m"]
            return self.cal["numpy_s"].get(r["algo"], 0.0) * edges / self.cal["m"]  # run once (--numpy-repeat 1)
        cnt = (r.get("standin_counts") or {}).get("run") or {}
        run = (TRAFFIC * cnt.get("alloc_bytes", 0) * scale / HBM + (cnt.get("allocs", 0) + cnt.get("launches", 0))
               * OP_S + (r.get("syncs") or 0) * SYNC_S + (r.get("d2h_bytes") or 0) * scale / PCIE)
        upload = (r.get("upload_bytes") or 0) * scale / PCIE
        return cold_share + upload + (1 + repeat) * run

    def bench_step(self, graphs: list[dict], targets: list[str], label: str, repeat: int,
                   before: tuple[str, ...]) -> tuple[float, float, list[str]]:
        """(seconds of a gpu_bench.py step at `targets`, of which loading, notes), from the rows of its
        rehearsal graph."""
        src = next((g for g in graphs if g.get("label") == label and g["rows"]), None)
        if src is None:
            return 0.0, 0.0, [f"{label}: no rehearsal rows"]
        cold, sites, mods = self.cold(label, before)
        ok = [r for r in src["rows"] if "error" not in r]
        gpu_rows = [r for r in ok if r["impl"] != "compiled numpy"]
        share = cold / max(1, len(gpu_rows))
        total, loads = START_S, 0.0
        notes = [f"{label}: cold compile {cold:.0f} s ({sites} new allocating lines, {mods} raw modules)"]
        for spec in targets:
            s = harness.kron_scale(spec)
            scale = kron_edges(s) / max(1, src["m"]) if s is not None else 1.0
            ld = self.load(spec, partition=True)
            loads += ld
            rows = [(r, self.row(r, spec, scale, repeat, share if r in gpu_rows else 0.0)) for r in ok]
            total += ld + sum(t for _, t in rows)
            notes.append(f"{label} {spec} (x{scale:,.0f} the rehearsal's {src['graph']} edges): load and partition "
                         f"{ld:.0f} s; " + "; ".join(f"{r['algo']} {r['impl']} {t:.1f} s" for r, t in rows))
            share = 0.0  # the kernels are compiled once
        return total, loads, notes


def predict(out: Path, cal: dict) -> str:
    d = script_defaults()
    sc = cal["scale"]
    procs = processes(out / "rehearsal_counts.jsonl")
    steps = summary_steps(out / "summary.txt")
    res = json.loads((out / "gpu_bench.json").read_text()) if (out / "gpu_bench.json").exists() else {"graphs": []}
    m = Model(cal, procs)
    limit = float(d.get("G2PL_CHECK_LIMIT", 500))
    repeat = int(d.get("G2PL_GPU_REPEAT", 3))
    main = [x for x in d.get("G2PL_GPU_GRAPHS", "kron:24").split(",") if x]
    refs = [x for x in d.get("G2PL_REF_GRAPHS", "kron:16,kron:18").split(",") if x]
    np2g = d.get("G2PL_NP2_GRAPH", "kron:18")
    notes: list[str] = []

    t = procs.get("tests")
    tests_cold, sites, mods = m.cold("tests", ())
    tests = (t["wall_s"] if t else 60.0) + tests_cold
    notes.append(f"tests: {t['wall_s'] if t else float('nan'):.0f} s of host work as rehearsed (small graphs: the "
                 f"stand-in's NumPy calls cost about what CuPy's launches do) + cold compile {tests_cold:.0f} s "
                 f"({sites} allocating lines, {mods} raw modules)")
    if t and "-k" in t["argv"] and t["argv"][t["argv"].index("-k") + 1] != d.get("G2PL_GPU_TESTS_K"):
        notes.append("tests: the rehearsal ran a subset (-k " + t["argv"][t["argv"].index("-k") + 1]
                     + "): the real step runs more")
    bench_all, bench_load, n1 = m.bench_step(res["graphs"], main, "bench", repeat, ("tests",))
    calib = cal["per_unit"] * 2.0**16 * 16 * (1.0 + cal["partition"])  # gpu_bench.py's own calibration
    # the bench loads and partitions its graph while the tests run, then waits for them
    bench = max(START_S + calib + bench_load, tests) + (bench_all - START_S - bench_load)
    refs_t, _, n2 = m.bench_step(res["graphs"], refs, "refs", repeat, ("tests", "bench"))
    notes += n1 + n2
    np2 = 3 * m.load(np2g) + 3 * START_S + MPI_S
    rest_rec = procs.get("tests-rest")
    rest = rest_rec["wall_s"] + START_S if rest_rec else None
    caps = {"deps": 60, "env": 30, "bench": float(d.get("G2PL_BENCH_TIMEOUT", 300)),
            "tests": float(d.get("G2PL_TEST_TIMEOUT", 150)), "refs": float(d.get("G2PL_REF_TIMEOUT", 60)),
            "np2": float(d.get("G2PL_NP2_TIMEOUT", 45)), "tests-rest": float(d.get("G2PL_REST_TIMEOUT", 120))}
    pred = {"deps": DEPS_S, "env": ENV_S, "bench": bench, "tests": tests, "refs": refs_t, "np2": np2,
            "tests-rest": rest}
    L = [f"Predicted times on one H100 at the script's defaults (graphs {','.join(main)}; refs {','.join(refs)}; "
         f"np2 {np2g}; repeat {repeat}; limit {limit:.0f} s):", "",
         f"  {'step':10s} {'rehearsal(CPU)':>14s} {'predicted GPU':>14s} {'cap':>6s}  note"]
    clock = 0.0
    for name in ("deps", "env", "bench", "tests", "refs", "np2", "tests-rest"):
        p = pred[name]
        cap = caps[name]
        shown = "not run" if p is None else f"{p:.0f} s"
        note = "" if p is None or p <= cap else ("OVER ITS CAP: the rows past its budget are skipped" if name in
                                                 ("bench", "refs") else "OVER ITS CAP: cut by its timeout")
        if name == "tests":
            note = (note + "; " if note else "") + "runs beside bench"
        else:
            clock += min(p if p is not None else cap, cap, max(0.0, limit - clock))
        rc, secs = steps.get(name, ("-", 0))
        L.append(f"  {name:10s} {f'{secs} s (rc={rc})':>14s} {shown:>14s} {cap:>5.0f}s  {note}")
    L.append(f"  {'total':10s} {'':>14s} {f'{clock:.0f} s':>14s} {limit:>5.0f}s  "
             + ("fits" if clock <= limit else "DOES NOT FIT: later steps are cut"))
    L += ["", "Details:"] + [f"  {n}" for n in notes]
    L += ["", f"Assumptions: device time per run = {TRAFFIC:.0f} x bytes allocated / {HBM / 1e12:.1f} TB/s + "
          f"{OP_S * 1e6:.0f} us per device operation + {SYNC_S * 1e6:.0f} us per sync + the answer's copy at "
          f"{PCIE / 1e9:.0f} GB/s; the rehearsal's counts (kron graphs of a few thousand vertices) scaled by the "
          "edge ratio (kron:S has 2^S x 16 x 0.95 edges), operation and sync counts kept (levels and iterations "
          f"do not grow with the scale); cold kernel cache: {COMPILE_S:.2f} s per new allocating source line, "
          f"{MODULE_S:.0f} s per raw CUDA module; graph load on the GPU machine's CPU as on this one (kron:{sc} took "
          f"{cal['load_s']:.2f} s here; load(kron:S) = that x 2^(S-{sc}) x S/{sc}), partitioning for one rank "
          f"{cal['partition']:.2f} x that, the NumPy references = their kron:{sc} times here x the edge ratio; {START_S:.0f} s per Python start, deps {DEPS_S:.0f} s, "
          f"env {ENV_S:.0f} s, mpiexec {MPI_S:.0f} s."]
    return "\n".join(L) + "\n"


# --------------------------------------------------------------------------- the rehearsal


def rehearse(a) -> int:
    out = Path(a.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    counts = out / "rehearsal_counts.jsonl"
    counts.unlink(missing_ok=True)
    env = dict(os.environ, G2PL_GPU_REHEARSAL="1", PYTHON=sys.executable, G2PL_GPU_GRAPHS=a.graph,
               G2PL_GPU_FALLBACK=a.ref_graph, G2PL_REF_GRAPHS=a.ref_graph, G2PL_NP2_GRAPH=a.np2_graph,
               G2PL_GPU_REPEAT=str(a.repeat),
               G2PL_REHEARSAL_COUNTS=str(counts))
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    if a.tests_k:
        env["G2PL_GPU_TESTS_K"] = a.tests_k
    if a.no_rest:
        env["G2PL_TESTS_REST"] = "0"
    print(f"rehearsal: bash {SCRIPT.relative_to(ROOT)} {out} on the CuPy stand-in ({a.graph}; refs {a.ref_graph}; "
          f"np2 {a.np2_graph})", flush=True)
    t0 = time.perf_counter()
    with open(out / "rehearsal.log", "w") as log:
        r = subprocess.run(["bash", str(SCRIPT), str(out)], env=env, stdout=log, stderr=subprocess.STDOUT,
                           cwd=str(ROOT), timeout=a.timeout)
    wall = time.perf_counter() - t0
    summary = (out / "summary.txt").read_text() if (out / "summary.txt").exists() else "(no summary.txt)\n"
    print(summary, end="")
    print(f"rehearsal: gpu_check.sh exit {r.returncode} after {wall:.0f} s on this CPU\n")
    text = predict(out, calibrate(a.calibration_scale))
    (out / "prediction.txt").write_text(text)
    print(text, end="")
    missing = [f for f in FILES if not (out / f).exists()]
    if missing:
        print(f"rehearsal: MISSING output files: {', '.join(missing)}")
        return 2
    print(f"rehearsal: all {len(FILES)} files in {out}")
    return r.returncode


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "exec":
        return exec_main(sys.argv[2:])
    ap = harness.parser(__doc__, out=False)
    ap.add_argument("--out", default=str(Path(tempfile.gettempdir()) / "g2pl-gpu-rehearsal"))
    ap.add_argument("--graph", default="kron:10", help="the bench step's graph (real: kron:24)")
    ap.add_argument("--ref-graph", default="kron:8", help="the refs step's graph (real: kron:16,kron:18)")
    ap.add_argument("--np2-graph", default="kron:10", help="the np2 step's graph (real: kron:18)")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--tests-k", default=None, help="pytest -k of the tests step (default: the script's)")
    ap.add_argument("--no-rest", action="store_true", help="no tests-rest step")
    ap.add_argument("--timeout", type=float, default=900, help="seconds for the whole script")
    ap.add_argument("--predict-only", action="store_true", help="no run: the prediction from --out's files")
    ap.add_argument("--calibration-scale", type=int, default=16, help="kron scale timed here for the model "
                    "(loading, partitioning, the NumPy references)")
    a = ap.parse_args()
    if a.predict_only:
        print(predict(Path(a.out), calibrate(a.calibration_scale)), end="")
        return 0
    return rehearse(a)


if __name__ == "__main__":
    sys.exit(main())
