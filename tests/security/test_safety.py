"""Generated-code safety and limits: user text never reaches generated code unquoted; limits fail cleanly."""

from __future__ import annotations

import keyword
import subprocess
import sys
from pathlib import Path

import pytest

import g2pl

ROOT = Path(__file__).resolve().parents[2]
GRAPH = g2pl.load_graph("er:30:60", seed=1)

# identifiers that are Python keywords, builtins, dunders or names the generated module itself uses
HOSTILE = sorted({*keyword.kwlist[3:12], "print", "exec", "eval", "__import__", "__init__", "__class__",
                  "np", "xp", "rt", "math", "state", "args", "adj", "run", "INF", "NAN", "VARIABLES",
                  "t1", "v_x", "_x0", "_send", "_present", "_E", "_saved", "h_t1", "rq_t1"})


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_identifiers_compile_and_run(name):
    if not name.isidentifier() or keyword.iskeyword(name) and name in ("True", "False", "None"):
        pytest.skip("not a G2PL name")
    src = f"""
    helper({name}) = {name} + 1;
    p() {{
      {name} = {{ helper(int(id)) | v <- V }};
      s = sum [ x | x <- {name} ];
      return {name}, s;
    }}
    """
    try:
        prog = g2pl.compile(src)
    except g2pl.G2PLError as e:  # a G2PL keyword or built-in (e.g. `in`) is refused cleanly
        assert "error" in e.render()
        return
    res = prog.run(GRAPH)
    vals = res[name]
    assert all(vals[k] == int(k) + 1 for k in vals)
    assert res["s"] == sum(int(k) + 1 for k in vals)


def test_user_text_in_comments_and_file_names_is_neutralized(tmp_path):
    # a file name and source text crafted to break out of a docstring or a comment
    evil = tmp_path / 'x"""\nimport os; os.system("echo PWNED")\n""".g2pl'
    evil.write_text('p() {\n  // """ ; import os\n  x = 1;\n  return x;\n}\n')
    code = g2pl.compile(evil).python()
    compile(code, "gen", "exec")  # still valid Python
    tree = __import__("ast").parse(code)
    imports = [n for n in __import__("ast").walk(tree) if isinstance(n, (__import__("ast").Import,
                                                                         __import__("ast").ImportFrom))]
    assert {a.name for n in imports for a in n.names} <= {"math", "numpy", "Spec", "Broadcast"}
    assert {n.module for n in imports if isinstance(n, __import__("ast").ImportFrom)} <= {"g2pl.contract"}
    assert g2pl.compile(evil).run(GRAPH)["x"] == 1


def test_arg_values_are_parsed_never_evaluated(capsys):
    prog = g2pl.compile("p(t: float) { return t; }")
    for bad in ("__import__('os').system('echo PWNED')", "1; import os", "nan", "1e999999x"):
        with pytest.raises(g2pl.G2PLError):
            prog.run(GRAPH, args={"t": bad})
    assert prog.run(GRAPH, args={"t": "2.5"})["t"] == 2.5
    assert "PWNED" not in capsys.readouterr().out


def test_memory_estimate_refuses_huge_graphs():
    r = subprocess.run([sys.executable, "-m", "g2pl.cli", "run", str(ROOT / "programs" / "cc.g2pl"),
                        "--graph", "kron:30"], capture_output=True, text=True, timeout=60,
                       env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert r.returncode == 2
    assert "GiB" in r.stderr and "Traceback" not in r.stderr


def test_limits_report_partial_stats():
    prog = g2pl.compile(ROOT / "programs" / "pagerank.g2pl")
    with pytest.raises(g2pl.G2PLRuntimeError, match="partial stats"):
        prog.run(GRAPH, args={"iters": 10**9, "damping": 0.85}, time_limit=0.2)
    with pytest.raises(g2pl.G2PLRuntimeError, match=r"stopped after 5 supersteps.*partial stats: 5 supersteps"):
        prog.run(GRAPH, args={"iters": 10**9, "damping": 0.85}, max_supersteps=5)
