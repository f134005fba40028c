"""A strict NumPy stand-in for CuPy 14, so the CuPy backend's code runs (and is checked) without a GPU.

"Strict" means: it raises wherever CuPy 14 raises, and is never more permissive.  Device arrays are
`ndarray` objects wrapping a NumPy array; NumPy refuses them (`__array__` raises, `__array_ufunc__` is
None, `__array_function__` declines), and the functions here refuse host `numpy.ndarray` operands, so
every implicit host<->device crossing fails as on a GPU.  Only `asarray` (host->device) and `asnumpy`
/ `.get()` (device->host) cross explicitly.  Every device->host synchronization CuPy makes (scalar
reads, data-dependent output sizes, transfers) bumps a counter read by `_standin_syncs()`.

Functions are NumPy's, wrapped through one table (`_FUNCS`); the few whose CuPy signature is
narrower (`take`, `unpackbits`) or whose behaviour differs (`where`, `repeat`) are written out.
"""

from __future__ import annotations

import builtins  # the module defines sum, min, max, any, all, abs as CuPy does
import operator
from collections.abc import Callable
from typing import Any

import numpy as _np

from . import cuda as cuda
from ._raw import RawKernel, RawModule  # noqa: F401  (CuPy's names)

_STANDIN = True  # how activate.py tells this module from a real CuPy
_IMPLICIT = "Implicit conversion to a NumPy array is not allowed. Please use `.get()` to construct a NumPy array explicitly."

# dtypes and constants: CuPy re-exports NumPy's
bool_, int8, int16, int32, int64, uint8, uint16, uint32, uint64 = (
    _np.bool_, _np.int8, _np.int16, _np.int32, _np.int64, _np.uint8, _np.uint16, _np.uint32, _np.uint64)
float32, float64, complex64, complex128 = _np.float32, _np.float64, _np.complex64, _np.complex128
intp, integer, floating, number, generic = _np.intp, _np.integer, _np.floating, _np.number, _np.generic
dtype, iinfo, finfo, result_type, promote_types, can_cast = (
    _np.dtype, _np.iinfo, _np.finfo, _np.result_type, _np.promote_types, _np.can_cast)
inf, nan, pi, e, newaxis = _np.inf, _np.nan, _np.pi, _np.e, _np.newaxis

_syncs = 0


def _standin_syncs() -> int:
    """Device->host synchronizations so far (tests assert the backend keeps them per superstep)."""
    return _syncs


def _sync() -> None:
    global _syncs
    _syncs += 1


class _MemoryPool:
    """`get_default_memory_pool()`: bytes held by live device arrays that own their memory."""

    def __init__(self) -> None:
        self._used = self._high = 0

    def _alloc(self, n: int) -> None:
        self._used += n
        self._high = builtins.max(self._high, self._used)

    def used_bytes(self) -> int:
        return self._used

    def total_bytes(self) -> int:
        return self._high

    def free_all_blocks(self) -> None:
        self._high = self._used


_pool = _MemoryPool()


def get_default_memory_pool() -> _MemoryPool:
    return _pool


def _refuse_void(dt: Any) -> _np.dtype:
    d = _np.dtype(dt)
    if d.kind == "V" or d.fields is not None:
        raise TypeError(f"Unsupported dtype {d}")  # CuPy has no record/void dtypes
    return d


class _Flags:
    """CuPy's flags: c_contiguous, f_contiguous, owndata (no `writeable`)."""

    def __init__(self, a: _np.ndarray) -> None:
        self.c_contiguous = bool(a.flags.c_contiguous)
        self.f_contiguous = bool(a.flags.f_contiguous)
        self.owndata = bool(a.flags.owndata)

    def __getitem__(self, name: str) -> bool:
        return {"C_CONTIGUOUS": self.c_contiguous, "F_CONTIGUOUS": self.f_contiguous,
                "OWNDATA": self.owndata}[name]


