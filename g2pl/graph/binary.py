"""The `.g2g` binary graph format: a built `Graph` saved whole, loaded by memory-mapping it.

Building a large graph from text or a generator costs seconds to minutes;
`g2pl convert GRAPH OUT.g2g` does it once and the file holds the canonical
graph itself (relabelled IDs, merged edges, both CSR directions), so loading
is mapping the file plus one validating pass over it (the role of GAPBS's
`.sg` files). Layout, all little-endian:

    bytes 0-7     magic  b"G2PLGRF\\x01"
    bytes 8-15    header length H (uint64)
    bytes 16-16+H header: UTF-8 JSON {"n", "m", "directed", "weighted",
                  "info": {counts}, "arrays": {name: [dtype, offset, count]}}
    then          each array at its offset (64-byte aligned), raw

The file is untrusted input: the header is parsed as plain JSON (never
unpickled) with every field type-checked, each array must have its expected
dtype and length and lie inside the file, and the contents are checked in
bounded chunks (IDs strictly ascending, edges sorted and unique with both
endpoints in range, row pointers monotone from 0 to the entry count, every
neighbour and edge id in range, row lengths equal to the degrees, weights
finite and non-negative) before anything uses them. Any failure is a
`G2PLError` (exit status 2) naming the file and what is wrong.
"""

from __future__ import annotations

import json
import mmap
import os
import struct
from pathlib import Path
from typing import Any

import numpy as np

from g2pl.errors import G2PLError, reading_graph_file
from g2pl.graph.graph import MAX_VERTEX_ID, Graph, index_dtype, unit_weights

MAGIC = b"G2PLGRF\x01"
EXT = ".g2g"
_ALIGN = 64
_MAX_HEADER = 1 << 20
_CHUNK = 1 << 22
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


def save_graph(graph: Graph, path: str | Path) -> int:
    """Write `graph` to `path` (replaced atomically, as every g2pl output); returns the bytes written."""
    from g2pl.output_files import _problem, atomic_file

    path = Path(path)
    why = _problem(path)
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
    info = {k: int(graph.info.get(k, 0)) for k in _COUNTS}
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


# --------------------------------------------------------------------------- reading


def _bad(path: str, what: str) -> G2PLError:
    return G2PLError(f"not a valid {EXT} graph file: {what}", file=path)


def _read_header(path: str, buf: mmap.mmap | bytes, size: int) -> dict[str, Any]:
    if size < 16 or buf[:8] != MAGIC:
        if size >= 7 and buf[:7] == MAGIC[:7]:
            raise _bad(path, f"format version {buf[7]} is not supported (this g2pl reads version {MAGIC[7]})")
        raise _bad(path, "it does not start with the g2pl graph signature (convert a graph with `g2pl convert`)")
    (hlen,) = struct.unpack("<Q", buf[8:16])
    if hlen > _MAX_HEADER or 16 + hlen > size:
        raise _bad(path, f"the header length {hlen} is impossible for a {size}-byte file")
    try:
        head = json.loads(bytes(buf[16:16 + hlen]).decode("utf-8"))
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
    return head


def _arrays(path: str, head: dict[str, Any], buf: mmap.mmap, size: int) -> dict[str, np.ndarray]:
    """The arrays the header lists, as read-only views of the mapping, after checking their placement."""
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
        if off < 16 or off % itemsize or off + count * itemsize > size:
            raise _bad(path, f"array '{name}' at offset {off} ({count} x {itemsize} bytes) lies outside the "
                             f"{size}-byte file (truncated?)")
        out[name] = np.frombuffer(buf, dtype=np.dtype(dt), count=count, offset=off)
    return out


