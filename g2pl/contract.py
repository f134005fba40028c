"""What the compiler hands the runtime: the flag-only exchange `Spec`, the naive `Broadcast`,
and the element sizes and defaults both sides must agree on.

Generated modules import this (`X3 = Spec(3, 'nbr', ...)`), the runtime reads it, and the
compiler derives each `Spec` from its per-kind exchange records (`g2pl.compiler.exchange`),
where every decision is made and recorded once.  Nothing here imports the compiler or the
runtime: it is the neutral layer between them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

#: element type of a value
Elem = Literal["bool", "int", "float", "vid"]
#: bytes per value (the record layout of the entries and records transports); `float32` is a message
#: field's type only: a `float32(...)` value, which single precision holds exactly, in 4 bytes
ELEM_SIZE: dict[str, int] = {"bool": 1, "int": 8, "float": 8, "vid": 8, "float32": 4}
#: what a skipped element gets
DEFAULTS: dict[str, bool | int | float] = {"bool": False, "int": 0, "float": 0.0, "vid": -1}

#: how records travel between ranks (one rank sends nothing)
#: entries: the program's whole record once per cross-rank adjacency entry (Pregel's naive messages);
#: records: the program's whole record once per mirror (ghost) vertex;
#: packed: only the spec's fields, once per mirror, bool fields as bits
Transport = Literal["entries", "records", "packed"]
Kind = Literal["nbr", "endpoint", "aggregate", "remote_read", "remote_mark", "common", "keyed"]
Policy = Literal["pull", "push-pull"]
Field = tuple[str, str]  # (name, element type)


def record_size(record: tuple[Field, ...]) -> int:
    """Bytes of one record holding these fields, each at its full size."""
    return sum(ELEM_SIZE[e] for _n, e in record)


def packed_bits(fields: tuple[Field, ...]) -> int:
    """Bits of one packed record holding these fields, bools as one bit."""
    return sum(1 if e == "bool" else 8 * ELEM_SIZE[e] for _n, e in fields)


@dataclass(frozen=True)
class Spec:
    """One exchange as the runtime carries it out: which transport, what it counts, what keys its
    caches.  Flags only: the conditions behind them are evaluated by the generated code and
    passed to the verb.  A flag's meaning is per kind, as its comment says."""

    id: int
    kind: Kind
    transport: Transport = "entries"
    fields: tuple[Field, ...] = ()  # what the generated code hands over, in order
    record: tuple[Field, ...] = ()  # the program's whole record (entries/records transports: field offsets)
    presence: bool = False  # nbr: only senders whose send condition holds send, after a presence bitmap
    counted: bool = False  # messages counted along the entries actually used, not per superstep
    policy: Policy = "pull"  # nbr: push from few active senders, else pull
    per_entry: bool = False  # nbr: the receiver evaluates the message head per adjacency entry
    # nbr: the neighbours (`ir.NbrDir`): in, out, all (every in- and out-entry) or set (each adjacent vertex
    # once, along its out-edge when both exist); on undirected graphs all are the one adjacency
    dir: str = "in"
    op: str = ""  # combiner (nbr, aggregate, common, keyed)
    elem: str = ""  # result element type
    dom: str = ""  # aggregate, remote, keyed: V or E
    reads: tuple[tuple[int, str], ...] = ()  # endpoint: (field index, src|dst) of each value read
    # endpoint: values only along the edges the generated code passes as `need`; common: list entries
    # only within the edge set passed as `within`
    need: bool = False
    within: bool = False  # endpoint: the result is the edge set where every read holds
    recv: bool = False  # nbr: only the receivers passed as `recv` use the result
    # common: the edge variables read per common neighbour (with `fields`, the vertex ones: ghost values
    # travel packed), and whether each endpoint's neighbours are its out-neighbours (u, v)
    edge_fields: tuple[Field, ...] = ()
    outs: tuple[bool | str, ...] = ()  # (common: "set" lists each adjacent vertex once, `nbrs`)
    along: bool = False  # nbr: senders send only along the entries passed as `along`
    sent: bool = False  # endpoint: each value sent only along the edges its `sent` condition gives
    known: str = ""  # nbr: senders send only to receivers in their kept copy (this variable) of a set
    delta: bool = False  # endpoint: only values changed since the last run are sent; receivers keep copies
    result: str = ""  # keyed: vertex (a value per key), edge (the winning edges) or scalar
    nkeys: int = 0  # keyed: keys per element (0: one group)
    payload: bool = False  # keyed argmin/argmax: the result is a payload read at the winner
    # nbr, per entry: the head is the field at this index, read at the sender, plus the edge array the
    # generated code passes as `edge`, unfiltered (`min [ d + Weight[e] | (d, e) <- nvals v ]`): a runtime
    # may reduce each row in one pass instead of evaluating the head over every entry
    plus_edge: int = -1

    def record_bytes(self) -> int:
        return record_size(self.record)


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
            return record_size(self.record)
        return (packed_bits(self.packed) + 7) // 8
