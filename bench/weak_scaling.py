#!/usr/bin/env python3
"""Weak scaling of `g2pl run --np P`: per-rank memory, ghosts, peers and traffic as P and the graph grow.

For P in 1, 2, 4, 8, 16 (`--ranks`) this runs BFS, PageRank (10 iterations, damping 0.85) and CC
on `kron:(BASE + log2 P)` (`--base`, default 16), so every rank holds about 2^BASE vertices
whatever P; one `g2pl run PROGRAM --graph kron:S --np P --stats FILE --quiet` each, every rank
drawing its own share of the graph. From the stats JSON it takes, per rank: peak resident memory
(max and mean over ranks), graph loading (`graph_load_s`, max), partitioning and set-up
(`load_time_s`, max), bytes sent per rank per superstep (`bytes_sent / supersteps`, max and
mean), peers per rank (max), ghosts/vertices (all ranks together, and the largest rank's); and the
totals `bytes`, `supersteps`, `time_s`. BFS starts at a seeded random vertex with an edge
(`handwritten.pick_root`). Ranks beyond `nproc` are oversubscribed: the times say little here,
the sizes and the traffic are the point. First, CC on `kron:4` on 1 and 2 ranks measures the idle
process (no graph to speak of), without and with MPI.

Partitioning: the runtime cuts the vertices into contiguous blocks (by ID; the Kronecker
generator permutes the labels, as Graph500 does). `--partition 1d,2d` (the default) runs every
row under both of `g2pl run --partition`'s layouts: `1d` sends each exchange to its ranks
directly; `2d` arranges the ranks as a grid: neighbourhood aggregations over edge blocks (messages
along the grid row, partial results down the grid column: fewer bytes than 1D), every other
exchange routed a row hop then a column hop (fewer peers, the same answers).

Then `model()` extrapolates the measured per-rank constants to SCALE 30 on 1,024 ranks under the
same 1D partitioning (edges held, memory, ghosts, peers, bytes of a dense BFS superstep) and
names what grows fastest; it prints its assumptions with its numbers.

Results: OUT/weak_scaling.md (tables, model, machine, commit, commands) and OUT/weak_scaling.json
(raw numbers, per-rank stats included; weak_scaling_quick.* with --quick). A run that fails or
times out is recorded, not raised, and makes the exit status 1.

    python bench/weak_scaling.py                 # kron:16..20 on 1..16 ranks (minutes)
    python bench/weak_scaling.py --quick         # kron:10..12 on 1, 2, 4 ranks (well under a minute)
"""

from __future__ import annotations

import gc
import json
import math
import shlex
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import harness

PROGRAMS: dict[str, tuple[str, list[str]]] = {
    # name: (program path relative to the repository root, fixed `--arg`s; BFS gets root=ID per graph)
    "bfs": ("programs/bfs.g2pl", []),
    "pagerank": ("programs/pagerank.g2pl", ["iters=10", "damping=0.85"]),
    "cc": ("programs/cc.g2pl", []),
}
FULL = {"base": 16, "ranks": [1, 2, 4, 8, 16]}
QUICK = {"base": 10, "ranks": [1, 2, 4]}
# A graph small enough that a run of it is the process alone (interpreter, NumPy, the compiled
# program; MPI with two ranks): the "idle process size" the memory model adds to the edges' bytes.
IDLE_GRAPH = "kron:4"
IDLE_PROGRAM = "cc"
IDLE_RANKS = (1, 2)
SOURCE_PATHS = ("g2pl", "programs", "pyproject.toml")
MIB = 2**20


# --------------------------------------------------------------------------- running


def bfs_root(spec: str, seed: int) -> int:
    """A reproducible random vertex with an edge (original ID), as `handwritten.pick_root` picks it."""
    import handwritten

    import g2pl

    g = g2pl.load_graph(spec, seed=seed)
    if g.m == 0:
        raise SystemExit(f"weak_scaling: graph {spec} has no edges")
    root = int(g.ids[handwritten.pick_root(g, seed)])
    del g
    gc.collect()
    return root


