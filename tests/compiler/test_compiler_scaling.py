"""Compile time grows linearly with the program: `g2pl check` of 4N statements takes about 4x the time
of N, not 16x.

Each test compares the CPU time (best of a few runs, so a busy machine skews neither side much) of
checking the same program shape at two sizes, instead of asserting an absolute time. The shapes are
those where checking once grew quadratically: a long procedure, half of it in a loop (the set of
definitely assigned variables was copied at every statement), and many small procedures (the source
text was split into lines once per procedure and round of type inference). Parsing, linear and
slow, is left out of the timing: it would dilute a quadratic part at sizes a test can afford.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable

import pytest

from g2pl.compiler.ast import Module
from g2pl.compiler.parser import parse
from g2pl.compiler.pipeline import check_module

N = 1000  # statements of the small program; the large one has 4N
MAX_RATIO = 6.0  # linear: about 4; quadratic: 6.5 to 10 at these sizes, 16 in the limit
RUNS = 5  # the best of several: a pause of the machine during one run does not count


def _kind(k: int) -> str:
    """What statement k of a long block assigns: mostly scalars (cheap to lower, so per-statement
    overhead shows), vertex comprehensions and now and then a neighbourhood aggregation."""
    if k % 100 == 2:
        return "H"
    return {0: "G", 25: "S"}.get(k % 50, "c")


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


def long_procedure(n: int) -> str:
    """One procedure of n statements, the second half inside a `while` loop."""
    half = n // 2
    lines = ["main(r: vid) {", "  D = { sum [ 1 | u <- nvals v ] | v <- V };", "  c0 = 0;", "  S0 = V;"]
    lines += [_statement(k, "  ") for k in range(1, half + 1)]
    lines += ["  i = 0;", "  while (i < 3) {"]
    lines += [_statement(k, "    ") for k in range(half + 1, n + 1)]
    lines += ["    i = i + 1;", "  }", "  return c0, D;", "}"]
    return "\n".join(lines) + "\n"


def many_procedures(n: int) -> str:
    """n statements in procedures of two, and a function for every tenth."""
    out = []
    for p in range(n // 2):
        if p % 10 == 0:
            out.append(f"f{p}(X) = {{ X[v] + {p % 5} | v <- V }};")
            out.append(f"proc{p}() {{\n  D = {{ 1 | v <- V }};\n  G = f{p}(D);\n  return G;\n}}")
        else:
            out.append(f"proc{p}(r: int) {{\n  c = r + {p % 7};\n  d = c * 2;\n  return d;\n}}")
    out.append("main(r: vid) {\n  D = { 1 | v <- V };\n  return D;\n}")
    return "\n".join(out) + "\n"


def _check_cpu_seconds(module: Module) -> float:
    """CPU time of checking every procedure of `module` (what `g2pl check` does after parsing), with
    the cyclic garbage collector paused: its passes cost in proportion to every object the test process
    holds (thousands of earlier tests' in a full run), which is not the checker's growth."""
    gc.collect()
    gc.disable()
    try:
        t0 = time.process_time()
        errors = check_module(module)
        seconds = time.process_time() - t0
    finally:
        gc.enable()
    assert errors == []
    return seconds


@pytest.mark.parametrize(("shape", "n"), [(long_procedure, N), (many_procedures, N // 2)],
                         ids=["long-procedure", "many-procedures"])
def test_check_time_grows_linearly(shape: Callable[[int], str], n: int) -> None:
    small, large = parse(shape(n), "small.g2pl"), parse(shape(4 * n), "large.g2pl")
    _check_cpu_seconds(small)  # warm up: templates, imports
    t_small = min(_check_cpu_seconds(small) for _ in range(RUNS))
    t_large = min(_check_cpu_seconds(large) for _ in range(RUNS))
    ratio = t_large / t_small
    assert ratio < MAX_RATIO, (f"checking {4 * n} statements took {t_large:.2f} s, {ratio:.1f}x the "
                               f"{t_small:.2f} s of {n}: checking grows faster than the program")
