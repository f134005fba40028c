"""Interop: Graph.from_edges / from_networkx / from_scipy in, Result.array / to_networkx / to_pandas out."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import g2pl
from g2pl import G2PLError, Graph, Result

nx = pytest.importorskip("networkx")
sp = pytest.importorskip("scipy.sparse")

ROOT = Path(__file__).resolve().parents[2]
PROGRAMS = ROOT / "programs"

MIXED = """
mixed(t: float) {
  Deg = { sum [ 1 | u <- nvals v ] | v <- V };
  Big = { d >= 2 | d <- Deg };
  H = { Weight[e] > t | (u, e, v) <- E };
  W = { Weight[e] * 2.0 | e <- E };
  R = { 1.0 / d | d <- Deg };
  n = count [ v | v <- V ];
  return Deg, Big, H, W, R, n;
}
"""


@pytest.fixture(scope="module")
def bfs():
    return g2pl.compile(PROGRAMS / "bfs.g2pl")


@pytest.fixture(scope="module")
def cc():
    return g2pl.compile(PROGRAMS / "cc.g2pl")


@pytest.fixture(scope="module")
def mixed():
    return g2pl.compile(MIXED)


def _sparse_ids_graph(seed: int = 3) -> nx.Graph:
    """A graph with non-contiguous node IDs, several components and isolated nodes."""
    rng = np.random.default_rng(seed)
    G = nx.gnm_random_graph(40, 45, seed=seed)
    ids = np.sort(rng.choice(10_000, size=40, replace=False)) * 7 + 3
    G = nx.relabel_nodes(G, {i: int(ids[i]) for i in range(40)})
    G.add_nodes_from([5, 99_999_991])
    return G


def _same_graph(a: Graph, b: Graph) -> None:
    assert (a.n, a.m, a.directed, a.weighted) == (b.n, b.m, b.directed, b.weighted)
    for f in ("ids", "src", "dst", "weight", "in_indptr", "in_nbr", "in_eid", "out_indptr", "out_nbr", "out_eid"):
        np.testing.assert_array_equal(getattr(a, f), getattr(b, f), err_msg=f)


# --------------------------------------------------------------------------- graphs in


def test_from_edges_non_contiguous_ids(bfs):
    g = Graph.from_edges([1000, 1000, 42, 7_000_000_000], [42, 7, 7, 5], name="mine")
    np.testing.assert_array_equal(g.ids, [5, 7, 42, 1000, 7_000_000_000])
    assert (g.n, g.m, g.directed, g.weighted, g.name) == (5, 4, False, False, "mine")
    # undirected edges are stored with the smaller original ID first
    np.testing.assert_array_equal(g.ids[g.src], [5, 7, 7, 42])
    np.testing.assert_array_equal(g.ids[g.dst], [7_000_000_000, 42, 1000, 1000])
    res = bfs.run(g, args={"root": 1000})
    assert res["Level"] == {"5": -1, "7": 1, "42": 1, "1000": 0, "7000000000": -1}
    np.testing.assert_array_equal(res.ids(), g.ids)
    np.testing.assert_array_equal(res.array("Level"), [-1, 1, 1, 0, -1])


def test_from_edges_weights_loops_duplicates_and_isolated():
    g = Graph.from_edges(np.array([3, 9, 3, 4]), np.array([9, 3, 3, 8]), weight=[2.0, 0.5, 1.0, 4],
                         directed=False, ids=[100])
    assert g.weighted and g.m == 2 and g.n == 5
    np.testing.assert_array_equal(g.ids, [3, 4, 8, 9, 100])
    np.testing.assert_array_equal(g.weight, [0.5, 4.0])  # (3, 9) kept its smallest weight; then (4, 8)
    assert g.info["self_loops_dropped"] == 1 and g.info["duplicates_merged"] == 1
    assert g.info["isolated_vertices"] == 1
    d = Graph.from_edges([3, 9], [9, 3], directed=True)
    assert d.directed and d.m == 2


def test_from_edges_rejects_bad_input():
    with pytest.raises(G2PLError, match="negative vertex ID"):
        Graph.from_edges([1, -2], [2, 3])
    with pytest.raises(G2PLError, match="different lengths"):
        Graph.from_edges([1, 2], [2])
    with pytest.raises(G2PLError, match="no vertices"):
        Graph.from_edges([], [])


def test_from_networkx_keeps_isolated_nodes_and_ids():
    G = _sparse_ids_graph()
    g = Graph.from_networkx(G)
    np.testing.assert_array_equal(g.ids, sorted(G.nodes))
    assert g.m == G.number_of_edges() and not g.directed and not g.weighted
    assert g.info["isolated_vertices"] == sum(1 for x in G.nodes if G.degree(x) == 0)
    got = {(int(a), int(b)) for a, b in zip(g.ids[g.src], g.ids[g.dst])}
    assert got == {(min(a, b), max(a, b)) for a, b in G.edges}


def test_from_networkx_weights_only_when_every_edge_has_them():
    G = nx.Graph()
    G.add_edge(1, 2, weight=2.5)
    G.add_edge(2, 3, weight=1)
    g = Graph.from_networkx(G)
    assert g.weighted
    np.testing.assert_array_equal(g.weight, [2.5, 1.0])
    G.add_edge(3, 4)  # no weight on this one
    assert not Graph.from_networkx(G).weighted
    G2 = nx.Graph()
    G2.add_edge(1, 2, cost=3.0)
    assert Graph.from_networkx(G2, weight="cost").weighted
    assert not Graph.from_networkx(G2).weighted
    assert not Graph.from_networkx(G, weight=None).weighted


def test_from_networkx_directed_and_bad_nodes():
    D = nx.DiGraph([(1, 2), (2, 1), (2, 3)])
    g = Graph.from_networkx(D)
    assert g.directed and g.m == 3
    with pytest.raises(G2PLError, match="not a non-negative integer"):
        Graph.from_networkx(nx.path_graph(["a", "b"]))
    with pytest.raises(G2PLError, match="not a non-negative integer"):
        Graph.from_networkx(nx.Graph([(-1, 2)]))
    with pytest.raises(G2PLError, match="no nodes"):
        Graph.from_networkx(nx.Graph())


@pytest.mark.parametrize("directed", [False, True])
def test_from_scipy_equals_from_edges(directed):
    rng = np.random.default_rng(5)
    n = 30
    r = rng.integers(0, n, 80)
    c = rng.integers(0, n, 80)
    keep = r != c
    r, c = r[keep], c[keep]
    if not directed:  # an undirected graph is a symmetric matrix: each edge once here, both ways in A
        r, c = np.minimum(r, c), np.maximum(r, c)
    key = np.unique(r * n + c)  # a sparse matrix has one entry per (r, c)
    r, c = key // n, key % n
    w = rng.uniform(0.5, 3.0, r.size)
    both = (np.concatenate([w, w]), (np.concatenate([r, c]), np.concatenate([c, r])))
    A = sp.csr_array((w, (r, c)) if directed else both, shape=(n + 5, n + 5))
    g = Graph.from_scipy(A, directed=directed)
    assert Graph.from_scipy(A).directed == directed  # inferred: symmetric exactly when undirected
    e = Graph.from_edges(r, c, w, directed=directed, ids=np.arange(n + 5))
    _same_graph(g, e)
    assert g.n == n + 5  # every row/col is a vertex, isolated ones included


def test_from_scipy_symmetric_undirected_counts_no_duplicates():
    G = nx.gnm_random_graph(25, 60, seed=2)
    A = nx.to_scipy_sparse_array(G, nodelist=range(25), format="coo")
    g = Graph.from_scipy(A)
    assert g.m == 60 and g.info["duplicates_merged"] == 0 and g.weighted
    ref = Graph.from_edges([a for a, b in G.edges], [b for a, b in G.edges], np.ones(60), ids=range(25))
    _same_graph(g, ref)
    # a pattern (bool) matrix gives an unweighted graph; a non-square one has max(rows, cols) vertices
    B = sp.coo_array((np.ones(2, dtype=bool), ([0, 1], [3, 6])), shape=(2, 7))
    gb = Graph.from_scipy(B, directed=True)
    assert not gb.weighted and gb.n == 7 and gb.m == 2


# --------------------------------------------------------------------------- round trips


def _bfs_levels(G, root):
    dist = nx.single_source_shortest_path_length(G, root)
    return {x: dist.get(x, -1) for x in G.nodes}


def test_networkx_bfs_round_trip(bfs):
    G = _sparse_ids_graph()
    g = Graph.from_networkx(G)
    root = int(sorted(G.nodes)[3])
    res = bfs.run(g, args={"root": root})
    H = res.to_networkx()
    assert {x: H.nodes[x]["Level"] for x in H.nodes} == _bfs_levels(G, root)
    H = res.to_networkx(g)  # with the graph: every vertex and edge, values as attributes
    assert set(H.nodes) == set(G.nodes) and H.number_of_edges() == G.number_of_edges()
    assert {x: H.nodes[x]["Level"] for x in H.nodes} == _bfs_levels(G, root)
    assert H.graph["entry"] == "bfs"


def test_networkx_directed_bfs_round_trip(bfs):
    D = nx.gnp_random_graph(40, 0.06, seed=4, directed=True)
    D = nx.relabel_nodes(D, {i: 3 * i + 11 for i in D.nodes})
    res = bfs.run(Graph.from_networkx(D), args={"root": 11})
    H = res.to_networkx()
    assert H.is_directed()
    assert {x: H.nodes[x]["Level"] for x in H.nodes} == _bfs_levels(D, 11)


def test_networkx_cc_round_trip(cc):
    G = _sparse_ids_graph(seed=8)
    g = Graph.from_networkx(G)
    res = cc.run(g)
    H = res.to_networkx(g)
    want = {}
    for comp in nx.connected_components(G):
        lo = min(comp)
        want.update({x: lo for x in comp})
    assert {x: H.nodes[x]["L"] for x in H.nodes} == want
    # the array view agrees
    np.testing.assert_array_equal(res.array("L"), [want[int(x)] for x in res.ids()])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.integers(0, 30), st.integers(0, 30)), min_size=1, max_size=40),
       st.integers(1, 10**9))
def test_from_edges_cc_matches_networkx(cc, edges, scale):
    """Any edge list on sparse, large IDs: components by original ID match networkx."""
    src = [a * scale for a, _ in edges]
    dst = [b * scale for _, b in edges]
    res = cc.run(Graph.from_edges(src, dst))
    G = nx.Graph()
    G.add_edges_from(zip(src, dst))
    want = {x: min(c) for c in nx.connected_components(G) for x in c}
    got = dict(zip(res.ids().tolist(), res.array("L").tolist()))
    assert got == want
    H = res.to_networkx()
    assert {x: H.nodes[x]["L"] for x in H.nodes} == want


def test_weighted_sssp_matches_dijkstra():
    G = nx.gnm_random_graph(30, 70, seed=6)
    rng = np.random.default_rng(6)
    for a, b in G.edges:
        G[a][b]["weight"] = float(rng.integers(1, 9))
    G.add_node(77)
    res = g2pl.compile(PROGRAMS / "sssp.g2pl").run(Graph.from_networkx(G), args={"root": 0})
    dist = nx.single_source_dijkstra_path_length(G, 0)
    got = res.array("Dist")
    want = [dist.get(int(x), np.inf) for x in res.ids()]
    np.testing.assert_allclose(got, want)
    assert np.isinf(got[-1])


# --------------------------------------------------------------------------- Result views


def test_arrays_for_every_kind(mixed):
    g = Graph.from_edges([10, 10, 20, 30], [20, 30, 30, 40], weight=[1.0, 3.0, 5.0, 0.5])
    res = mixed.run(g, args={"t": 2.0})
    np.testing.assert_array_equal(res.ids(), [10, 20, 30, 40])
    deg = res.array("Deg")
    assert deg.dtype == np.int64
    np.testing.assert_array_equal(deg, [2, 2, 3, 1])
    np.testing.assert_array_equal(res.array("Big"), [True, True, True, False])  # ids from Deg's keys
    np.testing.assert_allclose(res.array("R"), [0.5, 0.5, 1 / 3, 1.0])
    u, v = res.edge_ids()  # from W, an edge graph
    np.testing.assert_array_equal(u, [10, 10, 20, 30])
    np.testing.assert_array_equal(v, [20, 30, 30, 40])
    np.testing.assert_allclose(res.array("W"), [2.0, 6.0, 10.0, 1.0])
    np.testing.assert_array_equal(res.array("H"), [False, True, True, False])
    n = res.array("n")
    assert n.shape == () and int(n) == 4


def test_sets_need_the_graph_unless_the_result_lists_it():
    g = Graph.from_edges([1, 2, 3], [2, 3, 1], ids=[9])
    res = g2pl.compile(PROGRAMS / "matching.g2pl").run(g)
    assert res.graph is None or res.graph is g
    bare = Result(res.entry, res.values, res.stats)  # the JSON values alone
    with pytest.raises(G2PLError, match="pass the graph"):
        bare.array("M")
    with pytest.raises(G2PLError, match="pass the graph"):
        bare.edge_ids()
    m = bare.array("M", graph=g)
    assert m.dtype == bool and m.size == 3 and m.sum() == 1
    withg = Result(res.entry, res.values, res.stats, graph=g)
    np.testing.assert_array_equal(withg.array("M"), m)
    np.testing.assert_array_equal(withg.ids(), [1, 2, 3, 9])
    kc = g2pl.compile(PROGRAMS / "kcore.g2pl").run(g, args={"k": 2})
    bare = Result(kc.entry, kc.values, kc.stats)
    with pytest.raises(G2PLError, match="pass the graph"):
        bare.array("S")
    np.testing.assert_array_equal(bare.array("S", graph=g), [True, True, True, False])


@pytest.mark.parametrize("scale", [1, 10**12])  # small IDs: one int64 key per edge; huge IDs: records
def test_edge_set_array_on_sparse_ids(scale):
    G = nx.cycle_graph(7)
    G.add_edge(0, 3)
    G = nx.relabel_nodes(G, {i: (i + 1) * scale for i in G.nodes})
    g = Graph.from_networkx(G)
    res = g2pl.compile(PROGRAMS / "matching.g2pl").run(g)
    m = res.array("M", graph=g)
    u, v = res.edge_ids(graph=g)
    assert {(a, b) for a, b, on in zip(u.tolist(), v.tolist(), m.tolist()) if on} == {tuple(p) for p in res["M"]}
    assert nx.is_maximal_matching(G, {tuple(p) for p in res["M"]})


def test_result_graph_field_leaves_json_contract_alone():
    g = Graph.from_edges([1], [2])
    res = g2pl.compile(PROGRAMS / "kcore.g2pl").run(g, args={"k": 1})
    r2 = Result(res.entry, res.values, res.stats, graph=g)
    assert r2.output() == res.output() == {"entry": "kcore", "values": res.values}
    assert "graph=" not in repr(r2)
    assert r2 == Result(res.entry, res.values, res.stats)  # the graph does not take part in equality


def test_json_round_trip_restores_non_finite_floats():
    g = Graph.from_edges([0, 5], [1, 6])
    res = g2pl.compile(PROGRAMS / "sssp.g2pl").run(g, args={"root": 0})
    values = json.loads(json.dumps(res.values))
    back = Result(res.entry, values, res.stats)
    np.testing.assert_array_equal(back.array("Dist"), [0.0, 1.0, np.inf, np.inf])
    assert back.array("Dist").dtype == np.float64


def test_to_networkx_sets_and_scalars(mixed):
    g = Graph.from_edges([10, 10, 20, 30], [20, 30, 30, 40], weight=[1.0, 3.0, 5.0, 0.5])
    res = mixed.run(g, args={"t": 2.0})
    H = res.to_networkx(g)
    assert H.graph["n"] == 4
    assert H.nodes[40] == {"Deg": 1, "Big": False, "R": 1.0}
    assert H.edges[10, 30]["H"] is True and H.edges[30, 10]["W"] == 6.0
    assert H.edges[10, 20]["weight"] == 1.0 and H.edges[10, 20]["H"] is False
    # without the graph: nodes and edges from the values; set attributes filled True/False
    H2 = res.to_networkx()
    assert set(H2.nodes) == {10, 20, 30, 40} and H2.number_of_edges() == 4
    assert H2.edges[30, 20]["H"] is True and H2.edges[30, 40]["H"] is False


def test_to_networkx_edge_set_only():
    G = nx.cycle_graph(6)
    g = Graph.from_networkx(G)
    res = g2pl.compile(PROGRAMS / "matching.g2pl").run(g)
    M = {tuple(e) for e in res["M"]}
    bare = dataclasses.replace(res, graph=None)
    H = bare.to_networkx()  # without the graph only the matched edges are known
    assert {tuple(sorted(e)) for e in H.edges} == M
    assert nx.is_maximal_matching(G, M)
    assert res.graph is g  # Program.run attaches the graph it ran on
    H = res.to_networkx()
    assert H.number_of_edges() == 6
    assert {tuple(sorted(e)) for e, on in nx.get_edge_attributes(H, "M").items() if on} == M


def test_to_pandas(mixed):
    pd = pytest.importorskip("pandas")
    g = Graph.from_edges([10, 10, 20, 30], [20, 30, 30, 40], weight=[1.0, 3.0, 5.0, 0.5])
    res = mixed.run(g, args={"t": 2.0})
    vdf = res.to_pandas()  # one DataFrame: the vertex values, as most programs return
    assert isinstance(vdf, pd.DataFrame)
    assert vdf.equals(res.to_pandas("vertex")) and vdf.equals(res.to_pandas(g))  # to_pandas(graph): older form
    assert list(vdf.columns) == ["Deg", "Big", "R"] and vdf.index.name == "id"
    assert vdf.loc[30, "Deg"] == 3 and not vdf.loc[40, "Big"]
    edf = res.to_pandas("edge")
    assert list(edf.index.names) == ["u", "v"] and list(edf.columns) == ["H", "W"]
    assert edf.loc[(20, 30), "W"] == 10.0 and bool(edf.loc[(20, 30), "H"])
    sdf = res.to_pandas("scalar")
    assert isinstance(sdf, pd.DataFrame) and list(sdf.columns) == ["n"] and sdf.loc["mixed", "n"] == 4
    with pytest.raises(G2PLError, match="unknown kind 'vertices'"):
        res.to_pandas("vertices")
    only = g2pl.compile(PROGRAMS / "bfs.g2pl").run(g, args={"root": 10}).to_pandas()
    assert only["Level"].to_dict() == {10: 0, 20: 1, 30: 1, 40: 2}
    m = g2pl.compile(PROGRAMS / "matching.g2pl").run(g).to_pandas()  # edge values only: the edge frame
    assert list(m.index.names) == ["u", "v"] and list(m.columns) == ["M"]
    bare = Result(res.entry, res.values, res.stats)  # from JSON: the same frames
    assert bare.to_pandas().equals(vdf) and bare.to_pandas("edge").equals(edf)
