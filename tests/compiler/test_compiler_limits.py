"""The compiler's limits (docs/language.md, "Limits"): nothing a program contains makes it hang or crash.

* A macro bomb (`f1(x) = f0(x) * f0(x)`, ... to depth 30: 2^30 nodes from 1 KB) is refused at once
  with an exit-2 error naming the call chain.
* A 10,000-statement straight-line program compiles at -O2 (the reorder pass used to be quadratic;
  timings are in the commit messages, not asserted here).
* Deep expressions and deep nesting either compile and run correctly or get one exit-2 error with a
  position; `g2pl check` and `g2pl run` always agree, and no size ends in a signal.
* Literals out of range (a 5,000-digit integer, a float that would read as inf) are exit-2 errors.
"""

from __future__ import annotations

import json

import pytest
from cli_util import call, run_proc, write

import g2pl
from g2pl.cli import g2pl_main
from g2pl.compiler.limits import INLINE_BUDGET, MAX_EXPR_DEPTH, MAX_NESTING
from g2pl.errors import G2PLError

GRAPH = "er:12:30"

# ---------------------------------------------------------------- program generators


def macro_chain(depth: int, op: str = "*") -> str:
    """`f0(x) = x + 1; f_i(x) = f_{i-1}(x) OP f_{i-1}(x);` and a call of the last: 2^depth nodes."""
    lines = ["f0(x) = x + 1;"] + [f"f{i}(x) = f{i - 1}(x) {op} f{i - 1}(x);" for i in range(1, depth + 1)]
    return "\n".join([*lines, f"main() {{ y = f{depth}(1); return y; }}"]) + "\n"


def straight_line(n: int) -> str:
    """n straight-line statements: scalars, vertex graphs and aggregations, so reorder has work."""
    out = ["main() {", " x0 = 1;", " G0 = { id | v <- V };"]
    for i in range(1, n):
        r = i % 5
        if r == 0:
            out.append(f" G{i} = {{ g + x{i - 1} | g <- G{i - 5} }};")
        elif r == 1:
            out.append(f" x{i} = sum [ g | g <- G{i - 1} ];")
        elif r == 2:
            out.append(f" x{i} = x{i - 1} * 2;")
        elif r == 3:
            out.append(f" x{i} = x{i - 2} + 1;")
        else:
            out.append(f" x{i} = max [ g | g <- G{i - 4} ] + x{i - 1};")
    last = n - 1 if (n - 1) % 5 else n - 2
    return "\n".join([*out, f" return x{last};", "}"]) + "\n"


def long_sum(n: int) -> str:
    return "main() { x = " + " + ".join(["1"] * n) + "; return x; }\n"


def nested_ifs(n: int) -> str:
    """n nested `if`s, every condition true: x ends as 1."""
    body = "".join(f"if (x < {i + 1}) {{\n" for i in range(n))
    return f"main() {{\n x = 0;\n{body} x = x + 1;\n{'}' * n}\n return x;\n}}\n"


def else_if_chain(n: int) -> str:
    """`if (x == 0) {...} else if (x == 1) {...} ...`: n nested else branches; x = 3 takes the fourth."""
    chain = "".join(f"if (x == {i}) {{ y = {i * 10}; }} else " for i in range(n))
    return f"main() {{\n x = 3;\n {chain}{{ y = -1; }}\n return y;\n}}\n"


def nested_ternary(n: int) -> str:
    """`x == n-1 ? n-1 : x == n-2 ? ... : -1` with x = 3: 3."""
    e = "-1"
    for i in range(n):
        e = f"x == {i} ? {i} : {e}"
    return "main() { x = 3; y = " + e + "; return y; }\n"


def nested_parens(n: int) -> str:
    return "main() { x = " + "(" * n + "1 + 1" + ")" * n + "; return x; }\n"


def vertex_sum(n: int) -> str:
    """A deep expression over every vertex: G = (n * id)."""
    return "main() { G = { " + " + ".join(["g"] * n) + " | g <- { id | v <- V } }; return G; }\n"


def neighbour_sum(n: int) -> str:
    """A deep head inside a neighbourhood aggregation: n per neighbour."""
    return "main() { G = { sum [ " + " + ".join(["1"] * n) + " | u <- nvals v ] | v <- V }; return G; }\n"


