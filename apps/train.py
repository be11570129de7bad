"""``treppen train``: self-play training from a YAML config, on the backend it names
(:data:`treppen.train.common.config.BACKENDS`: ``sb3``, ``rllib``, ``kernel``, ``expert``;
:mod:`treppen.train.launch`).

Usage::

    treppen train [--config NAME_OR_FILE] [key=value ...] [--resume RUN_DIR]

``--config`` takes a YAML file or the name of a shipped config (``selfplay``, ``selfplay_long``,
``rllib_selfplay``, ``kernel``, ``expert_iteration``; :func:`treppen.train.common.config_files.shipped_configs`);
without it, the shipped config of the backend an override names (``backend=kernel``: ``kernel``),
else ``kernel``, the batched learner (:func:`treppen.train.common.config_files.default_config`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from treppen.arena.interrupts import exit_status, interrupts_raise
from treppen.train.common.checkpoints import TrainingStopped
from treppen.train.common.config import BACKENDS, DEFAULT_CONFIG
from treppen.train.common.config_files import (
    config_path,
    default_config,
    load_config,
    load_run_config,
    override_key,
    shipped_configs,
)
from treppen.train.launch import train

#: Config keys that ``--resume`` may override (the rest are fixed by the saved model and game).
RESUME_OVERRIDES = {
    "total_timesteps",
    "n_envs",
    "vec_env",
    "torch_threads",
    "device",
    "opponent_random",
    "opponent_greedy",
    "opponent_snapshot",
    "opponent_best",
    "opponent_agent",
    "opponent_agents",
    "best_every",
    "best_decks",
    "best_threshold",
    "snapshot_every",
    "pool_size",
    "snapshot_deterministic",
    "eval_every",
    "eval_deals",
    "checkpoint_every",
    "ray_address",
    "num_env_runners",
    "rollout_workers",
    "progress",
    "verbose",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``treppen train``; the help lists the backends and the shipped configs."""
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = "backends (the config's backend: key):\n" + "\n".join(
        f"  {name:<7} {text}" for name, text in BACKENDS.items()
    )
    parser.add_argument(
        "--config",
        default=None,
        help=f"YAML config file, or the name of a shipped config: {', '.join(sorted(shipped_configs()))} "
        f"(default: {DEFAULT_CONFIG}, the batched learner, or the shipped config of the backend a backend= names)",
    )
    parser.add_argument(
        "--resume",
        type=Path,
        default=None,
        metavar="RUN_DIR",
        help="continue a run from its newest readable checkpoint, with its saved config: an interrupted run to its "
        "total_timesteps, or a finished one further with a larger total_timesteps=N",
    )
    parser.add_argument(
        "overrides",
        nargs="*",
        metavar="key=value",
        help="config overrides, e.g. total_timesteps=50000 rules_options.max_turns=200 (a key of the backend's "
        "section, or section.key=value); a key the backend does not read is an error",
    )


def run(args: argparse.Namespace) -> int:
    """Entry point of ``treppen train``: resolve the config, train, print where results landed."""
    if args.resume is not None:
        if args.config is not None:
            raise ValueError("--resume uses the run's saved config.yaml; drop --config (overrides still apply)")
        if not args.resume.exists():
            raise FileNotFoundError(f"--resume {str(args.resume)!r}: the path does not exist")
        fixed = sorted({override_key(o) for o in args.overrides} - RESUME_OVERRIDES)
        if fixed:
            raise ValueError(
                f"--resume continues the saved model and game; {fixed} cannot change. "
                f"Keys that may: {sorted(RESUME_OVERRIDES)}"
            )
        config = load_run_config(args.resume, args.overrides)
        run_dir = args.resume if args.resume.name not in ("", "..") else args.resume.resolve()  # ".": its own name
        config.runs_dir, config.name = str(run_dir.parent), run_dir.name
    else:
        path = config_path(args.config) if args.config is not None else default_config(args.overrides)
        print(f"config: {path}", flush=True)
        config = load_config(path, args.overrides)
    command = ["treppen", "train"]
    command += ["--config", str(args.config)] if args.config is not None else []
    command += ["--resume", str(args.resume)] if args.resume is not None else []
    try:
        with interrupts_raise():  # SIGTERM as Ctrl-C: the backend saves what it can and names --resume
            train(config, resume=args.resume is not None, command_line=[*command, *args.overrides])
    except KeyboardInterrupt as err:
        return exit_status(err)
    except TrainingStopped as stop:
        print(f"treppen train: {stop}", file=sys.stderr)
        return 3
    return 0
