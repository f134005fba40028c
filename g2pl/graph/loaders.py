"""Graph inputs: edge-list text files, Matrix Market, NumPy .npz, and generator specs.

Text files are parsed block by block (4 MiB of text, cut at line ends, so the
temporaries stay small; g2pl/graph/textblocks.py), in two tiers, after a compiled
pass where numba serves (g2pl/io/textrows.py: the common forms of a line read
straight into the row arrays; a block with anything else goes to the tiers). The fast tier
hands the block to NumPy's C tokenizer (`np.loadtxt` reading it as a file, with
a single comment character, which is its fast path: ~1 s for a 16M-line file)
and checks the parsed arrays with vectorized tests of every rule. Only if that
fails does the slow tier run on that block: it splits it into pieces, lets
NumPy re-check each piece in file order, and narrows the first failing piece
down to a few thousand lines that a Python validator reads line by line to
name the first bad line (1-based, counting every physical line) with a precise
message. Good files pay nothing for error reporting.

`#` and `%` start a comment that runs to the end of the line; blank lines are
skipped. Every failure is a `G2PLError` (exit status 2) naming the file.
"""

from __future__ import annotations

import codecs
import io
import math
import os
import re
import warnings
import zipfile
from array import array
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, BinaryIO, TypeVar

import numpy as np

from g2pl.errors import G2PLError, G2PLRuntimeError, reading_graph_file
from g2pl.graph.binary import EXT as BINARY_EXT
from g2pl.graph.binary import load_binary, open_graph_file
from g2pl.graph.generators import GENERATOR_FORMS, generate, looks_like_generator, parse_generator
from g2pl.graph.graph import MAX_VERTEX_ID, Graph, build_graph_from
from g2pl.graph.graphalytics import layout
from g2pl.graph.memory import check_declared, check_fits, temporaries_returned
from g2pl.graph.share import EdgeShare, agreed
from g2pl.graph.textblocks import BlockSource, block_ends
from g2pl.io import compiled, textrows
from g2pl.io.npz_check import npz_headers
from g2pl.io.numtext import beyond_int64, shorten

EDGE_LIST_EXTS = (".txt", ".el", ".tsv", ".csv", ".edges")
FORMAT_BY_EXT: dict[str, str] = {
    **{ext: "edgelist" for ext in EDGE_LIST_EXTS},
    ".mtx": "mtx",
    ".npz": "npz",
    ".e": "graphalytics",
    BINARY_EXT: "binary",
}

_ACCEPTED = (
    f"accepted: {' '.join(EDGE_LIST_EXTS)} (edge lists 'u v [weight]'), .mtx (Matrix Market), "
    ".e (LDBC Graphalytics edges, with NAME.v beside), "
    f".npz (NumPy arrays src, dst[, weight, ids]), {BINARY_EXT} (made by `g2pl convert`), or a generator {', '.join(GENERATOR_FORMS.values())}"
)

_ID_RE = re.compile(r"(?:\+?[0-9]+|-0+)\Z")  # NumPy reads "-0" as 0
_NEG_RE = re.compile(r"-[0-9]+\Z")
_FLOAT_RE = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\Z")
_NONFINITE_RE = re.compile(r"[+-]?(?:nan|inf|infinity)\Z", re.IGNORECASE)
_COMMENT_RE = re.compile(r"[#%]")

_T = TypeVar("_T")


# --------------------------------------------------------------------------- specs


@dataclass(frozen=True)
class GraphSpec:
    """What a `--graph` argument names, checked without touching the file system contents.

    kind is "file" or "generator"; format is "edgelist", "mtx", "npz", "graphalytics",
    "binary" (files) or "kron", "ws", "er" (generators); params holds validated
    generator parameters.
    """

    spec: str
    kind: str
    format: str
    path: str | None = None
    params: dict[str, Any] = field(default_factory=dict)


def parse_graph_spec(spec: str) -> GraphSpec:
    """Classify and validate a graph argument (file path by extension, or generator spec).

    Lets the CLI reject a bad `--graph` before compiling anything.
    """
    if not isinstance(spec, str) or not spec.strip():
        raise G2PLError(f"empty graph argument; {_ACCEPTED}")
    if looks_like_generator(spec) and not os.path.exists(spec):
        gen, params = parse_generator(spec)
        return GraphSpec(spec=spec, kind="generator", format=gen, params=params)
    ext = os.path.splitext(spec)[1].lower()
    fmt = FORMAT_BY_EXT.get(ext)
    if fmt is None:
        if ext in (".v", ".properties"):
            raise G2PLError(f"a Graphalytics graph is named by its edge file: pass NAME.e (its {ext} file is "
                            "read from beside it)", file=spec)
        what = f"extension '{ext}'" if ext else "no extension"
        raise G2PLError(f"unsupported graph file ({what}); {_ACCEPTED}", file=spec)
    return GraphSpec(spec=spec, kind="file", format=fmt, path=spec)


@dataclass(frozen=True)
class ReadOptions:
    """How to read a graph file beyond what its name says (`g2pl run --vertices/--header/--mtx-base`).

    `vertices`: a file of vertex IDs, one a line (edge lists: added even when isolated;
    Graphalytics: the vertex file instead of NAME.v).  `header`: an edge list's first data
    line names the columns and is skipped.  `mtx_base`: the vertex ID of a Matrix Market
    file's first row and column, 1 (as written) or 0.
    """

    vertices: str | None = None
    header: bool = False
    mtx_base: int = 1

    def check(self, gs: GraphSpec) -> None:
        """Refuse an option the graph's format does not read: silently ignoring it would hide a mistake."""
        what = f"{gs.format} generator" if gs.kind == "generator" else {
            "edgelist": "an edge list", "mtx": "a Matrix Market file", "npz": "an .npz file",
            "graphalytics": "a Graphalytics edge file", "binary": f"a {BINARY_EXT} file"}[gs.format]
        if self.vertices is not None and gs.format not in ("edgelist", "graphalytics"):
            raise G2PLError(f"--vertices: the graph is {what}; vertex files go with edge lists and "
                            "Graphalytics .e files", file=gs.spec)
        if self.header and gs.format != "edgelist":
            raise G2PLError(f"--header: the graph is {what}; only edge lists have header lines", file=gs.spec)
        if self.mtx_base not in (0, 1):
            raise G2PLError(f"--mtx-base {self.mtx_base}: expected 0 or 1", file=gs.spec)
        if self.mtx_base != 1 and gs.format != "mtx":
            raise G2PLError(f"--mtx-base: the graph is {what}, not a Matrix Market file", file=gs.spec)


def load_graph(spec: str, directed: bool | None = None, seed: int = 0, *, vertices: str | None = None,
               header: bool = False, mtx_base: int = 1) -> Graph:
    """Load a graph file or run a generator; `seed` only matters for generators.

    `directed=None` (not said) is undirected, except for a Graphalytics graph whose
    properties file says otherwise.  `vertices`, `header` and `mtx_base` are `ReadOptions`.
    """
    return load_with(spec, directed, seed, ReadOptions(vertices, header, mtx_base))


def load_with(spec: str, directed: bool | None, seed: int, read: ReadOptions) -> Graph:
    """`load_graph` with its file options in one `ReadOptions`."""
    gs = parse_graph_spec(spec)
    read.check(gs)
    check_fits(gs)  # refuse up front what cannot fit, instead of dying half-way
    try:
        with temporaries_returned():
            if gs.kind == "generator":
                return generate(spec, directed=bool(directed), seed=seed)
            assert gs.path is not None
            if gs.format == "graphalytics":
                return load_graphalytics(gs.path, directed, vertices=read.vertices)
            if gs.format == "edgelist":
                return load_edge_list(gs.path, bool(directed), vertices=read.vertices, header=read.header)
            if gs.format == "mtx":
                return load_mtx(gs.path, bool(directed), base=read.mtx_base)
            return _LOADERS[gs.format](gs.path, bool(directed))
    except MemoryError:
        raise G2PLRuntimeError(f"not enough memory to build the graph '{spec}'", file=spec) from None


