"""Global aggregation partials: every aggregator's local partial is a few int64 slots (float values
travel as their bit patterns), so all aggregators of a superstep are one int64 vector combined by one
Allreduce with `combine` as the reduction operator.  Host-side: the slots are a few numbers per rank.

Most aggregators take two slots.  A float `sum` or `avg` takes FLOAT_SUM_SLOTS: the exact sum of the
rank's values as an integer count of 2**-1074 (every float64 is a whole multiple of it) in 32-bit
limbs, so that adding ranks' partials limb by limb loses nothing, and the total is rounded once, at
the end: the correctly rounded sum of all the values, whatever their order and however they are
spread over ranks (a rank-by-rank float sum would differ in its last bits between 1, 2 and 3 ranks).
NaN and infinities are counted apart and give IEEE's answer (NaN if any, or both infinities)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import SupportsFloat

import numpy as np

from g2pl.runtime import array_kernels as AK
from g2pl.runtime.values import INT64_MAX, empty_value, identity


def _bits(x: SupportsFloat) -> int:
    return int(np.array([x], dtype=np.float64).view(np.int64)[0])


def _float(bits) -> float:
    return float(np.array([bits], dtype=np.int64).view(np.float64)[0])


def value_kind(op: str, value: np.ndarray, elem: str) -> str:
    """'f' if the aggregator's value slot holds a float, else 'i'."""
    if op == "avg":
        return "f"
    if op in ("count", "or", "and"):
        return "i"
    return "f" if np.asarray(value).dtype.kind == "f" else "i"


#: limbs of an exact float sum: 32 bits each, the last signed and unbounded; 67 * 32 bits hold
#: 2**46 values of at most 2**1024 in units of 2**-1074
_LIMBS = 68
_LIMB_BITS = 32
#: the slots of a float sum: limbs, then the values counted, NaN, +inf and -inf
FLOAT_SUM_SLOTS = _LIMBS + 4


def slots(op: str, vk: str) -> int:
    """How many int64 slots an aggregator's partial takes."""
    return FLOAT_SUM_SLOTS if op in ("sum", "avg") and vk == "f" else 2


def offsets(layout: tuple[tuple[str, str], ...]) -> list[int]:
    """Where each aggregator's slots start in a superstep's vector, and (last) the vector's length."""
    out = [0]
    for op, vk in layout:
        out.append(out[-1] + slots(op, vk))
    return out


