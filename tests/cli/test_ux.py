"""User-experience features of the command-line tools.

Progress on stderr during `g2pl run` (plain lines off a terminal, a live line
on one, `--quiet`), `--plot`, `g2pl plan --svg` and the annotated dot picture,
`g2pl check` listing every error at once (while `g2pl run` and `g2plc` keep
reporting the first), `g2pl explain`, and docs/cli.md being the current
rendering of the argument parsers.  Optional tools (matplotlib, rich,
Graphviz `dot`, MPI) are skipped cleanly where missing.
"""

from __future__ import annotations

import io
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from cli_util import call, write

from g2pl.cli import cli_reference, g2pl_main, g2plc_main
from g2pl.runtime.engine import Stats, SuperstepStat

ROOT = Path(__file__).resolve().parents[2]
PROGRAMS = ROOT / "programs"
BFS = PROGRAMS / "bfs.g2pl"
MATCHING = PROGRAMS / "matching.g2pl"
ALL_PROGRAMS = sorted(PROGRAMS.glob("*.g2pl"))
HAVE_DOT = shutil.which("dot") is not None


def path_graph(tmp_path: Path, n: int = 30) -> Path:
    return write(tmp_path, "path.txt", "".join(f"{i} {i + 1}\n" for i in range(n)))


def error_lines(err: str) -> list[str]:
    return [ln for ln in err.splitlines() if " error: " in ln]


# --------------------------------------------------------------------------- progress


def test_progress_plain_lines_on_stderr(tmp_path, capsys):
    """Off a terminal: plain lines on stderr (here the final one), stdout untouched."""
    rc, out, err = call(g2pl_main, ["run", BFS, "--graph", path_graph(tmp_path), "--arg", "root=0"], capsys)
    assert rc == 0, err
    lines = err.splitlines()
    assert lines, "no progress on stderr"
    assert all(ln.startswith("g2pl: ") for ln in lines), err
    assert re.search(r"g2pl: done: \d+ supersteps, [\d,]+ messages", lines[-1]), err
    assert "\r" not in err and "\x1b" not in err  # no terminal control codes in a log
    assert "g2pl:" not in out and "stats:" in out


def test_progress_quiet_prints_nothing(tmp_path, capsys):
    rc, out, err = call(g2pl_main, ["run", BFS, "--graph", path_graph(tmp_path), "--arg", "root=0", "--quiet",
                                    "--output", tmp_path / "o.json"], capsys)
    assert rc == 0
    assert out == "" and err == ""
    assert (tmp_path / "o.json").exists()


def test_progress_no_done_line_before_an_error(tmp_path, capsys):
    rc, _, err = call(g2pl_main, ["run", BFS, "--graph", path_graph(tmp_path), "--arg", "root=0",
                                  "--max-supersteps", "2"], capsys)
    assert rc == 1
    assert "done" not in err and err.startswith(f"{BFS}: error: "), err


def _stats(steps: list[tuple[int, int]]) -> Stats:
    st = Stats()
    for i, (msgs, active) in enumerate(steps):
        st.per_superstep.append(SuperstepStat(i, 0, msgs, 0, 0, active, 0.01))
    return st


def test_progress_plain_mode_at_most_one_line_per_second():
    from g2pl.cli.progress import Progress

    now = [0.0]
    buf = io.StringIO()
    pr = Progress(buf, live=False, clock=lambda: now[0])
    assert not pr.live
    steps: list[tuple[int, int]] = []
    for k in range(40):  # 40 supersteps, 0.1 s apart: 4 s
        now[0] = 0.1 * (k + 1)
        steps.append((1000, 50))
        pr(_stats(steps))
    periodic = buf.getvalue().splitlines()
    assert 3 <= len(periodic) <= 4, periodic
    assert all(re.fullmatch(r"g2pl: superstep \d+, 50 active vertices, \S+ messages/s, [\d.]+ s", ln)
               for ln in periodic), periodic
    assert "10k messages/s" in periodic[1]  # 10 supersteps x 1000 messages in the second second
    steps.append((0, 50))
    pr(_stats(steps), True)
    lines = buf.getvalue().splitlines()
    assert len(lines) == len(periodic) + 1
    assert lines[-1].startswith("g2pl: done: 41 supersteps, 40,000 messages"), lines[-1]
    pr(_stats(steps))  # after the end: nothing more
    pr.close(ok=True)
    assert len(buf.getvalue().splitlines()) == len(lines)


