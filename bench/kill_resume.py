"""Kill/resume soak: SIGKILL a run at random supersteps, resume, and compare with an uninterrupted run.

    python bench/kill_resume.py [--cycles 20] [--np 1 2] [--graph er:20000:80000] [--seed 1] [--quick]

For each rank count of `--np`, each cycle picks a program and a superstep at random, runs
`g2pl run --checkpoint` with the G2PL_KILL_AT hook (the process, or with several ranks a random
rank, dies by SIGKILL when that superstep ends), then `--resume`s from the same directory and checks
the output equals the uninterrupted run's, byte for byte.  The cycles are the same for every rank
count (one seed).  Output: OUT/kill_resume.{md,json} (kill_resume_quick.* with --quick); exit status
1 when a cycle did not reproduce the uninterrupted result.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import harness

ROOT = harness.ROOT
PROGRAMS = {"mis": [], "matching": [], "pjcc": [], "cc": [], "kcore": ["--arg", "k=3"],
            "pagerank": ["--arg", "iters=30", "--arg", "damping=0.85"]}


def soak(cycles: int, np_: int, graph: str, seed: int, log) -> list[str]:
    """`cycles` kill/resume cycles on `np_` ranks; one line per cycle, ending in `ok` or `MISMATCH`."""
    rng = random.Random(seed)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("G2PL_KILL_AT", None)
    lines = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        refs: dict[str, tuple[bytes, int]] = {}
        for cycle in range(cycles):
            prog = rng.choice(sorted(PROGRAMS))
            base = [sys.executable, "-m", "g2pl.cli", "run", str(ROOT / "programs" / f"{prog}.g2pl"), "--graph",
                    graph, "--seed", str(seed), "--np", str(np_), "--quiet", *PROGRAMS[prog]]
            if prog not in refs:
                out, st = tmp / f"{prog}.ref.json", tmp / f"{prog}.stats.json"
                subprocess.run(base + ["--output", str(out), "--stats", str(st)], env=env, check=True)
                refs[prog] = (out.read_bytes(), json.loads(st.read_text())["supersteps"])
            ref, supersteps = refs[prog]
            kill_at = rng.randrange(1, max(2, supersteps - 1))
            rank = rng.randrange(np_)
            every = rng.choice([1, 2, 3, 5])
            d = tmp / f"ck{cycle}"
            killed = subprocess.run(base + ["--checkpoint", str(d), "--checkpoint-every", str(every)],
                                    env=dict(env, G2PL_KILL_AT=f"{rank}:{kill_at}"), capture_output=True)
            out = tmp / f"out{cycle}.json"
            if not (d / "manifest.json").exists():  # killed before the first checkpoint: start over
                r = subprocess.run(base + ["--checkpoint", str(d), "--output", str(out)], env=env,
                                   capture_output=True)
            else:
                r = subprocess.run(base + ["--resume", str(d), "--checkpoint-every", str(every), "--output",
                                           str(out)], env=env, capture_output=True)
            same = r.returncode == 0 and out.exists() and out.read_bytes() == ref
            lines.append(f"cycle {cycle:>3}: {prog:<9} killed rank {rank} at superstep {kill_at:>3} "
                         f"(exit {killed.returncode}), checkpoint every {every}: {'ok' if same else 'MISMATCH'}")
            log(lines[-1])
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = harness.parser(__doc__, quick="4 cycles on er:2000:8000", seed=1)
    ap.add_argument("--cycles", type=int, default=20)
    ap.add_argument("--np", type=int, nargs="+", default=[1], help="rank counts, one soak each (default 1)")
    ap.add_argument("--graph", default="er:20000:80000")
    a = ap.parse_args(argv)
    if a.quick:
        a.cycles, a.graph = 4, "er:2000:8000"
    m, commit = harness.machine(()), harness.git_commit()
    md = ["# Kill/resume soak (bench/kill_resume.py)", "",
          f"Commit {commit}, {harness.now()}; {harness.describe(m)}.", ""]
    res = {"commit": commit, "machine": m, "graph": a.graph, "seed": a.seed, "cycles": a.cycles, "soaks": []}
    failed = 0
    for np_ in a.np:
        t0 = time.perf_counter()
        lines = soak(a.cycles, np_, a.graph, a.seed, harness.log)
        ok = sum(line.endswith(": ok") for line in lines)
        failed += a.cycles - ok
        total = (f"{ok}/{a.cycles} kill/resume cycles reproduced the uninterrupted result "
                 f"({time.perf_counter() - t0:.0f} s, {np_} rank(s), graph {a.graph})")
        harness.log(total)
        cmd = harness.command(__file__, [*map(str, ["--cycles", a.cycles, "--np", np_, "--graph", a.graph,
                                                     "--seed", a.seed])])
        md += [f"## `{cmd}`", "", "```", *lines, total, "```", ""]
        res["soaks"].append({"np": np_, "ok": ok, "command": cmd, "cycles": lines})
    harness.write_report(a.out, harness.stem("kill_resume", a.quick), "\n".join(md), res)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
