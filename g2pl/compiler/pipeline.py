"""The compilation pipeline in one place: parse -> lower -> plan -> (passes) -> codegen.

`PASS_NAMES` are the optimizer passes of spec section 5 that `--disable-pass`
accepts.  `PIPELINE` is the ordered tuple of passes that are implemented and
run at -O1/-O2; the -O level and `--disable-pass` simply filter it.  Until a
pass is implemented it is not listed, and the plan says so instead of
pretending it ran.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from g2pl.compiler import ast as A
from g2pl.compiler import ir
from g2pl.compiler.codegen import generate
from g2pl.compiler.lower import lower_procedure
from g2pl.compiler.plan import Plan, build_plan, render

PASS_NAMES = ("reuse", "merge", "reorder", "prune", "pack", "direction")

# (name, minimum -O level, function Plan -> Plan); empty until the optimizer lands.
PIPELINE: tuple[tuple[str, int, Callable[[Plan], Plan]], ...] = ()


@dataclass
class Compilation:
    """Everything `g2plc` can show for one procedure."""

    proc: ir.ProcIR
    plan: Plan
    python: str
    opt: int
    disable: tuple[str, ...]
    pass_times: dict[str, float] = field(default_factory=dict)

    def plan_text(self) -> str:
        return render(self.plan)

    def ir_text(self) -> str:
        head = f"procedure {self.proc.name}(" + ", ".join(f"{n}: {t.elem}" for n, t in self.proc.params) + ")"
        types = "\n".join(f"  {v}: {t.ann()}" for v, t in self.proc.vars.items() if not v.startswith("@"))
        return f"{head}\nvariables:\n{types}\nbody:\n{ir.dump_instrs(self.proc.body, 1)}"


def selected_passes(opt: int, disable: tuple[str, ...]) -> list[tuple[str, Callable[[Plan], Plan]]]:
    return [(name, fn) for name, level, fn in PIPELINE if opt >= level and name not in disable]


def compile_module(module: A.Module, entry: str, opt: int = 2, disable: tuple[str, ...] = ()) -> Compilation:
    proc = lower_procedure(module, module.procedures[entry])
    plan = build_plan(proc)
    times: dict[str, float] = {}
    passes = selected_passes(opt, disable)
    if opt > 0 and not passes:
        plan.log.append(f"-O{opt} requested; no optimizer pass is implemented yet, so the -O0 baseline plan runs")
    for name, fn in passes:
        t0 = time.perf_counter()
        plan = fn(plan)
        times[name] = time.perf_counter() - t0
    return Compilation(proc, plan, generate(plan), opt, disable, times)
