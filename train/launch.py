"""Start a training run on the backend its config names: ``backend: sb3`` (:mod:`treppen.train.sb3.backend`),
``backend: rllib`` (:mod:`treppen.train.rllib.backend`, imported only then: it needs the ``ray`` extra),
``backend: kernel`` (PPO over the batched env, :mod:`treppen.train.kernel.backend`) or ``backend:
expert`` (expert iteration, :mod:`treppen.train.expert.backend`)."""

from __future__ import annotations

import importlib.util
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from treppen.arena.ray_address import check_ray_address
from treppen.train.common.config import (
    ExpertConfig,
    KernelConfig,
    RayAddressKey,
    RecipeBase,
    RLlibConfig,
    SB3Config,
    TrainConfig,
    resolve_name,
)
from treppen.train.common.rundir import hold_run_dir
from treppen_env.messages import shorten


def train(config: TrainConfig, resume: bool = False, command_line: list[str] | None = None) -> Path:
    """Train by self-play as ``config`` says; returns the run folder.

    The settings are checked before the run folder is made (:func:`check_agent_specs`,
    :func:`check_device`, :func:`check_workers`, a cluster that does not answer:
    :func:`treppen.arena.ray_address.check_ray_address`); the run holds its folder while it trains
    (:func:`treppen.train.common.rundir.hold_run_dir`).

    :param config: a checked config of its backend's class (see :func:`treppen.train.common.config_files.load_config`).
    :param resume: continue the run folder's newest readable checkpoint.
    :param command_line: the command to record in ``metadata.json`` (default: ``sys.argv``).
    :raises ValueError: when starting a new run in a folder that already holds one, for a folder that
        another process trains in, and before the run folder is made: for an agent spec of the
        config that does not load, a device this machine does not have, more rollout workers than
        this machine can run, a ``ray_address`` where no cluster answers, or a backend whose extra
        is not installed.
    """
    check_agent_specs(config)
    check_device(config)
    check_workers(config)
    if isinstance(config, RayAddressKey):
        check_ray_address(config.ray_address, "config key ray_address")
    run = backend(config)
    with hold_run_dir(resolve_name(config).run_dir):
        return run(config, resume, command_line)


def backend(config: TrainConfig) -> Callable[[Any, bool, list[str] | None], Path]:
    """The training function of the config's backend (imported only now: rllib needs the ``ray`` extra).

    :raises ValueError: for ``backend: rllib`` without Ray installed.
    """
    if isinstance(config, ExpertConfig):
        from treppen.train.expert.backend import train_expert

        return train_expert
    if isinstance(config, KernelConfig):
        from treppen.train.kernel.backend import train_kernel

        return train_kernel
    if isinstance(config, RLlibConfig):
        if importlib.util.find_spec("ray") is None:
            raise ValueError("backend: rllib needs Ray RLlib: pip install 'treppen[ray]'")
        from treppen.train.rllib.backend import train_rllib

        return train_rllib
    if isinstance(config, SB3Config):
        from treppen.train.sb3.backend import train_sb3

        return train_sb3
    raise TypeError(f"{type(config).__name__} is no backend's config; load one with load_config")


def check_device(config: TrainConfig) -> None:
    """Refuse a ``device`` that this machine does not have (``backend: kernel``): ``cuda`` without a
    CUDA GPU or a torch built with CUDA, ``mps`` without Apple's GPU.

    :raises ValueError: naming the config key, what is missing and the settings that run here.
    """
    if not isinstance(config, KernelConfig) or config.device in ("auto", "cpu"):
        return
    import torch

    if config.device == "cuda" and not torch.cuda.is_available():
        missing = "CUDA GPU" if torch.version.cuda else "CUDA (this torch is built without it)"
    elif config.device == "mps" and not torch.backends.mps.is_available():
        missing = "Apple GPU (mps)"
    else:
        return
    raise ValueError(
        f"config key device={config.device}: this machine has no {missing}; use device=cpu, or device=auto "
        "(a GPU where one is present)"
    )


def check_agent_specs(config: TrainConfig) -> None:
    """Load every agent the config names (``imitation_teacher``, ``opponent_agents``, ``expert_search``)
    once, so that a bad spec (or a net file it names that does not read) stops the run before its
    folder is made; for expert iteration also the search of a later generation, ``expert_search``
    joined by a net and ``expert_guide`` (:func:`check_expert_search`).

    :raises ValueError: naming the config key and the spec's problem.
    """
    from treppen import agents

    named: dict[str, list[str]] = {}
    if isinstance(config, RecipeBase):
        named["imitation_teacher"] = [config.imitation_teacher] if config.imitation_decisions else []
        named["opponent_agents"] = list(config.opponent_agents)
    if isinstance(config, ExpertConfig):
        named["expert_search"] = [config.expert_search]
    rules = config.make_rules()
    for key, specs in named.items():
        for spec in specs:
            try:
                agents.load(spec, rules=rules)
            except ValueError as err:
                raise ValueError(f"config key {key}: {err}") from None
    if isinstance(config, ExpertConfig):
        check_expert_search(config)


def check_expert_search(config: ExpertConfig) -> None:
    """Refuse an ``expert_search`` that is no search agent, and an ``expert_guide`` that the search
    does not take with a net (tried with a fresh net of ``expert_hidden`` units, as generation 1
    searches with generation 0's).

    :raises ValueError: naming the config key, its value and the problem.
    """
    from treppen import agents
    from treppen.agents.search import SearchAgent
    from treppen.train.expert.backend import search_spec
    from treppen.train.expert.policy_value_torch import KernelNet

    rules = config.make_rules()
    if not isinstance(agents.load(config.expert_search, rules=rules), SearchAgent):
        raise ValueError(
            f"config key expert_search={shorten(config.expert_search)}: not a search; give rollout or ismcts with "
            "settings, e.g. rollout,playouts=300"
        )
    with tempfile.TemporaryDirectory() as folder:
        net = KernelNet(config.expert_hidden).save(Path(folder) / "net.npz")
        try:
            agents.load(search_spec(config, net), rules=rules)
        except ValueError as err:
            raise ValueError(
                f"config key expert_guide={shorten(config.expert_guide)} (joined to expert_search with net=FILE): {err}"
            ) from None


#: Rollout worker processes per core at most (``backend: kernel``); above the cores, a warning.
MAX_WORKERS_PER_CORE = 4


def check_workers(config: TrainConfig) -> None:
    """Refuse more rollout worker processes than this machine can run (``backend: kernel`` without
    ``ray_address``, where each is a process of its own, some hundreds of MB): more than
    :data:`MAX_WORKERS_PER_CORE` per usable core; more than the cores is a warning (they share them).

    :raises ValueError: naming the config key, the cores and the settings that run here.
    """
    if not isinstance(config, KernelConfig) or config.ray_address is not None or config.rollout_workers == "auto":
        return
    from treppen.train.kernel.rollouts import usable_cores

    cores, workers = usable_cores(), config.rollout_workers
    most = MAX_WORKERS_PER_CORE * cores
    if workers > most:
        raise ValueError(
            f"config key rollout_workers={workers}: this machine has {cores} usable core{'s' * (cores > 1)}, room "
            f"for at most {most} worker processes ({MAX_WORKERS_PER_CORE} per core); use rollout_workers=auto "
            f"(the cores less one) or at most {most}"
        )
    if workers > cores:
        warnings.warn(
            f"rollout_workers={workers} is more than the {cores} usable cores; the workers share them "
            "(rollout_workers=auto: the cores less one)",
            stacklevel=2,
        )
