"""Kernels written once for any array module (NumPy, CuPy): segmented reductions with the
language's empty and tie rules, push-direction scatter-reductions, range expansion, per-rank bit
packing and the flags of a ghost exchange (a bitmap or the set positions).  Each takes `ops`, a
backend (or `HostOps`): its array module `ops.xp`, its `select`, and the reads that synchronize a
device (`item`, `nonzero`, `bincount`, `repeat`), which a GPU backend counts.  What one library
lacks stays in that backend's own kernels (kernels.py, cupy_kernels.py)."""

from __future__ import annotations

import numpy as np

from g2pl.contract import DEFAULTS
from g2pl.runtime.values import DTYPES, INT64_MAX, empty_value, identity


class HostOps:
    """The device-synchronizing reads for host arrays: plain NumPy (nothing to count)."""

    xp = np

    @staticmethod
    def select(cond, a, b):
        """`np.where(cond, a, b)`."""
        return np.where(cond, a, b)

    @staticmethod
    def item(x):
        """A Python scalar of a 0-d array or NumPy scalar."""
        return x.item() if hasattr(x, "item") else x

    @staticmethod
    def nonzero(mask):
        """flatnonzero(mask)."""
        return np.flatnonzero(mask)

    @staticmethod
    def bincount(x, minlength: int = 0, weights=None):
        return np.bincount(x, weights=weights, minlength=minlength)

    @staticmethod
    def repeat(a, counts):
        return np.repeat(a, counts)

    @staticmethod
    def put_where(arr, mask, value) -> None:
        """arr[mask] = value, in place, without reading the mask back (a boolean-mask store would)."""
        np.putmask(arr, mask, value)

    @staticmethod
    def at_minmax(op: str, out, idx, vals) -> None:
        """out[idx] = min/max(out[idx], vals), unbuffered (repeated indices all count); NaN wins."""
        (np.minimum if op == "min" else np.maximum).at(out, idx, vals)


#: values per weighted bincount in float_total: each weight is below 2**27, so a bin's float64 total
#: stays exact (below 2**53) up to 2**25 of them; chunks of 2**16 keep the temporaries in the cache
_BIN_CHUNK = 1 << 16


def float_total(ops, v, host) -> tuple[int, list[int]]:
    """(the exact sum of the finite float64 values `v` as an integer count of 2**-1074, [NaN, +inf, -inf]
    counts), for partials.exact_sum_slots, in array operations (`ops`; `host` brings an array to the
    host): frexp makes each finite value m * 2**(x - 53) with m an integer below 2**53 (a float, its sign
    kept); m's upper and lower halves, summed by weighted bincounts over x whose float64 totals stay
    exact, give the total in units of 2**-1127, a whole multiple of 2**53 of them.  (kernels.float_bins
    and raw_kernels.float_bins: bins by the exponent field in one pass, the same total.)"""
    xp = ops.xp
    specials = [0, 0, 0]
    if not bool(ops.item(xp.isfinite(v).all())):
        specials = [int(ops.item(xp.count_nonzero(xp.isnan(v)))), int(ops.item(xp.count_nonzero(v == xp.inf))),
                    int(ops.item(xp.count_nonzero(v == -xp.inf)))]
        v = v[ops.nonzero(xp.isfinite(v))]
    hs = np.zeros(2100, dtype=np.int64)  # (int64 totals: exact for 2**36 values)
    ls = np.zeros(2100, dtype=np.int64)
    for at in range(0, int(v.size), _BIN_CHUNK):
        mant, ex = xp.frexp(v[at:at + _BIN_CHUNK])
        t = mant * 2.0**27  # m / 2**26: its whole part is m's upper half, the rest the lower half / 2**26
        hi = xp.trunc(t)
        idx = ex + 1074  # 1 to 2098 (a zero: 1074, adding nothing)
        hs += host(ops.bincount(idx, 2100, hi)).astype(np.int64)
        ls += (host(ops.bincount(idx, 2100, t - hi)) * 2.0**26).astype(np.int64)  # (multiples of 2**-26)
    return bins_total(hs, ls) >> 53, specials


def bins_total(hi: np.ndarray, lo: np.ndarray) -> int:
    """The exact integer sum of hi[s] * 2**(26 + s) + lo[s] * 2**s over every bin s (host int64): an
    exact float sum's total from its bins (float_total's, in units of 2**-1127; kernels.float_bins's
    and raw_kernels.float_bins's, by exponent field, in units of 2**-1074)."""
    total = 0
    for s in np.flatnonzero((hi != 0) | (lo != 0)).tolist():
        total += ((int(hi[s]) << 26) + int(lo[s])) << s
    return total


