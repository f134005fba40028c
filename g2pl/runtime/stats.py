"""Run statistics: one row per superstep (messages, bytes, time), the run's totals, `--stats`."""

from __future__ import annotations

from dataclasses import dataclass, field


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


@dataclass
class Stats:
    per_superstep: list[SuperstepStat] = field(default_factory=list)
    ranks: int = 1
    backend: str = "numpy"
    time_s: float = 0.0
    load_time_s: float = 0.0
    graph: dict = field(default_factory=dict)
    opt_level: int = 0
    entry: str = ""
    per_rank: list[dict] = field(default_factory=list)
    directions: dict = field(default_factory=lambda: {"push": 0, "pull": 0})
    # edgeset: edge sets computed over every edge / re-checked only on their previous members
    edge_sets: dict = field(default_factory=lambda: {"full": 0, "shrunk": 0})
    device: dict = field(default_factory=dict)  # GPU backends: device, memory, syncs, transfers

    @property
    def supersteps(self) -> int:
        return len(self.per_superstep)

    def as_dict(self) -> dict:
        return {
            "entry": self.entry,
            "supersteps": self.supersteps,
            "messages": int(sum(s.messages for s in self.per_superstep)),
            "bytes": int(sum(s.bytes for s in self.per_superstep)),
            "record_bytes": int(sum(s.record_bytes for s in self.per_superstep)),
            "ranks": self.ranks,
            "backend": self.backend,
            "opt_level": self.opt_level,
            "time_s": self.time_s,
            "load_time_s": self.load_time_s,
            "graph": self.graph,
            "per_rank": self.per_rank,
            "directions": self.directions,
            "edge_sets": self.edge_sets,
            "per_superstep": [s.as_dict() for s in self.per_superstep],
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
