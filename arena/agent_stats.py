"""What agents counted of their own work in a tournament, summed over its deals: for the ``llm`` agent
(:class:`treppen.agents.llm.LLMAgent`) the model's replies, retries, fallbacks, failed requests,
tokens and seconds waited. Each deal's counts are in ``results.jsonl`` (``agent_stats``,
:mod:`treppen.arena.results`); ``treppen tournament`` prints :func:`print_stats` below the Elo table.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

#: The columns printed, in order: the count's key and its heading.
COLUMNS = (
    ("decisions", "decisions"),
    ("replies", "replies"),
    ("retries", "retries"),
    ("fallbacks", "fallbacks"),
    ("errors", "failed"),
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
        for name, counts in record.get("agent_stats", {}).items():
            total = totals.setdefault(name, {"deals": 0})
            total["deals"] += 1
            for key, value in counts.items():
                total[key] = total.get(key, 0) + value
    return totals


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
        share = t.get("fallbacks", 0) / t["decisions"] if t.get("decisions") else float("nan")
        wait = t.get("latency_s", 0) / requests if requests else float("nan")
        cells = [f"{int(t.get(key, 0))}" for key, _ in COLUMNS]
        table.add_row(name, str(int(t["deals"])), *cells, f"{share:.1%}", f"{wait:.2f}")
    console = Console()
    if not console.is_terminal:  # piped: as wide as the table needs (as the Elo table is printed)
        console = Console(width=max(console.width, Console(width=10_000).measure(table).maximum))
    console.print(table)
