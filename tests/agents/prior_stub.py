"""A test helper: a stand-in for a learned policy, a search prior that favours one move."""

from __future__ import annotations

from typing import Any

import numpy as np

from treppen.agents.base import Agent, legal_actions


class LastMovePrior(Agent):
    """Plays, and puts probability 1 on, the highest legal action (in a discard position, the
    discard of the highest card): a policy far from greedy's choice, whose pull is easy to see."""

    name = "last-move-prior"

    def act(self, observation: dict[str, Any]) -> int:
        return int(legal_actions(observation)[-1])

    def action_probabilities(self, observation: dict[str, Any]) -> np.ndarray:
        probs = np.zeros(len(observation["action_mask"]))
        probs[self.act(observation)] = 1.0
        return probs
