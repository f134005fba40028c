"""Graph build time: from edge arrays in hand to the graph a one-rank `g2pl run` computes on.

How: the edges of `--graph` (default kron:20) are generated once and saved; each sample is a fresh
process that loads them (not timed), builds the `Graph` (`build_graph_from`: relabelling, self-loops,
duplicates, sort, both CSR directions) and then renumbers as `g2pl run --renumber auto` does (the
one-rank degree view when degrees are skewed, else the ID-order graph itself): wall and CPU seconds
of each phase, and the peak of traced allocations above the edge arrays (NumPy's own allocations,
`tracemalloc`). With `--baseline REV` the same runs are made with REV's `g2pl` (a temporary `git
worktree`, removed afterwards), the two sides interleaved (the order rotated each repeat); a digest of
every array of the graph and of the view checks that both sides built the same thing. Medians and
best of the repeats; on a shared machine compare the sides of one report only.

With `--numba 1` the samples run with G2PL_NUMBA=1 (the compiled renumbering pass, numba's loading
counted in the renumbering time); `0` without; by default `auto`, as `g2pl run` does.

    python bench/build.py [--graph kron:20] [--directed] [--baseline REV] [--numba auto|0|1] [--repeat 5] [--quick]
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import harness
import numpy as np

from g2pl.graph.generators import _edges, parse_generator

# runs in each sample's process, with PYTHONPATH = the side's checkout
CHILD = r"""
import hashlib, json, sys, time, tracemalloc
import numpy as np
from g2pl.graph.graph import build_graph_from
from g2pl.runtime.partition import resolve_renumber, whole, whole_by_degree
d = np.load(sys.argv[1])
directed = sys.argv[2] == "1"
u, v, n = d["u"], d["v"], int(d["n"])
del d
tracemalloc.start()
base = tracemalloc.get_traced_memory()[0]
w0, c0 = time.perf_counter(), time.process_time()
edges = [u, v]
del u, v
g = build_graph_from(edges, None, directed=directed, name="bench", extra_ids=np.arange(n, dtype=np.int64))
w1, c1 = time.perf_counter(), time.process_time()
renumber = resolve_renumber(g, "auto")
view = whole_by_degree(g) if renumber == "degree" else whole(g)
w2, c2 = time.perf_counter(), time.process_time()
peak = tracemalloc.get_traced_memory()[1] - base
tracemalloc.stop()
h = hashlib.sha256()
for obj in (view, g):
    for k in ("in_indptr", "in_nbr", "in_eid", "out_indptr", "out_nbr", "out_eid"):
        h.update(np.ascontiguousarray(getattr(obj, k)).tobytes())
print(json.dumps({"build_s": w1 - w0, "build_cpu_s": c1 - c0, "renumber_s": w2 - w1, "renumber_cpu_s": c2 - c1,
                  "total_s": w2 - w0, "total_cpu_s": c2 - c0, "peak_mb": peak / 2**20, "renumber": renumber,
                  "m": g.m, "digest": h.hexdigest()}))
