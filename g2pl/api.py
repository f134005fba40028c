"""Python API: `compile(...) -> Program`, `load_graph(...) -> Graph`, `Program.run(...) -> Result`."""

from __future__ import annotations

import builtins
import json
import math
import os
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from g2pl.errors import G2PLError
from g2pl.graph import Graph, load_graph
from g2pl.graph.loaders import ReadOptions
from g2pl.io.numtext import beyond_int64, shorten
from g2pl.io.output_files import write_atomic
from g2pl.results.interop import (
    CallableEdgeIds,
    CallableIds,
    result_array,
    result_edge_ids,
    result_ids,
    result_summary,
    result_to_networkx,
    result_to_pandas,
)
from g2pl.results.json_check import check_values
from g2pl.results.returned import Returned
from g2pl.results.streamed import Share, gather_shares, save_result
from g2pl.runtime.checkpoint import run_identity
from g2pl.runtime.driver import execute
from g2pl.runtime.partition import RENUMBERINGS

if TYPE_CHECKING:  # the compiler is imported when something is compiled: a cached `g2pl run` never loads it
    from g2pl.compiler import ast as A
    from g2pl.compiler.pipeline import Compilation

__all__ = ["compile", "compile_file", "load_graph", "Program", "Result", "Graph", "parse_args"]


class _JSONValues:
    """`Result.values` as a dataclass field: the JSON-shaped values, made from the arrays on first use
    (a run's Result holds arrays; one built from `--output` JSON holds the JSON itself)."""

    def __get__(self, res: Result | None, owner: type | None = None) -> Any:
        if res is None:
            return None  # the field's default
        vals = res.__dict__.get("_values")
        if vals is None and res.returned is not None:
            vals = res.__dict__["_values"] = [res._json_entry(r) for r in res.returned]
        return vals if vals is not None else []

    def __set__(self, res: Result, value: list[dict] | None) -> None:
        res.__dict__["_values"] = value
        res.__dict__.pop("_json", None)


