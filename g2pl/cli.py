"""Command-line tools `g2plc` and `g2pl` (docs/language.md, "Command line and exit status"; docs/cli.md).

Exit status: 0 success, 1 runtime failure, 2 bad input (program, graph,
arguments).  Errors are one message on stderr naming the file (and for
programs `line:col`, the source line and a caret); a Python traceback is
shown only with --debug.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import textwrap
import traceback
from collections.abc import Callable
from pathlib import Path

from g2pl.compiler.passes import PASS_NAMES as PASS_CHOICES  # the pipeline's own list
from g2pl.errors import G2PLError, RunStopped, clean
from g2pl.numtext import beyond_int64, shorten

# With several MPI ranks, errors every rank meets alike (bad program, arguments, graph) print on rank 0 only.
_QUIET_RANK = False


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


def _guard(fn: Callable[[argparse.Namespace], int], args: argparse.Namespace) -> int:
    try:
        return fn(args)
    except G2PLError as err:
        if getattr(args, "debug", False):
            traceback.print_exc()
        # errors about arguments or the run itself are reported against the program
        err.with_context(file=getattr(args, "program", None))
        if not _QUIET_RANK:
            print(err.render(), file=sys.stderr)
        return err.exit_status
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except OSError as exc:  # the environment, not the program: a full disk under --output -, a closed stream
        if getattr(args, "debug", False):
            traceback.print_exc()
        what = f"cannot use {clean(str(exc.filename), keep_newlines=False)}" if exc.filename else \
            "cannot write the output"
        if not exc.filename:  # what stdout still buffers would fail again at exit: let it go nowhere
            with contextlib.suppress(OSError, ValueError):
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        print(f"g2pl: error: {what}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    except Exception as exc:  # noqa: BLE001 - last line of defence: no traceback unless --debug
        if getattr(args, "debug", False):
            traceback.print_exc()
        print(f"g2pl: internal error: {type(exc).__name__}: {exc} (run with --debug for a traceback)",
              file=sys.stderr)
        return 1


# ---------------------------------------------------------------- g2plc


def _g2plc(a: argparse.Namespace) -> int:
    import g2pl
    from g2pl.compiler import ast as A
    from g2pl.output_files import check_outputs, write_atomic

    default_out = None if a.output is not None or a.emit else Path(Path(a.program).stem + ".py")
    check_outputs([("-o", a.output if a.output is not None else default_out)], [a.program], "g2plc")
    prog = g2pl.compile(Path(a.program), opt=a.opt, disable=a.disable)
    entry = prog.entry_name(a.entry) if len(prog.procedures) > 1 or a.entry else prog.procedures[0]
    if a.print_ir_after or a.time_passes:
        _show_passes(prog, entry, a)
    if a.emit == "ast":
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

        compile_module(prog.module, entry, opt=a.opt, disable=tuple(a.disable), after_pass=hook)
    if a.time_passes:
        print("=== pass timings ===", file=sys.stderr)
        for name, t in prog.compilation(entry).pass_times.items():
            print(f"  {name:<10} {t * 1000:8.3f} ms", file=sys.stderr)


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
    _add_opt_flags(p)
    return p


def g2plc_main(argv: list[str] | None = None) -> int:
    a = g2plc_parser().parse_args(argv)
    return _guard(_g2plc, a)


# ---------------------------------------------------------------- g2pl run / plan / check


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
    entries, see interop.value_heads) and `count` how many entries the whole value lists."""
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
    from g2pl.compiler.plan import describe_exchange

    for s in plan.exchange_states():
        for x in s.exchange:
            lines.append(f"  state {s.id:>3} (line {x.instr.span.line}): {describe_exchange(x, plan.proc)}")
    return "\n".join(lines)


def _mpi_comm():
    """The MPI communicator when this process is one of several ranks, else None."""
    from g2pl.runtime.mpi import MPIComm, launched_by_mpiexec

    if not launched_by_mpiexec():
        return None
    try:
        return MPIComm()
    except ImportError:
        raise G2PLError("started under mpiexec, but mpi4py is not installed (`pip install '.[mpi]'`)") from None


def _graph_file(spec: str) -> str | None:
    """The file a --graph argument reads (None for a generator), so no output overwrites it."""
    from g2pl.graph.loaders import looks_like_generator

    return None if looks_like_generator(spec) and not os.path.exists(spec) else spec


def _write_json(path: str, data: dict) -> None:
    """A JSON result to a file (atomically) or, for `-`, to standard output."""
    if path == "-":
        print(json.dumps(data, indent=1))
        sys.stdout.flush()
        return
    from g2pl.output_files import write_atomic

    write_atomic(path, json.dumps(data, indent=1))


