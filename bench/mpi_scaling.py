#!/usr/bin/env python3
"""MPI scaling of `g2pl run --np N`: traffic, supersteps and time for 1, 2, 4, 8 ranks.

For BFS, PageRank and greedy matching on a Kronecker and a Watts-Strogatz graph
this runs the `g2pl` command line once per rank count and collects, from its
`--stats` JSON: supersteps, messages, bytes that crossed ranks (total, and mean
and max per superstep over the supersteps that end with an exchange), run time,
load time (partitioning and runtime set-up, as the stats report it) and the
per-rank compute and communication seconds (max over ranks). It then measures
the speed-up of 2 ranks over 1 for PageRank on a larger Kronecker graph
(interleaved: 1, 2, 2, 1, 1, 2, ...; the median of `time_s`).

Results: OUT/mpi_scaling.md (tables, speed-up, machine, commit, commands) and
OUT/mpi_scaling.json (raw numbers; mpi_scaling_quick.* with --quick). A run that fails or times out is recorded
in the table, not raised. The same stats must come out for every N (supersteps,
messages), no bytes may cross ranks with one rank and some must with more; a
violated check is reported in the output and makes the exit status 1.

    python bench/mpi_scaling.py            # full configuration (10-25 minutes on 2 cores)
    python bench/mpi_scaling.py --quick    # small smoke configuration (well under a minute)
"""

from __future__ import annotations

import hashlib
import json
import shlex
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import harness

REPO = harness.ROOT

PROGRAMS: dict[str, tuple[str, list[str]]] = {
    # name: (program path relative to the repository root, extra `--arg`s; BFS gets root=ID per graph)
    "bfs": ("programs/bfs.g2pl", []),
    "pagerank": ("programs/pagerank.g2pl", ["iters=20", "damping=0.85"]),
    "matching": ("programs/matching.g2pl", []),
}

FULL = {
    "graphs": ["kron:18", "ws:100000:20:0.5"],
    "nps": [1, 2, 4, 8],
    "speedup_graph": "kron:20",
    "speedup_reps": 3,
}
QUICK = {
    "graphs": ["kron:10", "ws:2000:10:0.5"],
    "nps": [1, 2],
    "speedup_graph": "kron:12",
    "speedup_reps": 3,
}
SEED = 1
# What decides the numbers: a change here, uncommitted, marks the commit `+dirty`.
SOURCE_PATHS = ("g2pl", "programs", "pyproject.toml")


# --------------------------------------------------------------------------- running


def bfs_root(spec: str) -> int:
    """A vertex that has edges: the source of the graph's first edge (original ID)."""
    import g2pl

    g = g2pl.load_graph(spec, seed=SEED)
    if g.m == 0:
        raise SystemExit(f"mpi_scaling: graph {spec} has no edges")
    return int(g.ids[g.src[0]])


def build_command(g2pl_exe: list[str], program: str, graph: str, np_: int, stats: Path, args: list[str]) -> list[str]:
    path, fixed = PROGRAMS[program]
    cmd = [*g2pl_exe, "run", path, "--graph", graph, "--np", str(np_), "--seed", str(SEED),
           "--stats", str(stats), "--quiet"]
    for a in [*fixed, *args]:
        cmd += ["--arg", a]
    return cmd


def run_once(cmd: list[str], stats: Path, timeout: float) -> dict[str, Any]:
    """Run one `g2pl run` command; returns its stats (or the failure) and the wall time."""
    if stats.exists():
        stats.unlink()
    r = harness.run_child(cmd, timeout)
    got = {"rc": r["rc"], "wall_s": r["wall_s"], "stderr_tail": r["out"][-2000:]}
    if r["timed_out"]:
        return {**got, "status": f"timeout ({timeout:g} s)", "rc": None}
    if r["rc"] != 0:
        return {**got, "status": f"failed (rc {r['rc']})"}
    try:
        st = json.loads(stats.read_text())
    except (OSError, ValueError) as e:
        return {**got, "status": f"failed (no stats: {e.__class__.__name__})"}
    return {"status": "ok", "rc": 0, "wall_s": r["wall_s"], "stats": st}


def measure(row: dict[str, Any], cmd: list[str], stats: Path, timeout: float, log) -> dict[str, Any]:
    """`row` with the outcome of one run: status, wall time and the stats' summary (or the error's tail)."""
    r = run_once(cmd, stats, timeout)
    row.update(command=shlex.join(cmd), status=r["status"], wall_s=r["wall_s"])
    if r["status"] == "ok":
        row["summary"] = s = summarize(r["stats"])
        row["per_superstep"] = r["stats"].get("per_superstep")
        row["per_rank"] = r["stats"].get("per_rank")
        log(f"  ok: {s['supersteps']} supersteps, {s['messages']} messages, {s['bytes']} bytes, "
            f"time_s {s['time_s']:.3f}, wall {r['wall_s']:.1f}s")
    else:
        row["stderr_tail"] = r.get("stderr_tail", "")
        log(f"  {r['status']}: {row['stderr_tail'][-300:]}")
    return row


