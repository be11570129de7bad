"""OpenSpiel's NFSP (pytorch) on the 2-player game ``"treppenromme"``, rated against greedy with our
tournament code (docs/guide/openspiel.md).

Two NFSP agents, one per seat, learn from OpenSpiel's ``rl_environment`` over the game's
observation tensor (our encoder's 969 numbers) for ``--minutes`` of wall time. Then the average
policy of seat 0's agent (observations are relative to the observer, so it plays either seat) is
rated against greedy on ``--decks`` duplicate decks (:func:`treppen.arena.strength.rate_against`).
Needs ``pip install -e ".[openspiel]"`` (OpenSpiel and dm-tree; torch from the train extra).

Usage::

    python examples/openspiel_nfsp.py --minutes 3 --decks 50
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np
import pyspiel
import torch
from open_spiel.python import rl_environment
from open_spiel.python.pytorch import nfsp

import treppen.openspiel
from treppen.agents import Agent
from treppen.arena.scale import rating_text
from treppen.arena.strength import rate_against


class NFSPAgent(Agent):
    """An NFSP agent's average policy as a treppen agent: the most probable legal action."""

    name = "nfsp"

    def __init__(self, learner: nfsp.NFSP):
        super().__init__()
        self.learner = learner

    def act(self, observation: dict[str, Any]) -> int:
        legal = np.flatnonzero(observation["action_mask"]).tolist()
        info_state = observation["observation"].tolist()
        step = rl_environment.TimeStep(
            observations={"info_state": [info_state] * 2, "legal_actions": [legal] * 2, "current_player": 0},
            rewards=None,
            discounts=None,
            step_type=rl_environment.StepType.MID,
        )
        with self.learner.temp_mode_as(nfsp.MODE.AVERAGE_POLICY):
            output = self.learner.step(step, is_evaluation=True)
        return int(np.argmax(output.probs))


def train(minutes: float, hidden: int, seed: int) -> tuple[nfsp.NFSP, int]:
    """NFSP self-play for ``minutes`` of wall time; returns seat 0's learner and the deals played."""
    torch.manual_seed(seed)
    game = pyspiel.load_game(treppen.openspiel.GAME_NAME, {"players": 2, "rules": "treppenromme"})
    env = rl_environment.Environment(game, observation_type=rl_environment.ObservationType.OBSERVATION, seed=seed)
    size = env.observation_spec()["info_state"][0]
    learners = [
        nfsp.NFSP(
            player,
            size,
            env.action_spec()["num_actions"],
            [hidden],
            reservoir_buffer_capacity=200_000,
            anticipatory_param=0.1,
            min_buffer_size_to_learn=1000,
            replay_buffer_capacity=200_000,
            epsilon_decay_duration=200_000,
            seed=seed + player,
        )
        for player in range(2)
    ]
    ends, deals = time.monotonic() + 60 * minutes, 0
    while time.monotonic() < ends:
        step = env.reset()
        while not step.last():
            player = step.observations["current_player"]
            step = env.step([learners[player].step(step).action])
        for learner in learners:  # the end of the deal, for both
            learner.step(step)
        deals += 1
    return learners[0], deals


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=3.0, help="wall minutes of training")
    parser.add_argument("--decks", type=int, default=50, help="duplicate decks of the rating against greedy")
    parser.add_argument("--hidden", type=int, default=128, help="units of the one hidden layer")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    start = time.monotonic()
    learner, deals = train(args.minutes, args.hidden, args.seed)
    trained = time.monotonic()
    strength = rate_against(NFSPAgent(learner), "greedy", decks=args.decks, seed=args.seed)
    result = {
        "deals_trained": deals,
        "train_seconds": round(trained - start, 1),
        "rate_seconds": round(time.monotonic() - trained, 1),
        "elo_vs_greedy": rating_text(strength.elo, strength.low, strength.high),
        "score_vs_greedy": round(strength.score, 3),
    }
    print(result)
    return result


if __name__ == "__main__":
    main()
