"""pack: each superstep's records carry only the fields that superstep needs (bit-flag packing, from the G2PL papers).

Without it every record has the program's whole layout (all message fields,
unused ones undefined).  With it, a record holds what its exchange needs:
a sender-computed message value (e.g. `PR/OutDeg` instead of `PR` and
`OutDeg`), bool fields and vertex-set exchanges as packed bits, and, where
prune lets the set of senders vary, a presence bit per record (the flag word).

Before::

    record layout (every exchange superstep): OutDeg:int, PR:float = 16 bytes

After::

    state 3: $4.value:float (8 bytes) per sending vertex
"""

from __future__ import annotations

import dataclasses

from g2pl.compiler import ir
from g2pl.compiler.exchange import Broadcast, Field, Spec
from g2pl.compiler.passlog import PassLog, PassNote
from g2pl.compiler.plan import Plan


def _bits(elem: str) -> int:
    return 1 if elem == "bool" else 8 * ir.ELEM_SIZE[elem]


def sender_fields(i: ir.NbrReduce) -> tuple[Field, ...]:
    """A sender-side message's packed fields: its value and filter where they vary between senders
    (a constant travels as nothing: the presence bit, or the receiver's adjacency, says it all)."""
    out = []
    for role, x in (("value", i.value), ("mask", i.mask)):
        if x is not None and any(isinstance(n, (ir.Load, ir.Ids)) and getattr(n, "kind", "") != "scalar"
                                 for n in ir.walk(x)):
            out.append((f"{i.target}.{role}", "bool" if role == "mask" else x.elem))
    return tuple(out)


def packed(spec: Spec, i: ir.Instr) -> Spec:
    """The spec with only the fields this exchange needs, bools as bits, no program record."""
    fields = sender_fields(i) if spec.kind == "nbr" and not spec.per_entry else spec.fields
    return dataclasses.replace(spec, transport="packed", fields=fields, record=())


def run(plan: Plan, log: PassLog) -> Plan:
    full = sum(f.size for f in plan.program_fields())
    for s in plan.states:
        fields: list[Field] = []
        for k, x in enumerate(s.exchange):
            if x.spec.kind in ("nbr", "endpoint"):
                spec = packed(x.spec, x.instr)
                s.exchange[k] = dataclasses.replace(x, spec=spec)
                fields += ([("present", "bool")] if spec.presence else []) + list(spec.fields)
        if s.broadcast is not None:  # still counted, as the naive code's records, but nothing travels
            s.broadcast = Broadcast((), tuple(fields))
        if not s.exchange:
            continue
        bits = sum(_bits(e) for _n, e in fields)
        desc = ", ".join(f"{n}:{'bit' if e == 'bool' else e}" for n, e in fields) or "no fields"
        log.append(PassNote.on_state("pack", s, f"record {desc} = {bits} bits (was {8 * full} bits)"))
    return plan
