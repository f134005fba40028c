"""`g2pl.lexer:G2PLLexer`: the name under which pyproject.toml registers the Pygments lexer (and that
README.md gives), which lives in `g2pl.notebook.lexer`."""

from g2pl.notebook.lexer import G2PLLexer

__all__ = ["G2PLLexer"]
