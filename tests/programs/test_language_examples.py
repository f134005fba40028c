"""The worked examples of docs/language.md, and individual language features (docs/language.md).

The three examples are copied verbatim from docs/language.md and checked against
networkx on random graphs. Every other test runs a small program on a small
hand-made graph whose answer was worked out by hand (comments show the
arithmetic), or on a random graph against a plain-Python computation.

The hand graph (undirected, weighted, sparse IDs, one isolated vertex)::

    10 --2.5-- 20          degrees: 10:2  20:2  35:3  47:2  50:1  99:0
     \\         |
     4.0      1.0
       \\       |
         ---- 35 --0.5-- 47 --3.0-- 50          99 (isolated)

The directed hand graph: 10->20 (w1), 20->35 (2), 35->10 (3), 35->47 (4),
47->50 (5), 50->47 (6), 99->35 (7).
"""

from __future__ import annotations

from pathlib import Path

import networkx as nx
import numpy as np
import pytest
from oracles import INT_MAX, INT_MIN, from_edges, num, random_graph, ref_bfs, vdict

import g2pl

LANGUAGE_DOC = Path(__file__).resolve().parents[2] / "docs" / "language.md"

# --------------------------------------------------------------------------- worked examples, verbatim

DEGREES = """\
degrees() {
  Deg = { sum [ 1 | u <- nvals v ] | v <- V };
  n = sum [ 1 | v <- V ];
  m = sum [ 1 | (u, v) <- E ];
  return Deg, n, m;
}
"""

BFS = """\
bfs(root: vid) {
  F = { id == root | v <- V };
  Seen = F;
  Level = { (id == root) ? 0 : -1 | v <- V };
  d = 0;
  while (F != empty) {
    d = d + 1;
    F = { or [ true | u <- nvals v, u in F ] | v <- V } \\ Seen;
    Seen = Seen || F;
    Level = { (l in F) ? d : l | l <- Level };
  }
  return Level;
}
"""

HEAVY = """\
heavy(t: float) {
  H = { Weight[e] > t | (u, e, v) <- E };
  Ends = union [ [u, v] | (u, v) <- H ];
  return H, Ends;
}
"""

HAND_EDGES = [(35, 10), (10, 20), (20, 35), (35, 47), (50, 47)]
HAND_WEIGHTS = [4.0, 2.5, 1.0, 0.5, 3.0]
HAND_DEG = {10: 2, 20: 2, 35: 3, 47: 2, 50: 1, 99: 0}
DIR_EDGES = [(10, 20), (20, 35), (35, 10), (35, 47), (47, 50), (50, 47), (99, 35)]


@pytest.fixture(scope="module")
def hand():
    return from_edges(HAND_EDGES, isolated=[99], weights=HAND_WEIGHTS)


@pytest.fixture(scope="module")
def dhand():
    return from_edges(DIR_EDGES, directed=True, weights=[1, 2, 3, 4, 5, 6, 7])


def run(src: str, graph, args=None, seed: int = 0, opt: int = 2) -> dict:
    """Compile source text, run it, and return {name: JSON value}."""
    res = g2pl.compile(src, opt=opt, file="test.g2pl").run(graph, args or {}, seed=seed)
    return {v["name"]: v["value"] for v in res.values}


def run_typed(src: str, graph, args=None) -> dict:
    res = g2pl.compile(src, file="test.g2pl").run(graph, args or {})
    return {v["name"]: (v["kind"], v["type"], v["value"]) for v in res.values}


@pytest.mark.parametrize("text", [DEGREES, BFS, HEAVY], ids=["degrees", "bfs", "heavy"])
def test_examples_are_verbatim(text):
    """The worked examples of the language reference are exactly the programs tested here."""
    assert text.strip() in LANGUAGE_DOC.read_text()


@pytest.mark.parametrize("directed", [False, True], ids=["undirected", "directed"])
@pytest.mark.parametrize("seed,n", [(1, 200), (2, 1000), (3, 3000)])
def test_spec_degrees(seed, n, directed):
    t = random_graph(seed, n, directed=directed)
    out = run(DEGREES, t.g)
    # On a directed graph `nvals` is the in-neighbours, so Deg is the in-degree.
    exp = dict(t.G.in_degree()) if directed else dict(t.G.degree())
    assert vdict(out["Deg"]) == exp
    assert out["n"] == t.G.number_of_nodes()
    assert out["m"] == t.G.number_of_edges()


def test_spec_degrees_hand(hand):
    out = run(DEGREES, hand)
    assert vdict(out["Deg"]) == HAND_DEG
    assert (out["n"], out["m"]) == (6, 5)


@pytest.mark.parametrize("directed", [False, True], ids=["undirected", "directed"])
@pytest.mark.parametrize("seed,n", [(4, 300), (5, 1500)])
def test_spec_bfs(seed, n, directed):
    t = random_graph(seed, n, directed=directed)
    for root in (t.pieces[0][0], t.pieces[-1][-1], max(t.pieces, key=len)[3]):
        assert vdict(run(BFS, t.g, {"root": root})["Level"]) == ref_bfs(t.G, root)


def test_spec_bfs_hand(hand, dhand):
    assert vdict(run(BFS, hand, {"root": 50})["Level"]) == {10: 3, 20: 3, 35: 2, 47: 1, 50: 0, 99: -1}
    # Directed: levels follow edge direction.
    assert vdict(run(BFS, dhand, {"root": 47})["Level"]) == {10: -1, 20: -1, 35: -1, 47: 0, 50: 1, 99: -1}
    assert vdict(run(BFS, dhand, {"root": 99})["Level"]) == {10: 2, 20: 3, 35: 1, 47: 2, 50: 3, 99: 0}


@pytest.mark.parametrize("directed", [False, True], ids=["undirected", "directed"])
@pytest.mark.parametrize("seed,t", [(6, 10.0), (7, 20.0), (8, 0.0), (9, 1000.0)])
def test_spec_heavy(seed, t, directed):
    tg = random_graph(seed, 500, directed=directed, weighted=True)
    out = run(HEAVY, tg.g, {"t": t})
    exp_h = sorted([min(a, b), max(a, b)] if not directed else [a, b]
                   for a, b, w in tg.G.edges(data="weight") if w > t)
    assert out["H"] == exp_h
    assert out["Ends"] == sorted({x for e in exp_h for x in e})


def test_spec_heavy_hand(hand, dhand):
    out = run(HEAVY, hand, {"t": 2.0})
    assert out["H"] == [[10, 20], [10, 35], [47, 50]]  # weights 2.5, 4.0, 3.0
    assert out["Ends"] == [10, 20, 35, 47, 50]
    out = run(HEAVY, hand, {"t": 3})  # an int argument for a float parameter is converted
    assert out["H"] == [[10, 35]] and out["Ends"] == [10, 35]
    out = run(HEAVY, dhand, {"t": 4.5})
    assert out["H"] == [[47, 50], [50, 47], [99, 35]]  # directed: source first
    assert out["Ends"] == [35, 47, 50, 99]


# --------------------------------------------------------------------------- aggregators

AGGS = """\
main() {
  Deg = { sum [ 1 | u <- nvals v ] | v <- V };
  a = sum [ d | d <- Deg ];
  b = avg [ d | d <- Deg ];
  c = min [ d | d <- Deg ];
  mx = max [ d | d <- Deg ];
  e = and [ d > 0 | d <- Deg ];
  f = or [ d > 2 | d <- Deg ];
  g = count [ d | d <- Deg, d == 2 ];
  h = argmin [ d | d <- Deg ];
  i = argmax [ d | d <- Deg ];
  j = argmax [ d | d <- Deg, d <= 2 ];
  k = argmin [ d | d <- Deg, d > 0 ];
  l = argmin [ d | d <- Deg, d == 2 ];
  U = union [ x | x <- V, x in { d == 2 | d <- Deg } ];
  fs = sum [ 0.5 * float(d) | d <- Deg ];
  fmin = min [ float(d) - 0.25 | d <- Deg ];
  return a, b, c, mx, e, f, g, h, i, j, k, l, U, fs, fmin;
}
"""