@dataclass(repr=False)
class Result:
    """Outcome of a run: the returned values and the statistics.

    A run's values are kept as NumPy arrays (`returned`, `array(name)`); `values`, `res[name]` and
    `output()` give exactly what --output writes, made on first use; `stats` is what --stats writes.
    A Result can also be made from --output JSON alone: `Result(entry, values, stats)`.
    """

    entry: str
    values: list[dict] = _JSONValues()  # type: ignore[assignment]
    stats: dict = field(default_factory=dict)
    #: The graph the program ran on (optional; lets `array`/`to_networkx`/`to_pandas` list every
    #: vertex and edge, which the JSON-shaped `values` of vertex/edge *sets* do not).
    graph: Graph | None = field(default=None, compare=False)
    #: The returned values as arrays aligned with `graph` (None for a Result made from JSON).
    returned: list[Returned] | None = field(default=None, compare=False)
    #: A run on several ranks with `gather=False`: this rank's shares of the values (g2pl.results.streamed
    #: writes them from every rank); `returned` and `values` are then empty on every rank.
    parts: list[Share] | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        """A Result made from --output JSON (no arrays) is checked whole, so a crafted or damaged file
        is refused here with one message instead of failing later in a conversion."""
        if self.returned is None:
            if not isinstance(self.entry, str):
                raise G2PLError("`entry` must be the procedure's name (a string)", file="result")
            check_values(self.__dict__.get("_values") or [], f"result of `{self.entry[:80]}`")

    def __repr__(self) -> str:
        names = ", ".join(f"{n} ({k} {t})" for n, k, t in self.kinds()) or "nothing"
        st = self.stats or {}
        steps = f", {st['supersteps']} supersteps, {st.get('time_s', 0.0):.3f} s" if "supersteps" in st else ""
        return f"<g2pl Result of `{self.entry}`: {names}{steps}>"

    def kinds(self) -> list[tuple[str, str, str]]:
        """(name, kind, type) of every returned value, in `return` order (no conversion)."""
        if self.returned is not None:
            return [(r.name, r.kind, r.type) for r in self.returned]
        return [(v["name"], v["kind"], v["type"]) for v in self.values]

    def _json_entry(self, r: Returned) -> dict:
        cache = self.__dict__.setdefault("_json", {})
        if r.name not in cache:
            cache[r.name] = r.entry(self.graph)
        return cache[r.name]

    def _returned(self, name: str) -> Returned | None:
        for r in self.returned or ():
            if r.name == name:
                return r
        return None

    def __getitem__(self, name: str) -> Any:
        """One value in its --output JSON shape (converted on first use, for this value only)."""
        if self.__dict__.get("_values") is None and self.returned is not None:
            r = self._returned(name)
            if r is None:
                raise KeyError(name)
            return self._json_entry(r)["value"]
        for v in self.values:
            if v["name"] == name:
                return v["value"]
        raise KeyError(name)

    def output(self) -> dict:
        return {"entry": self.entry, "values": self.values}

    def write_output(self, path: str | Path) -> None:
        """The --output JSON document, whatever the extension of `path` (see `save`)."""
        save_result(self, path, "json")

    def save(self, path: str | Path, format: str | None = None) -> None:  # noqa: A002 - the natural name
        """Write the returned values as `g2pl run --output` writes them, formatted from the arrays in
        bulk: in the format `path`'s extension names (.json, .npz, .csv, .parquet) or `format`.

        The file replaces `path` whole when complete; a bad extension or a missing pyarrow is a
        G2PLError (exit status 2 at the command line). A Result made from JSON is saved as JSON only."""
        save_result(self, path, format)

    def write_stats(self, path: str | Path) -> None:
        write_atomic(path, json.dumps(self.stats, indent=1))

    # ---- arrays and interop (g2pl/results/interop.py); `graph=` overrides `self.graph`

    @property
    def ids(self) -> np.ndarray:
        """Original vertex IDs, ascending: the order of `array(...)` for vertex values (as `Graph.ids`).

        (Calling it, `res.ids()` or `res.ids(graph=g)`, still works: the form before this was a
        property.)"""
        return CallableIds.wrap(result_ids(self, None), self)

    @property
    def edge_ids(self) -> tuple[np.ndarray, np.ndarray]:
        """(u_ids, v_ids) of every edge, ascending: the order of `array(...)` for edge values.

        (Calling it, `res.edge_ids(graph=g)`, still works: the form before this was a property.)"""
        return CallableEdgeIds(result_edge_ids(self, None), self)

    def array(self, name: str, graph: Graph | None = None) -> np.ndarray:
        """A returned value as a NumPy array aligned with `ids` / `edge_ids` (scalars: 0-d).

        For a run's Result this is the run's own array (read-only, not copied)."""
        return result_array(self, name, graph)

    def to_networkx(self, graph: Graph | None = None):
        """A networkx graph with the returned values as node/edge attributes (scalars in `.graph`)."""
        return result_to_networkx(self, graph)

    def to_pandas(self, kind: str | None = None, graph: Graph | None = None):
        """One pandas DataFrame of the returned values of one kind.

        `kind="vertex"`: indexed by original ID (`id`), a column per vertex graph or set;
        `"edge"`: indexed by (`u`, `v`), a column per edge graph or set; `"scalar"`: one row, a column
        per scalar.  Without `kind`: vertex values if the result has any, else edge values, else scalars.
        """
        if isinstance(kind, Graph):  # the form before `kind` existed: to_pandas(graph)
            kind, graph = None, kind
        return result_to_pandas(self, kind, graph)

    def _repr_pretty_(self, p, cycle: bool) -> None:  # IPython display: a summary, not every value
        p.text(result_summary(self))


class ParamType(Protocol):
    """What a procedure parameter's type says to argument checking: the compiler's `ir.Ty`, or the
    copy a cached compilation keeps (g2pl.compile_cache), which needs no compiler."""

    @property
    def kind(self) -> str: ...

    @property
    def elem(self) -> str: ...


