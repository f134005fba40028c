"""A Pygments lexer for G2PL (`pygmentize -l g2pl prog.g2pl`, Sphinx/MkDocs/Jupyter ```g2pl blocks).

Registered under the `pygments.lexers` entry point as `g2pl`, so once the
package is installed `pygments.lexers.get_lexer_by_name("g2pl")` finds it.
Token classes follow docs/language.md ("Lexical rules"):

=====================================================  ==========================
keywords (procedure function while if then else       Keyword
return in nvals outnvals allnvals nbrs; `by` after `]`)
V E empty emptyE id Weight directed                    Name.Builtin
true false inf                                         Keyword.Constant
aggregations, only when followed by `[`                Keyword.Pseudo
(sum min max and or union argmin argmax avg count)
built-in functions, when called                        Name.Builtin
(min max abs sqrt log exp floor ceil int float float32 rand)
type names after `:` (bool int float vid vset eset     Keyword.Type
vertex<T> edge<T>)
a definition's name (at the start of a line, or        Name.Function
after procedure/function)
`<-` and the other operators                           Operator
numbers                                                Number.Integer / Number.Float
// and /* */ comments                                  Comment.Single / Comment.Multiline
=====================================================  ==========================

As in the grammar, keywords and built-ins are whole words only (`argminDeps`,
`ids`, `numVs` are plain names) and `<-` is one token.
"""

from __future__ import annotations

from pygments.lexer import RegexLexer, bygroups, default, words
from pygments.token import (
    Comment,
    Keyword,
    Name,
    Number,
    Operator,
    Punctuation,
    Whitespace,
)

__all__ = ["G2PLLexer"]

KEYWORDS = ("procedure", "function", "while", "if", "then", "else", "return", "in", "nvals", "outnvals",
            "allnvals", "nbrs")
BUILTIN_NAMES = ("V", "E", "empty", "emptyE", "id", "Weight", "directed")
CONSTANTS = ("true", "false", "inf")
AGGREGATIONS = ("sum", "min", "max", "and", "or", "union", "argmin", "argmax", "avg", "count", "mode")
BUILTIN_FUNCTIONS = ("min", "max", "abs", "sqrt", "log", "exp", "floor", "ceil", "int", "float", "float32", "rand",
                     "idiv", "imod", "bitand", "bitor", "bitxor", "bitnot", "shl", "shr")
ELEM_TYPES = ("bool", "int", "float", "vid")
SET_TYPES = ("vset", "eset")
GRAPH_TYPES = ("vertex", "edge")

_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_RESERVED = r"(?:" + "|".join(KEYWORDS + BUILTIN_FUNCTIONS + AGGREGATIONS) + r")\b"
_FLOAT = r"([0-9]+\.[0-9]*([eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+|\.[0-9]+([eE][+-]?[0-9]+)?)"


class G2PLLexer(RegexLexer):
    """Lexer for G2PL, the global-view graph language of the `g2pl` compiler."""

    name = "G2PL"
    aliases = ["g2pl"]
    filenames = ["*.g2pl"]
    mimetypes = ["text/x-g2pl"]

    tokens = {
        "root": [
            (r"\s+", Whitespace),
            (r"//[^\n]*", Comment.Single),
            (r"/\*[\s\S]*?\*/", Comment.Multiline),
            (r"/\*[\s\S]*", Comment.Multiline),  # unterminated: to the end of the text
            # a definition at the start of a line: `name(` (statements never start that way)
            (r"^(?!" + _RESERVED + r")(" + _NAME + r")(\s*)(?=\()", bygroups(Name.Function, Whitespace)),
            (r"(procedure|function)(\s+)(" + _NAME + r")", bygroups(Keyword, Whitespace, Name.Function)),
            # `: type` in parameters and annotated assignments (not `c ? a : int(x)`)
            (r"(:)(\s*)", bygroups(Punctuation, Whitespace), "after_colon"),
            (words(KEYWORDS, prefix=r"\b", suffix=r"\b"), Keyword),
            (r"(\])(\s*)(by)\b", bygroups(Punctuation, Whitespace, Keyword)),  # a keyed aggregation's `by`
            (words(AGGREGATIONS, prefix=r"\b", suffix=r"(?=\s*\[)"), Keyword.Pseudo),
            (words(BUILTIN_FUNCTIONS, prefix=r"\b", suffix=r"(?=\s*\()"), Name.Builtin),
            (words(CONSTANTS, prefix=r"\b", suffix=r"\b"), Keyword.Constant),
            (words(BUILTIN_NAMES, prefix=r"\b", suffix=r"\b"), Name.Builtin),
            (_NAME, Name),
            (_FLOAT, Number.Float),
            (r"[0-9]+", Number.Integer),
            (r"<-", Operator),
            (r"\|\||&&|==|!=|<=|>=|[<>+\-*/%\\!?=]", Operator),
            (r"[{}\[\](),;|]", Punctuation),
        ],
        "after_colon": [
            (rf"({'|'.join(GRAPH_TYPES)})(\s*)(<)(\s*)({'|'.join(ELEM_TYPES)})(\s*)(>)",
             bygroups(Keyword.Type, Whitespace, Punctuation, Whitespace, Keyword.Type, Whitespace, Punctuation),
             "#pop"),
            (words(ELEM_TYPES + SET_TYPES, suffix=r"\b(?!\s*\()"), Keyword.Type, "#pop"),
            default("#pop"),
        ],
    }

    def analyse_text(text: str) -> float:  # Pygments makes this a static method
        score = 0.0
        if "<- nvals" in text or "<-nvals" in text:
            score += 0.5
        if " <- V" in text or "emptyE" in text:
            score += 0.2
        return min(score, 1.0)