# --------------------------------------------------------------------------- text helpers


def _read_bytes(path: str) -> bytes:
    with open_graph_file(path) as f, reading_graph_file(path):
        return f.read()


def _check_text(path: str, data: bytes, *, bom: bool = True) -> tuple[bytes, bool]:
    """Reject binary / non-UTF-8 content (naming the line); strip a UTF-8 BOM (with `bom`: text from
    the start of the file, where one may be).

    Old-Mac lone CR line ends become LF (NumPy's tokenizer rejects them), in
    which case the returned bytes differ from the file: the flag says whether
    the file itself may still be handed to NumPy.
    """
    nul = data.find(b"\0")
    if nul != -1:
        raise G2PLError(
            "the file contains binary data (a NUL byte); expected a text graph file",
            file=path,
            line=data.count(b"\n", 0, nul) + 1,
        )
    if bom and data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8) :]
    if not data.isascii():
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise G2PLError(
                f"the file is not UTF-8 text (invalid byte 0x{data[e.start]:02x})",
                file=path,
                line=data.count(b"\n", 0, e.start) + 1,
            ) from None
    as_file = True
    if b"\r" in data and data.count(b"\r") != data.count(b"\r\n"):
        data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        as_file = False
    return data, as_file


def _strip_comment(line: str) -> str:
    m = _COMMENT_RE.search(line)
    return line if m is None else line[: m.start()]


def _next_data_line(data: bytes, pos: int, lineno: int) -> tuple[int, int, str] | None:
    """First line at or after byte `pos` (1-based number `lineno`) that is not blank or a comment.

    Returns (byte offset, line number, line text without comment), or None.
    """
    size = len(data)
    while pos < size:
        end = data.find(b"\n", pos)
        if end == -1:
            end = size
        body = _strip_comment(data[pos:end].decode("utf-8"))
        if body.strip():
            return pos, lineno, body
        pos = end + 1
        lineno += 1
    return None


def _split(body: str, comma: bool) -> list[str]:
    if comma:
        return [t.strip() for t in body.split(",")]
    return body.split()


@dataclass
class _Table:
    """How to read the data rows of a text file (shared by edge lists and .mtx)."""

    path: str
    data: bytes
    offset: int  # byte offset of the first data line
    lineno: int  # its 1-based line number
    ncols: int  # 1 (a vertex file's IDs), 2 (u v) or 3 (u v weight)
    comma: bool
    bounds: tuple[tuple[int, int, str], ...]  # (lo, hi exclusive, label) per ID column
    col_desc: str
    as_file: bool = True  # data equals the file's bytes (after any BOM), so NumPy may read the file
    expected_rows: int | None = None  # .mtx: entries declared on the size line
    size_lineno: int | None = None
    first_lineno: int | None = None  # the file's first data line, when `data` is a later byte range of it
    #: (byte offset, rows before it) of each block `_load_rows` parsed, so that `_row_line` can find a
    #: row's line again without rescanning the whole text
    marks: list[tuple[int, int]] = field(default_factory=list)


_Rows = tuple[np.ndarray, np.ndarray, "np.ndarray | None"]

# Slow tier: pieces at most this big are validated line by line in Python; bigger ones are
# split in _FANOUT and each piece retried with NumPy first, so a bad line near the end of a
# 17M-line file is found in ~2 s rather than after a Python loop over every line.
_LEAF_BYTES = 1 << 16
_FANOUT = 16


