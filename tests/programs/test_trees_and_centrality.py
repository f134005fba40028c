"""programs/mst.g2pl, bfs_parent.g2pl and brandes.g2pl against independent answers (networkx,
scipy, Kruskal, a direct Brandes) on random graphs with sparse shuffled IDs, several components and
isolated vertices; bfs_parent's trees by Graph500's five validation checks."""

from __future__ import annotations

import math
from collections import deque
from pathlib import Path

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp
from oracles import from_edges, random_graph
from scipy.sparse.csgraph import minimum_spanning_tree

import g2pl

PROGRAMS = Path(__file__).resolve().parents[2] / "programs"


@pytest.fixture(scope="module")
def prog():
    return {name: {o: g2pl.compile_file(PROGRAMS / f"{name}.g2pl", opt=o) for o in (0, 1, 2)}
            for name in ("mst", "bfs_parent", "brandes")}


def _pairs(value) -> set[tuple[int, int]]:
    return {(a, b) for a, b in value}


def _vertex(value) -> dict[int, object]:
    return {int(k): v for k, v in value.items()}


# --------------------------------------------------------------------------- mst


def kruskal(G: nx.Graph) -> set[tuple[int, int]]:
    """The minimum spanning forest taking edges in (weight, u, v) order, u < v: with ties, the one
    forest that order defines (what mst.g2pl's tie rule picks too)."""
    parent = {v: v for v in G}

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    out = set()
    for _w, a, b in sorted((d["weight"], min(a, b), max(a, b)) for a, b, d in G.edges(data=True)):
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[ra] = rb
            out.add((a, b))
    return out


def scipy_msf_weight(G: nx.Graph) -> float:
    ids = sorted(G)
    at = {v: i for i, v in enumerate(ids)}
    rows = [at[a] for a, b in G.edges]
    cols = [at[b] for a, b in G.edges]
    A = sp.coo_matrix(([d["weight"] for _a, _b, d in G.edges(data=True)], (rows, cols)), shape=(len(ids),) * 2)
    return float(minimum_spanning_tree(A.tocsr()).sum())


@pytest.mark.parametrize("weighted", [True, False], ids=["weighted", "equal-weights"])
@pytest.mark.parametrize("seed,n", [(11, 150), (12, 600), (13, 2000)])
def test_mst_is_a_minimum_spanning_forest(prog, seed, n, weighted):
    t = random_graph(seed, n, weighted=weighted)
    r = prog["mst"][2].run(t.g, {})
    tree = _pairs(r["Tree"])
    assert tree == kruskal(t.G)  # the exact forest: ties to the smaller (weight, u, v)
    F = nx.Graph(list(tree))
    assert nx.is_forest(F) and all(t.G.has_edge(a, b) for a, b in tree)
    assert len(tree) == t.G.number_of_nodes() - nx.number_connected_components(t.G)  # spanning
    assert r["weight"] == pytest.approx(scipy_msf_weight(t.G), rel=1e-12)
    assert r["weight"] == pytest.approx(nx.minimum_spanning_tree(t.G).size(weight="weight"), rel=1e-12)
    # O(log n) supersteps: at most 40 per halving of the number of components
    halvings = math.log2(t.G.number_of_nodes() / nx.number_connected_components(t.G))
    assert r.stats["supersteps"] <= 40 * max(1.0, halvings)


def test_mst_distinct_weights_exact_edge_set(prog):
    rng = np.random.default_rng(5)
    t = random_graph(21, 800, weighted=True)
    G = t.G
    for (a, b), w in zip(G.edges, rng.permutation(G.number_of_edges())):
        G[a][b]["weight"] = float(w) + 0.5  # distinct: the minimum spanning forest is unique
    g = from_edges(list(G.edges), weights=[G[a][b]["weight"] for a, b in G.edges], isolated=list(G.nodes))
    tree = _pairs(prog["mst"][2].run(g, {})["Tree"])
    exp = {(min(a, b), max(a, b)) for a, b in nx.minimum_spanning_edges(G, data=False)}
    assert tree == exp


def test_mst_same_at_every_level(prog):
    t = random_graph(31, 700, weighted=True)
    outs = [prog["mst"][o].run(t.g, {}) for o in (0, 1, 2)]
    assert outs[0].output() == outs[1].output() == outs[2].output()


