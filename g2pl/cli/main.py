"""The console scripts' entry points: `g2plc_main` and `g2pl_main` (pyproject.toml, `[project.scripts]`)."""

from __future__ import annotations

import sys

from g2pl.cli.guard import guard
from g2pl.cli.parsers import g2pl_parser, g2plc_parser


def g2plc_main(argv: list[str] | None = None) -> int:
    a = g2plc_parser().parse_args(argv)
    return guard(a.fn, a, "g2plc")


def g2pl_main(argv: list[str] | None = None) -> int:
    a = g2pl_parser().parse_args(argv)
    a.argv = list(sys.argv[1:] if argv is None else argv)
    return guard(a.fn, a)