def summarize(st: dict[str, Any]) -> dict[str, Any]:
    """The numbers of one run that go into the table."""
    steps = st.get("per_superstep", [])
    # The last superstep (state -1) computes and ends without an exchange; all others end with one.
    exch = [s for s in steps if s.get("state", 0) != -1]
    per_b = [int(s["bytes"]) for s in exch]
    ranks = st.get("per_rank", [])
    return {
        "supersteps": int(st["supersteps"]),
        "messages": int(st["messages"]),
        "bytes": int(st["bytes"]),
        "exchange_supersteps": len(exch),
        "bytes_per_step_mean": (sum(per_b) / len(per_b)) if per_b else 0.0,
        "bytes_per_step_max": max(per_b) if per_b else 0,
        "time_s": float(st["time_s"]),
        "load_time_s": float(st.get("load_time_s", float("nan"))),
        "compute_s_max": max((float(r["compute_s"]) for r in ranks), default=float("nan")),
        "comm_s_max": max((float(r["comm_s"]) for r in ranks), default=float("nan")),
        "ranks": int(st.get("ranks", len(ranks))),
        "graph_n": st.get("graph", {}).get("n"),
        "graph_m": st.get("graph", {}).get("m"),
    }


# --------------------------------------------------------------------------- checks


def check(rows: list[dict[str, Any]]) -> list[str]:
    """Consistency across N: equal supersteps/messages; bytes 0 with one rank, > 0 with more."""
    problems = []
    by_key: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in rows:
        by_key.setdefault((r["graph"], r["program"]), []).append(r)
    for (graph, program), rs in by_key.items():
        for r in rs:
            if r["status"] != "ok":
                problems.append(f"{program} on {graph}, N={r['np']}: {r['status']}: `{r['command']}`")
        ok = [r for r in rs if r["status"] == "ok"]
        for field in ("supersteps", "messages"):
            vals = {r["np"]: r["summary"][field] for r in ok}
            if len(set(vals.values())) > 1:
                problems.append(f"{program} on {graph}: {field} differ across N: {vals}")
        for r in ok:
            b, n = r["summary"]["bytes"], r["np"]
            if n == 1 and b != 0:
                problems.append(f"{program} on {graph}, N=1: {b} bytes crossed ranks (expected 0): `{r['command']}`")
            if n > 1 and b <= 0:
                problems.append(f"{program} on {graph}, N={n}: no bytes crossed ranks: `{r['command']}`")
            if r["summary"]["ranks"] != n:
                problems.append(f"{program} on {graph}, N={n}: stats say ranks={r['summary']['ranks']}")
    return problems


# --------------------------------------------------------------------------- report


def g2pl_sources() -> dict[str, Any]:
    """Where the `g2pl` package this Python imports lives, and a hash of its sources and of programs/.

    Taken at the start and at the end: if the sources change while the benchmark runs (someone
    editing the working tree of an editable install), the numbers mix versions and a check fails.
    """
    import importlib.resources as resources

    import g2pl

    pkg = Path(g2pl.__file__).resolve().parent
    dirs = [pkg, REPO / "programs"]
    for sub in ("g2pl.templates", "g2pl.grammar"):
        try:
            dirs.append(Path(str(resources.files(sub))))
        except (ModuleNotFoundError, TypeError):
            dirs.append(pkg.parent / sub.split(".")[1])
    h = hashlib.sha1()
    for d in dirs:
        if not d.is_dir():
            continue
        for f in sorted(d.rglob("*")):
            if f.is_file() and f.suffix in (".py", ".j2", ".lark", ".g2pl"):
                h.update(str(f.relative_to(d)).encode())
                h.update(f.read_bytes())
    return {"package": str(pkg), "in_repo": pkg.is_relative_to(REPO), "sha1": h.hexdigest()}


def fmt_int(x: float) -> str:
    return f"{int(round(x)):,}"


def fmt_s(x: float) -> str:
    return "nan" if x != x else f"{x:.3f}"


