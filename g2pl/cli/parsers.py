"""The argument parsers of `g2plc` and `g2pl` (rendered into docs/cli.md by reference.py).

Each parser's (sub)command sets `fn`, the function of commands.py that carries it out.
"""

from __future__ import annotations

import argparse

from g2pl.cli import commands
from g2pl.compiler.pass_names import PASS_NAMES as PASS_CHOICES  # the pipeline's list (checked there)
from g2pl.io.numtext import beyond_int64, shorten


class _Parser(argparse.ArgumentParser):
    """argparse that reports errors as `prog: error: ...` with exit status 2 (its default) and no usage spam."""

    def error(self, message: str):  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message}\n(see `{self.prog} --help`)\n")


def _int_value(text: str) -> int:
    """An argparse type for whole numbers: decimal, within int64 (and no echo of huge input)."""
    s = text.strip()
    body = s[1:] if s[:1] in "+-" else s
    if not body.isdigit() or not body.isascii():
        raise argparse.ArgumentTypeError(f"expected a whole number, got {shorten(s)!r}")
    if beyond_int64(s) or not -(2**63) <= int(s) < 2**63:
        raise argparse.ArgumentTypeError(f"{shorten(s)} ({len(body)} digits) is too large")
    return int(s)


def _add_opt_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("-O", dest="opt", type=int, choices=(0, 1, 2), default=2, metavar="LEVEL",
                   help="optimization level: -O0, -O1 or -O2 (default)")
    p.add_argument("--disable-pass", dest="disable", action="append", default=[], choices=PASS_CHOICES,
                   metavar="NAME", help=f"turn one optimizer pass off ({', '.join(PASS_CHOICES)})")
    p.add_argument("--entry", metavar="NAME", help="procedure to use (default: the only one, or `main`)")
    p.add_argument("--debug", action="store_true", help="show Python tracebacks on errors")


_GRAPH_HELP = (
    "a graph file, its format from its extension: an edge list (.txt .el .tsv .csv .edges: `u v [weight]` lines, "
    "whitespace- or comma-separated, # and %% comments), Matrix Market .mtx (vertex IDs are its 1-based "
    "indices; see --mtx-base), NumPy .npz (integer arrays src and dst, optional weight, optional ids: "
    "vertices that exist even when isolated), an LDBC Graphalytics edge file NAME.e (`src dst [weight]`; "
    "read with the vertex file NAME.v beside it, and NAME.properties if present), or a .g2g file from "
    "`g2pl convert`; or a generator: kron:SCALE[:EF] | ws:N:K:P | er:N:M")


def _add_graph_options(p: argparse.ArgumentParser, directed_note: str = "") -> None:
    """The options that say how to read the graph (shared by `g2pl run` and `g2pl convert`)."""
    way = p.add_mutually_exclusive_group()
    way.add_argument("--directed", action="store_true", default=None,
                     help="keep edge direction (default: undirected, or what a Graphalytics NAME.properties "
                          f"says){directed_note}")
    way.add_argument("--undirected", dest="directed", action="store_false", default=None,
                     help="ignore edge direction, saying so explicitly (the default is undirected, unless a "
                          "Graphalytics NAME.properties declares the graph directed; either option contradicting "
                          "that file is an error)")
    p.add_argument("--vertices", metavar="FILE",
                   help="a file of vertex IDs, one per line: with an edge list, vertices added even when no "
                        "edge touches them; with a Graphalytics NAME.e, the vertex file to read instead of "
                        "NAME.v (every edge endpoint must be listed)")
    p.add_argument("--header", action="store_true",
                   help="the edge list's first line names the columns (e.g. `src,dst,weight` from pandas "
                        "`to_csv(index=False)`): skip it. Without this option such a line is an error")
    p.add_argument("--mtx-base", type=int, choices=(1, 0), default=1, metavar="0|1",
                   help="vertex ID of a Matrix Market file's first row and column: 1 keeps the file's 1-based "
                        "indices as IDs, 0 shifts them down by one (as SciPy numbers them)")


def _add_cache_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("--no-cache", action="store_true",
                   help="compile the program even if the compile cache holds it, and store nothing "
                        "(G2PL_NO_CACHE=1 does the same; see \"Compile cache\" above)")


# ---------------------------------------------------------------- g2plc


def g2plc_parser() -> argparse.ArgumentParser:
    """The argument parser of `g2plc` (also rendered into docs/cli.md by `cli_reference`)."""
    p = _Parser(prog="g2plc", description="Compile a G2PL program to a vertex-centric Python module.")
    p.add_argument("program", help="the .g2pl program")
    p.add_argument("-o", dest="output", metavar="OUT.py", help="write the output here (default: PROGRAM.py)")
    p.add_argument("--emit", choices=("ast", "ir", "plan", "py"), help="print one stage instead of writing a module")
    p.add_argument("--print-ir-after", action="append", metavar="NAME|all",
                   choices=("all", "lower", "plan", *PASS_CHOICES),
                   help="print the IR (or plan) after this pass to stderr; repeatable")
    p.add_argument("--time-passes", action="store_true", help="print how long each pass took to stderr")
    p.add_argument("--verify", action="store_true",
                   help="check the IR after lowering and after every pass, and the plan after every pass "
                        "(a broken invariant is an internal compiler error naming the pass; exit status 1)")
    _add_cache_flag(p)
    _add_opt_flags(p)
    p.set_defaults(fn=commands.g2plc)
    return p


# ---------------------------------------------------------------- g2pl run / plan / check / convert / explain


