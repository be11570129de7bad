"""Agents that act from an observation: random, heuristic, search, learned and human (DESIGN "Agents").

Every agent has ``act(observation) -> int`` (a legal action of the observation's mask) and
``reset(seed=None)``. :func:`load` builds one from a spec string, as the command line and the
tournaments name them: ``NAME[,key=value]...`` (:mod:`agents.spec`), e.g. ``greedy,epsilon=0.1``.
Importing this package does not import torch: :class:`PolicyAgent` imports sb3-contrib only when
it loads a model.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any

from agents.base import Agent, RandomAgent, legal_actions
from agents.greedy import GreedyAgent
from agents.human import HumanAgent
from agents.policy import PolicyAgent
from agents.search import ISMCTSAgent, RolloutAgent
from agents.spec import check_settings, parse_spec

__all__ = [
    "SPECS",
    "Agent",
    "GreedyAgent",
    "HumanAgent",
    "ISMCTSAgent",
    "PolicyAgent",
    "RandomAgent",
    "RolloutAgent",
    "legal_actions",
    "load",
]

#: Named agents :func:`load` knows, besides model paths.
SPECS: dict[str, type[Agent]] = {
    "random": RandomAgent,
    "greedy": GreedyAgent,
    "human": HumanAgent,
    "rollout": RolloutAgent,
    "ismcts": ISMCTSAgent,
}
#: Model files :func:`load` looks for in a run folder, in this order.
MODEL_FILES = ("final_model.zip", "model.zip")


def load(spec: str | os.PathLike[str] | Agent, seed: int | None = None, **kwargs: Any) -> Agent:
    """Build an agent from ``spec``.

    :param spec: ``BASE[,key=value]...`` (see :mod:`agents.spec`): the base is ``"random"``,
        ``"greedy"``, ``"human"``, a path to a MaskablePPO ``.zip`` model, or a run folder holding
        ``final_model.zip`` or ``model.zip``; the settings are constructor keywords, e.g.
        ``"greedy,epsilon=0.1"``. An :class:`Agent` is returned as it is.
    :param seed: seeds the agent's generator (a ``seed`` setting in the spec wins).
    :param kwargs: further constructor arguments (e.g. ``rules="rum500"`` for ``"greedy"``,
        ``deterministic=False`` for a model); the spec's settings override them.
    :return: the agent.
    :raises ValueError: for an unknown spec (listing the valid ones), an unknown setting (listing
        the agent's settings), a bad setting value or a run folder without a model.
    :raises FileNotFoundError: for a model path that does not exist.
    """
    if isinstance(spec, Agent):
        return spec
    base, settings = parse_spec(spec)
    if base.lower() in SPECS:
        factory: Any = SPECS[base.lower()]
        name = base.lower()
    else:
        factory, name = _model_factory(Path(base)), base
    options = check_settings(name, factory, {"seed": seed, **kwargs, **settings})
    return factory(**options)


def _model_factory(path: Path) -> Any:
    """``PolicyAgent`` bound to the model file that ``path`` names (a .zip or a run folder)."""
    if path.is_dir():
        for name in MODEL_FILES:
            if (path / name).is_file():
                return functools.partial(PolicyAgent, path / name)
        raise ValueError(f"run folder {str(path)!r} holds none of {list(MODEL_FILES)}")
    if path.suffix == ".zip" or path.is_file():
        if not path.is_file():
            raise FileNotFoundError(f"no model file at {str(path)!r}")
        return functools.partial(PolicyAgent, path)
    raise ValueError(
        f"unknown agent spec {str(path)!r}; valid specs: {sorted(SPECS)}, a path to a MaskablePPO "
        f".zip model, or a run folder holding one of {list(MODEL_FILES)}; settings follow the name "
        "as NAME,key=value,... (e.g. greedy,epsilon=0.1)"
    )
