"""`%load_ext g2pl.magic`: the documented name of the `%%g2pl` cell magic (README.md, docs/tutorial.md),
which lives in `g2pl.notebook.magic`."""

from g2pl.notebook.magic import G2PLMagics, load_ipython_extension, resolve_graph

__all__ = ["G2PLMagics", "load_ipython_extension", "resolve_graph"]
