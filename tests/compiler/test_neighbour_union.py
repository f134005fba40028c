"""`allnvals` (every in- and out-entry), `nbrs` (each adjacent vertex once), the edge tests
`(a, b) in A` and the built-in `directed`, against direct simulations with networkx on random
graphs with sparse shuffled IDs, several components, isolated vertices and reciprocal edges,
directed and undirected, weighted, at every -O level and on 1, 2 and 3 ranks; the superstep costs
of directed CDLP and LCC (Graphalytics' definitions); the plan's words; the errors."""

from __future__ import annotations

import math
from collections import Counter

import networkx as nx
import numpy as np
import pytest
from cli_util import run_proc
from oracles import from_edges, random_graph, vdict
from thread_comm import run_program

import g2pl
from g2pl.errors import G2PLError
from g2pl.graph import Graph

FORMS = """
forms() {
  X = { id % 3 == 0 | v <- V };
  K = { Weight[e] > 12.0 | e <- E };
  A = { count [ u | u <- allnvals v ] | v <- V };
  B = { sum [ Weight[e] | (u, e) <- allnvals v ] | v <- V };
  C = { min [ id[u] | u <- allnvals v, u in X ] | v <- V };
  D = { count [ u | u <- nbrs v ] | v <- V };
  F = { sum [ Weight[e] | (u, e) <- nbrs v ] | v <- V };
  G = { count [ u | u <- nbrs v, (u, v) in E ] | v <- V };
  H = { count [ u | u <- nbrs v, (v, u) in K ] | v <- V };
  I = { count [ u | u <- allnvals v, (u, v) in E && (v, u) in E ] | v <- V };
  J = { count [ u | u <- nvals v, (v, u) in E ] | v <- V };
  L = { count [ u | u <- outnvals v, (u, v) in K ] | v <- V };
  M = { mode [ id[u] | u <- allnvals v ] | v <- V };
  R = { (v, u) in E | (u, v) <- E };
  S = { (v, u) in K | (u, e, v) <- E };
  Tn = { count [ w | w <- nbrs u, w in nbrs v ] | (u, v) <- E };
  Tm = { count [ w | w <- outnvals u, w in nbrs v ] | (u, v) <- E };
  Tf = { sum [ Weight[f] | (w, f) <- nbrs u, (w, g) <- nbrs v ] | (u, v) <- E };
  nr = count [ e | (u, e, v) <- E, (v, u) in E ];
  d = directed;
  return A, B, C, D, F, G, H, I, J, L, M, R, S, Tn, Tm, Tf, nr, d;
}
"""

#: Graphalytics' CDLP on directed graphs: each round, the most frequent label among the in- and
#: out-neighbours (a neighbour linked both ways counted twice), ties to the smallest; a vertex
#: without neighbours keeps its label
CDLP = """
cdlp(rounds: int) {
  L = { id | v <- V };
  D = { count [ u | u <- allnvals v ] | v <- V };
  i = 0;
  while (i < rounds) {
    L = { (D[v] > 0) ? mode [ L[u] | u <- allnvals v ] : L[v] | v <- V };
    i = i + 1;
  }
  return L;
}
"""

#: Graphalytics' LCC: N(v) = N_in(v) | N_out(v) as a set; the directed edges (u, w) with u, w in
#: N(v), over |N(v)| (|N(v)| - 1).  Per edge (a, b): |N(a) & N_out(b)| counts, for v = a and its
#: neighbour u = b, the edges u -> w inside N(v); |N_out(a) & N(b)| the same for v = b, u = a.
#: `(u, e) <- nbrs v` gives each neighbour once, e its out-edge v -> u when there is one (then v is
#: e's a) and else the in-edge u -> v (v is e's b).
LCC = """
lcc() {
  N = { count [ u | u <- nbrs v ] | v <- V };
  P = { count [ w | w <- nbrs a, w in outnvals b ] | (a, b) <- E };
  Q = { count [ w | w <- outnvals a, w in nbrs b ] | (a, b) <- E };
  T = { sum [ ((v, u) in E) ? P[e] : Q[e] | (u, e) <- nbrs v ] | v <- V };
  C = { (N[v] < 2) ? 0.0 : float(T[v]) / float(N[v] * (N[v] - 1)) | v <- V };
  return C;
}
"""


