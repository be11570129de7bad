"""After the docs build: every public function and class of treppen_env, treppen.agents and
treppen.arena has its page in docs/api/generated (autosummary), and the built site has them."""

from __future__ import annotations

import importlib
import inspect
import os
import pkgutil
import sys
from pathlib import Path

os.environ["NUMBA_DISABLE_JIT"] = "1"  # kernels as the Python functions the docs document

ROOT = Path(__file__).resolve().parent.parent
GENERATED = ROOT / "docs" / "api" / "generated"
HTML = ROOT / "docs" / "_build" / "html" / "api" / "generated"


def modules(package: str) -> list[str]:
    root = importlib.import_module(package)
    names = [package]
    for info in pkgutil.walk_packages(root.__path__, package + "."):
        names.append(info.name)
    return names


missing = []
for package in ("treppen_env", "treppen.agents", "treppen.arena"):
    for name in modules(package):
        if any(part.startswith("_") for part in name.split(".")):
            continue
        try:
            module = importlib.import_module(name)
        except ImportError:  # an optional backend (Ray) that is not installed
            continue
        for attr, obj in vars(module).items():
            if attr.startswith("_") or not (inspect.isfunction(obj) or inspect.isclass(obj)):
                continue
            if obj.__module__ != name:
                continue
            page = f"{name}.{attr}"
            if not (GENERATED / f"{page}.rst").is_file() or not (HTML / f"{page}.html").is_file():
                missing.append(page)
if missing:
    sys.exit(f"no API page for {len(missing)} public objects: {missing[:20]}")
print("every public function and class of treppen_env, treppen.agents and treppen.arena has a page")
