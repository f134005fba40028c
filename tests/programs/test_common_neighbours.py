"""Common-neighbour aggregations (`w <- nvals u, w <- nvals v` in an edge comprehension) against a
direct simulation with networkx, on random graphs with sparse IDs, several components, weights,
directed and undirected, at every -O level; errors for the forms that mean nothing."""

from __future__ import annotations

import math

import networkx as nx
import pytest
from cli_util import mpi_available, run_proc
from oracles import random_graph

import g2pl
from g2pl.errors import G2PLError

FORMS = """
forms(t: float) {
  X = { id % 3 == 0 | v <- V };
  H = { Weight[e] > t | e <- E };
  A = { sum [ Weight[f] + Weight[g] | (w, f) <- nvals u, (w, g) <- nvals v ] | (u, v) <- E };
  B = { min [ id[w] | w <- nvals u, w in nvals v, w in X ] | (u, v) <- E };
  C = { argmax [ Weight[f] * Weight[g] | (w, f) <- nvals u, (w, g) <- nvals v ] | (u, v) <- E };
  D = { avg [ Weight[f] - Weight[e] | (w, f) <- nvals u, (w, g) <- nvals v, Weight[g] > t ] | (u, e, v) <- E };
  F = { count [ w | (w, f) <- nvals u, (w, g) <- nvals v, f in H ] | (u, e, v) <- H };
  G = { or [ w in X | w <- nvals v, w <- nvals u ] | (u, v) <- E };
  K = { count [ w | (w, f) <- nvals u, (w, g) <- nvals v, f in H, g in H, !(w in X) ] | (u, e, v) <- H };
  n = sum [ count [ w | w <- nvals u, w in nvals v ] | (u, v) <- E ];
  return A, B, C, D, F, G, K, n;
}
"""

DIRECTED = """
dforms() {
  A = { count [ w | w <- nvals u, w <- nvals v ] | (u, v) <- E };
  B = { count [ w | w <- outnvals u, w <- nvals v ] | (u, v) <- E };
  C = { sum [ Weight[f] * 2.0 + Weight[g] | (w, f) <- nvals u, (w, g) <- outnvals v ] | (u, v) <- E };
  D = { max [ id[w] | w <- outnvals u, w in outnvals v ] | (u, v) <- E };
  return A, B, C, D;
}
"""

GRAPHS = [(11, 120), (12, 300), (13, 700)]


def _edges(value) -> dict[tuple[int, int], object]:
    return {(int(a), int(b)): x for a, b, x in value}


def _w(G, a, b) -> float:
    return G[a][b]["weight"]


def _expected(G: nx.Graph, t: float) -> dict[str, object]:
    """The forms' values, straight from the definitions (u the smaller ID of each edge)."""
    X = {v for v in G if v % 3 == 0}
    H = {frozenset(e) for e in G.edges() if _w(G, *e) > t}
    out: dict[str, dict] = {k: {} for k in "ABCDFGK"}
    n = 0
    for a, b in G.edges():
        u, v = min(a, b), max(a, b)
        common = sorted(set(G[u]) & set(G[v]))
        n += len(common)
        out["A"][(u, v)] = sum(_w(G, u, w) + _w(G, v, w) for w in common)
        inx = [w for w in common if w in X]
        out["B"][(u, v)] = min(inx) if inx else -1
        best = max((_w(G, u, w) * _w(G, v, w) for w in common), default=None)
        out["C"][(u, v)] = -1 if best is None else min(w for w in common if _w(G, u, w) * _w(G, v, w) == best)
        vals = [_w(G, u, w) - _w(G, u, v) for w in common if _w(G, v, w) > t]
        out["D"][(u, v)] = math.fsum(vals) / len(vals) if vals else math.nan
        inh = frozenset((u, v)) in H
        out["F"][(u, v)] = sum(1 for w in common if frozenset((u, w)) in H) if inh else 0
        out["G"][(u, v)] = any(w in X for w in common)
        out["K"][(u, v)] = sum(1 for w in common if frozenset((u, w)) in H and frozenset((v, w)) in H
                               and w not in X) if inh else 0
    return {**out, "n": n}


@pytest.fixture(scope="module")
def forms() -> dict[int, g2pl.Program]:
    return {o: g2pl.compile(FORMS, opt=o) for o in (0, 1, 2)}


@pytest.mark.parametrize("seed,n", GRAPHS)
def test_forms_against_networkx(forms, seed, n):
    t = random_graph(seed, n, weighted=True, shapes=("clique", "dense", "sparse"))
    exp = _expected(t.G, 12.0)
    for opt, prog in forms.items():
        r = prog.run(t.g, {"t": 12.0})
        assert r["n"] == exp["n"], opt
        for name in "ABCFK":
            assert _edges(r[name]) == exp[name], (name, opt)
        assert {(a, b) for a, b in r["G"]} == {e for e, x in exp["G"].items() if x}, opt
        got = _edges(r["D"])
        for e, x in exp["D"].items():
            g = got[e]
            assert (g == "nan" and math.isnan(x)) or g == pytest.approx(x, rel=1e-12), (e, g, x, opt)


@pytest.mark.parametrize("seed,n", GRAPHS)
def test_directed_forms_against_networkx(seed, n):
    t = random_graph(seed, n, directed=True, weighted=True, shapes=("clique", "dense", "sparse"))
    G = t.G
    pred = {v: set(G.predecessors(v)) for v in G}
    succ = {v: set(G.successors(v)) for v in G}
    exp: dict[str, dict] = {k: {} for k in "ABCD"}
    for u, v in G.edges():
        exp["A"][(u, v)] = len(pred[u] & pred[v])
        exp["B"][(u, v)] = len(succ[u] & pred[v])
        exp["C"][(u, v)] = sum(G[w][u]["weight"] * 2.0 + G[v][w]["weight"] for w in pred[u] & succ[v])
        both = succ[u] & succ[v]
        exp["D"][(u, v)] = max(both) if both else -1  # the empty max of vids
    for opt in (0, 2):
        r = g2pl.compile(DIRECTED, opt=opt).run(t.g)
        for name in "ABCD":
            assert _edges(r[name]) == exp[name], (name, opt)


