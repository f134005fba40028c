"""Input graphs: the canonical `Graph`, file loaders and generators (docs/language.md, "Input graphs").

`load_graph(spec, directed, seed)` is the one entry point the CLI and runtime
need; `parse_graph_spec` validates a `--graph` argument without loading it;
`save_graph` writes the `.g2g` binary form that `load_graph` memory-maps.
LDBC Graphalytics graphs (NAME.v + NAME.e + NAME.properties): graphalytics.py
decides the files and the direction, loaders.py reads them.
"""

from g2pl.graph.binary import load_binary, save_graph
from g2pl.graph.generators import GENERATOR_FORMS, generate, parse_generator
from g2pl.graph.graph import MAX_VERTEX_ID, Graph, build_graph
from g2pl.graph.loaders import (
    EDGE_LIST_EXTS,
    FORMAT_BY_EXT,
    GraphSpec,
    ReadOptions,
    load_edge_list,
    load_graph,
    load_mtx,
    load_npz,
    parse_graph_spec,
)

__all__ = [
    "EDGE_LIST_EXTS",
    "FORMAT_BY_EXT",
    "GENERATOR_FORMS",
    "MAX_VERTEX_ID",
    "Graph",
    "GraphSpec",
    "ReadOptions",
    "build_graph",
    "load_binary",
    "generate",
    "load_edge_list",
    "load_graph",
    "load_mtx",
    "load_npz",
    "parse_generator",
    "parse_graph_spec",
    "save_graph",
]
