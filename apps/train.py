"""``treppen train``: self-play training from a YAML config, on the backend it names
(:mod:`train.launch`).

Usage::

    treppen train [--config configs/selfplay.yaml] [key=value ...] [--resume RUN_DIR]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from train.config import load_config
from train.launch import train

#: Config keys that ``--resume`` may override (the rest are fixed by the saved model and game).
RESUME_OVERRIDES = {
    "total_timesteps",
    "n_envs",
    "vec_env",
    "torch_threads",
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
    "progress",
    "verbose",
}


DEFAULT_CONFIG = Path(__file__).resolve().parent.parent / "configs" / "selfplay.yaml"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``treppen train``."""
    parser.add_argument(
        "--config", type=Path, default=None, help="YAML config (default: configs/selfplay.yaml of the repository)"
    )
    parser.add_argument(
        "--resume",
        type=Path,
        default=None,
        metavar="RUN_DIR",
        help="continue a run from its newest checkpoint, with its saved config: an interrupted run to its "
        "total_timesteps, or a finished one further with a larger total_timesteps=N",
    )
    parser.add_argument(
        "overrides",
        nargs="*",
        metavar="key=value",
        help="config overrides, e.g. total_timesteps=50000 rules_options.max_turns=200",
    )


def run(args: argparse.Namespace) -> int:
    """Entry point of ``treppen train``: resolve the config, train, print where results landed."""
    if args.resume is not None:
        if args.config is not None:
            raise ValueError("--resume uses the run's saved config.yaml; drop --config (overrides still apply)")
        if not args.resume.exists():
            raise FileNotFoundError(f"--resume {str(args.resume)!r}: the path does not exist")
        if not (args.resume / "config.yaml").is_file():
            raise FileNotFoundError(f"--resume {str(args.resume)!r} is not a run folder (no config.yaml)")
        fixed = sorted({o.partition("=")[0].strip().partition(".")[0] for o in args.overrides} - RESUME_OVERRIDES)
        if fixed:
            raise ValueError(
                f"--resume continues the saved model and game; {fixed} cannot change. "
                f"Keys that may: {sorted(RESUME_OVERRIDES)}"
            )
        config = load_config(args.resume / "config.yaml", args.overrides)
        config.runs_dir, config.name = str(args.resume.parent), args.resume.name
    else:
        path = args.config if args.config is not None else (DEFAULT_CONFIG if DEFAULT_CONFIG.is_file() else None)
        config = load_config(path, args.overrides)
    command = ["treppen", "train"]
    command += ["--config", str(args.config)] if args.config is not None else []
    command += ["--resume", str(args.resume)] if args.resume is not None else []
    try:
        train(config, resume=args.resume is not None, command_line=[*command, *args.overrides])
    except KeyboardInterrupt:
        return 130
    return 0
