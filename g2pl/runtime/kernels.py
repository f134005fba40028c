"""The NumPy backend's kernels: segmented reductions in CSR order, scatter-reductions, the
branch-free select and the counter-based RNG.

No Python loop over vertices or edges: every function works on whole arrays.
Only numpy_backend.py uses them in the runtime's verbs (a CuPy backend has its own, with the same
results); partition.py uses `expand_ranges` on the host while it builds graph parts.
"""

from __future__ import annotations

from typing import Final

import numpy as np

from g2pl.runtime import array_kernels as AK
from g2pl.runtime.rng import uniform  # noqa: F401  (the NumPy backend's RNG: rng.py, shared by every backend)
from g2pl.runtime.values import DTYPES, INT64_MAX, INT64_MIN, empty_value, identity  # noqa: F401


def float_to_int(a: np.ndarray) -> np.ndarray:
    """`int(x)` of floats (docs/language.md, "Integer arithmetic and empty aggregations"): truncation toward zero,
    saturating at the int64 range (`inf` -> INT64_MAX, `-inf` -> INT64_MIN), `nan` -> 0."""
    with np.errstate(invalid="ignore"):
        r = np.trunc(np.nan_to_num(a, nan=0.0)).astype(np.int64)  # in range for |x| < 2**63
    r = np.where(a >= 2.0**63, INT64_MAX, r)
    return np.where(a < -(2.0**63), INT64_MIN, r)


_BITS = {4: np.int32, 8: np.int64}
SELECT_BLOCK = 1 << 15

#: `np.take` mode for gathers whose indices are all valid.  Any mode but "raise" writes `out` directly
#: (no temporary); "wrap" keeps the bounds test a branch, which the CPU predicts and runs ahead of, where
#: "clip" clamps each index (a conditional move the load must wait for): on a 2-core AMD EPYC VM the
#: 31.4M-entry int32 gather of kron:20 takes 0.025 s against 0.032 s CPU (bench/take_mode.py).  Valid indices
#: give the same values either way.
TAKE_MODE: Final = "wrap"


def select(cond, a, b):
    """`np.where(cond, a, b)` without branches.

    NumPy's `where` branches per element, so on a mask with no pattern (half
    the vertices of a BFS level, the entries of a random sender set) it runs
    at mispredict speed: 0.9 ms for 262K int64 against 0.1 ms on a uniform
    mask.  A bool mask becomes an all-ones/all-zeros integer mask and the
    result is `b ^ ((a ^ b) & m)` on the values' bits (exact for floats,
    NaNs and infinities included; bools use `&`/`|`).  Under 1/64 of the
    mask on one side, the other side is copied and the few written over
    (half of `where`'s time); under 1/10, and for other types, `where`.
    """
    if not (isinstance(cond, np.ndarray) and cond.dtype == np.bool_ and cond.ndim == 1 and cond.size >= 4096):
        r = np.where(cond, a, b)
        return r if r.ndim else r[()]  # all scalars: a scalar, not a 0-d array (callers test ndarray-ness)
    dt = np.result_type(a, b)
    if dt == np.bool_:
        return (cond & a) | (~cond & b)
    bits = _BITS.get(dt.itemsize)
    if bits is None or dt.kind not in "iuf":
        return np.where(cond, a, b)
    n = cond.size
    k = np.count_nonzero(cond)
    if min(k, n - k) * 64 < n:  # nearly uniform: copy the common side, write the few others
        few = k <= n - k
        idx = np.flatnonzero(cond if few else ~cond)
        base, put = (b, a) if few else (a, b)
        out = np.empty(n, dt)
        out[...] = base
        out[idx] = put[idx] if np.ndim(put) else put
        return out
    if min(k, n - k) * 10 < n:  # mostly uniform: where's branch is predicted well enough
        return np.where(cond, a, b)
    av, bv = np.asarray(a, dt).view(bits), np.asarray(b, dt).view(bits)
    out = np.empty(n, bits)
    # in blocks that stay in cache: the mask and a ^ b never go to memory (9 ms instead of 15 at 7.6M)
    m, x = np.empty(SELECT_BLOCK, bits), np.empty(SELECT_BLOCK, bits)
    for i in range(0, n, SELECT_BLOCK):
        j = min(i + SELECT_BLOCK, n)
        mm, xx = m[:j - i], x[:j - i]
        ai = av[i:j] if av.ndim else av
        bi = bv[i:j] if bv.ndim else bv
        np.subtract(0, cond[i:j], out=mm, dtype=bits)  # all ones where cond holds
        np.bitwise_xor(ai, bi, out=xx)
        np.bitwise_and(mm, xx, out=mm)
        np.bitwise_xor(mm, bi, out=out[i:j])
    return out.view(dt)


