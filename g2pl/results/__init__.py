"""A run's results as the API hands them out (`g2pl.Result`, api.py): beside the API, above the runtime.

    returned.py    each returned value as the run produced it: a read-only array, with kind and type
    json_check.py  `--output` JSON checked before a Result is made from it
    interop.py     results out to NumPy, networkx and pandas; the summaries the CLI and notebooks show
    formats.py     the --output formats (JSON, .npz, CSV, Parquet), each written a chunk at a time
    streamed.py    --output and --output-dir written from every rank at once, no rank holding a whole value
"""
