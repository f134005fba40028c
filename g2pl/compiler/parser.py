"""Source text -> `ast.Module` with Lark (LALR, positions kept).

Syntax errors become `G2PLError`s with the position, the source line, a caret
and what the parser expected (in words, not terminal names), plus a hint from
a table of common mistakes (`_HINTS`) or, first, from the habits of other languages
(`g2pl.compiler.hints`: `#` comments, `a // b`, `for v in V`, `x += 1`).
"""

from __future__ import annotations

import functools
import math
from importlib import resources
from pathlib import Path
from typing import cast

from lark import Lark, Token, Transformer, Tree, v_args
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken, VisitError
from lark.tree import Meta

from g2pl.compiler import ast as A
from g2pl.compiler import ir
from g2pl.compiler.hints import character_hint, syntax_hint
from g2pl.compiler.limits import MAX_NESTING, deep_stack
from g2pl.errors import G2PLError, Span
from g2pl.io.numtext import beyond_int64

AGG_OPS: tuple[A.AggWord, ...] = ("sum", "min", "max", "and", "or", "union", "argmin", "argmax", "avg", "count", "mode")
ELEM_TYPES: tuple[ir.Elem, ...] = ("bool", "int", "float", "vid")
#: the type constructors `vertex<T>`, `edge<T>`
GRAPH_KINDS: tuple[ir.Kind, ...] = ("vertex", "edge")


def _grammar_text() -> str:
    try:
        return resources.files("g2pl.grammar").joinpath("g2pl.lark").read_text()
    except (ModuleNotFoundError, FileNotFoundError):  # running from a source tree without install
        return (Path(__file__).resolve().parents[2] / "grammar" / "g2pl.lark").read_text()


@functools.lru_cache(maxsize=1)
def _parser() -> Lark:
    return Lark(_grammar_text(), parser="lalr", propagate_positions=True, maybe_placeholders=True)


def _span(meta_or_tok: Token | Meta) -> Span:
    if isinstance(meta_or_tok, Token):
        tok = meta_or_tok
        # (lark types a token's position optional: the lexer's tokens, the only ones here, all have one)
        assert tok.line is not None and tok.column is not None and tok.end_line is not None \
            and tok.end_column is not None
        return Span(tok.line, tok.column, tok.end_line, tok.end_column)
    m = meta_or_tok
    return Span(m.line, m.column, m.end_line, m.end_column)


def _type_ann(name: Token, arg: Token | None, span: Span) -> A.TypeAnn:
    n = str(name)
    if arg is None:
        if n in ELEM_TYPES:
            return A.TypeAnn("scalar", n, span)
        if n == "vset":
            return A.TypeAnn("vertex", "bool", span)
        if n == "eset":
            return A.TypeAnn("edge", "bool", span)
        raise G2PLError(
            f"unknown type `{n}`; expected one of bool, int, float, vid, vset, eset, vertex<T>, edge<T>", span=span
        )
    if n not in GRAPH_KINDS:
        raise G2PLError(f"unknown type constructor `{n}`; expected `vertex<T>` or `edge<T>`", span=span)
    elem = str(arg)
    if elem not in ELEM_TYPES:
        raise G2PLError(f"unknown element type `{arg}`; expected one of bool, int, float, vid", span=_span(arg))
    return A.TypeAnn(n, elem, span)


INT64_MAX = 2**63 - 1


def _int_value(tok: Token) -> int:
    """An integer literal's value; it must fit int64 (checked on the digits first: Python refuses to
    convert strings of more than 4300 digits, and a 5,000-digit literal must be a user error)."""
    digits = str(tok).lstrip("0") or "0"
    if beyond_int64(digits) or int(digits) > INT64_MAX:
        raise G2PLError(f"integer literal out of range for int64 (the largest is {INT64_MAX})", span=_span(tok))
    return int(digits)


def _float_value(tok: Token) -> float:
    """A float literal's value; one too large for a 64-bit float (it would read as inf) is an error."""
    value = float(str(tok))
    if math.isinf(value):
        raise G2PLError("float literal out of range for a 64-bit float (the largest is about 1.8e308; "
                        "write `inf` for infinity)", span=_span(tok))
    return value


