"""What each command does: `g2plc` (compile) and `g2pl run | plan | check | explain | convert`.

Each takes the parsed arguments (parsers.py) and returns the exit status; `guard` (guard.py) turns what
they raise into one line.  A module only one command needs is imported inside that command.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import traceback
from pathlib import Path
from typing import TYPE_CHECKING

from g2pl.cli.guard import quiet_on_this_rank
from g2pl.cli.plot import check_plot_path, plot_stats
from g2pl.cli.progress import Progress
from g2pl.errors import G2PLError, RunStopped
from g2pl.io.numtext import shorten

if TYPE_CHECKING:
    from g2pl.api import Program
    from g2pl.graph.loaders import ReadOptions

#: the Python statement each rank of `g2pl run --np N` runs (see g2pl.runtime.supervisor.relaunch)
RANK_ENTRY = "from g2pl.cli.rank import rank_main; rank_main()"


def _compile(a: argparse.Namespace, cache: bool = True, verify: bool = False, warn: bool = True) -> Program:
    """The program of `a`, compiled or taken from the compile cache (g2pl/compile_cache.py)."""
    from g2pl.compile_cache import compile_program, warn_on_stderr

    return compile_program(a.program, opt=a.opt, disable=a.disable, verify=verify,
                           use_cache=cache and not a.no_cache, warn=warn_on_stderr if warn else None)


def g2plc(a: argparse.Namespace) -> int:
    from g2pl.io.output_files import check_outputs, write_atomic

    default_out = None if a.output is not None or a.emit else Path(Path(a.program).stem + ".py")
    check_outputs([("-o", a.output if a.output is not None else default_out)], [a.program], "g2plc")
    # a module (or --emit py) is what the cache holds; the other stages and the pass options compile
    cache = a.emit in (None, "py") and not a.print_ir_after and not a.time_passes
    prog = _compile(a, cache=cache, verify=a.verify)
    entry = prog.entry_name(a.entry) if len(prog.procedures) > 1 or a.entry else prog.procedures[0]
    if a.print_ir_after or a.time_passes:
        _show_passes(prog, entry, a)
    if a.emit == "ast":
        from g2pl.compiler import ast as A

        text = A.dump(prog.module)
    elif a.emit == "ir":
        text = prog.ir_text(entry)
    elif a.emit == "plan":
        text = prog.plan_text(entry)
    elif a.emit == "py":
        text = prog.python(entry)
    else:
        text = None
    if a.output is not None:
        write_atomic(a.output, prog.python(entry) if text is None else text + "\n")
        return 0
    if text is not None:
        sys.stdout.write(text + "\n")
        return 0
    assert default_out is not None
    write_atomic(default_out, prog.python(entry))
    print(f"g2plc: wrote {default_out}", file=sys.stderr)
    return 0


def _show_passes(prog, entry: str, a: argparse.Namespace) -> None:
    """--print-ir-after NAME|all (reruns the pipeline with a hook between passes) and --time-passes
    (the timings recorded by the one compile `prog` already did)."""
    from g2pl.compiler.pipeline import compile_module, dump_stage

    want = set(a.print_ir_after or [])
    if want:
        def hook(name: str, unit) -> None:
            if "all" in want or name in want:
                print(f"=== after {name} ===", file=sys.stderr)
                print(dump_stage(unit), file=sys.stderr)

        compile_module(prog.module, entry, opt=a.opt, disable=tuple(a.disable), after_pass=hook,
                       verify=a.verify)
    if a.time_passes:
        print("=== pass timings ===", file=sys.stderr)
        for name, t in prog.compilation(entry).pass_times.items():
            print(f"  {name:<10} {t * 1000:8.3f} ms", file=sys.stderr)



def _parse_kv(items: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for it in items:
        if "=" not in it:
            raise G2PLError(f"--arg `{it}`: expected NAME=VALUE")
        k, v = it.split("=", 1)
        k = k.strip()
        if not k.isidentifier():
            raise G2PLError(f"--arg `{it}`: `{k}` is not a parameter name")
        if k in out:
            raise G2PLError(f"--arg `{k}` given twice")
        out[k] = v
    return out


def _n(k: int, word: str) -> str:
    return f"{k} {word}{'' if k == 1 else 's'}"


def _summarize(v: dict, count: int, limit: int = 8) -> str:
    """One line for one returned value: `v` is its --output entry (possibly only its first `limit`
    entries, see g2pl.results.interop.value_heads) and `count` how many entries the whole value lists."""
    val, kind, ty = v["value"], v["kind"], v["type"]
    more = ", ..." if count > limit else ""
    if kind == "scalar":
        return f"{v['name']} ({ty}) = {val}"
    if kind == "vertex" and ty == "bool":
        head = ", ".join(map(str, val[:limit])) + more
        return f"{v['name']} (vertex set) = {count} {'vertex' if count == 1 else 'vertices'} {{{head}}}"
    if kind == "vertex":
        items = list(val.items())
        head = ", ".join(f"{k}: {x}" for k, x in items[:limit]) + more
        return f"{v['name']} (vertex graph of {ty}) = {{{head}}}"
    if ty == "bool":
        head = ", ".join(f"({a},{b})" for a, b in val[:limit]) + more
        return f"{v['name']} (edge set) = {_n(count, 'edge')} {{{head}}}"
    head = ", ".join(f"({a},{b}): {x}" for a, b, x in val[:limit]) + more
    return f"{v['name']} (edge graph of {ty}) = {{{head}}}"


def _plan_summary(prog, entry: str) -> str:
    plan = prog.compilation(entry).plan
    lines = [f"plan: {len(plan.states)} states, {len(plan.exchange_states())} end with an exchange "
             f"(-O{plan.opt_level}; `g2pl plan` shows it all)"]
    for s in plan.exchange_states():
        for x in s.exchange:
            lines.append(f"  state {s.id:>3} (line {x.instr.span.line}): {x.action()}")
    return "\n".join(lines)


def _mpi_comm():
    """The MPI communicator when this process is one of several ranks, else None: MPI itself says which
    (see `join_world`), wherever a launcher's variables show there is an MPI job to ask."""
    from g2pl.runtime.mpi import join_world

    return join_world()


