"""Communicators: every cross-rank exchange and reduction of the runtime goes through one.

`SingleComm` is the one-rank implementation. An MPI communicator provides the
same methods, so generated code and the engine do not change between them.
"""

from __future__ import annotations

from typing import Any

import numpy as np


class SingleComm:
    """One rank: reductions are identities, nothing crosses ranks."""

    rank = 0
    size = 1

    def allreduce(self, values: np.ndarray, op: str) -> np.ndarray:
        """Element-wise reduction of a small host array over ranks (all aggregators of a superstep at once)."""
        return values

    def bcast(self, obj: Any) -> Any:
        return obj

    def barrier(self) -> None:
        return None

    def abort(self, status: int) -> None:  # pragma: no cover - only meaningful with several ranks
        raise SystemExit(status)
