"""Untrusted text in errors is shown escaped and cut; output a full disk refuses is one clear line; a
Result made from crafted --output JSON is refused with one precise message."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from cli_util import ROOT, call, write

import g2pl
from g2pl.cli import g2pl_main
from g2pl.errors import G2PLError, Span

BFS = "bfs(root: vid) {\n  F = { id == root | v <- V };\n  return F;\n}\n"


def test_control_characters_in_file_names_messages_and_source_are_escaped() -> None:
    src = "x = \x1b[2J\x1b]0;owned\x07 + 1;\n"
    err = G2PLError("unknown name `\x1b[31mred`", file="a\x1b[31m\u202eb.g2pl", span=Span(1, 5, 1, 6), source=src)
    text = err.render()
    assert "\x1b" not in text and "\x07" not in text and "\u202e" not in text
    assert "a\\x1b[31m\\u202eb.g2pl:1:5" in text and "unknown name `\\x1b[31mred`" in text
    line, caret = text.splitlines()[1:3]
    assert line.index("\\x1b[2J") == caret.index("^")  # the caret still points at the escaped character
    assert caret.count("^") == len("\\x1b")


def test_a_long_source_line_is_cut_around_the_error() -> None:
    src = "main() { x = " + "a" * 180_000 + " $ ; }\n"
    col = src.index("$") + 1
    text = G2PLError("unexpected `$`", file="p.g2pl", span=Span(1, col, 1, col + 1), source=src).render()
    assert len(text) < 1_000
    line, caret = text.splitlines()[1:3]
    assert line[caret.index("^")] == "$" and line.lstrip().split("| ")[1].startswith("...")


def test_a_long_message_is_cut() -> None:
    text = G2PLError("unknown name `" + "z" * 100_000 + "`", file="p.g2pl").render()
    assert len(text) < 2_000 and "characters left out" in text


def test_cli_errors_escape_an_ansi_file_name(tmp_path: Path, capsys) -> None:
    prog = write(tmp_path, "p\x1b[31m.g2pl", "main() { return undefined_name; }\n")
    rc, _out, err = call(g2pl_main, ["check", prog], capsys)
    assert rc == 2 and "\x1b" not in err and "\\x1b[31m" in err


def test_output_to_a_full_disk_is_one_line_and_status_1(tmp_path: Path) -> None:
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full on this system")
    prog = write(tmp_path, "bfs.g2pl", BFS)
    code = "import sys; from g2pl.cli import g2pl_main; sys.exit(g2pl_main())"
    with open("/dev/full", "w") as full:
        p = subprocess.run([sys.executable, "-c", code, "run", str(prog), "--graph", "kron:8", "--arg", "root=1",
                            "--output", "-"], cwd=ROOT, stdout=full, stderr=subprocess.PIPE, text=True,
                           env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, timeout=120)
    assert p.returncode == 1, p.stderr
    assert p.stderr.strip() == "g2pl: error: cannot write the output: No space left on device"


CRAFTED = [
    "not a list",
    [1],
    [{"name": "x"}],
    [{"name": "x", "kind": "vertex", "type": "int", "value": [1, 2], "extra": 1}],
    [{"name": "", "kind": "scalar", "type": "int", "value": 1}],
    [{"name": "x", "kind": "bogus", "type": "int", "value": 1}],
    [{"name": "x", "kind": "scalar", "type": "complex", "value": 1}],
    [{"name": "x", "kind": "scalar", "type": "int", "value": "12"}],
    [{"name": "x", "kind": "scalar", "type": "int", "value": 2**70}],
    [{"name": "x", "kind": "scalar", "type": "bool", "value": 1}],
    [{"name": "x", "kind": "scalar", "type": "float", "value": "infinity"}],
    [{"name": "x", "kind": "vertex", "type": "int", "value": [1, 2]}],
    [{"name": "x", "kind": "vertex", "type": "int", "value": {"one": 1}}],
    [{"name": "x", "kind": "vertex", "type": "int", "value": {"1": 1.5}}],
    [{"name": "x", "kind": "vertex", "type": "bool", "value": [1, "2"]}],
    [{"name": "x", "kind": "edge", "type": "bool", "value": [[1, 2, 3]]}],
    [{"name": "x", "kind": "edge", "type": "float", "value": [[1, 2]]}],
    [{"name": "x", "kind": "edge", "type": "float", "value": [[1, 2, None]]}],
]


@pytest.mark.parametrize("values", CRAFTED, ids=range(len(CRAFTED)))
def test_a_result_from_crafted_json_is_refused_with_one_message(values) -> None:
    with pytest.raises(G2PLError) as e:
        g2pl.Result("main", values, {})
    assert e.value.exit_status == 2 and "values" in e.value.message


def test_a_result_from_real_output_json_is_accepted(tmp_path: Path) -> None:
    g = g2pl.load_graph("kron:8", seed=1)
    src = "main() {\n  D = { count [ 1 | u <- nvals v ] | v <- V };\n  S = { d > 3 | d <- D };\n" \
          "  W = { Weight[e] * 2.0 | e <- E };\n  X = { true | (u, v) <- E };\n  return D, S, W, X, 1.5;\n}\n"
    res = g2pl.compile(src).run(g)
    back = g2pl.Result(**json.loads(json.dumps(res.output())), stats={})
    for name in ("D", "S", "W", "X"):
        assert (back.array(name, graph=g) == res.array(name)).all(), name
