"""Playing strength: an Elo ladder of random, greedy and given models on duplicate decks.

For every setting (rules preset x players) it plays a duplicate tournament with the project's
tournament code (:func:`treppen.arena.tournament.run_tournament`: every deck replayed in every seat
rotation at every table), rates it (:func:`treppen.arena.ratings.fit_ratings`, greedy = 0 Elo, 95% bootstrap
intervals over decks) and writes, under ``--out``:

- ``<rules>_<players>p/``: the tournament's ``results.jsonl`` (rerunning resumes), ``ratings.csv``,
  ``ratings.json``, ``elo.png`` and ``pairwise.png``;
- ``ladder.md``: one table per setting (Elo, interval, head-to-head score against greedy and the
  likelihood that the agent is stronger than greedy);
- ``ladder.png``: the ladders side by side.

Usage::

    python benchmarks/bench_strength.py --agents runs/a/final_model.zip best=runs/a/best_model.zip \\
        --settings treppenromme:2 treppenromme:4 rum500:2 rum500:4 --decks 100 --workers 2

A 4-player table needs 4 agents: copies of random and greedy fill up the entrants. Tournaments
of many decks take long on 2 cores (a model plays ~1 ms per decision, greedy ~1-3 ms).
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from treppen.arena.plots import plot_elo, save_figure
from treppen.arena.ratings import Ratings, fit_ratings
from treppen.arena.results import write_outputs
from treppen.arena.scale import interval_text
from treppen.arena.tournament import resolve_specs, run_tournament
from treppen_env.files import atomic_write_text

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "runs" / "bench" / "strength"


def entrants(models: list[str], players: int) -> dict[str, str]:
    """Random, greedy and the models by name; copies of random and greedy up to ``players`` agents."""
    specs = resolve_specs(["random", "greedy", *models])
    fillers = iter(["random", "greedy"] * 2)
    while len(specs) < players:
        specs = resolve_specs([*specs.values(), next(fillers)]) | specs
    return specs


def ladder_table(ratings: Ratings, title: str) -> str:
    """A Markdown table of one ladder: Elo, 95% interval, score and likelihood of superiority vs greedy."""
    at = {name: i for i, name in enumerate(ratings.agents)}
    g = at.get("greedy")
    lines = [
        f"**{title}** ({ratings.n_groups} duplicate decks, {ratings.n_deals} deals; Elo, {ratings.scale})",
        "",
        "| rank | agent | Elo | 95% interval | score vs greedy | P(stronger than greedy) |",
        "|---|---|---|---|---|---|",
    ]
    for i, name in enumerate(ratings.agents):
        vs = "-" if g is None or i == g or not ratings.count[i, g] else f"{ratings.score[i, g]:.3f}"
        los = "-" if g is None or i == g or math.isnan(ratings.los[i, g]) else f"{ratings.los[i, g]:.2f}"
        ci = interval_text(ratings.ci_low[i], ratings.ci_high[i])
        lines.append(f"| {ratings.ranks[i]} | {name} | {ratings.elo[i]:+.0f} | {ci} | {vs} | {los} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--agents", nargs="*", default=[], help="model specs (NAME=SPEC to name one)")
    parser.add_argument(
        "--settings",
        nargs="+",
        default=["treppenromme:2", "treppenromme:4", "rum500:2", "rum500:4"],
        help="RULES:PLAYERS pairs",
    )
    parser.add_argument("--decks", type=int, default=100, help="duplicate decks per setting")
    parser.add_argument("--workers", type=int, default=2, help="worker processes")
    parser.add_argument("--seed", type=int, default=0, help="tournament seed")
    parser.add_argument("--boot", type=int, default=1000, help="bootstrap resamples for the intervals")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output folder")
    args = parser.parse_args(argv)

    tables, ladders = [], []
    for setting in args.settings:
        rules, _, players_text = setting.partition(":")
        players = int(players_text)
        specs = entrants(args.agents, players)
        out = args.out / f"{rules}_{players}p"
        start = time.perf_counter()
        records = run_tournament(specs, players, args.decks, args.seed, args.workers, out, rules, progress=True)
        ratings = fit_ratings(records, n_boot=args.boot, seed=args.seed)  # greedy = 0
        write_outputs(out, ratings, specs)
        title = f"{rules}, {players} players"
        tables.append(ladder_table(ratings, title) + f"\n\n({time.perf_counter() - start:.0f} s this run)")
        ladders.append((title, ratings))
        print(tables[-1], "\n", flush=True)

    args.out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(args.out / "ladder.md", "\n\n".join(tables) + "\n")
    summary = {title: ratings.to_dict() for title, ratings in ladders}
    atomic_write_text(args.out / "ladder.json", json.dumps(summary, indent=1) + "\n")
    fig, axes = plt.subplots(
        1, len(ladders), figsize=(5 * len(ladders), 0.5 * max(len(r.agents) for _, r in ladders) + 2)
    )
    for ax, (title, ratings) in zip([axes] if len(ladders) == 1 else axes, ladders, strict=True):
        plot_elo(ratings, ax=ax)
        ax.set_title(title)
    save_figure(fig, args.out / "ladder.png")
    print(f"ladders in {args.out}/ (ladder.md, ladder.json, ladder.png, one folder per setting)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