def _unwrap(x: Any) -> Any:
    """A device array's NumPy data; scalars pass; host arrays and other objects are refused as CuPy does."""
    if isinstance(x, ndarray):
        return x._a
    if isinstance(x, (bool, int, float, complex, _np.generic)) or x is None:
        return x
    raise TypeError(f"Unsupported type {type(x)}")


def _arg(x: Any) -> Any:
    """A function argument: device arrays unwrapped, host arrays refused, sequences of either checked;
    anything else (shapes, axes, dtypes, strings) as it is."""
    if isinstance(x, (ndarray, _np.ndarray)):
        return _unwrap(x)
    if isinstance(x, (list, tuple)) and builtins.any(isinstance(v, (ndarray, _np.ndarray)) for v in x):
        return [_unwrap(v) for v in x]
    return x


def _wrap(r: Any) -> Any:
    """NumPy results as device arrays: NumPy scalars become 0-d arrays, as CuPy returns."""
    if isinstance(r, _np.ndarray):
        out = object.__new__(ndarray)
        out._a = r
        if r.flags.owndata:
            out._owned = r.nbytes
            _pool._alloc(r.nbytes)
        return out
    if isinstance(r, _np.generic):
        return _wrap(_np.array(r))
    if isinstance(r, tuple):
        return tuple(_wrap(v) for v in r)
    return r


def _index(key: Any) -> Any:
    """An index: ints, slices, None, Ellipsis, device arrays (a boolean mask is a sync: its size is data)."""
    if isinstance(key, tuple):
        return tuple(_index(k) for k in key)
    if isinstance(key, (slice, type(Ellipsis))):
        return key
    a = _unwrap(key)
    if isinstance(a, _np.ndarray) and a.dtype == _np.bool_:
        _sync()
    return a


def _binop(fn: Callable[[Any, Any], Any], reflected: bool = False) -> Callable[[ndarray, Any], Any]:
    if reflected:
        return lambda self, other: _wrap(fn(_unwrap(other), self._a))
    return lambda self, other: _wrap(fn(self._a, _unwrap(other)))


def _inplace(fn: Callable[[Any, Any], Any]) -> Callable[[ndarray, Any], ndarray]:
    def op(self: ndarray, other: Any) -> ndarray:
        self._a = fn(self._a, _unwrap(other))
        return self
    return op


