"""The optimizer passes and their order, in one place (docs/language.md, "What the optimization levels do").

`PIPELINE` is the ordered list; `-O` levels and `--disable-pass` only filter
it.  IR passes rewrite the structured IR before the plan is built; plan
passes rewrite the superstep plan.  Every pass returns its input unchanged
(and says why in the log) when it does not apply.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from g2pl.compiler.passes import delta, direction, edgeset, merge, pack, prune, receivers, reorder, reuse


@dataclass(frozen=True)
class PassInfo:
    name: str
    stage: str  # "ir" (before planning) or "plan"
    level: int  # lowest -O level that runs it
    run: Callable  # (ProcIR | Plan, log: PassLog) -> same type
    doc: str


PIPELINE: tuple[PassInfo, ...] = (
    PassInfo("reuse", "ir", 1, reuse.run, reuse.__doc__ or ""),
    PassInfo("reorder", "ir", 2, reorder.run, reorder.__doc__ or ""),
    PassInfo("merge", "plan", 1, merge.run, merge.__doc__ or ""),
    PassInfo("prune", "plan", 2, prune.run, prune.__doc__ or ""),
    PassInfo("pack", "plan", 2, pack.run, pack.__doc__ or ""),
    PassInfo("direction", "plan", 2, direction.run, direction.__doc__ or ""),
    PassInfo("edgeset", "plan", 2, edgeset.run, edgeset.__doc__ or ""),
    PassInfo("delta", "plan", 2, delta.run, delta.__doc__ or ""),
    PassInfo("receivers", "plan", 2, receivers.run, receivers.__doc__ or ""),
)

#: every name `--disable-pass` accepts
PASS_NAMES = tuple(p.name for p in PIPELINE)


def selected(opt: int, disable: tuple[str, ...] = ()) -> list[PassInfo]:
    return [p for p in PIPELINE if opt >= p.level and p.name not in disable]