_BOOL = {"true": True, "false": False, "1": True, "0": False}
# Decimal integers and decimal floats only: no underscores (Python's `0_5`), no hex, no inf/nan words.
_INT_TEXT = re.compile(r"[+-]?[0-9]+")
_FLOAT_TEXT = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")
def _parse_arg(name: str, raw: Any, elem: str) -> Any:
    """Check and convert one procedure argument to its declared/inferred element type.

    One rule for numbers, from the command line or the API alike: ints must fit int64 (vids are
    >= -1), floats must be finite. `inf`, `nan` and literals that overflow (1e999) are refused,
    because a non-finite parameter silently turns every result into nan; a program that needs
    infinity writes the built-in `inf`.
    """
    def bad(what: str) -> G2PLError:
        return G2PLError(f"argument `{name}={shorten(str(raw))}`: expected {what}")

    if isinstance(raw, str):
        s = raw.strip()
        if elem == "bool":
            if s.lower() not in _BOOL:
                raise bad("a bool (true or false)")
            return _BOOL[s.lower()]
        if elem in ("int", "vid"):
            if not _INT_TEXT.fullmatch(s):
                hint = f" (declare the parameter `{name}: float` to pass decimals)" if elem == "int" else ""
                raise bad(("an integer" if elem == "int" else "a vertex ID (an integer)") + hint)
            if beyond_int64(s):
                raise bad("a 64-bit integer")
            v = int(s)
        else:
            if not _FLOAT_TEXT.fullmatch(s):
                raise bad("a finite decimal number (like 0.85 or 1e-3)")
            v = float(s)
            if not math.isfinite(v):
                raise bad("a finite number (the value overflows a 64-bit float)")
            return v
    else:
        v = raw
        if elem == "bool":
            if not isinstance(v, (bool, np.bool_)):
                raise bad("a bool")
            return bool(v)
        if elem == "float":
            if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
                raise bad("a number")
            try:
                v = float(v)
            except OverflowError:
                raise bad("a finite number") from None
            if not math.isfinite(v):
                raise bad("a finite number")
            return v
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise bad("an integer")
        v = int(v)
    if not -(2**63) <= v < 2**63:
        raise bad("a 64-bit integer")
    if elem == "vid" and v < -1:
        raise bad("a vertex ID (>= 0, or -1 for none)")
    return v


def parse_args(params: Sequence[tuple[str, ParamType]], given: dict[str, Any], entry: str) -> dict[str, Any]:
    """Match supplied arguments to a procedure's parameters (missing, unknown, ill-typed -> G2PLError)."""
    names = [p for p, _ in params]
    for k in given:
        if k not in names:
            takes = ", ".join(f"{p}: {t.elem}" for p, t in params) or "no arguments"
            raise G2PLError(f"unknown argument `{k}`; procedure `{entry}` takes {takes}")
    out = {}
    for p, t in params:
        if p not in given:
            raise G2PLError(f"missing argument `{p}` ({t.elem}) for procedure `{entry}`; pass --arg {p}=VALUE")
        out[p] = _parse_arg(p, given[p], t.elem)
    return out


def timed_load(spec: str, directed: bool | None = None, seed: int = 0, read: ReadOptions | None = None) -> Graph:
    """`load_graph`, the seconds it took kept with the graph (a run's stats report them); `read` holds
    the file options (`--vertices`, `--header`, `--mtx-base`)."""
    from g2pl.graph.loaders import load_with

    t0 = time.perf_counter()
    graph = load_with(spec, directed, seed, read or ReadOptions())
    graph.__dict__["load_s"] = time.perf_counter() - t0
    return graph


