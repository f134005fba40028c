"""`cupyx` of the stand-in: pinned host buffers are plain NumPy arrays (host memory, as CuPy's)."""

from __future__ import annotations

from typing import Any

import numpy as _np

_STANDIN = True


def empty_pinned(shape: Any, dtype: Any = float, order: str = "C") -> _np.ndarray:
    return _np.empty(shape, dtype, order)


def zeros_pinned(shape: Any, dtype: Any = float, order: str = "C") -> _np.ndarray:
    return _np.zeros(shape, dtype, order)
