"""End-to-end tests of every program in programs/ against independent answers.

Each program runs on several random graphs (sparse shuffled original IDs,
several components, isolated vertices, self-loops and duplicate edges in the
input; directed and weighted variants where they apply) and on the built-in
generators, and its JSON output (docs/language.md, "Output") is compared with networkx or
with the reference implementations in `oracles.py`.
"""

from __future__ import annotations

import math
from pathlib import Path

import networkx as nx
import numpy as np
import pytest
from oracles import (
    from_edges,
    is_maximal_independent,
    is_maximal_matching,
    is_proper_coloring,
    num,
    random_graph,
    ref_bfs,
    ref_components,
    ref_densest,
    ref_hits,
    ref_kcore,
    ref_lpa,
    ref_matching,
    ref_mis,
    ref_pagerank_numpy,
    ref_pagerank_ordered,
    ref_scc,
    ref_sssp,
    ref_widest,
    to_nx,
    vdict,
)

import g2pl
from g2pl.graph import load_graph

ROOT = Path(__file__).resolve().parents[2]
PROGRAM_DIR = ROOT / "programs"
TESTED = {"bfs", "sssp", "pagerank", "pagerank32", "cc", "cc_hub", "cc_sv", "pjcc", "kcore", "mis", "matching", "densest",
          "scc", "wcc", "hits", "widest", "bipartite", "coloring", "triangles", "ktruss", "lpa",
          "mst", "bfs_parent", "brandes"}

# (seed, number of vertices): three graphs of different sizes for every program.
GRAPHS = [(101, 300), (202, 900), (303, 2500)]
GRAPH_IDS = [f"seed{s}-n{n}" for s, n in GRAPHS]


@pytest.fixture(scope="module")
def progs() -> dict[str, g2pl.Program]:
    return {p: g2pl.compile_file(PROGRAM_DIR / f"{p}.g2pl") for p in sorted(TESTED)}