def narrow_int32(ops, v, mask, ident32: int):
    """Backend.narrow_int32 in array operations."""
    xp = ops.xp
    i32 = xp.iinfo(xp.int32)
    if not (i32.min < ops.item(v.min()) and ops.item(v.max()) < i32.max):
        return None
    v32 = v.astype(xp.int32)
    return v32 if mask is None else ops.select(mask, v32, xp.int32(ident32))


def widen_int32(ops, r32, ident32: int, ident: int):
    """Backend.widen_int32 in array operations."""
    xp = ops.xp
    at = r32 == ident32
    r = r32.astype(xp.int64)
    ops.put_where(r, at, ident)
    return r, int(ops.item(xp.count_nonzero(at)))


def seg_reduce(ops, seg, op: str, value, mask, elem: str, ids=None):
    """Aggregate per-entry `value` into rows with the language's empty and tie rules."""
    xp, select = ops.xp, ops.select
    if op == "count":
        return (seg.counts if mask is None else seg.count(mask)).astype(xp.int64)
    if op in ("and", "or"):
        v = value.astype(bool, copy=False)
        if op == "or":
            hit = v if mask is None else (v & mask)
            return seg.reduce(xp.logical_or, hit, False)
        miss = ~v if mask is None else (~v & mask)
        return ~seg.reduce(xp.logical_or, miss, False)
    if op in ("min", "max"):
        # masked-out entries carry the identity, so one reduction does; the rows left at the identity
        # are empty or hold only identity values, which differ only where the empty value is not it
        dtype = np.dtype(DTYPES[elem])
        v = value.astype(dtype, copy=False)
        ident = identity(op, dtype)
        if mask is not None:
            v = select(mask, v, dtype.type(ident))
        r = seg.reduce(xp.minimum if op == "min" else xp.maximum, v, ident)
        ev = empty_value(op, elem)
        if ev != ident:
            counts = seg.counts if mask is None else seg.count(mask)
            ops.put_where(r, counts == 0, ev)
        return r
    counts = seg.counts if mask is None else seg.count(mask)
    empty = counts == 0
    if op in ("sum", "avg"):
        vdt = xp.float64 if (op == "avg" or value.dtype.kind == "f") else xp.int64
        v = value.astype(vdt, copy=False)
        if mask is not None:
            v = select(mask, v, vdt(0))
        s = seg.sum(v)
        if op == "sum":
            return s.astype(DTYPES[elem], copy=False)
        return xp.where(empty, xp.nan, s / xp.maximum(counts, 1))  # (no division by zero)
    if op in ("argmin", "argmax"):
        v = value
        if v.dtype == bool:
            v = v.astype(xp.int64)
        ident = identity("min" if op == "argmin" else "max", v.dtype)
        if v.dtype.kind == "f":  # NaN values never win
            ok = v == v
            mask = ok if mask is None else (mask & ok)
        if mask is not None:
            v = select(mask, v, ident)
        best = seg.reduce(xp.minimum if op == "argmin" else xp.maximum, v, ident)
        cand = v == best[seg.owner]
        if mask is not None:
            cand &= mask
        cid = select(cand, ids, INT64_MAX)
        r = seg.reduce(xp.minimum, cid, INT64_MAX)
        return xp.where(empty | (r == INT64_MAX), -1, r).astype(xp.int64)
    if op == "mode":
        return group_mode(ops, seg.owner, value, mask, seg.n, elem)
    raise ValueError(f"unknown aggregation {op}")


