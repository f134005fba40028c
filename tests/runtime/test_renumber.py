"""The one-rank degree renumbering (runtime/partition.py, `whole_by_degree`) against a direct definition.

The view's vertex k is the graph's vertex order[k] (highest degree first, ties by ID); its CSR rows are
the graph's rows in that order, each row's entries in their order, neighbours renamed through the
inverse of `order`.  The oracle here builds exactly that row by row in Python.  Every check runs with
the compiled kernels off (G2PL_NUMBA=0: the chunked NumPy path, what a machine without numba runs) and,
where numba is installed, on; with tiny chunks, so rows longer than a chunk and chunks of many rows
both occur; on directed and undirected graphs, 32- and 64-bit indices, with isolated vertices.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from g2pl.graph import build_graph
from g2pl.graph import graph as graph_mod
from g2pl.runtime import cpu_kernels
from g2pl.runtime import partition as part

HAVE_NUMBA = importlib.util.find_spec("numba") is not None
ARRAYS = ("ids", "src", "dst", "in_indptr", "in_nbr", "in_eid", "out_indptr", "out_nbr", "out_eid")


@pytest.fixture(params=["arrays", "compiled"])
def kernels(request, monkeypatch) -> str:
    """Each test twice: the NumPy array paths (G2PL_NUMBA=0), then the compiled kernels."""
    if request.param == "compiled" and not HAVE_NUMBA:
        pytest.skip("numba not installed")
    monkeypatch.setenv("G2PL_NUMBA", "0" if request.param == "arrays" else "1")
    return request.param


def _graph(seed: int, directed: bool, wide: bool, monkeypatch):
    """A random graph with hubs (a few vertices on many edges), isolated vertices and sparse IDs."""
    rng = np.random.default_rng(seed)
    k = int(rng.integers(20, 80))
    ids = np.sort(rng.choice(10**9, size=k + 6, replace=False))
    e = int(rng.integers(k, 6 * k))
    hubs = rng.integers(0, 4, e)  # about half the edges touch one of four vertices
    a = np.where(rng.random(e) < 0.5, hubs, rng.integers(0, k, e))
    b = rng.integers(0, k, e)
    with monkeypatch.context() as mp:
        if wide:
            mp.setattr(graph_mod, "INDEX32_LIMIT", 8)
        g = build_graph(ids[a], ids[b], directed=directed, name=f"r{seed}", extra_ids=ids[k:])
    assert g.in_nbr.dtype == (np.int64 if wide else np.int32)
    assert np.count_nonzero(part._degrees(g) == 0) >= 6
    return g


def _direct_view(g) -> dict[str, np.ndarray]:
    """The degree view's arrays, row by row."""
    deg = part._degrees(g)
    order = np.lexsort((np.arange(g.n), -deg))
    local = np.empty(g.n, dtype=np.int64)
    local[order] = np.arange(g.n)
    vt = graph_mod.index_dtype(g.n)  # the view's vertex indices: as narrow as its size allows
    want: dict[str, np.ndarray] = {"ids": g.ids[order]}
    for side in ("in", "out"):
        ptr, nbr, eid = (getattr(g, f"{side}_{x}") for x in ("indptr", "nbr", "eid"))
        rows = [(ptr[r], ptr[r + 1]) for r in order]
        want[f"{side}_indptr"] = np.concatenate([[0], np.cumsum([b - a for a, b in rows])]).astype(np.int64)
        want[f"{side}_nbr"] = np.array([local[x] for a, b in rows for x in nbr[a:b]], dtype=vt)
        want[f"{side}_eid"] = np.array([x for a, b in rows for x in eid[a:b]], dtype=eid.dtype)
    want["src"], want["dst"] = local[g.src].astype(vt), local[g.dst].astype(vt)
    return want


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("directed", [False, True])
@pytest.mark.parametrize("wide", [False, True])
def test_degree_view_is_the_direct_renumbering(kernels, monkeypatch, seed, directed, wide):
    ref = _graph(seed, directed, wide, monkeypatch)
    g = _graph(seed, directed, wide, monkeypatch)
    want = _direct_view(ref)
    monkeypatch.setattr(part, "_CHUNK", 5)  # many chunks, and rows longer than one
    monkeypatch.setenv("G2PL_THREADS", str(1 + seed))  # the compiled copy on 1, 2 and 3 threads
    mapped = set()  # the compiled row copies made: with a table (mapped) and without
    real = cpu_kernels.take_rows
    monkeypatch.setattr(cpu_kernels, "take_rows", lambda *a: mapped.add(a[4] is not None) or real(*a))
    view = part.whole_by_degree(g)
    for k in ARRAYS:
        a, b = want[k], getattr(view, k)
        assert a.dtype == b.dtype and np.array_equal(a, b), k
    for k in ARRAYS:  # the graph's own arrays, handed over to the view, rebuild exactly
        a, b = getattr(ref, k), getattr(g, k)
        assert a.dtype == b.dtype and np.array_equal(a, b), k
    if kernels == "compiled":
        key = "jit:_take_rows" + (":parallel" if seed else "")
        assert mapped == {True, False} and key in cpu_kernels._state


@pytest.mark.parametrize("seed", range(4))
def test_rows_taken_paths_agree(kernels, monkeypatch, seed):
    """`_rows_taken` on random CSRs with empty rows, in a random order, plain and through a table."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 60))
    lens = rng.integers(0, 12, n) * (rng.random(n) < 0.7)
    old_ptr = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
    order = rng.permutation(n).astype(rng.choice([np.int32, np.int64]))
    new_ptr = np.concatenate([[0], np.cumsum(lens[order])]).astype(np.int64)
    arr = rng.integers(0, 40, int(old_ptr[-1])).astype(np.int32)
    table = rng.integers(0, 10**6, 40)
    monkeypatch.setattr(part, "_CHUNK", int(rng.integers(1, 9)))
    rows = [arr[old_ptr[r]:old_ptr[r + 1]] for r in order]
    want = np.concatenate(rows) if rows else arr[:0]
    got = part._rows_taken(old_ptr, new_ptr, order, arr)
    assert got.dtype == arr.dtype and np.array_equal(got, want)
    got = part._rows_taken(old_ptr, new_ptr, order, arr, table)
    assert got.dtype == table.dtype and np.array_equal(got, table[want])


@pytest.mark.parametrize("seed", range(4))
def test_degree_order_is_the_lexsort(monkeypatch, seed):
    """Highest degree first, ties by position: the packed-key sort equals `lexsort`, also in a block."""
    rng = np.random.default_rng(seed)
    g = _graph(seed, bool(seed % 2), False, monkeypatch)
    deg = part._degrees(g)
    assert np.array_equal(part._degree_order(g, 0, g.n), np.lexsort((np.arange(g.n), -deg)))
    lo = int(rng.integers(0, g.n))
    hi = int(rng.integers(lo, g.n + 1))
    got = part._degree_order(g, lo, hi)
    assert got.dtype == np.int64 and np.array_equal(got, np.lexsort((np.arange(hi - lo), -deg[lo:hi])))