def build_command(exe: list[str], program: str, graph: str, np_: int, seed: int, stats: Path,
                  args: list[str], partition: str = "1d") -> list[str]:
    path, fixed = PROGRAMS[program]
    cmd = [*exe, "run", path, "--graph", graph, "--np", str(np_), "--seed", str(seed),
           "--stats", str(stats), "--quiet", "--partition", partition]
    for a in [*fixed, *args]:
        cmd += ["--arg", a]
    return cmd


def run_once(row: dict[str, Any], cmd: list[str], stats: Path, timeout: float, log) -> dict[str, Any]:
    """`row` with the outcome of one run: status, wall time, the summary and the per-rank stats."""
    if stats.exists():
        stats.unlink()
    r = harness.run_child(cmd, timeout)
    row.update(command=shlex.join(cmd), wall_s=r["wall_s"], rc=r["rc"])
    st = None
    if r["timed_out"]:
        row["status"] = f"timeout ({timeout:g} s)"
    elif r["rc"] != 0:
        row["status"] = f"failed (rc {r['rc']})"
    else:
        try:
            st = json.loads(stats.read_text())
            row["status"] = "ok"
        except (OSError, ValueError) as e:
            row["status"] = f"failed (no stats: {e.__class__.__name__})"
    if st is None:
        row["stderr_tail"] = r["out"][-2000:]
        log(f"  {row['status']}: {row['stderr_tail'][-300:]}")
        return row
    row["summary"] = s = summarize(st)
    row["per_rank"] = st.get("per_rank", [])
    row["per_superstep_bytes"] = [int(x["bytes"]) for x in st.get("per_superstep", [])]
    if s["ranks"] != row["np"]:
        row["status"] = f"failed (stats say {s['ranks']} ranks)"
    log(f"  {row['status']}: {s['supersteps']} supersteps, {s['bytes']:,} bytes, peak RSS max "
        f"{s['peak_rss_max'] / MIB:.0f} MiB, ghosts/vertices {s['ghosts_ratio']:.2f}, wall {r['wall_s']:.1f}s")
    return row


def summarize(st: dict[str, Any]) -> dict[str, Any]:
    """The numbers of one run: totals, and per-rank figures (max, mean over ranks)."""
    pr = st.get("per_rank", [])
    steps = int(st["supersteps"])

    def col(key: str) -> list[float]:
        return [float(r[key]) for r in pr]

    def mean(xs: list[float]) -> float:
        return sum(xs) / len(xs) if xs else math.nan

    rss, sent = col("peak_rss_bytes"), col("bytes_sent")
    per_step = [b / steps if steps else 0.0 for b in sent]
    verts, ghosts, edges = col("vertices"), col("ghosts"), col("local_edges")
    g = st.get("graph", {})
    return {
        "supersteps": steps, "messages": int(st.get("messages", 0)), "bytes": int(st["bytes"]),
        "time_s": float(st["time_s"]), "ranks": int(st.get("ranks", len(pr))),
        "peak_rss_max": max(rss, default=math.nan), "peak_rss_mean": mean(rss),
        "graph_load_s_max": max(col("graph_load_s"), default=math.nan),
        "load_time_s_max": max(col("load_time_s"), default=math.nan),
        "bytes_per_rank_step_max": max(per_step, default=math.nan),
        "bytes_per_rank_step_mean": mean(per_step),
        "peers_max": int(max(col("peers"), default=0)),
        # all ghosts over all owned vertices, and the largest of the ranks' own ratios
        "ghosts_ratio": sum(ghosts) / sum(verts) if sum(verts) else math.nan,
        "ghosts_ratio_max": max((gh / v for gh, v in zip(ghosts, verts) if v), default=math.nan),
        "vertices_mean": mean(verts), "ghosts_mean": mean(ghosts),
        "local_edges_mean": mean(edges), "local_edges_max": max(edges, default=math.nan),
        "graph_n": g.get("n"), "graph_m": g.get("m"), "edgefactor": g.get("edgefactor"),
    }


