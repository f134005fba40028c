"""The CuPy backend's raw CUDA kernels (g2pl/runtime/cuda/kernels.cu), without a GPU.

Every kernel runs on the CPU through the strict CuPy stand-in (its RawModule compiles the same source
with g++ under a sequential shim) and must give NumPy's answers: exact min/max with NaN, -0.0 and
values float32 cannot hold, wrapping int64 sums, empty rows, hub rows over many chunks, int32 and int64
indices.  NVRTC compiles the source for sm_90, as CuPy does on an H100.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from g2pl.runtime import raw_kernels as RK

_spec = importlib.util.spec_from_file_location(
    "strict_cupy_activate", Path(__file__).resolve().parents[1] / "strict_cupy" / "activate.py")
activate = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(activate)

UFUNC = {"min": np.minimum, "max": np.maximum, "sum": np.add, "or": np.logical_or, "and": np.logical_and}
CHUNKS = (1, 5, RK.CHUNK)
TRICKY = np.array([np.nan, -0.0, 0.0, 1 + 2**-40, 1 + 2**-41, -(1 + 2**-40), np.inf, -np.inf, 1e300, -1e-300])


def _device_cupy() -> ModuleType | None:
    """The installed CuPy with a usable device, else None."""
    try:
        import cupy
    except ImportError:
        return None
    try:
        return cupy if not getattr(cupy, "_STANDIN", False) and cupy.cuda.runtime.getDeviceCount() > 0 else None
    except Exception:
        return None


@pytest.fixture(scope="module")
def standin_cp() -> Iterator[ModuleType]:
    with activate.standin() as cupy:
        yield cupy


@pytest.fixture(scope="module", params=["standin", "gpu"])
def cp(request: pytest.FixtureRequest) -> Iterator[ModuleType]:
    """The stand-in (the kernels on the CPU), and a real CUDA device where there is one."""
    if request.param == "gpu":
        cupy = _device_cupy()
        if cupy is None:
            pytest.skip("no CUDA device (with one, the same checks run on it)")
        yield cupy
    else:
        with activate.standin() as cupy:
            yield cupy


def _indptr(rng: np.random.Generator, n: int, hub: int = 10**4) -> np.ndarray:
    """n rows: many empty, short ones, and a hub row of `hub` entries (many chunks)."""
    lens = rng.choice([0, 0, 1, 2, 3, 7, 40, 130], size=n)
    lens[n // 3] = hub
    lens[0] = lens[-1] = 0
    return np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)


def _reference(op: str, vals: np.ndarray, indptr: np.ndarray, fill) -> np.ndarray:
    """NumPy's reduceat per nonempty row, `fill` elsewhere."""
    n = len(indptr) - 1
    out = np.full(n, fill, dtype=vals.dtype)
    ne = np.flatnonzero(np.diff(indptr) > 0)
    if len(ne):
        out[ne] = UFUNC[op].reduceat(vals, indptr[:-1][ne])
    return out


def _values(rng: np.random.Generator, dtype, m: int) -> np.ndarray:
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return rng.random(m) < 0.3
    if dt.kind == "f":
        v = rng.normal(size=m) * 10.0**rng.integers(-5, 5, m)
        pick = rng.random(m) < 0.05
        v[pick] = rng.choice(TRICKY, int(pick.sum()))
        return v
    info = np.iinfo(dt)
    return rng.integers(info.min, info.max, m, dtype=dt, endpoint=True)


def _same(got: np.ndarray, want: np.ndarray) -> bool:
    """Equal dtype and values, NaN where NumPy has NaN; floats bit for bit (the sign of a zero too)."""
    if got.dtype != want.dtype or got.shape != want.shape:
        return False
    if want.dtype.kind == "f":
        return np.array_equal(got.view(np.int64), want.view(np.int64)) or (
            np.array_equal(np.isnan(got), np.isnan(want))
            and np.array_equal(got[~np.isnan(got)].view(np.int64), want[~np.isnan(want)].view(np.int64)))
    return np.array_equal(got, want)


CASES = [("min", np.int32), ("min", np.int64), ("min", np.float64), ("max", np.int32), ("max", np.int64),
         ("max", np.float64), ("sum", np.int32), ("sum", np.int64), ("or", np.bool_), ("and", np.bool_),
         ("min", np.bool_), ("max", np.uint8), ("min", np.int16), ("max", np.float32)]


