"""The NumPy backend's kernels: segmented reductions in CSR order, scatter-reductions, the
branch-free select and the counter-based RNG.

No Python loop over vertices or edges: every function works on whole arrays.
Only numpy_backend.py uses them in the runtime's verbs (a CuPy backend has its own, with the same
results); partition.py uses `expand_ranges` on the host while it builds graph parts.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any, Final

import numpy as np

from g2pl.contract import DEFAULTS
from g2pl.runtime import array_kernels as AK
from g2pl.runtime import cpu_kernels
from g2pl.runtime.column_blocks import ColumnBlocks
from g2pl.runtime.rng import uniform  # noqa: F401  (the NumPy backend's RNG: rng.py, shared by every backend)
from g2pl.runtime.values import DTYPES, INT64_MAX, INT64_MIN, empty_value, identity, sum_dtype  # noqa: F401


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
    if _BITS.get(dt.itemsize) is None or dt.kind not in "iuf":
        return np.where(cond, a, b)
    return _blend(cond, a, b, None, dt)


def _blend(cond: np.ndarray, a, b, out: np.ndarray | None, dt: np.dtype) -> np.ndarray:
    """`cond ? a : b` of 4- or 8-byte numbers `dt` (select's three ways by the mask's balance), into
    `out`, which is None (a new array) or `b` itself (select_into: every way reads an element of b
    before it writes it)."""
    n = cond.size
    k = int(np.count_nonzero(cond))
    if min(k, n - k) * 64 < n:  # nearly uniform: copy the common side, write the few others
        few = k <= n - k
        idx = np.flatnonzero(cond if few else ~cond)
        base, put = (b, a) if few else (a, b)
        put = put[idx] if np.ndim(put) else put  # (before `out` is written: `put` may be `out`)
        if out is None:
            out = np.empty(n, dt)
        if base is not out:
            out[...] = base
        out[idx] = put
        return out
    if out is not None and cpu_kernels.use(n):  # in place, compiled: a conditional move per element
        vals = np.asarray(a, dtype=out.dtype)
        cpu_kernels.run_rows(_write_where, (cond, vals.reshape(-1), vals.ndim == 0, out), items=n, nthreads=1)
        return out
    if min(k, n - k) * 10 < n:  # mostly uniform: where's branch is predicted well enough
        if out is None:
            return np.where(cond, a, b)
        np.copyto(out, a, where=cond)
        return out
    bits = _BITS[dt.itemsize]
    if out is None:
        out = np.empty(n, bits)
    av, bv, ov = np.asarray(a, dt).view(bits), np.asarray(b, dt).view(bits), out.view(bits)
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
        np.bitwise_xor(mm, bi, out=ov[i:j])
    return out if out.dtype == dt else out.view(dt)


def _write_where(cond, vals, scalar, out, cuts):  # pragma: no cover (compiled)
    """out[i] = vals[i] (vals[0] where `scalar`) where cond[i]: a conditional move, no branch to
    mispredict on a patternless mask.  One thread: 1M int64 at half density in 1.3-1.7 ms (NumPy's
    blended select, 3 ms); numba's parallel build of this loop took twice as long on two threads."""
    for c in prange(len(cuts) - 1):
        for i in range(cuts[c], cuts[c + 1]):
            v = vals[0] if scalar else vals[i]
            out[i] = v if cond[i] else out[i]


def _narrow32(v, mask, masked, ident32, out, cuts):  # pragma: no cover (compiled)
    """out[i] = v[i] where mask[i] (every i unless `masked`), else ident32; False as soon as a value is
    not strictly inside int32 (see narrow_int32)."""
    for c in prange(len(cuts) - 1):
        for i in range(cuts[c], cuts[c + 1]):
            x = v[i]
            if x <= -2147483648 or x >= 2147483647:
                return False
            out[i] = ident32 if masked and not mask[i] else x
    return True


