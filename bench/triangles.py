"""Triangle counting: programs/triangles.g2pl against the GAP Benchmark Suite's `tc`, side by side.

Both run on one thread on a Graph500 Kronecker graph of the same scale
(g2pl's `kron:SCALE` and GAPBS's `-g SCALE`: the same generator parameters,
edge factor 16, but not the same random edges, so the triangle counts
differ; each is reported).  g2pl is timed in-process through the Python API
(`res.stats["time_s"]`: the supersteps, not loading or compiling), GAPBS by
its own "Trial Time"; runs are interleaved and the medians compared.  The
compiled answer is checked against networkx when the graph has at most
`--check-max-edges` edges, and its supersteps are reported.

    python bench/triangles.py --gapbs /path/to/gapbs            # kron:16, 5 interleaved runs each
    python bench/triangles.py --gapbs /path/to/gapbs --quick    # kron:12, 3 runs

Output: `results/triangles.{md,json}` (`triangles_quick.*` with `--quick`).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import g2pl  # noqa: E402


def gapbs_tc(gapbs: Path, scale: int) -> tuple[float, str]:
    """(trial seconds, the command) of one single-threaded GAPBS `tc` run."""
    cmd = [str(gapbs / "tc"), "-g", str(scale), "-n", "1"]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=3600, check=True).stdout
    return float(re.search(r"Trial Time:\s*([0-9.]+)", out).group(1)), "OMP_NUM_THREADS=1 " + " ".join(cmd)


def machine() -> str:
    cpu = platform.processor() or "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the start"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gapbs", type=Path, default=os.environ.get("GAPBS_DIR"),
                    help="folder of a GAPBS build (its `tc`); default $GAPBS_DIR; without it only g2pl runs")
    ap.add_argument("--scale", type=int, default=16)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="kron:12, 3 runs")
    ap.add_argument("--check-max-edges", type=int, default=300_000)
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    a = ap.parse_args()
    if a.quick:
        a.scale, a.repeat = 12, 3
    spec = f"kron:{a.scale}"
    g = g2pl.load_graph(spec, seed=0)
    prog = g2pl.compile_file(ROOT / "programs" / "triangles.g2pl")
    ours, theirs, cmds = [], [], []
    res = None
    for _ in range(a.repeat):  # interleaved: both see the same machine load
        res = prog.run(g)
        ours.append(res.stats["time_s"])
        if a.gapbs:
            t, cmd = gapbs_tc(Path(a.gapbs), a.scale)
            theirs.append(t)
            cmds = [cmd]
    assert res is not None
    total, steps = int(res["total"]), res.stats["supersteps"]
    checked = "not checked (graph above --check-max-edges)"
    if g.m <= a.check_max_edges:
        import networkx as nx

        G = nx.Graph()
        G.add_nodes_from(g.ids.tolist())
        G.add_edges_from(zip(g.ids[g.src].tolist(), g.ids[g.dst].tolist()))
        ok = sum(nx.triangles(G).values()) // 3 == total
        checked = "equal to networkx" if ok else "DIFFERS from networkx"
    med_ours = statistics.median(ours)
    med_theirs = statistics.median(theirs) if theirs else None
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()
    rows = [f"| g2pl `programs/triangles.g2pl`, 1 rank, NumPy | {med_ours:.3f} | "
            f"{', '.join(f'{x:.3f}' for x in ours)} |"]
    if med_theirs is not None:
        rows.append(f"| GAPBS `tc`, 1 thread | {med_theirs:.3f} | {', '.join(f'{x:.3f}' for x in theirs)} |")
    ratio = f"{med_ours / med_theirs:.2f}x GAPBS" if med_theirs else "(no GAPBS run)"
    report = "\n".join([
        f"# Triangle counting on {spec}", "",
        f"Machine: {machine()}; commit {commit}; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.", "",
        f"g2pl graph: {g.n} vertices, {g.m} edges, {total} triangles ({checked}); {steps} supersteps.", "",
        "| run | median s | runs (interleaved) |", "|---|---|---|", *rows, "",
        f"g2pl / GAPBS (medians): **{ratio}**.", "",
        "Commands: `prog.run(g2pl.load_graph('" + spec + "', seed=0))`" + "".join(f", `{c}`" for c in cmds), "",
    ])
    a.out.mkdir(parents=True, exist_ok=True)
    name = "triangles_quick" if a.quick else "triangles"
    (a.out / f"{name}.md").write_text(report)
    (a.out / f"{name}.json").write_text(json.dumps({
        "graph": spec, "n": g.n, "m": g.m, "triangles": total, "checked": checked, "supersteps": steps,
        "g2pl_s": ours, "gapbs_s": theirs, "ratio": (med_ours / med_theirs) if med_theirs else None,
        "commit": commit, "machine": machine(), "commands": cmds}, indent=1))
    print(report)
    return 0 if "DIFFERS" not in checked else 1


if __name__ == "__main__":
    sys.exit(main())
