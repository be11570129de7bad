"""``treppen zoo``: the model zoo's trained agents (:mod:`treppen.agents.zoo`).

Usage::

    treppen zoo list [--markdown]    # every shipped agent's card (--markdown: the README's table of them)
    treppen zoo build NAME [NAME ...] [--runs-dir runs/zoo] [--workers 2]
                                     # rebuild agents from their cards: train, export, rate
    treppen zoo rate NAME [NAME ...] [--decks 100] [--seed 9001] [--runs-dir runs/zoo] [--workers 2]
                                     # rate agents again and write the Elo into their cards

``build`` needs the ``train`` extra; ``build`` and ``rate`` write into the package's ``zoo/`` folder
(in a source checkout: ``agents/zoo/``). ``rate`` plays the card's decks unless ``--decks`` or
``--seed`` names others, and changes no weights.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Iterable
from pathlib import Path

from treppen.agents import zoo
from treppen.apps.options import seed, whole
from treppen.arena.scale import rating_text
from treppen.arena.strength import CARD_DECKS, rate_card
from treppen_env.messages import shorten


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``treppen zoo``."""
    sub = parser.add_subparsers(dest="zoo_command", required=True, metavar="{list,build,rate}")
    listing = sub.add_parser("list", help="print the cards of the shipped agents")
    listing.add_argument("--markdown", action="store_true", help="as the table of the README and the zoo guide")
    build = sub.add_parser("build", help="rebuild agents from their cards (train, export, rate)")
    rating = sub.add_parser("rate", help="rate agents against greedy again and write the Elo into their cards")
    for command in (build, rating):
        command.add_argument("names", nargs="+", metavar="NAME", help="zoo agents (see treppen zoo list)")
        command.add_argument("--runs-dir", type=Path, default=Path("runs/zoo"), help="training runs and ratings")
        command.add_argument("--workers", type=whole(1), default=2, help="worker processes of the rating tournament")
    rating.add_argument(
        "--decks", type=whole(1), help=f"duplicate decks (default: the card's, else {CARD_DECKS['count']})"
    )
    rating.add_argument("--seed", type=seed, help=f"the decks' seed (default: the card's, else {CARD_DECKS['seed']})")


def card_text(card: zoo.ModelCard) -> str:
    """A card as a few lines of text."""
    lines = [
        f"{card.name}: {card.description}",
        f"  game        {card.rules}, {card.num_players} players ({card.env})"
        + (f", level {card.level}" if card.level else ""),
        f"  plays       {plays_text(card)}",
        f"  strength    {strength_text(card)}",
    ]
    if card.elo.get("command"):
        lines.append(f"  rated by    {card.elo['command']}")
    if card.build:
        overrides = " ".join(card.build.get("overrides", []))
        lines.append(
            f"  trained by  treppen train --config {card.build['config']} {overrides} seed={card.build['seed']}"
        )
        lines.append(
            f"  cost        {card.cpu_minutes} CPU minutes; commit {card.commit}, treppen {card.treppen_version}"
        )
    return "\n".join(lines)


#: The header of :func:`markdown_table`.
TABLE_HEAD = (
    "| name | what it is | rules | players | level | Elo vs greedy | decks | training |\n"
    "|---|---|---|---|---|---|---|---|"
)


def markdown_table(cards: Iterable[zoo.ModelCard]) -> str:
    """The cards as the markdown table that README.md ("Headline figures") and docs/guide/zoo.md
    show (tests/test_docs.py checks they do), one row a card: its name, description, rules,
    players, level, Elo against greedy with its interval (``not rated`` without one), its rating's
    decks and seed, and its training's CPU minutes (``none`` for an agent without training)."""
    rows = [TABLE_HEAD]
    for card in cards:
        rating = rating_text(card.elo["elo"], card.elo["low"], card.elo["high"]) if "elo" in card.elo else "not rated"
        decks = card.elo.get("decks")
        named = "-" if decks is None else f"{decks['count']}, seed {decks['seed']}"
        cost = "none" if card.cpu_minutes is None else f"{card.cpu_minutes} CPU minutes"
        cells = [f"`{card.name}`", card.description, card.rules, str(card.num_players), card.level or "-"]
        rows.append("| " + " | ".join([*cells, rating, named, cost]) + " |")
    return "\n".join(rows)


def strength_text(card: zoo.ModelCard) -> str:
    """A card's rating on the one scale (greedy = 0): ``+103 [+54, +153] vs greedy (100 decks)``,
    or ``not rated``."""
    if "elo" not in card.elo:
        return "not rated"
    e = card.elo
    return f"{rating_text(e['elo'], e['low'], e['high'])} vs greedy ({e['decks']['count']} decks)"


def level_label(level: str, num_players: int = 2, rules: str = "treppenromme") -> str:
    """A level's name with its agent and strength at a table, for menus:
    ``hard: search-2p, +168 [+108, +230] vs greedy (100 decks)``."""
    found = zoo.level_card(level, num_players, rules)
    if found is None:
        spec = zoo.LEVEL_FALLBACK[level]
        return f"{level}: {spec}" + (", the reference (0 Elo)" if spec == "greedy" else "")
    return f"{level}: {found.name}, {strength_text(found)}"


def plays_text(card: zoo.ModelCard) -> str:
    """What a card's agent plays, in words: ``the NumPy policy policy.npz (sha256 ...)`` for the
    spec ``{weights}``, the spec with its weights' file name filled in, or the spec (a search)."""
    if not card.weights:
        return card.spec
    checksum = f"(sha256 {card.sha256})"
    if card.spec == "{weights}":
        return f"the NumPy policy {card.weights} {checksum}"
    return f"{card.spec.replace('{weights}', card.weights)} {checksum}"


def rate(
    name: str, decks: int | None, seed: int | None, runs_dir: Path, workers: int = 2, progress: bool = True
) -> zoo.ModelCard:
    """Rate the zoo agent ``name`` against greedy again (:func:`treppen.arena.strength.rate_card`) and
    write the new ``elo`` block into its card; its weights and other fields stay.

    :param decks: duplicate decks; ``seed`` their seed; None for the card's (else :data:`CARD_DECKS`).
    :param runs_dir: the tournament is kept in ``runs_dir/<name>_rating_<seed>`` (rerunning resumes).
    :return: the new card.
    :raises treppen.agents.zoo.ZooError: for an unknown name.
    :raises ValueError: for decks or workers below 1.
    """
    card = zoo.card(name)
    named = {**CARD_DECKS, **card.elo.get("decks", {})}
    decks, seed = named["count"] if decks is None else decks, named["seed"] if seed is None else seed
    out = runs_dir / f"{name}_rating_{seed}"
    dataclasses.replace(card, elo=rate_card(card, decks, seed, workers, out, progress)).write()
    return zoo.ModelCard.read(card.folder)


def run(args: argparse.Namespace) -> int:
    """Entry point of ``treppen zoo``."""
    if args.zoo_command == "list":
        cards = zoo.cards().values()
        print((markdown_table(cards) if args.markdown else "\n\n".join(map(card_text, cards))) or "the zoo is empty")
        return 0
    known = zoo.cards()
    unknown = [n for n in args.names if n not in known]
    if unknown:
        raise ValueError(f"no zoo agent {shorten(unknown)}; the zoo has {sorted(known)}")
    if args.zoo_command == "rate":
        for name in args.names:
            print(card_text(rate(name, args.decks, args.seed, args.runs_dir, args.workers)), flush=True)
        return 0
    from treppen.train.zoo_build import build

    for name in args.names:
        print(card_text(build(name, args.runs_dir, args.workers)), flush=True)
    return 0