@v_args(meta=True)
class _ToAst(Transformer):
    """Lark tree -> ast dataclasses."""

    # ---- definitions
    def start(self, meta, defs):
        return list(defs)

    def procedure(self, meta, ch):
        _kw, name, params, body = ch
        return A.Procedure(str(name), tuple(params or ()), tuple(body), _span(meta))

    def function(self, meta, ch):
        _kw, name, params, body = ch
        return A.Function(str(name), tuple(params or ()), body, _span(meta))

    def params(self, meta, ch):
        return list(ch)

    def param(self, meta, ch):
        name, ann = ch
        return A.Param(str(name), ann, _span(meta))

    def type(self, meta, ch):
        return _type_ann(ch[0], ch[1], _span(meta))

    def block(self, meta, ch):
        return list(ch)

    # ---- statements
    def assign(self, meta, ch):
        name, ann, value = ch
        return A.Assign(_span(meta), str(name), ann, value, _span(name))

    def while_stmt(self, meta, ch):
        _kw, cond, body = ch
        return A.While(_span(meta), cond, tuple(body))

    def if_stmt(self, meta, ch):
        _kw, cond, _then_kw, then, _else_kw, other = ch
        if other is None:
            other_t: tuple = ()
        elif isinstance(other, list):
            other_t = tuple(other)
        else:  # else if
            other_t = (other,)
        return A.If(_span(meta), cond, tuple(then), other_t)

    def return_stmt(self, meta, ch):
        return A.Return(_span(meta), tuple(ch[1:]))

    # ---- expressions
    def cond(self, meta, ch):
        return A.Cond(_span(meta), ch[0], ch[1], ch[2])

    def binop(self, meta, ch):
        left, op, right = ch
        # one of the grammar's operator terminals (OROR, ANDAND, EQOP, RELOP, IN, ADDOP, DIFF, MULOP)
        return A.BinOp(_span(meta), cast(A.BinOpWord, str(op)), left, right, _span(op))

    def unop(self, meta, ch):
        op, operand = ch
        if str(op) == "+":
            return operand
        return A.UnOp(_span(meta), str(op), operand)

    def call(self, meta, ch):
        name, args = ch
        return A.Call(_span(meta), str(name), tuple(args or ()), _span(name))

    def args(self, meta, ch):
        return list(ch)

    def bracket(self, meta, ch):
        base, body = ch
        if body[0] == "index":
            return A.Index(_span(meta), base, body[1])
        _tag, heads, is_list, quals = body
        if not isinstance(base, A.Name):
            raise G2PLError("expected an aggregation name before `[ ... | ... ]`", span=base.span)
        if base.id not in AGG_OPS:
            raise G2PLError(
                f"unknown aggregation `{base.id}`; expected one of {', '.join(AGG_OPS)}", span=base.span
            )
        return A.Agg(_span(meta), base.id, tuple(heads), tuple(quals), base.span, is_list)

    def keyed(self, meta, ch):
        agg, _by, *keys = ch
        if not isinstance(agg, A.Agg):
            raise G2PLError("`by` groups an aggregation: write `AGG [ head | generator, filters ] by KEY`",
                            span=_span(_by))
        if agg.keys:
            raise G2PLError("an aggregation has one `by`; list several keys as `by [K1, K2]`", span=_span(_by))
        return A.Agg(_span(meta), agg.op, agg.heads, agg.quals, agg.op_span, agg.is_list, tuple(keys))

    def index_body(self, meta, ch):
        return ("index", ch[0])

    def agg_body(self, meta, ch):
        head, quals = ch
        if isinstance(head, tuple) and head and head[0] == "list":
            return ("agg", head[1], True, quals)
        return ("agg", [head], False, quals)

    def list_head(self, meta, ch):
        return ("list", list(ch))

    def name(self, meta, ch):
        return A.Name(_span(meta), str(ch[0]))

    def int_lit(self, meta, ch):
        return A.IntLit(_span(meta), _int_value(ch[0]))

    def float_lit(self, meta, ch):
        return A.FloatLit(_span(meta), _float_value(ch[0]))

    def set_comp(self, meta, ch):
        head, quals = ch
        if isinstance(head, tuple):
            raise G2PLError("a list head `[x, y]` is only allowed in `union [ ... ]`", span=_span(meta))
        return A.SetComp(_span(meta), head, tuple(quals))

    def qualifiers(self, meta, ch):
        return list(ch)

    def generator(self, meta, ch):
        names, _arrow, source = ch
        return A.Generator(tuple(names), source, _span(meta))

    def filter(self, meta, ch):
        e = ch[0]
        if isinstance(e, A.InNvals) and isinstance(e.name, A.Name):  # `w in nvals v`: `w <- nvals v`
            return A.Generator((e.name.id,), e.source, _span(meta))
        return A.Filter(e, _span(meta))

    def in_nvals(self, meta, ch):
        left, _in, kw, centre = ch
        return A.InNvals(_span(meta), left, A.NvalsSource(
            str(centre), _NBR_DIRS[str(kw)], Span(kw.line, kw.column, centre.end_line, centre.end_column)))

    def nbr_word(self, meta, ch):
        return ch[0]

    def pair(self, meta, ch):
        return A.Pair(_span(meta), (str(ch[0]), str(ch[1])))

    def pat1(self, meta, ch):
        return [str(ch[0])]

    def pat2(self, meta, ch):
        return [str(c) for c in ch]

    def pat3(self, meta, ch):
        return [str(c) for c in ch]

    def nvals_source(self, meta, ch):
        kw, centre = ch
        return A.NvalsSource(str(centre), _NBR_DIRS[str(kw)], _span(meta))


