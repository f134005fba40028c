"""Exchange records: one per exchange of the plan, holding its instruction and every decision about
how it travels, each decision recorded once.

The plan builder makes the baseline record of each exchange instruction (the paper's naive code:
the program's whole record along every adjacency entry, counted per superstep); prune, pack,
direction, edgeset, delta and receivers replace it with a record carrying their decision
(`record.but(...)`), conditions included: the instruction itself only says what is computed.
Everything else is read off the record:

* `spec()`: the runtime's flag-only `g2pl.contract.Spec`, rendered into the generated module
  (`X3 = Spec(3, 'nbr', ...)`) and handed to the runtime verb;
* `uses()` / `defs()`: the variables the exchange reads and writes, decisions included (a send
  condition is read, an edge set or kept copies are written): what dataflow sees;
* `action()`, `decisions()`, `layout()`, `summary()`: the exchange in words, for `g2pl plan`,
  `g2pl explain` and the DOT drawing alike.

A state's `Broadcast` (in the contract) is the naive code's per-superstep record.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, TypeVar

from g2pl.compiler import ir
from g2pl.contract import ELEM_SIZE, Field, Spec, Transport, packed_bits, record_size

#: the part of an exchange a state runs: a remote read's request or reply, or (empty) all of another
Phase = Literal["", "request", "reply"]

R = TypeVar("R", bound="Exchange")


def _fields_text(fields: tuple[Field, ...], bits: bool = False) -> str:
    return ", ".join(f"{n}:{'bit' if bits and e == 'bool' else e}" for n, e in fields)


def combiner_text(op: str) -> str:
    """How a neighbourhood aggregation's values are reduced: by a combiner, or (`mode`) per receiver."""
    if op == "mode":
        return "no combiner: each receiver counts its neighbours' values, most frequent wins, ties to the smaller"
    return f"combiner: {op}"


@dataclass(frozen=True)
class Exchange:
    """One exchange of the plan: its instruction, the part of it a state runs, and how it travels."""

    id: int
    instr: ir.Instr
    phase: Phase = ""
    transport: Transport = "entries"  # prune: records per mirror; pack: only the needed fields
    record: tuple[Field, ...] = ()  # the program's whole record, while it travels (pack empties it)
    counted: bool = False  # prune: messages counted along the entries actually used

    kind: ClassVar[str]
    #: what `g2pl explain` calls one and several of this kind
    words: ClassVar[tuple[str, str]]

    def but(self: R, **changes: Any) -> R:
        """This record with some decisions changed (records are immutable: passes replace them)."""
        return dataclasses.replace(self, **changes)

    def uses(self) -> set[str]:
        return self.instr.uses()

    def defs(self) -> tuple[str, ...]:
        return self.instr.defs()

    def spec(self) -> Spec:
        """The runtime's flag-only view of this record."""
        return Spec(self.id, self.kind, **self._spec())  # type: ignore[arg-type]

    def _spec(self) -> dict[str, object]:
        return {}

    def action(self) -> str:
        """What the exchange computes: the `=>` line of `g2pl plan` (decisions included)."""
        return f"{self.words[0]}: {self.summary()}"

    def decisions(self) -> list[str]:
        """The passes' decisions about this exchange, in words (none for the naive code)."""
        return []

    def layout(self) -> str:
        """What travels between ranks, in a line: `g2pl plan`'s spec line, the DOT drawing's cost."""
        return ""

    def summary(self) -> str:
        """A short description for `g2pl explain` (every kind has its own)."""
        raise NotImplementedError(type(self).__name__)


#: the adjacency entries a neighbourhood aggregation's messages travel along, by its `ir.NbrDir`
_EDGES: dict[str, str] = {"in": "in-edges", "out": "out-edges", "all": "in- and out-edges (every entry)",
                          "set": "in- and out-edges (one entry per neighbour; the out-edge when both)"}