def test_global_aggregators(hand):
    out = run_typed(AGGS, hand)
    assert out["a"] == ("scalar", "int", 10)
    assert out["b"][:2] == ("scalar", "float") and out["b"][2] == pytest.approx(10 / 6)
    assert out["c"] == ("scalar", "int", 0)
    assert out["mx"] == ("scalar", "int", 3)
    assert out["e"] == ("scalar", "bool", False)
    assert out["f"] == ("scalar", "bool", True)
    assert out["g"] == ("scalar", "int", 3)
    assert out["h"] == ("scalar", "vid", 99)
    assert out["i"] == ("scalar", "vid", 35)
    assert out["j"][2] == 10  # ties (10, 20, 47 all have degree 2) go to the smallest ID
    assert out["k"][2] == 50
    assert out["l"][2] == 10
    assert out["U"] == ("vertex", "bool", [10, 20, 47])
    assert out["fs"] == ("scalar", "float", 5.0)
    assert out["fmin"] == ("scalar", "float", -0.25)


EMPTY_AGGS = """\
main() {
  Deg = { sum [ 1 | u <- nvals v ] | v <- V };
  F = { float(d) | d <- Deg };
  a = sum [ d | d <- Deg, d > 10 ];
  b = avg [ d | d <- Deg, d > 10 ];
  c = min [ d | d <- Deg, d > 10 ];
  mx = max [ d | d <- Deg, d > 10 ];
  e = and [ d > 0 | d <- Deg, d > 10 ];
  f = or [ d > 0 | d <- Deg, d > 10 ];
  g = count [ d | d <- Deg, d > 10 ];
  h = argmin [ d | d <- Deg, d > 10 ];
  i = argmax [ d | d <- Deg, d > 10 ];
  fs = sum [ x | x <- F, x > 10.0 ];
  fa = avg [ x | x <- F, x > 10.0 ];
  fmin = min [ x | x <- F, x > 10.0 ];
  fmax = max [ x | x <- F, x > 10.0 ];
  vmin = min [ id | v <- V, v in empty ];
  vmax = max [ id | v <- V, v in empty ];
  U = union [ x | x <- V, x in empty ];
  W = union [ [u, v] | (u, v) <- emptyE ];
  return a, b, c, mx, e, f, g, h, i, fs, fa, fmin, fmax, vmin, vmax, U, W;
}
"""


def test_global_aggregators_empty(hand):
    out = run_typed(EMPTY_AGGS, hand)
    assert out["a"] == ("scalar", "int", 0)
    assert out["b"] == ("scalar", "float", "nan")
    assert out["c"] == ("scalar", "int", INT_MAX)
    assert out["mx"] == ("scalar", "int", INT_MIN)
    assert out["e"] == ("scalar", "bool", True)
    assert out["f"] == ("scalar", "bool", False)
    assert out["g"] == ("scalar", "int", 0)
    assert out["h"] == ("scalar", "vid", -1)
    assert out["i"] == ("scalar", "vid", -1)
    assert out["fs"] == ("scalar", "float", 0.0)
    assert out["fa"] == ("scalar", "float", "nan")
    assert out["fmin"] == ("scalar", "float", "inf")
    assert out["fmax"] == ("scalar", "float", "-inf")
    assert out["vmin"] == ("scalar", "vid", -1)
    assert out["vmax"] == ("scalar", "vid", -1)
    assert out["U"] == ("vertex", "bool", [])
    assert out["W"] == ("vertex", "bool", [])


NBR_AGGS = """\
main() {
  Deg = { sum [ 1 | u <- nvals v ] | v <- V };
  Mn = { min [ u | u <- nvals d ] | d <- Deg };
  Mx = { max [ u | u <- nvals d ] | d <- Deg };
  Av = { avg [ u | u <- nvals d ] | d <- Deg };
  Am = { argmin [ u | u <- nvals d ] | d <- Deg };
  Ax = { argmax [ u | u <- nvals d ] | d <- Deg };
  An = { and [ u > 1 | u <- nvals d ] | d <- Deg };
  Or = { or [ u > 2 | u <- nvals d ] | d <- Deg };
  Ct = { count [ u | u <- nvals d ] | d <- Deg };
  Fm = { min [ float(u) | u <- nvals d ] | d <- Deg };
  Fx = { max [ float(u) | u <- nvals d ] | d <- Deg };
  Im = { min [ id[u] | u <- nvals d ] | d <- Deg };
  Sf = { sum [ u | u <- nvals d, u > 2 ] | d <- Deg };
  return Mn, Mx, Av, Am, Ax, An, Or, Ct, Fm, Fx, Im, Sf;
}
"""


def test_neighbourhood_aggregators(hand):
    out = run_typed(NBR_AGGS, hand)
    # neighbours (their degrees): 10: 20(2) 35(3); 20: 10(2) 35(3); 35: 10(2) 20(2) 47(2);
    # 47: 35(3) 50(1); 50: 47(2); 99: none
    assert out["Mn"] == ("vertex", "int", {"10": 2, "20": 2, "35": 2, "47": 1, "50": 2, "99": INT_MAX})
    assert out["Mx"] == ("vertex", "int", {"10": 3, "20": 3, "35": 2, "47": 3, "50": 2, "99": INT_MIN})
    assert out["Av"] == ("vertex", "float", {"10": 2.5, "20": 2.5, "35": 2.0, "47": 2.0, "50": 2.0, "99": "nan"})
    assert out["Am"] == ("vertex", "vid", {"10": 20, "20": 10, "35": 10, "47": 50, "50": 47, "99": -1})
    assert out["Ax"] == ("vertex", "vid", {"10": 35, "20": 35, "35": 10, "47": 35, "50": 47, "99": -1})
    assert out["An"] == ("vertex", "bool", [10, 20, 35, 50, 99])
    assert out["Or"] == ("vertex", "bool", [10, 20, 47])
    assert out["Ct"] == ("vertex", "int", {str(k): v for k, v in HAND_DEG.items()})
    assert out["Fm"] == ("vertex", "float", {"10": 2.0, "20": 2.0, "35": 2.0, "47": 1.0, "50": 2.0, "99": "inf"})
    assert out["Fx"] == ("vertex", "float", {"10": 3.0, "20": 3.0, "35": 2.0, "47": 3.0, "50": 2.0, "99": "-inf"})
    assert out["Im"] == ("vertex", "vid", {"10": 20, "20": 10, "35": 10, "47": 35, "50": 47, "99": -1})
    assert out["Sf"] == ("vertex", "int", {"10": 3, "20": 3, "35": 0, "47": 3, "50": 0, "99": 0})


ARG_TIES = """\
main() {
  Deg = { sum [ 1 | u <- nvals v ] | v <- V };
  Am = { argmin [ u | u <- nvals d ] | d <- Deg };
  Ax = { argmax [ u | u <- nvals d ] | d <- Deg };
  gmin = argmin [ d | d <- Deg, d > 0 ];
  gmax = argmax [ d | d <- Deg ];
  return Am, Ax, gmin, gmax;
}
"""


