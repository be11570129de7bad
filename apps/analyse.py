"""``treppen analyse FILE --deal N --step K``: rank the moves of a recorded position by search
(docs/ARCHITECTURE.md "Command line").

Deal ``N`` of the record file is replayed (:func:`treppen_env.records.replay`) to the position
before its move ``K`` (numbered as ``treppen replay`` prints the moves, 1 = the first). A search
agent (``--agent``, default :data:`DEFAULT_SPEC`, built with the record's rules) analyses that
position from the observation of the player to move, so it knows what that player knew and no
more (:meth:`treppen.agents.search.SearchAgent.analyse`). The table lists every searched move with its
playouts, win rate and point margin (each ± one standard error), and marks the greedy
heuristic's move and the move the record played. ``treppen serve``'s *Hint* button asks the same
analysis (:func:`analyse_position`).
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from treppen import agents
from treppen.agents.search import Analysis, MoveEstimate, SearchAgent
from treppen.apps.options import add_record_arguments, seed, whole
from treppen.apps.replay import describe, read_deal
from treppen_env import records
from treppen_env.actions import action_to_str
from treppen_env.cards import bits_to_cards, card_to_str
from treppen_env.history import History
from treppen_env.render import render_text
from treppen_env.rules import Rules

#: The analysing agent when ``--agent`` is not given.
DEFAULT_SPEC = "rollout"
COLUMNS = ("rank", "move", "playouts", "win rate", "margin (points)", "")
NOTE = (
    "win rate: mean score against the other seats (more points 1, equal points 0.5); margin: own deal "
    "points minus the mean of the others' (RULES §6.2); ± one standard error"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_record_arguments(parser)
    parser.add_argument(
        "--step",
        type=whole(1, noun="a move number"),
        required=True,
        metavar="K",
        help="the position before move K is played, moves numbered as treppen replay prints them (1 = the first)",
    )
    parser.add_argument(
        "--agent",
        default=DEFAULT_SPEC,
        metavar="SPEC",
        help=f"the analysing search agent: rollout or ismcts with settings, e.g. rollout,playouts=5000 "
        f"(default {DEFAULT_SPEC}); the record's rules reach it",
    )
    parser.add_argument("--seed", type=seed, default=0, help="seed of the search (default 0: the same table every run)")


def run(args: argparse.Namespace) -> int:
    """Print the position before move ``--step`` of deal ``--deal`` and its moves ranked by search.

    :raises FileNotFoundError: when there is no such file.
    :raises ValueError: for a file that is not a record file, a deal or step out of range, a step
        where the deal is over, a record that does not replay up to the step, or an agent spec that
        is unknown or not a search agent.
    """
    record, count = read_deal(args.file, args.deal)
    where = f"{args.file}, record {args.deal}"
    env = position(record, args.step, where)
    agent = analyser(args.agent, args.seed, env.rules)
    agent.history = history_before(record, args.step)
    estimates = analyse_position(env, agent)
    seat = env.game.current
    moves = len(record["actions"])
    print(f"record {args.deal} of {count} in {args.file}: {describe(record)}")
    print(f"before move {args.step} of {moves}: P{seat} ({record['agents'][seat]}) to move, as P{seat} sees it")
    print(render_text(env.game, observer=seat))
    print(f"\n{agent!r}, seed {args.seed}:")
    print(format_table(estimates, played=record["actions"][args.step - 1]))
    print(format_beliefs(estimates.beliefs, agent.settings.beliefs, len(env.game.stock)))
    return 0


def position(record: dict[str, Any], step: int, where: str = "record") -> Any:
    """The ``raw_env`` of ``record`` replayed to the position before its move ``step`` (1 = the first).

    :raises ValueError: for a step out of 1..(number of moves), naming ``where`` and what is
        allowed: after the last move the deal is over and there is nothing to choose.
    :raises RecordError: when the record does not replay up to there, naming the step.
    """
    moves = len(record["actions"])
    if step == moves + 1:
        raise ValueError(f"{where}, step {step}: the deal is over after its {moves} moves; choose a step 1..{moves}")
    if not 1 <= step <= moves:
        raise ValueError(f"{where}, step {step}: the deal has moves 1..{moves}")
    for replayed in records.replay(record, where):
        if replayed.index == step - 2:
            return replayed.env
    raise AssertionError("the replay ended before the step")  # pragma: no cover (validated above)


def history_before(record: dict[str, Any], step: int) -> History:
    """What the player to move before move ``step`` (1 = the first) saw the other players do in the
    deal so far: its own observations and moves replayed into a :class:`~treppen_env.history.History`
    (for a search's beliefs, ``beliefs="greedy"``)."""
    seat = position(record, step).game.current
    replayed = records.replay(record)
    env = next(replayed).env
    history = History(env.rules)
    for action in record["actions"][: step - 1]:
        if env.game.current == seat:
            history.observe(env.observe(env.agent_selection), env.game.known[seat])
            history.acted(action)
        next(replayed)
    return history


def uniform_shares(beliefs: np.ndarray, stock_size: int) -> np.ndarray:
    """The uniform deal's probability that each opponent holds any one unseen card (float64
    (num_players,), row 0 the player to move: 0): its hidden cards (its row of ``beliefs`` sums to
    them) over all unseen cards, theirs and the stock's ``stock_size``."""
    hidden = beliefs.sum(axis=1)
    hidden[0] = 0.0
    unseen = hidden.sum() + stock_size
    return hidden / unseen if unseen else hidden


def format_beliefs(beliefs: Any, model: str, stock_size: int) -> str:
    """The most likely cards of each opponent's hand (relative seats, ``P+1`` the next to play),
    beside the uniform deal's probability of any one unseen card
    (:func:`uniform_shares`; ``stock_size``: the stock's cards)."""
    shares = uniform_shares(beliefs, stock_size)
    lines = [f"beliefs ({model}): the cards each opponent most likely holds"]
    for seat in range(1, beliefs.shape[0]):
        order = [c for c in beliefs[seat].argsort(kind="stable")[::-1][:8] if beliefs[seat, c] > 0]
        cards = "  ".join(f"{card_to_str(int(c))} {beliefs[seat, c]:.0%}" for c in order)
        lines.append(f"  P+{seat}: {cards}  (uniform deal: {shares[seat]:.0%} each)")
    return "\n".join(lines)


def analyser(spec: str, seed: int | None, rules: Rules) -> SearchAgent:
    """The search agent of ``spec``, seeded, playing by the table's ``rules``.

    :raises ValueError: for an unknown spec or setting, or an agent that does not search.
    """
    agent = agents.load(spec, seed=seed, rules=rules)
    if not isinstance(agent, SearchAgent):
        raise ValueError(
            f"agent {spec!r} does not search, so it cannot rank moves; give a search agent: "
            f"rollout or ismcts with settings, e.g. rollout,playouts=500"
        )
    return agent


def analyse_position(env: Any, agent: SearchAgent) -> Analysis:
    """``agent``'s estimates of the moves of the player to move in ``env`` (a ``raw_env`` inside a
    deal), searched from that player's observation and the cards of its hand the others know it
    holds (taken from the staircase, RULES §4.1), best first, with its beliefs about the
    opponents' cards (:meth:`SearchAgent.analyse`)."""
    known = env.game.known[env.game.current]
    return agent.analyse(env.observe(env.agent_selection), known=bits_to_cards(known))


def format_table(estimates: Sequence[MoveEstimate], played: int | None = None) -> str:
    """The estimates as aligned text: one row per searched move (rank, move, playouts, win rate ±
    SE, margin in points ± SE, ``greedy`` and ``played`` marks), then :data:`NOTE`; a ``played``
    move that was not searched gets a line of its own. Values without playouts read ``-``."""
    rows = [COLUMNS]
    for rank, e in enumerate(estimates, 1):
        marks = ", ".join(mark for mark, on in (("greedy", e.greedy), ("played", e.action == played)) if on)
        win = _plus_minus(e.win_rate, e.win_se, 3)
        rows.append((str(rank), e.move, str(e.playouts), win, _plus_minus(e.margin, e.margin_se, 1), marks))
    widths = [max(len(row[i]) for row in rows) for i in range(len(COLUMNS))]
    left = (False, True, False, False, False, True)
    lines = [
        "  ".join(cell.ljust(w) if flush else cell.rjust(w) for cell, w, flush in zip(row, widths, left, strict=True))
        for row in rows
    ]
    out = [line.rstrip() for line in lines]
    if played is not None and all(e.action != played for e in estimates):
        out.append(f"played: {action_to_str(played)} (not a searched move; moves=all searches every legal move)")
    if len(estimates) == 1:
        out.append("one searched move: it is played without playouts")
    return "\n".join([*out, NOTE])


def _plus_minus(value: float, se: float, digits: int) -> str:
    """``value ± se`` with ``digits`` decimals; ``-`` for a missing value or standard error."""
    if math.isnan(value):
        return "-"
    return f"{value:.{digits}f} ± " + ("-" if math.isnan(se) else f"{se:.{digits}f}")
