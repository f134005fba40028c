"""Reproduce the main paper's Table 4: greedy maximal matching without and with the optimizations.

The paper's "without optimizations" is the original G2PL compiler, which already reused unchanged
aggregations and merged supersteps: that is -O1 here (`reuse` + `merge`), so the ratios are taken
against -O1.  -O0 (the naive code: one superstep per aggregation, the whole record along every
adjacency entry) and -O2 with each pass disabled in turn are listed too, so each pass's share shows.
The paper (16 workers, Watts-Strogatz graphs with rewiring 0.5 and |E| = 10|V|) reports, for
random 1M: 131 -> 112 supersteps, 1.30e9 -> 4.57e8 messages (2.84x fewer), 64.7 -> 19.5 s (3.3x);
2.6-3.4x faster over its six graphs.

This runs `programs/matching.g2pl` through the CLI on `ws:N:20:0.5` and `kron:S` graphs with `--np`
ranks, checks that every configuration finds the same matching, and writes a markdown table, the
raw JSON and a plot.  Configurations of one graph run interleaved, `--repeat` times (median time).

    python bench/table4.py [--np 2] [--quick] [--repeat 1] [--graphs G,G] [--configs O1,O2] [--out DIR]
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import harness

from g2pl.compiler.passes import PASS_NAMES

ROOT = harness.ROOT

GRAPHS = ["ws:100000:20:0.5", "ws:200000:20:0.5", "ws:400000:20:0.5", "ws:1000000:20:0.5",
          "kron:16", "kron:17", "kron:18"]
QUICK = ["ws:20000:20:0.5", "kron:12"]
CONFIGS = ["O0", "O1", "O2"] + [f"O2-{p}" for p in PASS_NAMES]
BASE = "O1"  # the paper's baseline: the original compiler (reuse + merge)

#: Table 4 of the main paper (16 workers): (graph, SS, messages, time s) without / with its optimizations
PAPER = [
    ("random 1M", (131, 1300000000, 64.693), (112, 457267206, 19.457)),
    ("random 2M", (131, 2600000000, 130.997), (112, 914497624, 39.295)),
    ("random 4M", (131, 5200000000, 264.600), (112, 1829124702, 81.248)),
    ("wikipedia 1M", (47, 460000000, 17.104), (40, 192904261, 5.429)),
    ("wikipedia 2M", (54, 1060000000, 32.094), (46, 430541571, 11.897)),
    ("wikipedia 4M", (68, 2680000000, 69.504), (58, 1083349593, 24.665)),
]


def flags(cfg: str) -> list[str]:
    """`O2-prune` -> ['-O2', '--disable-pass', 'prune']."""
    level, _, off = cfg.partition("-")
    return [f"-{level}"] + (["--disable-pass", off] if off else [])


def run(graph: str, cfg: str, np_: int, seed: int) -> dict:
    with tempfile.TemporaryDirectory() as d:
        stats, out = Path(d) / "s.json", Path(d) / "o.json"
        cmd = [sys.executable, "-m", "g2pl.cli", "run", str(ROOT / "programs" / "matching.g2pl"), "--graph", graph,
               "--seed", str(seed), *flags(cfg), "--np", str(np_), "--stats", str(stats), "--output", str(out),
               "--quiet"]
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=3600)
        if r.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed: {r.stderr.strip()}")
        s = json.loads(stats.read_text())
        answer = hashlib.sha256(out.read_bytes()).hexdigest()[:16]
    return {"supersteps": s["supersteps"], "messages": s["messages"], "record_bytes": s["record_bytes"],
            "bytes": s["bytes"], "time_s": s["time_s"], "answer": answer, "graph_n": s["graph"]["n"],
            "graph_m": s["graph"]["m"], "cmd": " ".join(["g2pl", *cmd[3:]]),
            "per_rank": [{k: r.get(k) for k in ("comm_s", "compute_s")} for r in s.get("per_rank", [])]}


def measure(graph: str, configs: list[str], np_: int, seed: int, repeat: int) -> dict:
    """Every configuration of one graph, interleaved `repeat` times; median time, first run's counts."""
    runs = harness.interleave({c: lambda c=c: run(graph, c, np_, seed) for c in configs}, repeat)
    res = {}
    for c, rs in runs.items():
        r = dict(rs[0])
        r["time_s"] = harness.median(rs, "time_s")
        r["times"] = [x["time_s"] for x in rs]
        res[c] = r
        print(f"{graph} {c}: {r['supersteps']} supersteps, {r['messages']} messages, {r['bytes']} bytes, "
              f"{r['time_s']:.3f} s", flush=True)
    answers = {r["answer"] for r in res.values()}
    if len(answers) != 1:
        raise RuntimeError(f"{graph}: the configurations found different matchings: {answers}")
    return res