"""

FIELDS = ("build_s", "build_cpu_s", "renumber_s", "renumber_cpu_s", "total_s", "total_cpu_s", "peak_mb")


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=harness.ROOT, check=True, capture_output=True, text=True).stdout.strip()


def _sample(checkout: Path, edges: Path, directed: bool, numba: str) -> dict:
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(checkout), "OMP_NUM_THREADS": "1", "G2PL_NUMBA": numba}
    got = harness.run_child([sys.executable, "-c", CHILD, str(edges), "1" if directed else "0"], timeout=1800,
                            env=env, cwd=checkout)
    if got["rc"] != 0:
        return {"error": got["out"][-2000:]}
    return json.loads(got["out"].strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = harness.parser(__doc__, quick="kron:14, 2 repeats", repeat=5, seed=1)
    ap.add_argument("--graph", default="kron:20", help="a generator spec (default kron:20)")
    ap.add_argument("--directed", action="store_true", help="build the directed graph")
    ap.add_argument("--baseline", metavar="REV", help="also time this git revision's build, interleaved")
    ap.add_argument("--numba", choices=("auto", "0", "1"), default="auto",
                    help="G2PL_NUMBA for the samples (default auto, as `g2pl run`)")
    ap.add_argument("--name", default="build", help="report name (default build)")
    a = ap.parse_args(argv)
    if a.quick:
        a.graph, a.repeat = "kron:14", 2
    gen, params = parse_generator(a.graph)
    n, u, v = _edges(gen, params, a.directed, a.seed, a.graph, 0, 1)
    with tempfile.TemporaryDirectory(prefix="g2pl-build-") as tmp:
        edges = Path(tmp) / "edges.npz"
        np.savez(edges, u=u, v=v, n=n)
        del u, v
        sides = {"new": harness.ROOT}
        worktree = Path(tmp) / "baseline"
        if a.baseline:
            _git("worktree", "add", "--detach", str(worktree), a.baseline)
            sides = {"old": worktree, "new": harness.ROOT}
        try:
            runs = harness.interleave({k: (lambda p=p: _sample(p, edges, a.directed, a.numba)) for k, p in sides.items()},
                                      a.repeat)
        finally:
            if a.baseline:
                _git("worktree", "remove", "--force", str(worktree))
    failed = [r["error"] for rs in runs.values() for r in rs if "error" in r]
    digests = {r["digest"] for rs in runs.values() for r in rs if "digest" in r}
    same = len(digests) == 1 and not failed
    res = {"graph": a.graph, "directed": a.directed, "baseline": a.baseline, "numba": a.numba, "repeat": a.repeat,
           "runs": runs,
           "median": {k: {f: harness.median(rs, f) for f in FIELDS} for k, rs in runs.items() if not failed},
           "best": {k: {f: harness.best(rs, f) for f in FIELDS} for k, rs in runs.items() if not failed},
           "same_arrays": same, "machine": harness.machine(), "commit": harness.git_commit(),
           "command": harness.command(__file__, argv), "when": harness.now()}
    md = [f"# Graph build: {a.graph}{' (directed)' if a.directed else ''}", "",
          f"Machine: {harness.describe(res['machine'])}; commit {res['commit']}; {res['when']}.",
          f"Command: `{res['command']}`", "",
          f"A fresh process per sample, sides interleaved, {a.repeat} repeats, G2PL_NUMBA={a.numba}; seconds "
          "(wall, CPU for the total) and traced peak above the edge arrays.", ""]
    if failed:
        md += ["**A sample failed:**", "", "```", failed[0], "```"]
    else:
        md += ["| side | build (median) | renumber (median) | renumber CPU (median) | total (median) | total (best) "
               "| total CPU (median) | peak MiB |", "|---|---|---|---|---|---|---|---|"]
        for k in runs:
            md.append(f"| {k} ({a.baseline if k == 'old' else 'this checkout'}) "
                      f"| {res['median'][k]['build_s']:.2f} | {res['median'][k]['renumber_s']:.2f} "
                      f"| {res['median'][k]['renumber_cpu_s']:.2f} "
                      f"| {res['median'][k]['total_s']:.2f} | {res['best'][k]['total_s']:.2f} "
                      f"| {res['median'][k]['total_cpu_s']:.2f} | {res['median'][k]['peak_mb']:.0f} |")
        if "old" in runs:
            md += ["", f"new/old total: {res['median']['new']['total_s'] / res['median']['old']['total_s']:.2f} "
                   f"(median), {res['best']['new']['total_s'] / res['best']['old']['total_s']:.2f} (best)"]
        md += ["", f"Renumbering: {runs['new'][0]['renumber']}; m = {runs['new'][0]['m']:,}; "
               f"same arrays on every sample: {'yes' if same else '**no**'}."]
    text = "\n".join(md) + "\n"
    harness.write_report(a.out, harness.stem(a.name, a.quick), text, res)
    print(text)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