@pytest.mark.parametrize("seed", [21, 22])
def test_argmin_argmax_ties_random(seed):
    t = random_graph(seed, 1200)
    G = t.G
    deg = dict(G.degree())
    out = run(ARG_TIES, t.g)
    exp_min = {v: (min(G[v], key=lambda u: (deg[u], u)) if deg[v] else -1) for v in G}
    exp_max = {v: (min(G[v], key=lambda u: (-deg[u], u)) if deg[v] else -1) for v in G}
    assert vdict(out["Am"]) == exp_min
    assert vdict(out["Ax"]) == exp_max
    assert out["gmin"] == min((d, v) for v, d in deg.items() if d > 0)[1]
    assert out["gmax"] == min((-d, v) for v, d in deg.items())[1]


def test_nested_aggregation_is_hoisted(hand):
    src = """main() {
      s = sum [ sum [ 1 | u <- nvals v ] | v <- V ];
      t = max [ count [ u | u <- nvals x, u > 1 ] | x <- { sum [ 1 | w <- nvals y ] | y <- V } ];
      return s, t;
    }"""
    # s = sum of degrees = 2|E|; t: vertex 35 has three neighbours of degree > 1.
    assert run(src, hand) == {"s": 10, "t": 3}


# --------------------------------------------------------------------------- statements and expressions


def test_conditional_expression_and_else_if(hand):
    src = """main(x: int) {
      Deg = { sum [ 1 | u <- nvals v ] | v <- V };
      T = { d >= 3 ? 100 : (d == 0 ? -5 : d) | d <- Deg };
      y = 0;
      if (x > 5) { y = 1; } else if (x > 2) then { y = 2; } else { y = 3; }
      z = 0;
      if (x > 5) { z = 1; } else if (x > 4) { z = 2; } else if (x == 3) { z = 7; }
      w = (x > 1) ? 1.5 : 2.5;
      return T, y, z, w;
    }"""
    out = run(src, hand, {"x": 3})
    assert out["T"] == {"10": 2, "20": 2, "35": 100, "47": 2, "50": 1, "99": -5}
    assert (out["y"], out["z"], out["w"]) == (2, 7, 1.5)
    out = run(src, hand, {"x": 6})
    assert (out["y"], out["z"], out["w"]) == (1, 1, 1.5)
    out = run(src, hand, {"x": 5})
    assert (out["y"], out["z"]) == (2, 2)
    out = run(src, hand, {"x": 0})
    assert (out["y"], out["z"], out["w"]) == (3, 0, 2.5)


BRANCHY = """\
main(t: int) {
  X = { int(id) | v <- V };
  if (t > 0) { X = { x + t | x <- X }; } else if (t < 0) { X = { min [ u | u <- nvals x ] | x <- X }; }
  s = sum [ x | x <- X, x < 1000 ];
  M = { max [ u | u <- nvals x ] | x <- X };
  return s, M;
}
"""


@pytest.mark.parametrize("opt", [0, 2])
def test_branches_with_graph_values(hand, opt):
    out = run(BRANCHY, hand, {"t": 1}, opt=opt)
    assert out["s"] == 11 + 21 + 36 + 48 + 51 + 100
    assert out["M"] == {"10": 36, "20": 36, "35": 48, "47": 51, "50": 48, "99": INT_MIN}
    out = run(BRANCHY, hand, {"t": -1}, opt=opt)
    # X = smallest neighbour ID: 10:20 20:10 35:10 47:35 50:47 99:INT_MAX (excluded by x < 1000)
    assert out["s"] == 20 + 10 + 10 + 35 + 47
    assert out["M"] == {"10": 10, "20": 20, "35": 35, "47": 47, "50": 35, "99": INT_MIN}
    out = run(BRANCHY, hand, {"t": 0}, opt=opt)
    assert out["s"] == 10 + 20 + 35 + 47 + 50 + 99
    assert out["M"] == {"10": 35, "20": 35, "35": 47, "47": 50, "50": 47, "99": INT_MIN}


LOOP = """\
main() {
  S = V; i = 0; acc = 0; Acc = { 0 | v <- V };
  while (i < 4) {
    n = sum [ 1 | u <- V, u in S ];
    D = { sum [ 1 | u <- nvals v, u in S ] | v <- V };
    acc = acc * 10 + n;
    Acc = { a * 10 + D[a] | a <- Acc };
    if (i == 1) { S = S \\ { id == 35 | v <- V }; }
    if (i == 2) { S = { id < 40 | v <- V }; } else { S = S; }
    i = i + 1;
  }
  return acc, Acc;
}
"""


@pytest.mark.parametrize("opt", [0, 1, 2])
def test_loop_recomputes_changed_aggregations(hand, opt):
    # |S| per round: 6, 6, 5 (35 removed), 3 ({10, 20, 35}); degrees inside S per round:
    # round 0/1: 2 2 3 2 1 0; round 2 (no 35): 1 1 3 1 1 0; round 3: 2 2 2 1 0 0.
    out = run(LOOP, hand, opt=opt)
    assert out["acc"] == 6653
    assert out["Acc"] == {"10": 2212, "20": 2212, "35": 3332, "47": 2211, "50": 1110, "99": 0}


def test_aggregation_in_while_condition(hand):
    src = """main() {
      S = V; k = 0;
      while (sum [ 1 | v <- V, v in S ] > 2) {
        S = S \\ { id == max [ id[u] | u <- V, u in S ] | v <- V };
        k = k + 1;
      }
      return S, k;
    }"""
    assert run(src, hand) == {"S": [10, 20], "k": 4}


def test_return_inside_loop_ends_procedure(hand):
    src = """main() {
      i = 0;
      while (true) { i = i + 1; if (i == 5) { return i, 1; } }
      return i, 2;
    }"""
    assert run(src, hand) == {"i": 5, "ret1": 1}


def test_weighted_neighbour_edges(hand):
    src = """main() {
      WD = { sum [ Weight[e] | (u, e) <- nvals v ] | v <- V };
      MW = { min [ Weight[e] + u | (u, e) <- nvals d ] | d <- { 10 * float(id) | v <- V } };
      return WD, MW;
    }"""
    out = run(src, hand)
    assert out["WD"] == {"10": 6.5, "20": 3.5, "35": 5.5, "47": 3.5, "50": 3.0, "99": 0.0}
    # min over neighbours u of Weight(x,u) + 10*u: 10: 2.5+200; 20: 2.5+100; 35: 4+100; 47: 0.5+350; 50: 3+470
    assert out["MW"] == {"10": 202.5, "20": 102.5, "35": 104.0, "47": 350.5, "50": 473.0, "99": "inf"}


def test_weighted_degree_random():
    t = random_graph(31, 800, weighted=True)
    src = "main() { WD = { sum [ Weight[e] | (u, e) <- nvals v ] | v <- V }; return WD; }"
    got = vdict(run(src, t.g)["WD"])
    exp = dict(t.G.degree(weight="weight"))
    assert got.keys() == exp.keys()
    assert all(got[v] == pytest.approx(exp[v], rel=1e-12, abs=0) for v in exp)


DIRECTED = """\
main() {
  In = { count [ u | u <- nvals v ] | v <- V };
  Out = { sum [ 1 | u <- outnvals v ] | v <- V };
  InIds = { min [ id[u] | u <- nvals v ] | v <- V };
  OutIds = { max [ u | u <- outnvals x ] | x <- id };
  OutW = { sum [ Weight[e] | (u, e) <- outnvals v ] | v <- V };
  InW = { sum [ Weight[e] | (u, e) <- nvals v ] | v <- V };
  return In, Out, InIds, OutIds, OutW, InW;
}
"""


