"""reorder: schedule independent statements to minimise supersteps (paper section 4.1).

Within each straight-line run of instructions, every instruction is placed
at the earliest superstep its dependences allow (ASAP list scheduling): a
value produced by an exchange is usable one superstep later, and an
exchange reads its inputs at the end of its superstep.  Instructions are
then emitted superstep by superstep, locals before exchanges, keeping the
original order among equals, so `merge` can put same-superstep exchanges
into one barrier.

Before (-O0, 3 supersteps)::

    a = x;  b = sum [ a | v <- V ];  c = x;  d = sum [ c | v <- V ];
    state 0: a = x            => b = sum(a)
    state 1: c = x            => d = sum(c)

After (with merge, 2 supersteps)::

    state 0: a = x; c = x     => b = sum(a), d = sum(c)
"""

from __future__ import annotations

import dataclasses

from g2pl.compiler import ir


def _segment_levels(seg: list[ir.Instr]) -> list[int]:
    levels: list[int] = []
    for j, x in enumerate(seg):
        lvl = 0
        xu, xd = x.uses(), set(x.defs())
        for i in range(j):
            y = seg[i]
            yu, yd = y.uses(), set(y.defs())
            raw = bool(yd & xu)
            war = bool(yu & xd)
            waw = bool(yd & xd)
            if not (raw or war or waw):
                continue
            if y.exchange:
                # results of y exist only after its barrier; a local may not overwrite y's inputs before it
                need = levels[i] + 1 if (raw or waw or not x.exchange) else levels[i]
            else:
                need = levels[i]
            lvl = max(lvl, need)
        levels.append(lvl)
    return levels


def _schedule(seg: list[ir.Instr]) -> list[ir.Instr]:
    if len(seg) < 2:
        return seg
    levels = _segment_levels(seg)
    out: list[ir.Instr] = []
    for lvl in range(max(levels) + 1):
        out += [x for x, l_ in zip(seg, levels) if l_ == lvl and not x.exchange]
        out += [x for x, l_ in zip(seg, levels) if l_ == lvl and x.exchange]
    return out


def _block(instrs, log: list[str]) -> tuple[ir.Instr, ...]:
    out: list[ir.Instr] = []
    seg: list[ir.Instr] = []

    def flush() -> None:
        new = _schedule(seg)
        pos = {id(x): k for k, x in enumerate(new)}
        for k, x in enumerate(seg):
            passed = [y for y in seg[:k] if y.exchange and pos[id(y)] > pos[id(x)]]
            if passed:
                log.append(f"reorder: line {x.span.line}: `{ir.show_instr(x)}` moved ahead of the exchange at "
                           f"line {passed[0].span.line}")
        out.extend(new)
        seg.clear()

    for i in instrs:
        if isinstance(i, ir.WhileI):
            flush()
            out.append(dataclasses.replace(i, cond_pre=_block(i.cond_pre, log), body=_block(i.body, log)))
        elif isinstance(i, ir.IfI):
            flush()
            out.append(dataclasses.replace(i, then=_block(i.then, log), other=_block(i.other, log)))
        elif isinstance(i, ir.ReturnI):
            flush()
            out.append(i)
        else:
            seg.append(i)
    flush()
    return tuple(out)


def run(proc: ir.ProcIR, log: list[str]) -> ir.ProcIR:
    before = len(log)
    body = list(_block(proc.body, log))
    if len(log) == before:
        log.append("reorder: nothing to reschedule")
    return dataclasses.replace(proc, body=body)
