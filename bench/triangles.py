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

The compiled kernels (numba, g2pl/runtime/cpu_kernels.py) run as G2PL_NUMBA says (the report records
it): unset, only for work large enough (kron:16 is); 1, always; 0, never (the NumPy listing).

Output: OUT/triangles.{md,json} (triangles_quick.* with --quick; NAME from --name).
"""

from __future__ import annotations

import sys

import harness

import g2pl


def main(argv: list[str] | None = None) -> int:
    ap = harness.parser(__doc__, quick="kron:12, 3 runs", repeat=5)
    harness.add_gapbs(ap)
    ap.add_argument("--scale", type=int, default=16)
    ap.add_argument("--check-max-edges", type=int, default=300_000)
    ap.add_argument("--name", default="triangles", help="report name (OUT/NAME.md)")
    a = ap.parse_args(argv)
    if a.quick:
        a.scale, a.repeat = 12, 3
    spec = f"kron:{a.scale}"
    g = g2pl.load_graph(spec, seed=0)
    prog = g2pl.compile_file(harness.ROOT / "programs" / "triangles.g2pl")
    last, cmds = {}, []

    def ours() -> float:
        last["res"] = prog.run(g)
        return last["res"].stats["time_s"]

    def theirs() -> float:
        t, cmd = harness.gapbs([str(a.gapbs / "tc"), "-g", str(a.scale), "-n", "1"])
        cmds[:] = [cmd]
        return t

    m = harness.machine()  # with the load average at the start
    runs = harness.interleave({"g2pl": ours, **({"gapbs": theirs} if a.gapbs else {})}, a.repeat)
    ours_s, theirs_s = runs["g2pl"], runs.get("gapbs", [])
    res = last["res"]
    total, steps = int(res["total"]), res.stats["supersteps"]
    checked = "not checked (graph above --check-max-edges)"
    if g.m <= a.check_max_edges:
        import networkx as nx

        G = nx.Graph()
        G.add_nodes_from(g.ids.tolist())
        G.add_edges_from(zip(g.ids[g.src].tolist(), g.ids[g.dst].tolist()))
        ok = sum(nx.triangles(G).values()) // 3 == total
        checked = "equal to networkx" if ok else "DIFFERS from networkx"
    med_ours = harness.median(ours_s)
    med_theirs = harness.median(theirs_s) if theirs_s else None
    commit = harness.git_commit()
    rows = [f"| g2pl `programs/triangles.g2pl`, 1 rank, NumPy backend | {med_ours:.3f} | "
            f"{', '.join(f'{x:.3f}' for x in ours_s)} |"]
    if med_theirs is not None:
        rows.append(f"| GAPBS `tc`, 1 thread | {med_theirs:.3f} | {', '.join(f'{x:.3f}' for x in theirs_s)} |")
    ratio = f"{med_ours / med_theirs:.2f}x GAPBS" if med_theirs else "(no GAPBS run)"
    report = "\n".join([
        f"# Triangle counting on {spec}", "",
        f"Machine: {harness.describe(m)}, load average {m['loadavg']:.1f} at the start; commit {commit}; "
        f"{harness.now()}.", "",
        f"g2pl graph: {g.n} vertices, {g.m} edges, {total} triangles ({checked}); {steps} supersteps; "
        f"compiled kernels: {harness.kernels_mode()}.", "",
        "| run | median s | runs (interleaved) |", "|---|---|---|", *rows, "",
        f"g2pl / GAPBS (medians): **{ratio}**.", "",
        "Commands: `" + harness.command(__file__, argv) + "`: `prog.run(g2pl.load_graph('" + spec + "', seed=0))`"
        + "".join(f", `{c}`" for c in cmds), "",
    ])
    harness.write_report(a.out, harness.stem(a.name, a.quick), report, {
        "kernels": harness.kernels_mode(),
        "graph": spec, "n": g.n, "m": g.m, "triangles": total, "checked": checked, "supersteps": steps,
        "g2pl_s": ours_s, "gapbs_s": theirs_s, "ratio": (med_ours / med_theirs) if med_theirs else None,
        "commit": commit, "machine": m, "commands": cmds})
    print(report)
    return 0 if "DIFFERS" not in checked else 1


if __name__ == "__main__":
    sys.exit(main())
