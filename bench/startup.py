"""The fixed start-up of `g2pl run`: a tiny graph, so nearly all of the wall time is Python, its imports
and (without a cache hit) the compiler.

Three ways, each run `--repeat` times as a fresh process, best and median wall time and best CPU time
(user + system) of the process: `cold` (an empty compile cache every time: parse, compile, store),
`warm` (the entry is there: no parser, no code generator, no compiler imported) and `--no-cache`.
The graph is a 10-vertex ring written to a temporary edge-list file; the cache is a temporary
directory (G2PL_CACHE_DIR), never the user's.  CPU time moves less than wall time on a busy machine:
compare runs of the same machine and load (the report prints the load average).

    python bench/startup.py [--repeat 5] [--program programs/bfs.g2pl] [--arg root=1]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def measure(cmd: list[str], env: dict[str, str], repeat: int, before=None) -> tuple[float, float, float]:
    """(best wall, median wall, best CPU) seconds of `cmd` as a fresh process, `repeat` times."""
    walls, cpus = [], []
    for _ in range(repeat):
        if before is not None:
            before()
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
        walls.append(time.perf_counter() - t0)
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime)
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stderr}")
    return min(walls), sorted(walls)[len(walls) // 2], min(cpus)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--program", default="programs/bfs.g2pl")
    ap.add_argument("--arg", action="append", default=None, help="procedure argument (default: root=1)")
    a = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="g2pl-startup-") as tmp:
        graph = Path(tmp) / "ring10.txt"
        graph.write_text("".join(f"{i} {i % 10 + 1}\n" for i in range(1, 11)))
        cache = Path(tmp) / "cache"
        env = {**os.environ, "G2PL_CACHE_DIR": str(cache)}
        env.pop("G2PL_NO_CACHE", None)
        run = [sys.executable, "-m", "g2pl", "run", a.program, "--graph", str(graph)]
        for arg in a.arg or ["root=1"]:
            run += ["--arg", arg]
        rows = [("`python -c pass`", measure([sys.executable, "-c", "pass"], env, a.repeat)),
                ("`python -c 'import numpy'`", measure([sys.executable, "-c", "import numpy"], env, a.repeat)),
                ("cold (empty cache)", measure(run, env, a.repeat, lambda: shutil.rmtree(cache, ignore_errors=True))),
                ("`--no-cache`", measure([*run, "--no-cache"], env, a.repeat))]
        subprocess.run(run, cwd=ROOT, env=env, capture_output=True, check=True)  # the entry the warm runs hit
        rows.append(("warm (cache hit)", measure(run, env, a.repeat)))
    print(f"`{' '.join(['g2pl', *run[3:5], '--graph', 'RING10', *run[7:]])}`, best of {a.repeat}, "
          f"load average {os.getloadavg()[0]:.1f}, {os.cpu_count()} CPUs\n")
    print("| process | wall, best | wall, median | CPU, best |\n|---|---|---|---|")
    for name, (best, median, cpu) in rows:
        print(f"| {name} | {best:.3f} s | {median:.3f} s | {cpu:.3f} s |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