def _widen32(r32, ident32, ident, out, cuts):  # pragma: no cover (compiled)
    """out[i] = r32[i], or ident where it is ident32; returns how many are."""
    at = 0
    for c in prange(len(cuts) - 1):
        for i in range(cuts[c], cuts[c + 1]):
            x = r32[i]
            if x == ident32:
                out[i] = ident
                at += 1
            else:
                out[i] = x
    return at


def narrow_int32(v: np.ndarray, mask: np.ndarray | None, ident32: int) -> np.ndarray | None:
    """Backend.narrow_int32: one compiled pass where numba serves (NumPy's way takes four: the least
    and greatest value, the cast, the select), else array_kernels.narrow_int32."""
    if not cpu_kernels.use(len(v)):
        return AK.narrow_int32(AK.HostOps, v, mask, ident32)
    out = np.empty(len(v), dtype=np.int32)
    flags = mask if mask is not None else np.ones(1, dtype=bool)
    ok = cpu_kernels.run_rows(_narrow32, (v, flags, mask is not None, np.int32(ident32), out), items=len(v),
                              nthreads=1)
    return out if ok else None


def widen_int32(r32: np.ndarray, ident32: int, ident: int) -> tuple[np.ndarray, int]:
    """Backend.widen_int32: one compiled pass where numba serves, else array_kernels.widen_int32."""
    if not cpu_kernels.use(len(r32)):
        return AK.widen_int32(AK.HostOps, r32, ident32, ident)
    out = np.empty(len(r32), dtype=np.int64)
    at = cpu_kernels.run_rows(_widen32, (r32, np.int32(ident32), np.int64(ident), out), items=len(r32), nthreads=1)
    return out, int(at)


def _float_bins(b, hi, lo, counts, cuts):  # pragma: no cover (compiled)
    """Bins of an exact float64 sum by exponent field: each finite value is sign * m * 2**(s - 1074) with
    m < 2**53 and 0 <= s < 2046; hi[s] and lo[s] add m's upper 27 and lower 26 bits, signed (int64: a
    bin takes 2**36 values exactly); counts gets the NaN, +inf and -inf.  array_kernels.bins_total makes
    the total of them."""
    for c in prange(len(cuts) - 1):
        for i in range(cuts[c], cuts[c + 1]):
            x = b[i]
            e = (x >> 52) & 0x7FF
            if e == 0x7FF:
                if x & 0xFFFFFFFFFFFFF:
                    counts[0] += 1
                elif x > 0:
                    counts[1] += 1
                else:
                    counts[2] += 1
                continue
            m = (x & 0xFFFFFFFFFFFFF) | (np.int64(e != 0) << 52)
            s = e - 1 if e > 0 else 0
            sg = x >> 63  # 0, or -1 for a negative value: (y ^ sg) - sg is y or -y, with no branch
            hi[s] += ((m >> 26) ^ sg) - sg
            lo[s] += ((m & 0x3FFFFFF) ^ sg) - sg


def float_bins(b: np.ndarray) -> tuple[np.ndarray, np.ndarray, list[int]] | None:
    """`_float_bins` of the float64 bit patterns `b` (hi, lo, [NaN, +inf, -inf]): one compiled pass,
    about 2-3 ms per million values on the 2-core VM, where array_kernels.float_total takes 5-8 ms and
    a plain (inexact) NumPy sum 0.5 ms; None where numba does not serve (cpu_kernels.use)."""
    if not cpu_kernels.use(len(b)):
        return None
    hi = np.zeros(2046, dtype=np.int64)
    lo = np.zeros(2046, dtype=np.int64)
    counts = np.zeros(3, dtype=np.int64)
    cpu_kernels.run_rows(_float_bins, (b, hi, lo, counts), items=len(b), nthreads=1)
    return hi, lo, counts.tolist()


class _Probe:
    """The call `ops.select_into(cond, a, v_X)` of generated code, to measure what `sys.getrefcount`
    reports inside it for an array that only the caller's variable holds (interpreters differ)."""

    @staticmethod
    def select_into(cond, a, x):
        return sys.getrefcount(x)

    @staticmethod
    def outer(count: int) -> int:
        return count