def _record_layout(x: NbrExchange | EndpointRecord, fields: tuple[Field, ...]) -> str:
    if x.transport == "packed":
        bits = packed_bits(fields)
        return f"packed {_fields_text(fields, bits=True) or 'no fields'} = {bits} bit{'' if bits == 1 else 's'} per mirror"
    per = "cross-rank adjacency entry" if x.transport == "entries" else "mirror"
    return f"record {_fields_text(x.record) or 'none'} = {record_size(x.record)} bytes per {per}"


@dataclass(frozen=True)
class NbrExchange(Exchange):
    """A neighbourhood aggregation (`ir.NbrReduce`): messages along adjacency entries, combined per receiver."""

    instr: ir.NbrReduce
    fields: tuple[Field, ...] = ()  # what the generated code hands over (pack: the sender's values only)
    send: ir.Ex | None = None  # prune: the filter's sender-side part, evaluated by each sender (who sends)
    # prune: the filter's conjuncts over the connecting edge alone (`e in S`): edge values live at both
    # endpoints, so a sender sends only along the entries where they hold (they stay in the filter)
    along: ir.Ex | None = None
    push: bool = False  # direction: pushed from the active senders when they are few
    # direction, receivers: the receiver-side condition outside which the result is never used: a pull
    # may skip those receivers (their result is unspecified)
    recv: ir.Ex | None = None
    # receivers: a vertex bool variable, the senders' kept copy of a set outside which the result is never
    # read; a sender sends only to neighbours in it (not a use: None before its first copy)
    known: str | None = None

    kind: ClassVar[str] = "nbr"
    words: ClassVar[tuple[str, str]] = ("neighbour messages", "neighbour message exchanges")

    @property
    def per_entry(self) -> bool:
        """The receiver evaluates the message head per adjacency entry (it reads more than the sender)."""
        return not computed_by_sender(self.instr)

    def uses(self) -> set[str]:
        return self.instr.uses() | ir.reads(self.send) | ir.reads(self.recv) | ir.reads(self.along)

    @property
    def plus_edge(self) -> tuple[int, str] | None:
        """(index in `fields`, edge variable) where the head is an arrived field at the sender plus an
        edge value, unfiltered, and combined by min or max: Bellman-Ford's relaxation `min [ d + Weight[e]
        | (d, e) <- nvals v ]` (the min-plus semiring).  A runtime may reduce each receiver's entries in
        one pass, reading each value where it lies, instead of evaluating the head into entry arrays."""
        i = self.instr
        v = i.value
        if (not self.per_entry or i.mask is not None or i.op not in ("min", "max") or i.elem not in ("int", "float")
                or not (isinstance(v, ir.Op) and v.op == "+" and len(v.args) == 2)):
            return None
        loads = {a.pos: a for a in v.args if isinstance(a, ir.Load) and a.elem in ("int", "float")}
        nb, ed = loads.get("nbr"), loads.get("edge")
        names = [n for n, _e in self.fields]
        if nb is None or ed is None or nb.var not in names:
            return None
        return names.index(nb.var), ed.var

    def _spec(self) -> dict[str, object]:
        i = self.instr
        plus = self.plus_edge
        return dict(transport=self.transport, fields=self.fields, record=self.record,
                    presence=self.send is not None, counted=self.counted,
                    policy="push-pull" if self.push else "pull", per_entry=self.per_entry, dir=i.dir, op=i.op,
                    elem=i.elem, recv=self.recv is not None, along=self.along is not None, known=self.known or "",
                    plus_edge=-1 if plus is None else plus[0])

    def action(self) -> str:
        i = self.instr
        said = self.decisions()
        cond = f"; filter {ir.show_ex(i.mask)}" if i.mask is not None else ""
        inner = "; ".join(said) + cond if said else cond[2:]
        return (f"messages along {_EDGES[i.dir]} -> {i.target} = {i.op} of {ir.show_ex(i.value)}"
                + (f" [{inner}]" if inner else "") + f" ({combiner_text(i.op)})")

    def decisions(self) -> list[str]:
        out = []
        if self.send is not None:
            out.append(f"sent if {ir.show_ex(self.send)}")
        if self.along is not None:
            out.append(f"sent only along entries where {ir.show_ex(self.along)}")
        if self.push:
            out.append("pushed when the senders are few, else pulled")
        if self.recv is not None:
            out.append(f"pulled only at receivers where {ir.show_ex(self.recv)}")
        if self.known is not None:
            out.append(f"sent only to receivers in {self.known}")
        return out

    def layout(self) -> str:
        out = _record_layout(self, self.fields)
        if self.send is not None:
            out += "; presence bit per mirror"
        if self.along is not None:
            out += "; only along the entries whose edge condition holds"
        if self.known is not None:
            out += "; only to the receivers the senders know can read it"
        if self.counted:
            out += "; counted where sent"
        if self.push:
            out += "; push/pull"
        return out

    def summary(self) -> str:
        i = self.instr
        d = f"{i.op} over {ir.nbr_words(i.dir)} -> {i.target}"
        if self.send is not None:
            d += f"; records only from senders where {ir.show_ex(self.send)}"
        elif i.dir == "set":
            d += "; one record per adjacent vertex (each neighbour once)"
        else:
            d += "; one record per adjacency entry"
        if self.push:
            d += "; pushed from few active senders, else pulled"
        return d + ("; no combiner: values counted per receiver" if i.op == "mode" else f"; combiner {i.op}")


