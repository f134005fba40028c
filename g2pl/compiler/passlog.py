"""The pass log: what each optimizer pass did, or why it did nothing, as records.

Every entry is a `PassNote`.  Printed (`g2pl plan`, `g2plc --emit plan`, the
notes of `--dot`) it is `str(note)`: `merge: line 7: ...`, `pack: state 3: ...`
or `reuse: ...`.  `g2pl explain` gives each note to the statements it names
by id (`origins`, the `origin` of the instructions it is about), so it needs
neither to parse the text back nor to guess a statement from a line number
(a line of a function body belongs to every statement that calls it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from g2pl.compiler import ir
from g2pl.compiler.exchange import Exchange

if TYPE_CHECKING:  # the plan holds a log of these: its module imports this one
    from g2pl.compiler.plan import State


@dataclass(frozen=True)
class PassNote:
    """One log entry of pass `pass_name`, about a source line, a plan state, or (neither) the procedure."""

    pass_name: str
    text: str
    line: int | None = None
    state: int | None = None
    origins: tuple[int, ...] = ()  # ids of the statements it is about (`ir.Instr.origin`)
    vars: tuple[str, ...] = ()  # the IR variables it is about

    def __str__(self) -> str:
        if self.line is not None:
            return f"{self.pass_name}: line {self.line}: {self.text}"
        if self.state is not None:
            return f"{self.pass_name}: state {self.state}: {self.text}"
        return f"{self.pass_name}: {self.text}"

    @classmethod
    def on(cls, pass_name: str, about: ir.Instr | Exchange, text: str, vars: tuple[str, ...] | None = None) -> PassNote:
        """A note about an instruction or an exchange: at its line, naming its statement and, unless
        `vars` says otherwise, the variables it defines."""
        instr = about.instr if isinstance(about, Exchange) else about
        return cls(pass_name, text, line=instr.span.line, origins=(instr.origin,),
                   vars=tuple(about.defs()) if vars is None else vars)

    @classmethod
    def on_state(cls, pass_name: str, state: State, text: str) -> PassNote:
        """A note about plan state `state`: naming the statements whose exchanges end it."""
        return cls(pass_name, text, state=state.id, origins=tuple(dict.fromkeys(x.instr.origin for x in state.exchange)),
                   vars=tuple(dict.fromkeys(d for x in state.exchange for d in x.defs())))


#: the log the passes append to, in pass order
PassLog = list[PassNote]