def test_progress_deferred_final_line():
    from g2pl.cli.progress import Progress

    buf = io.StringIO()
    pr = Progress(buf, live=False, defer_final=True)
    pr(_stats([(5, 3), (0, 3)]), True)
    assert buf.getvalue() == ""
    pr.close(ok=False)  # a failed run: no "done" line
    assert buf.getvalue() == ""
    buf2 = io.StringIO()
    pr = Progress(buf2, live=False, defer_final=True, ranks=4)
    pr(_stats([(5, 3), (0, 3)]), True)
    pr.close(ok=True, totals={"supersteps": 2, "messages": 20, "ranks": 4})
    assert re.match(r"g2pl: done: 2 supersteps, 20 messages .* on 4 ranks$", buf2.getvalue().strip())


def _live_run(progress_cls, n: int) -> str:
    """What a live Progress prints for n supersteps of 100 messages and 7 active vertices (0.5 s
    apart on a fake clock) and a final one; the live display must be stopped at the end."""
    now = [0.0]
    buf = io.StringIO()
    pr = progress_cls(buf, live=True, clock=lambda: now[0])
    steps = []
    for k in range(n):
        now[0] = 0.5 * (k + 1)
        steps.append((100, 7))
        pr(_stats(steps))
    pr(_stats(steps + [(0, 7)]), True)
    assert pr._rich is None  # the live display is stopped
    return buf.getvalue()


def test_progress_live_line_with_rich():
    pytest.importorskip("rich")
    from g2pl.cli.progress import Progress

    text = _live_run(Progress, 5)
    assert "superstep 5" in text and "7 active vertices" in text and "done: 6 supersteps" in text


def test_progress_live_line_without_rich(monkeypatch):
    from g2pl.cli.progress import Progress

    for mod in ("rich", "rich.console", "rich.live", "rich.text"):
        monkeypatch.setitem(sys.modules, mod, None)  # import fails
    text = _live_run(Progress, 3)
    assert text.count("\r") == 4 and text.endswith("\n") and text.count("\n") == 1
    assert "\rg2pl: superstep 3" in text and "\rg2pl: done: 4 supersteps" in text