# --------------------------------------------------------------------------- model


def _fit_line(xs: list[float], ys: list[float]) -> tuple[float, float]:
    """Least-squares (a, b) of y = a + b x; a constant for one point (or equal xs)."""
    if not xs:
        return math.nan, 0.0
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        return my, 0.0
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    return my - b * mx, b


def model(rows: list[dict[str, Any]], scale: int = 30, ranks: int = 1024) -> dict[str, Any]:
    """Extrapolate the measured per-rank constants to kron:`scale` on `ranks` ranks, 1D block partition.

    `rows`: this script's runs (those with status "ok" are used; each carries `idle_rss_bytes`, the
    peak RSS of a one-rank run on a tiny graph, and `idle_rank_rss_bytes`, that of a rank of a
    two-rank run on it: the process alone, without and with MPI). With n = 2^scale, P = ranks and
    the measured edgefactor ef, per rank:

    * vertices owned: n / P;
    * edges held: 2 ef n / P (every edge lives at both endpoints' ranks; duplicate edges and
      self-loops, which the loader drops, are counted: an upper bound);
    * memory: bytes per held edge x edges held + the idle rank size, where bytes per held edge is
      (peak RSS - idle) / local_edges of the worst rank at the largest measured P (per program: it
      includes what loading and running that program keep or allocate per edge, ghosts and
      exchange buffers too, at the ghost ratio of that P);
    * ghosts / vertices: a least-squares line in log2 P through the measured P > 1 points (each at
      2^BASE vertices per rank), clipped to [0, min(P - 1, 2 ef (1 - 1/P))]: a rank has at most
      n - n/P other vertices, and at most one ghost per held edge's remote endpoint; the ratio is
      taken to depend on P alone, not on the vertices per rank;
    * peers: (P - 1)(1 - exp(-e_remote / (P - 1))), e_remote = edges held x (1 - 1/P): the ranks that
      receive at least one of the rank's remote endpoints when labels are random, which is P - 1 once
      the held edges far outnumber the ranks;
    * bytes a rank sends in a dense BFS superstep: one bit per ghost (mirror), ghosts / 8, and that
      divided by the peers: the size of each of its messages.

    Growth is weak scaling proper: the target against the same formulas at the largest measured P
    with the target's vertices per rank (kron:(scale - log2(ranks / Pmax)) on Pmax ranks), so the
    per-rank work is the same on both sides and what grows is what P alone drives. The quantity that
    grows fastest is named in the verdict.
    """
    ok = [r for r in rows if r.get("status") == "ok"]
    if not ok:
        return {"error": "no successful runs to fit"}
    efs = [r["summary"]["edgefactor"] for r in ok if r["summary"].get("edgefactor")]
    ef = int(efs[0]) if efs else 16
    p_max = max(r["np"] for r in ok)
    if p_max == 1:
        return {"error": "no successful run with P > 1 to extrapolate from"}
    top_rows = [r for r in ok if r["np"] == p_max]
    s_max = top_rows[0]["scale"]

    def mean(xs: list[float]) -> float:
        return sum(xs) / len(xs) if xs else math.nan

    # bytes per held edge, per program: the worst rank at the largest P measured for it
    mem: dict[str, dict[str, Any]] = {}
    for prog in PROGRAMS:
        pts = [r for r in ok if r["program"] == prog and r.get("idle_rss_bytes") and r.get("idle_rank_rss_bytes")]
        if not pts:
            continue

        def per_edge(r: dict[str, Any]) -> float:
            idle = float(r["idle_rank_rss_bytes"] if r["np"] > 1 else r["idle_rss_bytes"])
            return max((float(x["peak_rss_bytes"]) - idle) / x["local_edges"] for x in r["per_rank"]
                       if x["local_edges"])

        top = max(pts, key=lambda r: r["np"])
        idle = float(top["idle_rank_rss_bytes"] if top["np"] > 1 else top["idle_rss_bytes"])
        peak = top["summary"]["peak_rss_max"]
        mem[prog] = {"bytes_per_edge": max(per_edge(top), 0.0), "idle_bytes": idle, "fit_np": top["np"],
                     "fit_graph": top["graph"], "measured_peak": peak, "graph_share": (peak - idle) / peak,
                     "bytes_per_edge_by_np": {r["np"]: per_edge(r) for r in pts}}

    # ghosts/vertices against log2 P (P > 1), the mean over programs at each P
    by_p: dict[int, list[float]] = {}
    for r in ok:
        if r["np"] > 1:
            by_p.setdefault(r["np"], []).append(r["summary"]["ghosts_ratio"])
    gpts = {p: mean(v) for p, v in sorted(by_p.items())}
    a, b = _fit_line([math.log2(p) for p in gpts], list(gpts.values()))

    # BFS at the largest P: bytes per rank of its first superstep and of the largest later one
    bfs = next((r for r in top_rows if r["program"] == "bfs"), None)
    bfs_first = bfs_dense = math.nan
    if bfs is not None and p_max > 1:
        steps = bfs["per_superstep_bytes"]
        bfs_first = steps[0] / p_max if steps else math.nan
        bfs_dense = max(steps[1:], default=0) / p_max

    def predict(s: float, p: int) -> dict[str, Any]:
        n_rank = 2**s / p
        held = 2 * ef * 2**s / p
        bound = min(p - 1, 2 * ef * (1 - 1 / p))
        ratio = min(max(a + b * math.log2(p), 0.0), bound) if p > 1 and not math.isnan(a) else 0.0
        ghosts = ratio * n_rank
        remote = held * (1 - 1 / p)
        peers = (p - 1) * (1 - math.exp(-remote / (p - 1))) if p > 1 else 0.0
        return {
            "scale": s, "ranks": p, "vertices": n_rank, "edges_held": held, "ghosts_ratio": ratio,
            "ghosts_ratio_bound": bound, "ghosts": ghosts, "peers": peers, "bfs_dense_bytes": ghosts / 8,
            "bfs_dense_bytes_per_peer": ghosts / 8 / peers if peers else math.nan,
            "memory_bytes": {k: v["bytes_per_edge"] * held + v["idle_bytes"] for k, v in mem.items()},
        }

    measured = {
        "scale": s_max, "ranks": p_max, "vertices": mean([r["summary"]["vertices_mean"] for r in top_rows]),
        "edges_held": mean([r["summary"]["local_edges_mean"] for r in top_rows]),
        "ghosts_ratio": mean([r["summary"]["ghosts_ratio"] for r in top_rows]),
        "ghosts": mean([r["summary"]["ghosts_mean"] for r in top_rows]),
        "peers": max(r["summary"]["peers_max"] for r in top_rows), "bfs_first_bytes": bfs_first,
        "bfs_dense_bytes": bfs_dense,
        "memory_bytes": {r["program"]: r["summary"]["peak_rss_max"] for r in top_rows},
    }
    measured["bfs_dense_bytes_per_peer"] = bfs_dense / measured["peers"] if measured["peers"] else math.nan
    target = predict(scale, ranks)
    same = predict(scale - math.log2(ranks / p_max), p_max)  # the target's vertices per rank, on Pmax ranks

    def growth(x: float, y: float) -> float:
        return y / x if x else math.inf

    grow = {"edges held": growth(same["edges_held"], target["edges_held"]),
            "ghosts (and dense BFS bytes)": growth(same["ghosts"], target["ghosts"]),
            "peers": growth(same["peers"], target["peers"])}
    for k in mem:
        grow[f"memory ({k})"] = growth(same["memory_bytes"][k], target["memory_bytes"][k])
    fastest = max(grow, key=lambda k: grow[k])
    verdict = (f"at {2**scale // ranks:,} vertices per rank, from P={p_max} to P={ranks}, the fastest-growing "
               f"quantity is {fastest}, x{grow[fastest]:,.1f} (ghosts x{grow['ghosts (and dense BFS bytes)']:,.1f}, "
               f"edges held x{grow['edges held']:,.1f})")
    if fastest == "peers":
        verdict += (f": the all-to-all fan-out breaks first, {target['peers']:,.0f} partners per exchange with "
                    f"{target['bfs_dense_bytes_per_peer']:,.0f} bytes each in a dense BFS superstep")
    elif fastest.startswith("ghosts"):
        verdict += ": mirrors (ghost state and the bytes to refresh it) break first"
    if mem:
        worst = max(target["memory_bytes"].items(), key=lambda kv: kv[1])
        verdict += f"; memory per rank at the target: {worst[1] / 2**30:,.1f} GiB ({worst[0]})"
    verdict += "."

    assumptions = [
        f"1D block partition (contiguous vertex blocks, random labels); edgefactor {ef} as measured; "
        f"n = 2^{scale}, P = {ranks}.",
        f"edges held per rank = 2 * {ef} * 2^{scale} / P: every edge at both endpoints' ranks; duplicates "
        "and self-loops (dropped by the loader) counted, so an upper bound (compare the measured column).",
        "memory per rank = bytes per held edge x edges held + idle rank size; bytes per held edge = "
        "(peak RSS - idle) / local_edges of the worst rank at the largest measured P; idle = peak RSS of "
        f"the largest rank of a two-rank run on {IDLE_GRAPH} (the process with MPI, no graph to speak of). "
        "Ghost arrays are folded into the bytes per edge at the measured ghost ratio; MPI's own per-peer "
        "buffers at 1,024 ranks and anything that grows with n rather than n/P are not modelled.",
        "ghosts/vertices = "
        + (f"{a:.3f} + {b:.3f} * log2 P (least squares over P = {', '.join(map(str, gpts))}, "
           f"measured {', '.join(f'{v:.3f}' for v in gpts.values())})" if gpts else "0 (no run with P > 1)")
        + f", clipped to min(P - 1, 2 ef (1 - 1/P)); assumed to depend on P only (measured at 2^BASE "
        f"vertices per rank, applied at 2^{scale}/{ranks} = {2**scale // ranks:,}).",
        "peers = (P - 1)(1 - exp(-remote edges / (P - 1))): remote endpoints spread uniformly over the other "
        "ranks; equal to P - 1 once the held edges far outnumber the ranks.",
        "dense BFS superstep: one bit per ghost, ghosts / 8 bytes sent per rank, split over its peers. "
        + (f"Measured at P={p_max}: the largest BFS superstep after the first sent {bfs_dense:,.0f} bytes per "
           f"rank ({8 * bfs_dense / measured['ghosts']:.2f} bits per ghost); the first sent {bfs_first:,.0f} "
           f"({bfs_first / measured['ghosts']:.1f} bytes per ghost), which this model leaves out."
           if bfs is not None and p_max > 1 and measured["ghosts"] else "No BFS run with P > 1 to compare."),
    ]
    return {"scale": scale, "ranks": ranks, "edgefactor": ef, "target": target, "same_per_rank_at_measured": same,
            "measured": measured, "memory_fit": mem, "ghosts_fit": {"a": a, "b": b, "points": gpts},
            "growth": grow, "fastest": fastest, "verdict": verdict, "assumptions": assumptions}


