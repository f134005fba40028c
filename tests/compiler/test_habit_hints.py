"""Errors for habits from other languages say what G2PL writes instead (g2pl/compiler/hints.py).

Each case is a whole message as `g2pl check` and `g2plc` print it: the position, the source line with a
caret, what was expected, and the hint as a note; exit status 2.
"""

from __future__ import annotations

import pytest
from cli_util import call, run_proc

from g2pl.cli import g2pl_main, g2plc_main
from g2pl.compiler.hints import HABITS

FOR_LOOP = ("note: G2PL has no `for` loop: a comprehension works on every vertex at once, `{ head | v <- V }` "
            "(a value per vertex), and an aggregation combines the values, `sum [ head | v <- V ]`; repeat "
            "with `while (condition) { ... }`")
HASH = ("note: G2PL comments are `// to the end of the line` and `/* block */`; `#` starts a comment only in "
        "graph files")

CASES = {
    "floor division": (
        "p() {\n  x = 7 // 2;\n  return x;\n}\n",
        """\
prog.g2pl:3:3: error: unexpected `return`; expected `&&`, `)`, `*`/`/`/`%`, `+`/`-`, `,`, `:`, `;`, `==`/`!=`, ...
    3 |   return x;
      |   ^^^^^^
note: `//` starts a comment in G2PL, so `// 2;` on line 2 is not read; integer (floor) division is the \
function `idiv(a, b)`
"""),
    "floor division in a condition": (
        "p() {\n  n = 5;\n  while (n // 2 > 0) {\n    n = n - 1;\n  }\n  return n;\n}\n",
        """\
prog.g2pl:4:5: error: unexpected `n`; expected `&&`, `(`, `)`, `*`/`/`/`%`, `+`/`-`, `,`, `:`, `;`, ...
    4 |     n = n - 1;
      |     ^
note: `//` starts a comment in G2PL, so `// 2 > 0) {` on line 3 is not read; integer (floor) division is \
the function `idiv(a, b)`
"""),
    "hash comment": (
        "# the answer\np() {\n  x = 42;\n  return x;\n}\n",
        f"""\
prog.g2pl:1:1: error: unexpected character `#`; expected a name
    1 | # the answer
      | ^
{HASH}
"""),
    "hash comment after a statement": (
        "p() {\n  x = 42;  # the answer\n  return x;\n}\n",
        f"""\
prog.g2pl:2:12: error: unexpected character `#`; expected `}}`, a name
    2 |   x = 42;  # the answer
      |            ^
{HASH}
"""),
    "for v in V": (
        "p() {\n  n = 0;\n  for v in V {\n    n = n + 1;\n  }\n  return n;\n}\n",
        f"""\
prog.g2pl:3:7: error: unexpected `v`; expected `:`, `=`
    3 |   for v in V {{
      |       ^
{FOR_LOOP}
"""),
    "for (v in V)": (
        "p() {\n  n = 0;\n  for (v in V) {\n    n = n + 1;\n  }\n  return n;\n}\n",
        f"""\
prog.g2pl:3:7: error: unexpected `(`; expected `:`, `=`
    3 |   for (v in V) {{
      |       ^
{FOR_LOOP}
"""),
    "a comprehension with for": (
        "p() {\n  D = { 2 * v for v in V };\n  return D;\n}\n",
        """\
prog.g2pl:2:15: error: unexpected `for`; expected `&&`, `(`, `)`, `*`/`/`/`%`, `+`/`-`, `,`, `:`, `;`, ...
    2 |   D = { 2 * v for v in V };
      |               ^^^
note: a G2PL comprehension is `{ head | v <- V }`, not `{ head for v in V }`
"""),
    "+=": (
        "p() {\n  x = 1;\n  x += 2;\n  return x;\n}\n",
        """\
prog.g2pl:3:5: error: unexpected `+`; expected `:`, `=`
    3 |   x += 2;
      |     ^
note: G2PL has no `+=`; write `x = x + ...;`
"""),
    "++": (
        "p() {\n  x = 1;\n  x++;\n  return x;\n}\n",
        """\
prog.g2pl:3:4: error: unexpected `+`; expected `:`, `=`
    3 |   x++;
      |    ^
note: G2PL has no `++`; write `x = x + 1;`
"""),
    "len(V)": (
        "p() {\n  n = len(V);\n  return n;\n}\n",
        """\
prog.g2pl:2:7: error: undefined function `len`
    2 |   n = len(V);
      |       ^^^
note: G2PL has no `len` function: the number of elements of `V` is the aggregation `count [ v | v <- V ]`
"""),
    "size(S)": (
        "p() {\n  S = V;\n  n = size(S);\n  return n;\n}\n",
        """\
prog.g2pl:3:7: error: undefined function `size`
    3 |   n = size(S);
      |       ^^^^
note: G2PL has no `size` function: the number of elements of `S` is the aggregation `count [ v | v <- S ]`
"""),
    "count(S)": (
        "p() {\n  S = V;\n  n = count(S);\n  return n;\n}\n",
        """\
prog.g2pl:3:7: error: `count` is an aggregation; write `count [ head | generator, filters ]`
    3 |   n = count(S);
      |       ^^^^^
note: the number of elements of `S` is `count [ v | v <- S ]`
"""),
}