def test_mst_without_edges(prog):
    g = from_edges([], isolated=[3, 9])
    r = prog["mst"][2].run(g, {})
    assert r["Tree"] == [] and r["weight"] == 0.0


# --------------------------------------------------------------------------- bfs_parent


def graph500_checks(G: nx.Graph, root: int, parent: dict[int, int]) -> list[str]:
    """Graph500's five validation checks of a BFS parent tree; returns the failed ones."""
    bad = []
    reached = {v for v, p in parent.items() if p != -1}
    if root not in G:
        return [] if not reached else ["a root that is no vertex reaches nothing"]
    level: dict[int, int] = {root: 0}
    if parent[root] != root:
        bad.append("the root is its own parent")
    for v in reached:  # 1. a tree: every parent chain ends at the root without a cycle
        chain, x = [], v
        while x != root and x not in level and len(chain) <= len(G):
            chain.append(x)
            x = parent[x]
            if x == -1:
                break
        if x != root and x not in level:
            return [*bad, f"1: the parent chain of {v} does not reach the root"]
        for k, y in enumerate(reversed(chain)):
            level[y] = level[x] + k + 1
    for v in reached - {root}:  # 2. tree edges join consecutive levels; 5. they are graph edges
        if level.get(v, -2) != level.get(parent[v], -9) + 1:
            bad.append(f"2: {parent[v]} -> {v} skips a level")
        if not G.has_edge(parent[v], v):
            bad.append(f"5: {parent[v]} -> {v} is no edge")
    for a, b in G.edges:  # 3. every edge joins levels at most one apart, or two unreached vertices
        if (a in reached) != (b in reached) and (not G.is_directed() or a in reached):
            bad.append(f"3: edge {a}-{b} leaves the tree")
        elif a in reached and b in reached and level[b] > level[a] + 1 or (
                not G.is_directed() and a in reached and b in reached and level[a] > level[b] + 1):
            bad.append(f"3: edge {a}-{b} spans more than one level")
    comp = set(nx.descendants(G, root)) | {root}  # 4. the tree spans the root's component
    if reached != comp:
        bad.append("4: the tree does not span the root's component")
    return bad


@pytest.mark.parametrize("opt", [0, 2])
@pytest.mark.parametrize("directed", [False, True], ids=["undirected", "directed"])
@pytest.mark.parametrize("seed,n", [(41, 300), (42, 1500)])
def test_bfs_parent_passes_graph500_checks(prog, seed, n, directed, opt):
    t = random_graph(seed, n, directed=directed)
    deg = dict(t.G.degree())
    roots = [max(t.pieces, key=len)[5], min(t.pieces, key=len)[0]]
    roots += [v for v in t.ids if deg[v] == 0][:1]
    with pytest.raises(g2pl.G2PLError, match="is not a vertex of the graph"):  # a root that is no vertex
        prog["bfs_parent"][opt].run(t.g, {"root": max(t.ids) + 1})
    for root in roots:
        parent = _vertex(prog["bfs_parent"][opt].run(t.g, {"root": root})["Parent"])
        assert graph500_checks(t.G, root, parent) == [], root
        if root in t.G and not directed:  # the parent is the smallest-ID neighbour one level up
            lv = nx.single_source_shortest_path_length(t.G, root)
            for v, p in parent.items():
                if v != root and p != -1:
                    assert p == min(u for u in t.G[v] if lv.get(u) == lv[v] - 1)


def test_graph500_checks_catch_bad_trees():
    G = nx.path_graph([10, 20, 30, 40])
    good = {10: 10, 20: 10, 30: 20, 40: 30}
    assert graph500_checks(G, 10, good) == []
    assert graph500_checks(G, 10, {**good, 40: -1})  # 4: not spanning
    assert graph500_checks(G, 10, {**good, 40: 20})  # 2/5: skips a level, no edge
    assert graph500_checks(G, 10, {**good, 20: 30, 30: 20})  # 1: a cycle


# --------------------------------------------------------------------------- brandes