def _run(a: argparse.Namespace) -> int:
    global _QUIET_RANK
    import g2pl

    if a.np < 1:
        raise G2PLError(f"--np {a.np}: expected a positive number of ranks", file="g2pl run")
    if a.backend == "cupy":
        from g2pl.runtime.cupy_backend import import_cupy

        import_cupy()  # exit 2 before anything is loaded: CuPy missing, or no CUDA device
    if a.max_supersteps is not None and a.max_supersteps < 1:
        raise G2PLError(f"--max-supersteps {a.max_supersteps}: expected a positive number", file="g2pl run")
    if a.output == "-" and a.stats == "-":
        raise G2PLError("--output - and --stats -: only one of them can write to standard output", file="g2pl run")
    from g2pl.output_files import check_outputs

    check_outputs([("--output", a.output), ("--stats", a.stats), ("--plot", a.plot)],
                  [a.program, _graph_file(a.graph)], "g2pl run")
    from g2pl.runtime.checkpoint import check_directory

    for flag, d in (("--checkpoint", a.checkpoint), ("--resume", a.resume)):
        if d is not None:
            check_directory(d, flag == "--resume", flag)
    quiet = a.quiet or "-" in (a.output, a.stats)  # standard output carries the JSON alone
    if a.plot:
        from g2pl.plot import check_plot_path

        check_plot_path(a.plot)
    comm = _mpi_comm()
    if comm is None and a.np > 1:
        from g2pl.runtime.launch import relaunch

        return relaunch(a.np, a.argv, time_limit=a.time_limit)  # supervised: see launch.py
    rank0 = comm is None or comm.rank == 0
    _QUIET_RANK = not rank0
    prog = g2pl.compile(Path(a.program), opt=a.opt, disable=a.disable)
    entry = prog.entry_name(a.entry)
    args = _parse_kv(a.arg)
    from g2pl.api import check_vertex_args, parse_args

    parse_args(prog.params(entry), args, entry)  # fail on bad arguments before loading a big graph
    from g2pl.runtime import alloc

    alloc.tune()  # before loading: the loader's big temporaries are reused too
    graph, failure = None, None
    if rank0:
        try:
            graph = g2pl.load_graph(a.graph, directed=a.directed, seed=a.seed)
            check_vertex_args(prog.params(entry), parse_args(prog.params(entry), args, entry), graph)
        except G2PLError as err:
            failure = err.with_context(file=a.graph)
    if comm is not None:
        status = comm.bcast(failure.exit_status if failure else 0)
        if status and not rank0:
            return status
    if failure is not None:
        raise failure
    if rank0 and not quiet:
        print(graph.summary())
        if a.show_plan:
            print(_plan_summary(prog, entry))
        sys.stdout.flush()
    progress = None
    if rank0 and not quiet:
        from g2pl.progress import Progress

        progress = Progress(ranks=1 if comm is None else comm.size, defer_final=True)
    finished = False
    try:
        res = prog.run(graph, args=args, backend=a.backend, seed=a.seed, entry=entry,
                       max_supersteps=a.max_supersteps, comm=comm,
                       renumber=a.renumber, progress=progress,
                       checkpoint=a.checkpoint, checkpoint_every=a.checkpoint_every, resume=a.resume,
                       time_limit=a.time_limit)
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
    if not rank0:
        return 0
    for path, data in ((a.output, res.output), (a.stats, lambda: res.stats)):
        if path is not None:
            _write_json(path, data())
    if a.plot:
        from g2pl.plot import plot_stats

        plot_stats(res.stats, a.plot)
    if not quiet:
        from g2pl.interop import value_heads

        for v, count in value_heads(res, 8):
            print(_summarize(v, count))
        s = res.stats
        print(f"stats: {_n(s['supersteps'], 'superstep')}, {_n(s['messages'], 'message')}, "
              f"{_n(s['bytes'], 'byte')} across ranks, {_n(s['ranks'], 'rank')}, backend {s['backend']}, "
              f"{s['time_s']:.3f} s")
    return 0


def _plan(a: argparse.Namespace) -> int:
    import g2pl
    from g2pl.compiler.dot import find_dot, plan_to_dot, render_svg

    if a.svg:
        find_dot()  # before compiling: a missing Graphviz is a usage error (exit 2)
    from g2pl.output_files import check_outputs, write_atomic

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


def _check(a: argparse.Namespace) -> int:
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


def _explain(a: argparse.Namespace) -> int:
    import g2pl
    from g2pl.compiler.explain import explain

    prog = g2pl.compile(Path(a.program), opt=a.opt, disable=a.disable)
    entry = prog.entry_name(a.entry)
    print(explain(prog.module, prog.compilation(entry)))
    return 0


