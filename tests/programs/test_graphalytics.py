"""The LDBC Graphalytics kernels of programs/graphalytics/ against Graphalytics' own validation data.

`tests/fixtures/graphalytics/` holds Graphalytics' validation graphs (NAME.v, NAME.e,
NAME.properties) and the reference output of each kernel on them (NAME-KERNEL); ORIGIN says where
each file comes from. Every case is checked with the rule Graphalytics applies to that kernel
(`Algorithm.java` and `validation/rule/` in its repository): BFS and CDLP must match exactly, WCC
must give the same partition (equivalence), PR, LCC and SSSP must be within 1e-4 of the expected
value relative to it (`|expected - actual| <= 0.0001 * expected`, infinities equal). The rules
themselves are checked on Graphalytics' samples of passing and failing outputs (matching/).

Graphs are read as `--graph NAME.e` reads them (g2pl's Graphalytics loader, checked here against
an independent reading of the files). The cases run at -O0, -O1 and -O2 on one rank in-process,
every case on 2 ranks and a selection on 3 under mpiexec (one launch per rank count), and one
through `g2pl run --np 3`. Random directed and undirected graphs (sparse IDs, several
components, isolated vertices) are checked against direct simulations of the kernel definitions of
the Graphalytics specification and networkx.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from functools import cache
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import networkx as nx
import numpy as np
import pytest
from oracles import random_graph, ref_components, ref_pagerank_numpy, ref_sssp

import g2pl
from g2pl.graph.graph import Graph, from_edges

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"
FIXTURES = TESTS / "fixtures" / "graphalytics"
PROGRAMS = ROOT / "programs" / "graphalytics"
KERNELS = ("bfs", "pr", "wcc", "cdlp", "lcc", "sssp")
#: Graphalytics' validation rule of each kernel (its `Algorithm` enum).
RULE = {"bfs": "exact", "cdlp": "exact", "wcc": "equivalence", "pr": "epsilon", "lcc": "epsilon",
        "sssp": "epsilon"}
#: Graphalytics' "unreachable" BFS depth: the largest int64.
UNREACHED = 2**63 - 1


# --------------------------------------------------------------------------- the validation rules


def violations(rule: str, expected: dict[int, float], actual: dict[int, float]) -> list[int]:
    """The vertices for which `actual` fails Graphalytics' `rule` (its SQL queries, in Python).

    exact: the values differ. epsilon: infinities must match, otherwise
    `|expected - actual| <= 0.0001 * expected` (so an expected 0 needs an exact 0). equivalence:
    another vertex shares the expected class but not the actual one, or the other way round.
    """
    common = sorted(set(expected) & set(actual))
    if rule == "exact":
        return [v for v in common if expected[v] != actual[v]]
    if rule == "epsilon":
        def bad(e: float, a: float) -> bool:
            if math.isinf(e) or math.isinf(a):
                return not (e == a == math.inf)
            return not abs(e - a) <= 0.0001 * e
        return [v for v in common if bad(expected[v], actual[v])]
    assert rule == "equivalence", rule
    by_e: dict[float, set[float]] = {}
    by_a: dict[float, set[float]] = {}
    for v in common:
        by_e.setdefault(expected[v], set()).add(actual[v])
        by_a.setdefault(actual[v], set()).add(expected[v])
    return [v for v in common if len(by_e[expected[v]]) > 1 or len(by_a[actual[v]]) > 1]


def check(rule: str, expected: dict[int, float], actual: dict[int, float], what: str) -> None:
    """Graphalytics' whole check: the same vertices, and no vertex violating the rule."""
    assert sorted(actual) == sorted(expected), f"{what}: not the expected vertices"
    bad = violations(rule, expected, actual)
    assert not bad, f"{what}: {rule} fails at " + ", ".join(
        f"{v} (expected {expected[v]}, got {actual[v]})" for v in bad[:10])


def read_values(path: Path) -> dict[int, float]:
    """A Graphalytics output file: `vertex value` per line (values `Infinity`, `+Infinity` too)."""
    out: dict[int, float] = {}
    for line in path.read_text().splitlines():
        parts = line.replace(",", " ").split()
        if parts and not parts[0].startswith("#"):
            text = parts[1].lstrip("+")
            out[int(parts[0])] = int(text) if text.lstrip("-").isdigit() else float(text)
    return out


