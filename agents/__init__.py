"""Agents that act from an observation: random, heuristic, learned and human (DESIGN "Agents").

Every agent has ``act(observation) -> int`` (a legal action of the observation's mask) and
``reset(seed=None)``. :func:`load` builds one from a spec string, as the command line and the
tournaments name them. Importing this package does not import torch: :class:`PolicyAgent`
imports sb3-contrib only when it loads a model.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from agents.base import Agent, RandomAgent, legal_actions
from agents.greedy import GreedyAgent
from agents.human import HumanAgent
from agents.policy import PolicyAgent

__all__ = ["SPECS", "Agent", "GreedyAgent", "HumanAgent", "PolicyAgent", "RandomAgent", "legal_actions", "load"]

#: Named agents :func:`load` knows, besides model paths.
SPECS: dict[str, type[Agent]] = {"random": RandomAgent, "greedy": GreedyAgent, "human": HumanAgent}
#: Model files :func:`load` looks for in a run folder, in this order.
MODEL_FILES = ("final_model.zip", "model.zip")


def load(spec: str | os.PathLike[str] | Agent, seed: int | None = None, **kwargs: Any) -> Agent:
    """Build an agent from ``spec``.

    :param spec: ``"random"``, ``"greedy"``, ``"human"``, a path to a MaskablePPO ``.zip`` model,
        or a run folder holding ``final_model.zip`` or ``model.zip``; an :class:`Agent` is
        returned as it is.
    :param seed: seeds the agent's generator.
    :param kwargs: further constructor arguments (e.g. ``rules="rum500"`` for ``"greedy"``,
        ``deterministic=False`` for a model).
    :return: the agent.
    :raises ValueError: for an unknown spec (listing the valid ones) or a run folder without a model.
    :raises FileNotFoundError: for a model path that does not exist.
    """
    if isinstance(spec, Agent):
        return spec
    if isinstance(spec, str) and spec.strip().lower() in SPECS:
        return SPECS[spec.strip().lower()](seed=seed, **kwargs)
    path = Path(spec)
    if path.is_dir():
        for name in MODEL_FILES:
            if (path / name).is_file():
                return PolicyAgent(path / name, seed=seed, **kwargs)
        raise ValueError(f"run folder {str(path)!r} holds none of {list(MODEL_FILES)}")
    if path.suffix == ".zip" or path.is_file():
        if not path.is_file():
            raise FileNotFoundError(f"no model file at {str(path)!r}")
        return PolicyAgent(path, seed=seed, **kwargs)
    raise ValueError(
        f"unknown agent spec {str(spec)!r}; valid specs: {sorted(SPECS)}, a path to a MaskablePPO "
        f".zip model, or a run folder holding one of {list(MODEL_FILES)}"
    )
