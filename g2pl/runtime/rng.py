"""The counter-based RNG of `rand()` (splitmix64), one implementation for every backend.

A draw is a pure function of (seed, call site, execution count, element key), keys being
original IDs, so results do not depend on ranks, relabelling or backend: the array work runs
in the caller's array module `xp`, bit for bit the same on NumPy and CuPy.
"""

from __future__ import annotations

import numpy as np

_M1 = 0xBF58476D1CE4E5B9
_M2 = 0x94D049BB133111EB
_GOLD = 0x9E3779B97F4A7C15


def _mix(xp, x):
    x = x ^ (x >> xp.uint64(30))
    x = x * xp.uint64(_M1)
    x = x ^ (x >> xp.uint64(27))
    x = x * xp.uint64(_M2)
    return x ^ (x >> xp.uint64(31))


def _base(seed: int, site: int, count: int) -> np.uint64:
    """The per-(seed, site, execution) key: host scalar work (wrap-around intended)."""
    with np.errstate(over="ignore"):
        base = _mix(np, np.uint64(seed & 0xFFFFFFFFFFFFFFFF) * np.uint64(_GOLD) + np.uint64(site + 1))
        return _mix(np, base ^ (np.uint64(count + 1) * np.uint64(_GOLD)))


def uniform(seed: int, site: int, count: int, key_a, key_b=None, xp=np):
    """Uniform floats in [0, 1), one per key (per pair of keys with `key_b`)."""
    base = xp.uint64(int(_base(seed, site, count)))
    x = _mix(xp, xp.asarray(key_a).astype(xp.uint64) + base)
    if key_b is not None:
        x = _mix(xp, x ^ (xp.asarray(key_b).astype(xp.uint64) * xp.uint64(_GOLD)))
    return (x >> xp.uint64(11)).astype(xp.float64) * (1.0 / 9007199254740992.0)
