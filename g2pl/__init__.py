"""g2pl: the G2PL global-view graph language, compiled to vertex-centric BSP programs.

    import g2pl
    prog = g2pl.compile_file("programs/bfs.g2pl")   # or g2pl.compile(source_text)
    res = prog.run(g2pl.load_graph("kron:10", seed=1), args={"root": 0})
    res["Level"], res.stats["supersteps"]
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import g2pl._ctrl_c  # noqa: F401 - first: Ctrl-C while the `g2pl` command imports is one line, not a traceback
from g2pl.errors import G2PLError, G2PLRuntimeError

if TYPE_CHECKING:
    from g2pl.api import Program, Result, compile, compile_file, load_graph  # noqa: A004
    from g2pl.graph import Graph

__all__ = ["compile", "compile_file", "load_graph", "Program", "Result", "Graph", "G2PLError", "G2PLRuntimeError"]
__version__ = "0.1.0"

# The API (and with it the compiler and the runtime) is imported on first use, not by `import g2pl`:
# the `g2pl` command imports this package first, and a run whose module is cached needs no compiler.
_LAZY = {"compile": "g2pl.api", "compile_file": "g2pl.api", "load_graph": "g2pl.api", "Program": "g2pl.api",
         "Result": "g2pl.api", "Graph": "g2pl.graph"}


def __getattr__(name: str) -> Any:
    where = _LAZY.get(name)
    if where is None:
        raise AttributeError(f"module 'g2pl' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(where), name)
    globals()[name] = value  # later look-ups find it directly
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