def ref_brandes(G: nx.Graph, s: int) -> tuple[dict[int, float], dict[int, int]]:
    """Brandes (2001), one source: (dependencies delta_s, path counts sigma); delta_s(s) = 0."""
    succ = G.successors if G.is_directed() else G.neighbors
    sigma = dict.fromkeys(G, 0)
    dist = dict.fromkeys(G, -1)
    pred: dict[int, list[int]] = {v: [] for v in G}
    delta = dict.fromkeys(G, 0.0)
    if s not in G:
        return delta, sigma
    sigma[s], dist[s] = 1, 0
    order, q = [], deque([s])
    while q:
        v = q.popleft()
        order.append(v)
        for w in succ(v):
            if dist[w] < 0:
                dist[w] = dist[v] + 1
                q.append(w)
            if dist[w] == dist[v] + 1:
                sigma[w] += sigma[v]
                pred[w].append(v)
    for w in reversed(order):
        for v in pred[w]:
            delta[v] += sigma[v] / sigma[w] * (1 + delta[w])
    delta[s] = 0.0
    return delta, sigma


@pytest.mark.parametrize("opt", [0, 2])
@pytest.mark.parametrize("directed", [False, True], ids=["undirected", "directed"])
@pytest.mark.parametrize("seed,n", [(51, 300), (52, 1200)])
def test_brandes_matches_direct_implementation(prog, seed, n, directed, opt):
    t = random_graph(seed, n, directed=directed)
    for s in (max(t.pieces, key=len)[2], min(t.pieces, key=len)[1], -1):
        r = prog["brandes"][opt].run(t.g, {"s": s})
        delta, sigma = ref_brandes(t.G, s)
        got_d, got_s = _vertex(r["Delta"]), _vertex(r["Sigma"])
        assert got_s == {v: float(c) for v, c in sigma.items()}
        assert got_d.keys() == delta.keys()
        for v, d in delta.items():
            assert got_d[v] == pytest.approx(d, rel=1e-9, abs=1e-12), v


@pytest.mark.parametrize("directed", [False, True], ids=["undirected", "directed"])
def test_brandes_sums_to_betweenness(prog, directed):
    t = random_graph(61, 80, directed=directed)
    total = dict.fromkeys(t.G, 0.0)
    for s in t.G:
        for v, d in _vertex(prog["brandes"][2].run(t.g, {"s": s})["Delta"]).items():
            total[v] += d
    exp = nx.betweenness_centrality(t.G, normalized=False)
    for v in t.G:
        assert total[v] / (1 if directed else 2) == pytest.approx(exp[v], rel=1e-9, abs=1e-9)


# --------------------------------------------------------------------------- ranks and levels


def test_same_at_every_level_on_two_and_three_ranks(tmp_path):
    """-O0, -O1 and -O2 on 1, 2 and 3 ranks (mpiexec): the same values, supersteps per level, messages."""
    import json
    import subprocess
    import sys

    from test_mpi import HAVE_MPI, env

    if not HAVE_MPI:
        pytest.skip("mpi4py/mpiexec not installed")
    t = random_graph(71, 500, weighted=True)
    g = t.g
    path = tmp_path / "g.txt"
    lines = [f"{a} {b} {w!r}" for a, b, w in zip(g.ids[g.src].tolist(), g.ids[g.dst].tolist(), g.weight.tolist())]
    path.write_text("\n".join(lines + [f"{x} {x} 1.0" for x in g.ids.tolist()]) + "\n")
    root = max(t.pieces, key=len)[0]
    for name, args in (("mst", []), ("bfs_parent", ["--arg", f"root={root}"]), ("brandes", ["--arg", f"s={root}"])):
        seen: dict[str, tuple] = {}
        values = []
        for opt in ("-O0", "-O1", "-O2"):
            for n in ((1, 2, 3) if opt == "-O2" else (1, 2)):
                out, stats = tmp_path / "o.json", tmp_path / "s.json"
                cmd = [sys.executable, "-m", "g2pl.cli", "run", str(PROGRAMS / f"{name}.g2pl"), "--graph", str(path),
                       "--np", str(n), opt, "--quiet", "--output", str(out), "--stats", str(stats), *args]
                r = subprocess.run(cmd, env=env(), capture_output=True, text=True, timeout=300)
                assert r.returncode == 0, r.stderr
                values.append(json.loads(out.read_text())["values"])
                s = json.loads(stats.read_text())
                assert seen.setdefault(opt, (s["supersteps"], s["messages"])) == (s["supersteps"], s["messages"])
        assert all(v == values[0] for v in values), name
