"""A sender's value plus an edge value, combined by min or max (`Spec.plus_edge`: Bellman-Ford's
relaxation, the min-plus semiring): the compiler marks the exchange, and the compiled pass per row
(kernels.plus_edge_reduce) gives what the head's array evaluation gives: shortest paths against SciPy's
Dijkstra, and the same values, supersteps and messages with the compiled kernels off and on, on random
graphs with sparse IDs and several components, directed and undirected, on 1 to 3 ranks.
"""

from __future__ import annotations

import importlib.util
import math

import numpy as np
import pytest
from oracles import random_graph
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import dijkstra
from thread_comm import run_program

import g2pl
from g2pl.runtime import kernels

HAVE_NUMBA = importlib.util.find_spec("numba") is not None
needs_numba = pytest.mark.skipif(not HAVE_NUMBA, reason="numba not installed (the optional `fast` extra)")

SSSP = """
sssp(root: vid) {
  Dist = { (id == root) ? 0.0 : inf | v <- V };
  Active = { id == root | v <- V };
  while (Active != empty) {
    Cand = { min [ d + Weight[e] | (d, e) <- nvals v, d in Active ] | v <- Dist };
    Active = { c < Dist[c] | c <- Cand };
    Dist = { min(c, Dist[c]) | c <- Cand };
  }
  return Dist;
}
"""

# every form: the edge value first, max, integers, no send condition (every entry), an edge variable, the
# out-neighbours and the union of both; NaN and infinite values reach some rows, others have no entries
FORMS = """
forms() {
  X = { (id % 7 == 0) ? 0.0 / 0.0 : ((id % 5 == 0) ? -inf : float(id % 13)) | v <- V };
  K = { int(id) % 11 - 5 | v <- V };
  P = { id % 3 != 0 | v <- V };
  H = { int(u) % 3 - 1 | (u, v) <- E };
  A = { min [ Weight[e] + x | (x, e) <- nvals v ] | v <- X };
  B = { max [ x + Weight[e] | (x, e) <- nvals v, x in P ] | v <- X };
  C = { min [ k + H[e] | (k, e) <- outnvals v ] | v <- K };
  D = { max [ k + H[e] | (k, e) <- allnvals v ] | v <- K };
  return A, B, C, D;
}
"""


def test_the_compiler_marks_a_field_plus_an_edge_value():
    """Marked: min or max of an arrived field plus an edge value, unfiltered (a send condition is the
    senders'); not: another operator, a filter the receiver evaluates, or a sum."""
    def spec_line(body: str) -> str:
        src = f"f() {{\n  X = {{ float(id) | v <- V }};\n  R = {body};\n  return R;\n}}\n"
        return next(x for x in g2pl.compile(src).python().splitlines() if " = Spec(" in x and "'nbr'" in x)

    assert "plus_edge=0" in spec_line("{ min [ x + Weight[e] | (x, e) <- nvals v ] | v <- X }")
    assert "plus_edge=0" in spec_line("{ max [ Weight[e] + x | (x, e) <- nvals v, x > 1.0 ] | v <- X }")
    for body in ("{ min [ x - Weight[e] | (x, e) <- nvals v ] | v <- X }",
                 "{ sum [ x + Weight[e] | (x, e) <- nvals v ] | v <- X }",
                 "{ min [ x + Weight[e] | (x, e) <- nvals v, Weight[e] > 2.0 ] | v <- X }",
                 "{ min [ x + X[v] | x <- nvals v ] | v <- X }"):
        assert "plus_edge" not in spec_line(body), body
    code = g2pl.compile(SSSP).python()
    assert "edge=rt.weight)" in code


@needs_numba
@pytest.mark.parametrize("seed", [1, 4])
@pytest.mark.parametrize("threads", [1, 2])
def test_the_kernel_against_a_direct_computation(monkeypatch, seed, threads):
    monkeypatch.setenv("G2PL_NUMBA", "1")
    monkeypatch.setenv("G2PL_THREADS", str(threads))
    rng = np.random.default_rng(seed)
    n, m = 300, 2000
    rows = np.sort(rng.integers(0, n, m))  # some rows get no entry
    indptr = np.searchsorted(rows, np.arange(n + 1)).astype(np.int64)
    nbr = rng.integers(0, n + 40, m)  # ghosts beyond the owned rows
    eid = rng.permutation(m)
    x = rng.random(n + 40)
    x[rng.integers(0, n + 40, 15)] = np.nan
    x[rng.integers(0, n + 40, 15)] = np.inf
    w = rng.random(m)
    sent = rng.random(n + 40) < 0.6
    for op, elem in (("min", "float"), ("max", "float"), ("min", "int"), ("max", "int")):
        xs = x if elem == "float" else rng.integers(-50, 50, n + 40)
        ws = w if elem == "float" else rng.integers(-9, 9, m)
        for s, e in ((sent, eid), (None, None), (sent, None)):
            got = kernels.plus_edge_reduce(op, indptr, nbr, xs, s, ws, e, elem)
            assert got is not None
            for r in range(n):
                ks = [k for k in range(indptr[r], indptr[r + 1]) if s is None or s[nbr[k]]]
                vals = [xs[nbr[k]] + ws[k if e is None else e[k]] for k in ks]
                if not vals:
                    want = {"float": math.inf if op == "min" else -math.inf,
                            "int": 2**63 - 1 if op == "min" else -2**63}[elem]
                elif any(v != v for v in vals):
                    want = math.nan
                else:
                    want = min(vals) if op == "min" else max(vals)
                assert got[r] == want or (want != want and got[r] != got[r]), (op, elem, r)