def _sole_refs() -> tuple[int, int]:
    """(references to an array held by one variable, seen inside `select_into`; references to an array's
    `base` held by that array alone, seen as `select_into` reads it)."""
    probe = _Probe()  # (as the generated code's `ops`, a local)
    v_x = np.empty(2)
    sole = probe.outer(probe.select_into(None, None, v_x))
    view = np.empty(2).view(np.int64)
    base = view.base
    return sole, sys.getrefcount(base)


_SOLE, _BASE_SOLE = _sole_refs()


def select_into(cond, a, x):
    """`select(cond, a, x)` written into `x` itself, where nothing but the calling code's variable holds
    x: the generated code's `X = { c ? e : x | x <- X }` (codegen emits `ops.select_into(c, e, v_X)`
    there), whose old X is dead once the statement is done.  A BFS level update then writes only the
    newly reached vertices instead of copying all of Level (kron:20, 1M int64: 0.3 ms against 1.7 ms a
    superstep).  Values are never written once made anywhere else (edges.Members, the message caches
    and checkpoints rely on it), so any other holder of x, or of the memory under it, shows in its
    reference count, and then, or where the types differ, the result is a new array as `select`'s."""
    if sys.getrefcount(x) != _SOLE or not _alone(x) or not isinstance(cond, np.ndarray) \
            or cond.dtype != np.bool_ or cond.shape != x.shape or x.dtype.itemsize not in _BITS \
            or x.dtype.kind not in "iuf" or np.result_type(a, x) != x.dtype \
            or (isinstance(a, np.ndarray) and a.shape != x.shape):
        return select(cond, a, x)
    return _blend(cond, a, x, x, x.dtype)


def _alone(x) -> bool:
    """A writable 1-D array whose memory no other array shares: its own, or a same-size base that
    only x holds (select's blended arrays are views of their integer bits)."""
    if not isinstance(x, np.ndarray) or x.ndim != 1 or not x.flags.writeable or not x.flags.c_contiguous:
        return False
    base = x.base
    if base is None:
        return True
    return isinstance(base, np.ndarray) and base.base is None and base.nbytes == x.nbytes \
        and sys.getrefcount(base) == _BASE_SOLE


class _Ops(AK.HostOps):
    """The shared kernels' operations on host arrays, with the branch-free select."""

    select = staticmethod(select)
    select_into = staticmethod(select_into)


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

    def gather_reduce(self, ufunc: np.ufunc, table: np.ndarray, idx: np.ndarray, fill,
                      blocks: ColumnBlocks | None = None) -> np.ndarray:
        """`reduce(ufunc, table[idx], fill)` (idx: one table index per entry) without the entry-length
        array: one compiled pass over a large adjacency (`row_reduce`, by `blocks` where given), else
        rows are taken in blocks of about BLOCK entries, each gathered into one reused buffer and
        reduced while it is still in cache.  Same result (each row's entries are reduced in order)."""
        total = len(idx)
        if ufunc is not np.add:
            got = row_reduce("min" if ufunc is np.minimum else "max" if ufunc is np.maximum else "",
                             self.indptr, idx, table, fill, blocks=blocks)
            if got is not None:
                return got
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


#: numba's `prange` in the compiled kernels below (cpu_kernels._jit binds it before compiling them)
prange = range


def _row_sums(indptr, cols, x, zero, out, cuts):  # pragma: no cover (compiled)
    for b in prange(len(cuts) - 1):  # blocks of whole rows (cpu_kernels.run_rows): one thread a row
        for r in range(cuts[b], cuts[b + 1]):
            s = zero
            for k in range(indptr[r], indptr[r + 1]):
                s += x[np.uint64(cols[np.uint64(k)])]  # (unsigned indices: no test for a negative one)
            out[r] = s


