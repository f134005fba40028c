"""The formats returned values are written in: JSON, `.npz`, CSV and Parquet, chosen by extension.

Each format is written from the values' arrays a chunk at a time, on one rank or on several
(g2pl.results.streamed pulls every rank's chunks, in rank order, into the one file rank 0 writes).
A `Format` says which streams of chunks the file is made of (`keys`, the same list on every rank),
makes this rank's chunks of one stream (`local`), and writes the file on rank 0 from the chunks
of every rank (`write`, given `pull(key)`, which yields them in order).

    json     the --output document (`json.dumps(document, indent=1)`'s bytes, docs/language.md, "Output")
    npz      `np.load`-able arrays: `ids`, `u`, `v`, `values/NAME`, `index` (see NPZ_KEYS)
    csv      one table: a row per vertex (`id`, then a column per vertex value) or per edge (`u`, `v`,
             then a column per edge value); scalars as columns repeating their value on every row
    parquet  the same table as CSV (pyarrow, the `parquet` extra), with the index in its metadata

The arrays are those of the API (`Result.array`): vertex values aligned with ascending IDs, edge
values with ascending (u, v), vertex and edge sets as booleans; int and vid as int64.
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable, Hashable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

import numpy as np

from g2pl.errors import G2PLError
from g2pl.io.arraytext import Rows, value_field
from g2pl.io.npz_out import NpzWriter
from g2pl.results.ahead import in_order
from g2pl.runtime import cpu_kernels
from g2pl.runtime.output import scalar_json, text_chunk
from g2pl.runtime.values import DTYPES

if TYPE_CHECKING:
    from g2pl.results.streamed import Share

#: format name -> the file extension that chooses it
EXTENSIONS = {"json": ".json", "npz": ".npz", "csv": ".csv", "parquet": ".parquet"}
FORMATS = tuple(EXTENSIONS)
PARQUET_EXTRA = "parquet"
NPZ_FORMAT, NPZ_VERSION = "g2pl-output-npz", 1
CSV_NONFINITE = (b"nan", b"inf", b"-inf")

Pull = Callable[[Hashable], Iterator[Any]]


def choices() -> str:
    return ", ".join(EXTENSIONS.values())


def format_of(path: str | Path, given: str | None = None, flag: str = "--output") -> str:
    """The format a result file is written in: `given` (a name of FORMATS), else the extension of
    `path`; G2PLError (exit 2) naming the choices for an unknown extension.  Standard output (`-`) and a
    name without an extension (`out`, `/dev/stdout`) take JSON, the contract's format."""
    cli = flag.startswith("--")
    tool = "g2pl run" if cli else "Result.save"
    if given is not None:
        if given not in EXTENSIONS:
            raise G2PLError(f"{'--output-format' if cli else 'format='} {given!r}: expected one of "
                            f"{', '.join(FORMATS)}", file=tool)
        fmt = given
    elif str(path) == "-" or not Path(str(path)).suffix:
        fmt = "json"
    else:
        ext = Path(str(path)).suffix.lower()
        found = [f for f, e in EXTENSIONS.items() if e == ext]
        if not found:
            raise G2PLError(f"{flag} {str(path)!r}: extension {ext!r}; the format is chosen by the extension: "
                            f"{choices()} (or name it with {'--output-format' if cli else 'format='})", file=tool)
        fmt = found[0]
    if str(path) == "-" and fmt != "json":
        raise G2PLError(f"{flag} -: standard output takes JSON only, not {fmt}; name a file", file=tool)
    require(fmt, tool)
    return fmt


def require(fmt: str, tool: str = "g2pl run") -> None:
    """G2PLError (exit 2) when what writing `fmt` needs is not installed (Parquet: pyarrow)."""
    if fmt != "parquet":
        return
    try:
        import pyarrow  # noqa: F401
        import pyarrow.parquet  # noqa: F401
    except ImportError:
        raise G2PLError("writing Parquet needs pyarrow: pip install 'g2pl[parquet]' (or pip install pyarrow); "
                        f"or write {', '.join(e for f, e in EXTENSIONS.items() if f != 'parquet')}",
                        file=tool) from None


def _streamed(shares: list[Share]) -> list[int]:
    return [i for i, s in enumerate(shares) if s.kind != "scalar"]


def _kinds(shares: list[Share]) -> set[str]:
    return {s.kind for s in shares if s.kind != "scalar"}


