"""One rank's share of a graph's input: raw edges as original IDs, before any relabelling.

A distributed run never builds the whole `Graph` anywhere: each rank reads or
draws its own share of the input edges (a generator's block range, a byte
range of a text file, a slice of an array file), and g2pl.runtime.ingest turns
the shares into graph parts with collective exchanges.  What a share may hold
is exactly what `build_graph` accepts, so both paths agree on every rule
(self-loops dropped, duplicates merged keeping the smallest weight).
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
