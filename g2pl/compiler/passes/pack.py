"""pack: each superstep's records carry only the fields that superstep needs (bit-flag packing, from the G2PL papers).

Without it every record has the program's whole layout (all message fields,
unused ones undefined).  With it, a record holds what its exchange needs:
a sender-computed message value (e.g. `PR/OutDeg` instead of `PR` and
`OutDeg`), bool fields and vertex-set exchanges as packed bits, a value the
program rounds with `float32(...)` in 4 bytes, and, where prune lets the set of
senders vary, a presence bit per record (the flag word).

Before::

    record layout (every exchange superstep): OutDeg:int, PR:float = 16 bytes

After::

    state 3: $4.value:float (8 bytes) per sending vertex
"""

from __future__ import annotations

from g2pl.compiler import ir
from g2pl.compiler.exchange import EndpointRecord, NbrExchange
from g2pl.compiler.passlog import PassLog, PassNote
from g2pl.compiler.plan import Plan
from g2pl.contract import Broadcast, Field, packed_bits, record_size


def narrowed(x: ir.Ex) -> bool:
    """Is a message value `float32(...)`: a float that single precision holds exactly, so it travels
    (and is gathered) in 4 bytes and is widened, exactly, where it arrives?"""
    return isinstance(x, ir.Op) and x.op == "float32"


def field_elem(role: str, x: ir.Ex) -> str:
    """The packed field type of a sender-side message's value or filter."""
    return "bool" if role == "mask" else "float32" if narrowed(x) else x.elem


def sender_fields(i: ir.NbrReduce) -> tuple[Field, ...]:
    """A sender-side message's packed fields: its value and filter where they vary between senders
    (a constant travels as nothing: the presence bit, or the receiver's adjacency, says it all)."""
    out = []
    for role, x in (("value", i.value), ("mask", i.mask)):
        if x is not None and any(isinstance(n, (ir.Load, ir.Ids)) and getattr(n, "kind", "") != "scalar"
                                 for n in ir.walk(x)):
            out.append((f"{i.target}.{role}", field_elem(role, x)))
    return tuple(out)


def run(plan: Plan, log: PassLog) -> Plan:
    full = record_size(plan.record)
    for s in plan.states:
        fields: list[Field] = []
        for k, x in enumerate(s.exchange):
            if isinstance(x, NbrExchange):
                x = s.exchange[k] = x.but(transport="packed", record=(),
                                          fields=x.fields if x.per_entry else sender_fields(x.instr))
                fields += ([("present", "bool")] if x.send is not None else []) + list(x.fields)
            elif isinstance(x, EndpointRecord):
                x = s.exchange[k] = x.but(transport="packed", record=())
                fields += list(x.fields)
        if s.broadcast is not None:  # still counted, as the naive code's records, but nothing travels
            s.broadcast = Broadcast((), tuple(fields))
        if not s.exchange:
            continue
        bits = packed_bits(tuple(fields))
        desc = ", ".join(f"{n}:{'bit' if e == 'bool' else e}" for n, e in fields) or "no fields"
        log.append(PassNote.on_state("pack", s, f"record {desc} = {bits} bits (was {8 * full} bits)"))
    return plan