# --------------------------------------------------------------------------- report


def fmt_s(x: float) -> str:
    return "nan" if x != x else f"{x:.3f}"


def fmt_n(x: float) -> str:
    return "nan" if x != x else f"{x:,.0f}"


def fmt_mib(x: float) -> str:
    return "nan" if x != x else f"{x / MIB:,.1f}"


def table(rows: list[dict[str, Any]]) -> list[str]:
    head = ["program", "P", "partition", "graph", "supersteps", "bytes", "time_s", "RSS max MiB", "RSS mean MiB",
            "graph_load_s max", "load_time_s max", "B/rank/step max", "B/rank/step mean", "peers max",
            "ghosts/vertices", "ghosts/vertices max", "wall_s", "status"]
    out = ["| " + " | ".join(head) + " |", "|" + "|".join(["---"] + ["---:"] * (len(head) - 2) + ["---"]) + "|"]
    for r in rows:
        s = r.get("summary")
        if s is None:
            cells = [r["program"], str(r["np"]), r.get("partition", "1d"), r["graph"]] + ["–"] * 12 + [fmt_s(r["wall_s"]), r["status"]]
        else:
            cells = [r["program"], str(r["np"]), r.get("partition", "1d"), r["graph"], str(s["supersteps"]), fmt_n(s["bytes"]),
                     fmt_s(s["time_s"]), fmt_mib(s["peak_rss_max"]), fmt_mib(s["peak_rss_mean"]),
                     fmt_s(s["graph_load_s_max"]), fmt_s(s["load_time_s_max"]),
                     fmt_n(s["bytes_per_rank_step_max"]), fmt_n(s["bytes_per_rank_step_mean"]),
                     str(s["peers_max"]), f"{s['ghosts_ratio']:.3f}", f"{s['ghosts_ratio_max']:.3f}",
                     fmt_s(r["wall_s"]), r["status"]]
        out.append("| " + " | ".join(cells) + " |")
    return out


