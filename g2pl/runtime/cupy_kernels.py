"""The CuPy backend's kernels: segmented reductions per CSR row and the adjacency as an SpMV operand,
both through the raw CUDA kernels of raw_kernels.py (CuPy 14 has no `minimum.reduceat`, and its
float64 `minimum.at`/`maximum.at` round through float32).  Each takes the backend `ops` (its array
module `ops.xp`: cupy, or the strict stand-in in tests)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from g2pl.runtime import raw_kernels as RK

if TYPE_CHECKING:
    from g2pl.runtime.cupy_backend import CuPyBackend


class Segments:
    """CSR row structure on the device; reductions run per row over fixed chunks of entries (no
    per-entry owner array: `owner` is built only for the callers that index with it)."""

    def __init__(self, ops: CuPyBackend, indptr) -> None:
        self.ops = ops
        self.xp = xp = ops.xp
        self.indptr = indptr
        self.n = len(indptr) - 1
        self.counts = xp.diff(indptr)
        self._indptr64 = RK.dense(xp, indptr, xp.int64)
        self._owner = None

    @property
    def owner(self):
        """Row of every entry (as long as the adjacency: made on first use only)."""
        if self._owner is None:
            self._owner = self.ops.repeat(self.xp.arange(self.n, dtype=self.xp.int64), self.counts)
        return self._owner

    def reduce(self, ufunc, vals, fill):
        """Per-row `ufunc` reduction (minimum, maximum, add, logical_or, logical_and); empty rows get
        `fill`.  Exact for every dtype (NaN propagates as in NumPy), float sums in a fixed order."""
        op = RK.ufunc_op(self.xp, ufunc)
        if op is None:  # another ufunc: its atomic scatter (never a float min/max: those are kernels)
            out = self.xp.full(self.n, fill, dtype=vals.dtype)
            ufunc.at(out, self.owner, vals)
            return out
        return RK.seg_reduce(self.xp, self._indptr64, op, fill, vals=vals)

    def sum(self, vals):
        return self.reduce(self.xp.add, vals, 0)

    def gather_reduce(self, ufunc, table, idx, fill, blocks=None):
        """`reduce(ufunc, table[idx], fill)` with the gather fused into the reduction (no entry-length
        temporary)."""
        op = RK.ufunc_op(self.xp, ufunc)
        if op is None:
            return self.reduce(ufunc, table[idx], fill)
        return RK.seg_reduce(self.xp, self._indptr64, op, fill, table=table, idx=idx)

    def count(self, mask):
        """Entries with `mask` per row (int64)."""
        return RK.row_counts(self.xp, self._indptr64, mask)


class DeviceCSR:
    """Adjacency as a matrix of ones for `@`: y[r] = sum of v over row r's columns, gathered and summed
    per row by one kernel (no values array of ones, no cuSPARSE).  Float vectors in float64 (a fixed
    order), integer vectors in int64 (exact, wrapping)."""

    def __init__(self, ops: CuPyBackend, sparse, indptr, cols, n_cols: int) -> None:
        self.xp, self.cols, self.n_cols = ops.xp, cols, n_cols
        self.seg = Segments(ops, indptr)
        self.shape = (self.seg.n, n_cols)

    def __matmul__(self, v):
        xp = self.xp
        # (a float32 table, a narrowed message, is gathered as it is and summed in float64)
        table = v if v.dtype == xp.float32 else v.astype(xp.float64 if v.dtype.kind == "f" else xp.int64, copy=False)
        return self.seg.gather_reduce(xp.add, table, self.cols, 0)