def test_outnvals_directed(dhand):
    out = run(DIRECTED, dhand)
    assert out["In"] == {"10": 1, "20": 1, "35": 2, "47": 2, "50": 1, "99": 0}
    assert out["Out"] == {"10": 1, "20": 1, "35": 2, "47": 1, "50": 1, "99": 1}
    assert out["InIds"] == {"10": 35, "20": 10, "35": 20, "47": 35, "50": 47, "99": -1}
    assert out["OutIds"] == {"10": 20, "20": 35, "35": 47, "47": 50, "50": 47, "99": 35}
    assert out["OutW"] == {"10": 1.0, "20": 2.0, "35": 7.0, "47": 5.0, "50": 6.0, "99": 7.0}
    assert out["InW"] == {"10": 3.0, "20": 1.0, "35": 9.0, "47": 10.0, "50": 5.0, "99": 0.0}


def test_outnvals_undirected_is_all_neighbours(hand):
    out = run(DIRECTED, hand)
    deg = {str(k): v for k, v in HAND_DEG.items()}
    assert out["In"] == deg and out["Out"] == deg
    assert out["OutW"] == out["InW"] == {"10": 6.5, "20": 3.5, "35": 5.5, "47": 3.5, "50": 3.0, "99": 0.0}


def test_outnvals_directed_random():
    t = random_graph(32, 1000, directed=True, weighted=True)
    out = run(DIRECTED, t.g)
    assert vdict(out["In"]) == dict(t.G.in_degree())
    assert vdict(out["Out"]) == dict(t.G.out_degree())
    assert vdict(out["OutIds"]) == {v: max(t.G.successors(v), default=INT_MIN) if t.G.out_degree(v) else -1
                                    for v in t.G}
    ow = vdict(out["OutW"])
    assert all(ow[v] == pytest.approx(w) for v, w in t.G.out_degree(weight="weight"))


EDGES = """\
main() {
  EW = { Weight[e] * 2.0 | (u, e, v) <- E };
  ES = { id[u] + id[v] | (u, e, v) <- E };
  H = { Weight[e] > 1.0 | e <- E };
  K = { e in H && Weight[e] < 3.0 | e <- E };
  nH = count [ e | e <- H ];
  sK = sum [ Weight[e] | e <- K ];
  Ends = union [ [u, v] | (u, v) <- K ];
  L = { id[u] < 30 | (u, v) <- E };
  P = { Weight[e] | (u, e, v) <- H };
  Q = { e + 1.0 | e <- P };
  return EW, ES, H, K, nH, sK, Ends, L, P, Q;
}
"""


def test_edge_comprehensions(hand):
    out = run(EDGES, hand)
    assert out["EW"] == [[10, 20, 5.0], [10, 35, 8.0], [20, 35, 2.0], [35, 47, 1.0], [47, 50, 6.0]]
    assert out["ES"] == [[10, 20, 30], [10, 35, 45], [20, 35, 55], [35, 47, 82], [47, 50, 97]]
    assert out["H"] == [[10, 20], [10, 35], [47, 50]]
    assert out["K"] == [[10, 20]]
    assert (out["nH"], out["sK"]) == (3, 2.5)
    assert out["Ends"] == [10, 20]
    assert out["L"] == [[10, 20], [10, 35], [20, 35]]  # u is the smaller ID
    # generator over the edge SET H: non-members get the default 0.0
    assert out["P"] == [[10, 20, 2.5], [10, 35, 4.0], [20, 35, 0.0], [35, 47, 0.0], [47, 50, 3.0]]
    # generator over the edge GRAPH P: every edge, `e` carries its value
    assert out["Q"] == [[10, 20, 3.5], [10, 35, 5.0], [20, 35, 1.0], [35, 47, 1.0], [47, 50, 4.0]]


def test_edge_comprehensions_directed(dhand):
    out = run(EDGES, dhand)
    assert out["ES"] == [[10, 20, 30], [20, 35, 55], [35, 10, 45], [35, 47, 82], [47, 50, 97], [50, 47, 97],
                         [99, 35, 134]]
    assert out["H"] == [[20, 35], [35, 10], [35, 47], [47, 50], [50, 47], [99, 35]]
    assert out["K"] == [[20, 35]]
    assert (out["nH"], out["sK"]) == (6, 2.0)
    assert out["L"] == [[10, 20], [20, 35]]  # u is the source


def test_edge_set_operations(hand):
    src = """main() {
      H = { Weight[e] > 1.0 | e <- E };
      A = E \\ H; B = !H; C = H || A; D = H && A; F = Weight * 2.0; G = Weight > 2.0;
      c1 = C == E; c2 = D == emptyE; c3 = A == B; c4 = H != E;
      return A, B, D, F, G, c1, c2, c3, c4;
    }"""
    out = run(src, hand)
    assert out["A"] == out["B"] == [[20, 35], [35, 47]]
    assert out["D"] == []
    assert out["F"] == [[10, 20, 5.0], [10, 35, 8.0], [20, 35, 2.0], [35, 47, 1.0], [47, 50, 6.0]]
    assert out["G"] == [[10, 20], [10, 35], [47, 50]]
    assert (out["c1"], out["c2"], out["c3"], out["c4"]) == (True, True, True, True)


def test_edge_endpoint_values_random():
    t = random_graph(33, 700, weighted=True)
    src = """main() {
      Deg = { sum [ 1 | u <- nvals v ] | v <- V };
      X = { Deg[u] * 1000 + Deg[v] | (u, e, v) <- E };
      Y = { Deg[u] == Deg[v] | (u, v) <- E };
      return X, Y;
    }"""
    out = run(src, t.g)
    deg = dict(t.G.degree())
    pairs = sorted((min(a, b), max(a, b)) for a, b in t.G.edges)
    assert out["X"] == [[a, b, deg[a] * 1000 + deg[b]] for a, b in pairs]
    assert out["Y"] == [[a, b] for a, b in pairs if deg[a] == deg[b]]


# --------------------------------------------------------------------------- remote reads

REMOTE = """\
main(root: vid) {
  Deg = { sum [ 1 | u <- nvals v ] | v <- V };
  P = { argmax [ u | u <- nvals d ] | d <- Deg };
  R = { Deg[P[x]] | x <- V };
  R2 = { Deg[p] | p <- P };
  x = Deg[root];
  y = P[root];
  z = Deg[P[root]];
  S = { d == 2 | d <- Deg };
  InS = { P[x] in S | x <- V };
  b = root in S;
  U = union [ P[x] | x <- V ];
  W = { id[P[x]] | x <- V };
  return R, R2, x, y, z, InS, b, U, W;
}
"""


def test_remote_reads(hand):
    # P (neighbour of largest degree, ties to the smaller ID): 10->35 20->35 35->10 47->35 50->47 99->-1
    out = run(REMOTE, hand, {"root": 20})
    assert out["R"] == {"10": 3, "20": 3, "35": 2, "47": 3, "50": 2, "99": 0}  # Deg[-1] is the default 0
    assert out["R2"] == {str(k): v for k, v in HAND_DEG.items()}  # p is a generator variable: local read
    assert (out["x"], out["y"], out["z"]) == (2, 35, 3)
    assert out["InS"] == [35, 50]  # S = {10, 20, 47}; P[99] = -1 is in no set
    assert out["b"] is True
    assert out["U"] == [10, 35, 47]
    assert out["W"] == {"10": 35, "20": 35, "35": 10, "47": 35, "50": 47, "99": -1}
    out = run(REMOTE, hand, {"root": 99})
    assert (out["x"], out["y"], out["z"], out["b"]) == (0, -1, 0, False)
    out = run(REMOTE, hand, {"root": -1})
    assert (out["x"], out["y"], out["z"], out["b"]) == (0, -1, 0, False)