def render_model(m: dict[str, Any]) -> list[str]:
    if "error" in m:
        return [f"Model not available: {m['error']}."]
    t, same, meas = m["target"], m["same_per_rank_at_measured"], m["measured"]
    lines = [f"Per rank, 1D block partition. Columns: measured at the largest P (kron:{meas['scale']}, "
             f"P={meas['ranks']}; memory: peak RSS max, BFS: bytes per rank); the model at the same P with "
             f"the target's {2**m['scale'] // m['ranks']:,} vertices per rank (kron:{same['scale']:g}); the "
             f"model at kron:{m['scale']} on {m['ranks']} ranks; growth between the last two.", "",
             f"| quantity per rank | measured, P={meas['ranks']} | model, kron:{same['scale']:g}, P={same['ranks']} "
             f"| model, kron:{m['scale']}, P={m['ranks']} | growth |", "|---|---:|---:|---:|---:|"]

    def row(name: str, x: float, y: float, z: float, fmt=fmt_n) -> None:
        g = f"x{z / y:,.3g}" if y else "–"
        lines.append(f"| {name} | {fmt(x)} | {fmt(y)} | {fmt(z)} | {g} |")

    row("vertices owned", meas["vertices"], same["vertices"], t["vertices"])
    row("edges held", meas["edges_held"], same["edges_held"], t["edges_held"])
    row("ghosts/vertices", meas["ghosts_ratio"], same["ghosts_ratio"], t["ghosts_ratio"], lambda x: f"{x:.2f}")
    row("ghosts", meas["ghosts"], same["ghosts"], t["ghosts"])
    row("peers", meas["peers"], same["peers"], t["peers"])
    row("dense BFS superstep bytes sent (1 bit/ghost)", meas["bfs_dense_bytes"], same["bfs_dense_bytes"],
        t["bfs_dense_bytes"])
    row("  per peer", meas["bfs_dense_bytes_per_peer"], same["bfs_dense_bytes_per_peer"],
        t["bfs_dense_bytes_per_peer"])
    for k, v in t["memory_bytes"].items():
        f = m["memory_fit"][k]
        row(f"memory MiB, {k} ({f['bytes_per_edge']:,.0f} B/edge + {f['idle_bytes'] / MIB:,.0f} MiB idle)",
            meas["memory_bytes"].get(k, math.nan), same["memory_bytes"][k], v, fmt_mib)
    small = [k for k, f in m["memory_fit"].items() if f["graph_share"] < 0.2]
    lines += ["", "Assumptions:", ""] + [f"- {a}" for a in m["assumptions"]]
    if small:
        lines.append(f"- at the fit point, peak RSS minus the idle rank is under a fifth of the peak RSS for "
                     f"{', '.join(small)}: those bytes per edge are mostly noise of the process size (use a "
                     "larger --base).")
    lines += ["", f"**Verdict:** {m['verdict']}"]
    return lines


