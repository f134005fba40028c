"""What the benchmark scripts share: the common options, the machine and commit a report records,
medians, interleaved repeats, timing a child process, and the NAME.md + NAME.json report pair.

A script imports it before g2pl (importing it puts the repository root on `sys.path`, so the
scripts measure this checkout's `g2pl` even where it is not installed):

    import harness

    import g2pl

    def main(argv: list[str] | None = None) -> int:
        ap = harness.parser(__doc__, quick="kron:12, 2 repeats", repeat=5)
        a = ap.parse_args(argv)
        runs = harness.interleave({"g2pl": run_ours, "scipy": run_theirs}, a.repeat)
        res = {"machine": harness.machine(), "commit": harness.git_commit(),
               "command": harness.command(__file__, argv), "median": harness.medians(runs), "runs": runs}
        harness.write_report(a.out, harness.stem("NAME", a.quick), render(res), res)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
RESULTS = BENCH / "results"
if str(ROOT) not in sys.path:
    sys.path.insert(1, str(ROOT))  # after the running script's own folder

T = TypeVar("T")
K = TypeVar("K")


# --------------------------------------------------------------------------- options


def parser(doc: str | None, quick: str | None = None, out: bool = True, repeat: int | None = None,
           seed: int | None = None) -> argparse.ArgumentParser:
    """An argument parser with the script's docstring as its help and the options the suite scripts
    share: `--quick` (a smoke configuration, `quick` says which), `--out DIR` (default bench/results),
    and, given their defaults, `--repeat N` (interleaved runs, medians) and `--seed S`."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    if quick is not None:
        ap.add_argument("--quick", action="store_true", help=f"smoke test: {quick}")
    if out:
        ap.add_argument("--out", type=Path, default=RESULTS,
                        help="folder for the NAME.md report and the NAME.json raw numbers (default bench/results)")
    if repeat is not None:
        ap.add_argument("--repeat", type=int, default=repeat,
                        help=f"interleaved runs of each side, the report gives medians (default {repeat})")
    if seed is not None:
        ap.add_argument("--seed", type=int, default=seed, help=f"the graphs' random seed (default {seed})")
    return ap


def add_gapbs(ap: argparse.ArgumentParser) -> None:
    """`--gapbs DIR`: a GAP Benchmark Suite build to compare with (default $GAPBS_DIR; none: not run)."""
    ap.add_argument("--gapbs", type=Path, default=os.environ.get("GAPBS_DIR") or None,
                    help="a GAPBS build directory (default $GAPBS_DIR; without one GAPBS is not run)")


def stem(name: str, quick: bool) -> str:
    """The report's file name: NAME, or NAME_quick for a smoke run (which leaves the real one alone)."""
    return f"{name}_quick" if quick else name


# --------------------------------------------------------------------------- what a report records


def machine(versions: Iterable[str] = ("numpy", "scipy")) -> dict[str, Any]:
    """The machine the times were taken on: CPU model, the cores this process may use (what `nproc`
    prints), memory, platform, host, Python and the versions of `versions` (those importable), and
    the 1-minute load average now."""
    model = mem = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                mem = f"{int(line.split()[1]) / 2**20:.1f} GiB"
                break
    except (OSError, ValueError, IndexError):
        pass
    try:
        nproc = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        nproc = os.cpu_count() or 1
    found = {}
    for mod in versions:
        try:
            found[mod] = __import__(mod).__version__
        except Exception:  # noqa: BLE001 - not installed or broken: just not listed
            pass
    return {"cpu": model or platform.processor() or platform.machine() or "unknown", "nproc": nproc,
            "memory": mem, "platform": platform.platform(), "node": platform.node(),
            "python": platform.python_version(), "versions": found, "loadavg": os.getloadavg()[0]}


def describe(m: Mapping[str, Any]) -> str:
    """One line for a report: CPU, cores, memory, platform, Python and versions."""
    versions = "".join(f", {k} {v}" for k, v in m.get("versions", {}).items())
    mem = f", {m['memory']}" if m.get("memory") else ""
    return (f"{m.get('cpu', '?')}, {m.get('nproc', '?')} cores (nproc){mem}; {m.get('platform', '?')}, "
            f"Python {m.get('python', '?')}{versions}")


def git_commit(*paths: str) -> str:
    """The checkout's short commit hash, `+dirty` when tracked files (under `paths`, when given) have
    uncommitted changes; `unknown` where there is no git or no repository (a copied tree)."""
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=True,
                              timeout=30).stdout.strip()

    try:
        head = git("rev-parse", "--short", "HEAD")
        dirty = git("status", "--porcelain", "--untracked-files=no", "--", *paths)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return head + ("+dirty" if dirty else "")


def now() -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())


def command(script: str, argv: Sequence[str] | None = None) -> str:
    """The command line that reproduces this run, from the repository root."""
    path = Path(script).resolve()
    shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
    return shlex.join(["python", str(shown), *(sys.argv[1:] if argv is None else argv)])


# --------------------------------------------------------------------------- statistics


def median(xs: Iterable[Any], key: str | None = None) -> float:
    """The median of `xs` (of each item's `key` when given)."""
    return statistics.median(x[key] for x in xs) if key is not None else statistics.median(xs)


def best(xs: Iterable[Any], key: str | None = None) -> float:
    """The smallest of `xs` (of each item's `key` when given)."""
    return min(x[key] for x in xs) if key is not None else min(xs)


def medians(runs: Mapping[K, Sequence[float]]) -> dict[K, float]:
    """{job: median of its runs}, for the jobs that have runs."""
    return {k: statistics.median(v) for k, v in runs.items() if len(v)}


