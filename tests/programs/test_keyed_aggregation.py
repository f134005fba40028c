"""Keyed aggregation (`AGG [ ... ] by KEY`) and edge-valued argmin/argmax, against a direct
simulation in Python over the networkx twin of random graphs (sparse shuffled IDs, several
components, isolated vertices; directed and undirected, weighted), at every -O level."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from oracles import random_graph

import g2pl
from g2pl.errors import G2PLError

PROG = Path(__file__).resolve().parents[1] / "fixtures" / "keyed" / "all_forms.g2pl"
INT_MAX, INT_MIN = 2**63 - 1, -(2**63)


def _nbrs(G, v) -> list[int]:
    return list(G.predecessors(v)) if G.is_directed() else list(G.neighbors(v))


def _edges(G) -> list[tuple[int, int, float]]:
    """(u, v, weight): u the source (directed) or the smaller ID (undirected)."""
    out = []
    for a, b, d in G.edges(data=True):
        if not G.is_directed() and a > b:
            a, b = b, a
        out.append((a, b, d["weight"]))
    return out


def _group(items, keys_of):
    """{key: [item, ...]}: each item under each of its distinct keys that is a vertex."""
    out: dict[int, list] = {}
    for it in items:
        for k in dict.fromkeys(keys_of(it)):
            if k != -1:
                out.setdefault(k, []).append(it)
    return out


def oracle(G) -> dict[str, object]:
    """What `all_forms.g2pl` returns, computed directly."""
    V = sorted(G.nodes)
    lo = {v: min(_nbrs(G, v), default=-1) for v in V}
    hi = {v: max(_nbrs(G, v), default=-1) for v in V}
    deg = {v: len(_nbrs(G, v)) for v in V}
    E = _edges(G)

    def per_vertex(groups, fn, empty):
        return {v: fn(groups[v]) if v in groups else empty for v in V}

    out: dict[str, object] = {}
    out["Cnt"] = per_vertex(_group(V, lambda x: [lo[x]]), len, 0)
    out["Sum"] = per_vertex(_group([x for x in V if deg[x] != 2], lambda x: [lo[x], hi[x]]),
                            lambda xs: sum(deg[x] for x in xs), 0)
    by_ends = _group(E, lambda e: [e[0], e[1]])
    out["Avg"] = per_vertex(by_ends, lambda es: sum(w for _a, _b, w in sorted(es)) / len(es), math.nan)
    out["Fs"] = per_vertex(_group(E, lambda e: [e[1]]), lambda es: sum(w / 3.0 for _a, _b, w in sorted(es)), 0.0)
    out["Mn"] = per_vertex(_group([e for e in E if e[2] > 2.0], lambda e: [lo[e[0]]]),
                           lambda es: min(w for _a, _b, w in es), math.inf)
    out["Mx"] = per_vertex(_group(V, lambda x: [hi[x] + 1 if hi[x] != -1 else 0]),
                           lambda xs: max(deg[x] for x in xs), INT_MIN)
    out["Any"] = sorted(v for v, ok in per_vertex(_group(V, lambda x: [lo[x]]),
                                                  lambda xs: any(deg[x] > 3 for x in xs), False).items() if ok)
    out["All"] = sorted(v for v, ok in per_vertex(_group(V, lambda x: [lo[x]]),
                                                  lambda xs: all(deg[x] > 1 for x in xs), True).items() if ok)
    out["Am"] = per_vertex(_group(V, lambda x: [lo[x]]), lambda xs: min(xs, key=lambda x: (deg[x], x)), -1)
    ax = _group(E, lambda e: [lo[e[0]], lo[e[1]]])
    out["Ax"] = sorted({(a, b) for es in ax.values() for a, b, _w in [min(es, key=lambda e: (-e[2], e[0], e[1]))]})
    out["Ap"] = per_vertex(_group(E, lambda e: [e[0]]), lambda es: min(es, key=lambda e: (e[2], e[0], e[1]))[1], -1)
    out["G1"] = [min(E, key=lambda e: (-e[2], e[0], e[1]))[:2]] if E else []
    cand = [x for x in V if deg[x] > 0]
    out["G2"] = lo[min(cand, key=lambda x: (deg[x], x))] if cand else -1
    return out


def _norm(value):
    """JSON output values as Python: ID keys as ints, non-finite floats as floats, pairs as tuples."""
    if isinstance(value, dict):
        return {int(k): (float(v) if isinstance(v, str) else v) for k, v in value.items()}
    if isinstance(value, list):
        return [tuple(p) if isinstance(p, list) else p for p in value]
    return value


def _same(a, b) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        return math.isnan(a) and math.isnan(b) or a == pytest.approx(b, rel=1e-12, abs=1e-12)
    return a == b


@pytest.fixture(scope="module")
def progs():
    return {o: g2pl.compile_file(PROG, opt=o) for o in (0, 1, 2)}


@pytest.mark.parametrize("opt", [0, 1, 2])
@pytest.mark.parametrize("directed", [False, True], ids=["undirected", "directed"])
@pytest.mark.parametrize("seed", [3, 4, 5])
def test_every_form_matches_direct_simulation(progs, seed, directed, opt):
    t = random_graph(seed, 250, directed=directed, weighted=True)
    res = progs[opt].run(t.g, {})
    want = oracle(t.G)
    for name, exp in want.items():
        got = _norm(res[name])
        if isinstance(exp, dict):
            assert got.keys() == exp.keys(), name
            bad = [v for v in exp if not _same(got[v], exp[v])]
            assert not bad, (name, [(v, got[v], exp[v]) for v in bad[:5]])
        else:
            assert got == exp, name


def test_ties_go_to_the_smaller_edge():
    """Equal weights everywhere: the lightest edge of each group is the one with the smaller (u, v)."""
    from oracles import from_edges

    g = from_edges([(9, 4), (4, 7), (7, 9), (2, 30), (30, 11)], isolated=[100])
    prog = g2pl.compile("t() {\n  M = argmin [ Weight[e] | (u, e, v) <- E ] by 4;\n"
                        "  A = argmax [ Weight[e] | (u, e, v) <- E ];\n"
                        "  P = argmin [ [Weight[e], id[v]] | (u, e, v) <- E ] by [u, v];\n  return M, A, P;\n}\n")
    r = prog.run(g, {})
    assert r["M"] == [[2, 30]] and r["A"] == [[2, 30]]
    assert {int(k): v for k, v in r["P"].items()} == {2: 30, 4: 7, 7: 7, 9: 9, 11: 30, 30: 30, 100: -1}


def test_global_vertex_winners_with_ties_nan_and_payloads():
    """Unkeyed argmax/argmin over vertices (one group, no sort): the best value, ties to the smaller
    original ID, NaN never winning, the payload read at the winner; with a filter and with none left."""
    from oracles import from_edges

    g = from_edges([(50, 8), (50, 9), (50, 70), (8, 9), (8, 70), (3, 4), (4, 5)], isolated=[1, 99])
    prog = g2pl.compile("t() {\n  D = { count [ u | u <- nvals v ] | v <- V };\n"
                        "  a = argmax [ [d, id] | d <- D ];\n  b = argmin [ [d, id] | d <- D ];\n"
                        "  F = { (d >= 2) ? 1.0 / float(d) : 0.0 / 0.0 | d <- D };\n"
                        "  c = argmin [ [f, id] | f <- F ];\n  e = argmax [ [f, D[f] * 10] | f <- F ];\n"
                        "  z = argmax [ [d, id] | d <- D, d > 9 ];\n  return a, b, c, e, z;\n}\n")
    r = prog.run(g, {})
    # degrees: 50: 3, 8: 3, 9: 2, 70: 2, 3: 1, 4: 2, 5: 1, 1: 0, 99: 0
    assert (r["a"], r["b"]) == (8, 1)  # 8 and 50 tie at 3; 1 and 99 at 0
    assert (r["c"], r["e"]) == (8, 20)  # 1/3 least (8 < 50); 1/2 greatest (4 < 9 < 70), payload 2 * 10
    assert r["z"] == -1  # no element: the payload's default


def test_keys_that_are_no_vertex_are_dropped():
    from oracles import from_edges

    g = from_edges([(1, 2), (2, 3)])
    prog = g2pl.compile("t() {\n  S = sum [ 1 | v <- V ] by (id[v] * 10);\n  T = count [ v | v <- V ] by (-1);\n"
                        "  return S, T;\n}\n")
    r = prog.run(g, {})
    assert r["S"] == {"1": 0, "2": 0, "3": 0} and r["T"] == {"1": 0, "2": 0, "3": 0}


@pytest.mark.parametrize("src,msg", [
    ("t() { X = { sum [ 1 | u <- V ] by u | v <- V }; return X; }", "cannot be nested"),
    ("t() { X = sum [ 1 | u <- nvals v ] by u; return X; }", "not over neighbours"),
    ("t() { X = union [ v | v <- V ] by v; return X; }", "`by` groups the other aggregations"),
    ("t() { X = sum [ [1, 2] | v <- V ] by v; return X; }", "[value, payload]"),
    ("t() { X = sum [ 1 | v <- V ] by 1.5; return X; }", "a key names a vertex"),
    ("t() { X = sum [ 1 | v <- V ] by V; return X; }", "a key names a vertex"),
    ("t() { X = (1 + 2) by 3; return X; }", "`by` groups an aggregation"),
    ("t() { X = sum [ 1 | v <- V ] by v by v; return X; }", ""),
])
def test_errors(src, msg):
    with pytest.raises(G2PLError) as exc:
        g2pl.compile(src)
    assert msg in str(exc.value)


def test_by_is_still_a_name_elsewhere():
    prog = g2pl.compile("t() {\n  by = 3;\n  return by;\n}\n")
    from oracles import from_edges

    assert prog.run(from_edges([(1, 2)]), {})["by"] == 3


@pytest.mark.parametrize("opt", [0, 2])
def test_every_form_on_the_cupy_standin(opt):
    """The CuPy backend's code path (over the strict stand-in) gives the NumPy backend's answers."""
    from test_cupy_backend import same, standin

    t = random_graph(8, 300, weighted=True)
    prog = g2pl.compile_file(PROG, opt=opt)
    want = prog.run(t.g, {})
    with standin():
        got = prog.run(t.g, {}, backend="cupy")
    assert same(got.output()["values"], want.output()["values"])
    assert got.stats["messages"] == want.stats["messages"]


@pytest.mark.parametrize("directed", [False, True], ids=["undirected", "directed"])
def test_every_form_on_several_ranks(tmp_path, directed):
    """np 2 and 3 under mpiexec: the same values, supersteps and messages as one rank."""
    import json
    import subprocess
    import sys

    from test_mpi import HAVE_MPI, env, same

    if not HAVE_MPI:
        pytest.skip("mpi4py/mpiexec not installed")
    t = random_graph(9, 300, directed=directed, weighted=True)
    g = t.g
    path = tmp_path / "g.txt"
    lines = [f"{a} {b} {w!r}" for a, b, w in zip(g.ids[g.src].tolist(), g.ids[g.dst].tolist(), g.weight.tolist())]
    path.write_text("\n".join(lines + [f"{x} {x} 1.0" for x in g.ids.tolist()]) + "\n")  # self-loops keep isolated IDs
    outs = []
    for n in (1, 2, 3):
        out, stats = tmp_path / f"o{n}.json", tmp_path / f"s{n}.json"
        cmd = [sys.executable, "-m", "g2pl.cli", "run", str(PROG), "--graph", str(path), "--np", str(n),
               "--quiet", "--output", str(out), "--stats", str(stats), *(["--directed"] if directed else [])]
        r = subprocess.run(cmd, env=env(), capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        outs.append((json.loads(out.read_text()), json.loads(stats.read_text())))
    for o, s in outs[1:]:
        assert same(o, outs[0][0])
        assert (s["supersteps"], s["messages"]) == (outs[0][1]["supersteps"], outs[0][1]["messages"])


def test_every_form_with_degree_renumbering():
    """Vertices reordered by degree inside the rank: the same values as in ID order."""
    t = random_graph(10, 300, directed=True, weighted=True)
    prog = g2pl.compile_file(PROG)
    a = prog.run(t.g, {}, renumber="degree")
    b = prog.run(t.g, {}, renumber="none")
    assert a.output() == b.output()