def _row_extreme(indptr, cols, x, fill, out, most, cuts):  # pragma: no cover (compiled)
    """Per row the least (the greatest where `most`) of x over its entries, NaN propagating as
    np.minimum's does; `fill` for an empty row.  (`most` is the same for every entry: LLVM's loop
    unswitching takes its test out of the loop.)"""
    for b in prange(len(cuts) - 1):
        for r in range(cuts[b], cuts[b + 1]):
            lo, hi = indptr[r], indptr[r + 1]
            if lo == hi:
                out[r] = fill
                continue
            s = x[np.uint64(cols[np.uint64(lo)])]
            for k in range(lo + 1, hi):
                v = x[np.uint64(cols[np.uint64(k)])]
                if (v > s if most else v < s) or v != v:
                    s = v
            out[r] = s


def _row_extreme_selects(indptr, cols, x, fill, out, most, cuts):  # pragma: no cover (compiled)
    """`_row_extreme` with a conditional move per entry instead of a branch (the same answers).  On
    several threads it is the faster (kron:20's 31.4M-entry int32 min pull on two threads: median 0.83x
    of `_row_extreme`'s time, 24 interleaved pairs); on one, the branch, which the processor predicts
    (a row's least label is seldom displaced), lets it run ahead: 1.09x."""
    for b in prange(len(cuts) - 1):
        for r in range(cuts[b], cuts[b + 1]):
            lo, hi = indptr[r], indptr[r + 1]
            if lo == hi:
                out[r] = fill
                continue
            s = x[np.uint64(cols[np.uint64(lo)])]
            if most:
                for k in range(lo + 1, hi):
                    v = x[np.uint64(cols[np.uint64(k)])]
                    s = v if (v > s) | (v != v) else s
            else:
                for k in range(lo + 1, hi):
                    v = x[np.uint64(cols[np.uint64(k)])]
                    s = v if (v < s) | (v != v) else s
            out[r] = s


_ROW_KERNELS: dict[str, Callable[..., None]] = {"sum": _row_sums, "min": _row_extreme, "max": _row_extreme}


def row_reduce(op: str, indptr: np.ndarray, cols: np.ndarray, x: np.ndarray, fill=0,
               force: bool = False, nthreads: int | None = None, blocks: ColumnBlocks | None = None
               ) -> np.ndarray | None:
    """Per CSR row, `op` ("sum", "min", "max") of x[cols[k]] over its entries k, in one compiled pass:
    each entry costs its column index and the gathered value, with no entry-length array in between
    (SciPy's product also reads an 8-byte 1.0 per entry; NumPy's gather and `reduceat`, three passes).
    A sum adds a row's entries in order from +0 (SciPy's `csr_matvec` order, so the same bits); an empty
    row gets `fill` for min and max.  Rows are shared among `nthreads` threads (default
    cpu_kernels.threads()), each row reduced by one, so the bits do not depend on the count.  None (the
    caller's NumPy path, the same answer) where numba is absent or turned off, or the adjacency is too
    small to repay loading it (cpu_kernels.use), unless `force` (where numba is there).  `blocks`, the
    same entries by column blocks (column_blocks.py), serve instead where they can: the same bits."""
    if blocks is not None:
        got = blocks.reduce(op, x, fill, nthreads)
        if got is not None:
            return got
    kernel = _ROW_KERNELS.get(op)
    if kernel is None or not (cpu_kernels.available() if force else cpu_kernels.use(len(cols))):
        return None
    threads = cpu_kernels.threads() if nthreads is None else nthreads
    if op != "sum" and threads > 1:
        kernel = _row_extreme_selects
    acc = sum_dtype(x.dtype) if op == "sum" else x.dtype
    out = np.empty(len(indptr) - 1, dtype=acc)
    args = (indptr, cols, x, x.dtype.type(fill), out, op == "max") if op != "sum" else (indptr, cols, x, acc.type(0), out)
    t0 = time.perf_counter()
    cpu_kernels.run_rows(kernel, args, indptr, nthreads=nthreads)
    if blocks is not None and threads == 1:  # (what the blocks must beat to be kept)
        blocks.rows_took(time.perf_counter() - t0)
    return out


