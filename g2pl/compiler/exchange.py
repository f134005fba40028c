"""Exchange specs: what one exchange sends and how, written by the passes and read by the runtime.

Every exchange of the superstep plan carries a `Spec`.  The plan builder
writes the baseline (the paper's naive code: the program's whole record along
every adjacency entry, counted per superstep); prune, pack, direction and
edgeset rewrite it; `g2pl plan` prints it; codegen renders it as a module
constant (`X3 = Spec(...)`) that the generated code passes to the runtime
verb, which picks its transport, counts its messages and keys its caches by
it.  A state's `Broadcast` is the naive code's per-superstep record (what
every vertex sends to every neighbour whether or not anything reads it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from g2pl.compiler import ir

#: how records travel between ranks (one rank sends nothing)
#: entries: the program's whole record once per cross-rank adjacency entry (Pregel's naive messages);
#: records: the program's whole record once per mirror (ghost) vertex;
#: packed: only the spec's fields, once per mirror, bool fields as bits
Transport = Literal["entries", "records", "packed"]
Kind = Literal["nbr", "endpoint", "aggregate", "remote_read", "remote_mark", "common", "keyed"]
Policy = Literal["pull", "push-pull"]
Field = tuple[str, str]  # (name, element type)


@dataclass(frozen=True)
class Spec:
    """One exchange, as the runtime must carry it out (rendered into the generated module)."""

    id: int
    kind: Kind
    transport: Transport = "entries"
    fields: tuple[Field, ...] = ()  # what the generated code hands over, in order
    record: tuple[Field, ...] = ()  # the program's whole record (entries/records transports: field offsets)
    presence: bool = False  # prune: only senders whose send condition holds send, after a presence bitmap
    counted: bool = False  # prune: messages counted along the entries actually used, not per superstep
    policy: Policy = "pull"  # direction: push from few active senders, else pull
    per_entry: bool = False  # the receiver evaluates the message head per adjacency entry
    out: bool = False  # along out-edges (directed graphs)
    op: str = ""  # combiner (nbr, aggregate)
    elem: str = ""  # result element type
    dom: str = ""  # aggregate, remote: V or E
    reads: tuple[tuple[int, str], ...] = ()  # endpoint: (field index, src|dst) of each value read
    need: bool = False  # endpoint: values only along edges where a condition holds (prune); common: list
    # entries only within the edge set listed (prune)
    within: bool = False  # endpoint: the result is the edge set where every read holds (edgeset)
    recv: bool = False  # nbr: only receivers where a condition holds use the result (direction)
    # common: the edge variables read per common neighbour (with `fields`, the vertex ones: ghost values
    # travel packed), and whether each endpoint's neighbours are its out-neighbours (u, v)
    edge_fields: tuple[Field, ...] = ()
    outs: tuple[bool, ...] = ()
    along: bool = False  # nbr: senders send only along entries whose edge condition holds (prune)
    sent: bool = False  # endpoint: each value sent only along the edges where the reading condition holds
    known: str = ""  # nbr: senders send only to receivers in their kept copy (this variable) of a set (receivers)
    delta: bool = False  # endpoint: only values changed since the last run are sent; receivers keep copies (delta)
    result: str = ""  # keyed: vertex (a value per key), edge (the winning edges) or scalar
    nkeys: int = 0  # keyed: keys per element (0: one group)
    payload: bool = False  # keyed argmin/argmax: the result is a payload read at the winner

    def record_bytes(self) -> int:
        return sum(ir.ELEM_SIZE[e] for _n, e in self.record)

    def describe(self) -> str:
        """One line for `g2pl plan`: the transport and layout of this exchange's records."""
        if self.kind == "common":
            fl = ", ".join(f"{n}:{e}" for n, e in self.edge_fields)
            vf = ", ".join(f"{n}:{e}" for n, e in self.fields)
            which = "only its entries within the edge set listed" if self.need else "whole"
            return (f"each mirror's neighbour list, {which} ({'8-byte IDs' + (' with ' + fl if fl else '')} per "
                    "entry), to the ranks holding it, once" + (f"; ghost values {vf} packed" if vf else "")
                    + "; triangles listed in degree order")
        if self.kind == "keyed":
            out = "combined per key at the sender, one record per key to its owner rank"
            if not self.nkeys:
                out = "each rank's winner to every rank"
            return out + ("; the winning edges to their endpoints' ranks" if self.result == "edge" else "")
        if self.kind in ("aggregate", "remote_read", "remote_mark"):
            return {"aggregate": "one partial per rank, combined at the barrier",
                    "remote_read": "requests to the owner ranks, one reply per request",
                    "remote_mark": "one ID per marked element, to its owner rank"}[self.kind]
        if self.transport == "packed":
            bits = sum(1 if e == "bool" else 8 * ir.ELEM_SIZE[e] for _n, e in self.fields)
            fl = ", ".join(f"{n}:{'bit' if e == 'bool' else e}" for n, e in self.fields) or "no fields"
            out = f"packed {fl} = {bits} bit{'' if bits == 1 else 's'} per mirror"
        else:
            fl = ", ".join(f"{n}:{e}" for n, e in self.record) or "none"
            per = "cross-rank adjacency entry" if self.transport == "entries" else "mirror"
            out = f"record {fl} = {self.record_bytes()} bytes per {per}"
        if self.presence:
            out += "; presence bit per mirror"
        if self.along:
            out += "; only along the entries whose edge condition holds"
        if self.sent:
            out += "; only along the edges where the sender's value can be used"
        if self.known:
            out += "; only to the receivers the senders know can read it"
        if self.delta:
            out += "; only changed values, after a presence bit per mirror"
        if self.counted:
            out += "; counted where sent"
        if self.policy == "push-pull":
            out += "; push/pull"
        return out


