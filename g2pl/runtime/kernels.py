"""Vectorized kernels: segmented reductions in CSR order and the counter-based RNG.

No Python loop over vertices or edges: every function works on whole arrays.
Written against an array module `xp` so the CuPy backend can reuse them.
"""

from __future__ import annotations

import numpy as np

INT64_MAX = np.iinfo(np.int64).max
INT64_MIN = np.iinfo(np.int64).min

DTYPES = {"bool": np.bool_, "int": np.int64, "float": np.float64, "vid": np.int64}


def empty_value(op: str, elem: str):
    """The result of aggregation `op` over no elements (spec 4.2)."""
    if op in ("sum", "count"):
        return 0.0 if elem == "float" else 0
    if op == "avg":
        return float("nan")
    if op == "and":
        return True
    if op == "or":
        return False
    if op in ("argmin", "argmax", "pick"):
        return {"bool": False, "int": 0, "float": 0.0, "vid": -1}[elem] if op == "pick" else -1
    if op == "min":
        return {"float": np.inf, "int": INT64_MAX, "vid": -1}[elem]
    if op == "max":
        return {"float": -np.inf, "int": INT64_MIN, "vid": -1}[elem]
    raise ValueError(op)


def identity(op: str, dtype) -> object:
    """Neutral element used to pad masked-out entries before a reduction."""
    if op in ("sum", "count", "avg"):
        return dtype.type(0)
    if op == "min":
        return np.inf if dtype.kind == "f" else INT64_MAX
    if op == "max":
        return -np.inf if dtype.kind == "f" else INT64_MIN
    raise ValueError(op)


class Segments:
    """CSR row structure: `indptr` over `n` rows; precomputes what `reduceat` needs."""

    def __init__(self, indptr: np.ndarray) -> None:
        self.indptr = indptr
        self.n = len(indptr) - 1
        counts = np.diff(indptr)
        self.counts = counts
        self.nonempty = np.flatnonzero(counts > 0)
        self.starts = indptr[:-1][self.nonempty]
        self.owner = np.repeat(np.arange(self.n, dtype=np.int64), counts)

    def reduce(self, ufunc: np.ufunc, vals: np.ndarray, fill) -> np.ndarray:
        """Per-row ufunc reduction; rows without entries get `fill`."""
        out = np.full(self.n, fill, dtype=vals.dtype)
        if len(self.starts):
            out[self.nonempty] = ufunc.reduceat(vals, self.starts)
        return out

    def sum(self, vals: np.ndarray) -> np.ndarray:
        return self.reduce(np.add, vals, 0)


def seg_reduce(seg: Segments, op: str, value: np.ndarray, mask: np.ndarray | None, elem: str,
               ids_of_entry: np.ndarray | None = None) -> np.ndarray:
    """Aggregate per-entry `value` into rows with the spec's empty and tie rules."""
    if mask is None:
        counts = seg.counts
    else:
        counts = seg.sum(mask.astype(np.int64))
    empty = counts == 0
    if op == "count":
        return counts.astype(np.int64)
    if op in ("and", "or"):
        v = value.astype(bool)
        if op == "or":
            hit = v if mask is None else (v & mask)
            return seg.sum(hit.astype(np.int64)) > 0
        miss = ~v if mask is None else (~v & mask)
        return seg.sum(miss.astype(np.int64)) == 0
    dtype = np.dtype(DTYPES[elem]) if op not in ("argmin", "argmax", "avg") else value.dtype
    if op in ("sum", "avg"):
        vdt = np.float64 if (op == "avg" or value.dtype.kind == "f") else np.int64
        v = value.astype(vdt, copy=False)
        if mask is not None:
            v = np.where(mask, v, vdt(0))
        s = seg.sum(v)
        if op == "sum":
            return s.astype(DTYPES[elem], copy=False)
        with np.errstate(all="ignore"):
            return np.where(empty, np.nan, s / np.maximum(counts, 1))
    if op in ("min", "max"):
        v = value.astype(dtype, copy=False)
        ident = identity(op, v.dtype)
        if mask is not None:
            v = np.where(mask, v, ident)
        r = seg.reduce(np.minimum if op == "min" else np.maximum, v, ident)
        return np.where(empty, empty_value(op, elem), r).astype(dtype, copy=False)
    if op in ("argmin", "argmax"):
        v = value
        if v.dtype == bool:
            v = v.astype(np.int64)
        ident = identity("min" if op == "argmin" else "max", v.dtype)
        if mask is not None:
            v = np.where(mask, v, ident)
        best = seg.reduce(np.minimum if op == "argmin" else np.maximum, v, ident)
        cand = v == best[seg.owner]
        if mask is not None:
            cand &= mask
        cid = np.where(cand, ids_of_entry, INT64_MAX)
        r = seg.reduce(np.minimum, cid, INT64_MAX)
        return np.where(empty | (r == INT64_MAX), -1, r).astype(np.int64)
    raise ValueError(f"unknown aggregation {op}")