class ndarray:  # noqa: N801  (CuPy's name)
    """A device array: NumPy data that NumPy itself refuses to touch."""

    __slots__ = ("_a", "_owned", "__weakref__")
    __array_priority__ = 100
    __array_ufunc__ = None  # NumPy ufuncs and `host + device` raise TypeError

    def __init__(self, shape: Any, dtype: Any = float) -> None:
        self._a = _np.empty(shape, _refuse_void(dtype))
        self._owned = self._a.nbytes
        _pool._alloc(self._owned)

    def __del__(self) -> None:
        _pool._used -= getattr(self, "_owned", 0)

    def __array__(self, dtype: Any = None, copy: Any = None) -> _np.ndarray:
        raise TypeError(_IMPLICIT)

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        raise TypeError(_IMPLICIT)

    # ---- attributes
    shape = property(lambda self: self._a.shape)
    ndim = property(lambda self: self._a.ndim)
    dtype = property(lambda self: self._a.dtype)
    size = property(lambda self: self._a.size)
    nbytes = property(lambda self: self._a.nbytes)
    itemsize = property(lambda self: self._a.itemsize)
    strides = property(lambda self: self._a.strides)
    flags = property(lambda self: _Flags(self._a))
    T = property(lambda self: _wrap(self._a.T))

    def __len__(self) -> int:
        return len(self._a)

    def __iter__(self):  # noqa: ANN204
        return (_wrap(self._a[i]) for i in range(len(self._a)))

    def __repr__(self) -> str:
        _sync()
        return repr(self._a)

    # ---- device -> host (each a synchronization)
    def get(self) -> _np.ndarray:
        _sync()
        return self._a.copy()

    def item(self, *args: Any) -> Any:
        _sync()
        return self._a.item(*args)

    def tolist(self) -> Any:
        _sync()
        return self._a.tolist()

    def __int__(self) -> int:
        _sync()
        return int(self._a)

    def __float__(self) -> float:
        _sync()
        return float(self._a)

    def __bool__(self) -> bool:
        _sync()
        return bool(self._a)

    def set(self, arr: _np.ndarray) -> None:
        """Host -> device copy into this array (explicit, as CuPy's)."""
        if not isinstance(arr, _np.ndarray) or arr.shape != self.shape:
            raise ValueError("Shape mismatch")
        self._a[...] = arr

    # ---- indexing
    def __getitem__(self, key: Any) -> ndarray:
        return _wrap(self._a[_index(key)])

    def __setitem__(self, key: Any, value: Any) -> None:
        self._a[_index(key)] = _unwrap(value)

    # ---- conversions and shape
    def astype(self, dtype: Any, copy: bool = True, **kw: Any) -> ndarray:
        r = self._a.astype(_refuse_void(dtype), copy=copy, **kw)
        return self if r is self._a else _wrap(r)

    def view(self, dtype: Any = None) -> ndarray:
        return _wrap(self._a.view() if dtype is None else self._a.view(_refuse_void(dtype)))

    def copy(self, order: str = "C") -> ndarray:
        return _wrap(self._a.copy(order))

    def __copy__(self) -> ndarray:
        return self.copy()

    def __deepcopy__(self, memo: dict) -> ndarray:
        return self.copy()

    def reshape(self, *shape: Any, order: str = "C") -> ndarray:
        return _wrap(self._a.reshape(*shape, order=order))

    def ravel(self, order: str = "C") -> ndarray:
        return _wrap(self._a.ravel(order))

    def fill(self, value: Any) -> None:
        self._a.fill(_unwrap(value))

    def nonzero(self) -> tuple[ndarray, ...]:
        _sync()
        return _wrap(self._a.nonzero())

    # ---- reductions: 0-d device arrays, as CuPy's
    def _reduce(self, name: str, *args: Any, **kw: Any) -> Any:
        kw = {k: (_unwrap(v) if k == "out" else v) for k, v in kw.items()}
        return _wrap(getattr(self._a, name)(*args, **kw))

    def argsort(self, axis: int = -1, kind: str | None = None) -> ndarray:
        return _wrap(self._a.argsort(axis=axis, kind=kind))

    def sort(self, axis: int = -1, kind: str | None = None) -> None:
        self._a.sort(axis=axis, kind=kind)

    def take(self, indices: Any, axis: int | None = None, out: ndarray | None = None) -> ndarray:
        return take(self, indices, axis, out)

    def repeat(self, repeats: Any, axis: int | None = None) -> ndarray:
        return repeat(self, repeats, axis)

    def clip(self, min: Any = None, max: Any = None) -> ndarray:  # noqa: A002  (NumPy's names)
        return _wrap(self._a.clip(_unwrap(min), _unwrap(max)))

    def flatten(self) -> ndarray:
        return _wrap(self._a.flatten())

    # ---- operators (host operands raise TypeError through `_unwrap`)
    __add__, __radd__, __iadd__ = _binop(operator.add), _binop(operator.add, True), _inplace(operator.iadd)
    __sub__, __rsub__, __isub__ = _binop(operator.sub), _binop(operator.sub, True), _inplace(operator.isub)
    __mul__, __rmul__, __imul__ = _binop(operator.mul), _binop(operator.mul, True), _inplace(operator.imul)
    __truediv__, __rtruediv__ = _binop(operator.truediv), _binop(operator.truediv, True)
    __itruediv__ = _inplace(operator.itruediv)
    __floordiv__, __rfloordiv__ = _binop(operator.floordiv), _binop(operator.floordiv, True)
    __ifloordiv__ = _inplace(operator.ifloordiv)
    __mod__, __rmod__, __imod__ = _binop(operator.mod), _binop(operator.mod, True), _inplace(operator.imod)
    __pow__, __rpow__, __ipow__ = _binop(operator.pow), _binop(operator.pow, True), _inplace(operator.ipow)
    __and__, __rand__, __iand__ = _binop(operator.and_), _binop(operator.and_, True), _inplace(operator.iand)
    __or__, __ror__, __ior__ = _binop(operator.or_), _binop(operator.or_, True), _inplace(operator.ior)
    __xor__, __rxor__, __ixor__ = _binop(operator.xor), _binop(operator.xor, True), _inplace(operator.ixor)
    __lshift__, __rlshift__ = _binop(operator.lshift), _binop(operator.lshift, True)
    __ilshift__ = _inplace(operator.ilshift)
    __rshift__, __rrshift__ = _binop(operator.rshift), _binop(operator.rshift, True)
    __irshift__ = _inplace(operator.irshift)
    __matmul__, __rmatmul__ = _binop(operator.matmul), _binop(operator.matmul, True)
    __eq__, __ne__ = _binop(operator.eq), _binop(operator.ne)  # type: ignore[assignment]
    __lt__, __le__, __gt__, __ge__ = _binop(operator.lt), _binop(operator.le), _binop(operator.gt), _binop(operator.ge)
    __hash__ = None  # type: ignore[assignment]

    def __neg__(self) -> ndarray:
        return _wrap(-self._a)

    def __pos__(self) -> ndarray:
        return _wrap(+self._a)

    def __abs__(self) -> ndarray:
        return _wrap(operator.abs(self._a))

    def __invert__(self) -> ndarray:
        return _wrap(~self._a)