def check_vertex_args(params: Sequence[tuple[str, ParamType]], argv: dict[str, Any], graph: Graph) -> None:
    """A `vid` argument must name a vertex of the graph (or be -1, no vertex): a mistyped ID would
    otherwise run silently as a vertex that is not there."""
    for p, t in params:
        v = argv.get(p)
        if t.elem == "vid" and v is not None and v != -1 and graph.id_to_index(np.array([v]))[0] < 0:
            ends = graph.id_span() if hasattr(graph, "id_span") else (int(graph.ids[0]), int(graph.ids[-1]))
            span = f"IDs {ends[0]}..{ends[1]}" if graph.n else "no vertices"
            raise G2PLError(f"argument `{p}={v}`: {v} is not a vertex of the graph ({graph.n} vertices, "
                            f"{span}); pass a vertex's ID, or -1 for no vertex")


class Program:
    """A compiled G2PL program (all procedures type-checked and lowered)."""

    def __init__(self, module: A.Module, opt: int = 2, disable: tuple[str, ...] = (), verify: bool = False) -> None:
        """Compile every procedure of `module`; `verify` checks the IR and the plan after every pass
        (`g2plc --verify`: a broken invariant raises the compiler's PlanError, naming the pass)."""
        from g2pl.compiler.pipeline import compile_module

        self.module = module
        self.opt = opt
        self.disable = tuple(disable)
        self._compiled: dict[str, Compilation] = {}
        for name in module.procedures:
            self._compiled[name] = compile_module(module, name, opt=opt, disable=self.disable, verify=verify)
        self._modules: dict[str, ModuleType] = {}

    @property
    def file(self) -> str:
        return self.module.file

    @property
    def procedures(self) -> list[str]:
        return list(self.module.procedures)

    @property
    def source(self) -> str:
        """The program's text (a run's checkpoints are tied to it)."""
        return self.module.source

    def entry_name(self, entry: str | None = None) -> str:
        procs = self.procedures
        if entry is not None:
            if entry not in procs:
                raise G2PLError(f"no procedure named `{entry}`; the program defines {', '.join(procs)}",
                                file=self.file)
            return entry
        if len(procs) == 1:
            return next(iter(procs))
        if "main" in procs:
            return "main"
        raise G2PLError(
            f"the program defines several procedures ({', '.join(procs)}); choose one with --entry", file=self.file
        )

    def compilation(self, entry: str | None = None) -> Compilation:
        return self._compiled[self.entry_name(entry)]

    def plan_text(self, entry: str | None = None) -> str:
        return self.compilation(entry).plan_text()

    def python(self, entry: str | None = None) -> str:
        return self.compilation(entry).python

    def ir_text(self, entry: str | None = None) -> str:
        return self.compilation(entry).ir_text()

    def params(self, entry: str | None = None) -> Sequence[tuple[str, ParamType]]:
        return self.compilation(entry).proc.params

    def load(self, entry: str | None = None) -> ModuleType:
        """The generated module, imported (cached)."""
        name = self.entry_name(entry)
        if name not in self._modules:
            code = self.python(name)
            mod = ModuleType(f"g2pl_generated_{name}")
            mod.__file__ = f"<g2pl:{self.file}:{name}>"
            exec(builtins.compile(code, mod.__file__, "exec"), mod.__dict__)  # noqa: S102 - our own generated code
            self._modules[name] = mod
        return self._modules[name]

    def run(self, graph: Graph | str | None, args: dict[str, Any] | None = None, backend: str = "numpy",
            seed: int = 0, entry: str | None = None, max_supersteps: int | None = None, directed: bool | None = None,
            comm=None, renumber: str | None = "auto", progress=None, checkpoint: str | None = None,
            checkpoint_every: int = 10, resume: str | None = None, time_limit: float | None = None,
            gather: bool = True, partition: str = "auto") -> Result:
        """Run a procedure on a graph (a `Graph` or a file/generator spec, loaded with `directed` as
        `load_graph` loads it: None, not said).

        Under MPI (`comm` with several ranks) only rank 0 needs the graph and
        only rank 0's result holds the values; the statistics cover all ranks.
        Each rank computes its share of every vertex and edge value; `gather=False` leaves them
        there (`Result.parts` on every rank, for writing out from every rank, as `g2pl run` does)
        instead of gathering them into whole arrays on rank 0.
        `renumber="degree"` orders each rank's vertices by degree (locality), "none" (or None)
        keeps ID order, "auto" (default) orders by degree when degrees are skewed;
        results are always reported by original ID.  `progress(stats, final)`, if given, is
        called after every superstep with this rank's running statistics (see `g2pl.cli.progress`).
        `checkpoint=DIR` saves the state every `checkpoint_every` supersteps; `resume=DIR`
        continues a run from its last checkpoint (refused if the program, graph, arguments,
        seed, rank count or optimization settings differ).
        `partition="2d"` arranges the ranks as a grid (O(sqrt P) partners per rank instead of P - 1):
        neighbourhood aggregations over edge blocks (g2pl.runtime.edge_grid, fewer bytes than 1D),
        every other exchange routed a row hop then a column hop (g2pl.runtime.grid); "1d" sends
        directly, "auto" is 2d from 64 ranks on; answers are the same either way.
        """
        if time_limit is not None and not time_limit > 0:
            raise G2PLError(f"--time-limit {time_limit}: expected a positive number of seconds")
        if renumber is not None and renumber not in RENUMBERINGS:
            raise G2PLError(f"unknown renumbering `{renumber}`; expected one of {', '.join(RENUMBERINGS)}")
        if backend not in ("numpy", "cupy"):
            raise G2PLError(f"unknown backend `{backend}`; expected numpy or cupy")
        if backend == "cupy":
            from g2pl.runtime.cupy_backend import import_cupy

            import_cupy()  # CuPy missing, or no CUDA device: a G2PLError before anything is loaded
        name = self.entry_name(entry)
        params = self.params(name)
        argv = parse_args(params, dict(args or {}), name)
        from g2pl.runtime.grid import routed

        comm = routed(comm, partition)
        rank = 0 if comm is None else comm.rank
        module = self.load(name)
        if isinstance(graph, str) and comm is not None and comm.size > 1:
            from g2pl.runtime.ingest import entry_routes_needed, load

            graph = load(comm, graph, directed=directed, seed=seed, renumber=renumber,
                         entry_routes=entry_routes_needed(module))  # every rank builds its own part
        elif isinstance(graph, str) and rank == 0:
            graph = timed_load(graph, directed=directed, seed=seed)
        if graph is not None and not isinstance(graph, str):
            check_vertex_args(params, argv, graph)
        ckpt = None
        if checkpoint is not None or resume is not None:
            if checkpoint is not None and resume is not None and Path(checkpoint) != Path(resume):
                raise G2PLError("--checkpoint and --resume name different directories; use one directory")
            if checkpoint_every < 1:
                raise G2PLError(f"--checkpoint-every {checkpoint_every}: expected a positive number")
            ranks = 1 if comm is None else comm.size
            ident = run_identity(self.source, name, "", argv, seed, ranks, self.opt, self.disable)
            ckpt = {"dir": resume or checkpoint, "every": checkpoint_every, "resume": resume is not None,
                    "identity": ident}
        values, stats = execute(module, graph, argv, seed=seed, max_supersteps=max_supersteps,
                                comm=comm, backend=backend, opt=self.opt, entry=name, renumber=renumber,
                                progress=progress, checkpoint=ckpt, time_limit=time_limit)
        if comm is not None and comm.size > 1:  # every rank holds its shares (Runtime.collect)
            if not gather:
                return Result(name, [], stats, graph=graph if isinstance(graph, Graph) else None,
                              parts=[Share(*v) for v in values or ()])
            edges = any(v[1] == "edge" for v in values or ())
            values = gather_shares(values or [], comm)  # collective: whole arrays on rank 0
            if graph is not None and not isinstance(graph, Graph):  # built in parts: no rank has its IDs
                from g2pl.runtime.ingest import result_view

                graph = result_view(graph, edges)  # collective: the IDs (and edges) the values align with
        if values is None:  # another rank than 0 under MPI: rank 0 holds the values
            return Result(name, [], stats)
        return Result(name, None, stats, graph=graph,
                      returned=[Returned.of(n, k, e, v) for (n, k, e, v) in values])


