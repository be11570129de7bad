"""Agents that act from an observation: random, heuristic, search, learned and human (docs/ARCHITECTURE.md "Agents").

Every agent has ``act(observation) -> int`` (a legal action of the observation's mask) and
``reset(seed=None)``. :func:`load` builds one from a spec string, as the command line and the
tournaments name them: ``NAME[,key=value]...`` (:mod:`treppen.agents.spec`), e.g. ``greedy,epsilon=0.1``.
Importing this package does not import torch: :class:`PolicyAgent` imports sb3-contrib only when
it loads a model.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any

from treppen.agents import zoo
from treppen.agents.action_net import ActionNetAgent, is_action_net
from treppen.agents.base import Agent, RandomAgent, legal_actions
from treppen.agents.greedy import GreedyAgent
from treppen.agents.human import HumanAgent
from treppen.agents.net import NetAgent, is_kernel_net
from treppen.agents.policy import PolicyAgent
from treppen.agents.search import ISMCTSAgent, RolloutAgent
from treppen.agents.snapshot import NumpyPolicy, SnapshotAgent
from treppen.agents.spec import check_settings, parse_spec, settings_of
from treppen_env.rules import Rules

__all__ = [
    "SPECS",
    "Agent",
    "ExternalAgent",
    "GreedyAgent",
    "HumanAgent",
    "ISMCTSAgent",
    "NetAgent",
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
#: Model files :func:`load` looks for in a run folder, in this order (``final_policy.npz``: the
#: NumPy export of an RLlib run, played without Ray or torch).
MODEL_FILES = ("final_model.zip", "model.zip", "final_policy.npz", "final_model.npz")


def load(
    spec: str | os.PathLike[str] | Agent, seed: int | None = None, rules: Rules | str | None = None, **kwargs: Any
) -> Agent:
    """Build an agent from ``spec``.

    :param spec: ``BASE[,key=value]...`` (see :mod:`treppen.agents.spec`): the base is a built-in name
        (:data:`SPECS`), a trained agent of the model zoo (:mod:`treppen.agents.zoo`, e.g.
        ``ppo-2p``; its weights' checksum is checked), the name of an installed agent (entry point
        group ``treppen.agents``), a third-party ``package.module:ClassName``, a path to a
        MaskablePPO ``.zip`` model or a NumPy policy ``.npz`` (an RLlib run's export or a pool
        snapshot), or a run folder holding one of :data:`MODEL_FILES`; the settings are constructor
        keywords,
        e.g. ``"greedy,epsilon=0.1"``; a setting of :data:`AGENT_SETTINGS` names an agent by its
        own spec (``"ismcts,prior=runs/a"``). An :class:`Agent` is returned as it is; a third-party
        object that is not one (any object with ``act``) is wrapped in :class:`ExternalAgent`.
    :param seed: seeds the agent's generator (a ``seed`` setting in the spec wins).
    :param rules: the game's rules, handed to every agent whose constructor takes ``rules`` (the
        greedy and search agents score and simulate by them); a ``rules`` setting in the spec wins.
    :param kwargs: further constructor arguments (e.g. ``rules="rum500"`` for ``"greedy"``,
        ``deterministic=False`` for a model); the spec's settings override them.
    :return: the agent.
    :raises ValueError: for an unknown spec (listing the valid ones), an unknown setting (listing
        the agent's settings), a bad setting value, a run folder without a model, or a third-party
        spec that does not import or does not build an object with ``act``; a
        :class:`treppen.agents.zoo.ZooError` (a ``ValueError``) for zoo weights whose checksum is not
        their card's.
    :raises FileNotFoundError: for a model path that does not exist.
    """
    if isinstance(spec, Agent):
        return spec
    base, settings = parse_spec(spec)
    for key in AGENT_SETTINGS:  # settings that name another agent are built from their spec first
        if isinstance(settings.get(key), str):
            settings[key] = load(settings[key])
    zoo_cards = zoo.cards()
    if base in zoo_cards:  # a shipped agent: its card's spec, the caller's settings on top
        model = zoo_cards[base]
        zoo.verify(model)
        inner, card_settings = parse_spec(model.agent_spec())
        return load(inner, seed, rules, **{**card_settings, **kwargs, **settings})
    if base.lower() in SPECS:
        factory: Any = SPECS[base.lower()]
        name = base.lower()
    elif _is_import_path(base) or base in _entry_points():
        return _load_external(base, seed, {**_rules_for(_external_factory(base), rules), **kwargs, **settings})
    else:
        factory, name = _model_factory(Path(base)), base
    options = check_settings(name, factory, {"seed": seed, **_rules_for(factory, rules), **kwargs, **settings})
    return factory(**options)


def _rules_for(factory: Any, rules: Rules | str | None) -> dict[str, Any]:
    """``{"rules": rules}`` when ``factory`` takes a ``rules`` keyword and rules are given, else ``{}``."""
    return {"rules": rules} if rules is not None and "rules" in settings_of(factory) else {}


#: Settings whose value is itself an agent spec (``ismcts,prior=runs/<run>``), loaded by :func:`load`.
AGENT_SETTINGS = ("prior",)

#: Entry-point group under which installed packages offer agents by name (docs/ARCHITECTURE.md "Agents").
ENTRY_POINT_GROUP = "treppen.agents"


def _entry_points() -> dict[str, Any]:
    from importlib.metadata import entry_points

    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}


def _is_import_path(base: str) -> bool:
    """``package.module:ClassName`` (a Windows drive like ``C:\\`` is a path)."""
    module, colon, attr = base.partition(":")
    return bool(colon) and all(p.isidentifier() for p in [*module.split("."), *attr.split(".")])


def _external_factory(base: str) -> Any:
    """What ``package.module:ClassName`` or an entry point of ``treppen.agents`` names.

    :raises ValueError: when it does not import or is not callable.
    """
    import importlib

    points = _entry_points()
    target = points[base].value if base in points else base
    module_name, _, attr = target.partition(":")
    try:
        factory: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            factory = getattr(factory, part)
    except ImportError as err:
        raise ValueError(f"agent spec {base!r}: cannot import {module_name!r} ({err})") from None
    except AttributeError:
        raise ValueError(f"agent spec {base!r}: module {module_name!r} has no {attr!r}") from None
    if not callable(factory):
        raise ValueError(f"agent spec {base!r}: {target} is not a class or a function that builds an agent")
    return factory


def _load_external(base: str, seed: int | None, settings: dict[str, Any]) -> Agent:
    """A third-party agent: ``package.module:ClassName`` or an entry point of ``treppen.agents``."""
    factory = _external_factory(base)
    points = _entry_points()
    target = points[base].value if base in points else base
    accepted = settings_of(factory)
    options = check_settings(base, factory, {**({"seed": seed} if "seed" in accepted else {}), **settings})
    agent = factory(**options)
    if not callable(getattr(agent, "act", None)):
        raise ValueError(f"agent spec {base!r}: {target} built {agent!r}, which has no act(observation) method")
    return agent if isinstance(agent, Agent) else ExternalAgent(agent, seed)


class ExternalAgent(Agent):
    """Wraps a third-party object with ``act(observation) -> int`` (and optionally
    ``reset(seed=None)``) that does not subclass :class:`Agent`."""

    def __init__(self, agent: Any, seed: int | None = None):
        super().__init__(seed)
        self.agent = agent
        self.name = getattr(agent, "name", type(agent).__name__)

    def act(self, observation: dict[str, Any]) -> int:
        return int(self.agent.act(observation))

    def reset(self, seed: int | None = None) -> None:
        super().reset(seed)
        if callable(getattr(self.agent, "reset", None)):
            self.agent.reset(seed=seed)

    def __repr__(self) -> str:
        return f"ExternalAgent({self.agent!r})"


def _model_factory(path: Path) -> Any:
    """The agent class bound to the model file that ``path`` names (a .zip, a NumPy policy .npz or
    a run folder)."""
    if path.is_dir():
        for name in MODEL_FILES:
            if (path / name).is_file():
                return _model_factory(path / name)
        raise ValueError(f"run folder {str(path)!r} holds none of {list(MODEL_FILES)}")
    if path.suffix == ".npz":
        if not path.is_file():
            raise FileNotFoundError(f"no NumPy policy file at {str(path)!r}")
        if is_kernel_net(path):
            return functools.partial(NetAgent, path)
        if is_action_net(path):
            return functools.partial(ActionNetAgent, path)
        return functools.partial(numpy_policy_agent, path)
    if path.suffix == ".zip" or path.is_file():
        if not path.is_file():
            raise FileNotFoundError(f"no model file at {str(path)!r}")
        return functools.partial(PolicyAgent, path)
    raise ValueError(
        f"unknown agent spec {str(path)!r}; valid specs: {sorted(SPECS)}, the zoo's agents {sorted(zoo.cards())}, "
        f"installed agents "
        f"{sorted(_entry_points())} (entry points {ENTRY_POINT_GROUP!r}), package.module:ClassName, a path to "
        f"a MaskablePPO .zip model or a NumPy policy .npz, or a run folder holding one of {list(MODEL_FILES)}; "
        "settings follow "
        "the name as NAME,key=value,... (e.g. greedy,epsilon=0.1)"
    )


def numpy_policy_agent(path: Path, seed: int | None = None, deterministic: bool = True) -> Agent:
    """A NumPy policy file (:mod:`treppen.agents.snapshot` format) played by :class:`SnapshotAgent`: the
    masked argmax, or with ``deterministic=False`` a sample. Needs neither torch nor Ray."""
    return SnapshotAgent(NumpyPolicy.load(path), deterministic=deterministic, seed=seed)