#: reach over `nbrs` (weakly connected BFS levels): pushed from small frontiers, pulled from large ones
REACH = """
reach(root: vid) {
  F = { id == root | v <- V };
  Seen = F;
  Level = { (id == root) ? 0 : -1 | v <- V };
  d = 0;
  while (F != empty) {
    d = d + 1;
    F = { or [ true | u <- nbrs v, u in F ] | v <- V } \\ Seen;
    Seen = Seen || F;
    Level = { (l in F) ? d : l | l <- Level };
  }
  return Level;
}
"""


# --------------------------------------------------------------------------- graphs and oracles


def _graph(seed: int, n: int, directed: bool, recip: float = 0.3) -> tuple[Graph, nx.Graph]:
    """A random graph (sparse shuffled IDs, several pieces, isolated vertices, exact binary-fraction
    weights) whose directed version has reciprocal edges too (a share `recip` of the edges, each
    reverse with a weight of its own)."""
    t = random_graph(seed, n, directed=directed, weighted=True, shapes=("clique", "dense", "sparse"))
    G = t.G
    if directed:
        rng = np.random.default_rng(seed + 1000)
        for a, b in list(G.edges()):
            if not G.has_edge(b, a) and rng.random() < recip:
                G.add_edge(b, a, weight=float(rng.integers(1, 400)) / 16.0)
    edges = list(G.edges())
    iso = [v for v in G if G.degree(v) == 0]
    g = from_edges(edges, directed=directed, isolated=iso, weights=[G[a][b]["weight"] for a, b in edges],
                   name=f"nu{seed}")
    return g, G


def _sides(G: nx.Graph) -> tuple[dict, dict]:
    """(in-neighbours, out-neighbours) of every vertex; both the neighbours on an undirected graph."""
    if G.is_directed():
        return {v: set(G.predecessors(v)) for v in G}, {v: set(G.successors(v)) for v in G}
    nb = {v: set(G[v]) for v in G}
    return nb, nb


def _has(G: nx.Graph, a: int, b: int) -> bool:
    return G.has_edge(a, b)


def _w(G: nx.Graph, a: int, b: int) -> float:
    return G[a][b]["weight"]


def _edge_key(G: nx.Graph, a: int, b: int) -> tuple[int, int]:
    """An edge as the output lists it: (src, dst) directed, (smaller ID, larger) undirected."""
    return (a, b) if G.is_directed() else (min(a, b), max(a, b))


def _mode(values: list[int]) -> int:
    if not values:
        return -1
    c = Counter(values)
    best = max(c.values())
    return min(x for x, k in c.items() if k == best)