# ---- host <-> device (explicit)

# reductions and scans: NumPy's, returning device arrays (0-d for full reductions, like CuPy)
for _name in ("sum", "min", "max", "any", "all", "mean", "argmin", "argmax", "cumsum", "prod"):
    setattr(ndarray, _name, lambda self, *a, _n=_name, **k: self._reduce(_n, *a, **k))


def asarray(a: Any, dtype: Any = None, order: Any = None) -> ndarray:
    """Host data (NumPy arrays, lists, scalars) to the device; a device array as it is (or cast)."""
    if isinstance(a, ndarray):
        return a if dtype is None else a.astype(dtype, copy=False)
    h = _np.asarray(a, dtype=None if dtype is None else _refuse_void(dtype), order=order)
    _refuse_void(h.dtype)
    return _wrap(h.copy())


def array(obj: Any, dtype: Any = None, copy: bool = True, order: str = "K", ndmin: int = 0) -> ndarray:
    if isinstance(obj, ndarray):
        return _wrap(_np.array(obj._a, dtype=dtype, copy=copy, order=order, ndmin=ndmin))
    return asarray(_np.array(obj, dtype=dtype, order=order, ndmin=ndmin), dtype)


def asnumpy(a: Any, stream: Any = None, order: str = "C", out: _np.ndarray | None = None) -> _np.ndarray:
    """Device -> host copy (a synchronization); host input is returned as an array, as CuPy's."""
    if not isinstance(a, ndarray):
        return _np.asarray(a, order=order)
    _sync()
    if out is not None:
        out[...] = a._a
        return out
    return _np.array(a._a, order=order)


def get_array_module(*args: Any) -> Any:
    import sys

    return sys.modules[__name__] if builtins.any(isinstance(a, ndarray) for a in args) else _np


# ---- functions: NumPy's, on device operands only

def _device_fn(name: str, sync: bool = False) -> Callable[..., Any]:
    """NumPy's `name` over device operands."""
    fn = getattr(_np, name)

    def f(*args: Any, **kw: Any) -> Any:
        if sync:
            _sync()
        return _wrap(fn(*map(_arg, args), **{n: _arg(v) for n, v in kw.items()}))

    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"NumPy's `{name}` on device arrays{' (a synchronization)' if sync else ''}."
    return f


