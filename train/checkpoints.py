"""Checkpoint files of a training run: SB3's ``model_<steps>_steps.zip`` naming, the newest one, an
atomic save."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from treppen_env.files import atomic_write

CHECKPOINT_PREFIX = "model_"


def checkpoint_path(folder: Path, steps: int) -> Path:
    """``<folder>/model_<steps>_steps.zip`` (SB3's CheckpointCallback naming)."""
    return folder / f"{CHECKPOINT_PREFIX}{steps}_steps.zip"


def latest_checkpoint(folder: Path) -> Path | None:
    """The checkpoint in ``folder`` with the most steps, or None."""
    found = []
    for path in folder.glob(f"{CHECKPOINT_PREFIX}*_steps.zip"):
        middle = path.name[len(CHECKPOINT_PREFIX) : -len("_steps.zip")]
        if middle.isascii() and middle.isdigit():
            found.append((int(middle), path))
    return max(found)[1] if found else None


def save_model(model: Any, path: Path) -> Path:
    """``model.save`` to ``path`` atomically (temp file in the same folder, then ``os.replace``)."""
    return atomic_write(path, model.save, suffix=".zip")