def compile(source: str | os.PathLike, opt: int = 2, disable: tuple[str, ...] | list[str] = (),  # noqa: A001
            file: str | None = None, verify: bool = False) -> Program:
    """Compile a G2PL program into a `Program`.

    `source` is program *text* when it is a `str`: a service can compile untrusted text knowing
    that nothing is read from disk. A file is read only when asked for explicitly, with a
    `pathlib.Path` (or any `os.PathLike`) or with `compile_file`. `file` names the text in errors.
    `verify` runs the compiler's verifier after lowering and after every pass (`g2plc --verify`).
    """
    from g2pl.compiler.parser import parse

    check_options(opt, disable)
    if isinstance(source, os.PathLike):
        text, name = read_program_file(source)
        name = file or name
    elif isinstance(source, str):
        _refuse_file_name(source)
        text, name = source, file or "<string>"
        _check_size(len(text), name)
    else:
        raise G2PLError(f"g2pl.compile() takes program text (str) or a file path (pathlib.Path), "
                        f"not {type(source).__name__}")
    module = parse(text, name)
    return Program(module, opt=opt, disable=tuple(disable), verify=verify)


def check_options(opt: int, disable: Sequence[str]) -> None:
    """The -O level and the names of disabled passes are ones the compiler knows (else G2PLError)."""
    from g2pl.compiler.pass_names import PASS_NAMES

    if opt not in (0, 1, 2):
        raise G2PLError(f"unknown optimization level -O{opt}; expected 0, 1 or 2")
    for d in disable:
        if d not in PASS_NAMES:
            raise G2PLError(f"unknown pass `{d}` for --disable-pass; expected one of {', '.join(PASS_NAMES)}")


