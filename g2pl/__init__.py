"""g2pl: the G2PL global-view graph language, compiled to vertex-centric BSP programs.

    import g2pl
    prog = g2pl.compile_file("programs/bfs.g2pl")   # or g2pl.compile(source_text)
    res = prog.run(g2pl.load_graph("kron:10", seed=1), args={"root": 0})
    res["Level"], res.stats["supersteps"]
"""

import g2pl._ctrl_c  # noqa: F401 - first: Ctrl-C while the `g2pl` command imports is one line, not a traceback
from g2pl.api import Program, Result, compile, compile_file, load_graph  # noqa: A004
from g2pl.errors import G2PLError, G2PLRuntimeError
from g2pl.graph import Graph

__all__ = ["compile", "compile_file", "load_graph", "Program", "Result", "Graph", "G2PLError", "G2PLRuntimeError"]
__version__ = "0.1.0"
