"""Graph loading and memory at scale: where the time and the memory of a run go, kron:16 to kron:24.

    python bench/scale.py [--graphs kron:16,kron:18,kron:20,kron:22,kron:24,ws:1000000:20:0.5]
                          [--programs bfs,pagerank,cc] [--gapbs DIR] [--quick] [--out DIR]

Per (graph, program), in a fresh process each (so peak memory is that run's alone):
generation (the generator's edge arrays), build (relabel, dedup, CSR: `build_graph`),
run (`Program.run`: the one-rank degree view, the supersteps, converting the
results), the supersteps alone (`stats["time_s"]`), output (the results as JSON
text), the peak resident memory and it per edge.  Then, per graph, `g2pl run
programs/bfs.g2pl --graph G` end to end through the command line, from the
generator and from a `.g2pl convert`ed `.g2g` file, with its peak memory
(`wait4`), next to GAPBS's `bfs -g SCALE -n 1` on one thread when `--gapbs DIR`
names a GAPBS build (for reference; its code is no part of g2pl), interleaved
and repeated `--repeat` times (median). Writes OUT/NAME.{md,json,png}
(`--name`, default scale; scale_quick with `--quick`).
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
from pathlib import Path

import harness
import numpy as np

ROOT = harness.ROOT
# root None: the vertex of largest degree (ties to the smaller ID), chosen in the child after the build;
# a fixed ID such as 0 can be isolated in a Kronecker graph, which makes a search trivial.
ARGS = {"bfs": {"root": None}, "pagerank": {"iters": 20, "damping": 0.85}, "cc": {}, "sssp": {"root": None}}

# Runs in the child: phases timed separately, peak RSS from the kernel.
CHILD = r"""
import json, resource, sys, time
import numpy as np
import g2pl
from g2pl.graph import alloc
from g2pl.graph import generators as gen
from g2pl.graph.graph import build_graph_from

spec, program, args = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
alloc.tune()  # as `g2pl run` does
prog = g2pl.compile_file(program)
name, p = gen.parse_generator(spec)
t0 = time.perf_counter()
if name == "kron":
    n = 1 << p["scale"]
    u, v = gen.kronecker_edges(p["scale"], p["edgefactor"], 0)
else:
    n = p["n"]
    u, v = gen.watts_strogatz_edges(n, p["k"], p["p"], 0)
t1 = time.perf_counter()
edges = [u, v]
del u, v
from g2pl.graph.memory import temporaries_returned
with temporaries_returned():
    g = build_graph_from(edges, None, directed=False, name=spec, extra_ids=np.arange(n, dtype=np.int64))
if args.get("root", 0) is None:
    deg = np.diff(np.asarray(g.out_indptr))
    args["root"] = int(g.ids[int(np.argmax(deg))])