def table(graph: str, rows: list[dict[str, Any]]) -> list[str]:
    head = ["program", "N", "supersteps", "messages", "bytes", "bytes/step mean", "bytes/step max",
            "time_s", "load_s", "compute_s max", "comm_s max", "wall_s", "status"]
    out = ["| " + " | ".join(head) + " |", "|" + "|".join(["---"] * 2 + ["---:"] * (len(head) - 3) + ["---"]) + "|"]
    for r in rows:
        if r["graph"] != graph:
            continue
        s = r.get("summary")
        if s is None:
            cells = [r["program"], str(r["np"])] + ["–"] * 9 + [fmt_s(r["wall_s"]), r["status"]]
        else:
            cells = [r["program"], str(r["np"]), str(s["supersteps"]), fmt_int(s["messages"]), fmt_int(s["bytes"]),
                     fmt_int(s["bytes_per_step_mean"]), fmt_int(s["bytes_per_step_max"]), fmt_s(s["time_s"]),
                     fmt_s(s["load_time_s"]), fmt_s(s["compute_s_max"]), fmt_s(s["comm_s_max"]),
                     fmt_s(r["wall_s"]), r["status"]]
        out.append("| " + " | ".join(cells) + " |")
    return out


def render(res: dict[str, Any]) -> str:
    cfg, m = res["config"], res["machine"]
    lines = [
        "# g2pl MPI scaling",
        "",
        f"Configuration: {'quick' if cfg['quick'] else 'full'}; graphs {', '.join(cfg['graphs'])} (seed {SEED}); "
        f"N = {', '.join(map(str, cfg['nps']))} ranks; programs "
        + ", ".join(f"{k} (`{v[0]}`{''.join(' --arg ' + a for a in v[1])})" for k, v in PROGRAMS.items())
        + "; BFS root: the first edge's source of each graph.",
        "",
        f"Machine: {harness.describe(m)}. Ranks beyond {m['nproc']} are oversubscribed.  ",
        f"Commit: {res['commit']}; g2pl package: `{res['sources']['package']}`"
        + ("" if res["sources"]["in_repo"] else
           " (not this repository's working tree: note that the ranks mpiexec starts run `python -m g2pl.cli` "
           "from the repository root and so may import its `g2pl/` instead)")
        + f", sources sha1 {res['sources']['sha1'][:12]}.  ",
        f"Started {res['started']}; the whole script took {res['total_s']:.1f} s.",
        "",
        "Columns: `bytes` crossed ranks (all supersteps); `bytes/step` over the supersteps that end with an "
        "exchange (all but the last); `time_s` run time without graph loading; `load_s` the stats' "
        "`load_time_s` (partitioning/scattering and runtime set-up, not generating the graph); "
        "`compute_s`/`comm_s` the per-rank sums, max over ranks; `wall_s` the whole command as timed "
        "by this script (mpiexec start-up, graph generation, compilation, output included).",
        "",
    ]
    for g in cfg["graphs"]:
        info = next((r["summary"] for r in res["runs"] if r["graph"] == g and r.get("summary")), None)
        size = f" (n = {info['graph_n']:,}, m = {info['graph_m']:,})" if info else ""
        root = res["bfs_roots"].get(g)
        lines += [f"## {g}{size}", "", f"BFS root = {root}.", "", *table(g, res["runs"]), ""]
    sp = res["speedup"]
    lines += ["## Speed-up", ""]
    if sp.get("ratio") is not None:
        lines.append(
            f"**PageRank on {sp['graph']} (seed {SEED}): N=2 over N=1 speed-up = {sp['ratio']:.2f}x** "
            f"(median `time_s` {sp['median_s']['1']:.3f} s vs {sp['median_s']['2']:.3f} s over "
            f"{sp['reps']} runs each, interleaved).")
    else:
        lines.append(f"PageRank on {sp['graph']}: speed-up not available ({sp.get('error', 'runs failed')}).")
    lines.append("")
    lines.append("| run | N | time_s | load_s | wall_s | status |")
    lines.append("|---:|---:|---:|---:|---:|---|")
    for i, r in enumerate(sp["runs"], 1):
        s = r.get("summary") or {}
        lines.append(f"| {i} | {r['np']} | {fmt_s(s.get('time_s', float('nan')))} | "
                     f"{fmt_s(s.get('load_time_s', float('nan')))} | {fmt_s(r['wall_s'])} | {r['status']} |")
    lines += ["", "## Checks", ""]
    if res["problems"]:
        lines += [f"- PROBLEM: {p}" for p in res["problems"]]
    else:
        lines.append("All passed: supersteps and messages equal across N for every program and graph; "
                     "0 bytes crossed ranks with N=1 and > 0 with N>1; the g2pl sources did not change "
                     "during the run.")
    failures = [r for r in res["runs"] + sp["runs"] if r["status"] != "ok"]
    for r in failures:
        lines += ["", f"`{r['command']}`: {r['status']}", "", "```", r.get("stderr_tail", "").strip(), "```"]
    lines += ["", "## Commands", "", "Run from the repository root; stats files went to a temporary directory.", "",
              "```", f"{res['script_command']}"]
    lines += [r["command"] for r in res["runs"] + sp["runs"]]
    lines += ["```", ""]
    return "\n".join(lines)


