"""Success paths of the command-line tools `g2plc` and `g2pl` (docs/language.md, "Command line and exit status").

`g2plc --emit ast|ir|plan|py` and `-o`, `g2pl plan` (text and --dot),
`g2pl check`, and `g2pl run` with the exact --output / --stats JSON shapes,
the -O0 message accounting, --max-supersteps, -O levels, --disable-pass,
--seed, --directed and --entry.  The entry points run in-process (fast); a
few runs go through a real process to check exit statuses end to end.
"""

from __future__ import annotations

import importlib.util
import json
import math
import re
from pathlib import Path

import pytest
from cli_util import call, run_proc
from program_args import cli_args

from g2pl.cli import g2pl_main, g2plc_main

ROOT = Path(__file__).resolve().parents[2]
PROGRAMS = ROOT / "programs"
BFS = PROGRAMS / "bfs.g2pl"
ALL_PROGRAMS = sorted(PROGRAMS.glob("*.g2pl"))
PASSES = ("reuse", "merge", "reorder", "prune", "pack", "direction")

# Procedure names that differ from the file name.
ENTRY_NAMES = {"densest": "ds", "matching": "mm"}


# --------------------------------------------------------------------------- helpers


def ok(main, argv: list, capsys) -> str:
    rc, out, err = call(main, argv, capsys)
    assert rc == 0, f"exit status {rc}:\n{err}"
    assert "Traceback" not in err and "error" not in err, err
    return out


def _no_constants(name: str):
    raise AssertionError(f"non-standard JSON constant {name} (non-finite floats must be strings)")


def load_json(path: Path) -> dict:
    return json.loads(path.read_text(), parse_constant=_no_constants)


def path_graph(tmp_path: Path, n_edges: int, extra: str = "", name: str = "path.txt") -> Path:
    p = tmp_path / name
    p.write_text("# a path\n" + "".join(f"{i} {i + 1}\n" for i in range(n_edges)) + extra)
    return p


def run_json(capsys, tmp_path: Path, prog, graph, *extra, tag: str = "") -> tuple[dict, dict]:
    """`g2pl run ... --output --stats`; returns (output JSON, stats JSON)."""
    out_json, stats_json = tmp_path / f"out{tag}.json", tmp_path / f"stats{tag}.json"
    ok(g2pl_main, ["run", prog, "--graph", graph, *extra, "--quiet", "--output", out_json, "--stats", stats_json],
       capsys)
    return load_json(out_json), load_json(stats_json)


