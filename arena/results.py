"""Tournament result files: ``tournament.json``, ``results.jsonl`` and the ratings outputs.

Everything a tournament writes goes through here, atomically (temporary file in the same folder,
then ``os.replace``) or, for ``results.jsonl``, one flushed line per deal.

Files in the out dir (``treppen tournament --out DIR``):

- ``tournament.json``: the settings (``version``, agents with their specs, players, ``rules`` as
  ``{"preset", "options"}``, seed, decks, tables_per_deck). Resuming with other settings is an
  error; ``decks`` may only grow. Version 2 balances the seating orders of 3 and 4 seats
  (:mod:`treppen.arena.schedule`) and counts ``decks``; a version 1 folder cannot be resumed.
- ``results.jsonl``: one line per finished deal, appended and flushed as it ends: ``deal`` (id),
  ``deck_id``, ``table`` (agents of the table), ``rotation``, ``dealer``, ``agents`` (per seat),
  ``points`` (deal points per seat), ``outcome``, ``went_out`` (seat or null), ``steps``, ``seed``,
  and ``agent_stats`` (agent name -> its ``deal_stats()``) when an agent counts its own work this
  deal (the ``llm`` agent: replies, retries, fallbacks, failed requests, timeouts, tokens, seconds;
  :mod:`treppen.arena.agent_stats`).
  A deal is keyed by ``(deck_id, table, rotation)``; on start the lines already there are read, so
  an interrupted tournament resumes without playing a deal twice.
- ``ratings.json``, ``ratings.csv``, ``elo.png``, ``pairwise.png``: see :func:`write_outputs`.

:func:`load_results` reads a folder back (records and ratings) for notebooks and scripts.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from treppen.arena.agent_stats import FALLBACK_LIMIT
from treppen.arena.ratings import Ratings, fit_ratings, reference_anchor
from treppen.arena.schedule import Key
from treppen_env.files import atomic_write_text

RESULTS_FILE = "results.jsonl"
HEADER_FILE = "tournament.json"
FORMAT_VERSION = 2


def record_key(record: Mapping[str, Any]) -> Key:
    """The ``(deck_id, table, rotation)`` key of a result record."""
    return (int(record["deck_id"]), tuple(record["table"]), int(record["rotation"]))


def read_results(out_dir: str | os.PathLike, repair: bool = False) -> list[dict[str, Any]]:
    """Records of ``results.jsonl`` in ``out_dir`` (empty if absent), first of each key kept.

    A last line cut off by an interruption is dropped (and with ``repair`` cut from the file, so that
    appending goes on cleanly).

    :raises ValueError: for a malformed line before the last
    """
    path = Path(out_dir) / RESULTS_FILE
    if not path.exists():
        return []
    data = path.read_bytes()
    lines = data.split(b"\n")
    records: dict[Key, dict[str, Any]] = {}
    good_end = 0
    for n, line in enumerate(lines, 1):
        if not line.strip():
            good_end += len(line) + 1
            continue
        try:
            rec = json.loads(line)
            key = record_key(rec)
        except (ValueError, KeyError, TypeError) as err:
            if n < len(lines) - (lines[-1] == b""):
                raise ValueError(f"{path}:{n}: not a result record ({err}); fix or remove the line") from None
            break
        records.setdefault(key, rec)
        good_end += len(line) + 1
    if repair and good_end < len(data):
        with open(path, "r+b") as fh:
            fh.truncate(good_end)
    elif repair and data and not data.endswith(b"\n"):
        with open(path, "ab") as fh:
            fh.write(b"\n")
    return list(records.values())


def load_results(out_dir: str | os.PathLike, n_boot: int = 1000) -> tuple[list[dict[str, Any]], Ratings]:
    """Records and ratings of a tournament folder.

    :param out_dir: the folder given to ``treppen tournament --out``
    :param n_boot: bootstrap resamples when ``ratings.json`` is missing and the ratings are refitted
    :return: the records of ``results.jsonl`` and the ratings of ``ratings.json`` (or fitted from the
        records, anchored at random, else greedy, else mean 0, when that file is absent)
    :raises FileNotFoundError: when the folder has no ``results.jsonl``
    """
    out = Path(out_dir)
    if not (out / RESULTS_FILE).exists():
        raise FileNotFoundError(f"{out / RESULTS_FILE} does not exist; run `treppen tournament --out {out}`")
    records = read_results(out)
    path = out / "ratings.json"
    if path.exists():
        ratings = Ratings.from_dict(json.loads(path.read_text()))
    else:
        ratings = fit_ratings(
            records, anchor=reference_anchor([a for r in records for a in r["agents"]]), n_boot=n_boot
        )
    return records, ratings


def open_out_dir(out: Path, header: dict[str, Any]) -> dict[Key, dict[str, Any]]:
    """Check or write ``tournament.json`` and read the results already there."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / HEADER_FILE
    if path.exists():
        try:
            old = json.loads(path.read_text())
        except ValueError as err:  # JSONDecodeError, UnicodeDecodeError
            raise ValueError(f"{path}: not a tournament's settings ({err}); fix it or pass a new --out") from None
        if not isinstance(old, dict):
            raise ValueError(f"{path}: not a tournament's settings (a JSON object); fix it or pass a new --out")
        if old.get("version") != header["version"]:
            raise ValueError(
                f"{out} holds a tournament of format version {old.get('version')} (now {header['version']}: "
                "balanced seating orders, decks counted as 'decks'); it cannot be resumed, pass a new --out"
            )
        diff = [f"{k}={old.get(k)!r} (now {header[k]!r})" for k in header if k != "decks" and old.get(k) != header[k]]
        if old.get("decks", 0) > header["decks"]:
            diff.append(f"decks={old['decks']} (now {header['decks']}; decks may only grow)")
        if diff:
            raise ValueError(
                f"{out} holds a tournament with other settings: {'; '.join(diff)}. "
                "Resume with the same settings or pass a new --out."
            )
        if old.get("decks") != header["decks"]:
            atomic_write_text(path, json.dumps(header, indent=2) + "\n")
    elif (out / RESULTS_FILE).exists():
        raise ValueError(f"{out} has {RESULTS_FILE} but no {HEADER_FILE}; pass a new --out")
    else:
        atomic_write_text(path, json.dumps(header, indent=2) + "\n")
    return {record_key(r): r for r in read_results(out, repair=True)}