#: the neighbour generators' words -> the neighbours they range over
_NBR_DIRS: dict[str, ir.NbrDir] = {word: d for d, word in A.NBR_WORDS.items()}


# Token names -> words, for "expected ..." messages.
_TOKEN_WORDS = {
    "SEMICOLON": "`;`", "LPAR": "`(`", "RPAR": "`)`", "LBRACE": "`{`", "RBRACE": "`}`", "LSQB": "`[`",
    "RSQB": "`]`", "COMMA": "`,`", "VBAR": "`|`", "EQUAL": "`=`", "COLON": "`:`", "QMARK": "`?`",
    "ARROW": "`<-`", "NAME": "a name", "INT": "a number", "FLOAT": "a number", "OROR": "`||`",
    "ANDAND": "`&&`", "EQOP": "`==`/`!=`", "RELOP": "a comparison", "IN": "`in`", "ADDOP": "`+`/`-`",
    "MULOP": "`*`/`/`/`%`", "DIFF": "`\\`", "UNOP": "`!`", "WHILE": "`while`", "IF": "`if`", "THEN": "`then`",
    "ELSE": "`else`", "RETURN": "`return`", "NVALS": "`nvals`", "OUTNVALS": "`outnvals`",
    "ALLNVALS": "`allnvals`", "NBRS": "`nbrs`",
    "PROCEDURE": "`procedure`", "BY": "`by`", "FUNCTION": "`function`", "$END": "end of file", "LESSTHAN": "`<`",
    "MORETHAN": "`>`",
}

# The habit hints read the tokens of at most this many lines, and characters, before the error.
_HINT_LINES = 5
_HINT_CHARS = 4000

# Common mistakes: a snippet that fails the same way -> hint (Lark's match_examples).
_HINTS = {
    "a statement must end with `;`": ["p() { x = 1 }", "p() { x = 1 y = 2; }", "p() { return x }"],
    "`<-` is the generator arrow; write `a < -1` with a space for a comparison": ["p() { x = { a | a <-1 }; }"],
    "an `if`/`while` condition must be in parentheses: `while (c) { ... }`": [
        "p() { while x { } }", "p() { if x { } }",
    ],
    "a comprehension needs `{ head | generator, filters }`": ["p() { x = { a }; }", "p() { x = { a | }; }"],
}


def _expected_words(expected: set[str]) -> str:
    words = sorted({_TOKEN_WORDS.get(t, t) for t in expected if not t.startswith("__")})
    if len(words) > 8:
        words = words[:8] + ["..."]
    return ", ".join(words)


def _tokens_before(text: str, bad: Token) -> list[Token]:
    """The last tokens of `text` before `bad` (from a few lines up), comments included, whitespace left
    out: what the habit hints read.  Only a window is lexed, so a huge program costs no more."""
    end = len(text) if bad.type == "$END" else bad.start_pos
    assert end is not None  # (a lexed token has its position)
    start = end
    for _ in range(_HINT_LINES):
        start = text.rfind("\n", 0, max(start - 1, 0)) + 1
        if start == 0:
            break
    start = max(start, end - _HINT_CHARS)
    line_offset = text.count("\n", 0, start)
    out: list[Token] = []
    try:
        for tok in _parser().lex(text[start:end], dont_ignore=True):
            if tok.type not in ("WS", "BLOCK_COMMENT"):
                assert tok.line is not None
                tok.line += line_offset
                out.append(tok)
    except UnexpectedInput:  # text the lexer refuses: what came before it is enough
        pass
    return out


