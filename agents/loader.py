"""How :func:`treppen.agents.load` builds an agent from a spec string: the built-in names, the zoo and
the difficulty levels, installed agents (entry points), third-party ``package.module:ClassName``
specs, and model files and run folders (docs/ARCHITECTURE.md "Agents")."""

from __future__ import annotations

import functools
import os
import pickle
import zipfile
from pathlib import Path
from typing import Any

from treppen.agents import zoo
from treppen.agents.action_net import ActionNetAgent, is_action_net
from treppen.agents.base import Agent, RandomAgent
from treppen.agents.greedy import GreedyAgent
from treppen.agents.human import HumanAgent
from treppen.agents.llm import LLMAgent
from treppen.agents.planner import PlannerAgent
from treppen.agents.policy import PolicyAgent
from treppen.agents.policy_value_net import NetAgent, is_kernel_net
from treppen.agents.search import ISMCTSAgent, RolloutAgent
from treppen.agents.snapshot import NumpyPolicy, SnapshotAgent
from treppen.agents.spec import check_settings, parse_spec, path_test, settings_of
from treppen_env.messages import PATH_LIMIT, shorten
from treppen_env.rules import Rules, did_you_mean

#: Named agents :func:`load` knows, besides model paths.
SPECS: dict[str, type[Agent]] = {
    "random": RandomAgent,
    "greedy": GreedyAgent,
    "planner": PlannerAgent,
    "human": HumanAgent,
    "rollout": RolloutAgent,
    "ismcts": ISMCTSAgent,
    "llm": LLMAgent,
}
#: Model files :func:`load` looks for in a run folder, in this order (``final_policy.npz``: the
#: NumPy export of an RLlib run, played without Ray or torch).
MODEL_FILES = ("final_model.zip", "model.zip", "final_policy.npz", "final_model.npz")


def load(
    spec: str | os.PathLike[str] | Agent, seed: int | None = None, rules: Rules | str | None = None, **kwargs: Any
) -> Agent:
    """Build an agent from ``spec``.

    :param spec: ``BASE[,key=value]...`` (see :mod:`treppen.agents.spec`): the base is a difficulty
        level (``easy``, ``medium``, ``hard``: :func:`treppen.agents.zoo.level_spec` at a 2-player
        table of the rules' preset), a built-in name (:data:`SPECS`), a trained agent of the model
        zoo (:mod:`treppen.agents.zoo`, e.g. ``ppo-2p``; its weights' checksum is checked), the name
        of an installed agent (entry point group ``treppen.agents``), a third-party
        ``package.module:ClassName``, a path to a MaskablePPO ``.zip`` model or a NumPy policy
        ``.npz`` (an RLlib run's export or a pool snapshot), or a run folder holding one of
        :data:`MODEL_FILES`; the settings are constructor keywords, e.g. ``"greedy,epsilon=0.1"``; a
        setting of :data:`AGENT_SETTINGS` names an agent by its own spec (``"ismcts,prior=runs/a"``).
        An :class:`Agent` is returned as it is; a third-party object that is not one (any object
        with ``act``) is wrapped in :class:`ExternalAgent`.
    :param seed: seeds the agent's generator (a ``seed`` setting in the spec wins).
    :param rules: the game's rules, handed to every agent whose constructor takes ``rules`` (the
        greedy and search agents score and simulate by them); a ``rules`` setting in the spec wins.
    :param kwargs: further constructor arguments (e.g. ``rules="rum500"`` for ``"greedy"``,
        ``deterministic=False`` for a model); the spec's settings override them.
    :return: the agent.
    :raises ValueError: for an unknown spec (:class:`UnknownSpecError`, listing the valid ones), an
        unknown setting (listing the agent's settings), a bad setting value, a run folder without a
        model, or a third-party spec that does not import or does not build an object with ``act``;
        a :class:`treppen.agents.zoo.ZooError` (a ``ValueError``) for zoo weights whose checksum is
        not their card's.
    :raises FileNotFoundError: for a model path that does not exist.
    :raises ValueError: for a model file that cannot be read (damaged, cut short, not a model),
        naming it; a :class:`treppen.agents.zoo.ZooError` for a zoo agent's folder given by path
        whose card does not read or whose weights are not its card's (checked as by name).
    """
    if isinstance(spec, Agent):
        return spec
    base, settings = parse_spec(spec)
    if not base:
        raise ValueError(f"the agent spec is empty; {_valid_specs()}")
    for key in AGENT_SETTINGS:  # settings that name another agent are built from their spec first
        if isinstance(settings.get(key), str):
            try:
                settings[key] = load(settings[key])
            except ValueError as err:
                raise ValueError(f"{key}={shorten(settings[key], PATH_LIMIT)}: {err}") from None
    if base in zoo.LEVELS:  # a difficulty level: its agent at a 2-player table of the rules' preset
        preset = rules if isinstance(rules, str) else "treppenromme" if rules is None else rules.name
        return load(zoo.level_spec(base, 2, preset), seed, rules, **{**kwargs, **settings})
    zoo_cards = zoo.cards()
    model = zoo_cards.get(base) or _zoo_folder_card(Path(base))
    if model is not None:  # a zoo agent: its card's spec, the caller's settings on top
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
    if name in SPECS:  # a built-in agent reads no file: an error building it is ours
        return factory(**options)
    try:
        return factory(**options)
    except UNREADABLE as err:
        raise _unreadable(base, err) from None


