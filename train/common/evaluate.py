"""Evaluation of a MaskablePPO model against random or greedy opponents on fixed deals.

Deals are seeded (deal ``i`` uses seed ``seed + i // num_players``) and the learner takes seat
``i % num_players``, so with ``deals`` a multiple of the player count every deal is played from
every seat ("duplicate-ish": the luck of the cards cancels between seats). The opponents play
inside the batched env's kernel (:func:`treppen_env.vector_env`, one env per learner seat, every
deal of that seat a row), and the model acts deterministically through
``predict(..., action_masks=...)`` on all live rows at once (docs/ARCHITECTURE.md "Training notes").
"""

from __future__ import annotations

from typing import Any

import numpy as np

from treppen_env.rules import Rules
from treppen_env.vector import OPPONENTS, TreppenVectorEnv

EVAL_SEED = 10_000_019


def deal_result(info: dict[str, Any], learner: str) -> tuple[float, float]:
    """(win share, point margin) of ``learner`` from a finished deal's ``info``.

    Win share: 1 if the learner booked the most deal points, split evenly on a tie at the top,
    else 0. Point margin: the learner's deal points minus the mean of the others' (points).
    """
    names = list(info["deal_points"])
    points = np.array([[info["deal_points"][n] for n in names]])
    win, margin = deal_results(points, names.index(learner))
    return float(win[0]), float(margin[0])


def deal_results(points: np.ndarray, seat: int) -> tuple[np.ndarray, np.ndarray]:
    """Win shares and point margins of ``seat`` over finished deals (:func:`deal_result` per row).

    :param points: deal points, (D, players) integers.
    :return: float64 (D,) win shares and (D,) margins (points).
    """
    points = np.asarray(points, dtype=np.float64)
    mine = points[:, seat]
    best = points.max(axis=1)
    win = np.where(mine == best, 1.0 / (points == best[:, None]).sum(axis=1), 0.0)
    others = (points.sum(axis=1) - mine) / (points.shape[1] - 1)
    return win, mine - others


def evaluate(
    model: Any,
    opponent: str,
    num_players: int = 2,
    rules: Rules | str = "treppenromme",
    deals: int = 200,
    seed: int = EVAL_SEED,
) -> dict[str, float]:
    """Play ``deals`` deals of ``model`` against ``opponent`` at every other seat.

    :param model: anything with SB3's ``predict(obs, action_masks=..., deterministic=True)``.
    :param opponent: ``"random"`` or ``"greedy"``, played inside the kernel.
    :param num_players: players per deal; the learner's seat rotates.
    :param rules: the rules (a :class:`~treppen_env.rules.Rules` object, or a preset name).
    :param deals: deals to play.
    :param seed: base seed of the deals.
    :return: ``winrate``, ``points`` (mean margin per deal, points), ``deal_points`` (the learner's
        mean deal points), ``deals`` and ``illegal_actions`` (deals the model ended with an
        action its mask forbids; they are not counted).
    :raises ValueError: for another opponent.
    """
    if opponent not in OPPONENTS:
        raise ValueError(f"opponent={opponent!r}; choose one of {sorted(OPPONENTS)}")
    wins, margins, own, illegal = [], [], [], 0
    for seat in range(num_players):
        rows = len(range(seat, deals, num_players))
        if rows == 0:
            continue
        env = TreppenVectorEnv(rows, num_players, rules, opponents=opponent, seat=seat)
        obs, _ = env.reset(seed=seed)
        live = np.flatnonzero(env.over == 0)
        counted = np.ones(rows, dtype=bool)
        while live.size:
            masks = env.action_masks()[live]
            chosen, _ = model.predict(obs[live], action_masks=masks, deterministic=True)
            chosen = np.asarray(chosen, dtype=np.int64)
            legal = masks[np.arange(live.size), chosen]
            counted[live[~legal]] = False
            live, chosen = live[legal], chosen[legal]
            actions = np.full(rows, -1, dtype=np.int64)
            actions[live] = chosen
            env.play_rows(live, actions)
            live = live[env.over[live] == 0]
        win, margin = deal_results(env.deal_points[counted], seat)
        wins += win.tolist()
        margins += margin.tolist()
        own += env.deal_points[counted, seat].tolist()
        illegal += int((~counted).sum())
    return {
        "winrate": float(np.mean(wins)) if wins else 0.0,
        "points": float(np.mean(margins)) if margins else 0.0,
        "deal_points": float(np.mean(own)) if own else 0.0,
        "deals": len(wins),
        "illegal_actions": illegal,
    }
