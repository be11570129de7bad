"""Atomic file writes (treppen_env/files.py)."""

from __future__ import annotations

import os
import stat

from treppen_env.files import atomic_write_text


def test_atomic_writes_respect_the_umask(tmp_path):
    """Result files written atomically get the usual mode (mkstemp alone would make them 0600)."""
    umask = os.umask(0o022)
    os.umask(umask)
    path = atomic_write_text(tmp_path / "out.txt", "x")
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask
    assert path.read_text() == "x" and [p.name for p in tmp_path.iterdir()] == ["out.txt"]