def test_remote_reads_random():
    t = random_graph(34, 1500)
    G = t.G
    src = """main(root: vid) {
      Deg = { sum [ 1 | u <- nvals v ] | v <- V };
      P = { argmin [ u | u <- nvals d ] | d <- Deg };
      R = { Deg[P[x]] * 10 + Deg[P[P[x]]] | x <- V };
      S = { d >= 3 | d <- Deg };
      InS = { P[x] in S | x <- V };
      U = union [ P[x] | x <- V ];
      top = P[root];
      return R, InS, U, top;
    }"""
    deg = dict(G.degree())
    P = {v: (min(G[v], key=lambda u: (deg[u], u)) if deg[v] else -1) for v in G}
    D = {**deg, -1: 0}
    P[-1] = -1
    root = max(t.pieces, key=len)[0]
    out = run(src, t.g, {"root": root})
    assert vdict(out["R"]) == {v: D[P[v]] * 10 + D[P[P[v]]] for v in G}
    assert out["InS"] == sorted(v for v in G if P[v] != -1 and deg[P[v]] >= 3)
    assert out["U"] == sorted({P[v] for v in G} - {-1})
    assert out["top"] == P[root]


def test_pointer_jumping_to_roots():
    # A forest given by parent pointers along the edges: P = the smaller-ID neighbour, or itself.
    t = random_graph(35, 900, shapes=("tree", "cycle"))
    G = t.G
    src = """main() {
      P = { min(id, min [ id[u] | u <- nvals v ]) | v <- V };
      P = { (p < 0) ? id : p | p <- P };
      changed = true; rounds = 0;
      while (changed) {
        N = { P[P[x]] | x <- V };
        changed = N != P;
        P = N;
        rounds = rounds + 1;
      }
      return P;
    }"""
    par = {v: min([v, *G[v]]) for v in G}

    def root(v):
        while par[v] != v:
            v = par[v]
        return v

    assert vdict(run(src, t.g)["P"]) == {v: root(v) for v in G}


# --------------------------------------------------------------------------- types, functions, misc


def test_type_annotations(hand):
    src = """main(k: int, fl: float, b: bool, r: vid) {
      x : vertex<int> = { 2 * int(id) | v <- V };
      M : eset = emptyE;
      S : vset = { v > 40 | v <- x };
      f : float = 3;
      n : int = count [ v | v <- V ];
      F : vertex<float> = { 1 | v <- V };
      Q : edge<float> = { Weight[e] | e <- E };
      w : vid = argmax [ v | v <- x ];
      y = b ? fl : float(k);
      return x, M, S, f, n, F, Q, w, y, r;
    }"""
    out = run_typed(src, hand, {"k": 4, "fl": 0.5, "b": True, "r": 47})
    assert out["x"] == ("vertex", "int", {"10": 20, "20": 40, "35": 70, "47": 94, "50": 100, "99": 198})
    assert out["M"] == ("edge", "bool", [])
    assert out["S"] == ("vertex", "bool", [35, 47, 50, 99])
    assert out["f"] == ("scalar", "float", 3.0)
    assert out["n"] == ("scalar", "int", 6)
    assert out["F"] == ("vertex", "float", {k: 1.0 for k in ("10", "20", "35", "47", "50", "99")})
    assert out["Q"] == ("edge", "float", [[10, 20, 2.5], [10, 35, 4.0], [20, 35, 1.0], [35, 47, 0.5], [47, 50, 3.0]])
    assert out["w"] == ("scalar", "vid", 99)
    assert out["y"] == ("scalar", "float", 0.5)
    assert out["r"] == ("scalar", "vid", 47)
    out = run_typed(src, hand, {"k": 4, "fl": 0.5, "b": "false", "r": "-1"})
    assert out["y"] == ("scalar", "float", 4.0) and out["r"] == ("scalar", "vid", -1)


FUNCS = """\
cnt(X) = sum [ 1 | v <- V, v in X ];
twice(v) = cnt(v) + cnt(v);
Degr(X) = { sum [ 1 | u <- nvals v, u in X ] | v <- V };
nbrsIn(u) = Degr(u);
addOne(d) = { d + 1 | v <- V };
cntNbr(X) = { count [ u | u <- nvals v, u in X ] | v <- V };
isIn(a, S) = a in S;
nb(x) = sum [ 1 | u <- nvals x ];
sq(x) = x * x;
tens(k) = { k * 10 | k <- id };
main() {
  v = { id > 30 | x <- V };
  u = { id < 48 | x <- V };
  r = twice(v);
  D = nbrsIn(u);
  A = addOne(D);
  B = cntNbr(v);
  B2 = cntNbr({ id > 30 | u <- V });
  C = { isIn(x, v) | x <- V };
  N = { nb(u) | u <- V };
  F = { sq(x) + sq(2) | x <- B };
  w = 3;
  G = { sq(w) + x | x <- B };
  T = tens(5);
  return r, D, A, B, B2, C, N, F, G, T;
}
"""


def test_functions_and_hygiene(hand):
    out = run(FUNCS, hand)
    # v = {35, 47, 50, 99}; u = {10, 20, 35, 47}
    assert out["r"] == 8  # twice(v): cnt's generator `v` must not capture the argument `v`
    assert out["D"] == {"10": 2, "20": 2, "35": 3, "47": 1, "50": 1, "99": 0}  # neighbours in u
    assert out["A"] == {"10": 3, "20": 3, "35": 4, "47": 2, "50": 2, "99": 1}
    assert out["B"] == {"10": 1, "20": 1, "35": 1, "47": 2, "50": 1, "99": 0}  # neighbours in v
    assert out["B2"] == out["B"]
    assert out["C"] == [35, 47, 50, 99]
    assert out["N"] == {str(k): d for k, d in HAND_DEG.items()}
    assert out["F"] == {"10": 5, "20": 5, "35": 5, "47": 8, "50": 5, "99": 4}
    assert out["G"] == {"10": 10, "20": 10, "35": 10, "47": 11, "50": 10, "99": 9}
    assert out["T"] == {"10": 100, "20": 200, "35": 350, "47": 470, "50": 500, "99": 990}  # inner k shadows


def test_procedure_and_function_keywords(hand):
    src = """procedure main() { x = f(3); return x; }
    function f(a) = a * a + 1;"""
    assert run(src, hand) == {"x": 10}


def test_entry_selection(hand):
    src = """first() { return 1; }
    second(k: int) { return k + 1; }"""
    prog = g2pl.compile(src)
    assert prog.run(hand, entry="first")["ret0"] == 1
    assert prog.run(hand, {"k": 4}, entry="second")["ret0"] == 5


RAND = """\
main() {
  R = { rand() | v <- V };
  R2 = { rand() | v <- V };
  ER = { rand() | e <- E };
  i = 0; First = { 0.0 | v <- V }; Last = First;
  while (i < 3) { Last = { rand() | v <- V }; if (i == 0) { First = Last; } i = i + 1; }
  return R, R2, ER, First, Last;
}
"""


def test_rand_deterministic_and_seeded(hand):
    a = run(RAND, hand, seed=0)
    b = run(RAND, hand, seed=0)
    c = run(RAND, hand, seed=1)
    assert a == b
    for name in ("R", "R2", "ER", "First", "Last"):
        assert a[name] != c[name], name
    for name in ("R", "R2", "First", "Last"):
        assert all(0.0 <= x < 1.0 for x in a[name].values())
        assert len(set(a[name].values())) == 6
    assert all(0.0 <= x < 1.0 for _, _, x in a["ER"]) and len({x for _, _, x in a["ER"]}) == 5
    assert a["R"] != a["R2"], "different call sites draw different numbers"
    assert a["First"] != a["Last"], "different loop iterations draw different numbers"