def group_mode(ops, owner, value, mask, n: int, elem: str):
    """`mode` per receiver: the value most frequent among each receiver's entries (`owner`: the
    receiver of each entry, in any order), ties to the smaller value, the default where none.

    Not combinable at the senders: the entries are sorted by (receiver, value) -- one sort of
    `receiver * span + value` keys when they fit in int64, else two stable sorts --, equal pairs
    form runs, and each receiver takes its first longest run."""
    xp = ops.xp
    out = xp.full(n, DEFAULTS[elem], dtype=DTYPES[elem])
    v = value.astype(xp.int64)
    if mask is not None:
        sel = ops.nonzero(mask)
        owner, v = owner[sel], v[sel]
    k = len(v)
    if k == 0:
        return out
    lo = int(ops.item(v.min()))
    span = int(ops.item(v.max())) - lo + 1
    if n * span < 2**62:
        key = xp.sort(owner * span + (v - lo))
        brk = xp.ones(k, dtype=bool)
        brk[1:] = key[1:] != key[:-1]
        starts = ops.nonzero(brk)
        rk = key[starts]
        ro, rv = rk // span, rk % span + lo
    else:
        order = xp.argsort(v, kind="stable")
        order = order[xp.argsort(owner[order], kind="stable")]
        o, s = owner[order], v[order]
        brk = xp.ones(k, dtype=bool)
        brk[1:] = (o[1:] != o[:-1]) | (s[1:] != s[:-1])
        starts = ops.nonzero(brk)
        ro, rv = o[starts], s[starts]
    lens = xp.diff(xp.concatenate([starts, xp.full(1, k, dtype=starts.dtype)]))
    longest = xp.zeros(n, dtype=lens.dtype)
    xp.maximum.at(longest, ro, lens)
    cand = ops.nonzero(lens == longest[ro])  # runs in (receiver, value) order: the first is the smallest
    co = ro[cand]
    first = xp.ones(len(co), dtype=bool)
    first[1:] = co[1:] != co[:-1]
    win = cand[ops.nonzero(first)]
    out[ro[win]] = rv[win].astype(out.dtype)
    return out


def value_counts(ops, value, mask):
    """(distinct values, how often each occurs) of `value` where `mask` holds: a rank's share of a
    global `mode`, merged exactly across ranks (partials.merge_mode)."""
    xp = ops.xp
    v = value.astype(xp.int64)
    if mask is not None:
        v = v[ops.nonzero(mask)]
    if len(v) == 0:
        return v, xp.zeros(0, dtype=xp.int64)
    s = xp.sort(v)
    brk = xp.ones(len(s), dtype=bool)
    brk[1:] = s[1:] != s[:-1]
    starts = ops.nonzero(brk)
    counts = xp.diff(xp.concatenate([starts, xp.full(1, len(s), dtype=starts.dtype)]))
    return s[starts], counts.astype(xp.int64)


def expand_ranges(ops, starts, lens):
    """Concatenation of arange(s, s + l) for each (s, l), without a Python loop."""
    xp = ops.xp
    total = int(ops.item(lens.sum()))
    if total == 0:
        return xp.zeros(0, dtype=xp.int64)
    offs = xp.cumsum(lens) - lens
    out = ops.repeat(xp.asarray(starts - offs, dtype=xp.int64), lens)
    out += xp.arange(total, dtype=xp.int64)  # in place: one entry-length array, not three
    return out


def scatter_reduce(ops, op: str, recv, vals, mask, n: int, elem: str, ids=None):
    """Aggregate entries (receiver `recv`, value `vals`) in any order into n receivers: the push direction.

    Only exact operations are pushed (see the direction pass), so the result equals the pull result.
    """
    xp = ops.xp
    if op == "mode":
        return group_mode(ops, recv, vals, mask, n, elem)
    if mask is not None:
        sel = ops.nonzero(mask)
        recv, vals = recv[sel], vals[sel]
        ids = ids[sel] if ids is not None else None
    if op == "count":
        return ops.bincount(recv, minlength=n).astype(xp.int64)
    if op == "or":
        out = xp.zeros(n, dtype=bool)
        out[recv[ops.nonzero(vals.astype(bool))]] = True
        return out
    if op == "and":
        bad = xp.zeros(n, dtype=bool)
        bad[recv[ops.nonzero(~vals.astype(bool))]] = True
        return ~bad
    if op == "sum":
        out = xp.zeros(n, dtype=xp.int64)
        xp.add.at(out, recv, vals.astype(xp.int64))
        return out.astype(DTYPES[elem], copy=False)
    if op in ("min", "max", "argmin", "argmax"):
        base = "min" if op in ("min", "argmin") else "max"
        v = vals.astype(xp.int64) if vals.dtype == bool else vals
        ident = identity(base, v.dtype)
        ok = None
        if op in ("argmin", "argmax") and v.dtype.kind == "f":  # NaN values never win
            ok = v == v
            v = ops.select(ok, v, v.dtype.type(ident))
        best = xp.full(n, ident, dtype=v.dtype)
        ops.at_minmax(base, best, recv, v)
        if ops.item(xp.any(v == ident)):  # a value is the identity: count each receiver's entries
            empty = ops.bincount(recv, minlength=n) == 0
        else:  # no value is the identity, so a receiver still at it received none
            empty = best == ident
        if op in ("min", "max"):
            return xp.where(empty, empty_value(op, elem), best).astype(DTYPES[elem], copy=False)
        cand = v == best[recv]
        if ok is not None:
            cand &= ok
        win = xp.full(n, INT64_MAX, dtype=xp.int64)
        won = ops.nonzero(cand)
        xp.minimum.at(win, recv[won], ids[won])
        return xp.where(empty | (win == INT64_MAX), -1, win).astype(xp.int64)
    raise ValueError(f"{op} is not pushed")