def _convert(a: argparse.Namespace) -> int:
    """Load (or generate) a graph once and save it as a .g2g file that loads without rebuilding."""
    import g2pl
    from g2pl.graph.binary import EXT, regular_output_problem, save_graph
    from g2pl.output_files import check_outputs

    if not str(a.out).endswith(EXT):
        raise G2PLError(f"OUT {shorten(str(a.out))!r}: the output is a binary graph and its name must end in {EXT}",
                        file="g2pl convert")
    check_outputs([("OUT", a.out)], [_graph_file(a.graph)], "g2pl convert")
    why = regular_output_problem(a.out)  # a FIFO or device (/dev/null): refused, not replaced
    if why is not None:
        raise G2PLError(f"OUT {a.out}: {why}", file="g2pl convert")
    from g2pl.graph.loaders import parse_graph_spec

    parse_graph_spec(a.graph)  # a bad graph argument fails before anything is loaded
    graph = g2pl.load_graph(a.graph, directed=a.directed, seed=a.seed)
    size = save_graph(graph, a.out)
    if not a.quiet:
        print(graph.summary())
        print(f"wrote {a.out} ({size / 2**20:.1f} MiB); load it with --graph {a.out}"
              + (" --directed" if a.directed else ""))
    return 0


def g2pl_parser() -> argparse.ArgumentParser:
    """The argument parser of `g2pl` and its subcommands (also rendered into docs/cli.md)."""
    p = _Parser(prog="g2pl", description="Run and inspect G2PL programs.")
    sub = p.add_subparsers(dest="cmd", required=True, parser_class=_Parser)

    r = sub.add_parser("run", help="compile and run a program on a graph")
    r.add_argument("program", help="the .g2pl program")
    r.add_argument("--graph", required=True,
                   help="edge list (.txt .el .tsv .csv), .mtx, .npz, .g2g (from `g2pl convert`), or "
                        "kron:SCALE[:EF] | ws:N:K:P | er:N:M")
    r.add_argument("--directed", action="store_true", help="keep edge direction (default: undirected)")
    r.add_argument("--arg", action="append", default=[], metavar="NAME=VALUE", help="procedure argument")
    r.add_argument("--np", type=_int_value, default=1, metavar="N",
                   help="number of MPI ranks, capped at 4 per CPU core (a cap of at least 8); "
                        "the environment variable G2PL_MAX_RANKS sets another cap")
    r.add_argument("--backend", choices=("numpy", "cupy"), default="numpy",
                   help="array backend: numpy (CPU) or cupy (one CUDA device per rank; needs CuPy 14)")
    r.add_argument("--renumber", choices=("auto", "none", "degree"), default="auto",
                   help="order each rank's vertices by degree for locality (results keep original IDs); "
                        "auto: when degrees are skewed")
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
    r.add_argument("--output", metavar="FILE.json", help="write returned values as JSON (`-`: to standard output)")
    r.add_argument("--stats", metavar="FILE.json", help="write run statistics as JSON (`-`: to standard output)")
    r.add_argument("--show-plan", action="store_true", help="print a summary of the superstep plan")
    r.add_argument("--plot", metavar="FILE.png",
                   help="draw time, messages, bytes and active vertices per superstep (needs matplotlib)")
    r.add_argument("--quiet", action="store_true",
                   help="print nothing on success, and no progress (progress goes to stderr, rank 0 only)")
    _add_opt_flags(r)
    r.set_defaults(fn=_run)

    pl = sub.add_parser("plan", help="print the superstep plan")
    pl.add_argument("program", help="the .g2pl program")
    pl.add_argument("--dot", metavar="FILE.dot", help="also write the state machine as Graphviz dot")
    pl.add_argument("--svg", metavar="FILE.svg", help="also draw the state machine as SVG (needs Graphviz `dot`)")
    _add_opt_flags(pl)
    pl.set_defaults(fn=_plan)

    c = sub.add_parser("check", help="parse and type-check a program, reporting every error")
    c.add_argument("program", help="the .g2pl program")
    c.add_argument("--debug", action="store_true", help="show Python tracebacks on errors")
    c.set_defaults(fn=_check)

    cv = sub.add_parser("convert", help="build a graph once and save it as a .g2g file that loads without rebuilding")
    cv.add_argument("graph", metavar="GRAPH",
                    help="edge list (.txt .el .tsv .csv), .mtx, .npz, .g2g, or kron:SCALE[:EF] | ws:N:K:P | er:N:M")
    cv.add_argument("out", metavar="OUT", help="the binary graph file to write (name ends in .g2g)")
    cv.add_argument("--directed", action="store_true",
                    help="keep edge direction (default: undirected); runs on the file then need --directed")
    cv.add_argument("--seed", type=_int_value, default=0, help="seed for generators")
    cv.add_argument("--quiet", action="store_true", help="print nothing on success")
    cv.add_argument("--debug", action="store_true", help="show Python tracebacks on errors")
    cv.set_defaults(fn=_convert)

    e = sub.add_parser("explain", help="per source statement: where it runs, what it costs, what optimized it")
    e.add_argument("program", help="the .g2pl program")
    _add_opt_flags(e)
    e.set_defaults(fn=_explain)
    return p


