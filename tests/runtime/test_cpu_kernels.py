"""The compiled CPU kernels (g2pl/runtime/cpu_kernels.py) and the NumPy paths they stand in for: both
give the same answers, checked against direct computations and against networkx and SciPy through
programs/triangles.g2pl and programs/mst.g2pl, on random graphs with sparse IDs and several components.

Every check runs with the kernels turned off (G2PL_NUMBA=0: the array-operation paths, what a machine
without numba runs) and, where numba is installed, on; the kernels themselves are skipped without it.
"""

from __future__ import annotations

import importlib.util
import itertools
import sys
from pathlib import Path
from types import SimpleNamespace

import networkx as nx
import numpy as np
import pytest
from oracles import random_graph
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import minimum_spanning_tree

import g2pl
from g2pl.runtime import cpu_kernels
from g2pl.runtime.common_neighbours import Common
from g2pl.runtime.keyed import Keyed
from g2pl.runtime.numpy_backend import NumPyBackend

PROGRAMS = Path(__file__).resolve().parents[2] / "programs"
HAVE_NUMBA = importlib.util.find_spec("numba") is not None  # installed (whatever G2PL_NUMBA says)
needs_numba = pytest.mark.skipif(not HAVE_NUMBA, reason="numba not installed (the optional `fast` extra)")


@pytest.fixture(params=["arrays", "compiled"])
def kernels(request, monkeypatch) -> str:
    """Each test twice: the NumPy array paths (G2PL_NUMBA=0), then the compiled kernels."""
    if request.param == "compiled" and not HAVE_NUMBA:
        pytest.skip("numba not installed")
    monkeypatch.setenv("G2PL_NUMBA", "0" if request.param == "arrays" else "1")
    assert cpu_kernels.available() == (request.param == "compiled")
    return request.param


