"""The optimizer passes, their order and their dependencies, in one place (docs/language.md, "What the
optimization levels do").

`PIPELINE` is the ordered list; `-O` levels and `--disable-pass` only filter it.  IR passes rewrite
the structured IR before the plan is built; plan passes rewrite the superstep plan.  Every pass
returns its input unchanged (and says why in the log) when it does not apply.

A pass's `requires` names the passes without whose decisions it can do nothing (receivers acts
only on exchanges prune made count where sent); `reads` those whose decisions it uses when they
were made (receivers reads delta's kept copies and edgeset's sets, direction pushes from prune's
send conditions, delta keeps copies of values that prune or pack made travel per mirror).  Both are checked once, here, when the module loads: each is an earlier pass of a
stage no later and an -O level no higher.  A run where a requirement is disabled refuses the pass
and logs why (`schedule`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from g2pl.compiler.pass_names import PASS_NAMES as _LISTED_NAMES
from g2pl.compiler.passes import (
    delta,
    direction,
    edgeset,
    merge,
    pack,
    prune,
    receivers,
    reorder,
    reuse,
    sparse,
)

Stage = Literal["ir", "plan"]


@dataclass(frozen=True)
class PassInfo:
    name: str
    stage: Stage  # "ir" (before planning) or "plan"
    level: int  # lowest -O level that runs it
    run: Callable  # (ProcIR | Plan, log: PassLog) -> same type
    requires: tuple[str, ...] = ()  # passes that must have run first: without them it can do nothing
    reads: tuple[str, ...] = ()  # passes whose decisions it uses when they ran (they run first)

    @property
    def doc(self) -> str:
        """The pass module's docstring: what it does, with a before/after example."""
        return _MODULES[self.name].__doc__ or ""


_MODULES = {m.__name__.rsplit(".", 1)[-1]: m for m in (reuse, reorder, merge, prune, pack, direction, edgeset,
                                                        delta, receivers, sparse)}

PIPELINE: tuple[PassInfo, ...] = (
    PassInfo("reuse", "ir", 1, reuse.run),
    PassInfo("reorder", "ir", 2, reorder.run),
    PassInfo("merge", "plan", 1, merge.run),
    PassInfo("prune", "plan", 2, prune.run),
    PassInfo("pack", "plan", 2, pack.run),
    PassInfo("direction", "plan", 2, direction.run, reads=("prune",)),
    PassInfo("edgeset", "plan", 2, edgeset.run),
    PassInfo("delta", "plan", 2, delta.run, reads=("prune", "pack")),
    PassInfo("receivers", "plan", 2, receivers.run, requires=("prune",), reads=("edgeset", "delta")),
    PassInfo("sparse", "plan", 0, sparse.run),
)

#: every name `--disable-pass` accepts
PASS_NAMES = tuple(p.name for p in PIPELINE)
if PASS_NAMES != _LISTED_NAMES:  # the parsers' copy (pass_names.py) must follow the pipeline
    raise AssertionError(f"g2pl.compiler.pass_names lists {_LISTED_NAMES}, the pipeline runs {PASS_NAMES}")
_STAGES = ("ir", "plan")


def _check_pipeline(pipeline: tuple[PassInfo, ...]) -> None:
    """Each requirement (or pass read) is an earlier pass, of a stage no later and a level no higher: so
    whenever a pass is selected by its level, its requirements are too (unless disabled by name)."""
    seen: dict[str, PassInfo] = {}
    for p in pipeline:
        for r in p.requires + p.reads:
            q = seen.get(r)
            if q is None or _STAGES.index(q.stage) > _STAGES.index(p.stage) or q.level > p.level:
                raise AssertionError(f"pass {p.name} requires {r}, which does not run before it at its level")
        seen[p.name] = p


_check_pipeline(PIPELINE)


def schedule(opt: int, disable: tuple[str, ...] = ()) -> tuple[list[PassInfo], list[tuple[PassInfo, list[str]]]]:
    """(the passes to run in order, the passes refused with their requirements that will not run):
    the -O level and `--disable-pass` select passes; a selected pass whose requirement is not run is
    refused, and so, in turn, are the passes requiring it."""
    run: list[PassInfo] = []
    refused: list[tuple[PassInfo, list[str]]] = []
    names: set[str] = set()
    for p in PIPELINE:
        if opt < p.level or p.name in disable:
            continue
        missing = [r for r in p.requires if r not in names]
        if missing:
            refused.append((p, missing))
        else:
            run.append(p)
            names.add(p.name)
    return run, refused


def prerequisites(name: str) -> list[PassInfo]:
    """Every pass `name` requires or reads, directly or not, in pipeline order: its whole input (what a
    test runs before it)."""
    want = {name}
    for p in reversed(PIPELINE):
        if p.name in want:
            want |= set(p.requires) | set(p.reads)
    return [p for p in PIPELINE if p.name in want and p.name != name]
