"""Agents that cannot always move, for the servers' tests (specs ``tests.apps.failing_agents:Raising``, ...):
a model seat whose ``act`` raises, or answers an illegal action."""

from __future__ import annotations

from typing import Any

import numpy as np

from treppen.agents.base import Agent, legal_actions


class Raising(Agent):
    """Raises at every move, as an agent whose endpoint is down."""

    def act(self, observation: dict[str, Any]) -> int:
        raise RuntimeError("the model's endpoint is down")


class Illegal(Agent):
    """Answers the first action that is not legal."""

    def act(self, observation: dict[str, Any]) -> int:
        return int(np.flatnonzero(observation["action_mask"] == 0)[0])


class Flaky(Agent):
    """A random legal move, but raises at 3 moves in 10 and answers an illegal action at 2 in 10
    (its own generator decides)."""

    def act(self, observation: dict[str, Any]) -> int:
        draw = self.rng.random()
        if draw < 0.3:
            raise ValueError(f"a flaky reply ({draw:.2f})")
        if draw < 0.5:
            return int(np.flatnonzero(observation["action_mask"] == 0)[0])
        legal = legal_actions(observation)
        return int(legal[self.rng.integers(legal.size)])
