"""Hints for habits from other languages: what a G2PL error adds when the code looks like Python or C.

`HABITS` is the one table of these hints.  The parser adds them to syntax errors (`syntax_hint`,
`character_hint`); the lowering adds `call_notes` to the error for an unknown function or an aggregation
called like a function.  Each hint is a note under the error (`note: ...`), which says where the
error is; the hint says what G2PL writes instead (docs/language.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from g2pl.compiler import ast as A

#: habit -> hint; the entries with `{...}` fields are filled in with `str.format`
HABITS: dict[str, str] = {
    # `#` starts a comment in Python and in graph files, not in programs
    "hash comment": "G2PL comments are `// to the end of the line` and `/* block */`; `#` starts a comment "
                    "only in graph files",
    # `a // b`: Python's floor division (and in C++ the rest of the line is a comment, as in G2PL)
    "floor division": "`//` starts a comment in G2PL, so `{comment}` on line {line} is not read; integer "
                      "(floor) division is the function `idiv(a, b)`",
    # `for v in V { ... }`, `for (v in V) { ... }`
    "for loop": "G2PL has no `for` loop: a comprehension works on every vertex at once, `{ head | v <- V }` "
                "(a value per vertex), and an aggregation combines the values, `sum [ head | v <- V ]`; "
                "repeat with `while (condition) { ... }`",
    # `{ f(v) for v in V }`
    "for comprehension": "a G2PL comprehension is `{ head | v <- V }`, not `{ head for v in V }`",
    # `x += 1;`, `x++;`
    "compound assignment": "G2PL has no `{op}`; write `{name} = {name} {sign} {value};`",
    # `len(S)`, `size(S)`, `length(S)`
    "size function": "G2PL has no `{func}` function: the number of elements of `{arg}` is the aggregation "
                     "`count [ {elem} | {elem} <- {arg} ]`",
    # `count(S)`
    "count call": "the number of elements of `{arg}` is `count [ {elem} | {elem} <- {arg} ]`",
}

#: functions that give a collection's size in other languages
SIZE_FUNCTIONS = ("len", "length", "size")
#: loop keywords of other languages (G2PL's only loop is `while`)
FOR_WORDS = ("for", "foreach", "forall")
_OPERAND_END = ("NAME", "INT", "FLOAT", "RPAR", "RSQB")
_STATEMENT_START = ("LBRACE", "RBRACE", "SEMICOLON")


class Tok(Protocol):
    """What a hint reads of a token (a `lark.Token`: lark types its positions optional, and the lexer's
    tokens all have them)."""

    type: str
    line: int | None
    end_pos: int | None

    def __str__(self) -> str: ...


def character_hint(ch: str) -> str | None:
    """The hint for a character the lexer does not accept."""
    return HABITS["hash comment"] if ch == "#" else None


def syntax_hint(text: str, before: Sequence[Tok], bad: Tok) -> str | None:
    """The hint for an unexpected token `bad`, given the tokens `before` it (comments kept, no
    whitespace) and the program `text`; None when no habit explains the error."""
    last = before[-1] if before else None
    prev = before[-2] if len(before) >= 2 else None
    at_statement = prev is None or prev.type in _STATEMENT_START
    # `x = a // b;`: the rest of the line was a comment, so the error comes after it
    if (last is not None and last.type == "COMMENT" and prev is not None and prev.type in _OPERAND_END
            and prev.line == last.line):
        comment = str(last).rstrip()
        rest = comment[2:].strip()
        if rest and (rest[0].isalnum() or rest[0] in "(_.") and rest[-1] in ";{":
            return HABITS["floor division"].format(comment=comment, line=last.line)
    # `for v in V {` / `for (v in V) {`: `for` read as the name a statement assigns to
    if (last is not None and last.type == "NAME" and str(last) in FOR_WORDS and at_statement
            and bad.type in ("NAME", "LPAR")):
        return HABITS["for loop"]
    # `{ f(v) for v in V }`
    if bad.type == "NAME" and str(bad) == "for" and not at_statement:
        return HABITS["for comprehension"]
    # `x += 1;`, `x -= 1;`, `x *= 2;`, `x++;`, `x--;`
    if last is not None and last.type == "NAME" and at_statement and bad.type in ("ADDOP", "MULOP"):
        assert bad.end_pos is not None
        sign, after = str(bad), text[bad.end_pos:bad.end_pos + 1]
        if after == "=" or (after == sign and sign in "+-"):
            value = "1" if after == sign else "..."
            return HABITS["compound assignment"].format(op=sign + after, name=str(last), sign=sign, value=value)
    return None


def _element(arg: str) -> str:
    return "e" if arg == "E" else "v"


def call_notes(call: A.Call) -> tuple[str, ...]:
    """Notes for a call of an undefined function or of an aggregation: `len(S)`, `size(S)`, `count(S)`."""
    func = call.func
    if func not in SIZE_FUNCTIONS and func != "count":
        return ()
    arg = "S"
    if len(call.args) == 1 and isinstance(call.args[0], A.Name):
        arg = call.args[0].id.split("#", 1)[0]  # a name renamed by inlining reads as written
    if func == "count":
        return (HABITS["count call"].format(arg=arg, elem=_element(arg)),)
    return (HABITS["size function"].format(func=func, arg=arg, elem=_element(arg)),)
