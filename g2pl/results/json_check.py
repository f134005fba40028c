"""Checking `--output` JSON before a Result is made from it: a file from someone else is refused with
one precise message (which value, what was expected), never a KeyError or a ValueError from deep in
the conversions that read it later."""

from __future__ import annotations

import math
from typing import Any

from g2pl.errors import G2PLError

KINDS = ("scalar", "vertex", "edge")
TYPES = ("bool", "int", "float", "vid")
_FLOAT_WORDS = ("inf", "-inf", "nan")
INT64 = (-(2**63), 2**63 - 1)


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and INT64[0] <= x <= INT64[1]


def _element_ok(x: Any, elem: str) -> bool:
    """One value of element type `elem` as --output writes it."""
    if elem == "bool":
        return isinstance(x, bool)
    if elem == "float":
        return (isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)) or x in _FLOAT_WORDS
    return _is_int(x)


def check_values(values: Any, label: str) -> None:
    """Raise a G2PLError naming the first entry of `values` that --output could not have written."""
    def bad(where: str, what: str) -> G2PLError:
        return G2PLError(f"{where}: {what}", file=label)

    if not isinstance(values, list):
        raise bad("values", f"expected a list of returned values, got {type(values).__name__}")
    for i, v in enumerate(values):
        at = f"values[{i}]"
        if not isinstance(v, dict) or set(v) != {"name", "kind", "type", "value"}:
            got = sorted(v) if isinstance(v, dict) else type(v).__name__
            raise bad(at, f"expected an object with exactly name, kind, type and value; got {got}")
        name, kind, elem, val = v["name"], v["kind"], v["type"], v["value"]
        if not isinstance(name, str) or not name:
            raise bad(at, "`name` must be a non-empty string")
        at = f"values[{i}] (`{name[:80]}`)"
        if kind not in KINDS:
            raise bad(at, f"`kind` must be one of {', '.join(KINDS)}")
        if elem not in TYPES:
            raise bad(at, f"`type` must be one of {', '.join(TYPES)}")
        if kind == "scalar":
            if not _element_ok(val, elem):
                raise bad(at, f"expected a {elem} scalar")
        elif kind == "vertex" and elem == "bool":
            if not isinstance(val, list) or not all(_is_int(x) for x in val):
                raise bad(at, "a vertex set is a list of vertex IDs (whole numbers)")
        elif kind == "vertex":
            if not isinstance(val, dict):
                raise bad(at, "a vertex graph is an object from vertex ID to value")
            for k, x in val.items():
                try:
                    ok = _is_int(int(k)) and str(int(k)) == k.strip()
                except ValueError:
                    ok = False
                if not ok:
                    raise bad(at, f"vertex ID {k[:40]!r} is not a whole number")
                if not _element_ok(x, elem):
                    raise bad(at, f"the value of vertex {k[:40]} is not a {elem}")
        elif elem == "bool":
            if not isinstance(val, list) or not all(isinstance(p, list) and len(p) == 2 and all(map(_is_int, p))
                                                    for p in val):
                raise bad(at, "an edge set is a list of [u, v] vertex ID pairs")
        else:
            if not isinstance(val, list) or not all(isinstance(r, list) and len(r) == 3 and _is_int(r[0])
                                                    and _is_int(r[1]) and _element_ok(r[2], elem) for r in val):
                raise bad(at, f"an edge graph is a list of [u, v, value] rows with {elem} values")
