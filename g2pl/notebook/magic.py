"""IPython / Jupyter cell magic: write a G2PL program in a cell and run it on a graph in the notebook.

    %load_ext g2pl.magic          (or g2pl.notebook.magic)

    %%g2pl G --arg root=0 --out res
    bfs(root: vid) {
      ...
    }

Usage: ``%%g2pl GRAPH [--arg NAME=VALUE]... [--entry NAME] [-O0|-O1|-O2] [--seed S]
[--directed] [--max-supersteps N] [--out VAR]``

``GRAPH`` names a variable of the notebook holding a `g2pl.Graph`, a networkx
graph (converted with `Graph.from_networkx`), a SciPy sparse matrix
(`Graph.from_scipy`: directed unless symmetric) or a string graph spec (a file or ``kron:10``,
``ws:N:K:P``, ``er:N:M``; ``--directed`` and ``--seed`` apply as for
``g2pl run``). A spec may also be written directly in place of a variable
name. The cell is compiled, the procedure run, and the `Result` is stored in
``VAR`` (default ``_g2pl``) and returned, so it shows as the cell's output.
G2PL errors (syntax, types, arguments, runtime) are printed as the usual
``file:line:col`` message with the source line and caret, without a
traceback; ``VAR`` is then left unchanged.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, magics_class

import g2pl
from g2pl.api import parse_args
from g2pl.errors import G2PLError

__all__ = ["G2PLMagics", "load_ipython_extension", "resolve_graph"]

CELL_FILE = "<%%g2pl cell>"


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # type: ignore[override]
        raise UsageError(f"%%g2pl: {message}\n{self.format_usage().strip()}")


def _parser() -> _Parser:
    p = _Parser(prog="%%g2pl", add_help=False,
                description="Compile the cell as a G2PL program and run it on a graph.")
    p.add_argument("graph", help="variable holding a g2pl.Graph, networkx graph, sparse matrix or graph spec")
    p.add_argument("--arg", action="append", default=[], metavar="NAME=VALUE", help="procedure argument")
    p.add_argument("--entry", help="procedure to run (default: the only one, or `main`)")
    p.add_argument("-O", dest="opt", type=int, choices=(0, 1, 2), default=2, metavar="LEVEL",
                   help="optimization level (-O0, -O1, -O2; default -O2)")
    p.add_argument("--seed", type=int, default=0, help="seed for rand() and graph generators")
    p.add_argument("--directed", action="store_true",
                   help="keep edge direction (a graph spec; a sparse matrix is directed unless symmetric)")
    p.add_argument("--max-supersteps", type=int, metavar="N")
    p.add_argument("--out", default="_g2pl", metavar="VAR", help="variable to store the Result in")
    return p


def _parse_kv(items: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for it in items:
        k, sep, v = it.partition("=")
        k = k.strip()
        if not sep or not k.isidentifier():
            raise G2PLError(f"--arg `{it}`: expected NAME=VALUE", file="%%g2pl")
        if k in out:
            raise G2PLError(f"--arg `{k}` given twice", file="%%g2pl")
        out[k] = v
    return out


def _looks_like_spec(text: str) -> bool:
    return any(c in text for c in ":./\\")


def resolve_graph(name: str, namespace: dict[str, Any], directed: bool | None = None, seed: int = 0) -> g2pl.Graph:
    """The `Graph` that GRAPH names: a notebook variable (Graph, networkx, sparse matrix, spec) or a spec.
    `directed=None`: not said (a sparse matrix is then directed unless symmetric)."""
    if name in namespace:
        obj = namespace[name]
    elif _looks_like_spec(name):
        obj = name
    else:
        raise G2PLError(f"no variable `{name}` in the notebook (expected a g2pl.Graph, a networkx graph, "
                        "a sparse matrix or a graph spec string)", file="%%g2pl")
    if isinstance(obj, g2pl.Graph):
        return obj
    if isinstance(obj, str):
        return g2pl.load_graph(obj, directed=directed, seed=seed)
    mod = type(obj).__module__ or ""
    if mod.startswith("networkx"):
        return g2pl.Graph.from_networkx(obj, name=name)
    if mod.startswith("scipy.sparse"):
        return g2pl.Graph.from_scipy(obj, directed=directed, name=name)
    raise G2PLError(f"`{name}` is a {type(obj).__name__}; expected a g2pl.Graph, a networkx graph, "
                    "a SciPy sparse matrix or a graph spec string", file="%%g2pl")


@magics_class
class G2PLMagics(Magics):
    """The `%%g2pl` cell magic (see the module docstring)."""

    def __init__(self, shell=None) -> None:
        super().__init__(shell)
        self._programs: dict[tuple[str, int], g2pl.Program] = {}

    def _compile(self, cell: str, opt: int) -> g2pl.Program:
        key = (cell, opt)
        if key not in self._programs:
            self._programs[key] = g2pl.compile(cell, opt=opt, file=CELL_FILE)
        return self._programs[key]

    @cell_magic
    def g2pl(self, line: str, cell: str):
        """%%g2pl GRAPH [--arg NAME=VALUE]... [--entry NAME] [-O0|-O1|-O2] [--seed S] [--out VAR]"""
        try:
            argv = shlex.split(line)
        except ValueError as e:
            raise UsageError(f"%%g2pl: {e}") from None
        a = _parser().parse_args(argv)
        if not a.out.isidentifier():
            raise UsageError(f"%%g2pl: --out {a.out!r} is not a variable name")
        ns = self.shell.user_ns
        try:
            prog = self._compile(cell, a.opt)
            args = _parse_kv(a.arg)
            entry = prog.entry_name(a.entry)
            parse_args(prog.params(entry), args, entry)  # bad arguments before loading a graph
            graph = resolve_graph(a.graph, ns, directed=a.directed or None, seed=a.seed)
            res = prog.run(graph, args=args, seed=a.seed, entry=entry, max_supersteps=a.max_supersteps)
        except G2PLError as err:
            print(err.with_context(file="%%g2pl").render(), file=sys.stderr)
            return None
        if getattr(res, "graph", None) is None:
            res.graph = graph  # lets res.array / to_networkx / to_pandas see every vertex and edge
        ns[a.out] = res
        return res


def load_ipython_extension(ip) -> None:
    """`%load_ext g2pl.magic` registers `%%g2pl`."""
    ip.register_magics(G2PLMagics)
