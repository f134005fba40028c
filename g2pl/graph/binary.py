"""The `.g2g` binary graph format: a built `Graph` saved whole, read back with one validating pass.

Building a large graph from text or a generator costs seconds to minutes;
`g2pl convert GRAPH OUT.g2g` does it once and the file holds the canonical
graph itself (relabelled IDs, merged edges, both CSR directions), so loading
is reading the arrays plus one checking pass over them (the role of GAPBS's
`.sg` files). Layout, all little-endian:

    bytes 0-7     magic  b"G2PLGRF\\x01"
    bytes 8-15    header length H (uint64)
    bytes 16-16+H header: UTF-8 JSON {"n", "m", "directed", "weighted",
                  "info": {counts}, "arrays": {name: [dtype, offset, count]}}
    then          each array at its offset (64-byte aligned), raw

The file is untrusted input, and it may change while or after it is read.
Its arrays are therefore read (`readinto`, straight into preallocated
arrays: about as fast as faulting the pages of a mapping in) into this
process's own memory, and only those copies are checked and used: a file
truncated or rewritten later cannot reach a run (through a shared mapping
it would be SIGBUS, SIGSEGV or indices nobody checked), and a file that
shrinks while it is read is an error. Only regular files are read (opened
non-blocking, so a FIFO is refused instead of waiting for a writer).

The header is parsed as plain JSON (never unpickled) with every field
type-checked; each array must have its expected dtype and length and lie
inside the file, after the header and apart from the others. The contents
must be exactly the canonical graph, checked in bounded chunks by O(m)
vectorized passes: IDs strictly ascending, edges sorted and unique without
self-loops and with both endpoints in range, weights finite and
non-negative, row pointers rising from 0 to the number of entries, and every
adjacency entry naming an edge incident to its row with the edge's other
endpoint as neighbour, neighbours strictly ascending within a row (so every
edge is listed once at each end, and each row is exactly its vertex's edges
in canonical order); a directed file's out-adjacency must be the edges
themselves. The header's counts must agree with the arrays. Any failure is
a `G2PLError` (exit status 2) naming the file and what is wrong.

A distributed run reads the file by slices (`binary_share`), so that no rank
holds more than its share: rank r of P reads the header and edges
[m*r/P, m*(r+1)/P) of src, dst and weight, IDs and adjacency rows
[n*r/P, n*(r+1)/P), plus the edge and the ID before its slices for the checks
across the cut. Each rank makes the same checks on its slices: the edges its
rows' entries name, and the IDs of its edges' endpoints, come from the ranks
holding them by request/answer exchanges, and the out-degrees of its rows are
counted from every rank's edges (`share.counts_at_owners`). Every check is one collective step, in
`load_binary`'s order, whose error is the lowest rank's; each check reports
the first bad position in the whole file (never the first bad chunk or block),
so a bad file is refused on every rank, whatever their number, with the error
`load_binary` gives it.
"""

from __future__ import annotations

import io
import json
import os
import stat
import struct
from collections.abc import Callable, Generator, Iterator
from contextlib import ExitStack
from functools import partial
from pathlib import Path
from typing import Any, TypeAlias, TypeVar, cast

import numpy as np

from g2pl.errors import G2PLError, reading_graph_file
from g2pl.graph.graph import MAX_VERTEX_ID, Graph, index_dtype, unit_weights
from g2pl.graph.share import EdgeShare, agreed, counts_at_owners, exscan, owner, send, send_back
from g2pl.io.output_files import atomic_file, output_problem

MAGIC = b"G2PLGRF\x01"
EXT = ".g2g"
_ALIGN = 64
_MAX_HEADER = 1 << 20
_CHUNK = 1 << 20  # entries per checking pass: a few int64 temporaries of 8 MB each
_READ_MAX = 1 << 30  # bytes per read call (Linux returns at most ~2 GiB from one read)
#: a graph file as `open_graph_file` opens it: buffered, or raw with `buffering=0` (both have `readinto`)
GraphFile: TypeAlias = "io.BufferedReader | io.FileIO"
_COUNTS = ("input_edges", "self_loops_dropped", "duplicates_merged", "isolated_vertices")
_INDEX_DTYPES = ("<i4", "<i8")
T = TypeVar("T")


def _layout(n: int, m: int, directed: bool, weighted: bool) -> dict[str, tuple[tuple[str, ...], int]]:
    """Array name -> (allowed dtypes, length) for a graph of this shape."""
    entries = m if directed else 2 * m
    out: dict[str, tuple[tuple[str, ...], int]] = {
        "ids": (("<i8",), n),
        "src": (_INDEX_DTYPES, m),
        "dst": (_INDEX_DTYPES, m),
        "in_indptr": (("<i8",), n + 1),
        "in_nbr": (_INDEX_DTYPES, entries),
        "in_eid": (_INDEX_DTYPES, entries),
    }
    if weighted:
        out["weight"] = (("<f8",), m)
    if directed:
        out.update(out_indptr=(("<i8",), n + 1), out_nbr=(_INDEX_DTYPES, m), out_eid=(_INDEX_DTYPES, m))
    return out