def _fill(op: str, dtype):
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return op == "and"
    if dt.kind == "f":
        return np.inf if op == "min" else -np.inf if op == "max" else 0.0
    return np.iinfo(dt).max if op == "min" else np.iinfo(dt).min if op == "max" else 0


@pytest.mark.parametrize(("op", "dtype"), CASES, ids=lambda x: getattr(x, "__name__", x))
def test_segmented_reductions_equal_numpy_reduceat(cp: ModuleType, op: str, dtype) -> None:
    rng = np.random.default_rng(11)
    indptr = _indptr(rng, 400)
    total = int(indptr[-1])
    vals = _values(rng, dtype, total)
    fill = _fill(op, dtype)
    want = _reference(op, vals, indptr, fill)
    for chunk in CHUNKS:
        got = RK.seg_reduce(cp, cp.asarray(indptr), op, fill, vals=cp.asarray(vals), chunk=chunk).get()
        assert _same(got, want), (op, dtype, chunk)


@pytest.mark.parametrize("idx_dtype", [np.int32, np.int64])
@pytest.mark.parametrize(("op", "dtype"), CASES[:9], ids=lambda x: getattr(x, "__name__", x))
def test_gathered_reductions_equal_numpy_on_the_gathered_values(cp: ModuleType, op: str, dtype,
                                                                idx_dtype) -> None:
    rng = np.random.default_rng(12)
    indptr = _indptr(rng, 300)
    total = int(indptr[-1])
    table = _values(rng, dtype, 777)
    idx = rng.integers(0, len(table), total).astype(idx_dtype)
    fill = _fill(op, dtype)
    want = _reference(op, table[idx], indptr, fill)
    for chunk in CHUNKS:
        got = RK.seg_reduce(cp, cp.asarray(indptr), op, fill, table=cp.asarray(table), idx=cp.asarray(idx),
                            chunk=chunk).get()
        assert _same(got, want), (op, dtype, chunk)


@pytest.mark.parametrize("idx_dtype", [np.int32, np.int64])
def test_a_float32_tables_gathered_sum_has_the_widened_tables_bits(cp: ModuleType, idx_dtype) -> None:
    """A narrowed message (`float32(...)`) is gathered in 4 bytes and summed in float64: the result is
    float64 with the bits of the same sum over the table widened first, at every chunk size."""
    rng = np.random.default_rng(13)
    indptr = _indptr(rng, 300)
    table = (rng.standard_normal(777) * 10.0 ** rng.integers(-30, 30, 777)).astype(np.float32)
    table[:4] = [np.inf, -0.0, np.float32(1e-45), np.float32(3.4e38)]
    idx = rng.integers(0, len(table), int(indptr[-1])).astype(idx_dtype)
    for chunk in CHUNKS:
        got = RK.seg_reduce(cp, cp.asarray(indptr), "sum", 0.0, table=cp.asarray(table), idx=cp.asarray(idx),
                            chunk=chunk).get()
        want = RK.seg_reduce(cp, cp.asarray(indptr), "sum", 0.0, table=cp.asarray(table.astype(np.float64)),
                             idx=cp.asarray(idx), chunk=chunk).get()
        assert got.dtype == np.float64 and _same(got, want), chunk
        if chunk == RK.CHUNK:  # (one chunk per short row: a sequential float64 sum of the widened values)
            assert _same(got[:2], _reference("sum", table[idx].astype(np.float64), indptr, 0.0)[:2])


def test_float_min_max_are_exact_where_float32_is_not(cp: ModuleType) -> None:
    """Values 1 + 2**-40 apart (one float32), a NaN among numbers, -0.0 beside 0.0: NumPy's answers."""
    vals = np.array([1 + 2**-40, 1 + 2**-41, 1.0, 2.0, np.nan, -5.0, 0.0, -0.0, -0.0, 0.0, 1 + 2**-30,
                     1 + 2**-31] + [3.0] * 200 + [np.nan] + [1 + 2**-45] * 100)
    indptr = np.array([0, 3, 6, 8, 10, 12, 212, 313], dtype=np.int64)
    for op in ("min", "max"):
        want = _reference(op, vals, indptr, 0.0)
        for chunk in (1, 2, 7, 64):
            got = RK.seg_reduce(cp, cp.asarray(indptr), op, 0.0, vals=cp.asarray(vals), chunk=chunk).get()
            assert _same(got, want), (op, chunk, got, want)
    got = RK.seg_reduce(cp, cp.asarray(indptr), "min", 0.0, vals=cp.asarray(vals)).get()
    assert got[0] == 1.0 and got[5] == 3.0 and np.isnan(got[1]) and np.isnan(got[6])


