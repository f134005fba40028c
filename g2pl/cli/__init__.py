"""Command-line tools `g2plc` and `g2pl` (docs/language.md, "Command line and exit status"; docs/cli.md).

Exit status: 0 success, 1 runtime failure, 2 bad input (program, graph,
arguments).  Errors are one message on stderr naming the file (and for
programs `line:col`, the source line and a caret); a Python traceback is
shown only with --debug.

    main.py       the console scripts' entry points, `g2plc_main` and `g2pl_main`
    parsers.py    their argument parsers
    commands.py   what each command does
    guard.py      errors -> one line and an exit status
    reference.py  docs/cli.md from the parsers (`cli_reference`)
    rank.py       each rank's entry point under `g2pl run --np N`
    progress.py   the live progress line of `g2pl run`
    plot.py       `g2pl run --plot`
"""

from g2pl.cli.main import g2pl_main, g2plc_main
from g2pl.cli.reference import cli_reference

__all__ = ["g2pl_main", "g2plc_main", "cli_reference"]
