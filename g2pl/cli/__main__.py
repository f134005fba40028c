"""`python -m g2pl.cli ...` is the `g2pl` command (the ranks of `--np N`, the tests and bench use it)."""

import sys

from g2pl.cli.main import g2pl_main

if __name__ == "__main__":  # pragma: no cover
    sys.exit(g2pl_main())