@dataclass(frozen=True)
class EndpointRecord(Exchange):
    """An endpoint exchange (`ir.EndpointExchange`): vertex values made available on edges."""

    instr: ir.EndpointExchange
    need: bool = False  # prune: values sent only along the edges where the instruction's `need` holds
    # edgeset: the exchange defines only this edge<bool> variable, the conjunction of every (bool) field
    # at its endpoint (a set that shrinks while the vertex sets do)
    within: str | None = None
    # delta: one vertex variable per field holding its values (owned and ghost) as last exchanged; only the
    # values that changed are sent, and the new copies returned
    keep: tuple[str, ...] = ()
    # receivers: per value read (as `instr.targets`), an edge condition reading only that read's own target,
    # the endpoint IDs and constants, outside which the value is never used: its sender (who has the value
    # and knows the edge) sends it along the edge only where the condition holds
    sent: tuple[ir.Ex | None, ...] = ()

    kind: ClassVar[str] = "endpoint"
    words: ClassVar[tuple[str, str]] = ("endpoint exchange", "endpoint exchanges")

    @property
    def fields(self) -> tuple[Field, ...]:
        """Each vertex variable once, in order: what the generated code hands over."""
        return endpoint_fields(self.instr)[0]

    @property
    def reads(self) -> tuple[tuple[int, str], ...]:
        """(field index, src|dst) of each value read."""
        return endpoint_fields(self.instr)[1]

    def defs(self) -> tuple[str, ...]:
        return ((self.within,) if self.within is not None else self.instr.targets) + self.keep

    def _spec(self) -> dict[str, object]:
        return dict(transport=self.transport, fields=self.fields, record=self.record, counted=self.counted,
                    reads=self.reads, need=self.need, within=self.within is not None, sent=bool(self.sent),
                    delta=bool(self.keep))

    def action(self) -> str:
        i = self.instr
        where = "".join(f" ({d})" for d in self.decisions())
        if self.within is not None:
            return (f"endpoint exchange: {self.within} = edges with {i.conjunction()} "
                    f"(re-checked only on its previous edges while the sets shrink){where}")
        return "endpoint exchange: " + ", ".join(f"{t} = {v}@{s}" for (v, s, _), t in zip(i.fields, i.targets)) + where

    def decisions(self) -> list[str]:
        out = []
        if self.need:
            assert self.instr.need is not None  # prune sets `need` only for an instruction with one
            out.append(f"records only along edges where {ir.show_ex(self.instr.need)}")
        if self.sent:
            out.append("each value only where " + "; ".join(ir.show_ex(c) for c in self.sent if c is not None))
        if self.keep:
            out.append(f"only values changed since the last run; copies kept in {', '.join(self.keep)}")
        return out

    def layout(self) -> str:
        out = _record_layout(self, self.fields)
        if self.sent:
            out += "; only along the edges where the sender's value can be used"
        if self.keep:
            out += "; only changed values, after a presence bit per mirror"
        if self.counted:
            out += "; counted where sent"
        return out

    def summary(self) -> str:
        i = self.instr
        d = ", ".join(f"{v}@{s}" for v, s, _e in i.fields)
        if self.within is not None:
            d += f"; their conjunction {self.within}, re-checked only on its previous edges while the sets shrink"
        if self.need:
            assert i.need is not None  # prune sets `need` only for an instruction with one
            d += f"; only along edges where {ir.show_ex(i.need)}"
        return d


