"""The built wheel (issue: a wheel that works outside a clone): it installs only our own top-level
packages, treppen and treppen_env, and carries the configs, the zoo's agents and the page's files
as package data. CI also installs it in a fresh venv outside the clone and runs the commands there
(.ci/wheel_smoke.sh)."""

from __future__ import annotations

import fcntl
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: One build at a time (a lock shared by the test processes): setuptools builds in the checkout's
#: build/ folder, and two builds at once there fail (pytest-xdist may put this module's tests on
#: two workers, each with its own module fixture).
BUILD_LOCK = Path(tempfile.gettempdir()) / "treppen-test-wheel.lock"


@pytest.fixture(scope="module")
def wheel_names(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    out = tmp_path_factory.mktemp("wheel")
    command = [sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "--no-build-isolation", "-w", str(out)]
    with BUILD_LOCK.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        built = subprocess.run(command, capture_output=True, text=True, cwd=out)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]  # pip's own words on a failed build
    (wheel,) = out.glob("treppen-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        return archive.namelist()


def test_the_wheel_installs_only_our_own_top_level_packages(wheel_names: list[str]) -> None:
    top = {name.split("/")[0] for name in wheel_names if not name.split("/")[0].endswith(".dist-info")}
    assert top == {"treppen", "treppen_env"}
    assert {"treppen/agents/__init__.py", "treppen/arena/match.py", "treppen/train/sb3/backend.py"} <= set(wheel_names)
    assert "treppen/apps/cli.py" in wheel_names and "treppen_env/core/kernels.py" in wheel_names


def test_the_wheel_holds_every_module_of_the_folders_it_maps(wheel_names: list[str]) -> None:
    # pyproject.toml lists the packages one by one (package-dir maps the root folders): a subpackage
    # left off that list would be missing from the wheel
    folders = {"treppen_env": "treppen_env", "treppen": "treppen"}
    folders |= {name: f"treppen/{name}" for name in ("agents", "openspiel", "arena", "train", "apps", "configs")}
    sources = {
        f"{installed}/{path.relative_to(ROOT / folder).as_posix()}"
        for folder, installed in folders.items()
        for path in (ROOT / folder).rglob("*.py")
    }
    assert sources and sources <= set(wheel_names)


def test_the_wheel_carries_the_configs_the_zoo_and_the_page(wheel_names: list[str]) -> None:
    names = set(wheel_names)
    configs = {p.name for p in (ROOT / "configs").glob("*.yaml")}
    assert {f"treppen/configs/{c}" for c in configs} <= names and "selfplay.yaml" in configs
    for card in (ROOT / "agents" / "zoo").glob("*/card.json"):
        assert f"treppen/agents/zoo/{card.parent.name}/card.json" in names
    assert {"treppen/apps/static/index.html", "treppen/apps/static/app.js"} <= names
    assert not [n for n in names if "__pycache__" in n or n.endswith((".nbi", ".nbc"))]