def geomean(xs: Sequence[float]) -> float:
    return statistics.geometric_mean(xs) if xs else float("nan")


# --------------------------------------------------------------------------- running and timing


def rotated(items: Sequence[T], r: int) -> list[T]:
    """`items` rotated left by `r`: repeat r's order in an interleaved comparison."""
    if not items:
        return []
    k = r % len(items)
    return [*items[k:], *items[:k]]


def interleave(jobs: Mapping[K, Callable[[], T]], repeat: int, warmup: int = 0) -> dict[K, list[T]]:
    """Run every job once per repeat, `repeat` times, the order rotated by one each repeat, so that all
    sides of a comparison see the same load on a shared, noisy machine and none always runs first;
    returns each job's results in order. `warmup` rounds run first and are not kept."""
    names = list(jobs)
    out: dict[K, list[T]] = {k: [] for k in names}
    for r in range(-warmup, repeat):
        for k in rotated(names, r):
            got = jobs[k]()
            if r >= 0:
                out[k].append(got)
    return out


def timed(fn: Callable[..., T], *args: Any, **kw: Any) -> tuple[float, T]:
    """(wall seconds, result) of one call."""
    t0 = time.perf_counter()
    out = fn(*args, **kw)
    return time.perf_counter() - t0, out


def run_child(cmd: Sequence[str], timeout: float | None = None, env: Mapping[str, str] | None = None,
              cwd: Path = ROOT) -> dict[str, Any]:
    """Run one command: its exit status, wall time, peak resident memory (its own, from `wait4`, in
    bytes) and output (stdout and stderr together). Past `timeout` seconds its whole process group
    (mpiexec and its ranks too) is killed and `timed_out` set."""
    with tempfile.TemporaryFile() as out:
        t0 = time.perf_counter()
        p = subprocess.Popen(list(cmd), stdout=out, stderr=subprocess.STDOUT, cwd=cwd,
                             env=None if env is None else dict(env), start_new_session=timeout is not None)
        got: dict[str, Any] = {}

        def reap() -> None:
            _, status, ru = os.wait4(p.pid, 0)
            got.update(wall=time.perf_counter() - t0, status=status, ru=ru)

        waiter = threading.Thread(target=reap, daemon=True)
        waiter.start()
        waiter.join(timeout)
        timed_out = waiter.is_alive()
        if timed_out:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            waiter.join()
        p.returncode = os.waitstatus_to_exitcode(got["status"])  # reaped here: Popen must not wait again
        out.seek(0)
        text = out.read().decode(errors="replace")
    return {"cmd": shlex.join(cmd), "rc": p.returncode, "wall_s": got["wall"], "timed_out": timed_out,
            "peak_rss": got["ru"].ru_maxrss * 1024, "out": text}


def g2pl_command() -> list[str]:
    """The `g2pl` command: next to this Python (a virtualenv's bin/), else on PATH, else this Python
    running `g2pl.cli` (from the repository root)."""
    here = Path(sys.executable).parent / "g2pl"
    if here.exists():
        return [str(here)]
    found = shutil.which("g2pl")
    return [found] if found else [sys.executable, "-m", "g2pl.cli"]


def kron_scale(spec: str) -> int | None:
    """S of a `kron:S[:...]` graph spec, else None."""
    m = re.fullmatch(r"kron:(\d+)(:.*)?", spec.strip())
    return int(m.group(1)) if m else None


TRIAL_TIME = re.compile(r"Trial Time:\s+([0-9.eE+-]+)")


def gapbs(cmd: Sequence[str], timeout: float = 3600) -> tuple[float, str]:
    """Run a GAPBS binary on one thread: (its first `Trial Time`, the command as run)."""
    out = subprocess.run(list(cmd), capture_output=True, text=True, env=dict(os.environ, OMP_NUM_THREADS="1"),
                         timeout=timeout, check=True).stdout
    found = TRIAL_TIME.findall(out)
    if not found:
        raise RuntimeError(f"no 'Trial Time' in the output of {shlex.join(cmd)}")
    return float(found[0]), "OMP_NUM_THREADS=1 " + shlex.join(cmd)


# --------------------------------------------------------------------------- output


def log(msg: str) -> None:
    print(msg, flush=True)


def _plain(x: Any) -> Any:
    """JSON for what `json` does not know: NumPy scalars and arrays as Python values, the rest as text."""
    tolist = getattr(x, "tolist", None)
    return tolist() if callable(tolist) else str(x)


def write_report(out: Path | str, name: str, markdown: str, data: Any) -> tuple[Path, Path]:
    """Write OUT/NAME.md and OUT/NAME.json (OUT made if missing), each through a temporary file and a
    rename, so a run killed while writing leaves the previous complete file. Returns both paths."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    paths = (out / f"{name}.md", out / f"{name}.json")
    for path, text in zip(paths, (markdown, json.dumps(data, indent=1, default=_plain) + "\n"), strict=True):
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(text)
        tmp.replace(path)
    return paths


def publish(out: Path | str, name: str, lines: Sequence[str], data: Any) -> str:
    """The report's `lines` as markdown, written with `data` (write_report) and printed; returns it."""
    markdown = "\n".join(lines) + "\n"
    write_report(out, name, markdown, data)
    print(markdown)
    return markdown


def kernels_mode() -> str:
    """How the compiled CPU kernels run here: numba's presence and G2PL_NUMBA."""
    import importlib.util
    import os

    if importlib.util.find_spec("numba") is None:
        return "none (numba not installed)"
    return {"0": "off (G2PL_NUMBA=0)", "1": "always (G2PL_NUMBA=1)"}.get(
        os.environ.get("G2PL_NUMBA", ""), "auto (for large work)")