def _scipy_sssp(g, root_index: int) -> np.ndarray:
    keep = g.src != g.dst
    A = coo_matrix((g.weight[keep], (g.src[keep], g.dst[keep])), shape=(g.n, g.n)).tocsr()
    return dijkstra(A, directed=g.directed, indices=root_index)


@pytest.mark.parametrize("directed", [False, True], ids=["undirected", "directed"])
@pytest.mark.parametrize("numba", ["0", "1"])
def test_sssp_against_scipy(monkeypatch, directed, numba):
    if numba == "1" and not HAVE_NUMBA:
        pytest.skip("numba not installed")
    monkeypatch.setenv("G2PL_NUMBA", numba)
    t = random_graph(9, 600, directed=directed, weighted=True)
    g = t.g
    root = int(np.argmax(np.bincount(g.src, minlength=g.n)))
    want = _scipy_sssp(g, root)
    for opt in (0, 2):
        r = g2pl.compile(SSSP, opt=opt).run(g, {"root": int(g.ids[root])})
        assert np.array_equal(r.array("Dist", g), want)


@needs_numba
@pytest.mark.parametrize("directed", [False, True], ids=["undirected", "directed"])
def test_same_answers_with_the_kernel_off_and_on_on_any_rank_count(monkeypatch, directed):
    monkeypatch.setenv("G2PL_THREADS", "1")  # (ranks are threads here: one numba thread pool)
    t = random_graph(17, 500, directed=directed, weighted=True)
    g = t.g
    root = int(g.ids[int(np.argmax(np.bincount(g.src, minlength=g.n)))])
    runs = []
    for flag in ("0", "1"):
        monkeypatch.setenv("G2PL_NUMBA", flag)
        for src, args in ((SSSP, {"root": root}), (FORMS, {})):
            prog = g2pl.compile(src)
            for size in (1, 2, 3):
                r = prog.run(g, args) if size == 1 else run_program(prog, g, size, args)
                runs.append((flag, src, size, r.output()["values"], r.stats["supersteps"], r.stats["messages"]))
    assert [x[2:] for x in runs if x[0] == "0"] == [x[2:] for x in runs if x[0] == "1"]
    for src in (SSSP, FORMS):  # every rank count gives one rank's values
        assert len({repr(x[3]) for x in runs if x[1] == src}) == 1


@needs_numba
@pytest.mark.parametrize("op", ["min", "max"])
@pytest.mark.parametrize("elem", ["float", "int"])
def test_the_push_kernel_scatters_as_the_array_path(monkeypatch, op, elem):
    """kernels.push_plus_edge against the pushed entries' array path (the head's values, then
    scatter_reduce): the same bits, NaN, infinities, zeros of both signs and ties included, and the
    empty value where no entry arrives."""
    from g2pl.runtime import array_kernels as AK

    monkeypatch.setenv("G2PL_NUMBA", "1")
    rng = np.random.default_rng(3 + (op == "max") + 2 * (elem == "int"))
    n_ext, n, edges = 300, 200, 900
    lens = rng.integers(0, 8, n_ext)
    indptr = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
    recv = rng.integers(0, n, int(indptr[-1])).astype(np.int32)
    eid = rng.integers(0, edges, int(indptr[-1]))
    if elem == "float":
        # mostly zeros of both signs: a receiver's least value is often a tie of +0 and -0, which only
        # the order of the updates decides
        x = rng.choice([0.0, -0.0, 1.0, -1.0, np.nan, np.inf], n_ext, p=[0.4, 0.4, 0.08, 0.08, 0.02, 0.02])
        w = rng.choice([0.0, -0.0, 1.0, -np.inf], edges, p=[0.45, 0.45, 0.08, 0.02])
    else:
        x = rng.integers(-2**62, 2**62, n_ext)  # sums wrap around as int64's do
        w = rng.integers(-2**62, 2**62, edges)
    senders = np.flatnonzero(rng.random(n_ext) < 0.5)
    got = kernels.push_plus_edge(op, indptr, recv, eid, senders, x, w, n, elem)
    pos = kernels.expand_ranges(indptr[senders], lens[senders])
    with np.errstate(over="ignore", invalid="ignore"):
        vals = x[np.repeat(senders, lens[senders])] + w[eid[pos]]
    with np.errstate(invalid="ignore"):  # (NaN against NaN)
        want = AK.scatter_reduce(kernels._OPS, op, recv[pos], vals, None, n, elem)
    assert got is not None and got.dtype == want.dtype
    assert np.array_equal(got.view(np.int64), want.view(np.int64))


@needs_numba
def test_sssp_pushes_by_the_kernel(monkeypatch):
    """A Bellman-Ford run pushes its sparse rounds through push_plus_edge (none left to the array path)."""
    monkeypatch.setenv("G2PL_NUMBA", "1")
    calls = []
    real = kernels.push_plus_edge
    monkeypatch.setattr(kernels, "push_plus_edge", lambda *a: calls.append(a[0]) or real(*a))
    from g2pl.runtime import numpy_backend
    monkeypatch.setattr(numpy_backend.NumPyBackend, "push_plus_edge", staticmethod(kernels.push_plus_edge))
    t = random_graph(21, 800, directed=False, weighted=True)
    g = t.g
    root = int(np.argmax(np.bincount(g.src, minlength=g.n)))
    r = g2pl.compile(SSSP).run(g, {"root": int(g.ids[root])})
    assert calls and set(calls) == {"min"}
    assert np.array_equal(r.array("Dist", g), _scipy_sssp(g, root))
