"""Every backend but sb3 stands without Stable-Baselines3: with ``stable_baselines3`` and
``sb3_contrib`` unimportable (tests/train/without_sb3/sitecustomize.py, a finder that refuses them
before the installed packages are looked at, so each import fails as in a venv without them), the
batched learner trains and rates its model, expert iteration runs a generation, a tournament rates a
zoo search, and ``treppen.train.rllib`` imports. And each backend's modules hold no other backend's
package (train/common/ is the base they share)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fixtures import make_kernel_run_fixture as fixture

ROOT = Path(__file__).resolve().parents[2]
WITHOUT_SB3 = Path(__file__).resolve().parent / "without_sb3"
BACKENDS = ("kernel", "expert", "sb3", "rllib")


def run(args: list[str], cwd: Path, without_sb3: bool = True) -> subprocess.CompletedProcess[str]:
    """``python ARGS`` in a fresh interpreter (without SB3 unless told otherwise)."""
    paths = [str(WITHOUT_SB3)] if without_sb3 else []
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([*paths, str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=900)


def test_the_finder_makes_sb3_unimportable(tmp_path):
    done = run(["-c", "import sb3_contrib"], tmp_path)
    assert done.returncode == 1 and "ModuleNotFoundError: No module named 'sb3_contrib'" in done.stderr


def test_the_batched_learner_trains_and_rates_its_model_without_sb3(tmp_path):
    overrides = [o for o in fixture.OVERRIDES if not o.startswith(("elo_every", "eval_deals"))]
    argv = ["train", "--config", "kernel", *overrides, "elo_every=768", "elo_decks=2", "eval_deals=2"]
    done = run(["-m", "treppen.apps.cli", *argv, "runs_dir=runs", "name=k"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "runs" / "k" / "final_model.npz").is_file() and (tmp_path / "runs" / "k" / "elo.jsonl").is_file()
    assert "stable_baselines3" not in done.stderr


def test_expert_iteration_runs_a_generation_without_sb3(tmp_path):
    argv = ["train", "--config", "expert_iteration", "expert_generations=1", "expert_deals=2", "expert_decks=1"]
    argv += ["expert_search=rollout,playouts=8", "imitation_epochs=1", "runs_dir=runs", "name=e"]
    done = run(["-m", "treppen.apps.cli", *argv], tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "runs" / "e" / "generations.jsonl").read_text().count("\n") == 1


def test_a_tournament_rates_a_zoo_search_without_sb3(tmp_path):
    argv = ["tournament", "--agents", "search-2p,playouts=20", "greedy", "--decks", "1", "--out", "t"]
    done = run(["-m", "treppen.apps.cli", *argv], tmp_path)
    assert done.returncode == 0, done.stderr
    assert "search-2p" in done.stdout


def test_the_rllib_package_imports_without_sb3(tmp_path):
    done = run(["-c", "import treppen.train.rllib"], tmp_path)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_backend_imports_no_other_backends_package(tmp_path, backend):
    if backend == "rllib":
        pytest.importorskip("ray", reason="needs the ray extra: pip install '.[ray]'")
    listing = (
        f"import sys, treppen.train.{backend}.backend; "
        "print(sorted({m.split('.')[2] for m in sys.modules if m.startswith('treppen.train.') and m.count('.') > 1}))"
    )
    done = run(["-c", listing], tmp_path, without_sb3=backend != "sb3")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[-2] == str(sorted({"common", backend}))
