"""Returned values -> the JSON shapes of docs/language.md, "Output" (original IDs, sorted, non-finite floats as strings).

`convert` makes one whole value's shape.  With several ranks a value is not gathered to make it: each
rank keeps its share (`RankPart`, from `Runtime.collect`), and `RankPart.json_pieces` writes the
share's entries as text, a bounded number at a time and formatted from the arrays in bulk, exactly as
`json.dumps(document, indent=1)` writes them inside the whole document (g2pl.results.streamed puts the pieces together).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import numpy as np

from g2pl.io.arraytext import json_entries
from g2pl.runtime import cpu_kernels
from g2pl.runtime.partition import LocalGraph
from g2pl.runtime.values import DTYPES

T = TypeVar("T")


def _num(x, elem: str):
    if elem == "bool":
        return bool(x)
    if elem == "float":
        f = float(x)
        if math.isnan(f):
            return "nan"
        if math.isinf(f):
            return "inf" if f > 0 else "-inf"
        return f
    return int(x)


def _list(arr: np.ndarray, elem: str) -> list:
    """Vectorized conversion of an array to JSON-ready Python values."""
    if elem == "float":
        arr = arr.astype(np.float64, copy=False)
        if np.all(np.isfinite(arr)):
            return arr.tolist()
        obj = arr.astype(object)  # the non-finite ones become their strings in place, not one by one
        obj[np.isnan(arr)] = "nan"
        obj[arr == np.inf] = "inf"
        obj[arr == -np.inf] = "-inf"
        return obj.tolist()
    if elem == "bool":
        return arr.astype(bool).tolist()
    return arr.astype(np.int64).tolist()


def _id_keys(graph) -> list[str]:
    """The vertex IDs as JSON object keys, made once per graph (a fifth of converting a vertex array)."""
    keys = getattr(graph, "_g2pl_id_keys", None)
    if keys is None:
        keys = graph._g2pl_id_keys = list(map(str, graph.ids.tolist()))
    return keys


def _vertex_json(elem: str, arr: np.ndarray, ids: np.ndarray, keys: list[str] | None = None) -> object:
    """A vertex value's shape over the vertices `ids` (ascending): members, or ID -> value."""
    if elem == "bool":
        return ids[arr.astype(bool)].tolist()
    return dict(zip(list(map(str, ids.tolist())) if keys is None else keys, _list(arr, elem)))


def _edge_json(elem: str, arr: np.ndarray, src_ids: np.ndarray, dst_ids: np.ndarray) -> list:
    """An edge value's shape over the edges (src_ids, dst_ids), in that order: [u, v] or [u, v, value] rows."""
    if elem == "bool":
        sel = np.flatnonzero(arr.astype(bool))
        return np.stack([src_ids[sel], dst_ids[sel]], axis=1).tolist()
    return [[u, v, x] for u, v, x in zip(src_ids.tolist(), dst_ids.tolist(), _list(arr, elem))]


def convert(kind: str, elem: str, value, graph) -> object:
    """One returned value in the --output JSON shape."""
    if kind == "scalar":
        return _num(value, elem)
    arr = np.asarray(value)
    if kind == "vertex":
        if elem == "bool":
            return graph.ids[arr.astype(bool)].tolist()
        return _vertex_json(elem, arr, graph.ids, _id_keys(graph))
    return _edge_json(elem, arr, graph.ids[graph.src], graph.ids[graph.dst])


def scalar_json(elem: str, value: Any) -> object:
    """A returned scalar's shape, typed first as `Returned.of` types it (so both write the same text)."""
    return _num(np.asarray(value, dtype=DTYPES[elem])[()], elem)


#: entries per piece of text the compiled row writer makes at a time (cpu_kernels.row_writer).  It
#: costs the same per entry from 4K entries up (about 100 ns an edge entry with a float), but every
#: piece being made holds its rows' widest layout and its text at once, on every output thread, with
#: more waiting to be written: 16M float edge entries to JSON peaked 150-160 MB above their arrays in
#: pieces of 2**16 entries, 126 MB in pieces of 2**14 (numba's 110 MB of it; bench/output.py).  The
#: NumPy path keeps the writer's chunk: its per-piece calls cost more in smaller pieces.
WRITER_CHUNK = 1 << 14


def text_chunk(chunk: int, writer: Callable | None) -> int:
    """Entries per piece of text out of `chunk`-entry chunks, by `writer` (None: the NumPy path)."""
    return min(chunk, WRITER_CHUNK) if writer is not None else chunk