def _lex_pos(err: UnexpectedCharacters) -> int:
    """Where in the text the lexer stopped (lark types `pos_in_stream` None, its class default)."""
    return err.pos_in_stream  # type: ignore[return-value]  # lark types it None; the lexer sets an int


def _habit_hint(err: UnexpectedInput, text: str) -> str | None:
    try:
        if isinstance(err, UnexpectedToken):
            return syntax_hint(text, _tokens_before(text, err.token), err.token)
        if isinstance(err, UnexpectedCharacters) and _lex_pos(err) < len(text):
            return character_hint(text[_lex_pos(err)])
    except Exception:  # noqa: BLE001 - a failed hint lookup must not hide the real error
        pass
    return None


def _syntax_error(err: UnexpectedInput, text: str, file: str) -> G2PLError:
    hint = _habit_hint(err, text)
    if hint is None and isinstance(err, UnexpectedToken):
        try:
            hint = err.match_examples(_parser().parse, _HINTS, use_accepts=True)
        except Exception:  # noqa: BLE001 - a failed hint lookup must not hide the real error
            hint = None
    line = getattr(err, "line", None) or 1
    col = getattr(err, "column", None) or 1
    if isinstance(err, UnexpectedToken) and err.token.type == "$END":
        lines = text.splitlines() or [""]
        line = len(lines)
        col = len(lines[-1]) + 1
        msg = f"unexpected end of file; expected {_expected_words(err.expected)}"
    elif isinstance(err, UnexpectedToken):
        msg = f"unexpected `{err.token}`; expected {_expected_words(err.expected)}"
    elif isinstance(err, UnexpectedCharacters):
        ch = text[_lex_pos(err)] if _lex_pos(err) < len(text) else "?"
        allowed = getattr(err, "allowed", None) or set()
        msg = f"unexpected character `{ch}`" + (f"; expected {_expected_words(allowed)}" if allowed else "")
    elif isinstance(err, UnexpectedEOF):
        msg = f"unexpected end of file; expected {_expected_words(set(err.expected))}"
    else:
        msg = "syntax error"
    width = 1
    if isinstance(err, UnexpectedToken) and err.token.type != "$END":
        width = max(1, len(str(err.token)))
    notes = (hint,) if hint else ()
    return G2PLError(msg, file=file, source=text, span=Span(line, col, line, col + width), notes=notes)


def _check_nesting(tree: Tree) -> None:
    """Refuse a parse tree deeper than `MAX_NESTING` before anything recursive walks it.

    An explicit stack, not recursion: this is what keeps the recursive walks
    after it (the transformer, the lowering) within the deep stack's bounds.
    """
    stack: list[tuple[Tree, int]] = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_NESTING:
            meta = node.meta
            line, col = getattr(meta, "line", 1), getattr(meta, "column", 1)
            raise G2PLError(f"program nested too deeply (more than {MAX_NESTING:,} levels of blocks and "
                            "expressions); split it into smaller statements", span=Span(line, col, line, col + 1))
        stack.extend((c, depth + 1) for c in node.children if isinstance(c, Tree))


@deep_stack
def parse(text: str, file: str = "<input>") -> A.Module:
    """Parse a whole program; raises `G2PLError` on syntax errors and duplicate definitions."""
    try:
        tree = _parser().parse(text)
        _check_nesting(tree)
        defs = _ToAst().transform(tree)
    except UnexpectedInput as err:
        raise _syntax_error(err, text, file) from None
    except G2PLError as err:
        raise err.with_context(file=file, source=text) from None
    except VisitError as err:
        if isinstance(err.orig_exc, G2PLError):
            raise err.orig_exc.with_context(file=file, source=text) from None
        raise
    mod = A.Module(source=text, file=file)
    seen: dict[str, Span] = {}
    for d in defs:
        if d.name in seen:
            raise G2PLError(
                f"`{d.name}` is defined twice (first at line {seen[d.name].line})",
                file=file, source=text, span=d.span,
            )
        seen[d.name] = d.span
        if isinstance(d, A.Procedure):
            mod.procedures[d.name] = d
        else:
            mod.functions[d.name] = d
    if not mod.procedures:
        raise G2PLError(
            "the program has no procedure; write one, e.g. `main() { ... }`",
            file=file, source=text, span=Span(1, 1, 1, 2),
        )
    return mod
