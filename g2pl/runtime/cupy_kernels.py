"""The CuPy backend's kernels: segmented reductions through `ufunc.at` on each entry's row (CuPy 14
has no `minimum.reduceat`), scatter-reductions with atomics, the adjacency as an SpMV operand.
Each takes the backend `ops` (its array module `ops.xp`: cupy, or the strict stand-in in tests)."""

from __future__ import annotations


class Segments:
    """CSR row structure on the device; reductions through `ufunc.at` on each entry's row."""

    def __init__(self, ops, indptr) -> None:
        self.ops = ops
        self.xp = xp = ops.xp
        self.indptr = indptr
        self.n = len(indptr) - 1
        self.counts = xp.diff(indptr)
        self._owner = None

    @property
    def owner(self):
        if self._owner is None:
            self._owner = self.ops.repeat(self.xp.arange(self.n, dtype=self.xp.int64), self.counts)
        return self._owner

    def reduce(self, ufunc, vals, fill):
        """Per-row `ufunc` reduction (minimum, maximum, add, logical_or); empty rows get `fill`."""
        xp = self.xp
        if vals.dtype == xp.bool_:  # atomics have no bool: or/and as max/min over int32
            out = xp.full(self.n, int(bool(fill)), dtype=xp.int32)
            op = {xp.logical_or: xp.maximum, xp.logical_and: xp.minimum}.get(ufunc, ufunc)
            op.at(out, self.owner, vals.astype(xp.int32))
            return out.astype(xp.bool_)
        out = xp.full(self.n, fill, dtype=vals.dtype)
        ufunc.at(out, self.owner, vals)
        return out

    def sum(self, vals):
        return self.reduce(self.xp.add, vals, 0)

    def gather_reduce(self, ufunc, table, idx, fill):
        return self.reduce(ufunc, table[idx], fill)

    def count(self, mask):
        out = self.xp.zeros(self.n, dtype=self.xp.int64)
        self.xp.add.at(out, self.owner, mask.astype(self.xp.int64))
        return out


class DeviceCSR:
    """Adjacency as a matrix of ones for `@`: float vectors through cuSPARSE (float64), integer
    vectors gathered and added with int64 atomics (exact, wrapping)."""

    def __init__(self, ops, sparse, indptr, cols, n_cols: int) -> None:
        self.xp, self.cols = xp, cols = ops.xp, cols
        self.seg = Segments(ops, indptr)
        self._m = sparse.csr_matrix((xp.ones(len(cols), dtype=xp.float64), cols, indptr),
                                    shape=(len(indptr) - 1, n_cols))

    def __matmul__(self, v):
        xp = self.xp
        if v.dtype.kind == "f":
            return self._m @ v.astype(xp.float64, copy=False)
        return self.seg.sum(v.astype(xp.int64)[self.cols])
