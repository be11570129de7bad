"""Checkpoint files of a training run: SB3's ``model_<steps>_steps.zip`` naming, the newest one, an
atomic save."""

from __future__ import annotations

import zipfile
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


#: Members of an SB3 model file that loading needs (SB3 asserts "No data found" without ``data``).
MODEL_MEMBERS = ("data", "policy.pth")


def unreadable_model(path: Path) -> str | None:
    """Why the SB3 model file ``path`` cannot be loaded (not a zip, a member missing, a CRC error:
    a file cut short or damaged), or None when it reads whole."""
    try:
        with zipfile.ZipFile(path) as archive:
            missing = [m for m in MODEL_MEMBERS if m not in archive.namelist()]
            damaged = archive.testzip()
    except (OSError, EOFError, zipfile.BadZipFile) as err:
        return f"{type(err).__name__}: {err}"
    if missing:
        return f"no {missing} in it"
    return None if damaged is None else f"{damaged} in it is damaged"


def readable_checkpoint(folder: Path) -> tuple[int, Path] | None:
    """(steps, path) of the newest SB3 checkpoint in ``folder`` that reads whole, or None when there
    is no checkpoint; each newer one that does not read is named on stdout with the reason.

    :raises ValueError: when there are checkpoints but none reads, naming them.
    """
    found = checkpoints(folder)
    for steps, path in reversed(found):
        problem = unreadable_model(path)
        if problem is None:
            return steps, path
        print(f"checkpoint {path} cannot be read ({problem}); trying the one before")
    if found:
        raise ValueError(f"no checkpoint in {folder} can be read ({len(found)} tried); remove them to start again")
    return None


def save_model(model: Any, path: Path) -> Path:
    """``model.save`` to ``path`` atomically (temp file in the same folder, then ``os.replace``)."""
    return atomic_write(path, model.save, suffix=".zip")
