"""On ``PYTHONPATH`` (tests/train/test_without_sb3.py): Stable-Baselines3 and sb3-contrib cannot be
imported in this interpreter, as in a venv where they are not installed."""

import sys
from importlib.abc import MetaPathFinder

#: The packages this interpreter lacks.
ABSENT = ("stable_baselines3", "sb3_contrib")


class _Absent(MetaPathFinder):
    """Finds the absent packages first and refuses them, as the import system does a missing one."""

    def find_spec(self, name: str, path: object = None, target: object = None) -> None:
        if name.split(".")[0] in ABSENT:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, _Absent())