@pytest.mark.parametrize("directed", [False, True], ids=["undirected", "directed"])
@pytest.mark.parametrize("seed,n", GRAPHS[:2])
def test_restricted_listing_equals_the_filter(seed, n, directed):
    """Triangles listed within K give what the filter `f in K, g in K` gives over all triangles."""
    t = random_graph(seed, n, directed=directed, weighted=True, shapes=("clique", "dense"))
    gens = "(w, f) <- nvals u, (w, g) <- outnvals v" if directed else "(w, f) <- nvals u, (w, g) <- nvals v"
    within = g2pl.compile("f(t: float) { K = { Weight[e] > t | e <- E }; "
                          f"S = {{ count [ w | {gens}, f in K, g in K ] "
                          "| (u, e, v) <- K }; return S; }")
    plain = g2pl.compile("f(t: float) { K = { Weight[e] > t | e <- E }; "
                         f"S = {{ (e in K) ? count [ w | {gens}, f in K, g in K ] : 0 "
                         "| (u, e, v) <- E }; return S; }")
    assert "within K" in within.plan_text() and "within" not in plain.plan_text()
    for thr in (0.0, 8.0, 15.0):
        assert within.run(t.g, {"t": thr})["S"] == plain.run(t.g, {"t": thr})["S"]


def test_one_superstep_for_the_whole_listing():
    t = random_graph(5, 500, shapes=("clique", "dense"))
    r = g2pl.compile_file(g2pl_programs() / "triangles.g2pl").run(t.g)
    assert r.stats["supersteps"] <= 10


def g2pl_programs():
    from pathlib import Path

    return Path(__file__).resolve().parents[2] / "programs"


@pytest.mark.parametrize("src,msg", [
    ("f() { S = { count [ w | w <- nvals u, x <- nvals v ] | (u, v) <- E }; return S; }",
     "bind different vertices"),
    ("f() { S = { count [ w | w <- nvals u, w <- nvals u ] | (u, v) <- E }; return S; }",
     "both neighbour generators are centred at `u`"),
    ("f() { S = { count [ w | w <- nvals u, w <- nvals v ] | v <- V }; return S; }",
     "an edge's two endpoints"),
    ("f() { S = { count [ w | w <- nvals u, w in nvals v ] | e <- E }; return S; }",
     "an edge's two endpoints"),
    ("f() { S = { or [ w in nvals v && true | w <- nvals u ] | (u, v) <- E }; return S; }",
     "a qualifier of its own"),
    ("f() { S = { sum [ rand() | w <- nvals u, w <- nvals v ] | (u, v) <- E }; return S; }",
     "`rand()` cannot be drawn per common neighbour"),
    ("f() { S = { union [ w | w <- nvals u, w <- nvals v ] | (u, v) <- E }; return S; }",
     "`union` over common neighbours"),
    ("f() { S = { count [ w | (w, f) <- nvals u, (w, f) <- nvals v ] | (u, v) <- E }; return S; }",
     "different names"),
])
def test_errors(src, msg):
    with pytest.raises(G2PLError) as got:
        g2pl.compile(src)
    assert msg in str(got.value)


def test_error_exit_2_with_caret(tmp_path):
    p = tmp_path / "bad.g2pl"
    p.write_text("f() {\n  S = { count [ w | w <- nvals u, x <- nvals v ] | (u, v) <- E };\n  return S;\n}\n")
    r = run_proc("g2pl", "check", str(p))
    assert r.returncode == 2
    assert "bad.g2pl:2:" in r.stderr and "^" in r.stderr and "Traceback" not in r.stderr



@pytest.mark.skipif(not mpi_available(), reason="mpi4py/mpiexec not installed (pip install '.[mpi]')")
@pytest.mark.parametrize("directed", [False, True], ids=["undirected", "directed"])
def test_same_answer_on_any_number_of_ranks(tmp_path, directed):
    """The listing on 2 and 3 ranks (neighbour lists of mirrors shipped) gives exactly one rank's answer,
    float sums and means included, at -O0 and -O2; the messages are those of one rank at the same level,
    and bytes cross ranks."""
    import json

    t = random_graph(21, 400, directed=directed, weighted=True, shapes=("clique", "dense", "sparse"))
    g = t.g
    graph = tmp_path / "g.txt"
    graph.write_text("".join(f"{a} {b} {w}\n" for a, b, w in zip(g.ids[g.src], g.ids[g.dst], g.weight)))
    prog = tmp_path / "p.g2pl"
    prog.write_text(DIRECTED if directed else FORMS)
    runs = []
    for n in (1, 2, 3):
        for opt in ("-O0", "-O2"):
            out, stats = tmp_path / "o.json", tmp_path / "s.json"
            r = run_proc("g2pl", "run", prog, "--graph", graph, "--np", n, opt, "--quiet", "--output", out,
                         "--stats", stats, *(["--directed"] if directed else ["--arg", "t=12.0"]), timeout=300)
            assert r.returncode == 0, r.stderr
            runs.append((n, opt, json.loads(out.read_text()), json.loads(stats.read_text())))
    one = {opt: stats for n, opt, _out, stats in runs if n == 1}
    for n, opt, out, stats in runs[1:]:
        assert out == runs[0][2], (n, opt)
        assert stats["messages"] == one[opt]["messages"], (n, opt)
        assert (stats["bytes"] > 0) == (n > 1)
