"""`python -m g2pl ...` is the `g2pl` command (for launchers that start a Python module, such as
`mpiexec -n 4 python -m g2pl run ...`, and environments without the console scripts on PATH)."""

import sys

from g2pl.cli.main import g2pl_main

if __name__ == "__main__":  # pragma: no cover
    sys.exit(g2pl_main())
