"""Old vs new: the compiled programs of this checkout against those of another git revision.

    python bench/compare.py --baseline REV [--graphs kron:18,kron:20] [--repeat 7]

A refactor must not slow the compiled programs down.  REV is checked out into a
temporary `git worktree` (removed afterwards, also on errors); each side runs in
its own long-lived process (`PYTHONPATH` = its checkout), which loads the graph
once and compiles bfs, pagerank, cc, sssp and matching; the driver then asks the
two processes for one run at a time, alternating which side goes first, so both
see the same machine load.  Reported per (graph, algorithm): the median of the
runs' `stats["time_s"]` on each side, new/old, whether it is within +-5%, and
whether the answers are identical (a hash of the JSON output).  Writes
compare_baseline.{json,md} into compare.py's `--out` (bench/results); exit status 1 if an answer differs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import harness

ROOT = harness.ROOT
ALGORITHMS = ("bfs", "pagerank", "cc", "sssp", "matching")

# runs inside each side's process (the old checkout has no copy of this file)
RUNNER = r"""
import hashlib, json, sys
from pathlib import Path
import g2pl
graph = g2pl.load_graph(sys.argv[1], seed=1)
root = int(graph.ids[graph.src[0]])
args = {"bfs": {"root": root}, "pagerank": {"iters": 20, "damping": 0.85}, "cc": {}, "sssp": {"root": root},
        "matching": {}}
load = getattr(g2pl, "compile_file", None) or (lambda p: g2pl.compile(Path(p)))
progs = {name: load(f"programs/{name}.g2pl") for name in sys.argv[2].split(",")}
print(json.dumps({"ready": True}), flush=True)
for line in sys.stdin:
    name = line.strip()
    res = progs[name].run(graph, args=args[name], seed=1)
    out = json.dumps(res.output()["values"], sort_keys=True).encode()
    print(json.dumps({"time_s": res.stats["time_s"], "hash": hashlib.sha256(out).hexdigest()}), flush=True)
"""


def _git(*args: str, cwd: Path = ROOT) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def _side(checkout: Path, graph: str) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(checkout), OMP_NUM_THREADS="1")
    p = subprocess.Popen([sys.executable, "-c", RUNNER, graph, ",".join(ALGORITHMS)], cwd=checkout, env=env,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    if not line or not json.loads(line).get("ready"):
        raise SystemExit(f"{checkout}: the runner did not start on {graph}")
    return p


def _ask(p: subprocess.Popen, name: str) -> dict:
    p.stdin.write(name + "\n")
    p.stdin.flush()
    return json.loads(p.stdout.readline())


def compare(rev: str, graphs: list[str], repeat: int, out: Path = harness.RESULTS) -> int:
    old_commit = _git("rev-parse", "--short", rev)
    new_commit = harness.git_commit("g2pl")
    rows, failed = [], False
    with tempfile.TemporaryDirectory(prefix="g2pl-baseline-") as tmp:
        old = Path(tmp) / "old"
        _git("worktree", "add", "--detach", str(old), old_commit)
        try:
            for graph in graphs:
                sides = {"old": _side(old, graph), "new": _side(ROOT, graph)}
                try:
                    times: dict[tuple[str, str], list[float]] = {}
                    hashes: dict[tuple[str, str], set[str]] = {}
                    for r in range(repeat):
                        for k, name in enumerate(ALGORITHMS):
                            for side in harness.rotated(("old", "new"), r + k):
                                got = _ask(sides[side], name)
                                times.setdefault((name, side), []).append(got["time_s"])
                                hashes.setdefault((name, side), set()).add(got["hash"])
                finally:
                    for p in sides.values():
                        p.stdin.close()
                        p.wait()
                for name in ALGORITHMS:
                    o, n = harness.median(times[(name, "old")]), harness.median(times[(name, "new")])
                    same = hashes[(name, "old")] == hashes[(name, "new")] and len(hashes[(name, "new")]) == 1
                    failed |= not same
                    rows.append({"graph": graph, "algorithm": name, "old_s": o, "new_s": n, "ratio": n / o,
                                 "within_5pct": abs(n / o - 1) <= 0.05, "same_answer": same,
                                 "old_runs": times[(name, "old")], "new_runs": times[(name, "new")]})
                    print(f"{graph:10s} {name:9s} old {o:8.4f} s  new {n:8.4f} s  new/old {n / o:5.3f}"
                          f"{'' if abs(n / o - 1) <= 0.05 else '  (outside +-5%)'}"
                          f"{'' if same else '  ANSWERS DIFFER'}", flush=True)
        finally:
            _git("worktree", "remove", "--force", str(old))
    machine = harness.machine()
    report = {"machine": machine, "old": old_commit, "new": new_commit, "date": harness.now(), "repeat": repeat,
              "rows": rows}
    md = [f"# Compiled programs: {new_commit} (new) against {old_commit} (old)", "",
          f"{harness.describe(machine)}; {report['date']}; "
          f"medians of {repeat} runs per side, interleaved; `stats.time_s` through the Python API.", "",
          "| graph | algorithm | old (s) | new (s) | new/old | within ±5% | same answer |", "|---|---|---|---|---|---|---|"]
    md += [f"| {r['graph']} | {r['algorithm']} | {r['old_s']:.4f} | {r['new_s']:.4f} | {r['ratio']:.3f} | "
           f"{'yes' if r['within_5pct'] else 'no'} | {'yes' if r['same_answer'] else 'NO'} |" for r in rows]
    harness.write_report(out, "compare_baseline", "\n".join(md) + "\n", report)
    print(f"wrote {Path(out) / 'compare_baseline.md'}")
    return 1 if failed else 0
