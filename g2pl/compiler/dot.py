"""The superstep state machine as Graphviz dot (`g2pl plan --dot`)."""

from __future__ import annotations

from g2pl.compiler import ir
from g2pl.compiler.plan import Branch, Goto, Halt, Plan, describe_exchange


def _q(text: str) -> str:
    """A dot string literal: quotes, backslashes and newlines escaped."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\l") + '"'


def plan_to_dot(plan: Plan) -> str:
    out = [f"digraph {_q('plan_' + plan.proc.name)} {{", "  node [shape=box, fontname=monospace, fontsize=10];"]
    for s in plan.states:
        lines = [f"state {s.id}" + (" (superstep)" if s.exchange else "")]
        lines += [ir.show_instr(i) for i in s.instrs]
        lines += ["=> " + describe_exchange(x, plan.proc, plan.prune) for x in s.exchange]
        if isinstance(s.term, Halt):
            lines.append("halt")
        style = ", style=bold" if s.exchange else ""
        out.append(f"  s{s.id} [label={_q(chr(10).join(lines) + chr(10))}{style}];")
        t = s.term
        if isinstance(t, Goto):
            out.append(f"  s{s.id} -> s{t.target};")
        elif isinstance(t, Branch):
            c = ir.show_ex(t.cond)
            out.append(f"  s{s.id} -> s{t.then} [label={_q(c)}];")
            out.append(f"  s{s.id} -> s{t.other} [label={_q('not ' + c)}];")
    out.append("}")
    return "\n".join(out) + "\n"
