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
from g2pl.compiler.limits import deep_stack
from g2pl.compiler.lowering import flatten, lower_procedure
from g2pl.compiler.passes import PASS_NAMES, PIPELINE, schedule
from g2pl.compiler.passlog import PassLog, PassNote
from g2pl.compiler.plan import Plan, build_plan
from g2pl.compiler.render import dump_ir, dump_stage, render_plan
from g2pl.compiler.verify import PlanError, verify_ir, verify_plan
from g2pl.errors import G2PLError

__all__ = ["PASS_NAMES", "PIPELINE", "Compilation", "check_module", "compile_module", "dump_stage"]


@dataclass
class Compilation:
    """Everything `g2plc` can show for one procedure."""

    proc: ir.ProcIR
    plan: Plan
    python: str
    opt: int
    disable: tuple[str, ...]
    pass_times: dict[str, float] = field(default_factory=dict)  # stage -> seconds, in order (--time-passes)

    def plan_text(self) -> str:
        return render_plan(self.plan)

    def ir_text(self) -> str:
        return dump_ir(self.proc)


AfterPass = Callable[[str, "ir.ProcIR | Plan"], None]


def _verifying(then: AfterPass | None) -> AfterPass:
    def check(name: str, unit: ir.ProcIR | Plan) -> None:
        try:
            verify_ir(unit) if isinstance(unit, ir.ProcIR) else verify_plan(unit)
        except PlanError as err:
            raise PlanError(f"after {name}: {err}") from None
        if then is not None:
            then(name, unit)
    return check


@deep_stack
def compile_module(module: A.Module, entry: str, opt: int = 2, disable: tuple[str, ...] = (),
                   after_pass: AfterPass | None = None, verify: bool = False) -> Compilation:
    """Lower, optimize, plan and generate one procedure (on a deep stack: see `g2pl.compiler.limits`).

    The time each stage took (lowering, every pass run, planning) is kept in `pass_times`.  With
    `verify` (`g2plc --verify`, on in the tests) the verifier checks the IR or plan after lowering
    and after every pass, and a failure names the pass that broke it."""
    if verify:
        after_pass = _verifying(after_pass)
    times: dict[str, float] = {}
    t0 = time.perf_counter()
    proc = flatten(lower_procedure(module, module.procedures[entry]))
    times["lower"] = time.perf_counter() - t0
    if after_pass:
        after_pass("lower", proc)
    passes, refused = schedule(opt, tuple(disable))
    log: PassLog = [PassNote(p.name, f"not run: it needs {', '.join(missing)}, which {'is' if len(missing) == 1 else 'are'} "
                             "not run") for p, missing in refused]
    for p in (p for p in passes if p.stage == "ir"):
        t0 = time.perf_counter()
        proc = p.run(proc, log)
        times[p.name] = time.perf_counter() - t0
        if after_pass:
            after_pass(p.name, proc)
    t0 = time.perf_counter()
    plan = build_plan(proc)
    plan.opt_level = opt
    plan.log = log
    times["plan"] = time.perf_counter() - t0
    if after_pass:
        after_pass("plan", plan)
    for p in (p for p in passes if p.stage == "plan"):
        t0 = time.perf_counter()
        plan = p.run(plan, plan.log)
        times[p.name] = time.perf_counter() - t0
        if after_pass:
            after_pass(p.name, plan)
    return Compilation(proc, plan, generate(plan), opt, tuple(disable), times)


@deep_stack
def check_module(module: A.Module, opt: int = 2, disable: tuple[str, ...] = ()) -> list[G2PLError]:
    """Every error of every procedure of a parsed module (`g2pl check`), in source order.

    Lowering recovers per statement (see `lower_procedure(collect=...)`); a
    procedure without such errors is compiled the whole way, as `compile` would.
    An error inside a function body met at several calls is listed once.
    """
    errors: list[G2PLError] = []
    for name, proc in module.procedures.items():
        found: list[G2PLError] = []
        lower_procedure(module, proc, collect=found)
        if not found:
            try:
                compile_module(module, name, opt=opt, disable=disable)
            except G2PLError as exc:
                found.append(exc.with_context(file=module.file, source=module.source))
        errors.extend(found)
    seen: set[tuple] = set()
    unique = []
    for err in errors:
        key = (err.file, err.span, err.line, err.message)
        if key not in seen:
            seen.add(key)
            unique.append(err)

    def where(err: G2PLError) -> tuple[int, int]:
        if err.span is not None:
            return (err.span.line, err.span.col)
        return (err.line or 0, 0)

    return sorted(unique, key=where)
