"""One rank's share of a graph's input: raw edges as original IDs, before any relabelling.

A distributed run never builds the whole `Graph` anywhere: each rank reads or
draws its own share of the input edges (a generator's block range, a byte
range of a text file, a slice of an array file), and g2pl.runtime.ingest turns
the shares into graph parts with collective exchanges.  What a share may hold
is exactly what `build_graph` accepts, so both paths agree on every rule
(self-loops dropped, duplicates merged keeping the smallest weight).

The collective steps the readers and the build share are here too: sending
entries to the ranks that own them and answers back (`send`, `send_back`),
which rank owns a value (`owner`), scans (`exscan`) and counts at the owners
(`counts_at_owners`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from g2pl.errors import G2PLError

T = TypeVar("T")


@dataclass
class EdgeShare:
    src: np.ndarray  # original IDs, one per input edge of this share
    dst: np.ndarray
    weight: np.ndarray | None  # float64 per edge; None when the graph is unweighted
    extra: np.ndarray  # vertex IDs that exist even when isolated (this share's part of them)
    directed: bool
    name: str
    info: dict[str, Any] = field(default_factory=dict)
    #: the vertices are exactly 0 .. id_bound-1 (generators: N), so an ID is its global index; None
    #: when the IDs are arbitrary
    id_bound: int | None = None

    @property
    def weighted(self) -> bool:
        return self.weight is not None


def agreed(comm: Any, make: Callable[[], T]) -> T:
    """`make()` on every rank of `comm` (collective); if it raises a G2PLError anywhere, every rank
    raises the lowest rank's (for a file read in rank order: the first error in the file)."""
    err: G2PLError | None = None
    out = None
    try:
        out = make()
    except G2PLError as e:
        err = e
    first = next((e for e in comm.allgather(err) if e is not None), None)
    if first is not None:
        raise first
    return out  # type: ignore[return-value]  # set whenever no rank failed

# ---------------------------------------------------------------------------- collective exchanges


def send(comm, dest: np.ndarray, arrays: list[np.ndarray | None]) -> tuple[list, np.ndarray]:
    """Each array's entries to rank `dest[i]`; per source rank, the entries keep their order, and
    sources arrive in rank order.  Returns (received arrays, counts received per source)."""
    size = comm.size
    counts = np.bincount(dest, minlength=size).astype(np.int64)
    grouped = size == 1 or len(dest) < 2 or not bool(np.any(dest[1:] < dest[:-1]))
    masks = None if grouped or size > 16 else [dest == q for q in range(size)]  # a few passes, no index array
    order = None if grouped or masks is not None else np.argsort(dest, kind="stable")  # 16-bit: a radix sort
    out: list = []
    recv_counts = None
    for a in arrays:
        if a is None:
            out.append(None)
            continue
        if masks is not None:
            buf = np.empty_like(a)
            at = 0
            for q, sel in enumerate(masks):
                buf[at:at + counts[q]] = a[sel]
                at += int(counts[q])
        else:
            buf = a if order is None else a[order]
        got, recv_counts = comm.alltoallv(buf, counts, recv_counts)
        del buf
        out.append(got)
    if recv_counts is None:
        recv_counts = np.asarray(comm.alltoallv(np.zeros(0, np.int8), counts)[1])
    return out, np.asarray(recv_counts, dtype=np.int64)


def send_back(comm, answer: np.ndarray, recv_counts: np.ndarray, sent_counts: np.ndarray) -> np.ndarray:
    """Answers to requests received with `recv_counts`, returned to their senders (who sent
    `sent_counts`), in request order."""
    return comm.alltoallv(answer, recv_counts, sent_counts)[0]


def exscan(comm, value: int) -> tuple[int, int]:
    """(sum of `value` over lower ranks, sum over all ranks)."""
    vals = comm.allgather(int(value))
    return int(sum(vals[:comm.rank])), int(sum(vals))


def owner(bounds: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Rank of each value of `x` among consecutive ranges starting at `bounds[:-1]` (16-bit below
    32768 ranks: a stable sort by owner is then a radix sort)."""
    dt = np.int16 if len(bounds) <= (1 << 15) else np.int64
    if len(bounds) <= 9:  # a few comparisons beat a binary search per value
        out = np.zeros(len(x), dtype=dt)
        for cut in bounds[1:-1]:
            out += x >= cut
        return out
    return (np.searchsorted(bounds, x, side="right") - 1).astype(dt)


def counts_at_owners(comm, x: np.ndarray, cuts: np.ndarray) -> np.ndarray:
    """How often each index of this rank's range (cuts[rank] .. cuts[rank + 1] - 1) occurs in the `x`
    of all ranks.  Counted here and the counts sent (n values) when n is small next to the entries,
    else the entries themselves sent."""
    n, rank = int(cuts[-1]), comm.rank
    mine = int(cuts[rank + 1] - cuts[rank])
    if n <= 2 * len(x) + 1024 or comm.size == 1:
        got = comm.alltoallv(np.bincount(x, minlength=n).astype(np.int64), np.diff(cuts))[0]
        return got.reshape(comm.size, mine).sum(axis=0) if comm.size > 1 else got
    (at,), _ = send(comm, owner(cuts, x), [x])
    return np.bincount(at - cuts[rank], minlength=mine)
