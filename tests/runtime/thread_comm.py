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


class PartialsComm(ThreadComm):
    """The thread communicator with the aggregators' reduction (as MPIComm does it with an MPI op)."""

    def allreduce_partials(self, parts: np.ndarray, layout: tuple) -> np.ndarray:
        from g2pl.runtime import partials

        got = self.allgather(np.array(parts, dtype=np.int64))
        out = got[0].copy()
        for p in got[1:]:
            partials.combine(layout, p, out)
        return out


def run_program(prog: Any, g: Any, size: int, args: dict | None = None, renumber: str | None = None) -> Any:
    """`prog` (a g2pl.Program) on graph `g` over `size` ranks in one process (a thread per rank): rank 0's
    result.  (Threads share numba's thread pool: callers that turn the compiled kernels on set
    G2PL_THREADS=1, as ranks on their own cores would run.)"""
    from g2pl.runtime.ingest import DistributedGraph
    from g2pl.runtime.partition import partition

    parts = partition(g, size, renumber)

    def one(tc: ThreadComm) -> Any:
        c = PartialsComm(tc.hub, tc.rank)
        dg = DistributedGraph(c, parts[c.rank], g.n, g.m, g.directed, g.weighted, g.name, renumber)
        return prog.run(dg, args, comm=c, renumber=renumber)

    got = run_ranks(size, one)
    for x in got:
        if isinstance(x, BaseException):
            raise x
    return got[0]