def unary_chain(n: int) -> str:
    return "main() { x = " + "-" * n + "1; return x; }\n"


# ---------------------------------------------------------------- helpers


def check_and_run(tmp_path, name: str, text: str, capsys) -> tuple[int, int, str, str]:
    """(`g2pl check` status, `g2pl run` status, check's stderr, run's stdout), both in-process."""
    path = write(tmp_path, name, text)
    rc_check, _out, err = call(g2pl_main, ["check", path], capsys)
    rc_run, out, _err = call(g2pl_main, ["run", path, "--graph", GRAPH, "--quiet", "--output", "-"], capsys)
    return rc_check, rc_run, err, out


def value(out: str, name: str):
    values = {v["name"]: v["value"] for v in json.loads(out)["values"]}
    return values[name]


# ---------------------------------------------------------------- the macro budget


def test_macro_bomb_is_refused_with_the_call_chain(tmp_path):
    path = write(tmp_path, "bomb.g2pl", macro_chain(30))
    for argv in (("g2pl", "check", path), ("g2pl", "run", path, "--graph", GRAPH), ("g2plc", path, "-o",
                                                                                       tmp_path / "b.py")):
        proc = run_proc(*argv, timeout=60)  # the unbounded expansion never finished
        assert proc.returncode == 2, proc.stderr
        assert "internal error" not in proc.stderr
        assert (f"bomb.g2pl:32:14: error: macro expansion too large: f30 -> f29 -> f28 -> ... -> f1 -> f0 "
                f"expands to more than {INLINE_BUDGET:,} nodes") in proc.stderr, proc.stderr
        assert "    32 | main() { y = f30(1); return y; }" in proc.stderr
        assert "^^^^^^" in proc.stderr
        assert proc.stderr.count("error:") == 1


def test_macro_bomb_through_the_api_is_one_error():
    with pytest.raises(G2PLError, match=r"macro expansion too large: f20 -> f19 -> f18 -> \.\.\. -> f\d+ -> f\d+ expands to more than"):
        g2pl.compile(macro_chain(20))


def test_macro_budget_counts_repeated_arguments():
    """`f(x) = x + ... + x` (8 uses) called 8 deep lowers the innermost argument 8^8 times, while
    the expansion stays shallow (64 levels): the budget, not the depth limit, refuses it."""
    src = "f(x) = " + " + ".join(["x"] * 8) + ";\nmain() { y = " + "f(" * 8 + "1" + ")" * 8 + "; return y; }"
    with pytest.raises(G2PLError, match=r"macro expansion too large: f -> f -> f -> \.\.\. -> f -> f expands"):
        g2pl.compile(src)


def test_moderate_macro_chains_still_compile_and_run():
    """2^8 leaves (about 800 nodes): well inside the budget, and the value is right."""
    prog = g2pl.compile(macro_chain(8, op="+"))
    assert prog.run(GRAPH)["y"] == 2**8 * 2


# ---------------------------------------------------------------- long programs


def test_10000_statement_program_compiles_at_O2():  # noqa: N802 - the option's name
    prog = g2pl.compile(straight_line(10_000), opt=2)
    plan = prog.compilation().plan
    supersteps = sum(1 for s in plan.states if s.exchange)
    # 4,000 aggregations: -O0 needs one superstep each; reorder + merge pair every sum with a max
    assert 0 < supersteps <= 2_100, supersteps
    assert "def run(rt, args):" in prog.python()


def test_reorder_still_merges_the_paper_example():
    src = "main() { x = 1; a = x; b = sum [ a | v <- V ]; c = x; d = sum [ c | v <- V ]; return b, d; }"
    supersteps = {opt: g2pl.compile(src, opt=opt).run(GRAPH).stats["supersteps"] for opt in (0, 2)}
    assert supersteps == {0: 3, 2: 2}


# ---------------------------------------------------------------- deep expressions and nesting


DEEP_OK = [
    ("sum200", long_sum(200), "x", 200),
    ("sum249", long_sum(249), "x", 249),
    ("sum300", long_sum(300), "x", 300),
    ("sum1000", long_sum(1000), "x", 1000),
    ("ifs400", nested_ifs(400), "x", 1),
    ("elseif400", else_if_chain(400), "y", 30),
    ("ternary400", nested_ternary(400), "y", 3),
    ("ternary1000", nested_ternary(1000), "y", 3),
    ("parens1000", nested_parens(1000), "x", 2),
    ("unary1500", unary_chain(1500), "x", 1),
]