class Format:
    """One file format (see the module docstring for how the methods fit together)."""

    name = ""
    #: a stream's chunks hold `scale` times the entries of a text chunk (arrays are cheap to send)
    scale = 1

    def check(self, shares: list[Share]) -> None:
        """G2PLError (exit 2) if these values cannot be written in this format (before anything is)."""

    def keys(self, shares: list[Share]) -> list[Hashable]:
        """The streams the file is made of, in the order `write` pulls them (the same on every rank)."""
        return []

    def local(self, shares: list[Share], key: Hashable, chunk: int) -> Iterator[Any]:
        """This rank's chunks of stream `key`."""
        return iter(())

    def counts(self, shares: list[Share]) -> list[int]:
        """This rank's number of entries in each stream (summed over ranks for `write`)."""
        return [0] * len(self.keys(shares))

    def write(self, f: BinaryIO, head: dict, shares: list[Share], pull: Pull, totals: list[int]) -> None:
        """The file, on rank 0: `head` ("entry", and "rank"/"ranks" for a part), the values' kinds and
        scalars from `shares`, the rest from `pull(key)` (every rank's chunks)."""
        raise NotImplementedError


# ----------------------------------------------------------------------------- JSON

_MARK = "\x00value {}"


def skeleton(head: dict, shares: list[Share]) -> tuple[list[str], int]:
    """The document's text around its vertex and edge values (one more text than there are such values),
    as json.dumps writes it with a marker in each value's place, and the depth the values are nested at."""
    values = [{"name": s.name, "kind": s.kind, "type": s.type,
               "value": scalar_json(s.type, s.value) if s.kind == "scalar" else _MARK.format(i)}
              for i, s in enumerate(shares)]
    text = json.dumps({**head, "values": values}, indent=1)
    texts, depth = [], 0
    for i in _streamed(shares):
        before, text = text.split(json.dumps(_MARK.format(i)), 1)
        line = before[before.rfind("\n") + 1:]
        depth = len(line) - len(line.lstrip(" "))
        texts.append(before)
    return [*texts, text], depth


def document(texts: list[str], depth: int, shares: list[Share], pieces: Pull) -> Iterator[bytes]:
    """The document's bytes, in order: the skeleton's, and each value's from `pieces(i)` (see
    `RankPart.json_pieces`)."""
    yield texts[0].encode()
    for k, i in enumerate(_streamed(shares)):
        s = shares[i]
        close = b"}" if s.kind == "vertex" and s.type != "bool" else b"]"
        yield b"{" if close == b"}" else b"["
        first = True
        for piece in pieces(i):
            yield b"\n" if first else b",\n"
            yield piece
            first = False
        if not first:
            yield b"\n" + b" " * depth
        yield close
        yield texts[k + 1].encode()


class JsonFormat(Format):
    name = "json"

    def keys(self, shares: list[Share]) -> list[Hashable]:
        return list(_streamed(shares))

    def local(self, shares: list[Share], key: Hashable, chunk: int) -> Iterator[Any]:
        assert isinstance(key, int)
        _texts, depth = skeleton({"entry": ""}, shares)
        pieces = in_order(shares[key].value.json_jobs(depth, chunk), cpu_kernels.threads())
        return (p for p in pieces if p)

    def write(self, f: BinaryIO, head: dict, shares: list[Share], pull: Pull, totals: list[int]) -> None:
        texts, depth = skeleton(head, shares)
        for piece in document(texts, depth, shares, pull):
            f.write(piece)


# ----------------------------------------------------------------------------- arrays: npz, csv, parquet

def _first(shares: list[Share], kind: str) -> Any:
    return next(s.value for s in shares if s.kind == kind)


def _ids(shares: list[Share], chunk: int) -> Iterator[np.ndarray]:
    p = _first(shares, "vertex")
    return in_order(p.chunk_jobs(chunk, lambda at: np.asarray(p.ids(at), dtype=np.int64)), cpu_kernels.threads())


def _ends(shares: list[Share], chunk: int, which: int) -> Iterator[np.ndarray]:
    p = _first(shares, "edge")
    return in_order(p.chunk_jobs(chunk, lambda at: np.asarray(p.end(at, which), dtype=np.int64)),
                    cpu_kernels.threads())


def _data(share: Share, chunk: int) -> Iterator[np.ndarray]:
    p = share.value
    for lo in range(0, len(p), chunk):
        yield p.data[lo:lo + chunk]


