"""Run statistics: per-superstep records (messages, bytes, time), the run's totals, `--stats`.

A run keeps the records of its first and last `KEEP` supersteps and folds the others into one
sum (`left_out`): a program may loop for ever under a time limit, and its statistics must not grow
with it.  Totals always cover every superstep.
"""

from __future__ import annotations

from dataclasses import dataclass, field

#: per-superstep records kept at each end of a run (runs of up to 2 * KEEP supersteps keep them all)
KEEP = 1000

#: the fields of a record that add up over supersteps
SUMMED = ("messages", "bytes", "record_bytes", "time_s", "comm_s")


@dataclass
class SuperstepStat:
    superstep: int
    state: int
    messages: int
    bytes: int
    record_bytes: int
    active: int
    time_s: float
    comm_s: float = 0.0

    def as_dict(self) -> dict:
        return {
            "superstep": self.superstep, "state": self.state, "messages": self.messages, "bytes": self.bytes,
            "record_bytes": self.record_bytes, "active": self.active, "time_s": self.time_s,
        }


def _nothing() -> SuperstepStat:
    return SuperstepStat(0, -1, 0, 0, 0, 0, 0.0, 0.0)


@dataclass
class Stats:
    per_superstep: list[SuperstepStat] = field(default_factory=list)  # kept: the first and last KEEP
    ranks: int = 1
    backend: str = "numpy"
    time_s: float = 0.0
    load_time_s: float = 0.0
    # seconds to read or generate the graph and build it (its parts, when distributed), if this run
    # loaded it; the slowest rank's
    graph_load_s: float = 0.0
    graph: dict = field(default_factory=dict)
    opt_level: int = 0
    entry: str = ""
    per_rank: list[dict] = field(default_factory=list)
    directions: dict = field(default_factory=lambda: {"push": 0, "pull": 0})
    # edgeset: edge sets computed over every edge / re-checked only on their previous members
    edge_sets: dict = field(default_factory=lambda: {"full": 0, "shrunk": 0})
    device: dict = field(default_factory=dict)  # GPU backends: device, memory, syncs, transfers
    # the records not kept, summed (`superstep`: how many; `active`: unused); see `record`
    left_out: SuperstepStat = field(default_factory=_nothing)
    # iterations of loops that ended no superstep: with `supersteps`, what --max-supersteps bounds
    loop_iterations: int = 0
    # how exchanges travel between ranks: "1d" (direct all-to-all) or "2d RxC" (g2pl.runtime.grid)
    partition: str = "1d"

    @property
    def supersteps(self) -> int:
        return len(self.per_superstep) + self.left_out.superstep

    def record(self, s: SuperstepStat) -> None:
        """Add the record of the superstep that just ended; past 2 * KEEP records, the oldest of the
        last KEEP is folded into `left_out`."""
        kept = self.per_superstep
        kept.append(s)
        if len(kept) > 2 * KEEP:
            old = kept.pop(KEEP)
            out = self.left_out
            out.superstep += 1
            for name in SUMMED:
                setattr(out, name, getattr(out, name) + getattr(old, name))

    def rows(self) -> list[SuperstepStat]:
        """The kept records and `left_out`: every superstep's numbers, in the same order on every rank."""
        return [*self.per_superstep, self.left_out]

    def total(self, name: str) -> float:
        """The sum of one of the SUMMED fields over every superstep, kept or not."""
        return sum(getattr(s, name) for s in self.rows())

    def as_dict(self) -> dict:
        out = self.left_out
        return {
            "entry": self.entry,
            "supersteps": self.supersteps,
            "loop_iterations": self.loop_iterations,
            "messages": int(self.total("messages")),
            "bytes": int(self.total("bytes")),
            "record_bytes": int(self.total("record_bytes")),
            "ranks": self.ranks,
            "partition": self.partition,
            "backend": self.backend,
            "opt_level": self.opt_level,
            "time_s": self.time_s,
            "load_time_s": self.load_time_s,
            "graph_load_s": self.graph_load_s,
            "graph": self.graph,
            "per_rank": self.per_rank,
            "directions": self.directions,
            "edge_sets": self.edge_sets,
            "per_superstep": [s.as_dict() for s in self.per_superstep],
            "per_superstep_left_out": {"supersteps": out.superstep, "messages": int(out.messages),
                                       "bytes": int(out.bytes), "record_bytes": int(out.record_bytes),
                                       "time_s": out.time_s},
            **({"device": self.device} if self.device else {}),
        }


@dataclass
class Tally:
    """What the current superstep has done so far (reset at its barrier)."""

    messages: int = 0  # records counted by the exchanges that count where they send (prune)
    active: int | None = None  # owned vertices that sent (pruned exchanges); None: every vertex
    exchanged: bool = False  # something was sent: the naive broadcast is not needed
    comm_s: float = 0.0  # seconds spent communicating
    # message counts still on the device (0-d arrays), read once at the barrier: counting costs no
    # device read of its own per exchange
    pending: list = field(default_factory=list)

    def sent_by(self, owned: int) -> None:
        self.active = owned if self.active is None else max(self.active, owned)
