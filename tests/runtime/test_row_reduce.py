"""The compiled per-row reductions (kernels.row_reduce) and the NumPy backend's matrix of ones: the same
bits as the NumPy and SciPy paths they replace, so whether numba runs never changes an answer."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from g2pl.runtime import cpu_kernels
from g2pl.runtime import kernels as K
from g2pl.runtime.numpy_backend import OnesMatrix

needs_numba = pytest.mark.skipif(not cpu_kernels.available(), reason="numba not installed")


def _csr(seed: int, rows: int = 300, cols: int = 200, idx=np.int32):
    """A random CSR with empty rows, long rows and repeated columns."""
    rng = np.random.default_rng(seed)
    lens = rng.integers(0, 12, rows)
    lens[rng.choice(rows, 20, replace=False)] = 0
    lens[3] = 400
    indptr = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
    return indptr, rng.integers(0, cols, int(indptr[-1])).astype(idx), rng


@needs_numba
@pytest.mark.parametrize("idx", [np.int32, np.int64])
def test_row_sums_have_scipys_bits(idx):
    indptr, nbr, rng = _csr(1, idx=idx)
    x = rng.standard_normal(200) * 10.0 ** rng.integers(-8, 8, 200)
    x[[5, 6]] = [np.inf, -0.0]
    M = sp.csr_matrix((np.ones(len(nbr)), nbr, indptr), shape=(len(indptr) - 1, 200))
    got = K.row_reduce("sum", indptr, nbr, x, force=True)
    want = M @ x
    assert got is not None and np.array_equal(got.view(np.int64), want.view(np.int64))
    xi = rng.integers(-2**62, 2**62, 200)  # int64 sums wrap around
    with np.errstate(over="ignore"):
        assert np.array_equal(K.row_reduce("sum", indptr, nbr, xi, force=True),
                              sp.csr_matrix((np.ones(len(nbr), np.int64), nbr, indptr), shape=M.shape) @ xi)


@needs_numba
@pytest.mark.parametrize("op", ["min", "max"])
@pytest.mark.parametrize("dt", [np.int32, np.int64, np.float64])
def test_row_min_max_match_reduceat(op, dt):
    indptr, nbr, rng = _csr(2)
    x = rng.integers(-1000, 1000, 200).astype(dt)
    if dt == np.float64:
        x[[7, 8]] = [np.nan, -np.inf]
    ufunc = np.minimum if op == "min" else np.maximum
    fill = 12345
    seg = K.Segments(indptr)
    want = seg.reduce(ufunc, x[nbr], fill)
    got = K.row_reduce(op, indptr, nbr, x, fill, force=True)
    assert got is not None and got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)  # NaN where a row reads one, `fill` where it is empty


@pytest.mark.parametrize("kind", ["f", "i"])
def test_ones_matrix_with_and_without_numba(monkeypatch, kind):
    indptr, nbr, rng = _csr(3)
    x = rng.random(200) if kind == "f" else rng.integers(0, 50, 200)
    M = OnesMatrix(indptr, nbr, 200, kind)
    assert M.shape == (len(indptr) - 1, 200)
    monkeypatch.setenv("G2PL_NUMBA", "0")
    plain = M @ x
    monkeypatch.setenv("G2PL_NUMBA", "1")
    compiled = M @ x
    assert plain.dtype == compiled.dtype == (np.float64 if kind == "f" else np.int64)
    assert np.array_equal(plain, compiled)
    assert np.array_equal(plain, sp.csr_matrix((np.ones(len(nbr)), nbr, indptr), shape=M.shape) @ x)


def test_row_reduce_declines_without_numba(monkeypatch):
    monkeypatch.setenv("G2PL_NUMBA", "0")
    indptr, nbr, _ = _csr(4)
    assert K.row_reduce("sum", indptr, nbr, np.ones(200), force=True) is None
    assert K.row_reduce("argmin", indptr, nbr, np.ones(200), force=True) is None


def _skewed(seed: int, rows: int = 3000, cols: int = 2500):
    """A CSR whose entries are far from even across rows (a few rows hold most), so that the blocks of a
    parallel pass cut rows of every length."""
    rng = np.random.default_rng(seed)
    lens = np.minimum(rng.zipf(1.6, rows), 3000)
    lens[rng.choice(rows, 300, replace=False)] = 0
    indptr = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
    return indptr, rng.integers(0, cols, int(indptr[-1])).astype(np.int32), rng


@needs_numba
@pytest.mark.parametrize("op", ["sum", "min", "max"])
@pytest.mark.parametrize("kind", ["float", "float with NaN and signed zeros", "int"])
def test_row_reduce_has_the_same_bits_on_any_thread_count(op, kind):
    """Each row is reduced in order by one thread: float sums have the same bits on 1, 2, 3 and 4 threads;
    minima and maxima too, though several threads take them with conditional moves (`_row_extreme_selects`)
    and one thread with branches."""
    indptr, nbr, rng = _skewed(5)
    x = rng.standard_normal(2500) * 10.0 ** rng.integers(-12, 12, 2500)
    if kind == "int":
        x = rng.integers(-2**62, 2**62, 2500)
    elif kind != "float":
        x[::37], x[1::11], x[2::13] = np.nan, -0.0, 0.0
    want = K.row_reduce(op, indptr, nbr, x, -1.5, force=True, nthreads=1)
    assert want is not None
    for t in (2, 3, 4):
        got = K.row_reduce(op, indptr, nbr, x, -1.5, force=True, nthreads=t)
        assert got is not None and np.array_equal(got.view(np.int64), want.view(np.int64)), t
    if op == "sum" and kind == "float":
        M = sp.csr_matrix((np.ones(len(nbr)), nbr, indptr), shape=(len(indptr) - 1, 2500))
        assert np.array_equal(want.view(np.int64), (M @ x).view(np.int64))


def test_row_cuts_cover_the_rows_in_order():
    indptr, _, _ = _skewed(6)
    n = len(indptr) - 1
    for parts in (1, 2, 7, 64, 10_000):
        cuts = cpu_kernels.row_cuts(indptr, parts)
        assert cuts[0] == 0 and cuts[-1] == n and np.all(np.diff(cuts) > 0) and len(cuts) <= parts + 1
    even = cpu_kernels.row_cuts(np.arange(0, 1001, 10), 4)  # 100 rows of 10 entries: 25 rows a block
    assert even.tolist() == [0, 25, 50, 75, 100]
    assert cpu_kernels.row_cuts(np.zeros(5, dtype=np.int64), 4).tolist() == [0, 4]


@pytest.mark.parametrize("env,affinity,cpus,want", [
    ({}, {0, 1}, 2, 2),
    ({"G2PL_THREADS": "3"}, {0, 1}, 2, 3),
    ({"MPI_LOCALNRANKS": "2"}, set(range(8)), 8, 4),  # two ranks here share the 8 CPUs
    ({"OMPI_COMM_WORLD_LOCAL_SIZE": "3"}, {0, 1}, 2, 1),
    ({"MPI_LOCALNRANKS": "4"}, {2, 3}, 8, 2),  # bound to 2 of 8 CPUs: the launcher divided them
    ({}, {5}, 8, 1),
])
def test_thread_count_policy(monkeypatch, env, affinity, cpus, want):
    from g2pl.graph import cores

    for k in ("G2PL_THREADS", *cores._LOCAL_RANKS):
        monkeypatch.delenv(k, raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    monkeypatch.setattr(cores.os, "sched_getaffinity", lambda pid: affinity)
    monkeypatch.setattr(cores.os, "cpu_count", lambda: cpus)
    assert cpu_kernels.threads() == want


@pytest.mark.parametrize("bad", ["0", "-1", "two"])
def test_thread_count_must_be_positive(monkeypatch, bad):
    from g2pl.errors import G2PLError

    monkeypatch.setenv("G2PL_THREADS", bad)
    with pytest.raises(G2PLError, match="G2PL_THREADS"):
        cpu_kernels.threads()


def _floats32(rng, n: int) -> np.ndarray:
    """float32 values over many magnitudes, with an infinity, -0.0 and the smallest subnormal."""
    x = (rng.standard_normal(n) * 10.0 ** rng.integers(-30, 30, n)).astype(np.float32)
    x[[5, 6, 7]] = [np.inf, -0.0, np.float32(1e-45)]
    return x


@needs_numba
def test_row_sums_of_float32_are_float64_sums_of_the_same_values():
    """A narrowed message (`float32(...)`) is gathered in 4 bytes and added in float64."""
    indptr, nbr, rng = _csr(1)
    x = _floats32(rng, 200)
    want = K.row_reduce("sum", indptr, nbr, x.astype(np.float64), force=True)
    got = K.row_reduce("sum", indptr, nbr, x, force=True)
    assert got is not None and got.dtype == np.float64 and np.array_equal(got.view(np.int64), want.view(np.int64))
    row = x[nbr[indptr[3]:indptr[4]]]
    row = row[np.isfinite(row) & (np.abs(row) < 1e20)]
    small = K.row_reduce("sum", np.array([0, len(row)]), np.arange(len(row), dtype=np.int32), row, force=True)
    assert small[0] != float(np.add.reduce(row, dtype=np.float32))  # not a float32 sum


@pytest.mark.parametrize("numba", ["0", "1"])
def test_the_matrix_of_ones_sums_float32_as_float64(monkeypatch, numba):
    monkeypatch.setenv("G2PL_NUMBA", numba)
    indptr, nbr, rng = _csr(2)
    x = _floats32(rng, 200)
    M = OnesMatrix(indptr, nbr, 200, "f")
    got, want = M @ x, M @ x.astype(np.float64)
    assert got.dtype == np.float64 and np.array_equal(got.view(np.int64), want.view(np.int64))
