"""The language's integer operations (`idiv`, `%`, `bitand`, ..., `shl`, `shr`), written once for
any array module `xp` (NumPy, CuPy) and bound by each backend as its `ops` methods.

Every one is total, so that vectorized evaluation (both branches of `?:`, elements a filter skips)
can never fail and results are the same on every rank count and backend:

* `idiv(a, b)` is floor division and `a % b` its remainder (the sign of `b`), so that
  `idiv(a, b) * b + a % b == a` always; `idiv(a, 0)` is 0 and `a % 0` is `a`;
  `idiv(-2**63, -1)` wraps to `-2**63` (and its remainder is 0).
* Shifts are arithmetic on int64: `shl(a, n)` is `a * 2**n` modulo 2**64 and `shr(a, n)` is
  `floor(a / 2**n)`; counts of 64 or more shift everything out (0, or -1 for a negative `a`
  shifted right), and a negative count shifts the other way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np


def _i64(xp, x):
    return xp.asarray(x).astype(xp.int64, copy=False)


def idiv(xp, a, b):
    a, b = _i64(xp, a), _i64(xp, b)
    zero = b == 0
    safe = xp.where(zero | ((b == -1) & (a == np.iinfo(np.int64).min)), 1, b)
    q = xp.floor_divide(a, safe)  # a // 1 == a: the int64 minimum over -1 wraps to itself
    return xp.where(zero, 0, q)


def mod(xp, a, b):
    a, b = _i64(xp, a), _i64(xp, b)
    zero = b == 0
    safe = xp.where(zero | (b == -1), 1, b)  # x % -1 == 0 == x % 1, without the int64 overflow
    return xp.where(zero, a, xp.remainder(a, safe))


def bitand(xp, a, b):
    return xp.bitwise_and(_i64(xp, a), _i64(xp, b))


def bitor(xp, a, b):
    return xp.bitwise_or(_i64(xp, a), _i64(xp, b))


def bitxor(xp, a, b):
    return xp.bitwise_xor(_i64(xp, a), _i64(xp, b))


def bitnot(xp, a):
    return xp.invert(_i64(xp, a))


def _shift(xp, a, n, left: bool):
    """`a` shifted by the (clipped) count `n`: left when `left`, else right; negative counts reverse."""
    a, n = _i64(xp, a), xp.clip(_i64(xp, n), -64, 64)
    k = n if left else -n  # > 0: shift left by k; < 0: right by -k
    lk = xp.minimum(xp.maximum(k, 0), 63)
    rk = xp.minimum(xp.maximum(-k, 0), 63)
    up = xp.where(k >= 64, 0, xp.left_shift(a, lk))
    down = xp.right_shift(a, rk)  # arithmetic: by 63, every bit is the sign bit (0 or -1)
    return xp.where(k >= 0, up, down)


def shl(xp, a, n):
    return _shift(xp, a, n, True)


def shr(xp, a, n):
    return _shift(xp, a, n, False)


FUNCS: dict[str, Callable[..., Any]] = {"idiv": idiv, "mod": mod, "bitand": bitand, "bitor": bitor, "bitxor": bitxor, "bitnot": bitnot,
         "shl": shl, "shr": shr}


class IntOpsMixin:
    """The integer functions as a backend's `ops` methods, each through the backend's `_int_op` (which
    decides host or device and the scalar type), so every backend names them once."""

    def _int_op(self, name: str, *args):
        raise NotImplementedError

    def mod(self, a, b):
        return self._int_op("mod", a, b)

    def idiv(self, a, b):
        return self._int_op("idiv", a, b)

    def bitand(self, a, b):
        return self._int_op("bitand", a, b)

    def bitor(self, a, b):
        return self._int_op("bitor", a, b)

    def bitxor(self, a, b):
        return self._int_op("bitxor", a, b)

    def bitnot(self, a):
        return self._int_op("bitnot", a)

    def shl(self, a, n):
        return self._int_op("shl", a, n)

    def shr(self, a, n):
        return self._int_op("shr", a, n)