def _load_rows(t: _Table) -> _Rows:
    """Parse the data rows block by block (textblocks.BLOCK_BYTES of text each, cut at line ends).

    Each block goes to the fast tier (NumPy's C tokenizer reading it as a file,
    plus vectorized checks of every rule); if that fails, the slow tier decides
    for that block and names the first bad line. The line validator is the
    single source of truth for what is valid. Rows are written into arrays sized
    by the file's line count, so the temporaries are those of one block.
    """
    data = t.data
    # A data row takes a line and at least 4 bytes ("1 2\n"; 2 for an ID alone); np.empty only
    # reserves, the pages are touched as rows arrive, so blank-line padding costs no memory.
    cap = min(data.count(b"\n", t.offset) + 1, (len(data) - t.offset) // (2 if t.ncols == 1 else 4) + 1)
    u = np.empty(cap, dtype=np.int64)
    v = np.empty(cap if t.ncols >= 2 else 0, dtype=np.int64)
    w = np.empty(cap, dtype=np.float64) if t.ncols == 3 else None
    n = 0
    lo = t.offset
    t.marks.clear()
    # one compiled pass per block where it serves: NumPy's tokenizer takes 4-6 ns a byte, the pass under
    # 2, so loading numba (about 0.4 s) pays from about 128 MiB of text (AUTO_WORK eighth-bytes), or
    # at once where it is loaded already
    fast = compiled.kernel(textrows.parse_rows, (len(data) - t.offset) >> 3)
    buf = np.frombuffer(data, dtype=np.uint8) if fast is not None else None
    wbuf = w if w is not None else np.zeros(0, dtype=np.float64)
    with BlockSource() as source:
        for hi in block_ends(data, t.offset, len(data)):
            t.marks.append((lo, n))
            if fast is not None:
                k = fast(buf, lo, hi, t.ncols, t.comma, u, v, wbuf, n, textrows.POWERS)
                if k >= 0 and _rows_ok(t, u[n:n + k], v[n:n + k], None if w is None else w[n:n + k], n):
                    n += k
                    lo = hi
                    continue
            rows = _parse_chunk(t, source(_piece_bytes(t, lo, hi)), 0, "utf-8", n)
            if rows is None:
                parts: list[_Rows] = []
                _scan(t, lo, hi, t.lineno + data.count(b"\n", t.offset, lo), n, parts)
                rows = _concat(t, parts)
            k = rows[0].size
            u[n : n + k] = rows[0]
            if t.ncols >= 2:
                v[n : n + k] = rows[1]
            if w is not None:
                w[n : n + k] = rows[2]
            n += k
            lo = hi
    if t.expected_rows is not None and n < t.expected_rows:
        raise G2PLError(_fewer_entries(t.expected_rows, n), file=t.path, line=t.size_lineno)
    return _trim(u, n), (_trim(v, n) if t.ncols >= 2 else v), (None if w is None else _trim(w, n))


def _fewer_entries(declared: int, found: int) -> str:
    return f"the size line declares {declared} entries but the file has only {found}"


def _more_entries(declared: int, size_line: int | None) -> str:
    return f"more entries than the {declared} declared on the size line (line {size_line})"


def _row_line(t: _Table, k: int) -> int | None:
    """The 1-based line of data row `k` (0-based, in file order) of a table `_load_rows` has read (as
    far as it got): for errors found only after parsing (an edge endpoint missing from the vertex
    file, an entry beyond the declared count).  Scans one block line by line, the one holding the
    row.  None if the text has fewer rows (a file changed since it was parsed)."""
    start = (t.offset, 0)
    for mark in t.marks:
        if mark[1] > k:
            break
        start = mark
    return next((line for row, line in _row_lines(t, start) if row == k), None)


def _rows_before(t: _Table, line: int) -> int:
    """How many data rows come before `line` in a table `_load_rows` stopped reading at that line (an
    error there): its rows are all good up to it.  Scans the block it stopped in line by line."""
    start = t.marks[-1] if t.marks else (t.offset, 0)
    rows = start[1]
    for row, at in _row_lines(t, start):
        if at >= line:
            break
        rows = row + 1
    return rows


def _row_lines(t: _Table, start: tuple[int, int]) -> Iterator[tuple[int, int]]:
    """(row index, 1-based line) of each data row from `start`, a (byte offset, rows before it) of
    `t.marks` or the table's own start."""
    pos, row = start
    line = t.lineno + t.data.count(b"\n", t.offset, pos)
    while (found := _next_data_line(t.data, pos, line)) is not None:
        pos, line, _ = found
        yield row, line
        row += 1
        pos = t.data.find(b"\n", pos) + 1
        if pos == 0:
            return
        line += 1


def _trim(a: np.ndarray, n: int) -> np.ndarray:
    """The first n entries; copied when the rest (comment and blank lines) is a large share."""
    return a[:n] if n >= a.size - (a.size >> 3) else a[:n].copy()


def _piece_bytes(t: _Table, lo: int, hi: int) -> bytes:
    """Bytes [lo, hi) with '%' comments turned into '#' ones (loadtxt is fast with one comment char)."""
    piece = t.data[lo:hi]
    return piece.replace(b"%", b"#") if b"%" in piece else piece


def _piece(t: _Table, lo: int, hi: int) -> io.BytesIO:
    return io.BytesIO(_piece_bytes(t, lo, hi))


def _concat(t: _Table, parts: list[_Rows]) -> _Rows:
    u = np.concatenate([p[0] for p in parts])
    v = np.concatenate([p[1] for p in parts])
    w = np.concatenate([p[2] for p in parts if p[2] is not None]) if t.ncols == 3 else None
    return u, v, w


def _parse_chunk(t: _Table, source: Any, skip: int, enc: str, rows_before: int) -> _Rows | None:
    """NumPy's C parser plus vectorized checks of every rule; None when anything is off."""
    if t.ncols <= 2:
        dtype: Any = np.int64
    else:
        dtype = np.dtype([("u", np.int64), ("v", np.int64), ("w", np.float64)])
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            arr = np.loadtxt(
                source,
                dtype=dtype,
                comments="#",
                delimiter="," if t.comma else None,
                skiprows=skip,
                ndmin=2 if t.ncols <= 2 else 1,
                encoding=enc,
                quotechar=None,
            )
    except (ValueError, OverflowError, TypeError, UnicodeError, IndexError):
        return None
    except OSError as e:
        raise G2PLError(f"cannot read the graph file: {e.strerror or e}", file=t.path) from None
    empty = np.zeros(0, dtype=np.int64)
    if arr.size == 0:  # only comments / blank lines
        return empty, empty, (np.zeros(0, dtype=np.float64) if t.ncols == 3 else None)
    if t.ncols <= 2 and arr.shape[1] != t.ncols:  # loadtxt takes the column count from the first row
        return None
    if t.ncols == 1:
        u, v, w = np.ascontiguousarray(arr[:, 0]), empty, None
    elif t.ncols == 2:
        u = np.ascontiguousarray(arr[:, 0])
        v = np.ascontiguousarray(arr[:, 1])
        w = None
    else:
        u = np.ascontiguousarray(arr["u"])
        v = np.ascontiguousarray(arr["v"])
        w = np.ascontiguousarray(arr["w"])
    del arr
    return (u, v, w) if _rows_ok(t, u, v, w, rows_before) else None


def _rows_ok(t: _Table, u: np.ndarray, v: np.ndarray, w: np.ndarray | None, rows_before: int) -> bool:
    """Do parsed rows keep every rule the text itself cannot break (ID ranges, weights finite and not
    negative, no more rows than declared)?"""
    if not u.size:
        return True
    for col, (lo, hi, _) in zip((u, v)[: len(t.bounds)], t.bounds, strict=True):
        if int(col.min()) < lo or int(col.max()) >= hi:
            return False
    if w is not None and not (bool(np.isfinite(w).all()) and bool((w >= 0).all())):
        return False
    return t.expected_rows is None or rows_before + u.size <= t.expected_rows


def _scan(t: _Table, lo: int, hi: int, lineno: int, rows_before: int, out: list[_Rows]) -> int:
    """Slow tier over bytes [lo, hi) starting at line `lineno`: append parsed rows, return their count.

    Pieces that NumPy parses cleanly are accepted as they are; the first failing piece is
    split further until it is small enough for the line validator, which raises on the
    first bad line. Pieces are visited in file order, so the error is the first in the file.
    """
    data = t.data
    cuts = [lo]
    if hi - lo > _LEAF_BYTES:
        step = (hi - lo) // _FANOUT
        for k in range(1, _FANOUT):
            nl = data.find(b"\n", lo + k * step, hi)
            if nl != -1 and nl + 1 > cuts[-1] and nl + 1 < hi:
                cuts.append(nl + 1)
    cuts.append(hi)
    if len(cuts) == 2:  # small, or one enormous line: validate line by line
        rows = _validate_lines(t, lo, hi, lineno, rows_before)
        out.append(rows)
        return int(rows[0].size)
    count = 0
    for a, b in zip(cuts[:-1], cuts[1:], strict=True):
        rows_or_none = _parse_chunk(t, _piece(t, a, b), 0, "utf-8", rows_before + count)
        if rows_or_none is None:
            count += _scan(t, a, b, lineno, rows_before + count, out)
        else:
            out.append(rows_or_none)
            count += int(rows_or_none[0].size)
        lineno += data.count(b"\n", a, b)
    return count


def _id_error(tok: str, lo: int, hi: int, label: str, first: bool) -> str | None:
    """Message for a bad ID token, or None if it is fine."""
    if not _ID_RE.match(tok):
        if _NEG_RE.match(tok):
            return f"negative {label} {tok} (IDs must be non-negative integers)"
        if _FLOAT_RE.match(tok):
            return f"{label} '{tok}' is not an integer"
        msg = f"expected an integer {label}, found '{tok}'"
        if first:
            msg += " (a header line? start it with # to make it a comment)"
        return msg
    if beyond_int64(tok):
        return f"{label} {shorten(tok)} ({len(tok.lstrip('+-').lstrip('0'))} digits) is too large" + (
            " (IDs must be below 2^62)" if label == "vertex ID" else f" (expected {lo}..{hi - 1})")
    x = int(tok)
    if x < lo or x >= hi:
        if label == "vertex ID":
            return f"vertex ID {x} is too large (IDs must be below 2^62)"
        return f"{label} {x} is out of range {lo}..{hi - 1}"
    return None


def _weight_error(tok: str, what: str) -> str | None:
    if _NONFINITE_RE.match(tok):
        return f"{what} '{shorten(tok)}' is not a finite number"
    if not _FLOAT_RE.match(tok):
        return f"bad {what} '{shorten(tok)}': expected a number"
    x = float(tok)
    if x != x or x in (float("inf"), float("-inf")):
        return f"{what} '{shorten(tok)}' is not a finite number (overflows float64)"
    if x < 0:
        return f"negative {what} {tok} ({what}s must be non-negative)"
    return None


def _validate_lines(t: _Table, lo: int, hi: int, lineno: int, rows_before: int) -> _Rows:
    """Line by line over bytes [lo, hi): raise on the first bad line, else return the parsed rows."""
    text = t.data[lo:hi].decode("utf-8", errors="replace")
    what = "value" if t.col_desc.startswith("'row") else "weight"
    us: array[int] = array("q")
    vs: array[int] = array("q")
    ws: array[float] = array("d")
    rows = rows_before
    first = t.lineno if t.first_lineno is None else t.first_lineno
    for i, raw in enumerate(io.StringIO(text, newline="\n")):
        line = lineno + i
        body = _strip_comment(raw)
        if not body.strip():
            continue
        tokens = _split(body, t.comma)
        msg: str | None = None
        if len(tokens) != t.ncols:
            sep = "comma-separated " if t.comma else ""
            cols = "1 column" if t.ncols == 1 else f"{t.ncols} {sep}columns"
            msg = f"expected {cols} ({t.col_desc}), found {len(tokens)}"
            if line != first:
                msg += f" (line {first}, the first data line, has {t.ncols})"
            if not t.comma and "," in body:
                msg += "; do not mix comma and whitespace separators"
        else:
            for tok, (lo_id, hi_id, label) in zip(tokens, t.bounds, strict=False):
                msg = _id_error(tok, lo_id, hi_id, label, first=line == first)
                if msg:
                    break
            if msg is None and t.ncols == 3:
                msg = _weight_error(tokens[2], what)
        if msg is None and t.expected_rows is not None and rows >= t.expected_rows:
            msg = _more_entries(t.expected_rows, t.size_lineno)
        if msg is not None:
            raise G2PLError(msg, file=t.path, line=line)
        us.append(int(tokens[0]))
        if t.ncols >= 2:
            vs.append(int(tokens[1]))
        if t.ncols == 3:
            ws.append(float(tokens[2]))
        rows += 1
    return (
        np.array(us, dtype=np.int64),
        np.array(vs, dtype=np.int64),
        np.array(ws, dtype=np.float64) if t.ncols == 3 else None,
    )


# --------------------------------------------------------------------------- formats

#: the kinds of text table: an edge list's edges ('u v' or 'u v weight'; a header line possible), a
#: Graphalytics edge file's (the same, never a header) and vertex IDs (one a line)
_EDGES, _GA_EDGES, _IDS = "edges", "graphalytics edges", "ids"
_ID_BOUNDS = (0, MAX_VERTEX_ID, "vertex ID")


def load_edge_list(path: str, directed: bool = False, *, vertices: str | None = None,
                   header: bool = False) -> Graph:
    """SNAP-style `u v [weight]` lines, whitespace- or comma-separated (decided by the first data line).

    `vertices` names a file of vertex IDs, one per line, that are vertices even when no edge
    touches them; `header` skips the first data line (a CSV header such as `src,dst,weight`).
    """
    extra = None if vertices is None else read_id_list(vertices)
    u, v, w, comma = read_edge_rows(path, header=header, empty_ok=extra is not None and extra.size > 0)
    info = {"format": "edgelist", "separator": "comma" if comma else "whitespace"}
    edges = [u, v]
    del u, v  # (the build frees each once consumed)
    return build_graph_from(edges, w, directed=directed, name=path, extra_ids=extra, info=info)


def read_edge_rows(path: str, *, header: bool = False, empty_ok: bool = False) -> tuple:
    """An edge list's parsed rows in file order, checked: (u, v, weights or None, comma-separated?).

    `empty_ok`: a file without edges gives no rows (its vertices come from elsewhere) instead of an
    error."""
    t, comma = _text_table(path, _EDGES, header, empty_ok)
    return (*_load_rows(t), comma)


def read_id_list(path: str) -> np.ndarray:
    """A vertex file's IDs (one non-negative integer a line; `#`/`%` comments and blank lines skipped)."""
    check_fits(GraphSpec(spec=path, kind="file", format="edgelist", path=path))  # text: its size says enough
    t, _ = _text_table(path, _IDS, False, True)
    return _load_rows(t)[0]


def _text_table(path: str, kind: str, header: bool, empty_ok: bool, *, ncols: int | None = None
                ) -> tuple[_Table, bool]:
    """The whole file `path` as a table of `kind` rows, ready for `_load_rows`; (table, comma?).
    `ncols` requires that many columns (a format that declares them)."""
    data, as_file = _check_text(path, _read_bytes(path))
    offset, lineno, comma, cols = _data_head(path, data, True, kind, header, empty_ok, ncols)
    return _table(path, data, offset, lineno, comma, cols, kind, as_file), comma


def _table(path: str, data: bytes, offset: int, lineno: int, comma: bool, ncols: int, kind: str,
           as_file: bool, first_lineno: int | None = None) -> _Table:
    if kind == _IDS:
        return _Table(path=path, data=data, offset=offset, lineno=lineno, ncols=1, comma=comma,
                      bounds=(_ID_BOUNDS,), col_desc="one vertex ID a line", as_file=as_file,
                      first_lineno=first_lineno)
    return _Table(path=path, data=data, offset=offset, lineno=lineno, ncols=ncols, comma=comma,
                  bounds=(_ID_BOUNDS, _ID_BOUNDS), col_desc="'u v'" if ncols == 2 else "'u v weight'",
                  as_file=as_file, first_lineno=first_lineno)


def _looks_like_header(tokens: list[str]) -> bool:
    """Whether a first line's tokens name columns rather than give numbers (`src,dst,weight`): a word
    that is not a number (an empty or malformed number is a bad line, reported as such)."""
    return any(_is_word(t) for t in tokens)


def _is_word(token: str) -> bool:
    if _FLOAT_RE.match(token) or _NONFINITE_RE.match(token):
        return False
    return token.startswith(('"', "'")) or any(c.isalpha() for c in token)


def _data_head(path: str, data: bytes, complete: bool, kind: str, header: bool, empty_ok: bool,
               ncols: int | None = None) -> tuple[int, int, bool, int]:
    """(byte offset and line number of the first data row, comma-separated?, columns) of a text
    graph file whose start is `data`; after its header line when `header`.  A file without data
    rows gives the offset len(data) (when `empty_ok`; else an error).  With `complete` False,
    `data` is a prefix that may end too soon to tell: then IndexError asks for a longer one.

    Edge lists: a first line that names columns is refused unless `header` (a silently skipped
    line, or one read as an edge, would be worse), and `header` refuses a first line of numbers."""
    first = _next_data_line(data, 0, 1)
    if first is not None and not complete and data.find(b"\n", first[0]) == -1:
        raise IndexError("prefix too short")
    if first is not None and kind != _IDS:
        offset, lineno, body = first
        comma = "," in body
        tokens = _split(body, comma)
        looks = _looks_like_header(tokens)
        if header and not looks:
            raise G2PLError(f"--header: line {lineno} is '{shorten(body.strip())}', numbers rather than a header "
                            "naming the columns; leave out --header to read it as an edge", file=path, line=lineno)
        if not header and looks:
            skip = "pass --header (header=True in Python) to skip it, or " if kind == _EDGES else ""
            raise G2PLError(f"the first line '{shorten(body.strip())}' looks like a header (it is not 'u v "
                            f"[weight]' numbers); {skip}start it with # to make it a comment", file=path,
                            line=lineno)
        if header:
            if comma and tokens[0] == "":
                raise G2PLError(f"the header '{shorten(body.strip())}' starts with an unnamed column (a pandas "
                                "index?); write the file with to_csv(index=False)", file=path, line=lineno)
            end = data.find(b"\n", offset)
            first = None if end == -1 else _next_data_line(data, end + 1, lineno + 1)
            if first is not None and not complete and data.find(b"\n", first[0]) == -1:
                raise IndexError("prefix too short")
            if first is not None:
                data_cols = len(_split(first[2], "," in first[2]))
                if data_cols != len(tokens):
                    raise G2PLError(f"the header (line {lineno}) names {len(tokens)} columns but the first edge "
                                    f"has {data_cols}", file=path, line=first[1])
    if first is None:
        if not complete:
            raise IndexError("prefix too short")
        if not empty_ok:
            raise G2PLError("the file has no edges (only comments or blank lines), so the graph has no "
                            "vertices", file=path)
        return len(data), data.count(b"\n") + 1, False, ncols or (1 if kind == _IDS else 2)
    offset, lineno, body = first
    comma = "," in body
    found = len(_split(body, comma))
    sep = "comma-separated " if comma else ""
    if kind == _IDS:
        if found != 1:
            raise G2PLError(f"expected one vertex ID a line, found {found} {sep}columns", file=path, line=lineno)
    elif ncols is not None and found != ncols:
        raise G2PLError(f"expected {ncols} {sep}columns ({'u v' if ncols == 2 else 'u v weight'}), found {found}",
                        file=path, line=lineno)
    elif found not in (2, 3):
        raise G2PLError(f"expected 2 or 3 {sep}columns ('u v' or 'u v weight'), found {found}", file=path,
                        line=lineno)
    return offset, lineno, comma, found


def _parsed_prefix(path: str, f: BinaryIO, parse: Callable[[bytes, bool], _T]) -> tuple[_T, bytes, int, int]:
    """`parse(text, whole)` of the shortest prefix of an open text file that decides it, so that a
    file's head is read without reading the file: 64 KiB cut at a line end and checked by
    `_check_text`, growing while `parse` raises IndexError (`whole`: the prefix is the whole file).
    Returns (what `parse` gave, the text, the length of the file's BOM, the prefix's length)."""
    want = 1 << 16
    while True:
        f.seek(0)
        prefix = f.read(want)
        bom = len(codecs.BOM_UTF8) if prefix.startswith(codecs.BOM_UTF8) else 0
        whole = len(prefix) < want
        cut = len(prefix) if whole else prefix.rfind(b"\n") + 1
        data, _ = _check_text(path, prefix[:cut])
        try:
            return parse(data, whole), data, bom, cut
        except IndexError:
            if whole:
                raise
            want *= 4


def _text_head(path: str, f: BinaryIO, kind: str, header: bool, empty_ok: bool, ncols: int | None = None
               ) -> tuple[int, int, bool, int]:
    """`_data_head` of an open file, reading only as far as its first data row (in growing prefixes);
    the offset is the file's (a BOM counted)."""
    got, data, bom, cut = _parsed_prefix(
        path, f, lambda text, whole: _data_head(path, text, whole, kind, header, empty_ok, ncols))
    offset, lineno, comma, cols = got
    if len(data) + bom != cut:  # lone CRs rewritten: offsets no longer match the file
        raise G2PLError("lines end with lone CR characters; a distributed load needs LF or CRLF "
                        "line ends", file=path)
    if offset == len(data):  # no data rows: past the end of the file
        f.seek(0, os.SEEK_END)
        return f.tell(), lineno, comma, cols
    return offset + bom, lineno, comma, cols


def _line_start_at(f: BinaryIO, pos: int, end: int) -> int:
    """The first line start at or after byte `pos` (`end` if none before it)."""
    if pos <= 0:
        return 0
    step = 1 << 16
    at = pos - 1
    while at < end:
        f.seek(at)
        block = f.read(min(step, end - at))
        k = block.find(b"\n")
        if k != -1:
            return min(at + k + 1, end)
        if not block:
            break
        at += len(block)
    return end


def edge_list_share(path: str, directed: bool, rank: int, size: int, comm, *, vertices: str | None = None,
                    header: bool = False) -> EdgeShare:
    """Rank `rank`'s share of an edge-list file: the lines of its byte range (cut at line ends), read
    and checked by this rank alone (collective over `comm`: line numbers come from a scan of the
    ranks' line counts, and the first bad line of the file is the error every rank raises).  The
    vertex file `vertices`, if any, is shared the same way into the share's `extra` IDs."""
    extra = np.zeros(0, dtype=np.int64)
    if vertices is not None:
        extra = text_share(vertices, rank, size, comm, _IDS)[0].src
    empty_ok = bool(sum(comm.allgather(extra.size)))
    table, comma = text_share(path, rank, size, comm, _EDGES, header=header, empty_ok=empty_ok)
    info = {"format": "edgelist", "separator": "comma" if comma else "whitespace"}
    return EdgeShare(table.src, table.dst, table.weight, extra, directed, path, info)


@dataclass
class TextShare:
    """One rank's rows of a text file read by byte ranges; `table` keeps the text (its `_row_line`)."""

    src: np.ndarray
    dst: np.ndarray
    weight: np.ndarray | None
    table: _Table


def text_share(path: str, rank: int, size: int, comm, kind: str, *, header: bool = False,
               empty_ok: bool = True, ncols: int | None = None) -> tuple[TextShare, bool]:
    """Rank `rank`'s rows of a text table (`kind` edges or ids) read from its byte range; (rows,
    comma-separated?).  Collective: the first bad line of the file is the error every rank raises,
    its line number the file's."""

    def head(f: BinaryIO) -> tuple[int, tuple[int, int, bool, int]]:
        found = _text_head(path, f, kind, header, empty_ok, ncols)
        return found[0], found

    part, (_, head_line, comma, cols) = _read_range(path, rank, size, comm, head)
    if rank == 0:  # its range starts at the file's start: the head's lines come first
        offset, lineno = _line_start(part.data, head_line - 1), head_line
    else:
        offset, lineno = 0, part.before + 1
    table = _table(path, part.data, offset, lineno, comma, cols, kind, part.as_file, head_line)
    u, v, w = agreed(comm, lambda: _load_rows(table))
    return TextShare(u, v, w, table), comma


@dataclass
class _Range:
    """One rank's byte range of a text file, cut at line starts."""

    data: bytes  # its text as `_check_text` gives it (rank 0: the file's BOM stripped)
    as_file: bool
    before: int  # line ends in the file before it: its first line is line before + 1


def _read_range(path: str, rank: int, size: int, comm, head: Callable[[BinaryIO], tuple[int, _T]]
                ) -> tuple[_Range, _T]:
    """This rank's byte range of a text file, cut at line starts, and what `head(f)` reads of the
    file's head: it returns (start, that), and the ranges split the bytes from `start` on (rank 0's
    begins at the file's start).  Collective: line numbers come from a scan of the ranks' line
    counts, and every rank raises the error the whole file's checks would raise first (a NUL byte
    anywhere, else the first error in file order).  Lone CR line ends anywhere make every range's
    CRLFs LF too, as in the whole text `_check_text` gives."""
    err: G2PLError | None = None
    ranged = False  # err is this range's text check's, its line numbered from the range's start
    nul = False  # the range holds a NUL byte, which the whole file's check names before anything else
    raw = data = b""
    as_file = True
    got: Any = None
    try:
        with open_graph_file(path) as f, reading_graph_file(path):
            start, got = head(f)
            f.seek(0, os.SEEK_END)
            end = f.tell()
            span = end - start
            lo = 0 if rank == 0 else _line_start_at(f, start + span * rank // size, end)
            hi = end if rank == size - 1 else _line_start_at(f, start + span * (rank + 1) // size, end)
            f.seek(lo)
            raw = f.read(max(0, hi - lo))
        ranged, nul = True, b"\0" in raw
        data, as_file = _check_text(path, raw, bom=rank == 0)
    except G2PLError as e:
        err = e
    lines = data.count(b"\n")
    raw_lines = lines if as_file and err is None else raw.count(b"\n")  # the text checks count the file's LFs
    counts = comm.allgather((err, ranged, nul, raw_lines, lines, as_file))  # indexed c[0] .. c[5] below
    failed = [r for r, c in enumerate(counts) if c[0] is not None]
    if failed:
        r = next((r for r in failed if counts[r][2]), failed[0])
        first = counts[r][0]
        raise _renumbered(first, sum(c[3] for c in counts[:r])) if counts[r][1] else first
    if as_file and not all(c[5] for c in counts):
        data, as_file = data.replace(b"\r\n", b"\n"), False
    return _Range(data, as_file, sum(c[4] for c in counts[:rank])), got


def _line_start(data: bytes, k: int) -> int:
    """The offset of line k + 1 of `data` (after its first k line ends; len(data) if it has fewer)."""
    pos = 0
    for _ in range(k):
        pos = data.find(b"\n", pos) + 1
        if pos == 0:
            return len(data)
    return pos


def _renumbered(err: G2PLError, lines_before: int) -> G2PLError:
    """A text check's error on a byte range, its line number made the file's."""
    if not lines_before or err.line is None:
        return err
    return G2PLError(err.message, file=err.file, line=err.line + lines_before)


# --------------------------------------------------------------------------- LDBC Graphalytics


def load_graphalytics(path: str, directed: bool | None = None, *, vertices: str | None = None) -> Graph:
    """A Graphalytics graph (NAME.e, its vertex file and NAME.properties: g2pl/graph/graphalytics.py) as
    one `Graph`.  The vertex set is exactly the vertex file's: an edge endpoint it does not list is an
    error naming the edge's line."""
    lay = layout(path, directed, vertices)
    ids = read_id_list(lay.vertex_file)
    t, _ = _text_table(path, _GA_EDGES, False, True, ncols=lay.ncols)
    u, v, w = _load_rows(t)
    t.data = b""  # the text and rows go before the build; read again only to name a stray endpoint's line
    edges = [u, v]
    del u, v
    graph = build_graph_from(edges, w, directed=lay.directed, name=path, extra_ids=ids, info=lay.info)
    listed = ids.size if ids.size < 2 or bool(np.all(ids[1:] > ids[:-1])) else np.unique(ids).size
    if graph.n != listed:  # some endpoint is not in the vertex file
        t.data = _check_text(path, _read_bytes(path))[0]
        u, v, _ = _load_rows(t)
        known = np.unique(ids)
        err = _stray(t, u, v, ~_member(known, u), ~_member(known, v), lay.vertex_file)
        if err is not None:
            raise err
    return graph


def _member(known: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Per entry of `x`, whether `known` (sorted, distinct) holds it."""
    if known.size == 0:
        return np.zeros(x.size, dtype=bool)
    pos = np.minimum(np.searchsorted(known, x), known.size - 1)
    return known[pos] == x


def _stray(t: _Table, u: np.ndarray, v: np.ndarray, u_out: np.ndarray, v_out: np.ndarray, vertex_file: str
           ) -> G2PLError | None:
    """The error for the first edge (in file order) with an endpoint outside the vertex file (flagged
    per edge in `u_out`, `v_out`), or None when there is none."""
    bad = u_out | v_out
    if not bool(bad.any()):
        return None
    k = int(np.argmax(bad))
    a, b = int(u[k]), int(v[k])
    return G2PLError(f"edge {a} {b}: vertex {a if u_out[k] else b} is not in the vertex file {vertex_file}",
                     file=t.path, line=_row_line(t, k))


def graphalytics_share(path: str, directed: bool | None, rank: int, size: int, comm, *,
                       vertices: str | None = None) -> EdgeShare:
    """Rank `rank`'s share of a Graphalytics graph: its byte ranges of the vertex and the edge file
    (collective; every rank raises the same error, the first in the files).  That every endpoint is
    a listed vertex is checked with one exchange of the distinct endpoints and IDs (`_unknown`)."""
    lay = agreed(comm, lambda: layout(path, directed, vertices))
    ids = text_share(lay.vertex_file, rank, size, comm, _IDS)[0].src
    rows = text_share(path, rank, size, comm, _GA_EDGES, ncols=lay.ncols)[0]
    gone = _unknown(comm, ids, rows.src, rows.dst)

    def check() -> None:
        err = _stray(rows.table, rows.src, rows.dst, _member(gone, rows.src), _member(gone, rows.dst),
                     lay.vertex_file)
        if err is not None:
            raise err

    agreed(comm, check)
    rows.table.data = b""
    return EdgeShare(rows.src, rows.dst, rows.weight, ids, lay.directed, path, dict(lay.info))


def _unknown(comm, ids: np.ndarray, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """This rank's edge endpoints that no rank's `ids` hold (collective: every distinct ID and
    endpoint goes to rank value % size, which answers for it)."""
    size = comm.size
    ends = np.unique(np.concatenate([u, v]))

    def to_owners(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        owner = x % size
        order = np.argsort(owner, kind="stable")
        return x[order], np.bincount(owner, minlength=size)

    held, held_counts = to_owners(np.unique(ids))
    known = np.unique(comm.alltoallv(held, held_counts)[0])
    asked, asked_counts = to_owners(ends)
    got, got_counts = comm.alltoallv(asked, asked_counts)
    answer = (~_member(known, got)).astype(np.int8)
    missing = comm.alltoallv(answer, got_counts, asked_counts)[0].astype(bool)
    return np.sort(asked[missing])


_MTX_HEADER = "'%%MatrixMarket matrix coordinate <pattern|real|integer> <general|symmetric>'"


@dataclass(frozen=True)
class _MtxHead:
    """What a Matrix Market file's banner and size line say."""

    field: str  # pattern, real or integer
    symmetry: str  # general or symmetric
    nrows: int
    ncols: int
    entries: int
    size_off: int  # byte offset of the size line in the text parsed
    size_line: int  # its 1-based line number

    @property
    def nv(self) -> int:
        return max(self.nrows, self.ncols)

    @property
    def weighted(self) -> bool:
        return self.field != "pattern"

    def info(self, base: int) -> dict[str, Any]:
        return {"format": "mtx", "field": self.field, "symmetry": self.symmetry, "shape": (self.nrows, self.ncols),
                "entries": self.entries, "base": base}


def _check_mtx_base(path: str, base: int) -> None:
    if base not in (0, 1):
        raise G2PLError(f"--mtx-base {base}: expected 0 or 1 (the ID of the first row and column)", file=path)


def _mtx_head(path: str, data: bytes, whole: bool, ranks: int = 1) -> _MtxHead:
    """The banner and size line of the text `data`, checked: the file's start (`whole`: all of it;
    else cut at a line end, and IndexError asks for a longer one).  The declared size is checked
    against the memory of one of `ranks` ranks, each loading a share."""
    end = data.find(b"\n")
    if end == -1:
        if not whole:
            raise IndexError("prefix too short")
        end = len(data)
    banner = data[:end].decode("utf-8").strip()
    toks = banner.split()
    if len(toks) != 5 or toks[0].lower() != "%%matrixmarket":
        got = f"'{banner[:60]}'" if banner else "an empty line"
        raise G2PLError(
            f"malformed Matrix Market header: the first line must be {_MTX_HEADER}, got {got}",
            file=path,
            line=1,
        )
    obj, fmt, fld, sym = (x.lower() for x in toks[1:])
    if obj != "matrix":
        raise G2PLError(f"unsupported Matrix Market object '{toks[1]}'; expected 'matrix'", file=path, line=1)
    if fmt != "coordinate":
        raise G2PLError(
            f"unsupported Matrix Market format '{toks[2]}'; expected 'coordinate' (dense 'array' files are not graphs)",
            file=path,
            line=1,
        )
    if fld not in ("pattern", "real", "integer"):
        raise G2PLError(
            f"unsupported Matrix Market field '{toks[3]}'; expected pattern, real or integer",
            file=path,
            line=1,
        )
    if sym not in ("general", "symmetric"):
        raise G2PLError(
            f"unsupported Matrix Market symmetry '{toks[4]}'; expected general or symmetric",
            file=path,
            line=1,
        )
    size = _next_data_line(data, end + 1, 2)
    if size is None:
        if not whole:
            raise IndexError("prefix too short")
        raise G2PLError(
            "malformed Matrix Market file: missing the size line 'ROWS COLUMNS ENTRIES' after the header",
            file=path,
            line=max(1, data.count(b"\n") + (0 if data.endswith(b"\n") else 1)),
        )
    s_off, s_line, s_body = size
    stoks = s_body.split()
    if len(stoks) != 3 or not all(_ID_RE.match(x) for x in stoks):
        raise G2PLError(
            "malformed Matrix Market size line: expected 'ROWS COLUMNS ENTRIES' (three non-negative integers), "
            f"found '{s_body.strip()[:60]}'",
            file=path,
            line=s_line,
        )
    if any(beyond_int64(x) for x in stoks):
        raise G2PLError(f"the size line '{shorten(s_body.strip())}' declares a number too large for int64",
                        file=path, line=s_line)
    nrows, ncols, nnz = (int(x) for x in stoks)
    nv = max(nrows, ncols)
    if nv == 0:
        raise G2PLError("the matrix is 0 x 0, so the graph has no vertices", file=path, line=s_line)
    if nv >= MAX_VERTEX_ID:
        raise G2PLError(f"matrix dimension {nv} is too large", file=path, line=s_line)
    what = f"its size line declares {nrows:,} x {ncols:,} with {nnz:,} entries"
    if ranks > 1:
        what += f", 1/{ranks} of them on each of the {ranks} ranks"
    check_declared(path, vertices=-(-nv // ranks), edges=-(-nnz // ranks), line=s_line, what=what)
    return _MtxHead(fld, sym, nrows, ncols, nnz, s_off, s_line)


def _check_mtx_entries(path: str, head: _MtxHead, tail: int, total: int, first_line: int | None) -> None:
    """What the size line says against the text: `tail` bytes from the size line on, of a `total`-byte
    text whose first entry is on `first_line` (None: no entry follows)."""
    nnz = head.entries
    if nnz > tail // 3 + 1:  # an entry line takes at least 3 bytes ("1 1")
        raise G2PLError(f"the size line declares {nnz:,} entries, more than the {total:,}-byte file "
                        "can hold", file=path, line=head.size_line)
    if first_line is None and nnz > 0:
        raise G2PLError(f"the size line declares {nnz} entries but none follow", file=path, line=head.size_line)
    if first_line is not None and nnz == 0:
        raise G2PLError(_more_entries(0, head.size_line), file=path, line=first_line)


def _mtx_table(path: str, data: bytes, first: tuple[int, int, str] | None, head: _MtxHead, as_file: bool, *,
               counted: bool, first_line: int | None = None) -> _Table:
    """The entry lines of `data` from its first entry `first` (None: it has none) as a table; `counted`:
    `_load_rows` checks their number against the size line (the text holds them all)."""
    offset, lineno = (len(data), head.size_line + 1) if first is None else first[:2]
    return _Table(
        path=path,
        data=data,
        offset=offset,
        lineno=lineno,
        ncols=3 if head.weighted else 2,
        comma=False,
        bounds=((1, head.nrows + 1, "row index"), (1, head.ncols + 1, "column index")),
        col_desc="'row col value'" if head.weighted else "'row col'",
        as_file=as_file,
        expected_rows=head.entries if counted else None,
        size_lineno=head.size_line,
        first_lineno=first_line,
    )


def _mtx_edges(head: _MtxHead, rows: _Rows, directed: bool, base: int) -> _Rows:
    """The edges of entries (row, col[, value]): a symmetric file's off-diagonal entries also reversed
    on a directed graph (the file stores one triangle), the IDs shifted to `base`."""
    u, v, w = rows
    if head.symmetry == "symmetric" and directed:
        off = u != v
        u, v = np.concatenate([u, v[off]]), np.concatenate([v, u[off]])
        if w is not None:
            w = np.concatenate([w, w[off]])
    if base == 0:
        u, v = u - 1, v - 1
    return u, v, w


def load_mtx(path: str, directed: bool = False, *, base: int = 1) -> Graph:
    """Matrix Market coordinate files; vertex IDs are the row/column indices, 1-based as in the file.

    Every index 1..max(rows, cols) is a vertex, even if isolated. A `general`
    entry (i, j) is the edge i -> j; a `symmetric` file stores one triangle, so on
    a directed graph each off-diagonal entry also yields j -> i.  `base=0` numbers
    the vertices from 0 instead (index i is vertex i - 1), as SciPy and NumPy do.
    """
    _check_mtx_base(path, base)
    data, as_file = _check_text(path, _read_bytes(path))
    head = _mtx_head(path, data, True)
    s_end = data.find(b"\n", head.size_off)
    first = None if s_end == -1 else _next_data_line(data, s_end + 1, head.size_line + 1)
    _check_mtx_entries(path, head, len(data) - head.size_off, len(data), None if first is None else first[1])
    if first is None:
        empty = np.zeros(0, dtype=np.int64)
        rows: _Rows = (empty, empty, np.zeros(0, dtype=np.float64) if head.weighted else None)
    else:
        table = _mtx_table(path, data, first, head, as_file, counted=True)
        rows = _load_rows(table)
        del table
    del data
    u, v, w = _mtx_edges(head, rows, directed, base)
    del rows
    edges = [u, v]
    del u, v
    return build_graph_from(edges, w, directed=directed, name=path,
                            extra_ids=np.arange(base, head.nv + base, dtype=np.int64), info=head.info(base))


def mtx_share(path: str, directed: bool, rank: int, size: int, comm, *, base: int = 1) -> EdgeShare:
    """Rank `rank`'s share of a Matrix Market file: the entries of its byte range (cut at line ends),
    read and checked by this rank alone, and its slice of the vertex IDs base..nv+base-1, so that no
    rank reads the whole file.  Collective over `comm`: every rank reads the banner and size line
    from the file's start, the entry count is checked from the sum of the ranks' counts, and every
    rank raises the error `load_mtx` raises on the whole file (same message and line)."""
    _check_mtx_base(path, base)
    part, _ = _read_range(path, rank, size, comm, lambda f: (0, None))
    head = agreed(comm, lambda: _mtx_file_head(path, size))
    data = part.data
    # this range's bytes from the size line on, and its first entry (a data line after the size line)
    tail = len(data) - _line_start(data, max(0, head.size_line - 1 - part.before))
    start_line = max(part.before, head.size_line) + 1
    first = _next_data_line(data, _line_start(data, start_line - part.before - 1), start_line)
    seen = comm.allgather((None if first is None else first[1], tail, len(data)))
    first_line = next((x[0] for x in seen if x[0] is not None), None)
    _check_mtx_entries(path, head, sum(x[1] for x in seen), sum(x[2] for x in seen), first_line)
    table = _mtx_table(path, data, first, head, part.as_file, counted=False, first_line=first_line)
    rows = _counted_rows(comm, table, head)
    del data, table, part
    u, v, w = _mtx_edges(head, rows, directed, base)
    del rows
    nv = head.nv
    extra = np.arange(base + nv * rank // size, base + nv * (rank + 1) // size, dtype=np.int64)
    return EdgeShare(u, v, w, extra, directed, path, head.info(base), id_bound=nv if base == 0 else None)


def _mtx_file_head(path: str, ranks: int) -> _MtxHead:
    """`_mtx_head` of a file, read only as far as its size line."""
    with open_graph_file(path) as f, reading_graph_file(path):
        return _parsed_prefix(path, f, lambda text, whole: _mtx_head(path, text, whole, ranks))[0]


def _counted_rows(comm, table: _Table, head: _MtxHead) -> _Rows:
    """This rank's entries (`_load_rows` of its range), their number checked against the size line
    from the ranks' counts (collective): every rank raises the first error of the file, an entry
    beyond the declared count being one at its line."""
    err: G2PLError | None = None
    try:
        rows = _load_rows(table)
        count = int(rows[0].size)
    except G2PLError as e:
        err, count = e, 0 if e.line is None else _rows_before(table, e.line)
    nnz, found = head.entries, 0
    for r, (failed, k) in enumerate(comm.allgather((err, count))):
        if found + k > nnz:  # rank r holds entry nnz + 1 (before its error, if any)
            line = comm.allgather(_row_line(table, nnz - found) if r == comm.rank else None)[r]
            raise G2PLError(_more_entries(nnz, head.size_line), file=table.path, line=line)
        if failed is not None:
            raise failed
        found += k
    if found < nnz:
        raise G2PLError(_fewer_entries(nnz, found), file=table.path, line=head.size_line)
    return rows


def _check_npz_sizes(path: str, f: BinaryIO) -> None:
    """Refuse, from the .npy headers alone, an archive whose arrays are not plain numbers or whose
    decompressed size cannot be loaded (a small file may declare gigabytes)."""
    try:
        if not zipfile.is_zipfile(f):
            return  # np.load below says what it is
        with zipfile.ZipFile(f) as zf:
            heads = npz_headers(zf)
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as e:
        raise G2PLError(f"not a valid .npz file: {e}", file=path) from None
    for key in ("src", "dst", "weight", "ids"):
        h = heads.get(key)
        if h is not None and h.dtype.kind not in "iuf":
            raise G2PLError(f"not a valid .npz graph: array '{key}' must be numeric, got dtype {h.dtype} "
                            "(object arrays are never loaded)", file=path)
    edges = max((math.prod(heads[k].shape) for k in ("src", "dst") if k in heads), default=0)
    ids = math.prod(heads["ids"].shape) if "ids" in heads else 0
    decompressed = sum(h.nbytes for h in heads.values())
    check_declared(path, vertices=ids, edges=edges,
                   what=f"its arrays declare {edges:,} edges ({decompressed / 2**30:.1f} GiB decompressed)")


def load_npz(path: str, directed: bool = False) -> Graph:
    """NumPy archive with integer arrays `src`, `dst`, optional float `weight` and extra vertex `ids`."""
    arrays: dict[str, np.ndarray] = {}
    with open_graph_file(path) as f:  # a regular file only: a FIFO would block, a device never end
        _check_npz_sizes(path, f)
        f.seek(0)
        try:
            obj = np.load(f, allow_pickle=False)
        except (OSError, ValueError, EOFError, zipfile.BadZipFile) as e:
            raise G2PLError(f"not a valid .npz file: {e}", file=path) from None
        if not isinstance(obj, np.lib.npyio.NpzFile):
            raise G2PLError(
                "not a .npz archive (it holds a single .npy array); expected arrays src, dst[, weight, ids]",
                file=path,
            )
        try:
            with obj:
                keys = list(obj.files)
                for key in ("src", "dst", "weight", "ids"):
                    if key in keys:
                        arrays[key] = obj[key]
        except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile) as e:
            raise G2PLError(f"not a valid .npz file: {e}", file=path) from None
    for key in ("src", "dst"):
        if key not in arrays:
            raise G2PLError(
                f"missing array '{key}' (found: {', '.join(keys) or 'none'}); expected src, dst[, weight, ids]",
                file=path,
            )
    for key, kinds, want in (
        ("src", "iu", "integer"),
        ("dst", "iu", "integer"),
        ("ids", "iu", "integer"),
        ("weight", "iuf", "numeric"),
    ):
        a = arrays.get(key)
        if a is None:
            continue
        if a.ndim != 1:
            raise G2PLError(f"array '{key}' must be 1-D, got shape {a.shape}", file=path)
        if a.dtype.kind not in kinds:
            raise G2PLError(f"array '{key}' must be {want}, got dtype {a.dtype}", file=path)
    ns, nd = arrays["src"].size, arrays["dst"].size
    if ns != nd:
        raise G2PLError(f"arrays 'src' and 'dst' have different lengths ({ns} and {nd})", file=path)
    if "weight" in arrays and arrays["weight"].size != ns:
        raise G2PLError(
            f"array 'weight' has {arrays['weight'].size} values but there are {ns} edges", file=path
        )
    edges = [arrays.pop("src"), arrays.pop("dst")]  # (the build frees each once consumed)
    return build_graph_from(edges, arrays.get("weight"), directed=directed, name=path,
                            extra_ids=arrays.get("ids"), info={"format": "npz"})


def npz_share(path: str, directed: bool, rank: int, size: int, comm) -> EdgeShare:
    """Rank `rank`'s share of an .npz graph: its slice of `src`, `dst` and `weight` and of `ids`, each
    read from its archive member alone (a stored member is read at the slice; a compressed one is
    decompressed up to it, never kept whole).  Checked as `load_npz` checks the whole arrays, with
    the same messages (indices into the whole arrays).  Collective over `comm`."""
    return agreed(comm, lambda: _npz_share(path, directed, rank, size))


def _npz_share(path: str, directed: bool, rank: int, size: int) -> EdgeShare:
    with open_graph_file(path) as f:
        _check_npz_sizes(path, f)
        f.seek(0)
        try:
            if not zipfile.is_zipfile(f):
                raise G2PLError("not a valid .npz file: it is not a zip archive of .npy arrays", file=path)
            f.seek(0)
            with zipfile.ZipFile(f) as zf:
                heads = npz_headers(zf)
                keys = sorted(heads)
                for key in ("src", "dst"):
                    if key not in heads:
                        raise G2PLError(f"missing array '{key}' (found: {', '.join(keys) or 'none'}); expected "
                                        "src, dst[, weight, ids]", file=path)
                for key, kinds, want in (("src", "iu", "integer"), ("dst", "iu", "integer"),
                                         ("ids", "iu", "integer"), ("weight", "iuf", "numeric")):
                    h = heads.get(key)
                    if h is None:
                        continue
                    if len(h.shape) != 1:
                        raise G2PLError(f"array '{key}' must be 1-D, got shape {h.shape}", file=path)
                    if h.dtype.kind not in kinds:
                        raise G2PLError(f"array '{key}' must be {want}, got dtype {h.dtype}", file=path)
                ns, nd = heads["src"].shape[0], heads["dst"].shape[0]
                if ns != nd:
                    raise G2PLError(f"arrays 'src' and 'dst' have different lengths ({ns} and {nd})", file=path)
                if "weight" in heads and heads["weight"].shape[0] != ns:
                    raise G2PLError(f"array 'weight' has {heads['weight'].shape[0]} values but there are {ns} "
                                    "edges", file=path)
                elo, ehi = ns * rank // size, ns * (rank + 1) // size
                got = {k: _npz_slice(zf, heads[k], elo, ehi, path) for k in ("src", "dst", "weight") if k in heads}
                extra = np.zeros(0, dtype=np.int64)
                if "ids" in heads:
                    ni = heads["ids"].shape[0]
                    ilo = ni * rank // size
                    extra = _ids_checked(_npz_slice(zf, heads["ids"], ilo, ni * (rank + 1) // size, path),
                                         "ids", ilo, path)
        except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile) as e:
            raise G2PLError(f"not a valid .npz file: {e}", file=path) from None
    u = _ids_checked(got["src"], "src", elo, path)
    v = _ids_checked(got["dst"], "dst", elo, path)
    w = None
    if "weight" in got:
        w = got["weight"].astype(np.float64)
        bad = ~np.isfinite(w) | (w < 0)
        if bool(bad.any()):
            i = int(np.argmax(bad))
            raise G2PLError(f"weight[{elo + i}] = {float(w[i])!r} is not a finite non-negative number", file=path)
    return EdgeShare(u, v, w, extra, directed, path, {"format": "npz"})


def _npz_slice(zf: zipfile.ZipFile, head: Any, lo: int, hi: int, path: str) -> np.ndarray:
    """Entries lo..hi-1 of a 1-D .npy member, read without reading the rest of it into memory."""
    with zf.open(head.member) as m:
        version = np.lib.format.read_magic(m)
        if version == (1, 0):
            np.lib.format.read_array_header_1_0(m)
        else:
            np.lib.format.read_array_header_2_0(m)
        item = head.dtype.itemsize
        m.seek(m.tell() + lo * item)
        raw = m.read((hi - lo) * item)
    if len(raw) != (hi - lo) * item:
        raise G2PLError(f"not a valid .npz file: array '{head.member[:-4]}' is truncated", file=path)
    return np.frombuffer(raw, dtype=head.dtype).copy()


def _ids_checked(a: np.ndarray, what: str, lo: int, path: str) -> np.ndarray:
    """A slice (starting at entry `lo`) of an array of vertex IDs, checked as `build_graph` checks
    the whole array: the first bad entry named by its index in the whole array."""
    if a.size == 0:
        return np.zeros(0, dtype=np.int64)
    if a.dtype.kind == "i" and int(a.min()) < 0:
        i = int(np.argmax(a < 0))
        raise G2PLError(f"{what}[{lo + i}] = {int(a[i])} is a negative vertex ID", file=path)
    if int(a.max()) >= MAX_VERTEX_ID:
        i = int(np.argmax(a >= MAX_VERTEX_ID))
        raise G2PLError(f"{what}[{lo + i}] = {int(a[i])} is too large (vertex IDs must be below 2^62)", file=path)
    return a.astype(np.int64, copy=False)


_LOADERS = {"npz": load_npz, "binary": load_binary}