@dataclass(frozen=True)
class CommonExchange(Exchange):
    """A common-neighbour aggregation (`ir.CommonReduce`): neighbour lists of mirrors shipped once."""

    instr: ir.CommonReduce
    transport: Transport = "packed"
    need: bool = False  # prune: only the list entries within the instruction's edge set travel

    kind: ClassVar[str] = "common"
    words: ClassVar[tuple[str, str]] = ("common-neighbour aggregation", "common-neighbour aggregations")

    @property
    def fields(self) -> tuple[Field, ...]:
        """The vertex variables read per common neighbour (their ghost values travel packed)."""
        return common_fields(self.instr)[0]

    @property
    def edge_fields(self) -> tuple[Field, ...]:
        """The edge variables read per common neighbour, shipped with the neighbour lists."""
        return common_fields(self.instr)[1]

    def _spec(self) -> dict[str, object]:
        i = self.instr
        return dict(transport=self.transport, fields=self.fields, counted=self.counted, op=i.op, elem=i.elem,
                    edge_fields=self.edge_fields, outs=i.outs, need=self.need)

    def action(self) -> str:
        i = self.instr
        cond = f"; filter {ir.show_ex(i.mask)}" if i.mask is not None else ""
        within = f"; triangles within {i.within}" if i.within is not None else ""
        sides = "/".join(ir.common_side_word(o) for o in i.outs)
        return (f"common {sides}-neighbours of edge endpoints -> {i.target} = {i.op} of {ir.show_ex(i.value)}"
                f"{within}{cond}")

    def decisions(self) -> list[str]:
        return [f"neighbour lists sent only along the edges of {self.instr.within}"] if self.need else []

    def layout(self) -> str:
        el = _fields_text(self.edge_fields)
        vf = _fields_text(self.fields)
        which = "only its entries within the edge set listed" if self.need else "whole"
        return (f"each mirror's neighbour list, {which} ({'8-byte IDs' + (' with ' + el if el else '')} per "
                "entry), to the ranks holding it, once" + (f"; ghost values {vf} packed" if vf else "")
                + "; triangles listed in degree order")

    def summary(self) -> str:
        i = self.instr
        within = f", triangles within {i.within} only" if i.within is not None else ""
        return (f"{i.op} over the common neighbours of each edge's endpoints -> {i.target}{within}; "
                "neighbour lists of mirrors shipped once, triangles listed by degree order")


@dataclass(frozen=True)
class AggregateExchange(Exchange):
    """An aggregator (`ir.GlobalReduce`): one partial per rank, combined at the barrier."""

    instr: ir.GlobalReduce

    kind: ClassVar[str] = "aggregate"
    words: ClassVar[tuple[str, str]] = ("aggregator", "aggregators")

    def _spec(self) -> dict[str, object]:
        return dict(op=self.instr.op, elem=self.instr.elem, dom=self.instr.dom)

    def action(self) -> str:
        i = self.instr
        cond = f" where {ir.show_ex(i.mask)}" if i.mask is not None else ""
        return (f"aggregator {i.target} = {i.op} over {'vertices' if i.dom == 'V' else 'edges'} of "
                f"{ir.show_ex(i.value)}{cond}")

    def layout(self) -> str:
        i = self.instr
        if i.op == "mode":  # not a fixed-size partial: counts of distinct values, merged exactly
            return "aggregator: each rank's (value, count) pairs, gathered by every rank and merged"
        return f"aggregator: one {i.elem} per rank, combined with `{i.op}` in one Allreduce"

    def summary(self) -> str:
        i = self.instr
        return f"{i.op} over {'vertices' if i.dom == 'V' else 'edges'} -> {i.target}"


