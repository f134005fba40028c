"""Printers: the IR and the superstep plan as `g2plc --emit ir|plan`, `g2pl plan` and
`--print-ir-after` show them.  Each exchange is described by its record
(`compiler/exchange.py`); nothing here decides anything."""

from __future__ import annotations

from g2pl.compiler import ir
from g2pl.compiler.limits import deep_stack
from g2pl.compiler.plan import Branch, Goto, Halt, Plan
from g2pl.contract import record_size

#: the exchange kinds whose records travel between ranks in a layout worth a line of its own
_LAID_OUT = ("nbr", "endpoint", "common")


@deep_stack
def dump_ir(proc: ir.ProcIR) -> str:
    head = f"procedure {proc.name}(" + ", ".join(f"{n}: {t.elem}" for n, t in proc.params) + ")"
    types = "\n".join(f"  {v}: {t.ann()}" for v, t in proc.vars.items() if not v.startswith("@"))
    return f"{head}\nvariables:\n{types}\nbody:\n{ir.dump_instrs(proc.body, 1)}"


def dump_stage(unit: ir.ProcIR | Plan) -> str:
    """The IR (before planning) or the plan (after), as printed by --print-ir-after."""
    return dump_ir(unit) if isinstance(unit, ir.ProcIR) else render_plan(unit)


def source_line(plan: Plan, line: int) -> str:
    lines = plan.proc.source_lines
    return lines[line - 1].strip() if 1 <= line <= len(lines) else ""


@deep_stack
def render_plan(plan: Plan) -> str:
    """Human-readable superstep plan (for `g2pl plan` and `g2plc --emit plan`)."""
    proc = plan.proc
    out = [f"plan for procedure `{proc.name}` ({proc.file}), -O{plan.opt_level}: "
           f"{len(plan.states)} states, {len(plan.exchange_states())} with an exchange"]
    if any(s.broadcast and s.broadcast.record for s in plan.states):
        fl = ", ".join(f"{n}:{e}" for n, e in plan.record) or "none"
        out.append(f"record layout (every exchange superstep, every adjacency entry): {fl} = "
                   f"{record_size(plan.record)} bytes")
    for note in plan.log:
        out.append(f"pass: {note}")
    for s in plan.states:
        ls = s.lines()
        where = f"lines {ls[0]}-{ls[-1]}" if len(ls) > 1 and ls[0] != ls[-1] else (f"line {ls[0]}" if ls else "")
        kind = "superstep block" if s.exchange else "local block"
        out.append("")
        out.append(f"state {s.id} ({kind}{', ' + where if where else ''})")
        for i in s.instrs:
            out.append(f"  {i.span.line:>4} | {source_line(plan, i.span.line)}")
            out.append(f"       -> {ir.show_instr(i)}")
        for x in s.exchange:
            out.append(f"  {x.instr.span.line:>4} | {source_line(plan, x.instr.span.line)}")
            out.append(f"       => {x.action()}")
            if x.kind in _LAID_OUT:
                out.append(f"          X{x.id}: {x.layout()}")
        if s.exchange:
            quiet = s.broadcast is None and all(isinstance(x.instr, ir.GlobalReduce) for x in s.exchange)
            out.append("  -- barrier (end of superstep)" + ("; aggregators only, no records" if quiet else "") + " --")
        t = s.term
        if isinstance(t, Goto):
            out.append(f"  then -> state {t.target}")
        elif isinstance(t, Branch):
            out.append(f"  then if {ir.show_ex(t.cond)} (line {t.line}) -> state {t.then} else -> state {t.other}")
        elif isinstance(t, Halt):
            if t.ret is not None:
                out.append("  then halt, returning " + ", ".join(v.name for v in t.ret.values))
            else:
                out.append("  then halt")
    return "\n".join(out)
