"""Notebook support (`pip install '.[notebook]'`): nothing here is imported unless asked for.

    magic.py  the IPython / Jupyter `%%g2pl` cell magic (`%load_ext g2pl.notebook.magic`, or the
              documented `%load_ext g2pl.magic`)
    lexer.py  the Pygments lexer (entry point `pygments.lexers`: `g2pl`)
"""
