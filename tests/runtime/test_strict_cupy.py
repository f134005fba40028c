"""The strict CuPy stand-in (tests/strict_cupy) itself: it raises where CuPy 14 raises, gives NumPy's
answers where CuPy does, counts device->host synchronizations, refuses host/device mixing both ways,
and (with a real CuPy installed) names nothing that CuPy lacks."""

from __future__ import annotations

import copy
import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

_spec = importlib.util.spec_from_file_location(
    "strict_cupy_activate", Path(__file__).resolve().parents[1] / "strict_cupy" / "activate.py")
activate = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(activate)


@pytest.fixture
def cp() -> Iterator[ModuleType]:
    with activate.standin() as cupy:
        yield cupy


@pytest.fixture
def sparse(cp: ModuleType) -> ModuleType:
    import cupyx.scipy.sparse

    return cupyx.scipy.sparse


H = np.array([5, 1, 4, 1, 3, 0, 2], dtype=np.int64)
F = np.array([0.5, -1.25, 3.0, 2.0, 0.1, 7.0, 1e-3])


def same(dev, want) -> None:
    got = dev.get()
    assert got.dtype == np.asarray(want).dtype and np.array_equal(got, want), (got, want)


def test_same_answers_as_numpy(cp: ModuleType) -> None:
    d, f = cp.asarray(H), cp.asarray(F)
    same(cp.zeros(3, dtype=cp.int64), np.zeros(3, np.int64))
    same(cp.full(4, 2.5), np.full(4, 2.5))
    same(cp.arange(5, dtype=cp.int32), np.arange(5, dtype=np.int32))
    same(cp.concatenate([d, d[:2]]), np.concatenate([H, H[:2]]))
    out = cp.empty(len(H), dtype=cp.int64)
    cp.cumsum(d, out=out)
    same(out, np.cumsum(H))
    same(cp.repeat(d, d), np.repeat(H, H))
    same(cp.searchsorted(cp.sort(d), d, side="right"), np.searchsorted(np.sort(H), H, side="right"))
    same(cp.argsort(d, kind="stable"), np.argsort(H, kind="stable"))
    same(cp.where(d > 2, d, -1), np.where(H > 2, H, -1))
    same(cp.bincount(d, minlength=9), np.bincount(H, minlength=9))
    same(cp.packbits(d > 1), np.packbits(H > 1))
    same(cp.unpackbits(cp.packbits(d > 1))[:7], np.unpackbits(np.packbits(H > 1))[:7])
    same(cp.unique(d), np.unique(H))
    same(cp.take(d, cp.asarray(np.array([6, 0]))), H[[6, 0]])
    same(cp.diff(d), np.diff(H))
    same(cp.nan_to_num(cp.asarray(np.array([np.nan, np.inf])), nan=0.0, posinf=1.0), np.array([0.0, 1.0]))
    same((d * 3 - 1) // 2 % 5, (H * 3 - 1) // 2 % 5)
    same(~(d > 2) | (d == 0) & True, ~(H > 2) | (H == 0) & True)
    same(cp.logical_or(d > 3, d < 1), np.logical_or(H > 3, H < 1))
    same(cp.minimum(f, 1.0), np.minimum(F, 1.0))
    same(cp.trunc(f), np.trunc(F))
    same(d.astype(cp.float64), H.astype(np.float64))
    same(f.view(cp.int64), F.view(np.int64))
    same(d.reshape(7, 1).ravel(), H)
    same(d.T.copy(), H)
    same(d + np.int64(3), H + 3)
    x = d.copy()
    x[cp.asarray(np.array([0, 2]))] = 9
    x[1:3] += 1
    H2 = H.copy()
    H2[[0, 2]] = 9
    H2[1:3] += 1
    same(x, H2)
    for name in ("sum", "min", "max", "any", "all", "mean"):
        r = getattr(d, name)()
        assert isinstance(r, cp.ndarray) and r.ndim == 0  # 0-d device arrays, as CuPy's
        assert r.item() == getattr(H, name)()
    assert (len(d), d.shape, d.ndim, d.size, d.nbytes, d.strides, d.dtype) == (
        len(H), H.shape, H.ndim, H.size, H.nbytes, H.strides, H.dtype)
    assert d.flags.c_contiguous and d.flags.owndata and not hasattr(d.flags, "writeable")
    assert d.astype(cp.int64, copy=False) is d and copy.copy(d) is not d
    assert not hasattr(d, "__index__")  # CuPy's ndarray has none: no `range(n_dev)`, no `lst[i_dev]`


def test_stricter_than_cupy_where_cupy_is_silently_wrong(cp: ModuleType) -> None:
    """CuPy wraps out-of-range gather indices without a word; the stand-in raises, so CI catches it."""
    d = cp.asarray(H)
    with pytest.raises(IndexError):
        cp.take(d, cp.asarray(np.array([7])))
    with pytest.raises(IndexError):
        d[cp.asarray(np.array([-8]))]


def test_ufunc_methods_that_cupy_has(cp: ModuleType) -> None:
    idx = cp.asarray(np.array([0, 2, 2, 5]))
    same(cp.add.reduceat(cp.asarray(H), idx), np.add.reduceat(H, [0, 2, 2, 5]))  # ints: exact
    np.testing.assert_allclose(cp.add.reduceat(cp.asarray(F), idx).get(), np.add.reduceat(F, [0, 2, 2, 5]))
    same(cp.add.accumulate(cp.asarray(H)), np.cumsum(H))
    assert cp.maximum.reduce(cp.asarray(H)).item() == 5
    for dt in (np.int64, np.float64):
        for name in ("add", "minimum", "maximum"):
            want = np.full(3, 2, dtype=dt)
            getattr(np, name).at(want, H % 3, H.astype(dt))
            got = cp.full(3, 2, dtype=dt)
            getattr(cp, name).at(got, cp.asarray(H % 3), cp.asarray(H.astype(dt)))
            same(got, want)


def test_what_cupy_lacks_raises(cp: ModuleType, sparse: ModuleType) -> None:
    d, idx = cp.asarray(H), cp.asarray(np.array([0, 3]))
    for u in (cp.minimum, cp.maximum, cp.logical_or):
        with pytest.raises(NotImplementedError):
            u.reduceat(d, idx)
    with pytest.raises(NotImplementedError):
        cp.maximum.accumulate(d)
    with pytest.raises((AttributeError, NotImplementedError)):
        cp.logical_or.at(cp.zeros(3, dtype=bool), idx, True)
    with pytest.raises(TypeError):
        cp.take(d, idx, mode="clip")
    with pytest.raises(TypeError):
        cp.unpackbits(cp.packbits(d > 1), count=3)
    for name in ("errstate", "frombuffer"):
        assert not hasattr(cp, name)
    with pytest.raises(TypeError):
        d.view("V8")
    with pytest.raises((ValueError, TypeError)):
        sparse.csr_matrix((cp.ones(2, dtype=cp.int64), idx, cp.asarray(np.array([0, 1, 2]))), shape=(2, 4))


def test_sparse_csr(cp: ModuleType, sparse: ModuleType) -> None:
    indptr, cols = np.array([0, 2, 2, 5]), np.array([1, 3, 0, 1, 2])
    m = sparse.csr_matrix((cp.ones(5), cp.asarray(cols), cp.asarray(indptr)), shape=(3, 4))
    v = np.arange(4.0)
    import scipy.sparse

    want = scipy.sparse.csr_matrix((np.ones(5), cols, indptr), shape=(3, 4))
    same(m @ cp.asarray(v), want @ v)
    t = m.tocsc()
    assert all(isinstance(a, cp.ndarray) for a in (t.indptr, t.indices, t.data))
    same(t.indptr.astype(cp.int64), want.tocsc().indptr.astype(np.int64))
    with pytest.raises(TypeError):
        m @ v  # a host vector


def test_syncs_are_counted(cp: ModuleType) -> None:
    d = cp.asarray(H)
    reads = [lambda: cp.flatnonzero(d), lambda: cp.nonzero(d), lambda: cp.where(d > 1), lambda: d[d > 1],
             lambda: int(cp.count_nonzero(d)), lambda: int(d[0]), lambda: bool(d[0]), lambda: float(d[0]),
             lambda: d.item(0), lambda: d.tolist(), lambda: d.get(), lambda: cp.asnumpy(d),
             lambda: cp.bincount(d)]
    for read in reads:
        before = cp._standin_syncs()
        read()
        assert cp._standin_syncs() == before + 1, read
    before = cp._standin_syncs()
    cp.where(d > 1, d, 0), d + 1, d[2:], d.sum(), cp.cumsum(d), cp.argsort(d), cp.count_nonzero(d)  # noqa: B018
    assert cp._standin_syncs() == before
    same(d[d > 1], H[H > 1])
    same(cp.flatnonzero(d), np.flatnonzero(H))
    assert int(cp.count_nonzero(d)) == np.count_nonzero(H)


def test_host_and_device_do_not_mix(cp: ModuleType) -> None:
    d = cp.asarray(H)
    for implicit in (lambda: np.asarray(d), lambda: np.array(d), lambda: np.add(d, 1), lambda: np.sum(d),
                     lambda: np.concatenate([d]), lambda: H + d):
        with pytest.raises(TypeError):
            implicit()
    for mixed in (lambda: d + H, lambda: cp.add(d, H), lambda: cp.where(d > 0, H, d), lambda: cp.concatenate([d, H]),
                  lambda: cp.searchsorted(d, H), lambda: d[H]):
        with pytest.raises(TypeError, match="Unsupported type"):
            mixed()
    assert (d + 3).get().tolist() == (H + 3).tolist() and (d * np.int64(2)).dtype == np.int64
    assert isinstance(cp.asnumpy(d), np.ndarray) and isinstance(cp.asarray(H), cp.ndarray)


def test_cuda_apis(cp: ModuleType) -> None:
    import cupyx

    assert cp.cuda.is_available() and cp.cuda.runtime.getDeviceCount() >= 1
    cp.cuda.Device(0).use()
    a, b = cp.cuda.Event(), cp.cuda.Event()
    a.record()
    b.record()
    b.synchronize()
    assert cp.cuda.get_elapsed_time(a, b) >= 0
    cp.cuda.Stream.null.synchronize()
    pool = cp.get_default_memory_pool()
    keep = cp.zeros(1000, dtype=cp.int64)
    assert pool.used_bytes() >= keep.nbytes and pool.total_bytes() >= pool.used_bytes()
    assert isinstance(cupyx.empty_pinned((3,), np.int64), np.ndarray)


def test_standin_is_installed_only_inside_the_block() -> None:
    before = {k: v for k, v in sys.modules.items() if k.split(".")[0] in ("cupy", "cupyx")}
    with activate.standin() as first:
        assert sys.modules["cupy"] is first and first._STANDIN
    with activate.standin() as second:
        assert second is first  # one module: device arrays stay device arrays across blocks
    after = {k: v for k, v in sys.modules.items() if k.split(".")[0] in ("cupy", "cupyx")}
    assert after == before


def _public(obj) -> set[str]:
    """Names `obj` defines (not the stdlib and typing names its module imports)."""
    def own(v) -> bool:
        if isinstance(v, ModuleType):
            return v.__name__.split(".")[0] in ("cupy", "cupyx")
        return getattr(v, "__module__", "") not in ("typing", "collections.abc", "__future__")
    return {n for n, v in vars(obj).items() if not n.startswith("_") and own(v)}


def test_every_standin_name_exists_in_real_cupy() -> None:
    """The stand-in is never more permissive in naming than CuPy: each public name it defines (module
    functions, ufunc methods, ndarray members, cuda APIs, csr_matrix members) is in the real CuPy."""
    real = activate.real_cupy()
    if real is None:
        pytest.skip("real CuPy is not installed (pip install cupy-cuda12x; it imports without a GPU)")
    rcp, rsparse = real
    import cupyx as rcupyx  # real_cupy() left the real modules in sys.modules only if none were there before

    rcupyx = sys.modules.get("cupyx") or rcupyx
    with activate.standin() as cp:
        import cupyx
        import cupyx.scipy.sparse as sparse

        pairs = [(cp, rcp), (cp.ndarray, rcp.ndarray), (cp.cuda, rcp.cuda), (cp.cuda.runtime, rcp.cuda.runtime),
                 (cp.cuda.Device, rcp.cuda.Device), (cp.cuda.Event, rcp.cuda.Event),
                 (cp.cuda.Stream, rcp.cuda.Stream), (type(cp.get_default_memory_pool()), rcp.cuda.MemoryPool),
                 (cupyx, rcupyx), (sparse, rsparse), (sparse.csr_matrix, rsparse.csr_matrix),
                 (sparse._compressed, rsparse.csr_matrix), (cp.ufunc, rcp.ufunc)]
        missing = []
        for mine, theirs in pairs:
            names = _public(mine) - {"annotations"}  # `from __future__ import annotations`
            if mine in (sparse.csr_matrix, sparse._compressed):  # CuPy sets these in __init__
                names -= {"data", "indices", "indptr"}
            missing += [f"{getattr(theirs, '__name__', theirs)}.{n}" for n in sorted(names) if not hasattr(theirs, n)]
        for name in _public(cp):
            u = getattr(cp, name)
            if isinstance(u, cp.ufunc):
                missing += [f"cupy.{name}.{m}" for m in u._methods if not hasattr(getattr(rcp, name), m)]
                if not isinstance(getattr(rcp, name, None), rcp.ufunc):
                    missing.append(f"cupy.{name} is no ufunc")
    assert not missing, missing


def test_the_standin_works_beside_an_imported_real_cupy() -> None:
    """With the real CuPy imported (and its lazily loaded `cupyx` touched), a stand-in block still gets
    the stand-in, and afterwards the very same real modules are back in sys.modules.  CuPy 14 loads
    `cupyx` through importlib's LazyLoader, whose modules raise on any attribute read once they have
    left sys.modules: reading one's `__file__` must not load it."""
    real = activate.real_cupy()
    if real is None:
        pytest.skip("real CuPy is not installed (the test extra installs cupy-cuda13x; it imports without a GPU)")
    saved = {k: v for k, v in sys.modules.items() if k.split(".")[0] in ("cupy", "cupyx")}
    try:
        import cupy
        import cupyx
        import cupyx.scipy.sparse  # noqa: F401  (loads the lazy modules)

        assert not getattr(cupy, "_STANDIN", False)
        mine = {k: v for k, v in sys.modules.items() if k.split(".")[0] in ("cupy", "cupyx")}
        with activate.standin() as cp:
            import cupy as inside

            assert inside is cp and cp._STANDIN
            assert (cp.arange(4) * 2).get().tolist() == [0, 2, 4, 6]
        after = {k: v for k, v in sys.modules.items() if k.split(".")[0] in ("cupy", "cupyx")}
        assert after == mine and sys.modules["cupyx"] is cupyx
    finally:
        for k in [k for k in sys.modules if k.split(".")[0] in ("cupy", "cupyx")]:
            del sys.modules[k]
        sys.modules.update(saved)