def render(res: dict[str, Any]) -> str:
    cfg, m = res["config"], res["machine"]
    lines = [
        "# g2pl weak scaling",
        "",
        f"Configuration: {'quick' if cfg['quick'] else 'full'}; P = {', '.join(map(str, cfg['ranks']))} ranks on "
        f"kron:(BASE + log2 P), BASE = {cfg['base']} (seed {cfg['seed']}); partitions `{cfg['partition']}` (the "
        "runtime's contiguous vertex blocks; `--partition 2d`: a grid of ranks, neighbourhood aggregations over edge blocks); programs "
        + ", ".join(f"{k} (`{v[0]}`{''.join(' --arg ' + a for a in v[1])})" for k, v in PROGRAMS.items())
        + "; BFS root: a seeded random vertex with an edge per graph ("
        + ", ".join(f"{g}: {r}" for g, r in res["bfs_roots"].items()) + ").",
        "",
        f"Machine: {harness.describe(m)}. Ranks beyond {m['nproc']} are oversubscribed: times say little.  ",
        f"Commit: {res['commit']}. Started {res['started']}; the whole script took {res['total_s']:.1f} s.",
        "",
        "Columns: per-rank figures are over the ranks of one run; `RSS` peak resident memory; `graph_load_s` "
        "drawing the rank's share of the graph; `load_time_s` partitioning and runtime set-up; "
        "`B/rank/step` bytes_sent / supersteps; `ghosts/vertices` all ranks' ghosts over all owned vertices "
        "(`max`: the largest rank's own ratio); `bytes`, `supersteps`, `time_s` the run's totals; `wall_s` "
        "the whole command.",
        "",
        *table(res["runs"]),
        "",
        f"Idle process ({IDLE_PROGRAM} on {IDLE_GRAPH}, peak RSS of the largest rank): "
        + ", ".join(f"P={k}: {v / MIB:,.1f} MiB" if v else f"P={k}: failed" for k, v in res["idle_rss_bytes"].items())
        + ".",
        "",
        "## Model",
        "",
        *render_model(res["model"]),
    ]
    failures = [r for r in res["runs"] + res["idle_runs"] if r["status"] != "ok"]
    if failures:
        lines += ["", "## Failures"]
    for r in failures:
        lines += ["", f"`{r['command']}`: {r['status']}", "", "```", r.get("stderr_tail", "").strip(), "```"]
    lines += ["", "## Commands", "", "Run from the repository root; stats files went to a temporary directory.", "",
              "```", res["script_command"], *[r["command"] for r in res["idle_runs"] + res["runs"]], "```", ""]
    return "\n".join(lines)


