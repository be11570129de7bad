"""Opponents by agent spec for the single-agent env, and the entry point of its Gymnasium ids
(docs/guide/environment.md "Opponents of gymnasium.make").

``treppen_env`` registers ``treppen/Treppenromme-v0`` and ``treppen/Rum500-v0`` naming
:func:`make_single_agent` here by a string: the env package imports no agents, and the agents
layer turns the specs into agents. A spec string is the one form of an opponent that pickles
everywhere (``gymnasium.make_vec(..., vectorization_mode="async")``, RLlib's env creators, a saved
``EnvSpec``)::

    import gymnasium
    import treppen_env

    env = gymnasium.make("treppen/Treppenromme-v0")  # greedy at the other seat
    env = gymnasium.make("treppen/Rum500-v0", num_players=3, opponents=["greedy", "random"])
    envs = gymnasium.make_vec("treppen/Treppenromme-v0", 4, vectorization_mode="async", opponents="ppo-2p")
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from treppen import agents
from treppen.agents import zoo
from treppen_env.rules import OPTION_NAMES, Rules, make_rules
from treppen_env.single_agent import Opponent, SingleAgentEnv

#: The opponents of ``gymnasium.make`` without ``opponents=``: the greedy heuristic at every other seat.
DEFAULT_OPPONENTS = "greedy"


def make_single_agent(
    opponents: str | Opponent | Sequence[str | Opponent] = DEFAULT_OPPONENTS,
    rules: str | Rules = "treppenromme",
    **kwargs: Any,
) -> SingleAgentEnv:
    """The registered ids' entry point: a :class:`~treppen_env.single_agent.SingleAgentEnv` whose
    opponents may be given by agent spec.

    :param opponents: an agent spec (``"greedy"``, ``"random"``, ``"ppo-2p"``, ``"llm,..."``:
        :func:`treppen.agents.load`) for every other seat, loaded once; an agent (``act(obs) -> int``)
        or a callable ``obs -> int`` for every other seat; or a sequence of ``num_players - 1`` of
        these, in seat order after the learner (each spec loaded for its seat).
    :param rules: rules preset or :class:`~treppen_env.rules.Rules` (the id's preset, RULES §8); the
        rules options among ``kwargs`` apply to the env and to the agents the specs name alike.
    :param kwargs: further arguments of :class:`~treppen_env.single_agent.SingleAgentEnv`
        (``num_players``, ``seat``, ``render_mode``, ``episode``, ``reward``, rules options).
    :raises ValueError: for an unknown spec (naming it and the valid ones), an opponent that is
        neither a spec, an agent nor a callable, a wrong number of opponents, or bad env arguments.
    """
    options = {key: kwargs.pop(key) for key in list(kwargs) if key in OPTION_NAMES}
    rules = make_rules(rules, **options)
    num_players = kwargs.get("num_players", 2)

    def load(opponent: str | Opponent) -> Opponent:
        if not isinstance(opponent, str):
            return opponent
        return agents.load(zoo.table_spec(opponent, num_players, rules.name), rules=rules)

    if isinstance(opponents, str) or not isinstance(opponents, Sequence):
        return SingleAgentEnv(load(opponents), rules=rules, **kwargs)
    return SingleAgentEnv([load(o) for o in opponents], rules=rules, **kwargs)