def test_rand_keyed_by_original_id(hand):
    # The same vertices and edges inside a bigger graph (different internal indices) draw the same numbers.
    big = from_edges(HAND_EDGES + [(7, 99), (1_000_000, 20)], isolated=[123_456_789],
                     weights=HAND_WEIGHTS + [1.0, 1.0])
    a = run(RAND, hand, seed=5)
    b = run(RAND, big, seed=5)
    for name in ("R", "R2", "First", "Last"):
        assert {k: v for k, v in b[name].items() if k in a[name]} == a[name]
    assert [e for e in b["ER"] if [e[0], e[1]] in [x[:2] for x in a["ER"]]] == a["ER"]


def test_rand_distribution():
    t = random_graph(36, 3000)
    r = np.array(list(run("main() { R = { rand() | v <- V }; return R; }", t.g, seed=9)["R"].values()))
    assert 0.0 <= r.min() and r.max() < 1.0
    assert abs(r.mean() - 0.5) < 0.03 and abs(r.var() - 1 / 12) < 0.01


def test_whole_graph_comparisons(hand):
    src = """main() {
      Deg = { sum [ 1 | u <- nvals v ] | v <- V };
      D2 = { count [ u | u <- nvals v ] | v <- V };
      D3 = { d + 1 | d <- Deg };
      a = Deg == D2; b = Deg != D2; c = Deg == D3; d = D3 != Deg;
      S = { d > 0 | d <- Deg };
      e = S != empty; f = (S && { false | v <- V }) == empty; g = S == V; h = !S == { d == 0 | d <- Deg };
      H = { Weight[x] > 1.0 | x <- E };
      i = H == E; j = H != emptyE; k = (H || !H) == E;
      W = { Weight[x] * 1.0 | x <- E };
      l = W == Weight; m = W != Weight * 2.0;
      return a, b, c, d, e, f, g, h, i, j, k, l, m;
    }"""
    out = run(src, hand)
    assert out == {"a": True, "b": False, "c": False, "d": True, "e": True, "f": True, "g": False, "h": True,
                   "i": False, "j": True, "k": True, "l": True, "m": True}


def test_comments(hand):
    src = """// leading comment
    main() { /* block
     spanning lines */ x = 1 + /* inline */ 2; // trailing
      y = x * 10; /* another */ /**/
      // y = 99;
      /* y = 98; */
      return x, y; // done
    }
    /* final */"""
    assert run(src, hand) == {"x": 3, "y": 30}


def test_arithmetic(hand):
    src = """main() {
      a = 1 + 2; b = 1 + 2.5; c = 7 / 2; d = 6 / 3; e = 1 / 0; f = -1 / 0; g = 0 / 0; h = 7 % 3;
      i = 2 * 3 + 4 * 5 - 6; j = 10 - 2 - 3; k = 2.0 * 3; l = int(3.9); m = float(3);
      n = 1 < 2.5; o = -3; p = abs(-4); q = min(3, 2.5); r = max(2, 7); s = 1e-3 * 1000; t = 12 % 5 * 2;
      u = sqrt(16.0); w = floor(2.5) + ceil(2.5); x = exp(0.0) + log(1.0); y = 0.0 / 0.0; z = 1.0 / 0;
      return a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, q, r, s, t, u, w, x, y, z;
    }"""
    out = run_typed(src, hand)
    assert out["a"] == ("scalar", "int", 3)
    assert out["b"] == ("scalar", "float", 3.5)
    assert out["c"] == ("scalar", "float", 3.5)  # `/` always yields float
    assert out["d"] == ("scalar", "float", 2.0)
    assert out["e"] == ("scalar", "float", "inf")
    assert out["f"] == ("scalar", "float", "-inf")
    assert out["g"] == ("scalar", "float", "nan")
    assert out["h"] == ("scalar", "int", 1)
    assert out["i"][2] == 20 and out["j"][2] == 5
    assert out["k"] == ("scalar", "float", 6.0)
    assert out["l"] == ("scalar", "int", 3)
    assert out["m"] == ("scalar", "float", 3.0)
    assert out["n"] == ("scalar", "bool", True)
    assert out["o"][2] == -3 and out["p"][2] == 4
    assert out["q"] == ("scalar", "float", 2.5)
    assert out["r"] == ("scalar", "int", 7)
    assert out["s"][2] == pytest.approx(1.0) and out["t"][2] == 4
    assert out["u"][2] == 4.0 and num(out["w"][2]) == 5.0 and out["x"][2] == 1.0
    assert out["y"][2] == "nan" and out["z"][2] == "inf"


def test_lifted_arithmetic(hand):
    src = """main() {
      Deg = { sum [ 1 | u <- nvals v ] | v <- V };
      A = Deg + 1; B = Deg * 2.0; C = Deg > 1; D = min(Deg, 2); F = max(Deg, A - 3);
      S = C || (Deg == 0); T = C && (Deg < 3); U = V \\ C; X = !C;
      I = int(B); Fl = float(Deg) / 4; Half = { d / 2 | d <- Deg }; Mod = { d % 2 | d <- Deg };
      Prom = { d + 0.5 | d <- Deg }; Z = { 1 / d | d <- Deg }; NZ = { -d / 0 | d <- Deg };
      return A, B, C, D, F, S, T, U, X, I, Fl, Half, Mod, Prom, Z, NZ;
    }"""
    out = run_typed(src, hand)
    deg = [2, 2, 3, 2, 1, 0]
    keys = ["10", "20", "35", "47", "50", "99"]

    def vg(vals):
        return dict(zip(keys, vals))

    assert out["A"] == ("vertex", "int", vg([d + 1 for d in deg]))
    assert out["B"] == ("vertex", "float", vg([2.0 * d for d in deg]))
    assert out["C"] == ("vertex", "bool", [10, 20, 35, 47])
    assert out["D"] == ("vertex", "int", vg([min(d, 2) for d in deg]))
    assert out["F"] == ("vertex", "int", vg(deg))
    assert out["S"][2] == [10, 20, 35, 47, 99]
    assert out["T"][2] == [10, 20, 47]
    assert out["U"][2] == out["X"][2] == [50, 99]
    assert out["I"] == ("vertex", "int", vg([2 * d for d in deg]))
    assert out["Fl"] == ("vertex", "float", vg([d / 4 for d in deg]))
    assert out["Half"] == ("vertex", "float", vg([d / 2 for d in deg]))
    assert out["Mod"] == ("vertex", "int", vg([d % 2 for d in deg]))
    assert out["Prom"] == ("vertex", "float", vg([d + 0.5 for d in deg]))
    assert out["Z"] == ("vertex", "float", vg([0.5, 0.5, 1 / 3, 0.5, 1.0, "inf"]))
    assert out["NZ"] == ("vertex", "float", vg(["-inf", "-inf", "-inf", "-inf", "-inf", "nan"]))


def test_int_conversions(hand):
    src = """main(p: vid) {
      a = int(p); b = int(2.7); c = int(true); d = float(p) / 2; e = int(-2.7); f = p + 1; g = p * 2;
      h = int(false) + int(1 < 2);
      I = { int(id) * 2 | v <- V };
      return a, b, c, d, e, f, g, h, I;
    }"""
    out = run_typed(src, hand, {"p": 35})
    assert out["a"] == ("scalar", "int", 35)
    assert out["b"] == ("scalar", "int", 2)
    assert out["c"] == ("scalar", "int", 1)
    assert out["d"] == ("scalar", "float", 17.5)
    assert out["e"] == ("scalar", "int", -2)  # conversion truncates toward zero
    assert out["f"][2] == 36 and out["g"][2] == 70 and out["h"][2] == 1
    assert out["I"] == ("vertex", "int", {"10": 20, "20": 40, "35": 70, "47": 94, "50": 100, "99": 198})