def npz_keys(shares: list[Share]) -> dict[int, str]:
    """The archive member of each returned value: `values/NAME`, or `values/NAME.K` for the K-th
    repeat (from 1) of a name returned more than once."""
    seen: dict[str, int] = {}
    out = {}
    for i, s in enumerate(shares):
        k = seen.get(s.name, 0)
        seen[s.name] = k + 1
        out[i] = f"values/{s.name}" if k == 0 else f"values/{s.name}.{k}"
    return out


class NpzFormat(Format):
    """Members: `ids` (vertex IDs, ascending; when a vertex value is returned), `u` and `v` (edge
    endpoints, ascending (u, v); when an edge value is), `values/NAME` per value (scalars 0-d), and
    `index`: a 0-d string holding JSON {"format", "version", "entry", "values": [{"name", "kind",
    "type", "key"}]} (a part's also "rank", "ranks")."""

    name = "npz"
    scale = 16

    def keys(self, shares: list[Share]) -> list[Hashable]:
        kinds = _kinds(shares)
        return [*(["ids"] if "vertex" in kinds else []), *(["u", "v"] if "edge" in kinds else []),
                *_streamed(shares)]

    def local(self, shares: list[Share], key: Hashable, chunk: int) -> Iterator[Any]:
        if key == "ids":
            return _ids(shares, chunk)
        if key in ("u", "v"):
            return _ends(shares, chunk, 0 if key == "u" else 1)
        assert isinstance(key, int)
        return _data(shares[key], chunk)

    def counts(self, shares: list[Share]) -> list[int]:
        def n(key: Hashable) -> int:
            if key == "ids":
                return len(_first(shares, "vertex"))
            if key in ("u", "v"):
                return len(_first(shares, "edge"))
            assert isinstance(key, int)
            return len(shares[key].value)
        return [n(k) for k in self.keys(shares)]

    def write(self, f: BinaryIO, head: dict, shares: list[Share], pull: Pull, totals: list[int]) -> None:
        names = npz_keys(shares)
        z = NpzWriter(f)
        for key, total in zip(self.keys(shares), totals):
            if isinstance(key, int):
                s = shares[key]
                z.array(names[key], DTYPES[s.type], (total,), pull(key))
            else:
                z.array(str(key), np.int64, (total,), pull(key))
        for i, s in enumerate(shares):
            if s.kind == "scalar":
                z.whole(names[i], np.asarray(s.value, dtype=DTYPES[s.type]))
        index = {"format": NPZ_FORMAT, "version": NPZ_VERSION, **head,
                 "values": [{"name": s.name, "kind": s.kind, "type": s.type, "key": names[i]}
                            for i, s in enumerate(shares)]}
        z.whole("index", np.asarray(json.dumps(index)))
        z.close()


def _table_kind(shares: list[Share], fmt: str) -> str:
    """"vertex", "edge" or "scalar": what a row of the table is; both vertex and edge values: refused."""
    kinds = _kinds(shares)
    if len(kinds) > 1:
        names = ", ".join(f"{s.name} ({s.kind})" for s in shares if s.kind != "scalar")
        raise G2PLError(f"a {fmt} file holds one table, a row per vertex or per edge, and this result has "
                        f"both vertex and edge values ({names}); write .npz or .json instead")
    return kinds.pop() if kinds else "scalar"


def _columns(shares: list[Share], kind: str) -> list[str]:
    """The table's header: the row's key columns, its values of `kind`, then the scalars (repeated)."""
    keys = {"vertex": ["id"], "edge": ["u", "v"], "scalar": []}[kind]
    scalars = [s.name for s in shares if s.kind == "scalar"] if kind != "scalar" else []
    return keys + [s.name for s in shares if s.kind == kind] + scalars


def _scalar_text(s: Share) -> bytes:
    arr: np.ndarray = np.asarray([s.value], dtype=DTYPES[s.type])
    return Rows(1).field(value_field(s.type, arr, CSV_NONFINITE)).text()


def _csv_name(name: str) -> bytes:
    return name.encode()  # G2PL names and ret0, ret1, ...: letters, digits and underscores, no quoting needed


