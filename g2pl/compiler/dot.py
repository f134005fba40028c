"""The superstep state machine as Graphviz dot (`g2pl plan --dot`, `--svg`).

Every state is a box listing its local instructions and its exchanges; an
exchange shows what its records carry (fields with their sizes, or the packed
layout after `pack`) and its combiner or aggregator.  States that end with an
exchange (a superstep boundary) are bold and shaded.  A note lists what each
optimizer pass did (the plan's pass log).
"""

from __future__ import annotations

import shutil
import subprocess
import textwrap
from pathlib import Path

from g2pl.compiler import ir
from g2pl.compiler.plan import Branch, Goto, Halt, Plan
from g2pl.contract import record_size
from g2pl.errors import G2PLError
from g2pl.io.output_files import write_atomic

WIDTH = 72  # characters per label line before wrapping


def _q(text: str) -> str:
    """A dot string literal: quotes, backslashes and newlines escaped (lines left-justified)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\l") + '"'


def _wrap(line: str, indent: str = "    ") -> list[str]:
    return textwrap.wrap(line, WIDTH, subsequent_indent=indent, break_on_hyphens=False) or [""]


def plan_to_dot(plan: Plan) -> str:
    out = [f"digraph {_q('plan_' + plan.proc.name)} {{",
           "  graph [rankdir=TB, nodesep=0.4, ranksep=0.45, fontname=\"monospace\", fontsize=11];",
           "  node [shape=box, fontname=\"monospace\", fontsize=10, margin=\"0.15,0.08\"];",
           "  edge [fontname=\"monospace\", fontsize=9];"]
    for s in plan.states:
        ls = s.lines()
        where = f", lines {ls[0]}-{ls[-1]}" if len(ls) > 1 else (f", line {ls[0]}" if ls else "")
        lines = [f"state {s.id}" + (" (superstep)" if s.exchange else "") + where]
        for i in s.instrs:
            lines += _wrap(f"L{i.span.line}: {ir.show_instr(i)}")
        for x in s.exchange:
            lines += _wrap(f"=> L{x.instr.span.line}: {x.action()}")
            cost = x.layout()
            if cost:
                lines += _wrap(f"   carries: {cost}", "      ")
        if isinstance(s.term, Halt):
            ret = s.term.ret
            lines.append("halt" + (", returning " + ", ".join(v.name for v in ret.values) if ret else ""))
        style = ", style=\"bold,filled\", fillcolor=\"#fff3d6\"" if s.exchange else ""
        if isinstance(s.term, Halt):
            style = ", style=\"rounded,filled\", fillcolor=\"#e8f0e8\""
        out.append(f"  s{s.id} [label={_q(chr(10).join(lines) + chr(10))}{style}];")
        t = s.term
        if isinstance(t, Goto):
            out.append(f"  s{s.id} -> s{t.target};")
        elif isinstance(t, Branch):
            c = ir.show_ex(t.cond)
            out.append(f"  s{s.id} -> s{t.then} [label={_q(c)}];")
            out.append(f"  s{s.id} -> s{t.other} [label={_q('not ' + c)}, style=dashed];")
    out.append(f"  notes [shape=note, style=filled, fillcolor=\"#eef3fb\", label={_q(_notes(plan))}];")
    if plan.states:
        out.append(f"  notes -> s{plan.states[0].id} [style=invis];")
    out.append("}")
    return "\n".join(out) + "\n"


def _notes(plan: Plan) -> str:
    proc = plan.proc
    lines = [f"procedure {proc.name}, -O{plan.opt_level}: {len(plan.states)} states, "
             f"{len(plan.exchange_states())} with an exchange"]
    if plan.record_sent():
        fl = ", ".join(f"{n}:{e}" for n, e in plan.record) or "none"
        lines += _wrap(f"record (every exchange superstep): {fl} = {record_size(plan.record)} B")
    lines.append("optimizations:" if plan.log else "optimizations: none (-O0)")
    for entry in plan.log:
        lines += _wrap(f"- {entry}")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- rendering


def find_dot() -> str:
    """Path of Graphviz's `dot`, or a G2PLError (exit 2) saying how to get it."""
    path = shutil.which("dot")
    if path is None:
        raise G2PLError("--svg needs Graphviz's `dot` program, which is not installed (on Debian/Ubuntu: "
                        "`apt-get install graphviz`; macOS: `brew install graphviz`); `--dot FILE.dot` "
                        "writes the graph without it", file="g2pl plan")
    return path


def render_svg(dot: str, path: str | Path) -> None:
    """Run `dot -Tsvg` on `dot` text, writing `path`."""
    exe = find_dot()
    try:  # the SVG comes back on stdout and is written like every output (atomically, no links)
        proc = subprocess.run([exe, "-Tsvg"], input=dot.encode(), capture_output=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise G2PLError(f"could not run Graphviz `dot`: {e}", file=str(path)) from None
    if proc.returncode != 0:
        err = proc.stderr.decode(errors="replace").strip()
        msg = err.splitlines()[-1] if err else f"exit status {proc.returncode}"
        raise G2PLError(f"Graphviz `dot` failed: {msg}", file=str(path))
    write_atomic(path, proc.stdout)