def read_options(a: argparse.Namespace) -> ReadOptions:
    """The file options of `g2pl run` / `g2pl convert` (--vertices, --header, --mtx-base), as loaders take them."""
    from g2pl.graph.loaders import ReadOptions

    return ReadOptions(vertices=a.vertices, header=a.header, mtx_base=a.mtx_base)


def _graph_file(spec: str) -> str | None:
    """The file a --graph argument reads (None for a generator), so no output overwrites it."""
    from g2pl.graph.loaders import looks_like_generator

    return None if looks_like_generator(spec) and not os.path.exists(spec) else spec


def _graph_files(a: argparse.Namespace) -> list[tuple[str, str]]:
    """Every file the graph is read from, as (what, path): the --graph file, a --vertices file, and
    the vertex and properties files beside a Graphalytics NAME.e, so no output overwrites any."""
    spec = _graph_file(a.graph)
    if spec is None:
        return []
    files = [("graph file", spec)]
    if getattr(a, "vertices", None):
        files.append(("--vertices file", a.vertices))
    stem, ext = os.path.splitext(spec)
    if ext.lower() == ".e":
        files += [("vertex file", stem + ".v"), ("properties file", stem + ".properties")]
    return files


def _write_json(path: str, data: dict) -> None:
    """A JSON result to a file (atomically) or, for `-`, to standard output."""
    if path == "-":
        print(json.dumps(data, indent=1))
        sys.stdout.flush()
        return
    from g2pl.io.output_files import write_atomic

    write_atomic(path, json.dumps(data, indent=1))


def _write_values(a: argparse.Namespace, res, comm, quiet: bool) -> list[tuple[dict, int]] | None:
    """--output and --output-dir, written from every rank at once (g2pl.results.streamed: with several
    ranks no rank gathers the values); returns the summary's heads of the values (rank 0, unless quiet).

    A failure while writing ends every rank alike (the writers agree on it), except one this rank
    meets alone outside them, which stops every rank as a failure during the run does."""
    from g2pl.results.interop import value_heads
    from g2pl.results.streamed import local_shares, share_heads, write_output, write_output_dir

    try:
        shares = res.parts if res.parts is not None else local_shares(res)
        if a.output is not None:
            write_output(a.output, res.entry, shares, comm, fmt=a.output_format)
        if a.output_dir is not None:
            write_output_dir(a.output_dir, res.entry, shares, comm, fmt=a.output_format or "json")
        if quiet:
            return None
        return value_heads(res, 8) if res.parts is None else share_heads(shares, comm, 8)
    except G2PLError:
        raise
    except Exception as exc:
        if comm is None or comm.size == 1:
            raise
        if a.debug:
            traceback.print_exc()
        print(f"g2pl: rank {comm.rank}: failure writing the output: {type(exc).__name__}: {exc}", file=sys.stderr)
        sys.stderr.flush()
        comm.abort(1)
        return None