# --------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    ap = harness.parser(__doc__, quick="small graphs, N = 1, 2")
    ap.add_argument("--g2pl", default=None, help="the g2pl command (default: next to this Python, else on PATH)")
    ap.add_argument("--timeout", type=float, default=900.0, help="per-run timeout in seconds (default 900)")
    ap.add_argument("--nps", default=None, help="comma-separated rank counts (overrides the configuration)")
    a = ap.parse_args(argv)

    cfg = dict(QUICK if a.quick else FULL)
    if a.nps:
        cfg["nps"] = [int(x) for x in a.nps.split(",")]
    cfg["quick"] = a.quick
    cfg["timeout_s"] = a.timeout
    exe = [a.g2pl] if a.g2pl else harness.g2pl_command()

    t_start = time.perf_counter()
    res: dict[str, Any] = {
        "config": cfg, "machine": harness.machine(("numpy", "scipy", "mpi4py")),
        "commit": harness.git_commit(*SOURCE_PATHS), "started": harness.now(), "g2pl": exe,
        "script_command": harness.command(__file__, argv), "bfs_roots": {}, "runs": [], "sources": g2pl_sources(),
    }

    def log(msg: str) -> None:
        print(f"[{time.perf_counter() - t_start:7.1f}s] {msg}", file=sys.stderr, flush=True)

    with tempfile.TemporaryDirectory(prefix="g2pl-bench-") as tmp:
        tmpdir = Path(tmp)
        for graph in cfg["graphs"]:
            root = bfs_root(graph)
            res["bfs_roots"][graph] = root
            for program in PROGRAMS:
                extra = [f"root={root}"] if program == "bfs" else []
                for np_ in cfg["nps"]:
                    stats = tmpdir / f"{program}-{graph.replace(':', '_')}-np{np_}.json"
                    log(f"{program} {graph} N={np_} ...")
                    row = {"graph": graph, "program": program, "np": np_}
                    res["runs"].append(measure(row, build_command(exe, program, graph, np_, stats, extra), stats,
                                               a.timeout, log))

        # Speed-up of 2 ranks over 1: PageRank, interleaved (noisy shared machine), median time_s.
        g = cfg["speedup_graph"]
        sp: dict[str, Any] = {"graph": g, "program": "pagerank", "reps": cfg["speedup_reps"], "runs": []}

        def speedup_run(np_: int) -> None:
            rep = sum(r["np"] == np_ for r in sp["runs"])
            stats = tmpdir / f"speedup-{g.replace(':', '_')}-np{np_}-{rep}.json"
            log(f"speed-up pagerank {g} N={np_} rep {rep + 1} ...")
            sp["runs"].append(measure({"np": np_, "rep": rep}, build_command(exe, "pagerank", g, np_, stats, []),
                                      stats, a.timeout, log))

        harness.interleave({n: lambda n=n: speedup_run(n) for n in (1, 2)}, cfg["speedup_reps"])
        times = {n: [r["summary"]["time_s"] for r in sp["runs"] if r["np"] == n and r["status"] == "ok"]
                 for n in (1, 2)}
        if times[1] and times[2]:
            med = {str(n): harness.median(t) for n, t in times.items()}
            sp["median_s"] = med
            sp["ratio"] = med["1"] / med["2"]
        else:
            sp["ratio"] = None
            sp["error"] = "some runs failed"
        res["speedup"] = sp

    sp_checks = [r for r in sp["runs"] if r["status"] == "ok"]
    res["problems"] = check(res["runs"])
    for field in ("supersteps", "messages"):
        vals = {r["summary"][field] for r in sp_checks}
        if len(vals) > 1:
            res["problems"].append(f"pagerank on {g} (speed-up runs): {field} differ: {sorted(vals)}")
    res["problems"] += [f"pagerank on {g} (speed-up), N={r['np']}: {r['status']}: `{r['command']}`"
                        for r in sp["runs"] if r["status"] != "ok"]
    end_sources = g2pl_sources()
    if end_sources["sha1"] != res["sources"]["sha1"]:
        res["problems"].append(f"the g2pl sources under {res['sources']['package']} (or programs/) changed while "
                               "the benchmark ran: the numbers mix versions")
    res["sources_at_end"] = end_sources
    res["total_s"] = time.perf_counter() - t_start

    md = render(res)
    paths = harness.write_report(a.out, harness.stem("mpi_scaling", a.quick), md, res)
    print(md)
    log(f"wrote {paths[0]} and {paths[1]}")
    return 1 if res["problems"] else 0


if __name__ == "__main__":
    sys.exit(main())
