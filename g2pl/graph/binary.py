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
"""

from __future__ import annotations

import io
import json
import os
import stat
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypeAlias, cast

import numpy as np

from g2pl.errors import G2PLError, reading_graph_file
from g2pl.graph.graph import MAX_VERTEX_ID, Graph, index_dtype, unit_weights
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


def _check_vertices_and_edges(path: str, head: dict[str, Any], a: dict[str, np.ndarray]) -> None:
    """IDs strictly ascending, edges sorted and unique, in range, without self-loops; weights valid."""
    n, directed = head["n"], head["directed"]
    ids = a["ids"]
    if int(ids[0]) < 0 or int(ids[-1]) >= MAX_VERTEX_ID:
        raise _bad(path, "vertex IDs must be between 0 and 2^62")
    for lo, hi in _chunks(ids.size, 1):
        c = ids[lo:hi]
        if not bool(np.all(c[1:] > c[:-1])):
            at = lo + int(np.argmin(c[1:] > c[:-1])) + 1
            raise _bad(path, f"vertex IDs are not strictly ascending at position {at}")
    src, dst = a["src"], a["dst"]
    for lo, hi in _chunks(src.size):
        s, d = src[lo:hi], dst[lo:hi]
        if int(s.min()) < 0 or int(d.min()) < 0 or int(s.max()) >= n or int(d.max()) >= n:
            raise _bad(path, f"an edge endpoint in edges {lo}..{hi - 1} is outside 0..{n - 1}")
        if bool(np.any(s >= d) if not directed else np.any(s == d)):
            how = "" if directed else " or not stored as (smaller, larger)"
            raise _bad(path, f"an edge is a self-loop{how}")
    for lo, hi in _chunks(src.size, 1):
        s, d = src[lo:hi], dst[lo:hi]
        if not bool(np.all((s[1:] > s[:-1]) | ((s[1:] == s[:-1]) & (d[1:] > d[:-1])))):
            raise _bad(path, f"edges are not sorted by (src, dst) without duplicates near edge {lo}")
    if "weight" in a:
        for lo, hi in _chunks(a["weight"].size):
            w = a["weight"][lo:hi]
            if not bool(np.all(np.isfinite(w) & (w >= 0))):
                raise _bad(path, f"a weight in edges {lo}..{hi - 1} is not a finite non-negative number")


def _row_lengths(path: str, side: str, ptr: np.ndarray, entries: int) -> np.ndarray:
    """The rows' lengths, from row pointers that must rise from 0 to `entries` (compared, not subtracted:
    a difference of arbitrary int64 values can wrap around)."""
    if int(ptr[0]) != 0 or int(ptr[-1]) != entries or not bool(np.all(ptr[1:] >= ptr[:-1])):
        raise _bad(path, f"the {side}-adjacency row pointers do not match the edges (they must rise from 0 "
                         f"to the number of entries, {entries})")
    return np.diff(ptr)


def _out_degrees(src: np.ndarray, n: int) -> np.ndarray:
    """Edges per source vertex, from `src` checked sorted: a binary search per vertex instead of a
    bincount, whose int64 copy of `src` is an edge-sized temporary."""
    dt = src.dtype if n + 1 <= np.iinfo(src.dtype).max else np.dtype(np.int64)
    return np.diff(np.searchsorted(src, np.arange(n + 1, dtype=dt)))


def _check_adjacency(path: str, ptr: np.ndarray, nbr: np.ndarray, eid: np.ndarray, src: np.ndarray,
                     dst: np.ndarray, deg_in: np.ndarray, deg_out: np.ndarray | None) -> None:
    """The in-adjacency must be exactly the canonical CSR of the edges (see `graph._csr`).

    Row r is [the edges into r (dst == r), by source] and, for an undirected graph (`deg_out` given),
    then [the edges out of r (src == r), by target]. The second blocks, concatenated, are the edges
    in order (edge ids 0..m-1, neighbours `dst`): compared sequentially. An entry of a first block
    must name an edge e with dst[e] == r and src[e] == its neighbour, and neighbours must strictly
    ascend within the block, so no edge is listed twice. `deg_in` (the first blocks' lengths) comes
    from the file's row pointers and need not be trusted: the first blocks hold m entries in all, so
    every edge is listed exactly once, in its target's row, and deg_in[r] is r's in-degree. Rows are
    taken in blocks of about _CHUNK entries, so a block never splits a row; O(m), two gathers an entry.
    """
    n, m = deg_in.size, src.size
    vt = np.result_type(dst.dtype, index_dtype(n))
    pattern = np.tile(np.array([True, False]), min(n, _CHUNK)) if deg_out is not None else None
    taken = 0  # entries of the second blocks so far
    r0 = 0
    while r0 < n:
        r1 = int(np.searchsorted(ptr, ptr[r0] + _CHUNK, side="right")) - 1
        r1 = max(r0 + 1, min(n, r1, r0 + _CHUNK))
        lo, hi = int(ptr[r0]), int(ptr[r1])
        if hi > lo:
            nb, e = nbr[lo:hi], eid[lo:hi]
            if int(nb.min()) < 0 or int(nb.max()) >= n or int(e.min()) < 0 or int(e.max()) >= m:
                raise _bad(path, f"the in-adjacency entries {lo}..{hi - 1} name a vertex or edge out of "
                                 "range")
            if pattern is not None and deg_out is not None:
                lens = np.empty(2 * (r1 - r0), dtype=np.int64)
                lens[0::2] = deg_in[r0:r1]
                lens[1::2] = deg_out[r0:r1]
                first = np.repeat(pattern[:lens.size], lens)
                c = hi - lo - int(np.count_nonzero(first))
                own = ~first
                want_e = np.arange(taken, taken + c)
                if not np.array_equal(e[own], want_e) or not np.array_equal(nb[own], dst[taken:taken + c]):
                    k = int(np.argmin((e[own] == want_e) & (nb[own] == dst[taken:taken + c])))
                    at = lo + int(np.flatnonzero(own)[k])
                    v = int(np.searchsorted(ptr, at, side="right")) - 1
                    raise _bad(path, f"the in-adjacency entry {at} (vertex index {v}) should be edge "
                                     f"{taken + k} to vertex index {int(dst[taken + k])} (after a vertex's "
                                     f"edges in, its edges out in edge order) but is edge {int(eid[at])} to "
                                     f"{int(nbr[at])}")
                taken += c
                nb, e = nb[first], e[first]
            row = np.repeat(np.arange(r0, r1, dtype=vt), deg_in[r0:r1])
            ok = np.take(dst, e) == row  # np.take: faster than indexing with (widened) int32 ids
            ok &= np.take(src, e) == nb
            if not bool(ok.all()):
                k = int(np.argmin(ok))
                raise _bad(path, f"the in-adjacency of vertex index {int(row[k])} lists edge {int(e[k])} "
                                 f"with neighbour {int(nb[k])}, which is not one of its edges")
            up = (row[1:] != row[:-1]) | (nb[1:] > nb[:-1])
            if not bool(up.all()):
                k = int(np.argmin(up))
                raise _bad(path, f"the in-adjacency row of vertex index {int(row[k])} is not sorted by "
                                 "neighbour without repeats")
        r0 = r1


def load_binary(path: str, directed: bool = False) -> Graph:
    """Read a `.g2g` file into memory and check it (see the module docstring)."""
    with open_graph_file(path, buffering=0) as f, reading_graph_file(path):
        size = os.fstat(f.fileno()).st_size
        if size == 0:
            raise _bad(path, "the file is empty")
        head, body = _read_header(path, f, size)
        if head["directed"] != bool(directed):
            stored = "a directed" if head["directed"] else "an undirected"
            hint = "run with --directed" if head["directed"] else "run without --directed"
            raise G2PLError(f"the file holds {stored} graph; {hint}, or convert the source again "
                            f"{'with' if directed else 'without'} --directed", file=path)
        where = _placement(path, head, body, size)
        n, m = head["n"], head["m"]
        a: dict[str, np.ndarray] = {}
        for name, (dt, off, count) in where.items():
            if name not in ("out_nbr", "out_eid"):  # a directed graph's are the edges: compared below
                a[name] = np.empty(count, dtype=dt)
                _read_at(f, path, off, a[name])
        _check_vertices_and_edges(path, head, a)
        src, dst = a["src"], a["dst"]
        deg_src = _out_degrees(src, n)
        # The in-rows' lengths are taken from the file: _check_adjacency proves them right, since its
        # rows list m distinct edges, each in the row of its target (see its docstring).
        if directed:
            deg_dst = _row_lengths(path, "in", a["in_indptr"], m)
            want = np.zeros(n + 1, dtype=np.int64)
            np.cumsum(deg_src, out=want[1:])
            if not np.array_equal(a["out_indptr"], want):
                raise _bad(path, "the out-adjacency row pointers do not match the edges (each row's length "
                                 "must be its vertex's out-degree)")
            _check_adjacency(path, a["in_indptr"], a["in_nbr"], a["in_eid"], src, dst, deg_dst, None)
            _same_as_edges(path, f, where, dst)
        else:
            deg_dst = _row_lengths(path, "in", a["in_indptr"], 2 * m) - deg_src
            if deg_dst.size and int(deg_dst.min()) < 0:
                v = int(np.argmin(deg_dst))
                raise _bad(path, f"the in-adjacency row pointers do not match the edges (the row of vertex "
                                 f"index {v} is shorter than its {int(deg_src[v])} edges out)")
            _check_adjacency(path, a["in_indptr"], a["in_nbr"], a["in_eid"], src, dst, deg_dst, deg_src)
    isolated = int(np.count_nonzero((deg_src + deg_dst) == 0))
    counts = {k: int(head["info"].get(k, 0)) for k in _COUNTS}
    if counts["isolated_vertices"] != isolated:
        raise _bad(path, f"header count 'isolated_vertices' is {counts['isolated_vertices']}, but the "
                         f"arrays have {isolated} isolated vertices")
    if counts["input_edges"] != m + counts["self_loops_dropped"] + counts["duplicates_merged"]:
        raise _bad(path, "header count 'input_edges' is not the edges plus the self-loops dropped and the "
                         "duplicates merged")
    vt, et = index_dtype(n), index_dtype(m)  # the runtime's index widths
    for k in ("src", "dst", "in_nbr"):
        a[k] = a[k].astype(vt, copy=False)
    a["in_eid"] = a["in_eid"].astype(et, copy=False)
    src_fmt = head["info"].get("source_format")
    fmt = str(src_fmt)[:64] if isinstance(src_fmt, str) else "unknown"
    info: dict[str, Any] = {"format": "g2g", "source_format": fmt, **counts}
    if directed:  # as build_graph makes them: the out-neighbours are `dst` itself
        out = (a["out_indptr"], a["dst"], np.arange(m, dtype=et))
    else:
        out = (a["in_indptr"], a["in_nbr"], a["in_eid"])
    return Graph(
        n=n, m=m, directed=bool(directed), ids=a["ids"], src=a["src"], dst=a["dst"],
        weight=a["weight"] if head["weighted"] else unit_weights(m),
        in_indptr=a["in_indptr"], in_nbr=a["in_nbr"], in_eid=a["in_eid"],
        out_indptr=out[0], out_nbr=out[1], out_eid=out[2],
        weighted=bool(head["weighted"]), name=path, info=info,
    )


def _same_as_edges(path: str, f: GraphFile, where: dict[str, tuple[np.dtype, int, int]],
                   dst: np.ndarray) -> None:
    """A directed file's out-adjacency, compared a chunk at a time with what it must be (the targets of the
    edges in order, edge ids 0..m-1) instead of being kept: the graph shares `dst`, as a built one does."""
    for name in ("out_nbr", "out_eid"):
        dt, off, count = where[name]
        for lo, hi in _chunks(count):
            c = np.empty(hi - lo, dtype=dt)
            _read_at(f, path, off + lo * dt.itemsize, c)
            want = dst[lo:hi] if name == "out_nbr" else np.arange(lo, hi)
            if not np.array_equal(c, want):
                k = lo + int(np.argmin(c == want))
                raise _bad(path, f"the out-adjacency entry {k} does not match the edges (a directed graph's "
                                 "out-neighbours are the edges' targets in edge order)")

