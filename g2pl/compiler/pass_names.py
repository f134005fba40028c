"""The names `--disable-pass` accepts, in pipeline order, without importing the optimizer.

The command-line parsers need these before anything is compiled (and `g2pl run` with a cached
module compiles nothing); `g2pl.compiler.passes` checks, when it loads, that they are its
pipeline's names in its order.
"""

PASS_NAMES: tuple[str, ...] = ("reuse", "reorder", "merge", "prune", "pack", "direction", "edgeset", "delta",
                               "receivers", "sparse")
