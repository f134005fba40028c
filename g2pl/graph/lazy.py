"""Arrays an object leaves out until first read, then builds once and keeps.

Why: a graph's ID-order arrays handed over to a one-rank degree view, and that view's edge endpoints,
are large and often never read; each is made again only if something asks for it. Pickles hold the
arrays (built first), never the closures; a one-dimensional array of one repeated value (a stride-0
view, such as an unweighted graph's weights) travels as that value and its length, and comes back
as the same read-only view, not as an m-sized copy.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class _Repeated:
    """A pickled stride-0 array: its one value (a 1-element array, keeping the dtype) and its length."""

    value: np.ndarray
    length: int

    @staticmethod
    def of(a: object) -> _Repeated | None:
        if isinstance(a, np.ndarray) and a.ndim == 1 and len(a) > 1 and a.strides == (0,):
            return _Repeated(np.array(a[:1]), len(a))
        return None

    def view(self) -> np.ndarray:
        return np.broadcast_to(self.value, (self.length,))


class LazyArrays:
    """Mixin: `_lazy(names, build)` drops the attribute(s) `names` (one array may go by several
    names); the first read of any of them calls `build()` and sets them all."""

    def _lazy(self, names: tuple[str, ...], build: Callable[[], Any]) -> None:
        pending = self.__dict__.setdefault("_pending", {})
        for k in names:
            self.__dict__.pop(k, None)
            pending[k] = (names, build)

    def __getattr__(self, name: str) -> Any:
        # Reached only for attributes not set.
        pending = self.__dict__.get("_pending")
        if pending and name in pending:
            names, build = pending[name]
            value = build()
            for k in names:
                self.__dict__[k] = value
                pending.pop(k, None)
            return value
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __getstate__(self) -> dict[str, Any]:
        for name in list(self.__dict__.get("_pending") or ()):
            getattr(self, name)
        state = dict(self.__dict__)
        state.pop("_pending", None)
        for k, v in state.items():
            rep = _Repeated.of(v)
            if rep is not None:
                state[k] = rep
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update({k: v.view() if isinstance(v, _Repeated) else v for k, v in state.items()})