def _row_plus_edge(indptr, cols, x, sent, w, eid, ident, empty, most, all_sent, by_eid, out,
                   cuts):  # pragma: no cover (compiled)
    """Per row the least (greatest where `most`) x[sender] + edge value over the entries whose sender is
    sent; `empty` where none is; NaN propagating as np.minimum's does.  (The flags are the same for
    every entry: LLVM's loop unswitching takes their tests out of the loop.)"""
    for b in prange(len(cuts) - 1):
        for r in range(cuts[b], cuts[b + 1]):
            s = ident
            hit = False
            for k in range(indptr[r], indptr[r + 1]):
                u = np.uint64(k)
                c = np.uint64(cols[u])
                if not all_sent and not sent[c]:
                    continue
                v = x[c] + (w[np.uint64(eid[u])] if by_eid else w[u])
                hit = True
                if (v > s if most else v < s) or v != v:
                    s = v
            out[r] = s if hit else empty


def plus_edge_reduce(op: str, indptr: np.ndarray, nbr: np.ndarray, x: np.ndarray, sent: np.ndarray | None,
                     w: np.ndarray, eid: np.ndarray | None, elem: str) -> np.ndarray | None:
    """Per CSR row, `op` ("min", "max") of x[nbr[k]] + w[eid[k]] (w[k] where `eid` is None) over the
    entries whose sender is `sent` (all where None): one compiled pass, reading each entry's index, its
    sender's flag and value and its edge value, where the head's NumPy evaluation makes an array of each
    and reduces their sum (about seven passes over the entries).  Empty rows (no entry sent) get the
    language's empty value.  None where numba is absent or off, or the adjacency too small to repay
    loading it (cpu_kernels.use)."""
    if op not in ("min", "max") or not cpu_kernels.use(len(nbr)):
        return None
    dtype, ident, empty = _extreme_values(op, elem)
    out = np.empty(len(indptr) - 1, dtype=dtype)
    flags = np.ones(1, dtype=bool) if sent is None else sent.astype(bool, copy=False)
    at = np.zeros(1, dtype=np.int64) if eid is None else eid
    args = (indptr, nbr, x, flags, w, at, ident, empty, op == "max", sent is None, eid is not None, out)
    cpu_kernels.run_rows(_row_plus_edge, args, indptr)
    return out


def _push_plus_edge(indptr, recv, eid, senders, x, w, most, best, got):  # pragma: no cover (compiled)
    """For each sender s in `senders` (in order), each of its entries k (rows of the transposed CSR
    `indptr`): best[recv[k]] = min (max where `most`) of itself and x[s] + w[eid[k]], as np.minimum.at
    (np.maximum.at) updates in that order: a NaN wins, and of equal values the new one is kept, as
    NumPy's `minimum(a, b)` gives b (+0 and -0 are equal: which is kept shows in the sign); got[r]
    marks the receivers reached."""
    for i in range(len(senders)):
        s = np.uint64(senders[i])
        xs = x[s]
        for k in range(indptr[s], indptr[s + np.uint64(1)]):
            u = np.uint64(k)
            r = np.uint64(recv[u])
            v = xs + w[np.uint64(eid[u])]
            cur = best[r]
            got[r] = True
            if ((v >= cur) if most else (v <= cur)) or (v != v and cur == cur):
                best[r] = v


def push_plus_edge(op: str, indptr: np.ndarray, recv: np.ndarray, eid: np.ndarray, senders: np.ndarray,
                   x: np.ndarray, w: np.ndarray, n: int, elem: str) -> np.ndarray | None:
    """Backend.push_plus_edge: per receiver r < n, `op` ("min", "max") of x[s] + w[eid[k]] over the
    transposed entries k of the pushing `senders` s that reach it, in one compiled pass in the order the
    array path scatters them (scatter_reduce: the entries gathered into arrays, the head evaluated over
    them, then `at_minmax`), so the same values; the language's empty value where none reaches.  None
    where numba is absent or off, or the entries are too few to repay loading it."""
    if op not in ("min", "max") or not cpu_kernels.use(len(recv)):
        return None
    dtype, ident, empty = _extreme_values(op, elem)
    best = np.full(n, ident, dtype=dtype)
    got = np.zeros(n, dtype=bool)
    cpu_kernels._jit(_push_plus_edge)(indptr, recv, eid, senders, x, w, op == "max", best, got)
    best[~got] = empty
    return best


