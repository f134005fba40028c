"""Errors and edge cases of the integer functions (`idiv`, `imod`, `bitand`, `shl`, ...), `mode`, `vid`
arguments and remote reads by vertex ID: `g2pl check` reports every independent
error (a bad operand poisons only its own expression); the integer functions and `mode` refuse wrong
types with positioned messages; their names stay free for variables; a `vid` argument that is not a
vertex exits 2; remote reads of IDs that are not vertices give the default on any number of ranks."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from cli_util import call, write
from test_errors import check_program_error, error_lines
from test_mpi import HAVE_MPI

import g2pl
from g2pl.cli import g2pl_main

ROOT = Path(__file__).resolve().parents[2]


def check_errors(tmp_path: Path, capsys, src: str) -> list[str]:
    prog = write(tmp_path, "prog.g2pl", src)
    rc, _out, err = call(g2pl_main, ["check", prog], capsys)
    assert rc == 2 and "Traceback" not in err, err
    return error_lines(err)


def test_check_reports_errors_after_a_poisoned_variable(tmp_path, capsys):
    lines = check_errors(tmp_path, capsys, "main() {\n  Z = 1 + true;\n  Y = Z + R;\n  return Y;\n}\n")
    assert len(lines) == 2
    assert ":2:11: error: `+` needs numbers" in lines[0]
    assert ":3:11: error: undefined name `R`" in lines[1]


def test_check_reports_every_bad_operand_of_one_expression(tmp_path, capsys):
    src = "main() {\n  W = (2 + false) * (3 - true) + shl(1, 2.0) + Q;\n  return W;\n}\n"
    lines = check_errors(tmp_path, capsys, src)
    assert [ln.split(": error: ")[0].rsplit(":", 2)[1:] for ln in lines] == [
        ["2", "12"], ["2", "26"], ["2", "41"], ["2", "48"]]
    assert "`shl` needs integers, but this is a scalar float; use int(...)" in lines[2]


def test_a_poisoned_operand_does_not_make_up_errors(tmp_path, capsys):
    """The expression around a bad operand is not checked against a made-up type."""
    src = "main() {\n  X = { (1 + true) && id | v <- V };\n  return X;\n}\n"
    lines = check_errors(tmp_path, capsys, src)
    assert len(lines) == 1 and "`+` needs numbers" in lines[0]


BAD = [
    ("idiv-float", "main() {\n  x = idiv(7, 2.0);\n  return x;\n}\n", 2, "2.0", "`idiv` needs integers"),
    ("bitand-bool", "main() {\n  x = bitand(true, 1);\n  return x;\n}\n", 2, "true", "`bitand` needs integers"),
    ("shl-arity", "main() {\n  x = shl(1);\n  return x;\n}\n", 2, "shl(1)", "`shl` takes 2 arguments"),
    ("mode-float", "main() {\n  x = mode [ 1.5 | v <- V ];\n  return x;\n}\n", 2, "1.5",
     "`mode` counts equal values of ints, vids or bools"),
    ("imod-kinds", "main() {\n  D = { 1 | v <- V };\n  W = { 1 | e <- E };\n  X = imod(D, W);\n  return X;\n}\n",
     4, "imod(D, W)", "kinds never mix"),
]


@pytest.mark.parametrize("src,line,at,fragment", [c[1:] for c in BAD], ids=[c[0] for c in BAD])
def test_new_operations_refuse_wrong_types(tmp_path, capsys, src, line, at, fragment):
    prog = write(tmp_path, "prog.g2pl", src)
    rc, _out, err = call(g2pl_main, ["check", prog], capsys)
    assert rc == 2
    check_program_error(err, prog, src, line, at, fragment)


def test_new_names_stay_free_for_variables_and_functions():
    src = """
    shl(x) = x + 1;
    main() {
      mode = 3;
      bitand = { id | v <- V };
      idiv = shl(mode);
      M = { mode [ u | u <- nvals v ] | v <- bitand };
      return mode, idiv, M;
    }
    """
    res = g2pl.compile(src).run(g2pl.Graph.from_edges([1, 2], [2, 3]))
    assert res["mode"] == 3 and res["idiv"] == 4
    assert {int(k): v for k, v in res["M"].items()} == {1: 2, 2: 1, 3: 2}


def test_vid_argument_that_is_not_a_vertex_exits_2(tmp_path):
    graph = write(tmp_path, "g.txt", "10 20\n20 30\n")
    cmd = [sys.executable, "-m", "g2pl.cli", "run", str(ROOT / "programs" / "bfs.g2pl"), "--graph", str(graph)]
    nps = [1, 2] if HAVE_MPI else [1]
    for n in nps:
        r = subprocess.run([*cmd, "--arg", "root=15", "--np", str(n)], capture_output=True, text=True,
                           timeout=120, cwd=ROOT)
        assert r.returncode == 2, r.stderr
        assert r.stderr.count("error:") == 1 and "Traceback" not in r.stderr
        assert "argument `root=15`: 15 is not a vertex of the graph (3 vertices, IDs 10..30)" in r.stderr
        assert str(graph) in r.stderr
    r = subprocess.run([*cmd, "--arg", "root=-1", "--quiet", "--output", "-"], capture_output=True, text=True,
                       timeout=120, cwd=ROOT)
    assert r.returncode == 0 and json.loads(r.stdout)["values"][0]["value"] == {"10": -1, "20": -1, "30": -1}


NON_VERTEX = """
main(r: vid) {
  D = { id * 2 | v <- V };
  S = { id > 10 | v <- V };
  P = { D[id + 1] | v <- V };
  Q = { (id + 1) in V | v <- V };
  T = { (id + 1) in S | v <- V };
  H = { id[id + 1] | v <- V };
  s = D[r];
  b = r in V;
  return P, Q, T, H, s, b;
}
"""


@pytest.mark.parametrize("n", [1, 2, 3])
def test_remote_reads_of_non_vertices_give_the_default(tmp_path, n):
    if n > 1 and not HAVE_MPI:
        pytest.skip("mpi4py/mpiexec not installed")
    graph = write(tmp_path, "g.txt", "10 11\n11 30\n40 41\n")
    src = write(tmp_path, "p.g2pl", NON_VERTEX)
    for r, s, b in ((40, 80, True), (-1, 0, False)):
        out = subprocess.run([sys.executable, "-m", "g2pl.cli", "run", str(src), "--graph", str(graph), "--np", str(n),
                              "--arg", f"r={r}", "--quiet", "--output", "-"], capture_output=True, text=True,
                             timeout=120, cwd=ROOT, check=True).stdout
        got = {v["name"]: v["value"] for v in json.loads(out)["values"]}
        assert got["P"] == {"10": 22, "11": 0, "30": 0, "40": 82, "41": 0}
        assert got["Q"] == [10, 40] and got["T"] == [10, 40]
        assert got["H"] == {"10": 11, "11": -1, "30": -1, "40": 41, "41": -1}
        assert got["s"] == s and got["b"] is b


def test_the_reference_is_self_contained():
    """docs/language.md is the whole reference: nothing in the repository points to a language
    definition or papers kept outside it."""
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    pointers = ("shared/spec", "shared/papers", "spec/G2PL", "spec section", "papers 00", "paper 00", "§")
    found = []
    for name in files:
        path = ROOT / name
        if path.suffix not in (".py", ".md", ".lark", ".j2", ".g2pl", ".toml", ".txt", "") or not path.is_file():
            continue
        text = " ".join(path.read_text(errors="replace").split())  # a pointer may be wrapped over lines
        found += [f"{name}: {p}" for p in pointers if p in text and name != "tests/compiler/test_integer_and_mode_errors.py"]
    assert not found, found
    doc = (ROOT / "docs" / "language.md").read_text()
    for section in ("## Lexical rules", "## Grammar", "## Integer functions", "## Aggregators", "## Remote reads",
                    "## Execution model", "## Input graphs", "## Command line and exit status", "## Output"):
        assert section in doc
    assert "| `mode` |" in doc