def compile_file(path: str | os.PathLike, opt: int = 2, disable: tuple[str, ...] | list[str] = ()) -> Program:
    """Compile the G2PL program in the file at `path`."""
    return compile(Path(path), opt=opt, disable=disable)


MAX_PROGRAM_BYTES = 16 * 2**20  # a 10,000-statement program is ~0.2 MB: larger input is refused unread


def _check_size(size: int, name: str) -> None:
    if size > MAX_PROGRAM_BYTES:
        raise G2PLError(f"the program is larger than {MAX_PROGRAM_BYTES // 2**20} MiB; refusing to compile it",
                        file=name)


def _refuse_file_name(text: str) -> None:
    """A lone `something.g2pl` is not a program: say how to compile a file instead of a parse error
    (and without looking at the file system)."""
    s = text.strip()
    if s.endswith(".g2pl") and "\n" not in s and "{" not in s:
        raise G2PLError(f"g2pl.compile() compiles program text, and {shorten(s)!r} looks like a file name; "
                        "to compile a file use g2pl.compile_file(path) or pass a pathlib.Path")


def read_program_file(path: str | os.PathLike) -> tuple[str, str]:
    """(text, file name) of a program file; unreadable or non-UTF-8 files are G2PLErrors."""
    p = Path(path)
    try:
        with open(p, "rb") as f:
            raw = f.read(MAX_PROGRAM_BYTES + 1)
    except FileNotFoundError:
        raise G2PLError("no such program file", file=str(p)) from None
    except IsADirectoryError:
        raise G2PLError("is a directory, not a program file", file=str(p)) from None
    except OSError as e:
        raise G2PLError(f"cannot read program file: {e.strerror}", file=str(p)) from None
    _check_size(len(raw), str(p))
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw[: e.start].count(b"\n") + 1
        raise G2PLError("program file is not valid UTF-8 text", file=str(p), line=line) from None
    return text, str(p)
