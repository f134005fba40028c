"""Communicators: every cross-rank exchange and reduction of the runtime goes through one.

`SingleComm` is the one-rank implementation; `MPIComm` (g2pl.runtime.mpi)
provides the same methods over mpi4py, so generated code and the engine do
not change between them.  Both count the bytes they send to other ranks.
"""

from __future__ import annotations

from typing import Any

import numpy as np


class SingleComm:
    """One rank: nothing crosses ranks."""

    rank = 0
    size = 1

    def __init__(self) -> None:
        self.bytes_sent = 0
        self.bytes_received = 0

    def alltoallv(self, send: np.ndarray, send_counts: np.ndarray, recv_counts: np.ndarray | None = None
                  ) -> tuple[np.ndarray, np.ndarray]:
        """Personalized all-to-all; returns (received data, received counts per source rank)."""
        return send, np.asarray(send_counts, dtype=np.int64)

    def allreduce_partials(self, partials: np.ndarray, layout: tuple) -> np.ndarray:
        """All aggregators of a superstep in one reduction (see kernels.combine)."""
        return partials

    def gather(self, obj: Any) -> list[Any] | None:
        return [obj]

    def gather_array(self, arr: np.ndarray) -> np.ndarray | None:
        return arr

    def bcast(self, obj: Any) -> Any:
        return obj

    def allgather(self, obj: Any) -> list[Any]:
        return [obj]

    def barrier(self) -> None:
        return None

    c = None  # no MPI communicator underneath

    def abort(self, status: int) -> None:  # pragma: no cover - only meaningful with several ranks
        raise SystemExit(status)
