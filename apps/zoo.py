"""``treppen zoo``: the model zoo's trained agents (:mod:`treppen.agents.zoo`).

Usage::

    treppen zoo list                 # every shipped agent's card
    treppen zoo build NAME [NAME ...] [--runs-dir runs/zoo] [--workers 2]
                                     # rebuild agents from their cards: train, export, rate

``build`` needs the ``train`` extra and writes into the package's ``zoo/`` folder (in a source
checkout: ``agents/zoo/``).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from treppen.agents import zoo
from treppen.apps.options import whole
from treppen.arena.scale import rating_text
from treppen_env.messages import shorten


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``treppen zoo``."""
    sub = parser.add_subparsers(dest="zoo_command", required=True, metavar="{list,build}")
    sub.add_parser("list", help="print the cards of the shipped agents")
    build = sub.add_parser("build", help="rebuild agents from their cards (train, export, rate)")
    build.add_argument("names", nargs="+", metavar="NAME", help="zoo agents (see treppen zoo list)")
    build.add_argument("--runs-dir", type=Path, default=Path("runs/zoo"), help="training runs and ratings")
    build.add_argument("--workers", type=whole(1), default=2, help="worker processes of the rating tournament")


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


def run(args: argparse.Namespace) -> int:
    """Entry point of ``treppen zoo``."""
    if args.zoo_command == "list":
        print("\n\n".join(card_text(c) for c in zoo.cards().values()) or "the zoo is empty")
        return 0
    from treppen.train.zoo import build

    known = zoo.cards()
    unknown = [n for n in args.names if n not in known]
    if unknown:
        raise ValueError(f"no zoo agent {shorten(unknown)}; the zoo has {sorted(known)}")
    for name in args.names:
        print(card_text(build(name, args.runs_dir, args.workers)), flush=True)
    return 0