# --------------------------------------------------------------------------- writing


def regular_output_problem(path: str | Path) -> str | None:
    """Why `path` cannot receive a `.g2g` file, or None: it must be a regular file or not exist yet.

    Why: the file is written by seeking and is only useful read back from disk, so a FIFO or a
    device (a link to `/dev/null` included) is refused rather than replaced or written through.
    """
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None  # missing (or a dangling link): the usual output checks decide
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    what = f"is {_kind(mode)}"
    if os.path.islink(path):
        what = f"links to {_kind(mode)} ({os.path.realpath(path)})"
    return f"{what}; a {EXT} graph is written to, and loaded from, a regular file"


def save_graph(graph: Graph, path: str | Path) -> int:
    """Write `graph` to `path` (replaced atomically, as every g2pl output); returns the bytes written."""
    path = Path(path)
    why = regular_output_problem(path) or output_problem(path)
    if why is not None:
        raise G2PLError(why, file=str(path))
    names = list(_layout(graph.n, graph.m, graph.directed, graph.weighted))
    arrays = {k: getattr(graph, k) for k in names}
    table: dict[str, list[Any]] = {}
    # The header's length depends on the offsets, which depend on its length: reserve a generous fixed size.
    offset = 16 + 4096 + 64 * len(names)
    for k in names:
        a = arrays[k]
        dt = a.dtype.newbyteorder("<").str
        table[k] = [dt, offset, int(a.size)]
        offset += -(-a.size * a.dtype.itemsize // _ALIGN) * _ALIGN
    info: dict[str, int | str] = {k: int(graph.info.get(k, 0)) for k in _COUNTS}
    info["source_format"] = str(graph.info.get("format", "unknown"))[:64]
    header = json.dumps({"n": graph.n, "m": graph.m, "directed": graph.directed, "weighted": graph.weighted,
                         "info": info, "arrays": table}).encode()
    start = table[names[0]][1]
    if 16 + len(header) > start:
        raise AssertionError("the .g2g header outgrew its reserved space")
    with atomic_file(path) as f:
        f.write(MAGIC + struct.pack("<Q", len(header)) + header)
        for k in names:
            f.seek(table[k][1])
            a = arrays[k]
            for lo in range(0, a.size, _CHUNK):
                f.write(np.ascontiguousarray(a[lo:lo + _CHUNK], dtype=table[k][0]).tobytes())
        f.truncate(offset)
    return offset


# --------------------------------------------------------------------------- opening graph files


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def open_graph_file(path: str, buffering: int = -1) -> GraphFile:
    """Open a graph file for reading; anything but a regular file is a G2PLError (exit 2).

    Why: opening a FIFO blocks until some process writes to it, and a device such as /dev/zero
    never ends; the file is opened non-blocking, so `fstat` can refuse both at once.
    """
    nonblock = getattr(os, "O_NONBLOCK", 0)
    with reading_graph_file(path):
        fd = os.open(path, os.O_RDONLY | nonblock | getattr(os, "O_CLOEXEC", 0))
        try:
            mode = os.fstat(fd).st_mode
            if stat.S_ISDIR(mode):
                raise G2PLError("is a directory, not a graph file", file=path)
            if not stat.S_ISREG(mode):
                raise G2PLError(f"is {_kind(mode)}, not a regular file; a graph is read from a regular file",
                                file=path)
            if nonblock:
                os.set_blocking(fd, True)
            return cast(GraphFile, os.fdopen(fd, "rb", buffering=buffering))  # (typeshed: BinaryIO)
        except BaseException:
            os.close(fd)
            raise


# --------------------------------------------------------------------------- reading


def _bad(path: str, what: str) -> G2PLError:
    return G2PLError(f"not a valid {EXT} graph file: {what}", file=path)


def _changed(path: str) -> G2PLError:
    return G2PLError("the file changed while it was read (it became shorter); load it again once nothing "
                     "is writing to it", file=path)


def _read_at(f: GraphFile, path: str, offset: int, out: np.ndarray) -> None:
    """Fill `out` with the file's bytes at `offset`; a short read means that the file has shrunk."""
    if out.nbytes == 0:
        return
    view = memoryview(out.reshape(-1).view(np.uint8))  # type: ignore[arg-type]  # NumPy's stubs give ndarray `__buffer__` for Python 3.12+ only
    f.seek(offset)
    got = 0
    while got < len(view):
        k = f.readinto(view[got:got + _READ_MAX])
        if not k:
            raise _changed(path)
        got += k


def _read_header(path: str, f: GraphFile, size: int) -> tuple[dict[str, Any], int]:
    """The checked JSON header and the end of the header's bytes."""
    start = np.zeros(min(size, 16), dtype=np.uint8)
    _read_at(f, path, 0, start)
    lead = start.tobytes()
    if lead[:7] != MAGIC[:min(7, size)]:
        raise _bad(path, "it does not start with the g2pl graph signature (make one with `g2pl convert`)")
    if size >= 8 and lead[7] != MAGIC[7]:
        raise _bad(path, f"format version {lead[7]} is not supported (this g2pl reads version {MAGIC[7]})")
    if size < 16:
        raise _bad(path, f"the file is truncated: it has {size} bytes, but the signature and the header "
                         "length take 16")
    (hlen,) = struct.unpack("<Q", lead[8:16])
    if hlen > _MAX_HEADER or 16 + hlen > size:
        raise _bad(path, f"the header length {hlen} is impossible for a {size}-byte file")
    raw = np.zeros(hlen, dtype=np.uint8)
    _read_at(f, path, 16, raw)
    try:
        head = json.loads(raw.tobytes().decode("utf-8"))
    except RecursionError:
        raise _bad(path, "the header is not valid JSON (nested too deeply; a header has 3 levels)") from None
    except (UnicodeDecodeError, ValueError) as e:
        raise _bad(path, f"the header is not valid JSON ({e})") from None
    if not isinstance(head, dict):
        raise _bad(path, "the header is not a JSON object")
    for key, kind in (("n", int), ("m", int), ("directed", bool), ("weighted", bool), ("info", dict),
                      ("arrays", dict)):
        v = head.get(key)
        if not isinstance(v, kind) or (kind is int and isinstance(v, bool)):
            raise _bad(path, f"header field '{key}' is missing or not a {kind.__name__}")
    if not 1 <= head["n"] < 1 << 62 or not 0 <= head["m"] < 1 << 62:
        raise _bad(path, f"header sizes n={head['n']}, m={head['m']} are out of range")
    for k in _COUNTS:
        v = head["info"].get(k, 0)
        if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v < 1 << 62:
            raise _bad(path, f"header count '{k}' is not a non-negative integer")
    return head, 16 + hlen


def _placement(path: str, head: dict[str, Any], body: int, size: int) -> dict[str, tuple[np.dtype, int, int]]:
    """Name -> (dtype, offset, count) of each array, checked: expected type and length, inside the file
    after the header, no two overlapping (so that no file makes the reader allocate more than its size)."""
    want = _layout(head["n"], head["m"], head["directed"], head["weighted"])
    got = head["arrays"]
    extra = sorted(set(got) - set(want))
    if extra:
        raise _bad(path, f"unexpected array '{extra[0]}' in the header")
    out = {}
    for name, (dtypes, length) in want.items():
        entry = got.get(name)
        if (not isinstance(entry, list) or len(entry) != 3 or not isinstance(entry[0], str)
                or not all(isinstance(x, int) and not isinstance(x, bool) for x in entry[1:])):
            raise _bad(path, f"array '{name}' is missing from the header or malformed")
        dt, off, count = entry
        if dt not in dtypes:
            raise _bad(path, f"array '{name}' has type {dt!r}; expected {' or '.join(dtypes)}")
        if count != length:
            raise _bad(path, f"array '{name}' has {count} entries; a graph with n={head['n']}, m={head['m']} "
                             f"needs {length}")
        itemsize = np.dtype(dt).itemsize
        if off < body or off % itemsize or off + count * itemsize > size:
            raise _bad(path, f"array '{name}' at offset {off} ({count} x {itemsize} bytes) lies outside the "
                             f"{size}-byte file after its {body}-byte header (truncated?)")
        out[name] = (np.dtype(dt), off, count)
    spans = sorted((off, off + count * dt.itemsize, name) for name, (dt, off, count) in out.items())
    for (_, end, a), (start, _, b) in zip(spans, spans[1:], strict=False):
        if start < end:
            raise _bad(path, f"arrays '{a}' and '{b}' overlap in the file")
    return out


def _chunks(size: int, overlap: int = 0) -> Iterator[tuple[int, int]]:
    """[lo, hi) ranges of at most _CHUNK (+ overlap) entries covering 0..size."""
    for lo in range(0, max(size - overlap, 0), _CHUNK):
        yield lo, min(lo + _CHUNK + overlap, size)


def _check_id_ends(path: str, ids: np.ndarray, first: bool, last: bool) -> None:
    """The lowest ID (ids[0], when `first`) and the highest (ids[-1], when `last`) lie in 0..2^62-1; the
    IDs ascend, so every other does too."""
    if ids.size and ((first and int(ids[0]) < 0) or (last and int(ids[-1]) >= MAX_VERTEX_ID)):
        raise _bad(path, "vertex IDs must be between 0 and 2^62")


def _check_ids_ascending(path: str, ids: np.ndarray, at: int) -> None:
    """IDs strictly ascending; `ids` starts at position `at` of the file's array."""
    for lo, hi in _chunks(ids.size, 1):
        c = ids[lo:hi]
        up = c[1:] > c[:-1]
        if not bool(np.all(up)):
            raise _bad(path, f"vertex IDs are not strictly ascending at position {at + lo + int(np.argmin(up)) + 1}")


def _check_edge_ends(path: str, n: int, directed: bool, src: np.ndarray, dst: np.ndarray, at: int) -> None:
    """Endpoints in 0..n-1 and no self-loops (an undirected edge stored as (smaller, larger)) for the
    edges from edge `at` on. The first bad edge is named, so the message does not depend on chunks."""
    for lo, hi in _chunks(src.size):
        s, d = src[lo:hi], dst[lo:hi]
        loop = s == d if directed else s >= d
        if int(s.min()) < 0 or int(d.min()) < 0 or int(s.max()) >= n or int(d.max()) >= n or bool(loop.any()):
            out = (s < 0) | (d < 0) | (s >= n) | (d >= n)
            k = int(np.argmax(out | loop))
            if out[k]:
                raise _bad(path, f"edge {at + lo + k} has an endpoint outside 0..{n - 1}")
            how = "" if directed else " or not stored as (smaller, larger)"
            raise _bad(path, f"edge {at + lo + k} is a self-loop{how}")


def _check_edge_order(path: str, src: np.ndarray, dst: np.ndarray, at: int) -> None:
    """Edges sorted by (src, dst) without duplicates, from edge `at` on."""
    for lo, hi in _chunks(src.size, 1):
        s, d = src[lo:hi], dst[lo:hi]
        up = (s[1:] > s[:-1]) | ((s[1:] == s[:-1]) & (d[1:] > d[:-1]))
        if not bool(np.all(up)):
            raise _bad(path, "edges are not sorted by (src, dst) without duplicates at edge "
                             f"{at + lo + int(np.argmin(up)) + 1}")


def _check_weights(path: str, weight: np.ndarray, at: int) -> None:
    """Weights finite and non-negative, from edge `at` on."""
    for lo, hi in _chunks(weight.size):
        w = weight[lo:hi]
        ok = np.isfinite(w) & (w >= 0)
        if not bool(ok.all()):
            raise _bad(path, f"the weight of edge {at + lo + int(np.argmin(ok))} is not a finite non-negative "
                             "number")


def _edge_checks(path: str, head: dict[str, Any], ids: np.ndarray, ids_at: int, src: np.ndarray,
                 dst: np.ndarray, edges_at: int, prior: int, weight: np.ndarray | None
                 ) -> list[Callable[[], None]]:
    """The checks of IDs, edges and weights, in the order that decides which error a file with several
    defects gets. Each array may be a window: `ids` from position `ids_at`, `src` and `dst` from edge
    `edges_at`, whose first `prior` edges (0 or 1) belong to the window before, for the order across
    the cut; `weight` holds the window's own edges."""
    n, directed = head["n"], head["directed"]
    checks: list[Callable[[], None]] = [
        lambda: _check_id_ends(path, ids, ids_at == 0, ids_at + ids.size == n),
        lambda: _check_ids_ascending(path, ids, ids_at),
        lambda: _check_edge_ends(path, n, directed, src[prior:], dst[prior:], edges_at + prior),
        lambda: _check_edge_order(path, src, dst, edges_at),
    ]
    if weight is not None:
        checks.append(lambda: _check_weights(path, weight, edges_at + prior))
    return checks


def _row_lengths(path: str, side: str, ptr: np.ndarray, entries: int, first: bool = True,
                 last: bool = True) -> np.ndarray:
    """The rows' lengths, from row pointers that must rise from 0 to `entries` (compared, not subtracted:
    a difference of arbitrary int64 values can wrap around). `ptr` may be a slice that holds the first
    (`first`) or the last (`last`) pointer or neither; consecutive slices share their boundary pointer."""
    if ((first and int(ptr[0]) != 0) or (last and int(ptr[-1]) != entries)
            or not bool(np.all(ptr[1:] >= ptr[:-1]))):
        raise _bad(path, f"the {side}-adjacency row pointers do not match the edges (they must rise from 0 "
                         f"to the number of entries, {entries})")
    return np.diff(ptr)


def _out_degrees(src: np.ndarray, n: int) -> np.ndarray:
    """Edges per source vertex, from `src` checked sorted: a binary search per vertex instead of a
    bincount, whose int64 copy of `src` is an edge-sized temporary."""
    dt = src.dtype if n + 1 <= np.iinfo(src.dtype).max else np.dtype(np.int64)
    return np.diff(np.searchsorted(src, np.arange(n + 1, dtype=dt)))


def _check_out_pointers(path: str, ptr: np.ndarray, deg_src: np.ndarray, before: int) -> None:
    """A directed graph's out-row pointers (of rows with `before` edges out of the rows before them)
    must be the running sum of the out-degrees."""
    want = np.empty(deg_src.size + 1, dtype=np.int64)
    want[0] = 0
    np.cumsum(deg_src, out=want[1:])
    want += before
    if not np.array_equal(ptr, want):
        raise _bad(path, "the out-adjacency row pointers do not match the edges (each row's length must be "
                         "its vertex's out-degree)")


def _in_degrees(path: str, lengths: np.ndarray, deg_src: np.ndarray, first_row: int) -> np.ndarray:
    """An undirected graph's edges into each row's vertex: the row's length less its edges out, which
    must not be negative (rows `first_row`..)."""
    deg_dst = lengths - deg_src
    short = deg_dst < 0
    if bool(short.any()):
        v = int(np.argmax(short))
        raise _bad(path, f"the in-adjacency row pointers do not match the edges (the row of vertex index "
                         f"{first_row + v} is shorter than its {int(deg_src[v])} edges out)")
    return deg_dst


#: what a block of adjacency rows asks of the edges: (edge ids, first edge of a run of edges, its length)
_Asked: TypeAlias = "tuple[np.ndarray, int, int]"
#: the answer: (src of those edge ids, dst of those edge ids, dst of the run)
_Told: TypeAlias = "tuple[np.ndarray, np.ndarray, np.ndarray]"


def _nth(mask: np.ndarray | None, k: int) -> int:
    """The position of the k-th True of `mask` (k itself when there is no mask)."""
    return k if mask is None else int(np.flatnonzero(mask)[k])


def _adjacency_checks(path: str, ptr: np.ndarray, first_row: int, n: int, m: int, deg_in: np.ndarray,
                      deg_out: np.ndarray | None, taken: int,
                      entries: Callable[[int, int], tuple[np.ndarray, np.ndarray]]
                      ) -> Generator[_Asked, _Told, None]:
    """The in-adjacency must be exactly the canonical CSR of the edges (see `graph._csr`): the checks of
    rows first_row.. (`ptr`: their row pointers), a block of rows at a time; each block yields what it
    needs to know of the edges and is checked with the answer (edges held elsewhere are asked for).

    Row r is [the edges into r (dst == r), by source] and, for an undirected graph (`deg_out` given),
    then [the edges out of r (src == r), by target]. The second blocks, concatenated, are the edges
    in order (edge ids 0..m-1, neighbours `dst`; `taken` is the first of these rows'): compared
    sequentially. An entry of a first block must name an edge e with dst[e] == r and src[e] == its
    neighbour, and neighbours must strictly ascend within the block, so no edge is listed twice.
    `deg_in` (the first blocks' lengths) comes from the file's row pointers and need not be trusted:
    the first blocks hold m entries in all, so every edge is listed exactly once, in its target's row,
    and deg_in[r] is r's in-degree. Rows are taken in blocks of about _CHUNK entries, so a block never
    splits a row; O(m), two lookups an entry. `entries(lo, hi)`: (nbr, eid) of the entries lo..hi-1.
    """
    rows = deg_in.size
    vt = index_dtype(n)
    pattern = np.tile(np.array([True, False]), min(rows, _CHUNK)) if deg_out is not None else None
    r0 = 0
    while r0 < rows:
        r1 = int(np.searchsorted(ptr, ptr[r0] + _CHUNK, side="right")) - 1
        r1 = max(r0 + 1, min(rows, r1, r0 + _CHUNK))
        lo, hi = int(ptr[r0]), int(ptr[r1])
        if hi > lo:
            nb, e = entries(lo, hi)
            end = None  # the first entry out of range: no error after it counts
            if int(nb.min()) < 0 or int(nb.max()) >= n or int(e.min()) < 0 or int(e.max()) >= m:
                end = int(np.argmax((nb < 0) | (nb >= n) | (e < 0) | (e >= m)))
                e = np.clip(e, 0, m - 1)  # (an entry, hence an edge, exists: m > 0)
            first = None
            c = 0  # entries of the second blocks in these rows
            if pattern is not None and deg_out is not None:
                lens = np.empty(2 * (r1 - r0), dtype=np.int64)
                lens[0::2] = deg_in[r0:r1]
                lens[1::2] = deg_out[r0:r1]
                first = np.repeat(pattern[:lens.size], lens)
                c = hi - lo - int(np.count_nonzero(first))
            e_in = e if first is None else e[first]  # the entries of the first blocks: edges into the row
            src_e, dst_e, dst_run = yield e_in, taken, c
            # (block position, message) of each kind of error: the first position's is raised, so the
            # error is the file's first bad entry's, wherever the blocks and the ranks' rows are cut
            fails: list[tuple[int, str]] = []
            if end is not None:
                fails.append((end, "the in-adjacency entries name a vertex or edge out of range (the first: "
                                   f"entry {lo + end})"))
            if first is not None:
                own = ~first
                good = (e[own] == np.arange(taken, taken + c)) & (nb[own] == dst_run)
                if not bool(good.all()):
                    k = int(np.argmin(good))
                    at = int(np.flatnonzero(own)[k])
                    v = first_row + int(np.searchsorted(ptr, lo + at, side="right")) - 1
                    fails.append((at, f"the in-adjacency entry {lo + at} (vertex index {v}) should be edge "
                                      f"{taken + k} to vertex index {int(dst_run[k])} (after a vertex's edges "
                                      f"in, its edges out in edge order) but is edge {int(e[at])} to "
                                      f"{int(nb[at])}"))
                taken += c
                nb = nb[first]
            row = np.repeat(np.arange(first_row + r0, first_row + r1, dtype=vt), deg_in[r0:r1])
            ok = dst_e == row
            ok &= src_e == nb
            if not bool(ok.all()):
                k = int(np.argmin(ok))
                fails.append((_nth(first, k), f"the in-adjacency of vertex index {int(row[k])} lists edge "
                                              f"{int(e_in[k])} with neighbour {int(nb[k])}, which is not one "
                                              "of its edges"))
            up = (row[1:] != row[:-1]) | (nb[1:] > nb[:-1])
            if not bool(up.all()):
                k = int(np.argmin(up))
                fails.append((_nth(first, k + 1), f"the in-adjacency row of vertex index {int(row[k])} is "
                                                  "not sorted by neighbour without repeats"))
            if fails:
                raise _bad(path, min(fails, key=lambda f: f[0])[1])
        r0 = r1


def _check_adjacency(path: str, ptr: np.ndarray, nbr: np.ndarray, eid: np.ndarray, src: np.ndarray,
                     dst: np.ndarray, deg_in: np.ndarray, deg_out: np.ndarray | None) -> None:
    """`_adjacency_checks` of the whole in-adjacency, the edges at hand (np.take: faster than indexing
    with (widened) int32 ids)."""
    checks = _adjacency_checks(path, ptr, 0, deg_in.size, src.size, deg_in, deg_out, 0,
                               lambda lo, hi: (nbr[lo:hi], eid[lo:hi]))
    try:
        e, t, c = next(checks)
        while True:
            e, t, c = checks.send((np.take(src, e), np.take(dst, e), dst[t:t + c]))
    except StopIteration:
        pass


def _same_as_edges(path: str, f: GraphFile, where: dict[str, tuple[np.dtype, int, int]], name: str,
                   dst: np.ndarray, at: int) -> None:
    """A directed file's out-adjacency array `name` ("out_nbr" or "out_eid"), compared a chunk at a time
    with what it must be (the targets of the edges in order, edge ids 0..m-1) instead of being kept: the
    graph shares `dst`, as a built one does. `dst` holds the edges from edge `at` on."""
    dt, off, _ = where[name]
    for lo, hi in _chunks(dst.size):
        c = np.empty(hi - lo, dtype=dt)
        _read_at(f, path, off + (at + lo) * dt.itemsize, c)
        want = dst[lo:hi] if name == "out_nbr" else np.arange(at + lo, at + hi)
        if not np.array_equal(c, want):
            k = at + lo + int(np.argmin(c == want))
            raise _bad(path, f"the out-adjacency entry {k} does not match the edges (a directed graph's "
                             "out-neighbours are the edges' targets in edge order)")


def _opened(path: str, f: GraphFile, directed: bool) -> tuple[dict[str, Any], dict[str, tuple[np.dtype, int, int]]]:
    """The checked header and the arrays' placement of an open `.g2g` file that must hold a graph of
    the direction asked for."""
    size = os.fstat(f.fileno()).st_size
    if size == 0:
        raise _bad(path, "the file is empty")
    head, body = _read_header(path, f, size)
    if head["directed"] != bool(directed):
        stored = "a directed" if head["directed"] else "an undirected"
        hint = "run with --directed" if head["directed"] else "run without --directed"
        raise G2PLError(f"the file holds {stored} graph; {hint}, or convert the source again "
                        f"{'with' if directed else 'without'} --directed", file=path)
    return head, _placement(path, head, body, size)


def _counts(path: str, head: dict[str, Any], isolated: int) -> dict[str, int]:
    """The header's counts, which must agree with the arrays (`isolated`: their isolated vertices)."""
    counts = {k: int(head["info"].get(k, 0)) for k in _COUNTS}
    if counts["isolated_vertices"] != isolated:
        raise _bad(path, f"header count 'isolated_vertices' is {counts['isolated_vertices']}, but the "
                         f"arrays have {isolated} isolated vertices")
    if counts["input_edges"] != head["m"] + counts["self_loops_dropped"] + counts["duplicates_merged"]:
        raise _bad(path, "header count 'input_edges' is not the edges plus the self-loops dropped and the "
                         "duplicates merged")
    return counts


def _info(head: dict[str, Any], counts: dict[str, int]) -> dict[str, Any]:
    """The loaded graph's `info`: the file's counts and the format it was converted from."""
    src_fmt = head["info"].get("source_format")
    fmt = str(src_fmt)[:64] if isinstance(src_fmt, str) else "unknown"
    return {"format": "g2g", "source_format": fmt, **counts}


def load_binary(path: str, directed: bool = False) -> Graph:
    """Read a `.g2g` file into memory and check it (see the module docstring)."""
    with open_graph_file(path, buffering=0) as f, reading_graph_file(path):
        head, where = _opened(path, f, directed)
        n, m = head["n"], head["m"]
        a: dict[str, np.ndarray] = {}
        for name, (dt, off, count) in where.items():
            if name not in ("out_nbr", "out_eid"):  # a directed graph's are the edges: compared below
                a[name] = np.empty(count, dtype=dt)
                _read_at(f, path, off, a[name])
        for check in _edge_checks(path, head, a["ids"], 0, a["src"], a["dst"], 0, 0, a.get("weight")):
            check()
        src, dst = a["src"], a["dst"]
        deg_src = _out_degrees(src, n)
        # The in-rows' lengths are taken from the file: _adjacency_checks proves them right, since its
        # rows list m distinct edges, each in the row of its target (see its docstring).
        if directed:
            deg_dst = _row_lengths(path, "in", a["in_indptr"], m)
            _check_out_pointers(path, a["out_indptr"], deg_src, 0)
            _check_adjacency(path, a["in_indptr"], a["in_nbr"], a["in_eid"], src, dst, deg_dst, None)
            for name in ("out_nbr", "out_eid"):
                _same_as_edges(path, f, where, name, dst, 0)
        else:
            deg_dst = _in_degrees(path, _row_lengths(path, "in", a["in_indptr"], 2 * m), deg_src, 0)
            _check_adjacency(path, a["in_indptr"], a["in_nbr"], a["in_eid"], src, dst, deg_dst, deg_src)
    counts = _counts(path, head, int(np.count_nonzero((deg_src + deg_dst) == 0)))
    vt, et = index_dtype(n), index_dtype(m)  # the runtime's index widths
    for k in ("src", "dst", "in_nbr"):
        a[k] = a[k].astype(vt, copy=False)
    a["in_eid"] = a["in_eid"].astype(et, copy=False)
    if directed:  # as build_graph makes them: the out-neighbours are `dst` itself
        out = (a["out_indptr"], a["dst"], np.arange(m, dtype=et))
    else:
        out = (a["in_indptr"], a["in_nbr"], a["in_eid"])
    return Graph(
        n=n, m=m, directed=bool(directed), ids=a["ids"], src=a["src"], dst=a["dst"],
        weight=a["weight"] if head["weighted"] else unit_weights(m),
        in_indptr=a["in_indptr"], in_nbr=a["in_nbr"], in_eid=a["in_eid"],
        out_indptr=out[0], out_nbr=out[1], out_eid=out[2],
        weighted=bool(head["weighted"]), name=path, info=_info(head, counts),
    )


# --------------------------------------------------------------------------- reading by slices


def binary_share(path: str, directed: bool, rank: int, size: int, comm: Any) -> EdgeShare:
    """Rank `rank`'s share of a `.g2g` graph, read and checked by slices (see the module docstring): its
    slice of the edges as original IDs, its slice of the IDs as `extra` (isolated vertices included),
    and the file's counts and formats as `info`, as `load_binary` has them. A bad file is the G2PLError
    `load_binary` raises, on every rank. Collective over `comm`."""
    with ExitStack() as stack:
        def opened() -> GraphFile:
            f = open_graph_file(path, buffering=0)
            stack.callback(f.close)
            return f

        return _Slices(path, agreed(comm, opened), comm, rank, size).share(bool(directed))


def _ask(comm: Any, cuts: np.ndarray, want: np.ndarray, answer: Callable[[np.ndarray], tuple[np.ndarray, ...]]
         ) -> list[np.ndarray]:
    """What the ranks holding the slices [cuts[q], cuts[q + 1]) of an array tell of its entries `want`:
    each position sent to its holder, `answer(the positions in its slice)` computed there (int64 arrays,
    one value a position), and sent back in the order asked. Collective."""
    dest = owner(cuts, want)
    order = None if want.size < 2 or bool(np.all(dest[1:] >= dest[:-1])) else np.argsort(dest, kind="stable")
    if order is not None:
        want, dest = want[order], dest[order]
    (asked,), got = send(comm, dest, [np.asarray(want, dtype=np.int64)])
    sent = np.bincount(dest, minlength=comm.size).astype(np.int64)
    out = []
    for a in answer(asked - int(cuts[comm.rank])):
        back = send_back(comm, np.asarray(a, dtype=np.int64), got, sent)
        if order is not None:
            back[order] = back.copy()
        out.append(back)
    return out


def _ask_range(comm: Any, cuts: np.ndarray, lo: int, hi: int, values: np.ndarray) -> np.ndarray:
    """Entries lo..hi-1 of an array whose slices [cuts[q], cuts[q + 1]) the ranks hold (this rank's:
    `values`), as int64: each holder sends its part of the range. Collective."""
    size, rank = comm.size, comm.rank
    part = np.stack([np.clip(cuts[:-1], lo, hi), np.clip(cuts[1:], lo, hi)], axis=1)  # each holder's part
    asked = comm.alltoallv(part.reshape(-1), np.full(size, 2, dtype=np.int64))[0].reshape(size, 2)
    asked -= cuts[rank]
    mine = np.concatenate([np.zeros(0, np.int64)] + [values[a:b].astype(np.int64) for a, b in asked])
    return comm.alltoallv(mine, asked[:, 1] - asked[:, 0], part[:, 1] - part[:, 0])[0]


class _Slices:
    """One rank's reading of a `.g2g` file by slices: edges [m*r/P, m*(r+1)/P) and vertices (IDs, rows of
    each adjacency) [n*r/P, n*(r+1)/P) of rank r of P, each check a collective step."""

    def __init__(self, path: str, f: GraphFile, comm: Any, rank: int, size: int) -> None:
        self.path, self.f, self.comm, self.rank, self.size = path, f, comm, rank, size
        self.where: dict[str, tuple[np.dtype, int, int]] = {}

    def step(self, make: Callable[[], T]) -> T:
        """`make()` on every rank, OS errors as G2PLErrors; one raised anywhere is the lowest rank's,
        raised on every rank (`share.agreed`)."""
        def guarded() -> T:
            with reading_graph_file(self.path):
                return make()
        return agreed(self.comm, guarded)

    def read(self, name: str, lo: int, hi: int) -> np.ndarray:
        """Entries lo..hi-1 of the array `name`."""
        dt, off, _ = self.where[name]
        out = np.empty(hi - lo, dtype=dt)
        _read_at(self.f, self.path, off + lo * dt.itemsize, out)
        return out

    def cuts(self, total: int) -> np.ndarray:
        """The ranks' slices of `total` entries: rank q holds cuts[q]..cuts[q + 1]-1."""
        return np.array([total * q // self.size for q in range(self.size + 1)], dtype=np.int64)

    def share(self, directed: bool) -> EdgeShare:
        """The checks of `load_binary`, in its order, on this rank's slices; then its share."""
        path, f, comm, rank = self.path, self.f, self.comm, self.rank
        head, self.where = self.step(lambda: _opened(path, f, directed))
        n, m, weighted = head["n"], head["m"], head["weighted"]
        vcut, ecut = self.cuts(n), self.cuts(m)
        vlo, vhi, elo, ehi = int(vcut[rank]), int(vcut[rank + 1]), int(ecut[rank]), int(ecut[rank + 1])
        iv = int(0 < vlo < vhi)  # the ID and the edge before the slice, for the checks across the cut
        ie = int(0 < elo < ehi)
        ids, src, dst, weight, in_ptr = self.step(lambda: (
            self.read("ids", vlo - iv, vhi), self.read("src", elo - ie, ehi), self.read("dst", elo - ie, ehi),
            self.read("weight", elo, ehi) if weighted else None, self.read("in_indptr", vlo, vhi + 1)))
        for check in _edge_checks(path, head, ids, vlo - iv, src, dst, elo - ie, ie, weight):
            self.step(check)
        ids, src, dst = ids[iv:], src[ie:], dst[ie:]
        entries = m if directed else 2 * m
        lengths = self.step(lambda: _row_lengths(path, "in", in_ptr, entries, vlo == 0, vhi == n))
        deg_src = counts_at_owners(comm, src, vcut)
        before = exscan(comm, int(deg_src.sum()))[0]  # the edges out of lower rows: they come first
        if directed:
            deg_dst = lengths
            self.step(lambda: _check_out_pointers(path, self.read("out_indptr", vlo, vhi + 1), deg_src, before))
        else:
            deg_dst = self.step(lambda: _in_degrees(path, lengths, deg_src, vlo))
        self.adjacency(_adjacency_checks(path, in_ptr, vlo, n, m, deg_dst, None if directed else deg_src,
                                         before, self.entries), ecut, src, dst)
        if directed:
            for name in ("out_nbr", "out_eid"):
                self.step(partial(_same_as_edges, path, f, self.where, name, dst, elo))
        isolated = sum(comm.allgather(int(np.count_nonzero((deg_src + deg_dst) == 0))))
        counts = self.step(lambda: _counts(path, head, isolated))
        (u,) = _ask(comm, vcut, src, lambda k: (np.take(ids, k),))
        (v,) = _ask(comm, vcut, dst, lambda k: (np.take(ids, k),))
        return EdgeShare(u, v, None if weight is None else weight.astype(np.float64), ids.astype(np.int64),
                         directed, path, _info(head, counts))

    def entries(self, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
        """(nbr, eid) of the in-adjacency entries lo..hi-1."""
        with reading_graph_file(self.path):
            return self.read("in_nbr", lo, hi), self.read("in_eid", lo, hi)

    def adjacency(self, checks: Generator[_Asked, _Told, None], ecut: np.ndarray, src: np.ndarray,
                  dst: np.ndarray) -> None:
        """Run `checks` on every rank, a block a round: the edges a block asks for come from the ranks
        holding them, so every rank takes part in every round, and one whose checks are done or have
        failed asks for nothing. The lowest rank's error is raised on every rank."""
        err: G2PLError | None = None

        def advance(told: _Told | None) -> _Asked | None:
            nonlocal err
            try:
                return next(checks) if told is None else checks.send(told)
            except StopIteration:
                return None
            except G2PLError as e:
                err = e
                return None

        def failed() -> None:
            if err is not None:
                raise err

        asked = advance(None)
        while any(self.comm.allgather(asked is not None)):
            e, t, c = asked if asked is not None else (np.zeros(0, np.int64), 0, 0)
            s, d = _ask(self.comm, ecut, e, lambda k: (np.take(src, k), np.take(dst, k)))
            run = _ask_range(self.comm, ecut, t, t + c, dst)
            if asked is not None:
                asked = advance((s, d, run))
        self.step(failed)