def same(a, b) -> bool:
    """Equal JSON values, floats up to rounding (optimizations may reorder float sums)."""
    if isinstance(a, float) or isinstance(b, float):
        return (isinstance(a, (int, float)) and isinstance(b, (int, float))
                and math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def check_elem(x, ty: str) -> None:
    if ty == "bool":
        assert isinstance(x, bool), x
    elif ty in ("int", "vid"):
        assert isinstance(x, int) and not isinstance(x, bool), x
        if ty == "vid":
            assert x >= -1
    else:
        assert x in ("inf", "-inf", "nan") or (isinstance(x, (int, float)) and not isinstance(x, bool)
                                                 and math.isfinite(x)), x


def check_value_shape(v: dict, ids: set[int], directed: bool = False) -> None:
    """One --output value in the shape of docs/language.md, "Output"."""
    assert set(v) >= {"name", "kind", "type", "value"}, v
    kind, ty, val = v["kind"], v["type"], v["value"]
    assert isinstance(v["name"], str) and v["name"]
    assert kind in ("scalar", "vertex", "edge") and ty in ("bool", "int", "float", "vid"), v
    if kind == "scalar":
        check_elem(val, ty)
    elif kind == "vertex" and ty == "bool":
        assert isinstance(val, list) and val == sorted(val) and set(val) <= ids, val
        assert all(isinstance(x, int) for x in val)
    elif kind == "vertex":
        assert isinstance(val, dict) and set(val) == {str(i) for i in ids}, val
        for x in val.values():
            check_elem(x, ty)
    else:
        assert isinstance(val, list)
        width = 2 if ty == "bool" else 3
        assert all(isinstance(r, list) and len(r) == width for r in val), val
        keys = [(r[0], r[1]) for r in val]
        assert keys == sorted(keys) and len(set(keys)) == len(keys), val
        for u, w in keys:
            assert u in ids and w in ids
            if not directed:
                assert u < w
        if width == 3:
            for r in val:
                check_elem(r[2], ty)


# --------------------------------------------------------------------------- g2plc --emit


def test_emit_ast(capsys):
    out = ok(g2plc_main, [BFS, "--emit", "ast"], capsys)
    assert "bfs" in out and "root" in out and "while" in out
    assert "Level" in out and "nvals" in out


def test_emit_ir(capsys):
    out = ok(g2plc_main, [BFS, "--emit", "ir"], capsys)
    assert "bfs" in out
    for var in ("F", "Seen", "Level", "d"):
        assert re.search(rf"\b{var}\b", out), var
    assert "vertex" in out and "int" in out


def test_emit_plan_matches_g2pl_plan(capsys):
    emitted = ok(g2plc_main, [BFS, "--emit", "plan"], capsys)
    planned = ok(g2pl_main, ["plan", BFS], capsys)
    assert "state" in emitted
    assert emitted.strip() == planned.strip()


@pytest.mark.parametrize("prog", ALL_PROGRAMS, ids=lambda p: p.stem)
def test_emit_py_compiles_and_maps_to_source_lines(capsys, prog):
    code = ok(g2plc_main, [prog, "--emit", "py"], capsys)
    compile(code, f"{prog.stem}.py", "exec")
    assert re.search(r"^def run\(", code, re.M)
    src = prog.read_text().splitlines()
    refs = re.findall(r"# L(\d+): ?(.*)$", code, re.M)
    assert refs, "no `# L<n>:` comments"
    for n, text in refs:
        n = int(n)
        assert 1 <= n <= len(src), n
        if text.strip():
            assert text.strip() == src[n - 1].strip(), (n, text, src[n - 1])


def test_emit_py_covers_every_statement_line(capsys):
    code = ok(g2plc_main, [BFS, "--emit", "py"], capsys)
    lines = {int(n) for n in re.findall(r"# L(\d+):", code)}
    # bfs.g2pl: statements on lines 3-11 and the return on line 13
    assert set(range(3, 12)) | {13} <= lines, sorted(lines)


def test_o_writes_importable_module(tmp_path, capsys):
    out_py = tmp_path / "bfs_mod.py"
    ok(g2plc_main, [BFS, "-o", out_py], capsys)
    text = out_py.read_text()
    assert "# L7:" in text
    spec = importlib.util.spec_from_file_location("bfs_mod", out_py)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert callable(mod.run)

    # The written module is a complete program: the runtime executes it.
    import numpy as np

    import g2pl
    from g2pl.runtime.engine import Runtime

    graph = g2pl.load_graph(str(path_graph(tmp_path, 5)))
    rt = Runtime(graph, mod, seed=0)
    ((name, kind, elem, value),) = mod.run(rt, {"root": 0})
    assert (name, kind, elem) == ("Level", "vertex", "int")
    assert dict(zip(graph.ids.tolist(), np.asarray(value).tolist())) == {i: i for i in range(6)}


def test_o_with_options(tmp_path, capsys):
    for flags in (["-O0"], ["-O1"], ["-O2", "--disable-pass", "merge"]):
        out_py = tmp_path / "m.py"
        ok(g2plc_main, [BFS, "-o", out_py, *flags], capsys)
        compile(out_py.read_text(), str(out_py), "exec")


def test_default_output_file_next_to_cwd(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    ok(g2plc_main, [BFS], capsys)
    out_py = tmp_path / "bfs.py"
    assert out_py.exists()
    compile(out_py.read_text(), str(out_py), "exec")


# --------------------------------------------------------------------------- g2pl plan


def test_plan_shows_states_lines_exchanges_transitions(capsys):
    out = ok(g2pl_main, ["plan", BFS], capsys)
    src = BFS.read_text().splitlines()
    states = set(re.findall(r"\bstate (\d+)\b", out))
    assert len(states) >= 3, out
    # every statement's source text is shown together with its line number
    for n in (3, 4, 5, 6, 7, 8, 9, 10, 11):
        text = src[n - 1].strip()
        assert re.search(rf"\b{n}\b.*{re.escape(text)}", out), f"line {n} ({text}) not shown:\n{out}"
    # the message field of bfs (F, a bool, read from neighbours): a field of the -O0 record,
    # and at -O2 (pruned) the condition under which a neighbour sends at all
    out0 = ok(g2pl_main, ["plan", "-O0", BFS], capsys)
    assert re.search(r"\bF\b\s*:\s*bool", out0), out0
    assert re.search(r"sent if F@nbr", out), out
    assert "exchange" in out or "barrier" in out
    assert "aggregator" in out or "or over" in out
    # transitions between states, including the loop's conditional one
    assert re.search(r"->\s*state \d+", out), out
    assert re.search(r"if .*state \d+.*else.*state \d+", out), out
    assert "halt" in out or "return" in out


def test_plan_dot(tmp_path, capsys):
    dot = tmp_path / "bfs.dot"
    out = ok(g2pl_main, ["plan", BFS, "--dot", dot], capsys)
    assert "state" in out
    text = dot.read_text()
    assert re.match(r"\s*(strict\s+)?digraph\b", text), text[:100]
    assert "->" in text
    assert text.count("{") == text.count("}")
    assert text.rstrip().endswith("}")


@pytest.mark.parametrize("flags", [["-O0"], ["-O1"], ["-O2"]] + [["--disable-pass", p] for p in PASSES],
                         ids=lambda f: "_".join(f))
def test_plan_accepts_levels_and_passes(capsys, flags):
    out = ok(g2pl_main, ["plan", BFS, *flags], capsys)
    assert "state" in out


def test_plan_every_program(capsys):
    for prog in ALL_PROGRAMS:
        out = ok(g2pl_main, ["plan", prog, "-O0"], capsys)
        assert "state 0" in out, prog


# --------------------------------------------------------------------------- g2pl check


@pytest.mark.parametrize("prog", ALL_PROGRAMS, ids=lambda p: p.stem)
def test_check_every_program(capsys, prog):
    out = ok(g2pl_main, ["check", prog], capsys)
    assert "ok" in out


def test_check_e2e(tmp_path):
    p = run_proc("g2pl", "check", PROGRAMS / "matching.g2pl", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert "ok" in p.stdout and p.stderr == ""


# --------------------------------------------------------------------------- g2pl run: --output shapes


SHAPES_SRC = """\
shapes(t: float) {
  S = { id > 9 | v <- V };
  D = { sum [ 1 | u <- nvals v ] | v <- V };
  H = { Weight[e] > t | (u, e, v) <- E };
  W = { Weight[e] * 2.0 | (u, e, v) <- E };
  C = { 1 | (u, v) <- E };
  Ids = { id | v <- V };
  Inv = { 1.0 / float(id - 5) | v <- V };
  Odd = { (id == 5) ? -1.0 / 0.0 : ((id == 10) ? 0.0 / 0.0 : 0.5) | v <- V };
  n = sum [ 1 | v <- V ];
  x = 1.0 / 0.0;
  f = 2.5;
  b = S != empty;
  a = argmax [ d | d <- D ];
  return S, D, H, W, C, Ids, Inv, Odd, n, x, -1.0 / 0.0, 0.0 / 0.0, f, b, a, n + 1;
}
"""
# original IDs 5, 10, 20, 30 (not 0..n-1); "20 5" must come out as [5, 20]
WEIGHTED = "10 20 1.5\n20 5 3.0\n5 30 0.5\n30 10 2.0\n"


def test_run_output_json_shapes(tmp_path, capsys):
    prog = tmp_path / "shapes.g2pl"
    prog.write_text(SHAPES_SRC)
    graph = tmp_path / "w.txt"
    graph.write_text(WEIGHTED)
    out, _ = run_json(capsys, tmp_path, prog, graph, "--arg", "t=1.0")
    assert set(out) == {"entry", "values"}
    assert out["entry"] == "shapes"
    vals = out["values"]
    for v in vals:
        assert set(v) == {"name", "kind", "type", "value"}, v
        check_value_shape(v, {5, 10, 20, 30})
    got = {v["name"]: (v["kind"], v["type"], v["value"]) for v in vals}
    assert [v["name"] for v in vals] == ["S", "D", "H", "W", "C", "Ids", "Inv", "Odd", "n", "x", "ret10",
                                         "ret11", "f", "b", "a", "ret15"]
    assert got["S"] == ("vertex", "bool", [10, 20, 30])
    assert got["D"] == ("vertex", "int", {"5": 2, "10": 2, "20": 2, "30": 2})
    assert got["H"] == ("edge", "bool", [[5, 20], [10, 20], [10, 30]])
    assert got["W"] == ("edge", "float", [[5, 20, 6.0], [5, 30, 1.0], [10, 20, 3.0], [10, 30, 4.0]])
    assert got["C"] == ("edge", "int", [[5, 20, 1], [5, 30, 1], [10, 20, 1], [10, 30, 1]])
    assert got["Ids"] == ("vertex", "vid", {"5": 5, "10": 10, "20": 20, "30": 30})
    kind, ty, inv = got["Inv"]
    assert (kind, ty) == ("vertex", "float")
    assert inv["5"] == "inf" and inv["10"] == pytest.approx(0.2) and inv["30"] == pytest.approx(0.04)
    assert got["Odd"] == ("vertex", "float", {"5": "-inf", "10": "nan", "20": 0.5, "30": 0.5})
    assert got["n"] == ("scalar", "int", 4)
    assert got["x"] == ("scalar", "float", "inf")
    assert got["ret10"] == ("scalar", "float", "-inf")
    assert got["ret11"] == ("scalar", "float", "nan")
    assert got["f"] == ("scalar", "float", 2.5)
    assert got["b"] == ("scalar", "bool", True)
    assert got["a"] == ("scalar", "vid", 5)  # all degrees tie: the smaller original ID wins
    assert got["ret15"] == ("scalar", "int", 5)


def test_run_prints_summary_unless_quiet(tmp_path, capsys):
    graph = path_graph(tmp_path, 4)
    out = ok(g2pl_main, ["run", BFS, "--graph", graph, "--arg", "root=0"], capsys)
    assert "Level" in out and "supersteps" in out
    out = ok(g2pl_main, ["run", BFS, "--graph", graph, "--arg", "root=0", "--quiet"], capsys)
    assert out == ""


def test_run_bfs_values(tmp_path, capsys):
    graph = path_graph(tmp_path, 6, extra="100 101\n")
    out, _ = run_json(capsys, tmp_path, BFS, graph, "--arg", "root=2")
    (v,) = out["values"]
    assert (v["name"], v["kind"], v["type"]) == ("Level", "vertex", "int")
    assert v["value"] == {"0": 2, "1": 1, "2": 0, "3": 1, "4": 2, "5": 3, "6": 4, "100": -1, "101": -1}


# --------------------------------------------------------------------------- g2pl run: --stats


def check_stats(s: dict) -> None:
    for k in ("supersteps", "messages", "bytes", "ranks", "backend", "time_s", "per_superstep"):
        assert k in s, k
    for k in ("supersteps", "messages", "bytes", "ranks"):
        assert isinstance(s[k], int) and not isinstance(s[k], bool) and s[k] >= 0, (k, s[k])
    assert s["ranks"] >= 1
    assert s["backend"] == "numpy"
    assert isinstance(s["time_s"], (int, float)) and s["time_s"] >= 0
    per = s["per_superstep"]
    assert isinstance(per, list)
    assert s["supersteps"] == len(per) >= 1
    for p in per:
        for k in ("messages", "bytes", "active", "time_s"):
            assert k in p, k
        for k in ("messages", "bytes", "active"):
            assert isinstance(p[k], int) and p[k] >= 0, (k, p)
        assert isinstance(p["time_s"], (int, float)) and p["time_s"] >= 0
    assert s["messages"] == sum(p["messages"] for p in per)
    assert s["bytes"] == sum(p["bytes"] for p in per)
    # the last superstep computes and ends without an exchange
    assert per[-1]["messages"] == 0 and per[-1]["bytes"] == 0
    if s["ranks"] == 1:
        assert s["bytes"] == 0  # nothing crosses between ranks


def test_stats_O0_message_accounting(tmp_path, capsys):
    # 30 distinct edges; the self-loop and the duplicate are not adjacency entries
    graph = path_graph(tmp_path, 30, extra="5 5\n3 2\n")
    _, s = run_json(capsys, tmp_path, BFS, graph, "--arg", "root=0", "-O0")
    check_stats(s)
    adjacency = 2 * 30
    # -O0 baseline: 31 loop iterations (30 finding a new level, 1 finding none), each with a
    # neighbourhood exchange, plus 32 evaluations of `F != empty` (a global aggregation)
    assert s["supersteps"] == 64
    exchanges = s["supersteps"] - 1
    assert s["messages"] == exchanges * adjacency
    per = s["per_superstep"]
    assert [p["messages"] for p in per[:-1]] == [adjacency] * exchanges
    assert all(p["active"] <= 31 for p in per)


@pytest.mark.parametrize("prog", ALL_PROGRAMS, ids=lambda p: p.stem)
def test_run_every_program_O0_and_O2(tmp_path, capsys, prog):
    args = cli_args(prog, 0)
    out0, s0 = run_json(capsys, tmp_path, prog, "ws:40:4:0.3", "--seed", "3", *args, "-O0", tag="0")
    out2, s2 = run_json(capsys, tmp_path, prog, "ws:40:4:0.3", "--seed", "3", *args, "-O2", tag="2")
    for out in (out0, out2):
        assert set(out) == {"entry", "values"} and out["entry"] == ENTRY_NAMES.get(prog.stem, prog.stem)
        for v in out["values"]:
            check_value_shape(v, set(range(40)))
    assert same(out0, out2), "optimizations changed the result"
    check_stats(s0)
    check_stats(s2)
    assert s2["supersteps"] <= s0["supersteps"]
    assert s2["messages"] <= s0["messages"]
    # remote reads and keyed records add traffic on top of the neighbour records; cc_hub has supersteps of
    # aggregators alone
    if prog.stem not in ("pjcc", "mst", "cc_sv", "cc_hub"):
        per = s0["per_superstep"]
        adj = per[0]["messages"]
        assert adj > 0 and s0["messages"] == (s0["supersteps"] - 1) * adj


def test_max_supersteps(tmp_path):
    graph = path_graph(tmp_path, 30)
    out_json, stats_json = tmp_path / "o.json", tmp_path / "s.json"
    p = run_proc("g2pl", "run", BFS, "--graph", graph, "--arg", "root=0", "-O0", "--max-supersteps", "3",
                 "--output", out_json, "--stats", stats_json, cwd=tmp_path)
    assert p.returncode == 1, p.stderr
    assert "Traceback" not in p.stderr
    err_lines = [ln for ln in p.stderr.splitlines() if "error" in ln]
    assert len(err_lines) == 1 and "3" in err_lines[0] and "superstep" in err_lines[0], p.stderr
    assert not out_json.exists()  # no result is written as if the run had finished
    stats = json.loads(stats_json.read_text())  # but what was measured is kept, marked as stopped
    assert stats["stopped"]["reason"] == "max-supersteps" and stats["supersteps"] == 3
    assert len(stats["per_superstep"]) == 3


def test_max_supersteps_boundary(tmp_path, capsys):
    graph = path_graph(tmp_path, 30)
    base = ["run", BFS, "--graph", graph, "--arg", "root=0", "-O0", "--quiet"]
    ok(g2pl_main, [*base, "--max-supersteps", "64"], capsys)  # bfs needs exactly 64 here
    rc, _, err = call(g2pl_main, [*base, "--max-supersteps", "63"], capsys)
    assert rc == 1, err


# --------------------------------------------------------------------------- options


@pytest.mark.parametrize("flags", [["-O0"], ["-O1"], ["-O2"], ["-O", "1"]] +
                         [["--disable-pass", p] for p in PASSES] +
                         [["-O2", *sum((["--disable-pass", p] for p in PASSES), [])]],
                         ids=lambda f: "_".join(f).replace("--disable-pass_", "no-"))
def test_run_accepts_levels_and_passes(tmp_path, capsys, flags):
    graph = path_graph(tmp_path, 8, extra="3 7\n")
    out, s = run_json(capsys, tmp_path, BFS, graph, "--arg", "root=0", *flags)
    base, _ = run_json(capsys, tmp_path, BFS, graph, "--arg", "root=0", "-O0", tag="base")
    assert out == base
    check_stats(s)


@pytest.mark.parametrize("flags", [["-O0"], ["-O1"]] + [["--disable-pass", p] for p in PASSES],
                         ids=lambda f: "_".join(f))
def test_g2plc_accepts_levels_and_passes(capsys, flags):
    code = ok(g2plc_main, [BFS, "--emit", "py", *flags], capsys)
    compile(code, "bfs.py", "exec")


DEG_SRC = """\
deg() {
  D = { sum [ 1 | u <- nvals v ] | v <- V };
  O = { sum [ 1 | u <- outnvals v ] | v <- V };
  return E, D, O;
}
"""


@pytest.mark.parametrize("spec", ["er:30:40", "ws:30:4:0.5", "kron:5:4"])
def test_seed_changes_generated_graphs(tmp_path, capsys, spec):
    prog = tmp_path / "deg.g2pl"
    prog.write_text(DEG_SRC)
    a, _ = run_json(capsys, tmp_path, prog, spec, "--seed", "1", tag="a")
    b, _ = run_json(capsys, tmp_path, prog, spec, "--seed", "1", tag="b")
    c, _ = run_json(capsys, tmp_path, prog, spec, "--seed", "2", tag="c")
    assert a == b, "same seed, different graph"
    assert a["values"][0]["value"] != c["values"][0]["value"], "--seed did not change the graph"


def test_directed_edge_list(tmp_path, capsys):
    prog = tmp_path / "deg.g2pl"
    prog.write_text(DEG_SRC)
    graph = tmp_path / "d.txt"
    graph.write_text("1 2\n3 2\n2 4\n")
    und, _ = run_json(capsys, tmp_path, prog, graph, tag="u")
    dire, _ = run_json(capsys, tmp_path, prog, graph, "--directed", tag="d")
    u = {v["name"]: v["value"] for v in und["values"]}
    d = {v["name"]: v["value"] for v in dire["values"]}
    edges_u = next(v["value"] for v in und["values"] if v["kind"] == "edge")
    edges_d = next(v["value"] for v in dire["values"] if v["kind"] == "edge")
    assert edges_u == [[1, 2], [2, 3], [2, 4]]
    assert edges_d == [[1, 2], [2, 4], [3, 2]]  # source first
    assert u["D"] == {"1": 1, "2": 3, "3": 1, "4": 1}
    assert d["D"] == {"1": 0, "2": 2, "3": 0, "4": 1}  # nvals: in-neighbours
    assert d["O"] == {"1": 1, "2": 1, "3": 1, "4": 0}  # outnvals: out-neighbours


ENTRIES_SRC = """\
other() {
  return 7;
}
main() {
  return 1;
}
"""


def test_entry_selection(tmp_path, capsys):
    prog = tmp_path / "two.g2pl"
    prog.write_text(ENTRIES_SRC)
    graph = path_graph(tmp_path, 2)
    out, s = run_json(capsys, tmp_path, prog, graph, tag="main")
    assert out["entry"] == "main" and out["values"][0]["value"] == 1
    out, s = run_json(capsys, tmp_path, prog, graph, "--entry", "other", tag="other")
    assert out["entry"] == "other" and out["values"][0]["value"] == 7
    assert out["values"][0]["name"] == "ret0"
    text = ok(g2pl_main, ["plan", prog, "--entry", "other"], capsys)
    assert "other" in text
    code = ok(g2plc_main, [prog, "--entry", "other", "--emit", "py"], capsys)
    assert "other" in code
    assert "main" in ok(g2pl_main, ["check", prog], capsys)


def test_run_e2e_success(tmp_path):
    graph = path_graph(tmp_path, 10)
    out_json, stats_json = tmp_path / "o.json", tmp_path / "s.json"
    p = run_proc("g2pl", "run", BFS, "--graph", graph, "--arg", "root=0", "--output", out_json,
                 "--stats", stats_json, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert "Traceback" not in p.stderr
    check_stats(load_json(stats_json))
    assert load_json(out_json)["values"][0]["value"]["10"] == 10


def test_g2plc_e2e_writes_module(tmp_path):
    p = run_proc("g2plc", BFS, "-o", tmp_path / "b.py", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    compile((tmp_path / "b.py").read_text(), "b.py", "exec")


def test_unary_minus_of_a_variable(tmp_path, capsys):
    prog = tmp_path / "neg.g2pl"
    prog.write_text("p() {\n  x = 2.5;\n  y = -x;\n  N = { -id | v <- V };\n  return y, N;\n}\n")
    graph = path_graph(tmp_path, 2)
    out, _ = run_json(capsys, tmp_path, prog, graph)
    vals = {v["name"]: v["value"] for v in out["values"]}
    assert vals == {"y": -2.5, "N": {"0": 0, "1": -1, "2": -2}}


def test_output_and_stats_dash_write_json_to_stdout_alone(tmp_path, capsys):
    g = path_graph(tmp_path, 3)
    out = ok(g2pl_main, ["run", BFS, "--graph", g, "--arg", "root=0", "--output", "-"], capsys)
    assert json.loads(out) == {"entry": "bfs", "values": [
        {"name": "Level", "kind": "vertex", "type": "int", "value": {"0": 0, "1": 1, "2": 2, "3": 3}}]}
    stats = json.loads(ok(g2pl_main, ["run", BFS, "--graph", g, "--arg", "root=0", "--stats", "-"], capsys))
    assert stats["supersteps"] >= 4 and stats["ranks"] == 1
    rc, out, err = call(g2pl_main, ["run", BFS, "--graph", g, "--arg", "root=0", "--output", "-", "--stats", "-"],
                        capsys)
    assert rc == 2 and out == "" and "only one of them" in err


@pytest.mark.parametrize("flag", ["--output", "--stats", "--plot"])
def test_unwritable_output_path_is_refused_before_running(tmp_path, capsys, flag):
    g = path_graph(tmp_path, 3)
    for bad, why in ((tmp_path / "no" / "o.json", "does not exist"), (tmp_path, "is a directory")):
        rc, out, err = call(g2pl_main, ["run", BFS, "--graph", g, "--arg", "root=0", flag, bad], capsys)
        assert rc == 2 and why in err and f"{flag} {bad}" in err and "Traceback" not in err
        assert "vertices" not in out  # refused before loading the graph or running


def test_unwritable_compile_and_plan_outputs_are_refused(tmp_path, capsys):
    missing = tmp_path / "no" / "x"
    rc, out, err = call(g2plc_main, [BFS, "-o", missing], capsys)
    assert rc == 2 and "-o" in err and "does not exist" in err and "Traceback" not in err
    rc, out, err = call(g2pl_main, ["plan", BFS, "--dot", missing], capsys)
    assert rc == 2 and "--dot" in err and "does not exist" in err and out == ""


def test_run_show_plan_lists_each_exchange_with_its_decisions(capsys, tmp_path) -> None:
    """`g2pl run --show-plan` (the Makefile's demo): one line per exchange, as `g2pl plan` describes it."""
    out = ok(g2pl_main, ["run", PROGRAMS / "matching.g2pl", "--graph", "ws:300:6:0.3", "--seed", "1", "--show-plan",
                         "--output", tmp_path / "m.json"], capsys)
    assert re.search(r"^plan: \d+ states, \d+ end with an exchange \(-O2; `g2pl plan` shows it all\)$", out, re.M)
    assert "messages along in-edges -> $3 = sum of 1 [sent if NotMatched@nbr;" in out
    assert "endpoint exchange: $7 = edges with NotMatched@src && NotMatched@dst" in out


def test_python_dash_m_g2pl_is_the_g2pl_command(tmp_path) -> None:
    """`python -m g2pl` runs the `g2pl` command (what launchers that start a module use)."""
    import subprocess
    import sys

    out = tmp_path / "o.json"
    r = subprocess.run([sys.executable, "-m", "g2pl", "run", str(BFS), "--graph", "ws:50:4:0.2", "--arg", "root=0",
                        "--quiet", "--output", str(out)], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert json.loads(out.read_text())["entry"] == "bfs"
    r = subprocess.run([sys.executable, "-m", "g2pl", "frobnicate"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "g2pl: error:" in r.stderr
