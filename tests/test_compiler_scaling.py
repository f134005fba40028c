"""Compile time grows linearly with the program: `g2pl check` of 4N statements takes about 4x the time
of N, not 16x.

Each check compares CPU times (best of a few runs, so a busy machine skews neither side much) of the
same program shape at two sizes, instead of asserting an absolute time. The shapes are those where
compile time once grew quadratically: one long procedure (the set of definitely assigned variables
was copied at every statement), the same statements in a loop, and many small procedures (the
source text was split into lines once per procedure and round of type inference).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from g2pl.api import Program
from g2pl.compiler.parser import parse
from g2pl.compiler.pipeline import check_module

N = 1000  # statements of the small program; the large one has 4N
MAX_RATIO = 6.0  # linear: about 4; quadratic: about 16 (the parse, linear, hides part of it)
RUNS = 3


def _kind(k: int) -> str:
    """What statement k of a long block assigns: mostly scalars (cheap to lower, so per-statement
    overhead shows), vertex comprehensions and now and then a neighbourhood aggregation."""
    if k % 80 == 2:
        return "H"
    return {0: "G", 8: "S"}.get(k % 16, "c")


def _statement(k: int, indent: str) -> str:
    kind = _kind(k)
    if kind == "G":
        return f"{indent}G{k} = {{ D[v] + {k % 7} | v <- V }};"
    if kind == "S":
        return f"{indent}S{k} = {{ D[v] > {k % 3} | v <- V, v in S0 }};"
    if kind == "H":
        return f"{indent}H{k} = {{ min [ D[u] | u <- nvals v ] | v <- V }};"
    prev = k - 1 if _kind(k - 1) == "c" else 0
    return f"{indent}c{k} = c{prev} + {k % 5};"


def long_procedure(n: int, loop: bool = False) -> str:
    """One procedure of n statements (inside a `while` loop with `loop`)."""
    lines = ["main(r: vid) {", "  D = { sum [ 1 | u <- nvals v ] | v <- V };", "  c0 = 0;", "  S0 = V;"]
    indent = "  "
    if loop:
        lines += ["  i = 0;", "  while (i < 3) {"]
        indent = "    "
    lines += [_statement(k, indent) for k in range(1, n + 1)]
    if loop:
        lines += ["    i = i + 1;", "  }"]
    lines += ["  return c0, D;", "}"]
    return "\n".join(lines) + "\n"


def many_procedures(n: int) -> str:
    """n statements in procedures of ten, each with a function of its own."""
    out = []
    for p in range(n // 10):
        out.append(f"f{p}(X) = {{ X[v] + {p % 5} | v <- V }};")
        out += [f"proc{p}(r: vid) {{", "  D = { sum [ 1 | u <- nvals v ] | v <- V };"]
        out += [f"  G{k} = f{p}(D);" if k % 3 == 0 else f"  c{k} = {k} + r;" for k in range(8)]
        out += ["  return D, c7;", "}"]
    out.append("main(r: vid) {\n  D = { 1 | v <- V };\n  return D;\n}")
    return "\n".join(out) + "\n"


def _check_cpu_seconds(text: str) -> float:
    """CPU time of what `g2pl check` does: parse, check every procedure, build the program."""
    t0 = time.process_time()
    module = parse(text, "scale.g2pl")
    assert check_module(module) == []
    Program(module)
    return time.process_time() - t0


def _best(text: str) -> float:
    return min(_check_cpu_seconds(text) for _ in range(RUNS))


@pytest.mark.parametrize("shape", [long_procedure, lambda n: long_procedure(n, loop=True), many_procedures],
                         ids=["long-procedure", "loop", "many-procedures"])
def test_check_time_grows_linearly(shape: Callable[[int], str]) -> None:
    small, large = shape(N), shape(4 * N)
    _check_cpu_seconds(small)  # warm up: the grammar, the templates, imports
    t_small, t_large = _best(small), _best(large)
    ratio = t_large / t_small
    assert ratio < MAX_RATIO, (f"checking {4 * N} statements took {t_large:.2f} s, {ratio:.1f}x the "
                               f"{t_small:.2f} s of {N}: compile time grows faster than the program")
