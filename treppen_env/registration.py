"""Gymnasium ids of the single-agent env (:class:`~treppen_env.single_agent.SingleAgentEnv`).

Importing ``treppen_env`` after Gymnasium registers them, as Gymnasium users expect::

    import gymnasium
    import treppen_env

    env = gymnasium.make("treppen/Treppenromme-v0")  # greedy at the other seat
    env = gymnasium.make("treppen/Rum500-v0", num_players=4, opponents="random")

The ids make :func:`treppen.agents.opponents.make_single_agent`, named by a string and imported by
Gymnasium when an env is made: it turns agent specs into opponents, which the env package cannot
(it imports no agents).

The rules engine does not import Gymnasium, so ``import treppen_env`` registers only when Gymnasium
is already imported; otherwise the first use of ``treppen_env.env``, ``raw_env``,
``SingleAgentEnv`` or ``vector_env`` does, and ``gymnasium.make("treppen_env:treppen/Treppenromme-v0")``
always works (Gymnasium imports the module named before the colon). The version in the id is
:data:`~treppen_env.version.ENV_VERSION`'s (``treppen_v0`` gives ``-v0``), so it moves whenever
observations, masks or rewards change (docs/guide/environment.md).
"""

from __future__ import annotations

import re

from treppen_env.version import ENV_VERSION

#: The version number of the Gymnasium ids: the one of :data:`ENV_VERSION`.
GYM_VERSION = int(re.fullmatch(r"treppen_v(\d+)", ENV_VERSION).group(1))  # type: ignore[union-attr]
#: What the ids make (:func:`treppen.agents.opponents.make_single_agent`, the agents layer's: it loads
#: opponents by spec), named, not imported.
ENTRY_POINT = "treppen.agents.opponents:make_single_agent"
#: Gymnasium id by rules preset (RULES §8).
GYM_IDS = {
    "treppenromme": f"treppen/Treppenromme-v{GYM_VERSION}",
    "rum500": f"treppen/Rum500-v{GYM_VERSION}",
}


def register_envs() -> None:
    """Register :data:`GYM_IDS` with Gymnasium (once; a second call changes nothing)."""
    from gymnasium.envs.registration import register, registry

    for preset, env_id in GYM_IDS.items():
        if env_id not in registry:
            register(id=env_id, entry_point=ENTRY_POINT, kwargs={"rules": preset})