#: What reading a damaged or foreign model file raises (numpy, zipfile, pickle, torch, SB3).
UNREADABLE = (OSError, EOFError, KeyError, AssertionError, RuntimeError, zipfile.BadZipFile, pickle.UnpicklingError)


def _unreadable(path: str | Path, err: BaseException) -> ValueError:
    """The error for a model file that cannot be read, naming it and what a model file is."""
    return ValueError(
        f"model file {shorten(str(path), PATH_LIMIT)}: cannot read it ({type(err).__name__}: {shorten(str(err))}); "
        "is it damaged, or not a model? (a MaskablePPO .zip, a NumPy policy .npz, a zoo agent's folder or a run folder)"
    )


def _zoo_folder_card(path: Path) -> zoo.ModelCard | None:
    """The card of a zoo agent's folder given by path (one holding a ``card.json``), else None.

    :raises ZooError: for a card that cannot be read.
    """
    return zoo.ModelCard.read(path) if path_test(path.is_dir) and path_test((path / zoo.CARD).is_file) else None


def _check_zoo_weights(path: Path) -> None:
    """When ``path`` is the weights file of a zoo card in its folder, check it against the card's checksum.

    :raises ZooError: for a card that cannot be read, or weights that are not the card's.
    """
    card = _zoo_folder_card(path.parent)
    if card is not None and card.weights == path.name:
        zoo.check_weights(card)


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
    try:
        agent = factory(**options)
    except TypeError as err:  # it is not built from keyword settings: json:loads
        raise ValueError(
            f"agent spec {shorten(base)}: {target}({', '.join(options)}) fails ({err}); a third-party agent is a "
            "class or a function building an agent from keyword settings"
        ) from None
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
    if path_test(path.is_dir):
        for name in MODEL_FILES:
            if (path / name).is_file():
                return _model_factory(path / name)
        raise ValueError(f"run folder {shorten(str(path), PATH_LIMIT)} holds none of {list(MODEL_FILES)}")
    if path.suffix == ".npz":
        if not path_test(path.is_file):
            raise FileNotFoundError(f"no NumPy policy file at {shorten(str(path), PATH_LIMIT)}")
        _check_zoo_weights(path)
        try:
            kernel_net = is_kernel_net(path)
        except (*UNREADABLE, ValueError) as err:  # ValueError: numpy's for bytes that are no array file
            raise _unreadable(path, err) from None
        if kernel_net:
            return functools.partial(NetAgent, path)
        if is_action_net(path):
            return functools.partial(ActionNetAgent, path)
        return functools.partial(numpy_policy_agent, path)
    if path.suffix == ".zip" or path_test(path.is_file):
        if not path_test(path.is_file):
            raise FileNotFoundError(f"no model file at {shorten(str(path), PATH_LIMIT)}")
        return functools.partial(PolicyAgent, path)
    raise UnknownSpecError(str(path))


class UnknownSpecError(ValueError):
    """An agent spec :func:`load` cannot place; the message names the closest name it knows, if one is
    close (``grredy``: did you mean greedy?), and lists the valid ones.

    :param spec: the spec as given.
    :param without: built-in names the caller cannot seat (a tournament: ``human``), left out of the list.
    """

    def __init__(self, spec: str, without: tuple[str, ...] = ()):
        self.spec = spec
        names = [*zoo.LEVELS, *sorted(set(SPECS) - set(without)), *zoo.cards(), *_entry_points()]
        hint = did_you_mean([spec], names)
        super().__init__(f"unknown agent spec {shorten(spec, PATH_LIMIT)}{hint}; {_valid_specs(without)}")


def _valid_specs(without: tuple[str, ...] = ()) -> str:
    """What an agent spec may be, for messages, leaving out the built-in names in ``without``."""
    built_in = sorted(set(SPECS) - set(without))
    return (
        f"valid specs: the levels {list(zoo.LEVELS)}, the built-in agents {built_in}, the zoo's agents "
        f"{sorted(zoo.cards())}, installed agents {sorted(_entry_points())} (entry points {ENTRY_POINT_GROUP!r}), "
        "package.module:ClassName, a path to a MaskablePPO .zip model or a NumPy policy .npz, a zoo agent's "
        f"folder, or a run folder holding one of {list(MODEL_FILES)}; settings follow the name as "
        "NAME,key=value,... (e.g. greedy,epsilon=0.1)"
    )


def numpy_policy_agent(path: Path, seed: int | None = None, deterministic: bool = True) -> Agent:
    """A NumPy policy file (:mod:`treppen.agents.snapshot` format) played by :class:`SnapshotAgent`: the
    masked argmax, or with ``deterministic=False`` a sample. Needs neither torch nor Ray."""
    return SnapshotAgent(NumpyPolicy.load(path), deterministic=deterministic, seed=seed)
