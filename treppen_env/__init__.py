"""Treppenrommé (staircase rummy) and 500 Rum: rules engine and PettingZoo environment.

``treppen_env.env()`` is the wrapped AEC environment, ``treppen_env.raw_env`` the bare class and
``treppen_env.SingleAgentEnv`` the Gymnasium view for one learner and ``treppen_env.vector_env``
the batched env (many deals stepped by one kernel call). They are imported lazily, so
the rules engine (``treppen_env.engine`` and the modules it uses) loads without PettingZoo or
Gymnasium. The single-agent env is registered with Gymnasium as ``"treppen/Treppenromme-v0"``
and ``"treppen/Rum500-v0"`` when this package is imported after Gymnasium, else at the first use
of the envs (:mod:`treppen_env.registration`).
"""

from __future__ import annotations

import sys
from typing import Any

from treppen_env.registration import register_envs
from treppen_env.version import ENV_VERSION

__all__ = ["ENV_VERSION", "SingleAgentEnv", "env", "raw_env", "vector_env"]


if "gymnasium" in sys.modules:  # never imported here: the rules engine loads without it
    register_envs()


def __getattr__(name: str) -> Any:
    if name in __all__ and name != "ENV_VERSION":
        register_envs()
    if name in ("env", "raw_env"):
        from treppen_env import aec

        return getattr(aec, name)
    if name == "vector_env":
        from treppen_env.vector import vector_env

        return vector_env
    if name == "SingleAgentEnv":
        from treppen_env.single_agent import SingleAgentEnv

        return SingleAgentEnv
    raise AttributeError(f"module 'treppen_env' has no attribute {name!r}")
