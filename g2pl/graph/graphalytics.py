"""LDBC Graphalytics graphs as they are distributed: NAME.v, NAME.e and NAME.properties side by side.

This module decides which files make the graph `--graph NAME.e` names and
whether it is directed (`layout`); g2pl/graph/loaders.py reads them
(`load_graphalytics`, `graphalytics_share`).

* NAME.e: one edge a line, `src dst` or `src dst weight` separated by spaces
  (read by the edge-list reader: same checks, same messages);
* the vertex file (NAME.v beside it, or the one `--vertices` or the properties
  file names): one vertex ID a line, isolated vertices included.  The vertex
  set is exactly this file: an edge endpoint missing from it is an error naming
  the edge's line, since Graphalytics' reference outputs have a value for every
  vertex of the .v file and for no other;
* NAME.properties, when present: Java properties (`graph.NAME.directed = true`,
  `graph.NAME.vertex-file`, `graph.NAME.edge-file`,
  `graph.NAME.edge-properties.names = weight`).  It gives the direction when
  the user does not, and a contradiction with the user's choice is an error
  naming both.  The file is only parsed as text (no `include`, no
  interpolation), up to PROPERTIES_MAX_BYTES.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any

from g2pl.errors import G2PLError, reading_graph_file
from g2pl.graph.binary import open_graph_file

#: largest properties file read: Graphalytics' describe a graph in well under 2 KiB
PROPERTIES_MAX_BYTES = 1 << 20

_TRUE = ("true", "yes", "on")
_FALSE = ("false", "no", "off")
_TYPES = ("int", "integer", "real")  # Graphalytics' property types
_LINE_END = re.compile(r"\r\n|\r|\n")
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


# --------------------------------------------------------------------------- the properties file


def read_properties(path: str) -> dict[str, tuple[str, int]]:
    """Java `.properties` text as {key: (value, line)}: `key = value`, `key: value` or `key value`
    lines, `#`/`!` comment lines, a trailing backslash continuing a line, and the escapes `\\t`,
    `\\n`, `\\uXXXX`...  A key given twice with different values is an error (which would win is a
    matter of the reader)."""
    with open_graph_file(path) as f, reading_graph_file(path):
        raw = f.read(PROPERTIES_MAX_BYTES + 1)
    if len(raw) > PROPERTIES_MAX_BYTES:
        raise G2PLError(f"the properties file is larger than {PROPERTIES_MAX_BYTES >> 20} MiB; a graph's "
                        "properties take a few hundred bytes", file=path)
    nul = raw.find(b"\0")
    if nul != -1:
        raise G2PLError("the file contains binary data (a NUL byte); expected a Java properties text file",
                        file=path, line=raw.count(b"\n", 0, nul) + 1)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = raw.decode("latin-1")  # java.util.Properties' own encoding
    lines = _LINE_END.split(text)
    out: dict[str, tuple[str, int]] = {}
    i = 0
    while i < len(lines):
        lineno = i + 1
        logical = lines[i].lstrip(" \t\f")
        i += 1
        if not logical or logical[0] in "#!":
            continue
        while _continued(logical):
            logical = logical[:-1]
            if i == len(lines):
                break
            logical += lines[i].lstrip(" \t\f")
            i += 1
        key, value = _entry(logical, path, lineno)
        if key in out and out[key][0] != value:
            raise G2PLError(f"'{key}' is given twice with different values (line {out[key][1]}: "
                            f"'{out[key][0]}', line {lineno}: '{value}')", file=path, line=lineno)
        out[key] = (value, lineno)
    return out


def _continued(line: str) -> bool:
    """A line continues on the next when it ends with an odd number of backslashes."""
    return (len(line) - len(line.rstrip("\\"))) % 2 == 1


def _entry(line: str, path: str, lineno: int) -> tuple[str, str]:
    """(key, value) of one logical line: the key ends at the first unescaped `=`, `:` or blank."""
    i, n = 0, len(line)
    while i < n and line[i] not in "=: \t\f":
        i += 2 if line[i] == "\\" else 1
    key = line[:min(i, n)]
    while i < n and line[i] in " \t\f":
        i += 1
    if i < n and line[i] in "=:":
        i += 1
    return _unescape(key, path, lineno), _unescape(line[i:], path, lineno).strip()


def _unescape(s: str, path: str, lineno: int) -> str:
    if "\\" not in s:
        return s
    out: list[str] = []
    i = 0
    while i < len(s):
        c = s[i]
        if c != "\\" or i + 1 == len(s):
            out.append(c)
            i += 1
            continue
        nxt = s[i + 1]
        if nxt == "u":
            digits = s[i + 2:i + 6]
            if not re.fullmatch(r"[0-9a-fA-F]{4}", digits):
                raise G2PLError(f"malformed \\uXXXX escape '\\u{digits}'", file=path, line=lineno)
            out.append(chr(int(digits, 16)))
            i += 6
        else:
            out.append(_ESCAPES.get(nxt, nxt))
            i += 2
    return "".join(out)


@dataclass(frozen=True)
class Properties:
    """What g2pl takes from a graph's properties file (None: not said there), with the lines saying it."""

    path: str
    name: str
    directed: bool | None = None
    directed_line: int | None = None
    vertex_file: str | None = None
    edge_file: str | None = None
    edge_file_line: int | None = None
    weighted: bool | None = None  # one edge property (the weight) or none
    meta: dict[str, int] | None = None


