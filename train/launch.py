"""Start a training run on the backend its config names: ``backend: sb3`` (:mod:`treppen.train.sb3.backend`),
``backend: rllib`` (:mod:`treppen.train.rllib.backend`, imported only then: it needs the ``ray`` extra),
``backend: kernel`` (PPO over the batched env, :mod:`treppen.train.kernel.backend`) or ``backend:
expert`` (expert iteration, :mod:`treppen.train.expert.backend`)."""

from __future__ import annotations

from pathlib import Path

from treppen.train.config import ExpertConfig, KernelConfig, RecipeBase, RLlibConfig, SB3Config, TrainConfig


def train(config: TrainConfig, resume: bool = False, command_line: list[str] | None = None) -> Path:
    """Train by self-play as ``config`` says; returns the run folder.

    :param config: a checked config of its backend's class (see :func:`treppen.train.config_files.load_config`).
    :param resume: continue the run folder's newest checkpoint.
    :param command_line: the command to record in ``metadata.json`` (default: ``sys.argv``).
    :raises ValueError: when starting a new run in a folder that already holds one, or for an agent
        spec of the config that does not load (before the run folder is made).
    """
    check_agent_specs(config)
    if isinstance(config, ExpertConfig):
        from treppen.train.expert.backend import train_expert

        return train_expert(config, resume, command_line)
    if isinstance(config, KernelConfig):
        from treppen.train.kernel.backend import train_kernel

        return train_kernel(config, resume, command_line)
    if isinstance(config, RLlibConfig):
        from treppen.train.rllib.backend import train_rllib

        return train_rllib(config, resume, command_line)
    if isinstance(config, SB3Config):
        from treppen.train.sb3.backend import train_sb3

        return train_sb3(config, resume, command_line)
    raise TypeError(f"{type(config).__name__} is no backend's config; load one with load_config")


def check_agent_specs(config: TrainConfig) -> None:
    """Load every agent the config names (``imitation_teacher``, ``opponent_agents``, ``expert_search``)
    once, so that a bad spec stops the run before its folder is made.

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