def test_names_containing_keywords(hand):
    # Keywords and built-in names are whole words only (docs/language.md, "Lexical rules").
    src = """main() {
      ids = { id | v <- V }; inside = { id > 30 | v <- V }; numVs = count [ v | v <- V, v in inside ];
      Vx = 2; Edges = 3; sumx = Vx + Edges; a = 2 < -1;
      return numVs, sumx, a;
    }"""
    assert run(src, hand) == {"numVs": 4, "sumx": 5, "a": False}


def test_density_style_functions_random():
    # The `f(X) = numEs(X) / 2.0 / numVs(X)` idiom of densest.g2pl, checked on one set.
    t = random_graph(37, 900)
    src = """main() {
      S = { int(id) % 3 != 0 | v <- V };
      d = f(S);
      return d;
    }
    f(X) = numEs(X) / 2.0 / numVs(X);
    numVs(X) = sum [ 1 | u <- V, u in X ];
    Degr(X) = { sum [ 1 | u <- nvals v, u in X ] | v <- V };
    numEs(X) = sum [ deg | deg <- Degr(X), deg in X ];
    """
    S = {v for v in t.G if v % 3 != 0}
    m = sum(1 for a, b in t.G.edges if a in S and b in S)
    assert run(src, t.g)["d"] == m / len(S)


def test_comprehension_over_isolated_only_graph():
    g = from_edges([], isolated=[5, 1_000_000_007, 42])
    out = run(DEGREES, g)
    assert out == {"Deg": {"5": 0, "42": 0, "1000000007": 0}, "n": 3, "m": 0}
    lv = run(BFS, g, {"root": 42})["Level"]
    assert lv == {"5": -1, "42": 0, "1000000007": -1}


def test_bfs_matches_networkx_all_levels():
    # A long path in scrambled ID order: many supersteps, levels up to n-1.
    rng = np.random.default_rng(3)
    ids = rng.choice(10**9, size=150, replace=False)
    g = from_edges(list(zip(ids[:-1].tolist(), ids[1:].tolist())))
    G = nx.path_graph(ids.tolist())
    root = int(ids[40])
    got = vdict(run(BFS, g, {"root": root})["Level"])
    assert got == ref_bfs(G, root)
    assert max(got.values()) == 109


RICH = """\
main() {
  Deg = { sum [ 1 | u <- nvals v ] | v <- V };
  W = { int(id) % 7 | v <- V };
  H = { Weight[e] > 12.0 | e <- E };
  A = { d * 2 | d <- Deg, d > 1 };
  B = { true | v <- V, int(id) % 2 == 0 };
  C = { sum [ u | u <- nvals x, x > 1 ] | x <- Deg };
  D = { count [ u | u <- nvals x, u > x ] | x <- Deg };
  F = { sum [ u * x | u <- nvals x ] | x <- Deg };
  I = { sum [ W[u] | u <- nvals x ] + W[x] | x <- Deg };
  J = { sum [ 1 | (u, e) <- nvals v, e in H ] | v <- V };
  K = { Deg[u] - Deg[v] | (u, v) <- E };
  L = union [ [u, v] | (u, v) <- Weight ];
  M = sum [ Weight[e] | (u, e, v) <- E, u in B ];
  N = min [ id[v] | (u, v) <- E, v in B ];
  O = count [ e | e <- H ];
  return A, B, C, D, F, I, J, K, L, M, N, O;
}
"""


@pytest.mark.parametrize("directed", [False, True], ids=["undirected", "directed"])
def test_comprehension_forms_random(directed):
    """Filters on the centre and the neighbour, reads of other graphs at both, edge filters `e in H`."""
    t = random_graph(41, 900, directed=directed, weighted=True)
    G = t.G
    out = run(RICH, t.g)

    def nbrs(v):  # `nvals`: in-neighbours on a directed graph
        return list(G.predecessors(v)) if directed else list(G[v])

    deg = {v: len(nbrs(v)) for v in G}
    W = {v: v % 7 for v in G}
    H = {(a, b) for a, b, w in G.edges(data="weight") if w > 12.0}

    def in_h(a, b):
        return (a, b) in H or (not directed and (b, a) in H)

    B = {v for v in G if v % 2 == 0}
    assert vdict(out["A"]) == {v: (2 * deg[v] if deg[v] > 1 else 0) for v in G}
    assert out["B"] == sorted(B)
    assert vdict(out["C"]) == {v: (sum(deg[u] for u in nbrs(v)) if deg[v] > 1 else 0) for v in G}
    assert vdict(out["D"]) == {v: sum(1 for u in nbrs(v) if deg[u] > deg[v]) for v in G}
    assert vdict(out["F"]) == {v: sum(deg[u] * deg[v] for u in nbrs(v)) for v in G}
    assert vdict(out["I"]) == {v: sum(W[u] for u in nbrs(v)) + W[v] for v in G}
    assert vdict(out["J"]) == {v: sum(1 for u in nbrs(v) if in_h(u, v)) for v in G}
    edges = sorted((a, b) if directed else (min(a, b), max(a, b)) for a, b in G.edges)
    assert out["K"] == [[a, b, deg[a] - deg[b]] for a, b in edges]
    assert out["L"] == sorted({x for e in edges for x in e})
    assert out["M"] == pytest.approx(sum(G[a][b]["weight"] for a, b in edges if a in B), rel=1e-12)
    assert out["N"] == min(b for a, b in edges if b in B)
    assert out["O"] == len(H)


def test_global_aggregation_nested_in_comprehension(hand):
    src = """main() {
      Deg = { sum [ 1 | u <- nvals v ] | v <- V };
      A = { float(d) - avg [ x | x <- Deg ] | d <- Deg };
      B = { count [ u | u <- nvals x, u > max [ y | y <- Deg, y < 3 ] - 1 ] | x <- Deg };
      C = { d == max [ y | y <- Deg ] | d <- Deg };
      s = sum [ d * count [ u | u <- nvals d ] | d <- Deg ];
      return A, B, C, s;
    }"""
    out = run(src, hand)
    assert vdict(out["A"]) == pytest.approx({k: d - 10 / 6 for k, d in HAND_DEG.items()})
    assert out["B"] == {"10": 2, "20": 2, "35": 3, "47": 1, "50": 1, "99": 0}  # neighbours of degree > 1
    assert out["C"] == [35]
    assert out["s"] == 4 + 4 + 9 + 4 + 1  # sum of squared degrees


def test_operator_precedence(hand):
    src = """main(x: int) {
      a = x > 5 ? 1 : x > 2 ? 2 : 3;
      b = x > 5 ? 1 : 2.5;
      c = true || false && false;
      d = !true || true;
      e = 1 + 2 * 3 == 7 && 4 - 1 > 2;
      f = -2 * -3; g = 10 - 4 - 3; h = 2 * 3 % 4; i = -7 / 2;
      return a, b, c, d, e, f, g, h, i;
    }"""
    out = run(src, hand, {"x": 3})
    assert out == {"a": 2, "b": 2.5, "c": True, "d": True, "e": True, "f": 6, "g": 3, "h": 2, "i": -3.5}
    assert run(src, hand, {"x": 6})["a"] == 1 and run(src, hand, {"x": 6})["b"] == 1.0
    assert run(src, hand, {"x": 0})["a"] == 3


# --------------------------------------------------------------------------- compile errors


def compile_error(src: str) -> str:
    with pytest.raises(g2pl.G2PLError) as info:
        g2pl.compile(src, file="bad.g2pl").compilation()
    return str(info.value)


def test_kind_mixing_is_a_compile_error():
    msg = compile_error("main() {\n  Deg = { sum [ 1 | u <- nvals v ] | v <- V };\n  A = Deg + Weight;\n  return A;\n}")
    assert "bad.g2pl:3:" in msg and "vertex" in msg and "edge" in msg