def g2pl_parser() -> argparse.ArgumentParser:
    """The argument parser of `g2pl` and its subcommands (also rendered into docs/cli.md)."""
    p = _Parser(prog="g2pl", description="Run and inspect G2PL programs.")
    sub = p.add_subparsers(dest="cmd", required=True, parser_class=_Parser)

    r = sub.add_parser("run", help="compile and run a program on a graph")
    r.add_argument("program", help="the .g2pl program")
    r.add_argument("--graph", required=True, help=_GRAPH_HELP)
    _add_graph_options(r)
    r.add_argument("--arg", action="append", default=[], metavar="NAME=VALUE", help="procedure argument")
    r.add_argument("--np", type=_int_value, default=1, metavar="N",
                   help="number of MPI ranks, capped at 4 per CPU core (a cap of at least 8); "
                        "the environment variable G2PL_MAX_RANKS sets another cap")
    r.add_argument("--backend", choices=("numpy", "cupy"), default="numpy",
                   help="array backend: numpy (CPU) or cupy (one CUDA device per rank; needs CuPy 14)")
    r.add_argument("--renumber", choices=("auto", "none", "degree"), default="auto",
                   help="order each rank's vertices by degree for locality (results keep original IDs); "
                        "auto: when degrees are skewed")
    r.add_argument("--partition", choices=("auto", "1d", "2d"), default="auto",
                   help="how ranks exchange: 1d sends to every rank directly; 2d arranges the ranks as a grid "
                        "(O(sqrt N) partners per rank, same answers): neighbourhood aggregations over edge "
                        "blocks (fewer bytes than 1d), other exchanges along a row then a column; "
                        "auto: 2d from 64 ranks")
    r.add_argument("--seed", type=_int_value, default=0, help="seed for generators and rand()")
    r.add_argument("--max-supersteps", type=_int_value, metavar="N",
                   help="stop with an error (exit status 1) if the program needs more than N steps: its "
                        "supersteps plus the iterations of loops that exchange nothing")
    r.add_argument("--time-limit", type=float, metavar="SECONDS",
                   help="stop with an error (exit status 1) if the run takes longer than this (checked at "
                        "every superstep and inside loops that exchange nothing)")
    r.add_argument("--checkpoint", metavar="DIR", help="save the run's state at superstep boundaries into DIR")
    r.add_argument("--checkpoint-every", type=_int_value, default=10, metavar="K",
                   help="supersteps between checkpoints (default 10)")
    r.add_argument("--resume", metavar="DIR",
                   help="continue from the last checkpoint in DIR (same program, graph, arguments, seed, ranks)")
    r.add_argument("--output", metavar="FILE",
                   help="write returned values to FILE, in the format its extension names: .json (the JSON "
                        "document; `-`: to standard output), .npz (NumPy arrays), .csv (a row per vertex or per "
                        "edge), .parquet (needs the `parquet` extra); see \"Output files\" in docs/cli.md. With several "
                        "ranks, rank 0 writes it as the others send their values, a bounded piece at a time (no "
                        "rank holds them all), the same bytes as with one rank")
    r.add_argument("--output-format", choices=("json", "npz", "csv", "parquet"), metavar="FORMAT",
                   help="json, npz, csv or parquet: the format of --output whatever its extension, and of "
                        "--output-dir's parts (default: json)")
    r.add_argument("--output-dir", metavar="DIR",
                   help="write returned values as one file per rank, each by its own rank: DIR/part-00000.json, "
                        "... (the --output shape, holding the rank's vertices and the edges whose u endpoint it "
                        "owns, ascending by ID; the parts in rank order make the whole value; .npz, .csv or "
                        ".parquet parts with --output-format), then DIR/index.json (the parts, ranks, value names "
                        "and kinds, scalars); DIR is made if missing; see g2pl.results.streamed")
    r.add_argument("--stats", metavar="FILE.json", help="write run statistics as JSON (`-`: to standard output)")
    r.add_argument("--show-plan", action="store_true", help="print a summary of the superstep plan")
    r.add_argument("--plot", metavar="FILE.png",
                   help="draw time, messages, bytes and active vertices per superstep (needs matplotlib)")
    r.add_argument("--quiet", action="store_true",
                   help="print nothing on success, and no progress (progress goes to stderr, rank 0 only)")
    _add_cache_flag(r)
    _add_opt_flags(r)
    r.set_defaults(fn=commands.run)

    pl = sub.add_parser("plan", help="print the superstep plan")
    pl.add_argument("program", help="the .g2pl program")
    pl.add_argument("--dot", metavar="FILE.dot", help="also write the state machine as Graphviz dot")
    pl.add_argument("--svg", metavar="FILE.svg", help="also draw the state machine as SVG (needs Graphviz `dot`)")
    _add_opt_flags(pl)
    pl.set_defaults(fn=commands.plan)

    c = sub.add_parser("check", help="parse and type-check a program, reporting every error")
    c.add_argument("program", help="the .g2pl program")
    c.add_argument("--debug", action="store_true", help="show Python tracebacks on errors")
    c.set_defaults(fn=commands.check)

    cv = sub.add_parser("convert", help="build a graph once and save it as a .g2g file that loads without rebuilding")
    cv.add_argument("graph", metavar="GRAPH", help=_GRAPH_HELP)
    cv.add_argument("out", metavar="OUT", help="the binary graph file to write (name ends in .g2g)")
    _add_graph_options(cv, "; runs on the .g2g file then need --directed too")
    cv.add_argument("--seed", type=_int_value, default=0, help="seed for generators")
    cv.add_argument("--quiet", action="store_true", help="print nothing on success")
    cv.add_argument("--debug", action="store_true", help="show Python tracebacks on errors")
    cv.set_defaults(fn=commands.convert)

    e = sub.add_parser("explain", help="per source statement: where it runs, what it costs, what optimized it")
    e.add_argument("program", help="the .g2pl program")
    _add_opt_flags(e)
    e.set_defaults(fn=commands.explain)
    return p
