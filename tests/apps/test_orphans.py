"""Workers end with their parent: after ``kill -9`` of ``treppen tournament
--workers 2`` or of ``treppen train`` with subprocess envs, no process of theirs is left 10 s later."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc (Linux)")

ROOT = Path(__file__).resolve().parents[2]
#: Seconds the workers have to notice their parent's death (the issue's bound).
GRACE_S = 10
#: Seconds the command has to start its workers (imports, Numba's cache, a loaded machine).
START_S = 180


def _parents() -> dict[int, int]:
    """Parent pid of every process, by pid."""
    out = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:  # it ended while we looked
            continue
        out[int(stat.parent.name)] = int(text.rpartition(")")[2].split()[1])
    return out


def _descendants(pid: int) -> set[int]:
    parents = _parents()
    found, frontier = set(), {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def _alive(pids: set[int]) -> set[int]:
    """The pids still running (a zombie has ended)."""
    alive = set()
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
        except OSError:
            continue
        if state != "Z":
            alive.add(pid)
    return alive


def _kill_parent_and_wait(command: list[str], ready: Callable[[], bool], cwd: Path) -> set[int]:
    """Start ``command`` in its own process group, wait until its workers are at work (``ready()``),
    ``kill -9`` it and return its descendants still alive ``GRACE_S`` seconds later (the group is
    killed in the end, whatever happens)."""
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    proc = subprocess.Popen(
        command, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    try:
        deadline = time.monotonic() + START_S
        while not ready() and time.monotonic() < deadline:
            assert proc.poll() is None, f"{command} ended with {proc.returncode} before its workers got to work"
            time.sleep(0.5)
        assert ready(), f"{command}: its workers did not get to work in {START_S} s"
        children = _descendants(proc.pid)
        proc.kill()
        proc.wait()
        deadline = time.monotonic() + GRACE_S
        while _alive(children) and time.monotonic() < deadline:
            time.sleep(0.25)
        return _alive(children)
    finally:
        proc.kill()
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # leftovers of a failed test
        except ProcessLookupError:
            pass


def test_tournament_workers_end_with_their_parent(tmp_path):
    command = [sys.executable, "-m", "treppen.apps.cli", "tournament", "--agents", "rollout,playouts=50", "greedy"]
    command += ["--workers", "2", "--decks", "500", "--out", str(tmp_path / "t")]
    results = tmp_path / "t" / "results.jsonl"

    def ready() -> bool:  # deals come back: both workers run (each took its share of the queue at once)
        return results.is_file() and results.read_text().count("\n") >= 4

    assert _kill_parent_and_wait(command, ready, tmp_path) == set()


@pytest.mark.slow
def test_training_env_workers_end_with_their_parent(tmp_path):
    command = [
        sys.executable,
        "-m",
        "treppen.apps.cli",
        "train",
        "--config",
        "selfplay",
        "vec_env=subproc",
        "n_envs=2",
        "n_steps=64",
    ]
    command += ["batch_size=32", "imitation_decisions=0", "policy=mlp", "net_arch=[8]", "progress=false"]
    command += ["best_every=0", "opponent_best=0", "opponent_snapshot=0.4", f"runs_dir={tmp_path}", "name=r"]
    command += ["total_timesteps=10000000"]
    # SB3 sets up its TensorBoard log after the envs' first reset: the env workers are built by then
    assert _kill_parent_and_wait(command, lambda: (tmp_path / "r" / "tb" / "ppo_1").is_dir(), tmp_path) == set()