class _TableFormat(Format):
    """A table with a row per vertex or per edge (see `_columns`): what CSV and Parquet share.  Each
    chunk of rows is `rows(shares, kind, values, at)`: the values of the row's kind over the rows `at`."""

    label = ""

    def check(self, shares: list[Share]) -> None:
        _table_kind(shares, self.label)

    def keys(self, shares: list[Share]) -> list[Hashable]:
        return ["rows"] if _kinds(shares) else []

    def counts(self, shares: list[Share]) -> list[int]:
        return [len(_first(shares, k)) for k in _kinds(shares)]

    def local(self, shares: list[Share], key: Hashable, chunk: int) -> Iterator[Any]:
        kind = _table_kind(shares, self.label)
        values = [s for s in shares if s.kind == kind]
        jobs = values[0].value.chunk_jobs(self.rows_chunk(values, chunk),
                                          functools.partial(self.rows, shares, kind, values))
        yield from in_order(jobs, cpu_kernels.threads())

    def rows_chunk(self, values: list[Share], chunk: int) -> int:
        """Rows per call of `rows` out of `chunk`-row chunks."""
        return chunk

    def rows(self, shares: list[Share], kind: str, values: list[Share], at: slice) -> Any:
        raise NotImplementedError


def _floats(values: list[Share]) -> int:
    """Float values to write in the rows of `values` (what decides loading the compiled row writer)."""
    return sum(len(s.value) for s in values if s.type == "float")


class CsvFormat(_TableFormat):
    name = "csv"
    label = "CSV"

    def rows_chunk(self, values: list[Share], chunk: int) -> int:
        return text_chunk(chunk, cpu_kernels.row_writer(_floats(values)))

    def rows(self, shares: list[Share], kind: str, values: list[Share], at: slice) -> bytes:
        first = values[0].value
        rows = Rows(len(first.data[at]), cpu_kernels.row_writer(_floats(values)))
        if kind == "vertex":
            rows.ints(first.ids(at))
        else:
            u, v = first.ends(at)
            rows.ints(u).const(b",").ints(v)
        for s in values:
            rows.const(b",").value(s.type, s.value.data[at], CSV_NONFINITE)
        tail = b"".join(b"," + _scalar_text(s) for s in shares if s.kind == "scalar") + b"\n"
        return rows.const(tail).text()

    def write(self, f: BinaryIO, head: dict, shares: list[Share], pull: Pull, totals: list[int]) -> None:
        kind = _table_kind(shares, self.label)
        f.write(b",".join(map(_csv_name, _columns(shares, kind))) + b"\n")
        if kind == "scalar":
            f.write(b",".join(_scalar_text(s) for s in shares) + b"\n")
            return
        for piece in pull("rows"):
            f.write(piece)


class ParquetFormat(_TableFormat):
    """The CSV table in Parquet (typed columns: int64, float64, bool), one row group per chunk; the
    schema's metadata `g2pl` holds the index (as in .npz, without keys)."""

    name = "parquet"
    label = "Parquet"
    scale = 16

    def rows(self, shares: list[Share], kind: str, values: list[Share], at: slice) -> list[np.ndarray]:
        first = values[0].value
        ends = [first.ids(at)] if kind == "vertex" else list(first.ends(at))
        return [np.asarray(e, dtype=np.int64) for e in ends] + [s.value.data[at] for s in values]

    def write(self, f: BinaryIO, head: dict, shares: list[Share], pull: Pull, totals: list[int]) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        kind = _table_kind(shares, self.label)
        names = _columns(shares, kind)
        keyed = [s for s in shares if s.kind == kind] if kind != "scalar" else []
        scalars = [s for s in shares if s.kind == "scalar"]
        arrow = {"bool": pa.bool_(), "int": pa.int64(), "vid": pa.int64(), "float": pa.float64()}
        types = [pa.int64()] * (len(names) - len(keyed) - len(scalars) if kind != "scalar" else 0)
        types += [arrow[s.type] for s in keyed] + [arrow[s.type] for s in scalars]
        index = {"format": "g2pl-output-parquet", "version": 1, **head,
                 "values": [{"name": s.name, "kind": s.kind, "type": s.type,
                             **({"value": scalar_json(s.type, s.value)} if s.kind == "scalar" else {})}
                            for s in shares]}
        schema = pa.schema([pa.field(n, t) for n, t in zip(names, types)], metadata={"g2pl": json.dumps(index)})
        consts: list[np.ndarray] = [np.asarray(s.value, dtype=DTYPES[s.type]) for s in scalars]

        def batch(cols: list[np.ndarray]) -> Any:
            m = len(cols[0]) if cols else 1
            full = cols + [np.full(m, c) for c in consts]
            return pa.RecordBatch.from_arrays([pa.array(c, type=t) for c, t in zip(full, types)], schema=schema)

        with pq.ParquetWriter(f, schema) as w:
            if kind == "scalar":
                w.write_batch(batch([]))
                return
            wrote = False
            for cols in pull("rows"):
                w.write_batch(batch(cols))
                wrote = True
            if not wrote:
                w.write_table(schema.empty_table())