def flat_reduce(op: str, value: np.ndarray, mask: np.ndarray | None, elem: str,
                ids: np.ndarray | None = None) -> tuple[np.ndarray, str]:
    """Local partial of a global aggregation as a small float/int vector plus the combine op.

    Returns (partial, combine) where combine is how ranks merge partials; the
    final value is produced by `finish_reduce`.
    """
    if mask is not None:
        sel = np.flatnonzero(mask)
        v = value[sel] if value.ndim else np.broadcast_to(value, sel.shape)
        ids_sel = ids[sel] if ids is not None else None
    else:
        v = value
        ids_sel = ids
    cnt = len(v)
    if op == "count":
        return np.array([cnt], dtype=np.int64), "sum"
    if op in ("sum", "avg"):
        if v.dtype == bool:
            v = v.astype(np.int64)
        s = v.sum(dtype=np.float64 if (v.dtype.kind == "f" or op == "avg") else np.int64)
        return np.array([s, cnt], dtype=np.float64 if (v.dtype.kind == "f" or op == "avg") else np.int64), "sum"
    if op == "or":
        return np.array([bool(v.any()) if cnt else False]), "or"
    if op == "and":
        return np.array([bool(v.all()) if cnt else True]), "and"
    if op in ("min", "max"):
        if cnt == 0:
            return np.array([empty_value(op, elem), 0], dtype=np.float64 if elem == "float" else np.int64), op
        r = v.min() if op == "min" else v.max()
        return np.array([r, cnt], dtype=np.float64 if elem == "float" else np.int64), op
    if op in ("argmin", "argmax", "pick"):
        # (value, id) pairs: lexicographic min of (value, id) / (-value, id)
        if cnt == 0:
            return np.array([np.nan, INT64_MAX], dtype=np.float64), op
        if op == "pick":
            return np.array([v[0], ids_sel[0]], dtype=np.float64 if elem == "float" else np.int64), op
        best = v.min() if op == "argmin" else v.max()
        i = ids_sel[v == best].min()
        return np.array([best, i], dtype=np.float64), op
    raise ValueError(op)


def finish_reduce(op: str, partial: np.ndarray, elem: str):
    """Final scalar of a global aggregation from the combined partial."""
    if op == "count":
        return int(partial[0])
    if op == "sum":
        return float(partial[0]) if elem == "float" else int(partial[0])
    if op == "avg":
        return float(partial[0]) / partial[1] if partial[1] else float("nan")
    if op in ("or", "and"):
        return bool(partial[0])
    if op in ("min", "max"):
        if partial[1] == 0:
            return empty_value(op, elem)
        return float(partial[0]) if elem == "float" else int(partial[0])
    if op in ("argmin", "argmax"):
        return -1 if partial[1] == INT64_MAX else int(partial[1])
    if op == "pick":
        if partial.dtype.kind == "f" and np.isnan(partial[0]) and partial[1] == INT64_MAX:
            return empty_value("pick", elem)
        v = partial[0]
        return {"bool": bool, "int": int, "vid": int, "float": float}[elem](v)
    raise ValueError(op)


# ---------------------------------------------------------------- counter-based RNG (splitmix64)

_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_GOLD = np.uint64(0x9E3779B97F4A7C15)


def _mix(x: np.ndarray) -> np.ndarray:
    x = x ^ (x >> np.uint64(30))
    x = x * _M1
    x = x ^ (x >> np.uint64(27))
    x = x * _M2
    return x ^ (x >> np.uint64(31))


def uniform(seed: int, site: int, count: int, key_a: np.ndarray, key_b: np.ndarray | None = None) -> np.ndarray:
    """Uniform floats in [0, 1), a pure function of (seed, call site, execution count, element key).

    Keys are original IDs, so results do not depend on ranks, relabelling or backend.
    """
    with np.errstate(over="ignore"):
        base = _mix(np.uint64(seed & 0xFFFFFFFFFFFFFFFF) * _GOLD + np.uint64(site + 1))
        base = _mix(base ^ (np.uint64(count + 1) * _GOLD))
        x = _mix(np.asarray(key_a).astype(np.uint64) + base)
        if key_b is not None:
            x = _mix(x ^ (np.asarray(key_b).astype(np.uint64) * _GOLD))
    return (x >> np.uint64(11)).astype(np.float64) * (1.0 / 9007199254740992.0)