@pytest.mark.parametrize("rule", ["exact", "epsilon", "equivalence"])
def test_rules_agree_with_graphalytics_samples(rule):
    """Graphalytics' samples: actual1 passes, actual2 fails at exactly the vertices its queries name."""
    base = FIXTURES / "matching"
    expected = read_values(base / f"{rule}_expected.csv")
    assert violations(rule, expected, read_values(base / f"{rule}_actual1.csv")) == []
    failing = {"exact": [1, 4], "epsilon": [1, 3, 4, 5, 6], "equivalence": [1, 2, 3, 4, 5]}[rule]
    assert violations(rule, expected, read_values(base / f"{rule}_actual2.csv")) == failing


# --------------------------------------------------------------------------- the validation data


def read_properties(path: Path) -> dict[str, str]:
    """A Java .properties file of `key = value` lines (no continuations in Graphalytics' files)."""
    out = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith(("#", "!")) and "=" in line:
            key, value = line.split("=", 1)
            out[key.strip()] = value.strip()
    return out


def dataset_props(name: str) -> dict[str, str]:
    """NAME.properties without the `graph.NAME.` prefix."""
    prefix = f"graph.{name}."
    return {k[len(prefix):]: v for k, v in read_properties(FIXTURES / f"{name}.properties").items()
            if k.startswith(prefix)}


def kernel_args(name: str, kernel: str) -> dict[str, Any]:
    """The arguments Graphalytics runs `kernel` with on dataset `name`, from its .properties."""
    p = dataset_props(name)
    return {"bfs": lambda: {"root": int(p["bfs.source-vertex"])},
            "sssp": lambda: {"root": int(p["sssp.source-vertex"])},
            "pr": lambda: {"iterations": int(p["pr.num-iterations"]), "damping": float(p["pr.damping-factor"])},
            "cdlp": lambda: {"iterations": int(p["cdlp.max-iterations"])},
            "wcc": dict, "lcc": dict}[kernel]()


def cases() -> list[tuple[str, str]]:
    """(dataset, kernel) for every reference output of the fixtures."""
    out = []
    for path in sorted(FIXTURES.glob("*.properties")):
        name = path.stem
        for kernel in dataset_props(name)["algorithms"].replace(" ", "").split(","):
            if (FIXTURES / f"{name}-{kernel.upper()}").exists():
                out.append((name, kernel))
    return out


CASES = cases()
CASE_IDS = [f"{n}-{k}" for n, k in CASES]


def graph_path(name: str) -> str:
    """What `--graph` takes for dataset `name`: its edge file (NAME.v and NAME.properties beside it)."""
    return str(FIXTURES / f"{name}.e")


@cache
def load(name: str) -> Graph:
    """Dataset `name` through g2pl's own Graphalytics loader (what `--graph NAME.e` reads)."""
    return g2pl.load_graph(graph_path(name))


def parse_dataset(name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None, bool]:
    """(vertex IDs, sources, targets, weights or None, directed) of dataset `name`, read here
    independently of g2pl: the vertices of NAME.v (isolated ones too), the edges of NAME.e, and
    `directed` from NAME.properties."""
    ids = np.array((FIXTURES / f"{name}.v").read_text().split(), dtype=np.int64)
    rows = [line.split() for line in (FIXTURES / f"{name}.e").read_text().splitlines() if line.strip()]
    src = np.array([int(r[0]) for r in rows], dtype=np.int64)
    dst = np.array([int(r[1]) for r in rows], dtype=np.int64)
    weight = np.array([float(r[2]) for r in rows]) if rows and len(rows[0]) > 2 else None
    return ids, src, dst, weight, dataset_props(name)["directed"] == "true"


def test_fixtures_are_graphalytics_validation_set():
    """Every kernel on both a directed and an undirected graph, twice; sizes as the properties say."""
    assert len(CASES) == 24
    assert Counter(k for _, k in CASES) == dict.fromkeys(KERNELS, 4)
    for name in {n for n, _ in CASES}:
        p = dataset_props(name)
        ids, src, _dst, _w, _directed = parse_dataset(name)
        assert (ids.size, src.size) == (int(p["meta.vertices"]), int(p["meta.edges"])), name