def ratios(res: dict, base: str = BASE) -> dict:
    """Against `base`: messages, record bytes and bytes fewer, speed-up, supersteps (cfg / base)."""
    b = res[base]
    return {c: {"messages": b["messages"] / max(r["messages"], 1),
                "record_bytes": b["record_bytes"] / max(r["record_bytes"], 1),
                "bytes": b["bytes"] / max(r["bytes"], 1),
                "speedup": b["time_s"] / max(r["time_s"], 1e-9),
                "supersteps": r["supersteps"] / b["supersteps"]} for c, r in res.items()}


def table(rows: list[dict], np_: int) -> list[str]:
    out = []
    for row in rows:
        res, rat = row["results"], row["ratios"]
        out += [f"### {row['graph']} (|V| = {row['n']}, |E| = {row['m']}), {np_} ranks", "",
                f"| config | supersteps | messages | record bytes | bytes between ranks | time (s) | "
                f"vs {BASE}: fewer messages | fewer bytes | speed-up |",
                "|---|---|---|---|---|---|---|---|---|"]
        for c, r in res.items():
            q = rat[c]
            name = f"**{c}**" if c in ("O1", "O2") else c
            out.append(f"| {name} | {r['supersteps']} | {r['messages']:,} | {r['record_bytes']:,} | {r['bytes']:,} | "
                       f"{r['time_s']:.3f} | {q['messages']:.2f}x | {q['bytes']:.2f}x | {q['speedup']:.2f}x |")
        out.append("")
    out += ["### The paper's Table 4 (16 workers), without (the original compiler) and with its optimizations", "",
            "| graph | SS without | SS with | messages without | messages with | fewer messages | time without (s) |"
            " time with (s) | speed-up |", "|---|---|---|---|---|---|---|---|---|"]
    for g, (s0, m0, t0), (s1, m1, t1) in PAPER:
        out.append(f"| {g} | {s0} | {s1} | {m0:,} | {m1:,} | {m0 / m1:.2f}x | {t0:.3f} | {t1:.3f} | {t0 / t1:.2f}x |")
    return out + [""]


def main(argv: list[str] | None = None) -> int:
    ap = harness.parser(__doc__, quick=f"{','.join(QUICK)} only", repeat=1, seed=1)
    ap.add_argument("--np", type=int, default=2)
    ap.add_argument("--graphs", help="comma-separated graph specs (default: ws:N:20:0.5 for N = 100k..1M, kron:16-18)")
    ap.add_argument("--configs", help=f"comma-separated configurations (default: {','.join(CONFIGS)})")
    ap.add_argument("--name", help="output file stem (default: table4, or table4_quick)")
    a = ap.parse_args(argv)
    graphs = a.graphs.split(",") if a.graphs else QUICK if a.quick else GRAPHS
    configs = a.configs.split(",") if a.configs else CONFIGS
    bad = [c for c in configs if c not in CONFIGS]
    if bad or BASE not in configs:
        ap.error(f"configurations are among {', '.join(CONFIGS)} and include {BASE}; not: {', '.join(bad)}")
    rows = []
    for g in graphs:
        res = measure(g, configs, a.np, a.seed, a.repeat)
        first = next(iter(res.values()))
        rows.append({"graph": g, "n": first["graph_n"], "m": first["graph_m"], "results": res, "ratios": ratios(res)})
    commit, m = harness.git_commit(), harness.machine()
    load = os.getloadavg()
    cmdline = harness.command(__file__, argv)
    lines = [f"# Table 4 reproduced: matching, against -O1 (the paper's baseline), {a.np} ranks", "",
             f"Machine: {harness.describe(m)}, load average {load[0]:.1f} at the end. Commit {commit}. "
             f"Command: `{cmdline}`. "
             f"Times are run times (graph loading excluded), median of {a.repeat} interleaved run(s). Every "
             "configuration found the same matching. `O2-NAME` is -O2 with `--disable-pass NAME`.", ""]
    lines += table(rows, a.np)
    name = a.name or harness.stem("table4", a.quick)
    out = a.out
    harness.write_report(out, name, "\n".join(lines) + "\n", {"np": a.np, "commit": commit, "machine": m,
                                                              "load": load, "command": cmdline, "rows": rows})
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(10, 4))
        keys = [("messages", "fewer messages (x)"), ("bytes", "fewer bytes (x)"), ("speedup", "speed-up (x)")]
        width = 0.25
        for k, (key, label) in enumerate(keys):
            ax.bar([i + k * width for i in range(len(rows))], [r["ratios"].get("O2", {}).get(key, 0) for r in rows],
                   width, label=label)
        ax.set_xticks([i + width for i in range(len(rows))], [r["graph"] for r in rows], rotation=15)
        ax.axhline(2.84, color="grey", lw=0.8, ls="--", label="paper: 2.84x fewer messages")
        ax.set_yscale("log")
        ax.set_title(f"Matching, -O2 against -O1 (the paper's baseline) on {a.np} ranks")
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(out / f"{name}.png", dpi=110)
    except ImportError:
        print("matplotlib not installed (pip install '.[bench]'): no plot", file=sys.stderr)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
