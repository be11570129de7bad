"""One process per run folder: a run holds an OS lock on its folder while it trains; a
second ``treppen train`` on it (``--resume``, or a new run of the same name) exits 2 naming the
holder's process id, and the lock of a run killed by ``kill -9`` does not block its ``--resume``."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from treppen.train.common.checkpoints import latest_checkpoint
from treppen.train.common.config_files import config_path, load_config
from treppen.train.common.rundir import LOCK_FILE, hold_run_dir
from treppen.train.launch import train

#: Seconds a command has to start and take its run folder (imports, Numba's cache, a loaded machine).
START_S = 180
#: A run of seconds on the sb3 backend (its checks of a resumed run are the same as for a long one).
TINY = [
    "backend=sb3", "n_envs=2", "vec_env=dummy", "n_steps=64", "batch_size=64", "n_epochs=1", "net_arch=[8]",
    "policy=mlp", "imitation_decisions=0", "best_every=0", "opponent_best=0", "opponent_snapshot=0.4",
    "eval_deals=2", "elo_every=0", "checkpoint_every=128", "snapshot_every=128", "progress=false",
]  # fmt: skip


def test_a_held_run_folder_is_refused_naming_the_holder_and_free_again_after(tmp_path):
    run = tmp_path / "runs" / "r"
    with hold_run_dir(run):
        assert (run / LOCK_FILE).read_text() == f"{os.getpid()}\n"
        with pytest.raises(ValueError) as refused, hold_run_dir(run):
            pytest.fail("a second holder got the folder")
        assert str(refused.value) == (
            f"run folder {str(run)!r} is in use by process {os.getpid()} (a training run); wait for it to end, "
            f"or stop it and continue with --resume {run}"
        )
    with hold_run_dir(run):  # released at the end of the block
        pass


@pytest.mark.parametrize(
    "config",
    [
        "selfplay",
        "kernel",
        "expert_iteration",
        pytest.param(
            "rllib_selfplay",
            marks=pytest.mark.skipif(importlib.util.find_spec("ray") is None, reason="needs the ray extra"),
        ),
    ],
)
def test_every_backend_refuses_a_run_folder_another_process_holds(config, tmp_path):
    """Checked before the backend reads or writes anything in the folder."""
    run = tmp_path / "held"
    with hold_run_dir(run):
        before = sorted(run.rglob("*"))
        for resume in (False, True):
            loaded = load_config(config_path(config), [f"runs_dir={tmp_path}", "name=held"])
            with pytest.raises(ValueError, match=f"is in use by process {os.getpid()} "):
                train(loaded, resume=resume)
        assert sorted(run.rglob("*")) == before


COMMAND = [sys.executable, "-m", "treppen.apps.cli", "train"]


def holding(argv: list[str], run) -> subprocess.Popen:
    """A ``treppen train`` process started with ``argv``, once it holds the run folder ``run``."""
    process = subprocess.Popen([*COMMAND, *argv], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    watchdog = time.monotonic() + START_S  # ends a hung start; not a measure of its speed
    while not ((run / "metadata.json").is_file() and (run / LOCK_FILE).read_text() == f"{process.pid}\n"):
        if process.poll() is not None or time.monotonic() > watchdog:
            process.kill()
            pytest.fail(f"{argv} took no folder: {process.communicate()[1][-2000:]}")
        time.sleep(0.05)
    return process


def kill(process: subprocess.Popen) -> None:
    process.send_signal(signal.SIGKILL)
    process.wait()
    if process.stderr:
        process.stderr.close()


def assert_refused(commands: list[list[str]], holder: subprocess.Popen, run) -> None:
    """Each of ``commands``, run beside ``holder``, exits 2 with the one line naming its pid."""
    started = [
        subprocess.Popen([*COMMAND, *c], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for c in commands
    ]
    for done in started:
        out, err = done.communicate(timeout=START_S)
        assert done.returncode == 2 and "Traceback" not in out + err, err
        assert err == (
            f"treppen train: error: run folder {str(run)!r} is in use by process {holder.pid} (a training run); "
            f"wait for it to end, or stop it and continue with --resume {run}\n"
        )
    assert holder.poll() is None  # the holder goes on


def test_two_resumes_on_one_folder_one_runs_and_after_a_kill_the_next_resume_runs(tmp_path):
    """The issue's target, with real processes: a run is killed by ``kill -9`` once it holds its folder
    (its lock file is left behind, naming it). A ``--resume`` takes the folder all the same; a second
    ``--resume`` and a new run of the same name beside it exit 2 naming its pid and change nothing;
    after a ``kill -9`` of it, the next ``--resume`` runs to the end."""
    run = tmp_path / "r"
    long = "total_timesteps=100000000"
    first = holding([*TINY, long, f"runs_dir={tmp_path}", "name=r"], run)
    kill(first)
    assert (run / LOCK_FILE).read_text() == f"{first.pid}\n"  # stale: its process is gone
    resumed = holding(["--resume", str(run), long], run)  # the stale lock does not block it
    try:
        assert_refused([["--resume", str(run)], [*TINY, f"runs_dir={tmp_path}", "name=r"]], resumed, run)
        assert len(json.loads((run / "metadata.json").read_text())["resumes"]) == 1  # the refused one is not
    finally:
        kill(resumed)
    newest = latest_checkpoint(run / "checkpoints")
    total = (newest[0] if newest else 0) + 128  # one rollout more than it has
    done = subprocess.run(
        [*COMMAND, "--resume", str(run), f"total_timesteps={total}"], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert (run / "final_model.zip").is_file()
    assert len(json.loads((run / "metadata.json").read_text())["resumes"]) == 2