class _Ops(AK.HostOps):
    """The shared kernels' operations on host arrays, with the branch-free select."""

    select = staticmethod(select)


_OPS = _Ops()


class Segments:
    """CSR row structure: `indptr` over `n` rows; precomputes what `reduceat` needs."""

    def __init__(self, indptr: np.ndarray) -> None:
        self.indptr = indptr
        self.n = len(indptr) - 1
        counts = np.diff(indptr)
        self.counts = counts
        self.nonempty = np.flatnonzero(counts > 0)
        self.starts = indptr[:-1][self.nonempty]
        self._owner: np.ndarray | None = None

    @property
    def owner(self) -> np.ndarray:
        """Row of every entry (built on first use: it is as long as the adjacency)."""
        if self._owner is None:
            self._owner = np.repeat(np.arange(self.n, dtype=np.int64), self.counts)
        return self._owner

    def reduce(self, ufunc: np.ufunc, vals: np.ndarray, fill) -> np.ndarray:
        """Per-row ufunc reduction; rows without entries get `fill`."""
        out = np.full(self.n, fill, dtype=vals.dtype)
        if len(self.starts):
            out[self.nonempty] = ufunc.reduceat(vals, self.starts)
        return out

    def sum(self, vals: np.ndarray) -> np.ndarray:
        return self.reduce(np.add, vals, 0)

    def row_blocks(self, size: int) -> list[tuple[int, int, int, int]]:
        """Consecutive blocks of whole rows of about `size` entries each (a longer row is a block of
        its own): (first row, end row, first entry, end entry)."""
        total = int(self.indptr[-1])
        cuts = np.searchsorted(self.indptr, np.arange(size, total, size), side="left")
        cuts = np.concatenate([[0], cuts, [self.n]])
        cuts = cuts[np.append(True, cuts[1:] != cuts[:-1])].tolist()
        ptr = self.indptr[cuts].tolist()
        return [(a, b, lo, hi) for a, b, lo, hi in zip(cuts[:-1], cuts[1:], ptr[:-1], ptr[1:])]

    #: entries gathered per block by `gather_reduce` (the block stays in cache between gather and reduce)
    BLOCK = 1 << 17

    def gather_reduce(self, ufunc: np.ufunc, table: np.ndarray, idx: np.ndarray, fill) -> np.ndarray:
        """`reduce(ufunc, table[idx], fill)` (idx: one table index per entry) without the entry-length
        array: rows are taken in blocks of about BLOCK entries, each gathered into one reused buffer and
        reduced while it is still in cache.  Same result (each row's entries are reduced in order)."""
        total = len(idx)
        st, ne = self.starts, self.nonempty
        if total <= 2 * self.BLOCK or not len(st):
            return self.reduce(ufunc, table[idx], fill)
        out = np.full(self.n, fill, dtype=table.dtype)
        cuts = np.append(np.searchsorted(st, np.arange(0, total, self.BLOCK)), len(st))  # ascending
        cuts = cuts[np.append(True, cuts[1:] != cuts[:-1])]  # without repeats (no hashing np.unique)
        buf = np.empty(self.BLOCK, dtype=table.dtype)
        for a, b in zip(cuts[:-1].tolist(), cuts[1:].tolist()):
            lo = int(st[a])
            hi = int(st[b]) if b < len(st) else total
            blk = buf[:hi - lo] if hi - lo <= self.BLOCK else np.empty(hi - lo, dtype=table.dtype)
            np.take(table, idx[lo:hi], out=blk, mode=TAKE_MODE)
            out[ne[a:b]] = ufunc.reduceat(blk, st[a:b] - lo)
        return out

    def count(self, mask: np.ndarray) -> np.ndarray:
        """Entries per row where `mask` (bool, one per entry) holds, as int64 (no int64 copy of the mask)."""
        out = np.zeros(self.n, dtype=np.int64)
        if len(self.starts):
            out[self.nonempty] = np.add.reduceat(mask, self.starts, dtype=np.int64)
        return out


def seg_reduce(seg: Segments, op: str, value: np.ndarray, mask: np.ndarray | None, elem: str,
               ids: np.ndarray | None = None) -> np.ndarray:
    """Aggregate per-entry `value` into rows with the language's empty and tie rules (array_kernels)."""
    return AK.seg_reduce(_OPS, seg, op, value, mask, elem, ids)


