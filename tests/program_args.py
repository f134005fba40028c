"""Arguments for running any program of programs/ in the generic tests (CLI, ranks, passes).

Derived from the program's parameter types, so a new program needs no entry in
a table: every `vid` parameter is the given root vertex, every `int` 3 (rounds
of PageRank/HITS, k of k-core), every `float` 0.85, every `bool` true.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import g2pl

BY_TYPE: dict[str, object] = {"int": 3, "float": 0.85, "bool": True}


@cache
def _params(path: Path) -> tuple[tuple[str, str], ...]:
    prog = g2pl.compile(path)
    return tuple((name, ty.elem) for name, ty in prog.params(prog.entry_name()))


def program_args(path: Path, root: int) -> dict[str, object]:
    """{parameter: value} for the program at `path`."""
    return {name: root if elem == "vid" else BY_TYPE[elem] for name, elem in _params(Path(path))}


def arg_options(args: dict[str, object]) -> list[str]:
    """`--arg NAME=VALUE` options for `args` (bools as the language writes them)."""
    out: list[str] = []
    for k, v in args.items():
        out += ["--arg", f"{k}={str(v).lower() if isinstance(v, bool) else v}"]
    return out


def cli_args(path: Path, root: int) -> list[str]:
    """`program_args` as `--arg NAME=VALUE` options."""
    return arg_options(program_args(path, root))