def g2pl_main(argv: list[str] | None = None) -> int:
    a = g2pl_parser().parse_args(argv)
    a.argv = list(sys.argv[1:] if argv is None else argv)
    return _guard(a.fn, a)


# ---------------------------------------------------------------- docs/cli.md


def _md(text: str) -> str:
    """Text for a markdown table cell."""
    return text.replace("|", "\\|").replace("\n", " ")


def _usage_item(act: argparse.Action) -> str:
    if not act.option_strings:
        return act.metavar or act.dest.upper()
    opt = max(act.option_strings, key=len)
    if len(opt) == 2 and act.choices is not None:  # -O0|-O1|-O2
        item = "|".join(f"{opt}{c}" for c in act.choices)
    elif act.nargs == 0:
        item = opt
    else:
        item = f"{opt} {_value(act)}"
    if act.required:
        return item
    return f"[{item}]" + ("..." if isinstance(act, argparse._AppendAction) else "")


def _value(act: argparse.Action) -> str:
    if act.nargs == 0:
        return ""
    if act.metavar:
        return str(act.metavar)
    if act.choices is not None:
        return "|".join(map(str, act.choices))
    return act.dest.upper()


def _section(title: str, p: argparse.ArgumentParser, blurb: str | None) -> list[str]:
    acts = [a for a in p._actions if not isinstance(a, (argparse._HelpAction, argparse._SubParsersAction))]
    items = [_usage_item(a) for a in acts if not a.option_strings] + [_usage_item(a) for a in acts if a.option_strings]
    usage = textwrap.wrap(" ".join([p.prog] + items), 100, subsequent_indent=" " * (len(p.prog) + 1),
                          break_on_hyphens=False, break_long_words=False)
    out = [f"## `{title}`", "", blurb or p.description or "", "", "```", *usage, "```", "",
           "| argument | value | default | description |", "|---|---|---|---|"]
    for a in acts:
        names = ", ".join(f"`{o}`" for o in a.option_strings) if a.option_strings else f"`{a.dest}`"
        if len(a.option_strings) == 1 and len(a.option_strings[0]) == 2 and a.choices is not None:
            names = ", ".join(f"`{a.option_strings[0]}{c}`" for c in a.choices)
            value = ""
        else:
            value = f"`{_md(_value(a))}`" if _value(a) else ""
        default = a.default
        hidden = default is None or default is False or default == [] or default == argparse.SUPPRESS
        shown = "" if hidden or not a.option_strings else f"`{default}`"
        desc = a.help or ""
        if a.choices is not None and a.metavar and not all(str(c) in desc for c in a.choices):
            desc += f" (one of {', '.join(f'`{c}`' for c in a.choices)})"
        if a.required and a.option_strings:
            desc = "required; " + desc
        out.append(f"| {names} | {value} | {shown} | {_md(desc)} |")
    return out + [""]


def cli_reference() -> str:
    """docs/cli.md: every option of `g2plc` and each `g2pl` subcommand, from the parsers themselves."""
    out = [
        "# Command-line reference",
        "",
        "<!-- Generated from the argument parsers by `g2pl.cli.cli_reference()`; do not edit by hand.",
        "     Rewrite it with `make docs`; tests/test_ux.py fails when it is out of date. -->",
        "",
        "Exit status of every command: 0 success, 1 runtime failure, 2 bad input (program, graph, arguments),",
        "with one `error:` message on stderr naming the file (for program errors `FILE:LINE:COL`, the",
        "source line and a caret); `--debug` adds the Python traceback. Results go to stdout; progress,",
        "messages and errors to stderr. `-O0`, `-O1`, `-O2` select the optimization level (default `-O2`).",
        "",
    ]
    out += _section("g2plc", g2plc_parser(), None)
    g2pl = g2pl_parser()
    out += ["## `g2pl`", "", g2pl.description or "", ""]
    for act in g2pl._actions:
        if isinstance(act, argparse._SubParsersAction):
            helps = {c.dest: c.help for c in act._choices_actions}
            out += [f"* [`g2pl {name}`](#g2pl-{name}): {helps.get(name) or ''}" for name in act.choices] + [""]
            for name, sp in act.choices.items():
                out += _section(f"g2pl {name}", sp, (helps.get(name) or "").capitalize() + ".")
    return "\n".join(out).rstrip() + "\n"


def _entry(fn: Callable[[list[str] | None], int]) -> None:  # pragma: no cover - console-script shim
    sys.exit(fn(None))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(g2pl_main())
