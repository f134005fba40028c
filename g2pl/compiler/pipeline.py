"""The compilation pipeline in one place: parse -> lower -> IR passes -> plan -> plan passes -> codegen.

The optimizer passes and their order live in `g2pl.compiler.passes.PIPELINE`;
the -O level and `--disable-pass` filter it.  `compile_module` takes an
`after_pass` hook, called after every pass with (name, IR or plan), which is
how tests run the verifier between passes and how `g2plc --print-ir-after`
and `--time-passes` are implemented.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from g2pl.compiler import ast as A
from g2pl.compiler import ir
from g2pl.compiler.codegen import generate
from g2pl.compiler.lower import lower_procedure
from g2pl.compiler.passes import PASS_NAMES, PIPELINE, selected
from g2pl.compiler.plan import Plan, build_plan, render

__all__ = ["PASS_NAMES", "PIPELINE", "Compilation", "compile_module", "dump_stage"]


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
        return dump_ir(self.proc)


def dump_ir(proc: ir.ProcIR) -> str:
    head = f"procedure {proc.name}(" + ", ".join(f"{n}: {t.elem}" for n, t in proc.params) + ")"
    types = "\n".join(f"  {v}: {t.ann()}" for v, t in proc.vars.items() if not v.startswith("@"))
    return f"{head}\nvariables:\n{types}\nbody:\n{ir.dump_instrs(proc.body, 1)}"


def dump_stage(unit: ir.ProcIR | Plan) -> str:
    """The IR (before planning) or the plan (after), as printed by --print-ir-after."""
    return dump_ir(unit) if isinstance(unit, ir.ProcIR) else render(unit)


AfterPass = Callable[[str, "ir.ProcIR | Plan"], None]


def compile_module(module: A.Module, entry: str, opt: int = 2, disable: tuple[str, ...] = (),
                   after_pass: AfterPass | None = None) -> Compilation:
    proc = lower_procedure(module, module.procedures[entry])
    if after_pass:
        after_pass("lower", proc)
    passes = selected(opt, tuple(disable))
    log: list[str] = []
    times: dict[str, float] = {}
    for p in (p for p in passes if p.stage == "ir"):
        t0 = time.perf_counter()
        proc = p.run(proc, log)
        times[p.name] = time.perf_counter() - t0
        if after_pass:
            after_pass(p.name, proc)
    plan = build_plan(proc)
    plan.opt_level = opt
    plan.log = log
    if after_pass:
        after_pass("plan", plan)
    for p in (p for p in passes if p.stage == "plan"):
        t0 = time.perf_counter()
        plan = p.run(plan, plan.log)
        times[p.name] = time.perf_counter() - t0
        if after_pass:
            after_pass(p.name, plan)
    return Compilation(proc, plan, generate(plan), opt, tuple(disable), times)