def write_outputs(out_dir: str | os.PathLike, ratings: Ratings, specs: Mapping[str, str] | None = None) -> None:
    """Write ``ratings.json``, ``ratings.csv``, ``elo.png`` and ``pairwise.png`` atomically.

    ``ratings.json`` holds :meth:`Ratings.to_dict` (agents best first; ``elo``, ``ci_low``,
    ``ci_high``, ``games``, ``score``/``count``/``los`` matrices in that order, NaN as null; an
    interval end the data do not bound is null too, and ``unbounded`` names the open side: "above",
    "below", "both" or null) plus ``specs`` (spec by name). ``ratings.csv`` has one row per agent:
    rank (shared by tied Elo values), agent, spec, elo, ci_low, ci_high (empty when unbounded or
    without bootstrap), unbounded (above, below, both or empty), games, score (mean score over all
    comparisons: more points 1, equal 0.5, fewer 0).
    """
    from treppen.arena import plots

    out = Path(out_dir)
    specs = dict(specs or {})
    atomic_write_text(out / "ratings.json", json.dumps({**ratings.to_dict(), "specs": specs}, indent=1) + "\n")
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(["rank", "agent", "spec", "elo", "ci_low", "ci_high", "unbounded", "games", "score"])
    columns = (ratings.ranks, ratings.agents, ratings.elo, ratings.ci_low, ratings.ci_high, ratings.unbounded)
    for i, (rank, name, elo, low, high, side) in enumerate(zip(*columns, strict=True)):
        numbers = map(_number, (elo, low, high))
        writer.writerow(
            [rank, name, specs.get(name, ""), *numbers, side or "", ratings.games[i], _number(ratings.mean_score[i])]
        )
    atomic_write_text(out / "ratings.csv", text.getvalue())
    plots.save_figure(plots.plot_elo(ratings), out / "elo.png")
    plots.save_figure(plots.plot_pairwise(ratings), out / "pairwise.png")


def _number(value: float) -> str:
    """A CSV cell for a float: empty for NaN or an infinite (unbounded) end, else six significant digits."""
    return f"{value:.6g}" if math.isfinite(value) else ""


def print_table(ratings: Ratings, marked: Sequence[str] = (), limit: float = FALLBACK_LIMIT) -> None:
    """Print the ratings as a rich table: rank, agent, Elo, CI, games, score, with notes on the
    score column, on unbounded intervals and on marked agents. Names are never cut, also when the
    output is piped.

    :param ratings: the fitted ratings.
    :param marked: agents whose fallback played more than ``limit`` of their decisions
        (:func:`treppen.arena.agent_stats.over_limit`): their names end in ``*``, and a note says why.
    :param limit: the share of decisions ``marked`` was chosen by, for the note.
    """
    from rich.console import Console
    from rich.table import Table

    notes = [Ratings.SCORE_NOTE] + ([Ratings.UNBOUNDED_NOTE] if any(ratings.unbounded) else [])
    if marked:
        notes.append(
            f"*: the fallback played more than {limit:.0%} of this agent's decisions (see Model calls): its Elo "
            "rates the fallback more than the model"
        )
    table = Table(
        title=f"Elo ({ratings.n_deals} deals, {ratings.n_groups} decks, {ratings.scale})",
        caption="\n".join(notes),
        caption_justify="left",
    )
    for col in ("rank", "agent", "Elo", f"{ratings.ci_level:.0%} CI", "games", "score"):
        table.add_column(col, justify="left" if col == "agent" else "right", no_wrap=True)
    for rank, name, *cells in ratings.table(header=False):
        table.add_row(rank, f"{name} *" if name in marked else name, *cells)
    console = Console()
    if not console.is_terminal:  # piped: as wide as the table needs, instead of 80 columns
        console = Console(width=max(console.width, Console(width=10_000).measure(table).maximum))
    console.print(table)
