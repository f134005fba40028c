"""Lowering: the AST of one procedure to typed IR (type inference to a fixed point, set comprehensions
to IR instructions), with user functions inlined (`inline`) and deep expressions split (`flatten`)."""

from g2pl.compiler.lowering.flatten import flatten
from g2pl.compiler.lowering.lower import lower_procedure

__all__ = ["flatten", "lower_procedure"]
