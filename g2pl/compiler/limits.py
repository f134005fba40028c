"""The compiler's size limits, and a deep stack for its recursive walks (docs/language.md, "Limits").

The parse-tree transformer, the lowering and the IR walkers recurse over
the program's nesting: a 1,000-term sum is 1,000 nested `+` nodes, 1,000
nested `if`s are 2,000 nested blocks and statements.  Python's default
recursion limit (1,000 frames) and the main thread's C stack do not fit
that, and raising the limit on the main thread risks a segfault instead of
an error.  So every entry point of the compiler runs under `deep_stack`: in
a worker thread with a stack of its own (`STACK_BYTES`) and a recursion
limit that stack can hold, while `MAX_NESTING` and `MAX_EXPR_DEPTH` bound
the nesting of what is walked, so a program too deep gets one exit-2
error with a position instead.
"""

from __future__ import annotations

import functools
import gc
import sys
import threading
from collections.abc import Callable
from typing import ParamSpec, TypeVar

#: Deepest parse tree accepted (nested blocks, statements and expressions), checked right after
#: parsing.  1,000 nested `if`s take about 2,000 levels.
MAX_NESTING = 5_000
#: Deepest expression lowered, after inlining functions (a 1,000-term sum is 1,000 levels).
MAX_EXPR_DEPTH = 2_000
#: Most AST nodes the function calls of one procedure may expand to, all calls together.
#: Functions are macros, so `f1(x) = f0(x) * f0(x); f2(x) = f1(x) * f1(x); ...` doubles per level:
#: without a budget a 1 KB program never finishes compiling.  The largest expansion among the
#: programs in programs/, the tests and 3,000 fuzzer programs is 153 nodes; the budget is over a
#: hundred times that, and reaching it takes about 0.1 s.
INLINE_BUDGET = 20_000
#: Deepest local expression left in the IR: deeper ones are split into temporaries, so the walkers
#: of the passes stay shallow and the generated Python stays far below its parser's nesting limit
#: (200 parentheses).
MAX_IR_DEPTH = 32
#: Deepest IR expression that cannot be split (inside a neighbourhood aggregation, or a `?:` branch
#: calling rand()): above this the program is refused, since Python could not parse the module.
MAX_UNSPLIT_DEPTH = 150

#: Recursion limit and C stack of the worker thread: about 25 frames per nesting level at the
#: limits above, at most a few hundred bytes of C stack per frame.
RECURSION_LIMIT = 200_000
STACK_BYTES = 512 * 1024 * 1024

_P = ParamSpec("_P")
_R = TypeVar("_R")
_local = threading.local()
_limit_lock = threading.Lock()
_users = 0
_saved_limit = 0
_gc_was_enabled = False


def _raise_limit() -> None:
    """Raise the (process-wide) recursion limit while any deep-stack worker runs, and pause the cyclic
    garbage collector: the compiler allocates much and frees little until it is done, so the collector's
    full passes, each over everything alive, made compiling a long program superlinear (a third of
    the time of 20,000 statements). What became cyclic garbage meanwhile is collected after."""
    global _users, _saved_limit, _gc_was_enabled
    with _limit_lock:
        if _users == 0:
            _saved_limit = sys.getrecursionlimit()
            sys.setrecursionlimit(max(_saved_limit, RECURSION_LIMIT))
            _gc_was_enabled = gc.isenabled()
            gc.disable()
        _users += 1


def _restore_limit() -> None:
    global _users
    with _limit_lock:
        _users -= 1
        if _users == 0:
            sys.setrecursionlimit(_saved_limit)
            if _gc_was_enabled:
                gc.enable()


def _start_worker(target: Callable[[], None]) -> threading.Thread | None:
    """A started daemon thread with a `STACK_BYTES` stack, or None where threads that large cannot be made."""
    with _limit_lock:
        old = threading.stack_size()
        try:
            threading.stack_size(STACK_BYTES)
            worker = threading.Thread(target=target, name="g2pl-compile", daemon=True)
            worker.start()
        except (RuntimeError, ValueError, MemoryError):
            return None
        finally:
            threading.stack_size(old)
    return worker


def deep_stack(fn: Callable[_P, _R]) -> Callable[_P, _R]:
    """Run `fn` on a thread with a deep stack (directly when already on one); results and
    exceptions pass through unchanged."""

    @functools.wraps(fn)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        if getattr(_local, "deep", False):
            return fn(*args, **kwargs)
        box: dict[str, object] = {}

        def target() -> None:
            _local.deep = True
            try:
                box["value"] = fn(*args, **kwargs)
            except BaseException as exc:  # noqa: BLE001 - handed to the calling thread as is
                box["error"] = exc

        _raise_limit()
        try:
            worker = _start_worker(target)
            if worker is not None:
                worker.join()
        finally:
            _restore_limit()
        if worker is None:
            return fn(*args, **kwargs)  # no big thread possible: the default stack and limits
        if "error" in box:
            raise box["error"]  # type: ignore[misc]
        return box["value"]  # type: ignore[return-value]

    return wrapper
