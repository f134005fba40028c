"""How every command ends: one line on stderr and an exit status, never a traceback (unless --debug).

Exit status: 0 success, 1 runtime failure (and internal errors), 2 bad input (program, graph,
arguments), 130 after Ctrl-C.  `g2pl._ctrl_c` looks for `guard` on the stack to know that a
KeyboardInterrupt will be caught here.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import traceback
from collections.abc import Callable

from g2pl.errors import G2PLError, clean

# With several MPI ranks, errors every rank meets alike (bad program, arguments, graph) print on rank 0 only.
_quiet_rank = False


def quiet_on_this_rank(quiet: bool) -> None:
    """Whether this rank keeps the G2PL errors every rank meets alike to itself (rank 0 prints them)."""
    global _quiet_rank
    _quiet_rank = quiet


def _is_plan_error(exc: Exception) -> bool:
    """A broken invariant of the compiler's IR or plan (`g2plc --verify`): a compiler bug."""
    from g2pl.compiler.verify import PlanError

    return isinstance(exc, PlanError)


def guard(fn: Callable[[argparse.Namespace], int], args: argparse.Namespace, tool: str = "g2pl") -> int:
    """Run one command and turn whatever it raises into one line and an exit status."""
    try:
        return fn(args)
    except G2PLError as err:
        if getattr(args, "debug", False):
            traceback.print_exc()
        # errors about arguments or the run itself are reported against the program
        err.with_context(file=getattr(args, "program", None))
        if not _quiet_rank:
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
        if _is_plan_error(exc):
            what = clean(" ".join(str(exc).split()), keep_newlines=False)  # one line
            print(f"{tool}: internal compiler error: {what} (a bug in g2pl; run with --debug for a traceback)",
                  file=sys.stderr)
        else:
            print(f"g2pl: internal error: {type(exc).__name__}: {exc} (run with --debug for a traceback)",
                  file=sys.stderr)
        return 1
