"""What agents counted of their own work in a tournament, summed over its deals: for the ``llm`` agent
(:class:`treppen.agents.llm.LLMAgent`) the model's replies, retries, fallbacks, failed requests,
tokens and seconds waited. Each deal's counts are in ``results.jsonl`` (``agent_stats``,
:mod:`treppen.arena.results`); ``treppen tournament`` prints :func:`print_stats` below the Elo table.

A model whose fallback plays many of its decisions is rated as the fallback plays: the share of
the decisions its fallback played (:func:`fallback_share`) above a limit (:data:`FALLBACK_LIMIT`,
``treppen tournament --max-fallback``) gets a warning line during the run (:class:`FallbackWatch`)
and a mark in the Elo table (:func:`over_limit`).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from typing import Any

#: The share of an agent's decisions its fallback may play before the tournament warns about it.
FALLBACK_LIMIT = 0.2

#: The columns printed, in order: the count's key and its heading.
COLUMNS = (
    ("decisions", "decisions"),
    ("replies", "replies"),
    ("retries", "retries"),
    ("fallbacks", "fallbacks"),
    ("errors", "failed"),
    ("timeouts", "timed out"),
    ("prompt_tokens", "tokens in"),
    ("completion_tokens", "tokens out"),
)


def total_stats(records: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, float]]:
    """Each agent's counts summed over the deals of ``records`` that hold them, with ``deals``.

    :param records: result records (``results.jsonl`` lines).
    :return: agent name -> count name -> sum (``deals``: how many deals were summed); empty when no
        record holds counts.
    """
    totals: dict[str, dict[str, float]] = {}
    for record in records:
        add_stats(totals, record)
    return totals


def add_stats(totals: dict[str, dict[str, float]], record: Mapping[str, Any]) -> None:
    """Add the counts of one result record to ``totals`` (as :func:`total_stats` sums them)."""
    for name, counts in record.get("agent_stats", {}).items():
        total = totals.setdefault(name, {"deals": 0})
        total["deals"] += 1
        for key, value in counts.items():
            total[key] = total.get(key, 0) + value


def fallback_share(counts: Mapping[str, float]) -> float:
    """The share of an agent's decisions that its fallback played (0 without decisions)."""
    return counts.get("fallbacks", 0) / counts["decisions"] if counts.get("decisions") else 0.0


def over_limit(totals: Mapping[str, Mapping[str, float]], limit: float = FALLBACK_LIMIT) -> list[str]:
    """The agents of :func:`total_stats` whose fallback played more than ``limit`` of their decisions."""
    return [name for name, counts in totals.items() if fallback_share(counts) > limit]


def fallback_warning(name: str, counts: Mapping[str, float], limit: float) -> str:
    """The line that warns about agent ``name`` whose counts (:func:`total_stats`) are over ``limit``:
    how many decisions the fallback played, and why: failed requests (each one's decision falls back),
    of them timeouts, and decisions whose two replies named no legal move."""
    fallbacks, failed, timeouts = (int(counts.get(key, 0)) for key in ("fallbacks", "errors", "timeouts"))
    causes = []
    if failed:
        requests = failed + int(counts.get("replies", 0))
        timed_out = f", {timeouts} of them timed out (is timeout= shorter than the model takes?)" if timeouts else ""
        causes.append(f"{failed} of {requests} requests failed{timed_out}")
    if fallbacks > failed:
        causes.append(f"{fallbacks - failed} decisions got two replies that named no legal move")
    return (
        f"warning: {name}: the fallback played {fallbacks} of {int(counts['decisions'])} decisions "
        f"({fallback_share(counts):.0%}, over --max-fallback {limit:.0%}) in {int(counts['deals'])} deals: "
        f"{'; '.join(causes)}; its Elo rates the fallback more than the model"
    )


class FallbackWatch:
    """A tournament's ``on_record``: sums the counts of the deals played and prints one
    :func:`fallback_warning` (on stderr, above a progress bar) the first time an agent is over ``limit``.

    :param limit: the share of decisions (0 to 1).
    """

    def __init__(self, limit: float = FALLBACK_LIMIT):
        self.limit = limit
        self.totals: dict[str, dict[str, float]] = {}
        self.warned: set[str] = set()

    def __call__(self, record: Mapping[str, Any]) -> None:
        from tqdm import tqdm

        add_stats(self.totals, record)
        for name in over_limit(self.totals, self.limit):
            if name not in self.warned:
                self.warned.add(name)
                tqdm.write(fallback_warning(name, self.totals[name], self.limit), file=sys.stderr)


def print_stats(totals: Mapping[str, Mapping[str, float]]) -> None:
    """Print :func:`total_stats` as a table (nothing when empty): one row per agent, the counts of
    :data:`COLUMNS` (``failed``: requests that failed), the share of decisions the fallback played
    and the mean seconds a request waited."""
    if not totals:
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title="Model calls (summed over the deals)")
    for heading in ("agent", "deals", *(h for _, h in COLUMNS), "fallback %", "s/request"):
        table.add_column(heading, justify="left" if heading == "agent" else "right", no_wrap=True)
    for name, t in totals.items():
        requests = t.get("replies", 0) + t.get("errors", 0)
        share = fallback_share(t) if t.get("decisions") else float("nan")
        wait = t.get("latency_s", 0) / requests if requests else float("nan")
        cells = [f"{int(t.get(key, 0))}" for key, _ in COLUMNS]
        table.add_row(name, str(int(t["deals"])), *cells, f"{share:.1%}", f"{wait:.2f}")
    console = Console()
    if not console.is_terminal:  # piped: as wide as the table needs (as the Elo table is printed)
        console = Console(width=max(console.width, Console(width=10_000).measure(table).maximum))
    console.print(table)
