"""Returned values -> the JSON shapes of docs/language.md, "Output" (original IDs, sorted, non-finite floats as strings)."""

from __future__ import annotations

import math

import numpy as np


def _num(x, elem: str):
    if elem == "bool":
        return bool(x)
    if elem == "float":
        f = float(x)
        if math.isnan(f):
            return "nan"
        if math.isinf(f):
            return "inf" if f > 0 else "-inf"
        return f
    return int(x)


def _list(arr: np.ndarray, elem: str) -> list:
    """Vectorized conversion of an array to JSON-ready Python values."""
    if elem == "float":
        arr = arr.astype(np.float64, copy=False)
        if np.all(np.isfinite(arr)):
            return arr.tolist()
        obj = arr.astype(object)  # the non-finite ones become their strings in place, not one by one
        obj[np.isnan(arr)] = "nan"
        obj[arr == np.inf] = "inf"
        obj[arr == -np.inf] = "-inf"
        return obj.tolist()
    if elem == "bool":
        return arr.astype(bool).tolist()
    return arr.astype(np.int64).tolist()


def _id_keys(graph) -> list[str]:
    """The vertex IDs as JSON object keys, made once per graph (a fifth of converting a vertex array)."""
    keys = getattr(graph, "_g2pl_id_keys", None)
    if keys is None:
        keys = graph._g2pl_id_keys = list(map(str, graph.ids.tolist()))
    return keys


def convert(kind: str, elem: str, value, graph) -> object:
    """One returned value in the --output JSON shape."""
    if kind == "scalar":
        return _num(value, elem)
    arr = np.asarray(value)
    if kind == "vertex":
        if elem == "bool":
            return graph.ids[arr.astype(bool)].tolist()
        return dict(zip(_id_keys(graph), _list(arr, elem)))
    src_ids = graph.ids[graph.src]
    dst_ids = graph.ids[graph.dst]
    if elem == "bool":
        sel = np.flatnonzero(arr.astype(bool))
        return np.stack([src_ids[sel], dst_ids[sel]], axis=1).tolist()
    return [[u, v, x] for u, v, x in zip(src_ids.tolist(), dst_ids.tolist(), _list(arr, elem))]
