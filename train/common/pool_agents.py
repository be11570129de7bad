"""The agents an opponent pool seats by spec, for every backend (the SB3 pool's
:class:`treppen.train.sb3.pool.PoolOpponent`, RLlib's agent modules)."""

from __future__ import annotations

from treppen import agents
from treppen.agents.base import Agent
from treppen_env.rules import Rules


def make_agent(spec: str, seed: int | None = None, rules: Rules | None = None) -> Agent:
    """An opponent agent, seeded, via :func:`treppen.agents.load`: ``"random"``, ``"greedy"`` (told the
    rules; it scores melds by them) or any other ``agents.load`` spec (an ``opponent_agents`` entry).

    :param spec: the agent spec.
    :param seed: seeds the agent's generator.
    :param rules: the game's rules, told to the greedy agent.
    :raises ValueError: for an unknown spec (as :func:`treppen.agents.load`).
    """
    if spec == "greedy":
        return agents.load("greedy", seed=seed, rules=rules)
    return agents.load(spec, seed=seed)