def float_sum_slots(v: np.ndarray, bins: Callable | None = None) -> np.ndarray:
    """The FLOAT_SUM_SLOTS partial of the float64 values `v` (host): count times the value where they
    are all one value (two passes), else by `bins` where given and it serves (a function of the bit
    patterns giving kernels.float_bins's hi, lo and non-finite counts, or None), else by
    array_kernels.float_total."""
    v = np.ascontiguousarray(v, dtype=np.float64)
    if len(v) and v.min() == v.max() and math.isfinite(v[0]):  # one value (constant arrays are common)
        num, den = float(v[0]).as_integer_ratio()  # (den: a power of two, at most 2**1074)
        return exact_sum_slots(len(v) * num * ((1 << 1074) // den), [0, 0, 0], len(v))
    got = bins(v.view(np.int64)) if bins is not None else None
    if got is not None:
        return bins_slots(got, len(v))
    total, specials = AK.float_total(AK.HostOps, v, np.asarray)
    return exact_sum_slots(total, specials, len(v))


def bins_slots(got: tuple[np.ndarray, np.ndarray, list[int]], cnt: int) -> np.ndarray:
    """The FLOAT_SUM_SLOTS partial of `cnt` values from their exponent bins (hi, lo, [NaN, +inf, -inf]):
    kernels.float_bins's or raw_kernels.float_bins's."""
    hi, lo, specials = got
    return exact_sum_slots(AK.bins_total(hi, lo), specials, cnt)


def exact_sum_slots(total: int, specials: list[int], cnt: int) -> np.ndarray:
    """The FLOAT_SUM_SLOTS partial of `cnt` values whose finite ones add up to `total` units of
    2**-1074, with `specials` [NaN, +inf, -inf] counts: `total` as limbs, then the counts."""
    nan, pinf, ninf = specials
    limbs = []
    for _ in range(_LIMBS - 1):
        limbs.append(total & ((1 << _LIMB_BITS) - 1))
        total >>= _LIMB_BITS
    limbs.append(total)  # (two's complement all the way up: the remainder carries the sign)
    return np.array(limbs + [cnt, nan, pinf, ninf], dtype=np.int64)


def _float_sum(slots_: np.ndarray) -> float:
    """The correctly rounded sum a FLOAT_SUM_SLOTS partial holds (see float_sum_slots)."""
    _cnt, nan, pinf, ninf = (int(x) for x in slots_[_LIMBS:])
    if nan or (pinf and ninf):
        return float("nan")
    if pinf or ninf:
        return float("inf") if pinf else float("-inf")
    total = 0
    for k in range(_LIMBS - 1, -1, -1):
        total = (total << _LIMB_BITS) + int(slots_[k])
    if total == 0:  # +0.0, as a sum from +0.0 is (a neighbourhood sum's too), even of -0.0s
        return 0.0
    try:
        return total / (1 << 1074)  # Python's int division: correctly rounded
    except OverflowError:
        return float("inf") if total > 0 else float("-inf")


def partial(op: str, value: np.ndarray, mask: np.ndarray | None, elem: str, ids: np.ndarray | None,
            vk: str, bins: Callable | None = None) -> np.ndarray:
    """This rank's partial of aggregation `op` (see `combine`; `bins`: see float_sum_slots)."""
    if mask is not None:
        sel = np.flatnonzero(mask)
        v = value[sel]
        ids_sel = ids[sel] if ids is not None else None
    else:
        v, ids_sel = value, ids
    cnt = len(v)
    if v.dtype == bool and op not in ("or", "and"):
        v = v.astype(np.int64)
    if op == "count":
        return np.array([cnt, cnt], dtype=np.int64)
    if op in ("sum", "avg"):
        if vk == "f":
            return float_sum_slots(v.astype(np.float64, copy=False), bins)
        return np.array([int(v.sum(dtype=np.int64)), cnt], dtype=np.int64)
    if op == "or":
        return np.array([int(bool(v.any())) if cnt else 0, cnt], dtype=np.int64)
    if op == "and":
        return np.array([int(bool(v.all())) if cnt else 1, cnt], dtype=np.int64)
    if op in ("min", "max"):
        if cnt == 0:
            ident = identity(op, np.dtype(np.float64 if vk == "f" else np.int64))
            return np.array([_bits(ident) if vk == "f" else int(ident), 0], dtype=np.int64)
        r = v.min() if op == "min" else v.max()
        return np.array([_bits(r) if vk == "f" else int(r), cnt], dtype=np.int64)
    if op in ("argmin", "argmax", "pick"):
        if cnt == 0:
            return np.array([0, INT64_MAX], dtype=np.int64)
        assert ids_sel is not None  # (these aggregators are given the elements' IDs)
        if op == "pick":
            best, i = v[0], ids_sel[0]
        else:
            best = v.min() if op == "argmin" else v.max()
            i = ids_sel[v == best].min()
        return np.array([_bits(best) if vk == "f" else int(best), int(i)], dtype=np.int64)
    raise ValueError(op)


def combine(layout: tuple[tuple[str, str], ...], a: np.ndarray, b: np.ndarray) -> None:
    """b <- a (+) b, aggregator by aggregator; `layout` is ((op, value kind), ...) per aggregator."""
    for (op, vk), i in zip(layout, offsets(layout)):
        if op in ("sum", "avg") and vk == "f":  # limbs and counts alike: exact integer sums
            b[i:i + FLOAT_SUM_SLOTS] += a[i:i + FLOAT_SUM_SLOTS]
        elif op in ("sum", "avg", "count"):
            b[i] = a[i] + b[i]
            b[i + 1] += a[i + 1]
        elif op == "or":
            b[i] = a[i] | b[i]
            b[i + 1] += a[i + 1]
        elif op == "and":
            b[i] = a[i] & b[i]
            b[i + 1] += a[i + 1]
        elif op in ("min", "max"):
            av = _float(a[i]) if vk == "f" else a[i]
            bv = _float(b[i]) if vk == "f" else b[i]
            if (av < bv) if op == "min" else (av > bv):
                b[i] = a[i]
            b[i + 1] += a[i + 1]
        else:  # argmin / argmax / pick: (value, id) pairs, smaller id wins ties
            if a[i + 1] == INT64_MAX:
                continue
            if b[i + 1] == INT64_MAX:
                b[i], b[i + 1] = a[i], a[i + 1]
                continue
            av = _float(a[i]) if vk == "f" else a[i]
            bv = _float(b[i]) if vk == "f" else b[i]
            better = av < bv if op == "argmin" else av > bv if op == "argmax" else False
            if better or (av == bv or op == "pick") and a[i + 1] < b[i + 1]:
                b[i], b[i + 1] = a[i], a[i + 1]


def finish(op: str, elem: str, vk: str, slots: np.ndarray):
    """The aggregator's value from its combined slots."""
    if op in ("sum", "avg") and vk == "f":
        total, cnt = _float_sum(slots), int(slots[_LIMBS])
        return total if op == "sum" else (total / cnt if cnt else float("nan"))
    a, b = slots[0], slots[1]
    val = _float(a) if vk == "f" else int(a)
    if op == "count":
        return int(a)
    if op == "sum":
        return float(val) if elem == "float" else int(val)
    if op == "avg":
        return val / int(b) if b else float("nan")
    if op in ("or", "and"):
        return bool(a)
    if op in ("min", "max"):
        if b == 0:
            return empty_value(op, elem)
        return float(val) if elem == "float" else int(val)
    if op in ("argmin", "argmax"):
        return -1 if b == INT64_MAX else int(b)
    if op == "pick":
        if b == INT64_MAX:
            return empty_value("pick", elem)
        return {"bool": bool, "int": int, "vid": int, "float": float}[elem](val)
    raise ValueError(op)


def merge_mode(hists: list, elem: str):
    """The global `mode` from every rank's (values, counts) histogram: the value with the largest
    total count, ties to the smaller value; the element type's default when there are no values."""
    vals = np.concatenate([np.asarray(v, dtype=np.int64) for v, _c in hists])
    counts = np.concatenate([np.asarray(c, dtype=np.int64) for _v, c in hists])
    if not len(vals):
        return empty_value("pick", elem)
    uniq, inv = np.unique(vals, return_inverse=True)  # ascending: argmax takes the smallest of ties
    totals = np.zeros(len(uniq), dtype=np.int64)
    np.add.at(totals, inv.reshape(-1), counts)
    best = uniq[int(np.argmax(totals))]
    return bool(best) if elem == "bool" else int(best)