t2 = time.perf_counter()
res = prog.run(g, args=args)
t3 = time.perf_counter()
text = json.dumps(res.output())
t4 = time.perf_counter()
print(json.dumps({"n": g.n, "m": g.m, "gen_s": t1 - t0, "build_s": t2 - t1, "run_s": t3 - t2,
                  "supersteps_s": res.stats["time_s"], "output_s": t4 - t3, "output_bytes": len(text),
                  "peak_rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}))
"""


def timed(cmd: list[str], timeout: float, env: dict | None = None) -> dict:
    """Wall time, peak RSS (this process alone, from wait4), exit status and output's tail of one command."""
    r = harness.run_child(cmd, timeout, env)
    return {**r, "out": r["out"][-2000:]}


def phases(spec: str, program: str, timeout: float) -> dict:
    r = timed([sys.executable, "-c", CHILD, spec, f"programs/{program}.g2pl", json.dumps(ARGS[program])], timeout)
    if r["rc"] != 0:
        return {"graph": spec, "program": program, "error": r["out"][-600:], "rc": r["rc"]}
    d = json.loads(r["out"].strip().splitlines()[-1])
    d.update(graph=spec, program=program, bytes_per_edge=d["peak_rss"] / max(d["m"], 1))
    return d


def _search_root(spec: str) -> int:
    """A BFS root with edges, as GAPBS picks (it skips isolated vertices): the first endpoint of the
    first generated edge that is no self-loop, for the CLI's default seed (0). Generated here, in this
    process, before the timed runs."""
    from g2pl.graph import generators as gen

    name, p = gen.parse_generator(spec)
    if name == "kron":
        u, v = gen.kronecker_edges(p["scale"], p["edgefactor"], 0)
    else:
        u, v = gen.watts_strogatz_edges(p["n"], p["k"], p["p"], 0)
    i = int(np.argmax(u != v))
    return int(u[i])


def end_to_end(spec: str, repeat: int, timeout: float, gapbs: Path | None, tmp: Path) -> dict:
    """`g2pl run` BFS from the generator and from a .g2g file, and GAPBS bfs, interleaved; medians."""
    binfile = tmp / (re.sub(r"[^A-Za-z0-9]+", "_", spec) + ".g2g")
    g2pl = harness.g2pl_command()
    conv = timed(g2pl + ["convert", spec, str(binfile), "--quiet"], timeout)
    root = f"root={_search_root(spec)}"
    cmds = {"g2pl": g2pl + ["run", "programs/bfs.g2pl", "--graph", spec, "--arg", root, "--quiet"]}
    if conv["rc"] == 0:
        cmds["g2pl_g2g"] = g2pl + ["run", "programs/bfs.g2pl", "--graph", str(binfile), "--arg", root, "--quiet"]
    scale = harness.kron_scale(spec)
    if gapbs is not None and scale is not None:
        cmds["gapbs"] = [str(gapbs / "bfs"), "-g", str(scale), "-n", "1"]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    runs = harness.interleave({k: lambda cmd=cmd: timed(cmd, timeout, env) for k, cmd in cmds.items()}, repeat)
    binfile.unlink(missing_ok=True)
    out = {"graph": spec, "convert": {k: conv[k] for k in ("rc", "wall_s", "peak_rss")}}
    for k, rs in runs.items():
        if rs:
            ok = [r for r in rs if r["rc"] == 0]
            out[k] = {"rc": max(r["rc"] for r in rs), "cmd": rs[0]["cmd"],
                      "wall_s": harness.median(ok, "wall_s") if ok else None,
                      "peak_rss": max(r["peak_rss"] for r in ok) if ok else None,
                      "error": None if len(ok) == len(rs) else rs[-1]["out"][-400:]}
            if k == "gapbs" and ok:
                times = {key: float(v) for key, v in re.findall(r"(Generate|Build) Time:\s+([0-9.]+)", ok[-1]["out"])}
                out[k].update(generate_s=times.get("Generate"), build_s=times.get("Build"))
    return out


def _mb(x) -> str:
    return "-" if x is None else f"{x / 2**20:,.0f}"


def _s(x) -> str:
    return "-" if x is None else f"{x:.2f}"


def report(rows: list[dict], e2e: list[dict], meta: dict) -> str:
    out = ["# Graph loading and memory at scale (bench/scale.py)", "",
           f"Machine: {harness.describe(meta['machine'])}; commit {meta['commit']}; {meta['date']}.  ",
           f"Command: `{meta['command']}`", "",
           "## Phases of one run (Python API, fresh process per row)", "",
           "| graph | program | edges | generate s | build s | run s | supersteps s | output s | peak MB "
           "| bytes/edge |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "error" in r:
            out.append(f"| {r['graph']} | {r['program']} | failed (exit {r['rc']}) | | | | | | | |")
            continue
        out.append(f"| {r['graph']} | {r['program']} | {r['m']:,} | {_s(r['gen_s'])} | {_s(r['build_s'])} | "
                   f"{_s(r['run_s'])} | {_s(r['supersteps_s'])} | {_s(r['output_s'])} | {_mb(r['peak_rss'])} | "
                   f"{r['bytes_per_edge']:.0f} |")
    out += ["", "## BFS end to end through the command line (median wall time, peak memory)", "",
            "| graph | `g2pl run` s | MB | convert s | MB | `g2pl run` on .g2g s | MB | GAPBS bfs s (gen + build) "
            "| MB |", "|---|---|---|---|---|---|---|---|---|"]
    for e in e2e:
        g, c, b, gp = e.get("g2pl", {}), e["convert"], e.get("g2pl_g2g", {}), e.get("gapbs", {})
        gap = "-" if not gp else f"{_s(gp.get('wall_s'))} ({_s(gp.get('generate_s'))} + {_s(gp.get('build_s'))})"
        out.append(f"| {e['graph']} | {_s(g.get('wall_s'))} | {_mb(g.get('peak_rss'))} | {_s(c['wall_s'])} | "
                   f"{_mb(c['peak_rss'])} | {_s(b.get('wall_s'))} | {_mb(b.get('peak_rss'))} | {gap} | "
                   f"{_mb(gp.get('peak_rss'))} |")
    out += ["", "Commands:", ""] + [f"    {e[k]['cmd']}" for e in e2e for k in ("g2pl", "g2pl_g2g", "gapbs") if k in e]
    return "\n".join(out) + "\n"


def plot(rows: list[dict], path: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    for prog in sorted({r["program"] for r in rows}):
        rs = [r for r in rows if r["program"] == prog and "error" not in r and r["graph"].startswith("kron:")]
        if not rs:
            continue
        m = [r["m"] for r in rs]
        ax1.plot(m, [r["peak_rss"] / 2**30 for r in rs], "o-", label=prog)
        ax2.plot(m, [r["bytes_per_edge"] for r in rs], "o-", label=prog)
    ax1.set_yscale("log")
    for ax, title in ((ax1, "peak memory of one run (GiB)"), (ax2, "peak bytes per edge")):
        ax.set_xscale("log")
        ax.set_xlabel("edges (kron:16 .. kron:24)")
        ax.set_title(title)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv: list[str] | None = None) -> int:
    ap = harness.parser(__doc__, quick="kron:12 and kron:14, bfs only, once", repeat=3)
    ap.add_argument("--graphs", default="kron:16,kron:18,kron:20,kron:22,kron:24,ws:1000000:20:0.5")
    ap.add_argument("--programs", default="bfs,pagerank,cc")
    ap.add_argument("--e2e-graphs", default="kron:16,kron:18,kron:20,kron:22",
                    help="graphs for the command-line comparison")
    harness.add_gapbs(ap)
    ap.add_argument("--timeout", type=float, default=1800)
    ap.add_argument("--name", default="scale")
    ap.add_argument("--replot", action="store_true", help="only redraw NAME.png from NAME.json")
    a = ap.parse_args(argv)
    if a.replot:
        plot(json.loads((a.out / f"{a.name}.json").read_text())["phases"], a.out / f"{a.name}.png")
        return 0
    if a.quick:
        a.graphs, a.programs, a.e2e_graphs, a.repeat, a.name = "kron:12,kron:14", "bfs", "kron:12", 1, "scale_quick"
    rows = [phases(g, p, a.timeout) for g in a.graphs.split(",") for p in a.programs.split(",")]
    for r in rows:
        print(json.dumps({k: v for k, v in r.items() if k != "error"}), flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        e2e = [end_to_end(g, a.repeat, a.timeout, a.gapbs, Path(tmp)) for g in a.e2e_graphs.split(",") if g]
    meta = {"machine": harness.machine(), "commit": harness.git_commit(), "date": harness.now(),
            "command": harness.command(__file__, argv)}
    text = report(rows, e2e, meta)
    harness.write_report(a.out, a.name, text, {"meta": meta, "phases": rows, "end_to_end": e2e})
    plot(rows, a.out / f"{a.name}.png")
    print(text)
    failed = any("error" in r for r in rows) or any(
        e.get(k, {}).get("rc", 0) != 0 for e in e2e for k in ("g2pl", "g2pl_g2g"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
