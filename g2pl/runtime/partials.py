"""Global aggregation partials: every aggregator's local partial is two int64 slots (float values
travel as their bit patterns), so all aggregators of a superstep are one int64 vector combined by one
Allreduce with `combine` as the reduction operator.  Host-side: the slots are a few numbers per rank."""

from __future__ import annotations

from typing import SupportsFloat

import numpy as np

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


def partial(op: str, value: np.ndarray, mask: np.ndarray | None, elem: str, ids: np.ndarray | None,
            vk: str) -> np.ndarray:
    """This rank's two-slot partial of aggregation `op` (see `combine`)."""
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
        s = v.sum(dtype=np.float64 if vk == "f" else np.int64)
        return np.array([_bits(s) if vk == "f" else int(s), cnt], dtype=np.int64)
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
    """b <- a (+) b, slot pair by slot pair; `layout` is ((op, value kind), ...) per aggregator."""
    for j, (op, vk) in enumerate(layout):
        i = 2 * j
        if op in ("sum", "avg", "count"):
            if vk == "f":
                b[i] = _bits(_float(a[i]) + _float(b[i]))
            else:
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
    """The aggregator's value from its combined two slots."""
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
