"""Reductions over column blocks (g2pl/runtime/column_blocks.py): the same bits as the row-at-a-time
kernels for sums, minima and maxima, a refusal where rows are not in the senders' ID order (and on
several threads), and every shipped program giving the same answers with the blocks as without, on
one rank and on three, with blocks small enough to engage on a test graph."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from program_args import program_args
from test_grid import _graph, _raise_any
from thread_comm import PartialsComm, ThreadComm, run_ranks

import g2pl
from g2pl.runtime import column_blocks as CB
from g2pl.runtime import cpu_kernels
from g2pl.runtime import kernels as K
from g2pl.runtime.ingest import DistributedGraph
from g2pl.runtime.numpy_backend import NumPyBackend
from g2pl.runtime.partition import partition

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(not cpu_kernels.available(), reason="numba not installed")


@pytest.fixture
def small_blocks(monkeypatch):
    """Blocks of 8 columns, built on the first reduction, numba used whatever the size, one thread."""
    monkeypatch.setattr(CB, "BLOCK_BITS", 3)
    monkeypatch.setattr(CB, "BUILD_AFTER", 0)
    monkeypatch.setattr(CB, "TABLE_BYTES", 0)
    monkeypatch.setenv("G2PL_NUMBA", "1")
    monkeypatch.setenv("G2PL_THREADS", "1")


def _csr(seed: int, rows: int = 400, cols: int = 300):
    """A random CSR whose rows are in the order of `order` (distinct, non-contiguous IDs of the
    columns, not ascending), with empty rows, one long row and repeated columns."""
    rng = np.random.default_rng(seed)
    order = rng.choice(10**9, cols, replace=False)
    by_id = np.argsort(order, kind="stable")  # columns in ID order
    lens = rng.integers(0, 30, rows)
    lens[rng.choice(rows, 40, replace=False)] = 0
    lens[5] = 900
    indptr = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
    cols_ = np.concatenate([by_id[np.sort(rng.integers(0, cols, k))] for k in lens]).astype(np.int32)
    return indptr, cols_, order, rng


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and np.array_equal(a.view(np.uint8), b.view(np.uint8))


def test_sums_have_the_row_kernels_bits(small_blocks):
    indptr, cols, order, rng = _csr(1)
    x = rng.standard_normal(len(order)) * 10.0 ** rng.integers(-12, 12, len(order))
    x[[3, 4, 5, 6]] = [np.inf, -0.0, 0.0, np.nan]
    blocks = CB.ColumnBlocks(indptr, cols, order)
    got = blocks.reduce("sum", x)
    assert got is not None and blocks._built is not None
    assert _same(got, K.row_reduce("sum", indptr, cols, x, nthreads=1))
    xi = rng.integers(-2**62, 2**62, len(order))  # int64 sums wrap around
    with np.errstate(over="ignore"):
        assert _same(blocks.reduce("sum", xi), K.row_reduce("sum", indptr, cols, xi, nthreads=1))


def test_float32_sums_are_float64_sums_of_the_same_values(small_blocks):
    """A narrowed message's 4-byte table (`float32(...)`): summed in float64, the row kernel's bits over
    the widened values."""
    indptr, cols, order, rng = _csr(3)
    x = (rng.standard_normal(len(order)) * 10.0 ** rng.integers(-30, 30, len(order))).astype(np.float32)
    x[[5, 6, 7]] = [np.inf, -0.0, np.float32(1e-45)]
    got = CB.ColumnBlocks(indptr, cols, order).reduce("sum", x)
    want = K.row_reduce("sum", indptr, cols, x.astype(np.float64), nthreads=1)
    assert got is not None and _same(got, want)
    assert math.isinf(got.max()) or np.isfinite(got).all()


@pytest.mark.parametrize("op", ["min", "max"])
@pytest.mark.parametrize("dt", [np.int32, np.int64, np.float64])
def test_min_max_have_the_row_kernels_bits(small_blocks, op, dt):
    indptr, cols, order, rng = _csr(2)
    x = rng.integers(-50, 50, len(order)).astype(dt)  # many ties
    if dt == np.float64:
        x[rng.choice(len(order), 30, replace=False)] = -0.0
        x[rng.choice(len(order), 30, replace=False)] = 0.0
        x[[7, 8, 9]] = [np.nan, -np.inf, np.inf]
    blocks = CB.ColumnBlocks(indptr, cols, order)
    got = blocks.reduce(op, x, 12345)
    want = K.row_reduce(op, indptr, cols, x, 12345, nthreads=1)
    assert got is not None and _same(got, want)  # NaN where a row reads one, the fill where it is empty


def test_blocks_wait_then_build_once(monkeypatch):
    monkeypatch.setattr(CB, "BLOCK_BITS", 3)
    monkeypatch.setattr(CB, "TABLE_BYTES", 0)
    monkeypatch.setenv("G2PL_NUMBA", "1")
    monkeypatch.setenv("G2PL_THREADS", "1")
    indptr, cols, order, rng = _csr(3)
    blocks = CB.ColumnBlocks(indptr, cols, order)
    x = rng.random(len(order))
    for _ in range(CB.BUILD_AFTER):  # the row kernel serves the first few
        assert blocks.reduce("sum", x) is None
    assert blocks.reduce("sum", x) is not None
    built = blocks._built
    assert blocks.reduce("max", x) is not None and blocks._built is built


def test_blocks_no_faster_than_the_row_kernel_are_dropped(monkeypatch):
    """The row kernel's one-thread passes during the wait are timed (through row_reduce); the first
    TRIALS reductions by blocks are kept only if faster, else the blocks go and the row kernel serves."""
    monkeypatch.setattr(CB, "BLOCK_BITS", 3)
    monkeypatch.setattr(CB, "TABLE_BYTES", 0)
    monkeypatch.setenv("G2PL_NUMBA", "1")
    indptr, cols, order, rng = _csr(3)
    x = rng.random(len(order))
    want = K.row_reduce("sum", indptr, cols, x, nthreads=1)
    for rows_best, kept in ((math.inf, True), (0.0, False)):
        blocks = CB.ColumnBlocks(indptr, cols, order)
        for _ in range(CB.BUILD_AFTER):  # served by the row kernel, each pass timed
            assert _same(K.row_reduce("sum", indptr, cols, x, nthreads=1, blocks=blocks), want)
        assert 0 < blocks.rows_best < math.inf
        blocks.rows_best = rows_best  # (a row kernel that never loses, or always does)
        for _ in range(CB.TRIALS):
            assert _same(blocks.reduce("sum", x, nthreads=1), want)
        assert blocks.usable is kept and (blocks._built is not None) is kept
        assert (blocks.reduce("sum", x, nthreads=1) is not None) is kept
        assert _same(K.row_reduce("sum", indptr, cols, x, nthreads=1, blocks=blocks), want)
    blocks = CB.ColumnBlocks(indptr, cols, order)
    K.row_reduce("sum", indptr, cols, x, nthreads=2, blocks=blocks)
    assert blocks.rows_best == math.inf  # two threads' time is not what blocks (one thread) must beat


def test_blocks_decline(small_blocks, monkeypatch):
    indptr, cols, order, rng = _csr(4)
    x = rng.random(len(order))
    shuffled = cols.copy()
    row = slice(int(indptr[5]), int(indptr[6]))  # the long row, out of ID order
    shuffled[row] = rng.permutation(shuffled[row])
    blocks = CB.ColumnBlocks(indptr, shuffled, order)
    assert blocks.reduce("sum", x) is None and not blocks.usable
    assert CB.ColumnBlocks(indptr, cols, order[:16]).reduce("sum", x[:16]) is None  # too few columns
    assert CB.ColumnBlocks(indptr, cols, order).reduce("argmin", x) is None
    assert CB.ColumnBlocks(indptr, cols, order).reduce("sum", x, nthreads=2) is None  # (the row kernel's threads)
    monkeypatch.setattr(CB, "TABLE_BYTES", x.nbytes)
    assert CB.ColumnBlocks(indptr, cols, order).reduce("sum", x) is None  # a table the cache holds
    monkeypatch.setattr(CB, "TABLE_BYTES", 0)
    monkeypatch.setattr(CB, "available_memory", lambda: 8 * len(cols))  # less than twice the blocks' bytes
    blocks = CB.ColumnBlocks(indptr, cols, order)
    assert blocks.reduce("sum", x) is None and not blocks.usable
    monkeypatch.setattr(CB, "available_memory", lambda: None)  # (unknown: built)
    assert CB.ColumnBlocks(indptr, cols, order).reduce("sum", x) is not None
    monkeypatch.setenv("G2PL_NUMBA", "0")
    assert CB.ColumnBlocks(indptr, cols, order).reduce("sum", x) is None


def test_ascending_ids_need_no_permutation(small_blocks):
    indptr, cols, order, rng = _csr(5)
    asc = np.sort(order)
    cols_asc = np.argsort(np.argsort(order))[cols].astype(np.int32)  # the same columns, renamed by rank
    x = rng.random(len(order))
    blocks = CB.ColumnBlocks(indptr, cols_asc, asc)
    got = blocks.reduce("sum", x)
    assert blocks._built[0] is None and _same(got, K.row_reduce("sum", indptr, cols_asc, x, nthreads=1))


PROGRAMS = sorted(p.stem for p in (ROOT / "programs").glob("*.g2pl"))


def _run(prog, g, size: int, args: dict):
    if size == 1:
        return prog.run(g, args, renumber="degree")
    parts = partition(g, size, "degree")

    def one(tc: ThreadComm):
        c = PartialsComm(tc.hub, tc.rank)
        dg = DistributedGraph(c, parts[c.rank], g.n, g.m, g.directed, g.weighted, g.name, "degree")
        return prog.run(dg, args, comm=c, renumber="degree")

    return _raise_any(run_ranks(size, one))[0]


@pytest.mark.parametrize("size", [1, 3])
@pytest.mark.parametrize("name", PROGRAMS)
def test_programs_give_the_same_answers_with_blocks(small_blocks, monkeypatch, name, size):
    g, root = _graph(7, directed=name in ("sssp", "pagerank"))
    path = ROOT / "programs" / f"{name}.g2pl"
    prog = g2pl.compile(path)
    args = program_args(path, root)
    served = []
    reduce = CB.ColumnBlocks.reduce

    def counted(self, *a, **k):
        got = reduce(self, *a, **k)
        served.append(got is not None)
        return got

    monkeypatch.setattr(CB.ColumnBlocks, "reduce", counted)
    with_blocks = _run(prog, g, size, args)
    monkeypatch.setattr(NumPyBackend, "column_blocks", staticmethod(lambda *a: None))
    without = _run(prog, g, size, args)
    assert json.dumps(with_blocks.output()) == json.dumps(without.output())  # bit for bit
    if name in ("pagerank", "cc"):  # (a sum and a minimum pulled over the whole adjacency)
        assert any(served), name