@pytest.mark.parametrize("name", sorted({n for n, _ in CASES}))
def test_loader_reads_the_dataset(name):
    """`--graph NAME.e` gives the graph Graphalytics defines: NAME.v's vertices, NAME.e's edges and
    weights, the direction of NAME.properties."""
    ids, src, dst, weight, directed = parse_dataset(name)
    want, got = from_edges(src, dst, weight, directed=directed, ids=ids), load(name)
    assert got.directed == directed
    assert np.array_equal(got.ids, want.ids)
    assert np.array_equal(got.ids[got.src], want.ids[want.src])
    assert np.array_equal(got.ids[got.dst], want.ids[want.dst])
    assert np.array_equal(got.weight, want.weight)


@cache
def program(kernel: str, opt: int) -> g2pl.Program:
    return g2pl.compile_file(PROGRAMS / f"{kernel}.g2pl", opt=opt)


def result_values(res: g2pl.Result) -> dict[int, float]:
    """The one vertex graph a kernel returns, as {original ID: value}."""
    kinds = res.kinds()
    assert len(kinds) == 1 and kinds[0][1] == "vertex", kinds
    return dict(zip(res.ids.tolist(), res.array(kinds[0][0]).tolist(), strict=True))


def test_entries_are_graphalytics_signatures():
    want = {"bfs": [("root", "vid")], "pr": [("iterations", "int"), ("damping", "float")], "wcc": [],
            "cdlp": [("iterations", "int")], "lcc": [], "sssp": [("root", "vid")]}
    for kernel in KERNELS:
        prog = program(kernel, 2)
        assert list(prog.procedures) == [kernel]
        assert [(n, t.elem) for n, t in prog.params(kernel)] == want[kernel], kernel


@pytest.mark.parametrize("opt", [0, 1, 2], ids=["O0", "O1", "O2"])
@pytest.mark.parametrize(("name", "kernel"), CASES, ids=CASE_IDS)
def test_validation_case(name, kernel, opt):
    res = program(kernel, opt).run(load(name), kernel_args(name, kernel))
    check(RULE[kernel], read_values(FIXTURES / f"{name}-{kernel.upper()}"), result_values(res),
          f"{name} {kernel} -O{opt}")


# --------------------------------------------------------------------------- several ranks

RANKS_SCRIPT = r"""
import json, sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
import test_graphalytics as t
from g2pl.runtime.mpi import MPIComm
comm = MPIComm()
out = {}
for case in json.loads(sys.argv[2]):
    name, kernel, opt = case
    res = t.program(kernel, opt).run(t.graph_path(name), t.kernel_args(name, kernel), comm=comm)
    if comm.rank == 0:
        out[f"{name} {kernel} -O{opt}"] = {str(k): v for k, v in t.result_values(res).items()}
if comm.rank == 0:
    Path(sys.argv[3]).write_text(json.dumps(out))
"""


def _mpi() -> str | None:
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return None
    from g2pl.runtime.launch import find_mpiexec

    return find_mpiexec()


