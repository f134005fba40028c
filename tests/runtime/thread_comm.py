"""A communicator of P ranks in one process (one thread per rank), for testing collective code
without MPI: the same methods as g2pl.runtime.comm.SingleComm / MPIComm."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np


class _Hub:
    def __init__(self, size: int) -> None:
        self.size = size
        self.barrier = threading.Barrier(size)
        self.slots: list[Any] = [None] * size


class ThreadComm:
    def __init__(self, hub: _Hub, rank: int) -> None:
        self.hub, self.rank, self.size = hub, rank, hub.size
        self.c = None
        self.bytes_sent = self.bytes_received = 0

    def _exchange(self, obj: Any) -> list[Any]:
        hub = self.hub
        hub.barrier.wait()
        hub.slots[self.rank] = obj
        hub.barrier.wait()
        out = list(hub.slots)
        hub.barrier.wait()
        return out

    def allgather(self, obj: Any) -> list[Any]:
        return self._exchange(obj)

    def bcast(self, obj: Any) -> Any:
        return self._exchange(obj)[0]

    def gather(self, obj: Any) -> list[Any] | None:
        got = self._exchange(obj)
        return got if self.rank == 0 else None

    def gather_array(self, arr: np.ndarray) -> np.ndarray | None:
        got = self._exchange(np.asarray(arr))
        return np.concatenate(got) if self.rank == 0 else None

    def barrier(self) -> None:
        self.hub.barrier.wait()

    def alltoallv(self, send: np.ndarray, send_counts, recv_counts=None) -> tuple[np.ndarray, np.ndarray]:
        counts = np.asarray(send_counts, dtype=np.int64)
        starts = np.concatenate([[0], np.cumsum(counts)])
        pieces = [np.array(send[starts[q]:starts[q + 1]]) for q in range(self.size)]
        got = [row[self.rank] for row in self._exchange(pieces)]
        return np.concatenate(got), np.array([len(g) for g in got], dtype=np.int64)


def run_ranks(size: int, fn: Callable[[ThreadComm], Any]) -> list[Any]:
    """`fn(comm)` on `size` ranks at once; each rank's return value, or the exception it raised."""
    hub = _Hub(size)
    out: list[Any] = [None] * size

    def work(rank: int) -> None:
        try:
            out[rank] = fn(ThreadComm(hub, rank))
        except BaseException as e:  # noqa: BLE001 - handed to the test
            out[rank] = e

    threads = [threading.Thread(target=work, args=(r,)) for r in range(size)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    if any(t.is_alive() for t in threads):  # a rank stopped early while others wait in a collective
        hub.barrier.abort()
        for t in threads:
            t.join()
    return out
