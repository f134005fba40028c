"""The packed-key sorts of the graph build (g2pl/graph/sorts.py) against NumPy's lexsort and unique.

Random edge lists with int32 and int64 IDs, duplicates, self-loops and weights, directed and
undirected, every way of packing the transposition key, and chunks down to one entry: each result
must equal the plain lexicographic reference entry for entry (order and dtype included).
"""

from __future__ import annotations

import numpy as np
import pytest

from g2pl.graph import graph as gg
from g2pl.graph import sorts
from g2pl.graph.sorts import TargetKeys, by_target, row_pointers, sort_unique_pairs


def reference_pairs(a, b, w, undirected: bool, drop_loops: bool = True):
    """(src, dst, weight, loops) by np.lexsort and np.unique: the definition of the result."""
    a, b = a.astype(np.int64), b.astype(np.int64)
    if undirected:
        a, b = np.minimum(a, b), np.maximum(a, b)
    keep = a != b if drop_loops else np.ones(a.size, dtype=bool)
    loops = int(a.size - np.count_nonzero(keep))
    a, b = a[keep], b[keep]
    pairs, inverse = np.unique(np.stack([a, b], axis=1), axis=0, return_inverse=True)
    mins = None
    if w is not None:
        mins = np.full(len(pairs), np.inf)
        np.minimum.at(mins, inverse.ravel(), w[keep])
    order = np.lexsort((pairs[:, 1], pairs[:, 0]))
    assert np.array_equal(order, np.arange(len(pairs)))  # np.unique's rows are lexicographic already
    return pairs[:, 0], pairs[:, 1], mins, loops


def random_edges(rng, dtype, n: int, size: int):
    a = rng.integers(0, n, size).astype(dtype)
    b = rng.integers(0, n, size).astype(dtype)
    hub = rng.integers(0, n)
    b[: size // 4] = hub  # a high-degree vertex: long rows, many duplicates
    return a, b


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize("undirected", [False, True])
@pytest.mark.parametrize("weighted", [False, True])
def test_sort_unique_pairs_matches_unique(dtype, undirected, weighted):
    rng = np.random.default_rng(1 + 2 * undirected + weighted)
    for trial in range(40):
        n = int(rng.integers(1, 300))
        size = int(rng.integers(0, 1500))
        a, b = random_edges(rng, dtype, n, size)
        w = rng.integers(0, 9, size).astype(np.float64) if weighted else None
        a0, b0 = a.copy(), b.copy()
        got = sort_unique_pairs([a, b], n, w, undirected=undirected, chunk=int(rng.integers(1, 400)))
        want = reference_pairs(a0, b0, w, undirected)
        assert np.array_equal(a, a0) and np.array_equal(b, b0)  # inputs are read, never written
        assert got[0].dtype == got[1].dtype == np.dtype(dtype), trial
        assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1]), trial
        assert got[3] == want[3], trial
        if weighted:
            assert got[2] is not None and np.array_equal(got[2], want[2]), trial
        else:
            assert got[2] is None


def test_sort_unique_pairs_keeps_loops_when_asked_and_empties_its_list():
    rng = np.random.default_rng(5)
    a, b = random_edges(rng, np.int32, 20, 300)
    pair = [a, b]
    src, dst, _, loops = sort_unique_pairs(pair, 20, drop_loops=False)
    want = reference_pairs(a, b, None, False, drop_loops=False)
    assert pair == [] and loops == 0
    assert np.array_equal(src, want[0]) and np.array_equal(dst, want[1])
    assert np.any(src == dst)


def test_sort_unique_pairs_edge_cases():
    e = np.zeros(0, dtype=np.int32)
    src, dst, w, loops = sort_unique_pairs([e, e.copy()], 5, np.zeros(0))
    assert src.size == dst.size == 0 and src.dtype == np.int32 and w is not None and w.size == 0 and loops == 0
    only_loops = np.array([3, 3, 1], dtype=np.int64)
    src, dst, w, loops = sort_unique_pairs([only_loops, only_loops.copy()], 4, np.ones(3), undirected=True)
    assert src.size == 0 and loops == 3 and w is not None and w.size == 0


@pytest.mark.parametrize("undirected", [False, True])
def test_wide_ids_take_the_lexsort_path(undirected):
    """Above 2^31 vertices two IDs do not pack into an int64: the lexsort fallback, same results."""
    rng = np.random.default_rng(8)
    a, b = random_edges(rng, np.int64, 50, 400)
    w = rng.random(400)
    got = sort_unique_pairs([a.copy(), b.copy()], 1 << 40, w, undirected=undirected)
    want = sort_unique_pairs([a, b], 50, w, undirected=undirected)
    for x, y in zip(got, want, strict=True):
        assert np.array_equal(x, y)


@pytest.mark.parametrize("wide", [False, True])
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_by_target_is_the_stable_order_by_destination(wide, dtype):
    """The edge ids in (dst, src) order, decoded over the sorted keys, equal a lexsort; `wide`
    (more than 63 bits of key) takes the stable-argsort path."""
    rng = np.random.default_rng(3)
    for trial in range(30):
        n = int(rng.integers(1, 200))
        a, b = random_edges(rng, dtype, n, int(rng.integers(0, 1200)))
        src, dst, _, _ = sort_unique_pairs([a, b], n, undirected=bool(trial % 2))
        order = np.lexsort((src, dst))
        got = by_target(dst, 1 << 62 if wide else n, np.dtype(dtype), chunk=int(rng.integers(1, 100)))
        assert got.dtype == np.dtype(dtype) and got.flags.owndata, trial
        assert np.array_equal(got, order), trial