def expand_ranges(starts: np.ndarray, lens: np.ndarray) -> np.ndarray:
    """Concatenation of arange(s, s + l) for each (s, l), without a Python loop."""
    return AK.expand_ranges(_OPS, starts, lens)


#: entries per row the early-exit pull reads from `Segments.heads` (rounds of 1, 2 and 4 entries)
HEADS = 7


def _heads(seg: Segments, nbr: np.ndarray) -> np.ndarray | None:
    """The first HEADS neighbours of every row, one contiguous array per position (a row with fewer
    entries repeats its last one, which an "any" reads again harmlessly); None when that would be
    larger than `nbr` itself.  Made once per row structure and neighbour array."""
    kept = seg.__dict__.get("_heads")
    if kept is not None and kept[0] is nbr:
        return kept[1]
    n, m = seg.n, len(nbr)
    heads = None
    if m and HEADS * n * 4 <= m * nbr.itemsize:
        first = seg.indptr[:-1]
        last = np.maximum(seg.indptr[1:] - 1, first)  # an empty row's column is never read
        # neighbours index the owned and ghost vertices, fewer than n + m
        heads = np.empty((HEADS, n), dtype=np.int32 if n + m < 2**31 else nbr.dtype)
        for k in range(HEADS):
            np.take(nbr, np.minimum(np.minimum(first + k, last), m - 1), out=heads[k], mode=TAKE_MODE)
    seg.__dict__["_heads"] = (nbr, heads)
    return heads


def any_pull(seg: Segments, nbr: np.ndarray, x: np.ndarray, budget: int | None = None,
             rows: np.ndarray | None = None) -> np.ndarray | None:
    """Per row: does any neighbour j have x[j]?  Pull with early exit: every row still looking reads
    its next 1, 2, 4, ... neighbours in one round (rows that hit are done), so a row stops reading
    soon after its first hit and only rows without any hit read their whole list.

    The first rounds read each row's first neighbours from `_heads` (rows ascend, so that is a
    stream through a small table instead of a cache miss per row in the whole adjacency: 40% of a
    kron:20 BFS's bottom-up step); gathers are `np.take`, a third faster than indexing.

    With `budget`: None as soon as finishing would take more than `budget` entry reads in all (the
    caller then has a cheaper way, e.g. pushing from the senders with x). With `rows` (ascending
    row indices): only those rows are looked at; every other row is False.
    """
    take = np.take
    indptr = seg.indptr
    res = np.zeros(seg.n, dtype=bool)
    if rows is None:
        rows = seg.nonempty
        pos, end = take(indptr, rows), take(indptr, rows + 1)
    else:
        pos, end = take(indptr, rows), take(indptr, rows + 1)
        keep = np.flatnonzero(end > pos)
        rows, pos, end = take(rows, keep), take(pos, keep), take(end, keep)
    heads = _heads(seg, nbr) if len(rows) else None
    spent, w = 0, 1
    while len(rows):
        cnt = None
        if w == 1:
            total = len(rows)
        else:
            cnt = np.minimum(end - pos, w)
            total = int(cnt.sum())
            if budget is not None and spent + total > budget:
                return None
        spent += total
        if heads is not None and 2 * w - 1 <= HEADS:  # entries w-1 .. 2w-2 of each row: from the heads
            hit = take(x, take(heads[w - 1], rows))
            for k in range(w, 2 * w - 1):
                hit |= take(x, take(heads[k], rows))
        elif cnt is None:  # w == 1
            hit = take(x, take(nbr, pos))
        else:
            offs = np.cumsum(cnt)
            offs -= cnt
            idx = np.repeat(pos - offs, cnt)
            idx += np.arange(total, dtype=np.int64)
            hit = np.logical_or.reduceat(take(x, take(nbr, idx)), offs)
        pos += 1 if cnt is None else cnt
        res[take(rows, np.flatnonzero(hit))] = True
        keep = np.flatnonzero(~hit & (pos < end))
        rows, pos, end = take(rows, keep), take(pos, keep), take(end, keep)
        w *= 2
    return res


def scatter_reduce(op: str, recv: np.ndarray, vals: np.ndarray, mask: np.ndarray | None, n: int, elem: str,
                   ids: np.ndarray | None = None) -> np.ndarray:
    """Aggregate entries into n receivers in any order: the push direction (array_kernels)."""
    return AK.scatter_reduce(_OPS, op, recv, vals, mask, n, elem, ids)