def _creation_fn(name: str) -> Callable[..., Any]:
    """Shapes/values in, a device array out (`*_like` take a device array)."""
    fn = getattr(_np, name)

    def f(*args: Any, **kw: Any) -> Any:
        args = tuple(map(_arg, args))
        if "dtype" in kw and kw["dtype"] is not None:
            _refuse_void(kw["dtype"])
        return _wrap(fn(*args, **kw))

    f.__name__ = f.__qualname__ = name
    return f


_FUNCS = ("cumsum cumprod diff searchsorted argsort sort lexsort packbits broadcast_to nan_to_num clip any all "
          "concatenate stack hstack vstack sum prod amin amax min max mean argmin argmax ndim copy ravel reshape isin array_equal allclose "
          "flip dot count_nonzero ascontiguousarray")
_SYNC_FUNCS = ("flatnonzero", "nonzero", "argwhere", "bincount", "unique")  # count_nonzero: a 0-d device array
for _n in _FUNCS.split():
    globals()[_n] = _device_fn(_n)
for _n in _SYNC_FUNCS:  # data-dependent output sizes (or a count) are read back to the host
    globals()[_n] = _device_fn(_n, sync=True)
for _n in ("zeros", "ones", "empty", "full", "arange", "linspace", "zeros_like", "ones_like", "empty_like",
           "full_like"):
    globals()[_n] = _creation_fn(_n)


def where(condition: ndarray, x: Any = None, y: Any = None) -> Any:
    """`where(c, a, b)` elementwise; one-argument `where(c)` is `nonzero` (a synchronization)."""
    if x is None and y is None:
        _sync()
        return _wrap(_np.where(_unwrap(condition)))
    return _wrap(_np.where(_unwrap(condition), _unwrap(x), _unwrap(y)))


def repeat(a: ndarray, repeats: Any, axis: int | None = None) -> ndarray:
    """Device `repeats` make the output size data: a synchronization."""
    if isinstance(repeats, ndarray):
        _sync()
    r = repeats if isinstance(repeats, (list, tuple)) else _unwrap(repeats)
    return _wrap(_np.repeat(_unwrap(a), r, axis=axis))


def take(a: ndarray, indices: Any, axis: int | None = None, out: ndarray | None = None) -> ndarray:
    """CuPy's `take` has no `mode`.  CuPy wraps out-of-range indices silently; here they raise
    IndexError, so such a bug fails in CI instead of giving wrong answers on a GPU."""
    r = _np.take(_unwrap(a), _unwrap(indices), axis=axis)
    if out is not None and not isinstance(out, ndarray):
        raise TypeError(f"Unsupported type {type(out)}")
    if out is None:
        return _wrap(r)
    out._a[...] = r
    return out


def unpackbits(a: ndarray, axis: int | None = None, bitorder: str = "big") -> ndarray:
    """CuPy's `unpackbits` has no `count`."""
    return _wrap(_np.unpackbits(_unwrap(a), axis=axis, bitorder=bitorder))


# ---- ufuncs

_AT_DTYPES = frozenset("iIlLqQfd")  # atomics: 32/64-bit ints and floats (no bool, no 8/16-bit)