@dataclass(frozen=True)
class RemoteReadExchange(Exchange):
    """A remote read (`ir.RemoteRead`): requests to the owner ranks (one state), replies (the next)."""

    instr: ir.RemoteRead

    kind: ClassVar[str] = "remote_read"
    words: ClassVar[tuple[str, str]] = ("remote read", "remote reads")

    def _spec(self) -> dict[str, object]:
        return dict(elem=self.instr.elem, dom=self.instr.dom)

    def action(self) -> str:
        i = self.instr
        if self.phase == "request":
            return f"remote-read request: ask owner of {ir.show_ex(i.index)} for {i.var} (for {i.target})"
        return f"remote-read reply: {i.target} = {i.var}[...]"

    def layout(self) -> str:
        if self.phase == "request":
            return "request: one vid (8 B) per reading element, to the owner rank"
        return f"reply: one {self.instr.elem} ({ELEM_SIZE[self.instr.elem]} B) per request"

    def summary(self) -> str:
        i = self.instr
        return f"{i.target} = {i.var}[{ir.show_ex(i.index)}]"


@dataclass(frozen=True)
class RemoteMarkExchange(Exchange):
    """A remote mark (`ir.RemoteMark`): one ID per marked element, to its owner rank."""

    instr: ir.RemoteMark

    kind: ClassVar[str] = "remote_mark"
    words: ClassVar[tuple[str, str]] = ("remote mark", "remote marks")

    def _spec(self) -> dict[str, object]:
        return dict(dom=self.instr.dom)

    def layout(self) -> str:
        return "one vid (8 B) per marked vertex, to its owner rank"

    def summary(self) -> str:
        return f"{self.instr.target} = vertices with ID {ir.show_ex(self.instr.index)}"


@dataclass(frozen=True)
class KeyedExchange(Exchange):
    """A keyed aggregation (`ir.KeyedReduce`): combined per key at the sender, one record per key."""

    instr: ir.KeyedReduce

    kind: ClassVar[str] = "keyed"
    words: ClassVar[tuple[str, str]] = ("keyed aggregation", "keyed aggregations")

    def _spec(self) -> dict[str, object]:
        i = self.instr
        return dict(op=i.op, elem=i.elem, dom=i.dom, result=i.result, nkeys=len(i.keys),
                    payload=i.payload is not None)

    def layout(self) -> str:
        return "one record per (rank, key), to the key's owner rank"

    def summary(self) -> str:
        return f"{self.instr.target} = {self.instr.describe()}"


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


def computed_by_sender(i: ir.NbrReduce) -> bool:
    """The message depends on the sender alone: each sender computes it once, receivers only combine."""
    return ir.sender_only(i.value) and ir.sender_only(i.mask)


def baseline(k: int, i: ir.Instr, record: tuple[Field, ...], phase: Phase = "") -> Exchange:
    """The -O0 record of exchange number `k` (instruction `i`): the program's whole `record` along
    every adjacency entry, messages counted per superstep."""
    if isinstance(i, ir.NbrReduce):
        return NbrExchange(k, i, phase, record=record, fields=nbr_fields(i))
    if isinstance(i, ir.EndpointExchange):
        return EndpointRecord(k, i, phase, record=record)
    if isinstance(i, ir.GlobalReduce):
        return AggregateExchange(k, i, phase)
    if isinstance(i, ir.RemoteRead):
        return RemoteReadExchange(k, i, phase)
    if isinstance(i, ir.CommonReduce):
        return CommonExchange(k, i, phase)
    if isinstance(i, ir.KeyedReduce):
        return KeyedExchange(k, i, phase)
    assert isinstance(i, ir.RemoteMark), i
    return RemoteMarkExchange(k, i, phase)