@pytest.mark.parametrize(("name", "text", "var", "expected"), DEEP_OK, ids=[c[0] for c in DEEP_OK])
def test_deep_programs_compile_and_run(tmp_path, capsys, name, text, var, expected):
    rc_check, rc_run, err, out = check_and_run(tmp_path, f"{name}.g2pl", text, capsys)
    assert (rc_check, rc_run) == (0, 0), err
    assert value(out, var) == expected


def test_deep_vertex_expression_runs(tmp_path, capsys):
    rc_check, rc_run, err, out = check_and_run(tmp_path, "vsum.g2pl", vertex_sum(500), capsys)
    assert (rc_check, rc_run) == (0, 0), err
    assert all(v == 500 * int(k) for k, v in value(out, "G").items())


DEEP_REFUSED = [
    ("sum3000", long_sum(3000), f"expression nested too deeply (more than {MAX_EXPR_DEPTH} levels)"),
    ("unary9000", unary_chain(9000), f"program nested too deeply (more than {MAX_NESTING:,} levels"),
    ("nbr300", neighbour_sum(300), "expression nested too deeply (more than 150 levels in a neighbourhood"),
]


@pytest.mark.parametrize(("name", "text", "message"), DEEP_REFUSED, ids=[c[0] for c in DEEP_REFUSED])
def test_too_deep_programs_get_one_error_from_check_and_run(tmp_path, capsys, name, text, message):
    rc_check, rc_run, err, out = check_and_run(tmp_path, f"{name}.g2pl", text, capsys)
    assert (rc_check, rc_run) == (2, 2)
    assert f"{name}.g2pl:1:" in err and message in err, err
    assert err.count("error:") == 1
    assert "internal error" not in err


@pytest.mark.parametrize("text", [nested_ifs(1000), else_if_chain(1000), nested_ifs(3000), unary_chain(100_000)],
                         ids=["ifs1000", "elseif1000", "ifs3000", "unary100000"])
def test_deep_programs_never_crash_the_process(tmp_path, text):
    """In a real process (a C stack overflow would be a signal, not an exception): 0 or 2, and alike."""
    path = write(tmp_path, "deep.g2pl", text)
    check = run_proc("g2pl", "check", path, timeout=240)
    run = run_proc("g2pl", "run", path, "--graph", GRAPH, "--quiet", timeout=240)
    assert check.returncode in (0, 2), check.stderr
    assert run.returncode == check.returncode, run.stderr
    assert "internal error" not in check.stderr + run.stderr


# ---------------------------------------------------------------- literals


def test_5000_digit_integer_is_an_error_with_a_caret(tmp_path):
    path = write(tmp_path, "big.g2pl", "main() {\n  x = " + "9" * 5000 + ";\n  return x;\n}\n")
    for argv in (("g2pl", "check", path), ("g2plc", path, "-o", tmp_path / "big.py")):
        proc = run_proc(*argv)
        assert proc.returncode == 2, proc.stderr
        assert "big.g2pl:2:7: error: integer literal out of range for int64" in proc.stderr, proc.stderr
        assert "      ^^^^" in proc.stderr
        assert "internal error" not in proc.stderr


@pytest.mark.parametrize(("literal", "ok"), [("9223372036854775807", True), ("0009223372036854775807", True),
                                             ("9223372036854775808", False), ("1" + "0" * 30, False)])
def test_int_literals_must_fit_int64(literal, ok):
    src = f"main() {{ x = {literal}; return x; }}"
    if ok:
        assert g2pl.compile(src).run(GRAPH)["x"] == 2**63 - 1
    else:
        with pytest.raises(G2PLError, match="integer literal out of range for int64"):
            g2pl.compile(src)


@pytest.mark.parametrize("literal", ["1e400", "1" * 400 + ".0", "2e308"])
def test_float_literals_that_overflow_are_errors(literal):
    with pytest.raises(G2PLError, match="float literal out of range") as info:
        g2pl.compile(f"main() {{ x = {literal}; return x; }}")
    assert info.value.span is not None and info.value.span.col == 14


def test_tiny_float_literals_round_to_zero():
    assert g2pl.compile("main() { x = 1e-400; return x; }").run(GRAPH)["x"] == 0.0
