"""Kill/resume soak: SIGKILL a run at random supersteps, resume, and compare with an uninterrupted run.

    python bench/kill_resume.py [--cycles 20] [--np 1] [--graph er:20000:80000] [--seed 1]

Each cycle picks a program and a superstep at random, runs `g2pl run --checkpoint` with the
G2PL_KILL_AT hook (the process dies by SIGKILL when that superstep ends), then `--resume`s
from the same directory and checks the output equals the uninterrupted run's, byte for byte.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROGRAMS = {"mis": [], "matching": [], "pjcc": [], "cc": [], "kcore": ["--arg", "k=3"],
            "pagerank": ["--arg", "iters=30", "--arg", "damping=0.85"]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cycles", type=int, default=20)
    ap.add_argument("--np", type=int, default=1)
    ap.add_argument("--graph", default="er:20000:80000")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("G2PL_KILL_AT", None)
    ok = 0
    t0 = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        refs: dict[str, tuple[bytes, int]] = {}
        for cycle in range(a.cycles):
            prog = rng.choice(sorted(PROGRAMS))
            base = [sys.executable, "-m", "g2pl.cli", "run", str(ROOT / "programs" / f"{prog}.g2pl"), "--graph",
                    a.graph, "--seed", str(a.seed), "--np", str(a.np), "--quiet", *PROGRAMS[prog]]
            if prog not in refs:
                out, st = tmp / f"{prog}.ref.json", tmp / f"{prog}.stats.json"
                subprocess.run(base + ["--output", str(out), "--stats", str(st)], env=env, check=True)
                refs[prog] = (out.read_bytes(), json.loads(st.read_text())["supersteps"])
            ref, supersteps = refs[prog]
            kill_at = rng.randrange(1, max(2, supersteps - 1))
            rank = rng.randrange(a.np)
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
            ok += same
            print(f"cycle {cycle:>3}: {prog:<9} killed rank {rank} at superstep {kill_at:>3} "
                  f"(exit {killed.returncode}), checkpoint every {every}: {'ok' if same else 'MISMATCH'}",
                  flush=True)
    print(f"{ok}/{a.cycles} kill/resume cycles reproduced the uninterrupted result "
          f"({time.time() - t0:.0f} s, {a.np} rank(s), graph {a.graph})")
    return 0 if ok == a.cycles else 1


if __name__ == "__main__":
    sys.exit(main())