def test_progress_only_rank0_prints(tmp_path):
    """Under MPI the progress comes from rank 0 alone, with the totals of every rank at the end."""
    try:
        import mpi4py  # noqa: F401

        from g2pl.runtime.launch import find_mpiexec
    except ImportError:
        pytest.skip("mpi4py not installed")
    if find_mpiexec() is None:
        pytest.skip("mpiexec not installed")
    r = subprocess.run([sys.executable, "-m", "g2pl.cli", "run", str(BFS), "--graph", str(path_graph(tmp_path)),
                        "--arg", "root=0", "--np", "2"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stderr.count("g2pl: done:") == 1, r.stderr
    assert "on 2 ranks" in r.stderr


# --------------------------------------------------------------------------- --plot


def test_plot_writes_a_png(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    png = tmp_path / "steps.png"
    rc, _, err = call(g2pl_main, ["run", BFS, "--graph", "ws:300:4:0.2", "--arg", "root=0", "--quiet",
                                  "--plot", png], capsys)
    assert rc == 0, err
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000


def test_plot_from_stats_dict(tmp_path):
    pytest.importorskip("matplotlib")
    from g2pl.cli.plot import plot_stats

    stats = {"entry": "x", "supersteps": 3, "ranks": 2, "opt_level": 2, "time_s": 0.1, "per_superstep": [
        {"superstep": i, "messages": 10 * i, "bytes": 5 * i, "record_bytes": 80 * i, "active": 9, "time_s": 0.01}
        for i in range(3)]}
    out = tmp_path / "s.svg"
    plot_stats(stats, out)
    text = out.read_text()
    assert "<svg" in text and "active vertices" in text and "bytes between ranks" in text


def test_plot_bad_format_fails_before_the_run(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    rc, out, err = call(g2pl_main, ["run", BFS, "--graph", "ws:300:4:0.2", "--arg", "root=0",
                                    "--plot", tmp_path / "x.nosuch"], capsys)
    assert rc == 2
    assert "unknown image format" in err and ".png" in err
    assert out == ""  # nothing ran


# --------------------------------------------------------------------------- plan --dot / --svg


def test_dot_shows_fields_and_optimizations(tmp_path, capsys):
    dot = tmp_path / "mm.dot"
    rc, _, err = call(g2pl_main, ["plan", MATCHING, "--dot", dot], capsys)
    assert rc == 0, err
    text = dot.read_text()
    assert "shape=note" in text and "optimizations:" in text
    assert "merge: line 7" in text and "prune: line 18" in text  # the pass log
    assert "carries: packed no fields = 0 bits per mirror; presence bit per" in text  # an exchange's layout (wrapped)
    assert text.count("{") == text.count("}")
    rc, _, err = call(g2pl_main, ["plan", MATCHING, "-O0", "--dot", dot], capsys)
    text = re.sub(r"\\l\s*", " ", dot.read_text())  # label lines joined
    assert "-O0" in text and "merge:" not in text  # no communication pass at -O0
    assert "carries: record NotMatched:bool, $3:int, id:vid, Candidate:vid = 25 bytes per cross-rank adjacency entry" in text


@pytest.mark.skipif(not HAVE_DOT, reason="Graphviz `dot` not installed")
def test_plan_svg(tmp_path, capsys):
    svg = tmp_path / "mm.svg"
    rc, out, err = call(g2pl_main, ["plan", MATCHING, "--svg", svg], capsys)
    assert rc == 0, err
    assert "state 0" in out
    text = svg.read_text()
    assert "<svg" in text and "optimizations:" in text and "state 1 (superstep)" in text


def test_plan_svg_without_dot_is_a_clear_error(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: None)
    svg = tmp_path / "mm.svg"
    rc, out, err = call(g2pl_main, ["plan", MATCHING, "--svg", svg], capsys)
    assert rc == 2
    assert len(error_lines(err)) == 1 and "Graphviz" in err and "`dot`" in err and "Traceback" not in err
    assert out == "" and not svg.exists()


# --------------------------------------------------------------------------- check: every error at once

MANY = """p(n: int) {
  Seen = V;
  x = Sen;
  y = x + 1;
  b = 1 && 2;
  c = b;
  while (Seen) {
    z = undefined_thing;
    Seen = Seen \\ Seen;
  }
  w = twice(3) + twice(4);
  return y, c, w;
}
q() {
  M = emptyE;
  M = V;
  k = M;
  return k;
}
twice(a) = a * bogus;
"""

# (line, column, message fragment) of every error in MANY, in source order
MANY_ERRORS = [
    (3, 7, "undefined name `Sen`"),
    (5, 7, "`&&`"),
    (7, 10, "`while` condition must be a scalar bool"),
    (8, 9, "undefined name `undefined_thing`"),
    (16, 7, "`M` is an edge set"),
    (20, 16, "undefined name `bogus`"),  # in a function called twice: listed once
]


def test_check_reports_every_error(tmp_path, capsys):
    prog = write(tmp_path, "many.g2pl", MANY)
    rc, out, err = call(g2pl_main, ["check", prog], capsys)
    assert rc == 2 and out == ""
    heads = error_lines(err)
    assert len(heads) == len(MANY_ERRORS), err
    for head, (line, col, frag) in zip(heads, MANY_ERRORS):
        assert head.startswith(f"{prog}:{line}:{col}: error: "), head
        assert frag in head, head
    src = MANY.splitlines()
    lines = err.splitlines()
    for line, col, _ in MANY_ERRORS:  # each with its source line and a caret under the column
        i = next(k for k, ln in enumerate(lines) if ln.startswith(f"    {line} | "))
        assert lines[i].endswith(src[line - 1])
        assert lines[i + 1].index("^") == len(f"    {line} | ") + col - 1
    assert err.rstrip().endswith(f"{prog}: {len(MANY_ERRORS)} errors")
    assert "Traceback" not in err


def test_run_and_g2plc_still_report_the_first_error_only(tmp_path, capsys):
    prog = write(tmp_path, "many.g2pl", MANY)
    for main, argv in ((g2pl_main, ["run", prog, "--graph", "er:5:3", "--entry", "p", "--arg", "n=1"]),
                       (g2plc_main, [prog, "--entry", "p", "--emit", "py"])):
        rc, _, err = call(main, argv, capsys)
        assert rc == 2
        assert error_lines(err) == [f"{prog}:3:7: error: undefined name `Sen`; did you mean `Seen`?"], err


def test_check_does_not_cascade(tmp_path, capsys):
    """Uses of a variable whose definition failed are not errors of their own."""
    src = ("p() {\n  x = Sen;\n  y = x + 1;\n  S = { x > 0 | v <- V };\n  while (S != empty) {\n"
           "    S = S \\ S;\n  }\n  return y, S;\n}\n")
    prog = write(tmp_path, "one.g2pl", src)
    rc, _, err = call(g2pl_main, ["check", prog], capsys)
    assert rc == 2
    assert len(error_lines(err)) == 1 and f"{prog}:2:7: error: " in err, err
    assert "errors" not in err  # no summary for a single error


def test_check_keeps_annotated_types_after_an_error(tmp_path, capsys):
    src = "p() {\n  x: vertex<int> = { nope | v <- V };\n  y = x + 1.5;\n  z = x && true;\n  return y, z;\n}\n"
    prog = write(tmp_path, "ann.g2pl", src)
    rc, _, err = call(g2pl_main, ["check", prog], capsys)
    assert rc == 2
    heads = error_lines(err)
    assert len(heads) == 2, err  # `nope`, then `&&` on the (declared) int graph x
    assert ":2:" in heads[0] and ":4:" in heads[1] and "`&&`" in heads[1]


def test_check_syntax_error_stays_single(tmp_path, capsys):
    prog = write(tmp_path, "syn.g2pl", "p() {\n  x = 1\n  y = ;\n  return x;\n}\n")
    rc, _, err = call(g2pl_main, ["check", prog], capsys)
    assert rc == 2 and len(error_lines(err)) == 1, err


def test_check_debug_shows_a_traceback_per_error(tmp_path, capsys):
    prog = write(tmp_path, "many.g2pl", MANY)
    rc, _, err = call(g2pl_main, ["check", prog, "--debug"], capsys)
    assert rc == 2
    assert err.count("Traceback") == len(MANY_ERRORS)


def test_collecting_errors_does_not_change_valid_programs():
    import g2pl
    from g2pl.compiler.lowering.lower import lower_procedure
    from g2pl.compiler.pipeline import check_module, dump_ir

    for path in ALL_PROGRAMS:
        mod = g2pl.compile(path).module
        assert check_module(mod) == []
        for proc in mod.procedures.values():
            errors: list = []
            a = lower_procedure(mod, proc, collect=errors)
            b = lower_procedure(mod, proc)
            assert errors == []
            assert dump_ir(a) == dump_ir(b) and a.vars == b.vars and a.body == b.body, path


# --------------------------------------------------------------------------- explain


def test_explain_bfs(capsys):
    rc, out, err = call(g2pl_main, ["explain", BFS], capsys)
    assert rc == 0, err
    assert "procedure `bfs`" in out and "-O2" in out
    rows = {int(m.group(1)): m.group(0) for m in re.finditer(r"^\s*(\d+)  .*$", out, re.M)}
    assert set(rows) == {3, 4, 5, 6, 7, 8, 9, 10, 11, 13}, out  # one row per statement
    assert rows[3].rstrip().endswith("local") and "F = { id == root | v <- V };" in rows[3]
    assert "exchange: aggregator" in rows[7]
    assert "exchange: neighbour messages" in rows[9] and "(loop L7)" in rows[9]
    assert "cost   packed no fields = 0 bits per mirror; presence bit per mirror" in out
    for pas in ("merge: line 9", "prune: line 9", "direction: line 9"):
        assert re.search(r"opt\s+" + re.escape(pas), out), pas


def test_explain_levels_functions_and_entry(capsys, tmp_path):
    rc, out, _ = call(g2pl_main, ["explain", MATCHING, "-O0"], capsys)
    assert rc == 0
    assert "-O0" in out and "whole program record" in out and "pass: merge" not in out
    assert "inlines  argminDeps (L19), Deps (L18)" in out  # code from functions goes to the calling statement
    assert re.search(r"^\s+8  Candidate = argminDeps\(NotMatched\);.*exchange: 2 neighbour message exchanges",
                     out, re.M), out
    prog = write(tmp_path, "two.g2pl", "a() {\n  return 1;\n}\nb(p: vid) {\n  X = V;\n  x = X[p];\n"
                                       "  Y = { X[id] | v <- V };\n  return x, Y;\n}\n")
    rc, out, err = call(g2pl_main, ["explain", prog, "--entry", "b"], capsys)
    assert rc == 0, err
    assert "procedure `b`" in out and "aggregator" in out and "remote read" in out


def test_explain_every_program(capsys):
    for prog in ALL_PROGRAMS:
        for level in ("-O0", "-O2"):
            rc, out, err = call(g2pl_main, ["explain", prog, level], capsys)
            assert rc == 0, (prog, err)
            assert "LINE  STATEMENT" in out


# --------------------------------------------------------------------------- docs/cli.md


def test_every_command_prints_its_help(capsys):
    """`--help` formats every option's help text (a stray % in one breaks it for the whole command)."""
    for main, cmd in [(g2pl_main, c) for c in ("run", "plan", "check", "convert", "explain")] + [(g2plc_main, None)]:
        with pytest.raises(SystemExit) as ex:
            main(["--help"] if cmd is None else [cmd, "--help"])
        assert ex.value.code == 0, cmd
        assert "usage: g2pl" in capsys.readouterr().out


def test_cli_reference_is_current():
    """docs/cli.md is `cli_reference()`; after changing an option run `make docs`."""
    assert (ROOT / "docs" / "cli.md").read_text() == cli_reference()


def test_cli_reference_covers_every_command_and_option():
    text = cli_reference()
    for cmd in ("g2plc", "g2pl run", "g2pl plan", "g2pl check", "g2pl explain"):
        assert f"## `{cmd}`" in text
    for opt in ("--plot", "--svg", "--quiet", "--dot", "--emit", "--disable-pass", "`-O0`, `-O1`, `-O2`"):
        assert opt in text
    assert "docs/cli.md" in (ROOT / "README.md").read_text()
