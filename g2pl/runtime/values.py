"""The language's values as arrays, for every backend: element dtypes, the empty value of each
aggregation and the identity its reductions pad with (docs/language.md, "Aggregators")."""

from __future__ import annotations

import numpy as np

from g2pl.contract import DEFAULTS

INT64_MAX = np.iinfo(np.int64).max
INT64_MIN = np.iinfo(np.int64).min

DTYPES = {"bool": np.bool_, "int": np.int64, "float": np.float64, "vid": np.int64,
          "float32": np.float32}  # (a message field's type only: see contract.ELEM_SIZE)


def sum_dtype(dtype) -> np.dtype:
    """What a row sum of `dtype` values adds in: float32 (a narrowed message, codegen's `float32(...)`)
    as float64, each value widened exactly, so the sum has the bits of the same values' float64 sum;
    any other type as itself."""
    return np.dtype(np.float64) if dtype == np.float32 else np.dtype(dtype)


def empty_value(op: str, elem: str):
    """The result of aggregation `op` over no elements (docs/language.md, "Aggregators")."""
    if op in ("sum", "count"):
        return 0.0 if elem == "float" else 0
    if op == "avg":
        return float("nan")
    if op == "and":
        return True
    if op == "or":
        return False
    if op in ("argmin", "argmax", "pick"):
        return DEFAULTS[elem] if op == "pick" else -1
    if op == "min":
        return {"float": np.inf, "int": INT64_MAX, "vid": -1}[elem]
    if op == "max":
        return {"float": -np.inf, "int": INT64_MIN, "vid": -1}[elem]
    raise ValueError(op)


def identity(op: str, dtype: np.dtype) -> int | float | np.number:
    """Neutral element used to pad masked-out entries before a reduction."""
    if op in ("sum", "count", "avg"):
        return dtype.type(0)
    if op == "min":
        return np.inf if dtype.kind == "f" else INT64_MAX
    if op == "max":
        return -np.inf if dtype.kind == "f" else INT64_MIN
    raise ValueError(op)
