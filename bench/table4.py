"""Reproduce the main paper's Table 4: greedy maximal matching at -O0 vs -O2 on several ranks.

The paper (16 workers, Watts-Strogatz graphs with rewiring 0.5 and |E| = 10|V|)
reports 2.84x fewer messages, 0.855x supersteps and 2.6-3.4x less time with its
optimizations. This runs `programs/matching.g2pl` through the CLI on
`ws:N:20:0.5` (N = 100k, 200k, 400k) and `kron:16..18`, at -O0 and -O2, with
`--np` ranks, and writes a markdown table, the raw JSON and a plot.

    python bench/table4.py [--np 2] [--quick] [--repeat 1] [--out bench/results]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GRAPHS = ["ws:100000:20:0.5", "ws:200000:20:0.5", "ws:400000:20:0.5", "kron:16", "kron:17", "kron:18"]
QUICK = ["ws:20000:20:0.5", "kron:12"]


def run(graph: str, opt: str, np_: int, seed: int) -> dict:
    with tempfile.TemporaryDirectory() as d:
        stats = Path(d) / "s.json"
        cmd = [sys.executable, "-m", "g2pl.cli", "run", str(ROOT / "programs" / "matching.g2pl"), "--graph", graph,
               "--seed", str(seed), f"-{opt}", "--np", str(np_), "--stats", str(stats), "--quiet"]
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=3600)
        if r.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed: {r.stderr.strip()}")
        s = json.loads(stats.read_text())
    return {"supersteps": s["supersteps"], "messages": s["messages"], "bytes": s["bytes"], "time_s": s["time_s"],
            "graph_n": s["graph"]["n"], "graph_m": s["graph"]["m"], "cmd": " ".join(cmd[2:])}


def machine() -> str:
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{os.cpu_count()} cores, {model or platform.processor()}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--np", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=1, help="runs per configuration (median time is reported)")
    ap.add_argument("--quick", action="store_true", help="small graphs only (a smoke test)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results"))
    a = ap.parse_args()
    graphs = QUICK if a.quick else GRAPHS
    rows = []
    for g in graphs:
        res = {}
        for opt in ("O0", "O2"):
            runs = [run(g, opt, a.np, a.seed) for _ in range(a.repeat)]
            r = dict(runs[0])
            r["time_s"] = statistics.median(x["time_s"] for x in runs)
            res[opt] = r
            print(f"{g} -{opt}: {r['supersteps']} supersteps, {r['messages']} messages, {r['bytes']} bytes, "
                  f"{r['time_s']:.2f} s", flush=True)
        o0, o2 = res["O0"], res["O2"]
        rows.append({
            "graph": g, "n": o0["graph_n"], "m": o0["graph_m"], "O0": o0, "O2": o2,
            "messages_ratio": o0["messages"] / max(o2["messages"], 1),
            "supersteps_ratio": o2["supersteps"] / o0["supersteps"],
            "bytes_ratio": o0["bytes"] / max(o2["bytes"], 1),
            "speedup": o0["time_s"] / o2["time_s"],
        })
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    lines = [
        f"# Table 4 reproduced: matching, -O0 vs -O2, {a.np} ranks",
        "",
        f"Machine: {machine()}. Commit {commit}. Command: `python bench/table4.py --np {a.np} --repeat {a.repeat}"
        f"{' --quick' if a.quick else ''}`. Times are run times (graph loading excluded), median of {a.repeat}.",
        "",
        "| graph | V | E | SS -O0 | SS -O2 | SS ratio | messages -O0 | messages -O2 | fewer messages | bytes -O0 |"
        " bytes -O2 | fewer bytes | time -O0 (s) | time -O2 (s) | speed-up |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        o0, o2 = r["O0"], r["O2"]
        lines.append(
            f"| {r['graph']} | {r['n']} | {r['m']} | {o0['supersteps']} | {o2['supersteps']} | "
            f"{r['supersteps_ratio']:.3f} | {o0['messages']:.3e} | {o2['messages']:.3e} | {r['messages_ratio']:.2f}x | "
            f"{o0['bytes']:.3e} | {o2['bytes']:.3e} | {r['bytes_ratio']:.2f}x | {o0['time_s']:.2f} | "
            f"{o2['time_s']:.2f} | {r['speedup']:.2f}x |")
    lines += ["", "Paper (16 workers): 2.84x fewer messages, 0.855x supersteps, 2.6-3.4x faster. "
              "Targets here: messages >= 3x fewer, supersteps <= 0.85x, bytes >= 3x fewer, time >= 3.4x faster."]
    name = "table4_quick" if a.quick else "table4"
    (out / f"{name}.md").write_text("\n".join(lines) + "\n")
    (out / f"{name}.json").write_text(json.dumps({"np": a.np, "commit": commit, "machine": machine(), "rows": rows},
                                                 indent=1))
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(9, 4))
        keys = [("messages_ratio", "fewer messages (x)"), ("bytes_ratio", "fewer bytes (x)"),
                ("speedup", "speed-up (x)"), ("supersteps_ratio", "supersteps -O2/-O0")]
        width = 0.2
        for k, (key, label) in enumerate(keys):
            ax.bar([i + k * width for i in range(len(rows))], [r[key] for r in rows], width, label=label)
        ax.set_xticks([i + 1.5 * width for i in range(len(rows))], [r["graph"] for r in rows], rotation=15)
        ax.axhline(3.0, color="grey", lw=0.8, ls="--")
        ax.set_yscale("log")
        ax.set_title(f"Matching, -O2 vs -O0 on {a.np} ranks")
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(out / f"{name}.png", dpi=110)
    except ImportError:
        print("matplotlib not installed (pip install '.[bench]'): no plot", file=sys.stderr)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
