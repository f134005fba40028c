"""pack: each superstep's records carry only the fields that superstep needs (paper section 4.3).

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

from g2pl.compiler import ir
from g2pl.compiler.passlog import PassNote
from g2pl.compiler.plan import Plan


def _bits(elem: str) -> int:
    return 1 if elem == "bool" else 8 * ir.ELEM_SIZE[elem]


def layout(i: ir.Instr, prune: bool) -> list[tuple[str, str]]:
    """(field, element type) of one exchange's records after packing."""
    if isinstance(i, ir.NbrReduce):
        sender_only = ir.sender_only(i.value) and ir.sender_only(i.mask)
        out = []
        if i.send is not None and prune:
            out.append(("present", "bool"))
        if sender_only:
            for role, x in (("value", i.value), ("mask", i.mask)):
                if x is not None and any(isinstance(n, (ir.Load, ir.Ids)) and getattr(n, "kind", "") != "scalar"
                                         for n in ir.walk(x)):
                    out.append((f"{i.target}.{role}", "bool" if role == "mask" else x.elem))
            return out
        seen = {}
        for x in (i.value, i.mask):
            for n in ir.walk(x) if x is not None else ():
                if isinstance(n, ir.Load) and n.pos == "nbr":
                    seen.setdefault(n.var, n.elem)
        return out + list(seen.items())
    if isinstance(i, ir.EndpointExchange):
        return list(dict.fromkeys((v, e) for v, _s, e in i.fields))
    return []


def run(plan: Plan, log: list[str]) -> Plan:
    plan.pack = True
    full = sum(f.size for f in plan.program_fields())
    for s in plan.states:
        fields = [f for x in s.exchange for f in layout(x.instr, plan.prune)]
        if not s.exchange:
            continue
        bits = sum(_bits(e) for _n, e in fields)
        desc = ", ".join(f"{n}:{'bit' if e == 'bool' else e}" for n, e in fields) or "no fields"
        log.append(PassNote.on_state("pack", s, f"record {desc} = {bits} bits (was {8 * full} bits)"))
    return plan
