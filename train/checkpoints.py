"""Checkpoint files of a training run: SB3's ``model_<steps>_steps.zip`` naming, the newest one, an
atomic save."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from treppen_env.files import atomic_write

CHECKPOINT_PREFIX = "model_"


class TrainingStopped(RuntimeError):
    """A training run that cannot go on (e.g. every RLlib env runner lost for good); its message
    says what was saved and names the resume command (``treppen train --resume RUN``)."""


def checkpoint_path(folder: Path, steps: int, prefix: str = CHECKPOINT_PREFIX, suffix: str = ".zip") -> Path:
    """``<folder>/<prefix><steps>_steps<suffix>``: SB3's CheckpointCallback naming
    (``model_<steps>_steps.zip``); the RLlib backend's checkpoint folders use ``rllib_`` and no suffix."""
    return folder / f"{prefix}{steps}_steps{suffix}"


def checkpoints(folder: Path, prefix: str = CHECKPOINT_PREFIX, suffix: str = ".zip") -> list[tuple[int, Path]]:
    """The checkpoints named by :func:`checkpoint_path` in ``folder``, as (steps, path), fewest steps first."""
    end = f"_steps{suffix}"
    found = []
    for path in folder.glob(f"{prefix}*{end}"):
        middle = path.name[len(prefix) : -len(end)]
        if middle.isascii() and middle.isdigit():
            found.append((int(middle), path))
    return sorted(found)


def checkpoint_steps(path: Path) -> int:
    """The steps in a checkpoint's name (``model_1024_steps.zip``: 1024)."""
    return int(path.name.split("_steps")[0].rsplit("_", 1)[1])


def latest_checkpoint(folder: Path, prefix: str = CHECKPOINT_PREFIX, suffix: str = ".zip") -> tuple[int, Path] | None:
    """(steps, path) of the checkpoint in ``folder`` with the most steps, or None."""
    found = checkpoints(folder, prefix, suffix)
    return found[-1] if found else None


def save_model(model: Any, path: Path) -> Path:
    """``model.save`` to ``path`` atomically (temp file in the same folder, then ``os.replace``)."""
    return atomic_write(path, model.save, suffix=".zip")