def pick_roots(t) -> list[int]:
    """A vertex of the largest piece, a vertex of another piece, and an isolated vertex."""
    G = t.G
    big = max(t.pieces, key=len)
    other = min(t.pieces, key=len)
    deg = dict(G.degree())
    isolated = [v for v in t.ids if deg[v] == 0]
    roots = [big[len(big) // 2], other[0]]
    if isolated:
        roots.append(isolated[0])
    return roots


def test_every_program_is_covered():
    assert {p.stem for p in PROGRAM_DIR.glob("*.g2pl")} == TESTED


# --------------------------------------------------------------------------- bfs


@pytest.mark.parametrize("directed", [False, True], ids=["undirected", "directed"])
@pytest.mark.parametrize("seed,n", GRAPHS, ids=GRAPH_IDS)
def test_bfs(progs, seed, n, directed):
    t = random_graph(seed, n, directed=directed, weighted=True)
    for root in pick_roots(t):
        got = vdict(progs["bfs"].run(t.g, {"root": root})["Level"])
        assert got == ref_bfs(t.G, root)


def test_bfs_root_not_a_vertex(progs):
    t = random_graph(7, 200)
    missing = max(t.ids) + 1
    with pytest.raises(g2pl.G2PLError, match=f"argument `root={missing}`: {missing} is not a vertex of the graph"):
        progs["bfs"].run(t.g, {"root": missing})
    got = progs["bfs"].run(t.g, {"root": -1})["Level"]  # -1: no vertex, allowed
    assert set(got.values()) == {-1} and len(got) == t.g.n


# --------------------------------------------------------------------------- sssp


def assert_dist_equal(got: dict, exp: dict) -> None:
    assert got.keys() == exp.keys()
    for v, d in exp.items():
        g = num(got[v])
        if math.isinf(d):
            assert got[v] == "inf", (v, got[v])
        else:
            assert g == pytest.approx(d, rel=1e-12, abs=1e-12), (v, g, d)


@pytest.mark.parametrize("directed", [False, True], ids=["undirected", "directed"])
@pytest.mark.parametrize("seed,n", GRAPHS, ids=GRAPH_IDS)
def test_sssp_weighted(progs, seed, n, directed):
    t = random_graph(seed + 1, n, directed=directed, weighted=True)
    for root in pick_roots(t):
        got = vdict(progs["sssp"].run(t.g, {"root": root})["Dist"])
        assert_dist_equal(got, ref_sssp(t.G, root))


def test_sssp_unweighted_is_bfs(progs):
    t = random_graph(17, 600, weighted=False)
    root = pick_roots(t)[0]
    got = vdict(progs["sssp"].run(t.g, {"root": root})["Dist"])
    exp = {v: (math.inf if lv < 0 else float(lv)) for v, lv in ref_bfs(t.G, root).items()}
    assert_dist_equal(got, exp)


# --------------------------------------------------------------------------- pagerank


@pytest.mark.parametrize("directed", [False, True], ids=["undirected", "directed"])
@pytest.mark.parametrize("seed,n", GRAPHS, ids=GRAPH_IDS)
def test_pagerank_vs_networkx(progs, seed, n, directed):
    t = random_graph(seed + 2, n, directed=directed)
    got = vdict(progs["pagerank"].run(t.g, {"iters": 100, "damping": 0.85})["PR"])
    exp = nx.pagerank(t.G, alpha=0.85, weight=None, tol=1e-13, max_iter=10_000)
    assert got.keys() == exp.keys()
    err = max(abs(got[v] - exp[v]) for v in exp)
    assert err < 1e-9
    assert math.fsum(got.values()) == pytest.approx(1.0, abs=1e-9)


@pytest.mark.parametrize("directed", [False, True], ids=["undirected", "directed"])
@pytest.mark.parametrize("seed,n", GRAPHS, ids=GRAPH_IDS)
def test_pagerank_20_iterations_vs_power_iteration(progs, seed, n, directed):
    t = random_graph(seed + 3, n, directed=directed)
    got = vdict(progs["pagerank"].run(t.g, {"iters": 20, "damping": 0.85})["PR"])
    exp = ref_pagerank_numpy(t.G, 20, 0.85)
    assert got.keys() == exp.keys()
    assert max(abs(got[v] - exp[v]) for v in exp) < 1e-12


@pytest.mark.parametrize("prog", ["pagerank", "pagerank32"])
@pytest.mark.parametrize("directed", [False, True], ids=["undirected", "directed"])
@pytest.mark.parametrize("seed,n", GRAPHS[:2], ids=GRAPH_IDS[:2])
def test_pagerank_has_the_bits_of_sums_in_sender_id_order(progs, prog, seed, n, directed):
    """Both PageRanks to the bit against a pure-Python power iteration that adds each receiver's shares
    one by one in its senders' original-ID order (pagerank32: each share rounded to single precision
    first), the dangling rank correctly rounded: the language's float rules, whatever the runtime does
    (a compiled row pass, a 4-byte gather of pagerank32's narrowed shares)."""
    t = random_graph(seed + 4, n, directed=directed)
    got = progs[prog].run(t.g, {"iters": 20, "damping": 0.85}).array("PR")
    exp = ref_pagerank_ordered(t.G, 20, 0.85, single=prog == "pagerank32")
    want = np.array([exp[int(v)] for v in t.g.ids])
    assert np.array_equal(got.view(np.int64), want.view(np.int64))


def test_pagerank32_is_pagerank_to_single_precision(progs):
    """pagerank32.g2pl differs from pagerank.g2pl only by its shares' rounding: within a few single-
    precision units, and not everywhere the same bits."""
    t = random_graph(8, 900, directed=True)
    a = progs["pagerank"].run(t.g, {"iters": 30, "damping": 0.85}).array("PR")
    b = progs["pagerank32"].run(t.g, {"iters": 30, "damping": 0.85}).array("PR")
    assert np.allclose(a, b, rtol=1e-6, atol=0) and not np.array_equal(a, b)


def test_pagerank_zero_iterations_is_uniform(progs):
    t = random_graph(5, 250, directed=True)
    got = progs["pagerank"].run(t.g, {"iters": 0, "damping": 0.5})["PR"]
    assert set(got.values()) == {1.0 / t.g.n}


# --------------------------------------------------------------------------- connected components


@pytest.mark.parametrize("prog", ["cc", "cc_hub", "pjcc", "cc_sv"])
@pytest.mark.parametrize("seed,n", GRAPHS, ids=GRAPH_IDS)
def test_components(progs, prog, seed, n):
    t = random_graph(seed + 4, n)
    res = progs[prog].run(t.g)
    assert len(res.values) == 1
    got = vdict(res.values[0]["value"])
    assert got == ref_components(t.G)
    assert all(type(x) is int for x in got.values())


# --------------------------------------------------------------------------- label propagation


@pytest.mark.parametrize("directed", [False, True], ids=["undirected", "directed"])
@pytest.mark.parametrize("seed,n", GRAPHS, ids=GRAPH_IDS)
def test_lpa(progs, seed, n, directed):
    t = random_graph(seed + 50, n, directed=directed)
    for rounds in (0, 1, 4):
        res = progs["lpa"].run(t.g, {"rounds": rounds})
        assert vdict(res["L"]) == ref_lpa(t.G, rounds)
        assert res.stats["supersteps"] <= 2 * rounds + 3


def test_lpa_ties_go_to_the_smallest_label(progs):
    # round 1: 5 sees labels {1, 2, 9, 10} and 7 sees {1, 2}: ties, the smallest wins; 1, 9 see 5; 3 is alone
    g = from_edges([(5, 1), (5, 2), (5, 9), (5, 10), (7, 1), (7, 2)], isolated=[3])
    got = vdict(progs["lpa"].run(g, {"rounds": 1})["L"])
    assert got[7] == 1 and got[3] == 3 and got[1] == 5 and got[9] == 5 and got[5] == 1


# --------------------------------------------------------------------------- k-core


@pytest.mark.parametrize("k", [2, 3])
@pytest.mark.parametrize("seed,n", GRAPHS, ids=GRAPH_IDS)
def test_kcore(progs, seed, n, k):
    t = random_graph(seed + 5, n)
    got = progs["kcore"].run(t.g, {"k": k})["S"]
    exp = sorted(nx.k_core(t.G, k).nodes)
    assert got == exp
    assert exp == sorted(ref_kcore(t.G, k))


def test_kcore_trivial_k(progs):
    t = random_graph(9, 300)
    assert progs["kcore"].run(t.g, {"k": 0})["S"] == t.ids
    assert progs["kcore"].run(t.g, {"k": 1})["S"] == sorted(v for v in t.ids if t.G.degree(v) > 0)
    assert progs["kcore"].run(t.g, {"k": 10_000})["S"] == []


# --------------------------------------------------------------------------- MIS


@pytest.mark.parametrize("rseed", [0, 12345])
@pytest.mark.parametrize("seed,n", GRAPHS, ids=GRAPH_IDS)
def test_mis(progs, seed, n, rseed):
    t = random_graph(seed + 6, n)
    got = progs["mis"].run(t.g, seed=rseed)["I"]
    assert is_maximal_independent(t.G, got)
    assert got == ref_mis(t.G, rseed)


# --------------------------------------------------------------------------- matching


@pytest.mark.parametrize("seed,n", GRAPHS, ids=GRAPH_IDS)
def test_matching(progs, seed, n):
    t = random_graph(seed + 7, n)
    got = progs["matching"].run(t.g)["M"]
    assert is_maximal_matching(t.G, got)
    assert all(a < b for a, b in got), "undirected edges are reported smaller ID first"
    assert got == ref_matching(t.G)


# --------------------------------------------------------------------------- densest subgraph


@pytest.mark.parametrize("seed,n,shapes", [
    (101, 300, None),
    (202, 900, ("clique", "tree", "sparse")),
    (303, 2500, ("dense", "cycle", "clique", "tree")),
    (404, 700, ("sparse", "tree")),
])
def test_densest(progs, seed, n, shapes):
    t = random_graph(seed + 8, n, shapes=shapes)
    got = progs["densest"].run(t.g)["R"]
    exp = ref_densest(t.G)
    assert got == exp
    if shapes and "clique" in shapes:
        assert len(exp) < t.g.n, "a clique piece makes the answer a proper subset"


# --------------------------------------------------------------------------- optimisation levels


@pytest.mark.parametrize("prog,args", [
    ("bfs", None), ("sssp", None), ("pagerank", {"iters": 30, "damping": 0.85}), ("cc", {}), ("cc_hub", {}),
    ("pjcc", {}),
    ("kcore", {"k": 3}), ("mis", {}), ("matching", {}), ("densest", {}), ("lpa", {"rounds": 6}),
])
def test_optimisation_levels_agree(prog, args):
    t = random_graph(55, 700, weighted=True, shapes=("dense", "tree", "cycle"))
    if args is None:
        args = {"root": pick_roots(t)[0]}
    outs = {}
    for opt in (0, 1, 2):
        p = g2pl.compile_file(PROGRAM_DIR / f"{prog}.g2pl", opt=opt)
        outs[opt] = p.run(t.g, args, seed=3).values
    assert outs[0] == outs[2]
    assert outs[1] == outs[2]


# --------------------------------------------------------------------------- built-in generators


GENERATED = ["ws:2000:6:0.3", "er:1500:3000", "kron:9:8"]


@pytest.mark.parametrize("spec", GENERATED)
def test_programs_on_generated_graphs(progs, spec):
    g = load_graph(spec, seed=1)
    G = to_nx(g)
    assert g.n == G.number_of_nodes() and g.m == G.number_of_edges()
    root = int(g.ids[0])
    assert vdict(progs["bfs"].run(g, {"root": root})["Level"]) == ref_bfs(G, root)
    assert_dist_equal(vdict(progs["sssp"].run(g, {"root": root})["Dist"]), ref_sssp(G, root))
    pr = vdict(progs["pagerank"].run(g, {"iters": 100, "damping": 0.85})["PR"])
    exp = nx.pagerank(G, alpha=0.85, weight=None, tol=1e-13, max_iter=10_000)
    assert max(abs(pr[v] - exp[v]) for v in exp) < 1e-9
    comp = ref_components(G)
    assert vdict(progs["cc"].run(g)["L"]) == comp
    assert vdict(progs["pjcc"].run(g)["P"]) == comp
    assert vdict(progs["cc_hub"].run(g)["C"]) == comp
    assert progs["kcore"].run(g, {"k": 3})["S"] == sorted(nx.k_core(G, 3).nodes)
    mis = progs["mis"].run(g, seed=1)["I"]
    assert is_maximal_independent(G, mis) and mis == ref_mis(G, 1)
    mm = progs["matching"].run(g)["M"]
    assert is_maximal_matching(G, mm) and mm == ref_matching(G)
    assert progs["densest"].run(g)["R"] == ref_densest(G)


def test_generated_directed_graph(progs):
    g = load_graph("er:800:2400", directed=True, seed=4)
    G = to_nx(g)
    assert G.is_directed() and g.m == G.number_of_edges()
    root = int(g.ids[3])
    assert vdict(progs["bfs"].run(g, {"root": root})["Level"]) == ref_bfs(G, root)
    assert_dist_equal(vdict(progs["sssp"].run(g, {"root": root})["Dist"]), ref_sssp(G, root))
    pr = vdict(progs["pagerank"].run(g, {"iters": 20, "damping": 0.85})["PR"])
    exp = ref_pagerank_numpy(G, 20, 0.85)
    assert max(abs(pr[v] - exp[v]) for v in exp) < 1e-12


def test_graph_spec_string_is_loaded_by_run(progs):
    g = load_graph("ws:500:4:0.2", seed=3)
    a = progs["cc"].run(g, seed=3).values
    b = progs["cc"].run("ws:500:4:0.2", seed=3).values
    assert a == b


@pytest.mark.parametrize("prog,args", [
    ("bfs", {"root": 5}), ("sssp", {"root": 5}), ("pagerank", {"iters": 25, "damping": 0.85}),
    ("cc", {}), ("pjcc", {}), ("kcore", {"k": 3}), ("mis", {}), ("matching", {}), ("densest", {}),
])
def test_same_seed_same_result(progs, prog, args):
    g1 = load_graph("ws:2000:6:0.3", seed=1)
    g2 = load_graph("ws:2000:6:0.3", seed=1)
    r1 = progs[prog].run(g1, args, seed=7)
    r2 = progs[prog].run(g2, args, seed=7)
    assert r1.values == r2.values
    for key in ("supersteps", "messages"):
        assert r1.stats[key] == r2.stats[key]
    assert [s["messages"] for s in r1.stats["per_superstep"]] == [s["messages"] for s in r2.stats["per_superstep"]]
    assert len(r1.stats["per_superstep"]) == r1.stats["supersteps"]


def test_mis_depends_on_seed(progs):
    g = load_graph("ws:2000:6:0.3", seed=1)
    G = to_nx(g)
    a = progs["mis"].run(g, seed=1)["I"]
    b = progs["mis"].run(g, seed=2)["I"]
    assert a != b
    assert is_maximal_independent(G, a) and is_maximal_independent(G, b)
    assert b == ref_mis(G, 2)


def test_generators_depend_on_seed():
    a = load_graph("ws:2000:6:0.3", seed=1)
    b = load_graph("ws:2000:6:0.3", seed=2)
    assert a.n == b.n == 2000
    assert not (a.m == b.m and (a.src == b.src).all() and (a.dst == b.dst).all())


# --------------------------------------------------------------------------- small graphs and corner cases


@pytest.mark.parametrize("seed", range(12))
def test_small_graph_sweep(progs, seed):
    """Many small graphs: ties in degree / ID ordering are frequent here."""
    t = random_graph(1000 + seed, 20 + 7 * seed, shapes=("clique", "tree", "sparse", "cycle", "dense"))
    G = t.G
    mm = progs["matching"].run(t.g)["M"]
    assert mm == ref_matching(G) and is_maximal_matching(G, mm)
    mis = progs["mis"].run(t.g, seed=seed)["I"]
    assert mis == ref_mis(G, seed) and is_maximal_independent(G, mis)
    assert progs["densest"].run(t.g)["R"] == ref_densest(G)
    for k in (1, 2, 3, 4):
        assert progs["kcore"].run(t.g, {"k": k})["S"] == sorted(nx.k_core(G, k).nodes)
    comp = ref_components(G)
    assert vdict(progs["cc"].run(t.g)["L"]) == comp
    assert vdict(progs["pjcc"].run(t.g)["P"]) == comp


BIG_ID = 2**62 - 1
CORNER_GRAPHS = {
    "single-vertex": ([], [77]),
    "edgeless": ([], [5, 9, 2**40]),
    "one-edge": ([(BIG_ID, 3)], []),
    "star": ([(1000, x) for x in (5, 17, 2**61, 99999, 4)], []),
    "k6": ([(a, b) for a in range(6) for b in range(a + 1, 6)], []),
    "huge-ids": ([(BIG_ID - i, BIG_ID - i - 1) for i in range(0, 20, 2)] + [(BIG_ID - 1, 2**61), (2**61, 0)],
                 [BIG_ID - 100]),
    "two-triangles": ([(1, 2), (2, 3), (3, 1), (10, 20), (20, 30), (30, 10), (3, 10)], []),
}


@pytest.mark.parametrize("name", sorted(CORNER_GRAPHS))
def test_corner_case_graphs(progs, name):
    edges, isolated = CORNER_GRAPHS[name]
    g = from_edges(edges, isolated=isolated)
    G = to_nx(g)
    root = int(g.ids[-1])
    assert vdict(progs["bfs"].run(g, {"root": root})["Level"]) == ref_bfs(G, root)
    assert_dist_equal(vdict(progs["sssp"].run(g, {"root": root})["Dist"]), ref_sssp(G, root))
    pr = vdict(progs["pagerank"].run(g, {"iters": 20, "damping": 0.85})["PR"])
    exp = ref_pagerank_numpy(G, 20, 0.85)
    assert max(abs(pr[v] - exp[v]) for v in G) < 1e-12
    comp = ref_components(G)
    assert vdict(progs["cc"].run(g)["L"]) == comp
    assert vdict(progs["pjcc"].run(g)["P"]) == comp
    assert vdict(progs["cc_hub"].run(g)["C"]) == comp
    for k in (0, 1, 2, 3, 5):
        assert progs["kcore"].run(g, {"k": k})["S"] == sorted(nx.k_core(G, k).nodes)
    assert progs["mis"].run(g, seed=2)["I"] == ref_mis(G, 2)
    assert progs["matching"].run(g)["M"] == ref_matching(G)
    assert progs["densest"].run(g)["R"] == ref_densest(G)


def test_densest_density_tie_keeps_earlier_set(progs):
    # V has 9 edges on 9 vertices, vertex 4 isolated (density 1). The first peel (threshold 2.02) keeps {2, 5, 6, 7}
    # with edges 2-6 2-7 5-6 6-7: density 4/4 = 1 again, which is NOT strictly larger, so R stays V.
    ids = {i: 1_000_003 * (9 - i) + 11 for i in range(9)}  # scrambled, non-contiguous IDs
    edges = [(0, 5), (0, 7), (1, 3), (2, 6), (2, 7), (2, 8), (3, 5), (5, 6), (6, 7)]
    g = from_edges([(ids[a], ids[b]) for a, b in edges], isolated=[ids[4]])
    G = to_nx(g)
    exp = ref_densest(G)
    assert exp == sorted(ids.values())
    assert progs["densest"].run(g)["R"] == exp


def test_densest_prefers_clique():
    # A 6-clique (density 2.5) joined to a long path: the answer is exactly the clique.
    clique = [(a, b) for a in range(6) for b in range(a + 1, 6)]
    path = [(5, 6)] + [(i, i + 1) for i in range(6, 40)]
    g = from_edges([(7 * a + 3, 7 * b + 3) for a, b in clique + path])
    prog = g2pl.compile_file(PROGRAM_DIR / "densest.g2pl")
    assert prog.run(g)["R"] == [7 * a + 3 for a in range(6)]


# --------------------------------------------------------------------------- statistics (-O0 baseline)


@pytest.mark.parametrize("prog,args", [
    ("bfs", None), ("cc", {}), ("kcore", {"k": 3}), ("mis", {}), ("matching", {}), ("densest", {}),
    ("sssp", None), ("pagerank", {"iters": 5, "damping": 0.85}), ("lpa", {"rounds": 3}),
])
def test_O0_messages_follow_the_naive_formula(prog, args):
    # At -O0 every exchange superstep sends one record per adjacency entry (2|E| undirected).
    t = random_graph(61, 500)
    if args is None:
        args = {"root": pick_roots(t)[0]}
    res = g2pl.compile_file(PROGRAM_DIR / f"{prog}.g2pl", opt=0).run(t.g, args)
    s = res.stats
    assert s["supersteps"] >= 2
    assert s["messages"] == (s["supersteps"] - 1) * 2 * t.g.m
    assert len(s["per_superstep"]) == s["supersteps"]
    assert sum(x["messages"] for x in s["per_superstep"]) == s["messages"]
    assert s["per_superstep"][-1]["messages"] == 0


def test_O0_remote_reads_add_traffic():
    t = random_graph(62, 500)
    s = g2pl.compile_file(PROGRAM_DIR / "pjcc.g2pl", opt=0).run(t.g).stats
    assert s["messages"] > (s["supersteps"] - 1) * 2 * t.g.m
    assert sum(x["messages"] for x in s["per_superstep"]) == s["messages"]


def test_degree_renumbering_on_one_rank_keeps_answers():
    import g2pl as _g

    g = _g.load_graph("kron:9", seed=4)
    for prog, args in (("pagerank", {"iters": 10, "damping": 0.85}), ("cc", {}), ("pjcc", {})):
        p = _g.compile(Path(__file__).resolve().parents[2] / "programs" / f"{prog}.g2pl")
        a = p.run(g, args=args, renumber="none").values
        b = p.run(g, args=args, renumber="degree").values
        assert p.run(g, args=args).values == b  # auto: Kronecker degrees are skewed
        assert a == b or prog == "pagerank" and all(
            abs(a[0]["value"][k] - b[0]["value"][k]) <= 1e-12 * abs(a[0]["value"][k]) for k in a[0]["value"])


def test_auto_renumbering_orders_by_degree_only_when_degrees_are_skewed():
    from g2pl.runtime.partition import resolve_renumber

    skewed = g2pl.load_graph("kron:10", seed=1)
    even = g2pl.load_graph("ws:2000:10:0.3", seed=1)
    assert resolve_renumber(skewed, "auto") == "degree" and resolve_renumber(even, "auto") is None
    assert resolve_renumber(even, "degree") == "degree" and resolve_renumber(skewed, "none") is None
    assert resolve_renumber(skewed, None) is None
    p = g2pl.compile(PROGRAM_DIR / "cc.g2pl")
    with pytest.raises(g2pl.G2PLError, match="unknown renumbering `hubs`"):
        p.run(even, renumber="hubs")


@pytest.mark.parametrize("spec,directed", [("kron:10", False), ("kron:10", True), ("er:500:3000", True)])
def test_one_rank_degree_view_is_the_one_rank_degree_partition(spec, directed):
    """The fast one-rank view (driver's default on skewed graphs) must equal what the general
    partitioner builds for one rank, field by field and dtype by dtype."""
    import dataclasses

    from g2pl.runtime.partition import partition, whole_by_degree

    g = g2pl.load_graph(spec, seed=3, directed=directed)
    want, got = partition(g, 1, "degree")[0], whole_by_degree(g)
    for f in dataclasses.fields(want):
        a, b = getattr(want, f.name), getattr(got, f.name)
        if isinstance(a, np.ndarray):
            assert isinstance(b, np.ndarray) and a.dtype == b.dtype and np.array_equal(a, b), f.name
        else:
            assert a == b, f.name


# --------------------------------------------------------------------------- scc, wcc, hits (directed)


@pytest.mark.parametrize("directed", [False, True], ids=["undirected", "directed"])
@pytest.mark.parametrize("seed,n", GRAPHS, ids=GRAPH_IDS)
def test_scc_and_wcc_vs_networkx(progs, seed, n, directed):
    t = random_graph(seed + 40, n, directed=directed)
    assert vdict(progs["scc"].run(t.g)["Label"]) == ref_scc(t.G)
    assert vdict(progs["wcc"].run(t.g)["L"]) == ref_components(t.G)
    assert vdict(progs["cc_hub"].run(t.g)["C"]) == ref_components(t.G)  # weak components, as wcc


def test_scc_on_a_graph_with_nested_cycles(progs):
    # 1->2->3->1 and 3->4->5->4, 6 alone, 7->1: SCCs {1,2,3}, {4,5}, {6}, {7}
    g = from_edges([(1, 2), (2, 3), (3, 1), (3, 4), (4, 5), (5, 4), (7, 1)], directed=True, isolated=[6])
    assert vdict(progs["scc"].run(g)["Label"]) == {1: 1, 2: 1, 3: 1, 4: 4, 5: 4, 6: 6, 7: 7}


@pytest.mark.parametrize("seed,n", GRAPHS, ids=GRAPH_IDS)
def test_hits_vs_power_iteration(progs, seed, n):
    t = random_graph(seed + 41, n, directed=True)
    res = progs["hits"].run(t.g, {"iters": 8})
    hub, auth = ref_hits(t.G, 8)
    for got, exp in ((vdict(res["Hub"]), hub), (vdict(res["Auth"]), auth)):
        assert got.keys() == exp.keys()
        assert max(abs(got[v] - exp[v]) for v in exp) < 1e-12


# --------------------------------------------------------------------------- widest, bipartite, coloring


@pytest.mark.parametrize("directed", [False, True], ids=["undirected", "directed"])
@pytest.mark.parametrize("seed,n", GRAPHS, ids=GRAPH_IDS)
def test_widest_paths(progs, seed, n, directed):
    t = random_graph(seed + 42, n, directed=directed, weighted=True)
    for root in pick_roots(t):
        got = {v: num(x) for v, x in vdict(progs["widest"].run(t.g, {"root": root})["W"]).items()}
        assert got == ref_widest(t.G, root)


@pytest.mark.parametrize("seed,n", GRAPHS, ids=GRAPH_IDS)
def test_bipartite(progs, seed, n):
    t = random_graph(seed + 43, n)
    rng = np.random.default_rng(seed)
    part = {v: int(rng.integers(0, 2)) for v in t.G.nodes}
    two = [(a, b) for a, b in t.G.edges if part[a] != part[b]]  # bipartite by construction
    hub = next(v for v in t.G.nodes if sum(1 for a, b in two if v in (a, b)) >= 2)
    x, y = [b if a == hub else a for a, b in two if hub in (a, b)][:2]
    for edges in (two, two + [(x, y)], list(t.G.edges)):  # + a triangle; the original graph
        g = from_edges(edges, isolated=list(t.G.nodes))
        G = nx.Graph(edges)
        G.add_nodes_from(t.G.nodes)
        res = progs["bipartite"].run(g)
        assert res["ok"] == nx.is_bipartite(G)
        side = vdict(res["Side"])
        assert set(side.values()) <= {0, 1}
        if res["ok"]:
            assert all(side[a] != side[b] for a, b in G.edges)
    assert not nx.is_bipartite(nx.Graph(two + [(x, y)]))


@pytest.mark.parametrize("seed,n", GRAPHS, ids=GRAPH_IDS)
def test_coloring_is_proper_and_deterministic(progs, seed, n):
    t = random_graph(seed + 44, n)
    res = progs["coloring"].run(t.g, seed=seed)
    color = vdict(res["Color"])
    assert is_proper_coloring(t.G, color)
    assert res["r"] == max(color.values()) + 1
    assert res["r"] <= max(d for _, d in t.G.degree()) + 1 or res["r"] <= 2 * math.log2(n) + 5
    assert progs["coloring"].run(t.g, seed=seed).output() == res.output()


# --------------------------------------------------------------------------- triangles, k-truss

TRI_SHAPES = ("clique", "dense", "sparse", "tree")


@pytest.mark.parametrize("seed,n", GRAPHS, ids=GRAPH_IDS)
def test_triangles(progs, seed, n):
    t = random_graph(seed + 5, n, shapes=TRI_SHAPES)
    exp = nx.triangles(t.G)
    for opt in (0, 1, 2):
        r = g2pl.compile_file(PROGRAM_DIR / "triangles.g2pl", opt=opt).run(t.g)
        assert vdict(r["T"]) == exp
        assert r["total"] == sum(exp.values()) // 3
        assert r.stats["supersteps"] <= 10


def test_triangles_generators(progs):
    for spec in ("kron:9", "ws:400:10:0.1", "er:300:3000"):
        g = load_graph(spec, seed=3)
        exp = nx.triangles(to_nx(g))
        assert vdict(progs["triangles"].run(g)["T"]) == exp


@pytest.mark.parametrize("seed,n", GRAPHS, ids=GRAPH_IDS)
def test_ktruss(progs, seed, n):
    t = random_graph(seed + 6, n, shapes=TRI_SHAPES)
    for k in (0, 2, 3, 4, 5, 6, 9):
        exp = sorted(sorted(e) for e in nx.k_truss(t.G, k).edges())
        for opt in (0, 2):
            prog = progs["ktruss"] if opt == 2 else g2pl.compile_file(PROGRAM_DIR / "ktruss.g2pl", opt=0)
            got = sorted(sorted(e) for e in prog.run(t.g, {"k": k})["K"])
            assert got == exp, (k, opt)


def test_ktruss_kron(progs):
    g = load_graph("kron:10", seed=1)
    G = to_nx(g)
    for k in (3, 5, 8):
        exp = sorted(sorted(e) for e in nx.k_truss(G, k).edges())
        assert sorted(sorted(e) for e in progs["ktruss"].run(g, {"k": k})["K"]) == exp