@pytest.mark.skipif(_mpi() is None, reason="mpi4py/mpiexec not installed (pip install '.[mpi]')")
@pytest.mark.parametrize("ranks", [2, 3])
def test_validation_cases_on_several_ranks(tmp_path, ranks):
    """One mpiexec launch per rank count; every rank reads its own share of NAME.e. Two ranks: every
    case at -O2 and the directed example's at -O0 and -O1; three: the examples at -O2 and the
    directed test graphs at -O0."""
    if ranks == 2:
        todo = [(n, k, 2) for n, k in CASES] + [(n, k, o) for n, k in CASES if n == "example-directed"
                                                for o in (0, 1)]
    else:
        todo = [(n, k, 2) for n, k in CASES if n.startswith("example-")] + [
            (n, k, 0) for n, k in CASES if n.startswith("test-") and n.endswith("-directed")]
    out = tmp_path / "out.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(TESTS)]), "OMP_NUM_THREADS": "1"}
    r = subprocess.run([str(_mpi()), "-n", str(ranks), sys.executable, "-c", RANKS_SCRIPT,
                        str(Path(__file__).parent), json.dumps(todo), str(out)],
                       env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    got = json.loads(out.read_text())
    assert len(got) == len(todo)
    for name, kernel, opt in todo:
        actual = {int(v): x for v, x in got[f"{name} {kernel} -O{opt}"].items()}
        check(RULE[kernel], read_values(FIXTURES / f"{name}-{kernel.upper()}"), actual,
              f"{name} {kernel} -O{opt} on {ranks} ranks")


@pytest.mark.skipif(_mpi() is None, reason="mpi4py/mpiexec not installed (pip install '.[mpi]')")
def test_command_line_on_three_ranks(tmp_path):
    """`g2pl run --graph NAME.e --np 3` without `--directed`: the direction comes from NAME.properties."""
    name = "test-cdlp-directed"
    out = tmp_path / "out.json"
    args = [x for k, v in kernel_args(name, "cdlp").items() for x in ("--arg", f"{k}={v}")]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    r = subprocess.run([sys.executable, "-m", "g2pl.cli", "run", str(PROGRAMS / "cdlp.g2pl"), "--graph",
                        graph_path(name), "--np", "3", "--quiet", *args, "--output", str(out)],
                       env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    value = json.loads(out.read_text())["values"][0]["value"]
    check("exact", read_values(FIXTURES / f"{name}-CDLP"), {int(v): x for v, x in value.items()}, name)


def test_superstep_targets():
    """At -O2 on a directed graph: CDLP and PR one superstep per round (plus at most two), LCC at
    most six, BFS one per level (plus the round that finds no new vertex, plus the last)."""
    g = load("test-cdlp-directed")
    for rounds in (1, 5):
        assert program("cdlp", 2).run(g, {"iterations": rounds}).stats["supersteps"] <= rounds + 2
        assert program("pr", 2).run(g, {"iterations": rounds, "damping": 0.85}).stats["supersteps"] <= rounds + 2
    assert program("lcc", 2).run(load("test-lcc-directed"), {}).stats["supersteps"] <= 6
    res = program("bfs", 2).run(load("test-bfs-directed"), {"root": 1})
    depth = max(d for d in result_values(res).values() if d != UNREACHED)
    assert res.stats["supersteps"] <= depth + 3


# --------------------------------------------------------------------------- independent oracles


def neighbour_lists(G: nx.Graph) -> tuple[dict[int, list[int]], dict[int, list[int]]]:
    """(in-neighbours, out-neighbours) of every vertex; both all neighbours on an undirected graph."""
    if G.is_directed():
        return {v: list(G.predecessors(v)) for v in G}, {v: list(G.successors(v)) for v in G}
    nb = {v: list(G.neighbors(v)) for v in G}
    return nb, nb


def ref_bfs(G: nx.Graph, root: int) -> dict[int, float]:
    depth = nx.single_source_shortest_path_length(G, root)
    return {v: depth.get(v, UNREACHED) for v in G}


def ref_cdlp(G: nx.Graph, iterations: int) -> dict[int, float]:
    """The specification's CDLP, synchronously: the most frequent label among the in- and out-
    neighbours (a neighbour linked both ways counted twice on a directed graph), ties to the
    smallest; a vertex without neighbours keeps its label."""
    inn, out = neighbour_lists(G)
    both = {v: inn[v] + out[v] if G.is_directed() else inn[v] for v in G}
    label = {v: v for v in G}
    for _ in range(iterations):
        new = {}
        for v in G:
            counts = Counter(label[u] for u in both[v])
            new[v] = min(counts, key=lambda x: (-counts[x], x)) if counts else label[v]
        label = new
    return label


def ref_lcc(G: nx.Graph) -> dict[int, float]:
    """The specification's LCC: N(v) = in- and out-neighbours as a set; the directed edges among N(v)
    over |N(v)|(|N(v)| - 1) (an undirected edge is two directed ones); 0 below two neighbours."""
    inn, out = neighbour_lists(G)
    arcs = set(G.edges) | ({(b, a) for a, b in G.edges} if not G.is_directed() else set())
    lcc = {}
    for v in G:
        nb = set(inn[v]) | set(out[v])
        k = len(nb)
        lcc[v] = sum((a, b) in arcs for a in nb for b in nb) / (k * (k - 1)) if k >= 2 else 0.0
    return lcc


RANDOM = [(seed, directed) for seed in (7, 8, 9) for directed in (False, True)]


@pytest.fixture(scope="module", params=RANDOM, ids=[f"seed{s}-{'dir' if d else 'undir'}" for s, d in RANDOM])
def rand(request):
    seed, directed = request.param
    return random_graph(seed, 260, directed=directed, weighted=True)


def _root(t) -> int:
    big = max(t.pieces, key=len)
    return big[len(big) // 3]


ORACLES: dict[str, Callable[[Any], tuple[dict[str, Any], dict[int, float]]]] = {
    "bfs": lambda t: ({"root": _root(t)}, ref_bfs(t.G, _root(t))),
    "sssp": lambda t: ({"root": _root(t)}, ref_sssp(t.G, _root(t))),
    "pr": lambda t: ({"iterations": 12, "damping": 0.85}, ref_pagerank_numpy(t.G, 12, 0.85)),
    "wcc": lambda t: ({}, ref_components(t.G)),
    "cdlp": lambda t: ({"iterations": 6}, ref_cdlp(t.G, 6)),
    "lcc": lambda t: ({}, ref_lcc(t.G)),
}


@pytest.mark.parametrize("kernel", KERNELS)
def test_random_graphs_against_oracles(rand, kernel):
    args, expected = ORACLES[kernel](rand)
    for opt in (0, 2):
        res = program(kernel, opt).run(rand.g, args)
        check(RULE[kernel], expected, result_values(res), f"{rand.g.name} {kernel} -O{opt}")


@pytest.mark.parametrize("kernel", ["lcc", "cdlp", "wcc"])
def test_dense_directed_graph_with_reciprocal_edges(kernel):
    """Many edges linked both ways and many triangles: where LCC's `Once` and CDLP's double count
    matter most (sparse IDs, and a few vertices left isolated)."""
    rng = np.random.default_rng(4)
    ids = np.sort(rng.choice(10**7, 45, replace=False))
    pairs = [(int(a), int(b)) for a in ids[:40] for b in ids[:40] if a != b and rng.random() < 0.2]
    G = nx.DiGraph()
    G.add_nodes_from(ids.tolist())
    G.add_edges_from(pairs)
    assert sum(G.has_edge(b, a) for a, b in G.edges) > 50
    g = from_edges([a for a, _ in pairs], [b for _, b in pairs], directed=True, ids=ids)
    args, expected = ORACLES[kernel](SimpleNamespace(G=G))  # these three oracles read only the graph
    for opt in (0, 2):
        check(RULE[kernel], expected, result_values(program(kernel, opt).run(g, args)), f"{kernel} -O{opt}")


def test_lcc_oracle_agrees_with_networkx():
    """The direct LCC of the specification is networkx's clustering on undirected graphs (a check
    of the oracle: networkx has no Graphalytics-style directed LCC)."""
    t = random_graph(5, 200)
    got, want = ref_lcc(t.G), nx.clustering(t.G)
    assert all(math.isclose(got[v], want[v], abs_tol=1e-12) for v in t.G)


def test_cdlp_counts_a_reciprocal_neighbour_twice():
    """On a directed graph a neighbour linked both ways weighs two: vertex 5 hears 7 twice (5 -> 7,
    7 -> 5) and 6 once, so it takes 7, where counting each neighbour once would tie to 6."""
    g = from_edges([5, 7, 6], [7, 5, 5], directed=True)
    res = program("cdlp", 2).run(g, {"iterations": 1})
    assert result_values(res) == {5: 7, 6: 5, 7: 5}


# --------------------------------------------------------------------------- bench/graphalytics.py


@pytest.fixture(scope="module")
def bench():
    """bench/graphalytics.py, whose python-graphblas CDLP and LCC are its own (the other kernels are
    bench/libraries.py's)."""
    pytest.importorskip("graphblas")
    sys.path.insert(0, str(ROOT / "bench"))
    import graphalytics

    return graphalytics


@pytest.mark.parametrize("directed", [False, True], ids=["undir", "dir"])
def test_bench_graphblas_kernels_against_oracles(bench, directed):
    t = random_graph(21, 200, directed=directed)
    lib = bench.graphblas_side(t.g)
    ids = t.g.ids.tolist()
    check("exact", ref_cdlp(t.G, 5), dict(zip(ids, lib.cdlp(5).tolist())), "graphblas cdlp")
    check("epsilon", ref_lcc(t.G), dict(zip(ids, lib.lcc().tolist())), "graphblas lcc")


@pytest.mark.parametrize("rule", ["exact", "epsilon", "equivalence"])
def test_bench_rules_agree_with_graphalytics_samples(bench, rule):
    base = FIXTURES / "matching"
    expected = read_values(base / f"{rule}_expected.csv")
    for sample, bad in (("actual1", 0), ("actual2", {"exact": 2, "epsilon": 5, "equivalence": 5}[rule])):
        actual = read_values(base / f"{rule}_{sample}.csv")
        keys = sorted(expected)
        e, a = (np.array([d[k] for k in keys]) for d in (expected, actual))
        assert bench.violations(rule, e, a) == bad, (rule, sample)
