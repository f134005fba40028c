"""`cupyx.scipy.sparse` of the stand-in: CSR/CSC over SciPy, with cuSPARSE's limits.

CuPy keeps the parts on the device (`data`, `indices`, `indptr` are device arrays, the index arrays
int32), accepts only bool/float32/float64/complex data (int64 data raises ValueError), and multiplies
by device vectors only.
"""

from __future__ import annotations

from typing import Any

import cupy as _cp
import numpy as _np
import scipy.sparse as _sp

_DATA_KINDS = "?fdFD"


def issparse(x: Any) -> bool:
    return isinstance(x, _compressed)


class _compressed:  # noqa: N801
    _sp_class: Any = None
    format = ""

    def __init__(self, arg1: Any, shape: tuple[int, int] | None = None, dtype: Any = None,
                 copy: bool = False) -> None:
        if _sp.issparse(arg1):  # a host SciPy matrix: an explicit transfer
            m = self._sp_class(arg1, dtype=dtype)
        elif isinstance(arg1, tuple) and len(arg1) == 3:
            if not all(isinstance(v, _cp.ndarray) and v.ndim == 1 for v in arg1):
                raise ValueError("data, indices, and indptr should be 1-D")
            data, indices, indptr = (v._a for v in arg1)
            m = self._sp_class((data if dtype is None else data.astype(dtype), indices, indptr), shape=shape,
                               copy=copy)
        else:
            raise ValueError("Unsupported initializer format")
        if m.dtype.char not in _DATA_KINDS:
            raise ValueError("Only bool, float32, float64, complex64 and complex128 are supported")
        m.indices = m.indices.astype(_np.int32)
        m.indptr = m.indptr.astype(_np.int32)
        self._m = m

    @classmethod
    def _of(cls, m: Any) -> Any:
        out = object.__new__(cls)
        m.indices, m.indptr = m.indices.astype(_np.int32), m.indptr.astype(_np.int32)
        out._m = m
        return out

    data = property(lambda self: _cp._wrap(self._m.data))
    indices = property(lambda self: _cp._wrap(self._m.indices))
    indptr = property(lambda self: _cp._wrap(self._m.indptr))
    shape = property(lambda self: self._m.shape)
    dtype = property(lambda self: self._m.dtype)
    nnz = property(lambda self: self._m.nnz)
    ndim = 2

    def __matmul__(self, other: Any) -> Any:
        if not isinstance(other, _cp.ndarray):
            raise TypeError(f"Unsupported type {type(other)}")
        return _cp._wrap(_np.asarray(self._m @ other._a))

    dot = __matmul__

    def tocsr(self, copy: bool = False) -> csr_matrix:
        return csr_matrix._of(self._m.tocsr(copy=copy))

    def tocsc(self, copy: bool = False) -> csc_matrix:
        return csc_matrix._of(self._m.tocsc(copy=copy))

    def get(self, stream: Any = None) -> Any:
        """Device -> host copy (a synchronization)."""
        _cp._sync()
        return self._m.copy()


class csr_matrix(_compressed):  # noqa: N801  (CuPy's name)
    _sp_class = _sp.csr_matrix
    format = "csr"


class csc_matrix(_compressed):  # noqa: N801
    _sp_class = _sp.csc_matrix
    format = "csc"