def _oriented(rng: np.random.Generator, n: int, m: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A random simple graph as a CSR of its edges oriented from lower to higher vertex: (indptr, lo, hi)."""
    a, b = rng.integers(0, n, size=(2, m))
    keep = a != b
    lo, hi = np.minimum(a, b)[keep], np.maximum(a, b)[keep]
    code = np.unique(lo * n + hi)
    lo, hi = code // n, code % n
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(lo, minlength=n), out=indptr[1:])
    return indptr, lo, hi


def _brute(lo: np.ndarray, hi: np.ndarray) -> set[tuple[int, int, int]]:
    """Positions (ab, ac, bc) of every triangle a < b < c, from the edge list alone."""
    at = {(int(x), int(y)): k for k, (x, y) in enumerate(zip(lo, hi))}
    out = set()
    for (a, b), k in at.items():
        for (x, c), k2 in at.items():
            if x == a and c > b and (b, c) in at:
                out.add((k, k2, at[(b, c)]))
    return out


@pytest.mark.parametrize("seed", range(4))
def test_oriented_triangles_against_a_direct_listing(kernels, seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 60))
    indptr, lo, hi = _oriented(rng, n, int(rng.integers(0, 4 * n)))
    want = _brute(lo, hi)
    bk = NumPyBackend()
    common = Common(bk, None, None, None, None)
    got = bk.oriented_triangles(indptr, hi, False)
    if got is None:
        got = common._hashed(indptr, lo, hi, False)
    assert set(zip(*(x.tolist() for x in got))) == want
    counts = bk.oriented_triangles(indptr, hi, True)
    if counts is None:
        counts = common._hashed(indptr, lo, hi, True)
    per = np.zeros(len(lo), dtype=np.int64)
    for t in want:
        per[list(t)] += 1
    assert counts.tolist() == per.tolist()


def _argmin_ref(lp, v, ix, t1, t2, n) -> tuple[list[int], list[int]]:
    best: dict[int, tuple] = {}
    for j, i in itertools.product(range(lp.shape[0]), range(lp.shape[1])):
        r = int(lp[j, i])
        if r >= 0:
            key = (v[i], t1[ix[i]], t2[ix[i]], i)
            best[r] = min(best.get(r, key), key)
    rows = sorted(best)
    return rows, [best[r][3] for r in rows]


@pytest.mark.parametrize("dtype", [np.float64, np.int64])
@pytest.mark.parametrize("seed", range(3))
def test_scatter_argmin_against_a_direct_minimum(kernels, dtype, seed):
    """Per row, the least (value, t1, t2, entry): values and tie keys drawn from few values, so ties
    at every level; an element may sit at a row under two keys."""
    rng = np.random.default_rng(seed)
    n, L, D = 30, 400, 500
    lp = rng.integers(-1, n, size=(2, L))
    lp[1, ::7] = lp[0, ::7]
    v = rng.integers(0, 4, size=L).astype(dtype)
    ix = rng.permutation(D)[:L].astype(np.int64)
    t1, t2 = rng.integers(0, 3, size=(2, D)).astype(np.int64)
    keyed = Keyed(NumPyBackend(), SimpleNamespace(n=n), None, None)
    rows, win = keyed._scatter_winners("argmin", lp, v, ix, t1, t2)
    assert (list(rows), list(win)) == _argmin_ref(lp, v, ix, t1, t2, n)
    rows, win = keyed._scatter_winners("argmax", lp, v, ix, t1, t2)  # the greatest value, same tie rule
    neg = -v if dtype == np.float64 else ~v
    assert (list(rows), list(win)) == _argmin_ref(lp, neg, ix, t1, t2, n)


# ------------------------------------------------------------ the programs against networkx and SciPy


@pytest.fixture(scope="module")
def progs() -> dict[tuple[str, int], g2pl.Program]:
    return {(name, o): g2pl.compile_file(PROGRAMS / f"{name}.g2pl", opt=o)
            for name in ("triangles", "mst") for o in (0, 1, 2)}


@pytest.mark.parametrize("seed", [3, 8])
def test_triangles_against_networkx(kernels, progs, seed):
    t = random_graph(seed, 400, shapes=("dense", "clique", "sparse", "cycle"))
    G = t.G
    per_vertex = nx.triangles(G)
    for o in (0, 1, 2):
        r = progs[("triangles", o)].run(t.g)
        assert int(r["total"]) == sum(per_vertex.values()) // 3
        T = r.array("T", t.g)
        assert dict(zip(t.g.ids.tolist(), T.tolist())) == per_vertex


@pytest.mark.parametrize("seed", [5, 13])
def test_mst_against_scipy(kernels, progs, seed):
    """The forest's weight is SciPy's; the edge set is the one the tie rule (the smaller (u, v)) defines,
    the same at every level."""
    t = random_graph(seed, 500, weighted=True)
    g = t.g
    ref = minimum_spanning_tree(coo_matrix((g.weight, (g.src, g.dst)), shape=(g.n, g.n)).tocsr())
    trees = []
    for o in (0, 1, 2):
        r = progs[("mst", o)].run(g, {})
        assert float(r["weight"]) == pytest.approx(float(ref.sum()), rel=1e-12)
        tree = r.array("Tree", g)
        assert int(tree.sum()) == g.n - nx.number_connected_components(t.G)
        trees.append(tree.tolist())
    assert trees[0] == trees[1] == trees[2]


def test_same_answers_with_and_without_the_kernels(progs, monkeypatch):
    """Values, supersteps and messages are the same either way (the kernels only compute faster)."""
    if not HAVE_NUMBA:
        pytest.skip("numba not installed")
    t = random_graph(21, 600, weighted=True)
    for name in ("triangles", "mst"):
        outs = []
        for flag in ("0", "1"):
            monkeypatch.setenv("G2PL_NUMBA", flag)
            r = progs[(name, 2)].run(t.g, {})
            outs.append((r.output()["values"], r.stats["supersteps"], r.stats["messages"]))
        assert outs[0] == outs[1], name


def test_without_numba_the_array_paths_serve(monkeypatch):
    """numba absent (its import fails): no kernel is offered, whatever G2PL_NUMBA says, and the programs
    still give networkx's answers."""
    monkeypatch.setitem(sys.modules, "numba", None)  # `import numba` raises ImportError
    monkeypatch.setattr(cpu_kernels, "_state", {})
    monkeypatch.setenv("G2PL_NUMBA", "1")
    assert not cpu_kernels.available() and not cpu_kernels.use(1 << 40)
    bk = NumPyBackend()
    assert bk.oriented_triangles(np.array([0, 2, 3, 3]), np.array([1, 2, 2]), True) is None
    assert bk.scatter_argmin(np.zeros((1, 2), dtype=np.int64), np.ones(2), np.arange(2), np.arange(2),
                             np.arange(2), 1) is None
    t = random_graph(4, 200)
    r = g2pl.compile_file(PROGRAMS / "triangles.g2pl").run(t.g)
    assert int(r["total"]) == sum(nx.triangles(t.G).values()) // 3


@needs_numba
def test_auto_mode_loads_the_kernels_only_for_large_work(monkeypatch):
    """Unset G2PL_NUMBA: small work keeps the array paths until some kernel is loaded in the process."""
    monkeypatch.delenv("G2PL_NUMBA", raising=False)
    monkeypatch.setattr(cpu_kernels, "_state", {})
    assert not cpu_kernels.use(10) and cpu_kernels.use(cpu_kernels.AUTO_WORK)
    cpu_kernels.oriented_triangles(np.array([0, 2, 3, 3]), np.array([1, 2, 2]), True)  # loads one
    assert cpu_kernels.use(10)
    monkeypatch.setenv("G2PL_NUMBA", "0")
    assert not cpu_kernels.use(1 << 40)


# ------------------------------------------------------------ threads


@needs_numba
@pytest.mark.parametrize("seed", range(3))
def test_compiled_any_pull_on_any_thread_count(monkeypatch, seed):
    """The compiled early-exit pull gives the rounds' answer on 1-4 threads, over all rows or some; with
    a budget it declines exactly when reading each row up to its first hit exceeds the budget."""
    from g2pl.runtime import kernels as K

    monkeypatch.setenv("G2PL_NUMBA", "1")
    assert cpu_kernels.available()
    rng = np.random.default_rng(seed)
    n = 2000
    lens = np.minimum(rng.zipf(1.7, n), 500)
    lens[rng.choice(n, 200, replace=False)] = 0
    indptr = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
    nbr = rng.integers(0, n, int(indptr[-1])).astype(np.int32)
    seg = K.Segments(indptr)
    for frac in (0.0, 0.02, 0.5):
        x = rng.random(n) < frac
        want = np.array([x[nbr[indptr[r]:indptr[r + 1]]].any() for r in range(n)])
        hits = [np.flatnonzero(x[nbr[indptr[r]:indptr[r + 1]]]) for r in range(n)]
        reads = sum(int(h[0]) + 1 if len(h) else int(lens[r]) for r, h in enumerate(hits))
        some = np.sort(rng.choice(n, n // 3, replace=False))
        for t in (1, 2, 3, 4):
            assert np.array_equal(K._any_pull_compiled(seg, nbr, x, None, None, t), want)
            got = K._any_pull_compiled(seg, nbr, x, None, some, t)
            assert np.array_equal(np.flatnonzero(got), some[want[some]])
            assert np.array_equal(K._any_pull_compiled(seg, nbr, x, reads, None, t), want)
            assert K._any_pull_compiled(seg, nbr, x, reads - 1, None, t) is None
        assert np.array_equal(K.any_pull(seg, nbr, x), want)  # (G2PL_NUMBA=1: the compiled pass)


@needs_numba
def test_bfs_pagerank_cc_have_the_same_bits_on_any_thread_count(monkeypatch):
    """The compiled row kernels shared among threads change no answer: BFS levels, PageRank's floats and
    CC labels (with supersteps and messages) on 1, 2 and 3 threads and without numba."""
    t = random_graph(17, 3000, shapes=("dense", "clique", "sparse", "cycle"))
    root = int(t.g.ids[0])
    runs = {"bfs": {"root": root}, "pagerank": {"iters": 10, "damping": 0.85}, "cc": {}}
    progs = {name: g2pl.compile_file(PROGRAMS / f"{name}.g2pl") for name in runs}
    outs: dict[str, list] = {name: [] for name in runs}
    for numba_flag, threads in (("0", "1"), ("1", "1"), ("1", "2"), ("1", "3")):
        monkeypatch.setenv("G2PL_NUMBA", numba_flag)
        monkeypatch.setenv("G2PL_THREADS", threads)
        for name, args in runs.items():
            r = progs[name].run(t.g, args)
            bits = {}
            for k, kind, _ in r.kinds():
                a = np.asarray(r.array(k, t.g) if kind == "vertex" else r[k])
                bits[k] = (a.view(np.int64) if a.dtype == np.float64 else a).tolist()
            outs[name].append((bits, r.stats["supersteps"], r.stats["messages"]))
    for name, got in outs.items():
        assert all(g == got[0] for g in got[1:]), name