def _extreme_values(op: str, elem: str) -> tuple[np.dtype, Any, Any]:
    """(dtype, identity, the language's empty value) of a min or max of `elem`s."""
    dtype = np.dtype(DTYPES[elem])
    return dtype, dtype.type(identity(op, dtype)), dtype.type(empty_value(op, elem))


def seg_reduce(seg: Segments, op: str, value: np.ndarray, mask: np.ndarray | None, elem: str,
               ids: np.ndarray | None = None) -> np.ndarray:
    """Aggregate per-entry `value` into rows with the language's empty and tie rules (array_kernels;
    `mode` by `row_modes` where it serves)."""
    if op == "mode":
        got = row_modes(seg.indptr, value, mask, elem)
        if got is not None:
            return got
    return AK.seg_reduce(_OPS, seg, op, value, mask, elem, ids)


#: the multiplier of the hash of `_row_modes` (Fibonacci hashing: 2**64 / the golden ratio, odd)
_GOLDEN = 0x9E3779B97F4A7C15


def _row_modes(indptr, nbr, by_nbr, vals, mask, masked, empty, out, tally, cuts):  # pragma: no cover (compiled)
    """Per row the value most frequent among its entries (those where `mask`, when `masked`), ties to
    the smaller; `empty` where there are none.  Entry k's value and flag are vals[k] and mask[k], or,
    `by_nbr`, those of its sender nbr[k] (the flags are the same for every entry: LLVM's loop
    unswitching takes their tests out of the loop).  Each row's values are copied out first (a loop of
    independent reads, which the processor overlaps; read inside the counting loop, each would wait
    for the one before), then counted in an open-addressing table of the least power of two at least
    twice the row's length (its top bits of value * _GOLDEN, then linear probing), cleared per row,
    the leader kept as the counts grow: whichever value reaches the highest count, the smaller of two
    that reach it.  Each block of rows has its buffers, made for its longest row: about 28 bytes an
    entry of that row (counts of `tally`'s type: int32, int64 for rows of 2**31 entries or more)."""
    golden = np.uint64(_GOLDEN)
    for b in prange(len(cuts) - 1):  # blocks of whole rows (cpu_kernels.run_rows), buffers each
        longest = 1
        for r in range(cuts[b], cuts[b + 1]):
            longest = max(longest, indptr[r + 1] - indptr[r])
        cap = 2
        while cap < 2 * longest:
            cap *= 2
        row = np.empty(longest, dtype=vals.dtype)
        keys = np.empty(cap, dtype=vals.dtype)
        counts = np.zeros(cap, dtype=tally.dtype)
        for r in range(cuts[b], cuts[b + 1]):
            lo, hi = indptr[r], indptr[r + 1]
            bits = 1
            while (1 << bits) < 2 * (hi - lo):
                bits += 1
            top = np.uint64(64 - bits)
            wrap = np.uint64((1 << bits) - 1)
            counts[:1 << bits] = 0
            d = 0
            for k in range(lo, hi):
                u = np.uint64(nbr[np.uint64(k)]) if by_nbr else np.uint64(k)
                if not masked or mask[u]:
                    row[d] = vals[u]
                    d += 1
            best = empty
            most = 0
            for t in range(d):
                v = row[t]
                h = (np.uint64(v) * golden) >> top
                while counts[h] != 0 and keys[h] != v:
                    h = (h + np.uint64(1)) & wrap
                c = counts[h] + 1
                counts[h] = c
                keys[h] = v
                if c > most or (c == most and v < best):
                    most = c
                    best = v
            out[r] = best