FORMAT_OF: dict[str, Format] = {f.name: f for f in (JsonFormat(), NpzFormat(), CsvFormat(), ParquetFormat())}


class StdoutBytes:
    """Standard output as a binary file for `write` (the text stream, so captured output sees it)."""

    def write(self, b: bytes) -> int:
        sys.stdout.write(b.decode())
        return len(b)


#: the "Output files" section of docs/cli.md (g2pl.cli.reference renders it after the options)
REFERENCE = """\
## Output files

`g2pl run --output FILE` (and `Result.save(FILE)` in Python) writes the returned values in the format
that FILE's extension names, or `--output-format` (`format=`) whatever the extension. Another
extension, or none, is refused with exit status 2 before anything runs, listing the choices.
Every format is made from the run's arrays a bounded chunk at a time; the file replaces FILE whole
when it is complete (a failure leaves the old file, and no partial one). With several ranks, rank 0
writes the file while the other ranks send it their chunks in rank order: the same file as one rank's.

| extension | what the file holds |
|---|---|
| `.json` | the JSON document of the language reference ("Output"): `{"entry", "values": [{"name", "kind", "type", "value"}, ...]}`, indented by one space, non-finite floats as `"nan"`, `"inf"`, `"-inf"`; `--output -` prints it (standard output takes JSON only) |
| `.npz` | NumPy arrays (`numpy.load(FILE)`, no pickle), stored uncompressed; the keys are below |
| `.csv` | one table with a header line: a row per vertex (`id`, then a column per vertex value) or a row per edge (`u`, `v`, then a column per edge value), columns in `return` order; each scalar is a column repeating its value on every row (a table with no row, as on a graph without edges, has none of it: use `.json` or `.npz`); a result of scalars only is one row. Integers in decimal, floats as Python's `repr` writes them (they read back exactly), `nan`, `inf`, `-inf`, booleans (a set: membership) `true` / `false`. A result with both vertex and edge values is refused (exit status 2): write `.npz` or `.json` |
| `.parquet` | the CSV table with typed columns (int64, float64, bool), a row group per million rows; the schema's metadata `g2pl` holds `{"format": "g2pl-output-parquet", "version": 1, "entry", "values": [{"name", "kind", "type"}, ...]}` (scalars with their `"value"`). Needs pyarrow: `pip install 'g2pl[parquet]'`; without it, exit status 2 before the run |

The keys of an `.npz` file:

| key | array |
|---|---|
| `ids` | the vertex IDs, ascending (int64); present when a vertex value is returned |
| `u`, `v` | the endpoints of every edge, ascending by (u, v) (int64); present when an edge value is returned |
| `values/NAME` | each returned value, by its name (`ret0`, `ret1`, ... for other expressions; a name returned again: `values/NAME.1`, `values/NAME.2`, ...): a vertex value aligned with `ids`, an edge value with `u` and `v`, a set as booleans (membership), a scalar as a 0-d array; int and vid as int64 (-1: no vertex; an unreached vertex keeps the value the program gave it), float as float64 (nan and infinities as they are), bool as bool |
| `index` | a 0-d string array holding JSON: `{"format": "g2pl-output-npz", "version": 1, "entry", "values": [{"name", "kind", "type", "key"}, ...]}` |

These are the arrays of the Python API: `res.ids`, `res.edge_ids`, `res.array(NAME)`.

`--output-dir DIR` writes one part per rank, each by its own rank, in the format `--output-format`
names (default `json`): `DIR/part-00000.json` (or `.npz`, `.csv`, `.parquet`), ... holding the rank's
vertices and the edges whose u endpoint it owns (ascending; the parts in rank order make the whole
value), then `DIR/index.json` (`"part_format"`, the parts and their number of entries, the values'
names, kinds and types, scalars). A part is a file of the format above with the rank's rows (an
`.npz` part's `index` also has `"rank"` and `"ranks"`); parts of other formats or of ranks the run
does not have are removed. `g2pl.results.streamed.read_output_dir(DIR)` reads `.json` and `.npz`
parts back as the whole JSON document.
"""
