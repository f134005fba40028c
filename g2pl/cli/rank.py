"""Each rank's entry point under `g2pl run --np N`: `relaunch` (g2pl.runtime.supervisor) starts every rank
with `commands.RANK_ENTRY`, which runs `rank_main` with the command's own arguments."""

from __future__ import annotations

import sys

from g2pl.cli.main import g2pl_main
from g2pl.runtime import launch


def rank_main() -> None:
    """Join the supervisor (see `launch.join_supervisor`), run `g2pl` with this process's arguments and
    tell the supervisor how it ended."""
    launch.join_supervisor()
    status = 1
    try:
        status = g2pl_main(sys.argv[1:])
    except SystemExit as e:
        status = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    finally:
        launch.note_exit(status)
    sys.exit(status)
