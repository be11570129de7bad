"""The agent interface and the uniformly random agent (docs/ARCHITECTURE.md "Agents").

An agent acts from an observation dict only (``{"observation", "action_mask"}``), never from the
engine state, and must return a legal action.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from treppen_env.messages import whole_number


class Agent:
    """Base class: ``act(observation) -> int`` returns a legal action index (0..897).

    :param seed: seeds the agent's own ``numpy.random.Generator`` (no global randomness).
    :raises ValueError: for a seed that is not a whole number of at least 0.
    """

    name = "agent"

    def __init__(self, seed: int | None = None):
        self.rng = np.random.default_rng(None if seed is None else whole_number(seed, "seed"))

    def act(self, observation: dict[str, Any]) -> int:
        """A legal action for ``observation`` (dict with ``observation`` and ``action_mask``)."""
        raise NotImplementedError

    def reset(self, seed: int | None = None) -> None:
        """Start a new episode: forget what the previous one taught; reseed when ``seed`` is given."""
        if seed is not None:
            self.rng = np.random.default_rng(seed)

    def deal_stats(self) -> dict[str, Any] | None:
        """What the agent counted since its last :meth:`reset` (a tournament keeps it per deal), or
        None for an agent that counts nothing (the default)."""
        return None

    def check_ready(self) -> None:
        """Make sure the agent can play before a tournament's first deal (the ``llm`` agent asks its
        endpoint once); nothing to check for most agents (the default).

        :raises ValueError: naming what keeps the agent from playing.
        """

    def __call__(self, observation: dict[str, Any]) -> int:
        return self.act(observation)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


def legal_actions(observation: dict[str, Any]) -> np.ndarray:
    """Indices of the legal actions of ``observation``, int64 array, ascending.

    :raises ValueError: when the mask has no legal action (the agent is not to move).
    """
    legal = np.flatnonzero(observation["action_mask"])
    if legal.size == 0:
        raise ValueError("the action mask has no legal action: this agent is not to move")
    return legal


class RandomAgent(Agent):
    """Plays a uniformly random legal action."""

    name = "random"

    def act(self, observation: dict[str, Any]) -> int:
        legal = legal_actions(observation)
        return int(legal[self.rng.integers(legal.size)])