class RankPart:
    """One rank's share of a returned vertex or edge value, left on that rank (see `Runtime.collect`).

    `data`: a host array of the share's entries in the whole value's order: the rank's owned vertices
    ascending by original ID, or the edges it owns (its u endpoint's, one owner each) in the graph's
    edge order.  Ranks own contiguous ranges of IDs in rank order, so the shares of ranks 0, 1, ...
    concatenated are the whole value, which is how the API gathers it (`Program.run`) and how
    --output writes it (g2pl.results.streamed) without any rank holding it whole.

    `where` says which vertices and edges the entries are: the rank's `LocalGraph`, or a whole `Graph`
    (one rank's answer, whose arrays are aligned with it).  Their IDs are read only when the share is
    written, a chunk at a time.
    """

    def __init__(self, kind: str, elem: str, data: np.ndarray, where: Any) -> None:
        self.kind, self.type = kind, elem
        self.data: np.ndarray = np.asarray(data, dtype=DTYPES[elem])
        self.where = where
        self._ids: np.ndarray | None = None
        self._owned: np.ndarray | None = None
        self._identity: bool | None = None

    def __len__(self) -> int:
        return int(self.data.size)

    def ids(self, at: slice | np.ndarray) -> np.ndarray:
        """Original IDs of the vertices of entries `at` (a vertex value)."""
        w = self.where
        if not isinstance(w, LocalGraph):
            return w.ids[at]
        if self._ids is None:  # the owned IDs in ascending order (undoing a renumbering)
            self._ids = np.asarray(w.in_id_order(w.ids))
        return self._ids[at]

    def ends(self, at: slice | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Original IDs (u, v) of the endpoints of entries `at` (an edge value)."""
        return self.end(at, 0), self.end(at, 1)

    def end(self, at: slice | np.ndarray, side: int) -> np.ndarray:
        """Original IDs of one endpoint (`side` 0: u, 1: v) of the edges of entries `at`: what a writer
        of one column of endpoints reads (looking up the other endpoint too would double the work)."""
        w = self.where
        if not isinstance(w, LocalGraph):
            local = (w.src if side == 0 else w.dst)[at]
            if self._identity is None:  # IDs 0..n-1 (generated graphs): a vertex index is its ID
                ids = np.asarray(w.ids)
                self._identity = bool(ids.size == 0 or ids[0] == 0 and ids[-1] == ids.size - 1
                                      and np.array_equal(ids, np.arange(ids.size)))
            return np.asarray(local, dtype=np.int64) if self._identity else w.ids[local]
        if self._owned is None:  # local edge of each entry
            self._owned = np.flatnonzero(np.asarray(w.edge_owned))
        pos = self._owned[at]
        return w.ext_ids[(w.src if side == 0 else w.dst)[pos]]

    def shape(self, at: slice | np.ndarray) -> object:
        """The JSON shape of entries `at` alone (as `convert` shapes a whole value)."""
        data = self.data[at]
        if self.kind == "vertex":
            return _vertex_json(self.type, data, self.ids(at))
        return _edge_json(self.type, data, *self.ends(at))

    def count(self) -> int:
        """How many entries the JSON shape lists (members of a set; every entry of a graph)."""
        return int(np.count_nonzero(self.data)) if self.type == "bool" else len(self)

    def head(self, limit: int) -> object:
        """The JSON shape of the first `limit` entries it lists (a summary's), converting nothing else."""
        at = np.flatnonzero(self.data)[:limit] if self.type == "bool" else slice(0, limit)
        return self.shape(at)

    def json_pieces(self, depth: int, chunk: int) -> Iterator[bytes]:
        """The share's entries as `json.dumps(document, indent=1)` writes them where the value is
        nested `depth` levels deep: one piece of text per `chunk` entries of `data` (per `text_chunk`'s
        entries, which the compiled writer makes smaller; none for a piece listing nothing).  Pieces
        of consecutive shares joined by ",\\n", between the opening bracket and a newline, and "\\n",
        `depth` spaces and the closing bracket, are the value's text."""
        for job in self.json_jobs(depth, chunk):
            piece = job()
            if piece:
                yield piece

    def json_jobs(self, depth: int, chunk: int) -> Iterator[Callable[[], bytes]]:
        """`json_pieces` as one call per chunk (b"" for a chunk listing nothing), which threads may run
        at once (g2pl.results.ahead.in_order).  Each piece is formatted from the chunk's arrays in bulk
        (`g2pl.io.arraytext.json_entries`; by its compiled pass where numba's kernels are loaded:
        cpu_kernels.row_writer), the
        same text `json.dumps` writes for the chunk's shape, without a Python object per entry."""
        writer = cpu_kernels.row_writer(len(self) if self.type == "float" else 0) if len(self) else None
        return self.chunk_jobs(text_chunk(chunk, writer), functools.partial(self._json_piece, depth=depth,
                                                                             writer=writer))

    def chunk_jobs(self, chunk: int, make: Callable[[slice], T]) -> Iterator[Callable[[], T]]:
        """One call of `make(entries)` per `chunk` entries, in order, for threads to run at once: the
        ID lookups every chunk reads (`ids`, `end`) are made first, here, not by each thread."""
        if len(self):
            self.ids(slice(0, 0)) if self.kind == "vertex" else self.ends(slice(0, 0))
        return (functools.partial(make, slice(lo, lo + chunk)) for lo in range(0, len(self), chunk))

    def _json_piece(self, at: slice, depth: int, writer: Callable | None) -> bytes:
        data = self.data[at]
        if self.type == "bool" and not data.any():
            return b""
        if self.kind == "vertex":
            return json_entries("vertex", self.type, data, ids=self.ids(at), depth=depth, writer=writer)
        return json_entries("edge", self.type, data, ends=self.ends(at), depth=depth, writer=writer)
