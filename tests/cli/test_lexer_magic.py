"""The Pygments lexer (g2pl.lexer) and the IPython `%%g2pl` cell magic (g2pl.magic)."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROGRAMS = sorted((ROOT / "programs").glob("*.g2pl"))

pygments = pytest.importorskip("pygments")
from pygments.token import Comment, Error, Keyword, Name, Number, Operator, Punctuation  # noqa: E402

from g2pl.notebook.lexer import G2PLLexer  # noqa: E402

# --------------------------------------------------------------------------- lexer


def _tokens(text: str) -> list[tuple]:
    return [(t, v) for t, v in G2PLLexer().get_tokens(text) if v.strip()]


def _kind(text: str, word: str):
    """The token type of the first token spelled `word` in `text`."""
    for t, v in _tokens(text):
        if v == word:
            return t
    raise AssertionError(f"{word!r} not lexed as one token in {text!r}")


@pytest.mark.parametrize("path", PROGRAMS, ids=[p.name for p in PROGRAMS])
def test_every_program_lexes_without_errors(path):
    text = path.read_text()
    toks = list(G2PLLexer().get_tokens(text))
    assert not [v for t, v in toks if t in Error]
    assert "".join(v for _, v in toks) == (text if text.endswith("\n") else text + "\n")


def test_lexer_metadata():
    lx = G2PLLexer()
    assert lx.name == "G2PL" and lx.aliases == ["g2pl"] and lx.filenames == ["*.g2pl"]


@pytest.mark.parametrize("word", ["procedure", "function", "while", "if", "then", "else", "return", "in",
                                  "nvals", "outnvals"])
def test_keywords(word):
    text = {
        "procedure": "procedure p() { return 1; }",
        "function": "function f(X) = X;",
        "while": "p() { while (c) { x = 1; } return x; }",
        "if": "p() { if (c) then { x = 1; } else { x = 2; } return x; }",
        "then": "p() { if (c) then { x = 1; } else { x = 2; } return x; }",
        "else": "p() { if (c) then { x = 1; } else { x = 2; } return x; }",
        "return": "p() { return x; }",
        "in": "S = { u in X | u <- V };",
        "nvals": "D = { sum [ 1 | u <- nvals v ] | v <- V };",
        "outnvals": "D = { sum [ 1 | u <- outnvals v ] | v <- V };",
    }[word]
    assert _kind(text, word) is Keyword


def test_builtin_names_and_constants():
    text = "x = { id == r && Weight[e] < inf | (u, e, v) <- E } || emptyE; S = V \\ empty; b = true || false;"
    for w in ("V", "E", "empty", "emptyE", "id", "Weight"):
        assert _kind(text, w) is Name.Builtin, w
    for w in ("inf", "true", "false"):
        assert _kind(text, w) is Keyword.Constant, w


def test_whole_words_only():
    text = "argminDeps(X) = numVs(ids) + Degr(inside) + idx + Vs + infinity;"
    for w in ("numVs", "ids", "Degr", "inside", "idx", "Vs", "infinity"):
        assert _kind(text, w) is Name, w
    assert _kind(text, "argminDeps") is Name.Function


def test_aggregations_only_before_a_bracket():
    aggs = ("sum", "min", "max", "and", "or", "union", "argmin", "argmax", "avg", "count")
    for a in aggs:
        assert _kind(f"x = {a} [ u | u <- V ];", a) is Keyword.Pseudo, a
        assert _kind(f"x = {a}[u | u <- V];", a) is Keyword.Pseudo, a
    assert _kind("x = min(a, b);", "min") is Name.Builtin  # the elementwise function
    assert _kind("x = sum + count;", "sum") is Name  # plain names elsewhere
    assert _kind("x = sum + count;", "count") is Name


def test_builtin_functions_when_called():
    for f in ("min", "max", "abs", "sqrt", "log", "exp", "floor", "ceil", "int", "float", "rand"):
        assert _kind(f"  x = {f}(y);", f) is Name.Builtin, f
    assert _kind("  x = absolute(y);", "absolute") is Name


def test_arrow_operators_numbers_comments():
    toks = _tokens("a = b < -1; c = { x | x <- V }; d = 2.5e-3 + .5 + 3; // tail\n/* multi\nline */ e = 1;")
    assert (Operator, "<-") in toks
    assert (Operator, "<") in toks and (Operator, "-") in toks
    assert (Number.Float, "2.5e-3") in toks and (Number.Float, ".5") in toks
    assert (Number.Integer, "3") in toks
    assert (Comment.Single, "// tail") in toks
    assert any(t is Comment.Multiline and "line */" in v for t, v in toks)
    for op in ("||", "&&", "==", "!=", "<=", ">=", "\\", "!", "?", "%"):
        assert (Operator, op) in _tokens(f"x = a {op} b;"), op


def test_type_annotations():
    text = "bfs(root: vid, k: int) { M : eset = emptyE; S : vset = V; D : vertex<float> = x; " \
           "W : edge < int > = y; c = b ? 1 : int(z); return M; }"
    toks = _tokens(text)
    types = [v for t, v in toks if t is Keyword.Type]
    assert types == ["vid", "int", "eset", "vset", "vertex", "float", "edge", "int"]
    assert (Name.Builtin, "int") in toks  # int(z) after the ternary's `:` is the conversion
    assert (Name.Function, "bfs") in toks
    assert _kind(text, "<") is Punctuation


def test_definition_names():
    text = "procedure mm() { return 1; }\nf(X) = X;\nmain() {\n  x = g(1);\n  return x;\n}\n"
    toks = _tokens(text)
    assert (Name.Function, "mm") in toks and (Name.Function, "f") in toks and (Name.Function, "main") in toks
    assert (Name, "g") in toks  # a call inside a body is not a definition


def test_keyword_at_line_start_is_not_a_definition():
    toks = _tokens("p() {\nwhile (c) { x = 1; }\nreturn x;\n}")
    assert (Keyword, "while") in toks


def test_entry_point_declared_in_pyproject():
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        tomllib = pytest.importorskip("tomli")
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    eps = meta["project"]["entry-points"]["pygments.lexers"]
    assert eps == {"g2pl": "g2pl.lexer:G2PLLexer"}
    mod, _, attr = eps["g2pl"].partition(":")
    assert getattr(importlib.import_module(mod), attr) is G2PLLexer
    extras = meta["project"]["optional-dependencies"]["notebook"]
    assert {"ipython", "pygments", "pandas"} <= {e.split(">")[0].split("=")[0] for e in extras}


def test_installed_entry_point_finds_the_lexer():
    from importlib.metadata import entry_points

    if not [ep for ep in entry_points(group="pygments.lexers") if ep.name == "g2pl"]:
        pytest.skip("g2pl is not installed in this environment (pip install -e .)")
    from pygments.lexers import get_lexer_by_name, get_lexer_for_filename

    assert isinstance(get_lexer_by_name("g2pl"), G2PLLexer)
    assert isinstance(get_lexer_for_filename("prog.g2pl"), G2PLLexer)


def test_highlight_to_html():
    from pygments import highlight
    from pygments.formatters import HtmlFormatter

    html = highlight((ROOT / "programs" / "bfs.g2pl").read_text(), G2PLLexer(), HtmlFormatter())
    assert 'class="k">while<' in html and 'class="kp">or<' in html


# --------------------------------------------------------------------------- %%g2pl

BFS = (ROOT / "programs" / "bfs.g2pl").read_text()


@pytest.fixture(scope="module")
def ip():
    pytest.importorskip("IPython")
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "g2pl.magic")
    return shell


def test_magic_runs_on_networkx_graph(ip, capsys):
    nx = pytest.importorskip("networkx")
    G = nx.path_graph(5)
    G.add_edge(4, 10)
    G.add_node(20)
    ip.user_ns["G"] = G
    res = ip.run_cell_magic("g2pl", "G --arg root=0 --out lv -O0", BFS)
    assert res is ip.user_ns["lv"]
    assert res["Level"] == {"0": 0, "1": 1, "2": 2, "3": 3, "4": 4, "10": 5, "20": -1}
    assert res.stats["opt_level"] == 0
    assert res.graph is not None and res.graph.n == 7
    assert res.array("Level").tolist() == [0, 1, 2, 3, 4, 5, -1]
    assert capsys.readouterr().err == ""


def test_magic_default_out_graph_objects_and_specs(ip):
    from g2pl import Graph

    prog = "k() {\n  n = count [ v | v <- V ];\n  S = { rand() < 2.0 | v <- V };\n  return n, S;\n}\n"
    ip.user_ns["g"] = Graph.from_edges([1, 2], [2, 3])
    res = ip.run_cell_magic("g2pl", "g", prog)
    assert ip.user_ns["_g2pl"] is res and res["n"] == 3
    assert res.array("S").all()  # a vertex set as a bool array: the magic attaches the graph
    ip.user_ns["spec"] = "er:30:40"
    assert ip.run_cell_magic("g2pl", "spec --seed 3", prog)["n"] == 30
    assert ip.run_cell_magic("g2pl", "kron:4 --seed 1 --entry k", prog)["n"] == 16


def test_magic_shows_g2pl_errors_without_traceback(ip, capsys):
    ip.user_ns.pop("bad", None)
    ip.user_ns["G"] = Graph_small()
    cell = "bad() {\n  X = { 1 | v <- V };\n  while (X) { X = X; }\n  return X;\n}\n"
    assert ip.run_cell_magic("g2pl", "G --out bad", cell) is None
    err = capsys.readouterr().err
    assert "<%%g2pl cell>:3:10: error:" in err and "scalar bool" in err
    assert "    3 |   while (X) { X = X; }" in err and "^" in err
    assert "Traceback" not in err
    assert "bad" not in ip.user_ns
    # a syntax error, a missing argument, an unknown graph variable
    assert ip.run_cell_magic("g2pl", "G", "p() {\n  X = 1\n  return X;\n}\n") is None
    assert "<%%g2pl cell>:3:3: error: unexpected `return`" in capsys.readouterr().err
    assert ip.run_cell_magic("g2pl", "G", BFS) is None
    assert "missing argument `root`" in capsys.readouterr().err
    assert ip.run_cell_magic("g2pl", "nosuchvar --arg root=0", BFS) is None
    assert "no variable `nosuchvar`" in capsys.readouterr().err
    ip.user_ns["notagraph"] = 42
    assert ip.run_cell_magic("g2pl", "notagraph --arg root=0", BFS) is None
    assert "is a int" in capsys.readouterr().err


def test_magic_usage_errors(ip):
    from IPython.core.error import UsageError

    with pytest.raises(UsageError, match="unrecognized arguments"):
        ip.run_cell_magic("g2pl", "G --bogus", BFS)
    with pytest.raises(UsageError, match="-O"):
        ip.run_cell_magic("g2pl", "G -O7", BFS)


def test_magic_result_displays_a_summary(ip, capsys):
    ip.user_ns["G"] = Graph_small()
    ip.run_cell("%%g2pl G --arg root=1 --out r2\n" + BFS, store_history=False)
    ip.run_cell("r2", store_history=False)
    out = capsys.readouterr().out
    assert "<g2pl Result of `bfs`>" in out and "Level (vertex graph of int)" in out


def Graph_small():  # noqa: N802 - reads like a constructor in the tests above
    from g2pl import Graph

    return Graph.from_edges([1, 2, 3], [2, 3, 4])


def test_load_ipython_extension_registers_the_magic(ip):
    assert "g2pl" in ip.magics_manager.magics["cell"]
    assert "g2pl.magic" in sys.modules


# --------------------------------------------------------------------------- docs stay honest


def _doc_blocks(name: str, lang: str = "g2pl") -> list[str]:
    import re

    path = ROOT / "docs" / name
    if not path.exists():
        pytest.skip(f"docs/{name} not present")
    return re.findall(rf"```{lang}\n(.*?)```", path.read_text(), re.S)


@pytest.mark.parametrize("name", ["tutorial.md", "language.md", "clusters-and-gpus.md"])
def test_doc_code_blocks_lex_cleanly(name):
    for block in _doc_blocks(name):
        assert not [v for t, v in G2PLLexer().get_tokens(block) if t in Error], block


def test_tutorial_programs_compile_and_give_the_printed_matching(tmp_path):
    import re

    import g2pl

    text = (ROOT / "docs" / "tutorial.md").read_text()
    files = dict(re.findall(r"Save\s+(?:this\s+)?as\s+`tut/([^`]+)`.*?```(?:g2pl)?\n(.*?)```", text, re.S))
    assert {"small.el", "mm1.g2pl", "mm6.g2pl"} <= set(files)
    (tmp_path / "small.el").write_text(files.pop("small.el"))
    graph = g2pl.load_graph(str(tmp_path / "small.el"))
    for name, src in files.items():
        g2pl.compile(src, file=name)
    assert g2pl.compile(files["mm6.g2pl"]).run(graph)["M"] == [[1, 2], [3, 4], [5, 6], [7, 8]]
    assert g2pl.compile(files["mm5.g2pl"]).run(graph)["M"] == [[1, 2], [3, 4], [5, 6], [7, 8]]
    assert g2pl.compile(files["mm6.g2pl"]).run(graph)["M"] == (
        g2pl.compile(ROOT / "programs" / "matching.g2pl").run(graph)["M"])
    tri = g2pl.compile(files["tri.g2pl"]).run(graph)
    assert tri["T"] == {"1": 1, "2": 1, "3": 1, "4": 0, "5": 0, "6": 0, "7": 0, "8": 0} and tri["total"] == 1
    assert g2pl.compile(files["truss.g2pl"]).run(graph, {"k": 3})["K"] == [[1, 2], [1, 3], [2, 3]]
