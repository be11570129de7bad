"""Checkpoint files of a training run: SB3's ``model_<steps>_steps.zip`` naming, the newest one, the
newest that reads (every backend's ``--resume`` passes over damaged ones), an atomic save."""

from __future__ import annotations

import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from treppen_env.files import atomic_write

CHECKPOINT_PREFIX = "model_"
#: Characters of a damaged checkpoint's problem shown, about.
PROBLEM_LIMIT = 120

T = TypeVar("T")


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


def newest_readable(found: list[tuple[int, Path]], read: Callable[[Path], T]) -> tuple[int, Path, T] | None:
    """The newest of the checkpoints ``found`` that ``read`` reads, as (steps, path, what ``read``
    returned), or None when there are none; the newer ones that it cannot read are named in one line
    on stdout, each with the reason (a file cut short by a kill or a full disk, a damaged one).

    :param found: checkpoints as (steps, path), fewest steps first (:func:`checkpoints`).
    :param read: loads a checkpoint; any exception it raises marks the checkpoint damaged (loading a
        damaged pickle or archive can raise nearly any exception).
    :raises ValueError: when there are checkpoints but none reads, naming the folder and the newest's problem.
    """
    damaged: list[str] = []
    for steps, path in reversed(found):
        try:
            value = read(path)
        except Exception as err:  # the checkpoint's damage, whatever the loader makes of it
            damaged.append(f"{path} ({problem(err)})")
            continue
        if damaged:
            n = len(damaged)
            print(f"passed over {n} damaged checkpoint{'s' * (n > 1)}, newest first: {'; '.join(damaged)}")
        return steps, path, value
    if found:
        raise ValueError(
            f"no checkpoint in {found[0][1].parent} can be read ({len(found)} tried; the newest: {damaged[0]}); "
            "remove them to start again"
        )
    return None


def problem(err: Exception) -> str:
    """What a damaged file's loader raised, as a short line: the exception's type and the first
    sentence of its message, cut."""
    sentence = str(err).strip().split("\n", 1)[0].split(". ", 1)[0]
    text = f"{type(err).__name__}: {sentence}" if sentence else type(err).__name__
    return text if len(text) <= PROBLEM_LIMIT else f"{text[:PROBLEM_LIMIT]}..."


def readable_checkpoint(folder: Path) -> tuple[int, Path] | None:
    """(steps, path) of the newest SB3 checkpoint in ``folder`` that reads whole, or None when there
    is no checkpoint; the newer ones that do not read are named (:func:`newest_readable`).

    :raises ValueError: when there are checkpoints but none reads, naming the folder.
    """
    found = newest_readable(checkpoints(folder), check_model)
    return None if found is None else found[:2]


def check_model(path: Path) -> Path:
    """``path`` when the SB3 model file there reads whole.

    :raises zipfile.BadZipFile: for a file that is not a zip (cut short by a kill or a full disk).
    :raises ValueError: for a member that loading needs (:data:`MODEL_MEMBERS`) missing, or one that
        fails its CRC check (damaged).
    """
    with zipfile.ZipFile(path) as archive:
        missing = [m for m in MODEL_MEMBERS if m not in archive.namelist()]
        damaged = archive.testzip()
    if missing:
        raise ValueError(f"no {missing} in it")
    if damaged is not None:
        raise ValueError(f"{damaged} in it is damaged")
    return path


def save_model(model: Any, path: Path) -> Path:
    """``model.save`` to ``path`` atomically (temp file in the same folder, then ``os.replace``)."""
    return atomic_write(path, model.save, suffix=".zip")
