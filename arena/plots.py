"""Plots of tournament ratings (for notebooks too; :func:`treppen.arena.results.load_results` reads a
tournament's files).

``plot_elo`` and ``plot_pairwise`` draw a :class:`~treppen.arena.ratings.Ratings` with matplotlib
and ``save_figure`` writes a PNG atomically. Figures are built without pyplot (so no GUI backend is
touched and nothing is left open; PNGs render with Agg); pass ``ax`` to draw into a notebook's own
axes.
"""

from __future__ import annotations

import os

import matplotlib
import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from treppen.arena.ratings import Ratings
from treppen_env.files import atomic_write

#: Characters of a line of an agent's name on an axis: a longer name (a spec with settings, e.g.
#: ``llm,base_url=...,model=...``) wraps after its commas, and a longer piece is cut in its middle.
LABEL_WIDTH = 26
#: Lines of an agent's name on an axis, at most.
LABEL_LINES = 4


def axis_label(name: str) -> str:
    """``name`` in at most :data:`LABEL_LINES` lines of at most :data:`LABEL_WIDTH` characters, for an
    axis: wrapped after commas, a longer piece cut in its middle (``base_url=http…:8080/v1``),
    what does not fit ends in ``...`` (the tables print every name whole)."""
    lines: list[str] = []
    for piece in name.split(","):
        if len(piece) > LABEL_WIDTH - 1:
            head = (LABEL_WIDTH - 2) // 2
            piece = f"{piece[:head]}…{piece[-(LABEL_WIDTH - 2 - head) :]}"
        if lines and len(lines[-1]) + len(piece) < LABEL_WIDTH:
            lines[-1] += piece
        else:
            lines.append(piece)
        lines[-1] += ","
    lines[-1] = lines[-1][:-1]
    if len(lines) > LABEL_LINES:
        lines[LABEL_LINES - 1 :] = [f"{lines[LABEL_LINES - 1]}..."]
    return "\n".join(lines)


def _root_figure(ax: Axes) -> Figure:
    """The top-level figure that ``ax`` is drawn in (the parent of a subfigure), which can be saved."""
    fig = ax.get_figure(root=True)
    assert fig is not None, "the axes belong to a figure"
    return fig


def plot_elo(ratings: Ratings, ax: Axes | None = None) -> Figure:
    """Elo per agent (best at the top) with its confidence interval as error bars; a side the data
    do not bound (an infinite end) runs to the edge of the plot and ends in an arrow.

    :param ratings: fitted ratings
    :param ax: axes to draw on (default: a new figure)
    :return: the figure
    """
    n = len(ratings.agents)
    labels = [axis_label(name) for name in ratings.agents]
    if ax is None:
        lines = max(label.count("\n") + 1 for label in labels)
        ax = Figure(figsize=(6.5, 1.2 + max(0.45, 0.2 * lines) * n), layout="constrained").subplots()
    y = np.arange(n)[::-1]
    has_ci = not np.isnan(ratings.ci_low).all()
    ends = np.concatenate([ratings.elo, ratings.ci_low, ratings.ci_high])
    ends = ends[np.isfinite(ends)]
    pad = max(50.0, 0.15 * float(np.ptp(ends)))
    left, right = float(ends.min()) - pad, float(ends.max()) + pad
    low, high = np.clip(ratings.ci_low, left, right), np.clip(ratings.ci_high, left, right)
    # a percentile interval need not contain the point estimate (e.g. when one agent won everything)
    spread = np.vstack([ratings.elo - low, high - ratings.elo])
    xerr = np.clip(np.nan_to_num(spread), 0.0, None) if has_ci else None
    ax.errorbar(ratings.elo, y, xerr=xerr, fmt="o", capsize=4, color="tab:blue")
    for is_open, edge, marker in ((np.isneginf, left, "<"), (np.isposinf, right, ">")):
        rows = is_open(ratings.ci_low) | is_open(ratings.ci_high)
        ax.plot(np.full(rows.sum(), edge), y[rows], ls="", marker=marker, color="tab:blue")
    ax.set_xlim(left - 0.05 * pad, right + 0.05 * pad)
    ax.axvline(0.0, color="grey", lw=0.8, ls="--")
    ax.set_yticks(y, labels)
    ax.set_ylim(-0.7, n - 0.3)
    ci = f", {ratings.ci_level:.0%} bootstrap CI over {ratings.n_groups} decks" if has_ci else ""
    ax.set_xlabel(f"Elo ({ratings.scale}{ci})")
    ax.set_title(f"Ratings from {ratings.n_deals} deals")
    ax.grid(axis="x", alpha=0.3)
    return _root_figure(ax)


def plot_pairwise(ratings: Ratings, ax: Axes | None = None) -> Figure:
    """Heatmap of ``score[i, j]`` (row agent's mean score against the column agent), annotated with
    the score and the number of comparisons.

    :param ratings: fitted ratings
    :param ax: axes to draw on (default: a new figure)
    :return: the figure
    """
    n = len(ratings.agents)
    labels = [axis_label(name) for name in ratings.agents]
    if ax is None:
        size = 2.5 + 0.9 * n
        ax = Figure(figsize=(size + 1.2, size), layout="constrained").subplots()
    score = np.ma.masked_invalid(ratings.score)
    cmap = matplotlib.colormaps["RdBu"].with_extremes(bad="0.9")
    image = ax.imshow(score, cmap=cmap, vmin=0.0, vmax=1.0)
    for i in range(n):
        for j in range(n):
            if ratings.count[i, j]:
                value = ratings.score[i, j]
                color = "white" if abs(value - 0.5) > 0.3 else "black"
                ax.text(
                    j, i, f"{value:.2f}\n({ratings.count[i, j]})", ha="center", va="center", fontsize=8, color=color
                )
    ax.set_xticks(range(n), labels, rotation=40, ha="right")
    ax.set_yticks(range(n), labels)
    ax.set_xlabel("opponent")
    ax.set_ylabel("agent")
    ax.set_title("Pairwise score of row vs column\n(win 1, draw 0.5; number of comparisons)", pad=12)
    ax.figure.colorbar(image, ax=ax, label="score of row vs column")
    return _root_figure(ax)


def save_figure(fig: Figure, path: str | os.PathLike, dpi: int = 120) -> None:
    """Save ``fig`` as PNG atomically (temporary file in the same folder, then ``os.replace``)."""
    atomic_write(path, lambda tmp: fig.savefig(tmp, format="png", dpi=dpi), suffix=".png")
