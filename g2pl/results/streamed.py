"""Writing returned values from every rank at once: `--output FILE` streamed, `--output-dir DIR` in parts.

With several ranks each rank keeps its share of every vertex and edge value (`RankPart`, see
`Runtime.collect`); nothing here gathers a whole value anywhere.  Every function taking `comm` is
collective: every rank calls it, with its own shares, at the same point.

`write_output` (`--output FILE`): rank 0 writes the file, in the format its extension names
(g2pl.results.formats: JSON, .npz, CSV, Parquet), while the other ranks send it their chunks of each
of the file's streams in rank order (ranks own contiguous ranges of IDs in rank order), one chunk of
at most CHUNK entries (arrays: 16 times that) at a time and only when rank 0 asks for it, so rank 0
holds a few chunks, not the result.  Every rank formats its own chunks (JSON and CSV text in bulk from
the arrays, g2pl.io.arraytext; the next ones in a worker thread while the current one is written or
sent, g2pl.results.ahead), so the JSON bytes are exactly those of
`json.dumps(res.output(), indent=1)` (docs/language.md, "Output") on any number of ranks.  The file
replaces the target whole when complete (g2pl.io.output_files), and a failure on any rank leaves no file and
fails every rank.

`write_output_dir` (`--output-dir DIR`): every rank writes its own part, nothing passes through rank 0::

    DIR/part-00000.json  {"entry", "rank", "ranks", "values": [{"name", "kind", "type", "value"}, ...]}
    DIR/part-00001.json  ...one per rank: the --output shape, holding the rank's owned vertices
                         (ascending ID) and owned edges (those whose u endpoint it owns, ascending
                         (u, v)); scalars, the same everywhere, in every part
    DIR/index.json       {"format": "g2pl-output-parts", "version": 1, "entry", "ranks", "part_format",
                          "parts": [{"file", "rank", "entries": {name: entries listed}}, ...],
                          "values": [{"name", "kind", "type"} (scalars with their "value"), ...]}

Parts may be in any of the --output formats (`part-NNNNN.npz`, `.csv`, `.parquet`: "entries" then
counts rows, not JSON entries).  Each value of the whole result is its parts' values in rank order,
concatenated (lists) or merged (vertex graphs' objects): `read_output_dir` does that for JSON and
.npz parts.  The index is written last, after every part is in place, and removed first: a directory
with an index holds a complete result.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Hashable, Iterator
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple

import numpy as np

from g2pl.errors import G2PLError, G2PLRuntimeError
from g2pl.io.output_files import (
    INDEX_NAME,
    is_output_dir_file,
    output_dir_problem,
    output_file,
    part_name,
    part_rank,
    write_atomic,
)
from g2pl.results.ahead import ahead
from g2pl.results.formats import FORMAT_OF, Format, StdoutBytes, format_of
from g2pl.runtime.output import RankPart, scalar_json

#: entries per chunk a rank formats and sends at a time (JSON text of edge entries: about 4 MB; the
#: compiled text writer makes its pieces smaller: g2pl.runtime.output.text_chunk)
CHUNK = 1 << 16
FORMAT, VERSION = "g2pl-output-parts", 1

_REQ, _DATA = 1, 2  # message tags, on a communicator of the output's own (no other traffic)
_GO, _STOP = True, False


class Share(NamedTuple):
    """One returned value on this rank: a `RankPart` for a vertex or edge value, the value for a scalar."""

    name: str
    kind: str
    type: str
    value: Any


def local_shares(res) -> list[Share]:
    """The shares of a `Result` holding whole arrays (one rank's run): the whole values, over its graph."""
    return [Share(r.name, r.kind, r.type, r.data[()] if r.kind == "scalar" else RankPart(r.kind, r.type, r.data,
                                                                                        res.graph))
            for r in res.returned or ()]


def save_result(res, path: str | Path, fmt: str | None = None) -> None:
    """`Result.save`: a one-rank run's values (or those gathered on rank 0) written as `write_output`
    writes them; a Result made from --output JSON has no arrays and is written as JSON only."""
    form = format_of(path, fmt, flag="path")
    if res.returned is not None:
        write_output(path, res.entry, local_shares(res), None, fmt=form)
    elif res.parts is not None:
        raise G2PLError("this Result holds one rank's shares (run with gather=False); run with gather=True "
                        "(the default) to save it, or write every rank's shares with "
                        "g2pl.results.streamed.write_output", file=str(path))
    elif form != "json":
        raise G2PLError(f"a Result made from --output JSON holds no arrays and is saved as .json, not {form}",
                        file=str(path))
    elif str(path) == "-":
        print(json.dumps(res.output(), indent=1))
    else:
        write_atomic(path, json.dumps(res.output(), indent=1))


def gather_shares(values: list[tuple], comm) -> list[tuple] | None:
    """(name, kind, type, value) with every rank's shares of a value gathered into one array on rank 0
    (None elsewhere): what `Program.run` returns by default."""
    out = [(n, k, e, comm.gather_array(v.data) if isinstance(v, RankPart) else v) for n, k, e, v in values]
    return out if comm.rank == 0 else None


# ----------------------------------------------------------------------------- the file

def _emit(path: str | Path, fmt: str, write: Callable[[BinaryIO], None]) -> None:
    """Run `write` on `path` opened as `output_file` opens it: replaced whole when complete, nothing left
    if it fails (`-`: standard output, JSON with a final newline, as `g2pl run --output -` always printed it)."""
    if str(path) == "-":
        write(StdoutBytes())  # type: ignore[arg-type]
        sys.stdout.write("\n")
        sys.stdout.flush()
        return
    with output_file(path) as f:
        write(f)


# ----------------------------------------------------------------------------- failures across ranks

def _failure(e: BaseException) -> tuple[int, str, str | None]:
    """What rank 0 needs to report another rank's failure: (exit status, message, file)."""
    if isinstance(e, G2PLError):
        return e.exit_status, e.message, e.file
    if isinstance(e, MemoryError):
        return 1, "out of memory while writing the output", None
    return 1, f"{type(e).__name__}: {e}", None


def _error(rank: int, failure: tuple[int, str, str | None], mine: bool) -> G2PLError:
    """The error a rank raises for `failure` (rank `rank`'s): on rank 0 the message to print, on the others
    only the exit status (the guard prints G2PL errors on rank 0 alone)."""
    status, message, file = failure
    if not mine:
        err = G2PLError("the output was not written; rank 0 reports why")
    else:
        err = (G2PLRuntimeError if status == 1 else G2PLError)(message if rank == 0 else f"rank {rank}: {message}",
                                                                  file=file)
    err.exit_status = status
    return err


# ----------------------------------------------------------------------------- --output FILE

def write_output(path: str | Path, entry: str, shares: list[Share], comm=None, chunk: int = CHUNK,
                 fmt: str | None = None) -> None:
    """Write `entry`'s values to `path` (`-`: standard output) in format `fmt` (None: by the extension,
    g2pl.results.formats); collective.  Rank 0 writes; the others answer its requests with their chunks
    (see the module docstring)."""
    form = FORMAT_OF[fmt if fmt is not None else format_of(path)]
    try:
        form.check(shares)  # alike on every rank: nothing is written
    except G2PLError as e:
        raise e.with_context(file=str(path)) from None
    step = chunk * form.scale
    keys = form.keys(shares)
    mine = form.counts(shares)
    head = {"entry": entry}
    if comm is None or comm.size == 1:
        _emit(path, form.name, lambda f: form.write(f, head, shares, lambda k: ahead(form.local(shares, k, step)), mine))
        return
    c = comm.c.Dup()  # the chunks travel apart from any other message
    try:
        every = c.gather(mine, root=0)
        if comm.rank == 0:
            totals = [sum(col) for col in zip(*every)] if keys else []
            _lead(c, path, form, head, shares, keys, totals, step)
        else:
            _follow(c, form, shares, keys, step)
    finally:
        c.Free()


def _lead(c, path: str | Path, form: Format, head: dict, shares: list[Share], keys: list[Hashable],
          totals: list[int], step: int) -> None:
    """Rank 0 of `write_output`: for each stream its own chunks, then each other rank's, asked for one at
    a time."""
    waiting = set(range(1, c.Get_size())) if keys else set()  # ranks that still wait for a request
    last = keys[-1] if keys else None

    def pull(key: Hashable) -> Iterator[Any]:
        yield from ahead(form.local(shares, key, step))
        for r in range(1, c.Get_size()):
            while True:
                c.send(_GO, dest=r, tag=_REQ)
                got = c.recv(source=r, tag=_DATA)
                if got is None:  # rank r has no more of this stream
                    break
                if isinstance(got, tuple):
                    raise _error(r, got, True)
                yield got
            if key == last:
                waiting.discard(r)

    failure: Exception | None = None
    try:
        _emit(path, form.name, lambda f: form.write(f, head, shares, pull, totals))
    except Exception as e:  # noqa: BLE001 - a write error, or another rank's failure: every rank stops
        failure = e
    for r in sorted(waiting):
        c.send(_STOP, dest=r, tag=_REQ)
    c.bcast(0 if failure is None else _failure(failure)[0], root=0)
    if failure is not None:
        raise failure


def _follow(c, form: Format, shares: list[Share], keys: list[Hashable], step: int) -> None:
    """A rank other than 0 in `write_output`: each stream's chunks, one per request of rank 0 (None: no
    more); a failure here is sent instead of a chunk, and rank 0 then stops every rank."""
    stopped = False
    for key in keys:
        chunks = ahead(form.local(shares, key, step))  # the next chunks made while rank 0 writes this one
        try:
            while True:
                if c.recv(source=0, tag=_REQ) == _STOP:
                    stopped = True
                    break
                try:
                    piece: Any = next(chunks, None)
                except Exception as e:  # noqa: BLE001 - reported by rank 0, which answers with a stop
                    piece = _failure(e)
                c.send(piece, dest=0, tag=_DATA)
                if piece is None:
                    break
        finally:
            chunks.close()  # (its worker ends)
        if stopped:
            break
    status = c.bcast(None, root=0)
    if status:
        raise _error(c.Get_rank(), (status, "", None), False)


# ----------------------------------------------------------------------------- --output-dir DIR

def _agree(comm, work: Callable[[], Any], undo: Callable[[], None] | None = None) -> list[Any]:
    """Run `work` on every rank; every rank gets every rank's result, or, if it failed on any rank, runs
    `undo` and raises (rank 0 reporting the first rank's failure)."""
    try:
        mine: tuple = (work(), None)
    except Exception as e:  # noqa: BLE001 - every rank must learn of it
        mine = (None, _failure(e))
    every = [mine] if comm is None or comm.size == 1 else comm.allgather(mine)
    for r, (_got, failure) in enumerate(every):
        if failure is not None:
            if undo is not None:
                undo()
            rank = 0 if comm is None else comm.rank
            raise _error(r, failure, rank == 0)
    return [got for got, _f in every]


def _make_dir(d: Path) -> None:
    """`d`, made if missing (its parent must exist), and checked again as `check_output_dir` checked it."""
    try:
        os.mkdir(d)
    except FileExistsError:
        pass
    except OSError as e:
        raise G2PLRuntimeError(f"cannot make the directory: {e.strerror or e}", file=str(d)) from None
    why = output_dir_problem(d)
    if why is not None:
        raise G2PLError(why, file=str(d))


def _remove(path: Path) -> None:
    try:
        if path.is_file() and not path.is_symlink():
            path.unlink()
    except OSError:
        pass


def write_output_dir(directory: str | Path, entry: str, shares: list[Share], comm=None, chunk: int = CHUNK,
                     fmt: str = "json") -> None:
    """Write `entry`'s values into `directory`: a part per rank in format `fmt` and the index (see the
    module docstring); collective.  Parts of ranks this run does not have, and parts in another format,
    are removed with the old index."""
    rank, size = (0, 1) if comm is None else (comm.rank, comm.size)
    form = FORMAT_OF[fmt]
    try:
        form.check(shares)
    except G2PLError as e:
        raise e.with_context(file=str(directory)) from None
    step = chunk * form.scale
    d = Path(directory)
    mine = d / part_name(rank, fmt)

    def prepare() -> None:
        _make_dir(d)
        if rank == 0:
            _remove(d / INDEX_NAME)  # from here until the new index, the directory holds no result

    def write_part() -> dict[str, int]:
        head = {"entry": entry, "rank": rank, "ranks": size}
        _emit(mine, fmt, lambda f: form.write(f, head, shares, lambda k: ahead(form.local(shares, k, step)),
                                              form.counts(shares)))
        return {s.name: s.value.count() if fmt == "json" else len(s.value) for s in shares if s.kind != "scalar"}

    def write_index() -> None:
        if rank != 0:
            return
        with os.scandir(d) as entries:
            stale = [d / e.name for e in entries
                     if (r := part_rank(e.name)) is not None and (r >= size or e.name != part_name(r, fmt))]
        for p in stale:
            _remove(p)
        index = {"format": FORMAT, "version": VERSION, "entry": entry, "ranks": size, "part_format": fmt,
                 "parts": [{"file": part_name(r, fmt), "rank": r, "entries": counts[r]} for r in range(size)],
                 "values": [{"name": s.name, "kind": s.kind, "type": s.type,
                             **({"value": scalar_json(s.type, s.value)} if s.kind == "scalar" else {})}
                            for s in shares]}
        write_atomic(d / INDEX_NAME, json.dumps(index, indent=1))

    _agree(comm, prepare)
    counts = _agree(comm, write_part, lambda: _remove(mine))
    _agree(comm, write_index, lambda: _remove(mine))


def read_output_dir(directory: str | Path) -> dict:
    """The --output document (`{"entry", "values"}`) of a directory `--output-dir` wrote: each value
    its parts' values in rank order.  Reads every part into memory: for results that fit in it."""
    d = Path(directory)

    def bad(what: str, file: Path) -> G2PLError:
        return G2PLError(what, file=str(file))

    def load(p: Path) -> Any:
        try:
            if p.suffix == ".npz":
                return _npz_part(p)
            if p.suffix != ".json":
                raise bad(f"a {p.suffix[1:]} part: read it with a {p.suffix[1:]} reader (this reads .json and "
                          ".npz parts)", p)
            return json.loads(p.read_text())
        except FileNotFoundError:
            raise bad("missing: the directory holds no complete result", p) from None
        except (OSError, UnicodeDecodeError, ValueError, KeyError) as e:
            raise bad(f"cannot be read as {p.suffix[1:].upper()}: {e}", p) from None

    index = load(d / INDEX_NAME)
    if not isinstance(index, dict) or index.get("format") != FORMAT or index.get("version") != VERSION:
        raise bad(f"not an index of {FORMAT} version {VERSION}", d / INDEX_NAME)
    listed = [p.get("file") if isinstance(p, dict) else None for p in index.get("parts", [])]
    names = [n for n in listed if isinstance(n, str) and is_output_dir_file(n) and n != INDEX_NAME]
    if not names or len(names) != len(listed):
        raise bad("`parts` must list part files by name (part-NNNNN.json, or .npz)", d / INDEX_NAME)
    parts = [load(d / n) for n in names]
    kinds = [(v.get("name"), v.get("kind"), v.get("type")) for v in index.get("values", [])]
    values = []
    for k, (name, kind, elem) in enumerate(kinds):
        if kind == "scalar":
            values.append(index["values"][k])
            continue
        got = []
        for n, part in zip(names, parts):
            vals = part.get("values") if isinstance(part, dict) else None
            if not isinstance(vals, list) or len(vals) != len(kinds) or not isinstance(vals[k], dict) or \
                    (vals[k].get("name"), vals[k].get("kind"), vals[k].get("type")) != (name, kind, elem):
                raise bad(f"does not hold the values the index lists ({name} as value {k})", d / n)
            got.append(vals[k].get("value"))
        if kind == "vertex" and elem != "bool":
            whole: Any = {}
            for g in got:
                whole.update(g)
        else:
            whole = [x for g in got for x in g]
        values.append({"name": name, "kind": kind, "type": elem, "value": whole})
    return {"entry": index.get("entry"), "values": values}


class _Ends:
    """Where the entries of an `.npz` part's edge value are: edge i joins ids[i] and ids[m + i]."""

    def __init__(self, u: np.ndarray, v: np.ndarray) -> None:
        self.ids = np.concatenate([u, v])
        self.src = np.arange(u.size)
        self.dst = np.arange(u.size, 2 * u.size)


class _Ids:
    def __init__(self, ids: np.ndarray) -> None:
        self.ids = ids


def _npz_part(p: Path) -> dict:
    """An `.npz` part as the JSON part it stands for ({"values": [...]}, scalars included)."""
    with np.load(p, allow_pickle=False) as z:
        index = json.loads(str(z["index"][()]))
        values = []
        for v in index["values"]:
            data = z[v["key"]]
            kind, elem = v["kind"], v["type"]
            if kind == "scalar":
                value: Any = scalar_json(elem, data[()])
            else:
                where = _Ids(z["ids"]) if kind == "vertex" else _Ends(z["u"], z["v"])
                value = RankPart(kind, elem, data, where).shape(slice(None))
            values.append({"name": v["name"], "kind": kind, "type": elem, "value": value})
    return {"values": values}


# ----------------------------------------------------------------------------- summaries

def share_heads(shares: list[Share], comm, limit: int) -> list[tuple[dict, int]] | None:
    """`value_heads` (g2pl.results.interop) of shares spread over ranks: per value its --output entry
    with the first `limit` entries, and how many it lists; on rank 0 (None elsewhere); collective."""
    mine = [None if s.kind == "scalar" else (s.value.head(limit), s.value.count()) for s in shares]
    every: list[list] | None = [mine] if comm is None or comm.size == 1 else comm.gather(mine)
    if every is None:
        return None
    out = []
    for i, s in enumerate(shares):
        entry = {"name": s.name, "kind": s.kind, "type": s.type}
        if s.kind == "scalar":
            out.append(({**entry, "value": scalar_json(s.type, s.value)}, 1))
            continue
        heads = [m[i] for m in every]
        if s.kind == "vertex" and s.type != "bool":
            head: Any = {}
            for h, _n in heads:
                head.update(list(h.items())[:limit - len(head)])
        else:
            head = [x for h, _n in heads for x in h][:limit]
        out.append(({**entry, "value": head}, sum(n for _h, n in heads)))
    return out
