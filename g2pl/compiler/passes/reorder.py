"""reorder: schedule independent statements to minimise supersteps (from the G2PL papers).

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

The levels are computed per variable, not per pair of instructions, so the
pass stays linear in the number of instructions (a 10,000-statement
straight-line run is scheduled in well under a second).
"""

from __future__ import annotations

import bisect
import dataclasses

from g2pl.compiler import ir
from g2pl.compiler.passlog import PassLog, PassNote


@dataclasses.dataclass
class _Deps:
    """Per variable, the most demanding constraint earlier instructions put on later ones.

    `after_def[v]`: the earliest level at which `v`'s latest value exists (the
    definer's level, plus one if an exchange defined it); a reader (RAW) or a
    re-definer (WAW) must not come earlier.  `local_use[v]` / `exch_use[v]`:
    the highest level of a local / exchange instruction reading `v`; an
    instruction overwriting `v` (WAR) may not come before a local reader, and
    must come after an exchange reader unless it is itself an exchange (both
    then read at the barrier, before any result is written).
    """

    after_def: dict[str, int] = dataclasses.field(default_factory=dict)
    local_use: dict[str, int] = dataclasses.field(default_factory=dict)
    exch_use: dict[str, int] = dataclasses.field(default_factory=dict)

    def level_of(self, uses: set[str], defs: set[str], exchange: bool) -> int:
        """The earliest level of an instruction reading `uses` and writing `defs`."""
        lvl = 0
        for v in uses | defs:
            lvl = max(lvl, self.after_def.get(v, 0))
        for v in defs:
            lvl = max(lvl, self.local_use.get(v, 0))
            if v in self.exch_use:
                lvl = max(lvl, self.exch_use[v] + (0 if exchange else 1))
        return lvl

    def record(self, uses: set[str], defs: set[str], exchange: bool, lvl: int) -> None:
        """Note an instruction placed at `lvl`."""
        ready = lvl + 1 if exchange else lvl
        for v in defs:
            self.after_def[v] = max(self.after_def.get(v, 0), ready)
        users = self.exch_use if exchange else self.local_use
        for v in uses:
            users[v] = max(users.get(v, 0), lvl)


def _segment_levels(seg: list[ir.Instr]) -> list[int]:
    """ASAP level of every instruction of a straight-line segment (one pass over it).

    Equal to taking, for every instruction, the maximum over all earlier
    instructions it depends on (RAW, WAR or WAW) of that instruction's level
    (plus one past an exchange, except for an exchange that only overwrites
    what another exchange reads): those maxima decompose per variable.
    """
    deps = _Deps()
    levels: list[int] = []
    for x in seg:
        uses, defs = x.uses(), set(x.defs())
        lvl = deps.level_of(uses, defs, x.exchange)
        deps.record(uses, defs, x.exchange, lvl)
        levels.append(lvl)
    return levels


def _schedule(seg: list[ir.Instr]) -> list[ir.Instr]:
    """The segment level by level, locals before exchanges, original order among equals (a stable sort)."""
    if len(seg) < 2:
        return seg
    levels = _segment_levels(seg)
    order = sorted(range(len(seg)), key=lambda k: (levels[k], seg[k].exchange))
    return [seg[k] for k in order]


def _log_moves(seg: list[ir.Instr], new: list[ir.Instr], log: PassLog) -> None:
    """Log every instruction now placed before an exchange that preceded it, naming the first such exchange.

    Exchanges are met in source order; the first one placed after position p
    is always a running maximum of the positions seen so far, so a bisection
    over those maxima finds it (n log n instead of comparing every pair).
    """
    pos = {id(x): k for k, x in enumerate(new)}
    peaks: list[int] = []  # increasing positions of the exchanges that were running maxima
    peak_instrs: list[ir.Instr] = []
    for x in seg:
        p = pos[id(x)]
        k = bisect.bisect_right(peaks, p)
        if k < len(peaks):
            log.append(PassNote.on("reorder", x, f"`{ir.show_instr(x)}` moved ahead of the exchange at "
                                              f"line {peak_instrs[k].span.line}"))
        if x.exchange and (not peaks or p > peaks[-1]):
            peaks.append(p)
            peak_instrs.append(x)


def _block(instrs, log: PassLog) -> tuple[ir.Instr, ...]:
    out: list[ir.Instr] = []
    seg: list[ir.Instr] = []

    def flush() -> None:
        new = _schedule(seg)
        _log_moves(seg, new, log)
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


def run(proc: ir.ProcIR, log: PassLog) -> ir.ProcIR:
    before = len(log)
    body = list(_block(proc.body, log))
    if len(log) == before:
        log.append(PassNote("reorder", "nothing to reschedule"))
    return dataclasses.replace(proc, body=body)