def _expected(G: nx.Graph) -> dict[str, object]:
    """The forms' values straight from the definitions."""
    directed = G.is_directed()
    pin, pout = _sides(G)
    # the adjacency entries of `allnvals v`: (neighbour, its edge (src, dst)), in-entries then out-entries;
    # on an undirected graph one entry per neighbour
    entries = {v: [(u, (u, v)) for u in pin[v]] + ([(u, (v, u)) for u in pout[v]] if directed else [])
               for v in G}
    # `nbrs v`: each neighbour once, its out-edge when there is one
    nbrs = {v: {u: ((v, u) if _has(G, v, u) else (u, v)) for u in pin[v] | pout[v]} for v in G}
    K = {e for e in G.edges() if _w(G, *e) > 12.0}
    inK = (lambda a, b: (a, b) in K) if directed else (lambda a, b: (a, b) in K or (b, a) in K)
    out: dict[str, object] = {}
    out["A"] = {v: len(entries[v]) for v in G}
    out["B"] = {v: math.fsum(_w(G, *e) for _u, e in entries[v]) for v in G}
    out["C"] = {v: min((u for u, _e in entries[v] if u % 3 == 0), default=-1) for v in G}
    out["D"] = {v: len(nbrs[v]) for v in G}
    out["F"] = {v: math.fsum(_w(G, *e) for e in nbrs[v].values()) for v in G}
    out["G"] = {v: sum(1 for u in nbrs[v] if _has(G, u, v)) for v in G}
    out["H"] = {v: sum(1 for u in nbrs[v] if _has(G, v, u) and inK(v, u)) for v in G}
    out["I"] = {v: sum(1 for u, _e in entries[v] if _has(G, u, v) and _has(G, v, u)) for v in G}
    out["J"] = {v: sum(1 for u in pin[v] if _has(G, v, u)) for v in G}
    out["L"] = {v: sum(1 for u in pout[v] if _has(G, u, v) and inK(u, v)) for v in G}
    out["M"] = {v: _mode([u for u, _e in entries[v]]) for v in G}
    out["R"] = sorted(_edge_key(G, a, b) for a, b in G.edges() if _has(G, b, a))
    out["S"] = sorted(_edge_key(G, a, b) for a, b in G.edges() if _has(G, b, a) and inK(b, a))
    nset = {v: pin[v] | pout[v] for v in G}
    tn, tm, tf = {}, {}, {}
    for a, b in G.edges():
        u, v = (a, b) if directed else (min(a, b), max(a, b))
        common = nset[u] & nset[v]
        tn[(u, v)] = len(common)
        tm[(u, v)] = len(pout[u] & nset[v])
        tf[(u, v)] = math.fsum(_w(G, *nbrs[u][w]) for w in common)
    out["Tn"], out["Tm"], out["Tf"] = tn, tm, tf
    out["nr"] = sum(1 for a, b in G.edges() if _has(G, b, a))
    out["d"] = directed
    return out


def _check_forms(r, exp: dict, where: object) -> None:
    for name in "ABCDFGHIJLM":
        got = vdict(r[name])
        want = exp[name]
        assert isinstance(want, dict)
        assert got == want, (name, where, [(k, got[k], want[k]) for k in want if got[k] != want[k]][:5])
    for name in "RS":
        assert sorted((int(a), int(b)) for a, b in r[name]) == exp[name], (name, where)
    for name in ("Tn", "Tm", "Tf"):
        assert {(int(a), int(b)): x for a, b, x in r[name]} == exp[name], (name, where)
    assert r["nr"] == exp["nr"] and r["d"] == exp["d"], where


def _cdlp(G: nx.Graph, rounds: int) -> dict[int, int]:
    pin, pout = _sides(G)
    both = G.is_directed()
    L = {v: v for v in G}
    for _ in range(rounds):
        new = {}
        for v in G:
            labels = [L[u] for u in pin[v]] + ([L[u] for u in pout[v]] if both else [])
            new[v] = _mode(labels) if labels else L[v]
        L = new
    return L


def _lcc(G: nx.Graph) -> dict[int, float]:
    """Graphalytics' LCC, from its definition (directed: the directed edges inside N(v))."""
    if not G.is_directed():
        return nx.clustering(G)
    pin, pout = _sides(G)
    out = {}
    for v in G:
        N = pin[v] | pout[v]
        k = len(N)
        num = sum(1 for u in N for w in pout[u] if w in N)
        out[v] = 0.0 if k < 2 else num / (k * (k - 1))
    return out


# --------------------------------------------------------------------------- values


@pytest.fixture(scope="module")
def forms() -> dict[int, g2pl.Program]:
    return {o: g2pl.compile(FORMS, opt=o) for o in (0, 1, 2)}


@pytest.mark.parametrize("directed", [True, False], ids=["directed", "undirected"])
@pytest.mark.parametrize("seed,n", [(31, 90), (32, 240)])
def test_forms_against_networkx(forms, seed, n, directed):
    g, G = _graph(seed, n, directed)
    exp = _expected(G)
    for opt, prog in forms.items():
        _check_forms(prog.run(g), exp, opt)


