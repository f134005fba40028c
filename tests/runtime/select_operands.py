"""Operands of `select` and `select_into` tests: arrays and scalars of every kind they must keep
bit for bit (NaN payloads, infinities, signed zeros, 4- and 8-byte and bool values, stride-0 views)."""

from __future__ import annotations

import numpy as np

SCALARS = {"s": np.int64(-7), "si": 3, "s4": np.int32(9), "sb": True, "sf": -0.0, "snan": np.nan}


def operand(rng: np.random.Generator, kind: str, n: int):
    """An array of `n` (i8, i4, f8 with inf/-inf/nan/-0.0 every 7th, b, c8: a constant stride-0 view)
    or one of SCALARS."""
    if kind == "i8":
        return rng.integers(-2**62, 2**62, n)
    if kind == "i4":
        return rng.integers(-2**31, 2**31 - 1, n).astype(np.int32)
    if kind == "f8":
        x = rng.standard_normal(n)
        x[::7], x[1::7], x[2::7], x[3::7] = np.inf, -np.inf, np.nan, -0.0
        return x
    if kind == "b":
        return rng.random(n) < 0.5
    if kind == "c8":  # constant weights: a stride-0 view
        return np.broadcast_to(np.array([2.5]), (n,))
    return SCALARS[kind]
