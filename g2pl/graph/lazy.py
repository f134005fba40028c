"""Arrays an object leaves out until first read, then builds once and keeps.

Why: a graph's ID-order arrays handed over to a one-rank degree view, and that view's edge endpoints,
are large and often never read; each is made again only if something asks for it. Pickles hold the
arrays (built first), never the closures.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


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
        return state