@pytest.mark.parametrize("directed", [True, False], ids=["directed", "undirected"])
def test_forms_on_two_and_three_ranks(forms, directed):
    """Each rank holds every edge with an owned endpoint: the union adjacencies, the reverse-edge and
    per-entry edge lookups and the distinct common-neighbour lists are local, and the answers (float
    sums included), supersteps and messages are one rank's."""
    g, G = _graph(33, 260, directed)
    exp = _expected(G)
    one = {opt: prog.run(g).stats for opt, prog in forms.items()}
    for size, renumber, opt in ((2, None, 2), (3, "degree", 2), (3, None, 0), (2, "degree", 1)):
        r = run_program(forms[opt], g, size, renumber=renumber)
        _check_forms(r, exp, (size, renumber, opt))
        assert r.stats["supersteps"] == one[opt]["supersteps"]
        assert r.stats["messages"] == one[opt]["messages"], (size, opt)  # counted as one rank counts them


def test_undirected_union_is_nvals():
    """On an undirected graph `allnvals` and `nbrs` are `nvals`, and every edge test holds."""
    g, _G = _graph(34, 150, False)
    prog = g2pl.compile("""
    p() {
      A = { sum [ id[u] * 3 + 1 | u <- nvals v ] | v <- V };
      B = { sum [ id[u] * 3 + 1 | u <- allnvals v ] | v <- V };
      C = { sum [ id[u] * 3 + 1 | u <- nbrs v, (u, v) in E, (v, u) in E ] | v <- V };
      return A, B, C, directed;
    }""")
    r = prog.run(g)
    assert r["A"] == r["B"] == r["C"] and r["ret3"] is False


def test_push_and_pull_agree_on_unions():
    """A BFS over `nbrs` (weakly connected reach) pushes from a small frontier and pulls from a large
    one; every level is the undirected BFS level of the graph, on one rank and three."""
    g, G = _graph(35, 400, True)
    root = min(G.nodes, key=lambda v: -G.degree(v))
    prog = g2pl.compile(REACH)
    want = nx.single_source_shortest_path_length(G.to_undirected(), root)
    for r in (prog.run(g, {"root": root}), run_program(prog, g, 3, {"root": root})):
        assert vdict(r["Level"]) == {v: want.get(v, -1) for v in G}
        assert r.stats["directions"]["push"] > 0


# --------------------------------------------------------------------------- Graphalytics CDLP and LCC


@pytest.mark.parametrize("directed", [True, False], ids=["directed", "undirected"])
@pytest.mark.parametrize("seed", [41, 42])
def test_cdlp_against_simulation(seed, directed):
    g, G = _graph(seed, 220, directed)
    rounds = 5
    want = _cdlp(G, rounds)
    for opt in (0, 1, 2):
        r = g2pl.compile(CDLP, opt=opt).run(g, {"rounds": rounds})
        assert vdict(r["L"]) == want, opt
        if opt == 2:
            assert r.stats["supersteps"] <= rounds + 2  # one superstep per round
    assert vdict(run_program(g2pl.compile(CDLP), g, 3, {"rounds": rounds})["L"]) == want


def test_cdlp_one_superstep_per_round_as_written():
    """`L = { mode [ L[u] | u <- allnvals v ] | v <- V };` costs one superstep a round."""
    g, _G = _graph(43, 150, True)
    src = "c(k: int) { L = { id | v <- V }; i = 0; while (i < k) { L = { mode [ L[u] | u <- allnvals v ] | v <- V }; i = i + 1; } return L; }"
    prog = g2pl.compile(src)
    for k in (1, 4, 7):
        assert prog.run(g, {"k": k}).stats["supersteps"] <= k + 2


@pytest.mark.parametrize("directed", [True, False], ids=["directed", "undirected"])
@pytest.mark.parametrize("seed,n", [(51, 120), (52, 300)])
def test_lcc_against_definition(seed, n, directed):
    g, G = _graph(seed, n, directed)
    want = _lcc(G)
    for opt in (0, 1, 2):
        r = g2pl.compile(LCC, opt=opt).run(g)
        got = vdict(r["C"])
        assert got.keys() == want.keys()
        for v, x in want.items():
            assert got[v] == pytest.approx(x, rel=1e-12, abs=0), (v, opt)
        assert r.stats["supersteps"] <= 6, opt
    many = vdict(run_program(g2pl.compile(LCC), g, 2, renumber="degree")["C"])
    assert many == vdict(g2pl.compile(LCC).run(g)["C"])


