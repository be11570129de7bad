"""The run folder every backend shares: its lock (one process per folder), its creation and metadata,
the evaluation and Elo callbacks that fill ``evals.jsonl`` and ``elo.jsonl`` (sb3, rllib, kernel),
the progress bar, and the lines that end a run.

A run folder ``<runs_dir>/<name>/`` holds::

    config.yaml        the resolved config (``--resume`` reads it back)
    metadata.json      env version, versions, start time, command line, seed (and each resume)
    tb/                TensorBoard logs
    checkpoints/       the backend's checkpoints, written atomically
    evals.jsonl        one line per evaluation vs random and greedy
    elo.jsonl          one line per Elo rating (a small duplicate tournament, greedy = 0)
    .lock              locked by the process that trains in the folder (:func:`hold_run_dir`)
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import platform
import sys
import time
from collections.abc import Iterator
from importlib import metadata as importlib_metadata
from pathlib import Path
from typing import Any

import numpy as np

from treppen.arena.ratings import Ratings
from treppen.arena.scale import rating_text
from treppen.train.common.config import PPOBase, TrainConfig, resolve_name
from treppen.train.common.config_files import save_config
from treppen.train.common.periodic_ratings import EloRating, Evaluation
from treppen_env.files import atomic_write_text
from treppen_env.rules import Rules
from treppen_env.version import ENV_VERSION

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: no lock between processes
    fcntl = None  # type: ignore[assignment]

EVAL_OPPONENTS = ("random", "greedy")
#: The file of a run folder that the process training in it holds locked, with its process id inside.
LOCK_FILE = ".lock"


#: Fewest duplicate decks on which the final lines say whether the learner beats greedy.
MIN_VERDICT_DECKS = 10


@contextlib.contextmanager
def hold_run_dir(run_dir: Path) -> Iterator[None]:
    """Hold the run folder ``run_dir`` (created if missing) for this process while the block runs:
    an exclusive OS lock (``flock``) on its :data:`LOCK_FILE`, which names this process's id. The OS
    releases the lock when the process ends, however it ends (``kill -9`` included), so the lock of
    a killed run never blocks its ``--resume``.

    :raises ValueError: when another process holds the folder, naming its process id.
    """
    run_dir.mkdir(parents=True, exist_ok=True)
    with open(run_dir / LOCK_FILE, "a+") as handle:
        if fcntl is not None:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                handle.seek(0)
                holder = handle.read().strip() or "?"  # "?": the holder has not written its id yet
                raise ValueError(
                    f"run folder {str(run_dir)!r} is in use by process {holder} (a training run); wait for it to "
                    f"end, or stop it and continue with --resume {run_dir}"
                ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"{os.getpid()}\n")
        handle.flush()
        yield


def open_run_dir(config: TrainConfig, resume: bool, command_line: list[str] | None) -> Path:
    """Create (or reopen, when resuming) the run folder with ``checkpoints/``, write ``config.yaml``
    and ``metadata.json``; returns the folder.

    :raises ValueError: when starting a new run in a folder that already holds one.
    """
    run_dir = resolve_name(config).run_dir
    if not resume and (run_dir / "config.yaml").exists():
        raise ValueError(f"run folder {str(run_dir)!r} exists; pick another name= or use --resume {run_dir}")
    (run_dir / "checkpoints").mkdir(parents=True, exist_ok=True)
    save_config(config, run_dir / "config.yaml")
    write_metadata(run_dir, config, resume, command_line or sys.argv)
    print(f"run folder: {run_dir}   (tensorboard --logdir {run_dir / 'tb'})")
    return run_dir


def describe_strength(ratings: Ratings, learner: str = "learner", rival: str = "greedy") -> list[str]:
    """Lines for a user: Elo with intervals (on the scale of ``ratings``: greedy = 0 in a run), the
    head-to-head score against each opponent beside it, and whether the duplicate decks decide that
    ``learner`` is stronger than ``rival``.

    The verdict needs both the head-to-head score and the likelihood of superiority to agree (a
    Bradley-Terry fit can lift an agent above another through its results against a third): above
    with score > 0.5 and likelihood >= 0.95, below with score < 0.5 and likelihood <= 0.05, else
    undecided; with fewer than :data:`MIN_VERDICT_DECKS` decks the bootstrap says little, so no verdict.
    """
    at = {name: i for i, name in enumerate(ratings.agents)}
    i = at[learner]
    lines = []
    for name, j in at.items():
        anchored = name == ratings.anchor  # fixed at 0: no interval
        rating = "+0 (anchor)" if anchored else rating_text(ratings.elo[j], ratings.ci_low[j], ratings.ci_high[j])
        line = f"{name:<8} {rating:<18}"
        if j != i and ratings.count[i, j]:
            line += f"   {learner} vs {name}: score {ratings.score[i, j]:.3f} over {int(ratings.count[i, j])} deals"
        lines.append(line)
    if rival in at:
        j = at[rival]
        score, los = float(ratings.score[i, j]), float(ratings.los[i, j])
        decks = ratings.n_groups
        if decks < MIN_VERDICT_DECKS:
            verdict = f"{decks} decks are too few to tell whether {learner} beats {rival} (need {MIN_VERDICT_DECKS})"
        elif score > 0.5 and los >= 0.95:
            verdict = f"{learner} is stronger than {rival}"
        elif score < 0.5 and los <= 0.05:
            verdict = f"{learner} is weaker than {rival}"
        else:
            verdict = (
                f"these {decks} decks cannot tell whether {learner} beats {rival}; rate it on more decks "
                f"with `treppen tournament` or benchmarks/bench_strength.py"
            )
        lines.append(f"{verdict} (head-to-head score {score:.3f}, likelihood of superiority {los:.2f}, {decks} decks)")
    return lines


def next_commands(model: Path | str, num_players: int, rules: str) -> str:
    """The last lines of a run: the commands that use its model (play against it, rate it against the zoo).

    :param model: the run's model as an agent spec: its run folder (``agents.load`` plays its final
        model), or a spec (expert iteration's last search).
    :param num_players: seats per table of the run; ``rules`` its rules preset.
    """
    from treppen.agents import zoo

    zoo_agents = dict.fromkeys(zoo.level_spec(level, num_players, rules) for level in ("medium", "hard"))
    table = f"--players {num_players} --rules {rules}"
    opponents = " ".join([str(model)] * (num_players - 1))
    return (
        f"next:\n  play against it:   treppen play --opponents {opponents} --rules {rules}\n"
        f"  rate it (greedy = 0) against the zoo:   treppen tournament --agents {model} {' '.join(zoo_agents)} "
        f"greedy {table} --decks 100 --workers 2"
    )


def describe_time(total_s: float, imitation_s: float, steps: int) -> str:
    """The run's wall time for the ``steps`` it trained, an imitation warm start (``imitation_s``) apart from PPO."""

    def text(seconds: float) -> str:
        minutes, rest = divmod(round(seconds), 60)
        return f"{minutes} min {rest} s"

    if not imitation_s:
        return f"total time: {text(total_s)} for {steps} steps (training and evaluations)"
    ppo = text(total_s - imitation_s)
    return (
        f"total time: {text(total_s)}: imitation {text(imitation_s)}, then {ppo} for {steps} PPO steps and evaluations"
    )


def print_end(run_dir: Path, config: TrainConfig, seconds: float, steps: int, imitation_s: float = 0.0) -> None:
    """The very last lines of every backend's run: its time (:func:`describe_time`: ``seconds`` of
    wall time for the ``steps`` it trained, ``imitation_s`` of them the imitation warm start) and the
    next commands (:func:`next_commands`)."""
    print(describe_time(seconds, imitation_s, steps))
    print(next_commands(run_dir, config.num_players, config.rules))


#: The progress bar's label: what it counts, which is what ``total_timesteps`` counts.
PROGRESS_LABEL = "PPO (the learner's env steps)"


def progress_bar(start: int, total: int, rollout: int = 1) -> Any:
    """A tqdm bar over a run's steps from ``start``, labelled with what it counts (:data:`PROGRESS_LABEL`),
    with its rate; every backend's.

    A learner that collects whole rollouts of ``rollout`` steps ends at the first rollout boundary
    at or past ``total``; that is the bar's total, so it never overshoots (tqdm drops a total that
    the count has passed).
    """
    from tqdm.auto import tqdm

    end = start + math.ceil(max(0, total - start) / rollout) * rollout
    return tqdm(total=end, initial=start, desc=PROGRESS_LABEL, unit="step", dynamic_ncols=True, mininterval=1.0)


def print_ratings(run_dir: Path, eval_deals: int, evals: Evaluation, elo: EloRating) -> None:
    """Print the final model's evaluation (``eval_deals`` ordinary deals against each opponent) and,
    when it was rated, its Elo on duplicate decks with the verdict against greedy (:func:`describe_strength`)."""
    where = run_dir / "evals.jsonl"
    print(f"evaluation, {eval_deals} ordinary deals against each ({where}): " + describe_eval(evals.latest))
    if elo.ratings is not None:
        decks = elo.ratings.n_groups
        print(f"Elo of the final model, {elo.ratings.scale}, {decks} duplicate decks ({run_dir / 'elo.jsonl'}):")
        for line in describe_strength(elo.ratings):
            print("  " + line)


def describe_eval(record: dict[str, Any]) -> str:
    """One line: win rate and point margin per evaluated opponent."""
    parts = [
        f"vs {name}: win {r['winrate']:.1%}, points {r['points']:+.1f}"
        for name, r in record.items()
        if isinstance(r, dict)
    ]
    return "; ".join(parts)


def write_metadata(run_dir: Path, config: TrainConfig, resume: bool, command_line: list[str]) -> None:
    """Write ``metadata.json``: versions, start time, command line and seed; a resume is appended."""

    def version(package: str) -> str:
        try:
            return importlib_metadata.version(package)
        except importlib_metadata.PackageNotFoundError:
            return "unknown"

    entry = {
        "env": ENV_VERSION,
        "start_time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "command_line": command_line,
        "seed": config.seed,
        "versions": {
            "python": platform.python_version(),
            "numpy": np.__version__,
            "torch": version("torch"),
            "stable_baselines3": version("stable-baselines3"),
            "sb3_contrib": version("sb3-contrib"),
            "ray": version("ray"),
            "treppen": version("treppen"),
        },
        "platform": platform.platform(),
    }
    path = run_dir / "metadata.json"
    if resume and path.is_file():
        data = json.loads(path.read_text())
        data.setdefault("resumes", []).append(entry)
    else:
        data = entry
    atomic_write_text(path, json.dumps(data, indent=2) + "\n")


def run_ratings(config: PPOBase, rules: Rules, run_dir: Path) -> tuple[Evaluation, EloRating]:
    """The evaluation (vs :data:`EVAL_OPPONENTS`, ``evals.jsonl``) and the Elo rating (``elo.jsonl``)
    of a run, as the sb3, rllib and kernel backends drive them (every ``eval_every`` and
    ``elo_every`` steps).

    :param config: the run's config (``eval_every``, ``eval_deals``, ``elo_every``, ``elo_decks``).
    :param rules: the run's rules, built once.
    :param run_dir: the run folder.
    """
    evals = Evaluation(
        EVAL_OPPONENTS,
        run_dir / "evals.jsonl",
        num_players=config.num_players,
        rules=rules,
        deals=config.eval_deals,
    )
    elo = EloRating(run_dir / "elo.jsonl", config.num_players, rules, config.elo_decks)
    return evals, elo