def _check_contents(path: str, head: dict[str, Any], a: dict[str, np.ndarray]) -> None:
    """The invariants of a canonical Graph, checked a bounded chunk at a time."""
    n, m, directed = head["n"], head["m"], head["directed"]

    def chunks(arr: np.ndarray, overlap: int = 0):
        for lo in range(0, max(arr.size - overlap, 0), _CHUNK):
            yield lo, arr[lo:lo + _CHUNK + overlap]

    ids = a["ids"]
    if int(ids[0]) < 0 or int(ids[-1]) >= MAX_VERTEX_ID:
        raise _bad(path, "vertex IDs must be between 0 and 2^62")
    for lo, c in chunks(ids, 1):
        if c.size > 1 and not bool(np.all(c[1:] > c[:-1])):
            i = lo + int(np.argmin(c[1:] > c[:-1]))
            raise _bad(path, f"vertex IDs are not strictly ascending at position {i + 1}")
    src, dst = a["src"], a["dst"]
    for lo, s in chunks(src):
        d = dst[lo:lo + _CHUNK]
        if int(s.min()) < 0 or int(d.min()) < 0 or int(s.max()) >= n or int(d.max()) >= n:
            raise _bad(path, f"an edge endpoint in edges {lo}..{lo + s.size - 1} is outside 0..{n - 1}")
        if bool(np.any(s >= d) if not directed else np.any(s == d)):
            raise _bad(path, "an edge is a self-loop" + ("" if directed else " or not stored as (smaller, larger)"))
    for lo, s in chunks(src, 1):
        d = dst[lo:lo + s.size]
        if s.size > 1 and not bool(np.all((s[1:] > s[:-1]) | ((s[1:] == s[:-1]) & (d[1:] > d[:-1])))):
            raise _bad(path, f"edges are not sorted by (src, dst) without duplicates near edge {lo}")
    if "weight" in a:
        for lo, w in chunks(a["weight"]):
            if not bool(np.all(np.isfinite(w) & (w >= 0))):
                raise _bad(path, f"a weight in edges {lo}..{lo + w.size - 1} is not a finite non-negative number")
    deg_src = np.bincount(src, minlength=n) if m else np.zeros(n, np.int64)
    deg_dst = np.bincount(dst, minlength=n) if m else np.zeros(n, np.int64)
    dirs = [("in", deg_dst if directed else deg_src + deg_dst)]
    if directed:
        dirs.append(("out", deg_src))
    for side, deg in dirs:
        ptr, nbr, eid = a[f"{side}_indptr"], a[f"{side}_nbr"], a[f"{side}_eid"]
        if int(ptr[0]) != 0 or int(ptr[-1]) != nbr.size or not bool(np.all(np.diff(ptr) == deg)):
            raise _bad(path, f"the {side}-adjacency row pointers do not match the edges (each row's length "
                             "must be its vertex's degree, from 0 to the number of entries)")
        for lo, c in chunks(nbr):
            e = eid[lo:lo + _CHUNK]
            if int(c.min()) < 0 or int(c.max()) >= n or int(e.min()) < 0 or int(e.max()) >= m:
                raise _bad(path, f"the {side}-adjacency entries {lo}..{lo + c.size - 1} name a vertex or edge "
                                 "out of range")
    counts = head["info"]
    for k in _COUNTS:
        v = counts.get(k, 0)
        if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v < 1 << 62:
            raise _bad(path, f"header count '{k}' is not a non-negative integer")


def load_binary(path: str, directed: bool = False) -> Graph:
    """Memory-map a `.g2g` file and check it (see the module docstring); the arrays stay in the file."""
    with reading_graph_file(path), open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size == 0:
            raise _bad(path, "the file is empty")
        buf = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    head = _read_header(path, buf, size)
    if head["directed"] != bool(directed):
        stored = "a directed" if head["directed"] else "an undirected"
        hint = "run with --directed" if head["directed"] else "run without --directed"
        raise G2PLError(f"the file holds {stored} graph; {hint}, or convert the source again "
                        f"{'with' if directed else 'without'} --directed", file=path)
    a = _arrays(path, head, buf, size)
    _check_contents(path, head, a)
    try:  # the check touched every page: let them go from this process (the page cache keeps them)
        buf.madvise(mmap.MADV_DONTNEED)
    except (AttributeError, OSError, ValueError):  # no madvise on this platform: only a higher peak
        pass
    n, m = head["n"], head["m"]
    if a["src"].dtype != index_dtype(n) or a["in_eid"].dtype != index_dtype(m):  # the runtime's index widths
        for k in ("src", "dst", "in_nbr", "out_nbr"):
            if k in a:
                a[k] = a[k].astype(index_dtype(n))
        for k in ("in_eid", "out_eid"):
            if k in a:
                a[k] = a[k].astype(index_dtype(m))
    for k in ("ids", "in_indptr", "out_indptr"):  # vertex-sized: copied, so that the mapping (edge-sized)
        if k in a:                                # is unmapped once a degree view has taken over the edges
            a[k] = np.array(a[k])
    info: dict[str, Any] = {k: int(head["info"].get(k, 0)) for k in _COUNTS}
    src_fmt = head["info"].get("source_format")
    info = {"format": "g2g", "source_format": str(src_fmt)[:64] if isinstance(src_fmt, str) else "unknown",
            **info}
    out = "out" if directed else "in"
    graph = Graph(
        n=n, m=m, directed=bool(directed), ids=a["ids"], src=a["src"], dst=a["dst"],
        weight=a["weight"] if head["weighted"] else unit_weights(m),
        in_indptr=a["in_indptr"], in_nbr=a["in_nbr"], in_eid=a["in_eid"],
        out_indptr=a[f"{out}_indptr"], out_nbr=a[f"{out}_nbr"], out_eid=a[f"{out}_eid"],
        weighted=bool(head["weighted"]), name=path, info=info,
    )
    graph.__dict__["_release"] = lambda name: _release(buf, head["arrays"].get(name))
    return graph


def _release(buf: mmap.mmap, entry: list | None) -> None:
    """Drop one array's pages from this process (a view has taken the array over): without it the
    mapping's touched pages would count until every array of the file is gone."""
    if entry is None:
        return
    dt, off, count = entry
    page = mmap.PAGESIZE
    lo = -(-off // page) * page
    hi = (off + count * np.dtype(dt).itemsize) // page * page
    if hi > lo:
        try:
            buf.madvise(mmap.MADV_DONTNEED, lo, hi - lo)
        except (AttributeError, OSError, ValueError):
            pass