@dataclass(frozen=True)
class Broadcast:
    """The naive code's superstep record: every vertex sends it along every adjacency entry (counted as
    messages) when the superstep exchanges nothing else; prune removes it, pack empties it."""

    record: tuple[Field, ...]
    # pack, prune not run: the fields this superstep's records carry (bools as bits), for the nominal
    # `record_bytes` of its messages; the record itself is empty (nothing travels for its own sake)
    packed: tuple[Field, ...] = ()

    def record_bytes(self) -> int:
        if self.record:
            return sum(ir.ELEM_SIZE[e] for _n, e in self.record)
        return (sum(1 if e == "bool" else 8 * ir.ELEM_SIZE[e] for _n, e in self.packed) + 7) // 8


def nbr_fields(i: ir.NbrReduce) -> tuple[Field, ...]:
    """Vertex variables the receivers read at the neighbour (value, then mask order): what travels
    when the head is evaluated after the exchange."""
    seen: dict[str, str] = {}
    for x in (i.value, i.mask):
        for n in ir.walk(x) if x is not None else ():
            if isinstance(n, ir.Load) and n.pos == "nbr":
                seen.setdefault(n.var, n.elem)
    return tuple(seen.items())


def endpoint_fields(i: ir.EndpointExchange) -> tuple[tuple[Field, ...], tuple[tuple[int, str], ...]]:
    """(fields, reads) of an endpoint exchange: each vertex variable once, and where each read is."""
    names = list(dict.fromkeys(var for var, _s, _e in i.fields))
    elems = {var: elem for var, _s, elem in i.fields}
    return tuple((v, elems[v]) for v in names), tuple((names.index(v), side) for v, side, _e in i.fields)


def baseline(k: int, i: ir.Instr, record: tuple[Field, ...]) -> Spec:
    """The -O0 spec of exchange number `k` (instruction `i`): the program's whole `record` along
    every adjacency entry, messages counted per superstep."""
    if isinstance(i, ir.NbrReduce):
        return Spec(k, "nbr", fields=nbr_fields(i), record=record, per_entry=not sender_side(i), out=i.out,
                    op=i.op, elem=i.elem)
    if isinstance(i, ir.EndpointExchange):
        fields, reads = endpoint_fields(i)
        return Spec(k, "endpoint", fields=fields, record=record, reads=reads)
    if isinstance(i, ir.GlobalReduce):
        return Spec(k, "aggregate", op=i.op, elem=i.elem, dom=i.dom)
    if isinstance(i, ir.RemoteRead):
        return Spec(k, "remote_read", elem=i.elem, dom=i.dom)
    if isinstance(i, ir.CommonReduce):
        vf, ef = common_fields(i)
        return Spec(k, "common", transport="packed", fields=vf, op=i.op, elem=i.elem, edge_fields=ef, outs=i.outs)
    if isinstance(i, ir.KeyedReduce):
        return Spec(k, "keyed", op=i.op, elem=i.elem, dom=i.dom, result=i.result, nkeys=len(i.keys),
                    payload=i.payload is not None)
    assert isinstance(i, ir.RemoteMark), i
    return Spec(k, "remote_mark", dom=i.dom)


def sender_side(i: ir.NbrReduce) -> bool:
    """The message depends on the sender alone: each sender computes it once, receivers only combine."""
    return ir.sender_only(i.value) and ir.sender_only(i.mask)


def common_fields(i: ir.CommonReduce) -> tuple[tuple[Field, ...], tuple[Field, ...]]:
    """(vertex, edge) variables a common-neighbour aggregation reads per element, each once, in
    order: what must be at hand for the edges and vertices of triangles on other ranks."""
    vs: dict[str, str] = {}
    es: dict[str, str] = {}
    for x in (i.value, i.mask):
        for n in ir.walk(x) if x is not None else ():
            if isinstance(n, ir.Load) and n.kind == "vertex":
                vs.setdefault(n.var, n.elem)
            elif isinstance(n, ir.Load) and n.kind == "edge":
                es.setdefault(n.var, n.elem)
    return tuple(vs.items()), tuple(es.items())
