"""Evaluation of a MaskablePPO model against a fixed opponent on fixed deals.

Deals are seeded (deal ``i`` uses seed ``seed + i // num_players``) and the learner takes seat
``i % num_players``, so with ``deals`` a multiple of the player count every deal is played from
every seat ("duplicate-ish": the luck of the cards cancels between seats). The model acts
deterministically through ``predict(..., action_masks=...)`` (docs/ARCHITECTURE.md "Training notes"); several
deals run side by side so the policy sees batches.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from treppen_env.rules import Rules
from treppen_env.single_agent import SingleAgentEnv

EVAL_SEED = 10_000_019


def deal_result(info: dict[str, Any], learner: str) -> tuple[float, float]:
    """(win share, point margin) of ``learner`` from a finished deal's ``info``.

    Win share: 1 if the learner booked the most deal points, split evenly on a tie at the top,
    else 0. Point margin: the learner's deal points minus the mean of the others' (points).
    """
    points = info["deal_points"]
    mine = points[learner]
    others = [p for agent, p in points.items() if agent != learner]
    best = max(points.values())
    win = 1.0 / sum(p == best for p in points.values()) if mine == best else 0.0
    return win, mine - float(np.mean(others))


def evaluate(
    model: Any,
    make_opponent: Callable[[int], Any],
    num_players: int = 2,
    rules: Rules | str = "treppenromme",
    deals: int = 200,
    seed: int = EVAL_SEED,
    batch: int = 16,
) -> dict[str, float]:
    """Play ``deals`` deals of ``model`` against opponents from ``make_opponent``.

    :param model: anything with SB3's ``predict(obs, action_masks=..., deterministic=True)``.
    :param make_opponent: ``seed -> agent`` building the opponent of one env.
    :param num_players: players per deal; the learner's seat rotates.
    :param rules: the rules (a :class:`~treppen_env.rules.Rules` object, or a preset name).
    :param deals: deals to play.
    :param seed: base seed of the deals.
    :param batch: deals played side by side.
    :return: ``winrate``, ``points`` (mean margin per deal, points), ``deal_points`` (the learner's
        mean deal points), ``deals`` and ``illegal_actions``.
    """
    envs = [SingleAgentEnv(make_opponent(seed + k), num_players, rules) for k in range(min(batch, deals))]
    queue = list(range(deals))[::-1]
    obs: list[np.ndarray | None] = [None] * len(envs)

    def start(k: int) -> None:
        if queue:
            i = queue.pop()
            obs[k], _ = envs[k].reset(seed=seed + i // num_players, options={"seat": i % num_players})
        else:
            obs[k] = None

    for k in range(len(envs)):
        start(k)
    wins, margins, own, illegal = [], [], [], 0
    while any(o is not None for o in obs):
        active = [k for k, o in enumerate(obs) if o is not None]
        masks = np.stack([envs[k].action_masks() for k in active])
        actions, _ = model.predict(np.stack([o for o in obs if o is not None]), action_masks=masks, deterministic=True)
        for k, action in zip(active, actions, strict=True):
            obs[k], _, terminated, truncated, info = envs[k].step(int(action))
            if terminated or truncated:
                if info.get("illegal_action"):
                    illegal += 1
                else:
                    win, margin = deal_result(info, envs[k].learner)
                    wins.append(win)
                    margins.append(margin)
                    own.append(info["deal_points"][envs[k].learner])
                start(k)
    return {
        "winrate": float(np.mean(wins)) if wins else 0.0,
        "points": float(np.mean(margins)) if margins else 0.0,
        "deal_points": float(np.mean(own)) if own else 0.0,
        "deals": len(wins),
        "illegal_actions": illegal,
    }