def run(a: argparse.Namespace) -> int:
    if a.np < 1:
        raise G2PLError(f"--np {a.np}: expected a positive number of ranks", file="g2pl run")
    if a.backend == "cupy":
        from g2pl.runtime.cupy_backend import import_cupy

        import_cupy()  # exit 2 before anything is loaded: CuPy missing, or no CUDA device
    if a.max_supersteps is not None and a.max_supersteps < 1:
        raise G2PLError(f"--max-supersteps {a.max_supersteps}: expected a positive number", file="g2pl run")
    if a.output == "-" and a.stats == "-":
        raise G2PLError("--output - and --stats -: only one of them can write to standard output", file="g2pl run")
    from g2pl.io.output_files import check_output_dir, check_outputs

    check_outputs([("--output", a.output), ("--stats", a.stats), ("--plot", a.plot)],
                  [a.program, *(path for _what, path in _graph_files(a))], "g2pl run")
    from g2pl.results.formats import format_of, require

    if a.output is not None:
        format_of(a.output, a.output_format)  # exit 2 before the run: an unknown extension, pyarrow missing
    if a.output_format is not None:
        require(a.output_format)
    check_output_dir("--output-dir", a.output_dir,
                     [("program", a.program), *_graph_files(a), ("--output file", a.output),
                      ("--stats file", a.stats), ("--plot file", a.plot), ("--checkpoint directory", a.checkpoint),
                      ("--resume directory", a.resume)], "g2pl run")
    from g2pl.runtime.checkpoint import check_directory

    for flag, d in (("--checkpoint", a.checkpoint), ("--resume", a.resume)):
        if d is not None:
            check_directory(d, flag == "--resume", flag)
    quiet = a.quiet or "-" in (a.output, a.stats)  # standard output carries the JSON alone
    if a.plot:
        check_plot_path(a.plot)
    from g2pl.runtime.grid import routed

    comm = routed(_mpi_comm(), a.partition)  # --partition 2d: every exchange, loading included, over the grid
    if comm is None and a.np > 1:
        from g2pl.runtime.supervisor import relaunch

        return relaunch(a.np, a.argv, RANK_ENTRY, time_limit=a.time_limit)  # supervised: see supervisor.py
    rank0 = comm is None or comm.rank == 0
    quiet_on_this_rank(not rank0)
    prog = _compile(a, warn=rank0)
    entry = prog.entry_name(a.entry)
    args = _parse_kv(a.arg)
    from g2pl.api import check_vertex_args, parse_args

    parse_args(prog.params(entry), args, entry)  # fail on bad arguments before loading a big graph
    from g2pl.graph import alloc

    alloc.tune()  # before loading: the loader's big temporaries are reused too
    graph, failure = None, None
    try:
        if comm is not None:  # every rank reads or draws its own share: no rank holds the whole graph
            from g2pl.runtime.ingest import entry_routes_needed, load

            graph = load(comm, a.graph, directed=a.directed, seed=a.seed, renumber=a.renumber,
                         entry_routes=entry_routes_needed(prog.load(entry)), read=read_options(a))
        else:
            from g2pl.api import timed_load

            graph = timed_load(a.graph, directed=a.directed, seed=a.seed, read=read_options(a))
        check_vertex_args(prog.params(entry), parse_args(prog.params(entry), args, entry), graph)
    except G2PLError as err:  # raised alike on every rank
        failure = err.with_context(file=a.graph)
    if failure is not None:
        if not rank0:
            return failure.exit_status
        raise failure
    if rank0 and not quiet:
        print(graph.summary())
        if a.show_plan:
            print(_plan_summary(prog, entry))
        sys.stdout.flush()
    progress = None
    if rank0 and not quiet:
        progress = Progress(ranks=1 if comm is None else comm.size, defer_final=True)
    finished = False
    try:
        res = prog.run(graph, args=args, backend=a.backend, seed=a.seed, entry=entry,
                       max_supersteps=a.max_supersteps, comm=comm,
                       renumber=a.renumber, progress=progress,
                       checkpoint=a.checkpoint, checkpoint_every=a.checkpoint_every, resume=a.resume,
                       time_limit=a.time_limit, gather=False, partition=a.partition)  # several ranks: the values are written from each
        finished = True
    except RunStopped as stop:  # --max-supersteps / --time-limit: the partial statistics are kept
        if rank0 and a.stats is not None and stop.stats is not None:
            _write_json(a.stats, stop.stats)
        raise
    except G2PLError:
        raise  # every rank meets these alike (e.g. a bad checkpoint)
    except Exception as exc:  # a failure on this rank alone: report it and stop every rank
        if comm is None:
            raise
        if progress is not None:
            progress.close()
        if a.debug:
            traceback.print_exc()
        print(f"g2pl: rank {comm.rank}: runtime failure: {type(exc).__name__}: {exc}", file=sys.stderr)
        sys.stderr.flush()
        comm.abort(1)
        return 1
    finally:
        if progress is not None:
            progress.close(ok=finished, totals=res.stats if finished and rank0 else None)
    heads = _write_values(a, res, comm, quiet)
    if not rank0:
        return 0
    if a.stats is not None:
        _write_json(a.stats, res.stats)
    if a.plot:
        plot_stats(res.stats, a.plot)
    if heads is not None:
        for v, count in heads:
            print(_summarize(v, count))
        s = res.stats
        print(f"stats: {_n(s['supersteps'], 'superstep')}, {_n(s['messages'], 'message')}, "
              f"{_n(s['bytes'], 'byte')} across ranks, {_n(s['ranks'], 'rank')}, backend {s['backend']}, "
              f"{s['time_s']:.3f} s")
    return 0