def graph_properties(path: str, name: str) -> Properties:
    """The `graph.NAME.*` keys of a properties file, checked."""
    props = read_properties(path)
    prefix = f"graph.{name}."
    own = {k[len(prefix):]: v for k, v in props.items() if k.startswith(prefix)}
    if not own:
        named = sorted({k.split(".")[1] for k in props if k.startswith("graph.") and k.count(".") >= 2})
        says = f"it describes {', '.join(repr(x) for x in named)}" if named else "it has no graph.* keys"
        raise G2PLError(f"no key starts with '{prefix}' ({says}); the properties file beside NAME.e must "
                        f"describe graph NAME, here '{name}'", file=path)
    directed = directed_line = None
    if "directed" in own:
        value, directed_line = own["directed"]
        if value.lower() not in _TRUE + _FALSE:
            raise G2PLError(f"{prefix}directed = '{value}': expected true or false", file=path, line=directed_line)
        directed = value.lower() in _TRUE
    files = {}
    for key in ("vertex-file", "edge-file"):
        if key in own:
            value, line = own[key]
            if not value or value in (".", "..") or "/" in value or "\\" in value:
                raise G2PLError(f"{prefix}{key} = '{value}': expected the name of a file beside this one (no "
                                "directory part)", file=path, line=line)
            files[key] = value
    nowhere: tuple[str, int | None] = ("", None)
    names_line = own.get("edge-properties.names", nowhere)
    types_line = own.get("edge-properties.types", nowhere)
    names = [x.strip() for x in names_line[0].split(",") if x.strip()]
    types = [x.strip() for x in types_line[0].split(",") if x.strip()]
    weighted = None
    if names_line[1] is not None or types_line[1] is not None:
        where = names_line[1] or types_line[1]
        if len(names) != len(types):
            raise G2PLError(f"{len(names)} edge property names but {len(types)} types "
                            f"({prefix}edge-properties.names / .types)", file=path, line=where)
        if len(names) > 1:
            raise G2PLError(f"{len(names)} edge properties ({', '.join(names)}); g2pl reads one, the weight "
                            "(a third column of the edge file)", file=path, line=where)
        bad = [t for t in types if t.lower() not in _TYPES]
        if bad:
            raise G2PLError(f"edge property type '{bad[0]}': expected real, integer or int", file=path,
                            line=types_line[1])
        weighted = len(names) == 1
    vnames = own.get("vertex-properties.names", nowhere)
    if vnames[0].strip():
        raise G2PLError(f"vertex properties ({vnames[0].strip()}) are not read: the vertex file must list IDs "
                        "alone", file=path, line=vnames[1])
    meta = {}
    for key in ("vertices", "edges"):
        value = own.get(f"meta.{key}", ("", None))[0]
        if value.isdigit():
            meta[key] = int(value)
    return Properties(path=path, name=name, directed=directed, directed_line=directed_line,
                      vertex_file=files.get("vertex-file"), edge_file=files.get("edge-file"),
                      edge_file_line=own["edge-file"][1] if "edge-file" in own else None, weighted=weighted,
                      meta=meta or None)


# --------------------------------------------------------------------------- the graph


@dataclass(frozen=True)
class Layout:
    """A Graphalytics graph's files and direction, resolved from the edge file's name, the user's
    choices and the properties file."""

    edge_file: str
    vertex_file: str
    directed: bool
    ncols: int | None  # 2 or 3 when the properties file declares the edge properties
    info: dict[str, Any]


def layout(path: str, directed: bool | None = None, vertices: str | None = None) -> Layout:
    """Which files make the graph `path` (NAME.e) and whether it is directed.

    The vertex file is `vertices` if given, else the properties file's `vertex-file`, else NAME.v;
    the direction is `directed` if given (None: not said), else the properties file's, else
    undirected.  A given direction that the properties file contradicts is an error naming both.
    """
    folder, base = os.path.split(path)
    name = os.path.splitext(base)[0]
    props_path = os.path.join(folder, name + ".properties")
    props = graph_properties(props_path, name) if os.path.exists(props_path) else None
    if props is not None and props.edge_file is not None and props.edge_file != base:
        raise G2PLError(f"graph.{name}.edge-file = '{props.edge_file}', but the edge file given is '{base}'",
                        file=props_path, line=props.edge_file_line)
    said = props.directed if props is not None else None
    if directed is not None and said is not None and directed != said:
        assert props is not None
        option = "--directed (directed=True)" if directed else "--undirected (directed=False)"
        raise G2PLError(f"graph.{name}.directed = {'true' if said else 'false'} here, but {option} was given; "
                        "leave the option out to follow this file", file=props_path, line=props.directed_line)
    if vertices is not None:
        vertex_file = vertices
    else:
        vertex_file = os.path.join(folder, props.vertex_file if props and props.vertex_file else name + ".v")
        if not os.path.exists(vertex_file):
            raise G2PLError(f"the vertex file {vertex_file} is missing: a Graphalytics graph is NAME.e with "
                            "NAME.v beside it, listing every vertex (isolated ones too); pass --vertices FILE "
                            "to name another", file=path)
    resolved = directed if directed is not None else bool(said)
    ncols = None if props is None or props.weighted is None else (3 if props.weighted else 2)
    info: dict[str, Any] = {"format": "graphalytics", "vertex_file": vertex_file,
                            "properties": props_path if props is not None else None}
    if props is not None and props.meta:
        info["declared"] = props.meta
    return Layout(path, vertex_file, resolved, ncols, info)
