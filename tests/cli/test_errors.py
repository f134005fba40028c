"""Error reporting of the command-line tools (docs/language.md, "Command line and exit status").

Every bad input -- program, graph, argument, flag -- must exit with status 2
and print exactly one `error:` message on stderr that names the file (and for
program errors `FILE:LINE:COL`, the offending source line and a caret under
the right column), never a Python traceback unless `--debug`.

Most cases run the CLI entry points in-process (fast); a representative
subset runs them as real processes to check exit statuses end to end.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from cli_util import call, run_proc, write

from g2pl.cli import g2pl_main, g2plc_main

ROOT = Path(__file__).resolve().parents[2]
PROGRAMS = ROOT / "programs"
BFS = PROGRAMS / "bfs.g2pl"

# A program that needs no argument (for graph-file errors).
COUNT_SRC = "count() {\n  n = sum [ 1 | v <- V ];\n  return n;\n}\n"

# Raw Lark terminal names must never leak into messages ("expected ... in words").
RAW_TERMINALS = re.compile(r"\$END|__ANON|\b(?:SEMICOLON|RBRACE|LBRACE|RPAR|LPAR|RSQB|LSQB|NAME|INT|FLOAT|"
                           r"COMMA|VBAR|EQUAL|COLON|ARROW|OROR|ANDAND|EQOP|RELOP|ADDOP|MULOP)\b")


# --------------------------------------------------------------------------- helpers


def error_lines(err: str) -> list[str]:
    return [ln for ln in err.splitlines() if " error: " in ln or ln.startswith("error: ")]


def check_one_error(err: str) -> str:
    """No traceback, exactly one `error:` message; returns that line."""
    assert "Traceback" not in err, err
    lines = error_lines(err)
    assert len(lines) == 1, f"expected exactly one error message, got:\n{err}"
    assert err.lstrip().startswith(lines[0]), f"the error message should come first:\n{err}"
    return lines[0]


def check_program_error(err: str, path: Path, src: str, line: int, at: str, *fragments: str,
                        occurrence: int = 0) -> str:
    """`FILE:LINE:COL: error: ...` with the source line echoed and a caret under `at` on `line`.

    `at` is the text the caret must point at (its first occurrence on the line,
    or the `occurrence`-th); returns the message text after `error: `.
    """
    head = check_one_error(err)
    text = src.splitlines()[line - 1]
    col = -1
    for _ in range(occurrence + 1):
        col = text.index(at, col + 1)
    col += 1
    prefix = f"{path}:{line}:{col}: error: "
    assert head.startswith(prefix), f"expected a message starting with {prefix!r}, got:\n{err}"
    msg = head[len(prefix):]
    for frag in fragments:
        assert frag in err, f"{frag!r} missing from:\n{err}"
    check_caret(err, text, col)
    return msg


def check_caret(err: str, text: str, col: int) -> None:
    """The source line is echoed, and the next line has `^` under column `col` (1-based)."""
    lines = err.splitlines()
    body = text.strip()
    lead = len(text) - len(text.lstrip())
    for i, ln in enumerate(lines[:-1]):
        if body and ln.rstrip().endswith(body) and "^" in lines[i + 1]:
            start = ln.rstrip().rindex(body)  # where the line's first non-blank character is shown
            want = start + (col - 1 - lead)
            caret_line = lines[i + 1]
            got = caret_line.index("^")
            assert got == want, f"caret at display column {got}, expected {want} (source column {col}):\n{err}"
            assert caret_line[got:].strip().strip("^") == "", f"caret line has stray text:\n{err}"
            return
    raise AssertionError(f"source line {text!r} not echoed with a caret under it:\n{err}")


def edge_file(tmp_path: Path, name: str = "g.txt", text: str = "0 1\n1 2\n2 3\n") -> Path:
    return write(tmp_path, name, text)


# --------------------------------------------------------------------------- program errors

# (id, source, line, text the caret points at, fragments the message must contain)
PROGRAM_ERRORS = [
    # ---- syntax
    ("missing-semicolon", "p() {\n  x = 1\n  return x;\n}\n", 3, "return", ["unexpected `return`", "`;`"]),
    ("missing-semicolon-last", "p() {\n  x = 1;\n  return x\n}\n", 4, "}", ["unexpected `}`", "`;`"]),
    ("unexpected-token", "p() {\n  x = 1 + * 2;\n  return x;\n}\n", 2, "*",
     ["unexpected `*`", "expected", "a number", "a name"]),
    ("unbalanced-paren", "p() {\n  x = (1 + 2;\n  return x;\n}\n", 2, ";", ["unexpected `;`", "expected `)`"]),
    ("extra-close-brace", "p() {\n  x = 1;\n  return x;\n}\n}\n", 5, "}", ["unexpected `}`", "end of file"]),
    ("while-without-parens", "p() {\n  while x { }\n  return 1;\n}\n", 2, "x", ["unexpected `x`", "`(`"]),
    # ---- names
    ("undefined-variable", "p() {\n  Seen = V;\n  x = Sen;\n  return x;\n}\n", 3, "Sen",
     ["undefined", "`Sen`", "did you mean `Seen`"]),
    ("undefined-function", "p() {\n  x = squar(2.0);\n  return x;\n}\nsquare(a) = a * a;\n", 2, "squar",
     ["undefined function `squar`", "did you mean `square`"]),
    ("undefined-builtin-function", "p() {\n  x = sqr(2.0);\n  return x;\n}\n", 2, "sqr",
     ["undefined function `sqr`", "did you mean `sqrt`"]),
    # ---- kinds
    ("kind-edge-set-or-vertex-graph",
     "mm() {\n  M = emptyE;\n  Candidate = { id | v <- V };\n  M = M || Candidate;\n  return M;\n}\n",
     4, "||", ["edge set", "vertex graph"]),
    ("kind-reassign-vertex-set-to-edge-set", "p() {\n  M = emptyE;\n  M = V;\n  return M;\n}\n", 3, "V",
     ["`M`", "edge set", "vertex set"]),
    ("kind-vertex-graph-bare-in-edge-comprehension",
     "p() {\n  D = { 1 | v <- V };\n  A = { D > 0 | (u, v) <- E };\n  return A;\n}\n", 3, "D >",
     ["`D`", "vertex graph", "edge"]),
    # ---- element types
    ("elem-andand-on-ints", "p() {\n  a = 1;\n  b = a && 2;\n  return b;\n}\n", 3, "a &&", ["`&&`", "int"]),
    ("elem-modulo-on-floats", "p() {\n  a = 1.5;\n  b = a % 2;\n  return b;\n}\n", 3, "a %", ["`%`", "float"]),
    ("elem-and-over-ints", "p() {\n  s = and [ 1 | v <- V ];\n  return s;\n}\n", 2, "1", ["`and`", "int"]),
    # ---- conditions and definite assignment
    ("non-scalar-condition", "p() {\n  S = V;\n  while (S) {}\n  return S;\n}\n", 3, "S)",
     ["scalar", "vertex set", "S != empty"]),
    ("read-before-assign-if", "p(n: int) {\n  if (n > 0) {\n    y = 1;\n  }\n  return y;\n}\n", 5, "y",
     ["`y`", "assigned"]),
    ("read-before-assign-loop",
     "p(n: int) {\n  i = 0;\n  while (i < n) {\n    y = i;\n    i = i + 1;\n  }\n  return y;\n}\n", 7, "y",
     ["`y`", "assigned"]),
    # ---- functions
    ("recursion-cycle", "p() {\n  x = f(1);\n  return x;\n}\nf(a) = g(a) + 1;\ng(b) = f(b) * 2;\n", 6, "f(b)",
     ["recursive", "f -> g -> f"]),
    ("arity-user-function", "p() {\n  x = sq(1, 2);\n  return x;\n}\nsq(a) = a * a;\n", 2, "sq(",
     ["`sq`", "1 argument", "2"]),
    ("arity-builtin", "p() {\n  x = min(1);\n  return x;\n}\n", 2, "min", ["`min`", "2 arguments", "1"]),
    # ---- comprehensions
    ("unknown-aggregation", "p() {\n  x = foo [ 1 | v <- V ];\n  return x;\n}\n", 2, "foo",
     ["unknown aggregation `foo`", "sum"]),
    ("nvals-without-centre", "p() {\n  x = sum [ 1 | u <- nvals v ];\n  return x;\n}\n", 2, "nvals", ["`nvals`"]),
    ("two-generators", "p() {\n  x = sum [ 1 | u <- V, v <- V ];\n  return x;\n}\n", 2, "v <-",
     ["one generator"]),
    # ---- definitions
    ("assign-to-builtin", "p() {\n  V = empty;\n  return V;\n}\n", 2, "V", ["built-in", "`V`"]),
    ("duplicate-procedure", "p() {\n  return 1;\n}\np() {\n  return 2;\n}\n", 4, "p", ["`p`", "twice"]),
    ("duplicate-function", "p() {\n  return f(1);\n}\nf(a) = a;\nf(b) = b;\n", 5, "f", ["`f`", "twice"]),
    ("no-procedure", "// just a function\nf(x) = x + 1;\n", 1, "//", ["no procedure"]),
]


@pytest.mark.parametrize("src,line,at,fragments", [c[1:] for c in PROGRAM_ERRORS],
                         ids=[c[0] for c in PROGRAM_ERRORS])
def test_program_error_check(tmp_path, capsys, src, line, at, fragments):
    prog = write(tmp_path, "prog.g2pl", src)
    rc, out, err = call(g2pl_main, ["check", prog], capsys)
    assert rc == 2, err
    check_program_error(err, prog, src, line, at, *fragments)


@pytest.mark.parametrize("src,line,at,fragments", [c[1:] for c in PROGRAM_ERRORS[:8]],
                         ids=[c[0] for c in PROGRAM_ERRORS[:8]])
def test_program_error_g2plc(tmp_path, capsys, src, line, at, fragments):
    """The compiler reports the same errors as `g2pl check`."""
    prog = write(tmp_path, "prog.g2pl", src)
    rc, out, err = call(g2plc_main, [prog, "--emit", "py"], capsys)
    assert rc == 2, err
    check_program_error(err, prog, src, line, at, *fragments)
    assert not (tmp_path / "prog.py").exists()


def test_sum_of_vid_is_not_an_error(tmp_path, capsys):
    """The counterpart of `and` over ints: `sum` accepts vid (it behaves as an int)."""
    prog = write(tmp_path, "ok.g2pl", "p() {\n  s = sum [ id | v <- V ];\n  return s;\n}\n")
    rc, out, err = call(g2pl_main, ["check", prog], capsys)
    assert rc == 0 and err == "", err


def test_syntax_errors_list_expected_tokens_in_words(tmp_path, capsys):
    cases = [
        ("p() {\n  x = 1\n  return x;\n}\n", "`;`"),
        ("p() {\n  x = 1 + * 2;\n  return x;\n}\n", "a number"),
        ("p() {\n  x = 1;\n  return x;\n", "`}`"),
        ("p() {\n  x = (1 + 2;\n  return x;\n}\n", "`)`"),
    ]
    for src, word in cases:
        prog = write(tmp_path, "s.g2pl", src)
        rc, _, err = call(g2pl_main, ["check", prog], capsys)
        assert rc == 2
        head = check_one_error(err)
        assert "expected" in head, err
        assert word in head, err
        assert RAW_TERMINALS.search(err) is None, f"raw terminal name in:\n{err}"


def test_unexpected_end_of_file(tmp_path, capsys):
    src = "p() {\n  x = 1;\n  return x;\n"
    prog = write(tmp_path, "eof.g2pl", src)
    rc, _, err = call(g2pl_main, ["check", prog], capsys)
    assert rc == 2
    head = check_one_error(err)
    # The position is the end of the text: line 3, just after `return x;`.
    assert head.startswith(f"{prog}:3:{len('  return x;') + 1}: error: "), err
    assert "end of file" in head and "`}`" in head, err
    assert RAW_TERMINALS.search(err) is None, err
    check_caret(err, "  return x;", len("  return x;") + 1)


def test_unexpected_end_inside_expression(tmp_path, capsys):
    prog = write(tmp_path, "eof2.g2pl", "p() {\n  x = 1 +")
    rc, _, err = call(g2pl_main, ["check", prog], capsys)
    assert rc == 2
    head = check_one_error(err)
    assert head.startswith(f"{prog}:2:"), err
    assert "end of file" in head and "expected" in head, err
    assert RAW_TERMINALS.search(err) is None, err


def test_unexpected_character(tmp_path, capsys):
    src = "p() {\n  x = 1 $ 2;\n  return x;\n}\n"
    prog = write(tmp_path, "ch.g2pl", src)
    rc, _, err = call(g2pl_main, ["check", prog], capsys)
    assert rc == 2
    check_program_error(err, prog, src, 2, "$", "`$`")


def test_error_in_function_body_points_into_the_function(tmp_path, capsys):
    src = "p() {\n  x = twice(1);\n  return x;\n}\ntwice(a) = a * b;\n"
    prog = write(tmp_path, "fb.g2pl", src)
    rc, _, err = call(g2pl_main, ["check", prog], capsys)
    assert rc == 2
    check_program_error(err, prog, src, 5, "b;", "`b`")


def test_recursion_self_cycle(tmp_path, capsys):
    src = "p() {\n  x = f(1);\n  return x;\n}\nf(a) = f(a) + 1;\n"
    prog = write(tmp_path, "rec.g2pl", src)
    rc, _, err = call(g2pl_main, ["check", prog], capsys)
    assert rc == 2
    check_program_error(err, prog, src, 5, "f(a) +", "f -> f")


def test_empty_program_file(tmp_path, capsys):
    prog = write(tmp_path, "empty.g2pl", "")
    rc, _, err = call(g2pl_main, ["check", prog], capsys)
    assert rc == 2
    head = check_one_error(err)
    assert head.startswith(f"{prog}:"), err
    assert "no procedure" in head, err


# --------------------------------------------------------------------------- entry selection


TWO_PROCS = "a() {\n  return 1;\n}\nb() {\n  return 2;\n}\n"


@pytest.mark.parametrize("tool,argv", [
    (g2pl_main, ["run", "{prog}", "--graph", "{graph}"]),
    (g2pl_main, ["plan", "{prog}"]),
    (g2plc_main, ["{prog}", "--emit", "py"]),
], ids=["run", "plan", "g2plc"])
def test_several_procedures_need_entry(tmp_path, capsys, tool, argv):
    prog = write(tmp_path, "two.g2pl", TWO_PROCS)
    graph = edge_file(tmp_path)
    args = [a.format(prog=prog, graph=graph) for a in argv]
    rc, out, err = call(tool, args, capsys)
    assert rc == 2, err
    head = check_one_error(err)
    assert head.startswith(f"{prog}: error: "), err
    assert "a" in head and "b" in head and "--entry" in head, err

    rc, out, err = call(tool, [*args, "--entry", "nosuch"], capsys)
    assert rc == 2, err
    head = check_one_error(err)
    assert head.startswith(f"{prog}: error: "), err
    assert "`nosuch`" in head and "a, b" in head, err


def test_entry_missing_with_single_procedure(tmp_path, capsys):
    graph = edge_file(tmp_path)
    rc, _, err = call(g2pl_main, ["run", BFS, "--graph", graph, "--arg", "root=0", "--entry", "main"], capsys)
    assert rc == 2
    head = check_one_error(err)
    assert "`main`" in head and "bfs" in head, err


# --------------------------------------------------------------------------- graph files


GRAPH_FILE_ERRORS = [
    # (id, file name, contents or None for "do not create", line or None, fragments)
    ("one-column", "one.txt", "0 1\n1 2\n3\n", 3, ["column"]),
    ("one-column-first-line", "one1.txt", "# header\n7\n", 2, ["column"]),
    ("non-integer-id", "nonint.txt", "0 1\n1 x\n", 2, ["integer", "'x'"]),
    ("float-id", "floatid.txt", "0 1\n1.5 2\n", 2, ["1.5", "integer"]),
    ("negative-id", "neg.txt", "0 1\n1 -2\n", 2, ["negative", "-2"]),
    ("bad-weight", "w.txt", "0 1 1.0\n1 2 abc\n", 2, ["weight", "abc"]),
    ("negative-weight", "nw.txt", "0 1 1.0\n1 2 -3.0\n", 2, ["weight", "-3.0"]),
    ("missing-file", "missing.txt", None, None, ["not found"]),
    ("unknown-extension", "g.xyz", "0 1\n", None, [".xyz"]),
    ("empty-file", "empty.txt", "", None, ["no edges"]),
    ("only-comments", "comments.txt", "# nothing\n% here\n\n", None, ["no edges"]),
]


@pytest.mark.parametrize("name,text,line,fragments", [c[1:] for c in GRAPH_FILE_ERRORS],
                         ids=[c[0] for c in GRAPH_FILE_ERRORS])
def test_bad_graph_file(tmp_path, capsys, name, text, line, fragments):
    prog = write(tmp_path, "count.g2pl", COUNT_SRC)
    graph = tmp_path / name
    if text is not None:
        graph.write_text(text)
    out_json = tmp_path / "out.json"
    rc, out, err = call(g2pl_main, ["run", prog, "--graph", graph, "--output", out_json], capsys)
    assert rc == 2, err
    head = check_one_error(err)
    prefix = f"{graph}:{line}: error: " if line is not None else f"{graph}: error: "
    assert head.startswith(prefix), f"expected {prefix!r}:\n{err}"
    for frag in fragments:
        assert frag in head, f"{frag!r} missing:\n{err}"
    assert not out_json.exists()


@pytest.mark.parametrize("spec,fragments", [
    ("kron:abc", ["SCALE", "abc"]),
    ("ws:10:3:0.5", ["K"]),
    ("er:5", ["er:N:M"]),
    ("foo:1", ["unknown", "foo"]),
])
def test_bad_generator_spec(tmp_path, capsys, spec, fragments):
    prog = write(tmp_path, "count.g2pl", COUNT_SRC)
    rc, out, err = call(g2pl_main, ["run", prog, "--graph", spec], capsys)
    assert rc == 2, err
    head = check_one_error(err)
    assert spec in head, err
    for frag in fragments:
        assert frag in head, err


# --------------------------------------------------------------------------- procedure arguments


@pytest.mark.parametrize("args,fragments", [
    ([], ["missing", "`root`", "--arg root="]),
    (["--arg", "root=0", "--arg", "foo=1"], ["unknown", "`foo`", "root"]),
    (["--arg", "root=abc"], ["root", "abc"]),
    (["--arg", "root=1.5"], ["root", "1.5"]),
    (["--arg", "root"], ["root", "NAME=VALUE"]),
    (["--arg", "root=0", "--arg", "root=1"], ["root", "twice"]),
], ids=["missing", "unknown", "ill-typed", "float-for-vid", "no-equals", "twice"])
def test_bad_procedure_arguments(tmp_path, capsys, args, fragments):
    graph = edge_file(tmp_path)
    out_json = tmp_path / "out.json"
    rc, out, err = call(g2pl_main, ["run", BFS, "--graph", graph, "--output", out_json, *args], capsys)
    assert rc == 2, err
    head = check_one_error(err)
    for frag in fragments:
        assert frag in head, f"{frag!r} missing:\n{err}"
    assert not out_json.exists()


def test_ill_typed_numeric_arguments(tmp_path, capsys):
    graph = edge_file(tmp_path)
    pr = PROGRAMS / "pagerank.g2pl"
    for args, bad in ((["iters=x", "damping=0.85"], "iters=x"), (["iters=3", "damping=abc"], "damping=abc")):
        argv = ["run", pr, "--graph", graph]
        for a in args:
            argv += ["--arg", a]
        rc, _, err = call(g2pl_main, argv, capsys)
        assert rc == 2, err
        assert bad in check_one_error(err), err


@pytest.mark.parametrize("argv", [
    ["run", "{bfs}", "--graph", "{graph}"],
    ["run", "{bfs}", "--graph", "{graph}", "--arg", "root=abc"],
    ["run", "{bfs}", "--graph", "foo:1", "--arg", "root=0"],
    ["run", "{bfs}", "--graph", "{graph}", "--arg", "root=0", "--max-supersteps", "1"],
], ids=["missing-arg", "ill-typed-arg", "bad-generator", "runtime-failure"])
def test_cli_errors_do_not_blame_a_placeholder_file(tmp_path, capsys, argv):
    """Spec 8: the message names the file; `<input>` is no file (argument errors concern the program)."""
    graph = edge_file(tmp_path)
    rc, _, err = call(g2pl_main, [a.format(bfs=BFS, graph=graph) for a in argv], capsys)
    assert rc in (1, 2)
    head = check_one_error(err)
    assert not head.startswith("<input>"), f"error names no real file:\n{err}"


# --------------------------------------------------------------------------- flags


@pytest.mark.parametrize("tool,argv,fragment", [
    (g2plc_main, ["{bfs}", "-O7"], "7"),
    (g2plc_main, ["{bfs}", "--disable-pass", "nosuch"], "nosuch"),
    (g2plc_main, ["{bfs}", "--emit", "llvm"], "llvm"),
    (g2pl_main, ["plan", "{bfs}", "-O7"], "7"),
    (g2pl_main, ["plan", "{bfs}", "--disable-pass", "nosuch"], "nosuch"),
    (g2pl_main, ["run", "{bfs}", "--graph", "{graph}", "--arg", "root=0", "-O7"], "7"),
    (g2pl_main, ["run", "{bfs}", "--graph", "{graph}", "--arg", "root=0", "--disable-pass", "nosuch"], "nosuch"),
    (g2pl_main, ["run", "{bfs}", "--graph", "{graph}", "--arg", "root=0", "--backend", "tpu"], "tpu"),
    (g2pl_main, ["run", "{bfs}", "--graph", "{graph}", "--arg", "root=0", "--np", "0"], "--np"),
    (g2pl_main, ["run", "{bfs}", "--graph", "{graph}", "--arg", "root=0", "--max-supersteps", "0"],
     "--max-supersteps"),
    (g2pl_main, ["run", "{bfs}", "--arg", "root=0"], "--graph"),
    (g2pl_main, ["frobnicate", "{bfs}"], "frobnicate"),
], ids=["g2plc-O7", "g2plc-pass", "g2plc-emit", "plan-O7", "plan-pass", "run-O7", "run-pass", "run-backend",
        "run-np0", "run-max-supersteps0", "run-no-graph", "unknown-command"])
def test_bad_flags(tmp_path, capsys, tool, argv, fragment):
    graph = edge_file(tmp_path)
    out_json = tmp_path / "out.json"
    args = [a.format(bfs=BFS, graph=graph) for a in argv]
    if args[0] == "run":
        args += ["--output", str(out_json)]
    rc, out, err = call(tool, args, capsys)
    assert rc == 2, err
    head = check_one_error(err)
    assert fragment in head, err
    assert not out_json.exists()


# --------------------------------------------------------------------------- program files


def test_non_utf8_program(tmp_path, capsys):
    prog = write(tmp_path, "latin.g2pl", b"p() {\n  x = 1; // caf\xe9\n  return x;\n}\n")
    rc, _, err = call(g2pl_main, ["check", prog], capsys)
    assert rc == 2
    head = check_one_error(err)
    assert re.match(re.escape(str(prog)) + r":2(:\d+)?: error: ", head), err
    assert "UTF-8" in head, err


def test_missing_program_file(tmp_path, capsys):
    prog = tmp_path / "nope.g2pl"
    for tool, argv in ((g2pl_main, ["check", prog]), (g2plc_main, [prog]), (g2pl_main, ["plan", prog]),
                       (g2pl_main, ["run", prog, "--graph", "er:5:3"])):
        rc, _, err = call(tool, argv, capsys)
        assert rc == 2, err
        head = check_one_error(err)
        assert head.startswith(f"{prog}: error: "), err
        assert "no such" in head.lower() or "not found" in head.lower(), err


def test_program_path_is_a_directory(tmp_path, capsys):
    rc, _, err = call(g2pl_main, ["check", tmp_path], capsys)
    assert rc == 2
    assert check_one_error(err).startswith(f"{tmp_path}: error: "), err


# --------------------------------------------------------------------------- failed runs write nothing


@pytest.mark.parametrize("case", ["compile", "graph", "argument", "runtime"])
def test_failed_run_writes_no_output_or_stats(tmp_path, capsys, case):
    path = tmp_path / "path.txt"
    path.write_text("".join(f"{i} {i + 1}\n" for i in range(20)))
    bad = write(tmp_path, "bad.g2pl", "p() {\n  x = Sen;\n  return x;\n}\n")
    argv = {
        "compile": ["run", bad, "--graph", path],
        "graph": ["run", BFS, "--graph", tmp_path / "missing.txt", "--arg", "root=0"],
        "argument": ["run", BFS, "--graph", path, "--arg", "root=abc"],
        "runtime": ["run", BFS, "--graph", path, "--arg", "root=0", "--max-supersteps", "3"],
    }[case]
    out_json, stats_json = tmp_path / "out.json", tmp_path / "stats.json"
    before = set(tmp_path.iterdir())
    rc, _, err = call(g2pl_main, [*argv, "--output", out_json, "--stats", stats_json], capsys)
    assert rc == (1 if case == "runtime" else 2), err
    check_one_error(err)
    assert not out_json.exists()
    if case == "runtime":  # stopped by a limit: no result, but what was measured is kept, marked as stopped
        assert json.loads(stats_json.read_text())["stopped"]["reason"] == "max-supersteps"
        stats_json.unlink()
    assert not stats_json.exists()
    assert set(tmp_path.iterdir()) == before, "a failed run left files behind"


# --------------------------------------------------------------------------- end to end (real processes)


E2E_PROGRAM_ERRORS = ["missing-semicolon", "undefined-variable", "kind-edge-set-or-vertex-graph",
                      "non-scalar-condition", "recursion-cycle", "arity-builtin"]


@pytest.mark.parametrize("case", E2E_PROGRAM_ERRORS)
def test_e2e_program_error(tmp_path, case):
    src, line, at, fragments = next(c[1:] for c in PROGRAM_ERRORS if c[0] == case)
    prog = write(tmp_path, "prog.g2pl", src)
    graph = edge_file(tmp_path)
    p = run_proc("g2pl", "run", prog, "--graph", graph, "--output", tmp_path / "o.json", cwd=tmp_path)
    assert p.returncode == 2, p.stderr
    assert p.stdout == ""
    check_program_error(p.stderr, prog, src, line, at, *fragments)
    assert not (tmp_path / "o.json").exists()


def test_e2e_g2plc_error_writes_no_module(tmp_path):
    src = "p() {\n  Seen = V;\n  x = Sen;\n  return x;\n}\n"
    prog = write(tmp_path, "prog.g2pl", src)
    p = run_proc("g2plc", prog, cwd=tmp_path)
    assert p.returncode == 2, p.stderr
    check_program_error(p.stderr, prog, src, 3, "Sen", "did you mean `Seen`")
    assert not (tmp_path / "prog.py").exists()
    p = run_proc("g2plc", prog, "-o", tmp_path / "out.py", cwd=tmp_path)
    assert p.returncode == 2
    assert not (tmp_path / "out.py").exists()


@pytest.mark.parametrize("argv,status,fragment", [
    (["run", "{bfs}", "--graph", "{dir}/g.xyz", "--arg", "root=0"], 2, ".xyz"),
    (["run", "{bfs}", "--graph", "{dir}/bad.txt", "--arg", "root=0"], 2, "{dir}/bad.txt:2: error: "),
    (["run", "{bfs}", "--graph", "kron:abc", "--arg", "root=0"], 2, "kron:abc"),
    (["run", "{bfs}", "--graph", "{dir}/g.txt", "--arg", "root=abc"], 2, "root=abc"),
    (["run", "{bfs}", "--graph", "{dir}/g.txt"], 2, "root"),
    (["run", "{bfs}", "--graph", "{dir}/g.txt", "--arg", "root=0", "--np", "0"], 2, "--np"),
    (["run", "{bfs}", "--graph", "{dir}/g.txt", "--arg", "root=0", "--backend", "tpu"], 2, "tpu"),
    (["plan", "{bfs}", "-O7"], 2, "7"),
    (["check", "{dir}/nope.g2pl"], 2, "nope.g2pl: error: "),
    (["run", "{bfs}", "--graph", "{dir}/path.txt", "--arg", "root=0", "--max-supersteps", "3"], 1, "3"),
], ids=["ext", "graph-line", "generator", "arg-type", "arg-missing", "np0", "backend", "O7", "missing-prog",
        "max-supersteps"])
def test_e2e_exit_status(tmp_path, argv, status, fragment):
    edge_file(tmp_path)
    (tmp_path / "g.xyz").write_text("0 1\n")
    (tmp_path / "bad.txt").write_text("0 1\n1\n")
    (tmp_path / "path.txt").write_text("".join(f"{i} {i + 1}\n" for i in range(30)))
    args = [a.format(bfs=BFS, dir=tmp_path) for a in argv]
    if args[0] == "run":
        args += ["--output", str(tmp_path / "o.json"), "--stats", str(tmp_path / "s.json")]
    p = run_proc("g2pl", *args, cwd=tmp_path)
    assert p.returncode == status, p.stderr
    head = check_one_error(p.stderr)
    assert fragment.format(dir=tmp_path) in p.stderr, p.stderr
    assert head
    assert not (tmp_path / "o.json").exists()
    # only a run stopped by a limit keeps its partial statistics
    assert (tmp_path / "s.json").exists() == ("--max-supersteps" in argv and status == 1)


def test_e2e_g2plc_bad_flag(tmp_path):
    p = run_proc("g2plc", BFS, "--disable-pass", "nosuch", cwd=tmp_path)
    assert p.returncode == 2
    assert "nosuch" in check_one_error(p.stderr)
    assert list(tmp_path.iterdir()) == []


def test_e2e_debug_shows_traceback(tmp_path):
    src = "p() {\n  Seen = V;\n  x = Sen;\n  return x;\n}\n"
    prog = write(tmp_path, "prog.g2pl", src)
    p = run_proc("g2pl", "check", prog, "--debug", cwd=tmp_path)
    assert p.returncode == 2
    assert "Traceback" in p.stderr, p.stderr
    assert f"{prog}:3:7: error: " in p.stderr
    p = run_proc("g2pl", "run", prog, "--graph", "er:5:3", "--debug", cwd=tmp_path)
    assert p.returncode == 2
    assert "Traceback" in p.stderr, p.stderr
    # ...and without --debug there is none
    p = run_proc("g2pl", "check", prog, cwd=tmp_path)
    assert p.returncode == 2 and "Traceback" not in p.stderr


def test_e2e_non_utf8_program(tmp_path):
    prog = write(tmp_path, "latin.g2pl", b"p() {\n  x = 1; // caf\xe9\n  return x;\n}\n")
    p = run_proc("g2plc", prog, "--emit", "ast", cwd=tmp_path)
    assert p.returncode == 2
    head = check_one_error(p.stderr)
    assert head.startswith(f"{prog}:2"), p.stderr