def row_modes(indptr: np.ndarray, value: np.ndarray, mask: np.ndarray | None, elem: str,
              nbr: np.ndarray | None = None) -> np.ndarray | None:
    """Per CSR row the `mode` of `value` (ints or bools) over its entries where `mask`: one compiled
    pass of counting per row, where array_kernels.group_mode sorts every entry by (row, value) (kron:20's
    31.4M entries: about 0.13 s against 0.5-5.8 s, fewer distinct values the faster for the sort).
    `value` and `mask` hold one element per entry, or, given `nbr` (each entry's sender), per sender:
    read through it, with no entry-length copy.  The rows are shared among threads, one row to one
    thread: the same answer on any count; the language's default (`elem`'s) for a row with none.  None
    where numba is absent or off, or the entries are too few to repay loading it."""
    entries = int(indptr[-1]) if len(indptr) else 0
    if not cpu_kernels.use(entries):
        return None
    vals = value.astype(np.int64, copy=False)
    out = np.empty(len(indptr) - 1, dtype=np.int64)
    tally = np.zeros(1, dtype=np.int64 if entries >= 2**31 else np.int32)  # (no row longer than all of them)
    flags = np.ones(1, dtype=bool) if mask is None else mask.astype(bool, copy=False)
    at = np.zeros(1, dtype=np.int32) if nbr is None else nbr
    cpu_kernels.run_rows(_row_modes, (indptr, at, nbr is not None, vals, flags, mask is not None,
                                      np.int64(DEFAULTS[elem]), out, tally), indptr)
    return out.astype(DTYPES[elem], copy=False)


def pull_modes(indptr: np.ndarray, nbr: np.ndarray, x: np.ndarray, sent: np.ndarray | None,
               elem: str) -> np.ndarray | None:
    """Backend.pull_modes: `row_modes` over the senders' values `x` read through `nbr`."""
    return row_modes(indptr, x, sent, elem, nbr)


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


def _any_rows(indptr, nbr, x, rows, budget, res, spent, cuts):  # pragma: no cover (compiled)
    for b in prange(len(cuts) - 1):  # blocks of `rows` (cpu_kernels.run_rows)
        reads = 0
        for q in range(cuts[b], cuts[b + 1]):
            r = rows[q]
            for k in range(indptr[r], indptr[r + 1]):
                reads += 1
                if x[np.uint64(nbr[np.uint64(k)])]:
                    res[r] = True
                    break
            if reads > budget:  # the whole pull reads more than the budget: the caller pushes
                break
        spent[b] = reads


def _any_pull_compiled(seg: Segments, nbr: np.ndarray, x: np.ndarray, budget: int | None,
                       rows: np.ndarray | None, nthreads: int | None = None) -> np.ndarray | None:
    """any_pull as one compiled pass over the rows, each read up to its first hit by one thread (same
    answer for any thread count); None when the reads exceed `budget`."""
    rows = seg.nonempty if rows is None else rows
    res = np.zeros(seg.n, dtype=bool)
    cap = np.iinfo(np.int64).max if budget is None else int(budget)
    t = cpu_kernels.threads() if nthreads is None else nthreads
    spent = np.zeros(max(t, 1) * cpu_kernels.BLOCKS_PER_THREAD + 1, dtype=np.int64)  # reads per block
    cpu_kernels.run_rows(_any_rows, (seg.indptr, nbr, x, rows, cap, res, spent), items=len(rows), nthreads=t)
    return None if budget is not None and int(spent.sum()) > budget else res


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

    Where numba is there and the rows are many (cpu_kernels.use), one compiled pass instead, shared
    among threads (`_any_pull_compiled`): each row reads up to its first hit, no rounds.  Else
    `pull_rounds`.  The work is about one read per row looked at, not the entries: most rows stop
    at their first neighbours (kron:20's BFS: its two pulls read 1.8% and 0.06% of the 31M entries),
    so a one-off BFS does not load numba for them, which costs more than it saves.
    """
    if cpu_kernels.use(len(seg.nonempty) if rows is None else len(rows)):
        return _any_pull_compiled(seg, nbr, x, budget, rows)
    return pull_rounds(seg, nbr, x, budget, rows)


def pull_rounds(seg: Segments, nbr: np.ndarray, x: np.ndarray, budget: int | None = None,
                rows: np.ndarray | None = None) -> np.ndarray | None:
    """any_pull in NumPy rounds of 1, 2, 4, ... entries per row still looking (see any_pull)."""
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