@pytest.mark.parametrize("case", list(CASES))
def test_check_prints_the_hint(case, tmp_path, monkeypatch, capsys):
    src, want = CASES[case]
    (tmp_path / "prog.g2pl").write_text(src)
    monkeypatch.chdir(tmp_path)
    rc, out, err = call(g2pl_main, ["check", "prog.g2pl"], capsys)
    assert (rc, out, err) == (2, "", want)


def test_len_of_an_edge_set_and_inside_a_function(tmp_path, monkeypatch, capsys):
    """Every such call is reported (`g2pl check`), each with the argument as written at the call."""
    (tmp_path / "prog.g2pl").write_text("f(X) = len(X);\np() {\n  S = V;\n  n = f(S) + length(E);\n  return n;\n}\n")
    monkeypatch.chdir(tmp_path)
    rc, out, err = call(g2pl_main, ["check", "prog.g2pl"], capsys)
    assert (rc, out) == (2, "")
    assert err == """\
prog.g2pl:1:8: error: undefined function `len`
    1 | f(X) = len(X);
      |        ^^^
note: G2PL has no `len` function: the number of elements of `S` is the aggregation `count [ v | v <- S ]`
prog.g2pl:4:14: error: undefined function `length`
    4 |   n = f(S) + length(E);
      |              ^^^^^^
note: G2PL has no `length` function: the number of elements of `E` is the aggregation `count [ e | e <- E ]`
prog.g2pl: 2 errors
"""


@pytest.mark.parametrize("case", ["floor division", "for v in V", "len(V)"])
def test_g2plc_as_a_process(case, tmp_path):
    """The same message from the installed way of running it: a real `g2plc` process, exit status 2."""
    src, want = CASES[case]
    (tmp_path / "prog.g2pl").write_text(src)
    proc = run_proc("g2plc", "prog.g2pl", cwd=tmp_path)
    assert (proc.returncode, proc.stdout, proc.stderr) == (2, "", want)


def test_g2plc_in_process(tmp_path, monkeypatch, capsys):
    src, want = CASES["+="]
    (tmp_path / "prog.g2pl").write_text(src)
    monkeypatch.chdir(tmp_path)
    assert call(g2plc_main, ["prog.g2pl"], capsys) == (2, "", want)


@pytest.mark.parametrize("src", [
    "p() {\n  x = 7; // the answer\n  return x;\n}\n",  # a comment after a statement
    "p() {\n  x = idiv(7, 2);\n  return x;\n}\n",
    "len(X) = count [ v | v <- X ];\np() {\n  n = len(V);\n  return n;\n}\n",  # a user function wins
    "p() {\n  for = 1;\n  return for;\n}\n",  # `for` is an ordinary name
])
def test_no_hint_where_the_program_is_right(src, tmp_path, monkeypatch, capsys):
    (tmp_path / "prog.g2pl").write_text(src)
    monkeypatch.chdir(tmp_path)
    assert call(g2pl_main, ["check", "prog.g2pl"], capsys)[0] == 0


@pytest.mark.parametrize("src", [
    "p() {\n  x = 7 // the answer\n  return x;\n}\n",  # a comment, and a missing `;`: the usual hint
    "p() {\n  x = 1\n  y = 2;\n  return x;\n}\n",
])
def test_other_mistakes_keep_their_hint(src, tmp_path, monkeypatch, capsys):
    (tmp_path / "prog.g2pl").write_text(src)
    monkeypatch.chdir(tmp_path)
    rc, _out, err = call(g2pl_main, ["check", "prog.g2pl"], capsys)
    assert rc == 2 and err.endswith("note: a statement must end with `;`\n"), err
    assert "`//`" not in err


def test_the_hints_are_one_table():
    """Every hint the tests above expect comes from `HABITS` (one place to change a wording)."""
    texts = "".join(want for _src, want in CASES.values())
    for key in ("floor division", "for loop", "for comprehension", "hash comment"):
        head = HABITS[key].split("{", 1)[0] if key == "floor division" else HABITS[key]
        assert head in texts, key