class ufunc:  # noqa: N801  (CuPy's name)
    """A NumPy ufunc on device operands, with only the methods CuPy 14 implements for it."""

    def __init__(self, np_ufunc: _np.ufunc, methods: frozenset[str] = frozenset()) -> None:
        self._u, self._methods = np_ufunc, methods
        self.name, self.nin, self.nout, self.nargs = np_ufunc.__name__, np_ufunc.nin, np_ufunc.nout, np_ufunc.nargs

    def __repr__(self) -> str:
        return f"<ufunc '{self.name}'>"

    def __call__(self, *args: Any, out: ndarray | None = None, **kw: Any) -> Any:
        r = self._u(*(_unwrap(a) for a in args), **kw)
        if out is not None and not isinstance(out, ndarray):
            raise TypeError(f"Unsupported type {type(out)}")
        if out is None:
            return _wrap(r)
        out._a[...] = r
        return out

    def _check(self, method: str) -> None:
        if method not in self._methods:
            raise NotImplementedError(f"`{self.name}.{method}` is not supported yet")

    def reduce(self, array: ndarray, axis: int = 0, dtype: Any = None, out: Any = None,
               keepdims: bool = False) -> Any:
        self._check("reduce")
        return _wrap(self._u.reduce(_unwrap(array), axis=axis, dtype=dtype, keepdims=keepdims))

    def accumulate(self, array: ndarray, axis: int = 0, dtype: Any = None, out: Any = None) -> ndarray:
        self._check("accumulate")
        return _wrap(self._u.accumulate(_unwrap(array), axis=axis, dtype=dtype))

    def reduceat(self, array: ndarray, indices: ndarray, axis: int = 0, dtype: Any = None,
                 out: Any = None) -> ndarray:
        """Only `add`, as a difference of cumulative sums: exact for ints, rounded otherwise for floats."""
        self._check("reduceat")
        a, idx = _unwrap(array), _unwrap(indices)
        if a.dtype.kind != "f" or a.ndim != 1:
            return _wrap(self._u.reduceat(a, idx, axis=axis, dtype=dtype))
        cs = _np.concatenate([[0.0], _np.cumsum(a, dtype=dtype)])
        ends = _np.append(idx[1:], len(a))
        r = _np.where(idx < ends, cs[_np.maximum(ends, idx)] - cs[idx], a[_np.minimum(idx, len(a) - 1)])
        return _wrap(r.astype(dtype or a.dtype))

    def at(self, a: ndarray, indices: Any, b: Any = None) -> None:
        """Atomic scatter: `add`/`subtract`/`minimum`/`maximum` on 32/64-bit ints and floats."""
        self._check("at")
        if not isinstance(a, ndarray):
            raise TypeError(f"Unsupported type {type(a)}")
        if a.dtype.char not in _AT_DTYPES:
            raise TypeError(f"`{self.name}.at` does not support dtype {a.dtype}")
        if self.name in ("minimum", "maximum") and a.dtype.kind == "f":
            _float_minmax_at(self.name, a._a, _index(indices), _unwrap(b))
            return
        self._u.at(a._a, _index(indices), _unwrap(b))


def _float_minmax_at(name: str, a: _np.ndarray, idx: Any, b: Any) -> None:
    """CuPy 14's float `minimum.at`/`maximum.at`, rounding as it does: its atomicMin/atomicMax on
    `double` (cupy/_core/include/cupy/atomics.cuh) is a compare-and-swap loop around `fminf`/`fmaxf`,
    so every update converts the old value and the operand to float32 and stores the float32 result
    (NaN dropped, as fminf drops it).  Each touched element is rounded even where its value wins; the
    untouched keep their float64 values.  A runtime path that still relies on it gives wrong float
    answers here, as it would on a GPU."""
    touched = _np.zeros(a.shape, dtype=bool)
    touched[idx] = True
    a32 = a.astype(_np.float32)
    (_np.fmin if name == "minimum" else _np.fmax).at(a32, idx, _np.asarray(b).astype(_np.float32))
    a[touched] = a32[touched]


_METHODS = {"add": "reduce accumulate reduceat at", "multiply": "reduce accumulate", "subtract": "at",
            "minimum": "reduce at", "maximum": "reduce at"}
_UFUNCS = ("add subtract multiply divide true_divide floor_divide remainder mod fmod power negative absolute "
           "minimum maximum fmin fmax logical_and logical_or logical_xor logical_not bitwise_and bitwise_or "
           "bitwise_xor invert left_shift right_shift equal not_equal less less_equal greater greater_equal "
           "isnan isinf isfinite trunc rint floor ceil sqrt exp log sign")
for _n in _UFUNCS.split():
    globals()[_n] = ufunc(getattr(_np, _n), frozenset(_METHODS.get(_n, "").split()))
abs = globals()["absolute"]  # noqa: A001
del _n