# --------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    ap = harness.parser(__doc__, quick="BASE 10, P = 1, 2, 4", seed=1)
    ap.add_argument("--ranks", default=None, help="comma-separated rank counts, powers of two (default 1,2,4,8,16)")
    ap.add_argument("--base", type=int, default=None, help="kron scale at P = 1 (default 16)")
    ap.add_argument("--partition", default="1d,2d",
                    help="comma-separated `g2pl run --partition` layouts to run each row under (default 1d,2d)")
    ap.add_argument("--g2pl", default=None, help="the g2pl command (default: next to this Python, else on PATH)")
    ap.add_argument("--timeout", type=float, default=900.0, help="per-run timeout in seconds (default 900)")
    a = ap.parse_args(argv)

    cfg: dict[str, Any] = dict(QUICK if a.quick else FULL)
    if a.ranks:
        cfg["ranks"] = [int(x) for x in a.ranks.split(",")]
    if a.base is not None:
        cfg["base"] = a.base
    bad = [p for p in cfg["ranks"] if p < 1 or p & (p - 1)]
    if bad:
        ap.error(f"--ranks: powers of two only (got {bad})")
    layouts = a.partition.split(",")
    if not layouts or any(x not in ("1d", "2d") for x in layouts):
        ap.error(f"--partition: 1d, 2d or 1d,2d (got {a.partition!r})")
    cfg.update(quick=a.quick, seed=a.seed, partition=a.partition, timeout_s=a.timeout)
    exe = [a.g2pl] if a.g2pl else harness.g2pl_command()

    t_start = time.perf_counter()
    res: dict[str, Any] = {
        "config": cfg, "machine": harness.machine(("numpy", "scipy", "mpi4py")),
        "commit": harness.git_commit(*SOURCE_PATHS), "started": harness.now(), "g2pl": exe,
        "script_command": harness.command(__file__, argv), "bfs_roots": {}, "runs": [], "idle_runs": [],
        "idle_rss_bytes": {},
    }

    def log(msg: str) -> None:
        print(f"[{time.perf_counter() - t_start:7.1f}s] {msg}", file=sys.stderr, flush=True)

    def root_of(graph: str) -> int:
        if graph not in res["bfs_roots"]:
            res["bfs_roots"][graph] = bfs_root(graph, a.seed)
        return res["bfs_roots"][graph]

    with tempfile.TemporaryDirectory(prefix="g2pl-weak-") as tmp:
        tmpdir = Path(tmp)
        for p in IDLE_RANKS:
            stats = tmpdir / f"idle-np{p}.json"
            log(f"{IDLE_PROGRAM} {IDLE_GRAPH} P={p} (idle process) ...")
            row = run_once({"program": IDLE_PROGRAM, "np": p, "graph": IDLE_GRAPH},
                           build_command(exe, IDLE_PROGRAM, IDLE_GRAPH, p, a.seed, stats, []), stats, a.timeout, log)
            res["idle_runs"].append(row)
            res["idle_rss_bytes"][p] = row["summary"]["peak_rss_max"] if row["status"] == "ok" else None
        for p in cfg["ranks"]:
            scale = cfg["base"] + int(math.log2(p))
            graph = f"kron:{scale}"
            for program in PROGRAMS:
                extra = [f"root={root_of(graph)}"] if program == "bfs" else []
                for layout in layouts if p > 1 else layouts[:1]:
                    stats = tmpdir / f"{program}-kron{scale}-np{p}-{layout}.json"
                    log(f"{program} {graph} P={p} {layout} ...")
                    row = {"program": program, "np": p, "scale": scale, "graph": graph, "partition": layout,
                           "idle_rss_bytes": res["idle_rss_bytes"][1],
                           "idle_rank_rss_bytes": res["idle_rss_bytes"][2]}
                    cmd = build_command(exe, program, graph, p, a.seed, stats, extra, layout)
                    res["runs"].append(run_once(row, cmd, stats, a.timeout, log))

    res["model"] = model([r for r in res["runs"] if r["partition"] == "1d"] or res["runs"])  # the 1D model
    res["total_s"] = time.perf_counter() - t_start
    md = render(res)
    paths = harness.write_report(a.out, harness.stem("weak_scaling", a.quick), md, res)
    print(md)
    log(f"wrote {paths[0]} and {paths[1]}")
    return 1 if any(r["status"] != "ok" for r in res["runs"] + res["idle_runs"]) else 0


if __name__ == "__main__":
    sys.exit(main())
