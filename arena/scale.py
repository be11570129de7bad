"""The one Elo scale of every user-facing figure, and its text (pure: math only, no scipy or torch).

Every Elo figure the project prints or writes (the end lines of ``treppen train``, TensorBoard's
``eval/elo``, ``elo.jsonl``, ``treppen tournament``, the zoo's cards, the docs) has the greedy
heuristic at 0 (:data:`SCALE_ANCHOR`) and is written as :func:`rating_text` writes it:
``+140 [+60, +220]``, the rating and its 95% bootstrap interval over decks
(docs/guide/tournaments.md).
"""

from __future__ import annotations

import math

#: The agent at Elo 0 on the one scale: the greedy heuristic.
SCALE_ANCHOR = "greedy"


def elo_text(elo: float) -> str:
    """An Elo value rounded, with its sign: ``+12``, ``-3``, ``+0`` (never ``-0``)."""
    return f"{round(elo):+d}"


def interval_text(low: float, high: float) -> str:
    """Text of one Elo interval: ``[+1, +2]``; with one side open ``> +1`` or ``< +2``; with no finite end
    ``unbounded above`` / ``unbounded below`` / ``unbounded``; ``-`` for none (NaN)."""
    if math.isnan(low):
        return "-"
    if math.isfinite(low) and math.isfinite(high):
        return f"[{elo_text(low)}, {elo_text(high)}]"
    if math.isfinite(low):
        return f"> {elo_text(low)}"
    if math.isfinite(high):
        return f"< {elo_text(high)}"
    return "unbounded above" if low == math.inf else "unbounded below" if high == -math.inf else "unbounded"


def rating_text(elo: float, low: float, high: float) -> str:
    """One rating with its interval, as every user-facing line writes it: ``+140 [+60, +220]``
    (:func:`elo_text`, then :func:`interval_text`; a side the data leave open as ``+140 > +60``;
    the rating alone without an interval)."""
    interval = interval_text(low, high)
    return elo_text(elo) if interval == "-" else f"{elo_text(elo)} {interval}"