def plan(a: argparse.Namespace) -> int:
    import g2pl
    from g2pl.compiler.dot import find_dot, plan_to_dot, render_svg

    if a.svg:
        find_dot()  # before compiling: a missing Graphviz is a usage error (exit 2)
    from g2pl.io.output_files import check_outputs, write_atomic

    check_outputs([("--dot", a.dot), ("--svg", a.svg)], [a.program], "g2pl plan")
    prog = g2pl.compile(Path(a.program), opt=a.opt, disable=a.disable)
    entry = prog.entry_name(a.entry)
    print(prog.plan_text(entry))
    if a.dot is not None or a.svg is not None:
        dot = plan_to_dot(prog.compilation(entry).plan)
        if a.dot is not None:
            write_atomic(a.dot, dot)
        if a.svg is not None:
            render_svg(dot, a.svg)
    return 0


def check(a: argparse.Namespace) -> int:
    """Every error of the program at once (lowering recovers per statement); syntax errors stop at the first."""
    from g2pl.api import Program, read_program_file
    from g2pl.compiler.parser import parse
    from g2pl.compiler.pipeline import check_module

    text, name = read_program_file(a.program)
    module = parse(text, name)
    errors = check_module(module)
    if errors:
        for err in errors:
            if a.debug:
                traceback.print_exception(err)
            print(err.render(), file=sys.stderr)
        if len(errors) > 1:
            print(f"{name}: {len(errors)} errors", file=sys.stderr)
        return 2
    prog = Program(module)
    print(f"{a.program}: ok ({', '.join(prog.procedures)})")
    return 0


def explain(a: argparse.Namespace) -> int:
    import g2pl
    from g2pl.compiler.explain import explain as explain_program

    prog = g2pl.compile(Path(a.program), opt=a.opt, disable=a.disable)
    entry = prog.entry_name(a.entry)
    print(explain_program(prog.module, prog.compilation(entry)))
    return 0


def convert(a: argparse.Namespace) -> int:
    """Load (or generate) a graph once and save it as a .g2g file that loads without rebuilding."""
    import g2pl
    from g2pl.graph.binary import EXT, regular_output_problem, save_graph
    from g2pl.io.output_files import check_outputs

    if not str(a.out).endswith(EXT):
        raise G2PLError(f"OUT {shorten(str(a.out))!r}: the output is a binary graph and its name must end in {EXT}",
                        file="g2pl convert")
    check_outputs([("OUT", a.out)], [path for _what, path in _graph_files(a)], "g2pl convert")
    why = regular_output_problem(a.out)  # a FIFO or device (/dev/null): refused, not replaced
    if why is not None:
        raise G2PLError(f"OUT {a.out}: {why}", file="g2pl convert")
    from g2pl.graph.loaders import parse_graph_spec

    parse_graph_spec(a.graph)  # a bad graph argument fails before anything is loaded
    read = read_options(a)
    graph = g2pl.load_graph(a.graph, directed=a.directed, seed=a.seed, vertices=read.vertices, header=read.header,
                            mtx_base=read.mtx_base)
    size = save_graph(graph, a.out)
    if not a.quiet:
        print(graph.summary())
        print(f"wrote {a.out} ({size / 2**20:.1f} MiB); load it with --graph {a.out}"
              + (" --directed" if graph.directed else ""))
    return 0