def test_int64_sums_wrap_as_numpy(cp: ModuleType) -> None:
    rng = np.random.default_rng(13)
    indptr = _indptr(rng, 200)
    vals = rng.integers(2**61, 2**63 - 1, int(indptr[-1]), dtype=np.int64)
    vals[::3] *= -1
    want = _reference("sum", vals, indptr, 0)
    assert (np.abs(want.astype(np.float64)) < 2.0**63).all()
    for chunk in CHUNKS:
        got = RK.seg_reduce(cp, cp.asarray(indptr), "sum", 0, vals=cp.asarray(vals), chunk=chunk).get()
        assert _same(got, want), chunk


def test_float_sums_are_deterministic_and_close_to_numpy(cp: ModuleType) -> None:
    rng = np.random.default_rng(14)
    indptr = _indptr(rng, 300, hub=50_000)
    vals = rng.normal(size=int(indptr[-1])) * 10.0**rng.integers(-3, 3, int(indptr[-1]))
    want = _reference("sum", vals, indptr, 0.0)
    d_ptr, d_vals = cp.asarray(indptr), cp.asarray(vals)
    first = RK.seg_reduce(cp, d_ptr, "sum", 0.0, vals=d_vals).get()
    for _ in range(2):
        assert _same(RK.seg_reduce(cp, d_ptr, "sum", 0.0, vals=d_vals).get(), first)
    np.testing.assert_allclose(first, want, rtol=1e-9, atol=1e-9)
    # a row inside one chunk adds in entry order (NumPy's reduceat adds pairwise: close, not equal)
    lens = np.diff(indptr)
    inside = np.flatnonzero((lens > 0) & (indptr[:-1] // RK.CHUNK == (indptr[1:] - 1) // RK.CHUNK))
    assert len(inside)
    for r in inside:
        assert first[r] == np.cumsum(vals[indptr[r]:indptr[r + 1]])[-1], r


def test_empty_inputs(cp: ModuleType) -> None:
    empty_rows = cp.asarray(np.zeros(5, dtype=np.int64))  # 4 rows, no entries
    got = RK.seg_reduce(cp, empty_rows, "min", 7, vals=cp.zeros(0, dtype=cp.int64)).get()
    assert got.tolist() == [7, 7, 7, 7]
    got = RK.seg_reduce(cp, empty_rows, "max", -1.0, table=cp.zeros(3), idx=cp.zeros(0, dtype=cp.int32)).get()
    assert got.tolist() == [-1.0] * 4
    assert RK.row_counts(cp, empty_rows, cp.zeros(0, dtype=bool)).get().tolist() == [0] * 4
    no_rows = cp.asarray(np.zeros(1, dtype=np.int64))
    assert RK.seg_reduce(cp, no_rows, "sum", 0, vals=cp.zeros(0, dtype=cp.int64)).get().shape == (0,)
    assert RK.pull_any(cp, no_rows, cp.zeros(0, dtype=cp.int64), cp.zeros(3, dtype=bool)).get().shape == (0,)


def test_an_offset_first_row_is_reduced_from_its_own_entries(cp: ModuleType) -> None:
    """indptr need not start at 0 (a slice of a larger CSR): entries before indptr[0] are no row's."""
    vals = np.arange(100, dtype=np.int64)
    indptr = np.array([10, 12, 12, 75, 80], dtype=np.int64)
    want = np.array([vals[10:12].sum(), 0, vals[12:75].sum(), vals[75:80].sum()])
    for chunk in CHUNKS:
        got = RK.seg_reduce(cp, cp.asarray(indptr), "sum", 0, vals=cp.asarray(vals), chunk=chunk).get()
        assert got.tolist() == want.tolist(), chunk


def test_row_counts(cp: ModuleType) -> None:
    rng = np.random.default_rng(15)
    indptr = _indptr(rng, 500)
    mask = rng.random(int(indptr[-1])) < 0.4
    want = _reference("sum", mask.astype(np.int64), indptr, 0)
    for chunk in CHUNKS:
        assert _same(RK.row_counts(cp, cp.asarray(indptr), cp.asarray(mask), chunk=chunk).get(), want)


def test_pack_bits(cp: ModuleType) -> None:
    x = np.random.default_rng(16).random(1000) < 0.5
    words = RK.pack_bits(cp, cp.asarray(x)).get()
    assert words.dtype == np.uint32 and len(words) == 32
    assert np.array_equal(np.unpackbits(words.view(np.uint8), bitorder="little")[:1000].astype(bool), x)


@pytest.mark.parametrize("nbr_dtype", [np.int32, np.int64])
def test_pull_any_equals_a_full_or(cp: ModuleType, nbr_dtype) -> None:
    rng = np.random.default_rng(17)
    indptr = _indptr(rng, 600)
    nbr = rng.integers(0, 1001, int(indptr[-1])).astype(nbr_dtype)
    for density in (0.0, 0.001, 0.05, 1.0):
        x = rng.random(1001) < density
        want = _reference("or", x[nbr], indptr, False)
        got = RK.pull_any(cp, cp.asarray(indptr), cp.asarray(nbr), cp.asarray(x)).get()
        assert _same(got, want), density
        rows = np.sort(rng.choice(600, 100, replace=False)).astype(np.int64)
        rows[0] = 200  # the hub row
        rows.sort()
        listed = np.zeros(600, dtype=bool)
        listed[rows] = want[rows]
        got = RK.pull_any(cp, cp.asarray(indptr), cp.asarray(nbr), cp.asarray(x), rows=cp.asarray(rows)).get()
        assert _same(got, listed), density


@pytest.mark.parametrize("recv_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("op", ["min", "max"])
def test_scatter_minmax_float64_is_exact(cp: ModuleType, op: str, recv_dtype) -> None:
    """Repeated receivers; NaN wins and stays; -0.0 is below 0.0 in any order; 1 + 2**-40 kept."""
    rng = np.random.default_rng(18)
    n, m = 50, 3000
    recv = rng.integers(0, n, m).astype(recv_dtype)
    vals = _values(rng, np.float64, m)
    vals[recv == 7] = 1 + 2**-40
    vals[np.flatnonzero(recv == 7)[0]] = 1 + 2**-41
    start = np.full(n, np.inf if op == "min" else -np.inf)
    want = start.copy()
    with np.errstate(invalid="ignore"):
        UFUNC[op].at(want, recv, vals)
    for order in (np.arange(m), np.arange(m)[::-1], rng.permutation(m)):
        out = cp.asarray(start)
        RK.scatter_minmax(cp, op, out, cp.asarray(recv[order]), cp.asarray(vals[order]))
        got = out.get()
        assert np.array_equal(got, want, equal_nan=True), order[:3]
        assert got[7] == (1 + 2**-41 if op == "min" else 1 + 2**-40)
    # zeros of both signs: the same answer in every order
    zr = np.zeros(6, dtype=recv_dtype)
    zv = np.array([0.0, -0.0, 0.0, -0.0, 0.0, 0.0])
    for order in (np.arange(6), np.arange(6)[::-1]):
        out = cp.asarray(np.full(1, 5.0 if op == "min" else -5.0))
        RK.scatter_minmax(cp, op, out, cp.asarray(zr), cp.asarray(zv[order]))
        assert np.signbit(out.get()[0]) == (op == "min")


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_scatter_minmax_integers(cp: ModuleType, dtype) -> None:
    rng = np.random.default_rng(19)
    recv = rng.integers(0, 40, 2000)
    vals = _values(rng, dtype, 2000)
    for op in ("min", "max"):
        want = np.full(40, 3, dtype=dtype)
        UFUNC[op].at(want, recv, vals)
        out = cp.asarray(np.full(40, 3, dtype=dtype))
        RK.scatter_minmax(cp, op, out, cp.asarray(recv), cp.asarray(vals))
        assert _same(out.get(), want)


class _Ops:
    """The backend's side a Segments uses: its array module, and `repeat` for the lazy owner array."""

    def __init__(self, xp: ModuleType) -> None:
        self.xp = xp

    def repeat(self, a, counts):
        return self.xp.repeat(a, counts)


def test_segments_and_the_csr_through_the_kernels(cp: ModuleType) -> None:
    from g2pl.runtime.cupy_kernels import DeviceCSR, Segments

    rng = np.random.default_rng(20)
    indptr = _indptr(rng, 300)
    total = int(indptr[-1])
    cols = rng.integers(0, 90, total).astype(np.int32)
    seg = Segments(_Ops(cp), cp.asarray(indptr))
    f = _values(rng, np.float64, total)
    assert _same(seg.reduce(cp.minimum, cp.asarray(f), np.inf).get(), _reference("min", f, indptr, np.inf))
    b = rng.random(total) < 0.1
    assert _same(seg.reduce(cp.logical_or, cp.asarray(b), False).get(), _reference("or", b, indptr, False))
    assert _same(seg.count(cp.asarray(b)).get(), _reference("sum", b.astype(np.int64), indptr, 0))
    t = rng.integers(-5, 5, 90)
    assert _same(seg.gather_reduce(cp.maximum, cp.asarray(t), cp.asarray(cols), -99).get(),
                 _reference("max", t[cols], indptr, -99))
    assert seg._owner is None  # the reductions never build the per-entry owner array
    assert np.array_equal(seg.owner.get(), np.repeat(np.arange(300), np.diff(indptr)))
    csr = DeviceCSR(_Ops(cp), None, cp.asarray(indptr), cp.asarray(cols), 90)
    x = rng.normal(size=90)
    np.testing.assert_allclose((csr @ cp.asarray(x)).get(), _reference("sum", x[cols], indptr, 0.0), rtol=1e-12)
    k = rng.integers(-(2**62), 2**62, 90)
    assert _same((csr @ cp.asarray(k)).get(), _reference("sum", k[cols], indptr, 0))
    m = rng.random(90) < 0.5
    assert _same((csr @ cp.asarray(m).astype(cp.int64)).get(), _reference("sum", m[cols].astype(np.int64),
                                                                             indptr, 0))


def test_the_standin_launch_is_as_strict_as_cupy(standin_cp: ModuleType) -> None:
    cp = standin_cp
    k = RK.kernel(cp, "pack_bits")
    x, words = cp.zeros(64, dtype=cp.uint8), cp.zeros(2, dtype=cp.uint32)
    k((1,), (32,), (x, np.int64(64), words))
    with pytest.raises(TypeError, match="Unsupported type"):  # a host array, as CuPy refuses it
        k((1,), (32,), (np.zeros(64, dtype=np.uint8), np.int64(64), words))
    with pytest.raises(TypeError, match="Unsupported type"):  # a Python int: no width to check
        k((1,), (32,), (x, 64, words))
    with pytest.raises(TypeError, match="scalar"):  # an int32 where the kernel takes long long
        k((1,), (32,), (x, np.int32(64), words))
    with pytest.raises(TypeError, match="points to"):  # a bool array where it points to unsigned char
        k((1,), (32,), (x.astype(bool), np.int64(64), words))
    with pytest.raises(TypeError, match="arguments"):
        k((1,), (32,), (x, np.int64(64)))
    with pytest.raises(TypeError, match="tuple"):
        k(1, (32,), (x, np.int64(64), words))
    with pytest.raises(ValueError, match="non-contiguous"):
        k((1,), (32,), (x[::2], np.int64(32), words))
    with pytest.raises(RuntimeError, match="not found"):
        cp.RawModule(code=RK.source()).get_function("no_such_kernel")


def test_reductions_are_told_apart_by_the_ufunc_itself() -> None:
    """CuPy names its ufuncs "cupy_minimum" and so on: the backend's ufunc maps by identity."""
    import numpy

    assert RK.ufunc_op(numpy, numpy.minimum) == "min" and RK.ufunc_op(numpy, numpy.logical_and) == "and"
    assert RK.ufunc_op(numpy, numpy.fmin) is None
    try:
        import cupy
    except ImportError:
        pytest.skip("CuPy is not installed")
    assert {RK.ufunc_op(cupy, getattr(cupy, n)) for n in RK.UFUNC_OPS} == set(RK.UFUNC_OPS.values())


def _kernel_names() -> set[str]:
    """Every kernel the source defines (after its macros)."""
    r = subprocess.run(["g++", "-E", "-P", "-x", "c++", "-"], input=RK.source(), capture_output=True, text=True,
                       check=True)
    return set(re.findall(r'extern\s+"C"\s+__global__\s+void\s+(\w+)', r.stdout))


def test_the_launchers_name_only_kernels_the_source_defines() -> None:
    names = _kernel_names()
    for op in ("min", "max", "sum"):
        for t in ("i32", "i64", "f64") + (("u8",) if op != "sum" else ()):
            assert {f"seg_rows_{op}_{t}", f"seg_chunks_{op}_{t}", f"seg_chunks_{op}_{t}_g32",
                    f"seg_chunks_{op}_{t}_g64"} <= names
    for g in ("g32", "g64"):
        assert {f"pull_any_{g}", f"pull_any_rows_{g}"} <= names
        assert {f"scatter_{op}_{t}_{g}" for op in ("min", "max") for t in ("f64", "i64", "i32")} <= names
    assert {"pack_bits", "seg_rows_count", "seg_chunks_count"} <= names


def test_nvrtc_compiles_the_kernels_for_sm90() -> None:
    """What CuPy's RawModule does on an H100: NVRTC, sm_90, C++17, no host headers."""
    try:
        from cuda.bindings import nvrtc
    except ImportError:
        pytest.skip("cuda.bindings (NVRTC) is not installed: pip install -e '.[test]' installs cuda-bindings "
                    "and nvidia-cuda-nvrtc")
    try:
        err, prog = nvrtc.nvrtcCreateProgram(RK.source().encode(), b"kernels.cu", 0, [], [])
    except RuntimeError as e:  # the bindings without the NVRTC library
        pytest.skip(f"NVRTC library not loadable: {e}")
    assert err == nvrtc.nvrtcResult.NVRTC_SUCCESS, err
    (res,) = nvrtc.nvrtcCompileProgram(prog, 2, [b"--gpu-architecture=sm_90", b"--std=c++17"])
    _, size = nvrtc.nvrtcGetProgramLogSize(prog)
    log = bytearray(size)  # (never `b" " * size`: at size 1 that is Python's shared b" ", which NVRTC would overwrite)
    nvrtc.nvrtcGetProgramLog(prog, log)
    assert res == nvrtc.nvrtcResult.NVRTC_SUCCESS, log.decode(errors="replace")
    _, size = nvrtc.nvrtcGetCUBINSize(prog)
    cubin = bytearray(size)
    nvrtc.nvrtcGetCUBIN(prog, cubin)
    missing = sorted(n for n in _kernel_names() if b"\0" + n.encode() + b"\0" not in cubin)
    assert not missing  # every extern "C" kernel is in the cubin under its own name
    nvrtc.nvrtcDestroyProgram(prog)


def test_float_bins_are_the_array_kernels(cp) -> None:
    """The exact float sum's bins by one kernel: the compiled CPU pass's hi, lo and non-finite counts
    (kernels.float_bins, its NumPy build), for values of every exponent and sign, subnormals, runs of
    one exponent, NaN and infinities; the total they make is array_kernels.float_total's, and its sum
    math.fsum's."""
    import math

    from g2pl.runtime import array_kernels as AK
    from g2pl.runtime import kernels as K
    from g2pl.runtime import partials as P

    rng = np.random.default_rng(5)
    cases = [rng.standard_normal(5000) * 10.0 ** rng.integers(-300, 300, 5000), np.full(3000, 1 / 3),
             np.concatenate([TRICKY, np.full(700, -2.5), [5e-324, -1e-310]]), np.zeros(0)]
    for v in cases:
        bits = v.view(np.int64)
        raw: list[np.ndarray] = []  # (the 4096 device bins, as they came to the host)

        def host(a, raw=raw):
            raw.append(cp.asnumpy(a))
            return raw[-1]

        got_hi, got_lo, got_counts = RK.float_bins(cp, cp.asarray(bits), host)
        hi, lo, counts = np.zeros(2046, np.int64), np.zeros(2046, np.int64), np.zeros(3, np.int64)
        K._float_bins(bits, hi, lo, counts, np.array([0, len(bits)]))  # (plain Python: prange is range)
        assert np.array_equal(got_hi, hi) and np.array_equal(got_lo, lo) and got_counts == counts.tolist()
        assert len(raw) == 1 and raw[0].view(np.int64)[4095] == 0
        total, specials = AK.float_total(AK.HostOps, v, np.asarray)
        assert AK.bins_total(hi, lo) == total and specials == counts.tolist()
        if np.isfinite(v).all():
            assert P._float_sum(P.exact_sum_slots(total, specials, len(v))) == math.fsum(v.tolist())
