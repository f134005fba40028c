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

if TYPE_CHECKING:
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
    def on(cls, pass_name: str, instr: ir.Instr, text: str, vars: tuple[str, ...] | None = None) -> PassNote:
        """A note about instruction `instr`: at its line, naming its statement and, unless `vars` says
        otherwise, the variables it defines."""
        return cls(pass_name, text, line=instr.span.line, origins=(instr.origin,),
                   vars=tuple(instr.defs()) if vars is None else vars)

    @classmethod
    def on_state(cls, pass_name: str, state: State, text: str) -> PassNote:
        """A note about plan state `state`: naming the statements whose exchanges end it."""
        instrs = [x.instr for x in state.exchange]
        return cls(pass_name, text, state=state.id, origins=tuple(dict.fromkeys(i.origin for i in instrs)),
                   vars=tuple(dict.fromkeys(d for i in instrs for d in i.defs())))


#: the log the passes append to, in pass order
PassLog = list[PassNote]