@pytest.mark.parametrize("stmt", ["while", "if"])
def test_graph_condition_is_a_compile_error(stmt):
    body = "while (S) { S = empty; }" if stmt == "while" else "if (S) { S = empty; }"
    msg = compile_error("main() {\n  S = V;\n  " + body + "\n  return S;\n}")
    assert "bad.g2pl:3:" in msg and "vertex set" in msg and "scalar bool" in msg
    # The message should say which statement's condition is wrong.
    assert f"`{stmt}` condition" in msg


def test_read_before_assignment_is_a_compile_error():
    msg = compile_error("main(t: int) {\n  if (t > 0) { x = 1; }\n  return x;\n}")
    assert "bad.g2pl:3:" in msg and "`x`" in msg


def test_recursive_functions_are_a_compile_error():
    msg = compile_error("f(a) = g(a) + 1;\ng(b) = h(b) * 2;\nh(c) = f(c);\nmain() { x = f(1); return x; }")
    assert "f" in msg and "g" in msg and "h" in msg and "recurs" in msg


# --------------------------------------------------------------------------- remote reads in edge context


REMOTE_EDGE_PRE = """\
main() {
  Deg = { sum [ 1 | u <- nvals v ] | v <- V };
  P = { argmax [ u | u <- nvals d ] | d <- Deg };
  S = { d == 3 | d <- Deg };
"""


@pytest.mark.parametrize("stmt,expected", [
    # P: 10->35 20->35 35->10 47->35 50->47 99->-1; Deg[P[u]] for u = smaller endpoint of each edge.
    ("A = { Deg[P[u]] | (u, v) <- E };", [[10, 20, 3], [10, 35, 3], [20, 35, 3], [35, 47, 2], [47, 50, 3]]),
    ("A = { Deg[P[u]] * 10 + Deg[P[v]] | (u, e, v) <- E };",
     [[10, 20, 33], [10, 35, 32], [20, 35, 32], [35, 47, 23], [47, 50, 32]]),
    ("A = { P[u] in S | (u, v) <- E };", [[10, 20], [10, 35], [20, 35], [47, 50]]),
    ("A = sum [ Deg[P[u]] | (u, v) <- E ];", 14),
    ("A = { id[u] < 40 | (u, v) <- E, P[v] in S };", [[10, 20], [35, 47]]),
])
def test_remote_reads_in_edge_comprehensions(hand, stmt, expected):
    # Spec 4.4 puts no restriction on where `G[p]` may appear; the same reads written through a
    # vertex-graph temporary (B = { Deg[P[x]] | x <- V }) work.
    out = run(REMOTE_EDGE_PRE + "  " + stmt + "\n  return A;\n}", hand)
    assert out["A"] == expected


def test_remote_reads_via_vertex_temporary_in_edge_comprehension(hand):
    src = REMOTE_EDGE_PRE + """  B = { Deg[P[x]] | x <- V };
      A = { B[u] * 10 + B[v] | (u, v) <- E };
      return A;
    }"""
    assert run(src, hand)["A"] == [[10, 20, 33], [10, 35, 32], [20, 35, 32], [35, 47, 23], [47, 50, 32]]


def test_argmin_argmax_at_sentinel_values(hand):
    # When every value equals the "empty" sentinel (inf, -inf, the largest int), the min/max is still
    # reached, so argmin/argmax is the smallest ID, not -1.
    src = """main() {
      Deg = { sum [ 1 | u <- nvals v ] | v <- V };
      I = { inf + 0.0 * float(d) | d <- Deg };
      NI = { -inf + 0.0 * float(d) | d <- Deg };
      M = { min [ u | u <- nvals v ] | v <- Deg };
      BigI = { 9223372036854775807 + 0 * d | d <- Deg };
      a = argmin [ x | x <- I ];
      b = argmax [ x | x <- NI ];
      c = argmin [ x | x <- M, x > 2 ];
      d = argmin [ x | x <- BigI ];
      N1 = { argmin [ x | x <- nvals v ] | v <- I };
      N3 = { argmin [ x | x <- nvals v ] | v <- M };
      return a, b, c, d, N1, N3;
    }"""
    out = run(src, hand)
    assert (out["a"], out["b"], out["c"], out["d"]) == (10, 10, 99, 10)
    assert out["N1"] == {"10": 20, "20": 10, "35": 10, "47": 35, "50": 47, "99": -1}
    # M = smallest neighbour degree: 10:2 20:2 35:2 47:1 50:2 99:INT_MAX
    assert out["N3"] == {"10": 20, "20": 10, "35": 47, "47": 35, "50": 47, "99": -1}


# --------------------------------------------------------------------------- generator sources


@pytest.mark.parametrize("source", [
    "{ 5 | v <- V }",          # inline comprehension with a constant head
    "({ 5 | v <- V })",
    "five()",                  # the same through a function
    "const(5)",
    "B",                       # the same through a variable (reference form)
    "{ 5 + 0 * int(id) | v <- V }",
])
def test_generator_over_inline_comprehension(hand, source):
    # `x <- G` with G a vertex graph of int binds x to G's value (docs/language.md, "Comprehensions"), however G is written.
    src = f"""five() = {{ 5 | v <- V }};
    const(c) = {{ c | v <- V }};
    main() {{
      B = {{ 5 | v <- V }};
      s = sum [ x | x <- {source} ];
      m = max [ x | x <- {source} ];
      P = {{ x + 1 | x <- {source} }};
      return s, m, P;
    }}"""
    out = run(src, hand)
    assert out["s"] == 30 and out["m"] == 5
    assert out["P"] == {k: 6 for k in ("10", "20", "35", "47", "50", "99")}


def test_generator_over_inline_float_comprehension(hand):
    out = run("main() { s = sum [ x | x <- { 1.5 | v <- V } ]; return s; }", hand)
    assert out["s"] == 9.0


def test_int_is_64_bit_for_scalars_and_graphs(hand):
    # Spec 2: `int` is 64-bit. A scalar computation and the same computation per vertex must agree
    # and stay in the int64 range.
    src = """main() {
      a = 9223372036854775807;
      s = a + 1;
      G = { a + 1 + 0 * int(id) | v <- V };
      t = max [ x | x <- G ];
      return s, t;
    }"""
    out = run(src, hand)
    assert INT_MIN <= out["s"] <= INT_MAX
    assert out["s"] == out["t"]


def test_generator_over_inline_comprehension_nvals_and_edges(hand):
    src = """main() {
      N = { sum [ u | u <- nvals x ] | x <- { 5 | v <- V } };
      s = sum [ x | x <- { 2.0 | e <- E } ];
      return N, s;
    }"""
    out = run(src, hand)
    assert vdict(out["N"]) == {k: 5 * d for k, d in HAND_DEG.items()}
    assert out["s"] == 10.0


def test_function_hygiene_in_neighbourhood(hand):
    # The caller's generator variable `u` is passed to a function whose own generator is also `u`:
    # inside, `u > t` must compare the neighbour's value with the caller's (centre) value.
    src = """nbrAbove(x, t) = count [ u | u <- nvals x, u > t ];
    wrap(u) = nbrAbove(u, u);
    cntAbove(G, t) = count [ d | d <- G, d > t ];
    main() {
      Deg = { sum [ 1 | u <- nvals v ] | v <- V };
      A = { nbrAbove(u, u) | u <- Deg };
      B = { wrap(u) | u <- Deg };
      d = 1;
      c = cntAbove(Deg, d);
      return A, B, c;
    }"""
    out = run(src, hand)
    # neighbours of strictly larger degree: 10: 35; 20: 35; 35: none; 47: 35; 50: 47
    assert out["A"] == out["B"] == {"10": 1, "20": 1, "35": 0, "47": 1, "50": 1, "99": 0}
    assert out["c"] == 4
