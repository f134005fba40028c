"""A procedure's returned values as the run produced them: NumPy arrays, with their kind and type.

A run ends with every returned value on rank 0 as one array aligned with the
graph (with several ranks, each rank's share gathered there: `Program.run(gather=True)`, the
default; `g2pl run` writes the shares from every rank instead, g2pl.results.streamed) (vertex values in `graph.ids` order, ascending original ID; edge values
in `graph.src`/`graph.dst` order, ascending (u, v)).  `Result` keeps them so:
asking for an array costs nothing, and the JSON shapes of `--output` (docs/language.md,
"Output"; `g2pl.runtime.output.convert`) are made only for the values someone
asks to see as JSON (`res["X"]`, `res.values`, `res.output()`), because that
conversion costs several times the run of a fast kernel on a large graph.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from g2pl.runtime.output import convert
from g2pl.runtime.values import DTYPES  # the element types' dtypes, as every backend's arrays have them


def _frozen(arr: np.ndarray) -> np.ndarray:
    """A read-only view: the caller gets the result's own array without copying it, and cannot change
    what `res["X"]` and `--output` will show."""
    view = arr.view()
    view.flags.writeable = False
    return view


@dataclass(frozen=True, eq=False)
class Returned:
    """One returned value: `name`, `kind` ("scalar", "vertex", "edge"), element `type` ("bool", "int",
    "float", "vid") and `data` (a read-only array aligned with the graph; a 0-d array for a scalar)."""

    name: str
    kind: str
    type: str
    data: np.ndarray

    @classmethod
    def of(cls, name: str, kind: str, elem: str, value: Any) -> Returned:
        """From the runtime's collected value (array or scalar), typed as `Result.array` promises."""
        arr: np.ndarray = np.asarray(value, dtype=DTYPES[elem])
        if kind != "scalar" and arr.ndim != 1:
            raise ValueError(f"returned value `{name}` ({kind}) is not one-dimensional")
        return cls(name, kind, elem, _frozen(arr))

    def json(self, graph) -> object:
        """The `--output` shape of this value (docs/language.md, "Output")."""
        return convert(self.kind, self.type, self.data[()] if self.kind == "scalar" else self.data, graph)

    def entry(self, graph) -> dict:
        """This value's entry of `--output`'s `values` list."""
        return {"name": self.name, "kind": self.kind, "type": self.type, "value": self.json(graph)}

    def count(self) -> int:
        """How many entries the JSON shape lists (members of a set; every vertex / edge of a graph)."""
        if self.kind == "scalar":
            return 1
        return int(np.count_nonzero(self.data)) if self.type == "bool" else int(self.data.size)

    def json_head(self, graph, limit: int) -> object:
        """The JSON shape of this value's first `limit` entries only (what a summary shows), made
        without converting the rest."""
        if self.kind == "scalar":
            return self.json(graph)
        data = self.data
        if self.type == "bool":
            pos = np.flatnonzero(data)[:limit]
        else:
            pos = np.arange(min(limit, data.size))
        if self.kind == "vertex":
            ids = np.asarray(graph.ids)[pos]
            if self.type == "bool":
                return ids.tolist()
            head = convert("vertex", self.type, data[pos], _Ids(ids))
            return head
        src = np.asarray(graph.src)[pos]
        dst = np.asarray(graph.dst)[pos]
        sub = _Edges(np.asarray(graph.ids), src, dst)
        return convert("edge", self.type, data[pos], sub)


class _Ids:
    """The part of a graph `convert` reads for a vertex value: its IDs (here, a prefix of them)."""

    def __init__(self, ids: np.ndarray) -> None:
        self.ids = ids


class _Edges:
    """The part of a graph `convert` reads for an edge value: IDs and endpoints (a prefix of the edges)."""

    def __init__(self, ids: np.ndarray, src: np.ndarray, dst: np.ndarray) -> None:
        self.ids, self.src, self.dst = ids, src, dst