def test_row_pointers():
    rows = np.array([2, 0, 5, 2, 0, 2], dtype=np.int32)
    assert np.array_equal(row_pointers(rows, 7), [0, 2, 2, 5, 5, 5, 6, 6])
    assert row_pointers(rows, 7).dtype == np.int64
    assert np.array_equal(row_pointers(rows[:0], 3), [0, 0, 0, 0])


def test_target_keys_decode_sources_and_ids():
    rng = np.random.default_rng(4)
    for trial in range(30):
        n = int(rng.integers(1, 300))
        a, b = random_edges(rng, np.int32, n, int(rng.integers(0, 1500)))
        src, dst, _, _ = sort_unique_pairs([a, b], n, undirected=bool(trial % 2))
        order = np.lexsort((src, dst))
        keys = TargetKeys(src, dst, n, chunk=int(rng.integers(1, 100)))
        lo, hi = sorted(int(x) for x in rng.integers(0, src.size + 1, 2))
        assert np.array_equal(keys.eids(0, src.size, np.dtype(np.int64)), order), trial
        assert np.array_equal(keys.sources(lo, hi), src[order[lo:hi]]), trial
        assert keys.sources(lo, hi).dtype == np.int32 and keys.eids(lo, hi, np.dtype(np.int32)).dtype == np.int32
    assert TargetKeys.fits(1 << 20, 1 << 24) and not TargetKeys.fits(1 << 21, 1 << 24)


@pytest.mark.parametrize("directed", [False, True])
@pytest.mark.parametrize("keyed", [True, False])
def test_csr_matches_a_lexsorted_reference(monkeypatch, directed, keyed):
    """Both CSR directions equal sorting all (row, neighbour) entries, whatever the chunk length, from
    the uint64 keys or (graphs too large for them) from the edge ids and a gather of the sources."""
    if not keyed:
        monkeypatch.setattr(gg.TargetKeys, "fits", staticmethod(lambda n, m: False))
    rng = np.random.default_rng(21)
    for trial in range(60):
        n = int(rng.integers(1, 60))
        a, b = random_edges(rng, np.int32, n, int(rng.integers(0, 300)))
        src, dst, _, _ = sort_unique_pairs([a, b], n, undirected=not directed)
        monkeypatch.setattr(gg, "_CHUNK", int(rng.integers(1, 40)))
        in_ptr, in_nbr, in_eid, out_ptr, out_nbr, out_eid = gg._csr(src, dst, n, directed)
        eids = np.arange(src.size)
        if directed:
            parts = [(dst, src, eids, in_ptr, in_nbr, in_eid), (src, dst, eids, out_ptr, out_nbr, out_eid)]
        else:
            both = (np.concatenate([src, dst]), np.concatenate([dst, src]), np.concatenate([eids, eids]))
            parts = [(*both, in_ptr, in_nbr, in_eid)]
            assert out_nbr is in_nbr and out_eid is in_eid
        for rows, cols, ids, ptr, nbr, eid in parts:
            order = np.lexsort((cols, rows))
            assert np.array_equal(nbr, cols[order]) and np.array_equal(eid, ids[order]), trial
            assert np.array_equal(ptr, np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=n))])), trial
            assert nbr.dtype == np.int32 and eid.dtype == np.int32 and ptr.dtype == np.int64


@pytest.mark.parametrize("threads", [1, 2, 3, 5])
@pytest.mark.parametrize("dtype", [np.int64, np.uint64])
def test_sort_keys_on_threads_is_the_sort(monkeypatch, threads, dtype):
    """Shared among threads (partitioned at evenly spaced ranks, each stretch sorted by its own thread):
    the array `np.sort` gives, with many repeats, -1 keys (self-loops) and stretches of one key."""
    monkeypatch.setenv("G2PL_THREADS", str(threads))
    monkeypatch.setattr(sorts, "PARALLEL_SORT", 64)
    rng = np.random.default_rng(threads)
    for size in (0, 1, 31, 32, 33, 1000, 50_000):
        key = rng.integers(0, max(size // 3, 1), size).astype(dtype)
        if dtype == np.int64 and size:
            key[::7] = -1
        want = np.sort(key)
        sorts.sort_keys(key)
        assert np.array_equal(key, want), size
    key = np.full(10_000, 5, dtype)
    sorts.sort_keys(key)
    assert (key == 5).all()


def test_sort_keys_raises_what_a_thread_raised(monkeypatch):
    monkeypatch.setenv("G2PL_THREADS", "2")
    monkeypatch.setattr(sorts, "PARALLEL_SORT", 64)

    class Failing(np.ndarray):
        def sort(self, *a, **k):
            raise MemoryError("no room")

    key = np.arange(1000, dtype=np.int64)[::-1].copy().view(Failing)
    with pytest.raises(MemoryError, match="no room"):
        sorts.sort_keys(key)