def packbits_segments(ops, vals, seg_counts):
    """Bit-pack bools separately per destination segment; returns (bytes, byte counts per segment)."""
    xp = ops.xp
    chunks, counts, a = [], [], 0
    for c in seg_counts.tolist():
        p = xp.packbits(vals[a:a + c].astype(bool))
        chunks.append(p)
        counts.append(len(p))
        a += c
    return (xp.concatenate(chunks) if chunks else xp.zeros(0, xp.uint8)), np.array(counts, dtype=np.int64)


def unpackbits_segments(ops, data, byte_counts, bit_counts):
    """The bools of `packbits_segments` back, `bit_counts` per segment (no `count=`: CuPy has none)."""
    xp = ops.xp
    out, a = [], 0
    for nb, nbits in zip(byte_counts.tolist(), bit_counts.tolist()):
        out.append(xp.unpackbits(data[a:a + nb].view(xp.uint8))[:nbits].astype(bool))
        a += nb
    return xp.concatenate(out) if out else xp.zeros(0, bool)


def uint_width(top: int) -> int:
    """Bytes of the narrowest unsigned integer (1, 2, 4 or 8 bytes) that holds every value up to `top`."""
    return next((w for w in (1, 2, 4) if top < 1 << (8 * w)), 8)


def flags_sparse(n: int, k: int) -> bool:
    """Whether `k` set flags among `n` are fewer bytes as their positions than as a bitmap."""
    return k * uint_width(n - 1) < (n + 7) // 8


def flags_bytes(n: int, k: int, sparse: bool) -> int:
    """Bytes of `n` flags with `k` set, as positions (`sparse`) or as a bitmap."""
    return k * uint_width(n - 1) if sparse else (n + 7) // 8


def to_le_bytes(ops, x, width: int):
    """Non-negative integers as `width` little-endian bytes each, in one uint8 array: shifts, not
    views, so neither the byte order nor the alignment of the buffer carrying them matters."""
    xp = ops.xp
    shifts = xp.arange(0, 8 * width, 8, dtype=xp.int64)
    return ((x.astype(xp.int64)[:, None] >> shifts) & 0xFF).astype(xp.uint8).reshape(-1)


def from_le_bytes(ops, data, width: int):
    """The int64 values of `to_le_bytes` back."""
    xp = ops.xp
    shifts = xp.arange(0, 8 * width, 8, dtype=xp.int64)
    return (data.reshape(-1, width).astype(xp.int64) << shifts).sum(axis=1)


def encode_flags(ops, sel, seg_counts, set_counts, sparse, nz=None) -> list:
    """Per consecutive segment of the bools `sel` (one per destination rank), a uint8 chunk: its
    bitmap, or (`sparse`) the positions of its set entries within it (`flags_sparse` says which is
    fewer bytes).  `set_counts`: the set entries per segment; `nz`: flatnonzero(sel) when made."""
    xp = ops.xp
    out, a, j = [], 0, 0
    for n, k, s in zip(seg_counts.tolist(), set_counts.tolist(), sparse):
        if s:
            if nz is None:
                nz = ops.nonzero(sel)
            out.append(to_le_bytes(ops, nz[j:j + k] - a, uint_width(n - 1)))
        else:
            out.append(xp.packbits(sel[a:a + n].astype(bool, copy=False)))
        a += n
        j += k
    return out


def decode_flags(ops, chunks: list, seg_counts, set_counts, sparse):
    """The bools of `encode_flags` back, all segments in one array."""
    xp = ops.xp
    seg = [int(n) for n in seg_counts]
    out = xp.zeros(sum(seg), dtype=bool)
    a = 0
    for data, n, k, s in zip(chunks, seg, set_counts, sparse):
        if s and k:
            out[from_le_bytes(ops, data, uint_width(n - 1)) + a] = True
        elif not s and n:
            out[a:a + n] = xp.unpackbits(data)[:n].astype(bool)
        a += n
    return out
