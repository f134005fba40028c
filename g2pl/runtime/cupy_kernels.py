"""The CuPy backend's kernels: segmented reductions through `ufunc.at` on each entry's row (CuPy 14
has no `minimum.reduceat`), scatter-reductions with atomics, the adjacency as an SpMV operand.
Each function takes the array module `xp` (cupy, or the strict stand-in in tests)."""

from __future__ import annotations

import numpy as np

from g2pl.runtime.values import DTYPES, INT64_MAX, empty_value, identity


class Segments:
    """CSR row structure on the device; reductions through `ufunc.at` on each entry's row."""

    def __init__(self, xp, indptr) -> None:
        self.xp = xp
        self.indptr = indptr
        self.n = len(indptr) - 1
        self.counts = xp.diff(indptr)
        self._owner = None

    @property
    def owner(self):
        if self._owner is None:
            self._owner = self.xp.repeat(self.xp.arange(self.n, dtype=self.xp.int64), self.counts)
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

    def __init__(self, xp, sparse, indptr, cols, n_cols: int) -> None:
        self.xp, self.cols = xp, cols
        self.seg = Segments(xp, indptr)
        self._m = sparse.csr_matrix((xp.ones(len(cols), dtype=xp.float64), cols, indptr),
                                    shape=(len(indptr) - 1, n_cols))

    def __matmul__(self, v):
        xp = self.xp
        if v.dtype.kind == "f":
            return self._m @ v.astype(xp.float64, copy=False)
        return self.seg.sum(v.astype(xp.int64)[self.cols])


def seg_reduce(xp, seg, op: str, value, mask, elem: str, ids=None):
    if op == "count":
        return (seg.counts if mask is None else seg.count(mask)).astype(xp.int64)
    if op in ("and", "or"):
        v = value.astype(bool, copy=False)
        if op == "or":
            return seg.reduce(xp.logical_or, v if mask is None else v & mask, False)
        return ~seg.reduce(xp.logical_or, ~v if mask is None else ~v & mask, False)
    if op in ("min", "max"):
        dt = np.dtype(DTYPES[elem])
        v = value.astype(dt, copy=False)
        ident = identity(op, dt)
        if mask is not None:
            v = xp.where(mask, v, dt.type(ident))
        r = seg.reduce(xp.minimum if op == "min" else xp.maximum, v, ident)
        ev = empty_value(op, elem)
        if ev != ident:
            counts = seg.counts if mask is None else seg.count(mask)
            r[counts == 0] = ev
        return r
    counts = seg.counts if mask is None else seg.count(mask)
    empty = counts == 0
    if op in ("sum", "avg"):
        vdt = xp.float64 if (op == "avg" or value.dtype.kind == "f") else xp.int64
        v = value.astype(vdt, copy=False)
        if mask is not None:
            v = xp.where(mask, v, vdt(0))
        s = seg.sum(v)
        if op == "sum":
            return s.astype(DTYPES[elem], copy=False)
        return xp.where(counts == 0, xp.nan, s / xp.maximum(counts, 1))
    if op in ("argmin", "argmax"):
        v = value.astype(xp.int64) if value.dtype == xp.bool_ else value
        ident = identity("min" if op == "argmin" else "max", v.dtype)
        if mask is not None:
            v = xp.where(mask, v, ident)
        best = seg.reduce(xp.minimum if op == "argmin" else xp.maximum, v, ident)
        cand = v == best[seg.owner]
        if mask is not None:
            cand &= mask
        r = seg.reduce(xp.minimum, xp.where(cand, ids, INT64_MAX), INT64_MAX)
        return xp.where(empty | (r == INT64_MAX), -1, r).astype(xp.int64)
    raise ValueError(f"unknown aggregation {op}")

def scatter_reduce(xp, op: str, recv, vals, mask, n: int, elem: str, ids=None):
    if mask is not None:
        sel = xp.flatnonzero(mask)
        recv, vals = recv[sel], vals[sel]
        ids = ids[sel] if ids is not None else None
    counts = xp.bincount(recv, minlength=n)
    if op == "count":
        return counts.astype(xp.int64)
    if op in ("or", "and"):
        hit = vals.astype(bool) if op == "or" else ~vals.astype(bool)
        out = xp.zeros(n, dtype=xp.int32)
        xp.maximum.at(out, recv, hit.astype(xp.int32))
        return out.astype(bool) if op == "or" else ~out.astype(bool)
    if op == "sum":
        out = xp.zeros(n, dtype=xp.int64)
        xp.add.at(out, recv, vals.astype(xp.int64))
        return out.astype(DTYPES[elem], copy=False)
    if op in ("min", "max", "argmin", "argmax"):
        base = "min" if op in ("min", "argmin") else "max"
        v = vals.astype(xp.int64) if vals.dtype == xp.bool_ else vals
        ident = identity(base, v.dtype)
        best = xp.full(n, ident, dtype=v.dtype)
        (xp.minimum if base == "min" else xp.maximum).at(best, recv, v)
        empty = counts == 0
        if op in ("min", "max"):
            return xp.where(empty, empty_value(op, elem), best).astype(DTYPES[elem], copy=False)
        cand = v == best[recv]
        win = xp.full(n, INT64_MAX, dtype=xp.int64)
        xp.minimum.at(win, recv[cand], ids[cand])
        return xp.where(empty | (win == INT64_MAX), -1, win).astype(xp.int64)
    raise ValueError(f"{op} is not pushed")
