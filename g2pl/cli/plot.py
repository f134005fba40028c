"""`g2pl run --plot FILE.png`: per-superstep statistics in four small panels (matplotlib, Agg).

The panels are time, messages, bytes and active vertices per superstep, read
from the same statistics `--stats` writes.  Needs matplotlib (`pip install
matplotlib`, or `pip install '.[ui]'` in a g2pl checkout).
"""

from __future__ import annotations

import io
from pathlib import Path

from g2pl.errors import G2PLError
from g2pl.io.output_files import write_atomic


def require_matplotlib() -> None:
    """Fail early (exit 2) when matplotlib is missing, before a long run."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise G2PLError("--plot needs matplotlib; install it with `pip install matplotlib` "
                        "(or, in a g2pl checkout, `pip install '.[ui]'`)", file="g2pl run") from None


def check_plot_path(path: str | Path) -> None:
    """Matplotlib present and the file's suffix a format it writes (checked before the run)."""
    require_matplotlib()
    from matplotlib.backend_bases import FigureCanvasBase

    suffix = Path(path).suffix.lower().lstrip(".")
    formats = FigureCanvasBase.get_supported_filetypes()
    if suffix not in formats:
        raise G2PLError(f"--plot {path}: unknown image format `.{suffix}`; use one of "
                        f"{', '.join('.' + f for f in sorted(formats))}", file="g2pl run")


def _si(x: float, _pos=None) -> str:
    for div, unit in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= div:
            return f"{x / div:g}{unit}"
    return f"{x:g}"


def plot_stats(stats: dict, path: str | Path, title: str | None = None) -> None:
    """Write the four-panel figure of `stats` (a `--stats` dict) to `path` (format from its suffix)."""
    require_matplotlib()
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    per = stats.get("per_superstep", [])
    xs = [s.get("superstep", i) for i, s in enumerate(per)]
    time_ms = [1000.0 * s["time_s"] for s in per]
    msgs = [s["messages"] for s in per]
    wire = [s["bytes"] for s in per]
    rec = [s.get("record_bytes", 0) for s in per]
    active = [s["active"] for s in per]

    fig, axes = plt.subplots(2, 2, figsize=(9, 5.6), sharex=True, layout="constrained")
    (ax_t, ax_m), (ax_b, ax_a) = axes
    bar = {"width": 0.85 if len(xs) < 60 else 1.0, "linewidth": 0}
    ax_t.bar(xs, time_ms, color="#4c72b0", **bar)
    ax_t.set_title("time per superstep (ms)", fontsize=10)
    ax_m.bar(xs, msgs, color="#dd8452", **bar)
    ax_m.set_title("messages", fontsize=10)
    ax_b.bar(xs, rec, color="#55a868", label="record bytes (all messages)", **bar)
    if any(wire):
        ax_b.plot(xs, wire, color="#c44e52", marker="o", markersize=3, linewidth=1.2,
                  label="bytes between ranks")
    else:
        ax_b.plot([], [], " ", label="bytes between ranks: none" + (" (one rank)" if stats.get("ranks", 1) == 1
                                                                     else ""))
    ax_b.set_title("bytes", fontsize=10)
    ax_b.set_ylim(bottom=0, top=max(rec + wire + [1]) * 1.35)  # headroom for the legend
    ax_b.legend(fontsize=8, frameon=True, framealpha=0.9, edgecolor="none", loc="upper right")
    ax_a.step(xs, active, where="mid", color="#8172b3", linewidth=1.5)
    ax_a.fill_between(xs, active, step="mid", color="#8172b3", alpha=0.25)
    ax_a.set_title("active vertices", fontsize=10)
    ax_a.set_ylim(bottom=0, top=max(active + [1]) * 1.1)
    for ax in axes.flat:
        ax.yaxis.set_major_formatter(FuncFormatter(_si))
        ax.xaxis.set_major_locator(MaxNLocator(integer=True, nbins=10))
        ax.tick_params(labelsize=8)
        ax.grid(axis="y", alpha=0.3)
        ax.spines[["top", "right"]].set_visible(False)
    for ax in axes[1]:
        ax.set_xlabel("superstep", fontsize=9)
    if title is None:
        g = stats.get("graph", {})
        graph = f" on {g['name']} (n={g.get('n', '?')}, m={g.get('m', '?')})" if g.get("name") else ""
        title = (f"{stats.get('entry') or 'program'}{graph}: {stats.get('supersteps', len(per))} supersteps, "
                 f"-O{stats.get('opt_level', '?')}, {stats.get('ranks', 1)} rank(s), {stats.get('time_s', 0):.3f} s")
    fig.suptitle(title, fontsize=10)
    buf = io.BytesIO()
    try:
        fig.savefig(buf, dpi=110, format=Path(path).suffix.lower().lstrip(".") or "png")
    except (OSError, ValueError) as e:
        raise G2PLError(f"cannot draw the plot: {e}", file=str(path)) from None
    finally:
        plt.close(fig)
    write_atomic(path, buf.getvalue())
