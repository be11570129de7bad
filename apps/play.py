"""``treppen play``: a person against agents in the terminal (docs/ARCHITECTURE.md "Command line").

The person's seat is played by :class:`treppen.agents.HumanAgent`, which shows the table from that seat's
observation, lists the legal moves and reads one per line (``draw``, ``take 2``, ``meld 7H 8H 9H``,
``layoff QS set``, ``discard 4C`` or the action number).
"""

from __future__ import annotations

import argparse
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from treppen import agents
from treppen.agents import zoo
from treppen.agents.human import seat_name
from treppen.apps.options import seed, whole
from treppen.arena.match import play_match
from treppen_env import records
from treppen_env.actions import action_to_str
from treppen_env.aec import raw_env
from treppen_env.rules import MAX_PLAYERS, PRESETS, make_rules

MOVES_HELP = """\
moves (type the text or the move's number in the list shown):
  draw                  draw the top card of the stock
  take 2                take the top 2 cards of the staircase (rum500: play the deepest one this turn, RULES §4.2)
  meld 7S 7H 7D         lay a set or a run from your hand (cards in any order)
  layoff 8H high        lay a card off onto a table meld: low or high end of a run, or set
  discard KC            discard a card onto the staircase, ending your turn
  ? or help             show the table and this syntax again; an empty line asks again
  quit                  leave (Ctrl-D too)
seats: you, then P+1 (next to play after you), P+2, ...

examples:
  treppen play                                    one deal against the hard level (the search)
  treppen play --opponents medium                 against the shipped policy (easy: greedy)
  treppen play --opponents runs/treppenromme_2p_0_20261130-120000   against a training run folder
  treppen play --opponents greedy random --game   a whole game at a 3-player table"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = MOVES_HELP
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument(
        "--opponents",
        nargs="+",
        default=["hard"],
        metavar="SPEC",
        help="one agent spec per opponent: a level (easy: greedy, medium: the shipped policy, hard: the "
        "search; see treppen zoo list), random, greedy, a zoo agent, a model .zip or a training run folder "
        "(default: hard)",
    )
    parser.add_argument("--rules", default="treppenromme", choices=sorted(PRESETS), help="rules preset")
    parser.add_argument(
        "--seat", type=whole(0, MAX_PLAYERS - 1, "a seat"), default=0, help="your seat, 0 = first dealer (default 0)"
    )
    parser.add_argument("--game", action="store_true", help="play a whole game to the target, not one deal")
    parser.add_argument("--seed", type=seed, default=None, help="seed of the deals and the agents")
    parser.add_argument(
        "--record",
        default="runs/play",
        metavar="DIR",
        help="folder of the game record file (default runs/play; treppen replay shows it)",
    )


def run(args: argparse.Namespace) -> int:
    """Play one deal (or a game with ``--game``) and print the result.

    :raises ValueError: for a bad seat, player count or agent spec.
    """
    num_players = len(args.opponents) + 1
    if not 1 <= len(args.opponents) <= 3:
        raise ValueError(f"{len(args.opponents)} opponents given; a table seats 1 to 3 opponents besides you")
    if not 0 <= args.seat < num_players:
        raise ValueError(f"--seat {args.seat} is not a seat 0..{num_players - 1}")
    rules = make_rules(args.rules)  # one object for the table and every agent at it
    env = raw_env(num_players=num_players, rules=rules, episode="game" if args.game else "deal")
    players = [
        agents.load(spec, seed=None if args.seed is None else args.seed + seat, rules=rules)
        for seat, spec in enumerate(_opponent_specs(args, num_players))
    ]
    try:
        _play(env, players, args)
    except (EOFError, KeyboardInterrupt):
        print("\ngame abandoned")
    return 0


def _play(env: raw_env, players: list[agents.Agent], args: argparse.Namespace) -> None:
    num_players = len(players)
    # the table's names everywhere: you, then P+1 (next to play after you), P+2, ...
    names = [seat_name((seat - args.seat) % num_players) for seat in range(num_players)]
    specs = _opponent_specs(args, num_players)
    opponents = ", ".join(f"{names[seat]} = {spec}" for seat, spec in enumerate(specs) if seat != args.seat)
    print(f"You sit at seat {args.seat}; {opponents}. Type a move or its number; ? or help explains, quit leaves.")
    deals_played = [0]
    actions: list[int] = []
    seed = int(np.random.default_rng().integers(2**32)) if args.seed is None else args.seed  # records need it
    path = Path(args.record) / f"play-{datetime.now(timezone.utc):%Y%m%d-%H%M%S}.jsonl"

    def show(env: raw_env, seat: int, observation: object, action: int) -> None:
        actions.append(action)
        if seat != args.seat:
            print(f"{names[seat]}: {action_to_str(action)}")
        if env.game.deals_played > deals_played[0]:
            deals_played[0] = env.game.deals_played
            _print_result(env, names, args.game)
            deals = records.record_match(
                actions, specs, seed=seed, num_players=num_players, rules=args.rules, episode=env.episode
            )
            records.write(path, deals)  # every finished deal so far, atomically
            print(f"  (recorded in {path}: treppen replay {path} --deal {len(deals)})")

    play_match(env, players, seed=seed, on_step=show)


def _opponent_specs(args: argparse.Namespace, num_players: int) -> list[str]:
    """The spec of each seat, ``human`` at the person's seat; a level is its agent at this table."""
    opponents = (zoo.table_spec(spec, num_players, args.rules) for spec in args.opponents)
    return ["human" if seat == args.seat else next(opponents) for seat in range(num_players)]


def _print_result(env: raw_env, names: list[str], game: bool) -> None:
    info = env.infos[env.possible_agents[0]]
    print(
        f"\nDeal over: {info['outcome']}"
        + (f", {names[env.possible_agents.index(info['went_out'])]} went out" if info["went_out"] else "")
    )
    for i, agent in enumerate(env.possible_agents):
        total = f", total {info['totals'][agent]}" if game else ""
        print(f"  {names[i]}: {info['deal_points'][agent]} points{total}")
