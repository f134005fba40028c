"""Input checks and output files: what every layer that reads untrusted input or writes a file uses.

    numtext.py       numbers as text from untrusted input: sized before they are converted, shown short
    npz_check.py     the shapes of an .npz archive's arrays, read before any array is
    output_files.py  output files checked before any work and replaced atomically
    arraytext.py     numbers in arrays as JSON or CSV text, formatted in bulk
    npz_out.py       an .npz archive written array by array, a chunk at a time

Nothing here imports another part of g2pl but `g2pl.errors` (tests/project/test_layers.py).
"""