def test_lcc_by_hand():
    """A graph small enough to check by hand: 10 <-> 20, 20 -> 30, 30 -> 10, 40 -> 10, 50 <-> 40,
    30 -> 40, and an isolated 60."""
    g = from_edges([(10, 20), (20, 10), (20, 30), (30, 10), (40, 10), (50, 40), (40, 50), (30, 40)],
                   directed=True, isolated=[60])
    r = g2pl.compile(LCC).run(g)
    assert vdict(r["C"]) == {10: 2 / 6, 20: 1 / 2, 30: 3 / 6, 40: 1 / 6, 50: 0.0, 60: 0.0}


def test_g2pl_run_on_two_ranks_as_processes(tmp_path):
    """`g2pl run --np 2 --directed` (ranks as processes) gives one rank's LCC, supersteps and messages."""
    import json

    g, _G = _graph(53, 200, True)
    graph = tmp_path / "g.txt"
    graph.write_text("".join(f"{a} {b}\n" for a, b in zip(g.ids[g.src], g.ids[g.dst])))
    prog = tmp_path / "lcc.g2pl"
    prog.write_text(LCC)
    runs = []
    for n in (1, 2):
        out, stats = tmp_path / f"o{n}.json", tmp_path / f"s{n}.json"
        r = run_proc("g2pl", "run", prog, "--graph", graph, "--directed", "--np", n, "--quiet", "--output", out,
                     "--stats", stats, timeout=300)
        assert r.returncode == 0, r.stderr
        s = json.loads(stats.read_text())
        runs.append((json.loads(out.read_text()), s["supersteps"], s["messages"]))
    assert runs[0] == runs[1]


# --------------------------------------------------------------------------- the CuPy backend


def _standin():
    """tests/strict_cupy's CuPy stand-in (strict about what CuPy refuses), imported by path."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location(
        "strict_cupy_activate", Path(__file__).resolve().parents[1] / "strict_cupy" / "activate.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.standin()


@pytest.mark.parametrize("directed", [True, False], ids=["directed", "undirected"])
def test_cupy_standin_matches_numpy(directed):
    """The union adjacencies, edge lookups and distinct common-neighbour lists on the CuPy backend
    (its strict CPU stand-in): NumPy's answers and messages, pulled and pushed."""
    g, G = _graph(61, 200, directed)
    root = max(G.nodes, key=G.degree)
    for src, args in ((FORMS, {}), (CDLP, {"rounds": 3}), (LCC, {}), (REACH, {"root": root})):
        for opt in (0, 2):
            prog = g2pl.compile(src, opt=opt)
            want = prog.run(g, args=args)
            with _standin():
                got = prog.run(g, args=args, backend="cupy")
            assert got.output()["values"] == want.output()["values"], (src[:10], opt)
            assert got.stats["messages"] == want.stats["messages"]


# --------------------------------------------------------------------------- plans, explain, soft names


def test_plan_and_explain_show_the_new_forms(tmp_path):
    p = tmp_path / "u.g2pl"
    p.write_text(LCC)
    r = run_proc("g2pl", "plan", p)
    assert r.returncode == 0, r.stderr
    assert "in- and out-edges (one entry per neighbour; the out-edge when both)" in r.stdout
    assert "common in|out/out-neighbours" in r.stdout
    assert "((self, nbr) in E)" in r.stdout
    r = run_proc("g2pl", "explain", p)
    assert r.returncode == 0, r.stderr
    assert "distinct in/out-neighbours" in r.stdout
    q = tmp_path / "c.g2pl"
    q.write_text(CDLP)
    r = run_proc("g2pl", "plan", q, "-O0")
    assert "in- and out-edges (every entry)" in r.stdout
    r = run_proc("g2plc", q, "--emit", "ir")
    assert "mode over in+out-neighbours" in r.stdout


def test_soft_names():
    """`directed` is a built-in scalar, but a variable or generator variable of that name hides it;
    `nbrs` and `allnvals` are keywords only where a neighbour source stands."""
    g = from_edges([(1, 2), (2, 3)], directed=True)
    assert g2pl.compile("p() { x = directed; return x; }").run(g)["x"] is True
    assert g2pl.compile("p() { directed = 5; y = directed + 1; return y; }").run(g)["y"] == 6
    r = g2pl.compile("p() { D = { directed | directed <- V }; return D; }").run(g)
    assert r["D"] == [1, 2, 3]
    u = from_edges([(1, 2), (2, 3)])
    assert g2pl.compile("p() { x = directed ? 1 : 2; return x; }").run(u)["x"] == 2
    r = g2pl.compile("p() { nbrs = { id > 1 | v <- V }; allnvals = 2; "
                     "X = { count [ u | u <- nbrs v ] * allnvals + (nbrs[v] ? 10 : 0) | v <- V }; return X; }").run(g)
    assert vdict(r["X"]) == {1: 2, 2: 14, 3: 12}


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize("src,msg", [
    ("f() { S = { count [ w | w <- allnvals u, w in nvals v ] | (u, v) <- E }; return S; }",
     "`allnvals` lists a neighbour linked both ways twice"),
    ("f() { S = { count [ w | w <- nbrs u, w in nbrs v, (w, u) in E ] | (u, v) <- E }; return S; }",
     "cannot be tested per common neighbour"),
    ("f() { S = { (u, v) in E | v <- V }; return S; }", "`u` is not a generator variable"),
    ("f() { S = { count [ u | (u, e) <- nbrs v, (u, e) in E ] | v <- V }; return S; }", "`e` is an edge"),
    ("f() { S = { count [ u | u <- nbrs v, (u, u) in E ] | v <- V }; return S; }", "the same vertex twice"),
    ("f() { S = { count [ u | u <- nbrs v, (u, v) in V ] | v <- V }; return S; }", "must be an edge set"),
    ("f() { W = { Weight[e] | e <- E }; S = { count [ u | u <- nbrs v, (u, v) in W ] | v <- V }; return S; }",
     "must be an edge set, but this is an edge graph of float"),
    ("f() { S = { (u, v) | (u, v) <- E }; return S; }", "only tests for an edge"),
    ("f() { S = { x | x <- allnvals V }; return S; }", "`allnvals` ranges over neighbours"),
    ("f() { S = { sum [ 1 | u <- nbrs q ] | v <- V }; return S; }", "`nbrs` needs one as its centre"),
    ("f() { S = { or [ u in allnvals v | u <- V ] | v <- V }; return S; }",
     "`x in allnvals v` is a qualifier of its own"),
    ("f() { x = (u, v) in E; return x; }", "`u` is not a generator variable"),
    ("f() { S = { (v, u) in E | (u, v) <- E }; T = { count [ x | x <- nbrs v, (u, v) in E ] | v <- V }; "
     "return S, T; }", "`u` is not a generator variable"),
    ("f() { S = { sum [ 1 | u <- nbrs v, (u, v) in E ] | v <- V }; x = sum [ 1 | v <- V, (v, v) in E ]; "
     "return S, x; }", "the same vertex twice"),
    ("f() { x = sum [ 1 | (u, v) <- E, (u, v) in emptyE, (v, u) in empty ]; return x; }",
     "must be an edge set, but this is a vertex set"),
    ("f() { x = count [ v | v <- V, (v, v) in E ]; return x; }", "the same vertex twice"),
])
def test_errors(src, msg):
    with pytest.raises(G2PLError) as got:
        g2pl.compile(src)
    assert msg in str(got.value), str(got.value)


def test_error_exit_2_with_caret(tmp_path):
    p = tmp_path / "bad.g2pl"
    p.write_text("f() {\n  S = { count [ u | u <- nbrs v, (u, u) in E ] | v <- V };\n  return S;\n}\n")
    r = run_proc("g2pl", "check", str(p))
    assert r.returncode == 2
    assert "bad.g2pl:2:34:" in r.stderr and "^^^^^^" in r.stderr and "Traceback" not in r.stderr
